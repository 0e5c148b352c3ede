// The route table and the OpenAPI document must agree: every gateway route is documented, and
// every documented path is served.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "app/context.hpp"
#include "app/routes.hpp"

using namespace sika;

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

class RouteTable : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("sika_routes_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    auto cfg = app::Config::load(
        std::nullopt, {{"db", "sqlite://" + (dir_ / "sika.db").string()}, {"secret_key", std::string(40, 'k')}});
    ASSERT_TRUE(cfg.ok());
    auto ctx = app::open_context(std::move(cfg).value(), true);
    ASSERT_TRUE(ctx.ok());
    ctx_ = std::move(ctx).value();
    ASSERT_TRUE(app::build_services(*ctx_).ok());
    app::build_routes(router_, *ctx_);
  }
  void TearDown() override {
    if (ctx_) ctx_->db->close();
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
  std::unique_ptr<app::Context> ctx_;
  web::Router router_;
};
}  // namespace

TEST_F(RouteTable, EveryGatewayRouteIsInTheOpenApiDocumentAndBack) {
  auto doc = boost::json::parse(app::openapi_document()).as_object();
  EXPECT_EQ(doc.at("info").at("version").as_string(), "3.0.0");
  const auto& paths = doc.at("paths").as_object();
  std::set<std::pair<std::string, std::string>> served;
  for (const auto& route : router_.routes()) {
    if (route.surface != web::Surface::gateway) continue;
    served.insert({route.pattern, lower(route.method)});
    auto it = paths.find(route.pattern);
    ASSERT_NE(it, paths.end()) << route.method << " " << route.pattern << " is not in docs/openapi.json";
    EXPECT_TRUE(it->value().as_object().contains(lower(route.method)))
        << route.method << " " << route.pattern << " is not in docs/openapi.json";
  }
  for (const auto& [path, item] : paths) {
    for (const auto& [method, op] : item.as_object()) {
      if (method == "parameters" || method == "summary" || method == "description") continue;
      EXPECT_TRUE(served.count({std::string(path), std::string(method)}))
          << method << " " << path << " is documented but not served";
    }
  }
}

TEST_F(RouteTable, ProtectedGatewayRoutesRefuseMissingTokens) {
  for (const auto& route : router_.routes()) {
    if (route.access.auth != web::Auth::bearer) continue;
    web::Request req;
    req.method = route.method;
    std::string path = "/api" + route.pattern;
    for (std::size_t b; (b = path.find('{')) != std::string::npos;) path.replace(b, path.find('}') - b + 1, "x");
    req.path = path;
    auto res = router_.dispatch(req);
    EXPECT_EQ(res.status, 401) << route.method << " " << route.pattern;
  }
}

