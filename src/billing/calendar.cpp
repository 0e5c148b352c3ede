#include "billing/calendar.hpp"

#include <date/tz.h>

#include <array>
#include <boost/json.hpp>
#include <chrono>
#include <string>

namespace sika::billing {

namespace {

namespace bj = boost::json;
using Ms = std::chrono::milliseconds;

constexpr std::array<std::pair<Frequency, std::string_view>, 5> kNames{{{Frequency::daily, "DAILY"},
                                                                        {Frequency::weekly, "WEEKLY"},
                                                                        {Frequency::monthly, "MONTHLY"},
                                                                        {Frequency::quarterly, "QUARTERLY"},
                                                                        {Frequency::yearly, "YEARLY"}}};

// Cycles beyond this are refused: 100,000 daily cycles is 273 years, far past any real end.
constexpr std::int64_t kMaxCycle = 100'000;

const date::time_zone* zone(std::string_view name) {
  if (name.empty()) return nullptr;
  try {
    return date::locate_zone(std::string(name));
  } catch (const std::exception&) {
    return nullptr;
  }
}

int months_per_cycle(Frequency f) {
  switch (f) {
    case Frequency::monthly: return 1;
    case Frequency::quarterly: return 3;
    case Frequency::yearly: return 12;
    default: return 0;
  }
}

// The local time of cycle `n` on the anchor's calendar.
date::local_time<Ms> local_due(date::local_time<Ms> anchor, Frequency f, std::int64_t n) {
  const auto day = date::floor<date::days>(anchor);
  const auto time_of_day = anchor - day;
  if (f == Frequency::daily) return day + date::days(n) + time_of_day;
  if (f == Frequency::weekly) return day + date::days(7 * n) + time_of_day;
  const date::year_month_day ymd{day};
  const date::year_month target = date::year_month{ymd.year(), ymd.month()} + date::months(months_per_cycle(f) * n);
  const date::day last = date::year_month_day_last{target.year(), date::month_day_last{target.month()}}.day();
  const date::day d = ymd.day() < last ? ymd.day() : last;
  return date::local_days{target / d} + time_of_day;
}

}  // namespace

std::string_view to_string(Frequency f) {
  for (const auto& [k, name] : kNames)
    if (k == f) return name;
  return "DAILY";
}

std::optional<Frequency> parse_frequency(std::string_view text) {
  for (const auto& [k, name] : kNames)
    if (name == text) return k;
  return std::nullopt;
}

bool known_time_zone(std::string_view name) { return zone(name) != nullptr; }

Result<std::int64_t> due_at(std::int64_t anchor_ms, std::string_view time_zone, Frequency f, std::int64_t cycle) {
  const date::time_zone* z = zone(time_zone);
  if (!z) return empty_data(bj::object{{"time_zone", "is not a zone of the IANA database"}});
  if (cycle < 0 || cycle > kMaxCycle)
    return empty_data(bj::object{{"cycle", "must be from 0 to " + std::to_string(kMaxCycle)}});
  if (cycle == 0) return anchor_ms;
  const date::sys_time<Ms> anchor{Ms{anchor_ms}};
  const auto local = local_due(z->to_local(anchor), f, cycle);
  return z->to_sys(local, date::choose::earliest).time_since_epoch().count();
}

Result<std::int64_t> last_cycle_due(std::int64_t anchor_ms, std::string_view time_zone, Frequency f, std::int64_t at) {
  const date::time_zone* z = zone(time_zone);
  if (!z) return empty_data(bj::object{{"time_zone", "is not a zone of the IANA database"}});
  if (at < anchor_ms) return std::int64_t{-1};
  // An estimate from the mean cycle length, then exact steps (at most a couple either way).
  constexpr std::int64_t kDay = 86'400'000;
  std::int64_t mean = kDay;
  switch (f) {
    case Frequency::daily: break;
    case Frequency::weekly: mean = 7 * kDay; break;
    default: mean = months_per_cycle(f) * 2'629'746'000LL;  // 365.2425 days / 12
  }
  std::int64_t n = std::min<std::int64_t>((at - anchor_ms) / mean, kMaxCycle);
  auto due = [&](std::int64_t k) { return due_at(anchor_ms, time_zone, f, k); };
  SIKA_ASSIGN_OR_RETURN(std::int64_t here, due(n));
  while (here > at && n > 0) {
    --n;
    SIKA_ASSIGN_OR_RETURN(here, due(n));
  }
  while (n < kMaxCycle) {
    SIKA_ASSIGN_OR_RETURN(std::int64_t next, due(n + 1));
    if (next > at) break;
    ++n;
  }
  return n;
}

}  // namespace sika::billing
