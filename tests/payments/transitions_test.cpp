// The one status-move function: the journals it implies (pure), and on both backends that an
// illegal move is refused, a stale move writes nothing, and a move writes its history row, its
// balanced journal and its event together. Also collections created from code, not HTTP.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "core/json.hpp"
#include "payments/fixture.hpp"
#include "payments/store.hpp"
#include "payments/transitions.hpp"
#include "support/state_machine_walk.hpp"
#include "web/acting.hpp"

namespace sika::payments::testing {
namespace {

using S = TxStatus;

Transaction sample(std::string_view operation, std::string_view channel, std::string_view mode = kDirect) {
  return sample_transaction(operation, channel, 1001, mode);
}

std::pair<std::int64_t, std::int64_t> totals(const ledger::Posting& p) {
  std::int64_t debits = 0, credits = 0;
  for (const auto& leg : p.legs) {
    debits += leg.debit;
    credits += leg.credit;
  }
  return {debits, credits};
}

TEST(Journal, EveryLegalMoveBalancesAndOnlyMoneyMovesPost) {
  const S all[] = {S::initiated, S::pending, S::completed, S::failed, S::expired, S::cancelled};
  const std::vector<SplitShare> shares = {{7, 334}, {8, 333}, {9, 334}};
  for (auto operation : {kCollection, kDisbursement})
    for (auto channel : {kChannelProvider, kChannelWallet})
      for (auto mode : {kDirect, kSplit}) {
        if (operation == kDisbursement && mode == kSplit) continue;
        for (S from : all)
          for (S to : all) {
            Transaction tx = sample(operation, channel, mode);
            tx.status = from;
            if (!legal_move(tx, to)) continue;
            auto p = journal_for(tx, from, to, mode == kSplit ? shares : std::vector<SplitShare>{});
            std::string what = std::string(operation) + " " + std::string(channel) + " " + std::string(mode) + " " +
                               std::string(to_string(from)) + "->" + std::string(to_string(to));
            auto [debits, credits] = totals(p);
            EXPECT_EQ(debits, credits) << what;
            std::string expected;
            if (operation == kCollection && to == S::completed) expected = ledger::kCollection;
            if (operation == kDisbursement && to == S::pending) expected = ledger::kPayoutReserve;
            if (operation == kDisbursement && to == S::completed) expected = ledger::kPayout;
            if (operation == kDisbursement && from == S::pending && is_terminal(to) && to != S::completed)
              expected = ledger::kPayoutRelease;
            EXPECT_EQ(p.kind, expected) << what;
            EXPECT_EQ(p.legs.empty(), expected.empty()) << what;
            if (!expected.empty()) {
              EXPECT_EQ(debits, tx.required_total) << what << ": moves required_total";
            }
            EXPECT_EQ(p.transaction_id, tx.id);
          }
      }
}

TEST(Journal, CollectionCreditsTheMerchantOrEachShareAndTheFee) {
  auto wallet = journal_for(sample(kCollection, kChannelWallet), S::pending, S::completed, {});
  ASSERT_EQ(wallet.legs.size(), 3u);
  EXPECT_EQ(wallet.legs[0].account.text(), "customer:237690000010/sandbox/XAF/available");
  EXPECT_EQ(wallet.legs[0].debit, 1021);
  EXPECT_EQ(wallet.legs[1].account.text(), "platform:fees/sandbox/XAF/revenue");
  EXPECT_EQ(wallet.legs[1].credit, 20);
  EXPECT_EQ(wallet.legs[2].account.text(), "merchant:7/sandbox/XAF/available");
  EXPECT_EQ(wallet.legs[2].credit, 1001);

  auto split =
      journal_for(sample(kCollection, kChannelProvider, kSplit), S::pending, S::completed, {{7, 1001}, {8, 0}});
  ASSERT_EQ(split.legs.size(), 3u) << "a zero share posts no leg";
  EXPECT_EQ(split.legs[0].account.text(), "operator:MTN_MOMO_CMR/sandbox/XAF/clearing");
  EXPECT_EQ(split.legs[2].account.text(), "merchant:7/sandbox/XAF/available");
}

TEST(Journal, AConvertedCollectionGoesThroughTheFxPositionAndEachCurrencyBalances) {
  Transaction tx = sample(kCollection, kChannelProvider);
  tx.currency = "XOF";
  const Conversion conversion{"EUR", 160, 152, 655957, 1000, 0};
  auto collection = journal_for(tx, S::pending, S::completed, {}, &conversion);
  EXPECT_EQ(collection.kind, ledger::kCollection);
  EXPECT_EQ(collection.currency, "XOF");
  auto [debits, credits] = totals(collection);
  EXPECT_EQ(debits, credits);
  EXPECT_EQ(debits, tx.required_total);
  ASSERT_EQ(collection.legs.size(), 3u);
  EXPECT_EQ(collection.legs[2].account.text(), "platform:fx/sandbox/XOF/position");
  EXPECT_EQ(collection.legs[2].credit, merchant_share(tx));
  for (const auto& leg : collection.legs) EXPECT_EQ(leg.account.currency, "XOF");

  auto settlement = fx_settlement_for(tx, conversion, {});
  EXPECT_EQ(settlement.kind, ledger::kFxSettlement);
  EXPECT_EQ(settlement.currency, "EUR");
  ASSERT_EQ(settlement.legs.size(), 2u);
  EXPECT_EQ(settlement.legs[0].account.text(), "platform:fx/sandbox/EUR/position");
  EXPECT_EQ(settlement.legs[0].debit, 152);
  EXPECT_EQ(settlement.legs[1].account.text(), "merchant:7/sandbox/EUR/available");
  EXPECT_EQ(settlement.legs[1].credit, 152);
  EXPECT_TRUE(ledger::fx_position("sandbox", "EUR").may_go_negative());

  Transaction split = sample(kCollection, kChannelProvider, kSplit);
  auto shared = fx_settlement_for(split, conversion, {{7, 100}, {8, 52}});
  ASSERT_EQ(shared.legs.size(), 3u);
  EXPECT_EQ(shared.legs[2].account.text(), "merchant:8/sandbox/EUR/available");
  auto [d2, c2] = totals(shared);
  EXPECT_EQ(d2, c2);
}

TEST(AfterMove, CarriesTheMoveAndSettlesOrCancelsTheSplit) {
  Transaction tx = sample(kCollection, kChannelProvider, kSplit);
  tx.updated_at = 5000;
  Move m;
  m.to = S::completed;
  m.operator_reference = "OP-1";
  m.submitted_at = 4000;
  Transaction done = after_move(tx, m, 4500);
  EXPECT_EQ(done.status, S::completed);
  EXPECT_EQ(done.split_status, kSplitSettled);
  EXPECT_EQ(done.updated_at, 5000) << "never earlier than before";
  EXPECT_EQ(done.operator_reference, "OP-1");
  EXPECT_EQ(done.submitted_at, 4000);
  m.to = S::expired;
  m.reason = "EXPIRED";
  m.operator_reference = "";
  Transaction expired = after_move(tx, m, 6000);
  EXPECT_EQ(expired.split_status, kSplitCancelled);
  EXPECT_EQ(expired.failure_reason, "EXPIRED");
  EXPECT_EQ(expired.operator_reference, std::nullopt) << "an empty operator reference is not recorded";
  EXPECT_EQ(expired.updated_at, 6000);
}

// PaymentsTest runs on both backends (instantiated in service_test.cpp).

// Runs transition() alone in a write unit (a move of `source` "test"); returns whether it moved,
// or the unit's error.
Result<bool> move_alone(store::Db& db, Transaction& tx, S to, std::optional<std::int64_t> submitted_at = std::nullopt) {
  bool moved = false;
  Transaction result;
  ledger::Learned learned;
  Status st = db.write([&](store::Conn& c) -> Status {
    result = tx;
    Move m = move_to(to, "test");
    m.submitted_at = submitted_at;
    SIKA_ASSIGN_OR_RETURN(moved, transition(c, result, m, now_ms(), nullptr, learned));
    return {};
  });
  if (!st) return st.take_error();
  tx = result;
  return moved;
}

IntentRequest collection_request(std::int64_t amount, std::string wallet = "237690000010") {
  IntentRequest r;
  r.amount = amount;
  r.currency = "XAF";
  r.transaction_uuid = uuid_v4();
  r.provider = "MTN_MOMO_CMR";
  r.customer_wallet = std::move(wallet);
  r.description = "subscription 2026-11";
  return r;
}

TEST_P(PaymentsTest, CollectionsCanBeCreatedAndDrivenFromCode) {
  auto p = principal(m1_);
  IntentRequest r = collection_request(10'000);
  auto tx = service_->collect(r, web::acting(p), {});
  ASSERT_TRUE(tx.ok()) << bj::serialize(tx.error().details);
  EXPECT_EQ(tx->status, S::initiated);
  EXPECT_EQ(tx->fee, 200);
  EXPECT_EQ(tx->required_total, 10'200);
  EXPECT_EQ(tx->merchant_id, m1_.id);
  EXPECT_EQ(tx->description, "subscription 2026-11");
  EXPECT_FALSE(tx->confirmation_url.empty());
  // The same request again is the same transaction; another with the same uuid is a conflict.
  auto again = service_->collect(r, web::acting(p), {});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->reference, tx->reference);
  IntentRequest changed = r;
  changed.amount = 10'001;
  auto clash = service_->collect(changed, web::acting(p), {});
  ASSERT_FALSE(clash.ok());
  EXPECT_EQ(clash.error().code, "conflict");
  EXPECT_EQ(std::string(clash.error().details.as_object().at("transaction_reference").as_string()), tx->reference);
  // A payout request is not a collection.
  IntentRequest payout = r;
  payout.operation = kDisbursement;
  EXPECT_FALSE(service_->collect(payout, web::acting(p), {}).ok());
  // Field problems come back by field, as from HTTP.
  IntentRequest bad = collection_request(50);
  auto refused = service_->collect(bad, web::acting(p), {});
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.error().details.as_object().contains("amount"));

  // Executed from code too, then completed by the sandbox operator's callback.
  service_->start();
  auto pushed = service_->execute_collection(*tx, std::nullopt, "execute");
  ASSERT_TRUE(pushed.ok()) << bj::serialize(pushed.error().details);
  EXPECT_EQ(pushed->status, S::pending);
  EXPECT_EQ(wait_status(p, tx->reference, "PENDING"), "COMPLETED");
  EXPECT_EQ(balance(ledger::merchant_available(m1_.id, "sandbox", "XAF")), 10'000);
  auto found = service_->find(web::acting(p), tx->reference, kCollection);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->status, S::completed);
  EXPECT_FALSE(service_->find(web::acting(principal(m3_)), tx->reference, kCollection).ok())
      << "another merchant's is not found";
  expect_ledger_clean();
}

TEST_P(PaymentsTest, TransitionRefusesIllegalMovesAndWritesNothingWhenStale) {
  auto p = principal(m1_);
  auto created = service_->collect(collection_request(5000), web::acting(p), {});
  ASSERT_TRUE(created.ok());
  const Transaction tx = *created;
  auto moves = [&] { return count("SELECT COUNT(*) FROM pay_transitions WHERE transaction_id = ?", {tx.id}); };
  auto events = [&] { return count("SELECT COUNT(*) FROM events WHERE subject = ?", {tx.reference}); };

  // INITIATED -> COMPLETED skips PENDING: refused, and the unit leaves nothing.
  Transaction copy = tx;
  auto illegal = move_alone(*db_, copy, S::completed);
  ASSERT_FALSE(illegal.ok());
  EXPECT_EQ(illegal.error().code, "internal_error");
  EXPECT_EQ(copy.status, S::initiated);
  EXPECT_EQ(moves(), 0);

  // A legal move writes the row, its history and its event.
  Transaction after = tx;
  auto pending = move_alone(*db_, after, S::pending, now_ms());
  ASSERT_TRUE(pending.ok());
  EXPECT_TRUE(*pending);
  EXPECT_EQ(after.status, S::pending);
  EXPECT_EQ(moves(), 1);
  EXPECT_EQ(events(), 1);

  // The same move from the stale copy (still INITIATED) loses: false, nothing written.
  Transaction stale = tx;
  auto lost = move_alone(*db_, stale, S::cancelled);
  ASSERT_TRUE(lost.ok());
  EXPECT_FALSE(*lost);
  EXPECT_EQ(stale.status, S::initiated) << "a lost move leaves the copy as it was";
  EXPECT_EQ(moves(), 1);
  EXPECT_EQ(events(), 1);

  // PENDING -> COMPLETED posts one balanced COLLECTION journal in the same unit.
  auto completed = move_alone(*db_, after, S::completed);
  ASSERT_TRUE(completed.ok());
  EXPECT_TRUE(*completed);
  EXPECT_EQ(count("SELECT COUNT(*) FROM ledger_journals WHERE transaction_id = ? AND kind = 'COLLECTION'", {tx.id}), 1);
  EXPECT_EQ(count("SELECT SUM(e.debit) - SUM(e.credit) FROM ledger_entries e JOIN ledger_journals j ON "
                  "j.id = e.journal_id WHERE j.transaction_id = ?",
                  {tx.id}),
            0);
  EXPECT_EQ(balance(ledger::merchant_available(m1_.id, "sandbox", "XAF")), 5000);
  EXPECT_EQ(events(), 2);
  expect_ledger_clean();
}

TEST_P(PaymentsTest, TransactionsMoveOnlyAlongTheirTable) { sika::testing::walk_every_move(*db_, kTxStatus); }

TEST_P(PaymentsTest, AMoveEmitsTheStatusChangedEventWithTheWebhookPayload) {
  auto created = service_->collect(collection_request(5000), web::acting(principal(m1_)), {});
  ASSERT_TRUE(created.ok());
  Transaction tx = *created;
  auto moved = move_alone(*db_, tx, S::pending, now_ms());
  ASSERT_TRUE(moved.ok());
  ASSERT_TRUE(*moved);
  std::vector<std::string> event;
  ASSERT_TRUE(
      db_->read([&](store::Conn& c) -> Status {
           SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT event_type, subject, payload, merchant_id, "
                                                       "created_at FROM events WHERE subject = ?",
                                                       {tx.reference}));
           if (row)
             event = {row->str(0), row->str(1), row->str(2), std::to_string(row->i64(3)), std::to_string(row->i64(4))};
           return {};
         })
          .ok());
  ASSERT_EQ(event.size(), 5u);
  EXPECT_EQ(event[0], "transaction.status_changed");
  EXPECT_EQ(event[1], tx.reference);
  EXPECT_EQ(event[2], json::dump(event_payload(tx))) << "the payload of the moved transaction, byte for byte";
  EXPECT_EQ(event[3], std::to_string(m1_.id));
  EXPECT_EQ(event[4], std::to_string(tx.updated_at));
}

TEST_P(PaymentsTest, AMoveThatWouldOverdrawRollsBackWithItsStatus) {
  auto p = principal(m1_);
  IntentRequest r = collection_request(5000);
  r.operation = kDisbursement;
  auto refused = service_->create_disbursement(r, web::acting(p));  // nothing earned yet
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::invalid);
  EXPECT_EQ(refused.error().code, "insufficient_funds");
  EXPECT_TRUE(refused.error().details.as_object().contains("amount"));
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions"), 0);

  // The ledger refuses an overdraft even when a caller skips the balance check: the unit fails.
  auto collected = service_->collect(collection_request(5000), web::acting(p), {});
  ASSERT_TRUE(collected.ok());
  Transaction payout = *collected;
  payout.operation = std::string(kDisbursement);  // a payout of an empty balance, as a buggy caller would move it
  auto st = move_alone(*db_, payout, S::pending);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, "insufficient_funds");
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transitions"), 0) << "the status move rolled back with the journal";
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE status = 'INITIATED'"), 1);
  expect_ledger_clean();
}

}  // namespace
}  // namespace sika::payments::testing
