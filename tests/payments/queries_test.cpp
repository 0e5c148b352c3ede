// The read models on both backends: transaction lists with every filter and keyset pages, a
// transaction's timeline, balances and late callbacks.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <set>

#include "payments/fixture.hpp"
#include "payments/queries.hpp"
#include "web/acting.hpp"

namespace sika::payments::testing {
namespace {

using queries::TransactionFilter;

class QueriesTest : public PaymentsTest {
 protected:
  Transaction create(const merchant::Merchant& m, std::int64_t amount, std::string wallet,
                     std::string_view operation = kCollection, std::string provider = "MTN_MOMO_CMR",
                     std::string channel = "PROVIDER") {
    IntentRequest r;
    r.operation = std::string(operation);
    r.amount = amount;
    r.currency = "XAF";
    r.transaction_uuid = uuid_v4();
    r.provider = std::move(provider);
    r.channel = std::move(channel);
    r.customer_wallet = std::move(wallet);
    auto tx = operation == kCollection ? service_->collect(r, web::acting(principal(m)), {})
                                       : service_->create_disbursement(r, web::acting(principal(m)));
    EXPECT_TRUE(tx.ok()) << (tx.ok() ? "" : bj::serialize(tx.error().details));
    return tx.ok() ? *tx : Transaction{};
  }

  queries::TransactionPage list(const TransactionFilter& f) {
    queries::TransactionPage page;
    EXPECT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(page, queries::list_transactions(c, f));
                     return {};
                   })
                    .ok());
    return page;
  }

  // A collection of m1 executed and completed by the sandbox operator's callback.
  Transaction completed_collection(std::int64_t amount) {
    service_->start();
    Transaction tx = create(m1_, amount, "237690000010");
    EXPECT_TRUE(service_->execute_collection(tx, std::nullopt, "execute").ok());
    EXPECT_EQ(wait_status(principal(m1_), tx.reference, "PENDING"), "COMPLETED");
    return tx;
  }

  std::vector<std::string> references(const TransactionFilter& f) {
    std::vector<std::string> out;
    for (const auto& tx : list(f).items) out.push_back(tx.reference);
    return out;
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, QueriesTest, ::testing::Values("sqlite", "postgres"));

