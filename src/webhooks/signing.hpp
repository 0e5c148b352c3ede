#pragma once
// Standard Webhooks signing (https://www.standardwebhooks.com): secrets are "whsec_" + base64
// of random bytes; a signature is "v1," + base64(HMAC-SHA256(secret bytes, "{id}.{timestamp}.{body}")),
// and the webhook-signature header carries one or more of them separated by spaces.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sika::webhooks {

inline constexpr std::string_view kSecretPrefix = "whsec_";
inline constexpr std::size_t kSecretBytes = 32;  // Standard Webhooks asks for 24 to 64

// Returns a new signing secret "whsec_<base64 of kSecretBytes random bytes>".
std::string generate_secret();

// Returns the key bytes of a "whsec_..." secret, or nullopt when it is not one.
std::optional<std::string> secret_key_bytes(std::string_view secret);

// Returns "v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>".
std::string sign(std::string_view key_bytes, std::string_view message_id, std::int64_t timestamp_s,
                 std::string_view body);

// Returns the webhook-signature header value: one "v1,..." per key, space-separated, in order.
std::string signature_header(const std::vector<std::string>& key_bytes, std::string_view message_id,
                             std::int64_t timestamp_s, std::string_view body);

// Returns true iff `header` holds a v1 signature of the message under `key_bytes` (constant time).
bool verify(std::string_view key_bytes, std::string_view message_id, std::int64_t timestamp_s, std::string_view body,
            std::string_view header);

}  // namespace sika::webhooks
