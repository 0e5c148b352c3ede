// Payment links over a real payments::Service (the sandbox operator) on both backends.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "limits/limiter.hpp"
#include "links/qr.hpp"
#include "links/service.hpp"
#include "payments/fixture.hpp"
#include "web/acting.hpp"

namespace sika::links {
namespace {

namespace bj = boost::json;

class LinksTest : public payments::testing::PaymentsTest {
 protected:
  void SetUp() override {
    PaymentsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    Options o;
    o.page_base_url = "https://pay.example.test/checkout";
    o.clock = [this] { return now_ms() + offset_.load(); };
    o.otp = otp_.get();
    links_ = std::make_unique<Service>(
        *db_, *service_, [this] { return catalog_; }, o);
    p1_ = principal(m1_);
    p2_ = principal(m2_);
  }
  void TearDown() override {
    links_.reset();
    PaymentsTest::TearDown();
  }

  std::pair<int, bj::object> link_call(Result<web::Response> (Service::*fn)(web::Request&), const web::Principal& p,
                                       const bj::value& body, std::string reference = "") {
    auto req = request(p, body);
    if (!reference.empty()) req.path_params = {{"reference", reference}};
    auto res = web::respond(req, ((*links_).*fn)(req));
    return {res.status, parse(res)};
  }

  bj::object create_link(const bj::object& body) {
    auto [status, env] = link_call(&Service::create, p1_, body);
    EXPECT_EQ(status, 201) << bj::serialize(env);
    return status == 201 ? env.at("data").as_object() : bj::object{};
  }

  std::pair<int, bj::object> pay(std::string_view code, const bj::object& body) {
    web::Request req;
    req.method = "POST";
    req.body = bj::serialize(body);
    req.headers = {{"content-type", "application/json"}};
    req.path_params = {{"shortCode", std::string(code)}};
    req.locale = i18n::Locale::en;
    auto res = web::respond(req, links_->pay(req));
    return {res.status, parse(res)};
  }

  static bj::object payer(std::string phone = "237690000000") {
    return bj::object{{"customer_phone", phone}, {"transaction_uuid", uuid_v4()}, {"provider", "MTN_MOMO_CMR"}};
  }

  std::string code_of(const bj::object& link) { return std::string(link.at("short_code").as_string()); }

