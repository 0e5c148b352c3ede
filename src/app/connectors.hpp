#pragma once
// Operator connector instances from configuration (docs/operators.md): one per
// connectors.<name>.kind set, built by its kind's factory and registered with payments.
#include <memory>
#include <string>
#include <string_view>

#include "app/context.hpp"
#include "core/result.hpp"

namespace sika::payments {
class Connector;
class OperatorCallSink;
}  // namespace sika::payments

namespace sika::app {

// What a factory reads: the instance's keys ("connectors.<name>.<key>") and what the platform gives.
struct ConnectorSetup {
  const Config& config;
  std::string name;          // the instance name, e.g. "mtn_momo", "orange_money_ci"
  std::string callback_url;  // {base_url}/operator/callback/<name>, unless <key> callback_url is set
  // The instance's own outbound client: as many calls in flight to the operator, and as many
  // pooled keep-alive connections, as its max_in_flight (the shared client keeps webhooks' limits).
  web::HttpClient& http;
  payments::OperatorCallSink* calls = nullptr;  // the operator-call log (timeline, health)

  std::string get(std::string_view key) const;  // "" when unset
  std::int64_t get_int(std::string_view key) const;
  // The value of a key that must be set; bad_config naming it otherwise.
  Result<std::string> required(std::string_view key) const;
  Error bad(std::string_view key, std::string_view problem) const;
};

struct OpenedConnector {
  std::unique_ptr<payments::Connector> connector;
  std::string country;  // ISO 3166-1 alpha-3 of the operator account (the live demo merchant's)
};

using ConnectorFactory = Result<OpenedConnector> (*)(const ConnectorSetup& setup);

// The factories, one per kind, each in its own file (connector_<kind>.cpp).
Result<OpenedConnector> open_mtn_momo(const ConnectorSetup& setup);
Result<OpenedConnector> open_airtel_money(const ConnectorSetup& setup);
Result<OpenedConnector> open_wave(const ConnectorSetup& setup);
Result<OpenedConnector> open_orange_money(const ConnectorSetup& setup);

// Builds and registers every configured instance; bad_config naming the key on a wrong one.
Status open_connectors(Context& ctx, const std::string& callback_base);

}  // namespace sika::app
