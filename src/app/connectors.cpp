#include "app/connectors.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <utility>

#include "http/client.hpp"
#include "payments/connector.hpp"
#include "payments/operator_log.hpp"
#include "payments/service.hpp"

namespace sika::app {

namespace {

// Each kind and its factory: a new protocol adds its line here and its connector_<kind>.cpp.
constexpr std::array<std::pair<std::string_view, ConnectorFactory>, 4> kFactories{{
    {"mtn_momo", &open_mtn_momo},
    {"airtel_money", &open_airtel_money},
    {"wave", &open_wave},
    {"orange_money", &open_orange_money},
}};

std::string kinds() {
  std::string out;
  for (const auto& [kind, factory] : kFactories) out += (out.empty() ? "" : ", ") + std::string(kind);
  return out;
}

}  // namespace

std::string ConnectorSetup::get(std::string_view key) const {
  return config.get_string("connectors." + name + "." + std::string(key));
}

std::int64_t ConnectorSetup::get_int(std::string_view key) const {
  return config.get_int("connectors." + name + "." + std::string(key));
}

Error ConnectorSetup::bad(std::string_view key, std::string_view problem) const {
  return make_error(ErrorKind::invalid, "bad_config",
                    boost::json::string("connectors." + name + "." + std::string(key) + ": " + std::string(problem)));
}

Result<std::string> ConnectorSetup::required(std::string_view key) const {
  std::string v = get(key);
  if (v.empty()) return bad(key, "is required");
  return v;
}

Status open_connectors(Context& ctx, const std::string& callback_base) {
  for (const std::string& name : ctx.config.connector_names()) {
    http::ClientOptions co;
    co.max_in_flight_per_host = static_cast<std::size_t>(
        std::max<std::int64_t>(1, ctx.config.get_int("connectors." + name + ".max_in_flight")));
    co.max_idle_per_host = co.max_in_flight_per_host;
    co.max_idle_total = co.max_in_flight_per_host;
    std::unique_ptr<web::HttpClient> client = http::make_http_client(co);
    ConnectorSetup setup{ctx.config, name, "", *client, ctx.operator_log.get()};
    setup.callback_url = setup.get("callback_url");
    if (setup.callback_url.empty()) setup.callback_url = callback_base + "/" + name;
    const std::string kind = setup.get("kind");
    ConnectorFactory factory = nullptr;
    for (const auto& [k, f] : kFactories)
      if (k == kind) factory = f;
    if (!factory) return setup.bad("kind", "must be one of " + kinds());
    SIKA_ASSIGN_OR_RETURN(OpenedConnector opened, factory(setup));
    ctx.payments->register_connector(*opened.connector);
    ctx.connectors.push_back({name, kind, opened.country, std::move(client), std::move(opened.connector)});
  }
  return {};
}

}  // namespace sika::app
