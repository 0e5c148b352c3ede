#include "webhooks/signing.hpp"

#include "core/crypto.hpp"
#include "core/random.hpp"

namespace sika::webhooks {

std::string generate_secret() { return std::string(kSecretPrefix) + base64_encode(random_bytes(kSecretBytes)); }

std::optional<std::string> secret_key_bytes(std::string_view secret) {
  if (!secret.starts_with(kSecretPrefix)) return std::nullopt;
  std::string out;
  if (!base64_decode(secret.substr(kSecretPrefix.size()), out) || out.empty()) return std::nullopt;
  return out;
}

std::string sign(std::string_view key_bytes, std::string_view message_id, std::int64_t timestamp_s,
                 std::string_view body) {
  std::string content;
  content.reserve(message_id.size() + body.size() + 24);
  content.append(message_id).append(".").append(std::to_string(timestamp_s)).append(".").append(body);
  return "v1," + base64_encode(crypto::hmac_sha256(key_bytes, content));
}

std::string signature_header(const std::vector<std::string>& key_bytes, std::string_view message_id,
                             std::int64_t timestamp_s, std::string_view body) {
  std::string out;
  for (const auto& key : key_bytes) {
    if (!out.empty()) out.push_back(' ');
    out += sign(key, message_id, timestamp_s, body);
  }
  return out;
}

bool verify(std::string_view key_bytes, std::string_view message_id, std::int64_t timestamp_s, std::string_view body,
            std::string_view header) {
  const std::string expected = sign(key_bytes, message_id, timestamp_s, body);
  bool found = false;
  std::size_t pos = 0;
  while (pos <= header.size()) {
    std::size_t end = header.find(' ', pos);
    if (end == std::string_view::npos) end = header.size();
    std::string_view candidate = header.substr(pos, end - pos);
    // Every candidate is compared so the time taken does not depend on which one matched.
    if (!candidate.empty() && crypto::constant_time_equal(candidate, expected)) found = true;
    pos = end + 1;
  }
  return found;
}

}  // namespace sika::webhooks
