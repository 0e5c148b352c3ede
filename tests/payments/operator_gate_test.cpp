// A slow operator holds at most payments.operator_request_threads request threads (OperatorGate):
// while they all wait on it, a collection is refused 503 before anything is written (it stays
// INITIATED and may be executed later), a payout is queued with its funds reserved, and an
// unsigned callback is recorded unverified for recovery to ask about, without calling the operator
// from the request thread. On SQLite and PostgreSQL.
#include <boost/json.hpp>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "fixture.hpp"
#include "payments/operator_gate.hpp"
#include "web/message.hpp"

namespace sika::payments::testing {
namespace {

// Runs `f` on a thread marked as one of the server's request threads; returns its result.
template <class F>
auto on_request_thread(F f) {
  return std::async(std::launch::async, [f = std::move(f)]() mutable {
    web::mark_request_thread(true);
    return f();
  });
}

// The answer of a request made while the operator holds every place: it must come without waiting
// for the operator (else the test fails, letting the operator go so that it ends).
template <class T, class Operator>
T at_once(std::future<T> answer, Operator& op) {
  if (answer.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "the request waited for the operator";
    op.release();
  }
  return answer.get();
}

TEST(OperatorGateTest, BoundsRequestThreadsOnlyAndANestedPlaceIsTheSame) {
  OperatorGate gate(2);
  // Off a request thread (background work): always granted, nothing counted.
  std::vector<OperatorGate::Ticket> background;
  for (int i = 0; i < 5; ++i) background.push_back(gate.enter());
  for (const auto& t : background) EXPECT_TRUE(t);
  EXPECT_EQ(gate.held(), 0);

  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> holding{0};
  auto hold = [&] {
    OperatorGate::Ticket t = gate.enter();
    if (!t) return false;
    OperatorGate::Ticket nested = gate.enter();  // the same thread's second call: its own place
    if (!nested) return false;
    ++holding;
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return release; });
    return true;
  };
  auto a = on_request_thread(hold);
  auto b = on_request_thread(hold);
  while (holding.load() < 2) std::this_thread::yield();
  EXPECT_EQ(gate.held(), 2);
  EXPECT_FALSE(on_request_thread([&] { return static_cast<bool>(gate.enter()); }).get());
  EXPECT_EQ(gate.refused(), 1);
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  EXPECT_TRUE(a.get());
  EXPECT_TRUE(b.get());
  EXPECT_EQ(gate.held(), 0);
  EXPECT_TRUE(on_request_thread([&] { return static_cast<bool>(gate.enter()); }).get());
  EXPECT_EQ(gate.held(), 0);
}

TEST(OperatorGateTest, APlaceInOneGateIsNoPlaceInAnother) {
  OperatorGate a(1), b(1);
  auto counts = on_request_thread([&] {
    std::vector<int> out;
    {
      OperatorGate::Ticket in_a = a.enter();
      OperatorGate::Ticket in_b = b.enter();  // a place of b's own, counted there
      out = {in_a ? 1 : 0, in_b ? 1 : 0, a.held(), b.held()};
      OperatorGate::Ticket again_a = a.enter();  // the same thread's place in a
      out.push_back(again_a ? a.held() : -1);
    }
    out.push_back(a.held());
    out.push_back(b.held());
    out.push_back(static_cast<bool>(b.enter()) ? b.held() : -1);  // b's one place is free again: taken
    return out;
  });
  EXPECT_EQ(counts.get(), (std::vector<int>{1, 1, 1, 1, 1, 0, 0, 1}));
}

// An operator whose collections hang until the test lets them go; its callbacks are unsigned
// (verified with a status query, counted) and name the order in the X-Reference header.
class SlowOperator final : public SandboxStandIn {
 public:
  Status request_collection(const PaymentOrder&) override {
    ++entered;
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return released; });
    return {};
  }
  Status request_payout(const PaymentOrder&) override {
    ++payouts;
    return {};
  }
  Result<OperatorStatus> query_status(const PaymentOrder&) override {
    ++queries;
    OperatorStatus s;
    s.state = OperatorStatus::State::succeeded;
    return s;
  }
  Result<CallbackReport> parse_callback(const web::Request& req) override {
    CallbackReport r;
    r.provider_reference = std::string(req.header("x-reference"));
    r.status.state = OperatorStatus::State::succeeded;
    return r;
  }
  bool signs_callbacks() const override { return false; }
  void release() {
    {
      std::lock_guard lock(mu);
      released = true;
    }
    cv.notify_all();
  }

  std::atomic<int> entered{0}, payouts{0}, queries{0};
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
};

