// connectors.<name>.* of kind mtn_momo (docs/operators.md, "MTN MoMo Open API").
#include <algorithm>

#include "app/connectors.hpp"
#include "payments/mtn_momo.hpp"

namespace sika::app {

namespace {

// The country of an MTN target environment (the live demo merchant's).
std::string_view country_of(std::string_view env) {
  static constexpr std::pair<std::string_view, std::string_view> kCountries[] = {
      {"mtncameroon", "CMR"},      {"mtnivorycoast", "CIV"}, {"mtnbenin", "BEN"},  {"mtncongo", "COG"},
      {"mtnghana", "GHA"},         {"mtnuganda", "UGA"},     {"mtnzambia", "ZMB"}, {"mtnrwanda", "RWA"},
      {"mtnguineaconakry", "GIN"}, {"sandbox", "CMR"}};
  for (const auto& [e, c] : kCountries)
    if (e == env) return c;
  return "";
}

}  // namespace

Result<OpenedConnector> open_mtn_momo(const ConnectorSetup& setup) {
  payments::MtnMomoOptions mo;
  mo.name = setup.name;
  SIKA_ASSIGN_OR_RETURN(mo.base_url, setup.required("base_url"));
  mo.target_environment = setup.get("target_environment");
  if (payments::mtn::environment_currency(mo.target_environment).empty())
    return setup.bad("target_environment",
                     "must be an MTN target environment (mtncameroon, mtnivorycoast, sandbox ...)");
  for (auto [product, creds] :
       {std::pair{"collection.", &mo.collection}, std::pair{"disbursement.", &mo.disbursement}}) {
    for (auto [field, value] : {std::pair{"subscription_key", &creds->subscription_key},
                                std::pair{"api_user", &creds->api_user}, std::pair{"api_key", &creds->api_key}}) {
      *value = setup.get(std::string(product) + field);
      if (value->empty()) return setup.bad(std::string(product) + field, "is required (environment or secrets file)");
    }
  }
  mo.callback_url = setup.callback_url;
  mo.status_per_second = static_cast<int>(setup.get_int("status_queries_per_second"));
  mo.max_in_flight = static_cast<int>(std::max<std::int64_t>(1, setup.get_int("max_in_flight")));
  mo.timeout_ms = static_cast<int>(std::clamp<std::int64_t>(setup.get_int("timeout_ms"), 100, 120'000));
  mo.calls = setup.calls;
  OpenedConnector out;
  out.country = std::string(country_of(mo.target_environment));
  out.connector = std::make_unique<payments::MtnMomo>(setup.http, std::move(mo));
  return out;
}

}  // namespace sika::app
