#include "app/config.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <sstream>

#include <sys/stat.h>
#include <unistd.h>

#include "core/thread_annotations.hpp"

namespace sika::app {

namespace {
using K = KeyKind;
// The one registry of configuration keys. Add a line per key; keep names <component>.<key>.
const std::vector<KeySpec> kKeys = {
    {"listen", "127.0.0.1:8080", K::listen, "HOST:PORT the server listens on (port 0 picks a free port)"},
    {"db", "sqlite://./data/sika.db", K::dsn, "database DSN: sqlite://PATH or postgres://USER:PASS@HOST:PORT/DB"},
    {"db_pool_size", "0", K::integer,
     "PostgreSQL read connections / SQLite reader connections; 0 sizes it to the cores (PostgreSQL 2 per core, at "
     "least 4; SQLite 16)"},
    {"db_writers", "0", K::integer,
     "PostgreSQL: writer connections, each gathering concurrent write units into one transaction; 0: one per core, "
     "at least 2"},
    {"db_retry_deadline_ms", "5000", K::integer,
     "PostgreSQL: how long a write unit is run again after serialization failures and deadlocks before 503"},
    {"db_statement_timeout_ms", "5000", K::integer,
     "PostgreSQL: a statement running or waiting on a lock longer is cancelled and its request answered 503 "
     "(statement_timeout and lock_timeout); keep it under the proxy's request timeout; 0: no limit"},
    {"database.read_url", "", K::dsn,
     "PostgreSQL: a streaming replica (postgres://...) that dashboard lists and statements read from, the primary "
     "answering while it is away; empty: everything reads the primary (docs/deployment.md)"},
    {"migrate", "true", K::boolean, "serve applies pending migrations at start"},
    {"secret_key", "", K::secret,
     "server secret (>= 32 chars) keying secret hashes and demo credentials; with SQLite, generated into "
     "<db dir>/secret.key when unset; required with PostgreSQL"},
    {"public_url", "", K::url, "public URL of this server (default http://LISTEN); surface URLs derive from it"},
    {"base_url", "", K::url, "public URL of the gateway (default public_url + mount.gateway)"},
    {"auth_url", "", K::url, "public URL of the identity service (default public_url + mount.identity)"},
    {"checkout_url", "", K::url, "public URL of the hosted checkout (default public_url + mount.checkout)"},
    {"link_url", "", K::url, "public URL of the wallet link API (default public_url + mount.link)"},
    {"dashboard_url", "", K::url, "public URL of the dashboard (default public_url + mount.dashboard)"},
    {"mount.gateway", "/api", K::path, "path prefix of the gateway"},
    {"mount.identity", "/auth", K::path, "path prefix of the identity service"},
    {"mount.checkout", "/checkout", K::path, "path prefix of the hosted checkout"},
    {"mount.link", "/link", K::path, "path prefix of the wallet link API"},
    {"mount.dashboard", "/dashboard", K::path, "path prefix of the dashboard"},
    {"cors.gateway", "", K::string, "allowed CORS origins of the gateway, comma-separated ('*' any; empty off)"},
    {"cors.identity", "*", K::string, "allowed CORS origins of the identity service"},
    {"cors.checkout", "", K::string, "allowed CORS origins of the hosted checkout"},
    {"cors.link", "", K::string, "allowed CORS origins of the wallet link API"},
    {"cors.dashboard", "", K::string, "allowed CORS origins of the dashboard"},
    {"default_locale", "fr", K::locale, "locale (fr or en) when Accept-Language names neither"},
    {"trusted_proxies", "", K::string,
     "addresses and CIDR blocks of the reverse proxies in front of sika, comma-separated; only when the TCP "
     "peer is one of them is the client address read from client_address_header (empty: the peer is the client)"},
    {"client_address_header", "x-forwarded-for", K::string,
     "header the trusted proxies append the client address to: x-forwarded-for or forwarded (RFC 7239)"},
    {"log.level", "info", K::string, "trace, debug, info, warn, error or off"},
    {"log.access", "true", K::boolean,
     "write one JSON line per request to stdout (from a bounded queue: lines are dropped and counted, never waited "
     "for)"},
    {"metrics.enabled", "true", K::boolean, "serve Prometheus metrics at GET /metrics"},
    {"metrics.token", "", K::secret,
     "bearer token required by /metrics; when empty, /metrics answers only loopback peers"},
    {"http.io_threads", "2", K::integer, "I/O threads of the HTTP server"},
    {"http.handler_threads", "128", K::integer, "threads running request handlers (bounded pool)"},
    {"http.handler_queue", "20000", K::integer, "requests waiting for a handler thread before 503"},
    {"http.max_body_bytes", "1048576", K::integer, "largest request body (413 beyond)"},
    {"http.max_header_bytes", "16384", K::integer, "largest request header block (431 beyond)"},
    {"http.header_timeout_ms", "10000", K::integer, "time allowed to receive the request headers"},
    {"http.body_timeout_ms", "30000", K::integer, "time allowed to receive the request body"},
    {"http.idle_timeout_ms", "60000", K::integer, "idle keep-alive connection lifetime"},
    {"http.shutdown_grace_ms", "15000", K::integer, "time in-flight requests get to finish on SIGTERM"},
    {"identity.access_token_ttl", "3600", K::integer, "access token lifetime (s)"},
    {"identity.id_token_ttl", "3600", K::integer, "ID token lifetime (s)"},
    {"identity.refresh_token_ttl", "2592000", K::integer, "refresh token lifetime (s), renewed at each rotation"},
    {"identity.refresh_grace_seconds", "10", K::integer,
     "a rotated refresh token stays usable this long (parallel refreshes, lost responses)"},
    {"identity.code_ttl", "60", K::integer, "authorization code lifetime (s)"},
    {"identity.session_ttl", "28800", K::integer, "login session lifetime (s)"},
    {"identity.signup_enabled", "false", K::boolean, "open the self-service sign-up page"},
    {"identity.max_failed_logins", "5", K::integer,
     "sign-in attempts per e-mail and client address (and per device cookie) per lockout window"},
    {"identity.lockout_seconds", "900", K::integer, "the window of max_failed_logins, and the throttle's length (s)"},
    {"identity.login_failures_per_account", "100", K::integer,
     "sign-in attempts per e-mail per hour from all addresses, device cookies apart (all nodes)"},
    {"identity.access_token_alg", "ES256", K::string, "access token signature: ES256 or RS256"},
    {"identity.token_cache_seconds", "0", K::integer,
     "verified tokens skip the revocation lookup for this long (0: checked on every request)"},
    {"identity.token_cache_entries", "20000", K::integer, "verified-token cache size per process"},
    {"identity.client_cache_seconds", "5", K::integer,
     "OAuth client records are cached this long (bound for secret rotation and disabling)"},
    {"identity.key_reload_seconds", "30", K::integer, "how often a server re-reads the signing keys (s)"},
    {"identity.login_attempts_per_ip", "20", K::integer, "login attempts per IP address and minute (all nodes)"},
    {"identity.failed_client_auth_per_ip", "30", K::integer,
     "failed client authentications from one address per minute; beyond, the address gets 429 (all nodes)"},
    {"identity.failed_client_auth_per_client", "20", K::integer,
     "failed authentications of one client_id per minute; beyond, its failures answer 429 (a right secret still "
     "succeeds; all nodes)"},
    {"identity.token_rate_per_client", "0", K::integer, "tokens per second per client and process (0: unlimited)"},
    {"webhooks.enabled", "true", K::boolean, "run the webhook delivery worker in serve"},
    {"webhooks.allow_private_targets", "false", K::boolean,
     "accept loopback/private notification URLs (development and tests only: SSRF protection off)"},
    {"webhooks.threads", "64", K::integer, "webhook sender threads per process"},
    {"webhooks.max_in_flight_per_endpoint", "8", K::integer,
     "concurrent deliveries to one endpoint per process (a hanging endpoint holds no more threads)"},
    {"webhooks.connect_timeout_ms", "5000", K::integer, "webhook connect timeout (DNS + TCP + TLS)"},
    {"webhooks.timeout_ms", "15000", K::integer, "a delivery succeeds only with a 2xx within this time"},
    {"webhooks.poll_interval_ms", "200", K::integer, "how often an idle worker looks for new events and due retries"},
    {"webhooks.retry_schedule", "5s,5m,30m,2h,5h,10h,10h,14h,14h,16h", K::string,
     "delays between attempts (+/-20% jitter); the default retries for about 3 days"},
    {"webhooks.disable_after_hours", "72", K::integer,
     "an endpoint failing this long without a success is disabled (event endpoint.disabled)"},
    {"webhooks.secret_overlap_seconds", "86400", K::integer,
     "after a secret rotation the previous secret keeps signing this long by default"},
    {"webhooks.max_endpoints_per_merchant", "20", K::integer, "notification endpoints per merchant"},
    {"webhooks.demo_url", "", K::url,
     "serve --demo: register this URL as a notification endpoint of the first demo merchant"},
    {"webhooks.lease_ms", "0", K::integer,
     "how long a claimed delivery stays reserved to its worker (0: 2 x (connect + timeout) + 30 s)"},
    {"payments.enabled", "true", K::boolean, "run the payments expiry worker and the sandbox operator in serve"},
    {"payments.intent_ttl_ms", "900000", K::integer, "an INITIATED collection expires after this (ms)"},
    {"payments.pending_ttl_ms", "300000", K::integer, "a PENDING (submitted) collection expires after this (ms)"},
    {"payments.disbursement_ttl_ms", "86400000", K::integer,
     "a PENDING payout expires (funds released) after this (ms)"},
    {"payments.expiry_interval_ms", "1000", K::integer, "how often the expiry worker scans for overdue transactions"},
    {"payments.max_otp_attempts", "3", K::integer, "wrong one-time codes before a collection FAILS"},
    {"payments.sandbox_otp", "123456", K::string, "the one-time code the sandbox operator and wallets accept"},
    {"payments.sandbox_delay_ms", "1500", K::integer, "sandbox operator: time to a collection's or payout's outcome"},
    {"payments.sandbox_duplicate_delay_ms", "4000", K::integer,
     "sandbox operator: time to the duplicate callback of numbers ending 0006"},
    {"payments.sandbox_late_ms", "0", K::integer,
     "sandbox operator: time to the callback of numbers ending 0007 (0: pending_ttl_ms + 2 s, after expiry)"},
    {"payments.sandbox_query_delay_ms", "0", K::integer, "sandbox operator: how long a status query takes to answer"},
    {"payments.recovery_delays_ms", "5000,15000,60000,300000,900000", K::string,
     "recovery: delays before each question to the operator about a PENDING transaction (ms; the last repeats)"},
    {"payments.recovery_interval_ms", "1000", K::integer, "recovery: how often each node looks for due questions"},
    {"payments.recovery_lease_ms", "60000", K::integer,
     "recovery: how long a claimed question is one node's alone (longer than an operator query takes)"},
    {"payments.recovery_batch", "50", K::integer, "recovery: questions one node claims at once"},
    {"payments.operator_request_threads", "0", K::integer,
     "request threads that may wait on operators at once (0: all but an eighth of http.handler_threads, at least 4); "
     "beyond them a "
     "collection is refused 503, a payout or refund queued, a callback left to recovery"},
    {"recon.grace_hours", "48", K::integer,
     "reconciliation: a payment younger than this, absent from a statement, is timing (may be in a later one), "
     "not missing at the operator"},
    {"recon.batch", "5000", K::integer, "reconciliation: statement lines (or payments) per write unit"},
    {"recon.lease_ms", "60000", K::integer,
     "reconciliation: an import's lease on its run, renewed at every batch; a run left importing past it was "
     "interrupted and the next import of its file cleans it up"},
    {"payments.refuse_other_operator_numbers", "true", K::boolean,
     "prod: refuse an intent whose number is in another operator's block (turn off where ported numbers are "
     "common: a ported number keeps its first operator's prefix, and the operator refuses an unknown payer)"},
    {"payments.callbacks_per_address_per_minute", "60000", K::integer,
     "operator callbacks accepted per client address and minute on each node (429 beyond)"},
    {"payments.health_window_seconds", "60", K::integer,
     "operator health: the window of recent operator calls each node judges a connector by"},
    {"payments.health_min_calls", "5", K::integer, "operator health: fewer calls in the window decide no error ratio"},
    {"payments.health_delayed_error_percent", "20", K::integer,
     "operator health: DELAYED when at least this percentage of the window's calls failed"},
    {"payments.health_delayed_p90_ms", "10000", K::integer,
     "operator health: DELAYED when the window's p90 latency is above this"},
    {"payments.health_closed_error_percent", "50", K::integer,
     "operator health: CLOSED when at least this percentage of the window's calls failed"},
    {"payments.health_closed_consecutive", "5", K::integer,
     "operator health: CLOSED when this many calls failed one after the other"},
    {"payments.health_recover_seconds", "30", K::integer,
     "operator health: how long a better state must hold before a connector moves to it"},
    {"payments.health_publish_ms", "1000", K::integer,
     "operator health: how often each node publishes its summary and reads the others' (and overrides)"},
    {"payments.payout_send_batch", "20", K::integer,
     "queued payouts: how many one node sends at once when their connector is OPERATIONAL again"},
    {"payments.callback_url", "", K::url,
     "base URL the sandbox operator calls back (default base_url + /operator/callback)"},
    {"wallets.link_per_payment", "50000", K::integer,
     "wallet links: a consent's default limit per payment, fee included (minor units of the wallet's currency)"},
    {"wallets.link_per_period", "200000", K::integer,
     "wallet links: a consent's default limit per period (minor units of the wallet's currency)"},
    {"wallets.link_period_seconds", "86400", K::integer, "wallet links: a consent's default period (s)"},
    {"wallets.link_api_per_hour", "600", K::integer,
     "requests per hour per client address on the link API (/api/agent), all nodes (0: unlimited)"},
    {"wallets.link_api_block_seconds", "900", K::integer,
     "an address that keeps going past the link API limit is blocked this long (s; 0: never blocked)"},
    {"wallets.link_api_block_after", "60", K::integer,
     "refused link API requests in one window that block the address"},
    {"wallets.page_environment", "sandbox", K::string, "the wallets the wallet page signs in to (sandbox or prod)"},
    {"wallets.page_session_seconds", "1800", K::integer, "a wallet page session lasts this long (s)"},
    {"wallets.page_merchant", "", K::string,
     "the merchant (matricule) the wallet page's top-ups and withdrawals belong to; empty: the page offers neither"},
    {"wallets.client_id", "demo-public", K::string,
     "the wallet page's OAuth client at the identity service (public, PKCE; redirect URI "
     "checkout_url/wallet/callback)"},
    {"otp.ttl_seconds", "300", K::integer, "a one-time code is valid this long after it was sent (s)"},
    {"otp.max_attempts", "3", K::integer, "verifications per one-time code (resends keep the count)"},
    {"otp.code_length", "6", K::integer, "digits of a one-time code (4 to 8)"},
    {"otp.resend_cooldown_seconds", "30", K::integer, "least time between two sends of one code (s)"},
    {"otp.max_sends", "5", K::integer, "sends of one code, the first included"},
    {"otp.sends_per_destination_per_hour", "10", K::integer,
     "codes sent to one phone number or e-mail address per hour (all nodes; 0: unlimited)"},
    {"notify.transport", "sandbox", K::string,
     "how SMS and e-mail leave: sandbox (stored in the outbox, read with `sika admin outbox list`)"},
    {"limits.sweep_interval_seconds", "60", K::integer, "how often expired rate-limit windows are deleted (s)"},
    {"jobs.workers", "2", K::integer,
     "threads per process running leased jobs (when a component registers a job kind)"},
    {"jobs.lease_ms", "30000", K::integer,
     "a claimed job stays reserved this long without a heartbeat; a dead node's jobs run again after it (ms)"},
    {"jobs.poll_interval_ms", "500", K::integer, "how often an idle job worker looks for due jobs (ms)"},
    {"jobs.retry_base_ms", "1000", K::integer, "delay after a job's first failure, doubling at each attempt (ms)"},
    {"jobs.retry_max_ms", "3600000", K::integer, "longest delay between two attempts of a job (ms)"},
    {"links.pay_per_address_per_minute", "30", K::integer,
     "payment-link payments one client address may submit per minute (all nodes; 0: unlimited)"},
    {"links.pay_per_link_per_minute", "600", K::integer,
     "payments one payment link may receive per minute (all nodes; 0: unlimited)"},
    {"links.page_views_per_address_per_minute", "120", K::integer,
     "payment-link page views (form and status page) one client address may make per minute, counted by each "
     "node (0: unlimited)"},
    {"billing.time_zone", "Africa/Douala", K::string,
     "IANA time zone of a subscription whose subscribe request names none (its cycles fall on that zone's dates)"},
    {"billing.retry_days", "1,3,5,7", K::string,
     "dunning: days after a cycle's first failure when it is asked for again (increasing, 1 to 60); then SUSPENDED"},
    {"billing.settle_interval_ms", "1000", K::integer,
     "how often ended collections are applied to their subscription payments (ms)"},
    {"billing.link_deadline_hours", "24", K::integer,
     "a cycle paid by a payment link (its operator needs a code) fails into dunning when its link is unpaid this "
     "long after it was sent (hours, 1 to 720); the link expires then"},
    {"billing.charge_page", "64", K::integer,
     "due cycles one job worker decides in one read and creates in one write unit (1 to 512)"},
    {"settlement.schedule_interval_ms", "60000", K::integer,
     "how often each node looks for merchants whose DAILY or WEEKLY settlement period is due (ms)"},
    {"settlement.payout_watch_interval_ms", "1000", K::integer,
     "how often mobile-money settlement batches whose payout ended are marked PAID or FAILED (ms)"},
    {"settlement.debtor_name", "Sika", K::string, "the holder of the platform's bank account in pain.001 files"},
    {"settlement.debtor_iban", "", K::string, "the IBAN of the platform's bank account that pays bank settlements"},
    {"settlement.debtor_bic", "", K::string, "the BIC of that account's bank"},
    {"checkout.session_ttl_seconds", "1800", K::integer,
     "a hosted checkout session accepts payments this long after it was opened (seconds)"},
    {"checkout.pay_per_address_per_minute", "30", K::integer,
     "checkout payments one client address may submit per minute (all nodes; 0: unlimited)"},
    {"checkout.merchant_api_per_hour", "600", K::integer,
     "requests one client address may send per hour with a merchant API key in x-api-key (the fee quote), counted "
     "before the key is checked (all nodes; 0: unlimited)"},
    {"catalog.refresh_ms", "2000", K::integer,
     "how often a node polls catalog_version; another node's catalog change is visible within this (ms)"},
    // dashboard
    {"dashboard.client_id", "demo-public", K::string,
     "the dashboard's OAuth client at the identity service (public, PKCE; redirect URI dashboard_url/callback)"},
    {"dashboard.idle_timeout_seconds", "1800", K::integer,
     "a dashboard session ends after this long without a request"},
    {"dashboard.absolute_timeout_seconds", "43200", K::integer, "a dashboard session ends this long after sign-in"},
    {"secrets_file", "", K::string,
     "a TOML file of secret keys only (connectors' credentials, secret_key, metrics.token), read after the "
     "configuration file and before the environment; it must not be readable by group or others"},
    // Operator connectors (docs/operators.md). Keys of one instance; another instance of any name
    // (connectors.<name>.<key>) takes the same keys, from the file, the environment or --set.
    {"connectors.mtn_momo.kind", "", K::string,
     "operator connector instance: its protocol (mtn_momo); unset: no such connector"},
    {"connectors.mtn_momo.base_url", "", K::url, "the operator API's base URL, e.g. https://proxy.momoapi.mtn.com"},
    {"connectors.mtn_momo.target_environment", "", K::string,
     "MTN X-Target-Environment: mtncameroon, mtnivorycoast, mtnbenin, mtncongo, mtnghana, mtnuganda, sandbox ..."},
    {"connectors.mtn_momo.collection.subscription_key", "", K::secret, "MTN Collection subscription key"},
    {"connectors.mtn_momo.collection.api_user", "", K::secret, "MTN Collection API user (UUID)"},
    {"connectors.mtn_momo.collection.api_key", "", K::secret, "MTN Collection API key"},
    {"connectors.mtn_momo.disbursement.subscription_key", "", K::secret, "MTN Disbursement subscription key"},
    {"connectors.mtn_momo.disbursement.api_user", "", K::secret, "MTN Disbursement API user (UUID)"},
    {"connectors.mtn_momo.disbursement.api_key", "", K::secret, "MTN Disbursement API key"},
    {"connectors.mtn_momo.callback_url", "", K::url,
     "X-Callback-Url sent to the operator (default base_url + /operator/callback/<name>)"},
    {"connectors.mtn_momo.status_queries_per_second", "10", K::integer,
     "status queries per second to the operator from this node (MTN allows 10 per API user; divide by the nodes)"},
    {"connectors.mtn_momo.max_in_flight", "64", K::integer, "calls to the operator at once from this node"},
    {"connectors.mtn_momo.timeout_ms", "15000", K::integer, "an operator call's answer must come within this"},
    {"connectors.airtel_money.kind", "", K::string,
     "operator connector instance: its protocol (airtel_money); unset: no such connector"},
    {"connectors.airtel_money.base_url", "", K::url, "Airtel's Open API base URL, e.g. https://openapi.airtel.africa"},
    {"connectors.airtel_money.client_id", "", K::secret, "Airtel application client_id (OAuth client_credentials)"},
    {"connectors.airtel_money.client_secret", "", K::secret, "Airtel application client_secret"},
    {"connectors.airtel_money.country", "", K::string,
     "the account's country, ISO alpha-2 (X-Country): GA, CG, TD ..."},
    {"connectors.airtel_money.currency", "", K::string, "the account's currency (X-Currency): XAF, XOF, CDF ..."},
    {"connectors.airtel_money.pin", "", K::secret,
     "disbursements: the account's 4-digit PIN, sent encrypted with public_key; unset: no disbursement"},
    {"connectors.airtel_money.public_key", "", K::string,
     "disbursements: Airtel's RSA public key for the PIN, base64 of its DER (as Airtel gives it)"},
    {"connectors.wave.kind", "", K::string, "Wave business wallet (kind wave, XOF; wave_sn: Senegal's wallet)"},
    {"connectors.wave.base_url", "", K::url, "the Wave API's base URL, e.g. https://api.wave.com"},
    {"connectors.wave.api_key", "", K::secret, "Wave API key of the business wallet (Bearer)"},
    {"connectors.wave.webhook_secret", "", K::secret, "Wave webhook signing secret (Wave-Signature)"},
    {"connectors.orange_money.kind", "", K::string,
     "operator connector instance: its protocol (orange_money); unset: no such connector"},
    {"connectors.orange_money.base_url", "", K::url,
     "Orange's API base URL: https://api.orange.com (webpay), https://api-s1.orange.cm (push)"},
    {"connectors.orange_money.client_id", "", K::secret, "Orange OAuth client id (Basic client_id:client_secret)"},
    {"connectors.orange_money.client_secret", "", K::secret, "Orange OAuth client secret"},
    {"connectors.orange_money.merchant_key", "", K::secret, "Orange Money Web Payment merchant key (webpay)"},
    {"connectors.orange_money.flow", "webpay", K::string,
     "webpay (the customer pays on Orange's page) or push (Orange Cameroon's prompt on the phone)"},
    {"connectors.orange_money.country", "", K::string,
     "the Orange Money account's country: cm, ci, sn, ml, bf, gn ... or dev (Orange's development platform)"},
    {"connectors.orange_money.channel_msisdn", "", K::string, "push: the merchant's channel user number"},
    {"connectors.orange_money.pin", "", K::secret, "push: the channel user's PIN"},
    {"connectors.orange_money.x_auth_token", "", K::secret, "push: Orange Cameroon's X-AUTH-TOKEN"},
};

// The key of a registered connector instance without "connectors.<instance>." ("" for others):
// every such key is a key any instance may take, whatever its kind.
std::string_view connector_suffix(std::string_view key) {
  if (!key.starts_with("connectors.")) return {};
  const std::size_t dot = key.find('.', 11);
  return dot == std::string_view::npos ? std::string_view() : key.substr(dot + 1);
}

// The key of another connector instance ("connectors.<name>.<key>", <key> one of the template's)
// as a spec of its own; the strings live as long as the process.
const KeySpec* connector_key(std::string_view name) {
  static sika::Mutex mu;
  static std::map<std::string, KeySpec, std::less<>> specs GUARDED_BY(mu);
  if (!name.starts_with("connectors.")) return nullptr;
  const std::size_t dot = name.find('.', 11);
  if (dot == std::string_view::npos) return nullptr;
  const std::string_view instance = name.substr(11, dot - 11);
  if (instance.empty() || instance.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string_view::npos)
    return nullptr;
  const std::string suffix(name.substr(dot + 1));
  if (suffix.empty()) return nullptr;
  for (const auto& k : kKeys) {
    if (connector_suffix(k.name) != suffix) continue;
    sika::MutexLock lock(mu);
    auto it = specs.find(name);
    if (it == specs.end()) {
      static std::vector<std::unique_ptr<std::string>> names GUARDED_BY(mu);
      names.push_back(std::make_unique<std::string>(name));
      it = specs.emplace(std::string(name), KeySpec{*names.back(), k.default_value, k.kind, k.description}).first;
    }
    return &it->second;
  }
  return nullptr;
}

bool parse_int(std::string_view s, std::int64_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parse_bool(std::string_view s, bool& out) {
  std::string l(s);
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  if (l == "true" || l == "1" || l == "yes" || l == "on") return out = true, true;
  if (l == "false" || l == "0" || l == "no" || l == "off") return out = false, true;
  return false;
}

const KeySpec* find_key(std::string_view name) {
  for (const auto& k : kKeys)
    if (k.name == name) return &k;
  return connector_key(name);
}

Error config_error(std::string_view key, std::string_view problem) {
  return make_error(ErrorKind::invalid, "bad_config",
                    boost::json::string(std::string(key) + ": " + std::string(problem)));
}

Status validate(const KeySpec& k, std::string_view v) {
  switch (k.kind) {
    case K::integer: {
      std::int64_t n;
      if (!parse_int(v, n)) return config_error(k.name, "must be an integer, got '" + std::string(v) + "'");
      if (n < 0) return config_error(k.name, "must not be negative");
      return {};
    }
    case K::boolean: {
      bool b;
      if (!parse_bool(v, b)) return config_error(k.name, "must be true or false, got '" + std::string(v) + "'");
      return {};
    }
    case K::url:
      if (!v.empty() && !v.starts_with("http://") && !v.starts_with("https://"))
        return config_error(k.name, "must be an http:// or https:// URL");
      return {};
    case K::dsn:
      if (v.empty() && k.default_value.empty()) return {};  // an optional database, unset
      if (!v.starts_with("sqlite://") && !v.starts_with("postgres://") && !v.starts_with("postgresql://"))
        return config_error(k.name, "must start with sqlite://, postgres:// or postgresql://");
      return {};
    case K::listen: {
      auto colon = v.rfind(':');
      std::int64_t port;
      if (colon == std::string_view::npos || colon == 0 || !parse_int(v.substr(colon + 1), port) || port < 0 ||
          port > 65535)
        return config_error(k.name, "must be HOST:PORT with a port from 0 to 65535");
      return {};
    }
    case K::locale:
      if (v != "fr" && v != "en") return config_error(k.name, "must be fr or en");
      return {};
    case K::path:
      if (!v.empty() && (v.front() != '/' || v.find_first_of(" ?#") != std::string_view::npos))
        return config_error(k.name, "must be empty or a path starting with '/'");
      return {};
    case K::string:
    case K::secret: return {};
  }
  return {};
}

void flatten(const toml::table& t, const std::string& prefix, std::map<std::string, std::string>& out,
             std::string& error) {
  for (const auto& [key, node] : t) {
    std::string name = prefix.empty() ? std::string(key.str()) : prefix + "." + std::string(key.str());
    if (const auto* sub = node.as_table()) {
      // A table whose name is itself a key ("db" is a key and a table) is flattened below it.
      flatten(*sub, name, out, error);
    } else if (const auto* s = node.as_string()) {
      out[name] = s->get();
    } else if (const auto* i = node.as_integer()) {
      out[name] = std::to_string(i->get());
    } else if (const auto* b = node.as_boolean()) {
      out[name] = b->get() ? "true" : "false";
    } else if (error.empty()) {
      error = name + ": unsupported value type (use a string, integer or boolean)";
    }
  }
}
}  // namespace

const std::vector<KeySpec>& config_keys() { return kKeys; }

std::string env_name(std::string_view key) {
  std::string out = "SIKA_";
  for (char c : key) out.push_back(c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  return out;
}

std::string describe_keys() {
  std::ostringstream os;
  os << "Configuration keys (TOML file < environment < flags; set any with --set KEY=VALUE):\n";
  for (const auto& k : kKeys) {
    os << "  " << k.name << " (" << env_name(k.name) << ")";
    if (!k.default_value.empty()) os << " [default: " << k.default_value << "]";
    os << "\n      " << k.description << "\n";
  }
  return os.str();
}

std::string keys_markdown() {
  std::ostringstream os;
  os << "| key | environment | default | meaning |\n|---|---|---|---|\n";
  for (const auto& k : kKeys) {
    os << "| `" << k.name << "` | `" << env_name(k.name) << "` | "
       << (k.default_value.empty() ? std::string("") : "`" + std::string(k.default_value) + "`") << " | "
       << k.description << " |\n";
  }
  return os.str();
}

namespace {

Result<std::map<std::string, std::string>> read_toml(const std::string& file) {
  toml::table parsed;
  try {
    parsed = toml::parse_file(file);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << e.description() << " at line " << e.source().begin.line;
    return config_error("config file " + file, os.str());
  }
  std::map<std::string, std::string> flat;
  std::string error;
  flatten(parsed, "", flat, error);
  if (!error.empty()) return config_error("config file " + file, error);
  return flat;
}

// The secrets file: secret keys only, and a file only its owner may read.
Status read_secrets(const std::string& file, std::map<std::string, std::string, std::less<>>& values) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return config_error("secrets_file", "cannot read " + file);
  if ((st.st_mode & 077) != 0)
    return config_error("secrets_file", file + " is readable by group or others (chmod 600 it)");
  SIKA_ASSIGN_OR_RETURN(auto flat, read_toml(file));
  for (auto& [k, v] : flat) {
    const KeySpec* spec = find_key(k);
    if (!spec) return config_error(k, "unknown key in the secrets file");
    if (spec->kind != K::secret) return config_error(k, "is not a secret: set it in the configuration file");
    values[k] = v;
  }
  return {};
}

// SIKA_CONNECTORS_<NAME>_<KEY> of connector instances other than the template's, from the
// environment: <KEY> is the longest template key whose variable name ends the variable's.
void connector_environment(std::map<std::string, std::string, std::less<>>& values) {
  const std::string prefix = env_name("connectors.");
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    const std::size_t eq = entry.find('=');
    if (eq == std::string_view::npos || !entry.starts_with(prefix)) continue;
    const std::string_view var = entry.substr(0, eq);
    const KeySpec* best = nullptr;
    std::string best_env;
    for (const auto& k : kKeys) {
      const std::string_view suffix = connector_suffix(k.name);
      if (suffix.empty()) continue;
      std::string tail = "_" + env_name(suffix).substr(5);
      if (var.size() > prefix.size() + tail.size() && var.ends_with(tail) && tail.size() > best_env.size())
        best = &k, best_env = std::move(tail);
    }
    if (!best) continue;
    std::string instance(var.substr(prefix.size(), var.size() - prefix.size() - best_env.size()));
    for (char& ch : instance) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const std::string key = "connectors." + instance + "." + std::string(connector_suffix(best->name));
    if (find_key(key) && !values.contains(key)) values[key] = std::string(entry.substr(eq + 1));
  }
}

}  // namespace

Result<Config> Config::load(const std::optional<std::string>& file, const std::map<std::string, std::string>& flags) {
  Config c;
  for (const auto& k : kKeys) c.values_[std::string(k.name)] = std::string(k.default_value);

  if (file) {
    SIKA_ASSIGN_OR_RETURN(auto flat, read_toml(*file));
    for (auto& [k, v] : flat) {
      if (!find_key(k)) return config_error(k, "unknown key in " + *file);
      c.values_[k] = v;
    }
  }
  std::string secrets = c.values_["secrets_file"];
  if (const char* v = std::getenv(env_name("secrets_file").c_str())) secrets = v;
  if (auto it = flags.find("secrets_file"); it != flags.end()) secrets = it->second;
  if (!secrets.empty()) SIKA_TRY(read_secrets(secrets, c.values_));
  for (const auto& k : kKeys) {
    if (const char* v = std::getenv(env_name(k.name).c_str())) c.values_[std::string(k.name)] = v;
  }
  connector_environment(c.values_);
  for (const auto& [k, v] : flags) {
    if (!find_key(k)) return config_error(k, "unknown configuration key");
    c.values_[k] = v;
  }
  for (const auto& [k, v] : c.values_)
    if (const KeySpec* spec = find_key(k)) SIKA_TRY(validate(*spec, v));

  if (c.get_int("http.io_threads") < 1) return config_error("http.io_threads", "must be at least 1");
  if (c.get_int("http.handler_threads") < 1) return config_error("http.handler_threads", "must be at least 1");
  if (c.get_int("payments.operator_request_threads") < 0 ||
      c.get_int("payments.operator_request_threads") >= c.get_int("http.handler_threads"))
    return config_error("payments.operator_request_threads",
                        "must be 0 (all but an eighth of http.handler_threads) or fewer than http.handler_threads");
  if (c.get_int("db_pool_size") < 0) return config_error("db_pool_size", "must be 0 (automatic) or more");
  if (c.get_int("db_writers") < 0) return config_error("db_writers", "must be 0 (automatic) or more");
  if (c.get_int("db_statement_timeout_ms") < 0)
    return config_error("db_statement_timeout_ms", "must be 0 (no limit) or more");
  if (c.get_int("db_retry_deadline_ms") > 600000) return config_error("db_retry_deadline_ms", "must be at most 600000");
  if (auto h = c.get_string("client_address_header"); h != "x-forwarded-for" && h != "forwarded")
    return config_error("client_address_header", "must be x-forwarded-for or forwarded");
  if (auto p = web::TrustedProxies::parse(c.get_string("trusted_proxies")); !p)
    return config_error("trusted_proxies", p.error().details.as_string());
  if (auto n = c.get_int("otp.code_length"); n < 4 || n > 8) return config_error("otp.code_length", "must be 4 to 8");
  for (std::string_view k : {"otp.ttl_seconds", "otp.max_attempts", "otp.max_sends", "limits.sweep_interval_seconds"})
    if (c.get_int(k) < 1) return config_error(k, "must be at least 1");
  if (c.get_string("notify.transport") != "sandbox") return config_error("notify.transport", "must be sandbox");
  if (auto s = c.get_string("secret_key"); !s.empty() && s.size() < 32)
    return config_error("secret_key", "must be at least 32 characters");
  // With SQLite a missing secret is generated beside the database; several PostgreSQL nodes
  // must share one, so it cannot be invented by whichever node starts first.
  if (c.get_string("secret_key").empty() && !c.get_string("db").starts_with("sqlite://"))
    return config_error("secret_key", "required with PostgreSQL (set SIKA_SECRET_KEY)");
  return c;
}

std::vector<std::string> Config::connector_names() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : values_) {
    if (!k.starts_with("connectors.") || !k.ends_with(".kind") || v.empty()) continue;
    std::string name = k.substr(11, k.size() - 11 - 5);
    if (name.find('.') == std::string::npos) out.push_back(std::move(name));
  }
  return out;
}