// Every route states who may call it, and the table below is the reviewed list: a new route, or a
// changed policy, fails here until it is reviewed and added.
TEST_F(RouteTable, EveryRouteDeclaresTheReviewedAuthPolicy) {
  using web::Auth;
  const std::map<std::string, std::string> expected = {
      {"system GET /healthz", "open"},
      {"system GET /readyz", "open"},
      {"system GET /robots.txt", "open"},  // rate-limited per address in its handler
      {"system GET /metrics", "open"},     // the handler admits metrics.token or loopback peers
      {"gateway GET /openapi.json", "open"},
      {"identity POST /oauth/v2/token", "client"},
      {"identity POST /oauth/v2/revoke", "client"},
      {"identity POST /oauth/v2/introspect", "client"},
      {"identity GET /oauth/v2/authorize", "open"},
      {"identity POST /oauth/v2/authorize", "open"},
      {"identity GET /oauth/v2/userinfo", "user_token"},
      {"identity POST /oauth/v2/userinfo", "user_token"},
      {"identity GET /oauth/v2/jwks", "open"},
      {"identity GET /.well-known/jwks.json", "open"},
      {"identity GET /.well-known/openid-configuration", "open"},
      {"identity GET /.well-known/oauth-authorization-server", "open"},
      {"identity GET /signup", "open"},
      {"identity POST /signup", "open"},
      {"identity GET /logout", "open"},
      {"gateway GET /country/list", "bearer:countries"},
      {"gateway GET /pricing-rule/fees", "bearer:payments"},
      {"gateway GET /service/list", "bearer:services"},
      {"gateway GET /provider/list", "bearer:providers"},
      {"gateway GET /provider/predict", "bearer:providers"},
      {"gateway POST /collection/intent", "bearer:payments"},
      {"gateway POST /collection/execute", "bearer:payments"},
      {"gateway POST /collection/status", "bearer:payments"},
      {"gateway POST /collection/refund", "bearer:payments"},
      {"gateway POST /collection/refund/status", "bearer:payments"},
      {"gateway GET /refunds", "bearer:payments"},
      {"gateway POST /collection/cancel", "bearer:payments"},
      {"gateway POST /disbursement/intent", "bearer:payments"},
      {"gateway POST /disbursement/status", "bearer:payments"},
      {"gateway POST /verification/account-holder", "bearer:payments"},
      {"gateway GET /balance", "bearer:payments"},
      {"gateway GET /statements", "bearer:payments"},
      // shop plugins quote with the merchant API key in x-api-key, API clients with a token
      {"gateway POST /transactions/fees/quote", "merchant_key_or_bearer:payments"},
      {"gateway GET /sandbox/messages", "bearer:payments"},
      {"identity GET /openapi.json", "open"},
      {"checkout GET /openapi.json", "open"},
      // hosted checkout: the API key in the payload; the session pages are open (the session
      // reference, 128 random bits, is the secret) and pay through ordinary collections
      {"checkout POST /", "merchant_api_key"},
      {"checkout GET /session/{reference}", "open"},
      {"checkout POST /session/{reference}", "open"},
      {"checkout POST /session/{reference}/cancel", "open"},
      {"checkout GET /session/{reference}/return", "open"},
      {"checkout GET /page.js", "open"},
      {"checkout GET /button.js", "open"},
      {"checkout GET /live.js", "open"},
      {"gateway POST /operator/callback/{connector}", "signed_request"},
      {"gateway PUT /operator/callback/{connector}", "signed_request"},
      {"checkout GET /confirm/{reference}", "signed_request"},
      {"checkout POST /confirm/{reference}", "signed_request"},
      {"gateway POST /payment-links", "bearer:payments"},
      {"gateway GET /payment-links", "bearer:payments"},
      {"gateway GET /payment-links/{reference}", "bearer:payments"},
      {"gateway PATCH /payment-links/{reference}", "bearer:payments"},
      {"gateway POST /payment-links/{reference}/disable", "bearer:payments"},
      {"gateway POST /payment-links/{reference}/enable", "bearer:payments"},
      {"gateway GET /payment-links/{reference}/qr.svg", "bearer:payments"},
      {"gateway GET /payment-links/{reference}/qr.png", "bearer:payments"},
      {"gateway POST /pay/{shortCode}/pay", "open"},
      {"checkout GET /pay/{shortCode}", "open"},
      {"checkout POST /pay/{shortCode}", "open"},
      {"checkout GET /pay/{shortCode}/status", "open"},
      {"link GET /", "open"},
      {"link GET /openapi.json", "open"},
      {"link GET /api/agent/link/new", "link_api_key"},
      {"link POST /api/agent/link/new", "link_api_key"},
      {"link GET /api/agent/link/status", "link_api_key"},
      {"link POST /api/agent/link/status", "link_api_key"},
      {"link POST /api/agent/link/confirm", "link_api_key"},
      {"link POST /api/agent/link/unlink", "link_api_key"},
      {"link POST /api/agent/link/charge", "link_api_key"},
      {"link POST /api/agent/link/payout", "link_api_key"},
      {"link POST /api/agent/link/topup", "link_api_key"},
      {"link POST /api/agent/link/withdraw", "link_api_key"},
      {"link POST /api/agent/link/init", "link_api_key"},
      {"link POST /api/agent/link/approve", "link_api_key"},
      {"link POST /api/agent/link/fiat-distribution", "link_api_key"},
      {"checkout GET /wallet/login", "open"},
      {"checkout GET /wallet/callback", "open"},
      {"checkout GET /wallet", "open"},
      {"checkout POST /wallet", "open"},
      {"gateway POST /merchand/billing/subscribe", "bearer:payments"},
      {"gateway GET /merchand/billing/subscriptions", "bearer:payments"},
      {"gateway GET /merchand/billing/subscriptions/detail/{reference}", "bearer:payments"},
      {"gateway POST /merchand/billing/subscriptions/cancel/{reference}", "bearer:payments"},
      {"gateway POST /merchand/billing/subscriptions/suspend/{reference}", "bearer:payments"},
      {"gateway POST /merchand/billing/subscriptions/reactivate/{reference}", "bearer:payments"},
      {"gateway GET /merchand/billing/subscriptions/payments/{reference}", "bearer:payments"},
      {"gateway POST /merchand/billing/subscriptions/test-clock/{reference}", "bearer:payments"},
      {"gateway POST /merchand/billing/subscriptions/mandate/{reference}", "bearer:payments"},
      {"checkout GET /mandate/{token}", "open"},
      {"checkout POST /mandate/{token}", "open"},
      {"gateway GET /webhook/endpoints", "bearer:payments"},
      {"gateway POST /webhook/endpoints", "bearer:payments"},
      {"gateway GET /webhook/endpoints/{endpoint_id}", "bearer:payments"},
      {"gateway PATCH /webhook/endpoints/{endpoint_id}", "bearer:payments"},
      {"gateway DELETE /webhook/endpoints/{endpoint_id}", "bearer:payments"},
      {"gateway POST /webhook/endpoints/{endpoint_id}/rotate-secret", "bearer:payments"},
      {"gateway GET /webhook/deliveries", "bearer:payments"},
      {"gateway GET /webhook/deliveries/{delivery_id}", "bearer:payments"},
      {"gateway GET /webhook/events", "bearer:payments"},
      {"gateway POST /webhook/events/{event_id}/redeliver", "bearer:payments"},
      // dashboard: sign-in and the TOTP step are open (their handlers check the state cookie, or
      // the pending session and its CSRF token); every other page needs a session.
      {"dashboard GET /login", "open"},
      {"dashboard GET /callback", "open"},
      {"dashboard GET /totp", "open"},
      {"dashboard POST /totp", "open"},
      {"dashboard POST /logout", "dashboard_session"},
      {"dashboard GET /", "dashboard_session"},
      {"dashboard GET /audit", "dashboard_session"},
      {"dashboard GET /security", "dashboard_session"},
      {"dashboard POST /security/totp", "dashboard_session"},
      {"dashboard GET /transactions", "dashboard_session"},
      {"dashboard GET /transactions.csv", "dashboard_session"},
      {"dashboard GET /statements", "dashboard_session"},
      {"dashboard GET /statements.csv", "dashboard_session"},
      {"dashboard GET /settlement", "dashboard_session"},
      {"dashboard POST /settlement", "dashboard_session"},
      {"dashboard POST /settlement/now", "dashboard_session"},
      {"dashboard GET /transactions/{reference}", "dashboard_session"},
      {"dashboard POST /transactions/{reference}/redeliver", "dashboard_session"},
      {"dashboard POST /transactions/{reference}/refund", "dashboard_session"},
      {"dashboard GET /refunds", "dashboard_session"},
      {"dashboard GET /links", "dashboard_session"},
      {"dashboard POST /links", "dashboard_session"},
      {"dashboard GET /links/{reference}/qr.png", "dashboard_session"},
      {"dashboard POST /links/{reference}/disable", "dashboard_session"},
      {"dashboard GET /developers", "dashboard_session"},
      {"dashboard POST /developers/apps", "dashboard_session"},
      {"dashboard POST /developers/apps/{client_id}/rotate", "dashboard_session"},
      {"dashboard GET /webhooks", "dashboard_session"},
      {"dashboard POST /webhooks", "dashboard_session"},
      {"dashboard POST /webhooks/redeliver", "dashboard_session"},
      {"dashboard POST /webhooks/{endpoint_id}/rotate", "dashboard_session"},
      {"dashboard GET /sandbox", "dashboard_session"},
      {"dashboard POST /developers/keys", "dashboard_session"},
      {"dashboard POST /developers/keys/{key_id}/revoke", "dashboard_session"},
      {"dashboard GET /team", "dashboard_session"},
      {"dashboard GET /settings", "dashboard_session"},
      {"dashboard POST /settings", "dashboard_session"},  // owners only, checked by the handler
      {"dashboard POST /team", "dashboard_session"},
      {"dashboard GET /operator/merchants", "operator_session"},
      {"dashboard POST /operator/merchants", "operator_session"},
      {"dashboard GET /operator/merchants/{matricule}", "operator_session"},
      {"dashboard POST /operator/merchants/{matricule}/enable", "operator_session"},
      {"dashboard POST /operator/merchants/{matricule}/disable", "operator_session"},
      {"dashboard POST /operator/merchants/{matricule}/apps", "operator_session"},
      {"dashboard POST /operator/merchants/{matricule}/members", "operator_session"},
      {"dashboard GET /operator/ledger", "operator_session"},
      {"dashboard GET /operator/settlement", "operator_session"},
      {"dashboard GET /operator/settlement/pain001.xml", "operator_session"},
      {"dashboard POST /operator/settlement/reserve", "operator_session"},
      {"dashboard POST /operator/settlement/{reference}/paid", "operator_session"},
      {"dashboard GET /operator/catalog", "operator_session"},
      {"dashboard GET /operator/health", "operator_session"},
      {"dashboard POST /operator/health/override", "operator_session"},
      {"dashboard GET /operator/recon", "operator_session"},
      {"dashboard GET /operator/recon/{run}", "operator_session"},
      {"dashboard POST /operator/recon/closing", "operator_session"},
      {"dashboard POST /operator/recon/items/{item}", "operator_session"},
      // dashboard: payouts, subscriptions, hosted checkout, sandbox tools.
      {"dashboard GET /checkout", "dashboard_session"},
      {"dashboard GET /checkout/{reference}", "dashboard_session"},
      {"dashboard POST /checkout/secret", "dashboard_session"},
      {"dashboard POST /checkout/signed-only", "dashboard_session"},
      {"dashboard GET /payouts", "dashboard_session"},
      {"dashboard GET /subscriptions", "dashboard_session"},
      {"dashboard GET /subscriptions/{reference}", "dashboard_session"},
      {"dashboard POST /subscriptions/{reference}/suspend", "dashboard_session"},
      {"dashboard POST /subscriptions/{reference}/reactivate", "dashboard_session"},
      {"dashboard POST /subscriptions/{reference}/cancel", "dashboard_session"},
      {"dashboard POST /subscriptions/{reference}/test-clock", "dashboard_session"},
      {"dashboard POST /transactions/{reference}/force", "dashboard_session"},
      {"dashboard POST /operator/catalog", "operator_session"},
      {"dashboard POST /operator/catalog/fx", "operator_session"},
      {"dashboard GET /wallet-links", "dashboard_session"},
      {"dashboard POST /wallet-links/{reference}/unlink", "dashboard_session"},
      {"dashboard POST /operator/catalog/{kind}/{code}/enable", "operator_session"},
      {"dashboard POST /operator/catalog/{kind}/{code}/disable", "operator_session"},
      // dashboard: a merchant's countries and tier.
      {"dashboard POST /operator/merchants/{matricule}/grants", "operator_session"},
  };
  std::map<std::string, std::string> actual;
  for (const auto& route : router_.routes()) {
    std::string key = std::string(web::surface_name(route.surface)) + " " + route.method + " " + route.pattern;
    std::string policy(web::auth_name(route.access.auth));
    if (route.access.auth == Auth::bearer || route.access.auth == Auth::merchant_key_or_bearer)
      policy += ":" + route.access.scope;
    EXPECT_NE(route.access.auth, Auth::unset) << key;
    EXPECT_TRUE(actual.emplace(key, policy).second) << key << " is registered twice";
  }
  for (const auto& [key, policy] : expected) {
    auto it = actual.find(key);
    if (it == actual.end()) {
      ADD_FAILURE() << key << " is expected but not served";
      continue;
    }
    EXPECT_EQ(it->second, policy) << key;
  }
  for (const auto& [key, policy] : actual)
    EXPECT_TRUE(expected.count(key)) << key << " (" << policy << ") has no reviewed policy in this test";
}

