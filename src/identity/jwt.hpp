#pragma once
// JSON Web Signatures for access and ID tokens: ES256 (P-256) and RS256 (RSA 2048) keys
// held as OpenSSL EVP_PKEY objects that are created once and reused by every thread.
// No OpenSSL header leaks out of this file.
#include <boost/json/object.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/thread_annotations.hpp"

struct evp_pkey_st;
struct evp_pkey_ctx_st;

namespace sika::identity {

enum class Alg { ES256, RS256 };

std::string_view alg_name(Alg alg);
// Returns the algorithm for "ES256"/"RS256", nullopt for anything else (including "none").
std::optional<Alg> parse_alg(std::string_view name);

// One asymmetric key pair (or a public key only) able to sign and verify compact JWS.
// Thread-safe: signing and verification contexts are pooled per key.
class Jwk {
 public:
  ~Jwk();
  Jwk(const Jwk&) = delete;
  Jwk& operator=(const Jwk&) = delete;

  // Generates a fresh key pair.
  static Result<std::shared_ptr<Jwk>> generate(Alg alg, std::string kid);
  // Loads a private key from PKCS#8 PEM.
  static Result<std::shared_ptr<Jwk>> from_private_pem(Alg alg, std::string kid, std::string_view pem);

  Alg alg() const { return alg_; }
  const std::string& kid() const { return kid_; }
  bool has_private() const { return has_private_; }

  // PKCS#8 PEM of the private key.
  std::string private_pem() const;
  // The public JWK (kty, crv/x/y or n/e, kid, alg, use "sig").
  boost::json::object public_jwk() const;
  // base64url of the protected header {"alg","typ","kid"} for typ "at+jwt" and "JWT".
  const std::string& access_header() const { return access_header_; }
  const std::string& id_header() const { return id_header_; }

  // Returns "header.payload.signature" where header is a precomputed base64url header.
  std::string sign(std::string_view header_b64, std::string_view payload_json) const;
  // Returns the raw JWS signature (r||s for ES256) of signing_input, or "" on failure.
  std::string sign_raw(std::string_view signing_input) const;
  // Returns true iff `signature` (raw JWS form) is valid for signing_input.
  bool verify(std::string_view signing_input, std::string_view signature) const;

 private:
  Jwk(Alg alg, std::string kid, evp_pkey_st* pkey, bool has_private);
  evp_pkey_ctx_st* acquire(bool for_sign) const;
  void release(evp_pkey_ctx_st* ctx, bool for_sign) const;

  Alg alg_;
  std::string kid_;
  evp_pkey_st* pkey_;
  bool has_private_;
  std::string access_header_;
  std::string id_header_;
  mutable sika::Mutex pool_mu_;
  mutable std::vector<evp_pkey_ctx_st*> sign_pool_ GUARDED_BY(pool_mu_);
  mutable std::vector<evp_pkey_ctx_st*> verify_pool_ GUARDED_BY(pool_mu_);
};

// A compact JWS split into its parts; the header and payload are parsed JSON objects.
struct ParsedJwt {
  boost::json::object header;
  boost::json::object payload;
  std::string_view signing_input;  // "header.payload" (a view into the token)
  std::string signature;           // decoded raw signature
  std::string alg;
  std::string kid;
  std::string typ;
};

// Splits and decodes a compact JWS without checking its signature. Fails on anything
// that is not three base64url parts with JSON object header and payload.
Result<ParsedJwt> parse_jwt(std::string_view token);

// Returns true iff token looks like a compact JWS (two dots, base64url alphabet).
bool looks_like_jwt(std::string_view token);

// Appends base64url of `bytes` without padding. Table-driven, so not constant-time: for bytes the
// recipient sees anyway (the parts of a JWS, a sealed token), not for secrets (base64url_encode).
void append_base64url(std::string& out, std::string_view bytes);

// OIDC at_hash / c_hash: base64url of the left half of SHA-256(value) (both algs use SHA-256).
std::string half_hash(std::string_view value);

// Appends JSON text to a string; used to build token payloads without a DOM.
class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}
  void begin() { out_.push_back('{'); }
  void end() { out_.push_back('}'); }
  void key(std::string_view k);
  void str(std::string_view k, std::string_view v);
  void num(std::string_view k, std::int64_t v);
  void boolean(std::string_view k, bool v);
  void str_array(std::string_view k, const std::vector<std::string>& v);
  static void escape(std::string& out, std::string_view s);

 private:
  std::string& out_;
  bool first_ = true;
};

}  // namespace sika::identity