  std::unique_ptr<Service> links_;
  web::Principal p1_, p2_;
};

TEST(LinkModel, ShortCodesAreTenRandomAlphanumerics) {
  std::set<std::string> seen;
  for (int i = 0; i < 2000; ++i) {
    std::string c = new_short_code();
    EXPECT_EQ(c.size(), 10u);
    EXPECT_TRUE(valid_short_code(c)) << c;
    seen.insert(c);
  }
  EXPECT_EQ(seen.size(), 2000u);
  EXPECT_FALSE(valid_short_code("abc1234"));
  EXPECT_FALSE(valid_short_code("abcdefghijklm"));
  EXPECT_FALSE(valid_short_code("abcd-efgh"));
  EXPECT_TRUE(valid_short_code("abcdEFGH"));
}

TEST_P(LinksTest, CreateShowsTheDocumentedFieldsAndValidatesPrecisely) {
  auto link = create_link(bj::object{{"currency", "XAF"}, {"amount", 5000}, {"title", "T-shirt"}, {"max_usage", 1}});
  ASSERT_FALSE(link.empty());
  EXPECT_TRUE(link.at("reference").as_string().starts_with("PLK-"));
  EXPECT_TRUE(valid_short_code(code_of(link)));
  EXPECT_EQ(link.at("payment_url").as_string(), "https://pay.example.test/checkout/pay/" + code_of(link));
  EXPECT_EQ(link.at("status").as_string(), "ACTIVE");
  EXPECT_EQ(link.at("amount").as_int64(), 5000);
  EXPECT_TRUE(link.at("expires_at").is_null());
  EXPECT_EQ(link.at("payments_completed").as_int64(), 0);

  auto [status, env] = link_call(&Service::create, p1_,
                                 bj::object{{"currency", "XOF"},
                                            {"amount", 10},
                                            {"min_amount", 5},
                                            {"max_usage", 0},
                                            {"channel", "CASH"},
                                            {"expires_at", "2001-01-01T00:00:00Z"}});
  EXPECT_EQ(status, 400);
  EXPECT_EQ(env.at("message").as_string(), "empty_data");
  const auto& d = env.at("error").at("details").as_object();
  for (const char* f : {"currency", "min_amount", "max_usage", "channel", "expires_at"})
    EXPECT_TRUE(d.contains(f)) << f << " in " << bj::serialize(d);
}

TEST_P(LinksTest, AnotherMerchantsLinkIsNotFoundAndListsFilterAndPage) {
  auto a = create_link(bj::object{{"currency", "XAF"}, {"amount", 1000}});
  auto b = create_link(bj::object{{"currency", "XAF"}});
  std::string ref = std::string(a.at("reference").as_string());
  EXPECT_EQ(link_call(&Service::show, p2_, bj::object{}, ref).first, 404);
  EXPECT_EQ(link_call(&Service::show, p1_, bj::object{}, ref).first, 200);
  EXPECT_EQ(link_call(&Service::disable, p2_, bj::object{}, ref).first, 404);

  auto [ds, disabled] = link_call(&Service::disable, p1_, bj::object{}, ref);
  EXPECT_EQ(ds, 200);
  EXPECT_EQ(disabled.at("data").at("status").as_string(), "DISABLED");

  auto list = [&](std::string query) {
    auto req = request(p1_, bj::object{});
    req.method = "GET";
    auto fields = web::parse_form(query);
    req.query = *fields;
    auto res = web::respond(req, links_->list(req));
    return std::make_pair(res.status, parse(res));
  };
  auto [s1, all] = list("limit=1&page=2");
  EXPECT_EQ(s1, 200);
  EXPECT_EQ(all.at("data").as_array().size(), 1u);
  EXPECT_EQ(all.at("meta").at("pagination").at("total").as_int64(), 2);
  auto [s2, active] = list("status=ACTIVE");
  ASSERT_EQ(active.at("data").as_array().size(), 1u);
  EXPECT_EQ(active.at("data").as_array()[0].at("reference"), b.at("reference"));
  auto [s3, bad] = list("status=GONE&from=yesterday");
  EXPECT_EQ(s3, 400);
  EXPECT_TRUE(bad.at("error").at("details").as_object().contains("status"));
  EXPECT_TRUE(bad.at("error").at("details").as_object().contains("from"));
}

TEST_P(LinksTest, UpdateChangesTitleAndExpiry) {
  auto a = create_link(bj::object{{"currency", "XAF"}, {"amount", 1000}});
  std::string ref = std::string(a.at("reference").as_string());
  auto [st, env] = link_call(&Service::update, p1_,
                             bj::object{{"title", "New"}, {"expires_at", iso8601(now_ms() + 3'600'000)}}, ref);
  ASSERT_EQ(st, 200) << bj::serialize(env);
  EXPECT_EQ(env.at("data").at("title").as_string(), "New");
  EXPECT_FALSE(env.at("data").at("expires_at").is_null());
  auto [st2, env2] = link_call(&Service::update, p1_, bj::object{{"amount", 5}}, ref);
  EXPECT_EQ(st2, 400);
  EXPECT_TRUE(env2.at("error").at("details").as_object().contains("amount"));
}

TEST_P(LinksTest, PayingAFixedLinkMakesAnOrdinaryCollectionAndIsIdempotent) {
  auto link = create_link(bj::object{{"currency", "XAF"}, {"amount", 5000}, {"title", "Shoes"}});
  bj::object body = payer();
  auto [status, env] = pay(code_of(link), body);
  ASSERT_EQ(status, 200) << bj::serialize(env);
  const auto& tx = env.at("data").as_object();
  for (const char* f :
       {"transaction_reference", "invoice_reference", "provider_reference", "status", "operation", "channel", "amount",
        "currency", "confirmation_method", "confirmation_url", "fee", "required_total", "settlement_mode",
        "split_reference", "split_status", "created_at", "updated_at", "environment"})
    EXPECT_TRUE(tx.contains(f)) << f;
  EXPECT_EQ(tx.at("amount").as_int64(), 5000);
  std::string ref = std::string(tx.at("transaction_reference").as_string());

  auto [again_status, again] = pay(code_of(link), body);
  EXPECT_EQ(again_status, 200);
  EXPECT_EQ(again.at("data").at("transaction_reference").as_string(), ref);

  EXPECT_EQ(wait_status(p1_, ref, "PENDING"), "COMPLETED");
  auto shown = links_->find(web::acting(p1_), std::string(link.at("reference").as_string()));
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ(shown->payments_completed, 1);
  EXPECT_EQ(shown->total_collected, 5000);

  bj::object other = payer();
  other["amount"] = 4000;
  auto [wrong, wrong_env] = pay(code_of(link), other);
  EXPECT_EQ(wrong, 400);
  EXPECT_TRUE(wrong_env.at("error").at("details").as_object().contains("amount"));
  expect_ledger_clean();
}

TEST_P(LinksTest, ALinkWhoseMerchantBearsTheFeeChargesThePriceAndCreditsThePriceLessTheFee) {
  auto link = create_link(bj::object{{"currency", "XAF"}, {"amount", 5000}, {"feeBearer", "MERCHANT"}});
  auto [status, env] = pay(code_of(link), payer());
  ASSERT_EQ(status, 200) << bj::serialize(env);
  const auto& tx = env.at("data").as_object();
  EXPECT_EQ(tx.at("required_total").as_int64(), 5000);  // the customer pays the link's price
  EXPECT_EQ(tx.at("fee").as_int64(), 100);
  EXPECT_EQ(tx.at("amount").as_int64(), 4900);  // the merchant is credited the price less the fee
  std::string ref(tx.at("transaction_reference").as_string());
  EXPECT_EQ(wait_status(p1_, ref, "PENDING"), "COMPLETED");
  EXPECT_EQ(balance(payments::ledger::merchant_available(m1_.id, "sandbox", "XAF")), 4900);
  expect_ledger_clean();
}

TEST_P(LinksTest, OtpServicesAskForTheCodeFirst) {
  auto link = create_link(bj::object{{"currency", "XAF"}, {"amount", 2000}, {"provider", "ORANGE_MONEY_CMR"}});
  bj::object body = payer();
  body.erase("provider");
  auto [status, env] = pay(code_of(link), body);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(env.at("message").as_string(), "otp_required");
  EXPECT_TRUE(env.at("error").at("details").as_object().contains("otp_helper"));
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions"), 0);
  body["otp"] = 123456;
  auto [ok_status, ok] = pay(code_of(link), body);
  ASSERT_EQ(ok_status, 200) << bj::serialize(ok);
  EXPECT_EQ(wait_status(p1_, ok.at("data").at("transaction_reference").as_string(), "PENDING"), "COMPLETED");
}

// One payer's attempt (one transaction_uuid) posted eight times at once with the right code (a
// double click, a retrying client): the link's collection is made once and completes once; no
// post is refused as a wrong code, and none fails it.
TEST_P(LinksTest, TheRightCodePostedEightTimesAtOncePaysOnce) {
  auto link = create_link(bj::object{{"currency", "XAF"}, {"amount", 2000}, {"provider", "ORANGE_MONEY_CMR"}});
  bj::object body = payer();
  body.erase("provider");
  ASSERT_EQ(pay(code_of(link), body).first, 400);  // otp_required: nothing created
  body["otp"] = 123456;
  std::atomic<int> ready{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      ++ready;
      while (ready.load() < 8) std::this_thread::yield();
      auto [st, env] = pay(code_of(link), body);
      if (st == 400 && env.at("message").as_string() == "invalid_otp") ++wrong;
      if (st != 200 && st != 409) ADD_FAILURE() << st << " " << bj::serialize(env);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions"), 1);
  auto [st, env] = pay(code_of(link), body);  // the same attempt again: its collection
  ASSERT_EQ(st, 200) << bj::serialize(env);
  EXPECT_EQ(wait_status(p1_, env.at("data").at("transaction_reference").as_string(), "PENDING"), "COMPLETED");
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transitions WHERE to_status = 'FAILED'"), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transitions WHERE to_status = 'COMPLETED'"), 1);
  expect_ledger_clean();
}

TEST_P(LinksTest, OpenAmountsBoundsAndRefusals) {
  auto link = create_link(bj::object{{"currency", "XAF"}, {"min_amount", 500}, {"max_amount", 10'000}});
  auto [s1, e1] = pay(code_of(link), payer());
  EXPECT_EQ(s1, 400);
  EXPECT_TRUE(e1.at("error").at("details").as_object().contains("amount"));
  bj::object low = payer();
  low["amount"] = 100;
  EXPECT_EQ(pay(code_of(link), low).first, 400);
  bj::object fine = payer();
  fine["amount"] = 700;
  EXPECT_EQ(pay(code_of(link), fine).first, 200);

  auto [s2, e2] = pay(code_of(link), bj::object{});
  EXPECT_EQ(s2, 400);
  EXPECT_EQ(e2.at("message").as_string(), "empty_data");
  EXPECT_TRUE(e2.at("error").at("details").as_object().contains("customer_phone"));
  EXPECT_EQ(pay("short", payer()).first, 400);
  EXPECT_EQ(pay("NoSuchCode12", payer()).first, 404);

  std::string ref = std::string(link.at("reference").as_string());
  ASSERT_EQ(link_call(&Service::disable, p1_, bj::object{}, ref).first, 200);
  auto [s3, e3] = pay(code_of(link), fine);
  EXPECT_EQ(s3, 400);
  EXPECT_EQ(e3.at("message").as_string(), "link_disabled");
}

TEST_P(LinksTest, ExpiredLinksRefusePayment) {
  auto link =
      create_link(bj::object{{"currency", "XAF"}, {"amount", 1000}, {"expires_at", iso8601(now_ms() + 60'000)}});
  offset_ = 120'000;
  auto [s, e] = pay(code_of(link), payer());
  EXPECT_EQ(s, 400);
  EXPECT_EQ(e.at("message").as_string(), "link_expired");
  auto shown = links_->find(web::acting(p1_), std::string(link.at("reference").as_string()));
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ(shown->status_at(links_->now()), kExpired);
}

// N payers race for a single-use link: exactly one gets a collection; the others are refused
// before any collection (so before any money) exists for them.
TEST_P(LinksTest, SingleUseLinkUnderConcurrencyCompletesExactlyOnce) {
  auto link = create_link(bj::object{{"currency", "XAF"}, {"amount", 3000}, {"max_usage", 1}});
  const std::string code = code_of(link);
  constexpr int kPayers = 12;
  std::atomic<int> accepted{0}, used_up{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kPayers; ++i)
    threads.emplace_back([&] {
      auto [status, env] = pay(code, payer());
      if (status == 200)
        ++accepted;
      else if (env.at("message").as_string() == "link_used_up")
        ++used_up;
      else
        ++other;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(accepted.load(), 1);
  EXPECT_EQ(used_up.load(), kPayers - 1);
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions"), 1);
  EXPECT_EQ(count("SELECT held FROM lnk_links"), 1);
}

// A payment that fails gives its use back: the next payer of a single-use link is served.
TEST_P(LinksTest, AFailedPaymentReleasesItsUse) {
  auto link = create_link(bj::object{{"currency", "XAF"}, {"amount", 3000}, {"max_usage", 1}});
  auto [s1, e1] = pay(code_of(link), payer("237690000002"));  // sandbox: REJECTED_BY_CUSTOMER
  ASSERT_EQ(s1, 200) << bj::serialize(e1);
  std::string ref1 = std::string(e1.at("data").at("transaction_reference").as_string());
  EXPECT_EQ(wait_status(p1_, ref1, "PENDING"), "FAILED");
  auto [s2, e2] = pay(code_of(link), payer());
  ASSERT_EQ(s2, 200) << bj::serialize(e2);
  EXPECT_EQ(wait_status(p1_, e2.at("data").at("transaction_reference").as_string(), "PENDING"), "COMPLETED");
  auto [s3, e3] = pay(code_of(link), payer());
  EXPECT_EQ(s3, 400);
  EXPECT_EQ(e3.at("message").as_string(), "link_used_up");
  auto shown = links_->find(web::acting(p1_), std::string(link.at("reference").as_string()));
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ(shown->payments_completed, 1);
  EXPECT_EQ(shown->total_collected, 3000);
}

// Paying a WALLET link without a code sends one and answers otp_required with nothing reserved
// or created: the link's single use stays free for whoever brings a code.
TEST_P(LinksTest, AWalletLinkPaidWithoutACodeReservesAndCreatesNothing) {
  ASSERT_TRUE(service_->fund_wallet("sandbox", "237690000042", "XAF", 100'000, "top-up").ok());
  ASSERT_TRUE(service_->fund_wallet("sandbox", "237690000043", "XAF", 100'000, "top-up").ok());
  auto link = create_link(bj::object{{"currency", "XAF"}, {"amount", 1000}, {"max_usage", 1}, {"channel", "WALLET"}});
  const std::string reference(link.at("reference").as_string());
  bj::object first = payer("237690000042");
  auto [s1, e1] = pay(code_of(link), first);
  EXPECT_EQ(s1, 400) << bj::serialize(e1);
  EXPECT_EQ(e1.at("message").as_string(), "otp_required");
  EXPECT_TRUE(e1.at("error").at("details").as_object().contains("otp_helper"));
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions"), 0);
  EXPECT_EQ(count("SELECT held FROM lnk_links WHERE reference = ?", {reference}), 0);
  // Another payer is not told the link is used up: it gets its own code.
  bj::object second = payer("237690000043");
  auto [s2, e2] = pay(code_of(link), second);
  EXPECT_EQ(s2, 400);
  EXPECT_EQ(e2.at("message").as_string(), "otp_required");
  // A wrong code creates nothing either.
  bj::object wrong = first;
  wrong["otp"] = "000001";
  auto [sw, ew] = pay(code_of(link), wrong);
  EXPECT_EQ(sw, 400);
  EXPECT_EQ(ew.at("message").as_string(), "invalid_otp");
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions"), 0);
  // The second payer's code pays; the first one's then finds the link used up.
  second["otp"] = wallet_code("237690000043", reference);
  auto [s3, e3] = pay(code_of(link), second);
  ASSERT_EQ(s3, 200) << bj::serialize(e3);
  EXPECT_EQ(e3.at("data").at("status").as_string(), "COMPLETED");
  EXPECT_EQ(balance(payments::ledger::customer_wallet("237690000043", "sandbox", "XAF")),
            100'000 - e3.at("data").at("required_total").as_int64());
  // A replay is the same payment.
  auto [s4, e4] = pay(code_of(link), second);
  EXPECT_EQ(s4, 200);
  EXPECT_EQ(e4.at("data").at("transaction_reference"), e3.at("data").at("transaction_reference"));
  first["otp"] = wallet_code("237690000042", reference);
  auto [s5, e5] = pay(code_of(link), first);
  EXPECT_EQ(s5, 400);
  EXPECT_EQ(e5.at("message").as_string(), "link_used_up");
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions"), 1);
  expect_ledger_clean();
}

// Payers racing for a single-use WALLET link, each with its code: one payment, the others
// link_used_up with nothing created or debited.
TEST_P(LinksTest, PayersWithCodesRacingForASingleUseWalletLinkMakeOnePayment) {
  auto link = create_link(bj::object{{"currency", "XAF"}, {"amount", 1500}, {"max_usage", 1}, {"channel", "WALLET"}});
  const std::string reference(link.at("reference").as_string());
  constexpr int kPayers = 8;
  std::vector<bj::object> payers;
  for (int i = 0; i < kPayers; ++i) {
    const std::string phone = "2376910000" + std::to_string(10 + i);
    ASSERT_TRUE(service_->fund_wallet("sandbox", phone, "XAF", 10'000, "top-up").ok());
    bj::object b = payer(phone);
    auto [s, e] = pay(code_of(link), b);
    ASSERT_EQ(s, 400) << bj::serialize(e);
    b["otp"] = wallet_code(phone, reference);
    payers.push_back(std::move(b));
  }
  std::vector<std::thread> threads;
  std::atomic<int> ok{0}, used_up{0};
  for (int i = 0; i < kPayers; ++i)
    threads.emplace_back([&, i] {
      auto [s, e] = pay(code_of(link), payers[i]);
      if (s == 200)
        ++ok;
      else if (e.at("message").as_string() == "link_used_up")
        ++used_up;
      else
        ADD_FAILURE() << s << " " << bj::serialize(e);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 1);
  EXPECT_EQ(used_up.load(), kPayers - 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions"), 1);
  EXPECT_EQ(count("SELECT held FROM lnk_links WHERE reference = ?", {reference}), 1);
  expect_ledger_clean();
}

// The keys the platform writes into a payment's metadata are refused from merchants and payers.
TEST_P(LinksTest, ReservedMetadataKeysAreRefusedByName) {
  auto [sc, ec] = link_call(&Service::create, p1_,
                            bj::object{{"currency", "XAF"}, {"metadata", bj::object{{"payment_link_reference", "x"}}}});
  EXPECT_EQ(sc, 400);
  EXPECT_TRUE(ec.at("error").at("details").as_object().contains("metadata.payment_link_reference"))
      << bj::serialize(ec);
  auto link = create_link(bj::object{{"currency", "XAF"}});
  bj::object spoof = payer("237690000042");
  spoof["amount"] = 1000;
  spoof["channel"] = "WALLET";
  spoof["metadata"] = bj::object{{"wallet_link", "WLK-ANYTHING"}};
  auto [s, e] = pay(code_of(link), spoof);
  EXPECT_EQ(s, 400);
  EXPECT_EQ(e.at("message").as_string(), "empty_data");
  EXPECT_TRUE(e.at("error").at("details").as_object().contains("metadata.wallet_link")) << bj::serialize(e);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions"), 0);
}

// Paying is limited per client address and per link, on the shared limiter.
TEST_P(LinksTest, PayingIsRateLimitedPerAddress) {
  limits::Limiter limiter(*db_);
  Options o;
  o.page_base_url = "https://pay.example.test/checkout";
  o.limiter = &limiter;
  o.per_address = {2, 60'000};
  links_ = std::make_unique<Service>(
      *db_, *service_, [this] { return catalog_; }, o);
  auto link = create_link(bj::object{{"currency", "XAF"}, {"amount", 1000}});
  auto attempt = [&](std::string ip) {
    web::Request req;
    req.method = "POST";
    req.body = bj::serialize(payer());
    req.headers = {{"content-type", "application/json"}};
    req.path_params = {{"shortCode", code_of(link)}};
    req.remote_ip = std::move(ip);
    auto res = web::respond(req, links_->pay(req));
    return std::make_pair(res.status, parse(res));
  };
  EXPECT_EQ(attempt("203.0.113.7").first, 200);
  EXPECT_EQ(attempt("203.0.113.7").first, 200);
  auto [status, env] = attempt("203.0.113.7");
  EXPECT_EQ(status, 429);
  EXPECT_EQ(env.at("message").as_string(), "rate_limited");
  EXPECT_EQ(attempt("203.0.113.8").first, 200);  // another address is not affected
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions"), 3);
}

INSTANTIATE_TEST_SUITE_P(Backends, LinksTest, ::testing::Values("sqlite", "postgres"));

// The operator answers after a minute: what one pay call writes is all there is to see.
class LinksSlowOperatorTest : public LinksTest {
 protected:
  void tune(payments::Options& o) override { o.sandbox_delay_ms = 60'000; }
};

TEST_P(LinksSlowOperatorTest, APaymentWithoutCodeIsCreatedSubmittedAndItsUseTakenInOneWriteUnit) {
  auto link = create_link(bj::object{{"currency", "XAF"}, {"amount", 3000}, {"max_usage", 1}});
  const std::uint64_t before = db_->stats().write_units;
  auto [status, env] = pay(code_of(link), payer());
  ASSERT_EQ(status, 200) << bj::serialize(env);
  EXPECT_EQ(db_->stats().write_units - before, 1u);
  EXPECT_EQ(env.at("data").at("status").as_string(), "PENDING");
  EXPECT_EQ(count("SELECT COUNT(*) FROM lnk_payments WHERE state = 'RESERVED'"), 1);
  EXPECT_EQ(count("SELECT held FROM lnk_links"), 1);

  // A refusal writes nothing: no attempt, no collection.
  auto [refused, refused_env] = pay(code_of(link), payer());
  EXPECT_EQ(refused, 400);
  EXPECT_EQ(refused_env.at("message").as_string(), "link_used_up");
  EXPECT_EQ(count("SELECT COUNT(*) FROM lnk_payments"), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions"), 1);
}

INSTANTIATE_TEST_SUITE_P(Backends, LinksSlowOperatorTest, ::testing::Values("sqlite", "postgres"));

}  // namespace
}  // namespace sika::links

#include <zlib.h>

namespace sika::links {
namespace {

std::uint32_t be32(const std::string& s, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

TEST(LinkQr, SvgAndPngAreWellFormedImagesOfTheCode) {
  auto svg = qr_svg("https://pay.example.test/checkout/pay/AbCdEf1234", 4);
  ASSERT_TRUE(svg.ok());
  EXPECT_TRUE(svg->starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_NE(svg->find("h1v1h-1z"), std::string::npos);

  auto png = qr_png("https://pay.example.test/checkout/pay/AbCdEf1234", 4);
  ASSERT_TRUE(png.ok());
  ASSERT_GT(png->size(), 33u);
  EXPECT_EQ(png->substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(png->substr(12, 4), "IHDR");
  const std::uint32_t side = be32(*png, 16);
  EXPECT_EQ(side, be32(*png, 20));
  EXPECT_EQ(side % 4, 0u);
  // Version 3 (29 modules) + 8 quiet modules at 4 px each for a URL of this length.
  EXPECT_GE(side, (21u + 8u) * 4u);
  // The IDAT inflates to one filter byte + `side` gray bytes per row, both colours present.
  std::size_t at = 8 + 12 + 13;
  ASSERT_EQ(png->substr(at + 4, 4), "IDAT");
  const std::uint32_t len = be32(*png, at);
  std::string raw(static_cast<std::size_t>(side) * (side + 1), '\0');
  uLongf raw_len = static_cast<uLongf>(raw.size());
  ASSERT_EQ(uncompress(reinterpret_cast<Bytef*>(raw.data()), &raw_len,
                       reinterpret_cast<const Bytef*>(png->data() + at + 8), len),
            Z_OK);
  EXPECT_EQ(raw_len, raw.size());
  EXPECT_NE(raw.find('\x00', 1), std::string::npos);
  EXPECT_NE(raw.find('\xFF'), std::string::npos);
  EXPECT_FALSE(qr_png("").ok());
}

}  // namespace
}  // namespace sika::links
