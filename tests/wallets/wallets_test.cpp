// Wallets and the wallet link API over a real payments::Service, OTP service and sandbox
// notifier, on both backends.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "core/reason.hpp"
#include "limits/limiter.hpp"
#include "merchant/merchant.hpp"
#include "payments/fixture.hpp"
#include "wallets/service.hpp"
#include "web/acting.hpp"
#include "web/envelope.hpp"

namespace sika::wallets {
namespace {

namespace bj = boost::json;

class WalletsTest : public payments::testing::PaymentsTest {
 protected:
  void SetUp() override {
    PaymentsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    limiter_ = std::make_unique<limits::Limiter>(*db_);
    api_limiter_ = std::make_unique<limits::ReservedLimiter>(*limiter_);
    make_wallets(600);
    p1_ = principal(m1_);
    p3_ = principal(m3_);
  }
  void TearDown() override {
    wallets_.reset();
    cooled_otp_.reset();
    api_limiter_.reset();
    limiter_.reset();
    PaymentsTest::TearDown();
  }

  void make_wallets(std::int64_t per_hour) { wallets_ = node(per_hour); }

  // A wallets service on the same database: another node, with its own memory of link keys.
  std::unique_ptr<Service> node(std::int64_t per_hour = 600, otp::Service* codes = nullptr) {
    Options o;
    o.secret = "wallets-test-secret";
    o.pepper = "test-pepper";
    o.default_limits = {5'000, 7'000, 3'600'000};
    o.limiter = limiter_.get();
    o.api_limiter = api_limiter_.get();
    o.per_address = {.limit = per_hour, .window_ms = 3'600'000, .block_ms = 60'000, .block_after = 2};
    o.clock = [this] { return now_ms() + offset_.load(); };
    return std::make_unique<Service>(
        *db_, *service_, [this] { return catalog_; }, codes ? *codes : *otp_, *notifier_, o);
  }

  // Codes with the production resend cool-down (the fixture's has none): a second send of the
  // same challenge within 30 s is refused.
  otp::Service& cooled_otp() {
    if (!cooled_otp_) {
      otp::Options oo;
      oo.pepper = "test-pepper";
      oo.sandbox_code = "123456";
      oo.resend_cooldown_ms = 30'000;
      oo.sends_per_destination_per_hour = 0;
      cooled_otp_ = std::make_unique<otp::Service>(*db_, *notifier_, oo);
    }
    return *cooled_otp_;
  }

  LinkRequest request(std::string phone = "690000042") {
    LinkRequest r;
    r.email = "ama@example.com";
    r.phone = std::move(phone);
    r.phone_country = "+237";
    return r;
  }

  // The last code sent to a number for a subject (the message names it).
  std::string code_for(std::string_view msisdn, std::string_view subject) { return wallet_code(msisdn, subject); }

  Linked linked(const web::Principal& partner, std::string phone = "690000042") {
    auto l = wallets_->link(web::acting(partner), request(std::move(phone)));
    EXPECT_TRUE(l.ok()) << (l.ok() ? "" : bj::serialize(l.error().details));
    return l.ok() ? *l : Linked{};
  }

  // A consented link of m1 to a funded wallet.
  Linked active(std::int64_t funds = 100'000, std::string phone = "690000042") {
    Linked l = linked(p1_, phone);
    const std::string msisdn = "237" + phone;
    if (funds > 0) {
      EXPECT_TRUE(service_->fund_wallet("sandbox", msisdn, "XAF", funds, "top-up").ok());
    }
    auto c = wallets_->confirm(web::acting(p1_), l.apikey, code_for(msisdn, l.link.reference));
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : bj::serialize(c.error().details));
    if (c.ok()) l.link = *c;
    return l;
  }

  Transfer transfer(std::int64_t amount) { return Transfer{amount, "", uuid_v4(), "order"}; }

  // The codes sent to a number in messages naming `subject`, oldest first.
  std::vector<std::string> codes_for(std::string_view msisdn, std::string_view subject) {
    std::vector<std::string> out;
    EXPECT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT body FROM notify_outbox WHERE recipient = ? "
                                                              "ORDER BY id",
                                                              {"+" + std::string(msisdn)}));
                     for (const auto& r : rows) {
                       const std::string body = r.str(0);
                       if (body.find(subject) == std::string::npos) continue;
                       auto at = body.find_first_of("0123456789");
                       out.push_back(body.substr(at, body.find_first_not_of("0123456789", at) - at));
                     }
                     return {};
                   })
                    .ok());
    return out;
  }

  Result<Linked> link_with(std::string phone, std::optional<std::int64_t> per_payment,
                           std::optional<std::int64_t> per_period) {
    LinkRequest r = request(std::move(phone));
    r.per_payment = per_payment;
    r.per_period = per_period;
    return wallets_->link(web::acting(p1_), r);
  }

  std::unique_ptr<limits::Limiter> limiter_;
  std::unique_ptr<limits::ReservedLimiter> api_limiter_;
  std::unique_ptr<Service> wallets_;
  std::unique_ptr<otp::Service> cooled_otp_;
  web::Principal p1_, p3_;
};

INSTANTIATE_TEST_SUITE_P(Backends, WalletsTest, ::testing::Values("sqlite", "postgres"));

TEST_P(WalletsTest, LinkNewIsIdempotentPerPartnerAndPhone) {
  Linked a = linked(p1_);
  EXPECT_EQ(a.link.status, kPending);
  EXPECT_TRUE(a.consent_sent);
  EXPECT_TRUE(a.apikey.starts_with("wk_"));
  EXPECT_EQ(a.link.wallet.msisdn, "237690000042");
  EXPECT_EQ(a.link.wallet.currency, "XAF");
  // The same partner and phone (written another way): the same wallet, link and key.
  Linked b = linked(p1_, "237690000042");
  EXPECT_EQ(b.link.reference, a.link.reference);
  EXPECT_EQ(b.link.wallet.matricule, a.link.wallet.matricule);
  EXPECT_EQ(b.apikey, a.apikey);
  // Another partner: the same wallet, its own link and key.
  Linked c = linked(p3_);
  EXPECT_EQ(c.link.wallet.matricule, a.link.wallet.matricule);
  EXPECT_NE(c.link.reference, a.link.reference);
  EXPECT_NE(c.apikey, a.apikey);
  EXPECT_EQ(count("SELECT COUNT(*) FROM wlt_wallets"), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM wlt_links"), 2);
  // The key is stored only as its hash.
  EXPECT_EQ(count("SELECT COUNT(*) FROM wlt_links WHERE key_hash = ?", {a.apikey}), 0);
  // Concurrent first calls for a new phone make one wallet and one link.
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      if (wallets_->link(web::acting(p1_), request("690000077")).ok()) ++ok;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 8);
  EXPECT_EQ(count("SELECT COUNT(*) FROM wlt_links l JOIN wlt_wallets w ON w.id = l.wallet_id WHERE w.msisdn = ?",
                  {std::string("237690000077")}),
            1);
}

