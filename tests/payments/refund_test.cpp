// Refunds (docs/refunds.md): the refund lifecycle's table walked on both backends, the journals of a
// refund (pure), and refunds through the service on both backends: the WALLET channel at once, the
// sandbox operator by its callback, partial and full refunds (REFUNDED), every refusal with its code
// and details, idempotency on refund_uuid, a split refunded in proportion, and concurrent refunds of
// one collection and a refund racing a payout of the same balance, each ending with a clean ledger.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <thread>

#include "payments/fixture.hpp"
#include "payments/refund_store.hpp"
#include "payments/refund_transitions.hpp"
#include "payments/store.hpp"
#include "support/state_machine_walk.hpp"
#include "web/acting.hpp"

namespace sika::payments::testing {
namespace {

using R = RefundStatus;

// ---- the lifecycle table (pure and walked) ---------------------------------------------------------

TEST(RefundLifecycle, OnlyDocumentedMovesAreLegalAndEachEmitsTheEvent) {
  const R all[] = {R::pending, R::processing, R::completed, R::failed};
  const std::set<std::pair<R, R>> legal = {{R::pending, R::processing},
                                           {R::pending, R::completed},
                                           {R::pending, R::failed},
                                           {R::processing, R::completed},
                                           {R::processing, R::failed}};
  for (R from : all)
    for (R to : all) {
      EXPECT_EQ(kRefundStatus.legal(from, to), legal.contains({from, to}))
          << to_string(from) << " -> " << to_string(to);
      if (const auto* e = kRefundStatus.edge(from, to)) {
        EXPECT_EQ(e->event, kRefundStatusChangedEvent);
      }
    }
  for (R s : all) {
    EXPECT_EQ(parse_refund_status(to_string(s)), s);
    EXPECT_EQ(is_final(s), s == R::completed || s == R::failed);
  }
  EXPECT_FALSE(parse_refund_status("pending").has_value());
}

TEST(RefundLifecycle, ACollectionBecomesRefundedOnlyFromCompleted) {
  for (TxStatus from : {TxStatus::initiated, TxStatus::pending, TxStatus::completed, TxStatus::failed,
                        TxStatus::expired, TxStatus::cancelled, TxStatus::refunded})
    for (auto operation : {kCollection, kDisbursement}) {
      Transaction tx;
      tx.operation = operation;
      tx.channel = kChannelProvider;
      tx.status = from;
      EXPECT_EQ(legal_move(tx, TxStatus::refunded), operation == kCollection && from == TxStatus::completed)
          << operation << " " << to_string(from);
    }
  EXPECT_TRUE(is_terminal(TxStatus::refunded));
  EXPECT_FALSE(legal_move(TxStatus::refunded, TxStatus::completed));
}

// ---- journals (pure) -----------------------------------------------------------------------------------

Refund sample_refund(std::string_view channel, std::int64_t amount) {
  Refund r;
  r.id = 9;
  r.reference = "RF-SAMPLE";
  r.environment = "sandbox";
  r.currency = "XAF";
  r.amount = amount;
  r.channel = std::string(channel);
  return r;
}

Transaction sample_collection(std::string_view channel) { return sample_transaction(kCollection, channel, 1000); }

TEST(RefundJournal, EveryStepBalancesMovesTheAmountAndEndsWhereItShould) {
  const std::vector<SplitShare> shares = {{7, 334}, {8, 333}, {9, 333}};
  for (auto channel : {kRefundWallet, kRefundSandbox, kRefundOperator, kRefundPayout}) {
    const Refund refund = sample_refund(channel, 1000);
    const Transaction tx = sample_collection(channel == kRefundWallet ? kChannelWallet : kChannelProvider);
    struct Step {
      std::optional<R> from;
      R to;
      std::string_view kind;
    };
    for (const Step& s :
         {Step{std::nullopt, R::pending, ledger::kRefundReserve}, Step{R::pending, R::completed, ledger::kRefund},
          Step{R::processing, R::completed, ledger::kRefund}, Step{R::pending, R::failed, ledger::kRefundRelease},
          Step{R::processing, R::failed, ledger::kRefundRelease}}) {
      const ledger::Posting p = refund_journal(refund, tx, s.from, s.to, shares);
      std::int64_t debits = 0, credits = 0;
      for (const auto& leg : p.legs) debits += leg.debit, credits += leg.credit;
      EXPECT_EQ(p.kind, s.kind) << channel;
      EXPECT_EQ(p.refund_id, refund.id);
      EXPECT_FALSE(p.transaction_id.has_value()) << "a refund's journal is keyed by the refund";
      EXPECT_EQ(debits, credits) << channel << " " << s.kind;
      EXPECT_EQ(debits, refund.amount) << channel << " " << s.kind;
      if (s.kind == ledger::kRefund) {
        const auto& customer = p.legs.back().account;
        EXPECT_EQ(customer.text(), channel == kRefundWallet
                                       ? ledger::customer_wallet(tx.customer_wallet, "sandbox", "XAF").text()
                                       : ledger::operator_clearing(tx.service_code, "sandbox", "XAF").text());
        EXPECT_EQ(p.legs.back().credit, refund.amount);
      }
    }
    EXPECT_TRUE(refund_journal(refund, tx, R::pending, R::processing, shares).legs.empty());
  }
}

TEST_P(PaymentsTest, RefundsMoveOnlyAlongTheirTable) { sika::testing::walk_every_move(*db_, kRefundStatus); }

// ---- through the service ---------------------------------------------------------------------------------

class RefundTest : public PaymentsTest {
 protected:
  void SetUp() override {
    PaymentsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    service_->start();
  }

