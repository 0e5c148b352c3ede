#include "webhooks/schedule.hpp"

#include <charconv>

#include "core/random.hpp"

namespace sika::webhooks {

std::optional<std::int64_t> parse_duration_ms(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  std::int64_t value = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || value < 0 || value > 365LL * 24 * 3600 * 1000) return std::nullopt;
  std::string_view unit(p, text.data() + text.size() - p);
  std::int64_t factor = 0;
  if (unit.empty() || unit == "s")
    factor = 1000;
  else if (unit == "ms")
    factor = 1;
  else if (unit == "m")
    factor = 60'000;
  else if (unit == "h")
    factor = 3'600'000;
  else if (unit == "d")
    factor = 86'400'000;
  else
    return std::nullopt;
  std::int64_t ms = value * factor;
  if (ms > 365LL * 86'400'000) return std::nullopt;
  return ms;
}

std::string format_duration(std::int64_t ms) {
  struct Unit {
    std::int64_t size;
    const char* name;
  };
  for (Unit u : {Unit{86'400'000, "d"}, Unit{3'600'000, "h"}, Unit{60'000, "m"}, Unit{1000, "s"}})
    if (ms != 0 && ms % u.size == 0) return std::to_string(ms / u.size) + u.name;
  return std::to_string(ms) + "ms";
}

RetrySchedule::RetrySchedule() { *this = parse(kDefaultSchedule).value(); }

Result<RetrySchedule> RetrySchedule::parse(std::string_view text, int jitter_percent) {
  if (jitter_percent < 0 || jitter_percent > 50) return bad_request("bad_config", "jitter must be 0 to 50 percent");
  RetrySchedule s({}, jitter_percent);
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(pos, end - pos);
    auto ms = parse_duration_ms(item);
    if (!ms)
      return bad_request("bad_config", boost::json::string("bad duration '" + std::string(item) +
                                                           "' (use e.g. 500ms, 5s, 5m, 2h, 1d)"));
    s.delays_ms_.push_back(*ms);
    pos = end + 1;
  }
  if (s.delays_ms_.size() > 50) return bad_request("bad_config", "at most 50 retries");
  return s;
}

std::optional<std::int64_t> RetrySchedule::base_delay_ms(int failed_attempts) const {
  if (failed_attempts < 1 || failed_attempts > static_cast<int>(delays_ms_.size())) return std::nullopt;
  return delays_ms_[static_cast<std::size_t>(failed_attempts - 1)];
}

std::optional<std::int64_t> RetrySchedule::delay_ms(int failed_attempts, std::uint32_t random_permille) const {
  auto base = base_delay_ms(failed_attempts);
  if (!base) return std::nullopt;
  if (random_permille > 1000) random_permille = 1000;
  // factor in permille: 1000 - j*10 .. 1000 + j*10, linear in random_permille.
  const std::int64_t spread = static_cast<std::int64_t>(jitter_percent_) * 10;
  const std::int64_t factor = 1000 - spread + (2 * spread * static_cast<std::int64_t>(random_permille)) / 1000;
  return *base / 1000 * factor + (*base % 1000) * factor / 1000;
}

std::optional<std::int64_t> RetrySchedule::delay_ms(int failed_attempts) const {
  return delay_ms(failed_attempts, random_uniform(1001));
}

std::int64_t RetrySchedule::total_ms() const {
  std::int64_t t = 0;
  for (auto d : delays_ms_) t += d;
  return t;
}

std::string RetrySchedule::describe() const {
  std::string out;
  for (auto d : delays_ms_) {
    if (!out.empty()) out += ", ";
    out += format_duration(d);
  }
  return out;
}

}  // namespace sika::webhooks
