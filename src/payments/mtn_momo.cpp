#include "payments/mtn_momo.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/json.hpp"
#include "core/money.hpp"
#include "core/random.hpp"
#include "core/time.hpp"

namespace sika::payments {

namespace bj = boost::json;
using mtn::Call;
using mtn::Product;

namespace {

std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string_view operation_name(Call c) {
  switch (c) {
    case Call::request_to_pay: return "collection";
    case Call::transfer: return "payout";
    case Call::refund: return "refund";
  }
  return "collection";
}

std::size_t index(Product p) { return p == Product::collection ? 0 : 1; }

// The error of an initiation MTN refused for good, by kind: an unknown party is not_found
// (INVALID_ACCOUNT), a credential problem unauthenticated / forbidden, anything else invalid.
Error refusal(int status, const std::string& code) {
  bj::object d{{"provider", "the operator refused the request"}, {"operator_status", status}};
  if (!code.empty()) d["operator_code"] = code;
  if (code == "PAYER_NOT_FOUND" || code == "PAYEE_NOT_FOUND")
    return make_error(ErrorKind::not_found, "account_not_found", std::move(d));
  if (status == 401) return make_error(ErrorKind::unauthenticated, "operator_unauthorized", std::move(d));
  if (status == 403) return make_error(ErrorKind::forbidden, "operator_forbidden", std::move(d));
  return make_error(ErrorKind::invalid, "operator_refused", std::move(d));
}

Error unknown_outcome(int status, const std::string& code) {
  bj::object d{{"provider", "the operator gave no definite answer"}, {"operator_status", status}};
  if (!code.empty()) d["operator_code"] = code;
  return make_error(ErrorKind::upstream_failed, "operator_error", std::move(d));
}

}  // namespace

MtnMomo::MtnMomo(web::HttpClient& http, MtnMomoOptions options)
    : http_(http), options_(std::move(options)), currency_(mtn::environment_currency(options_.target_environment)) {
  while (!options_.base_url.empty() && options_.base_url.back() == '/') options_.base_url.pop_back();
}

std::int64_t MtnMomo::now() const { return options_.clock ? options_.clock() : now_ms(); }

const MtnCredentials& MtnMomo::credentials(Product p) const {
  return p == Product::collection ? options_.collection : options_.disbursement;
}

std::int64_t MtnMomo::tokens_fetched() const {
  sika::MutexLock lock(mu_);
  return tokens_fetched_;
}

void MtnMomo::enter() {
  sika::UniqueLock lock(mu_);
  lock.wait(cv_, [&]() REQUIRES(mu_) { return in_flight_ < std::max(1, options_.max_in_flight); });
  ++in_flight_;
}

void MtnMomo::leave() {
  {
    sika::MutexLock lock(mu_);
    --in_flight_;
  }
  cv_.notify_one();
}

bool MtnMomo::status_slot() {
  if (options_.status_per_second <= 0) return true;
  // Evenly spaced, a little wider than 1/rate, so that no second (however the operator counts it)
  // sees more than the rate.
  const std::int64_t spacing = 1000 / options_.status_per_second + 1;
  std::int64_t slot = 0;
  {
    sika::MutexLock lock(mu_);
    const std::int64_t at = steady_ms();
    slot = std::max(at, next_status_at_);
    if (slot - at > options_.status_wait_ms) return false;
    next_status_at_ = slot + spacing;
  }
  const std::int64_t wait = slot - steady_ms();
  if (wait > 0) std::this_thread::sleep_for(std::chrono::milliseconds(wait));
  return true;
}

Result<web::ClientResponse> MtnMomo::send_reported(const web::ClientRequest& req, const Exchange& what) {
  const std::int64_t started = now();
  enter();
  auto res = http_.send(req);
  leave();
  if (options_.calls) {
    OperatorCall c;
    c.connector = options_.name;
    c.operation = what.operation;
    c.provider_reference = what.provider_reference;
    c.operator_reference = what.reference_id;
    c.method = req.method;
    c.path = req.url.substr(options_.base_url.size());
    c.started_at = started;
    c.latency_ms = std::max<std::int64_t>(0, now() - started);
    c.outcome = http_outcome(res);
    if (res) {
      c.http_status = res->status;
      if (res->status >= 400) c.code = mtn::error_code(res->body);
    } else {
      c.code = res.error().code;
    }
    options_.calls->record(c);
  }
  return res;
}

Result<MtnMomo::Token> MtnMomo::fetch_token(Product p) {
  const MtnCredentials& cred = credentials(p);
  web::ClientRequest req;
  req.method = "POST";
  req.url = options_.base_url + "/" + std::string(mtn::product_path(p)) + "/token/";
  req.headers.emplace_back("Authorization", "Basic " + base64_encode(cred.api_user + ":" + cred.api_key));
  req.headers.emplace_back("Ocp-Apim-Subscription-Key", cred.subscription_key);
  req.connect_timeout_ms = options_.connect_timeout_ms;
  req.timeout_ms = options_.timeout_ms;
  req.allow_private_addresses = true;  // operator configuration, trusted (not a merchant's URL)
  const std::int64_t asked = now();
  SIKA_ASSIGN_OR_RETURN(auto res, send_reported(req, Exchange{"token", "", ""}));
  if (res.status != 200)
    return make_error(
        res.status == 401 || res.status == 403 ? ErrorKind::unauthenticated : ErrorKind::upstream_failed,
        "operator_token",
        bj::object{{"provider", "the operator refused the API user's credentials"}, {"operator_status", res.status}});
  auto body = json::parse_object(res.body);
  const bj::value* access = body ? body->if_contains("access_token") : nullptr;
  const bj::value* ttl = body ? body->if_contains("expires_in") : nullptr;
  if (!access || !access->is_string() || access->as_string().empty() || !ttl || !ttl->is_int64())
    return unknown_outcome(res.status, "unreadable token answer");
  const std::int64_t life = std::max<std::int64_t>(1, ttl->as_int64()) * 1000;
  // Renewed `token_margin_ms` before it expires, or at half its life when that is shorter.
  return Token{std::string(access->as_string()), asked + std::max(life - options_.token_margin_ms, life / 2)};
}

Result<std::string> MtnMomo::token(Product p, std::string_view stale) {
  const std::size_t i = index(p);
  auto usable = [&]() REQUIRES(mu_) {
    const Token& t = tokens_[i];
    return !t.value.empty() && t.value != stale && t.expires_at > now();
  };
  {
    sika::MutexLock lock(mu_);
    if (usable()) return tokens_[i].value;
  }
  sika::MutexLock fetching(fetch_mu_[i]);  // one fetch per product; the others wait for its token
  {
    sika::MutexLock lock(mu_);
    if (usable()) return tokens_[i].value;
  }
  SIKA_ASSIGN_OR_RETURN(Token fresh, fetch_token(p));
  sika::MutexLock lock(mu_);
  tokens_[i] = fresh;
  ++tokens_fetched_;
  return fresh.value;
}

Result<web::ClientResponse> MtnMomo::call(Product p, web::ClientRequest req, const Exchange& what) {
  req.headers.emplace_back("Ocp-Apim-Subscription-Key", credentials(p).subscription_key);
  req.headers.emplace_back("X-Target-Environment", options_.target_environment);
  req.connect_timeout_ms = options_.connect_timeout_ms;
  req.timeout_ms = options_.timeout_ms;
  req.allow_private_addresses = true;  // operator configuration, trusted (not a merchant's URL)
  req.headers.emplace_back("Authorization", "");
  std::string stale;
  for (int round = 0;; ++round) {
    SIKA_ASSIGN_OR_RETURN(std::string bearer, token(p, stale));
    req.headers.back().second = "Bearer " + bearer;
    SIKA_ASSIGN_OR_RETURN(auto res, send_reported(req, what));
    if (res.status != 401 || round == 1) return res;
    stale = std::move(bearer);  // expired or revoked early: once more with a new one
  }
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
  req.headers.emplace_back("X-Reference-Id", what.reference_id);
  req.headers.emplace_back("Content-Type", "application/json");
  if (!options_.callback_url.empty()) req.headers.emplace_back("X-Callback-Url", options_.callback_url);
  req.body = mtn::initiation_body(c, order);
  Error last = unknown_outcome(0, "");
  std::int64_t pause = options_.retry_pause_ms;
  for (int attempt = 0; attempt < std::max(1, options_.initiation_attempts); ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause)), pause *= 2;
    auto res = call(mtn::product_of(c), req, what);
    if (!res) {
      if (!res.error().is(ErrorKind::upstream_timeout) && !res.error().is(ErrorKind::upstream_failed))
        return res.take_error();  // our own refusal to send (e.g. the token's credentials)
      last = res.take_error();
      continue;
    }
    // 202 accepted; 409: a previous attempt with this reference reached MTN.
    if (res->status == 202 || res->status == 200 || res->status == 201 || res->status == 409) return {};
    const std::string code = mtn::error_code(res->body);
    if (mtn::definite_refusal(res->status, code)) return refusal(res->status, code);
    last = unknown_outcome(res->status, code);
  }
  return last;  // no definite answer: PENDING, recovery asks by the same reference
}

