#include "app/serve.hpp"

#include <spdlog/spdlog.h>

#include <pthread.h>
#include <csignal>
#include <fstream>
#include <iostream>

#include "app/context.hpp"
#include "app/demo.hpp"
#include "app/metrics.hpp"
#include "app/routes.hpp"
#include "core/codes.hpp"
#include "http/access_log.hpp"
#include "http/server.hpp"

namespace sika::app {

namespace {
void report(const Error& e) {
  std::string d = e.details.is_string() ? std::string(e.details.as_string()) : boost::json::serialize(e.details);
  std::cerr << "sika: " << (e.is(codes::bad_config) ? "configuration error: " : e.code + ": ") << d << std::endl;
}

// Blocks SIGINT/SIGTERM in every thread created from now on; the main thread waits for them.
sigset_t block_shutdown_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}
}  // namespace

int migrate_command(Config config) {
  auto ctx = open_context(std::move(config), true);
  if (!ctx) {
    report(ctx.error());
    return 1;
  }
  auto version = store::schema_version(*(*ctx)->db);
  std::cout << "schema version " << (version ? *version : -1) << std::endl;
  return 0;
}

namespace {

// The HTTP server's settings from the configuration (http.*, listen, default_locale).
http::ServerOptions server_options(Context& ctx) {
  http::ServerOptions so;
  so.host = ctx.config.listen_host();
  so.port = ctx.config.listen_port();
  so.io_threads = static_cast<int>(ctx.config.get_int("http.io_threads"));
  so.handler_threads = static_cast<int>(ctx.config.get_int("http.handler_threads"));
  so.handler_queue = static_cast<std::size_t>(ctx.config.get_int("http.handler_queue"));
  so.max_body_bytes = static_cast<std::size_t>(ctx.config.get_int("http.max_body_bytes"));
  so.max_header_bytes = static_cast<std::size_t>(ctx.config.get_int("http.max_header_bytes"));
  so.header_timeout_ms = static_cast<int>(ctx.config.get_int("http.header_timeout_ms"));
  so.body_timeout_ms = static_cast<int>(ctx.config.get_int("http.body_timeout_ms"));
  so.idle_timeout_ms = static_cast<int>(ctx.config.get_int("http.idle_timeout_ms"));
  so.shutdown_grace_ms = static_cast<int>(ctx.config.get_int("http.shutdown_grace_ms"));
  so.default_locale = ctx.config.get_string("default_locale") == "en" ? i18n::Locale::en : i18n::Locale::fr;
  return so;
}

// Starts listening; with port 0, the configuration's "listen" then names the port taken.
Status start_listening(http::Server& server, Context& ctx) {
  if (auto s = server.start(); !s) {
    return make_error(ErrorKind::unavailable, "listen",
                      boost::json::string(ctx.config.get_string("listen") + ": " +
                                          (s.error().details.is_string() ? std::string(s.error().details.as_string())
                                                                         : std::string("cannot listen"))));
  }
  if (ctx.config.listen_port() == 0) {
    std::string listen = ctx.config.listen_host() + ":" + std::to_string(server.port());
    if (listen.find(':') != listen.rfind(':'))
      listen = "[" + ctx.config.listen_host() + "]:" + std::to_string(server.port());
    ctx.config.set("listen", listen);
  }
  return {};
}

// Prints where each surface that answers listens, and the demo credentials when seeded.
void announce(Context& ctx, const web::Router& router, const ServeOptions& options) {
  using web::Surface;
  std::cout << "sika listening on " << ctx.config.get_string("listen") << " ("
            << ctx.config.get_string("db").substr(0, ctx.config.get_string("db").find(':')) << ")\n"
            << "  gateway   " << ctx.config.surface_url(Surface::gateway)
            << "   (OpenAPI: " << ctx.config.surface_url(Surface::gateway) << "/openapi.json)\n"
            << "  identity  " << ctx.config.surface_url(Surface::identity) << "\n";
  // Only surfaces that answer are announced.
  if (router.serves(Surface::checkout))
    std::cout << "  checkout  " << ctx.config.surface_url(Surface::checkout) << "\n";
  if (router.serves(Surface::link)) std::cout << "  link API  " << ctx.config.surface_url(Surface::link) << "\n";
  if (router.serves(Surface::dashboard))
    std::cout << "  dashboard " << ctx.config.surface_url(Surface::dashboard) << "\n";
  if (options.demo_file) {
    std::ifstream demo(*options.demo_file);
    std::cout << "  demo credentials (" << *options.demo_file << "):\n" << demo.rdbuf();
  }
  std::cout << std::flush;
}

}  // namespace

int serve(Config config, const ServeOptions& options) {
  sigset_t signals = block_shutdown_signals();

  auto opened = open_context(std::move(config), options.migrate);
  if (!opened) {
    report(opened.error());
    return 1;
  }
  Context& ctx = **opened;
  if (auto s = build_services(ctx); !s) {
    report(s.error());
    return 1;
  }

  web::Router router;
  build_routes(router, ctx);

  http::ServerOptions so = server_options(ctx);
  // The access log and the request metrics are fed after each response, on the I/O thread:
  // both only touch atomics or a bounded queue there. Declared before the server: they outlive it.
  std::unique_ptr<http::AccessLog> access_log;
  if (ctx.config.get_bool("log.access")) access_log = std::make_unique<http::AccessLog>(stdout);
  std::unique_ptr<HttpMetrics> http_metrics;
  if (ctx.config.get_bool("metrics.enabled")) http_metrics = std::make_unique<HttpMetrics>(metrics::registry(), router);
  if (access_log || http_metrics)
    so.access_log = [log = access_log.get(), m = http_metrics.get()](http::AccessLogEntry&& e) {
      if (m) m->record(e);
      if (log) log->post(std::move(e));
    };

  // answers_later routes run on the I/O thread only where writes do not block and reads are local
  // (SQLite). On PostgreSQL their reads are round trips to the server: they run on a handler
  // thread, which write_async frees as soon as the unit is queued.
  so.run_inline = [&router, inline_ok = ctx.db->writes_async() &&
                                        ctx.db->dialect() == store::Dialect::sqlite](const web::Request& req) {
    return router.is_non_blocking(req) || (inline_ok && router.answers_later(req));
  };
  http::Server server(so, [&router](web::Request& req) { return router.dispatch(req); });
  if (http_metrics) register_collectors(metrics::registry(), ctx, server, access_log.get());
  if (auto s = start_listening(server, ctx); !s) {
    report(s.error());
    return 1;
  }

  if (options.demo_file) {
    if (auto s = seed_demo(ctx, router, *options.demo_file); !s) {
      report(s.error());
      server.stop();
      server.wait();
      return 1;
    }
  }
  start_workers(ctx);
  ctx.started = true;

  announce(ctx, router, options);

  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("received {}, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  server.stop();
  server.wait();
  stop_workers(ctx);
  if (ctx.replica) ctx.replica->close();
  ctx.db->close();
  spdlog::info("stopped");
  return 0;
}

}  // namespace sika::app
