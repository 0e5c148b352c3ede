#include "app/metrics.hpp"

#include <map>
#include <memory>
#include <mutex>

#include "app/config.hpp"
#include "app/context.hpp"
#include "core/crypto.hpp"
#include "core/thread_annotations.hpp"
#include "core/time.hpp"
#include "payments/health.hpp"
#include "payments/operator_log.hpp"
#include "payments/service.hpp"
#include "store/jobs.hpp"
#include "web/envelope.hpp"
#include "webhooks/service.hpp"

namespace sika::app {

namespace {
constexpr std::string_view kRequestsHelp = "HTTP requests answered, by method, route pattern and status";
constexpr std::string_view kLatencyHelp = "Seconds from a request's first byte to the last byte of its response";

bool loopback(std::string_view ip) { return ip == "::1" || ip.starts_with("127."); }
}  // namespace

HttpMetrics::HttpMetrics(metrics::Registry& registry, const web::Router& router) : registry_(registry) {
  auto make = [&](std::string method, std::string route) {
    auto s = std::make_unique<Series>();
    s->method = std::move(method);
    s->route = std::move(route);
    s->latency = &registry_.histogram("sika_http_request_duration_seconds", kLatencyHelp, metrics::latency_buckets(),
                                      {{"method", s->method}, {"route", s->route}});
    return s;
  };
  for (const auto& r : router.routes())
    routes_.push_back(make(r.method, std::string(router.prefix(r.surface)) + r.pattern));
  unmatched_ = make("", "unmatched");
}

metrics::Counter& HttpMetrics::status_counter(Series& s, int status) {
  auto& slot = s.by_status[static_cast<std::size_t>(status - 100)];
  if (metrics::Counter* c = slot.load(std::memory_order_acquire)) return *c;
  // First request with this status on this route: the registry returns the same counter to
  // every thread racing here, so storing it twice is harmless.
  metrics::Counter& c =
      registry_.counter("sika_http_requests_total", kRequestsHelp,
                        {{"method", s.method}, {"route", s.route}, {"status", std::to_string(status)}});
  slot.store(&c, std::memory_order_release);
  return c;
}

void HttpMetrics::record(const http::AccessLogEntry& e) {
  Series& s =
      e.route_id >= 0 && static_cast<std::size_t>(e.route_id) < routes_.size() ? *routes_[e.route_id] : *unmatched_;
  if (e.status >= 100 && e.status <= 599) status_counter(s, e.status).inc();
  s.latency->observe(static_cast<double>(e.duration_us) / 1e6);
}

namespace {
// sika_jobs{queue,state} (pending, running, dead) and sika_jobs_oldest_due_seconds{queue}, read
// from the database at scrape time (every node sees the same queue). Series seen once are set to
// 0 when their rows are gone, so a drained queue reads 0 instead of keeping its last value.
constexpr std::string_view kJobsHelp = "Jobs per queue and state (pending, running, dead; every node)";
constexpr std::string_view kOldestDueHelp = "How long the oldest due pending job of the queue has waited (0 when none)";

void register_job_collector(metrics::Registry& registry, Context& ctx) {
  struct Seen {
    sika::Mutex mu;
    std::map<std::pair<std::string, std::string>, metrics::Gauge*> jobs GUARDED_BY(mu);
    std::map<std::string, metrics::Gauge*> oldest GUARDED_BY(mu);
  };
  auto seen = std::make_shared<Seen>();
  // The queues this process works exist from the first scrape, at zero, before any job.
  // Not shared yet: the lock is for the analysis and is never waited for.
  if (sika::MutexLock lock(seen->mu); ctx.jobs)
    for (const std::string& queue : ctx.jobs->queues()) {
      for (std::string_view state : {store::kJobPending, store::kJobRunning, store::kJobDead})
        seen->jobs[{queue, std::string(state)}] =
            &registry.gauge("sika_jobs", kJobsHelp, {{"queue", queue}, {"state", std::string(state)}});
      seen->oldest[queue] = &registry.gauge("sika_jobs_oldest_due_seconds", kOldestDueHelp, {{"queue", queue}});
    }
  registry.on_scrape([&registry, &ctx, seen] {
    const std::int64_t t = now_ms();
    auto stats = store::queue_stats(*ctx.db, t);
    if (!stats) return;  // the database is down: keep the last values (/readyz says why)
    sika::MutexLock lock(seen->mu);
    for (auto& [key, gauge] : seen->jobs) gauge->set(0);
    for (auto& [queue, gauge] : seen->oldest) gauge->set(0);
    auto set = [&](const std::string& queue, std::string_view state, std::int64_t n) REQUIRES(seen->mu) {
      auto& g = seen->jobs[{queue, std::string(state)}];
      if (!g) g = &registry.gauge("sika_jobs", kJobsHelp, {{"queue", queue}, {"state", std::string(state)}});
      g->set(static_cast<double>(n));
    };
    for (const auto& q : *stats) {
      set(q.queue, store::kJobPending, q.pending);
      set(q.queue, store::kJobRunning, q.running);
      set(q.queue, store::kJobDead, q.dead);
      auto& g = seen->oldest[q.queue];
      if (!g) g = &registry.gauge("sika_jobs_oldest_due_seconds", kOldestDueHelp, {{"queue", q.queue}});
      g->set(q.oldest_due ? static_cast<double>(std::max<std::int64_t>(0, t - *q.oldest_due)) / 1000.0 : 0.0);
    }
  });
}
}  // namespace

namespace {
// Operator health (docs/payments.md, "Operator health"): each connector's state as every node uses
// it (0 OPERATIONAL, 1 DELAYED, 2 CLOSED), the state changes this node saw, and the operator
// calls written or dropped by this node's log.
void register_health_collector(metrics::Registry& registry, Context& ctx) {
  if (!ctx.health) return;
  constexpr std::string_view kStateHelp = "Operator health of a connector: 0 OPERATIONAL, 1 DELAYED, 2 CLOSED";
  constexpr std::string_view kChangesHelp = "Operator health state changes seen by this node, by state entered";
  auto& written = registry.counter("sika_operator_calls_written_total", "Operator calls written to the call log");
  auto& dropped = registry.counter("sika_operator_calls_dropped_total",
                                   "Operator calls not logged because the log's queue was full");
  // Every family present from the first scrape: each registered connector OPERATIONAL, no change yet.
  if (ctx.payments) {
    for (const auto& name : ctx.payments->connector_names()) {
      registry.gauge("sika_operator_health_state", kStateHelp, {{"connector", name}}).set(0);
      for (auto a :
           {payments::Availability::operational, payments::Availability::delayed, payments::Availability::closed})
        registry.counter("sika_operator_health_changes_total", kChangesHelp,
                         {{"connector", name}, {"state", std::string(payments::to_string(a))}});
    }
  }
  registry.on_scrape([&registry, &ctx, &written, &dropped, kStateHelp, kChangesHelp] {
    for (const auto& h : ctx.health->snapshot())
      registry.gauge("sika_operator_health_state", kStateHelp, {{"connector", h.connector}})
          .set(static_cast<double>(h.state));
    for (const auto& [key, n] : ctx.health->transitions())
      registry
          .counter("sika_operator_health_changes_total", kChangesHelp,
                   {{"connector", key.first}, {"state", key.second}})
          .set(n);
    if (ctx.operator_log) {
      written.set(ctx.operator_log->written());
      dropped.set(ctx.operator_log->dropped());
    }
  });
}
}  // namespace

void register_collectors(metrics::Registry& registry, Context& ctx, const http::Server& server,
                         const http::AccessLog* access_log) {
  auto& connections = registry.gauge("sika_http_connections_open", "Open client connections");
  auto& busy =
      registry.counter("sika_http_rejected_busy_total", "Requests answered 503 because the handler queue was full");
  registry.on_scrape([&server, &connections, &busy] {
    auto st = server.stats();
    connections.set(static_cast<double>(st.connections_open));
    busy.set(st.rejected_busy);
  });
  // Registered whether or not the access log is on (0 when it is off).
  auto& dropped =
      registry.counter("sika_access_log_dropped_total", "Access-log lines dropped because the writer's queue was full");
  if (access_log) registry.on_scrape([access_log, &dropped] { dropped.set(access_log->dropped()); });

  // Families that are otherwise registered at their first event (a refusal, a checkpoint, a
  // SQLite WAL write) exist from the start with zero values, on either backend: the same names
  // and help as where they are counted (limits/limiter.cpp, store/sqlite_db.cpp, sqlite_wal_vfs.cpp).
  for (std::string_view limit :
       {"links_pay_per_address", "links_pay_per_link", "otp_sends_per_destination", "logins_per_address",
        "signups_per_address", "client_auth_failures_per_address", "client_auth_failures_per_client",
        "link_api_per_address", "wallet_page_sign_ins_per_address", "dashboard_totp_attempts_per_user",
        "checkout_pay_per_address", "merchant_api_per_address", "links_page_views_per_address",
        "token_requests_per_client"})
    registry.counter("sika_rate_limit_refusals_total", "Hits refused by a rate limiter",
                     {{"limit", std::string(limit)}});
  registry.histogram("sika_db_commit_batch_units", "Write units committed together by one SQLite group commit",
                     metrics::size_buckets());
  for (std::string_view thread : {"checkpointer", "writer"})
    registry.counter("sika_db_checkpoints_total", "SQLite WAL checkpoints", {{"thread", std::string(thread)}});
  for (std::string_view kind : {"asked", "made"})
    registry.counter("sika_db_wal_writes_total", "Writes to the SQLite WAL: asked by SQLite, and made to the kernel",
                     {{"kind", std::string(kind)}});

  auto& units = registry.counter("sika_db_write_units_total", "Write units completed (committed or failed)");
  auto& commits = registry.counter("sika_db_commits_total", "Transactions committed (SQLite: group-commit batches)");
  auto& batched =
      registry.counter("sika_db_batched_units_total", "Write units that shared their transaction with another");
  auto& largest = registry.gauge("sika_db_largest_batch_units", "Most write units committed by one SQLite transaction");
  auto& retries = registry.counter("sika_db_retries_total",
                                   "PostgreSQL units or reads run again (serialization failure, broken connection)");
  auto& reconnects = registry.counter("sika_db_reconnects_total", "Broken database connections replaced");
  registry.on_scrape([&ctx, &units, &commits, &batched, &largest, &retries, &reconnects] {
    auto st = ctx.db->stats();
    units.set(st.write_units);
    commits.set(st.commits);
    batched.set(st.batched_units);
    largest.set(static_cast<double>(st.largest_batch));
    retries.set(st.retries);
    reconnects.set(st.reconnects);
  });

  register_job_collector(registry, ctx);
  register_health_collector(registry, ctx);

  if (ctx.webhooks) {
    auto& attempts = registry.counter("sika_webhook_attempts_total", "Webhook delivery attempts made by this process");
    auto& succeeded = registry.counter("sika_webhook_attempts_succeeded_total", "Webhook attempts answered 2xx");
    auto& failed = registry.counter("sika_webhook_attempts_failed_total",
                                    "Webhook attempts that failed (status, timeout, refused)");
    auto& pending = registry.gauge("sika_webhook_deliveries_pending", "Deliveries waiting to be sent (every node)");
    auto& lag = registry.gauge("sika_webhook_oldest_pending_seconds",
                               "Age of the oldest pending delivery (0 when none): how far delivery lags behind events");
    registry.on_scrape([&ctx, &attempts, &succeeded, &failed, &pending, &lag] {
      auto st = ctx.webhooks->worker().stats();
      attempts.set(static_cast<std::uint64_t>(st.attempts));
      succeeded.set(static_cast<std::uint64_t>(st.succeeded));
      failed.set(static_cast<std::uint64_t>(st.failed_attempts));
      std::int64_t count = 0, oldest = 0;
      Status read = ctx.db->read([&](store::Conn& c) -> Status {
        SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT COUNT(*), MIN(created_at) FROM webhook_deliveries "
                                                    "WHERE status = 'pending'"));
        count = row ? row->i64(0) : 0;
        oldest = row && !row->is_null(1) ? row->i64(1) : 0;
        return {};
      });
      if (!read) return;  // the database is down: keep the last values (/readyz says why)
      pending.set(static_cast<double>(count));
      lag.set(count > 0 ? static_cast<double>(std::max<std::int64_t>(0, now_ms() - oldest)) / 1000.0 : 0.0);
    });
  }

  if (ctx.payments) {
    // Recovery of pending payments (docs/payments.md): every series exists from the start, at 0.
    auto& waiting = registry.gauge("sika_payments_recovery_waiting",
                                   "PENDING operator payments past their expected answer, waiting for recovery "
                                   "(every node)");
    auto& oldest = registry.gauge("sika_payments_recovery_oldest_seconds",
                                  "Age of the oldest PENDING operator payment waiting for recovery (0 when none)");
    constexpr std::string_view kChecksHelp = "Status queries made to operators by recovery on this node, by outcome";
    auto& ok = registry.counter("sika_payments_recovery_checks_total", kChecksHelp, {{"outcome", "succeeded"}});
    auto& failed = registry.counter("sika_payments_recovery_checks_total", kChecksHelp, {{"outcome", "failed"}});
    auto& pending = registry.counter("sika_payments_recovery_checks_total", kChecksHelp, {{"outcome", "pending"}});
    auto& unknown = registry.counter("sika_payments_recovery_checks_total", kChecksHelp, {{"outcome", "unknown"}});
    auto& gate_held =
        registry.gauge("sika_payments_operator_request_threads",
                       "Request threads waiting on an operator now (at most payments.operator_request_threads)");
    auto& gate_refused =
        registry.counter("sika_payments_operator_busy_total",
                         "Requests answered at once because every request thread allowed to wait on operators was "
                         "waiting (a collection refused 503, a payout or refund queued, a callback left to recovery)");
    registry.on_scrape([&ctx, &waiting, &oldest, &ok, &failed, &pending, &unknown, &gate_held, &gate_refused] {
      auto st = ctx.payments->recovery_stats();
      ok.set(st.succeeded);
      failed.set(st.failed);
      pending.set(st.pending);
      unknown.set(st.unknown);
      const auto& gate = ctx.payments->operator_gate();
      gate_held.set(static_cast<double>(gate.held()));
      gate_refused.set(static_cast<std::uint64_t>(gate.refused()));
      auto backlog = ctx.payments->recovery_backlog();
      if (!backlog) return;  // the database is down: keep the last values (/readyz says why)
      waiting.set(static_cast<double>(backlog->waiting));
      oldest.set(backlog->waiting > 0 && backlog->oldest_since
                     ? static_cast<double>(std::max<std::int64_t>(0, now_ms() - *backlog->oldest_since)) / 1000.0
                     : 0.0);
    });
  }
}

web::Response metrics_response(const Config& config, metrics::Registry& registry, const web::Request& req) {
  std::string token = config.get_string("metrics.token");
  if (!token.empty()) {
    std::string_view auth = req.header("authorization");
    bool bearer = auth.size() > 7 && (auth.substr(0, 7) == "Bearer " || auth.substr(0, 7) == "bearer ");
    if (!bearer || !crypto::constant_time_equal(auth.substr(7), token)) {
      web::Response res = web::error(req, unauthorized("metrics need Authorization: Bearer <metrics.token>"));
      res.set("WWW-Authenticate", "Bearer");
      return res;
    }
  } else if (!loopback(req.remote_ip)) {
    return web::error(req, forbidden("metrics answer loopback peers only (set metrics.token to scrape remotely)"));
  }
  return web::Response::text(200, registry.render(), "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace sika::app
