#include "payments/wave.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>

#include "core/json.hpp"
#include "core/time.hpp"
#include "payments/intent.hpp"

namespace sika::payments {

namespace bj = boost::json;

namespace {

constexpr std::int64_t kEventMemoryMs = 2 * wave::kSignatureToleranceSeconds * 1000;

// The error of a POST Wave refused for good, by kind: a credential problem unauthenticated /
// forbidden, an unknown recipient not_found (INVALID_ACCOUNT), anything else invalid.
Error refusal(int status, const std::string& code) {
  return operator_refusal(status, code,
                          status != 401 && status != 403 && wave::failure_reason(code) == "INVALID_ACCOUNT");
}

// The error of a POST Wave did not accept: a definite refusal, or an answer that decides nothing.
Error not_accepted(const web::ClientResponse& res) {
  const std::string code = wave::error_code(res.body);
  return wave::definite_refusal(res.status) ? refusal(res.status, code) : operator_unknown_outcome(res.status, code);
}

Error other_currency() {
  return bad_request("invalid_currency", bj::object{{"currency", "the operator's wallet carries " +
                                                                     std::string(wave::kCurrency) + " only"}});
}

// A call is reported with Wave's error code of an answer that is not a success, and the path
// without its query.
OperatorHttpOptions reported(OperatorHttpOptions h) {
  h.answer_code = [](const web::ClientResponse& r) {
    return r.status >= 400 ? wave::error_code(r.body) : std::string();
  };
  h.report_path = cut_query;
  return h;
}

Error unknown_reference() {
  return make_error(ErrorKind::not_found, "unknown_reference",
                    bj::object{{"provider_reference", "the operator has no order of this reference"}});
}

std::string query_escape(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

constexpr std::string_view kRefundState = "refund:";

}  // namespace

Wave::Wave(web::HttpClient& http, WaveOptions options)
    : options_(std::move(options)), http_(http, reported(http_options(options_))) {
  while (!options_.base_url.empty() && options_.base_url.back() == '/') options_.base_url.pop_back();
}

std::optional<Accepted> Wave::take_accepted(std::string_view provider_reference) {
  return accepted_.take(provider_reference);
}

Result<web::ClientResponse> Wave::call(web::ClientRequest req, const Exchange& what) {
  req.headers.emplace_back("Authorization", "Bearer " + options_.api_key);
  return http_.send(req, what);
}

Result<web::ClientResponse> Wave::post(const std::string& path, std::string body, const std::string& key,
                                       const Exchange& what) {
  web::ClientRequest req;
  req.method = "POST";
  req.url = options_.base_url + path;
  req.headers.emplace_back("Content-Type", "application/json");
  req.headers.emplace_back("idempotency-key", key);
  req.body = std::move(body);
  return resend(options_.attempts, options_.retry_pause_ms, [&]() -> Result<web::ClientResponse> {
    SIKA_ASSIGN_OR_RETURN(auto res, call(req, what));
    if (res.status < 500 && res.status != 429 && res.status != 409) return res;
    return operator_unknown_outcome(res.status, wave::error_code(res.body));  // 409: the same key still in progress
  });
}

Status Wave::request_collection(const PaymentOrder& order) {
  if (!serves(order.currency)) return other_currency();
  const Exchange what{"collection", order.provider_reference, ""};
  SIKA_ASSIGN_OR_RETURN(auto res, post("/v1/checkout/sessions", wave::checkout_body(order),
                                       wave::idempotency_key("checkout", order.provider_reference), what));
  if (res.status != 200 && res.status != 201) return not_accepted(res);
  auto session = wave::parse_session(res.body);
  if (!session) return operator_unknown_outcome(res.status, "unreadable session");  // accepted? recovery searches
  accepted_.keep(order.provider_reference, Accepted{session->wave_launch_url, session->id});
  return {};
}

Status Wave::request_payout(const PaymentOrder& order) {
  if (!serves(order.currency)) return other_currency();
  const Exchange what{"payout", order.provider_reference, ""};
  SIKA_ASSIGN_OR_RETURN(auto res, post("/v1/payout", wave::payout_body(order),
                                       wave::idempotency_key("payout", order.provider_reference), what));
  if (res.status != 200 && res.status != 201) return not_accepted(res);
  auto payout = wave::parse_payout(res.body);
  if (!payout) return operator_unknown_outcome(res.status, "unreadable payout");
  accepted_.keep(order.provider_reference, Accepted{"", payout->id});
  return {};
}

Status Wave::request_refund(const PaymentOrder& order) {
  const Exchange what{"refund", order.provider_reference, ""};
  SIKA_ASSIGN_OR_RETURN(auto session, find_session(order.refunded_reference, what));
  if (!session || session->checkout_status != "complete" || session->payment_status != "succeeded")
    return make_error(ErrorKind::invalid, "operator_refused",
                      bj::object{{"provider", "the operator holds no completed payment to refund"}});
  if (session->amount != wave::amount_text(order.amount, order.currency))
    return make_error(ErrorKind::invalid, "operator_refused",
                      bj::object{{"amount", "the operator refunds a whole payment only"}});
  SIKA_ASSIGN_OR_RETURN(auto res, post("/v1/checkout/sessions/" + session->id + "/refund", "{}",
                                       wave::idempotency_key("refund", order.provider_reference), what));
  if (res.status != 200 && res.status != 201) return not_accepted(res);
  accepted_.keep(order.provider_reference, Accepted{"", std::string(kRefundState) + session->id});
  return {};
}

Result<std::optional<wave::Session>> Wave::find_session(std::string_view client_reference, const Exchange& what) {
  web::ClientRequest req;
  req.method = "GET";
  req.url = options_.base_url + "/v1/checkout/sessions/search?client_reference=" + query_escape(client_reference);
  SIKA_ASSIGN_OR_RETURN(auto res, call(std::move(req), what));
  if (res.status == 429)
    return make_error(ErrorKind::rate_limited, "rate_limited",
                      bj::object{{"provider", "the operator limits queries; asked again later"}});
  if (res.status != 200) return operator_unknown_outcome(res.status, wave::error_code(res.body));
  return wave::pick_from_search(res.body, client_reference);
}

Result<OperatorStatus> Wave::session_query(const PaymentOrder& order) {
  const bool refund = order.operation == "REFUND";
  std::string id = order.operator_state;
  if (refund) {
    if (!id.starts_with(kRefundState)) return unknown_reference();
    id = id.substr(kRefundState.size());
  }
  const Exchange what{"status", order.provider_reference, id};
  std::optional<wave::Session> session;
  if (id.empty()) {
    SIKA_ASSIGN_OR_RETURN(session, find_session(order.provider_reference, what));
    if (!session) return unknown_reference();
  } else {
    web::ClientRequest req;
    req.method = "GET";
    req.url = options_.base_url + "/v1/checkout/sessions/" + id;
    SIKA_ASSIGN_OR_RETURN(auto res, call(std::move(req), what));
    if (res.status == 404) return unknown_reference();
    if (res.status == 429)
      return make_error(ErrorKind::rate_limited, "rate_limited",
                        bj::object{{"provider", "the operator limits queries; asked again later"}});
    if (res.status != 200) return operator_unknown_outcome(res.status, wave::error_code(res.body));
    SIKA_ASSIGN_OR_RETURN(session, wave::parse_session(res.body));
  }
  if (refund) {
    OperatorStatus out;
    if (session->payment_status == "refunded") out.state = OperatorStatus::State::succeeded;
    return out;
  }
  return wave::session_status(*session);
}

Result<OperatorStatus> Wave::payout_query(const PaymentOrder& order) {
  const Exchange what{"status", order.provider_reference, order.operator_state};
  web::ClientRequest req;
  req.method = "GET";
  req.url = order.operator_state.empty()
                ? options_.base_url + "/v1/payouts/search?client_reference=" + query_escape(order.provider_reference)
                : options_.base_url + "/v1/payout/" + order.operator_state;
  SIKA_ASSIGN_OR_RETURN(auto res, call(std::move(req), what));
  if (res.status == 404) return unknown_reference();
  if (res.status == 429)
    return make_error(ErrorKind::rate_limited, "rate_limited",
                      bj::object{{"provider", "the operator limits queries; asked again later"}});
  if (res.status != 200) return operator_unknown_outcome(res.status, wave::error_code(res.body));
  if (!order.operator_state.empty()) {
    SIKA_ASSIGN_OR_RETURN(auto payout, wave::parse_payout(res.body));
    return wave::payout_status(payout);
  }
  // A search: {"result": [payouts]}; the one of our client_reference (idempotency made it one).
  auto o = json::parse_object(res.body);
  const bj::value* list = o ? o->if_contains("result") : nullptr;
  if (!list || !list->is_array()) return operator_unknown_outcome(res.status, "unreadable payout search");
  for (const bj::value& v : list->as_array()) {
    auto p = wave::parse_payout(bj::serialize(v));
    if (p && p->client_reference == order.provider_reference) return wave::payout_status(*p);
  }
  return unknown_reference();
}

Result<OperatorStatus> Wave::query_status(const PaymentOrder& order) {
  if (order.operation == "DISBURSEMENT") return payout_query(order);
  if (order.operation == "COLLECTION" || order.operation == "REFUND") return session_query(order);
  return bad_request("invalid_operation", bj::object{{"operation", "is not one Wave carries"}});
}

OperatorStatus Wave::expire_failed(const wave::Event& e) {
  OperatorStatus pending;
  if (e.object_id.empty() || e.object_id.find_first_of("/?#%") != std::string::npos) return pending;
  web::ClientRequest req;
  req.method = "POST";
  req.url = options_.base_url + "/v1/checkout/sessions/" + e.object_id + "/expire";
  req.headers.emplace_back("Content-Type", "application/json");
  req.body = "{}";
  auto res = call(std::move(req), Exchange{"expire", e.client_reference, e.object_id});
  if (!res || res->status != 200) return pending;  // completed meanwhile, or no answer: recovery asks
  auto session = wave::parse_session(res->body);
  if (!session || session->checkout_status != "expired") return pending;
  OperatorStatus out = wave::session_status(*session);
  if (out.state == OperatorStatus::State::failed && !e.status.reason.empty()) out.reason = e.status.reason;
  return out;
}

Result<CallbackReport> Wave::parse_callback(const web::Request& req) {
  using S = wave::Signature;
  const S sig =
      wave::verify_signature(req.header("wave-signature"), req.body, options_.webhook_secret, http_.now() / 1000);
  if (options_.webhook_secret.empty() || sig != S::valid) {
    const char* why = sig == S::missing     ? "is required"
                      : sig == S::malformed ? "is not t=<seconds>,v1=<signature>"
                      : sig == S::stale     ? "is too old (more than 5 minutes)"
                                            : "does not match the body";
    return unauthorized(bj::object{{"wave_signature", why}});
  }
  SIKA_ASSIGN_OR_RETURN(wave::Event e, wave::parse_event(req.body));
  CallbackReport report;
  report.provider_reference = e.client_reference;
  {
    sika::MutexLock lock(mu_);
    const std::int64_t at = http_.now();
    std::erase_if(seen_events_, [&](const auto& kv) { return kv.second < at - kEventMemoryMs; });
    if (!seen_events_.emplace(e.id, at).second) return report;  // delivered again: moves nothing
  }
  if (e.type == "checkout.session.payment_failed") {
    report.status = expire_failed(e);
  } else {
    report.status = e.status;
  }
  return report;
}

Result<std::string> Wave::account_holder(std::string_view, std::string_view) {
  // Wave publishes no account-holder lookup.
  return provider_unavailable(bj::object{{"provider", "the operator offers no account holder lookup"}});
}

}  // namespace sika::payments
