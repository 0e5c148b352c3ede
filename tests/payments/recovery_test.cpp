// Recovery of pending payments: a clocked runner (the test's clock, Service::recover_due called by
// hand) drives PENDING transactions whose operator never called back to a final state, on SQLite
// and PostgreSQL; two services on one database stand for two nodes.
#include <boost/json.hpp>

#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "fixture.hpp"
#include "payments/store.hpp"
#include "store/leasing.hpp"

namespace sika::payments::testing {
namespace {

// An operator whose answers the test decides, which records how many queries of each order run at
// once. It stands in for the sandbox ("sandbox" is the catalog's connector).
class ScriptedOperator final : public SandboxStandIn {
 public:
  Status request_collection(const PaymentOrder& order) override { return submit ? submit(order) : Status{}; }
  Status request_payout(const PaymentOrder& order) override { return submit ? submit(order) : Status{}; }
  Result<OperatorStatus> query_status(const PaymentOrder& order) override {
    int answer_no = 0;
    {
      std::lock_guard lock(mu);
      int& now_in = in_flight[order.provider_reference];
      ++now_in;
      max_in_flight = std::max(max_in_flight, now_in);
      answer_no = ++queries[order.provider_reference];
    }
    if (query_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(query_ms));
    Result<OperatorStatus> out = answer ? answer(order, answer_no) : Result<OperatorStatus>(OperatorStatus{});
    std::lock_guard lock(mu);
    --in_flight[order.provider_reference];
    return out;
  }

  int queries_of(const std::string& provider_reference) {
    std::lock_guard lock(mu);
    return queries[provider_reference];
  }

  std::function<Result<OperatorStatus>(const PaymentOrder&, int)> answer;
  std::function<Status(const PaymentOrder&)> submit;  // how a submission is answered (ok when empty)
  int query_ms = 0;
  std::mutex mu;
  std::map<std::string, int> in_flight, queries;
  int max_in_flight = 0;
};

OperatorStatus answer_of(OperatorStatus::State state, std::string reason = "") {
  OperatorStatus s;
  s.state = state;
  s.reason = std::move(reason);
  s.operator_reference = "OP-1";
  return s;
}

class RecoveryTest : public PaymentsTest {
 protected:
  void tune(Options& o) override {
    o.pending_ttl_ms = 24 * 3600 * 1000;  // the expiry never gets there first here
    o.node_id = "node-a";
    o.recovery_lease_ms = 24 * 3600 * 1000;  // the test's clock runs fast; no claim lapses by accident
    o.clock = [this] { return clock_.load(); };
  }
  void SetUp() override {
    PaymentsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    service_->register_connector(operator_);
  }

  // A PROVIDER collection submitted to the operator (PENDING); its reference.
  std::string submitted_collection(std::string wallet = "237690000000") {
    auto p = principal(m1_);
    auto rec = create_ok(p, intent_body(wallet, 10'000));
    std::string ref(rec.at("transaction_reference").as_string());
    auto [st, env] = call(&Service::execute, p, bj::object{{"transaction_reference", ref}});
    EXPECT_EQ(st, 200) << bj::serialize(env);
    EXPECT_EQ(load(ref).status, TxStatus::pending);  // read as stored: the status route would ask the operator
    return ref;
  }

  // A PROVIDER collection whose submission the operator refused (FAILED); its reference.
  std::string submitted_collection_failing(std::string wallet = "237690000000") {
    auto p = principal(m1_);
    auto rec = create_ok(p, intent_body(wallet, 10'000));
    std::string ref(rec.at("transaction_reference").as_string());
    auto [st, env] = call(&Service::execute, p, bj::object{{"transaction_reference", ref}});
    EXPECT_EQ(st, 200) << bj::serialize(env);
    EXPECT_EQ(load(ref).status, TxStatus::failed);
    return ref;
  }

  std::optional<std::int64_t> next_check_at(const std::string& ref) {
    std::optional<std::int64_t> v;
    EXPECT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT next_check_at FROM pay_transactions "
                                                                 "WHERE reference = ?",
                                                                 {ref}));
                     if (row) v = row->opt_i64(0);
                     return {};
                   })
                    .ok());
    return v;
  }