// Every problem of a link request is a typed reason; error.details keeps its English texts.
TEST(LinkRequest, EveryProblemIsATypedReason) {
  json::FieldErrors errors;
  parse_link_request(bj::object{{"extra", 1}, {"phone", bj::array{}}, {"limits", 3}}, errors);
  parse_link_request(
      bj::object{
          {"limits", bj::object{{"per_payment", 500}, {"per_period", 100}, {"period_seconds", 10}, {"other", 1}}}},
      errors);
  parse_link_request(bj::object{{"per_payment", "0"}}, errors);
  const auto& d = errors.details();
  EXPECT_EQ(d.at("extra").as_string(), "is not a known field");
  EXPECT_EQ(d.at("email").as_string(), "is required");
  EXPECT_EQ(d.at("phone").as_string(), "must be a string");
  EXPECT_EQ(d.at("limits").as_string(), "must be an object {per_payment, per_period, period_seconds}");
  EXPECT_EQ(d.at("limits.other").as_string(), "is not a known field");
  EXPECT_EQ(d.at("limits.per_payment").as_string(), "must not exceed per_period");
  EXPECT_EQ(d.at("limits.period_seconds").as_string(), "must be between 60 and 2678400 (31 days)");
  EXPECT_EQ(d.at("per_payment").as_string(), "must be a positive integer");
  for (const auto& p : errors.problems()) {
    EXPECT_NE(p.problem.reason, Reason::text) << p.field;
    EXPECT_EQ(reason::text(p.problem, i18n::Locale::en), d.at(p.field).as_string()) << p.field;
  }
}

TEST_P(WalletsTest, BadInputNamesTheField) {
  json::FieldErrors errors;
  parse_link_request(bj::object{{"email", "nope"}, {"phone", "69-00"}, {"extra", 1}}, errors);
  const auto& d = errors.details();
  EXPECT_TRUE(d.contains("email"));
  EXPECT_TRUE(d.contains("phone"));
  EXPECT_TRUE(d.contains("phoneCountry"));
  EXPECT_TRUE(d.contains("extra"));
  auto r = request();
  r.phone_country = "+999";
  auto e = wallets_->link(web::acting(p1_), r);
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(e.error().details.as_object().contains("phoneCountry"));
  r = request("123");
  e = wallets_->link(web::acting(p1_), r);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().kind, ErrorKind::invalid);
  EXPECT_TRUE(e.error().details.as_object().contains("phone"));
}

TEST_P(WalletsTest, ConsentByCodeThenChargesWithinTheLimitsAndRefusalBeyond) {
  Linked l = linked(p1_);
  ASSERT_TRUE(service_->fund_wallet("sandbox", "237690000042", "XAF", 100'000, "top-up").ok());
  // No money moves before the consent.
  auto early = wallets_->charge(web::acting(p1_), l.apikey, transfer(1000));
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.error().kind, ErrorKind::conflict);
  // A wrong code is refused; the code from the outbox (which states the limits) activates it.
  const std::string code = code_for("237690000042", l.link.reference);
  ASSERT_EQ(code.size(), 6u);
  if (code != "000000") {
    auto wrong = wallets_->confirm(web::acting(p1_), l.apikey, "000000");
    ASSERT_FALSE(wrong.ok());
    EXPECT_EQ(wrong.error().code, "invalid_otp");
  }
  auto ok = wallets_->confirm(web::acting(p1_), l.apikey, code);
  ASSERT_TRUE(ok.ok()) << bj::serialize(ok.error().details);
  EXPECT_EQ(ok->status, kActive);
  EXPECT_EQ(count("SELECT COUNT(*) FROM notify_outbox WHERE body LIKE ?", {std::string("%5%000 XAF%7%000 XAF%")}), 1);

  // Within: 3000, no code asked.
  const Transfer first = transfer(3000);
  auto t1 = wallets_->charge(web::acting(p1_), l.apikey, first);
  ASSERT_TRUE(t1.ok()) << bj::serialize(t1.error().details);
  EXPECT_EQ(t1->status, payments::TxStatus::completed);
  EXPECT_EQ(t1->confirmation_method, "CONSENT");
  // A replay is the same payment and spends nothing more.
  auto replay = wallets_->charge(web::acting(p1_), l.apikey, first);
  ASSERT_TRUE(replay.ok());
  EXPECT_EQ(replay->reference, t1->reference);
  // Beyond the per-payment limit: refused, the collection cancelled, nothing debited.
  auto big = wallets_->charge(web::acting(p1_), l.apikey, transfer(6000));
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, "limit_exceeded");
  EXPECT_TRUE(big.error().details.as_object().contains("amount"));
  // Beyond the period: 3000 + 5000 > 7000.
  auto over = wallets_->charge(web::acting(p1_), l.apikey, transfer(5000));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, "limit_exceeded");
  // What is left still passes: 3000 + 4000 = 7000.
  auto t2 = wallets_->charge(web::acting(p1_), l.apikey, transfer(4000));
  ASSERT_TRUE(t2.ok());
  EXPECT_EQ(t2->status, payments::TxStatus::completed);
  EXPECT_EQ(balance(payments::ledger::customer_wallet("237690000042", "sandbox", "XAF")), 93'000);
  EXPECT_EQ(balance(payments::ledger::merchant_available(m1_.id, "sandbox", "XAF")), 7'000);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE status = 'CANCELLED' AND failure_reason = ?",
                  {std::string("LIMIT_EXCEEDED")}),
            2);
  // A new window starts once the period has passed.
  offset_ += 3'600'001;
  auto t3 = wallets_->charge(web::acting(p1_), l.apikey, transfer(5000));
  ASSERT_TRUE(t3.ok());
  EXPECT_EQ(t3->status, payments::TxStatus::completed);
  expect_ledger_clean();
}

TEST_P(WalletsTest, AShortBalanceFailsThePaymentAndGivesTheBudgetBack) {
  Linked l = active(1000);
  auto t = wallets_->charge(web::acting(p1_), l.apikey, transfer(2000));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->status, payments::TxStatus::failed);
  auto now = wallets_->find(web::acting(p1_), l.apikey);
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(spent_at(*now, wallets_->now()), 0);
  expect_ledger_clean();
}

