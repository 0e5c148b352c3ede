#include "payments/connector.hpp"

#include <boost/json.hpp>

namespace sika::payments {

Status Connector::request_refund(const PaymentOrder&) {
  return unavailable(boost::json::object{{"provider", "this operator's connector does not carry refunds"}});
}

Status Connector::prompt_again(const PaymentOrder&) {
  return unavailable(boost::json::object{{"provider", "this operator's connector cannot prompt the customer again"}});
}

// What an error of Connector::request_collection / request_payout says about the order, by its
// kind only, never its text (docs/payments.md, "A submission whose outcome is unknown"). Refused:
// the operator answered and refused it (a connector maps an operator's 4xx with a known refusal
// code to invalid, not_found, forbidden, unauthenticated or rate_limited), or it was refused before
// leaving (web::HttpClient's blocked_address, kind forbidden). Anything else may have reached the
// operator: upstream_timeout (connect or exchange), upstream_failed (the client's upstream_error
// covers a refused connection and one reset after the request was written alike), an operator's
// 5xx (unavailable, upstream_failed), conflict (the operator already holds the reference),
// internal, retryable.
bool is_refusal(const Error& e) {
  switch (e.kind) {
    case ErrorKind::invalid:
    case ErrorKind::unauthenticated:
    case ErrorKind::forbidden:
    case ErrorKind::not_found:
    case ErrorKind::method_not_allowed:
    case ErrorKind::payload_too_large:
    case ErrorKind::headers_too_large:
    case ErrorKind::unsupported_media_type:
    case ErrorKind::rate_limited: return true;
    case ErrorKind::conflict:
    case ErrorKind::retryable:
    case ErrorKind::unavailable:
    case ErrorKind::upstream_failed:
    case ErrorKind::upstream_timeout:
    case ErrorKind::internal: return false;
  }
  return false;
}

OperatorCall::Outcome http_outcome(const Result<web::ClientResponse>& res) {
  using O = OperatorCall::Outcome;
  if (!res) return res.error().is(ErrorKind::upstream_timeout) ? O::timeout : O::network;
  const int s = res->status;
  if ((s >= 200 && s < 300) || s == 404 || s == 409) return O::ok;
  if (s >= 400 && s < 500 && s != 429) return O::refused;
  return O::failed;
}

}  // namespace sika::payments
