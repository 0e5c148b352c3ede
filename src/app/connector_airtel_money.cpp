// connectors.<name>.* of kind airtel_money (docs/operators.md, "Airtel Money").
#include <algorithm>

#include "app/connectors.hpp"
#include "payments/airtel_money.hpp"

namespace sika::app {

Result<OpenedConnector> open_airtel_money(const ConnectorSetup& setup) {
  payments::AirtelMoneyOptions ao;
  ao.name = setup.name;
  SIKA_ASSIGN_OR_RETURN(ao.base_url, setup.required("base_url"));
  SIKA_ASSIGN_OR_RETURN(ao.client_id, setup.required("client_id"));
  SIKA_ASSIGN_OR_RETURN(ao.client_secret, setup.required("client_secret"));
  SIKA_ASSIGN_OR_RETURN(ao.country, setup.required("country"));
  const payments::airtel::Market* market = payments::airtel::market(ao.country);
  if (!market) return setup.bad("country", "must be an Airtel Money market, ISO alpha-2 (GA, CG, TD, NE, CD ...)");
  SIKA_ASSIGN_OR_RETURN(ao.currency, setup.required("currency"));
  if (ao.currency.size() != 3 || ao.currency.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") != std::string::npos)
    return setup.bad("currency", "must be an ISO 4217 code (XAF ...)");
  // Disbursements need both; the PIN is encrypted once, here (any ciphertext of it is valid).
  const std::string pin = setup.get("pin");
  const std::string public_key = setup.get("public_key");
  if (pin.empty() != public_key.empty())
    return setup.bad(pin.empty() ? "pin" : "public_key", "is required for disbursements (with the other)");
  if (!pin.empty()) {
    if (pin.size() != 4 || pin.find_first_not_of("0123456789") != std::string::npos)
      return setup.bad("pin", "must be the account's 4-digit PIN");
    auto encrypted = payments::airtel::encrypt_pin(pin, public_key);
    if (!encrypted) return setup.bad("public_key", "must be Airtel's RSA public key, base64 of its DER");
    ao.encrypted_pin = std::move(*encrypted);
  }
  ao.status_per_second = static_cast<int>(setup.get_int("status_queries_per_second"));
  ao.max_in_flight = static_cast<int>(std::max<std::int64_t>(1, setup.get_int("max_in_flight")));
  ao.timeout_ms = static_cast<int>(std::clamp<std::int64_t>(setup.get_int("timeout_ms"), 100, 120'000));
  ao.calls = setup.calls;
  SIKA_ASSIGN_OR_RETURN(auto connector, payments::AirtelMoney::open(setup.http, std::move(ao)));
  OpenedConnector out;
  out.country = std::string(market->alpha3);
  out.connector = std::move(connector);
  return out;
}

}  // namespace sika::app
