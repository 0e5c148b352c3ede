// Which way a prod refund goes (docs/refunds.md, "Channels"), and refunds while their operator is not
// OPERATIONAL (docs/refunds.md, "Channels"): accepted with the
// merchant's funds reserved, queued instead of sent (recovery does not ask about them), then sent
// oldest first once the operator is OPERATIONAL again, each once. Both backends.
#include <boost/json.hpp>

#include <map>
#include <mutex>

#include "fixture.hpp"
#include "payments/health.hpp"
#include "payments/store.hpp"

namespace sika::payments::testing {
namespace {

class RefundQueueTest : public QueueTest {
 protected:
  RefundQueueTest() : QueueTest(3) {}
  // A COMPLETED sandbox collection, settled by the operator's answer (the counter never calls back).
  std::string collected(std::int64_t amount) {
    auto p = principal(m1_);
    auto rec = create_ok(p, intent_body("237690000000", amount));
    const std::string ref(rec.at("transaction_reference").as_string());
    auto [st, env] = call(&Service::execute, p, bj::object{{"transaction_reference", ref}});
    EXPECT_EQ(st, 200) << bj::serialize(env);
    Transaction tx;
    EXPECT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(tx, tables::load(c, ref));
                     return {};
                   })
                    .ok());
    OperatorStatus ok;
    ok.state = OperatorStatus::State::succeeded;
    EXPECT_TRUE(service_->record_callback(operator_, {tx.provider_reference, ok}, "{}", ok).ok());
    EXPECT_EQ(status_of(p, ref).at("status"), "COMPLETED");
    return ref;
  }
  std::string refund(const std::string& ref, std::int64_t amount) {
    auto [st, env] =
        call(&Service::create_refund, principal(m1_),
             bj::object{
                 {"transaction_reference", ref}, {"refund_uuid", uuid_v4()}, {"amount", amount}, {"reason", "OTHER"}});
    EXPECT_EQ(st, 200) << bj::serialize(env);
    return st == 200 ? std::string(env.at("data").at("refund_reference").as_string()) : "";
  }
  std::int64_t queued() { return count("SELECT COUNT(*) FROM pay_refunds WHERE queued_at IS NOT NULL"); }
};

INSTANTIATE_TEST_SUITE_P(Backends, RefundQueueTest, ::testing::Values("sqlite", "postgres"));

TEST_P(RefundQueueTest, DelayedRefundsWaitWithTheirFundsReservedAndAreSentInOrderOnRecovery) {
  service_->register_connector(operator_);
  std::vector<std::string> collections;
  for (int i = 0; i < 4; ++i) collections.push_back(collected(2'000));
  const std::int64_t before = balance(ledger::merchant_available(m1_.id, "sandbox", "XAF"));
  ASSERT_TRUE(health_->force("sandbox", Availability::delayed, "ops@example.com").ok());
  std::vector<std::string> refunds;
  for (const auto& ref : collections) refunds.push_back(refund(ref, 500));
  EXPECT_EQ(queued(), 4);
  EXPECT_TRUE(operator_.sent.empty()) << "nothing is sent while DELAYED";
  EXPECT_EQ(balance(ledger::merchant_available(m1_.id, "sandbox", "XAF")), before - 4 * 500) << "reserved";
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_refunds WHERE queued_at IS NOT NULL AND next_check_at IS NOT NULL"), 0)
      << "recovery does not ask about a refund that was never sent";
  auto none = service_->send_queued();
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, 0);
  ASSERT_TRUE(health_->force("sandbox", std::nullopt, "ops@example.com").ok());
  for (int round = 0; round < 3; ++round) ASSERT_TRUE(service_->send_queued().ok());
  EXPECT_EQ(queued(), 0);
  EXPECT_EQ(operator_.order_of_sending, refunds) << "oldest first";
  for (const auto& [reference, n] : operator_.sent) EXPECT_EQ(n, 1) << reference;
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_refunds WHERE status = 'PROCESSING' AND next_check_at IS NOT NULL"), 4)
      << "sent: recovery asks about them from now on";
  expect_ledger_clean();
}

}  // namespace
}  // namespace sika::payments::testing