class OperatorGateServiceTest : public PaymentsTest {
 protected:
  void tune(Options& o) override { o.operator_request_threads = 1; }
  void SetUp() override {
    PaymentsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    service_->register_connector(operator_);
  }
  void TearDown() override {
    operator_.release();
    PaymentsTest::TearDown();
  }
  std::string intent() {
    return std::string(create_ok(principal(m1_), intent_body()).at("transaction_reference").as_string());
  }
  std::pair<int, bj::object> execute(const std::string& reference) {
    return call(&Service::execute, principal(m1_), bj::object{{"transaction_reference", reference}});
  }
  std::string provider_reference(const std::string& reference) {
    return text_of("SELECT provider_reference FROM pay_transactions WHERE reference = ?", {reference});
  }
  std::pair<int, bj::object> callback(const std::string& provider_reference) {
    web::Request r;
    r.method = "PUT";
    r.body = "{}";
    r.headers = {{"x-reference", provider_reference}};
    r.path_params = {{"connector", "sandbox"}};
    auto res = web::respond(r, service_->operator_callback(r));
    return {res.status, parse(res)};
  }

  SlowOperator operator_;
};

INSTANTIATE_TEST_SUITE_P(Backends, OperatorGateServiceTest, ::testing::Values("sqlite", "postgres"));

TEST_P(OperatorGateServiceTest, WhileTheOperatorHoldsEveryPlaceNothingElseWaitsOnIt) {
  const std::string held = intent(), refused = intent();
  // The one place: an execution the operator does not answer.
  auto first = on_request_thread([&] { return execute(held).first; });
  while (operator_.entered.load() < 1) std::this_thread::yield();

  // Another execution is refused at once, nothing written: still INITIATED, never sent.
  auto [s, e] = at_once(on_request_thread([&] { return execute(refused); }), operator_);
  EXPECT_EQ(s, 503) << bj::serialize(e);
  EXPECT_EQ(e.at("message"), "provider_unavailable");
  EXPECT_EQ(e.at("error").at("details").at("provider"),
            "the operator is answering slowly and too many payments are already waiting for it; nothing was sent, "
            "retry in a moment");
  EXPECT_EQ(status_of(principal(m1_), refused).at("status"), "INITIATED");
  EXPECT_EQ(operator_.entered.load(), 1);
  EXPECT_EQ(service_->operator_gate().refused(), 1);

  // A callback about the held collection is recorded unverified: recovery asks, not this thread.
  auto [cs, ce] = at_once(on_request_thread([&] { return callback(provider_reference(held)); }), operator_);
  EXPECT_EQ(cs, 200) << bj::serialize(ce);
  EXPECT_EQ(ce.at("outcome"), "unverified");
  EXPECT_EQ(operator_.queries.load(), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE reference = ? AND next_check_at <= ?", {held, now_ms()}),
            1);

  // Off a request thread (the test's own, as background work is), nothing is bounded.
  EXPECT_EQ(operator_.payouts.load(), 0);

  operator_.release();
  EXPECT_EQ(first.get(), 200);
  EXPECT_EQ(service_->operator_gate().held(), 0);
  // Once the place is free the refused collection executes, and a callback is verified at once.
  auto again = on_request_thread([&] { return execute(refused); }).get();
  EXPECT_EQ(again.first, 200) << bj::serialize(again.second);
  EXPECT_EQ(again.second.at("data").at("status"), "PENDING");
  auto [vs, ve] = on_request_thread([&] { return callback(provider_reference(held)); }).get();
  EXPECT_EQ(ve.at("outcome"), "applied") << bj::serialize(ve);
  EXPECT_EQ(operator_.queries.load(), 1);
  EXPECT_EQ(status_of(principal(m1_), held).at("status"), "COMPLETED");
  expect_ledger_clean();
}

TEST_P(OperatorGateServiceTest, APayoutWithoutAPlaceIsQueuedWithItsFundsReserved) {
  fund_available(m1_, 100'000);
  const std::string held = intent();
  auto first = on_request_thread([&] { return execute(held).first; });
  while (operator_.entered.load() < 1) std::this_thread::yield();

  auto [s, e] =
      at_once(on_request_thread([&] {
                return call(&Service::disbursement_intent, principal(m1_), payout_body("237690000061", 5'000));
              }),
              operator_);
  ASSERT_EQ(s, 200) << bj::serialize(e);
  EXPECT_EQ(e.at("data").at("status"), "PENDING");
  const std::string reference(e.at("data").at("transaction_reference").as_string());
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE reference = ? AND queued_at IS NOT NULL", {reference}),
            1);
  EXPECT_EQ(operator_.payouts.load(), 0);
  EXPECT_EQ(balance(ledger::merchant_pending(m1_.id, "sandbox", "XAF")), e.at("data").at("required_total").as_int64());

  // The queued-payout sender (a background thread) sends it while the operator still holds the place.
  service_->start();
  for (int i = 0; i < 500 && operator_.payouts.load() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(operator_.payouts.load(), 1);
  operator_.release();
  EXPECT_EQ(first.get(), 200);
  expect_ledger_clean();
}

}  // namespace
}  // namespace sika::payments::testing