  Transaction load(const std::string& ref) {
    Transaction tx;
    EXPECT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(tx, tables::load(c, ref));
                     return {};
                   })
                    .ok());
    return tx;
  }

  int recover() {
    auto n = service_->recover_due();
    EXPECT_TRUE(n.ok()) << (n.ok() ? "" : n.error().code);
    return n.ok() ? *n : -1;
  }

  const std::int64_t start_ = now_ms();
  std::atomic<std::int64_t> clock_{start_};  // the services' clock: moves only when a test moves it
  ScriptedOperator operator_;
};

INSTANTIATE_TEST_SUITE_P(Backends, RecoveryTest, ::testing::Values("sqlite", "postgres"));

// No callback comes: the operator is asked 5 s after submission, then 15 s, 1 min, 5 min and every
// 15 min after each answer that is not final; the final answer completes the collection once,
// through the transition (its journal and its outbox event), and nothing is asked after it.
TEST_P(RecoveryTest, AsksOnTheBackOffScheduleUntilTheAnswerIsFinal) {
  const std::string ref = submitted_collection();
  const Transaction tx = load(ref);
  ASSERT_TRUE(tx.submitted_at.has_value());
  const std::int64_t t0 = *tx.submitted_at;
  auto at = [&](std::int64_t ms) { clock_ = t0 + ms; };
  ASSERT_TRUE(next_check_at(ref).has_value());
  EXPECT_NEAR(static_cast<double>(*next_check_at(ref) - t0), 5'000.0, 1000.0);

  bool final_now = false;
  operator_.answer = [&](const PaymentOrder&, int) -> Result<OperatorStatus> {
    return answer_of(final_now ? OperatorStatus::State::succeeded : OperatorStatus::State::pending);
  };
  std::int64_t due = *next_check_at(ref);
  const std::int64_t expected_gaps[] = {15'000, 60'000, 300'000, 900'000, 900'000};
  for (std::int64_t gap : expected_gaps) {
    at(due - t0 - 1);
    EXPECT_EQ(recover(), 0) << "asked before it was due";
    at(due - t0);
    EXPECT_EQ(recover(), 1);
    auto next = next_check_at(ref);
    ASSERT_TRUE(next.has_value());
    EXPECT_NEAR(static_cast<double>(*next - due), static_cast<double>(gap), 50.0);
    due = *next;
  }
  EXPECT_EQ(load(ref).status, TxStatus::pending);
  auto backlog = service_->recovery_backlog();
  ASSERT_TRUE(backlog.ok());
  EXPECT_EQ(backlog->waiting, 1);
  EXPECT_EQ(backlog->oldest_since, t0);

  final_now = true;
  at(due - t0);
  EXPECT_EQ(recover(), 1);
  EXPECT_EQ(load(ref).status, TxStatus::completed);
  EXPECT_FALSE(next_check_at(ref).has_value());
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transitions t JOIN pay_transactions x ON x.id = t.transaction_id "
                  "WHERE x.reference = ? AND t.to_status = 'COMPLETED' AND t.source = 'recovery'",
                  {ref}),
            1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_status_checks c JOIN pay_transactions x ON x.id = c.transaction_id "
                  "WHERE x.reference = ?",
                  {ref}),
            6);
  EXPECT_EQ(count("SELECT COUNT(*) FROM events WHERE subject = ? AND payload LIKE '%COMPLETED%'", {ref}), 1);
  EXPECT_EQ(balance(ledger::merchant_available(m1_.id, "sandbox", "XAF")), 10'000);
  at(due - t0 + 10'000'000);
  EXPECT_EQ(recover(), 0);
  auto stats = service_->recovery_stats();
  EXPECT_EQ(stats.pending, 5u);
  EXPECT_EQ(stats.succeeded, 1u);
  backlog = service_->recovery_backlog();
  ASSERT_TRUE(backlog.ok());
  EXPECT_EQ(backlog->waiting, 0);
  expect_ledger_clean();
}

