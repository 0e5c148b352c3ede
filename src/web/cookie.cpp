#include "web/cookie.hpp"

namespace sika::web {

std::string cookie(const Request& req, std::string_view name) {
  for (const auto& [k, v] : req.headers) {
    if (k != "cookie") continue;
    std::string_view rest = v;
    while (!rest.empty()) {
      const std::size_t semi = rest.find(';');
      std::string_view part = rest.substr(0, semi);
      while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
      while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
      const std::size_t eq = part.find('=');
      if (eq != std::string_view::npos && part.substr(0, eq) == name) return std::string(part.substr(eq + 1));
      if (semi == std::string_view::npos) break;
      rest.remove_prefix(semi + 1);
    }
  }
  return {};
}

std::string set_cookie_value(const CookieSpec& spec) {
  std::string c(spec.name);
  c += '=';
  c += spec.value;
  c += "; Path=";
  c += spec.path;
  if (spec.max_age >= 0) c += "; Max-Age=" + std::to_string(spec.max_age);
  c += spec.same_site == SameSite::strict ? "; HttpOnly; SameSite=Strict" : "; HttpOnly; SameSite=Lax";
  if (spec.secure) c += "; Secure";
  return c;
}

void set_cookie(Response& res, const CookieSpec& spec) {
  res.headers.emplace_back("Set-Cookie", set_cookie_value(spec));
}

}  // namespace sika::web
