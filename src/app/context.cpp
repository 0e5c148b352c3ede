#include "app/context.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/connectors.hpp"
#include "billing/service.hpp"
#include "catalog/service.hpp"
#include "checkout/service.hpp"
#include "core/crypto.hpp"
#include "core/random.hpp"
#include "core/time.hpp"
#include "dashboard/service.hpp"
#include "http/client.hpp"
#include "identity/service.hpp"
#include "limits/limiter.hpp"
#include "limits/reserved.hpp"
#include "links/service.hpp"
#include "notify/notifier.hpp"
#include "otp/service.hpp"
#include "payments/health.hpp"
#include "payments/operator_log.hpp"
#include "payments/recon.hpp"
#include "payments/service.hpp"
#include "statements/service.hpp"
#include "store/replica.hpp"
#include "wallets/service.hpp"
#include "webhooks/service.hpp"

namespace sika::app {

Context::Context() = default;
Context::~Context() = default;

namespace {
// With SQLite and no configured secret, the secret lives beside the database file (mode 0600),
// so a single-node install keeps working across restarts without configuration.
Result<std::string> resolve_secret(const Config& config) {
  std::string secret = config.get_string("secret_key");
  if (!secret.empty()) return secret;
  std::string dsn = config.get_string("db");
  if (!dsn.starts_with("sqlite://"))
    return make_error(ErrorKind::invalid, "bad_config",
                      boost::json::string("secret_key: required with PostgreSQL (set SIKA_SECRET_KEY)"));
  std::filesystem::path db_path = dsn.substr(9);
  std::filesystem::path file = db_path.parent_path() / "secret.key";
  std::error_code ec;
  if (!db_path.parent_path().empty()) std::filesystem::create_directories(db_path.parent_path(), ec);
  if (std::ifstream in(file); in) {
    std::stringstream ss;
    ss << in.rdbuf();
    secret = ss.str();
    while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
    if (secret.size() >= 32) return secret;
  }
  secret = random_token(48);
  {
    std::ofstream out(file, std::ios::trunc);
    if (!out)
      return make_error(ErrorKind::invalid, "bad_config",
                        boost::json::string("secret_key: cannot write " + file.string()));
    out << secret << "\n";
  }
  ::chmod(file.c_str(), 0600);
  spdlog::warn("secret_key not configured: generated {} (keep it with the database)", file.string());
  return secret;
}

// Operator health and the operator-call log (docs/payments.md, "Operator health").
Status build_health(Context& ctx) {
  const Config& c = ctx.config;
  auto percent = [&](std::string_view key) -> Result<double> {
    const std::int64_t v = c.get_int(key);
    if (v < 1 || v > 100)
      return make_error(ErrorKind::invalid, "bad_config", boost::json::string(std::string(key) + ": 1 to 100"));
    return static_cast<double>(v) / 100.0;
  };
  payments::HealthOptions h;
  h.window_ms = std::max<std::int64_t>(1, c.get_int("payments.health_window_seconds")) * 1000;
  h.min_calls = std::max<std::int64_t>(1, c.get_int("payments.health_min_calls"));
  SIKA_ASSIGN_OR_RETURN(h.delayed_error_ratio, percent("payments.health_delayed_error_percent"));
  SIKA_ASSIGN_OR_RETURN(h.closed_error_ratio, percent("payments.health_closed_error_percent"));
  h.delayed_p90_ms = std::max<std::int64_t>(1, c.get_int("payments.health_delayed_p90_ms"));
  h.closed_consecutive = std::max<std::int64_t>(1, c.get_int("payments.health_closed_consecutive"));
  h.recover_ms = std::max<std::int64_t>(0, c.get_int("payments.health_recover_seconds")) * 1000;
  h.publish_ms = std::max<std::int64_t>(10, c.get_int("payments.health_publish_ms"));
  h.stale_ms = std::max<std::int64_t>(10'000, 5 * h.publish_ms);
  ctx.health = std::make_unique<payments::Health>(*ctx.db, std::move(h));
  ctx.operator_log = std::make_unique<payments::OperatorLog>(*ctx.db, ctx.health.get(), payments::OperatorLogOptions{});
  return {};
}
}  // namespace

Result<std::unique_ptr<Context>> open_context(Config config, bool migrate) {
  auto ctx = std::make_unique<Context>();
  auto secret = resolve_secret(config);
  if (!secret) return secret.take_error();
  ctx->pepper = hex_encode(crypto::hmac_sha256(*secret, "sika:secret-hash-pepper:v1"));
  store::DbOptions opts;
  opts.pool_size = static_cast<int>(config.get_int("db_pool_size"));
  opts.pg_writers = static_cast<int>(config.get_int("db_writers"));
  opts.retry_deadline_ms = static_cast<int>(config.get_int("db_retry_deadline_ms"));
  opts.statement_timeout_ms = static_cast<int>(config.get_int("db_statement_timeout_ms"));
  auto db = store::open(config.get_string("db"), opts);
  if (!db) return db.take_error();
  ctx->db = std::move(db).value();
  if (const std::string url = config.get_string("database.read_url"); !url.empty()) {
    if (ctx->db->dialect() != store::Dialect::postgres ||
        !(url.starts_with("postgres://") || url.starts_with("postgresql://")))
      return make_error(ErrorKind::invalid, "bad_config",
                        boost::json::string("database.read_url: a PostgreSQL replica of a PostgreSQL db only"));
    auto replica = store::open(url, opts);
    if (!replica) return replica.take_error();
    ctx->replica = store::read_routed(*ctx->db, std::move(replica).value());
  }
  if (migrate) {
    auto applied = store::migrate(*ctx->db);
    if (!applied) return applied.take_error();
    for (int v : *applied) spdlog::info("applied migration {}", v);
  }
  ctx->config = std::move(config);
  return ctx;
}

Status build_services(Context& ctx) {
  {
    const Config& c = ctx.config;
    auto proxies =
        web::TrustedProxies::parse(c.get_string("trusted_proxies"), c.get_string("client_address_header") == "forwarded"
                                                                        ? web::ForwardedHeader::forwarded
                                                                        : web::ForwardedHeader::x_forwarded_for);
    if (!proxies) return proxies.take_error();
    ctx.trusted_proxies = std::move(proxies).value();
    limits::Options lo;
    lo.sweep_interval_ms = c.get_int("limits.sweep_interval_seconds") * 1000;
    ctx.limiter = std::make_unique<limits::Limiter>(*ctx.db, lo);
    ctx.reserved_limiter = std::make_unique<limits::ReservedLimiter>(*ctx.limiter);
    ctx.notifier = std::make_unique<notify::SandboxNotifier>(*ctx.db);
    otp::Options oo;
    oo.pepper = ctx.pepper;
    oo.ttl_ms = c.get_int("otp.ttl_seconds") * 1000;
    oo.max_attempts = static_cast<int>(c.get_int("otp.max_attempts"));
    oo.code_length = static_cast<int>(c.get_int("otp.code_length"));
    oo.resend_cooldown_ms = c.get_int("otp.resend_cooldown_seconds") * 1000;
    oo.max_sends = static_cast<int>(c.get_int("otp.max_sends"));
    oo.sends_per_destination_per_hour = static_cast<int>(c.get_int("otp.sends_per_destination_per_hour"));
    oo.sandbox_code = c.get_string("payments.sandbox_otp");
    ctx.otp = std::make_unique<otp::Service>(*ctx.db, *ctx.notifier, std::move(oo));
  }
  {
    const Config& c = ctx.config;
    identity::Options o;
    o.issuer = c.surface_url(web::Surface::identity);
    o.audience = c.surface_url(web::Surface::gateway);
    o.pepper = ctx.pepper;
    o.access_token_ttl = static_cast<int>(c.get_int("identity.access_token_ttl"));
    o.id_token_ttl = static_cast<int>(c.get_int("identity.id_token_ttl"));
    o.refresh_token_ttl = static_cast<int>(c.get_int("identity.refresh_token_ttl"));
    o.refresh_grace_seconds = static_cast<int>(c.get_int("identity.refresh_grace_seconds"));
    o.code_ttl = static_cast<int>(c.get_int("identity.code_ttl"));
    o.session_ttl = static_cast<int>(c.get_int("identity.session_ttl"));
    o.signup_enabled = c.get_bool("identity.signup_enabled");
    o.max_failed_logins = static_cast<int>(c.get_int("identity.max_failed_logins"));
    o.lockout_seconds = static_cast<int>(c.get_int("identity.lockout_seconds"));
    o.login_failures_per_account = static_cast<int>(c.get_int("identity.login_failures_per_account"));
    o.default_alg = c.get_string("identity.access_token_alg");
    o.token_cache_seconds = static_cast<int>(c.get_int("identity.token_cache_seconds"));
    o.token_cache_entries = static_cast<int>(c.get_int("identity.token_cache_entries"));
    o.client_cache_seconds = static_cast<int>(c.get_int("identity.client_cache_seconds"));
    o.key_reload_seconds = static_cast<int>(c.get_int("identity.key_reload_seconds"));
    o.login_attempts_per_ip = static_cast<int>(c.get_int("identity.login_attempts_per_ip"));
    o.failed_client_auth_per_ip = static_cast<int>(c.get_int("identity.failed_client_auth_per_ip"));
    o.failed_client_auth_per_client = static_cast<int>(c.get_int("identity.failed_client_auth_per_client"));
    o.token_rate_per_client = static_cast<int>(c.get_int("identity.token_rate_per_client"));
    try {
      ctx.identity = std::make_unique<identity::Service>(*ctx.db, std::move(o));
    } catch (const std::exception& e) {
      return internal_error(boost::json::string(e.what()));
    }
    identity::Service* service = ctx.identity.get();
    ctx.authenticate = [service](const web::Request& req) { return service->authenticate(req); };
  }
  {
    const Config& c = ctx.config;
    if (!ctx.http_client) {
      http::ClientOptions co;
      // Keep as many pooled connections per host as requests may be in flight to it.
      co.max_in_flight_per_host =
          static_cast<std::size_t>(std::max<std::int64_t>(1, c.get_int("webhooks.max_in_flight_per_endpoint")));
      co.max_idle_per_host = co.max_in_flight_per_host;
      ctx.http_client = http::make_http_client(co);
    }
    webhooks::Options o;
    o.pepper = ctx.pepper;
    o.allow_private_targets = c.get_bool("webhooks.allow_private_targets");
    o.max_endpoints_per_merchant = static_cast<int>(c.get_int("webhooks.max_endpoints_per_merchant"));
    o.secret_overlap_ms = c.get_int("webhooks.secret_overlap_seconds") * 1000;
    o.worker.threads = static_cast<int>(std::max<std::int64_t>(1, c.get_int("webhooks.threads")));
    o.worker.max_in_flight_per_endpoint =
        static_cast<int>(std::max<std::int64_t>(1, c.get_int("webhooks.max_in_flight_per_endpoint")));
    o.worker.connect_timeout_ms = static_cast<int>(c.get_int("webhooks.connect_timeout_ms"));
    o.worker.timeout_ms = static_cast<int>(c.get_int("webhooks.timeout_ms"));
    o.worker.poll_interval_ms = static_cast<int>(std::max<std::int64_t>(1, c.get_int("webhooks.poll_interval_ms")));
    o.worker.disable_after_ms = c.get_int("webhooks.disable_after_hours") * 3600 * 1000;
    o.worker.lease_ms = c.get_int("webhooks.lease_ms");
    auto schedule = webhooks::RetrySchedule::parse(c.get_string("webhooks.retry_schedule"));
    if (!schedule)
      return make_error(
          ErrorKind::invalid, "bad_config",
          boost::json::string("webhooks.retry_schedule: " + std::string(schedule.error().details.as_string())));
    o.worker.schedule = *schedule;
    ctx.webhooks = std::make_unique<webhooks::Service>(*ctx.db, *ctx.http_client, std::move(o));
  }
  {
    catalog::Options o;
    o.refresh_ms = ctx.config.get_int("catalog.refresh_ms");
    // The providers' availability is operator health's, built with payments below.
    o.availability = [context = &ctx](std::string_view connector) -> std::string {
      return context->health ? std::string(payments::to_string(context->health->state(connector))) : std::string();
    };
    ctx.catalog = std::make_unique<catalog::Service>(*ctx.db, o);
  }
  {
    // Payments: after the HTTP client exists; the catalog snapshot is read through ctx at each call.
    const Config& c = ctx.config;
    if (!ctx.http_client) ctx.http_client = http::make_http_client(http::ClientOptions{});
    payments::Options o;
    o.checkout_url = c.surface_url(web::Surface::checkout);
    std::string callback = c.get_string("payments.callback_url");
    o.callback_base_url = callback.empty() ? c.surface_url(web::Surface::gateway) + "/operator/callback" : callback;
    o.secret = hex_encode(crypto::hmac_sha256(ctx.pepper, "sika:payments:v1"));
    o.limiter = ctx.limiter.get();
    o.intent_ttl_ms = c.get_int("payments.intent_ttl_ms");
    o.pending_ttl_ms = c.get_int("payments.pending_ttl_ms");
    o.operator_request_threads = static_cast<int>(c.get_int("payments.operator_request_threads"));
    if (o.operator_request_threads == 0) {
      // Every request thread but a reserve of an eighth of them (at least 4) for everything else.
      const int threads = static_cast<int>(c.get_int("http.handler_threads"));
      o.operator_request_threads = std::max(1, threads - std::max(4, threads / 8));
    }
    o.disbursement_ttl_ms = c.get_int("payments.disbursement_ttl_ms");
    o.expiry_interval_ms = c.get_int("payments.expiry_interval_ms");
    o.max_otp_attempts = static_cast<int>(c.get_int("payments.max_otp_attempts"));
    o.refuse_other_operator_numbers = c.get_bool("payments.refuse_other_operator_numbers");
    o.sandbox_otp = c.get_string("payments.sandbox_otp");
    o.sandbox_delay_ms = c.get_int("payments.sandbox_delay_ms");
    o.sandbox_duplicate_delay_ms = c.get_int("payments.sandbox_duplicate_delay_ms");
    o.sandbox_late_ms = c.get_int("payments.sandbox_late_ms");
    o.sandbox_query_delay_ms = std::max<std::int64_t>(0, c.get_int("payments.sandbox_query_delay_ms"));
    {
      // Each delay 1 ms to 1 day; a schedule may repeat a delay.
      std::vector<std::int64_t> delays;
      std::string text = c.get_string("payments.recovery_delays_ms");
      bool ok = !text.empty();
      for (std::size_t start = 0; ok && start <= text.size();) {
        std::size_t comma = text.find(',', start);
        std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        std::int64_t v = 0;
        auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
        ok = !part.empty() && ec == std::errc() && p == part.data() + part.size() && v >= 1 && v <= 86'400'000;
        if (ok) delays.push_back(v);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      if (!ok || delays.size() > 32)
        return make_error(ErrorKind::invalid, "bad_config",
                          boost::json::string("payments.recovery_delays_ms: 1 to 32 delays in ms (1 to 86400000), "
                                              "e.g. 5000,15000,60000,300000,900000"));
      o.recovery_delays_ms = std::move(delays);
    }
    o.recovery_interval_ms = std::max<std::int64_t>(10, c.get_int("payments.recovery_interval_ms"));
    o.recovery_lease_ms = std::max<std::int64_t>(1000, c.get_int("payments.recovery_lease_ms"));
    const std::int64_t recovery_batch = c.get_int("payments.recovery_batch");
    if (recovery_batch < 1 || recovery_batch > 1000)
      return make_error(ErrorKind::invalid, "bad_config",
                        boost::json::string("payments.recovery_batch: an integer from 1 to 1000"));
    o.recovery_batch = static_cast<int>(recovery_batch);
    o.otp = ctx.otp.get();
    SIKA_TRY(build_health(ctx));
    o.health = ctx.health.get();
    o.calls = ctx.operator_log.get();
    o.payout_send_batch = static_cast<int>(std::clamp<std::int64_t>(c.get_int("payments.payout_send_batch"), 1, 1000));
    Context* context = &ctx;
    payments::CatalogSnapshot snapshot = [context]() -> std::shared_ptr<const catalog::Catalog> {
      if (context->catalog) return context->catalog->snapshot();
      static const auto kEmpty = std::make_shared<const catalog::Catalog>();
      return kEmpty;
    };
    const std::string callback_base = o.callback_base_url;
    ctx.payments = std::make_unique<payments::Service>(*ctx.db, snapshot, *ctx.http_client, std::move(o));
    SIKA_TRY(open_connectors(ctx, callback_base));
    {
      payments::recon::Options ro;
      const std::int64_t grace = c.get_int("recon.grace_hours");
      if (grace < 0 || grace > 24 * 31)
        return make_error(ErrorKind::invalid, "bad_config",
                          boost::json::string("recon.grace_hours: an integer from 0 to 744"));
      ro.grace_ms = grace * 3'600'000;
      ro.batch = static_cast<int>(std::clamp<std::int64_t>(c.get_int("recon.batch"), 100, 50'000));
      ro.lease_ms = std::clamp<std::int64_t>(c.get_int("recon.lease_ms"), 100, 3'600'000);
      ctx.recon = std::make_unique<payments::recon::Reconciler>(
          *ctx.db, [] { return sika::now_ms(); }, ro);
    }
    // Payment links collect through payments; their public pages live on the checkout surface.
    links::Options lo;
    lo.page_base_url = c.surface_url(web::Surface::checkout);
    lo.limiter = ctx.limiter.get();
    lo.per_address.limit = c.get_int("links.pay_per_address_per_minute");
    lo.per_link.limit = c.get_int("links.pay_per_link_per_minute");
    lo.page_views_per_address.limit = c.get_int("links.page_views_per_address_per_minute");
    lo.otp = ctx.otp.get();
    ctx.links = std::make_unique<links::Service>(*ctx.db, *ctx.payments, snapshot, std::move(lo));
    statements::Options so;  // docs/statements.md, docs/settlement.md
    so.settlement_interval_ms = std::max<std::int64_t>(10, c.get_int("settlement.schedule_interval_ms"));
    so.payout_watch_interval_ms = std::max<std::int64_t>(10, c.get_int("settlement.payout_watch_interval_ms"));
    so.debtor_name = c.get_string("settlement.debtor_name");
    so.debtor_iban = c.get_string("settlement.debtor_iban");
    so.debtor_bic = c.get_string("settlement.debtor_bic");
    so.reads = ctx.replica.get();
    ctx.statements = std::make_unique<statements::Service>(*ctx.db, std::move(so));
    ctx.statements->attach_payments(ctx.payments.get());
    // Hosted checkout collects through payments; its pages live on the checkout surface.
    checkout::Options ko;
    ko.page_base_url = c.surface_url(web::Surface::checkout);
    ko.pepper = ctx.pepper;
    ko.server_key = crypto::hmac_sha256(ctx.pepper, "sika:checkout:v1");
    ko.session_ttl_ms = c.get_int("checkout.session_ttl_seconds") * 1000;
    ko.limiter = ctx.limiter.get();
    ko.per_address.limit = c.get_int("checkout.pay_per_address_per_minute");
    ko.api_per_address.limit = c.get_int("checkout.merchant_api_per_hour");
    ctx.checkout = std::make_unique<checkout::Service>(*ctx.db, *ctx.payments, snapshot, std::move(ko));
    // Wallets and the wallet link API (docs/wallet-link.md).
    wallets::Options wo;
    wo.secret = hex_encode(crypto::hmac_sha256(ctx.pepper, "sika:wallets:v1"));
    wo.pepper = ctx.pepper;
    wo.default_limits = {c.get_int("wallets.link_per_payment"), c.get_int("wallets.link_per_period"),
                         c.get_int("wallets.link_period_seconds") * 1000};
    wo.limiter = ctx.limiter.get();
    wo.api_limiter = ctx.reserved_limiter.get();
    wo.per_address = {.limit = c.get_int("wallets.link_api_per_hour"),
                      .window_ms = 3'600'000,
                      .block_ms = c.get_int("wallets.link_api_block_seconds") * 1000,
                      .block_after = std::max<std::int64_t>(1, c.get_int("wallets.link_api_block_after")),
                      .name = "link_api_per_address"};
    wo.page_environment = c.get_string("wallets.page_environment");
    wo.session_ttl_ms = c.get_int("wallets.page_session_seconds") * 1000;
    wo.page_merchant = c.get_string("wallets.page_merchant");
    wo.identity = ctx.identity.get();
    wo.client_id = c.get_string("wallets.client_id");
    wo.page_url = c.surface_url(web::Surface::checkout) + "/wallet";
    wo.secure_cookies = c.surface_url(web::Surface::checkout).starts_with("https://");
    ctx.wallets = std::make_unique<wallets::Service>(*ctx.db, *ctx.payments, std::move(snapshot), *ctx.otp,
                                                     *ctx.notifier, std::move(wo));
  }
  {
    // The dashboard: an OpenID Connect client of our identity service, reading through the others.
    const Config& c = ctx.config;
    dashboard::Options o;
    o.dashboard_url = c.surface_url(web::Surface::dashboard);
    o.client_id = c.get_string("dashboard.client_id");
    o.pepper = ctx.pepper;
    o.idle_ms = c.get_int("dashboard.idle_timeout_seconds") * 1000;
    o.absolute_ms = c.get_int("dashboard.absolute_timeout_seconds") * 1000;
    o.list_reads = ctx.replica.get();
    ctx.dashboard = std::make_unique<dashboard::Service>(
        *ctx.db,
        dashboard::Components{ctx.identity.get(), ctx.links.get(), ctx.webhooks.get(), ctx.limiter.get(),
                              ctx.catalog.get(), nullptr, ctx.payments.get(), ctx.checkout.get(), nullptr, nullptr,
                              ctx.recon.get()},
        std::move(o));
  }
  {
    const Config& c = ctx.config;
    store::JobRunnerOptions o;
    o.workers = static_cast<int>(std::max<std::int64_t>(1, c.get_int("jobs.workers")));
    o.lease_ms = std::max<std::int64_t>(1000, c.get_int("jobs.lease_ms"));
    o.poll_interval_ms = std::max<std::int64_t>(1, c.get_int("jobs.poll_interval_ms"));
    o.retry_base_ms = std::max<std::int64_t>(0, c.get_int("jobs.retry_base_ms"));
    o.retry_max_ms = std::max(o.retry_base_ms, c.get_int("jobs.retry_max_ms"));
    ctx.jobs = std::make_unique<store::JobRunner>(*ctx.db, std::move(o));
  }
  {
    // Billing: subscriptions collect through links (consent) and payments; its cycles are jobs.
    const Config& c = ctx.config;
    billing::Options o;
    o.default_time_zone = c.get_string("billing.time_zone");
    if (!billing::known_time_zone(o.default_time_zone))
      return make_error(ErrorKind::invalid, "bad_config",
                        boost::json::string("billing.time_zone: not a zone of the IANA database"));
    auto retries = billing::RetrySchedule::parse(c.get_string("billing.retry_days"));
    if (!retries)
      return make_error(ErrorKind::invalid, "bad_config",
                        boost::json::string("billing.retry_days: increasing day counts from 1 to 60, e.g. 1,3,5,7"));
    o.retries = *retries;
    o.settle_interval_ms = std::max<std::int64_t>(10, c.get_int("billing.settle_interval_ms"));
    const std::int64_t deadline_hours = c.get_int("billing.link_deadline_hours");
    if (deadline_hours < 1 || deadline_hours > 720)
      return make_error(ErrorKind::invalid, "bad_config",
                        boost::json::string("billing.link_deadline_hours: an integer from 1 to 720"));
    o.link_deadline_ms = deadline_hours * 3'600'000;
    const std::int64_t charge_page = c.get_int("billing.charge_page");
    if (charge_page < 1 || charge_page > 512)
      return make_error(ErrorKind::invalid, "bad_config",
                        boost::json::string("billing.charge_page: an integer from 1 to 512"));
    o.charge_page = static_cast<int>(charge_page);
    o.otp = ctx.otp.get();
    o.checkout_url = c.surface_url(web::Surface::checkout);
    o.catalog = [context = &ctx]() -> std::shared_ptr<const catalog::Catalog> {
      return context->catalog ? context->catalog->snapshot() : nullptr;
    };
    ctx.billing =
        std::make_unique<billing::Service>(*ctx.db, *ctx.payments, *ctx.links, ctx.notifier.get(), std::move(o));
    ctx.billing->register_jobs(*ctx.jobs);
    ctx.statements->register_jobs(*ctx.jobs);                // scheduled settlements (docs/settlement.md)
    ctx.dashboard->attach_billing(ctx.billing.get());        // the subscription pages
    ctx.dashboard->attach_wallets(ctx.wallets.get());        // the partner's wallet links
    ctx.dashboard->attach_statements(ctx.statements.get());  // the statement pages
  }
  return {};
}

void start_workers(Context& ctx) {
  if (ctx.limiter) ctx.limiter->start();
  if (ctx.identity) ctx.identity->start();
  if (ctx.catalog) ctx.catalog->start();
  if (ctx.webhooks && ctx.config.get_bool("webhooks.enabled")) ctx.webhooks->start();
  if (ctx.health) ctx.health->start();
  if (ctx.operator_log) ctx.operator_log->start();
  if (ctx.payments && ctx.config.get_bool("payments.enabled")) ctx.payments->start();
  if (ctx.billing && ctx.config.get_bool("payments.enabled")) ctx.billing->start();
  if (ctx.statements && ctx.config.get_bool("payments.enabled")) ctx.statements->start();
  if (ctx.jobs) ctx.jobs->start();  // no threads until a component registers a queue
}

void stop_workers(Context& ctx) {
  if (ctx.jobs) ctx.jobs->stop();
  if (ctx.billing) ctx.billing->stop();
  if (ctx.statements) ctx.statements->stop();
  if (ctx.payments) ctx.payments->stop();
  if (ctx.operator_log) ctx.operator_log->stop();  // writes the calls still queued
  if (ctx.health) ctx.health->stop();
  if (ctx.webhooks) ctx.webhooks->stop();
  if (ctx.identity) ctx.identity->stop();
  if (ctx.catalog) ctx.catalog->stop();
  if (ctx.limiter) ctx.limiter->stop();
  if (ctx.reserved_limiter) {
    // Requests have stopped: the unused parts of this node's blocks go back to the other nodes.
    auto given = ctx.reserved_limiter->release();
    if (!given) spdlog::warn("rate limit blocks not given back: {}", boost::json::serialize(given.error().details));
  }
}

}  // namespace sika::app
