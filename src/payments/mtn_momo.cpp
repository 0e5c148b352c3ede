#include "payments/mtn_momo.hpp"

#include <boost/json.hpp>

#include <algorithm>

#include "core/json.hpp"
#include "core/money.hpp"
#include "core/random.hpp"
#include "core/time.hpp"

namespace sika::payments {

namespace bj = boost::json;
using mtn::Call;
using mtn::Product;

namespace {

std::string_view operation_name(Call c) {
  switch (c) {
    case Call::request_to_pay: return "collection";
    case Call::transfer: return "payout";
    case Call::refund: return "refund";
  }
  return "collection";
}

// The error of an initiation MTN refused for good, by kind: an unknown party is not_found
// (INVALID_ACCOUNT), a credential problem unauthenticated / forbidden, anything else invalid.
Error refusal(int status, const std::string& code) {
  return operator_refusal(status, code, code == "PAYER_NOT_FOUND" || code == "PAYEE_NOT_FOUND");
}

// A call is reported with MTN's error code of an answer that is not a success.
OperatorHttpOptions reported(OperatorHttpOptions h) {
  h.answer_code = [](const web::ClientResponse& r) {
    return r.status >= 400 ? mtn::error_code(r.body) : std::string();
  };
  return h;
}

// MTN's token answer: expires_in a number of seconds (at least one).
std::int64_t token_seconds(const bj::value& v) { return v.is_int64() ? std::max<std::int64_t>(1, v.as_int64()) : 0; }

constexpr BearerToken::Answer kTokenAnswer{"the operator refused the API user's credentials", false, token_seconds};

}  // namespace

MtnMomo::MtnMomo(web::HttpClient& http, MtnMomoOptions options)
    : options_(std::move(options)),
      currency_(mtn::environment_currency(options_.target_environment)),
      http_(http, reported(http_options(options_))),
      collection_token_(http_, [this] { return fetch_token(Product::collection); }),
      disbursement_token_(http_, [this] { return fetch_token(Product::disbursement); }) {
  while (!options_.base_url.empty() && options_.base_url.back() == '/') options_.base_url.pop_back();
}

const MtnCredentials& MtnMomo::credentials(Product p) const {
  return p == Product::collection ? options_.collection : options_.disbursement;
}

std::int64_t MtnMomo::tokens_fetched() const { return collection_token_.fetched() + disbursement_token_.fetched(); }

Result<BearerToken::Token> MtnMomo::fetch_token(Product p) {
  const MtnCredentials& cred = credentials(p);
  web::ClientRequest req;
  req.method = "POST";
  req.url = options_.base_url + "/" + std::string(mtn::product_path(p)) + "/token/";
  req.headers.emplace_back("Authorization", "Basic " + base64_encode(cred.api_user + ":" + cred.api_key));
  req.headers.emplace_back("Ocp-Apim-Subscription-Key", cred.subscription_key);
  return BearerToken::ask(http_, std::move(req), options_.token_margin_ms, kTokenAnswer);
}

Result<web::ClientResponse> MtnMomo::call(Product p, web::ClientRequest req, const Exchange& what) {
  req.headers.emplace_back("Ocp-Apim-Subscription-Key", credentials(p).subscription_key);
  req.headers.emplace_back("X-Target-Environment", options_.target_environment);
  return token(p).send(std::move(req), what);
}

Status MtnMomo::initiate(Call c, const PaymentOrder& order) {
  if (!serves(order.currency))
    return bad_request("invalid_currency", bj::object{{"currency", "the operator's " + options_.target_environment +
                                                                       " account carries " + currency_ + " only"}});
  const Exchange what{std::string(operation_name(c)), order.provider_reference,
                      mtn::reference_id(c, order.provider_reference)};
  web::ClientRequest req;
  req.method = "POST";
  req.url = options_.base_url + std::string(mtn::initiation_path(c));
  req.headers.emplace_back("X-Reference-Id", what.operator_reference);
  req.headers.emplace_back("Content-Type", "application/json");
  if (!options_.callback_url.empty()) req.headers.emplace_back("X-Callback-Url", options_.callback_url);
  req.body = mtn::initiation_body(c, order);
  // No definite answer: sent again with the same reference; after the last, PENDING, and recovery
  // asks by that reference.
  return resend(options_.initiation_attempts, options_.retry_pause_ms, [&]() -> Status {
    SIKA_ASSIGN_OR_RETURN(auto res, call(mtn::product_of(c), req, what));
    // 202 accepted; 409: a previous attempt with this reference reached MTN.
    if (res.status == 202 || res.status == 200 || res.status == 201 || res.status == 409) return {};
    const std::string code = mtn::error_code(res.body);
    if (mtn::definite_refusal(res.status, code)) return refusal(res.status, code);
    return operator_unknown_outcome(res.status, code);
  });
}

Status MtnMomo::request_collection(const PaymentOrder& order) { return initiate(Call::request_to_pay, order); }
Status MtnMomo::request_payout(const PaymentOrder& order) { return initiate(Call::transfer, order); }
Status MtnMomo::request_refund(const PaymentOrder& order) { return initiate(Call::refund, order); }

Result<OperatorStatus> MtnMomo::query_status(const PaymentOrder& order) {
  SIKA_ASSIGN_OR_RETURN(Call c, mtn::call_for(order.operation));
  if (!http_.status_slot())
    return make_error(ErrorKind::rate_limited, "rate_limited",
                      bj::object{{"provider", "the operator's status query budget is spent; asked again later"}});
  const Exchange what{"status", order.provider_reference, mtn::reference_id(c, order.provider_reference)};
  web::ClientRequest req;
  req.method = "GET";
  req.url = options_.base_url + std::string(mtn::status_path(c)) + what.operator_reference;
  SIKA_ASSIGN_OR_RETURN(auto res, call(mtn::product_of(c), std::move(req), what));
  if (res.status == 200) return mtn::parse_status(res.body);
  if (res.status == 404)
    return make_error(ErrorKind::not_found, "unknown_reference",
                      bj::object{{"provider_reference", "the operator has no request of this reference"}});
  if (res.status == 429)
    return make_error(ErrorKind::rate_limited, "rate_limited",
                      bj::object{{"provider", "the operator limits status queries; asked again later"}});
  return operator_unknown_outcome(res.status, mtn::error_code(res.body));
}

Result<CallbackReport> MtnMomo::parse_callback(const web::Request& req) {
  // Unsigned: what it says is a hint, verified with query_status before anything moves.
  return mtn::parse_callback_body(req.body);
}

Result<std::string> MtnMomo::account_holder(std::string_view, std::string_view msisdn) {
  const std::string base = options_.base_url + "/collection/v1_0/accountholder/msisdn/" + std::string(msisdn);
  web::ClientRequest req;
  req.method = "GET";
  req.url = base + "/active";
  SIKA_ASSIGN_OR_RETURN(auto res, call(Product::collection, req, Exchange{"holder", "", ""}));
  auto body =
      res.status == 200 ? json::parse_object(res.body) : Result<bj::object>(operator_unknown_outcome(res.status, ""));
  const bj::value* active = body ? body->if_contains("result") : nullptr;
  if (!active || !active->is_bool()) return operator_unknown_outcome(res.status, mtn::error_code(res.body));
  if (!active->as_bool()) return not_found(bj::object{{"wallet", "has no active account at this operator"}});
  req.url = base + "/basicuserinfo";
  auto info = call(Product::collection, req, Exchange{"holder", "", ""});
  std::string name;
  if (info && info->status == 200) {
    if (auto o = json::parse_object(info->body)) {
      for (const char* k : {"given_name", "family_name"}) {
        const bj::value* v = o->if_contains(k);
        if (!v || !v->is_string() || v->as_string().empty()) continue;
        if (!name.empty()) name += ' ';
        name += std::string(v->as_string());
      }
    }
  }
  return name;
}

Result<std::int64_t> MtnMomo::balance(Product p) {
  web::ClientRequest req;
  req.method = "GET";
  req.url = options_.base_url + "/" + std::string(mtn::product_path(p)) + "/v1_0/account/balance";
  SIKA_ASSIGN_OR_RETURN(auto res, call(p, req, Exchange{"balance", "", ""}));
  auto body =
      res.status == 200 ? json::parse_object(res.body) : Result<bj::object>(operator_unknown_outcome(res.status, ""));
  const bj::value* v = body ? body->if_contains("availableBalance") : nullptr;
  auto minor = v && v->is_string() ? money::parse_decimal(v->as_string(), currency_) : std::nullopt;
  if (!minor) return operator_unknown_outcome(res.status, "unreadable balance");
  return *minor;
}

}  // namespace sika::payments
