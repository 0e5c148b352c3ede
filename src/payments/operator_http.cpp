#include "payments/operator_http.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/json.hpp"
#include "core/time.hpp"

namespace sika::payments {

namespace bj = boost::json;

namespace {

std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

OperatorHttp::OperatorHttp(web::HttpClient& http, OperatorHttpOptions options)
    : http_(http), options_(std::move(options)) {}

std::int64_t OperatorHttp::now() const { return options_.clock ? options_.clock() : now_ms(); }

void OperatorHttp::enter() {
  sika::UniqueLock lock(mu_);
  lock.wait(cv_, [&]() REQUIRES(mu_) { return in_flight_ < std::max(1, options_.max_in_flight); });
  ++in_flight_;
}

void OperatorHttp::leave() {
  {
    sika::MutexLock lock(mu_);
    --in_flight_;
  }
  cv_.notify_one();
}

bool OperatorHttp::status_slot() {
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

Result<web::ClientResponse> OperatorHttp::send(web::ClientRequest req, const Exchange& what) {
  req.connect_timeout_ms = options_.connect_timeout_ms;
  req.timeout_ms = options_.timeout_ms;
  req.allow_private_addresses = true;  // operator configuration, trusted (not a merchant's URL)
  const std::int64_t started = now();
  enter();
  auto res = http_.send(req);
  leave();
  if (options_.calls) report(req, res, what, started);
  return res;
}

void OperatorHttp::report(const web::ClientRequest& req, const Result<web::ClientResponse>& res, const Exchange& what,
                          std::int64_t started) {
  OperatorCall c;
  c.connector = options_.name;
  c.operation = what.operation;
  c.provider_reference = what.provider_reference;
  c.operator_reference = what.operator_reference;
  c.method = req.method;
  c.path = req.url.substr(std::min(options_.base_url.size(), req.url.size()));
  if (options_.report_path) options_.report_path(c.path);
  c.started_at = started;
  c.latency_ms = std::max<std::int64_t>(0, now() - started);
  c.outcome = options_.outcome ? options_.outcome(res) : http_outcome(res);
  if (res) {
    c.http_status = res->status;
    if (options_.answer_code) c.code = options_.answer_code(*res);
  } else {
    c.code = res.error().code;
  }
  options_.calls->record(c);
}

void AcceptedOrders::keep(std::string_view provider_reference, Accepted accepted) {
  sika::MutexLock lock(mu_);
  kept_.insert_or_assign(std::string(provider_reference), std::move(accepted));
}

std::optional<Accepted> AcceptedOrders::take(std::string_view provider_reference) {
  sika::MutexLock lock(mu_);
  auto it = kept_.find(provider_reference);
  if (it == kept_.end()) return std::nullopt;
  Accepted out = std::move(it->second);
  kept_.erase(it);
  return out;
}

void cut_query(std::string& path) {
  if (const std::size_t q = path.find('?'); q != std::string::npos) path.resize(q);
}

Result<BearerToken::Token> BearerToken::read(const web::ClientResponse& res, std::int64_t asked, std::int64_t margin_ms,
                                             const Answer& how) {
  if (res.status != 200) {
    const bool refused = res.status == 401 || res.status == 403 || (how.bad_request_refuses && res.status == 400);
    return make_error(refused ? ErrorKind::unauthenticated : ErrorKind::upstream_failed, "operator_token",
                      bj::object{{"provider", how.refused}, {"operator_status", res.status}});
  }
  auto body = json::parse_object(res.body);
  const bj::value* access = body ? body->if_contains("access_token") : nullptr;
  const bj::value* ttl = body ? body->if_contains("expires_in") : nullptr;
  const std::int64_t seconds = ttl && how.seconds ? how.seconds(*ttl) : 0;
  if (!access || !access->is_string() || access->as_string().empty() || seconds <= 0)
    return operator_unknown_outcome(res.status, "unreadable token answer");
  const std::int64_t life = seconds * 1000;
  return Token{std::string(access->as_string()), asked + std::max(life - margin_ms, life / 2)};
}

Result<BearerToken::Token> BearerToken::ask(OperatorHttp& http, web::ClientRequest req, std::int64_t margin_ms,
                                            const Answer& how) {
  const std::int64_t asked = http.now();
  SIKA_ASSIGN_OR_RETURN(auto res, http.send(std::move(req), Exchange{"token", "", ""}));
  return read(res, asked, margin_ms, how);
}

std::int64_t BearerToken::fetched() const {
  sika::MutexLock lock(mu_);
  return fetched_;
}

Result<std::string> BearerToken::get(std::string_view stale) {
  auto usable = [&]() REQUIRES(mu_) {
    return !token_.value.empty() && token_.value != stale && token_.expires_at > http_.now();
  };
  {
    sika::MutexLock lock(mu_);
    if (usable()) return token_.value;
  }
  sika::MutexLock fetching(fetch_mu_);  // one fetch at a time; the others wait for its token
  {
    sika::MutexLock lock(mu_);
    if (usable()) return token_.value;
  }
  SIKA_ASSIGN_OR_RETURN(Token fresh, fetch_());
  sika::MutexLock lock(mu_);
  token_ = fresh;
  ++fetched_;
  return fresh.value;
}

Result<web::ClientResponse> BearerToken::send(web::ClientRequest req, const Exchange& what) {
  req.headers.emplace_back("Authorization", "");
  const std::size_t auth = req.headers.size() - 1;
  std::string stale;
  for (int round = 0;; ++round) {
    SIKA_ASSIGN_OR_RETURN(std::string bearer, get(stale));
    req.headers[auth].second = "Bearer " + bearer;
    SIKA_ASSIGN_OR_RETURN(auto res, http_.send(req, what));
    if (res.status != 401 || round == 1) return res;
    stale = std::move(bearer);  // expired or revoked early: once more with a new one
  }
}

bool undecided(const Error& e) { return e.is(ErrorKind::upstream_timeout) || e.is(ErrorKind::upstream_failed); }

void pause_for(std::int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

Error operator_refusal(int status, const std::string& code, bool no_account) {
  bj::object d{{"provider", "the operator refused the request"}, {"operator_status", status}};
  if (!code.empty()) d["operator_code"] = code;
  if (no_account) return make_error(ErrorKind::not_found, "account_not_found", std::move(d));
  if (status == 401) return make_error(ErrorKind::unauthenticated, "operator_unauthorized", std::move(d));
  if (status == 403) return make_error(ErrorKind::forbidden, "operator_forbidden", std::move(d));
  return make_error(ErrorKind::invalid, "operator_refused", std::move(d));
}

Error operator_unknown_outcome(int status, const std::string& code) {
  bj::object d{{"provider", "the operator gave no definite answer"}, {"operator_status", status}};
  if (!code.empty()) d["operator_code"] = code;
  return make_error(ErrorKind::upstream_failed, "operator_error", std::move(d));
}

}  // namespace sika::payments
