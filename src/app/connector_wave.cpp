// connectors.<name>.* of kind wave (docs/operators.md, "Wave"). One instance serves one Wave
// business wallet, in XOF. Its country is the instance name's suffix (<connector>_<cc>: wave_sn is
// Senegal's wallet); an instance without one (wave) is Côte d'Ivoire's.
#include <algorithm>

#include "app/connectors.hpp"
#include "payments/wave.hpp"

namespace sika::app {

namespace {

// The country of a Wave instance, from its name's suffix; Côte d'Ivoire by default.
std::string_view country_of(std::string_view name) {
  static constexpr std::pair<std::string_view, std::string_view> kCountries[] = {
      {"_ci", "CIV"}, {"_sn", "SEN"}, {"_ml", "MLI"}, {"_bf", "BFA"}};
  for (const auto& [suffix, c] : kCountries)
    if (name.ends_with(suffix)) return c;
  return "CIV";
}

}  // namespace

Result<OpenedConnector> open_wave(const ConnectorSetup& setup) {
  payments::WaveOptions wo;
  wo.name = setup.name;
  SIKA_ASSIGN_OR_RETURN(wo.base_url, setup.required("base_url"));
  wo.api_key = setup.get("api_key");
  if (wo.api_key.empty()) return setup.bad("api_key", "is required (environment or secrets file)");
  wo.webhook_secret = setup.get("webhook_secret");
  if (wo.webhook_secret.empty()) return setup.bad("webhook_secret", "is required (environment or secrets file)");
  wo.max_in_flight = static_cast<int>(std::max<std::int64_t>(1, setup.get_int("max_in_flight")));
  wo.timeout_ms = static_cast<int>(std::clamp<std::int64_t>(setup.get_int("timeout_ms"), 100, 120'000));
  wo.calls = setup.calls;
  OpenedConnector out;
  out.country = std::string(country_of(setup.name));
  out.connector = std::make_unique<payments::Wave>(setup.http, std::move(wo));
  return out;
}

}  // namespace sika::app
