#include "core/time.hpp"

#include <chrono>
#include <cstdio>

namespace sika {

std::int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

namespace {
// Howard Hinnant's days_from_civil / civil_from_days.
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}
void civil_from_days(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<std::int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
}
}  // namespace

std::string iso8601(std::int64_t ms) {
  std::int64_t secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
  int millis = static_cast<int>(ms - secs * 1000);
  std::int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
  int sod = static_cast<int>(secs - days * 86400);
  std::int64_t y;
  unsigned m, d;
  civil_from_days(days, y, m, d);
  if (y >= 0 && y <= 9999) {
    // Digit by digit: snprintf cost more than everything else in a record's serialization.
    char out[] = "0000-00-00T00:00:00.000Z";
    auto put = [&out](int pos, int width, std::int64_t v) {
      for (int i = width - 1; i >= 0; --i, v /= 10) out[pos + i] = static_cast<char>('0' + v % 10);
    };
    put(0, 4, y);
    put(5, 2, m);
    put(8, 2, d);
    put(11, 2, sod / 3600);
    put(14, 2, (sod / 60) % 60);
    put(17, 2, sod % 60);
    put(20, 3, millis);
    return std::string(out, sizeof out - 1);
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02d:%02d:%02d.%03dZ", static_cast<long long>(y), m, d, sod / 3600,
                (sod / 60) % 60, sod % 60, millis);
  return buf;
}

std::optional<std::int64_t> parse_iso8601(std::string_view t) {
  auto digits = [&](std::size_t pos, std::size_t n, int& out) {
    if (pos + n > t.size()) return false;
    out = 0;
    for (std::size_t i = 0; i < n; ++i) {
      char c = t[pos + i];
      if (c < '0' || c > '9') return false;
      out = out * 10 + (c - '0');
    }
    return true;
  };
  int y, mo, d, h, mi, s;
  if (!digits(0, 4, y) || t.size() < 20 || t[4] != '-' || !digits(5, 2, mo) || t[7] != '-' || !digits(8, 2, d) ||
      (t[10] != 'T' && t[10] != 't' && t[10] != ' ') || !digits(11, 2, h) || t[13] != ':' || !digits(14, 2, mi) ||
      t[16] != ':' || !digits(17, 2, s))
    return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return std::nullopt;
  std::size_t pos = 19;
  int millis = 0;
  if (pos < t.size() && t[pos] == '.') {
    ++pos;
    int n = 0;
    while (pos < t.size() && t[pos] >= '0' && t[pos] <= '9') {
      if (n < 3) millis = millis * 10 + (t[pos] - '0');
      ++n;
      ++pos;
    }
    if (n == 0) return std::nullopt;
    for (; n < 3; ++n) millis *= 10;
  }
  int offset_min = 0;
  if (pos < t.size() && (t[pos] == 'Z' || t[pos] == 'z')) {
    ++pos;
  } else if (pos < t.size() && (t[pos] == '+' || t[pos] == '-')) {
    int oh, om;
    if (!digits(pos + 1, 2, oh) || pos + 3 >= t.size() || t[pos + 3] != ':' || !digits(pos + 4, 2, om))
      return std::nullopt;
    offset_min = (oh * 60 + om) * (t[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != t.size()) return std::nullopt;
  std::int64_t days = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  std::int64_t secs = days * 86400 + h * 3600 + mi * 60 + s - offset_min * 60;
  return secs * 1000 + millis;
}

}  // namespace sika
