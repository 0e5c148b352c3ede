// parse_intent and plan_intent without a database: field errors, who bears the fee, split
// lines, amount bounds, channel resolution, grants and connectors.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "core/reason.hpp"
#include "payments/fixture.hpp"
#include "payments/intent.hpp"

namespace sika::payments {
namespace {

namespace bj = boost::json;

bj::object body(std::int64_t amount = 10'000, std::string provider = "MTN_MOMO_CMR") {
  return bj::object{
      {"amount", amount},     {"currency", "XAF"},     {"transaction_uuid", "0b7c5a52-3d1e-4c4b-9f0e-6f7d8e9a0b1c"},
      {"provider", provider}, {"channel", "PROVIDER"}, {"customer_wallet", "690000010"}};
}

class Planner : public ::testing::Test {
 protected:
  Planner() : catalog_(testing::test_catalog()) {
    merchant_.merchant_id = 7;
    merchant_.merchant = "MCH-CM-0001";
    merchant_.countries = {"CMR"};
    merchant_.environment = "sandbox";
    inputs_.catalog = catalog_.get();
    inputs_.merchant = &merchant_;
    inputs_.max_amount = 5'000'000;
    inputs_.balance = [this](const ledger::AccountKey& key) -> Result<std::optional<std::int64_t>> {
      asked_.push_back(key.text());
      return wallet_balance_;
    };
    inputs_.has_connector = [](std::string_view name) { return name == "sandbox"; };
  }

  // Parses then plans, as the intent route does.
  Result<IntentPlan> plan(const bj::object& b, std::string_view operation = kCollection) {
    json::FieldErrors errors;
    IntentRequest r = parse_intent(b, operation, errors);
    return plan_intent(r, inputs_, std::move(errors));
  }

  // The problem recorded for `field` (400 empty_data), or "" when the plan has none.
  static std::string problem(const Result<IntentPlan>& r, std::string_view field) {
    if (r.ok() || r.error().code != "empty_data" || !r.error().details.is_object()) return "";
    const auto& d = r.error().details.as_object();
    auto it = d.find(field);
    return it == d.end() ? "" : std::string(it->value().as_string());
  }

