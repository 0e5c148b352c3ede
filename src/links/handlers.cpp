// The gateway handlers of payment links: each reads its request, calls one operation of the
// Service (service.cpp) and answers with the envelope. The public page is in page.cpp.
#include "links/service.hpp"

#include <boost/json.hpp>

#include "core/crypto.hpp"
#include "core/money.hpp"
#include "core/random.hpp"
#include "core/time.hpp"
#include "links/qr.hpp"
#include "merchant/merchant.hpp"
#include "payments/sandbox.hpp"
#include "payments/store.hpp"
#include "web/acting.hpp"
#include "web/envelope.hpp"

namespace sika::links {

namespace bj = boost::json;

// ---- handlers ---------------------------------------------------------------------------------

namespace {

web::Response link_reply(const web::Request& req, const Service& svc, const Result<Link>& link,
                         std::string_view message = "ok", int status = 200) {
  if (!link) return web::error(req, link.error());
  return web::ok(req, to_json(*link, svc.payment_url(*link), svc.now()), {}, message, status);
}

}  // namespace

Result<web::Response> Service::create(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  SIKA_ASSIGN_OR_RETURN(auto body, web::body_object(req));
  json::FieldErrors errors;
  NewLink n = parse_new_link(body, now(), errors);
  return link_reply(req, *this, create_link(acting, n, std::move(errors)), "created", 201);
}

Result<web::Response> Service::list(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  bj::object problems;
  web::Page page = web::parse_page(req, problems);
  tables::ListFilter f;
  f.limit = page.limit;
  f.offset = page.offset();
  f.status = web::choice_param(req, "status", {kActive, kDisabled, kExpired}, problems);
  for (const char* key : {"from", "to"}) {
    auto v = req.query_param(key);
    if (!v) continue;
    auto at = parse_iso8601(*v);
    if (!at)
      problems[key] = "must be an ISO 8601 date-time";
    else
      (std::string_view(key) == "from" ? f.from : f.to) = *at;
  }
  if (!problems.empty()) return empty_data(std::move(problems));
  SIKA_ASSIGN_OR_RETURN(auto found, list_links(acting, f));
  bj::array data;
  for (const auto& l : found.first) data.push_back(to_json(l, payment_url(l), now()));
  return web::ok(req, std::move(data), web::pagination(page, found.second));
}

Result<web::Response> Service::show(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  return link_reply(req, *this, find(acting, req.path_param("reference")));
}

Result<web::Response> Service::update(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  SIKA_ASSIGN_OR_RETURN(auto body, web::body_object(req));
  json::FieldErrors errors;
  LinkUpdate u = parse_update(body, now(), errors);
  SIKA_TRY(errors.status());
  return link_reply(req, *this, update_link(acting, req.path_param("reference"), u));
}

Result<web::Response> Service::disable(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  return link_reply(req, *this, set_status(acting, req.path_param("reference"), kDisabled));
}

Result<web::Response> Service::enable(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  return link_reply(req, *this, set_status(acting, req.path_param("reference"), kActive));
}

Result<web::Response> Service::pay(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(auto body, web::body_object(req));
  json::FieldErrors errors;
  PayRequest p = parse_pay(body, errors, payments_.otp_code_length());
  SIKA_TRY(errors.status());
  SIKA_TRY(throttle(req, req.path_param("shortCode")));
  SIKA_ASSIGN_OR_RETURN(auto tx, pay_link(req.path_param("shortCode"), p));
  return web::ok(req, payments::to_record(tx), {}, "submitted");
}

Result<web::Response> Service::qr_svg(web::Request& req) { return qr_image(req, false); }
Result<web::Response> Service::qr_png(web::Request& req) { return qr_image(req, true); }

Result<web::Response> Service::qr_image(web::Request& req, bool png) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  int module_px = 8;
  if (auto size = req.query_param("size")) {
    bool digits = !size->empty() && size->size() <= 2 && size->find_first_not_of("0123456789") == std::string::npos;
    module_px = digits ? std::stoi(*size) : 0;
    if (module_px < 2 || module_px > 32)
      return empty_data(bj::object{{"size", "must be an integer from 2 to 32 (pixels per module)"}});
  }
  SIKA_ASSIGN_OR_RETURN(auto link, find(acting, req.path_param("reference")));
  SIKA_ASSIGN_OR_RETURN(
      auto image, png ? links::qr_png(payment_url(link), module_px) : links::qr_svg(payment_url(link), module_px));
  web::Response res = web::Response::text(200, std::move(image), png ? "image/png" : "image/svg+xml");
  res.set("Content-Disposition", "inline; filename=\"" + link.short_code + (png ? ".png\"" : ".svg\""));
  return res;
}

}  // namespace sika::links
