#include "web/router.hpp"

#include <algorithm>
#include <stdexcept>

#include "web/envelope.hpp"

namespace sika::web {

std::string_view surface_name(Surface s) {
  switch (s) {
    case Surface::system: return "system";
    case Surface::gateway: return "gateway";
    case Surface::identity: return "identity";
    case Surface::checkout: return "checkout";
    case Surface::link: return "link";
    case Surface::dashboard: return "dashboard";
  }
  return "unknown";
}

namespace {
std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < path.size()) {
    if (path[pos] == '/') {
      ++pos;
      continue;
    }
    std::size_t end = path.find('/', pos);
    if (end == std::string_view::npos) end = path.size();
    out.emplace_back(path.substr(pos, end - pos));
    pos = end;
  }
  return out;
}
}  // namespace

void Router::mount(Surface s, std::string prefix) {
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  prefixes_[s] = std::move(prefix);
}

void Router::cors(Surface s, CorsPolicy policy) { cors_[s] = std::move(policy); }

std::string_view Router::prefix(Surface s) const {
  auto it = prefixes_.find(s);
  return it == prefixes_.end() ? std::string_view{} : std::string_view{it->second};
}

std::string_view auth_name(Auth auth) {
  switch (auth) {
    case Auth::unset: return "unset";
    case Auth::open: return "open";
    case Auth::client: return "client";
    case Auth::user_token: return "user_token";
    case Auth::signed_request: return "signed_request";
    case Auth::bearer: return "bearer";
    case Auth::merchant_api_key: return "merchant_api_key";
    case Auth::link_api_key: return "link_api_key";
    case Auth::merchant_key_or_bearer: return "merchant_key_or_bearer";
    case Auth::dashboard_session: return "dashboard_session";
    case Auth::operator_session: return "operator_session";
  }
  return "unset";
}

void Router::authenticate_with(Auth auth, Authenticator authenticator) {
  authenticators_[auth] = std::move(authenticator);
}

void Router::sign_in_page(Surface s, std::string url) { sign_in_pages_[s] = std::move(url); }

Status Router::authorize(Request& req, const Access& access) const {
  switch (access.auth) {
    case Auth::open:
    case Auth::client:
    case Auth::user_token:
    case Auth::signed_request: return {};
    default: break;
  }
  auto it = authenticators_.find(access.auth);
  if (it == authenticators_.end() || !it->second)
    return unavailable(boost::json::string(std::string(auth_name(access.auth)) + " authentication is not configured"));
  SIKA_ASSIGN_OR_RETURN(Principal principal, it->second(req, access));
  if ((access.auth == Auth::bearer || access.auth == Auth::merchant_key_or_bearer) && !access.scope.empty() &&
      !principal.has_scope(access.scope)) {
    boost::json::object details;
    details["error"] = "insufficient_scope";
    details["required_scope"] = access.scope;
    return forbidden(std::move(details));
  }
  if (access.auth == Auth::operator_session && principal.role != Role::operator_)
    return not_found(boost::json::string("no route for " + req.path));
  req.principal = std::move(principal);
  return {};
}

void Router::add(Route route) {
  if (route.access.auth == Auth::unset)
    throw std::invalid_argument(route.method + " " + route.pattern + " states no auth policy");
  std::string full = std::string(prefix(route.surface)) + route.pattern;
  const bool parameterless = full.find('{') == std::string::npos;
  if (route.non_blocking && !(parameterless && route.method == "GET"))
    throw std::invalid_argument(route.method + " " + route.pattern +
                                ": only a parameterless GET route can be non_blocking");
  if (route.answers_later && !(parameterless && route.method == "POST"))
    throw std::invalid_argument(route.method + " " + route.pattern +
                                ": only a parameterless POST route can answer later");
  if (route.non_blocking) non_blocking_paths_.insert(full);
  if (route.answers_later) answers_later_paths_.insert(full);
  compiled_.push_back(Compiled{split_path(full), routes_.size()});
  routes_.push_back(std::move(route));
}

bool Router::match(const Compiled& c, const std::vector<std::string>& segs, Fields& params) const {
  if (segs.size() != c.segments.size()) return false;
  Fields found;
  for (std::size_t i = 0; i < segs.size(); ++i) {
    const std::string& p = c.segments[i];
    if (p.size() > 2 && p.front() == '{' && p.back() == '}') {
      found.emplace_back(p.substr(1, p.size() - 2), segs[i]);
    } else if (p != segs[i]) {
      return false;
    }
  }
  params = std::move(found);
  return true;
}

void Router::apply_cors(std::string_view origin, Surface s, Response& res) const {
  auto it = cors_.find(s);
  if (it == cors_.end() || !it->second.enabled) return;
  if (origin.empty()) return;
  const auto& origins = it->second.origins;
  bool any = std::find(origins.begin(), origins.end(), "*") != origins.end();
  if (!any && std::find(origins.begin(), origins.end(), origin) == origins.end()) return;
  res.set("Access-Control-Allow-Origin", any ? "*" : std::string(origin));
  if (!any) res.set("Vary", "Origin");
  res.set("Access-Control-Expose-Headers", "X-Request-Id");
}