  static bj::object refund_body(std::string_view reference, std::optional<std::int64_t> amount = std::nullopt) {
    bj::object b{{"transaction_reference", reference}, {"refund_uuid", uuid_v4()}, {"reason", "REQUESTED_BY_CUSTOMER"}};
    if (amount) b["amount"] = *amount;
    return b;
  }

  // A COMPLETED sandbox collection of `amount` (2 % fee borne by the customer) from `wallet`.
  std::string collected(const web::Principal& p, std::int64_t amount, std::string wallet = "237690000000",
                        bj::object body = {}) {
    if (body.empty()) body = intent_body(wallet, amount);
    auto rec = create_ok(p, body);
    const std::string ref(rec.at("transaction_reference").as_string());
    auto [st, env] = call(&Service::execute, p, bj::object{{"transaction_reference", ref}});
    EXPECT_EQ(st, 200) << bj::serialize(env);
    EXPECT_EQ(wait_status(p, ref, "PENDING"), "COMPLETED");
    return ref;
  }

  // A COMPLETED WALLET collection of `amount` from the demo wallet (fixed sandbox code).
  std::string wallet_collected(const web::Principal& p, std::int64_t amount) {
    EXPECT_TRUE(service_->fund_wallet("sandbox", kWallet, "XAF", amount, "seed").ok());
    auto body = intent_body(std::string(kWallet), amount, "SIKA_WALLET_CMR");
    body["channel"] = "WALLET";
    auto rec = create_ok(p, body);
    const std::string ref(rec.at("transaction_reference").as_string());
    auto [st, env] = call(&Service::execute, p, bj::object{{"transaction_reference", ref}, {"otp", "123456"}});
    EXPECT_EQ(st, 200) << bj::serialize(env);
    EXPECT_EQ(env.at("data").at("status"), "COMPLETED");
    return ref;
  }

  std::pair<int, bj::object> refund(const web::Principal& p, const bj::object& body) {
    return call(&Service::create_refund, p, body);
  }

