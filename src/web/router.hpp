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

#include "web/message.hpp"

namespace sika::web {

enum class Surface { system, gateway, identity, checkout, link, dashboard };
std::string_view surface_name(Surface s);

using Handler = std::function<Response(Request&)>;

struct Route {
  Surface surface;
  std::string method;    // "GET", "POST", ...
  std::string pattern;   // relative to the surface's mount, e.g. "/pay/{shortCode}/pay"
  Handler handler;
  std::string scope;     // required OAuth scope on the gateway ("" = none or not a JWT route)
  std::string summary;   // one line, for the route listing
  // True for handlers that never block (no database, no I/O): the server may run them on an
  // I/O thread. Only for parameterless GET routes.
  bool non_blocking = false;
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
  std::string_view prefix(Surface s) const;

  void add(Route route);
  const std::vector<Route>& routes() const { return routes_; }

  // Returns true iff the request targets a non_blocking route (an exact-path lookup).
  bool is_non_blocking(const Request& req) const;

  // Finds the route and runs it; answers 404/405/OPTIONS itself.
  Response dispatch(Request& req) const;

 private:
  struct Compiled {
    std::vector<std::string> segments;  // "{name}" for a parameter
    std::size_t route;
  };
  bool match(const Compiled& c, std::string_view path, Fields& params) const;
  void apply_cors(const Request& req, Surface s, Response& res) const;

  std::map<Surface, std::string> prefixes_;
  std::map<Surface, CorsPolicy> cors_;
  std::vector<Route> routes_;
  std::vector<Compiled> compiled_;
  std::set<std::string, std::less<>> non_blocking_paths_;
};

}  // namespace sika::web
