// Pure parts of payments: the lifecycle table, the split rule, canonical request hashing and the
// sandbox operator's scenarios and signatures.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <numeric>
#include <random>

#include "payments/model.hpp"
#include "payments/sandbox.hpp"

namespace sika::payments {
namespace {

namespace bj = boost::json;

TEST(Lifecycle, OnlyDocumentedMovesAreLegal) {
  using S = TxStatus;
  const S all[] = {S::initiated, S::pending, S::completed, S::failed, S::expired, S::cancelled, S::refunded};
  std::set<std::pair<S, S>> legal = {
      {S::initiated, S::pending}, {S::initiated, S::cancelled}, {S::initiated, S::expired}, {S::initiated, S::failed},
      {S::pending, S::completed}, {S::pending, S::failed},      {S::pending, S::expired},   {S::completed, S::refunded},
  };
  for (S from : all)
    for (S to : all)
      EXPECT_EQ(legal_move(from, to), legal.contains({from, to})) << to_string(from) << " -> " << to_string(to);
  for (S s : all) {
    EXPECT_EQ(parse_status(to_string(s)), s);
    EXPECT_EQ(is_terminal(s), s != S::initiated && s != S::pending);
  }
  EXPECT_FALSE(parse_status("completed").has_value());
  EXPECT_FALSE(legal_move(S::pending, S::cancelled)) << "a request on the phone cannot be cancelled by us";
}

// A WALLET collection may complete straight from INITIATED (its debit is the payment); a PROVIDER
// collection waits for the operator, and a payout always reserves first.
TEST(Lifecycle, OnlyAWalletCollectionCompletesWithoutPending) {
  using S = TxStatus;
  const S all[] = {S::initiated, S::pending, S::completed, S::failed, S::expired, S::cancelled};
  for (auto operation : {kCollection, kDisbursement})
    for (auto channel : {kChannelProvider, kChannelWallet})
      for (S from : all)
        for (S to : all) {
          Transaction tx;
          tx.operation = operation;
          tx.channel = channel;
          tx.status = from;
          const bool instant =
              operation == kCollection && channel == kChannelWallet && from == S::initiated && to == S::completed;
          EXPECT_EQ(legal_move(tx, to), legal_move(from, to) || instant)
              << operation << " " << channel << " " << to_string(from) << " -> " << to_string(to);
        }
}

TEST(Split, LargestRemainderGoesToLargestFractionThenEarlierLine) {
  // 1000 split 1/3 each: 333.33 each; one unit left, all fractions equal -> the first line.
  auto s = allocate_split(1000, {333'334, 333'333, 333'333});
  EXPECT_EQ(s, (std::vector<std::int64_t>{334, 333, 333}));
  // 101 split 50/50: 50.5 each, one unit left -> the first line (tie).
  EXPECT_EQ(allocate_split(101, {500'000, 500'000}), (std::vector<std::int64_t>{51, 50}));
  // 10 split 15/85: 1.5 and 8.5 -> tie, first line gets the unit.
  EXPECT_EQ(allocate_split(10, {150'000, 850'000}), (std::vector<std::int64_t>{2, 8}));
  // 7 split 10/20/70: 0.7, 1.4, 4.9 -> floors 0,1,4 (5), two left -> fractions .9 then .7.
  EXPECT_EQ(allocate_split(7, {100'000, 200'000, 700'000}), (std::vector<std::int64_t>{1, 1, 5}));
  // Exact splits have no remainder.
  EXPECT_EQ(allocate_split(10'000, {800'000, 200'000}), (std::vector<std::int64_t>{8000, 2000}));
  // A single beneficiary gets everything.
  EXPECT_EQ(allocate_split(12'345, {1'000'000}), (std::vector<std::int64_t>{12'345}));
}

TEST(Split, SharesAlwaysSumToTheAmountAndStayWithinOneUnitOfTheExactShare) {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 5000; ++round) {
    int n = 1 + static_cast<int>(rng() % 8);
    std::vector<std::int64_t> rates(n, 1);
    std::int64_t left = kRateWhole - n;
    for (int i = 0; i < n - 1; ++i) {
      std::int64_t take = left ? static_cast<std::int64_t>(rng() % (left + 1)) : 0;
      rates[i] += take;
      left -= take;
    }
    rates[n - 1] += left;
    ASSERT_EQ(std::accumulate(rates.begin(), rates.end(), std::int64_t{0}), kRateWhole);
    std::int64_t amount = static_cast<std::int64_t>(rng() % 10'000'000'000LL);
    auto shares = allocate_split(amount, rates);
    ASSERT_EQ(std::accumulate(shares.begin(), shares.end(), std::int64_t{0}), amount);
    for (int i = 0; i < n; ++i) {
      long double exact = static_cast<long double>(amount) * rates[i] / kRateWhole;
      ASSERT_GE(shares[i], 0);
      ASSERT_LT(std::abs(static_cast<long double>(shares[i]) - exact), 1.0L);
    }
  }
}

TEST(Canonical, KeyOrderAndIntegralDoublesDoNotChangeTheFingerprint) {
  auto a = bj::parse(R"({"b":1,"a":{"y":[1,2,{"k":80}],"x":"s"}})");
  auto b = bj::parse(R"({"a":{"x":"s","y":[1,2,{"k":80.0}]},"b":1})");
  auto c = bj::parse(R"({"a":{"x":"s","y":[2,1,{"k":80}]},"b":1})");
  EXPECT_EQ(canonical_json(a), canonical_json(b));
  EXPECT_NE(canonical_json(a), canonical_json(c));
  EXPECT_EQ(canonical_json(bj::parse(R"({"s":"\u00e9\"x"})")), R"({"s":"é\"x"})");
}

TEST(Sandbox, MagicNumbersPickTheirScenario) {
  EXPECT_EQ(sandbox_scenario("237690000000"), SandboxScenario::success);
  EXPECT_EQ(sandbox_scenario("237690000001"), SandboxScenario::insufficient_funds);
  EXPECT_EQ(sandbox_scenario("237690000002"), SandboxScenario::rejected);
  EXPECT_EQ(sandbox_scenario("237690000003"), SandboxScenario::timeout);
  EXPECT_EQ(sandbox_scenario("237690000004"), SandboxScenario::invalid_account);
  EXPECT_EQ(sandbox_scenario("237690000005"), SandboxScenario::stuck);
  EXPECT_EQ(sandbox_scenario("237690000006"), SandboxScenario::duplicate);
  EXPECT_EQ(sandbox_scenario("237690000007"), SandboxScenario::late);
  EXPECT_EQ(sandbox_scenario("237690000010"), SandboxScenario::success);
}

class NullClient final : public web::HttpClient {
 public:
  Result<web::ClientResponse> send(const web::ClientRequest&) override { return web::ClientResponse{200}; }
};

TEST(Sandbox, CallbackSignatureIsCheckedAndTimeBound) {
  NullClient http;
  std::int64_t clock = 1'700'000'000'000;
  SandboxOptions o;
  o.secret = "s3cret";
  o.clock = [&] { return clock; };
  SandboxOperator op(http, o);
  PaymentOrder order;
  order.provider_reference = "ref-1";
  order.msisdn = "237690000001";
  OperatorStatus st;
  st.state = OperatorStatus::State::failed;
  st.reason = "INSUFFICIENT_FUNDS";
  std::string body = op.callback_body(order, st);
  web::Request req;
  req.body = body;
  req.headers = {{"x-sandbox-signature", op.sign(body, clock)}};
  auto ok = op.parse_callback(req);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->provider_reference, "ref-1");
  EXPECT_EQ(ok->status.state, OperatorStatus::State::failed);
  EXPECT_EQ(ok->status.reason, "INSUFFICIENT_FUNDS");

  web::Request tampered = req;
  tampered.body[tampered.body.size() - 2] ^= 1;
  EXPECT_EQ(op.parse_callback(tampered).error().kind, sika::ErrorKind::unauthenticated);
  web::Request unsigned_req = req;
  unsigned_req.headers.clear();
  EXPECT_EQ(op.parse_callback(unsigned_req).error().kind, sika::ErrorKind::unauthenticated);
  web::Request other_key = req;
  other_key.headers = {{"x-sandbox-signature", "t=" + std::to_string(clock) + ",v1=" + std::string(64, '0')}};
  EXPECT_EQ(op.parse_callback(other_key).error().kind, sika::ErrorKind::unauthenticated);
  clock += 301'000;  // replayed after the tolerance
  EXPECT_EQ(op.parse_callback(req).error().kind, sika::ErrorKind::unauthenticated);
}

TEST(Sandbox, QueryAnswersPendingUntilTheOutcomeIsDue) {
  NullClient http;
  std::int64_t clock = 1'000'000;
  SandboxOptions o;
  o.delay_ms = 100;
  o.late_ms = 1000;
  o.clock = [&] { return clock; };
  SandboxOperator op(http, o);
  PaymentOrder order;
  order.provider_reference = "p";
  order.submitted_at = clock;
  order.msisdn = "237690000000";
  // Only what was submitted is known.
  EXPECT_EQ(op.query_status(order).error().kind, sika::ErrorKind::not_found);
  ASSERT_TRUE(op.request_collection(order).ok());
  EXPECT_EQ(op.query_status(order)->state, OperatorStatus::State::pending);
  clock += 100;
  EXPECT_EQ(op.query_status(order)->state, OperatorStatus::State::succeeded);
  order.msisdn = "237690000002";
  EXPECT_EQ(op.query_status(order)->state, OperatorStatus::State::failed);
  EXPECT_EQ(op.query_status(order)->reason, "REJECTED_BY_CUSTOMER");
  order.msisdn = "237690000005";
  clock += 1'000'000;
  EXPECT_EQ(op.query_status(order)->state, OperatorStatus::State::pending);
  order.msisdn = "237690000007";
  clock = order.submitted_at + 999;
  EXPECT_EQ(op.query_status(order)->state, OperatorStatus::State::pending);
  clock = order.submitted_at + 1000;
  EXPECT_EQ(op.query_status(order)->state, OperatorStatus::State::succeeded);
  // Account holders: deterministic, and none for the invalid-account number.
  EXPECT_EQ(*op.account_holder("MTN_MOMO_CMR", "237690000000"), *op.account_holder("X", "237690000000"));
  EXPECT_EQ(op.account_holder("MTN_MOMO_CMR", "237690000004").error().kind, sika::ErrorKind::not_found);
}

}  // namespace
}  // namespace sika::payments
