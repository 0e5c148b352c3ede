#pragma once
// Time-based one-time passwords (RFC 6238 over RFC 4226 HOTP, HMAC-SHA1, 30-second steps, six
// digits): what authenticator apps compute from the secret of an otpauth:// URI.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sika::dashboard::totp {

inline constexpr int kPeriodSeconds = 30;
inline constexpr int kDigits = 6;

// RFC 4648 base32 without padding (the alphabet of otpauth secrets).
std::string base32_encode(std::string_view bytes);
// Decodes base32, ignoring case, spaces and padding; nullopt on any other character.
std::optional<std::string> base32_decode(std::string_view text);

// The HOTP value of `counter` under `key`, `digits` decimal digits with leading zeros.
std::string hotp(std::string_view key, std::uint64_t counter, int digits = kDigits);
// The time step of an instant (epoch ms).
std::int64_t step_of(std::int64_t epoch_ms);
// The code of the step holding `epoch_ms`.
std::string code_at(std::string_view key, std::int64_t epoch_ms, int digits = kDigits);
// The step whose code is `code`, looked for from one step before `now_ms` to one step after (clock
// drift between the phone and the server); nullopt when none matches. Compares in constant time.
std::optional<std::int64_t> match(std::string_view key, std::string_view code, std::int64_t now_ms);

// otpauth://totp/<issuer>:<account>?secret=<base32>&issuer=<issuer>&algorithm=SHA1&digits=6&period=30
std::string otpauth_uri(std::string_view issuer, std::string_view account, std::string_view secret_base32);

}  // namespace sika::dashboard::totp
