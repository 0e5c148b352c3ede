#include "payments/airtel_money.hpp"

#include <boost/json.hpp>

#include <algorithm>

#include "core/json.hpp"
#include "core/time.hpp"

namespace sika::payments {

namespace bj = boost::json;
using airtel::Call;
using airtel::Verdict;

namespace {

std::string code_of(const airtel::Answer& a) {
  if (!a.response_code.empty()) return a.response_code;
  return a.result_code;
}

OperatorCall::Outcome outcome_of(const Result<web::ClientResponse>& res) {
  using O = OperatorCall::Outcome;
  if (!res) return res.error().is(ErrorKind::upstream_timeout) ? O::timeout : O::network;
  const int s = res->status;
  if ((s >= 200 && s < 300) || s == 404) return O::ok;
  if (s >= 400 && s < 500 && s != 429 && s != 408) {
    // Airtel's "already exists" is its documented answer to a resend.
    const airtel::Answer a = airtel::read_answer(res->body);
    return a.result_code == "ESB000041" || a.response_code == "DP00900001017" ? O::ok : O::refused;
  }
  return O::failed;
}

Error refusal(Verdict v, int status, const airtel::Answer& a) {
  return operator_refusal(status, code_of(a), v == Verdict::invalid_account);
}

// A call is reported with Airtel's code of an answer that is not a success, Airtel's outcome and
// the path without its query.
OperatorHttpOptions reported(OperatorHttpOptions h) {
  h.answer_code = [](const web::ClientResponse& r) {
    const airtel::Answer a = airtel::read_answer(r.body);
    return r.status >= 400 || !a.success ? code_of(a) : std::string();
  };
  h.outcome = outcome_of;
  h.report_path = cut_query;
  return h;
}

// What a refund leaves in its operator_state: the collection's airtel_money_id and Airtel's answer.
std::string refund_state(std::string_view airtel_money_id, std::string_view status) {
  return bj::serialize(bj::object{{"airtel_money_id", airtel_money_id}, {"refund", status}});
}

// Airtel's token answer: expires_in a string of seconds in Airtel's documentation ("180"); a
// number is read too.
std::int64_t token_seconds(const bj::value& v) {
  if (v.is_int64()) return v.as_int64();
  if (!v.is_string()) return 0;
  const std::string s(v.as_string());
  if (s.empty() || s.size() >= 10 || s.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::stoll(s);
}

constexpr BearerToken::Answer kTokenAnswer{"the operator refused the client's credentials", true, token_seconds};

}  // namespace

Result<std::unique_ptr<AirtelMoney>> AirtelMoney::open(web::HttpClient& http, AirtelMoneyOptions options) {
  const airtel::Market* m = airtel::market(options.country);
  if (!m)
    return make_error(ErrorKind::invalid, "bad_config",
                      bj::string("country: " + options.country + " is not an Airtel Money market (GA, CG, TD ...)"));
  return std::unique_ptr<AirtelMoney>(new AirtelMoney(http, std::move(options), *m));
}

AirtelMoney::AirtelMoney(web::HttpClient& http, AirtelMoneyOptions options, const airtel::Market& market)
    : options_(std::move(options)),
      market_(market),
      http_(http, reported(http_options(options_))),
      token_(http_, [this] { return fetch_token(); }) {
  while (!options_.base_url.empty() && options_.base_url.back() == '/') options_.base_url.pop_back();
}

std::int64_t AirtelMoney::tokens_fetched() const { return token_.fetched(); }

Result<BearerToken::Token> AirtelMoney::fetch_token() {
  web::ClientRequest req;
  req.method = "POST";
  req.url = options_.base_url + std::string(airtel::kTokenPath);
  req.headers.emplace_back("Content-Type", "application/json");
  req.headers.emplace_back("Accept", "*/*");
  req.body = airtel::token_body(options_.client_id, options_.client_secret);
  return BearerToken::ask(http_, std::move(req), options_.token_margin_ms, kTokenAnswer);
}

Result<AirtelMoney::Answered> AirtelMoney::call(web::ClientRequest req, const Exchange& what) {
  req.headers.emplace_back("Accept", "*/*");
  req.headers.emplace_back("Content-Type", "application/json");
  req.headers.emplace_back("X-Country", market_.alpha2);
  req.headers.emplace_back("X-Currency", options_.currency);
  SIKA_ASSIGN_OR_RETURN(auto res, token_.send(std::move(req), what));
  return Answered{res.status, res.body, airtel::read_answer(res.body)};
}

Status AirtelMoney::initiate(Call c, const PaymentOrder& order, const std::string& path, const std::string& body,
                             const Exchange& what) {
  web::ClientRequest req;
  req.method = "POST";
  req.url = options_.base_url + path;
  req.body = body;
  // No definite answer: sent again with the same id; after the last, PENDING, and recovery asks by
  // that id.
  return resend(options_.initiation_attempts, options_.retry_pause_ms, [&]() -> Status {
    SIKA_ASSIGN_OR_RETURN(auto res, call(req, what));
    const Verdict verdict = airtel::submission_verdict(c, res.http, res.answer);
    switch (verdict) {
      case Verdict::accepted:
      case Verdict::duplicate:
        if (c == Call::refund)
          accepted_.keep(order.provider_reference,
                         Accepted{"", refund_state(what.operator_reference,
                                                   res.answer.status.empty() ? "SUCCESS" : res.answer.status)});
        return {};
      case Verdict::refused:
      case Verdict::invalid_account: return refusal(verdict, res.http, res.answer);
      case Verdict::unknown: break;
    }
    return operator_unknown_outcome(res.http, code_of(res.answer));
  });
}

Status AirtelMoney::request_collection(const PaymentOrder& order) {
  if (!serves(order.currency))
    return bad_request("invalid_currency",
                       bj::object{{"currency", "the operator's account carries " + options_.currency + " only"}});
  SIKA_ASSIGN_OR_RETURN(std::string national, airtel::national_msisdn(order.msisdn, market_));
  const Exchange what{"collection", order.provider_reference, airtel::transaction_id(order.provider_reference)};
  return initiate(Call::collection, order, std::string(airtel::kCollectionPath),
                  airtel::collection_body(order, market_, national), what);
}

Status AirtelMoney::request_payout(const PaymentOrder& order) {
  if (!serves(order.currency))
    return bad_request("invalid_currency",
                       bj::object{{"currency", "the operator's account carries " + options_.currency + " only"}});
  if (options_.encrypted_pin.empty())
    return make_error(ErrorKind::forbidden, "operator_forbidden",
                      bj::object{{"provider", "this operator account is not set up for disbursements"}});
  SIKA_ASSIGN_OR_RETURN(std::string national, airtel::national_msisdn(order.msisdn, market_));
  const Exchange what{"payout", order.provider_reference, airtel::transaction_id(order.provider_reference)};
  return initiate(Call::disbursement, order, std::string(airtel::kDisbursementPath),
                  airtel::disbursement_body(order, national, options_.encrypted_pin), what);
}

Result<AirtelMoney::Answered> AirtelMoney::enquire(Call c, std::string_view provider_reference) {
  if (!http_.status_slot())
    return make_error(ErrorKind::rate_limited, "rate_limited",
                      bj::object{{"provider", "the operator's status query budget is spent; asked again later"}});
  const std::string id = airtel::transaction_id(provider_reference);
  web::ClientRequest req;
  req.method = "GET";
  req.url = options_.base_url + (c == Call::disbursement
                                     ? std::string(airtel::kDisbursementPath) + id + "?transactionType=B2C"
                                     : std::string(airtel::kCollectionStatusPath) + id);
  SIKA_ASSIGN_OR_RETURN(auto res, call(std::move(req), Exchange{"status", std::string(provider_reference), id}));
  if (airtel::unknown_transaction(res.http, res.answer))
    return make_error(ErrorKind::not_found, "unknown_reference",
                      bj::object{{"provider_reference", "the operator has no transaction of this id"}});
  if (res.http == 429)
    return make_error(ErrorKind::rate_limited, "rate_limited",
                      bj::object{{"provider", "the operator limits status queries; asked again later"}});
  if (res.http != 200) return operator_unknown_outcome(res.http, code_of(res.answer));
  return res;
}

Status AirtelMoney::request_refund(const PaymentOrder& order) {
  if (order.refunded_reference.empty())
    return bad_request("invalid_refund", bj::object{{"refunded_reference", "is required"}});
  // The collection's airtel_money_id, as Airtel reports it.
  SIKA_ASSIGN_OR_RETURN(auto original, enquire(Call::collection, order.refunded_reference));
  if (original.answer.status != "TS" || original.answer.airtel_money_id.empty())
    return make_error(ErrorKind::invalid, "operator_refused",
                      bj::object{{"refunded_reference", "the collection is not completed at the operator"}});
  const Exchange what{"refund", order.provider_reference, original.answer.airtel_money_id};
  return initiate(Call::refund, order, std::string(airtel::kRefundPath),
                  airtel::refund_body(original.answer.airtel_money_id), what);
}

std::optional<Accepted> AirtelMoney::take_accepted(std::string_view provider_reference) {
  return accepted_.take(provider_reference);
}

Result<OperatorStatus> AirtelMoney::query_status(const PaymentOrder& order) {
  SIKA_ASSIGN_OR_RETURN(Call c, airtel::call_for(order.operation));
  if (c == Call::refund) {
    // Airtel answers a refund at once and documents no refund enquiry: its answer, kept at
    // acceptance, is the outcome; without it the refund stays PENDING (docs/operators.md).
    auto state = json::parse_object(order.operator_state);
    const bj::value* r = state ? state->if_contains("refund") : nullptr;
    const bj::value* id = state ? state->if_contains("airtel_money_id") : nullptr;
    OperatorStatus out;
    if (r && r->is_string() && (r->as_string() == "SUCCESS" || r->as_string() == "TS")) {
      out.state = OperatorStatus::State::succeeded;
      if (id && id->is_string()) out.operator_reference = std::string(id->as_string());
    }
    return out;
  }
  SIKA_ASSIGN_OR_RETURN(auto res, enquire(c, order.provider_reference));
  if (!res.answer.readable) return operator_unknown_outcome(res.http, "unreadable status answer");
  const std::string& code = res.answer.response_code;
  return airtel::status_of(c, res.answer.status, code, res.answer.airtel_money_id);
}

Result<CallbackReport> AirtelMoney::parse_callback(const web::Request& req) {
  // Unsigned: what it says is a hint, verified with query_status before anything moves.
  return airtel::parse_callback_body(req.body);
}

Result<std::string> AirtelMoney::account_holder(std::string_view, std::string_view msisdn) {
  SIKA_ASSIGN_OR_RETURN(std::string national, airtel::national_msisdn(msisdn, market_));
  web::ClientRequest req;
  req.method = "GET";
  req.url = options_.base_url + std::string(airtel::kUserPath) + national;
  SIKA_ASSIGN_OR_RETURN(auto res, call(std::move(req), Exchange{"holder", "", ""}));
  if (res.answer.response_code == "DP02200000002" || res.answer.result_code == "ROUTER001" || res.http == 404)
    return not_found(bj::object{{"wallet", "has no active account at this operator"}});
  if (res.http != 200 || !res.answer.success) return operator_unknown_outcome(res.http, code_of(res.answer));
  // data: {first_name, last_name, msisdn, is_barred, ...}
  auto body = json::parse_object(res.body);
  const bj::value* data = body ? body->if_contains("data") : nullptr;
  std::string name;
  if (data && data->is_object()) {
    const bj::object& d = data->as_object();
    if (const bj::value* barred = d.if_contains("is_barred"); barred && barred->is_bool() && barred->as_bool())
      return not_found(bj::object{{"wallet", "has no active account at this operator"}});
    for (const char* k : {"first_name", "last_name"}) {
      const bj::value* v = d.if_contains(k);
      if (!v || !v->is_string() || v->as_string().empty()) continue;
      if (!name.empty()) name += ' ';
      name += std::string(v->as_string());
    }
  }
  return name;
}

}  // namespace sika::payments
