#include "app/cli.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <iostream>
#include <map>
#include <memory>

#include "app/admin.hpp"
#include "app/config.hpp"
#include "app/context.hpp"
#include "app/serve.hpp"

namespace sika::app {

namespace {
struct CommonFlags {
  std::optional<std::string> config_file;
  std::map<std::string, std::string> values;
  std::vector<std::string> sets;
};

// --config, --db and --set KEY=VALUE, shared by every command that opens the database.
void add_common(CLI::App* cmd, CommonFlags& f) {
  cmd->add_option("--config", f.config_file, "TOML configuration file");
  cmd->add_option_function<std::string>(
      "--db", [&f](const std::string& v) { f.values["db"] = v; }, "database DSN (sqlite://PATH or postgres://...)");
  cmd->add_option("--set", f.sets, "KEY=VALUE for any configuration key (repeatable)");
}

Result<Config> load(CommonFlags& f) {
  for (const auto& s : f.sets) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      return make_error(ErrorKind::invalid, "bad_config", boost::json::string("--set " + s + ": expected KEY=VALUE"));
    f.values[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return Config::load(f.config_file, f.values);
}

int config_failure(const Error& e) {
  std::cerr << "sika: configuration error: "
            << (e.details.is_string() ? std::string(e.details.as_string()) : boost::json::serialize(e.details))
            << std::endl;
  return 2;
}

void set_log_level(const Config& c) {
  spdlog::set_level(spdlog::level::from_str(c.get_string("log.level")));
  spdlog::set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","msg":"%v"})", spdlog::pattern_time_type::utc);
}
}  // namespace

int run_cli(int argc, char** argv) {
  // Logs go to stderr: stdout carries command output (admin --json, the listening banner) and
  // the access log.
  if (!spdlog::get("sika")) spdlog::set_default_logger(spdlog::stderr_logger_mt("sika"));
  CLI::App app{"sika: mobile-money and wallet payment platform"};
  app.require_subcommand(1);
  int exit_code = 0;

  // serve
  CommonFlags serve_flags;
  ServeOptions serve_opts;
  bool no_migrate = false;
  auto* serve_cmd = app.add_subcommand("serve", "Run every surface (gateway, identity, checkout, link API, dashboard)");
  add_common(serve_cmd, serve_flags);
  serve_cmd->add_option_function<std::string>(
      "--listen", [&](const std::string& v) { serve_flags.values["listen"] = v; },
      "HOST:PORT (default 127.0.0.1:8080)");
  serve_cmd->add_option_function<std::string>(
      "--public-url", [&](const std::string& v) { serve_flags.values["public_url"] = v; },
      "public URL the surfaces' URLs derive from");
  serve_cmd->add_option("--demo", serve_opts.demo_file, "seed the demo world and write its credentials (JSON) to FILE");
  serve_cmd->add_flag("--no-migrate", no_migrate, "do not apply pending migrations at start");
  serve_cmd->footer(describe_keys());
  serve_cmd->callback([&] {
    auto cfg = load(serve_flags);
    if (!cfg) {
      exit_code = config_failure(cfg.error());
      return;
    }
    set_log_level(*cfg);
    serve_opts.migrate = !no_migrate && cfg->get_bool("migrate");
    exit_code = serve(std::move(cfg).value(), serve_opts);
  });

  // migrate
  CommonFlags migrate_flags;
  auto* migrate_cmd = app.add_subcommand("migrate", "Apply pending database migrations");
  add_common(migrate_cmd, migrate_flags);
  migrate_cmd->callback([&] {
    auto cfg = load(migrate_flags);
    if (!cfg) {
      exit_code = config_failure(cfg.error());
      return;
    }
    set_log_level(*cfg);
    exit_code = migrate_command(std::move(cfg).value());
  });

  // admin
  CommonFlags admin_flags;
  auto* admin_cmd = app.add_subcommand("admin", "Operator commands (merchants, clients, keys, users, catalog, ledger)");
  admin_cmd->require_subcommand(1);
  add_common(admin_cmd, admin_flags);
  admin_cmd->fallthrough();
  std::unique_ptr<Context> admin_ctx;
  AdminEnv env;
  env.context = [&]() -> Context& {
    if (admin_ctx) return *admin_ctx;
    auto cfg = load(admin_flags);
    if (!cfg) {
      config_failure(cfg.error());
      throw CLI::RuntimeError(2);
    }
    spdlog::set_level(spdlog::level::warn);
    auto ctx = open_context(std::move(cfg).value(), true);
    if (!ctx) fail(ctx.error());
    admin_ctx = std::move(ctx).value();
    check(build_services(*admin_ctx));
    return *admin_ctx;
  };
  add_admin_commands(*admin_cmd, env);

  auto* config_cmd = app.add_subcommand("config", "Describe the configuration keys");
  bool markdown = false;
  config_cmd->add_flag("--markdown", markdown, "print the keys as a Markdown table");
  config_cmd->callback([&] { std::cout << (markdown ? keys_markdown() : describe_keys()); });

  app.add_subcommand("version", "Print the version")->callback([] { std::cout << "sika 0.1.0" << std::endl; });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (admin_ctx) {
    // What the command left to the workers is written before the database closes: the operator
    // calls it made, and the submissions the sandbox operator accepted (the server's recovery then
    // finds them there, as the command's process ends before the sandbox's callback).
    stop_workers(*admin_ctx);
    admin_ctx->db->close();
  }
  return exit_code;
}

}  // namespace sika::app
