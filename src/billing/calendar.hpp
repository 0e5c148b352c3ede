#pragma once
// The billing calendar: when each cycle of a subscription falls due. Pure (no database, no
// clock); the IANA time-zone database is read from the system (/usr/share/zoneinfo).
//
// Every due date is computed from the anchor (the moment the subscription started), never from
// the previous due date: a subscription started on 31 January at 09:00 in Africa/Douala is due
// on 28 (or 29) February at 09:00, then on 31 March at 09:00, because each date is "anchor +
// n months" with the day clamped to the month's last day. The arithmetic runs on the calendar of
// the subscription's time zone (its local date and time of day), so a customer east of UTC is
// never billed on the wrong day.
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/result.hpp"

namespace sika::billing {

inline constexpr std::int64_t kDayMs = 86'400'000;

enum class Frequency { daily, weekly, monthly, quarterly, yearly };

// "DAILY", "WEEKLY", "MONTHLY", "QUARTERLY", "YEARLY".
std::string_view to_string(Frequency f);
// Parses the exact upper-case spelling; nullopt otherwise.
std::optional<Frequency> parse_frequency(std::string_view text);

// True iff `name` is a zone of the system's IANA database ("Africa/Douala", "UTC").
bool known_time_zone(std::string_view name);

// The due time (epoch ms) of cycle `cycle` (0 is the anchor itself) of a subscription anchored at
// `anchor_ms` in `time_zone`: the anchor's local date moved by cycle days (DAILY), 7 x cycle days
// (WEEKLY) or 1, 3 or 12 x cycle months with the anchor's day of month clamped to the target
// month's last day, at the anchor's local time of day. A local time that does not exist that day
// (a daylight-saving gap) is the instant the gap ends; an ambiguous one is its first occurrence.
// 400 naming time_zone for an unknown zone; 400 naming cycle when negative or out of range.
Result<std::int64_t> due_at(std::int64_t anchor_ms, std::string_view time_zone, Frequency f, std::int64_t cycle);

// The highest cycle due at or before `at` (-1 when `at` is before the anchor), so that
// due_at(n) <= at < due_at(n + 1). Same errors as due_at.
Result<std::int64_t> last_cycle_due(std::int64_t anchor_ms, std::string_view time_zone, Frequency f, std::int64_t at);

}  // namespace sika::billing
