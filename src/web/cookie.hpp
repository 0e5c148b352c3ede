#pragma once
// Cookies of the server-rendered pages: reading one from a request and writing one, with all its
// attributes, in one place.
#include <cstdint>
#include <string>
#include <string_view>

#include "web/message.hpp"

namespace sika::web {

// The value of cookie `name` in the request's Cookie header(s), or "" when absent.
std::string cookie(const Request& req, std::string_view name);

enum class SameSite { lax, strict };

// A Set-Cookie header's value. Always HttpOnly: no page script reads a cookie.
struct CookieSpec {
  std::string_view name;
  std::string_view value;  // "" with max_age 0 removes the cookie
  std::string_view path = "/";
  std::int64_t max_age = -1;  // seconds; -1 leaves Max-Age out (a browser-session cookie)
  SameSite same_site = SameSite::lax;
  bool secure = false;
};

// "name=value; Path=…; Max-Age=…; HttpOnly; SameSite=…[; Secure]".
std::string set_cookie_value(const CookieSpec& spec);
// Appends the Set-Cookie header of `spec` to `res` (a response may set several cookies).
void set_cookie(Response& res, const CookieSpec& spec);

}  // namespace sika::web