TEST_P(QueriesTest, ListsFilterByEveryFieldNewestFirst) {
  Transaction a = create(m1_, 1000, "237690000010");
  offset_ += 60'000;
  Transaction b = create(m1_, 2000, "237690000021", kCollection, "ORANGE_MONEY_CMR");
  offset_ += 60'000;
  Transaction c = create(m3_, 3000, "237690000032");
  ASSERT_TRUE(service_->fund_wallet("sandbox", "237690000043", "XAF", 10'000, "test").ok());
  Transaction d = create(m1_, 4000, "237690000043", kCollection, "SIKA_WALLET_CMR", "WALLET");
  auto cancelled = service_->cancel_collection(a, "merchant", "CANCELLED_BY_MERCHANT");
  ASSERT_TRUE(cancelled.ok());

  TransactionFilter f;
  EXPECT_EQ(references(f), (std::vector<std::string>{d.reference, c.reference, b.reference, a.reference}));
  f.merchant_id = m1_.id;
  EXPECT_EQ(references(f), (std::vector<std::string>{d.reference, b.reference, a.reference}));
  f.status = TxStatus::cancelled;
  EXPECT_EQ(references(f), std::vector<std::string>{a.reference});
  f.status.reset();
  f.channel = "WALLET";
  EXPECT_EQ(references(f), std::vector<std::string>{d.reference});
  f.channel.clear();
  f.provider = "ORANGE_MONEY_CMR";
  EXPECT_EQ(references(f), std::vector<std::string>{b.reference});
  f.provider.clear();
  f.operation = std::string(kDisbursement);
  EXPECT_TRUE(references(f).empty());
  f.operation.clear();
  f.environment = "prod";
  EXPECT_TRUE(references(f).empty());
  f.environment = "sandbox";
  // Dates: [from, to).
  f.created_from = b.created_at;
  f.created_to = d.created_at;
  EXPECT_EQ(references(f), std::vector<std::string>{b.reference});
  f.created_from.reset();
  f.created_to.reset();
  // Search: any reference exactly, or the end of the wallet number however it is written.
  for (const std::string& s : {b.reference, b.invoice_reference, b.provider_reference, std::string("0021"),
                               std::string("+237 6 90 00 00 21")}) {
    f.search = s;
    EXPECT_EQ(references(f), std::vector<std::string>{b.reference}) << s;
  }
  f.search = "TX-NOPE";
  EXPECT_TRUE(references(f).empty());
  f.search = "%";
  EXPECT_TRUE(references(f).empty()) << "a wildcard is a reference, not a pattern";
}

TEST_P(QueriesTest, SearchByTheEndOfTheNumberMatchesEveryDigitGiven) {
  // Same last four digits, different fifth; same last three, different fourth.
  Transaction a = create(m1_, 1000, "237690012345");
  Transaction b = create(m1_, 1000, "237690022345");
  Transaction c = create(m1_, 1000, "237690001345");
  Transaction other = create(m3_, 1000, "237690012345");
  TransactionFilter f;
  f.merchant_id = m1_.id;
  auto found = [&](std::string s) {
    f.search = std::move(s);
    return references(f);
  };
  EXPECT_EQ(found("2345"), (std::vector<std::string>{b.reference, a.reference}));
  EXPECT_EQ(found("12345"), std::vector<std::string>{a.reference});
  EXPECT_EQ(found("6 90 01 23 45"), std::vector<std::string>{a.reference});
  EXPECT_EQ(found("345"), (std::vector<std::string>{c.reference, b.reference, a.reference}));
  EXPECT_EQ(found("1345"), std::vector<std::string>{c.reference});
  EXPECT_TRUE(found("9345").empty());
  EXPECT_TRUE(found("912345").empty());
  f.merchant_id.reset();
  EXPECT_EQ(found("12345"), (std::vector<std::string>{other.reference, a.reference}));
  // Pages of a search by the end of the number follow one another.
  f.merchant_id = m1_.id;
  f.limit = 2;
  f.search = "345";
  auto first = list(f);
  ASSERT_EQ(first.items.size(), 2u);
  ASSERT_TRUE(first.next.has_value());
  f.before = first.next;
  auto second = list(f);
  ASSERT_EQ(second.items.size(), 1u);
  EXPECT_EQ(second.items[0].reference, a.reference);
  EXPECT_FALSE(second.next.has_value());
}

TEST_P(QueriesTest, KeysetPagesCoverEverythingOnceWhileNewRowsArrive) {
  std::set<std::string> all;
  for (int i = 0; i < 23; ++i) all.insert(create(m1_, 1000 + i, "2376900001" + std::to_string(10 + i)).reference);
  TransactionFilter f;
  f.merchant_id = m1_.id;
  f.limit = 5;
  std::set<std::string> seen;
  int pages = 0;
  std::optional<std::int64_t> previous_last;
  for (;;) {
    auto page = list(f);
    ++pages;
    ASSERT_LE(page.items.size(), 5u);
    for (const auto& tx : page.items) {
      EXPECT_TRUE(seen.insert(tx.reference).second) << "listed twice: " << tx.reference;
      if (previous_last) {
        EXPECT_LT(tx.id, *previous_last);
      }
      previous_last = tx.id;
    }
    if (pages == 2) create(m1_, 999, "237690000099");  // newer than every cursor: never in a later page
    if (!page.next) break;
    f.before = page.next;
  }
  EXPECT_EQ(pages, 5);
  EXPECT_EQ(seen, all);
  f.limit = 0;  // clamped to 1
  f.before.reset();
  EXPECT_EQ(list(f).items.size(), 1u);
}

TEST_P(QueriesTest, TimelineShowsHistoryJournalsAndCallbacks) {
  auto p = principal(m1_);
  Transaction tx = completed_collection(10'000);
  // A status poll may complete it before the operator's callback lands: wait for the callback.
  for (int i = 0; i < 500 && count("SELECT COUNT(*) FROM pay_callbacks WHERE transaction_id = ?", {tx.id}) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  queries::Timeline t;
  ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(t, queries::timeline(c, tx.reference));
                   return {};
                 })
                  .ok());
  EXPECT_EQ(t.tx.status, TxStatus::completed);
  ASSERT_EQ(t.steps.size(), 2u);
  EXPECT_EQ(t.steps[0].from, "INITIATED");
  EXPECT_EQ(t.steps[0].to, "PENDING");
  EXPECT_EQ(t.steps[0].source, "execute");
  EXPECT_EQ(t.steps[1].to, "COMPLETED");
  ASSERT_EQ(t.entries.size(), 3u);  // operator clearing, fees, merchant
  std::int64_t debits = 0, credits = 0;
  for (const auto& e : t.entries) {
    EXPECT_EQ(e.journal_kind, "COLLECTION");
    debits += e.debit;
    credits += e.credit;
  }
  EXPECT_EQ(debits, 10'200);
  EXPECT_EQ(credits, 10'200);
  ASSERT_GE(t.callbacks.size(), 1u);
  auto json = queries::to_json(t);
  for (const char* k : {"record", "transitions", "entries", "callbacks"}) EXPECT_TRUE(json.contains(k)) << k;
  EXPECT_EQ(std::string(json.at("record").at("transaction_reference").as_string()), tx.reference);

  Status missing = db_->read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(t, queries::timeline(c, "TX-NOPE"));
    return {};
  });
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, "not_found");
}

