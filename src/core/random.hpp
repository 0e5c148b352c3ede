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
// Returns an RFC 9562 version-7 UUID (Unix milliseconds, then 74 random bits): the ids one
// process makes sort by time, so an index on them grows at its end instead of at random pages.
std::string uuid_v7();
// Returns true iff s is a canonical UUID (8-4-4-4-12 hex digits, any version).
bool is_uuid(std::string_view s);
// Returns an uppercase alphanumeric reference such as "TX-7K2M9QX4PZ" (prefix + n chars, no 0/O/1/I).
std::string random_reference(std::string_view prefix, std::size_t n = 12);
// Returns prefix + n characters of the reference alphabet (n >= 12): the first 8 encode the Unix
// milliseconds modulo 2^40 (sorting as the alphabet sorts in ASCII), the rest are random. Indexes
// on such references take new rows at their end; the time part wraps every 34.8 years, which
// costs locality for a moment, never uniqueness.
std::string sortable_reference(std::string_view prefix, std::size_t n = 20);
// The 8 leading characters of sortable_reference for the Unix milliseconds `ms`.
std::string sortable_time_prefix(std::int64_t ms);
// Returns a uniformly random integer in [0, bound).
std::uint32_t random_uniform(std::uint32_t bound);

std::string base64url_encode(std::string_view bytes);
// Returns false on invalid input.
bool base64url_decode(std::string_view text, std::string& out);
std::string base64_encode(std::string_view bytes);
bool base64_decode(std::string_view text, std::string& out);
std::string hex_encode(std::string_view bytes);

}  // namespace sika
