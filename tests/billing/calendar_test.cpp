// The billing calendar: due dates anchored on the start, clamped to month ends, in the
// subscription's IANA time zone.
#include "billing/calendar.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "core/time.hpp"

namespace sika::billing {
namespace {

std::int64_t at(std::string_view iso) {
  auto t = parse_iso8601(iso);
  EXPECT_TRUE(t.has_value()) << iso;
  return t.value_or(0);
}

std::string due(std::string_view anchor, std::string_view zone, Frequency f, std::int64_t n) {
  auto r = due_at(at(anchor), zone, f, n);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().code);
  return r.ok() ? iso8601(*r) : "";
}

TEST(Calendar, FrequenciesRoundTripAndUnknownOnesAreRefused) {
  for (auto f : {Frequency::daily, Frequency::weekly, Frequency::monthly, Frequency::quarterly, Frequency::yearly})
    EXPECT_EQ(parse_frequency(to_string(f)), f);
  EXPECT_FALSE(parse_frequency("monthly"));
  EXPECT_FALSE(parse_frequency("BIWEEKLY"));
  EXPECT_FALSE(parse_frequency(""));
}

TEST(Calendar, ZonesComeFromTheIanaDatabase) {
  EXPECT_TRUE(known_time_zone("Africa/Douala"));
  EXPECT_TRUE(known_time_zone("Africa/Abidjan"));
  EXPECT_TRUE(known_time_zone("UTC"));
  EXPECT_FALSE(known_time_zone("Africa/Atlantis"));
  EXPECT_FALSE(known_time_zone(""));
  auto r = due_at(0, "Mars/Olympus", Frequency::daily, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().is(ErrorKind::invalid));
  EXPECT_TRUE(r.error().details.as_object().contains("time_zone"));
  auto neg = due_at(0, "UTC", Frequency::daily, -1);
  ASSERT_FALSE(neg.ok());
  EXPECT_TRUE(neg.error().details.as_object().contains("cycle"));
}

TEST(Calendar, MonthlyFromThe31stClampsThenComesBack) {
  // Africa/Douala is UTC+1: 09:00 local is 08:00Z.
  const char* a = "2024-01-31T08:00:00Z";
  EXPECT_EQ(due(a, "Africa/Douala", Frequency::monthly, 0), "2024-01-31T08:00:00.000Z");
  EXPECT_EQ(due(a, "Africa/Douala", Frequency::monthly, 1), "2024-02-29T08:00:00.000Z");  // leap year
  EXPECT_EQ(due(a, "Africa/Douala", Frequency::monthly, 2), "2024-03-31T08:00:00.000Z");  // from the anchor
  EXPECT_EQ(due(a, "Africa/Douala", Frequency::monthly, 3), "2024-04-30T08:00:00.000Z");
  EXPECT_EQ(due(a, "Africa/Douala", Frequency::monthly, 13), "2025-02-28T08:00:00.000Z");
  EXPECT_EQ(due(a, "Africa/Douala", Frequency::quarterly, 1), "2024-04-30T08:00:00.000Z");
  EXPECT_EQ(due(a, "Africa/Douala", Frequency::quarterly, 2), "2024-07-31T08:00:00.000Z");
}

TEST(Calendar, LeapDayYearlyFallsOnThe28thThenBackOnThe29th) {
  const char* a = "2024-02-29T12:00:00Z";
  EXPECT_EQ(due(a, "Africa/Abidjan", Frequency::yearly, 1), "2025-02-28T12:00:00.000Z");
  EXPECT_EQ(due(a, "Africa/Abidjan", Frequency::yearly, 4), "2028-02-29T12:00:00.000Z");
  EXPECT_EQ(due(a, "Africa/Abidjan", Frequency::yearly, 76), "2100-02-28T12:00:00.000Z");  // 2100 is not leap
}

TEST(Calendar, TheLocalDateDecidesNotTheUtcDate) {
  // 30 April 23:30Z is 1 May 00:30 in Douala (UTC+1): the customer subscribed on the 1st, so the
  // next cycle is 1 June 00:30 local (31 May 23:30Z); a UTC calendar would bill on 30 May.
  EXPECT_EQ(due("2026-04-30T23:30:00Z", "Africa/Douala", Frequency::monthly, 1), "2026-05-31T23:30:00.000Z");
  EXPECT_EQ(due("2026-04-30T23:30:00Z", "UTC", Frequency::monthly, 1), "2026-05-30T23:30:00.000Z");
  // 31 January 23:30Z is 1 February 00:30 in Douala: 1 March 00:30 local, not the 28th's clamp.
  EXPECT_EQ(due("2026-01-31T23:30:00Z", "Africa/Douala", Frequency::monthly, 2), "2026-03-31T23:30:00.000Z");
  EXPECT_EQ(due("2026-01-31T23:30:00Z", "UTC", Frequency::monthly, 2), "2026-03-31T23:30:00.000Z");
  EXPECT_EQ(due("2026-01-31T23:30:00Z", "Africa/Douala", Frequency::monthly, 3), "2026-04-30T23:30:00.000Z");
  EXPECT_EQ(due("2026-01-31T23:30:00Z", "UTC", Frequency::monthly, 3), "2026-04-30T23:30:00.000Z");
  // West of nothing: Abidjan is UTC+0 all year, so both agree there.
  EXPECT_EQ(due("2026-04-30T23:30:00Z", "Africa/Abidjan", Frequency::monthly, 1), "2026-05-30T23:30:00.000Z");
}

TEST(Calendar, DailyAndWeeklyKeepTheLocalTimeAcrossDaylightSaving) {
  // New York: 2026-03-08 02:00 -> 03:00 (UTC-5 -> UTC-4). 09:00 local stays 09:00 local.
  EXPECT_EQ(due("2026-03-07T14:00:00Z", "America/New_York", Frequency::daily, 1), "2026-03-08T13:00:00.000Z");
  EXPECT_EQ(due("2026-03-01T14:00:00Z", "America/New_York", Frequency::weekly, 1), "2026-03-08T13:00:00.000Z");
  // 02:30 local does not exist on 2026-03-08: the instant the gap ends (03:00 EDT = 07:00Z).
  EXPECT_EQ(due("2026-03-07T07:30:00Z", "America/New_York", Frequency::daily, 1), "2026-03-08T07:00:00.000Z");
  // 01:30 local happens twice on 2026-11-01: the first one (EDT, 05:30Z).
  EXPECT_EQ(due("2026-10-31T05:30:00Z", "America/New_York", Frequency::daily, 1), "2026-11-01T05:30:00.000Z");
}

TEST(Calendar, LastCycleDueBracketsTheInstant) {
  const std::int64_t a = at("2024-01-31T08:00:00Z");
  EXPECT_EQ(*last_cycle_due(a, "Africa/Douala", Frequency::monthly, a - 1), -1);
  EXPECT_EQ(*last_cycle_due(a, "Africa/Douala", Frequency::monthly, a), 0);
  EXPECT_EQ(*last_cycle_due(a, "Africa/Douala", Frequency::monthly, at("2024-02-29T07:59:59.999Z")), 0);
  EXPECT_EQ(*last_cycle_due(a, "Africa/Douala", Frequency::monthly, at("2024-02-29T08:00:00Z")), 1);
  EXPECT_EQ(*last_cycle_due(a, "Africa/Douala", Frequency::monthly, at("2034-01-31T08:00:00Z")), 120);
}

// Properties over random anchors (1970-2100), zones and cycles.
TEST(CalendarProperty, DueDatesFollowTheAnchorInEveryZone) {
  std::mt19937_64 rng(20261122);
  const char* zones[] = {"Africa/Douala",  "Africa/Abidjan",     "Africa/Lagos",
                         "Africa/Nairobi", "Africa/Casablanca",  "UTC",
                         "Asia/Tokyo",     "Pacific/Kiritimati", "America/Sao_Paulo"};
  const std::int64_t lo = 0, hi = at("2100-01-01T00:00:00Z");
  std::uniform_int_distribution<std::int64_t> anchors(lo, hi);
  std::uniform_int_distribution<std::int64_t> cycles(1, 400);
  for (int i = 0; i < 3000; ++i) {
    const char* zone = zones[i % std::size(zones)];
    const std::int64_t anchor = anchors(rng) / 1000 * 1000;
    const auto f = static_cast<Frequency>(i % 5);
    const std::int64_t n = cycles(rng);
    SCOPED_TRACE(std::string(zone) + " " + iso8601(anchor) + " " + std::string(to_string(f)) +
                 " n=" + std::to_string(n));
    auto d0 = due_at(anchor, zone, f, 0);
    auto dn = due_at(anchor, zone, f, n);
    auto dn1 = due_at(anchor, zone, f, n + 1);
    auto dprev = due_at(anchor, zone, f, n - 1);
    ASSERT_TRUE(d0.ok() && dn.ok() && dn1.ok() && dprev.ok());
    EXPECT_EQ(*d0, anchor);
    // Strictly increasing, and no cycle is shorter than 23 h nor longer than the longest period.
    EXPECT_LT(*dprev, *dn);
    EXPECT_LT(*dn, *dn1);
    EXPECT_GE(*dn1 - *dn, 23LL * 3600 * 1000);
    EXPECT_LE(*dn1 - *dn, 367LL * 86400 * 1000);
    // Brackets: cycle n is the last one due at its own instant, cycle n-1 just before it.
    EXPECT_EQ(*last_cycle_due(anchor, zone, f, *dn), n);
    EXPECT_EQ(*last_cycle_due(anchor, zone, f, *dn - 1), n - 1);
    // Month arithmetic from the anchor, never from the previous (clamped) date: cycle n of a
    // monthly plan equals cycle n/3 of a quarterly one when n is a multiple of 3, and cycle
    // 12k is yearly cycle k.
    if (f == Frequency::monthly && n % 3 == 0) {
      EXPECT_EQ(*dn, *due_at(anchor, zone, Frequency::quarterly, n / 3));
    }
    if (f == Frequency::monthly && n % 12 == 0) {
      EXPECT_EQ(*dn, *due_at(anchor, zone, Frequency::yearly, n / 12));
    }
    if (f == Frequency::daily && n % 7 == 0) {
      EXPECT_EQ(*dn, *due_at(anchor, zone, Frequency::weekly, n / 7));
    }
  }
}

TEST(CalendarProperty, MonthEndAnchorsLandOnTheAnchorDayOrTheMonthsLastDay) {
  // In a zone without daylight saving the local date is exact: check the day of month directly.
  for (int day = 28; day <= 31; ++day) {
    for (int year : {2023, 2024}) {
      const std::string anchor = std::to_string(year) + "-01-" + std::to_string(day) + "T10:00:00Z";
      for (int n = 0; n < 48; ++n) {
        const std::string d = due(anchor, "Africa/Abidjan", Frequency::monthly, n);
        const int y = std::stoi(d.substr(0, 4)), m = std::stoi(d.substr(5, 2)), dd = std::stoi(d.substr(8, 2));
        EXPECT_EQ(y, year + n / 12) << d;
        EXPECT_EQ(m, 1 + n % 12) << d;
        const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        const int last = m == 2 ? (leap ? 29 : 28) : (m == 4 || m == 6 || m == 9 || m == 11) ? 30 : 31;
        EXPECT_EQ(dd, std::min(day, last)) << d;
        EXPECT_EQ(d.substr(10), "T10:00:00.000Z");
      }
    }
  }
}

}  // namespace
}  // namespace sika::billing