// An answer that is not an answer (an error, an unknown reference, an unreachable operator) is
// never a failure: the collection and the payout stay PENDING, the payout's funds stay reserved,
// and the next question is scheduled. A later FAILED answer releases the payout's reserve.
TEST_P(RecoveryTest, UnknownAnswersStayPendingAndFailedPayoutsAreReleased) {
  auto p = principal(m1_);
  // Earn 20 000 first (a collection completed by the operator's answer).
  operator_.answer = [](const PaymentOrder&, int) -> Result<OperatorStatus> {
    return answer_of(OperatorStatus::State::succeeded);
  };
  const std::string earned = submitted_collection();
  clock_ = start_ + 10'000;
  ASSERT_EQ(recover(), 1);
  ASSERT_EQ(load(earned).status, TxStatus::completed);

  const std::string collection = submitted_collection();
  auto [s, e] = call(&Service::disbursement_intent, p, payout_body("237690000061", 5'000));
  ASSERT_EQ(s, 200) << bj::serialize(e);
  const std::string payout(e.at("data").at("transaction_reference").as_string());
  ASSERT_EQ(load(payout).status, TxStatus::pending);
  const std::int64_t reserved = 5'000 + 150;
  EXPECT_EQ(balance(ledger::merchant_pending(m1_.id, "sandbox", "XAF")), reserved);

  int round = 0;
  operator_.answer = [&](const PaymentOrder&, int) -> Result<OperatorStatus> {
    if (round % 2 == 0) return not_found(bj::string("no such request"));
    return unavailable(bj::string("operator timeout"));
  };
  for (round = 0; round < 4; ++round) {
    clock_ += 2'000'000;
    EXPECT_EQ(recover(), 2);
    EXPECT_EQ(load(collection).status, TxStatus::pending);
    EXPECT_EQ(load(payout).status, TxStatus::pending);
    EXPECT_TRUE(next_check_at(payout).has_value());
  }
  EXPECT_EQ(service_->recovery_stats().unknown, 8u);
  EXPECT_EQ(balance(ledger::merchant_pending(m1_.id, "sandbox", "XAF")), reserved);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_status_checks WHERE outcome = 'unknown'"), 8);

  operator_.answer = [](const PaymentOrder&, int) -> Result<OperatorStatus> {
    return answer_of(OperatorStatus::State::failed, "INVALID_ACCOUNT");
  };
  clock_ += 2'000'000;
  EXPECT_EQ(recover(), 2);
  EXPECT_EQ(load(payout).status, TxStatus::failed);
  EXPECT_EQ(load(payout).failure_reason, "INVALID_ACCOUNT");
  EXPECT_EQ(load(collection).status, TxStatus::failed);
  EXPECT_EQ(balance(ledger::merchant_pending(m1_.id, "sandbox", "XAF")), 0);
  EXPECT_EQ(balance(ledger::merchant_available(m1_.id, "sandbox", "XAF")), 10'000);
  expect_ledger_clean();
}

// A node that claimed a question and died holds it until its lease ends; then another node asks.
// The dead node's late reschedule changes nothing.
TEST_P(RecoveryTest, AClaimOfADeadNodeLapsesAtItsLeaseEnd) {
  const std::string ref = submitted_collection();
  clock_ = start_ + 10'000;
  const std::int64_t at = clock_;
  std::vector<tables::ClaimedCheck> claimed;
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_TRY(store::queue_isolation(c));
                   SIKA_ASSIGN_OR_RETURN(claimed, tables::claim_checks(c, at, at + 60'000, "dead-node:1", 10));
                   return {};
                 })
                  .ok());
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_EQ(claimed[0].checks, 1);
  operator_.answer = [](const PaymentOrder&, int) -> Result<OperatorStatus> {
    return answer_of(OperatorStatus::State::succeeded);
  };
  clock_ += 59'000;
  EXPECT_EQ(recover(), 0) << "asked while another node's claim holds";
  clock_ += 1'000;
  EXPECT_EQ(recover(), 1);
  EXPECT_EQ(load(ref).status, TxStatus::completed);
  bool kept = true;
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(kept, tables::reschedule_check(c, claimed[0].tx.id, "dead-node:1", at));
                   return {};
                 })
                  .ok());
  EXPECT_FALSE(kept);
  EXPECT_FALSE(next_check_at(ref).has_value());
  expect_ledger_clean();
}