TEST_F(RouteTable, EveryLinkApiRouteIsInTheLinkOpenApiDocumentAndBack) {
  auto doc = boost::json::parse(app::openapi_link_document()).as_object();
  const auto& paths = doc.at("paths").as_object();
  std::set<std::pair<std::string, std::string>> served;
  for (const auto& route : router_.routes()) {
    if (route.surface != web::Surface::link || route.pattern == "/" || route.pattern == "/openapi.json") continue;
    served.insert({route.pattern, lower(route.method)});
    auto it = paths.find(route.pattern);
    ASSERT_NE(it, paths.end()) << route.method << " " << route.pattern << " is not in docs/openapi-link.json";
    EXPECT_TRUE(it->value().as_object().contains(lower(route.method)))
        << route.method << " " << route.pattern << " is not in docs/openapi-link.json";
  }
  EXPECT_FALSE(served.empty());
  for (const auto& [path, item] : paths)
    for (const auto& [method, op] : item.as_object())
      EXPECT_TRUE(served.count({std::string(path), std::string(method)}))
          << method << " " << path << " is documented but not served";
}

// Every route of the identity service and of the hosted checkout is in its own OpenAPI document
// (docs/openapi-identity.json, docs/openapi-checkout.json), and every documented operation is
// served; each operation has a description and states its security ([] when public).
TEST_F(RouteTable, EveryIdentityAndCheckoutRouteIsInItsOpenApiDocumentAndBack) {
  const std::pair<web::Surface, std::string_view> surfaces[] = {
      {web::Surface::identity, app::openapi_identity_document()},
      {web::Surface::checkout, app::openapi_checkout_document()},
  };
  for (const auto& [surface, text] : surfaces) {
    const std::string name(web::surface_name(surface));
    auto doc = boost::json::parse(text).as_object();
    const auto& paths = doc.at("paths").as_object();
    std::set<std::pair<std::string, std::string>> served;
    for (const auto& route : router_.routes()) {
      if (route.surface != surface) continue;
      served.insert({route.pattern, lower(route.method)});
      auto it = paths.find(route.pattern);
      ASSERT_NE(it, paths.end()) << name << " " << route.method << " " << route.pattern << " is not documented";
      EXPECT_TRUE(it->value().as_object().contains(lower(route.method)))
          << name << " " << route.method << " " << route.pattern << " is not documented";
    }
    EXPECT_FALSE(served.empty()) << name;
    for (const auto& [path, item] : paths)
      for (const auto& [method, op] : item.as_object())
        EXPECT_TRUE(served.count({std::string(path), std::string(method)}))
            << name << " " << method << " " << path << " is documented but not served";
  }
}

