#pragma once
// The sandbox operator: a simulated mobile-money operator that behaves like a real one. It
// accepts a submission at once, decides the outcome from the customer's number (magic
// MSISDNs, below), and reports it later by calling the platform's callback route over real
// HTTP, signed with the platform's callback secret; status queries give the same answer from
// the same moment. Outcomes depend only on the number and the submission time. Like a real
// operator, it only knows what was submitted to it: a query about anything else is 404. Like an
// operator outside the platform, it remembers what it was asked beyond a restart of the platform and
// answers every node alike: with a database it records its submissions in
// sandbox_operator_requests (a batch every record_interval_ms while started, the rest at stop) and
// answers a query it has no memory of from there. A submission made just before a crash that it
// never recorded stays unknown to it: that transaction waits for its expiry.
//
// Magic numbers (the last four digits of the number):
//   ...0001  FAILED  INSUFFICIENT_FUNDS
//   ...0002  FAILED  REJECTED_BY_CUSTOMER
//   ...0003  FAILED  TIMEOUT (the customer never answered the prompt)
//   ...0004  FAILED  INVALID_ACCOUNT (and verification finds no account holder)
//   ...0005  stays PENDING: no callback, queries say pending (the platform expires it)
//   ...0006  SUCCESSFUL, then the same callback again later (a late duplicate)
//   ...0007  SUCCESSFUL, but the callback comes only after `late_ms` (after expiry)
//   anything else: SUCCESSFUL after `delay_ms`
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/periodic.hpp"
#include "core/thread_annotations.hpp"
#include "payments/connector.hpp"
#include "store/db.hpp"
#include "web/client.hpp"

namespace sika::payments {

enum class SandboxScenario {
  success,
  insufficient_funds,
  rejected,
  timeout,
  invalid_account,
  stuck,
  duplicate,
  late,
};

// The scenario a number triggers (see above).
SandboxScenario sandbox_scenario(std::string_view msisdn);

// True iff this number's one-time codes are the sandbox's fixed code (payments.sandbox_otp): the
// magic numbers above and the demo world's numbers (demo.json, `sandbox.msisdn` and
// `sandbox.wallets`). Every other number gets a random code, read from the notifier's outbox.
bool sandbox_fixed_code(std::string_view msisdn);

struct SandboxOptions {
  std::string callback_url;                // the platform's callback route for this connector
  std::string secret;                      // HMAC-SHA256 key of the callback signature
  std::string otp = "123456";              // the one-time code the sandbox accepts
  std::int64_t delay_ms = 1500;            // time to the outcome
  std::int64_t duplicate_delay_ms = 3000;  // time to the duplicate callback (...0006)
  std::int64_t late_ms = 600'000;          // time to the late callback (...0007)
  int delivery_threads = 2;
  int max_attempts = 5;                           // callback deliveries before giving up (a query still answers)
  std::int64_t retry_base_ms = 500;               // backoff: base, 2x, 4x, ...
  std::int64_t signature_tolerance_ms = 300'000;  // callbacks older or newer than this are refused
  std::function<std::int64_t()> clock;            // epoch ms; now_ms() when empty
  std::int64_t query_delay_ms = 0;                // how long a status query takes to answer
  store::Db* db = nullptr;                        // where submissions are remembered; memory only when null
  std::int64_t record_interval_ms = 50;           // how often accepted submissions are written to `db`
};

class SandboxOperator final : public Connector {
 public:
  SandboxOperator(web::HttpClient& http, SandboxOptions options);
  ~SandboxOperator() override;
  SandboxOperator(const SandboxOperator&) = delete;
  SandboxOperator& operator=(const SandboxOperator&) = delete;

  // Starts / stops the callback delivery threads. Callbacks scheduled before start() wait.
  void start();
  void stop();

  std::string_view name() const override { return "sandbox"; }
  Status check_otp(const PaymentOrder& order) override;
  Status request_collection(const PaymentOrder& order) override;
  Status request_payout(const PaymentOrder& order) override;
  // A refund behaves as a payout to the payer's number does (its outcome by that number).
  Status request_refund(const PaymentOrder& order) override;
  bool refunds(bool /*partial*/) const override { return true; }
  Result<OperatorStatus> query_status(const PaymentOrder& order) override;
  Result<CallbackReport> parse_callback(const web::Request& req) override;
  Result<std::string> account_holder(std::string_view service_code, std::string_view msisdn) override;

  // The signature header value for a callback body sent at `ts_ms`: "t=<ts_ms>,v1=<hex HMAC>".
  std::string sign(std::string_view body, std::int64_t ts_ms) const;
  // The callback body the sandbox sends for an order once its outcome is known.
  std::string callback_body(const PaymentOrder& order, const OperatorStatus& status) const;
  // Callbacks waiting to be delivered (for tests and shutdown).
  std::size_t queued() const;
  // Decides a submitted request's outcome now instead of by its number (the dashboard's sandbox
  // tools): `status` (succeeded, or failed with one of the reasons above) is what the operator
  // then answers to queries and reports at once by its own signed callback; the callback the
  // number would have sent is dropped. 404 when the operator has no such request (not submitted to
  // it, or forgotten after a restart), 409 when it was already forced.
  Status force(const PaymentOrder& order, OperatorStatus status);

  static constexpr std::string_view kSignatureHeader = "x-sandbox-signature";

 private:
  struct Job {
    std::int64_t due = 0;
    int attempt = 0;
    std::string body;
    std::string provider_reference;
    bool forced = false;  // a forced outcome's callback (the number's own is dropped once forced)
    bool operator>(const Job& o) const { return due > o.due; }
  };
  std::int64_t now() const;
  Status submit(const PaymentOrder& order);
  void schedule(Job job);
  void run();
  OperatorStatus outcome(const PaymentOrder& order) const;
  // Writes the submissions not yet recorded in one unit.
  Status record();
  // When the request of `provider_reference` was submitted, from memory or the database.
  std::optional<std::int64_t> submitted_at(const std::string& provider_reference);

  web::HttpClient& http_;
  SandboxOptions options_;
  mutable sika::Mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Job, std::vector<Job>, std::greater<>> jobs_ GUARDED_BY(mu_);
  std::vector<std::thread> threads_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  int in_flight_ GUARDED_BY(mu_) = 0;
  // provider_reference -> submitted_at
  std::unordered_map<std::string, std::int64_t> submitted_ GUARDED_BY(mu_);
  // provider_reference -> forced outcome
  std::unordered_map<std::string, OperatorStatus> forced_ GUARDED_BY(mu_);
  // accepted, not yet in the database
  std::vector<std::pair<std::string, std::int64_t>> unrecorded_ GUARDED_BY(mu_);
  std::unique_ptr<Periodic> recorder_;
};

}  // namespace sika::payments