TEST_P(WalletsTest, ConcurrentChargesNeverSpendPastThePeriod) {
  Linked l = active(1'000'000);
  std::atomic<int> completed{0}, refused{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i)
    threads.emplace_back([&] {
      auto t = wallets_->charge(web::acting(p1_), l.apikey, transfer(1000));
      if (t.ok() && t->status == payments::TxStatus::completed)
        ++completed;
      else if (!t.ok() && t.error().code == "limit_exceeded")
        ++refused;
      else
        ++other;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(completed.load(), 7);
  EXPECT_EQ(refused.load(), 9);
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(balance(payments::ledger::customer_wallet("237690000042", "sandbox", "XAF")), 1'000'000 - 7'000);
  expect_ledger_clean();
}

// A charge is one write unit: the collection, the consent's budget, the debit with its moves,
// the journal and the events; answered the same way through the asynchronous call.
TEST_P(WalletsTest, AChargeIsOneWriteUnitAndTheAsynchronousCallAnswersTheSame) {
  Linked l = active(10'000);
  const std::uint64_t units = db_->stats().write_units;
  const Transfer t = transfer(1000);
  auto paid = wallets_->charge(web::acting(p1_), l.apikey, t);
  ASSERT_TRUE(paid.ok()) << bj::serialize(paid.error().details);
  EXPECT_EQ(paid->status, payments::TxStatus::completed);
  EXPECT_EQ(db_->stats().write_units - units, 1u);
  EXPECT_EQ(spent_at(*wallets_->find(web::acting(p1_), l.apikey), wallets_->now()), 1000);

  auto async = [&](const Transfer& x) {
    std::promise<Result<payments::Transaction>> promise;
    auto future = promise.get_future();
    wallets_->charge_async(web::acting(p1_), l.apikey, x,
                           [&](Result<payments::Transaction> r) { promise.set_value(std::move(r)); });
    return future.get();
  };
  const std::uint64_t before_async = db_->stats().write_units;
  auto second = async(transfer(2000));
  ASSERT_TRUE(second.ok()) << bj::serialize(second.error().details);
  EXPECT_EQ(second->status, payments::TxStatus::completed);
  EXPECT_EQ(db_->stats().write_units - before_async, 1u);
  // A replay through either call is the first payment.
  auto replay = async(t);
  ASSERT_TRUE(replay.ok());
  EXPECT_EQ(replay->reference, paid->reference);
  // Refusals answer through it as through the blocking call: beyond the payment limit, and a
  // field problem before anything is written.
  auto big = async(transfer(6000));
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, "limit_exceeded");
  Transfer bad = transfer(100);
  bad.transaction_uuid = "nope";
  auto invalid = async(bad);
  ASSERT_FALSE(invalid.ok());
  EXPECT_TRUE(invalid.error().details.as_object().contains("transaction_uuid"));
  EXPECT_EQ(balance(payments::ledger::customer_wallet("237690000042", "sandbox", "XAF")), 7'000);
  expect_ledger_clean();
}

// The same charge sent many times at once: one payment, one debit, one budget taken.
TEST_P(WalletsTest, ConcurrentDuplicatesOfAChargeAreOnePayment) {
  Linked l = active(10'000);
  const Transfer t = transfer(1000);
  std::vector<std::thread> threads;
  std::vector<std::string> references(8);
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      auto c = wallets_->charge(web::acting(p1_), l.apikey, t);
      references[i] = c.ok() ? c->reference : c.error().code;
    });
  for (auto& th : threads) th.join();
  for (const auto& r : references) EXPECT_EQ(r, references.front());
  EXPECT_TRUE(references.front().starts_with("TX-"));
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE transaction_uuid = ?", {t.transaction_uuid}), 1);
  EXPECT_EQ(balance(payments::ledger::customer_wallet("237690000042", "sandbox", "XAF")), 9'000);
  EXPECT_EQ(spent_at(*wallets_->find(web::acting(p1_), l.apikey), wallets_->now()), 1000);
  expect_ledger_clean();
}

// Two charges racing for the last of the period's budget, on two nodes: exactly one is paid.
TEST_P(WalletsTest, TwoChargesRacingTheLastOfTheBudgetOneWins) {
  Linked l = active(100'000);
  auto other = node();
  for (int round = 0; round < 3; ++round) {
    if (round > 0) offset_ += 3'600'001;  // a new window
    // 6000 of the 7000 (5000 per payment) spent, then two charges for the last 1000.
    ASSERT_TRUE(wallets_->charge(web::acting(p1_), l.apikey, transfer(3000)).ok());
    ASSERT_TRUE(wallets_->charge(web::acting(p1_), l.apikey, transfer(3000)).ok());
    Result<payments::Transaction> a = internal_error(), b = internal_error();
    std::thread ta([&] { a = wallets_->charge(web::acting(p1_), l.apikey, transfer(1000)); });
    std::thread tb([&] { b = other->charge(web::acting(p1_), l.apikey, transfer(1000)); });
    ta.join();
    tb.join();
    const bool a_paid = a.ok() && a->status == payments::TxStatus::completed;
    const bool b_paid = b.ok() && b->status == payments::TxStatus::completed;
    EXPECT_NE(a_paid, b_paid) << "round " << round;
    const auto& loser = a_paid ? b : a;
    ASSERT_FALSE(loser.ok());
    EXPECT_EQ(loser.error().code, "limit_exceeded");
    EXPECT_EQ(spent_at(*wallets_->find(web::acting(p1_), l.apikey), wallets_->now()), 7000);
  }
  EXPECT_EQ(balance(payments::ledger::customer_wallet("237690000042", "sandbox", "XAF")), 100'000 - 3 * 7000);
  expect_ledger_clean();
}

// A node remembers a key's link after its first charge; unlinking (here on another node) still
// stops the key at once, and the refused charge leaves nothing: its unit is aborted whole.
TEST_P(WalletsTest, AnUnlinkedKeyStopsAtOnceOnEveryNodeAndItsChargeLeavesNothing) {
  Linked l = active(10'000);
  auto other = node();
  ASSERT_TRUE(wallets_->charge(web::acting(p1_), l.apikey, transfer(1000)).ok());  // remembered by this node
  ASSERT_TRUE(other->unlink_by_partner(web::acting(p1_), l.apikey).ok());
  const std::int64_t events = count("SELECT COUNT(*) FROM events WHERE merchant_id = ?", {m1_.id});
  const Transfer t = transfer(1000);
  auto refused = wallets_->charge(web::acting(p1_), l.apikey, t);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::conflict);
  EXPECT_TRUE(refused.error().details.as_object().contains("apikey"));
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE transaction_uuid = ?", {t.transaction_uuid}), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM events WHERE merchant_id = ?", {m1_.id}), events);
  EXPECT_EQ(balance(payments::ledger::customer_wallet("237690000042", "sandbox", "XAF")), 9'000);

  // Linked and consented again on the other node: a new key; the old one, which this node
  // remembered, is unknown (404), the new one charges here.
  ASSERT_TRUE(wallets_->charge(web::acting(p1_), l.apikey, transfer(500)).error().is(ErrorKind::conflict));
  auto again = other->link(web::acting(p1_), request());
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(other->confirm(web::acting(p1_), again->apikey, code_for("237690000042", again->link.reference)).ok());
  ASSERT_TRUE(wallets_->charge(web::acting(p1_), again->apikey, transfer(100)).ok());  // remembered too
  auto old = wallets_->charge(web::acting(p1_), l.apikey, transfer(100));
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.error().kind, ErrorKind::not_found);
  // A node that remembered the old key while the link was ACTIVE under the new one.
  auto third = node();
  ASSERT_TRUE(third->charge(web::acting(p1_), again->apikey, transfer(100)).ok());
  ASSERT_TRUE(other->unlink_by_partner(web::acting(p1_), again->apikey).ok());
  auto relinked = other->link(web::acting(p1_), request());
  ASSERT_TRUE(relinked.ok());
  ASSERT_TRUE(
      other->confirm(web::acting(p1_), relinked->apikey, code_for("237690000042", relinked->link.reference)).ok());
  auto stale = third->charge(web::acting(p1_), again->apikey, transfer(100));
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().kind, ErrorKind::not_found);
  EXPECT_TRUE(third->charge(web::acting(p1_), relinked->apikey, transfer(100)).ok());
  EXPECT_EQ(balance(payments::ledger::customer_wallet("237690000042", "sandbox", "XAF")), 10'000 - 1000 - 300);
  expect_ledger_clean();
}

TEST_P(WalletsTest, AnotherPartnersLinkIsNotFound) {
  Linked l = active();
  for (auto r : {wallets_->find(web::acting(p3_), l.apikey), wallets_->unlink_by_partner(web::acting(p3_), l.apikey),
                 wallets_->confirm(web::acting(p3_), l.apikey, "123456")}) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, ErrorKind::not_found);
    EXPECT_TRUE(r.error().details.as_object().contains("apikey"));
  }
  auto c = wallets_->charge(web::acting(p3_), l.apikey, transfer(100));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::not_found);
  EXPECT_EQ(wallets_->find(web::acting(p1_), l.apikey)->status, kActive);
}

TEST_P(WalletsTest, UnlinkingByEitherSideStopsTheKeyAndTellsThePartner) {
  Linked l = active();
  auto u = wallets_->unlink_by_partner(web::acting(p1_), l.apikey);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->status, kUnlinked);
  EXPECT_EQ(u->unlinked_by, "partner");
  auto c = wallets_->charge(web::acting(p1_), l.apikey, transfer(100));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::conflict);
  EXPECT_EQ(
      count("SELECT COUNT(*) FROM events WHERE merchant_id = ? AND event_type = 'wallet_link.unlinked'", {m1_.id}), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM notify_outbox WHERE tag = 'wallet_link:unlinked'"), 1);
  // Linking again: a new consent and a new key; the old key is dead.
  Linked again = linked(p1_);
  EXPECT_EQ(again.link.status, kPending);
  EXPECT_NE(again.apikey, l.apikey);
  EXPECT_EQ(wallets_->find(web::acting(p1_), l.apikey).error().kind, ErrorKind::not_found);
  auto c2 = wallets_->confirm(web::acting(p1_), again.apikey, code_for("237690000042", again.link.reference));
  ASSERT_TRUE(c2.ok());
  // The user unlinks from the wallet page: the partner gets the event too.
  auto w = wallets_->wallet_of("sandbox", "237690000042");
  ASSERT_TRUE(w.ok() && w->has_value());
  auto byuser = wallets_->unlink_by_user(**w, again.link.reference);
  ASSERT_TRUE(byuser.ok());
  EXPECT_EQ(byuser->unlinked_by, "user");
  EXPECT_EQ(
      count("SELECT COUNT(*) FROM events WHERE merchant_id = ? AND event_type = 'wallet_link.unlinked'", {m1_.id}), 2);
  // Another wallet's link is not the user's to unlink.
  Linked other = linked(p3_, "690000078");
  auto wrong = wallets_->unlink_by_user(**w, other.link.reference);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().kind, ErrorKind::not_found);
}

