#include "payments/sandbox.hpp"

#include <spdlog/spdlog.h>
#include <boost/json.hpp>

#include <charconv>
#include <chrono>
#include <thread>

#include "core/crypto.hpp"
#include "core/json.hpp"
#include "core/random.hpp"
#include "core/time.hpp"
#include "payments/model.hpp"

namespace sika::payments {

namespace bj = boost::json;

SandboxScenario sandbox_scenario(std::string_view msisdn) {
  if (msisdn.size() < 4) return SandboxScenario::success;
  std::string_view tail = msisdn.substr(msisdn.size() - 4);
  if (tail == "0001") return SandboxScenario::insufficient_funds;
  if (tail == "0002") return SandboxScenario::rejected;
  if (tail == "0003") return SandboxScenario::timeout;
  if (tail == "0004") return SandboxScenario::invalid_account;
  if (tail == "0005") return SandboxScenario::stuck;
  if (tail == "0006") return SandboxScenario::duplicate;
  if (tail == "0007") return SandboxScenario::late;
  return SandboxScenario::success;
}

namespace {
// ...0008: the operator takes the request (recorded, answered by status queries like a success
// number), but its answer to the submission times out and no callback comes: recovery completes it.
bool takes_then_times_out(std::string_view msisdn) { return msisdn.size() >= 4 && msisdn.ends_with("0008"); }
}  // namespace

bool sandbox_fixed_code(std::string_view msisdn) {
  // The demo world's numbers (src/app/demo_payments.cpp): the success number and the funded wallets.
  static constexpr std::string_view kDemo[] = {"237690000000", "237690000100", "237690000200", "2250700000100"};
  for (std::string_view d : kDemo)
    if (msisdn == d) return true;
  return sandbox_scenario(msisdn) != SandboxScenario::success || takes_then_times_out(msisdn);
}

SandboxOperator::SandboxOperator(web::HttpClient& http, SandboxOptions options)
    : http_(http), options_(std::move(options)) {}

SandboxOperator::~SandboxOperator() { stop(); }

std::int64_t SandboxOperator::now() const { return options_.clock ? options_.clock() : now_ms(); }

void SandboxOperator::start() {
  {
    sika::MutexLock lock(mu_);
    if (!threads_.empty()) return;
    stopping_ = false;
    for (int i = 0; i < std::max(1, options_.delivery_threads); ++i) threads_.emplace_back([this] { run(); });
  }
  if (options_.db) {
    if (!recorder_)
      recorder_ = std::make_unique<Periodic>(
          "sandbox operator: records",
          std::chrono::milliseconds(std::max<std::int64_t>(10, options_.record_interval_ms)), [this]() -> Result<Pace> {
            SIKA_TRY(record());
            return Pace::idle;
          });
    recorder_->start();
  }
}

Status SandboxOperator::record() {
  std::vector<std::pair<std::string, std::int64_t>> batch;
  {
    sika::MutexLock lock(mu_);
    batch.swap(unrecorded_);
  }
  if (batch.empty() || !options_.db) return {};
  Status st = options_.db->write([&](store::Conn& c) -> Status {
    for (const auto& [ref, at] : batch)
      SIKA_TRY(
          c.exec("INSERT INTO sandbox_operator_requests (provider_reference, submitted_at) VALUES (?, ?) "
                 "ON CONFLICT (provider_reference) DO NOTHING",
                 {ref, at}));
    return {};
  });
  if (!st) {
    sika::MutexLock lock(mu_);
    unrecorded_.insert(unrecorded_.end(), batch.begin(), batch.end());
  }
  return st;
}

void SandboxOperator::stop() {
  if (recorder_) recorder_->stop();
  (void)record();  // what it accepted is remembered beyond a stop
  std::vector<std::thread> threads;
  {
    sika::MutexLock lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (auto& t : threads) t.join();
}

std::size_t SandboxOperator::queued() const {
  sika::MutexLock lock(mu_);
  return jobs_.size() + static_cast<std::size_t>(in_flight_);
}

Status SandboxOperator::check_otp(const PaymentOrder& order) {
  if (!order.otp || !crypto::constant_time_equal(*order.otp, options_.otp)) {
    bj::object d;
    d["otp"] = "is incorrect";
    return bad_request("invalid_otp", std::move(d));
  }
  return {};
}

OperatorStatus SandboxOperator::outcome(const PaymentOrder& order) const {
  OperatorStatus s;
  s.operator_reference = "SBX-" + hex_encode(crypto::sha256(order.provider_reference)).substr(0, 16);
  switch (sandbox_scenario(order.msisdn)) {
    case SandboxScenario::insufficient_funds:
      s.state = OperatorStatus::State::failed;
      s.reason = "INSUFFICIENT_FUNDS";
      break;
    case SandboxScenario::rejected:
      s.state = OperatorStatus::State::failed;
      s.reason = "REJECTED_BY_CUSTOMER";
      break;
    case SandboxScenario::timeout:
      s.state = OperatorStatus::State::failed;
      s.reason = "TIMEOUT";
      break;
    case SandboxScenario::invalid_account:
      s.state = OperatorStatus::State::failed;
      s.reason = "INVALID_ACCOUNT";
      break;
    case SandboxScenario::stuck: s.state = OperatorStatus::State::pending; break;
    default: s.state = OperatorStatus::State::succeeded;
  }
  return s;
}

std::string SandboxOperator::callback_body(const PaymentOrder& order, const OperatorStatus& st) const {
  bj::object o;
  o["provider_reference"] = order.provider_reference;
  o["transaction_reference"] = order.transaction_reference;
  o["operation"] = order.operation;
  o["status"] = st.state == OperatorStatus::State::succeeded ? "SUCCESSFUL"
                : st.state == OperatorStatus::State::failed  ? "FAILED"
                                                             : "PENDING";
  if (!st.reason.empty()) o["reason"] = st.reason;
  o["operator_reference"] = st.operator_reference;
  o["amount"] = order.amount;
  o["currency"] = order.currency;
  o["msisdn"] = order.msisdn;
  return bj::serialize(o);
}

std::string SandboxOperator::sign(std::string_view body, std::int64_t ts_ms) const {
  std::string ts = std::to_string(ts_ms);
  std::string signed_text = ts + "." + std::string(body);
  return "t=" + ts + ",v1=" + hex_encode(crypto::hmac_sha256(options_.secret, signed_text));
}

Status SandboxOperator::submit(const PaymentOrder& order) {
  OperatorStatus st = outcome(order);
  SandboxScenario scenario = sandbox_scenario(order.msisdn);
  std::int64_t base = order.submitted_at > 0 ? order.submitted_at : now();
  {
    sika::MutexLock lock(mu_);
    if (submitted_.size() >= 200'000) {
      // Forget submissions older than a day (their transactions expired long ago).
      std::int64_t horizon = now() - 86'400'000 - options_.late_ms;
      std::erase_if(submitted_, [&](const auto& kv) { return kv.second < horizon; });
      std::erase_if(forced_, [&](const auto& kv) REQUIRES(mu_) { return !submitted_.contains(kv.first); });
    }
    submitted_[order.provider_reference] = base;
  }
  if (options_.db) {
    sika::MutexLock lock(mu_);
    unrecorded_.emplace_back(order.provider_reference, base);
  }
  if (scenario == SandboxScenario::stuck) return {};
  if (takes_then_times_out(order.msisdn))  // taken, then the answer is lost on the way back
    return make_error(ErrorKind::upstream_timeout, "upstream_timeout",
                      bj::string("the sandbox operator took the request; its answer timed out"));
  std::string body = callback_body(order, st);
  const std::string& ref = order.provider_reference;
  if (scenario == SandboxScenario::late) {
    schedule(Job{base + options_.late_ms, 0, std::move(body), ref});
    return {};
  }
  schedule(Job{base + options_.delay_ms, 0, body, ref});
  if (scenario == SandboxScenario::duplicate)
    schedule(Job{base + options_.duplicate_delay_ms, 0, std::move(body), ref});
  return {};
}

Status SandboxOperator::force(const PaymentOrder& order, OperatorStatus status) {
  if (status.state == OperatorStatus::State::pending)
    return bad_request("invalid_request", bj::object{{"outcome", "a forced outcome is a success or a failure"}});
  status.operator_reference = outcome(order).operator_reference;
  {
    sika::MutexLock lock(mu_);
    if (!submitted_.contains(order.provider_reference))
      return not_found(bj::object{{"transaction_reference", "the sandbox operator has no such request"}});
    if (!forced_.emplace(order.provider_reference, status).second)
      return conflict(bj::object{{"transaction_reference", "its outcome was already forced"}});
  }
  schedule(Job{now(), 0, callback_body(order, status), order.provider_reference, true});
  return {};
}

Status SandboxOperator::request_collection(const PaymentOrder& order) { return submit(order); }
Status SandboxOperator::request_payout(const PaymentOrder& order) { return submit(order); }

Status SandboxOperator::request_refund(const PaymentOrder& order) { return submit(order); }

std::optional<std::int64_t> SandboxOperator::submitted_at(const std::string& provider_reference) {
  {
    sika::MutexLock lock(mu_);
    if (auto it = submitted_.find(provider_reference); it != submitted_.end()) return it->second;
  }
  if (!options_.db) return std::nullopt;
  std::optional<std::int64_t> at;
  Status st = options_.db->read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT submitted_at FROM sandbox_operator_requests "
                                                "WHERE provider_reference = ?",
                                                {provider_reference}));
    if (row) at = row->i64(0);
    return {};
  });
  if (!st) return std::nullopt;
  if (at) {
    sika::MutexLock lock(mu_);
    submitted_.emplace(provider_reference, *at);
  }
  return at;
}