namespace sika::payments::testing {
namespace {

// A prod operator that refunds whole payments only (as Wave and Airtel do), or carries neither refunds
// nor payouts (as Orange Money): what each refund is sent as.
class WholeRefunds final : public SandboxStandIn {
 public:
  Status request_payout(const PaymentOrder& order) override { return take("payout", order); }
  Status request_refund(const PaymentOrder& order) override { return take("refund", order); }
  bool refunds(bool partial) const override { return !partial; }
  bool pays_out() const override { return payouts; }
  Status take(std::string_view how, const PaymentOrder& order) {
    std::lock_guard lock(mu);
    calls.emplace_back(std::string(how) + " " + order.operation + " " + std::to_string(order.amount));
    return {};
  }
  bool payouts = true;
  std::mutex mu;
  std::vector<std::string> calls;
};

class RefundChannelTest : public PaymentsTest {
 protected:
  std::string prod_collected(std::int64_t amount) {
    auto p = principal(m1_, "prod");
    auto rec = create_ok(p, intent_body("237670000000", amount));  // an MTN number
    const std::string ref(rec.at("transaction_reference").as_string());
    auto [st, env] = call(&Service::execute, p, bj::object{{"transaction_reference", ref}});
    EXPECT_EQ(st, 200) << bj::serialize(env);
    OperatorStatus ok;
    ok.state = OperatorStatus::State::succeeded;
    EXPECT_TRUE(
        service_->record_callback(operator_, {std::string(rec.at("provider_reference").as_string()), ok}, "{}", ok)
            .ok());
    EXPECT_EQ(status_of(p, ref).at("status"), "COMPLETED");
    return ref;
  }
  std::pair<int, bj::object> refund(const std::string& ref, std::optional<std::int64_t> amount) {
    bj::object body{{"transaction_reference", ref}, {"refund_uuid", uuid_v4()}, {"reason", "OTHER"}};
    if (amount) body["amount"] = *amount;
    return call(&Service::create_refund, principal(m1_, "prod"), body);
  }
  WholeRefunds operator_;
};

INSTANTIATE_TEST_SUITE_P(Backends, RefundChannelTest, ::testing::Values("sqlite", "postgres"));

TEST_P(RefundChannelTest, AWholeRefundGoesByTheOperatorsRefundAPartOneByAPayoutAndNeitherIsRefused) {
  service_->register_connector(operator_);
  const std::string a = prod_collected(4'000);
  auto [st, env] = refund(a, 1'000);
  ASSERT_EQ(st, 200) << bj::serialize(env);
  EXPECT_EQ(env.at("data").at("channel"), "OPERATOR_PAYOUT");
  EXPECT_EQ(env.at("data").at("status"), "PROCESSING");
  const std::string b = prod_collected(3'000);
  auto [st2, env2] = refund(b, std::nullopt);
  ASSERT_EQ(st2, 200) << bj::serialize(env2);
  EXPECT_EQ(env2.at("data").at("channel"), "OPERATOR_REFUND");
  EXPECT_EQ(operator_.calls, (std::vector<std::string>{"payout DISBURSEMENT 1000", "refund REFUND 3000"}));
  // An operator without payouts: a part of a payment is refused before anything is reserved.
  operator_.payouts = false;
  const std::int64_t before = balance(ledger::merchant_available(m1_.id, "prod", "XAF"));
  const std::string c = prod_collected(2'000);
  auto [st3, env3] = refund(c, 500);
  EXPECT_EQ(st3, 409) << bj::serialize(env3);
  EXPECT_EQ(env3.at("message"), "not_refundable");
  EXPECT_EQ(balance(ledger::merchant_available(m1_.id, "prod", "XAF")), before + 2'000);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_refunds WHERE transaction_reference = ?", {c}), 0);
  expect_ledger_clean();
}

}  // namespace
}  // namespace sika::payments::testing