  // Polls a refund until it is final.
  bj::object wait_refund(const web::Principal& p, std::string_view reference) {
    bj::object data;
    for (int i = 0; i < 500; ++i) {
      auto [st, env] = call(&Service::refund_status, p, bj::object{{"refund_reference", reference}});
      EXPECT_EQ(st, 200) << bj::serialize(env);
      if (st != 200) return {};
      data = env.at("data").as_object();
      if (data.at("status") == "COMPLETED" || data.at("status") == "FAILED") return data;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return data;
  }

  std::int64_t available(const merchant::Merchant& m) {
    return balance(ledger::merchant_available(m.id, "sandbox", "XAF"));
  }
  std::int64_t pending(const merchant::Merchant& m) {
    return balance(ledger::merchant_pending(m.id, "sandbox", "XAF"));
  }

  static constexpr std::string_view kWallet = "237690000100";
};

INSTANTIATE_TEST_SUITE_P(Backends, RefundTest, ::testing::Values("sqlite", "postgres"));

TEST_P(RefundTest, AWalletCollectionIsRefundedAtOnceInPartsThenRefunded) {
  auto p = principal(m1_);
  const std::string ref = wallet_collected(p, 5'000);
  EXPECT_EQ(available(m1_), 5'000);
  const std::int64_t wallet_before = balance(ledger::customer_wallet(kWallet, "sandbox", "XAF"));

  auto [st, env] = refund(p, refund_body(ref, 2'000));
  ASSERT_EQ(st, 200) << bj::serialize(env);
  const auto& data = env.at("data").as_object();
  EXPECT_EQ(data.at("status"), "COMPLETED");
  EXPECT_EQ(data.at("amount").as_int64(), 2'000);
  EXPECT_EQ(data.at("currency"), "XAF");
  EXPECT_EQ(data.at("transaction_reference").as_string(), ref);
  EXPECT_EQ(data.at("reason"), "REQUESTED_BY_CUSTOMER");
  EXPECT_TRUE(data.at("failure_reason").is_null());
  EXPECT_TRUE(std::string(data.at("refund_reference").as_string()).starts_with("RF-"));
  for (auto field : {"refund_uuid", "provider_reference", "created_at", "updated_at"})
    EXPECT_TRUE(data.contains(field));
  EXPECT_EQ(available(m1_), 3'000);
  EXPECT_EQ(pending(m1_), 0);
  EXPECT_EQ(balance(ledger::customer_wallet(kWallet, "sandbox", "XAF")), wallet_before + 2'000);
  auto tx = status_of(p, ref);
  EXPECT_EQ(tx.at("status"), "COMPLETED");
  EXPECT_EQ(tx.at("refunded_amount").as_int64(), 2'000);

  // No amount: everything still refundable; the collection is then REFUNDED.
  auto [st2, env2] = refund(p, refund_body(ref));
  ASSERT_EQ(st2, 200) << bj::serialize(env2);
  EXPECT_EQ(env2.at("data").at("amount").as_int64(), 3'000);
  EXPECT_EQ(env2.at("data").at("status"), "COMPLETED");
  tx = status_of(p, ref);
  EXPECT_EQ(tx.at("status"), "REFUNDED");
  EXPECT_EQ(tx.at("refunded_amount").as_int64(), 5'000);
  EXPECT_EQ(available(m1_), 0);
  // One event per refund move, one for the collection's move to REFUNDED.
  EXPECT_EQ(count("SELECT COUNT(*) FROM events WHERE event_type = 'refund.status_changed'"), 2);
  EXPECT_EQ(count("SELECT COUNT(*) FROM events WHERE event_type = 'transaction.status_changed' AND subject = ? "
                  "AND payload LIKE '%REFUNDED%'",
                  {ref}),
            1);
  // Nothing is left: a further refund is refused, naming why.
  auto [st3, env3] = refund(p, refund_body(ref, 1));
  EXPECT_EQ(st3, 409) << bj::serialize(env3);
  EXPECT_EQ(env3.at("message"), "not_refundable");
  EXPECT_TRUE(env3.at("error").at("details").as_object().contains("transaction_reference"));
  expect_ledger_clean();
}

TEST_P(RefundTest, ASandboxRefundCompletesByTheOperatorsCallbackAndReservesUntilThen) {
  auto p = principal(m1_);
  const std::string ref = collected(p, 10'000);
  EXPECT_EQ(available(m1_), 10'000);
  auto [st, env] = refund(p, refund_body(ref, 4'000));
  ASSERT_EQ(st, 200) << bj::serialize(env);
  const std::string refund_ref(env.at("data").at("refund_reference").as_string());
  const std::string first = std::string(env.at("data").at("status").as_string());
  EXPECT_TRUE(first == "PENDING" || first == "PROCESSING" || first == "COMPLETED") << first;
  EXPECT_EQ(available(m1_), 6'000) << "reserved at acceptance";
  auto done = wait_refund(p, refund_ref);
  EXPECT_EQ(done.at("status"), "COMPLETED");
  EXPECT_EQ(available(m1_), 6'000);
  EXPECT_EQ(pending(m1_), 0);
  EXPECT_EQ(status_of(p, ref).at("refunded_amount").as_int64(), 4'000);
  expect_ledger_clean();
}

TEST_P(RefundTest, ARefundTheOperatorRefusesFailsAndReleasesTheReservation) {
  auto p = principal(m1_);
  // ...0006 pays, then calls back twice; a forced failure of its refund stands for a refusal.
  const std::string ref = collected(p, 10'000);
  auto [st, env] = refund(p, refund_body(ref, 4'000));
  ASSERT_EQ(st, 200);
  const std::string refund_ref(env.at("data").at("refund_reference").as_string());
  auto done = wait_refund(p, refund_ref);
  ASSERT_EQ(done.at("status"), "COMPLETED");
  // An operator answer that says FAILED moves a refund in flight to FAILED and gives the funds back.
  Refund stuck;
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(auto tx, tables::load(c, ref));
                   stuck.reference = "RF-TEST-FAIL";
                   stuck.merchant_id = m1_.id;
                   stuck.transaction_id = tx.id;
                   stuck.transaction_reference = ref;
                   stuck.environment = "sandbox";
                   stuck.refund_uuid = uuid_v4();
                   stuck.request_hash = "h";
                   stuck.provider_reference = uuid_v7();
                   stuck.amount = 1'000;
                   stuck.currency = "XAF";
                   stuck.reason = "OTHER";
                   stuck.metadata = "{}";
                   stuck.channel = std::string(kRefundSandbox);
                   stuck.connector = "sandbox";
                   stuck.expires_at = now_ms() + 60'000;
                   stuck.created_at = stuck.updated_at = now_ms();
                   SIKA_ASSIGN_OR_RETURN(auto keyed, tables::insert_refund_or_replay(c, stuck));
                   stuck.id = *keyed.id;
                   SIKA_ASSIGN_OR_RETURN(bool reserved, tables::reserve_refundable(c, tx.id, stuck.amount));
                   if (!reserved) return internal_error(bj::string("not reserved"));
                   ledger::Learned learned;
                   return reserve_refund(c, stuck, tx, now_ms(), nullptr, learned);
                 })
                  .ok());
  EXPECT_EQ(available(m1_), 5'000);
  OperatorStatus failed;
  failed.state = OperatorStatus::State::failed;
  failed.reason = "OPERATOR_REFUSED";
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   ledger::Learned learned;
                   SIKA_ASSIGN_OR_RETURN(bool moved, transition(c, stuck, refund_move_for(failed, "callback"), now_ms(),
                                                                nullptr, learned));
                   if (!moved) return internal_error(bj::string("not moved"));
                   return {};
                 })
                  .ok());
  EXPECT_EQ(available(m1_), 6'000) << "the reservation is given back";
  EXPECT_EQ(status_of(p, ref).at("refunded_amount").as_int64(), 4'000);
  auto [st2, env2] = call(&Service::refund_status, p, bj::object{{"refund_reference", "RF-TEST-FAIL"}});
  ASSERT_EQ(st2, 200);
  EXPECT_EQ(env2.at("data").at("status"), "FAILED");
  EXPECT_EQ(env2.at("data").at("failure_reason"), "OPERATOR_REFUSED");
  expect_ledger_clean();
}

TEST_P(RefundTest, EveryRefusalHasItsCodeAndPreciseDetails) {
  auto p = principal(m1_);
  const std::string ref = wallet_collected(p, 5'000);
  auto details = [](const bj::object& env) { return env.at("error").at("details").as_object(); };
  // Bad input: 400 naming each field.
  struct Bad {
    std::function<void(bj::object&)> edit;
    std::string field;
  };
  for (const Bad& b : std::vector<Bad>{
           {[](bj::object& o) { o.erase("refund_uuid"); }, "refund_uuid"},
           {[](bj::object& o) { o["refund_uuid"] = "nope"; }, "refund_uuid"},
           {[](bj::object& o) { o["amount"] = 0; }, "amount"},
           {[](bj::object& o) { o["amount"] = "100"; }, "amount"},
           {[](bj::object& o) { o["reason"] = "BORED"; }, "reason"},
           {[](bj::object& o) { o.erase("reason"); }, "reason"},
           {[](bj::object& o) { o.erase("transaction_reference"); }, "transaction_reference"},
           {[](bj::object& o) { o["metadata"] = "x"; }, "metadata"},
           {[](bj::object& o) { o["fee"] = 1; }, "fee"},
       }) {
    auto body = refund_body(ref, 100);
    b.edit(body);
    auto [st, env] = refund(p, body);
    EXPECT_EQ(st, 400) << bj::serialize(env);
    EXPECT_TRUE(details(env).contains(b.field)) << b.field << " " << bj::serialize(env);
  }
  // Beyond what is refundable: 400 naming amount with the figure.
  auto [st1, env1] = refund(p, refund_body(ref, 5'001));
  EXPECT_EQ(st1, 400) << bj::serialize(env1);
  EXPECT_EQ(details(env1).at("refundable").as_int64(), 5'000);
  EXPECT_TRUE(details(env1).contains("amount"));
  // Another merchant's collection: 404, as an unknown one.
  auto [st2, env2] = refund(principal(m3_), refund_body(ref, 100));
  EXPECT_EQ(st2, 404) << bj::serialize(env2);
  auto [st2b, env2b] = refund(p, refund_body("TX-NOSUCHTHING", 100));
  EXPECT_EQ(st2b, 404);
  EXPECT_EQ(details(env2), details(env2b)) << "no answer tells another merchant's collection from none";
  // Not COMPLETED: 409 not_refundable naming its status.
  auto initiated = create_ok(p, intent_body("237690000000", 1'000));
  auto [st3, env3] = refund(p, refund_body(std::string(initiated.at("transaction_reference").as_string()), 100));
  EXPECT_EQ(st3, 409) << bj::serialize(env3);
  EXPECT_EQ(env3.at("message"), "not_refundable");
  EXPECT_NE(bj::serialize(details(env3)).find("INITIATED"), std::string::npos);
  // The merchant's balance cannot cover it (spent by a payout): 409 insufficient_funds naming amount.
  auto payout = intent_body("237690000000", 4'000);
  payout.erase("metadata");
  auto [sp, envp] = call(&Service::disbursement_intent, p, payout);
  ASSERT_EQ(sp, 200) << bj::serialize(envp);
  auto [st4, env4] = refund(p, refund_body(ref, 2'000));
  EXPECT_EQ(st4, 409) << bj::serialize(env4);
  EXPECT_EQ(env4.at("message"), "insufficient_funds");
  EXPECT_TRUE(details(env4).contains("amount"));
  EXPECT_EQ(bj::serialize(details(env4)).find("merchant:"), std::string::npos) << "no account is named";
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_refunds"), 0) << "a refused refund leaves nothing";
  EXPECT_EQ(status_of(p, ref).at("refunded_amount").as_int64(), 0);
  expect_ledger_clean();
}

TEST_P(RefundTest, TheSameRefundUuidIsTheSameRefundAndAnotherBodyIsRefused) {
  auto p = principal(m1_);
  const std::string ref = wallet_collected(p, 5'000);
  auto body = refund_body(ref, 1'000);
  auto [st, env] = refund(p, body);
  ASSERT_EQ(st, 200) << bj::serialize(env);
  auto [st2, env2] = refund(p, body);
  ASSERT_EQ(st2, 200) << bj::serialize(env2);
  EXPECT_EQ(env2.at("data"), env.at("data"));
  auto other = body;
  other["amount"] = 1'001;
  auto [st3, env3] = refund(p, other);
  EXPECT_EQ(st3, 409) << bj::serialize(env3);
  EXPECT_TRUE(env3.at("error").at("details").as_object().contains("refund_uuid"));
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_refunds"), 1);
  EXPECT_EQ(available(m1_), 4'000);
  // A replay of a refund that took everything left stays the same refund after the collection is REFUNDED.
  auto all = refund_body(ref);
  auto [st4, env4] = refund(p, all);
  ASSERT_EQ(st4, 200);
  auto [st5, env5] = refund(p, all);
  ASSERT_EQ(st5, 200) << bj::serialize(env5);
  EXPECT_EQ(env5.at("data"), env4.at("data"));
  expect_ledger_clean();
}

TEST_P(RefundTest, OneRefundInFlightPerCollection) {
  auto p = principal(m1_);
  // ...0005: the sandbox operator keeps it pending for ever.
  const std::string ref = collected(p, 10'000);
  ASSERT_TRUE(
      db_->write([&](store::Conn& c) -> Status {
           // The payer's number becomes one whose orders stay pending at the sandbox operator.
           SIKA_TRY(c.exec("UPDATE pay_transactions SET customer_wallet = '237690000005' WHERE reference = ?", {ref}));
           return {};
         })
          .ok());
  auto [st, env] = refund(p, refund_body(ref, 1'000));
  ASSERT_EQ(st, 200) << bj::serialize(env);
  EXPECT_NE(env.at("data").at("status"), "COMPLETED");
  auto [st2, env2] = refund(p, refund_body(ref, 1'000));
  EXPECT_EQ(st2, 409) << bj::serialize(env2);
  EXPECT_EQ(env2.at("message"), "refund_in_progress");
  EXPECT_EQ(env2.at("error").at("details").at("refund_reference"), env.at("data").at("refund_reference"));
  EXPECT_EQ(available(m1_), 9'000);
  expect_ledger_clean();
}

TEST_P(RefundTest, ASplitCollectionRefundsEachBeneficiaryInProportion) {
  auto p = principal(m1_);
  auto body = intent_body("237690000000", 1'001);
  body["settlement_mode"] = "SPLIT";
  body["distribution"] = bj::array{bj::object{{"matricule", "MCH-CM-0001"}, {"rate", 50}},
                                   bj::object{{"matricule", "MCH-CM-0002"}, {"rate", 50}}};
  const std::string ref = collected(p, 0, "", body);
  EXPECT_EQ(available(m1_), 501);
  EXPECT_EQ(available(m3_), 500);
  auto [st, env] = refund(p, refund_body(ref, 101));
  ASSERT_EQ(st, 200) << bj::serialize(env);
  // 101 by 50/50: 50.5 each, the unit left to the first line (allocate_split).
  EXPECT_EQ(available(m1_), 501 - 51);
  EXPECT_EQ(available(m3_), 500 - 50);
  auto done = wait_refund(p, std::string(env.at("data").at("refund_reference").as_string()));
  EXPECT_EQ(done.at("status"), "COMPLETED");
  EXPECT_EQ(pending(m1_), 0);
  EXPECT_EQ(pending(m3_), 0);
  expect_ledger_clean();
}

TEST_P(RefundTest, ListsAreTheMerchantsFilteredAndPaged) {
  auto p = principal(m1_);
  const std::string a = wallet_collected(p, 3'000);
  const std::string b = wallet_collected(p, 3'000);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(refund(p, refund_body(a, 100)).first, 200);
  ASSERT_EQ(refund(p, refund_body(b, 100)).first, 200);
  auto list = [&](const web::Principal& who, std::string query) {
    web::Request r = request(who, bj::object{});
    r.method = "GET";
    EXPECT_TRUE(web::parse_target("/refunds" + query, r).ok());
    auto res = web::respond(r, service_->refunds(r));
    return std::make_pair(res.status, parse(res));
  };
  auto [st, env] = list(p, "?transaction_reference=" + a + "&limit=2");
  ASSERT_EQ(st, 200) << bj::serialize(env);
  EXPECT_EQ(env.at("data").as_array().size(), 2u);
  EXPECT_EQ(env.at("meta").at("pagination").at("total").as_int64(), 3);
  auto [st2, env2] = list(p, "?transaction_reference=" + a + "&limit=2&page=2");
  EXPECT_EQ(env2.at("data").as_array().size(), 1u);
  auto [st3, env3] = list(p, "?status=COMPLETED");
  EXPECT_EQ(env3.at("meta").at("pagination").at("total").as_int64(), 4);
  auto [st4, env4] = list(p, "?status=DONE");
  EXPECT_EQ(st4, 400);
  EXPECT_TRUE(env4.at("error").at("details").as_object().contains("status"));
  auto [st5, env5] = list(principal(m3_), "");
  EXPECT_EQ(env5.at("data").as_array().size(), 0u) << "another merchant sees none of them";
}

// ---- races -----------------------------------------------------------------------------------------

// Twelve refunds of one collection at once, each of 700 of its 3000, with their own refund_uuid, from
// a merchant whose balance could pay more (another collection): the database lets one be in flight at a
// time and never more than the amount be reserved or refunded (four at most; 4 x 700 leaves 200).
TEST_P(RefundTest, ConcurrentRefundsOfOneCollectionNeverExceedWhatWasCollected) {
  auto p = principal(m1_);
  (void)wallet_collected(p, 20'000);  // balance beyond the collection refunded
  for (int round = 0; round < 2; ++round) {
    const std::string ref = round == 0 ? wallet_collected(p, 3'000) : collected(p, 3'000);
    std::atomic<int> accepted{0}, refused{0}, other{0};
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 12; ++i)
      threads.emplace_back([&] {
        ++ready;
        while (ready.load() < 12) std::this_thread::yield();
        auto [st, env] = refund(p, refund_body(ref, 700));
        const std::string code = env.contains("message") ? std::string(env.at("message").as_string()) : "";
        if (st == 200)
          ++accepted;
        else if ((st == 409 && code == "refund_in_progress") || (st == 400 && code == "empty_data"))
          ++refused;
        else
          ++other, ADD_FAILURE() << st << " " << bj::serialize(env);
      });
    for (auto& t : threads) t.join();
    EXPECT_EQ(other.load(), 0);
    EXPECT_GE(accepted.load(), 1);
    EXPECT_LE(accepted.load(), 4);
    // Whatever is still in flight ends; then what was refunded is at most what was collected.
    for (int i = 0; i < 500 && count("SELECT COUNT(*) FROM pay_refunds WHERE status IN ('PENDING', 'PROCESSING')") > 0;
         ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_LE(count("SELECT COALESCE(SUM(amount), 0) FROM pay_refunds WHERE transaction_reference = ? AND "
                    "status = 'COMPLETED'",
                    {ref}),
              3'000);
    EXPECT_LE(status_of(p, ref).at("refunded_amount").as_int64(), 3'000);
  }
  EXPECT_GE(available(m1_), 0);
  expect_ledger_clean();
}

// What a caller of Service::refund writes in the refund's own unit (the dashboard's audit entry):
// committed with the refund, once, however many times the same refund_uuid is sent at once; never
// for a replay; its error refuses the whole unit (no refund, nothing reserved).
TEST_P(RefundTest, TheCreatedHookCommitsWithTheRefundOnceAndItsErrorLeavesNothing) {
  auto p = principal(m1_);
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_TRY(
                       c.exec("CREATE TABLE test_refund_marks (refund_reference TEXT PRIMARY KEY, amount BIGINT)"));
                   return {};
                 })
                  .ok());
  std::atomic<int> runs{0};
  Service::RefundCreated mark = [&](store::Conn& c, const Refund& r) -> Status {
    ++runs;
    SIKA_TRY(c.exec("INSERT INTO test_refund_marks (refund_reference, amount) VALUES (?, ?)", {r.reference, r.amount}));
    return {};
  };
  auto request_of = [](const bj::object& body) {
    json::FieldErrors errors;
    RefundRequest r = parse_refund(body, errors);
    EXPECT_TRUE(errors.status().ok());
    return r;
  };
  for (int round = 0; round < 2; ++round) {
    const std::string ref = round == 0 ? wallet_collected(p, 4'000) : collected(p, 4'000);
    const std::int64_t before = available(m1_);
    // The hook refuses: nothing of the unit remains.
    Service::RefundCreated refuse = [](store::Conn&, const Refund&) -> Status {
      return make_error(ErrorKind::conflict, "conflict", bj::object{{"refund_uuid", "refused by the caller"}});
    };
    auto refused = service_->refund(request_of(refund_body(ref, 1'000)), web::acting(p), refuse);
    ASSERT_FALSE(refused.ok());
    EXPECT_TRUE(refused.error().is(ErrorKind::conflict));
    EXPECT_EQ(count("SELECT COUNT(*) FROM pay_refunds WHERE transaction_reference = ?", {ref}), 0);
    EXPECT_EQ(available(m1_), before);
    EXPECT_EQ(status_of(p, ref).at("refunded_amount").as_int64(), 0);

    // The same refund_uuid sent by 8 callers at once: one refund, one mark, every caller gets it.
    const RefundRequest same = request_of(refund_body(ref, 1'500));
    std::vector<std::string> got(8);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i)
      threads.emplace_back([&, i] {
        ++ready;
        while (ready.load() < 8) std::this_thread::yield();
        auto r = service_->refund(same, web::acting(p), mark);
        if (r)
          got[i] = r->reference;
        else
          ADD_FAILURE() << r.error().code << " " << bj::serialize(r.error().details);
      });
    for (auto& t : threads) t.join();
    for (const auto& g : got) EXPECT_EQ(g, got[0]);
    EXPECT_EQ(count("SELECT COUNT(*) FROM pay_refunds WHERE transaction_reference = ?", {ref}), 1);
    EXPECT_EQ(count("SELECT COUNT(*) FROM test_refund_marks WHERE refund_reference = ?", {got[0]}), 1);
    EXPECT_EQ(count("SELECT amount FROM test_refund_marks WHERE refund_reference = ?", {got[0]}), 1'500);
    // A replay afterwards: the same refund, the hook not run.
    const int runs_before = runs.load();
    auto again = service_->refund(same, web::acting(p), mark);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->reference, got[0]);
    EXPECT_EQ(runs.load(), runs_before);
    (void)wait_refund(p, got[0]);
  }
  EXPECT_EQ(count("SELECT COUNT(*) FROM test_refund_marks"), 2);
  expect_ledger_clean();
}

// A refund and a payout race for the same balance: whichever commits first takes it, the other is
// refused, and the merchant's available balance never goes below zero.
TEST_P(RefundTest, ARefundRacingAPayoutOfTheSameBalanceNeverDrivesItNegative) {
  auto p = principal(m1_);
  for (int round = 0; round < 6; ++round) {
    const std::string ref = wallet_collected(p, 2'000);
    const std::int64_t before = available(m1_);
    std::atomic<int> ready{0};
    int refund_status = 0, payout_status = 0;
    std::thread a([&] {
      ++ready;
      while (ready.load() < 2) std::this_thread::yield();
      refund_status = refund(p, refund_body(ref, 2'000)).first;
    });
    std::thread b([&] {
      ++ready;
      while (ready.load() < 2) std::this_thread::yield();
      auto payout = intent_body("237690000000", before - 150);  // required_total = the whole balance
      payout.erase("metadata");
      payout_status = call(&Service::disbursement_intent, p, payout).first;
    });
    a.join();
    b.join();
    EXPECT_GE(available(m1_), 0);
    EXPECT_TRUE(refund_status == 200 || refund_status == 409) << refund_status;
    EXPECT_TRUE(payout_status == 200 || payout_status == 400) << payout_status;
    EXPECT_FALSE(refund_status == 200 && payout_status == 200) << "both took the same balance";
  }
  expect_ledger_clean();
}

}  // namespace
}  // namespace sika::payments::testing