// Every operation of the four documents has a description and states its security; strict
// validators need a type beside every nullable.
TEST_F(RouteTable, EveryDocumentedOperationHasADescriptionAndSecurity) {
  const std::pair<std::string_view, std::string_view> docs[] = {
      {"docs/openapi.json", app::openapi_document()},
      {"docs/openapi-link.json", app::openapi_link_document()},
      {"docs/openapi-identity.json", app::openapi_identity_document()},
      {"docs/openapi-checkout.json", app::openapi_checkout_document()},
  };
  for (const auto& [file, text] : docs) {
    auto doc = boost::json::parse(text).as_object();
    for (const auto& [path, item] : doc.at("paths").as_object())
      for (const auto& [method, op] : item.as_object()) {
        if (method == "parameters" || method == "summary" || method == "description") continue;
        const auto& o = op.as_object();
        auto d = o.find("description");
        EXPECT_TRUE(d != o.end() && d->value().is_string() && !d->value().as_string().empty())
            << file << " " << method << " " << path << " has no description";
        EXPECT_TRUE(o.contains("security")) << file << " " << method << " " << path << " states no security";
      }
    std::function<void(const boost::json::value&, const std::string&)> walk = [&](const boost::json::value& v,
                                                                                  const std::string& at) {
      if (v.is_object()) {
        const auto& o = v.as_object();
        if (auto n = o.find("nullable"); n != o.end() && n->value() == true) {
          EXPECT_TRUE(o.contains("type")) << file << " " << at << ": nullable without type";
          // OpenAPI 3.0.3: an enum restricts null too, so a nullable enum lists null.
          if (auto e = o.find("enum"); e != o.end() && e->value().is_array()) {
            const auto& values = e->value().as_array();
            EXPECT_TRUE(std::find(values.begin(), values.end(), boost::json::value(nullptr)) != values.end())
                << file << " " << at << ": nullable enum without null";
          }
        }
        for (const auto& [k, child] : o) walk(child, at + "/" + std::string(k));
      } else if (v.is_array()) {
        for (std::size_t i = 0; i < v.as_array().size(); ++i) walk(v.as_array()[i], at + "/" + std::to_string(i));
      }
    };
    walk(doc, "");
  }
}

