#include "web/csrf.hpp"

#include "core/crypto.hpp"
#include "core/random.hpp"
#include "web/html.hpp"

namespace sika::web {

Csrf::Csrf(std::string_view secret, std::string_view purpose) : key_(crypto::hmac_sha256(secret, purpose)) {}

std::string Csrf::issue(std::string_view bound) const { return base64url_encode(crypto::hmac_sha256(key_, bound)); }

bool Csrf::check(std::string_view bound, std::string_view presented) const {
  return !bound.empty() && !presented.empty() && crypto::constant_time_equal(issue(bound), presented);
}

std::string Csrf::field_html(std::string_view token) {
  return "<input type=\"hidden\" name=\"csrf\" value=\"" + html::escape(token) + "\">";
}

std::string Csrf::presented(const Request& req) {
  if (auto h = req.header("x-csrf-token"); !h.empty()) return std::string(h);
  if (req.content_type() != "application/x-www-form-urlencoded") return {};
  auto fields = parse_form(req.body);
  return fields ? field_value(*fields, "csrf") : std::string();
}

}  // namespace sika::web