Result<OperatorStatus> SandboxOperator::query_status(const PaymentOrder& order) {
  if (options_.query_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(options_.query_delay_ms));
  auto known = submitted_at(order.provider_reference);
  if (!known) return not_found(bj::string("the sandbox operator has no such request"));
  const std::int64_t submitted_at = *known;
  {
    sika::MutexLock lock(mu_);
    if (auto f = forced_.find(order.provider_reference); f != forced_.end()) return f->second;
  }
  OperatorStatus st = outcome(order);
  SandboxScenario scenario = sandbox_scenario(order.msisdn);
  std::int64_t ready_at = submitted_at + (scenario == SandboxScenario::late ? options_.late_ms : options_.delay_ms);
  if (now() < ready_at) {
    st.state = OperatorStatus::State::pending;
    st.reason.clear();
  }
  return st;
}

Result<CallbackReport> SandboxOperator::parse_callback(const web::Request& req) {
  std::string_view header = req.header(kSignatureHeader);
  // "t=<ms>,v1=<hex>"
  std::string_view ts_text, sig;
  if (header.starts_with("t=")) {
    auto comma = header.find(",v1=");
    if (comma != std::string_view::npos) {
      ts_text = header.substr(2, comma - 2);
      sig = header.substr(comma + 4);
    }
  }
  std::int64_t ts = 0;
  auto [p, ec] = std::from_chars(ts_text.data(), ts_text.data() + ts_text.size(), ts);
  if (ts_text.empty() || ec != std::errc() || p != ts_text.data() + ts_text.size())
    return unauthorized(bj::string("missing or malformed x-sandbox-signature"));
  std::string expected = sign(req.body, ts);
  std::string_view expected_sig = std::string_view(expected).substr(expected.find(",v1=") + 4);
  if (!crypto::constant_time_equal(expected_sig, sig)) return unauthorized(bj::string("bad callback signature"));
  if (std::llabs(now() - ts) > options_.signature_tolerance_ms)
    return unauthorized(bj::string("callback timestamp outside the tolerance"));
  auto body = json::parse_object(req.body);
  if (!body) return body.take_error();
  json::FieldErrors errors;
  auto reference = json::get_string(*body, "provider_reference", errors, true);
  auto status = json::get_string(*body, "status", errors, true);
  auto reason = json::get_string(*body, "reason", errors);
  auto op_ref = json::get_string(*body, "operator_reference", errors);
  SIKA_TRY(errors.status());
  CallbackReport report;
  report.provider_reference = *reference;
  if (*status == "SUCCESSFUL")
    report.status.state = OperatorStatus::State::succeeded;
  else if (*status == "FAILED")
    report.status.state = OperatorStatus::State::failed;
  else if (*status == "PENDING")
    report.status.state = OperatorStatus::State::pending;
  else
    return empty_data(bj::object{{"status", "must be SUCCESSFUL, FAILED or PENDING"}});
  report.status.reason = reason.value_or("");
  report.status.operator_reference = op_ref.value_or("");
  return report;
}

