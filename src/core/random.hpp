#pragma once
// Cryptographically secure identifiers and encodings (libsodium's CSPRNG).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sika {

// Returns n random bytes.
std::string random_bytes(std::size_t n);
// Returns a URL-safe random token carrying `bytes` bytes of entropy (base64url, no padding).
std::string random_token(std::size_t bytes = 32);
// Returns a random RFC 4122 version-4 UUID in lowercase canonical form.
std::string uuid_v4();
// Returns the name-based UUID of `name`: the first 16 bytes of its SHA-256 in the version-5
// layout, lowercase canonical form. The same name always gives the same UUID.
std::string name_uuid(std::string_view name);
// Returns true iff s is a canonical UUID (8-4-4-4-12 hex digits, any version).
bool is_uuid(std::string_view s);
// Returns an uppercase alphanumeric reference such as "TX-7K2M9QX4PZ" (prefix + n chars, no 0/O/1/I).
std::string random_reference(std::string_view prefix, std::size_t n = 12);
// Returns a uniformly random integer in [0, bound).
std::uint32_t random_uniform(std::uint32_t bound);

std::string base64url_encode(std::string_view bytes);
// Returns false on invalid input.
bool base64url_decode(std::string_view text, std::string& out);
std::string base64_encode(std::string_view bytes);
bool base64_decode(std::string_view text, std::string& out);
std::string hex_encode(std::string_view bytes);

}  // namespace sika