TEST(Router, RefusesARouteWithoutAnAuthPolicy) {
  web::Router r;
  EXPECT_THROW(r.add({web::Surface::gateway, "GET", "/x", [](web::Request&) { return web::Response{}; }, {}, ""}),
               std::invalid_argument);
}

TEST(Router, BearerPolicyChecksTheScopeAndFillsThePrincipal) {
  web::Router r;
  r.mount(web::Surface::gateway, "/api");
  r.authenticate_with(web::Auth::bearer, [](web::Request& req, const web::Access&) -> Result<web::Principal> {
    if (req.header("x-sp-auth-token").empty()) return unauthorized();
    web::Principal p;
    p.scopes = {"payments"};
    p.merchant_id = 7;
    return p;
  });
  r.add({web::Surface::gateway, "GET", "/pay",
         [](web::Request& q) {
           return web::Response::json(200, std::to_string(q.principal ? q.principal->merchant_id : -1));
         },
         web::bearer("payments"), ""});
  r.add({web::Surface::gateway, "GET", "/fees", [](web::Request&) { return web::Response::json(200, "{}"); },
         web::bearer("countries"), ""});
  r.add({web::Surface::dashboard, "GET", "/ops", [](web::Request&) { return web::Response::json(200, "{}"); },
         web::operator_session(), ""});
  web::Request anon;
  anon.method = "GET";
  anon.path = "/api/pay";
  EXPECT_EQ(r.dispatch(anon).status, 401);
  web::Request ok = anon;
  ok.headers = {{"x-sp-auth-token", "Bearer t"}};
  auto res = r.dispatch(ok);
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(res.body, "7");
  web::Request wrong_scope = ok;
  wrong_scope.path = "/api/fees";
  auto refused = r.dispatch(wrong_scope);
  EXPECT_EQ(refused.status, 403);
  EXPECT_NE(refused.body.find("insufficient_scope"), std::string::npos);
  // A policy with no authenticator configured is never open.
  web::Request ops;
  ops.method = "GET";
  ops.path = "/ops";
  EXPECT_EQ(r.dispatch(ops).status, 503);
}