// After a restart the sandbox operator still knows what it was asked (sandbox_operator_requests),
// so what was PENDING when the node died is answered, and recovery completes it.
TEST_P(RecoveryTest, TheSandboxAnswersAfterARestartAndRecoveryCompletes) {
  service_.reset();
  make_service();  // the real sandbox operator, not started: its callbacks are never delivered
  auto p = principal(m1_);
  auto rec = create_ok(p, intent_body("237690000000", 10'000));
  std::string ok_ref(rec.at("transaction_reference").as_string());
  ASSERT_EQ(call(&Service::execute, p, bj::object{{"transaction_reference", ok_ref}}).first, 200);
  rec = create_ok(p, intent_body("237690000002", 10'000));
  std::string refused_ref(rec.at("transaction_reference").as_string());
  ASSERT_EQ(call(&Service::execute, p, bj::object{{"transaction_reference", refused_ref}}).first, 200);
  service_.reset();  // the node stops: the sandbox's memory and queued callbacks are gone, its records stay
  ASSERT_EQ(count("SELECT COUNT(*) FROM sandbox_operator_requests"), 2);
  make_service();
  clock_ = start_ + 10'000;
  EXPECT_EQ(recover(), 2);
  EXPECT_EQ(load(ok_ref).status, TxStatus::completed);
  EXPECT_EQ(load(refused_ref).status, TxStatus::failed);
  EXPECT_EQ(load(refused_ref).failure_reason, "REJECTED_BY_CUSTOMER");
  expect_ledger_clean();
}

// Two nodes (two services on one database), two recovery threads each, many PENDING items whose
// operator answers pending twice and then finally: each item is asked by one node at a time (the
// operator never sees two queries of one item at once; the recorded questions never overlap), and
// each ends final exactly once.
TEST_P(RecoveryTest, TwoNodesAskEachItemOneAtATimeAndSettleItOnce) {
  const int kItems = 40;
  std::vector<std::string> refs;
  for (int i = 0; i < kItems; ++i) refs.push_back(submitted_collection(i % 3 == 0 ? "237690000002" : "237690000000"));
  Options o;
  o.checkout_url = "http://127.0.0.1:1/checkout";
  o.callback_base_url = "http://127.0.0.1:1/api/operator/callback";
  o.secret = "test-secret-0123456789";
  o.pending_ttl_ms = 24 * 3600 * 1000;
  o.recovery_delays_ms = {5'000, 5, 5};
  o.recovery_batch = 7;
  o.node_id = "node-b";
  o.recovery_lease_ms = 24 * 3600 * 1000;
  o.clock = [this] { return clock_.load(); };
  Service node_b(
      *db_, [this] { return catalog_; }, client_, o);
  node_b.register_connector(operator_);
  // node-a's delays are the defaults (15 s after a pending answer), node-b's 5 ms: the clock runs
  // forward between rounds so that both nodes find due questions.
  operator_.query_ms = 3;
  operator_.answer = [](const PaymentOrder& order, int n) -> Result<OperatorStatus> {
    if (n <= 2) return answer_of(OperatorStatus::State::pending);
    return order.msisdn.ends_with("0002") ? answer_of(OperatorStatus::State::failed, "REJECTED_BY_CUSTOMER")
                                          : answer_of(OperatorStatus::State::succeeded);
  };
  clock_ = start_ + 6'000;
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      Service& node = t % 2 == 0 ? *service_ : node_b;
      while (!done) {
        auto n = node.recover_due();
        if (!n) ADD_FAILURE() << n.error().code;
        if (n && *n == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  for (int i = 0; i < 3000; ++i) {
    if (count("SELECT COUNT(*) FROM pay_transactions WHERE status = 'PENDING'") == 0) break;
    clock_ += 2'000;  // every rescheduled question becomes due again
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  done = true;
  for (auto& t : threads) t.join();

  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE status = 'PENDING'"), 0);
  EXPECT_EQ(operator_.max_in_flight, 1) << "an item was asked by two claims at once";
  for (const auto& ref : refs) {
    EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transitions t JOIN pay_transactions x ON x.id = t.transaction_id "
                    "WHERE x.reference = ? AND t.from_status = 'PENDING'",
                    {ref}),
              1)
        << ref;
    // The recorded questions of one item never overlap in time.
    std::vector<std::pair<std::int64_t, std::int64_t>> spans;
    ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(auto rows,
                                           c.query("SELECT c.asked_at, c.answered_at FROM pay_status_checks c "
                                                   "JOIN pay_transactions x ON x.id = c.transaction_id "
                                                   "WHERE x.reference = ? ORDER BY c.asked_at, c.id",
                                                   {ref}));
                     for (const auto& r : rows) spans.emplace_back(r.i64(0), r.i64(1));
                     return {};
                   })
                    .ok());
    EXPECT_EQ(spans.size(), 3u) << ref;
    for (std::size_t i = 1; i < spans.size(); ++i) EXPECT_GE(spans[i].first, spans[i - 1].second) << ref;
  }
  expect_ledger_clean();
}

}  // namespace
}  // namespace sika::payments::testing

namespace sika::payments::testing {
namespace {

// A submission whose outcome is unknown (the operator may have received it: a timeout, a
// connection lost after sending, an operator's 5xx) is not a refusal: the collection or payout
// stays PENDING (the payout's funds reserved) with its reference at the operator, and recovery's
// question settles it. Only an explicit refusal fails it.
TEST_P(RecoveryTest, ASubmissionWhoseOutcomeIsUnknownStaysPendingAndRecoverySettlesIt) {
  auto p = principal(m1_);
  operator_.answer = [](const PaymentOrder&, int) -> Result<OperatorStatus> {
    return answer_of(OperatorStatus::State::succeeded);
  };
  const std::vector<Error> unknown = {
      make_error(ErrorKind::upstream_timeout, "upstream_timeout", "request timed out"),
      make_error(ErrorKind::upstream_failed, "upstream_error", "reading the response failed: connection reset"),
      make_error(ErrorKind::unavailable, "provider_unavailable", "the operator answered 503"),
      make_error(ErrorKind::internal, "internal_error", "the operator answered 500"),
  };
  std::vector<std::string> collections;
  for (const Error& e : unknown) {
    operator_.submit = [&](const PaymentOrder&) -> Status { return e; };
    const std::string ref = submitted_collection();
    const Transaction tx = load(ref);
    EXPECT_EQ(tx.status, TxStatus::pending) << e.code;
    EXPECT_FALSE(tx.provider_reference.empty());
    EXPECT_TRUE(next_check_at(ref).has_value()) << e.code;
    collections.push_back(ref);
  }
  clock_ += 10'000;
  EXPECT_EQ(recover(), static_cast<int>(unknown.size()));
  for (const auto& ref : collections) EXPECT_EQ(load(ref).status, TxStatus::completed) << ref;
  const std::int64_t earned = balance(ledger::merchant_available(m1_.id, "sandbox", "XAF"));
  EXPECT_EQ(earned, 4 * 10'000);

  // A payout whose submission timed out keeps its funds reserved while PENDING.
  operator_.submit = [&](const PaymentOrder&) -> Status { return unknown[0]; };
  auto payout = [&](std::string wallet) {
    auto [s, e] = call(&Service::disbursement_intent, p, payout_body(wallet, 5'000));
    EXPECT_EQ(s, 200) << bj::serialize(e);
    return s == 200 ? std::string(e.at("data").at("transaction_reference").as_string()) : std::string();
  };
  const std::string timed_out = payout("237690000061");
  const std::int64_t reserved = 5'000 + 150;
  EXPECT_EQ(load(timed_out).status, TxStatus::pending);
  EXPECT_EQ(balance(ledger::merchant_pending(m1_.id, "sandbox", "XAF")), reserved);
  EXPECT_EQ(balance(ledger::merchant_available(m1_.id, "sandbox", "XAF")), earned - reserved);
  clock_ += 10'000;
  EXPECT_EQ(recover(), 1);
  EXPECT_EQ(load(timed_out).status, TxStatus::completed);
  EXPECT_EQ(balance(ledger::merchant_pending(m1_.id, "sandbox", "XAF")), 0);
  EXPECT_EQ(balance(ledger::merchant_available(m1_.id, "sandbox", "XAF")), earned - reserved);

  // An explicit refusal fails at once: the collection FAILED, the payout's reserve released.
  operator_.submit = [](const PaymentOrder&) -> Status {
    return bad_request("operator_refused", bj::string("the operator refused the request"));
  };
  const std::string refused = submitted_collection_failing();
  EXPECT_EQ(load(refused).failure_reason, "OPERATOR_REFUSED");
  operator_.submit = [](const PaymentOrder&) -> Status { return not_found(bj::string("no such account")); };
  const std::string no_account = payout("237690000062");
  EXPECT_EQ(load(no_account).status, TxStatus::failed);
  EXPECT_EQ(load(no_account).failure_reason, "INVALID_ACCOUNT");
  EXPECT_EQ(balance(ledger::merchant_pending(m1_.id, "sandbox", "XAF")), 0);
  EXPECT_EQ(balance(ledger::merchant_available(m1_.id, "sandbox", "XAF")), earned - reserved);
  expect_ledger_clean();
}

}  // namespace
}  // namespace sika::payments::testing
