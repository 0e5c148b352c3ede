// Operator health's effects on payments: a collection whose connector is CLOSED is refused at
// intent (503 provider_unavailable naming provider); a payout whose connector is not OPERATIONAL is
// queued with its funds reserved and sent once it is OPERATIONAL again, oldest first, by exactly
// one node (two services on one database, several threads each). On SQLite and PostgreSQL.
#include <boost/json.hpp>

#include <map>
#include <mutex>
#include <thread>

#include "fixture.hpp"
#include "payments/health.hpp"
#include "payments/store.hpp"

namespace sika::payments::testing {
namespace {

class PayoutQueueTest : public QueueTest {
 protected:
  PayoutQueueTest() : QueueTest(5) {}
  void SetUp() override {
    PaymentsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    service_->register_connector(operator_);
    fund_available(m1_, 1'000'000);
  }
  std::string payout(std::string wallet = "237690000061") {
    auto [s, e] = call(&Service::disbursement_intent, principal(m1_), payout_body(wallet, 5'000));
    EXPECT_EQ(s, 200) << bj::serialize(e);
    if (s != 200) return {};
    EXPECT_EQ(e.at("data").at("status"), "PENDING");
    return std::string(e.at("data").at("transaction_reference").as_string());
  }
  std::int64_t queued() { return count("SELECT COUNT(*) FROM pay_transactions WHERE queued_at IS NOT NULL"); }
  std::int64_t available() { return balance(ledger::merchant_available(m1_.id, "sandbox", "XAF")); }
  std::int64_t reserved() { return balance(ledger::merchant_pending(m1_.id, "sandbox", "XAF")); }
};

INSTANTIATE_TEST_SUITE_P(Backends, PayoutQueueTest, ::testing::Values("sqlite", "postgres"));

// The sender's pick and the "queued ahead" checks run every second and at every payout and refund:
// they read the partial index of the few queued rows, never an index of every transaction of the
// connector (on SQLite the planner, without statistics, took pay_transactions_connector_submitted
// and walked every row of the connector).
TEST_P(PayoutQueueTest, TheQueuePicksReadOnlyThePartialIndexOfQueuedRows) {
  payout();  // OPERATIONAL: sent, not queued
  ASSERT_TRUE(health_->force("sandbox", Availability::delayed, "ops@example.com").ok());
  payout("237690000062");
  ASSERT_EQ(queued(), 1);
  for (const auto& [table, index] :
       {std::pair{"pay_transactions", "pay_transactions_queued"}, std::pair{"pay_refunds", "pay_refunds_queued"}}) {
    ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     const std::string pick = tables::queued_pick(c, table, index, 2, false);
                     SIKA_ASSIGN_OR_RETURN(
                         auto rows, c.query(pick, {std::string("sandbox"), std::string("mtn_momo"), std::int64_t{10}}));
                     EXPECT_EQ(rows.size(), std::string(table) == "pay_transactions" ? 1u : 0u) << table;
                     if (c.dialect() != store::Dialect::sqlite) return {};
                     SIKA_ASSIGN_OR_RETURN(
                         auto plan, c.query("EXPLAIN QUERY PLAN " + pick,
                                            {std::string("sandbox"), std::string("mtn_momo"), std::int64_t{10}}));
                     std::string text;
                     for (const auto& r : plan) text += r.str(3) + "\n";
                     EXPECT_NE(text.find(std::string("USING INDEX ") + index), std::string::npos) << text;
                     EXPECT_EQ(text.find("TEMP B-TREE"), std::string::npos) << text;
                     return {};
                   })
                    .ok());
  }
}

TEST_P(PayoutQueueTest, ACollectionOfAClosedConnectorIsRefusedAtIntent) {
  ASSERT_TRUE(health_->force("sandbox", Availability::closed, "ops@example.com").ok());
  auto [s, e] = call(&Service::create_intent, principal(m1_), intent_body());
  EXPECT_EQ(s, 503) << bj::serialize(e);
  EXPECT_EQ(e.at("message"), "provider_unavailable") << bj::serialize(e);
  ASSERT_TRUE(e.at("error").is_object()) << bj::serialize(e);
  EXPECT_EQ(e.at("error").at("details").at("provider"),
            "MTN_MOMO_CMR is unavailable (operator CLOSED); try another provider or later")
      << bj::serialize(e);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions"), 0);
  // A payout is not refused: it waits, its funds reserved.
  const std::string held = payout();
  EXPECT_EQ(queued(), 1);
  EXPECT_EQ(reserved(), 5'150);
  ASSERT_TRUE(health_->force("sandbox", std::nullopt, "ops@example.com").ok());
  EXPECT_EQ(call(&Service::create_intent, principal(m1_), intent_body()).first, 200);
  auto sent = service_->send_queued();
  ASSERT_TRUE(sent.ok());
  EXPECT_EQ(*sent, 1);
  expect_ledger_clean();
}

TEST_P(PayoutQueueTest, DelayedPayoutsWaitWithTheirFundsReservedAndAreSentInOrderOnRecovery) {
  ASSERT_TRUE(health_->force("sandbox", Availability::delayed, "ops@example.com").ok());
  std::vector<std::string> refs;
  for (int i = 0; i < 7; ++i) refs.push_back(payout());
  EXPECT_EQ(queued(), 7);
  EXPECT_TRUE(operator_.sent.empty()) << "nothing is sent while DELAYED";
  EXPECT_EQ(reserved(), 7 * 5'150);
  EXPECT_EQ(available(), 1'000'000 - 7 * 5'150);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE queued_at IS NOT NULL AND next_check_at IS NOT NULL"), 0)
      << "recovery does not ask about a payout that was never sent";
  auto none = service_->send_queued();
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, 0);
  // OPERATIONAL again: a new payout goes behind the queued ones.
  ASSERT_TRUE(health_->force("sandbox", std::nullopt, "ops@example.com").ok());
  refs.push_back(payout());
  EXPECT_EQ(queued(), 8);
  EXPECT_TRUE(operator_.sent.empty());
  for (int round = 0; round < 3; ++round) ASSERT_TRUE(service_->send_queued().ok());
  EXPECT_EQ(queued(), 0);
  EXPECT_EQ(operator_.order_of_sending, refs) << "oldest first";
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE status = 'PENDING' AND next_check_at IS NOT NULL"), 8)
      << "sent: recovery asks about them from now on";
  // A payout once the queue is empty is sent at intent.
  payout();
  EXPECT_EQ(operator_.order_of_sending.size(), 9u);
  EXPECT_EQ(queued(), 0);
  expect_ledger_clean();
}

TEST_P(PayoutQueueTest, TwoNodesSendEachQueuedPayoutExactlyOnce) {
  ASSERT_TRUE(health_->force("sandbox", Availability::delayed, "ops@example.com").ok());
  const int kPayouts = 40;
  for (int i = 0; i < kPayouts; ++i) payout(i % 2 ? "237690000061" : "237690000062");
  ASSERT_EQ(queued(), kPayouts);
  HealthOptions ho;
  ho.node_id = "node-b";
  Health health_b(*db_, ho);
  Options o;
  o.checkout_url = "http://127.0.0.1:1/checkout";
  o.callback_base_url = "http://127.0.0.1:1/api/operator/callback";
  o.secret = "test-secret-0123456789";
  o.node_id = "node-b";
  o.health = &health_b;
  o.payout_send_batch = 3;
  Service node_b(
      *db_, [this] { return catalog_; }, client_, o);
  node_b.register_connector(operator_);
  ASSERT_TRUE(health_b.refresh().ok());
  ASSERT_EQ(health_b.state("sandbox"), Availability::delayed) << "the override is every node's";
  ASSERT_TRUE(health_->force("sandbox", std::nullopt, "ops@example.com").ok());
  ASSERT_TRUE(health_b.refresh().ok());
  ASSERT_EQ(health_b.state("sandbox"), Availability::operational);
  std::atomic<bool> done{false};
  std::atomic<int> total{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      Service& node = t % 2 == 0 ? *service_ : node_b;
      while (!done) {
        auto n = node.send_queued();
        if (!n) ADD_FAILURE() << n.error().code;
        if (n) total += *n;
        if (n && *n == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  for (int i = 0; i < 2000 && queued() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  done = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(queued(), 0);
  EXPECT_EQ(total.load(), kPayouts);
  EXPECT_EQ(operator_.sent.size(), static_cast<std::size_t>(kPayouts));
  for (const auto& [reference, n] : operator_.sent) EXPECT_EQ(n, 1) << reference << " sent " << n << " times";
  EXPECT_EQ(reserved(), kPayouts * 5'150);
  expect_ledger_clean();
}

}  // namespace
}  // namespace sika::payments::testing