TEST_P(QueriesTest, BalancesPerCurrencyAndPerAccount) {
  auto p = principal(m1_);
  Transaction tx = completed_collection(10'000);
  Transaction payout = create(m1_, 3000, "237690000005", kDisbursement);  // stays PENDING at the operator
  EXPECT_EQ(payout.status, TxStatus::pending);

  std::vector<queries::CurrencyBalance> mine;
  std::vector<queries::AccountBalance> accounts, merchant_only;
  std::string owner;
  ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(mine, queries::merchant_balances(c, m1_.id, "sandbox"));
                   SIKA_ASSIGN_OR_RETURN(accounts, queries::account_balances(c, "", "sandbox"));
                   SIKA_ASSIGN_OR_RETURN(owner, queries::merchant_owner(c, m1_.matricule));
                   SIKA_ASSIGN_OR_RETURN(merchant_only, queries::account_balances(c, owner, ""));
                   return {};
                 })
                  .ok());
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0].currency, "XAF");
  EXPECT_EQ(mine[0].available, 10'000 - 3150);
  EXPECT_EQ(mine[0].pending, 3150);
  EXPECT_EQ(owner, "merchant:" + std::to_string(m1_.id));
  ASSERT_EQ(merchant_only.size(), 2u);
  for (const auto& b : merchant_only) EXPECT_EQ(b.matricule, m1_.matricule);
  std::int64_t sum = 0;
  bool fees = false;
  for (const auto& b : accounts) {
    sum += b.balance;
    if (b.owner == "platform:fees") {
      fees = true;
      EXPECT_EQ(b.matricule, std::nullopt);
    }
  }
  EXPECT_EQ(sum, 0) << "every account of the environment together balances";
  EXPECT_TRUE(fees);
  Status unknown = db_->read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(owner, queries::merchant_owner(c, "MCH-XX-9999"));
    return {};
  });
  EXPECT_FALSE(unknown.ok());
  // The gateway route answers the same figures.
  auto req = request(p, bj::object{});
  req.method = "GET";
  req.body.clear();
  auto res = web::respond(req, service_->balances(req));
  ASSERT_EQ(res.status, 200);
  auto data = parse(res).at("data").as_array();
  ASSERT_EQ(data.size(), 1u);
  EXPECT_EQ(data[0].at("available").as_int64(), mine[0].available);
  EXPECT_EQ(data[0].at("pending").as_int64(), mine[0].pending);
}

TEST_P(QueriesTest, LateCallbacksAreListedForReconciliation) {
  Transaction tx = create(m1_, 10'000, "237690000005");  // the sandbox never answers by itself
  ASSERT_TRUE(service_->execute_collection(tx, std::nullopt, "execute").ok());
  offset_ += 6 * 60'000;  // past pending_ttl_ms
  ASSERT_EQ(service_->expire_due().value(), 1);
  // The operator reports success after all.
  PaymentOrder order;
  order.provider_reference = tx.provider_reference;
  order.msisdn = tx.customer_wallet;
  OperatorStatus ok;
  ok.state = OperatorStatus::State::succeeded;
  web::Request cb;
  cb.body = service_->sandbox().callback_body(order, ok);
  cb.path_params = {{"connector", "sandbox"}};
  cb.headers = {{"x-sandbox-signature", service_->sandbox().sign(cb.body, now_ms() + offset_)}};
  ASSERT_EQ(parse(web::respond(cb, service_->operator_callback(cb))).at("outcome"), "late");
  std::vector<queries::LateCallback> late;
  ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(late, queries::late_callbacks(c));
                   return {};
                 })
                  .ok());
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].transaction_reference, tx.reference);
  EXPECT_EQ(late[0].status, "EXPIRED");
  EXPECT_EQ(late[0].reported_status, "SUCCESSFUL");
  EXPECT_EQ(late[0].connector, "sandbox");
  EXPECT_EQ(late[0].reason, std::nullopt);
  expect_ledger_clean();
}

}  // namespace
}  // namespace sika::payments::testing