std::string Config::get_string(std::string_view key) const {
  auto it = values_.find(key);
  return it == values_.end() ? std::string{} : it->second;
}

std::int64_t Config::get_int(std::string_view key) const {
  std::int64_t n = 0;
  parse_int(get_string(key), n);
  return n;
}

bool Config::get_bool(std::string_view key) const {
  bool b = false;
  parse_bool(get_string(key), b);
  return b;
}

std::string Config::listen_host() const {
  std::string l = get_string("listen");
  std::string host = l.substr(0, l.rfind(':'));
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host;
}

unsigned short Config::listen_port() const {
  std::string l = get_string("listen");
  std::int64_t p = 0;
  parse_int(std::string_view(l).substr(l.rfind(':') + 1), p);
  return static_cast<unsigned short>(p);
}

std::string Config::mount(web::Surface s) const {
  switch (s) {
    case web::Surface::gateway: return get_string("mount.gateway");
    case web::Surface::identity: return get_string("mount.identity");
    case web::Surface::checkout: return get_string("mount.checkout");
    case web::Surface::link: return get_string("mount.link");
    case web::Surface::dashboard: return get_string("mount.dashboard");
    case web::Surface::system: return "";
  }
  return "";
}

std::string Config::surface_url(web::Surface s) const {
  std::string key;
  switch (s) {
    case web::Surface::gateway: key = "base_url"; break;
    case web::Surface::identity: key = "auth_url"; break;
    case web::Surface::checkout: key = "checkout_url"; break;
    case web::Surface::link: key = "link_url"; break;
    case web::Surface::dashboard: key = "dashboard_url"; break;
    case web::Surface::system: break;
  }
  std::string url = key.empty() ? std::string{} : get_string(key);
  if (url.empty()) {
    std::string pub = get_string("public_url");
    if (pub.empty()) pub = "http://" + get_string("listen");
    url = pub;
    while (!url.empty() && url.back() == '/') url.pop_back();
    url += mount(s);
  }
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace sika::app
