#pragma once
// The one CSRF token scheme of the pages: a token is the HMAC-SHA256 (base64url, 43 characters)
// of what the form is bound to (a session token, a random cookie) under a server key derived
// from the server's secret and the purpose, so that tokens of one surface are worthless on
// another. A form that changes state carries `issue(bound)`; its POST passes `check`.
#include <string>
#include <string_view>

#include "web/message.hpp"

namespace sika::web {

class Csrf {
 public:
  // `secret`: the server's secret (pepper); `purpose`: a label naming the surface, e.g.
  // "sika:dashboard:csrf:v1".
  Csrf(std::string_view secret, std::string_view purpose);

  // The token of forms bound to `bound` (a session token or a cookie's random value).
  std::string issue(std::string_view bound) const;
  // True iff `presented` is the token of `bound`; compared in constant time. An empty `bound` or
  // `presented` never passes.
  bool check(std::string_view bound, std::string_view presented) const;

  // The hidden form field carrying `token`: <input type="hidden" name="csrf" value="…">.
  static std::string field_html(std::string_view token);
  // The token a request presents: header x-csrf-token, else the form field `csrf` of a
  // application/x-www-form-urlencoded body; "" when neither.
  static std::string presented(const Request& req);

 private:
  std::string key_;
};

}  // namespace sika::web