  std::shared_ptr<const catalog::Catalog> catalog_;
  Acting merchant_;
  PlanInputs inputs_;
  std::optional<std::int64_t> wallet_balance_;
  std::vector<std::string> asked_;
};

TEST_F(Planner, CustomerPaysTheCollectionFeeOnTop) {
  auto p = plan(body(10'000));
  ASSERT_TRUE(p.ok()) << bj::serialize(p.error().details);
  EXPECT_EQ(p->fee, 200);  // 2 % rule of CMR
  EXPECT_EQ(p->required_total, 10'200);
  EXPECT_EQ(p->channel, "PROVIDER");
  EXPECT_EQ(p->service_code, "MTN_MOMO_CMR");
  EXPECT_EQ(p->country, "CMR");
  EXPECT_EQ(p->currency, "XAF");
  EXPECT_EQ(p->connector, "sandbox");
  EXPECT_EQ(p->msisdn, "237690000010");
  EXPECT_EQ(p->confirmation_method, "MSISDN");
  EXPECT_FALSE(p->needs_otp);
  EXPECT_TRUE(asked_.empty()) << "PROVIDER never reads a balance";
}

TEST_F(Planner, MerchantPaysThePayoutFee) {
  auto p = plan(body(10'000), kDisbursement);
  ASSERT_TRUE(p.ok()) << bj::serialize(p.error().details);
  EXPECT_EQ(p->fee, 150);  // fixed disbursement rule
  EXPECT_EQ(p->required_total, 10'150);
  EXPECT_EQ(p->confirmation_method, "NONE");
  EXPECT_FALSE(p->needs_otp);
}

TEST_F(Planner, AmountBoundsAreInclusiveAndNamed) {
  EXPECT_TRUE(plan(body(100)).ok());        // the service's min_amount
  EXPECT_TRUE(plan(body(1'000'000)).ok());  // the service's max_amount
  EXPECT_EQ(problem(plan(body(99)), "amount"), "must be at least 100 for MTN_MOMO_CMR");
  EXPECT_EQ(problem(plan(body(1'000'001)), "amount"), "must be at most 1000000 for MTN_MOMO_CMR");
  EXPECT_EQ(problem(plan(body(0)), "amount"), "must be a positive integer (minor units)");
  EXPECT_EQ(problem(plan(body(-1)), "amount"), "must be a positive integer (minor units)");
  EXPECT_EQ(problem(plan(body(5'000'001)), "amount"), "must be at most 5000000");  // the absolute cap first
  auto b = body();
  b["amount"] = 100.5;
  EXPECT_EQ(problem(plan(b), "amount"), "must be an integer");
  b.erase("amount");
  EXPECT_EQ(problem(plan(b), "amount"), "is required");
}

TEST_F(Planner, EveryProblemIsReportedAtOnceUnderItsField) {
  auto b = body();
  b["amount"] = "100";
  b["currency"] = "xaf";
  b["transaction_uuid"] = "order-42";
  b["channel"] = "CARD";
  b["fee"] = 0;
  b["colour"] = "blue";
  b["customer_wallet"] = "12";
  auto p = plan(b);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().kind, ErrorKind::invalid);
  EXPECT_EQ(p.error().code, "empty_data");
  EXPECT_EQ(problem(p, "amount"), "must be an integer");
  EXPECT_EQ(problem(p, "currency"), "must be a 3-letter ISO 4217 code");
  EXPECT_EQ(problem(p, "transaction_uuid"), "must be a UUID (8-4-4-4-12 hex digits)");
  EXPECT_EQ(problem(p, "channel"), "must be PROVIDER, WALLET or AUTO");
  EXPECT_EQ(problem(p, "fee"), "is set by the platform and cannot be sent");
  EXPECT_EQ(problem(p, "colour"), "is not a known field");
  EXPECT_NE(problem(p, "customer_wallet"), "") << "the catalog's checks run with the body's";
}

TEST_F(Planner, CatalogProblemsNameTheirField) {
  EXPECT_EQ(problem(plan(body(10'000, "NOPE_CMR")), "provider"), "is not a known service code");
  EXPECT_EQ(problem(plan(body(10'000, "CLOSED_CMR")), "provider"), "is not active");
  auto b = body();
  b["currency"] = "XOF";
  EXPECT_EQ(problem(plan(b), "currency"), "must be XAF, the currency of MTN_MOMO_CMR");
  auto civ = body(10'000, "MTN_MOMO_CIV");
  civ["currency"] = "XOF";
  civ["customer_wallet"] = "2250700000000";
  auto denied = plan(civ);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().kind, ErrorKind::forbidden);
  EXPECT_EQ(denied.error().code, "access_denied");
  EXPECT_TRUE(denied.error().details.as_object().contains("provider"));
  merchant_.admin = true;
  EXPECT_TRUE(plan(civ).ok()) << "an admin credential is granted every country";
}

TEST_F(Planner, SplitLinesAreReadExactlyAndMustSumTo100) {
  auto b = body(1001);
  b["settlement_mode"] = "SPLIT";
  b["distribution"] = bj::array{bj::object{{"matricule", "MCH-CM-0001"}, {"rate", 33.3333}},
                                bj::object{{"matricule", "MCH-CM-0002"}, {"rate", 33.3333}},
                                bj::object{{"matricule", "MCH-CM-0003"}, {"rate", 33.3334}, {"description", "x"}}};
  json::FieldErrors errors;
  IntentRequest r = parse_intent(b, kCollection, errors);
  ASSERT_TRUE(errors.empty()) << bj::serialize(errors.details());
  ASSERT_EQ(r.distribution.size(), 3u);
  EXPECT_EQ(r.distribution[0].rate_ppm, 333'333);
  EXPECT_EQ(r.distribution[2].rate_ppm, 333'334);
  EXPECT_EQ(r.distribution[2].position, 2);
  EXPECT_EQ(r.distribution[2].description, "x");
  EXPECT_TRUE(plan_intent(r, inputs_).ok());

  b["distribution"] = bj::array{bj::object{{"matricule", "MCH-CM-0001"}, {"rate", 80}},
                                bj::object{{"matricule", "MCH-CM-0002"}, {"rate", 10.5}}};
  EXPECT_EQ(problem(plan(b), "distribution"), "rates must sum to 100 (they sum to 90.5)");
  b["distribution"] = bj::array{bj::object{{"matricule", "MCH-CM-0001"}, {"rate", 50.00001}},
                                bj::object{{"matricule", "MCH-CM-0002"}, {"rate", 49.99999}}};
  auto five_decimals = plan(b);
  EXPECT_NE(problem(five_decimals, "distribution[0].rate"), "");
  EXPECT_EQ(problem(five_decimals, "distribution"), "") << "no sum is reported over unreadable rates";
  b["distribution"] = bj::array{1, bj::object{{"matricule", "MCH-CM-0001"}, {"rate", 100}}};
  auto not_object = plan(b);
  EXPECT_EQ(problem(not_object, "distribution[0]"), "must be an object");
  EXPECT_EQ(problem(not_object, "distribution"), "");
  b["distribution"] = bj::array{bj::object{{"matricule", "MCH-CM-0002"}, {"rate", 50}},
                                bj::object{{"matricule", "MCH-CM-0002"}, {"rate", 50}, {"amount", 5}}};
  auto dup = plan(b);
  EXPECT_EQ(problem(dup, "distribution[1].matricule"), "appears more than once");
  EXPECT_EQ(problem(dup, "distribution[1].amount"), "is not a known field");
  b.erase("distribution");
  EXPECT_EQ(problem(plan(b), "distribution"), "is required with settlement_mode SPLIT (a non-empty array)");
  b["settlement_mode"] = "DIRECT";
  b["distribution"] = bj::array{bj::object{{"matricule", "MCH-CM-0002"}, {"rate", 100}}};
  EXPECT_EQ(problem(plan(b), "distribution"), "is only accepted with settlement_mode SPLIT");
}

TEST_F(Planner, CodeBuiltRequestsAreCheckedLikeBodies) {
  IntentRequest r;
  r.amount = 5000;
  r.currency = "XAF";
  r.transaction_uuid = "0b7c5a52-3d1e-4c4b-9f0e-6f7d8e9a0b1c";
  r.provider = "MTN_MOMO_CMR";
  r.customer_wallet = "237690000010";
  auto ok = plan_intent(r, inputs_);
  ASSERT_TRUE(ok.ok()) << bj::serialize(ok.error().details);
  EXPECT_EQ(ok->required_total, 5100);

  IntentRequest split = r;
  split.settlement_mode = kSplit;
  split.distribution = {SplitLine{0, "MCH-CM-0001", 600'000, {}, "", "{}"},
                        SplitLine{1, "MCH-CM-0002", 300'000, {}, "", "{}"}};
  auto short_split = plan_intent(split, inputs_);
  EXPECT_EQ(problem(short_split, "distribution"), "rates must sum to 100 (they sum to 90)");
  split.distribution[1].rate_ppm = 0;
  EXPECT_NE(problem(plan_intent(split, inputs_), "distribution[1].rate"), "");

  IntentRequest payout_split = r;
  payout_split.operation = kDisbursement;
  payout_split.settlement_mode = kSplit;
  EXPECT_EQ(problem(plan_intent(payout_split, inputs_), "settlement_mode"), "payouts are DIRECT");

  // The fingerprint of a code-built request follows its fields.
  IntentRequest other = r;
  EXPECT_EQ(request_fingerprint(r), request_fingerprint(other));
  other.amount += 1;
  EXPECT_NE(request_fingerprint(r), request_fingerprint(other));
  other = r;
  other.operation = kDisbursement;
  EXPECT_NE(request_fingerprint(r), request_fingerprint(other));
}

TEST_F(Planner, AutoPicksTheWalletOnlyWhenItCoversTheWalletPrice) {
  auto b = body(2000);
  b["channel"] = "AUTO";
  wallet_balance_ = std::nullopt;  // no platform wallet
  auto none = plan(b);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->channel, "PROVIDER");
  ASSERT_EQ(asked_.size(), 1u);
  EXPECT_EQ(asked_[0], "customer:237690000010/sandbox/XAF/available");
  wallet_balance_ = 1999;  // the wallet service is free: the price is the amount
  EXPECT_EQ(plan(b)->channel, "PROVIDER");
  wallet_balance_ = 2000;
  auto wallet = plan(b);
  ASSERT_TRUE(wallet.ok());
  EXPECT_EQ(wallet->channel, "WALLET");
  EXPECT_EQ(wallet->service_code, "SIKA_WALLET_CMR");
  EXPECT_EQ(wallet->connector, "wallet");
  EXPECT_EQ(wallet->fee, 0);
  EXPECT_EQ(wallet->confirmation_method, "OTP");
  EXPECT_TRUE(wallet->needs_otp);
  // A payout goes to an existing wallet whatever its balance.
  wallet_balance_ = 0;
  EXPECT_EQ(plan(b, kDisbursement)->channel, "WALLET");
  // Outside the sandbox AUTO never asks (wallet codes are sandbox-only). (Prod takes a number of
  // the operator's own block: 67 is MTN's in Cameroon.)
  merchant_.environment = "prod";
  b["customer_wallet"] = "670000010";
  asked_.clear();
  EXPECT_EQ(plan(b)->channel, "PROVIDER");
  EXPECT_TRUE(asked_.empty());
}

TEST_F(Planner, ChannelsThatCannotCarryTheRequestAreRefused) {
  auto b = body(2000, "SIKA_WALLET_CMR");
  EXPECT_EQ(problem(plan(b), "channel"), "SIKA_WALLET_CMR is a platform wallet service: use WALLET or AUTO");
  b["channel"] = "WALLET";
  merchant_.environment = "prod";
  EXPECT_NE(problem(plan(b), "channel"), "");
  // PROVIDER in prod needs the provider's own connector registered here.
  std::vector<std::string> looked_up;
  inputs_.has_connector = [&](std::string_view name) {
    looked_up.emplace_back(name);
    return false;
  };
  auto mtn_number = body(2000);
  mtn_number["customer_wallet"] = "670000010";  // prod takes a number of MTN's own block
  auto prod = plan(mtn_number);
  EXPECT_EQ(looked_up, std::vector<std::string>{"sandbox"}) << "the catalog's connector of MTN";
  ASSERT_FALSE(prod.ok());
  EXPECT_EQ(prod.error().kind, ErrorKind::unavailable);
  EXPECT_EQ(prod.error().code, "provider_unavailable");
  inputs_.has_connector = [](std::string_view) { return true; };
  EXPECT_TRUE(plan(mtn_number).ok());
}

TEST_F(Planner, OrangeNeedsAnOtp) {
  auto p = plan(body(2000, "ORANGE_MONEY_CMR"));
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->needs_otp);
  EXPECT_FALSE(plan(body(2000, "ORANGE_MONEY_CMR"), kDisbursement)->needs_otp) << "payouts never ask the customer";
  // A customer who approves on the operator's own page (Orange Money's Web Payment) is asked for no
  // code of ours; a connector that prompts on the phone keeps the service's code.
  inputs_.approves_at_operator = [](std::string_view name) { return name == "sandbox"; };
  EXPECT_FALSE(plan(body(2000, "ORANGE_MONEY_CMR"))->needs_otp);
  inputs_.approves_at_operator = [](std::string_view) { return false; };
  EXPECT_TRUE(plan(body(2000, "ORANGE_MONEY_CMR"))->needs_otp);
}

// In prod, a number of another operator's block is refused under customer_wallet, naming both
// operators; an unknown block, a provider without blocks (the wallet) and the sandbox's test
// numbers are accepted (docs/payments.md, "The customer's operator").
TEST_F(Planner, ProdRefusesANumberOfAnotherOperatorsBlock) {
  merchant_.environment = "prod";
  auto orange_number = body(10'000, "MTN_MOMO_CMR");
  orange_number["customer_wallet"] = "+237 699 00 00 10";
  auto refused = plan(orange_number);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::invalid);
  EXPECT_EQ(refused.error().code, "empty_data");
  EXPECT_EQ(problem(refused, "customer_wallet"),
            "belongs to Orange, not MTN (the operator is the one of the service chosen in provider)");
  ASSERT_NE(refused.error().problem("customer_wallet"), nullptr);
  EXPECT_EQ(refused.error().problem("customer_wallet")->reason, Reason::other_operator_number);
  EXPECT_EQ(problem(plan(orange_number, kDisbursement), "customer_wallet"),
            "belongs to Orange, not MTN (the operator is the one of the service chosen in provider)")
      << "a payout to another operator's number is refused too";

  auto nexttel = body(10'000, "ORANGE_MONEY_CMR");
  nexttel["customer_wallet"] = "237660000010";
  EXPECT_EQ(problem(plan(nexttel), "customer_wallet"),
            "belongs to Nexttel, not Orange (the operator is the one of the service chosen in provider)");

  auto mtn_number = body(10'000, "MTN_MOMO_CMR");
  mtn_number["customer_wallet"] = "237670000010";
  EXPECT_TRUE(plan(mtn_number).ok()) << "an MTN number through MTN";
  auto unknown_block = body(10'000, "MTN_MOMO_CMR");
  unknown_block["customer_wallet"] = "237630000010";  // 63: in no block of the plan
  EXPECT_TRUE(plan(unknown_block).ok()) << "an unknown prefix is never refused";
}

TEST_F(Planner, SandboxTestNumbersPayAnyOperator) {
  ASSERT_EQ(merchant_.environment, "sandbox");
  auto p = plan(body(10'000, "MTN_MOMO_CMR"));  // 690000010: an Orange block in Cameroon
  ASSERT_TRUE(p.ok()) << bj::serialize(p.error().details);
  EXPECT_EQ(p->msisdn, "237690000010");
}

}  // namespace
}  // namespace sika::payments
