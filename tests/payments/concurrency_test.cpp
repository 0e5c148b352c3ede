// A randomized run of thousands of collections (operator outcomes mixed), splits, wallet
// payments and payouts from many threads, with status polls, extra (duplicate and late)
// callbacks and the expiry worker all racing; then the ledger check must find nothing.
#include <boost/json.hpp>

#include <random>
#include <thread>

#include "fixture.hpp"

namespace sika::payments::testing {
namespace {

class ConcurrencyTest : public PaymentsTest {
 protected:
  void tune(Options& o) override {
    o.sandbox_delay_ms = 15;
    o.sandbox_duplicate_delay_ms = 40;
    o.sandbox_late_ms = 400;
    o.sandbox_threads = 4;
    o.sandbox_retry_ms = 20;
    o.pending_ttl_ms = 250;  // stuck and late ones expire while others complete
    o.intent_ttl_ms = 1500;
    o.expiry_interval_ms = 25;
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, ConcurrencyTest, ::testing::Values("sqlite", "postgres"));

// Thirty wrong codes sent at once to one WALLET collection: each request takes an attempt before
// its code is compared, so exactly max_otp_attempts (3) codes are compared, whatever the race,
// and the collection ends FAILED (INVALID_OTP) with nothing debited.
TEST_P(ConcurrencyTest, ConcurrentWrongCodesCompareAtMostTheAllowedAttempts) {
  const std::string wallet = "237690100050";
  ASSERT_TRUE(service_->fund_wallet("sandbox", wallet, "XAF", 100'000, "seed").ok());
  auto p = principal(m1_);
  auto body = intent_body(wallet, 5'000, "SIKA_WALLET_CMR");
  body["channel"] = "WALLET";
  auto [st, env] = call(&Service::create_intent, p, body);
  ASSERT_EQ(st, 200) << bj::serialize(env);
  const bj::value reference = env.at("data").at("transaction_reference");

  std::atomic<int> compared{0}, exhausted{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 30; ++i) {
    threads.emplace_back([&, i] {
      auto [st2, env2] = call(&Service::execute, p,
                              bj::object{{"transaction_reference", reference}, {"otp", std::to_string(200000 + i)}});
      const bj::value* details =
          env2.if_contains("error") ? env2.at("error").as_object().if_contains("details") : nullptr;
      const bj::value* otp = details && details->is_object() ? details->as_object().if_contains("otp") : nullptr;
      std::string text = otp && otp->is_string() ? std::string(otp->as_string()) : "";
      if (st2 == 400 && text.rfind("is incorrect", 0) == 0)
        ++compared;
      else if ((st2 == 400 && text.find("too many attempts") != std::string::npos) || st2 == 409)
        ++exhausted;
      else
        ++other, ADD_FAILURE() << st2 << " " << bj::serialize(env2);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(compared.load(), 3);
  EXPECT_EQ(exhausted.load(), 27);
  EXPECT_EQ(other.load(), 0);
  auto [st3, env3] = call(&Service::status, p, bj::object{{"transaction_reference", reference}});
  ASSERT_EQ(st3, 200);
  EXPECT_EQ(env3.at("data").at("status"), "FAILED");
  // The right code after the limit changes nothing: the collection stays FAILED, nothing debited.
  const std::string code = wallet_code(wallet, reference.as_string());
  ASSERT_EQ(code.size(), 6u);
  auto [st4, env4] = call(&Service::execute, p, bj::object{{"transaction_reference", reference}, {"otp", code}});
  EXPECT_NE(st4, 200) << bj::serialize(env4);
  auto balance = service_->account_balance(ledger::customer_wallet(wallet, "sandbox", "XAF"));
  ASSERT_TRUE(balance.ok());
  EXPECT_EQ(*balance, 100'000);
}

// The right code sent eight times at once (a double click, a retrying client, two tabs) to
// collections of every kind of code: an operator's code (ORANGE_MONEY_CMR), a WALLET code from the
// OTP service, and the sandbox's fixed WALLET code. Only three submissions may compare a code,
// the others find no attempt left; none of them may fail a collection whose right code another
// submission verified: each completes exactly once, each loser is answered 409 (or the
// collection), never invalid_otp, and the ledger is exact.
class CodeRaceTest : public PaymentsTest {};
INSTANTIATE_TEST_SUITE_P(Backends, CodeRaceTest, ::testing::Values("sqlite", "postgres"));

TEST_P(CodeRaceTest, ConcurrentRightCodesCompleteTheCollectionOnce) {
  auto p = principal(m1_);
  constexpr int kSubmissions = 8;
  struct Case {
    std::string reference, code, wallet;
    bool wallet_channel = false;
  };
  std::vector<Case> cases;
  for (int round = 0; round < 3; ++round) {
    // An operator's code: PENDING at the operator, then COMPLETED by its callback.
    auto orange = create_ok(p, intent_body("237690000000", 5'000, "ORANGE_MONEY_CMR"));
    cases.push_back({std::string(orange.at("transaction_reference").as_string()), "123456", "", false});
    // A WALLET code sent by the OTP service to a number that is not a sandbox one.
    const std::string wallet = "23769010" + std::to_string(1000 + round);
    ASSERT_TRUE(service_->fund_wallet("sandbox", wallet, "XAF", 50'000, "seed").ok());
    auto body = intent_body(wallet, 5'000, "SIKA_WALLET_CMR");
    body["channel"] = "WALLET";
    auto sent = create_ok(p, body);
    const std::string reference(sent.at("transaction_reference").as_string());
    const std::string code = wallet_code(wallet, reference);
    ASSERT_EQ(code.size(), 6u);
    cases.push_back({reference, code, wallet, true});
    // The sandbox's fixed WALLET code (a demo wallet).
    ASSERT_TRUE(service_->fund_wallet("sandbox", "237690000100", "XAF", 50'000, "seed").ok());
    auto demo = intent_body("237690000100", 5'000, "SIKA_WALLET_CMR");
    demo["channel"] = "WALLET";
    auto fixed = create_ok(p, demo);
    cases.push_back({std::string(fixed.at("transaction_reference").as_string()), "123456", "237690000100", true});
  }
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  std::atomic<int> ready{0};
  for (const Case& k : cases)
    for (int i = 0; i < kSubmissions; ++i)
      threads.emplace_back([&, k] {
        ++ready;
        while (ready.load() < static_cast<int>(cases.size()) * kSubmissions) std::this_thread::yield();
        auto [st, env] =
            call(&Service::execute, p, bj::object{{"transaction_reference", k.reference}, {"otp", k.code}});
        if (st != 200 && st != 409) ++refused, ADD_FAILURE() << k.reference << " " << st << " " << bj::serialize(env);
      });
  for (auto& t : threads) t.join();
  EXPECT_EQ(refused.load(), 0);
  for (const Case& k : cases) {
    EXPECT_EQ(wait_status(p, k.reference, "PENDING"), "COMPLETED") << k.reference;
    EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transitions t JOIN pay_transactions x ON x.id = t.transaction_id "
                    "WHERE x.reference = ? AND t.to_status = 'COMPLETED'",
                    {k.reference}),
              1)
        << k.reference;
    EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transitions t JOIN pay_transactions x ON x.id = t.transaction_id "
                    "WHERE x.reference = ? AND t.to_status = 'FAILED'",
                    {k.reference}),
              0)
        << k.reference;
  }
  // Each wallet was debited once: 5 000 and no fee (wallet collections are free here).
  for (int round = 0; round < 3; ++round)
    EXPECT_EQ(balance(ledger::customer_wallet("23769010" + std::to_string(1000 + round), "sandbox", "XAF")), 45'000);
  EXPECT_EQ(balance(ledger::customer_wallet("237690000100", "sandbox", "XAF")), 150'000 - 15'000);
  expect_ledger_clean();
}

TEST_P(ConcurrencyTest, ThousandsOfMixedOperationsLeaveTheLedgerExact) {
  const bool pg = GetParam() == "postgres";
  const int kThreads = 8;
  const int kOpsPerThread = pg ? 150 : 300;
  service_->start();
  const std::vector<std::string> wallets = {"237690100010", "237690100020", "237690100030", "237690100040"};
  for (const auto& w : wallets) ASSERT_TRUE(service_->fund_wallet("sandbox", w, "XAF", 200'000, "seed").ok());
  const std::vector<std::string> tails = {"0000", "0010", "0001", "0002", "0003", "0004", "0005", "0006", "0007"};
  const std::vector<merchant::Merchant*> earners = {&m1_, &m3_};

  std::atomic<int> ok{0}, refused{0}, transient{0}, unexpected{0};
  std::mutex refs_mu;
  std::vector<std::pair<std::int64_t, std::string>> refs;  // (merchant id, reference)

  auto worker = [&](int seed) {
    std::mt19937 rng(static_cast<unsigned>(seed * 7919 + 17));
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    for (int op = 0; op < kOpsPerThread; ++op) {
      merchant::Merchant& m = *earners[pick(2)];
      auto p = principal(m);
      int dice = pick(100);
      auto record = [&](int status, const bj::object& env) {
        if (status == 200) {
          ++ok;
          std::lock_guard lock(refs_mu);
          refs.emplace_back(m.id, std::string(env.at("data").at("transaction_reference").as_string()));
        } else if (status == 400 || status == 409) {
          ++refused;
        } else if (status == 503) {
          ++transient;
        } else {
          ++unexpected;
          ADD_FAILURE() << status << " " << bj::serialize(env);
        }
      };
      if (dice < 45) {  // operator collection, maybe split, then execute
        std::string wallet = "23769" + std::to_string(1000 + pick(9000)).substr(0, 3) + tails[pick(tails.size())];
        auto body = intent_body(wallet, 100 + pick(50'000));
        if (pick(4) == 0) {
          body["settlement_mode"] = "SPLIT";
          int a = 1 + pick(99);
          body["distribution"] = bj::array{bj::object{{"matricule", "MCH-CM-0001"}, {"rate", a}},
                                           bj::object{{"matricule", "MCH-CM-0002"}, {"rate", 100 - a}}};
        }
        auto [st, env] = call(&Service::create_intent, p, body);
        record(st, env);
        if (st == 200 && pick(10) != 0) {
          auto [st2, env2] = call(&Service::execute, p,
                                  bj::object{{"transaction_reference", env.at("data").at("transaction_reference")}});
          if (st2 != 200 && st2 != 409 && st2 != 503) ADD_FAILURE() << st2 << " " << bj::serialize(env2);
        }
        if (st == 200 && pick(5) == 0) call(&Service::create_intent, p, body);  // idempotent replay
      } else if (dice < 65) {                                                   // wallet payment
        auto body = intent_body(wallets[pick(wallets.size())], 1 + pick(30'000), "SIKA_WALLET_CMR");
        body["channel"] = pick(2) ? "WALLET" : "AUTO";
        auto [st, env] = call(&Service::create_intent, p, body);
        record(st, env);
        if (st == 200) {
          const bj::object& rec = env.at("data").as_object();
          const std::string ref(rec.at("transaction_reference").as_string());
          const std::string code = wallet_code(rec.at("customer_wallet").as_string(), ref);
          auto [st2, env2] = call(&Service::execute, p, bj::object{{"transaction_reference", ref}, {"otp", code}});
          if (st2 != 200 && st2 != 409 && st2 != 503) ADD_FAILURE() << st2 << " " << bj::serialize(env2);
        }
      } else if (dice < 85) {  // payout
        std::string wallet = pick(3) == 0
                                 ? wallets[pick(wallets.size())]
                                 : "23769" + std::to_string(2000 + pick(7000)).substr(0, 3) + tails[pick(tails.size())];
        bj::object body{{"amount", 100 + pick(20'000)},
                        {"currency", "XAF"},
                        {"transaction_uuid", uuid_v4()},
                        {"provider", "MTN_MOMO_CMR"},
                        {"channel", pick(4) == 0 ? "WALLET" : "PROVIDER"},
                        {"customer_wallet", wallet}};
        auto [st, env] = call(&Service::disbursement_intent, p, body);
        record(st, env);
      } else if (dice < 95) {  // poll something
        std::pair<std::int64_t, std::string> target;
        {
          std::lock_guard lock(refs_mu);
          if (refs.empty()) continue;
          target = refs[pick(refs.size())];
        }
        auto owner = target.first == m1_.id ? principal(m1_) : principal(m3_);
        auto [st, env] = call(&Service::status, owner, bj::object{{"transaction_reference", target.second}});
        if (st == 404) call(&Service::disbursement_status, owner, bj::object{{"transaction_reference", target.second}});
      } else {  // cancel something
        std::pair<std::int64_t, std::string> target;
        {
          std::lock_guard lock(refs_mu);
          if (refs.empty()) continue;
          target = refs[pick(refs.size())];
        }
        auto owner = target.first == m1_.id ? principal(m1_) : principal(m3_);
        call(&Service::cancel, owner, bj::object{{"transaction_reference", target.second}});
      }
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(worker, i + (pg ? 100 : 0));
  for (auto& t : threads) t.join();

  // Let callbacks (including late and duplicate ones) land, then expire whatever is left open.
  for (int i = 0; i < 300 && service_->sandbox().queued() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  offset_ += 2 * 86'400'000;  // past every TTL, payouts included
  for (int i = 0; i < 20 && count("SELECT COUNT(*) FROM pay_transactions WHERE status IN ('INITIATED', 'PENDING')") > 0;
       ++i)
    ASSERT_TRUE(service_->expire_due().ok());
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE status IN ('INITIATED', 'PENDING')"), 0);
  service_->stop();

  EXPECT_EQ(unexpected.load(), 0);
  EXPECT_GT(ok.load(), kThreads * kOpsPerThread / 2);
  if (!pg) {
    EXPECT_EQ(transient.load(), 0);
  }
  std::cout << "ok " << ok << ", refused " << refused << ", transient " << transient << ", transactions "
            << count("SELECT COUNT(*) FROM pay_transactions") << ", completed "
            << count("SELECT COUNT(*) FROM pay_transactions WHERE status = 'COMPLETED'") << ", journals "
            << count("SELECT COUNT(*) FROM ledger_journals") << ", callbacks "
            << count("SELECT COUNT(*) FROM pay_callbacks") << " (late "
            << count("SELECT COUNT(*) FROM pay_callbacks WHERE outcome = 'late'") << ", duplicate "
            << count("SELECT COUNT(*) FROM pay_callbacks WHERE outcome = 'duplicate'") << ")\n";
  // Every outcome happened, so the races were real.
  for (const char* s : {"COMPLETED", "FAILED", "EXPIRED"})
    EXPECT_GT(count("SELECT COUNT(*) FROM pay_transactions WHERE status = ?", {std::string(s)}), 0) << s;
  EXPECT_GT(count("SELECT COUNT(*) FROM pay_callbacks WHERE outcome IN ('late', 'duplicate')"), 0);

  // One transition out of each status per transaction, each with its event.
  EXPECT_EQ(count("SELECT COUNT(*) FROM (SELECT transaction_id, from_status FROM pay_transitions "
                  "GROUP BY transaction_id, from_status HAVING COUNT(*) > 1) d"),
            0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transitions"),
            count("SELECT COUNT(*) FROM events WHERE event_type = 'transaction.status_changed'"));
  // Nothing was created or lost: all balances sum to zero, and the ledger check is clean.
  EXPECT_EQ(count("SELECT COALESCE(SUM(balance), 0) FROM ledger_accounts"), 0);
  EXPECT_EQ(count("SELECT COALESCE(SUM(balance), 0) FROM ledger_accounts WHERE kind = 'pending'"), 0);
  expect_ledger_clean();
}

}  // namespace
}  // namespace sika::payments::testing
