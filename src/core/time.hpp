#pragma once
// Wall-clock time as integer milliseconds since the Unix epoch, and its ISO 8601 form.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sika {

std::int64_t now_ms();
// Formats as "2026-11-22T01:28:32.123Z" (UTC, millisecond precision, explicit offset "Z").
std::string iso8601(std::int64_t epoch_ms);
// Parses "YYYY-MM-DDTHH:MM:SS[.fff](Z|+HH:MM|-HH:MM)"; nullopt when malformed.
std::optional<std::int64_t> parse_iso8601(std::string_view text);

}  // namespace sika
