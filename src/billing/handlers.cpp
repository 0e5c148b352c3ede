// The gateway's subscription handlers (bearer scope payments): each reads and checks its
// request, calls one operation of the service and answers with the spec's envelope. The mandate
// handlers and the customer's mandate page are in mandate.cpp.
#include <boost/json.hpp>

#include "billing/service.hpp"
#include "core/reason.hpp"
#include "web/acting.hpp"
#include "web/envelope.hpp"

namespace sika::billing {

namespace bj = boost::json;

Result<web::Response> Service::subscribe(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  SIKA_ASSIGN_OR_RETURN(auto body, web::body_object(req));
  json::FieldErrors errors;
  NewSubscription n = parse_subscribe(body, req.header("x-idempotency-key"), now(), errors);
  SIKA_ASSIGN_OR_RETURN(auto created, create(acting, std::move(n), std::move(errors)));
  bj::object data = detail_json(created.subscription, created.payments, true);
  if (!created.payment_url.empty()) data["payment_url"] = created.payment_url;
  if (created.replayed) return web::ok(req, std::move(data));
  return web::ok(req, std::move(data), {}, "created", 201);
}

Result<web::Response> Service::list(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  bj::object problems;
  web::Page page = web::parse_page(req, problems);
  tables::ListFilter f;
  f.limit = page.limit;
  f.offset = page.offset();
  f.status = web::choice_param(req, "status", {kActive, kSuspended, kCancelled, kExpired}, problems);
  if (auto e = req.query_param("customer_email")) {
    if (e->empty() || e->size() > 254)
      problems["customer_email"] = "must be an e-mail address";
    else
      f.customer_email = *e;
  }
  if (!problems.empty()) return empty_data(std::move(problems));
  SIKA_ASSIGN_OR_RETURN(auto found, list_subscriptions(acting, f));
  bj::array data;
  for (const auto& s : found.first) data.push_back(summary_json(s));
  return web::ok(req, std::move(data), web::pagination(page, found.second));
}

Result<web::Response> Service::detail(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  bool merchant_view = true;
  if (auto view = req.query_param("for")) {
    if (*view == "desc")
      merchant_view = false;
    else if (*view != "merchant")
      return empty_data(bj::object{{"for", "must be merchant or desc"}});
  }
  SIKA_ASSIGN_OR_RETURN(auto s, find(acting, req.path_param("reference")));
  SIKA_ASSIGN_OR_RETURN(auto latest, list_payments(s, kLatestPayments, 0));
  SIKA_ASSIGN_OR_RETURN(auto mandate, mandate_of(s));
  return web::ok(req, detail_json(s, latest.first, merchant_view, mandate.has_value() ? &*mandate : nullptr));
}

Result<web::Response> Service::move_handler(web::Request& req, Move m) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  bj::object empty;
  MoveRequest request;
  if (!req.body.empty()) {
    SIKA_ASSIGN_OR_RETURN(auto body, web::body_object(req));
    empty = std::move(body);
  }
  json::FieldErrors errors;
  request = parse_move(empty, m == Move::cancel, errors);
  SIKA_TRY(errors.status());
  SIKA_ASSIGN_OR_RETURN(auto moved, apply(acting, req.path_param("reference"), m, request));
  return web::ok(req, summary_json(moved));
}

Result<web::Response> Service::cancel(web::Request& req) { return move_handler(req, Move::cancel); }
Result<web::Response> Service::suspend(web::Request& req) { return move_handler(req, Move::suspend); }
Result<web::Response> Service::reactivate(web::Request& req) { return move_handler(req, Move::reactivate); }

Result<web::Response> Service::payments(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  bj::object problems;
  web::Page page = web::parse_page(req, problems);
  if (!problems.empty()) return empty_data(std::move(problems));
  SIKA_ASSIGN_OR_RETURN(auto s, find(acting, req.path_param("reference")));
  SIKA_ASSIGN_OR_RETURN(auto found, list_payments(s, page.limit, page.offset()));
  bj::array data;
  for (const auto& p : found.first) data.push_back(payment_json(p));
  return web::ok(req, std::move(data), web::pagination(page, found.second));
}

Result<web::Response> Service::advance_clock(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  SIKA_ASSIGN_OR_RETURN(auto body, web::body_object(req));
  json::FieldErrors errors;
  payments::refuse_unknown_fields(body, {"days", "seconds", "payer_phone_number"}, errors);
  std::optional<std::string> payer = json::get_string(body, "payer_phone_number", errors);
  if (payer &&
      (payer->size() < 8 || payer->size() > 15 || payer->find_first_not_of("0123456789") != std::string::npos)) {
    errors.add("payer_phone_number", Problem(Reason::international_digits, {{"example", "237690000001"}}));
    payer.reset();
  }
  auto days = json::get_int(body, "days", errors);
  auto seconds = json::get_int(body, "seconds", errors);
  std::int64_t delta = 0;
  if (days.has_value() == seconds.has_value()) {
    if (errors.empty()) errors.add("days", Reason::days_or_seconds);
  } else {
    const std::int64_t max_days = options_.max_clock_advance_ms / kDayMs;
    if (days && (*days < 1 || *days > max_days))
      errors.add("days", Problem(Reason::integer_one_to, {{"max", std::to_string(max_days)}}));
    else if (seconds && (*seconds < 1 || *seconds > options_.max_clock_advance_ms / 1000))
      errors.add("seconds",
                 Problem(Reason::integer_one_to, {{"max", std::to_string(options_.max_clock_advance_ms / 1000)}}));
    else
      delta = days ? *days * kDayMs : *seconds * 1000;
  }
  SIKA_TRY(errors.status());
  SIKA_ASSIGN_OR_RETURN(auto s, advance(acting, req.path_param("reference"), delta, payer));
  SIKA_ASSIGN_OR_RETURN(auto latest, list_payments(s, kLatestPayments, 0));
  SIKA_ASSIGN_OR_RETURN(auto mandate, mandate_of(s));
  return web::ok(req, detail_json(s, latest.first, true, mandate.has_value() ? &*mandate : nullptr));
}

}  // namespace sika::billing
