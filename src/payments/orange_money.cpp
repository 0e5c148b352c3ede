#include "payments/orange_money.hpp"

#include <boost/json.hpp>

#include <algorithm>

#include "core/crypto.hpp"
#include "core/json.hpp"
#include "core/money.hpp"
#include "core/random.hpp"
#include "core/time.hpp"

namespace sika::payments {

namespace bj = boost::json;
using orange::Flow;

namespace {

constexpr std::string_view kPushPrefix = "/omcoreapis/1.0.2/mp/";

// A call is reported with Orange's error code of an answer that is not a success, and the path of
// its route: the payToken in a push path is the order's reference, not part of the route.
OperatorHttpOptions reported(OperatorHttpOptions h) {
  h.answer_code = [](const web::ClientResponse& r) {
    return r.status >= 400 ? orange::error_code(r.body) : std::string();
  };
  h.report_path = [](std::string& path) {
    if (auto at = path.find("/paymentstatus/"); at != std::string::npos) path.resize(at + 15);
    if (auto at = path.find("/push/"); at != std::string::npos) path.resize(at + 6);
  };
  return h;
}

// Orange's token answer: expires_in a number of seconds, or a string of them (Orange Cameroon).
std::int64_t token_seconds(const bj::value& v) {
  if (v.is_int64()) return v.as_int64();
  if (v.is_string()) return std::atoll(std::string(v.as_string()).c_str());
  return 0;
}

constexpr BearerToken::Answer kTokenAnswer{"the operator refused the client credentials", true, token_seconds};

}  // namespace

OrangeMoney::OrangeMoney(web::HttpClient& http, OrangeMoneyOptions options)
    : options_(std::move(options)),
      currency_(orange::country_currency(options_.country)),
      http_(http, reported(http_options(options_))),
      token_(http_, [this] { return fetch_token(); }) {
  while (!options_.base_url.empty() && options_.base_url.back() == '/') options_.base_url.pop_back();
}

bool OrangeMoney::serves(std::string_view currency) const {
  if (options_.country == "dev") return currency == "XAF" || currency == "XOF";
  return currency == currency_;
}

std::int64_t OrangeMoney::tokens_fetched() const { return token_.fetched(); }

std::int64_t OrangeMoney::creation_window_ms() const {
  // Every attempt and its token fetch timing out, the pauses between them, and a margin.
  const std::int64_t attempts = std::max(1, options_.creation_attempts);
  const std::int64_t per_attempt = 2 * (static_cast<std::int64_t>(options_.connect_timeout_ms) + options_.timeout_ms);
  return attempts * per_attempt + options_.retry_pause_ms * (1LL << std::min<std::int64_t>(attempts, 10)) + 5000;
}

web::ClientRequest OrangeMoney::request(std::string method, std::string path) const {
  web::ClientRequest req;
  req.method = std::move(method);
  req.url = options_.base_url + path;
  req.headers.emplace_back("Accept", "application/json");
  return req;
}

Result<BearerToken::Token> OrangeMoney::fetch_token() {
  web::ClientRequest req = request("POST", options_.flow == Flow::webpay ? "/oauth/v3/token" : "/token");
  req.headers.emplace_back("Authorization",
                           "Basic " + base64_encode(options_.client_id + ":" + options_.client_secret));
  req.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
  req.body = "grant_type=client_credentials";
  return BearerToken::ask(http_, std::move(req), options_.token_margin_ms, kTokenAnswer);
}

Result<web::ClientResponse> OrangeMoney::call(web::ClientRequest req, const Exchange& what) {
  if (options_.flow == Flow::push) req.headers.emplace_back("X-AUTH-TOKEN", options_.x_auth_token);
  return token_.send(std::move(req), what);
}

Result<std::optional<Accepted>> OrangeMoney::prepare_collection(const PaymentOrder& order) {
  if (options_.flow != Flow::push) return std::optional<Accepted>{};
  if (!serves(order.currency))
    return bad_request("invalid_currency",
                       bj::object{{"currency", "the operator's account carries " + currency_ + " only"}});
  orange::State st;
  st.flow = Flow::push;
  st.order_id = orange::order_id(order.provider_reference);
  const Exchange what{"collection", order.provider_reference, st.order_id};
  Error last = operator_unknown_outcome(0, "");
  std::int64_t pause = options_.retry_pause_ms;
  // A payToken moves nothing by itself: asking again after a lost answer is harmless.
  for (int attempt = 0; attempt < std::max(1, options_.creation_attempts); ++attempt) {
    if (attempt > 0) pause_for(pause), pause *= 2;
    web::ClientRequest req = request("POST", std::string(kPushPrefix) + "init");
    auto res = call(std::move(req), what);
    if (!res) {
      if (!undecided(res.error())) return res.take_error();
      last = res.take_error();
      continue;
    }
    if (res->status == 200 || res->status == 201) {
      SIKA_ASSIGN_OR_RETURN(st.pay_token, orange::parse_pay_token(res->body));
      st.notif_token = hex_encode(random_bytes(16));
      return std::optional<Accepted>(Accepted{"", orange::write_state(st)});
    }
    const std::string code = orange::error_code(res->body);
    if (orange::definite_refusal(res->status)) return operator_refusal(res->status, code);
    last = operator_unknown_outcome(res->status, code);
  }
  return last;
}

Status OrangeMoney::request_collection(const PaymentOrder& order) {
  if (order.operation != "COLLECTION")
    return bad_request("invalid_operation", bj::object{{"operation", "Orange Money carries collections only"}});
  if (!serves(order.currency))
    return bad_request("invalid_currency",
                       bj::object{{"currency", "the operator's account carries " + currency_ + " only"}});
  if (money::exponent(order.currency) > 0)
    return bad_request("invalid_currency", bj::object{{"currency", "Orange Money amounts are whole units"}});
  return options_.flow == Flow::webpay ? create_webpayment(order) : push_payment(order);
}

Status OrangeMoney::create_webpayment(const PaymentOrder& order) {
  orange::WebpayOrder w;
  w.merchant_key = options_.merchant_key;
  w.currency = options_.country == "dev" ? "OUV" : order.currency;
  w.order_id = orange::order_id(order.provider_reference);
  w.amount = order.amount;
  w.return_url = order.return_url;
  w.cancel_url = order.return_url;  // the confirmation page tells both apart by the status
  w.notif_url = orange::notif_url(options_.callback_url, order.provider_reference, "");
  w.lang = options_.lang;
  w.reference = order.message;
  const Exchange what{"collection", order.provider_reference, w.order_id};
  web::ClientRequest base = request("POST", "/orange-money-webpay/" + options_.country + "/v1/webpayment");
  base.headers.emplace_back("Content-Type", "application/json");
  base.body = orange::webpay_body(w);
  // After the last attempt without a definite answer nothing payable was handed out: recovery
  // finds no token and ends the order after the creation window.
  return resend(options_.creation_attempts, options_.retry_pause_ms, [&]() -> Status {
    SIKA_ASSIGN_OR_RETURN(auto res, call(base, what));
    if (res.status == 201 || res.status == 200) {
      SIKA_ASSIGN_OR_RETURN(auto created, orange::parse_webpay_created(res.body));  // unreadable: sent again
      orange::State st{Flow::webpay, w.order_id, created.pay_token, created.notif_token};
      accepted_.keep(order.provider_reference, Accepted{created.payment_url, orange::write_state(st)});
      return {};
    }
    const std::string code = orange::error_code(res.body);
    if (orange::definite_refusal(res.status)) return operator_refusal(res.status, code);
    return operator_unknown_outcome(res.status, code);
  });
}

Status OrangeMoney::push_payment(const PaymentOrder& order) {
  std::optional<orange::State> st = orange::read_state(order.operator_state);
  if (!st) {
    // Not prepared by the platform: take the payToken now.
    SIKA_ASSIGN_OR_RETURN(auto prepared, prepare_collection(order));
    if (prepared) st = orange::read_state(prepared->operator_state);
    if (!st) return internal_error(bj::string("no payToken for a push payment"));
  }
  orange::PushOrder p;
  p.notif_url = orange::notif_url(options_.callback_url, order.provider_reference, st->notif_token);
  p.channel_msisdn = options_.channel_msisdn;
  p.subscriber_msisdn = orange::national_msisdn(order.msisdn);
  p.pin = options_.pin;
  p.order_id = st->order_id;
  p.description = order.message;
  p.pay_token = st->pay_token;
  p.amount = order.amount;
  web::ClientRequest req = request("POST", std::string(kPushPrefix) + "pay");
  req.headers.emplace_back("Content-Type", "application/json");
  req.body = orange::push_body(p);
  // Sent once: after a lost answer the payToken's status says whether the prompt left.
  SIKA_ASSIGN_OR_RETURN(auto res, call(std::move(req), Exchange{"collection", order.provider_reference, p.pay_token}));
  if (res.status == 200 || res.status == 201) {
    accepted_.keep(order.provider_reference, Accepted{"", orange::write_state(*st)});
    return {};
  }
  const std::string code = orange::error_code(res.body);
  if (orange::definite_refusal(res.status)) return operator_refusal(res.status, code);
  return operator_unknown_outcome(res.status, code);
}

Status OrangeMoney::request_payout(const PaymentOrder&) {
  return bad_request("invalid_operation",
                     bj::object{{"operation", "Orange Money's web and merchant payments carry no payouts"}});
}

std::optional<Accepted> OrangeMoney::take_accepted(std::string_view provider_reference) {
  return accepted_.take(provider_reference);
}

Result<OperatorStatus> OrangeMoney::query_status(const PaymentOrder& order) {
  std::optional<orange::State> st = orange::read_state(order.operator_state);
  if (!st) {
    // Nothing was kept at acceptance: no payment page nor prompt with a token of ours exists, so
    // once the creation window has passed nobody can ever pay this order.
    if (order.submitted_at > 0 && http_.now() - order.submitted_at > creation_window_ms()) {
      OperatorStatus failed;
      failed.state = OperatorStatus::State::failed;
      failed.reason = "OPERATOR_ERROR";
      return failed;
    }
    return unavailable(bj::object{{"provider", "the order is still being created at the operator"}});
  }
  if (!http_.status_slot())
    return make_error(ErrorKind::rate_limited, "rate_limited",
                      bj::object{{"provider", "the operator's status query budget is spent; asked again later"}});
  const Exchange what{"status", order.provider_reference, st->flow == Flow::webpay ? st->order_id : st->pay_token};
  web::ClientRequest req;
  if (st->flow == Flow::webpay) {
    req = request("POST", "/orange-money-webpay/" + options_.country + "/v1/transactionstatus");
    req.headers.emplace_back("Content-Type", "application/json");
    req.body = orange::transactionstatus_body(st->order_id, order.amount, st->pay_token);
  } else {
    req = request("GET", std::string(kPushPrefix) + "paymentstatus/" + st->pay_token);
  }
  SIKA_ASSIGN_OR_RETURN(auto res, call(std::move(req), what));
  if (res.status == 200 || res.status == 201)
    return st->flow == Flow::webpay ? orange::parse_webpay_status(res.body) : orange::parse_push_status(res.body);
  if (res.status == 404)
    return make_error(ErrorKind::not_found, "unknown_reference",
                      bj::object{{"provider_reference", "the operator has no payment of this token"}});
  if (res.status == 429)
    return make_error(ErrorKind::rate_limited, "rate_limited",
                      bj::object{{"provider", "the operator limits status queries; asked again later"}});
  return operator_unknown_outcome(res.status, orange::error_code(res.body));
}

Result<CallbackReport> OrangeMoney::parse_callback(const web::Request& req) {
  auto ref = req.query_param("ref");
  if (!ref || !is_uuid(*ref)) return empty_data(bj::object{{"ref", "is required: the order's notification URL"}});
  auto o = json::parse_object(req.body);
  if (!o) return empty_data(bj::object{{"body", "is not a JSON object"}});
  const bj::value* status = o->contains("data") && o->at("data").is_object()
                                ? o->at("data").as_object().if_contains("status")
                                : o->if_contains("status");
  if (!status || !status->is_string() || status->as_string().empty())
    return empty_data(bj::object{{"status", "is required"}});
  auto parsed =
      options_.flow == Flow::webpay ? orange::parse_webpay_status(req.body) : orange::parse_push_status(req.body);
  if (!parsed) return empty_data(bj::object{{"body", "is not a notification"}});
  CallbackReport report;
  report.provider_reference = *ref;
  report.status = *parsed;
  return report;
}

Status OrangeMoney::authenticate_callback(const web::Request& req, const CallbackReport&, const PaymentOrder* order) {
  const Error refused = unauthorized(bj::object{{"notif_token", "does not match the payment's"}});
  std::optional<orange::State> st = order ? orange::read_state(order->operator_state) : std::nullopt;
  if (!st || st->notif_token.empty()) return refused;
  std::string presented;
  if (st->flow == Flow::webpay) {
    if (auto o = json::parse_object(req.body))
      if (const bj::value* t = o->if_contains("notif_token"); t && t->is_string()) presented = t->as_string();
  } else {
    presented = req.query_param("token").value_or("");
  }
  if (presented.empty() || !crypto::constant_time_equal(presented, st->notif_token)) return refused;
  return {};
}

Result<std::string> OrangeMoney::account_holder(std::string_view, std::string_view) {
  return unavailable(bj::object{{"provider", "Orange Money offers no account-holder lookup"}});
}

bool OrangeMoney::prompts_again(const PaymentOrder& order) const {
  auto st = orange::read_state(order.operator_state);
  return st && st->flow == Flow::push;
}

Status OrangeMoney::prompt_again(const PaymentOrder& order) {
  auto st = orange::read_state(order.operator_state);
  if (!st || st->flow != Flow::push)
    return unavailable(bj::object{{"provider", "this payment has no prompt to send again"}});
  web::ClientRequest req = request("GET", std::string(kPushPrefix) + "push/" + st->pay_token);
  SIKA_ASSIGN_OR_RETURN(auto res, call(std::move(req), Exchange{"prompt", order.provider_reference, st->pay_token}));
  if (res.status == 200 || res.status == 201) return {};
  const std::string code = orange::error_code(res.body);
  if (orange::definite_refusal(res.status)) return operator_refusal(res.status, code);
  return operator_unknown_outcome(res.status, code);
}

}  // namespace sika::payments