TEST_P(WalletsTest, APartnersLinksAreListedAndUnlinkedByReferenceForItOnly) {
  Linked a = active();
  Linked b = linked(p1_, "690000079");
  Linked other = linked(p3_, "690000078");
  auto mine = wallets_->partner_links(web::acting(p1_), std::nullopt, 10);
  ASSERT_TRUE(mine.ok());
  ASSERT_EQ(mine->size(), 2u);
  EXPECT_EQ((*mine)[0].reference, b.link.reference);  // newest first
  EXPECT_EQ((*mine)[1].reference, a.link.reference);
  auto next = wallets_->partner_links(web::acting(p1_), (*mine)[0].id, 10);  // the keyset's next page
  ASSERT_TRUE(next.ok());
  ASSERT_EQ(next->size(), 1u);
  EXPECT_EQ((*next)[0].reference, a.link.reference);
  auto theirs = wallets_->partner_links(web::acting(p3_), std::nullopt, 10);
  ASSERT_TRUE(theirs.ok());
  ASSERT_EQ(theirs->size(), 1u);
  EXPECT_EQ((*theirs)[0].reference, other.link.reference);
  // Another partner's link, by its reference, does not exist for this one and stays as it is.
  auto wrong = wallets_->unlink_by_reference(web::acting(p3_), a.link.reference);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().kind, ErrorKind::not_found);
  EXPECT_TRUE(wrong.error().details.as_object().contains("reference"));
  EXPECT_EQ(wallets_->find(web::acting(p1_), a.apikey)->status, kActive);
  // The partner's own: unlinked as through the API (its key stops, the partner's webhooks hear).
  auto u = wallets_->unlink_by_reference(web::acting(p1_), a.link.reference);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->status, kUnlinked);
  EXPECT_EQ(u->unlinked_by, "partner");
  EXPECT_EQ(
      count("SELECT COUNT(*) FROM events WHERE merchant_id = ? AND event_type = 'wallet_link.unlinked'", {m1_.id}), 1);
  auto c = wallets_->charge(web::acting(p1_), a.apikey, transfer(100));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::conflict);
}

TEST_P(WalletsTest, PayoutsCreditTheWalletAndTheHistoryShowsEverything) {
  Linked l = active(10'000);
  ASSERT_TRUE(wallets_->charge(web::acting(p1_), l.apikey, transfer(4000)).ok());
  auto p = wallets_->payout(web::acting(p1_), l.apikey, transfer(1500));
  ASSERT_TRUE(p.ok()) << bj::serialize(p.error().details);
  EXPECT_EQ(p->status, payments::TxStatus::completed);
  EXPECT_EQ(balance(payments::ledger::customer_wallet("237690000042", "sandbox", "XAF")), 7'500);
  // More than the partner holds: refused, nothing stored.
  auto broke = wallets_->payout(web::acting(p1_), l.apikey, transfer(1'000'000));
  ASSERT_FALSE(broke.ok());
  EXPECT_EQ(broke.error().code, "insufficient_funds");
  EXPECT_TRUE(broke.error().details.as_object().contains("amount"));
  auto h = wallets_->history(l.link.wallet, std::nullopt, 2);
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->items.size(), 2u);
  EXPECT_EQ(h->items[0].kind, "PAYOUT");
  EXPECT_EQ(h->items[0].amount, 1500);
  EXPECT_EQ(h->items[1].kind, "COLLECTION");
  EXPECT_EQ(h->items[1].amount, -4000);
  EXPECT_EQ(h->items[1].merchant, m1_.matricule);
  ASSERT_TRUE(h->next.has_value());
  auto rest = wallets_->history(l.link.wallet, h->next, 10);
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->items.size(), 1u);
  EXPECT_EQ(rest->items[0].kind, "WALLET_FUNDING");
  expect_ledger_clean();
}

