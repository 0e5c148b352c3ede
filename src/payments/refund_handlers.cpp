// The gateway handlers of refunds (docs/refunds.md): each reads its input, calls one operation of
// the Service (refunds.cpp) and answers with the envelope.
#include <boost/json.hpp>

#include "payments/intent.hpp"
#include "payments/refund_store.hpp"
#include "payments/service.hpp"
#include "web/acting.hpp"
#include "web/envelope.hpp"

namespace sika::payments {

namespace bj = boost::json;

namespace {
web::Response answer(const web::Request& req, const Result<Refund>& r, std::string_view message) {
  if (!r) return web::error(req, r.error());
  return web::ok(req, to_record(*r), {}, message);
}
}  // namespace

Result<web::Response> Service::create_refund(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  SIKA_ASSIGN_OR_RETURN(auto body, web::body_object(req));
  json::FieldErrors errors;
  RefundRequest request = parse_refund(body, errors);
  SIKA_TRY(errors.status());
  return answer(req, refund(request, acting), "submitted");
}

Result<web::Response> Service::refund_status(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  SIKA_ASSIGN_OR_RETURN(auto body, web::body_object(req));
  json::FieldErrors errors;
  refuse_unknown_fields(body, {"refund_reference"}, errors);
  auto reference = json::get_string(body, "refund_reference", errors, true);
  SIKA_TRY(errors.status());
  return answer(req, find_refund(acting, *reference), "refund_status");
}

Result<web::Response> Service::refunds(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  bj::object problems;
  web::Page page = web::parse_page(req, problems);
  tables::RefundFilter f;
  f.limit = page.limit;
  f.offset = page.offset();
  if (auto reference = req.query_param("transaction_reference")) f.transaction_reference = *reference;
  if (auto status = req.query_param("status")) {
    if (auto parsed = parse_refund_status(*status))
      f.status = *parsed;
    else
      problems["status"] = "must be PENDING, PROCESSING, COMPLETED or FAILED";
  }
  if (!problems.empty()) return empty_data(std::move(problems));
  SIKA_ASSIGN_OR_RETURN(auto found, list_refunds(acting, f));
  bj::array data;
  for (const auto& r : found.first) data.push_back(to_record(r));
  return web::ok(req, std::move(data), web::pagination(page, found.second));
}

}  // namespace sika::payments
