// The hosted checkout's API: the merchant's POST that opens a session, and the authentication of
// merchant API keys. The pages are in page.cpp, the operations in service.cpp.
#include "checkout/service.hpp"

#include <algorithm>
#include <boost/json.hpp>

#include "catalog/fees.hpp"
#include "catalog/fx.hpp"
#include "checkout/store.hpp"
#include "core/random.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "payments/store.hpp"
#include "web/envelope.hpp"

namespace sika::checkout {

namespace bj = boost::json;

// ---- the POST ------------------------------------------------------------------------------

namespace {

bool is_form(const web::Request& req) { return req.content_type() == "application/x-www-form-urlencoded"; }

// The payload as a JSON object, form fields turned into the same shape.
Result<bj::object> payload(const web::Request& req, json::FieldErrors& errors) {
  SIKA_ASSIGN_OR_RETURN(bj::object body, web::body_object(req, /*allow_form=*/true));
  if (is_form(req)) return form_to_object(body, errors);
  return body;
}

}  // namespace

Result<web::Principal> Service::authenticate(web::Request& req) {
  json::FieldErrors ignored;
  auto body = payload(req, ignored);
  if (!body) return body.take_error();
  const bj::value* key = body->if_contains("apiKey");
  if (!key || !key->is_string() || key->get_string().empty())
    return with_problem(unauthorized(), "apiKey", Reason::api_key_required);
  std::optional<merchant::Merchant> m;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(
        m, merchant::authenticate_key(c, options_.pepper, key->get_string(), merchant::KeyKind::merchant));
    return {};
  }));
  if (!m) return with_problem(unauthorized(), "apiKey", Reason::api_key_inactive);
  return principal_of(*m);
}

Result<web::Principal> Service::authenticate_header(web::Request& req) {
  // The address's budget first: a wrong key counts like any request, so keys cannot be guessed
  // faster than the limit.
  if (options_.limiter) {
    SIKA_ASSIGN_OR_RETURN(auto d, options_.limiter->hit("merchant-api:ip:" + req.remote_ip, options_.api_per_address));
    if (!d.allowed) return limits::refusal(d, "requests per hour per address with a merchant API key");
  }
  std::string_view key = req.header("x-api-key");
  if (key.empty()) return with_problem(unauthorized(), "x-api-key", Reason::api_key_required);
  std::optional<merchant::Merchant> m;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(m, merchant::authenticate_key(c, options_.pepper, key, merchant::KeyKind::merchant));
    return {};
  }));
  if (!m) return with_problem(unauthorized(), "x-api-key", Reason::api_key_inactive);
  return principal_of(*m);
}

web::Response Service::create(web::Request& req) {
  auto caller = web::merchant_caller(req);
  if (!caller) return refusal(req, caller.error());
  json::FieldErrors errors;
  auto body = payload(req, errors);
  if (!body) return refusal(req, body.error());
  NewSession n = parse_new_session(*body, errors);
  auto m = merchant_of((*caller)->merchant_id);
  if (!m) return refusal(req, m.error());
  auto opened = open(*m, n, std::move(errors));
  if (!opened) return refusal(req, opened.error());
  if (is_form(req)) return web::Response::redirect(page_url(opened->session), 303);
  return web::ok(req, to_json(opened->session, page_url(opened->session), now()), {},
                 opened->created ? "created" : "ok", opened->created ? 201 : 200);
}

}  // namespace sika::checkout
