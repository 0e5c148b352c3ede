// connectors.<name>.* of kind orange_money (docs/operators.md, "Orange Money").
#include <algorithm>

#include "app/connectors.hpp"
#include "payments/orange_money.hpp"

namespace sika::app {

Result<OpenedConnector> open_orange_money(const ConnectorSetup& setup) {
  payments::OrangeMoneyOptions o;
  o.name = setup.name;
  SIKA_ASSIGN_OR_RETURN(o.base_url, setup.required("base_url"));
  o.country = setup.get("country");
  if (payments::orange::country_currency(o.country).empty())
    return setup.bad("country", "must be an Orange Money country (cm, ci, sn, ml, bf, gn ...) or dev");
  const std::string flow = setup.get("flow");
  if (flow == "push") {
    o.flow = payments::orange::Flow::push;
    if (o.country != "cm") return setup.bad("flow", "push is Orange Cameroon's merchant payment: country must be cm");
  } else if (flow != "webpay" && !flow.empty()) {
    return setup.bad("flow", "must be webpay or push");
  }
  for (auto [key, value] : {std::pair{"client_id", &o.client_id}, std::pair{"client_secret", &o.client_secret}}) {
    *value = setup.get(key);
    if (value->empty()) return setup.bad(key, "is required (environment or secrets file)");
  }
  if (o.flow == payments::orange::Flow::webpay) {
    o.merchant_key = setup.get("merchant_key");
    if (o.merchant_key.empty()) return setup.bad("merchant_key", "is required for the webpay flow");
  } else {
    for (auto [key, value] : {std::pair{"channel_msisdn", &o.channel_msisdn}, std::pair{"pin", &o.pin},
                              std::pair{"x_auth_token", &o.x_auth_token}}) {
      *value = setup.get(key);
      if (value->empty()) return setup.bad(key, "is required for the push flow");
    }
  }
  o.callback_url = setup.callback_url;
  o.status_per_second = static_cast<int>(setup.get_int("status_queries_per_second"));
  o.max_in_flight = static_cast<int>(std::max<std::int64_t>(1, setup.get_int("max_in_flight")));
  o.timeout_ms = static_cast<int>(std::clamp<std::int64_t>(setup.get_int("timeout_ms"), 100, 120'000));
  o.connect_timeout_ms = std::min(o.connect_timeout_ms, o.timeout_ms);
  o.calls = setup.calls;
  OpenedConnector out;
  out.country = std::string(payments::orange::country_alpha3(o.country));
  out.connector = std::make_unique<payments::OrangeMoney>(setup.http, std::move(o));
  return out;
}

}  // namespace sika::app
