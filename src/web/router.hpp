#pragma once
// The route table. Every route of every surface is added in app/routes.cpp; surfaces are
// mounted at configurable prefixes. Unknown paths give 404 and known paths with another
// method 405 with Allow, both in the error envelope. HEAD runs GET (the server drops the
// body); OPTIONS answers CORS preflights for surfaces with CORS enabled, else 204 + Allow.
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "web/client_address.hpp"
#include "web/message.hpp"

namespace sika::web {

enum class Surface { system, gateway, identity, checkout, link, dashboard };
std::string_view surface_name(Surface s);

// A route's handler: the response, or an error the router answers with the error envelope
// (web::error in the request's locale), so handlers propagate errors with SIKA_TRY and
// SIKA_ASSIGN_OR_RETURN instead of answering each one.
using Handler = std::function<Result<Response>(Request&)>;

// The handler calling `method` on `svc` (a component's service, which outlives the router).
template <class Service, class Answer>
Handler bind(Service* svc, Answer (Service::*method)(Request&)) {
  return [svc, method](Request& req) -> Result<Response> { return (svc->*method)(req); };
}

// Who may call a route. Every route states one; the router applies it before the handler runs.
enum class Auth {
  unset,                   // refused by Router::add
  open,                    // anyone: public pages, discovery, health (rate limits still apply)
  client,                  // an OAuth client authenticates in the request itself (token, revoke, introspect)
  user_token,              // the handler verifies a user's access token and answers RFC 6750 errors (userinfo)
  signed_request,          // the request carries a signature the handler verifies (operator callbacks,
                           // signed page links)
  bearer,                  // an access token (x-sp-auth-token or Authorization: Bearer) carrying `scope`
  merchant_api_key,        // a merchant API key in the payload (hosted checkout)
  link_api_key,            // a partner's link API key in x-api-key (wallet link API)
  merchant_key_or_bearer,  // a merchant API key in x-api-key (shop plugins), or an access token
                           // carrying `scope` (as bearer)
  dashboard_session,       // a dashboard session cookie, with the CSRF token on every change
  operator_session,        // a dashboard session of an operator
};
std::string_view auth_name(Auth auth);

struct Access {
  Auth auth = Auth::unset;
  std::string scope;  // for bearer: the OAuth scope the token must carry ("" for any)
};
inline Access open_access() { return {Auth::open, {}}; }
inline Access client_auth() { return {Auth::client, {}}; }
inline Access user_token() { return {Auth::user_token, {}}; }
inline Access signed_request() { return {Auth::signed_request, {}}; }
inline Access bearer(std::string scope) { return {Auth::bearer, std::move(scope)}; }
inline Access merchant_api_key() { return {Auth::merchant_api_key, {}}; }
inline Access link_api_key() { return {Auth::link_api_key, {}}; }
inline Access merchant_key_or_bearer(std::string scope) { return {Auth::merchant_key_or_bearer, std::move(scope)}; }
inline Access dashboard_session() { return {Auth::dashboard_session, {}}; }
inline Access operator_session() { return {Auth::operator_session, {}}; }

// Authenticates a request for a policy: returns the caller, or the error to answer
// (unauthenticated, forbidden, rate_limited …). It must not write a response itself.
using Authenticator = std::function<Result<Principal>(Request&, const Access&)>;

struct Route {
  Surface surface;
  std::string method;   // "GET", "POST", ...
  std::string pattern;  // relative to the surface's mount, e.g. "/pay/{shortCode}/pay"
  Handler handler;
  Access access;        // who may call it
  std::string summary;  // one line, for the route listing
  // True for handlers that never block (no database, no I/O): the server may run them on an
  // I/O thread. Only for parameterless GET routes (Router::add refuses any other).
  bool non_blocking = false;
  // True for handlers that do only CPU work and SQLite reads before they hand their write to
  // Db::write_async and answer through web::answer_later (anything that must block goes through
  // web::run_blocking): the server may run them on an I/O thread when the database writes
  // asynchronously and reads locally (SQLite). Only for parameterless POST routes (Router::add
  // refuses any other).
  bool answers_later = false;
  // Renders the refusal of the route's policy (e.g. an HTML page for a form posted by a
  // browser); empty: the error envelope.
  std::function<Response(const Request&, const Error&)> refusal;
};

struct CorsPolicy {
  bool enabled = false;
  std::vector<std::string> origins;  // "*" allows any origin
};

class Router {
 public:
  // Sets the path prefix of a surface ("" or "/api"); call before add().
  void mount(Surface s, std::string prefix);
  void cors(Surface s, CorsPolicy policy);
  // Proxies whose forwarding header names the client (see web/client_address.hpp).
  void trust_proxies(TrustedProxies proxies) { proxies_ = std::move(proxies); }
  std::string_view prefix(Surface s) const;

  // Registers how requests are authenticated for `auth` (bearer, API keys, sessions).
  // Policies open, client and signed_request need none: their handlers verify what they must.
  void authenticate_with(Auth auth, Authenticator authenticator);
  // A GET of a session route (dashboard_session, operator_session) of this surface without a valid
  // session is sent to `url` (303) instead of the 401 envelope: browsers land on the sign-in page.
  void sign_in_page(Surface s, std::string url);

  // Adds a route; throws std::invalid_argument when it states no auth policy, or asks for what the
  // server cannot honour: non_blocking on anything but a parameterless GET route, answers_later on
  // anything but a parameterless POST route (both are found by an exact-path lookup).
  void add(Route route);
  const std::vector<Route>& routes() const { return routes_; }
  // Returns true iff at least one route is registered on the surface.
  bool serves(Surface s) const;

  // Returns true iff the request targets a non_blocking route (an exact-path lookup).
  bool is_non_blocking(const Request& req) const;
  // Returns true iff the request targets an answers_later route (an exact-path lookup).
  bool answers_later(const Request& req) const;

  // Sets the request's client address once (remote_ip; the TCP peer moves to peer_ip), then finds
  // the route and runs it; answers 404/405/OPTIONS itself.
  Response dispatch(Request& req) const;

 private:
  struct Compiled {
    std::vector<std::string> segments;  // "{name}" for a parameter
    std::size_t route;
  };
  // `segments` is the request path already split (once per request, not once per route).
  bool match(const Compiled& c, const std::vector<std::string>& segments, Fields& params) const;
  // Adds the CORS headers for a request from `origin` ("" when none) to a route of `s`.
  void apply_cors(std::string_view origin, Surface s, Response& res) const;
  // The answer to a path whose routes (`candidates`) have no handler for the request's method: the
  // OPTIONS answer (Allow, CORS preflight), else 405 with Allow.
  Response other_method(const Request& req, const std::vector<std::size_t>& candidates) const;
  // Applies the route's policy; fills req.principal. An error is the response to send.
  Status authorize(Request& req, const Access& access) const;

  std::map<Surface, std::string> prefixes_;
  std::map<Surface, CorsPolicy> cors_;
  std::map<Auth, Authenticator> authenticators_;
  std::map<Surface, std::string> sign_in_pages_;
  TrustedProxies proxies_;
  std::vector<Route> routes_;
  std::vector<Compiled> compiled_;
  std::set<std::string, std::less<>> non_blocking_paths_;
  std::set<std::string, std::less<>> answers_later_paths_;
};

}  // namespace sika::web
