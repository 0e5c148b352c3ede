#pragma once
// What the dashboard's page files share: the caller of a request, texts in two languages and
// small rendering helpers. Not part of the component's interface.
#include <optional>
#include <string>
#include <string_view>

#include "core/i18n.hpp"
#include "core/reason.hpp"
#include "dashboard/service.hpp"
#include "web/cookie.hpp"
#include "web/csrf.hpp"
#include "web/html.hpp"

namespace sika::dashboard {

struct Service::Ctx {
  Session session;
  web::Principal principal;
  i18n::Locale locale = i18n::Locale::fr;
  std::string zone = "UTC";  // the time zone of the pages' times: the merchant's (operators: UTC)

  bool fr() const { return locale == i18n::Locale::fr; }
  bool is_operator() const { return principal.role == web::Role::operator_; }
  std::optional<std::int64_t> merchant_id() const {
    return is_operator() ? std::nullopt : std::optional<std::int64_t>(principal.merchant_id);
  }
  // A hidden field carrying the session's CSRF token, for every form.
  std::string csrf_field() const { return web::Csrf::field_html(session.csrf); }
};

// A 403 error for a viewer (or anyone) trying a change their role does not allow: {"role": the
// text of `why`, "error": "access_denied"}.
Error not_allowed(Reason why);
// The form fields of a request body (application/x-www-form-urlencoded), or the 400/415 error.
Result<web::Fields> form_of(const web::Request& req);
// The Replay button of a webhook delivery: a form posting its event and endpoint to `action`.
std::string replay_form(const Service::Ctx& c, const std::string& action, std::string_view event_id,
                        std::string_view endpoint_id);
// The sandbox tool on a PENDING sandbox collection's page: a form posting the operator's answer
// to force (success or a failure reason) to `action`.
std::string force_form(const Service::Ctx& c, const std::string& action);
// The `before` cursor of a keyset page (none on the first page); 400 naming `before` when it is
// not a whole number.
Result<std::optional<std::int64_t>> before_cursor(const web::Request& req);
// The link to the next page of a list: "?" + `query` (the cursor and the filters), escaped.
std::string next_page_link(const Service::Ctx& c, const std::string& query);
// A status as a badge ("COMPLETED", "ACTIVE"): escaped, with the status as its class.
std::string badge(std::string_view status);
// "2026-11-22 18:20" in `zone` (core/time_zone.hpp; the page names the zone in its menu).
std::string when(std::int64_t epoch_ms, std::string_view zone = "UTC");

}  // namespace sika::dashboard
