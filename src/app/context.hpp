#pragma once
// Everything a running `sika` process holds: configuration, the database, the server
// secret and one service per component. Built once by open_context, shared by serve,
// the workers, the demo seeder and the admin CLI.
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "app/config.hpp"
#include "store/db.hpp"
#include "store/job_runner.hpp"
#include "web/client.hpp"
#include "web/client_address.hpp"

namespace sika::identity {
class Service;
}
namespace sika::catalog {
class Service;
}
namespace sika::payments {
class Service;
class Health;
class OperatorLog;
class Connector;
namespace recon {
class Reconciler;
}
}  // namespace sika::payments
namespace sika::links {
class Service;
}
namespace sika::billing {
class Service;
}
namespace sika::checkout {
class Service;
}
namespace sika::statements {
class Service;
}
namespace sika::webhooks {
class Service;
}
namespace sika::wallets {
class Service;
}
namespace sika::limits {
class Limiter;
class ReservedLimiter;
}  // namespace sika::limits
namespace sika::notify {
class Notifier;
}
namespace sika::otp {
class Service;
}
namespace sika::dashboard {
class Service;
}

namespace sika::app {

struct Context {
  Config config;
  std::unique_ptr<store::Db> db;
  // database.read_url: reads of dashboard lists and statements (replica, primary as fallback); null: db.
  std::unique_ptr<store::Db> replica;
  store::Db& list_reads() { return replica ? *replica : *db; }
  std::string pepper;  // derived from secret_key; keys the hashes of random secrets
  std::unique_ptr<web::HttpClient> http_client;
  web::TrustedProxies trusted_proxies;         // from trusted_proxies and client_address_header
  std::unique_ptr<limits::Limiter> limiter;    // shared rate limits; its sweep runs with the workers
  std::unique_ptr<notify::Notifier> notifier;  // SMS and e-mail (the sandbox outbox today)
  std::unique_ptr<otp::Service> otp;           // one-time codes, sent through notifier
  std::unique_ptr<identity::Service> identity;
  std::unique_ptr<catalog::Service> catalog;
  std::unique_ptr<payments::Health> health;             // operator health (built with payments)
  std::unique_ptr<payments::OperatorLog> operator_log;  // where connectors report their calls
  // Operator connectors configured (connectors.<name>.*); before payments, which uses them until it stops.
  struct ConnectorInstance {
    std::string name, kind;
    std::string country;                    // ISO alpha-3 of the operator account
    std::unique_ptr<web::HttpClient> http;  // its own outbound client (outlives the connector)
    std::unique_ptr<payments::Connector> connector;
  };
  std::vector<ConnectorInstance> connectors;
  std::unique_ptr<payments::Service> payments;
  std::unique_ptr<payments::recon::Reconciler> recon;  // operator reconciliation (docs/reconciliation.md)
  std::unique_ptr<links::Service> links;               // needs payments (built with it)
  std::unique_ptr<wallets::Service> wallets;           // needs payments, otp and the notifier
  std::unique_ptr<checkout::Service> checkout;         // needs payments (built with it)
  std::unique_ptr<billing::Service> billing;           // subscriptions: needs payments, links, notifier and jobs
  std::unique_ptr<statements::Service> statements;     // merchant statements, from the ledger
  std::unique_ptr<webhooks::Service> webhooks;
  std::unique_ptr<dashboard::Service> dashboard;  // needs identity, links and webhooks
  // Runs the leased jobs of every queue a component registered (jobs->handle) before start_workers.
  std::unique_ptr<store::JobRunner> jobs;
  // The link API's per-address budget: blocks of the shared limiter's quota served from memory,
  // given back when the workers stop.
  std::unique_ptr<limits::ReservedLimiter> reserved_limiter;
  // Verifies the gateway credential of a request (set by build_services from the identity service).
  std::function<Result<web::Principal>(const web::Request&)> authenticate;
  // True once `serve` has finished starting (demo world seeded, its file written, workers
  // running); /readyz answers 503 until then.
  std::atomic<bool> started{false};

  Context();
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
};

// Opens the database (and migrates it when `migrate`), resolves the server secret.
Result<std::unique_ptr<Context>> open_context(Config config, bool migrate);
// Builds every component's service from the configuration.
Status build_services(Context& ctx);
// Starts / stops the background workers of every component.
void start_workers(Context& ctx);
void stop_workers(Context& ctx);

}  // namespace sika::app
