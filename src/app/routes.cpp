// The route table: every route of every surface, in one place.
#include "app/routes.hpp"

#include <boost/json.hpp>

#include "app/metrics.hpp"
#include "billing/service.hpp"
#include "catalog/service.hpp"
#include "checkout/service.hpp"
#include "core/json.hpp"
#include "dashboard/service.hpp"
#include "identity/service.hpp"
#include "limits/local.hpp"
#include "links/service.hpp"
#include "payments/service.hpp"
#include "statements/service.hpp"
#include "wallets/service.hpp"
#include "web/envelope.hpp"
#include "web/html.hpp"
#include "webhooks/service.hpp"

namespace sika::app {

namespace {

// GET /robots.txt: every mounted surface is disallowed; 60 answers per address per minute on
// each node (a local limiter: the route is read-only and cheap).
web::Handler robots_handler(const Config& config) {
  std::string body = "User-agent: *\n";
  for (web::Surface s : {web::Surface::checkout, web::Surface::gateway, web::Surface::identity, web::Surface::link,
                         web::Surface::dashboard}) {
    std::string m = config.mount(s);
    while (!m.empty() && m.back() == '/') m.pop_back();
    body += "Disallow: " + m + "/\n";
  }
  auto limiter = std::make_shared<limits::LocalLimiter>(100'000);
  return [body = std::move(body), limiter](web::Request& req) {
    static const limits::Policy kPolicy{.limit = 60, .window_ms = 60'000, .name = "robots_per_address"};
    const limits::Decision d = limiter->hit(req.remote_ip, kPolicy);
    if (!d.allowed) {
      web::Response res = web::Response::text(429, "Too many requests\n");
      res.set("Retry-After", std::to_string((d.retry_after_ms + 999) / 1000));
      return res;
    }
    web::Response res = web::Response::text(200, body);
    res.set("Cache-Control", "public, max-age=3600");
    return res;
  };
}

web::CorsPolicy cors_from(const std::string& origins) {
  web::CorsPolicy p;
  std::size_t pos = 0;
  while (pos < origins.size()) {
    std::size_t end = origins.find(',', pos);
    if (end == std::string::npos) end = origins.size();
    std::string o = origins.substr(pos, end - pos);
    o.erase(0, o.find_first_not_of(' '));
    o.erase(o.find_last_not_of(' ') + 1);
    if (!o.empty()) p.origins.push_back(o);
    pos = end + 1;
  }
  p.enabled = !p.origins.empty();
  return p;
}

// Serves an embedded OpenAPI document with the surface's public URL as its one server.
web::Route openapi_route(Context& ctx, web::Surface surface, std::string_view (*document)(), std::string summary) {
  return {
      surface,
      "GET",
      "/openapi.json",
      [&ctx, surface, document](web::Request&) {
        boost::json::value doc = boost::json::parse(document());
        doc.as_object()["servers"] = boost::json::array{boost::json::object{{"url", ctx.config.surface_url(surface)}}};
        return web::Response::json(200, json::dump(doc));
      },
      web::open_access(),
      std::move(summary)};
}

}  // namespace

void build_routes(web::Router& r, Context& ctx) {
  using web::Surface;
  for (Surface s : {Surface::gateway, Surface::identity, Surface::checkout, Surface::link, Surface::dashboard}) {
    r.mount(s, ctx.config.mount(s));
    r.cors(s, cors_from(ctx.config.get_string("cors." + std::string(web::surface_name(s)))));
  }
  r.trust_proxies(ctx.trusted_proxies);

  // Bearer policy: the gateway's token middleware (identity) verifies the access token; the
  // router then checks the route's scope (web/router.cpp).
  r.authenticate_with(web::Auth::bearer, [&ctx](web::Request& req, const web::Access&) -> Result<web::Principal> {
    if (!ctx.authenticate) return unavailable(std::string_view("identity service not configured"));
    return ctx.authenticate(req);
  });

  // ---- system ------------------------------------------------------------------------------
  r.add({Surface::system, "GET", "/healthz",
         [](web::Request&) { return web::Response::json(200, R"({"status":"ok"})"); }, web::open_access(), "Liveness",
         /*non_blocking=*/true});
  r.add({Surface::system, "GET", "/readyz",
         [&ctx](web::Request&) {
           if (!ctx.started.load()) return web::Response::json(503, R"({"status":"starting","database":"unknown"})");
           auto ok = ctx.db->ping();
           return ok ? web::Response::json(200, R"({"status":"ready","database":"ok"})")
                     : web::Response::json(503, R"({"status":"not_ready","database":"unreachable"})");
         },
         web::open_access(), "Readiness: 200 only once started and while the database answers"});

  // Search engines: no customer page, API or dashboard is for them (docs/http.md).
  r.add({Surface::system, "GET", "/robots.txt", robots_handler(ctx.config), web::open_access(),
         "Tells crawlers to stay out of every surface (rate-limited per address)"});

  if (ctx.config.get_bool("metrics.enabled"))
    // Open at the router: the handler itself admits metrics.token or loopback peers (docs/metrics.md).
    r.add({Surface::system, "GET", "/metrics",
           [&ctx](web::Request& req) { return metrics_response(ctx.config, metrics::registry(), req); },
           web::open_access(), "Prometheus metrics (bearer metrics.token, or loopback peers only)"});

  // ---- gateway -----------------------------------------------------------------------------
  r.add(openapi_route(ctx, Surface::gateway, &openapi_document, "The gateway's OpenAPI 3 document"));

  // ---- identity ----------------------------------------------------------------------------
  if (ctx.identity) {
    using Id = identity::Service;
    Id* const svc = ctx.identity.get();
    web::Route token{
        Surface::identity,  "POST",
        "/oauth/v2/token",  web::bind(svc, &Id::token),
        web::client_auth(), "Token endpoint: client_credentials, authorization_code (+PKCE), refresh_token"};
    // client_credentials for a cached client is answered on the I/O thread; the rest goes to a
    // handler thread (web::run_blocking in Service::token).
    token.answers_later = true;
    r.add(std::move(token));
    r.add({Surface::identity, "POST", "/oauth/v2/revoke", web::bind(svc, &Id::revoke), web::client_auth(),
           "Token revocation (RFC 7009)"});
    r.add({Surface::identity, "POST", "/oauth/v2/introspect", web::bind(svc, &Id::introspect), web::client_auth(),
           "Token introspection (RFC 7662), client-authenticated"});
    r.add({Surface::identity, "GET", "/oauth/v2/authorize", web::bind(svc, &Id::authorize), web::open_access(),
           "Authorization endpoint: login and consent page"});
    r.add({Surface::identity, "POST", "/oauth/v2/authorize", web::bind(svc, &Id::authorize_submit), web::open_access(),
           "Login and consent form submission (or a POSTed authorization request)"});
    r.add({Surface::identity, "GET", "/oauth/v2/userinfo", web::bind(svc, &Id::userinfo), web::user_token(),
           "OpenID Connect userinfo"});
    r.add({Surface::identity, "POST", "/oauth/v2/userinfo", web::bind(svc, &Id::userinfo), web::user_token(),
           "OpenID Connect userinfo"});
    r.add({Surface::identity, "GET", "/oauth/v2/jwks", web::bind(svc, &Id::jwks), web::open_access(),
           "Public signing keys (JWKS)"});
    r.add({Surface::identity, "GET", "/.well-known/jwks.json", web::bind(svc, &Id::jwks), web::open_access(),
           "Public signing keys (JWKS)"});
    r.add({Surface::identity, "GET", "/.well-known/openid-configuration", web::bind(svc, &Id::discovery),
           web::open_access(), "OpenID Connect discovery document"});
    r.add({Surface::identity, "GET", "/.well-known/oauth-authorization-server", web::bind(svc, &Id::as_metadata),
           web::open_access(), "OAuth 2.0 authorization server metadata (RFC 8414)"});
    r.add({Surface::identity, "GET", "/signup", web::bind(svc, &Id::signup_page), web::open_access(),
           "Sign-up page (when enabled)"});
    r.add({Surface::identity, "POST", "/signup", web::bind(svc, &Id::signup_submit), web::open_access(),
           "Sign-up form submission"});
    r.add({Surface::identity, "GET", "/logout", web::bind(svc, &Id::logout), web::open_access(),
           "Ends the login session"});
    r.add(
        openapi_route(ctx, Surface::identity, &openapi_identity_document, "The identity service's OpenAPI 3 document"));
  }

  // ---- catalog -----------------------------------------------------------------------------
  // Answered from the in-memory catalog snapshot (docs/catalog.md); scopes per docs/catalog.md.
  if (ctx.catalog) {
    using Cat = catalog::Service;
    Cat* const svc = ctx.catalog.get();
    r.add({Surface::gateway, "GET", "/country/list", web::bind(svc, &Cat::list_countries), web::bearer("countries"),
           "List countries (page, limit)"});
    r.add({Surface::gateway, "GET", "/pricing-rule/fees", web::bind(svc, &Cat::list_fees), web::bearer("payments"),
           "List the fee rules of a granted country (filters: services, operation, user_tier)"});
    r.add({Surface::gateway, "GET", "/service/list", web::bind(svc, &Cat::list_services), web::bearer("services"),
           "List payment services (filters: country, provider, kind, active)"});
    r.add({Surface::gateway, "GET", "/provider/list", web::bind(svc, &Cat::list_providers), web::bearer("providers"),
           "List providers (filters: country, kind, active)"});
    r.add({Surface::gateway, "GET", "/provider/predict", web::bind(svc, &Cat::predict_provider),
           web::bearer("providers"), "Predict the operator of a mobile number (msisdn, country)"});
  }

  // ---- payments ----------------------------------------------------------------------------
  if (ctx.payments) {
    using Pay = payments::Service;
    Pay* const svc = ctx.payments.get();
    web::Route intent{Surface::gateway,        "POST",
                      "/collection/intent",    web::bind(svc, &Pay::create_intent),
                      web::bearer("payments"), "Create a collection intent (idempotent on transaction_uuid)"};
    intent.answers_later = true;  // answered from the write's completion (Db::write_async)
    r.add(std::move(intent));
    r.add({Surface::gateway, "POST", "/collection/execute", web::bind(svc, &Pay::execute), web::bearer("payments"),
           "Push an INITIATED collection to the customer's phone (otp when the service needs one)"});
    r.add({Surface::gateway, "POST", "/collection/status", web::bind(svc, &Pay::status), web::bearer("payments"),
           "Read a collection's current record"});
    r.add({Surface::gateway, "POST", "/collection/cancel", web::bind(svc, &Pay::cancel), web::bearer("payments"),
           "Cancel an INITIATED collection"});
    r.add({Surface::gateway, "POST", "/collection/refund", web::bind(svc, &Pay::create_refund), web::bearer("payments"),
           "Refund (part of) a COMPLETED collection (idempotent on refund_uuid; one refund in flight at a time)"});
    r.add({Surface::gateway, "POST", "/collection/refund/status", web::bind(svc, &Pay::refund_status),
           web::bearer("payments"), "Read a refund's current record"});
    r.add({Surface::gateway, "GET", "/refunds", web::bind(svc, &Pay::refunds), web::bearer("payments"),
           "List the merchant's refunds (filters: transaction_reference, status; page, limit)"});
    r.add({Surface::gateway, "POST", "/disbursement/intent", web::bind(svc, &Pay::disbursement_intent),
           web::bearer("payments"),
           "Pay out from the merchant's balance to a wallet (funds reserved while in flight)"});
    r.add({Surface::gateway, "POST", "/disbursement/status", web::bind(svc, &Pay::disbursement_status),
           web::bearer("payments"), "Read a disbursement's current record"});
    r.add({Surface::gateway, "POST", "/verification/account-holder", web::bind(svc, &Pay::verify_account),
           web::bearer("payments"), "Look up the account holder's name of a wallet"});
    r.add({Surface::gateway, "GET", "/balance", web::bind(svc, &Pay::balances), web::bearer("payments"),
           "The merchant's available and pending balances per currency"});
    if (ctx.statements)
      r.add({Surface::gateway, "GET", "/statements", web::bind(ctx.statements.get(), &statements::Service::statement),
             web::bearer("payments"),
             "The merchant's statement of a currency over whole days (from, to; JSON or streamed CSV)"});
    r.add({Surface::gateway, "POST", "/transactions/fees/quote", web::bind(svc, &Pay::fee_quote),
           web::merchant_key_or_bearer("payments"),
           "Quote a collection's fee (shop plugins: merchant API key in x-api-key, or a token); moves nothing"});
    r.add({Surface::gateway, "GET", "/sandbox/messages", web::bind(svc, &Pay::sandbox_messages),
           web::bearer("payments"),
           "Sandbox: the messages (codes) sent to a number, newest first; prod merchants get 404"});
    // A signed callback is verified by its connector; an unsigned one (MTN) moves money only by the
    // operator's answer to a status query made on receipt. MTN calls back with PUT or POST.
    // Rate-limited per client address on each node (payments.callbacks_per_address_per_minute).
    auto callback_limiter = std::make_shared<limits::LocalLimiter>(100'000);
    const limits::Policy callback_policy{
        .limit = std::max<std::int64_t>(1, ctx.config.get_int("payments.callbacks_per_address_per_minute")),
        .window_ms = 60'000,
        .name = "operator_callbacks_per_address"};
    web::Handler callback = [svc, callback_limiter, callback_policy](web::Request& req) -> Result<web::Response> {
      const limits::Decision d = callback_limiter->hit(req.remote_ip, callback_policy);
      if (!d.allowed)
        return rate_limited(boost::json::object{{"retry_after_seconds", (d.retry_after_ms + 999) / 1000}});
      return svc->operator_callback(req);
    };
    for (const char* method : {"POST", "PUT"})
      r.add({Surface::gateway, method, "/operator/callback/{connector}", callback, web::signed_request(),
             "Operator callbacks (signed, or verified with the operator; no token)"});
    r.add({Surface::checkout, "GET", "/confirm/{reference}", web::bind(svc, &Pay::confirm_page), web::signed_request(),
           "Hosted confirmation page of a collection (fr/en)"});
    r.add({Surface::checkout, "POST", "/confirm/{reference}", web::bind(svc, &Pay::confirm_submit),
           web::signed_request(), "Confirmation page form: push the request, pay from the wallet, or decline"});
  }

  // ---- payment links ---------------------------------------------------------------------
  if (ctx.links) {
    using Lnk = links::Service;
    Lnk* const svc = ctx.links.get();
    r.add({Surface::gateway, "POST", "/payment-links", web::bind(svc, &Lnk::create), web::bearer("payments"),
           "Create a payment link (fixed or open amount; the server draws its short code)"});
    r.add({Surface::gateway, "GET", "/payment-links", web::bind(svc, &Lnk::list), web::bearer("payments"),
           "List the merchant's payment links (filters: status, from, to; page, limit)"});
    r.add({Surface::gateway, "GET", "/payment-links/{reference}", web::bind(svc, &Lnk::show), web::bearer("payments"),
           "Read a payment link with its figures"});
    r.add({Surface::gateway, "PATCH", "/payment-links/{reference}", web::bind(svc, &Lnk::update),
           web::bearer("payments"), "Change a payment link's title, description or expiry"});
    r.add({Surface::gateway, "POST", "/payment-links/{reference}/disable", web::bind(svc, &Lnk::disable),
           web::bearer("payments"), "Disable a payment link (payments are refused)"});
    r.add({Surface::gateway, "POST", "/payment-links/{reference}/enable", web::bind(svc, &Lnk::enable),
           web::bearer("payments"), "Enable a disabled payment link"});
    r.add({Surface::gateway, "GET", "/payment-links/{reference}/qr.svg", web::bind(svc, &Lnk::qr_svg),
           web::bearer("payments"), "The link's QR code as SVG (size: pixels per module)"});
    r.add({Surface::gateway, "GET", "/payment-links/{reference}/qr.png", web::bind(svc, &Lnk::qr_png),
           web::bearer("payments"), "The link's QR code as PNG, for printing (size: pixels per module)"});
    r.add({Surface::gateway, "POST", "/pay/{shortCode}/pay", web::bind(svc, &Lnk::pay), web::open_access(),
           "Pay a public payment link (no token): creates the collection and pushes it to the payer's phone"});
    r.add({Surface::checkout, "GET", "/pay/{shortCode}", web::bind(svc, &Lnk::page), web::open_access(),
           "Public page of a payment link (fr/en, plain forms)"});
    r.add({Surface::checkout, "POST", "/pay/{shortCode}", web::bind(svc, &Lnk::page_submit), web::open_access(),
           "Payment link page form: pay (then the OTP step when the operator needs a code)"});
    r.add({Surface::checkout, "GET", "/pay/{shortCode}/status", web::bind(svc, &Lnk::status_page), web::open_access(),
           "Status of a link payment, refreshing until it ends, then the receipt"});
  }

  // ---- wallets and the wallet link API (docs/wallet-link.md) ---------------------------------
  if (ctx.wallets) {
    using Wal = wallets::Service;
    wallets::Service* wal_svc = ctx.wallets.get();
    // The address's hourly budget (shared limiter), then the partner's key in x-api-key.
    r.authenticate_with(web::Auth::link_api_key, [wal_svc](web::Request& req, const web::Access&) {
      return wal_svc->authenticate_partner(req);
    });
    for (const char* method : {"GET", "POST"}) {
      r.add({Surface::link, method, "/api/agent/link/new", web::bind(wal_svc, &Wal::link_new), web::link_api_key(),
             "Link a partner's user to a Sika wallet (email, phone, phoneCountry); sends the consent code"});
      r.add({Surface::link, method, "/api/agent/link/status", web::bind(wal_svc, &Wal::link_status),
             web::link_api_key(), "A wallet link's status, limits and what its period has spent (apikey)"});
    }
    r.add({Surface::link, "POST", "/api/agent/link/confirm", web::bind(wal_svc, &Wal::link_confirm),
           web::link_api_key(), "The user's consent: the code sent to the phone makes the link ACTIVE (apikey, otp)"});
    r.add({Surface::link, "POST", "/api/agent/link/unlink", web::bind(wal_svc, &Wal::link_unlink), web::link_api_key(),
           "The partner ends a wallet link (apikey)"});
    web::Route charge{Surface::link,
                      "POST",
                      "/api/agent/link/charge",
                      web::bind(wal_svc, &Wal::link_charge),
                      web::link_api_key(),
                      "Charge a linked wallet within the consent's limits (WALLET collection, no code)"};
    // Answered from the write's completion. On an I/O thread, the limiter decides from this node's
    // block; a hit that needs a reservation runs the request again on a handler thread.
    charge.answers_later = true;
    r.add(std::move(charge));
    r.add({Surface::link, "POST", "/api/agent/link/payout", web::bind(wal_svc, &Wal::link_payout), web::link_api_key(),
           "Pay out from the partner's balance into a linked wallet"});
    r.add({Surface::link, "POST", "/api/agent/link/topup", web::bind(wal_svc, &Wal::link_topup), web::link_api_key(),
           "Top up a linked wallet from the user's own mobile money (PROVIDER collection)"});
    r.add({Surface::link, "POST", "/api/agent/link/withdraw", web::bind(wal_svc, &Wal::link_withdraw),
           web::link_api_key(),
           "Withdraw from a linked wallet to the user's own mobile money, within the consent's limits"});
    r.add({Surface::link, "POST", "/api/agent/link/init", web::bind(wal_svc, &Wal::link_init), web::link_api_key(),
           "Start a payment on a linked wallet: charged within the consent, else approved by the user's code"});
    r.add({Surface::link, "POST", "/api/agent/link/approve", web::bind(wal_svc, &Wal::link_approve),
           web::link_api_key(), "Complete a link/init payment with the code the user received"});
    r.add({Surface::link, "POST", "/api/agent/link/fiat-distribution", web::bind(wal_svc, &Wal::link_fiat_distribution),
           web::link_api_key(), "Distribute from the partner's balance to several linked wallets, all or nothing"});
    r.add({Surface::link, "GET", "/",
           [&ctx](web::Request& req) {
             return web::ok(
                 req, boost::json::object{{"name", "Sika wallet link API"},
                                          {"openapi_url", ctx.config.surface_url(Surface::link) + "/openapi.json"}});
           },
           web::open_access(), "What the link API is, and where its OpenAPI document is"});
    r.add(openapi_route(ctx, Surface::link, &openapi_link_document, "The link API's OpenAPI 3 document"));
    r.add({Surface::checkout, "GET", "/wallet/login", web::bind(wal_svc, &Wal::page_login), web::open_access(),
           "Wallet page: sign in with the identity service (OIDC code + PKCE)"});
    r.add({Surface::checkout, "GET", "/wallet/callback", web::bind(wal_svc, &Wal::page_callback), web::open_access(),
           "Wallet page: back from the identity service, signed in to the wallet of the account's phone"});
    r.add({Surface::checkout, "GET", "/wallet", web::bind(wal_svc, &Wal::page), web::open_access(),
           "The user's wallet page (fr/en): sign-in by phone and code, balance, history, links"});
    r.add({Surface::checkout, "POST", "/wallet", web::bind(wal_svc, &Wal::page_submit), web::open_access(),
           "Wallet page forms: send / verify the sign-in code, unlink a partner, sign out"});
  }

  // ---- subscriptions (billing) -----------------------------------------------------------
  if (ctx.billing) {
    using Bil = billing::Service;
    Bil* const svc = ctx.billing.get();
    const std::string base = "/merchand/billing";
    r.add({Surface::gateway, "POST", base + "/subscribe", web::bind(svc, &Bil::subscribe), web::bearer("payments"),
           "Subscribe a customer (idempotent on X-Idempotency-Key); the first cycle is paid through a link"});
    r.add({Surface::gateway, "GET", base + "/subscriptions", web::bind(svc, &Bil::list), web::bearer("payments"),
           "List the merchant's subscriptions (filters: status, customer_email; page, limit)"});
    r.add({Surface::gateway, "GET", base + "/subscriptions/detail/{reference}", web::bind(svc, &Bil::detail),
           web::bearer("payments"), "Read a subscription with its latest payments (for=merchant|desc)"});
    r.add({Surface::gateway, "POST", base + "/subscriptions/cancel/{reference}", web::bind(svc, &Bil::cancel),
           web::bearer("payments"), "Cancel a subscription now or at its period's end"});
    r.add({Surface::gateway, "POST", base + "/subscriptions/suspend/{reference}", web::bind(svc, &Bil::suspend),
           web::bearer("payments"), "Suspend an active subscription"});
    r.add({Surface::gateway, "POST", base + "/subscriptions/reactivate/{reference}", web::bind(svc, &Bil::reactivate),
           web::bearer("payments"), "Reactivate a suspended subscription (overdue cycles are asked for first)"});
    r.add({Surface::gateway, "GET", base + "/subscriptions/payments/{reference}", web::bind(svc, &Bil::payments),
           web::bearer("payments"), "List a subscription's payments, newest cycle first (page, limit)"});
    r.add({Surface::gateway, "POST", base + "/subscriptions/test-clock/{reference}",
           web::bind(svc, &Bil::advance_clock), web::bearer("payments"),
           "Sandbox: move a subscription's clock forward and bill what falls due"});
    r.add({Surface::gateway, "POST", base + "/subscriptions/mandate/{reference}", web::bind(svc, &Bil::mandate),
           web::bearer("payments"), "Ask the customer for a wallet mandate (cycles debited from the Sika wallet)"});
    r.add({Surface::checkout, "GET", "/mandate/{token}", web::bind(svc, &Bil::mandate_page), web::open_access(),
           "The customer's wallet mandate page (fr/en): approve with a code, or revoke"});
    r.add({Surface::checkout, "POST", "/mandate/{token}", web::bind(svc, &Bil::mandate_page_submit), web::open_access(),
           "Wallet mandate page forms: send the code, approve, revoke"});
  }

  // ---- hosted checkout ----------------------------------------------------------------------
  if (ctx.checkout) {
    using Chk = checkout::Service;
    Chk* const svc = ctx.checkout.get();
    r.authenticate_with(web::Auth::merchant_api_key,
                        [svc](web::Request& req, const web::Access&) { return svc->authenticate(req); });
    // Shop plugins: the merchant API key in x-api-key (the address's budget first), else a token.
    r.authenticate_with(web::Auth::merchant_key_or_bearer,
                        [svc, &ctx](web::Request& req, const web::Access&) -> Result<web::Principal> {
                          if (!req.header("x-api-key").empty()) return svc->authenticate_header(req);
                          if (!ctx.authenticate)
                            return unavailable(std::string_view("identity service not configured"));
                          return ctx.authenticate(req);
                        });
    web::Route post{Surface::checkout,
                    "POST",
                    "/",
                    web::bind(svc, &Chk::create),
                    web::merchant_api_key(),
                    "Open a hosted checkout session (form post: 303 to its page; JSON: the session)"};
    post.refusal = [svc](const web::Request& req, const Error& e) { return svc->refusal(req, e); };
    r.add(std::move(post));
    r.add({Surface::checkout, "GET", "/session/{reference}", web::bind(svc, &Chk::page), web::open_access(),
           "Hosted checkout page of a session (fr/en, plain forms)"});
    r.add({Surface::checkout, "POST", "/session/{reference}", web::bind(svc, &Chk::submit), web::open_access(),
           "Checkout page form: pay with a method (then the OTP step when the operator needs a code)"});
    r.add({Surface::checkout, "POST", "/session/{reference}/cancel", web::bind(svc, &Chk::cancel), web::open_access(),
           "Cancel a checkout session: back to failureUrl with the signed return data"});
    r.add({Surface::checkout, "GET", "/session/{reference}/return", web::bind(svc, &Chk::finish), web::open_access(),
           "Back to successUrl or failureUrl with the signed return data once the payment ended"});
    r.add({Surface::checkout, "GET", "/page.js", web::bind(svc, &Chk::page_script), web::open_access(),
           "The checkout page's countdown script"});
    r.add({Surface::checkout, "GET", "/button.js", web::bind(svc, &Chk::button_script), web::open_access(),
           "Pay-button script for merchants' sites"});
    r.add(
        openapi_route(ctx, Surface::checkout, &openapi_checkout_document, "The hosted checkout's OpenAPI 3 document"));
  }
  // The script of the pages that wait for a payment (checkout, confirmation, payment link).
  r.add({Surface::checkout, "GET", "/live.js", [](web::Request&) { return web::html::live_script(); },
         web::open_access(), "Status polling of the customer pages (web::html::live_html)", /*non_blocking=*/true});

  // ---- webhooks ----------------------------------------------------------------------------
  if (ctx.webhooks) {
    using Wh = webhooks::Service;
    Wh* const svc = ctx.webhooks.get();
    r.add({Surface::gateway, "GET", "/webhook/endpoints", web::bind(svc, &Wh::list_endpoints), web::bearer("payments"),
           "List the merchant's notification endpoints"});
    r.add({Surface::gateway, "POST", "/webhook/endpoints", web::bind(svc, &Wh::create_endpoint),
           web::bearer("payments"), "Register a notification endpoint (its signing secret is shown once)"});
    r.add({Surface::gateway, "GET", "/webhook/endpoints/{endpoint_id}", web::bind(svc, &Wh::get_endpoint),
           web::bearer("payments"), "Read a notification endpoint"});
    r.add({Surface::gateway, "PATCH", "/webhook/endpoints/{endpoint_id}", web::bind(svc, &Wh::update_endpoint),
           web::bearer("payments"), "Change a notification endpoint (url, event_types, description, enabled)"});
    r.add({Surface::gateway, "DELETE", "/webhook/endpoints/{endpoint_id}", web::bind(svc, &Wh::delete_endpoint),
           web::bearer("payments"), "Delete a notification endpoint"});
    r.add({Surface::gateway, "POST", "/webhook/endpoints/{endpoint_id}/rotate-secret",
           web::bind(svc, &Wh::rotate_secret), web::bearer("payments"),
           "Replace an endpoint's signing secret; the old one keeps signing during the overlap"});
    r.add({Surface::gateway, "GET", "/webhook/deliveries", web::bind(svc, &Wh::list_deliveries),
           web::bearer("payments"), "List webhook deliveries (filters: endpoint_id, event_id, status)"});
    r.add({Surface::gateway, "GET", "/webhook/deliveries/{delivery_id}", web::bind(svc, &Wh::get_delivery),
           web::bearer("payments"), "Read a webhook delivery with every attempt"});
    r.add({Surface::gateway, "GET", "/webhook/events", web::bind(svc, &Wh::list_events), web::bearer("payments"),
           "List the merchant's events (filter: event_type)"});
    r.add({Surface::gateway, "POST", "/webhook/events/{event_id}/redeliver", web::bind(svc, &Wh::redeliver),
           web::bearer("payments"), "Deliver an event again, to one endpoint or to every subscribed one"});
  }

  // ---- dashboard ---------------------------------------------------------------------------
  // Server-rendered pages of operators and merchant members (docs/dashboard.md). Sign-in and the
  // TOTP step are open (the handlers check the state cookie, or the pending session and its CSRF
  // token); every other page needs a session, operators' pages an operator's.
  if (ctx.dashboard) {
    using Dsh = dashboard::Service;
    Dsh* svc = ctx.dashboard.get();
    r.authenticate_with(web::Auth::dashboard_session,
                        [svc](web::Request& req, const web::Access&) { return svc->authenticate(req); });
    r.authenticate_with(web::Auth::operator_session,
                        [svc](web::Request& req, const web::Access&) { return svc->authenticate(req); });
    r.sign_in_page(Surface::dashboard, ctx.config.surface_url(Surface::dashboard) + "/login");
    const auto member = web::dashboard_session();
    const auto op = web::operator_session();
    r.add({Surface::dashboard, "GET", "/login", web::bind(svc, &Dsh::login), web::open_access(),
           "Sign-in: redirects to the identity service (authorization code + PKCE)"});
    r.add({Surface::dashboard, "GET", "/callback", web::bind(svc, &Dsh::callback), web::open_access(),
           "Sign-in callback: exchanges the code, verifies the ID token, opens the session"});
    r.add({Surface::dashboard, "GET", "/totp", web::bind(svc, &Dsh::totp_page), web::open_access(),
           "Second factor: TOTP enrolment (QR code) or the code form of a signed-in session"});
    r.add({Surface::dashboard, "POST", "/totp", web::bind(svc, &Dsh::totp_submit), web::open_access(),
           "Second factor: checks the TOTP code (session cookie and CSRF token checked by the handler)"});
    r.add({Surface::dashboard, "POST", "/logout", web::bind(svc, &Dsh::logout), member, "Ends the dashboard session"});
    r.add({Surface::dashboard, "GET", "/", web::bind(svc, &Dsh::home), member,
           "Home: balances and the daily volume chart"});
    r.add(
        {Surface::dashboard, "GET", "/audit", web::bind(svc, &Dsh::audit), member, "Audit log (owners and operators)"});
    r.add({Surface::dashboard, "GET", "/security", web::bind(svc, &Dsh::security), member,
           "Two-factor authentication status"});
    r.add(
        {Surface::dashboard, "POST", "/security/totp", web::bind(svc, &Dsh::security_enrol), member, "Turns on TOTP"});
    r.add({Surface::dashboard, "GET", "/settings", web::bind(svc, &Dsh::settings), member, "The merchant's time zone"});
    r.add({Surface::dashboard, "POST", "/settings", web::bind(svc, &Dsh::settings_submit), member,
           "Sets the merchant's time zone (owners)"});
    r.add({Surface::dashboard, "GET", "/transactions", web::bind(svc, &Dsh::transactions), member,
           "Transactions: filters, search, keyset pages"});
    r.add({Surface::dashboard, "GET", "/transactions.csv", web::bind(svc, &Dsh::transactions_csv), member,
           "Transactions as CSV (same filters)"});
    r.add({Surface::dashboard, "GET", "/statements", web::bind(svc, &Dsh::statement), member,
           "The statement of a currency and month: balances and first movements"});
    r.add({Surface::dashboard, "GET", "/statements.csv", web::bind(svc, &Dsh::statement_csv), member,
           "The statement of a currency and month as CSV (separator=comma|semicolon)"});
    r.add({Surface::dashboard, "GET", "/settlement", web::bind(svc, &Dsh::settlement), member,
           "Settlement: where and when the merchant is paid, its batches"});
    r.add({Surface::dashboard, "POST", "/settlement", web::bind(svc, &Dsh::settlement_submit), member,
           "Sets the merchant's settlement destination, schedule and minimum (owners)"});
    r.add({Surface::dashboard, "POST", "/settlement/now", web::bind(svc, &Dsh::settlement_now), member,
           "Settles the merchant's available balance now (owners)"});
    r.add({Surface::dashboard, "GET", "/transactions/{reference}", web::bind(svc, &Dsh::transaction), member,
           "A transaction: timeline, ledger entries, webhook deliveries"});
    r.add({Surface::dashboard, "POST", "/transactions/{reference}/redeliver", web::bind(svc, &Dsh::redeliver), member,
           "Replays a webhook delivery of the transaction"});
    r.add({Surface::dashboard, "POST", "/transactions/{reference}/refund", web::bind(svc, &Dsh::refund_submit), member,
           "Refunds (part of) a COMPLETED collection through the API's operation (owners; audited)"});
    r.add({Surface::dashboard, "GET", "/refunds", web::bind(svc, &Dsh::refunds), member,
           "The merchant's refunds: filters (status, transaction reference), keyset pages"});
    r.add({Surface::dashboard, "GET", "/links", web::bind(svc, &Dsh::links_page), member, "Payment links"});
    r.add({Surface::dashboard, "POST", "/links", web::bind(svc, &Dsh::link_create), member, "Creates a payment link"});
    r.add({Surface::dashboard, "GET", "/links/{reference}/qr.png", web::bind(svc, &Dsh::link_qr), member,
           "Downloads a payment link's QR code"});
    r.add({Surface::dashboard, "POST", "/links/{reference}/disable", web::bind(svc, &Dsh::link_disable), member,
           "Disables a payment link"});
    r.add({Surface::dashboard, "GET", "/developers", web::bind(svc, &Dsh::developers), member, "OAuth applications"});
    r.add({Surface::dashboard, "POST", "/developers/apps", web::bind(svc, &Dsh::app_create), member,
           "Creates an OAuth application (secret shown once)"});
    r.add({Surface::dashboard, "POST", "/developers/apps/{client_id}/rotate", web::bind(svc, &Dsh::app_rotate), member,
           "Rotates an OAuth application's secret (shown once)"});
    r.add({Surface::dashboard, "GET", "/webhooks", web::bind(svc, &Dsh::webhooks_page), member,
           "Webhook endpoints and the delivery log"});
    r.add({Surface::dashboard, "POST", "/webhooks", web::bind(svc, &Dsh::webhook_create), member,
           "Registers a webhook endpoint (signing secret shown once)"});
    r.add({Surface::dashboard, "POST", "/webhooks/redeliver", web::bind(svc, &Dsh::webhook_redeliver), member,
           "Replays a webhook delivery"});
    r.add({Surface::dashboard, "POST", "/webhooks/{endpoint_id}/rotate", web::bind(svc, &Dsh::webhook_rotate), member,
           "Rotates an endpoint's signing secret (shown once)"});
    r.add({Surface::dashboard, "GET", "/sandbox", web::bind(svc, &Dsh::sandbox), member,
           "Sandbox tools: the notifier's outbox for one recipient"});
    r.add({Surface::dashboard, "POST", "/developers/keys", web::bind(svc, &Dsh::key_issue), member,
           "Issues a merchant or link API key (shown once)"});
    r.add({Surface::dashboard, "POST", "/developers/keys/{key_id}/revoke", web::bind(svc, &Dsh::key_revoke), member,
           "Revokes an API key"});
    r.add({Surface::dashboard, "GET", "/team", web::bind(svc, &Dsh::team), member, "Team members and roles"});
    r.add({Surface::dashboard, "POST", "/team", web::bind(svc, &Dsh::team_put), member,
           "Sets or removes a member's role (owners)"});
    r.add({Surface::dashboard, "GET", "/operator/merchants", web::bind(svc, &Dsh::merchants), op,
           "Operators: merchants"});
    r.add({Surface::dashboard, "POST", "/operator/merchants", web::bind(svc, &Dsh::merchant_create), op,
           "Operators: creates a merchant"});
    r.add({Surface::dashboard, "GET", "/operator/merchants/{matricule}", web::bind(svc, &Dsh::merchant_page), op,
           "Operators: a merchant, its OAuth applications and members"});
    r.add({Surface::dashboard, "POST", "/operator/merchants/{matricule}/enable", web::bind(svc, &Dsh::merchant_status),
           op, "Operators: enables a merchant"});
    r.add({Surface::dashboard, "POST", "/operator/merchants/{matricule}/disable", web::bind(svc, &Dsh::merchant_status),
           op, "Operators: disables a merchant (its credentials and members' sessions stop working)"});
    r.add({Surface::dashboard, "POST", "/operator/merchants/{matricule}/apps",
           web::bind(svc, &Dsh::merchant_app_create), op,
           "Operators: creates a merchant's OAuth application (secret shown once)"});
    r.add({Surface::dashboard, "POST", "/operator/merchants/{matricule}/members", web::bind(svc, &Dsh::merchant_member),
           op, "Operators: sets or removes a member's role"});
    r.add({Surface::dashboard, "GET", "/operator/settlement", web::bind(svc, &Dsh::operator_settlement), op,
           "Pending bank settlement batches and merchants' refund reserves"});
    r.add({Surface::dashboard, "GET", "/operator/settlement/pain001.xml", web::bind(svc, &Dsh::operator_pain001), op,
           "The pain.001 credit transfer file of the pending bank batches"});
    r.add({Surface::dashboard, "POST", "/operator/settlement/reserve",
           web::bind(svc, &Dsh::operator_settlement_reserve), op, "Sets a merchant's refund reserve"});
    r.add({Surface::dashboard, "POST", "/operator/settlement/{reference}/paid",
           web::bind(svc, &Dsh::operator_settlement_paid), op, "Marks a bank settlement batch paid"});
    r.add({Surface::dashboard, "GET", "/operator/ledger", web::bind(svc, &Dsh::ledger), op,
           "Operators: the ledger check"});
    r.add({Surface::dashboard, "GET", "/operator/catalog", web::bind(svc, &Dsh::catalog_page), op,
           "Operators: the catalog (countries, services, providers, pricing rules), read only"});
    r.add({Surface::dashboard, "GET", "/operator/health", web::bind(svc, &Dsh::health), op,
           "Operators: operators' health, job queues and webhook failures"});
    r.add({Surface::dashboard, "POST", "/operator/health/override", web::bind(svc, &Dsh::health_override), op,
           "Operators: forces a connector's health state, or clears it (audited)"});
    r.add({Surface::dashboard, "GET", "/operator/recon", web::bind(svc, &Dsh::recon_runs), op,
           "Operators: imported operator statements and daily closings"});
    r.add({Surface::dashboard, "POST", "/operator/recon/closing", web::bind(svc, &Dsh::recon_closing), op,
           "Operators: computes a connector's daily closing against an entered balance (audited)"});
    r.add({Surface::dashboard, "GET", "/operator/recon/{run}", web::bind(svc, &Dsh::recon_run), op,
           "Operators: a statement's report and its items by kind and state"});
    r.add({Surface::dashboard, "POST", "/operator/recon/items/{item}", web::bind(svc, &Dsh::recon_decide), op,
           "Operators: accepts the operator's figure (adjustment journal) or marks an item under investigation "
           "(audited)"});
    // Payouts, subscriptions, hosted checkout, sandbox tools (dashboard/billing_pages.cpp, checkout_pages.cpp).
    r.add({Surface::dashboard, "GET", "/checkout", web::bind(svc, &Dsh::checkout_sessions), member,
           "Hosted checkout sessions"});
    r.add({Surface::dashboard, "GET", "/checkout/{reference}", web::bind(svc, &Dsh::checkout_session), member,
           "A hosted checkout session and its payments"});
    r.add({Surface::dashboard, "POST", "/checkout/secret", web::bind(svc, &Dsh::checkout_secret), member,
           "Shows the merchant's checkout secret (audited)"});
    r.add({Surface::dashboard, "POST", "/checkout/signed-only", web::bind(svc, &Dsh::checkout_signed_only), member,
           "Turns the merchant's signed checkout requests only on or off (owners; audited)"});
    r.add({Surface::dashboard, "GET", "/payouts", web::bind(svc, &Dsh::payouts), member, "Payouts and balances"});
    r.add({Surface::dashboard, "GET", "/subscriptions", web::bind(svc, &Dsh::subscriptions), member, "Subscriptions"});
    r.add({Surface::dashboard, "GET", "/subscriptions/{reference}", web::bind(svc, &Dsh::subscription), member,
           "A subscription and its payments"});
    for (const char* change : {"suspend", "reactivate", "cancel", "test-clock"})
      r.add({Surface::dashboard, "POST", std::string("/subscriptions/{reference}/") + change,
             web::bind(svc, &Dsh::subscription_change), member,
             "Changes a subscription as the API does (test clock: sandbox)"});
    r.add({Surface::dashboard, "POST", "/operator/catalog", web::bind(svc, &Dsh::catalog_put), op,
           "Operators: creates or changes a catalog entry (audited)"});
    r.add({Surface::dashboard, "GET", "/wallet-links", web::bind(svc, &Dsh::wallet_links), member,
           "The partner's links to users' wallets"});
    r.add({Surface::dashboard, "POST", "/wallet-links/{reference}/unlink", web::bind(svc, &Dsh::wallet_unlink), member,
           "Unlinks a user's wallet as the partner (audited; the user is told, the partner's webhooks too)"});
    r.add({Surface::dashboard, "POST", "/operator/catalog/fx", web::bind(svc, &Dsh::fx_put), op,
           "Operators: sets an exchange rate for hosted checkout's line=up (audited)"});
    for (const char* move : {"enable", "disable"})
      r.add({Surface::dashboard, "POST", std::string("/operator/catalog/{kind}/{code}/") + move,
             web::bind(svc, &Dsh::catalog_active), op, "Operators: turns a catalog entry on or off (audited)"});
    r.add({Surface::dashboard, "POST", "/transactions/{reference}/force", web::bind(svc, &Dsh::force_outcome), member,
           "Sandbox: forces the operator's answer to a PENDING collection"});
    // Operators: a merchant's countries and tier (dashboard/operator_pages.cpp).
    r.add({Surface::dashboard, "POST", "/operator/merchants/{matricule}/grants", web::bind(svc, &Dsh::merchant_grants),
           op, "Operators: changes a merchant's countries and tier (audited; its tokens issued before are refused)"});
  }
}

}  // namespace sika::app
