#include "core/time_zone.hpp"

#include <algorithm>
#include <array>

#include "core/time.hpp"

namespace sika::tz {

namespace {

// Zones without daylight saving time, with the countries they serve.
const std::vector<Zone> kZones = {
    {"UTC", 0},
    {"Africa/Abidjan", 0},
    {"Africa/Accra", 0},
    {"Africa/Addis_Ababa", 180},
    {"Africa/Bamako", 0},
    {"Africa/Bangui", 60},
    {"Africa/Banjul", 0},
    {"Africa/Bissau", 0},
    {"Africa/Brazzaville", 60},
    {"Africa/Conakry", 0},
    {"Africa/Dakar", 0},
    {"Africa/Dar_es_Salaam", 180},
    {"Africa/Douala", 60},
    {"Africa/Freetown", 0},
    {"Africa/Harare", 120},
    {"Africa/Johannesburg", 120},
    {"Africa/Kampala", 180},
    {"Africa/Kigali", 120},
    {"Africa/Kinshasa", 60},
    {"Africa/Lagos", 60},
    {"Africa/Libreville", 60},
    {"Africa/Lome", 0},
    {"Africa/Lubumbashi", 120},
    {"Africa/Lusaka", 120},
    {"Africa/Malabo", 60},
    {"Africa/Maputo", 120},
    {"Africa/Monrovia", 0},
    {"Africa/Nairobi", 180},
    {"Africa/Ndjamena", 60},
    {"Africa/Niamey", 60},
    {"Africa/Nouakchott", 0},
    {"Africa/Ouagadougou", 0},
    {"Africa/Porto-Novo", 60},
    {"Indian/Antananarivo", 180},
    {"Indian/Comoro", 180},
};

constexpr std::array<std::pair<std::string_view, std::string_view>, 34> kCountries{{
    {"BDI", "Africa/Harare"},        {"BEN", "Africa/Porto-Novo"},  {"BFA", "Africa/Ouagadougou"},
    {"CAF", "Africa/Bangui"},        {"CIV", "Africa/Abidjan"},     {"CMR", "Africa/Douala"},
    {"COD", "Africa/Kinshasa"},      {"COG", "Africa/Brazzaville"}, {"COM", "Indian/Comoro"},
    {"ETH", "Africa/Addis_Ababa"},   {"GAB", "Africa/Libreville"},  {"GHA", "Africa/Accra"},
    {"GIN", "Africa/Conakry"},       {"GMB", "Africa/Banjul"},      {"GNB", "Africa/Bissau"},
    {"GNQ", "Africa/Malabo"},        {"KEN", "Africa/Nairobi"},     {"LBR", "Africa/Monrovia"},
    {"MDG", "Indian/Antananarivo"},  {"MLI", "Africa/Bamako"},      {"MOZ", "Africa/Maputo"},
    {"MRT", "Africa/Nouakchott"},    {"MWI", "Africa/Harare"},      {"NER", "Africa/Niamey"},
    {"NGA", "Africa/Lagos"},         {"RWA", "Africa/Kigali"},      {"SEN", "Africa/Dakar"},
    {"SLE", "Africa/Freetown"},      {"TCD", "Africa/Ndjamena"},    {"TGO", "Africa/Lome"},
    {"TZA", "Africa/Dar_es_Salaam"}, {"UGA", "Africa/Kampala"},     {"ZAF", "Africa/Johannesburg"},
    {"ZMB", "Africa/Lusaka"},
}};

constexpr std::array<std::string_view, 12> kMonthsFr{"janvier",   "février", "mars",     "avril",
                                                     "mai",       "juin",    "juillet",  "août",
                                                     "septembre", "octobre", "novembre", "décembre"};
constexpr std::array<std::string_view, 12> kMonthsEn{"January",   "February", "March",    "April",
                                                     "May",       "June",     "July",     "August",
                                                     "September", "October",  "November", "December"};

int offset_of(std::string_view zone) {
  auto z = find(zone);
  return z ? z->offset_minutes : 0;
}

// The fields of the local time: "YYYY-MM-DDTHH:MM..." of the instant shifted by the offset.
std::string local_iso(std::int64_t epoch_ms, int offset_minutes) {
  return iso8601(epoch_ms + static_cast<std::int64_t>(offset_minutes) * 60'000);
}

}  // namespace

std::optional<Zone> find(std::string_view name) {
  for (const Zone& z : kZones)
    if (z.name == name) return z;
  return std::nullopt;
}

const std::vector<Zone>& all() { return kZones; }

std::string_view of_country(std::string_view alpha3) {
  for (const auto& [code, zone] : kCountries)
    if (code == alpha3) return zone;
  return "UTC";
}

std::string offset_label(int offset_minutes) {
  if (offset_minutes == 0) return "UTC";
  const int a = offset_minutes < 0 ? -offset_minutes : offset_minutes;
  std::string out = std::string("UTC") + (offset_minutes < 0 ? "-" : "+") + std::to_string(a / 60);
  if (a % 60) out += ":" + std::string(a % 60 < 10 ? "0" : "") + std::to_string(a % 60);
  return out;
}

std::string time_of_day(std::int64_t epoch_ms, std::string_view zone) {
  const int off = offset_of(zone);
  return local_iso(epoch_ms, off).substr(11, 5) + " " + offset_label(off);
}

std::string date_time(std::int64_t epoch_ms, i18n::Locale locale, std::string_view zone) {
  const int off = offset_of(zone);
  const std::string iso = local_iso(epoch_ms, off);
  const int day = std::stoi(iso.substr(8, 2));
  const int month = std::stoi(iso.substr(5, 2));
  const std::string year = iso.substr(0, 4);
  const std::string hm = iso.substr(11, 5);
  if (locale == i18n::Locale::fr)
    return std::to_string(day) + (day == 1 ? "er " : " ") + std::string(kMonthsFr[month - 1]) + " " + year + " à " +
           hm + " (" + offset_label(off) + ")";
  return std::to_string(day) + " " + std::string(kMonthsEn[month - 1]) + " " + year + ", " + hm + " (" +
         offset_label(off) + ")";
}

std::string short_date_time(std::int64_t epoch_ms, i18n::Locale locale, std::string_view zone) {
  const std::string iso = local_iso(epoch_ms, offset_of(zone));
  if (locale == i18n::Locale::fr)
    return iso.substr(8, 2) + "/" + iso.substr(5, 2) + "/" + iso.substr(0, 4) + " " + iso.substr(11, 5);
  return iso.substr(0, 10) + " " + iso.substr(11, 5);
}

}  // namespace sika::tz
