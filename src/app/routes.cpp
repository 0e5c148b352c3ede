// The route table: every route of every surface, in one place.
#include "app/routes.hpp"

#include <boost/json.hpp>

#include "catalog/service.hpp"
#include "identity/service.hpp"
#include "webhooks/service.hpp"
#include "payments/service.hpp"
#include "web/envelope.hpp"

namespace sika::app {

namespace {

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

}  // namespace

void build_routes(web::Router& r, Context& ctx) {
  using web::Surface;
  for (Surface s : {Surface::gateway, Surface::identity, Surface::checkout, Surface::link, Surface::dashboard}) {
    r.mount(s, ctx.config.mount(s));
    r.cors(s, cors_from(ctx.config.get_string("cors." + std::string(web::surface_name(s)))));
  }

  // gw(scope, handler): a gateway route that needs a valid access token carrying `scope`.
  auto gw = [&ctx](std::string scope, web::Handler handler) -> web::Handler {
    return [&ctx, scope = std::move(scope), handler = std::move(handler)](web::Request& req) -> web::Response {
      if (!ctx.authenticate) return web::error(req, unavailable("identity service not configured"));
      auto principal = ctx.authenticate(req);
      if (!principal) return web::error(req, principal.error());
      if (!scope.empty() && !principal->has_scope(scope)) {
        boost::json::object details;
        details["error"] = "insufficient_scope";
        details["required_scope"] = scope;
        return web::error(req, Error{403, "access_denied", std::move(details)});
      }
      req.principal = std::move(principal).value();
      return handler(req);
    };
  };

  // ---- system ------------------------------------------------------------------------------
  r.add({Surface::system, "GET", "/healthz",
         [](web::Request&) { return web::Response::json(200, R"({"status":"ok"})"); }, "", "Liveness",
         /*non_blocking=*/true});
  r.add({Surface::system, "GET", "/readyz",
         [&ctx](web::Request&) {
           auto ok = ctx.db->ping();
           return ok ? web::Response::json(200, R"({"status":"ready","database":"ok"})")
                     : web::Response::json(503, R"({"status":"not_ready","database":"unreachable"})");
         },
         "", "Readiness: 200 only when the database answers"});

  // ---- gateway -----------------------------------------------------------------------------
  r.add({Surface::gateway, "GET", "/openapi.json",
         [&ctx](web::Request&) {
           boost::json::value doc = boost::json::parse(openapi_document());
           boost::json::array servers;
           servers.push_back(boost::json::object{{"url", ctx.config.surface_url(Surface::gateway)}});
           doc.as_object()["servers"] = std::move(servers);
           return web::Response::json(200, boost::json::serialize(doc));
         },
         "", "The gateway's OpenAPI 3 document"});

  // ---- identity ----------------------------------------------------------------------------
  if (ctx.identity) {
    using Id = identity::Service;
    auto id = [svc = ctx.identity.get()](web::Response (Id::*method)(web::Request&)) -> web::Handler {
      return [svc, method](web::Request& q) { return (svc->*method)(q); };
    };
    r.add({Surface::identity, "POST", "/oauth/v2/token", id(&Id::token), "",
           "Token endpoint: client_credentials, authorization_code (+PKCE), refresh_token"});
    r.add({Surface::identity, "POST", "/oauth/v2/revoke", id(&Id::revoke), "", "Token revocation (RFC 7009)"});
    r.add({Surface::identity, "POST", "/oauth/v2/introspect", id(&Id::introspect), "",
           "Token introspection (RFC 7662), client-authenticated"});
    r.add({Surface::identity, "GET", "/oauth/v2/authorize", id(&Id::authorize), "",
           "Authorization endpoint: login and consent page"});
    r.add({Surface::identity, "POST", "/oauth/v2/authorize", id(&Id::authorize_submit), "",
           "Login and consent form submission (or a POSTed authorization request)"});
    r.add({Surface::identity, "GET", "/oauth/v2/userinfo", id(&Id::userinfo), "", "OpenID Connect userinfo"});
    r.add({Surface::identity, "POST", "/oauth/v2/userinfo", id(&Id::userinfo), "", "OpenID Connect userinfo"});
    r.add({Surface::identity, "GET", "/oauth/v2/jwks", id(&Id::jwks), "", "Public signing keys (JWKS)"});
    r.add({Surface::identity, "GET", "/.well-known/jwks.json", id(&Id::jwks), "", "Public signing keys (JWKS)"});
    r.add({Surface::identity, "GET", "/.well-known/openid-configuration", id(&Id::discovery), "",
           "OpenID Connect discovery document"});
    r.add({Surface::identity, "GET", "/.well-known/oauth-authorization-server", id(&Id::as_metadata), "",
           "OAuth 2.0 authorization server metadata (RFC 8414)"});
    r.add({Surface::identity, "GET", "/signup", id(&Id::signup_page), "", "Sign-up page (when enabled)"});
    r.add({Surface::identity, "POST", "/signup", id(&Id::signup_submit), "", "Sign-up form submission"});
    r.add({Surface::identity, "GET", "/logout", id(&Id::logout), "", "Ends the login session"});
  }

  // ---- catalog -----------------------------------------------------------------------------
  // Answered from the in-memory catalog snapshot (docs/catalog.md); scopes per docs/catalog.md.
  if (ctx.catalog) {
    using Cat = catalog::Service;
    auto cat = [&gw, svc = ctx.catalog.get()](std::string scope,
                                               web::Response (Cat::*method)(web::Request&)) -> web::Handler {
      return gw(std::move(scope), [svc, method](web::Request& q) { return (svc->*method)(q); });
    };
    r.add({Surface::gateway, "GET", "/country/list", cat("countries", &Cat::list_countries), "countries",
           "List countries (page, limit)"});
    r.add({Surface::gateway, "GET", "/pricing-rule/fees", cat("payments", &Cat::list_fees), "payments",
           "List the fee rules of a granted country (filters: services, operation, user_tier)"});
    r.add({Surface::gateway, "GET", "/service/list", cat("services", &Cat::list_services), "services",
           "List payment services (filters: country, provider, kind, active)"});
    r.add({Surface::gateway, "GET", "/provider/list", cat("providers", &Cat::list_providers), "providers",
           "List providers (filters: country, kind, active)"});
  }

  // ---- payments ----------------------------------------------------------------------------
  if (ctx.payments) {
    using Pay = payments::Service;
    auto pay = [svc = ctx.payments.get()](web::Response (Pay::*method)(web::Request&)) -> web::Handler {
      return [svc, method](web::Request& q) { return (svc->*method)(q); };
    };
    r.add({Surface::gateway, "POST", "/collection/intent", gw("payments", pay(&Pay::create_intent)), "payments",
           "Create a collection intent (idempotent on transaction_uuid)"});
    r.add({Surface::gateway, "POST", "/collection/execute", gw("payments", pay(&Pay::execute)), "payments",
           "Push an INITIATED collection to the customer's phone (otp when the service needs one)"});
    r.add({Surface::gateway, "POST", "/collection/status", gw("payments", pay(&Pay::status)), "payments",
           "Read a collection's current record"});
    r.add({Surface::gateway, "POST", "/collection/cancel", gw("payments", pay(&Pay::cancel)), "payments",
           "Cancel an INITIATED collection"});
    r.add({Surface::gateway, "POST", "/disbursement/intent", gw("payments", pay(&Pay::disbursement_intent)),
           "payments", "Pay out from the merchant's balance to a wallet (funds reserved while in flight)"});
    r.add({Surface::gateway, "POST", "/disbursement/status", gw("payments", pay(&Pay::disbursement_status)),
           "payments", "Read a disbursement's current record"});
    r.add({Surface::gateway, "POST", "/verification/account-holder", gw("payments", pay(&Pay::verify_account)),
           "payments", "Look up the account holder's name of a wallet"});
    r.add({Surface::gateway, "GET", "/balance", gw("payments", pay(&Pay::balances)), "payments",
           "The merchant's available and pending balances per currency"});
    r.add({Surface::gateway, "POST", "/operator/callback/{connector}", pay(&Pay::operator_callback), "",
           "Operator callbacks (signature-verified by the connector, no token)"});
    r.add({Surface::checkout, "GET", "/confirm/{reference}", pay(&Pay::confirm_page), "",
           "Hosted confirmation page of a collection (fr/en)"});
    r.add({Surface::checkout, "POST", "/confirm/{reference}", pay(&Pay::confirm_submit), "",
           "Confirmation page form: push the request, pay from the wallet, or decline"});
  }

  // ---- webhooks ----------------------------------------------------------------------------
  if (ctx.webhooks) {
    using Wh = webhooks::Service;
    auto wh = [&gw, svc = ctx.webhooks.get()](web::Response (Wh::*method)(web::Request&)) -> web::Handler {
      return gw("payments", [svc, method](web::Request& q) { return (svc->*method)(q); });
    };
    r.add({Surface::gateway, "GET", "/webhook/endpoints", wh(&Wh::list_endpoints), "payments",
           "List the merchant's notification endpoints"});
    r.add({Surface::gateway, "POST", "/webhook/endpoints", wh(&Wh::create_endpoint), "payments",
           "Register a notification endpoint (its signing secret is shown once)"});
    r.add({Surface::gateway, "GET", "/webhook/endpoints/{endpoint_id}", wh(&Wh::get_endpoint), "payments",
           "Read a notification endpoint"});
    r.add({Surface::gateway, "PATCH", "/webhook/endpoints/{endpoint_id}", wh(&Wh::update_endpoint), "payments",
           "Change a notification endpoint (url, event_types, description, enabled)"});
    r.add({Surface::gateway, "DELETE", "/webhook/endpoints/{endpoint_id}", wh(&Wh::delete_endpoint), "payments",
           "Delete a notification endpoint"});
    r.add({Surface::gateway, "POST", "/webhook/endpoints/{endpoint_id}/rotate-secret", wh(&Wh::rotate_secret),
           "payments", "Replace an endpoint's signing secret; the old one keeps signing during the overlap"});
    r.add({Surface::gateway, "GET", "/webhook/deliveries", wh(&Wh::list_deliveries), "payments",
           "List webhook deliveries (filters: endpoint_id, event_id, status)"});
    r.add({Surface::gateway, "GET", "/webhook/deliveries/{delivery_id}", wh(&Wh::get_delivery), "payments",
           "Read a webhook delivery with every attempt"});
    r.add({Surface::gateway, "GET", "/webhook/events", wh(&Wh::list_events), "payments",
           "List the merchant's events (filter: event_type)"});
    r.add({Surface::gateway, "POST", "/webhook/events/{event_id}/redeliver", wh(&Wh::redeliver), "payments",
           "Deliver an event again, to one endpoint or to every subscribed one"});
  }
}

}  // namespace sika::app
