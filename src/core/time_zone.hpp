#pragma once
// Time zones of the places Sika serves, and dates and times as people read them (fr/en).
// Zones are fixed offsets from UTC: every zone listed keeps one offset all year (no daylight
// saving time), so no zone database is needed. A merchant's zone is its own setting, by default
// the zone of its first country (merchant::time_zone_of).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/i18n.hpp"

namespace sika::tz {

struct Zone {
  std::string_view name;   // IANA name, e.g. "Africa/Douala"
  int offset_minutes = 0;  // east of UTC
};

// The zone called `name` ("UTC" or an IANA name of the list), or nullopt when it is not listed.
std::optional<Zone> find(std::string_view name);
// Every listed zone, "UTC" first then by name.
const std::vector<Zone>& all();
// The zone of a country (ISO 3166-1 alpha-3), "UTC" when the country is not listed.
std::string_view of_country(std::string_view alpha3);

// "22 novembre 2026 à 14:35 (UTC+1)" / "22 November 2026, 14:35 (UTC+1)". An unknown zone
// name formats in UTC.
std::string date_time(std::int64_t epoch_ms, i18n::Locale locale, std::string_view zone);
// "14:35 UTC+1".
std::string time_of_day(std::int64_t epoch_ms, std::string_view zone);
// "22/11/2026 14:35" (fr) / "2026-11-22 14:35" (en), in `zone`, without the zone's name: for
// table cells under a heading that names the zone.
std::string short_date_time(std::int64_t epoch_ms, i18n::Locale locale, std::string_view zone);
// "UTC+1", "UTC", "UTC-3:30".
std::string offset_label(int offset_minutes);

}  // namespace sika::tz