bool Router::serves(Surface s) const {
  return std::any_of(routes_.begin(), routes_.end(), [s](const Route& r) { return r.surface == s; });
}

bool Router::answers_later(const Request& req) const {
  return req.method == "POST" && answers_later_paths_.count(req.path) > 0;
}

bool Router::is_non_blocking(const Request& req) const {
  return (req.method == "GET" || req.method == "HEAD") && non_blocking_paths_.count(req.path) > 0;
}

Response Router::dispatch(Request& req) const {
  if (req.peer_ip.empty()) {
    req.peer_ip = req.remote_ip;
    if (!proxies_.empty()) req.remote_ip = proxies_.client_address(req.peer_ip, req);
  }
  std::vector<std::size_t> candidates;
  std::vector<Fields> params_of;
  const std::vector<std::string> segments = split_path(req.path);
  for (const auto& c : compiled_) {
    Fields params;
    if (match(c, segments, params)) {
      candidates.push_back(c.route);
      params_of.push_back(std::move(params));
    }
  }
  if (candidates.empty()) return error(req, not_found(boost::json::string("no route for " + req.path)));

  std::string lookup = req.method == "HEAD" ? "GET" : req.method;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const Route& r = routes_[candidates[i]];
    if (r.method == lookup) {
      req.path_params = std::move(params_of[i]);
      req.route_id = static_cast<int>(candidates[i]);
      Status allowed = authorize(req, r.access);
      if (!allowed && is_handler_thread_needed(allowed.error())) {
        // The authenticator must block: the whole request again where it may (web/message.hpp).
        if (req.offload_to) return run_blocking(req, [this](Request& again) { return dispatch(again); });
        allowed = internal_error(boost::json::string("an authenticator asked for a handler thread on one"));
      }
      if (!allowed && allowed.error().is(ErrorKind::unauthenticated) && lookup == "GET" &&
          (r.access.auth == Auth::dashboard_session || r.access.auth == Auth::operator_session)) {
        if (auto page = sign_in_pages_.find(r.surface); page != sign_in_pages_.end())
          return Response::redirect(page->second, 303);
      }
      if (allowed && req.reply_to && !req.header("origin").empty()) {
        // A later answer gets the CORS headers this request would get now: answers_later routes,
        // and any handler that takes its reply (web::answer_later) on a handler thread.
        req.reply_to = [this, to = std::move(req.reply_to), surface = r.surface,
                        origin = std::string(req.header("origin"))](Response res, int route) {
          apply_cors(origin, surface, res);
          to(std::move(res), route);
        };
      }
      Response res = allowed     ? respond(req, r.handler(req))
                     : r.refusal ? r.refusal(req, allowed.error())
                                 : error(req, allowed.error());
      if (!res.deferred) apply_cors(req.header("origin"), r.surface, res);
      return res;
    }
  }

  return other_method(req, candidates);
}

Response Router::other_method(const Request& req, const std::vector<std::size_t>& candidates) const {
  std::vector<std::string> allowed;
  for (std::size_t idx : candidates) {
    const std::string& m = routes_[idx].method;
    if (std::find(allowed.begin(), allowed.end(), m) == allowed.end()) allowed.push_back(m);
    if (m == "GET" && std::find(allowed.begin(), allowed.end(), "HEAD") == allowed.end()) allowed.push_back("HEAD");
  }
  allowed.push_back("OPTIONS");
  std::string allow;
  for (const auto& m : allowed) allow += (allow.empty() ? "" : ", ") + m;
  Surface surface = routes_[candidates.front()].surface;

  if (req.method == "OPTIONS") {
    Response res;
    res.status = 204;
    res.set("Allow", allow);
    auto it = cors_.find(surface);
    if (it != cors_.end() && it->second.enabled && !req.header("access-control-request-method").empty()) {
      apply_cors(req.header("origin"), surface, res);
      if (!res.get("Access-Control-Allow-Origin").empty()) {
        res.set("Access-Control-Allow-Methods", allow);
        res.set("Access-Control-Allow-Headers",
                "Content-Type, Authorization, x-sp-auth-token, x-api-key, X-Request-Id, X-Idempotency-Key, "
                "Accept-Language");
        res.set("Access-Control-Max-Age", "600");
      }
    }
    return res;
  }
  boost::json::object details;
  details["method"] = req.method;
  details["allowed"] = allow;
  Response res = error(req, make_error(ErrorKind::method_not_allowed, "method_not_allowed", std::move(details)));
  res.set("Allow", allow);
  apply_cors(req.header("origin"), surface, res);
  return res;
}

}  // namespace sika::web