Result<std::string> SandboxOperator::account_holder(std::string_view, std::string_view msisdn) {
  if (sandbox_scenario(msisdn) == SandboxScenario::invalid_account) {
    bj::object d;
    d["wallet"] = "no account holder for this wallet";
    return make_error(ErrorKind::not_found, "account_not_found", std::move(d));
  }
  static constexpr std::string_view kFirst[] = {"Aïcha", "Jean",   "Fatou",    "Paul",    "Mariam",  "Emmanuel",
                                                "Awa",   "Didier", "Brigitte", "Ibrahim", "Chantal", "Samuel"};
  static constexpr std::string_view kLast[] = {"Ngono", "Kouassi", "Diallo", "Mbarga", "Traoré",  "Eto'o",
                                               "Koné",  "Fotso",   "Ndiaye", "Bamba",  "Nkoulou", "Ouattara"};
  std::string h = crypto::sha256(msisdn);
  auto a = static_cast<unsigned char>(h[0]) % std::size(kFirst);
  auto b = static_cast<unsigned char>(h[1]) % std::size(kLast);
  return std::string(kFirst[a]) + " " + std::string(kLast[b]);
}

void SandboxOperator::schedule(Job job) {
  {
    sika::MutexLock lock(mu_);
    jobs_.push(std::move(job));
  }
  cv_.notify_one();
}

