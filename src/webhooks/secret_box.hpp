#pragma once
// Endpoint signing secrets must be usable for HMAC, so unlike API keys they cannot be stored
// as a one-way hash. They are stored sealed with XChaCha20-Poly1305 (libsodium) under a key
// derived from the server's pepper; the endpoint's public id is the associated data, so a
// sealed secret copied onto another endpoint row does not open.
#include <optional>
#include <string>
#include <string_view>

namespace sika::webhooks {

class SecretBox {
 public:
  // Derives the sealing key from the server pepper (HMAC-SHA256 with a fixed label).
  explicit SecretBox(std::string_view pepper);
  ~SecretBox();
  SecretBox(const SecretBox&) = delete;
  SecretBox& operator=(const SecretBox&) = delete;

  // Returns "v1.<base64 nonce||ciphertext>".
  std::string seal(std::string_view endpoint_id, std::string_view secret) const;
  // Returns the secret, or nullopt when the box is malformed, tampered with, bound to another
  // endpoint, or sealed under another pepper.
  std::optional<std::string> open(std::string_view endpoint_id, std::string_view sealed) const;

 private:
  std::string key_;
};

}  // namespace sika::webhooks