Status MtnMomo::request_collection(const PaymentOrder& order) { return initiate(Call::request_to_pay, order); }
Status MtnMomo::request_payout(const PaymentOrder& order) { return initiate(Call::transfer, order); }
Status MtnMomo::request_refund(const PaymentOrder& order) { return initiate(Call::refund, order); }

Result<OperatorStatus> MtnMomo::query_status(const PaymentOrder& order) {
  SIKA_ASSIGN_OR_RETURN(Call c, mtn::call_for(order.operation));
  if (!status_slot())
    return make_error(ErrorKind::rate_limited, "rate_limited",
                      bj::object{{"provider", "the operator's status query budget is spent; asked again later"}});
  const Exchange what{"status", order.provider_reference, mtn::reference_id(c, order.provider_reference)};
  web::ClientRequest req;
  req.method = "GET";
  req.url = options_.base_url + std::string(mtn::status_path(c)) + what.reference_id;
  SIKA_ASSIGN_OR_RETURN(auto res, call(mtn::product_of(c), std::move(req), what));
  if (res.status == 200) return mtn::parse_status(res.body);
  if (res.status == 404)
    return make_error(ErrorKind::not_found, "unknown_reference",
                      bj::object{{"provider_reference", "the operator has no request of this reference"}});
  if (res.status == 429)
    return make_error(ErrorKind::rate_limited, "rate_limited",
                      bj::object{{"provider", "the operator limits status queries; asked again later"}});
  return unknown_outcome(res.status, mtn::error_code(res.body));
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
  auto body = res.status == 200 ? json::parse_object(res.body) : Result<bj::object>(unknown_outcome(res.status, ""));
  const bj::value* active = body ? body->if_contains("result") : nullptr;
  if (!active || !active->is_bool()) return unknown_outcome(res.status, mtn::error_code(res.body));
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
  auto body = res.status == 200 ? json::parse_object(res.body) : Result<bj::object>(unknown_outcome(res.status, ""));
  const bj::value* v = body ? body->if_contains("availableBalance") : nullptr;
  auto minor = v && v->is_string() ? money::parse_decimal(v->as_string(), currency_) : std::nullopt;
  if (!minor) return unknown_outcome(res.status, "unreadable balance");
  return *minor;
}

}  // namespace sika::payments
