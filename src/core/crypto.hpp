#pragma once
// Hashing and secret handling. Random secrets (client secrets, API keys, refresh tokens)
// are stored as a keyed BLAKE2b hash (fast, and useless without the server's pepper);
// passwords are stored with argon2id. Comparisons of secrets are constant time.
#include <string>
#include <string_view>

namespace sika::crypto {

std::string sha256(std::string_view data);                             // raw 32 bytes
std::string hmac_sha256(std::string_view key, std::string_view data);  // raw 32 bytes

// A UUID derived from `name` (SHA-256, laid out as version 5, variant 1): the same name always
// gives the same UUID, so a collection keyed by it is created once however often it is asked for.
std::string uuid_from_name(std::string_view name);

// Keyed hash of a random secret under `pepper` (hex string, 64 chars).
std::string secret_hash(std::string_view pepper, std::string_view secret);
// Returns true iff hash == secret_hash(pepper, secret), in constant time.
bool secret_matches(std::string_view pepper, std::string_view secret, std::string_view hash);

// argon2id (libsodium, interactive limits by default); the result is the encoded PHC string.
std::string password_hash(std::string_view password);
bool password_verify(std::string_view password, std::string_view encoded);

bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace sika::crypto