void SandboxOperator::run() {
  sika::UniqueLock lock(mu_);
  while (!stopping_) {
    if (jobs_.empty()) {
      lock.wait(cv_);
      continue;
    }
    std::int64_t wait = jobs_.top().due - now();
    if (wait > 0) {
      lock.wait_for(cv_, std::chrono::milliseconds(std::min<std::int64_t>(wait, 200)));
      continue;
    }
    Job job = jobs_.top();
    jobs_.pop();
    if (!job.forced && forced_.contains(job.provider_reference)) continue;  // decided otherwise
    ++in_flight_;
    lock.unlock();
    web::ClientRequest req;
    req.method = "POST";
    req.url = options_.callback_url;
    req.body = job.body;
    req.headers = {{"content-type", "application/json"}, {std::string(kSignatureHeader), sign(job.body, now())}};
    req.allow_private_addresses = true;  // our own configured callback URL, not a user's
    req.timeout_ms = 10'000;
    auto res = http_.send(req);
    bool delivered = res && res->status >= 200 && res->status < 300;
    lock.lock();
    --in_flight_;
    if (!delivered) {
      if (job.attempt + 1 < options_.max_attempts) {
        job.due = now() + options_.retry_base_ms * (std::int64_t{1} << std::min(job.attempt, 20));
        ++job.attempt;
        jobs_.push(std::move(job));
      } else {
        spdlog::warn("sandbox operator: callback to {} not delivered after {} attempts ({})", options_.callback_url,
                     options_.max_attempts, res ? std::to_string(res->status) : res.error().code);
      }
    }
  }
}

}  // namespace sika::payments
