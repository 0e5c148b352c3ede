#pragma once
// The retry schedule: the delays between consecutive attempts of one delivery. The first
// attempt is immediate; after the n-th failed attempt the next one waits delay[n-1], spread
// by a random jitter so that endpoints coming back are not hit by a synchronized burst.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace sika::webhooks {

// 5s, 5m, 30m, 2h, 5h, 10h, 10h, 14h, 14h, 16h: 11 attempts over about 3 days (71h35m05s).
inline constexpr std::string_view kDefaultSchedule = "5s,5m,30m,2h,5h,10h,10h,14h,14h,16h";

class RetrySchedule {
 public:
  RetrySchedule();  // kDefaultSchedule, jitter 20%
  // Parses a comma-separated list of durations ("500ms", "5s", "5m", "2h", "1d"; a bare number is
  // seconds). Errors name the bad item.
  static Result<RetrySchedule> parse(std::string_view text, int jitter_percent = 20);

  // Total attempts a delivery gets (the first one plus one per delay).
  int max_attempts() const { return static_cast<int>(delays_ms_.size()) + 1; }
  // The delay before the attempt following `failed_attempts` failures, without jitter;
  // nullopt when the schedule is exhausted.
  std::optional<std::int64_t> base_delay_ms(int failed_attempts) const;
  // Same, with a uniform jitter of +/- jitter_percent; `random_permille` in [0, 1000] picks the
  // point in that range (500 = no jitter), so tests can check both ends.
  std::optional<std::int64_t> delay_ms(int failed_attempts, std::uint32_t random_permille) const;
  // Same, with a random point.
  std::optional<std::int64_t> delay_ms(int failed_attempts) const;
  // Sum of the base delays: how long a delivery is retried.
  std::int64_t total_ms() const;
  int jitter_percent() const { return jitter_percent_; }
  const std::vector<std::int64_t>& delays_ms() const { return delays_ms_; }
  std::string describe() const;  // "5s, 5m, ..."

 private:
  RetrySchedule(std::vector<std::int64_t> delays_ms, int jitter_percent)
      : delays_ms_(std::move(delays_ms)), jitter_percent_(jitter_percent) {}

  std::vector<std::int64_t> delays_ms_;
  int jitter_percent_ = 20;
};

// Parses one duration ("500ms", "5s", "5m", "2h", "1d", bare seconds); nullopt when malformed.
std::optional<std::int64_t> parse_duration_ms(std::string_view text);
// Formats a duration in the largest unit that divides it exactly ("5m", "1500ms").
std::string format_duration(std::int64_t ms);

}  // namespace sika::webhooks