// A top-up is a PROVIDER collection from the wallet's own number whose credit goes to the wallet;
// the sandbox operator's magic tail of the number decides its outcome.
TEST_P(WalletsTest, TopUpFromMobileMoneyCreditsTheWalletOnlyWhenTheOperatorSucceeds) {
  Linked l = active(0);
  const auto wallet = payments::ledger::customer_wallet("237690000042", "sandbox", "XAF");
  Transfer t = transfer(10'000);
  auto tx = wallets_->topup_by_partner(web::acting(p1_), l.apikey, t);
  ASSERT_TRUE(tx.ok()) << bj::serialize(tx.error().details);
  EXPECT_EQ(tx->channel, "PROVIDER");
  EXPECT_EQ(tx->settlement_mode, "WALLET");
  EXPECT_EQ(tx->service_code, "MTN_MOMO_CMR");
  EXPECT_EQ(tx->required_total, 10'200);  // the 2 % fee on top
  EXPECT_EQ(wait_status(p1_, tx->reference, "PENDING"), "COMPLETED");
  EXPECT_EQ(balance(wallet), 10'000);
  EXPECT_EQ(balance(payments::ledger::merchant_available(m1_.id, "sandbox", "XAF")), 0);
  // A replay is the same top-up; the history shows it with its transaction.
  auto replay = wallets_->topup_by_partner(web::acting(p1_), l.apikey, t);
  ASSERT_TRUE(replay.ok());
  EXPECT_EQ(replay->reference, tx->reference);
  EXPECT_EQ(balance(wallet), 10'000);
  auto h = wallets_->history(l.link.wallet, std::nullopt, 5);
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->items.size(), 1u);
  EXPECT_EQ(h->items[0].kind, "COLLECTION");
  EXPECT_EQ(h->items[0].amount, 10'000);
  EXPECT_EQ(h->items[0].transaction_reference, tx->reference);

  // ...0001 is refused by the operator (insufficient funds): FAILED, nothing credited.
  Linked poor = active(0, "690000001");
  auto refused = wallets_->topup_by_partner(web::acting(p1_), poor.apikey, transfer(5'000));
  ASSERT_TRUE(refused.ok()) << bj::serialize(refused.error().details);
  EXPECT_EQ(wait_status(p1_, refused->reference, "PENDING"), "FAILED");
  EXPECT_EQ(balance(payments::ledger::customer_wallet("237690000001", "sandbox", "XAF")), 0);

  // Bad input names the field; another partner's key is 404.
  Transfer bad = transfer(1000);
  bad.provider = "MTN_MOMO_CIV";
  auto wrong = wallets_->topup_by_partner(web::acting(p1_), l.apikey, bad);
  ASSERT_FALSE(wrong.ok());
  EXPECT_TRUE(wrong.error().details.as_object().contains("provider"));
  bad.provider = "";
  bad.currency = "XOF";
  wrong = wallets_->topup_by_partner(web::acting(p1_), l.apikey, bad);
  ASSERT_FALSE(wrong.ok());
  EXPECT_TRUE(wrong.error().details.as_object().contains("currency"));
  auto other = wallets_->topup_by_partner(web::acting(p3_), l.apikey, transfer(1000));
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().kind, ErrorKind::not_found);
  expect_ledger_clean();
}

// A withdrawal reserves the wallet's money in the unit that creates the payout, pays the
// operator on success, and gives the money back when the operator fails it.
TEST_P(WalletsTest, WithdrawalToMobileMoneyIsPaidFromTheWalletAndRefundedOnFailure) {
  Linked l = active(10'000);
  const auto wallet = payments::ledger::customer_wallet("237690000042", "sandbox", "XAF");
  Transfer t = transfer(2'000);
  auto tx = wallets_->withdraw_by_partner(web::acting(p1_), l.apikey, t);
  ASSERT_TRUE(tx.ok()) << bj::serialize(tx.error().details);
  EXPECT_EQ(tx->operation, "DISBURSEMENT");
  EXPECT_EQ(tx->settlement_mode, "WALLET");
  EXPECT_EQ(tx->required_total, 2'150);  // the payout fee
  EXPECT_EQ(balance(wallet), 7'850);     // reserved at once
  EXPECT_EQ(wait_status(p1_, tx->reference, "PENDING", &payments::Service::disbursement_status), "COMPLETED");
  EXPECT_EQ(balance(wallet), 7'850);
  EXPECT_EQ(balance(payments::ledger::customer_pending("237690000042", "sandbox", "XAF")), 0);
  // Exactly once: the same transaction_uuid is the same withdrawal, and takes no more money or budget.
  auto replay = wallets_->withdraw_by_partner(web::acting(p1_), l.apikey, t);
  ASSERT_TRUE(replay.ok());
  EXPECT_EQ(replay->reference, tx->reference);
  EXPECT_EQ(balance(wallet), 7'850);
  // Within the consent's limits (5 000 per payment, 7 000 per period, 2 150 spent): refused, nothing stored.
  const std::int64_t before = count("SELECT COUNT(*) FROM pay_transactions");
  auto big = wallets_->withdraw_by_partner(web::acting(p1_), l.apikey, transfer(5'000));
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, "limit_exceeded");
  auto over = wallets_->withdraw_by_partner(web::acting(p1_), l.apikey, transfer(4'800));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, "limit_exceeded");
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions"), before);
  EXPECT_EQ(balance(wallet), 7'850);
  // More than the wallet holds (the page's withdrawal: no consent limits): 400 insufficient_funds.
  auto broke = wallets_->withdraw(web::acting(p1_), l.link.wallet, transfer(9'000));
  ASSERT_FALSE(broke.ok());
  EXPECT_EQ(broke.error().code, "insufficient_funds");

  // ...0004 is an account the operator does not know: the payout FAILS and the wallet gets its money back.
  Linked bad = active(5'000, "690000004");
  const auto bad_wallet = payments::ledger::customer_wallet("237690000004", "sandbox", "XAF");
  auto failed = wallets_->withdraw_by_partner(web::acting(p1_), bad.apikey, transfer(1'000));
  ASSERT_TRUE(failed.ok()) << bj::serialize(failed.error().details);
  EXPECT_EQ(balance(bad_wallet), 3'850);
  EXPECT_EQ(wait_status(p1_, failed->reference, "PENDING", &payments::Service::disbursement_status), "FAILED");
  EXPECT_EQ(balance(bad_wallet), 5'000);
  auto h = wallets_->history(bad.link.wallet, std::nullopt, 3);
  ASSERT_TRUE(h.ok());
  ASSERT_GE(h->items.size(), 2u);
  EXPECT_EQ(h->items[0].kind, "PAYOUT_RELEASE");
  EXPECT_EQ(h->items[0].amount, 1'150);
  EXPECT_EQ(h->items[1].kind, "PAYOUT_RESERVE");
  EXPECT_EQ(h->items[1].amount, -1'150);
  expect_ledger_clean();
}

// link/init: within the consent it is a charge; beyond it the user approves it with a code.
TEST_P(WalletsTest, InitChargesWithinTheConsentAndWaitsForTheUsersCodeBeyondIt) {
  Linked l = active(100'000);
  const auto wallet = payments::ledger::customer_wallet("237690000042", "sandbox", "XAF");
  auto within = wallets_->init(web::acting(p1_), l.apikey, transfer(3'000));
  ASSERT_TRUE(within.ok()) << bj::serialize(within.error().details);
  EXPECT_EQ(within->status, payments::TxStatus::completed);
  EXPECT_EQ(within->confirmation_method, "CONSENT");
  // 6 000 is over the 5 000 per payment: INITIATED, a code sent to the phone, nothing debited.
  const Transfer big = transfer(6'000);
  auto waiting = wallets_->init(web::acting(p1_), l.apikey, big);
  ASSERT_TRUE(waiting.ok()) << bj::serialize(waiting.error().details);
  EXPECT_EQ(waiting->status, payments::TxStatus::initiated);
  EXPECT_TRUE(waiting->needs_otp);
  EXPECT_EQ(balance(wallet), 97'000);
  const std::string code = wallet_code("237690000042", waiting->reference);
  ASSERT_EQ(code.size(), 6u);
  // Another partner, or another link of the same partner, cannot approve it.
  Linked other = active(0, "690000043");
  auto foreign = wallets_->approve(web::acting(p1_), other.apikey, waiting->reference, code);
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.error().kind, ErrorKind::not_found);
  EXPECT_TRUE(foreign.error().details.as_object().contains("transaction_reference"));
  auto stranger = wallets_->approve(web::acting(p3_), l.apikey, waiting->reference, code);
  ASSERT_FALSE(stranger.ok());
  EXPECT_EQ(stranger.error().kind, ErrorKind::not_found);
  if (code != "000000") {
    auto wrong = wallets_->approve(web::acting(p1_), l.apikey, waiting->reference, "000000");
    ASSERT_FALSE(wrong.ok());
    EXPECT_EQ(wrong.error().code, "invalid_otp");
  }
  auto approved = wallets_->approve(web::acting(p1_), l.apikey, waiting->reference, code);
  ASSERT_TRUE(approved.ok()) << bj::serialize(approved.error().details);
  EXPECT_EQ(approved->status, payments::TxStatus::completed);
  EXPECT_EQ(balance(wallet), 91'000);
  // A replay of the init is the same payment, whatever the consent now leaves.
  auto replay = wallets_->init(web::acting(p1_), l.apikey, big);
  ASSERT_TRUE(replay.ok());
  EXPECT_EQ(replay->reference, waiting->reference);
  EXPECT_EQ(replay->status, payments::TxStatus::completed);
  // The user's own approval took none of the consent's budget: 3 000 of 7 000 spent.
  auto status = wallets_->find(web::acting(p1_), l.apikey);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(spent_at(*status, now_ms() + offset_.load()), 3'000);
  expect_ledger_clean();
}

// link/init chooses its way on a read; the budget is taken in the charge's unit. Inits racing on
// two nodes for the period's budget: as many complete as the budget holds, every other one waits
// for the user's code (never refused while the user can still approve it, never debited past
// the consent), and an approved one then completes without touching the budget.
TEST_P(WalletsTest, InitsRacingForTheBudgetOnTwoNodesChargeWithinItAndWaitForTheCodeBeyondIt) {
  Linked l = active(1'000'000);
  const auto wallet = payments::ledger::customer_wallet("237690000042", "sandbox", "XAF");
  auto other = node();
  std::vector<std::string> waiting;
  for (int round = 0; round < 3; ++round) {
    if (round > 0) offset_ += 3'600'001;  // a new window
    std::promise<void> go;
    std::shared_future<void> start = go.get_future().share();
    std::vector<std::future<Result<payments::Transaction>>> inits;
    for (int i = 0; i < 16; ++i)
      inits.push_back(std::async(std::launch::async, [&, i] {
        start.wait();
        return (i % 2 ? *other : *wallets_).init(web::acting(p1_), l.apikey, transfer(1000));
      }));
    go.set_value();
    int completed = 0, initiated = 0;
    for (auto& f : inits) {
      auto t = f.get();
      ASSERT_TRUE(t.ok()) << "round " << round << ": " << t.error().code << " " << bj::serialize(t.error().details);
      if (t->status == payments::TxStatus::completed) {
        ++completed;
        EXPECT_EQ(t->confirmation_method, "CONSENT");
      } else {
        EXPECT_EQ(t->status, payments::TxStatus::initiated);
        EXPECT_TRUE(t->needs_otp);
        ++initiated;
        waiting.push_back(t->reference);
      }
    }
    EXPECT_EQ(completed, 7) << "round " << round;
    EXPECT_EQ(initiated, 9) << "round " << round;
    EXPECT_EQ(spent_at(*wallets_->find(web::acting(p1_), l.apikey), wallets_->now()), 7000);
    EXPECT_EQ(balance(wallet), 1'000'000 - (round + 1) * 7000);
  }
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE status = 'CANCELLED'", {}), 0);
  // The user approves one of them: it completes, and the consent's budget stays as it was.
  ASSERT_FALSE(waiting.empty());
  auto approved =
      other->approve(web::acting(p1_), l.apikey, waiting.back(), wallet_code("237690000042", waiting.back()));
  ASSERT_TRUE(approved.ok()) << bj::serialize(approved.error().details);
  EXPECT_EQ(approved->status, payments::TxStatus::completed);
  EXPECT_EQ(spent_at(*wallets_->find(web::acting(p1_), l.apikey), wallets_->now()), 7000);
  EXPECT_EQ(balance(wallet), 1'000'000 - 3 * 7000 - 1000);
  expect_ledger_clean();
}

// A consent code activates exactly the limits its message stated: other limits asked while it
// is live get their own code, and the old one activates nothing.
TEST_P(WalletsTest, AConsentCodeActivatesOnlyTheLimitsItsMessageStated) {
  wallets_ = node(600, &cooled_otp());
  auto first = link_with("690000042", 1'000, 2'000);
  ASSERT_TRUE(first.ok()) << bj::serialize(first.error().details);
  ASSERT_TRUE(first->consent_sent);
  const std::string reference = first->link.reference;
  std::vector<std::string> codes = codes_for("237690000042", reference);
  ASSERT_EQ(codes.size(), 1u);
  const std::string old_code = codes[0];
  // Within the resend cool-down, larger limits: a new code states them.
  auto swapped = link_with("690000042", 4'000, 6'000);
  ASSERT_TRUE(swapped.ok()) << bj::serialize(swapped.error().details);
  EXPECT_EQ(swapped->link.limits.per_payment, 4'000);
  EXPECT_TRUE(swapped->consent_sent);
  codes = codes_for("237690000042", reference);
  ASSERT_EQ(codes.size(), 2u);
  // The first code no longer activates anything.
  if (old_code != codes[1]) {
    auto old = wallets_->confirm(web::acting(p1_), first->apikey, old_code);
    ASSERT_FALSE(old.ok());
    EXPECT_EQ(old.error().code, "invalid_otp");
    auto still = wallets_->find(web::acting(p1_), first->apikey);
    ASSERT_TRUE(still.ok());
    EXPECT_EQ(still->status, kPending);
  }
  // The new code activates the new limits, which its message stated.
  EXPECT_EQ(count("SELECT COUNT(*) FROM notify_outbox WHERE body LIKE ? AND body LIKE ?",
                  {"%" + codes[1] + "%", std::string("%4%000 XAF%6%000 XAF%")}),
            1);
  auto ok = wallets_->confirm(web::acting(p1_), first->apikey, codes[1]);
  ASSERT_TRUE(ok.ok()) << bj::serialize(ok.error().details);
  EXPECT_EQ(ok->status, kActive);
  EXPECT_EQ(ok->limits.per_payment, 4'000);
  EXPECT_EQ(ok->limits.per_period, 6'000);
}

// A link/new retried without limits keeps those of the PENDING link (and its live code).
TEST_P(WalletsTest, LinkNewWithoutLimitsKeepsThePendingLinksLimits) {
  wallets_ = node(600, &cooled_otp());
  auto first = link_with("690000042", 1'000, 2'000);
  ASSERT_TRUE(first.ok());
  auto again = link_with("690000042", std::nullopt, std::nullopt);
  ASSERT_TRUE(again.ok()) << bj::serialize(again.error().details);
  EXPECT_EQ(again->link.limits.per_payment, 1'000);
  EXPECT_EQ(again->link.limits.per_period, 2'000);
  EXPECT_FALSE(again->consent_sent);  // the cool-down: the code already sent still holds
  const auto codes = codes_for("237690000042", first->link.reference);
  ASSERT_EQ(codes.size(), 1u);
  auto ok = wallets_->confirm(web::acting(p1_), first->apikey, codes[0]);
  ASSERT_TRUE(ok.ok()) << bj::serialize(ok.error().details);
  EXPECT_EQ(ok->limits.per_payment, 1'000);
  EXPECT_EQ(ok->limits.per_period, 2'000);
  // Only per_payment named: per_period stays the stored one (when it still covers it).
  auto second = link_with("690000043", 1'000, 2'000);
  ASSERT_TRUE(second.ok());
  auto partial = link_with("690000043", 1'500, std::nullopt);
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(partial->link.limits.per_payment, 1'500);
  EXPECT_EQ(partial->link.limits.per_period, 2'000);
}

// The wallet page's approval activates the limits the page showed, and nothing once they changed.
TEST_P(WalletsTest, ThePagesApprovalActivatesOnlyTheLimitsItShowed) {
  wallets_ = node(600, &cooled_otp());
  auto first = link_with("690000042", 1'000, 2'000);
  ASSERT_TRUE(first.ok());
  const Limits shown = first->link.limits;
  ASSERT_TRUE(link_with("690000042", 4'000, 6'000).ok());
  auto stale = wallets_->consent_by_user(first->link.wallet, first->link.reference, shown);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().kind, ErrorKind::conflict);
  auto still = wallets_->find(web::acting(p1_), first->apikey);
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->status, kPending);
  auto ok = wallets_->consent_by_user(first->link.wallet, first->link.reference, Limits{4'000, 6'000, 3'600'000});
  ASSERT_TRUE(ok.ok()) << bj::serialize(ok.error().details);
  EXPECT_EQ(ok->status, kActive);
  EXPECT_EQ(ok->limits.per_payment, 4'000);
}

// A confirmation racing a change of limits, on two nodes: the link ends ACTIVE with the limits the
// code stated, or PENDING with the new ones; never ACTIVE with limits no code stated.
TEST_P(WalletsTest, AConfirmationRacingALimitsChangeNeverActivatesUnstatedLimits) {
  wallets_ = node(600, &cooled_otp());
  auto other = node(600, &cooled_otp());
  int activated = 0;
  for (int round = 0; round < 8; ++round) {
    const std::string phone = "69100" + std::to_string(1000 + round);
    auto first = link_with(phone, 1'000, 2'000);
    ASSERT_TRUE(first.ok()) << bj::serialize(first.error().details);
    const auto codes = codes_for("237" + phone, first->link.reference);
    ASSERT_EQ(codes.size(), 1u);
    std::promise<void> go;
    std::shared_future<void> start = go.get_future().share();
    auto confirm = std::async(std::launch::async, [&] {
      start.wait();
      return wallets_->confirm(web::acting(p1_), first->apikey, codes[0]);
    });
    auto change = std::async(std::launch::async, [&] {
      start.wait();
      LinkRequest r = request(phone);
      r.per_payment = 4'000;
      r.per_period = 6'000;
      return other->link(web::acting(p1_), r);
    });
    go.set_value();
    auto confirmed = confirm.get();
    auto changed = change.get();
    ASSERT_TRUE(changed.ok()) << bj::serialize(changed.error().details);
    auto now_link = wallets_->find(web::acting(p1_), first->apikey);
    ASSERT_TRUE(now_link.ok());
    if (now_link->status == kActive) {
      ++activated;
      EXPECT_TRUE(confirmed.ok());
      EXPECT_EQ(now_link->limits.per_payment, 1'000) << "round " << round;
      EXPECT_EQ(now_link->limits.per_period, 2'000) << "round " << round;
    } else {
      EXPECT_EQ(now_link->status, kPending);
      EXPECT_FALSE(confirmed.ok());
      EXPECT_EQ(now_link->limits.per_payment, 4'000);
    }
  }
  expect_ledger_clean();
  (void)activated;
}

// fiat-distribution moves the partner's money to several linked wallets in one unit.
TEST_P(WalletsTest, FiatDistributionIsAllOrNothingExactAndIdempotent) {
  Linked a = active(20'000);
  Linked b = active(0, "690000043");
  ASSERT_TRUE(wallets_->charge(web::acting(p1_), a.apikey, transfer(5'000)).ok());  // the partner now holds 5 000
  const auto partner = payments::ledger::merchant_available(m1_.id, "sandbox", "XAF");
  const auto wa = payments::ledger::customer_wallet("237690000042", "sandbox", "XAF");
  const auto wb = payments::ledger::customer_wallet("237690000043", "sandbox", "XAF");
  ASSERT_EQ(balance(partner), 5'000);
  auto parse = [](const bj::object& body, json::FieldErrors& errors) {
    return parse_distribution_request(body, errors);
  };

  // Rates: 1 001 split 50/50 gives 501 and 500 (the odd unit to the first line).
  const std::string uuid = uuid_v4();
  bj::object body{{"transaction_uuid", uuid},
                  {"amount", 1'001},
                  {"distribution", bj::array{bj::object{{"apikey", a.apikey}, {"rate", 50}},
                                             bj::object{{"apikey", b.apikey}, {"rate", 50}}}}};
  json::FieldErrors errors;
  auto r = parse(body, errors);
  ASSERT_TRUE(errors.empty()) << bj::serialize(errors.details());
  auto d = wallets_->distribute(web::acting(p1_), r);
  ASSERT_TRUE(d.ok()) << bj::serialize(d.error().details);
  ASSERT_EQ(d->lines.size(), 2u);
  EXPECT_EQ(d->lines[0].amount, 501);
  EXPECT_EQ(d->lines[1].amount, 500);
  EXPECT_EQ(balance(partner), 3'999);
  EXPECT_EQ(balance(wa), 15'000 + 501);
  EXPECT_EQ(balance(wb), 500);
  // A replay is the same distribution and moves nothing; another body with the uuid is 409.
  auto again = wallets_->distribute(web::acting(p1_), r);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->reference, d->reference);
  EXPECT_EQ(balance(partner), 3'999);
  body["amount"] = 1'002;
  auto changed = wallets_->distribute(web::acting(p1_), parse(body, errors));
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.error().kind, ErrorKind::conflict);
  EXPECT_TRUE(changed.error().details.as_object().contains("transaction_uuid"));
  EXPECT_EQ(
      bj::serialize(changed.error().details),
      R"({"transaction_uuid":"was already used for a different distribution","reference":")" + d->reference + R"("})");

  // Amounts: exactly what the partner holds passes; the same again finds nothing left and does nothing.
  bj::object rich{{"transaction_uuid", uuid_v4()},
                  {"distribution", bj::array{bj::object{{"apikey", a.apikey}, {"amount", 1'000}},
                                             bj::object{{"apikey", b.apikey}, {"amount", 2'999}}}}};
  auto fine = wallets_->distribute(web::acting(p1_), parse(rich, errors));
  ASSERT_TRUE(fine.ok()) << bj::serialize(fine.error().details);
  EXPECT_EQ(balance(partner), 0);
  EXPECT_EQ(balance(wb), 500 + 2'999);
  rich["transaction_uuid"] = uuid_v4();
  auto broke = wallets_->distribute(web::acting(p1_), parse(rich, errors));
  ASSERT_FALSE(broke.ok());
  EXPECT_EQ(broke.error().code, "insufficient_funds");
  EXPECT_EQ(count("SELECT COUNT(*) FROM wlt_distributions"), 2);
  EXPECT_EQ(count("SELECT COUNT(*) FROM wlt_distribution_lines"), 4);

  // Bad input names the field; another partner's link is 404; an unlinked link refuses the whole.
  json::FieldErrors bad;
  parse(bj::object{{"transaction_uuid", "x"},
                   {"amount", 10},
                   {"distribution", bj::array{bj::object{{"apikey", a.apikey}, {"rate", 60}},
                                              bj::object{{"apikey", a.apikey}, {"rate", 30}}}}},
        bad);
  EXPECT_TRUE(bad.details().contains("transaction_uuid"));
  EXPECT_TRUE(bad.details().contains("distribution[1].apikey"));
  EXPECT_TRUE(bad.details().contains("distribution"));  // 90 %, not 100 %
  Linked c = linked(p3_, "690000044");
  bj::object foreign{{"transaction_uuid", uuid_v4()},
                     {"distribution", bj::array{bj::object{{"apikey", a.apikey}, {"amount", 1}},
                                                bj::object{{"apikey", c.apikey}, {"amount", 1}}}}};
  auto nf = wallets_->distribute(web::acting(p1_), parse(foreign, errors));
  ASSERT_FALSE(nf.ok());
  EXPECT_EQ(nf.error().kind, ErrorKind::not_found);
  EXPECT_TRUE(nf.error().details.as_object().contains("distribution[1].apikey"));
  ASSERT_TRUE(wallets_->unlink_by_partner(web::acting(p1_), b.apikey).ok());
  ASSERT_TRUE(wallets_->charge(web::acting(p1_), a.apikey, transfer(100)).ok());
  auto gone = wallets_->distribute(web::acting(p1_), parse(rich, errors));
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().kind, ErrorKind::conflict);
  EXPECT_EQ(balance(partner), 100);
  expect_ledger_clean();
}

TEST_P(WalletsTest, ThePartnersKeyAndTheAddressLimitGuardTheApi) {
  std::string key;
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(auto k, merchant::issue_key(c, "test-pepper", m1_.id, merchant::KeyKind::link,
                                                                     "sandbox", now_ms()));
                   key = k.key;
                   return {};
                 })
                  .ok());
  make_wallets(3);
  auto req = [&](std::string k, std::string ip) {
    web::Request r;
    r.method = "GET";
    r.remote_ip = std::move(ip);
    if (!k.empty()) r.headers.emplace_back("x-api-key", std::move(k));
    return r;
  };
  auto none = req("", "10.0.0.1");
  auto e1 = wallets_->authenticate_partner(none);
  ASSERT_FALSE(e1.ok());
  EXPECT_EQ(e1.error().kind, ErrorKind::unauthenticated);
  auto wrong = req("lk_test_wrongwrongwrongwrongwrong", "10.0.0.1");
  EXPECT_EQ(wallets_->authenticate_partner(wrong).error().kind, ErrorKind::unauthenticated);
  auto good = req(key, "10.0.0.1");
  auto p = wallets_->authenticate_partner(good);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->merchant_id, m1_.id);
  // The fourth request of the hour from this address is refused, whatever the key.
  auto fourth = wallets_->authenticate_partner(good);
  ASSERT_FALSE(fourth.ok());
  EXPECT_EQ(fourth.error().kind, ErrorKind::rate_limited);
  auto res = web::error(good, fourth.error());
  EXPECT_EQ(res.status, 429);
  EXPECT_FALSE(res.get("Retry-After").empty());
  // Another address is not affected.
  auto elsewhere = req(key, "10.0.0.2");
  EXPECT_TRUE(wallets_->authenticate_partner(elsewhere).ok());
}

}  // namespace
}  // namespace sika::wallets
