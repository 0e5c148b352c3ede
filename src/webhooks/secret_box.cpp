#include "webhooks/secret_box.hpp"

#include <sodium.h>

#include "core/crypto.hpp"
#include "core/random.hpp"

namespace sika::webhooks {

namespace {
constexpr std::string_view kVersion = "v1.";
constexpr std::string_view kKeyLabel = "sika:webhooks:endpoint-secret:v1";
}  // namespace

SecretBox::SecretBox(std::string_view pepper) : key_(crypto::hmac_sha256(pepper, kKeyLabel)) {
  static_assert(crypto_aead_xchacha20poly1305_ietf_KEYBYTES == 32);
  if (sodium_init() < 0) key_.clear();
}

SecretBox::~SecretBox() { sodium_memzero(key_.data(), key_.size()); }

std::string SecretBox::seal(std::string_view endpoint_id, std::string_view secret) const {
  std::string nonce = random_bytes(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES);
  std::string out(nonce.size() + secret.size() + crypto_aead_xchacha20poly1305_ietf_ABYTES, '\0');
  std::copy(nonce.begin(), nonce.end(), out.begin());
  unsigned long long len = 0;
  crypto_aead_xchacha20poly1305_ietf_encrypt(
      reinterpret_cast<unsigned char*>(out.data() + nonce.size()), &len,
      reinterpret_cast<const unsigned char*>(secret.data()), secret.size(),
      reinterpret_cast<const unsigned char*>(endpoint_id.data()), endpoint_id.size(), nullptr,
      reinterpret_cast<const unsigned char*>(nonce.data()), reinterpret_cast<const unsigned char*>(key_.data()));
  out.resize(nonce.size() + len);
  return std::string(kVersion) + base64_encode(out);
}

std::optional<std::string> SecretBox::open(std::string_view endpoint_id, std::string_view sealed) const {
  if (!sealed.starts_with(kVersion) || key_.size() != crypto_aead_xchacha20poly1305_ietf_KEYBYTES) return std::nullopt;
  std::string raw;
  if (!base64_decode(sealed.substr(kVersion.size()), raw)) return std::nullopt;
  constexpr std::size_t kN = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
  constexpr std::size_t kA = crypto_aead_xchacha20poly1305_ietf_ABYTES;
  if (raw.size() < kN + kA) return std::nullopt;
  std::string plain(raw.size() - kN - kA, '\0');
  unsigned long long len = 0;
  if (crypto_aead_xchacha20poly1305_ietf_decrypt(
          reinterpret_cast<unsigned char*>(plain.data()), &len, nullptr,
          reinterpret_cast<const unsigned char*>(raw.data() + kN), raw.size() - kN,
          reinterpret_cast<const unsigned char*>(endpoint_id.data()), endpoint_id.size(),
          reinterpret_cast<const unsigned char*>(raw.data()), reinterpret_cast<const unsigned char*>(key_.data())) != 0)
    return std::nullopt;
  plain.resize(len);
  return plain;
}

}  // namespace sika::webhooks
