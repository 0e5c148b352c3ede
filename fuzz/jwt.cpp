// Bearer tokens: parse_jwt and looks_like_jwt on any bytes, then the signature of whatever
// parses checked against an ES256 and an RS256 key (the raw-to-DER signature conversion and
// OpenSSL's verification see attacker-chosen bytes).
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "identity/jwt.hpp"

namespace {
std::shared_ptr<sika::identity::Jwk> es256, rs256;

std::shared_ptr<sika::identity::Jwk> make(sika::identity::Alg alg) {
  auto key = sika::identity::Jwk::generate(alg, "fuzz");
  if (!key) std::abort();
  return std::move(key).value();
}
}  // namespace

// Generates the keys once, before the per-input timeout starts (RSA generation is slow).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  es256 = make(sika::identity::Alg::ES256);
  rs256 = make(sika::identity::Alg::RS256);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view token(reinterpret_cast<const char*>(data), size);
  (void)sika::identity::looks_like_jwt(token);
  (void)sika::identity::parse_alg(token);
  auto parsed = sika::identity::parse_jwt(token);
  if (!parsed) return 0;
  // A token forged without the key never verifies.
  if (es256->verify(parsed->signing_input, parsed->signature)) std::abort();
  if (rs256->verify(parsed->signing_input, parsed->signature)) std::abort();
  return 0;
}
