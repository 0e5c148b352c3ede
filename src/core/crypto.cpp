#include "core/crypto.hpp"

#include <openssl/evp.h>
#include <sodium.h>

#include <openssl/crypto.h>

#include <algorithm>
#include <stdexcept>

#include "core/random.hpp"

namespace sika::crypto {

// libsodium's SHA-256: OpenSSL 3's one-shot SHA256() fetches the algorithm on every call.
std::string sha256(std::string_view data) {
  (void)random_bytes(0);  // ensures libsodium is initialised (it picks the CPU's SHA-256 code)
  std::string out(crypto_hash_sha256_BYTES, '\0');
  crypto_hash_sha256(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(data.data()),
                     data.size());
  return out;
}

std::string uuid_from_name(std::string_view name) {
  std::string b = sha256(name).substr(0, 16);
  b[6] = static_cast<char>((b[6] & 0x0F) | 0x50);  // version 5 layout (name-based, SHA)
  b[8] = static_cast<char>((b[8] & 0x3F) | 0x80);
  std::string h = hex_encode(b);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" + h.substr(20, 12);
}

// libsodium's HMAC-SHA-256 (any key length, RFC 2104): OpenSSL 3's one-shot HMAC() looks the
// algorithm up by name on every call, which cost ten times the hashing on short inputs (the
// signed page links of every collection intent).
std::string hmac_sha256(std::string_view key, std::string_view data) {
  (void)random_bytes(0);  // ensures libsodium is initialised (it picks the CPU's SHA-256 code)
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, reinterpret_cast<const unsigned char*>(key.data()), key.size());
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(data.data()), data.size());
  std::string out(crypto_auth_hmacsha256_BYTES, '\0');
  crypto_auth_hmacsha256_final(&state, reinterpret_cast<unsigned char*>(out.data()));
  sodium_memzero(&state, sizeof state);
  return out;
}

std::string secret_hash(std::string_view pepper, std::string_view secret) {
  (void)random_bytes(0);  // ensures libsodium is initialised
  unsigned char out[32];
  crypto_generichash(out, sizeof out, reinterpret_cast<const unsigned char*>(secret.data()), secret.size(),
                     reinterpret_cast<const unsigned char*>(pepper.data()),
                     std::min<std::size_t>(pepper.size(), crypto_generichash_KEYBYTES_MAX));
  return hex_encode(std::string_view(reinterpret_cast<const char*>(out), sizeof out));
}

bool secret_matches(std::string_view pepper, std::string_view secret, std::string_view hash) {
  return constant_time_equal(secret_hash(pepper, secret), hash);
}

std::string password_hash(std::string_view password) {
  (void)random_bytes(0);
  char out[crypto_pwhash_STRBYTES];
  if (crypto_pwhash_str(out, password.data(), password.size(), crypto_pwhash_OPSLIMIT_INTERACTIVE,
                        crypto_pwhash_MEMLIMIT_INTERACTIVE) != 0)
    throw std::runtime_error("argon2id: out of memory");
  return out;
}

bool password_verify(std::string_view password, std::string_view encoded) {
  (void)random_bytes(0);
  std::string enc(encoded);
  return crypto_pwhash_str_verify(enc.c_str(), password.data(), password.size()) == 0;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace sika::crypto
