#pragma once
// `sika admin ...`: operator commands. Each component adds its commands in
// app/admin_<component>.cpp; every command accepts --json for machine-readable output.
#include <CLI/CLI.hpp>
#include <boost/json.hpp>

#include <functional>
#include <string>

#include "app/context.hpp"
#include "merchant/merchant.hpp"

namespace sika::app {

struct AdminEnv {
  // Opens (once) the configured database, migrated, with services built.
  std::function<Context&()> context;
  bool json = false;
};

// Adds a subcommand with the --json flag bound to env.json.
CLI::App* add_command(CLI::App& admin, AdminEnv& env, const std::string& name, const std::string& description);
// Prints `data` as JSON when --json was given, else `human`.
void print_result(const AdminEnv& env, const boost::json::value& data, const std::string& human);
// Prints the error on stderr and makes the command exit with status 1.
[[noreturn]] void fail(const Error& e);
// Unwraps a Result or fails.
template <class T>
T check(Result<T> r) {
  if (!r) fail(r.error());
  return std::move(r).value();
}
inline void check(Status s) {
  if (!s) fail(s.error());
}

// The merchant of a matricule given on the command line (fails with 404 naming merchant).
merchant::Merchant merchant_named(Context& ctx, const std::string& matricule);

void add_admin_commands(CLI::App& admin, AdminEnv& env);
void add_merchant_admin(CLI::App& admin, AdminEnv& env);
void add_identity_admin(CLI::App& admin, AdminEnv& env);
void add_webhooks_admin(CLI::App& admin, AdminEnv& env);
void add_payments_admin(CLI::App& admin, AdminEnv& env);
void add_health_admin(CLI::App& admin, AdminEnv& env);
void add_links_admin(CLI::App& admin, AdminEnv& env);
void add_billing_admin(CLI::App& admin, AdminEnv& env);
void add_catalog_admin(CLI::App& admin, AdminEnv& env);
void add_notify_admin(CLI::App& admin, AdminEnv& env);
void add_jobs_admin(CLI::App& admin, AdminEnv& env);
void add_wallets_admin(CLI::App& admin, AdminEnv& env);
void add_checkout_admin(CLI::App& admin, AdminEnv& env);
void add_fx_admin(CLI::App& admin, AdminEnv& env);
void add_recon_admin(CLI::App& admin, AdminEnv& env);
void add_settlement_admin(CLI::App& admin, AdminEnv& env);
void add_refunds_admin(CLI::App& admin, AdminEnv& env);

}  // namespace sika::app