TEST(Router, SessionRoutesSendBrowsersWithoutASessionToTheSignInPage) {
  web::Router r;
  r.mount(web::Surface::dashboard, "/dashboard");
  r.authenticate_with(web::Auth::dashboard_session,
                      [](web::Request& req, const web::Access&) -> Result<web::Principal> {
                        if (req.header("cookie").empty()) return unauthorized();
                        if (req.method == "POST") return forbidden(boost::json::object{{"csrf", "missing"}});
                        return web::Principal{};
                      });
  r.sign_in_page(web::Surface::dashboard, "https://dash.example/dashboard/login");
  auto handler = [](web::Request&) { return web::Response::json(200, "{}"); };
  r.add({web::Surface::dashboard, "GET", "/page", handler, web::dashboard_session(), ""});
  r.add({web::Surface::dashboard, "POST", "/page", handler, web::dashboard_session(), ""});
  web::Request get;
  get.method = "GET";
  get.path = "/dashboard/page";
  auto res = r.dispatch(get);
  EXPECT_EQ(res.status, 303);
  EXPECT_EQ(res.get("Location"), "https://dash.example/dashboard/login");
  // A change without a session is refused, not redirected; a refused CSRF token is not a sign-in.
  web::Request post = get;
  post.method = "POST";
  EXPECT_EQ(r.dispatch(post).status, 401);
  post.headers = {{"cookie", "sika_dsh=x"}};
  EXPECT_EQ(r.dispatch(post).status, 403);
  get.headers = post.headers;
  EXPECT_EQ(r.dispatch(get).status, 200);
}

TEST(Router, ARouteMayRenderItsPolicysRefusalItself) {
  web::Router r;
  r.authenticate_with(web::Auth::merchant_api_key,
                      [](web::Request&, const web::Access&) -> Result<web::Principal> { return unauthorized(); });
  web::Route route{web::Surface::checkout,  "POST", "/", [](web::Request&) { return web::Response::json(200, "{}"); },
                   web::merchant_api_key(), ""};
  route.refusal = [](const web::Request&, const Error& e) {
    return web::Response::html(e.is(ErrorKind::unauthenticated) ? 401 : 500, "<p>refused</p>");
  };
  r.add(std::move(route));
  r.add({web::Surface::checkout, "POST", "/plain", [](web::Request&) { return web::Response::json(200, "{}"); },
         web::merchant_api_key(), ""});
  web::Request req;
  req.method = "POST";
  req.path = "/";
  auto res = r.dispatch(req);
  EXPECT_EQ(res.status, 401);
  EXPECT_EQ(res.body, "<p>refused</p>");
  req.path = "/plain";
  auto plain = r.dispatch(req);
  EXPECT_EQ(plain.status, 401);
  EXPECT_NE(plain.body.find("\"success\":false"), std::string::npos);
}
