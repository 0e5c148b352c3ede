// The route table: every route of every surface, in one place.
#include "app/routes.hpp"

#include <boost/json.hpp>

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
  (void)gw;

  // ---- system ------------------------------------------------------------------------------
  r.add({Surface::system, "GET", "/healthz",
         [](web::Request&) { return web::Response::json(200, R"({"status":"ok"})"); }, "", "Liveness"});
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

  // ---- catalog -----------------------------------------------------------------------------

  // ---- payments ----------------------------------------------------------------------------

  // ---- webhooks ----------------------------------------------------------------------------
}

}  // namespace sika::app
