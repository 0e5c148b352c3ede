// Hosted checkout over a real payments::Service (the sandbox operator) on both backends.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <atomic>
#include <limits>
#include <thread>
#include <vector>

#include "catalog/fx.hpp"
#include "checkout/service.hpp"
#include "checkout/store.hpp"
#include "payments/fixture.hpp"

namespace sika::checkout {
namespace {

namespace bj = boost::json;

constexpr std::string_view kPepper = "test-pepper-0123456789";

// A valid JSON request of the spec's fields.
bj::object order(std::string order_id = "ORD-1", std::int64_t amount = 5000) {
  return bj::object{{"apiKey", "set-by-the-test"},
                    {"amount", amount},
                    {"currency", "XAF"},
                    {"orderId", order_id},
                    {"description", "2 T-shirts"},
                    {"shopName", "Boutique Akwa"},
                    {"successUrl", "https://shop.example/ok?order=1"},
                    {"failureUrl", "https://shop.example/ko"},
                    {"customer", bj::object{{"name", "Awa"}, {"phone", "237690000000"}}}};
}

TEST(CheckoutModel, ParsesTheSpecFieldsAndNamesEveryProblem) {
  json::FieldErrors ok;
  NewSession n = parse_new_session(order(), ok);
  EXPECT_TRUE(ok.empty()) << bj::serialize(ok.details());
  EXPECT_EQ(n.amount, 5000);
  EXPECT_EQ(n.customer.phone, "237690000000");

  json::FieldErrors errors;
  parse_new_session(bj::object{{"amount", 10.5},
                               {"currency", "XAF"},
                               {"orderId", ""},
                               {"shopName", std::string(300, 'x')},
                               {"successUrl", "javascript:alert(1)"},
                               {"failureUrl", "https://user:pw@shop.example/ko"},
                               {"line", "down"},
                               {"area", "C1"},
                               {"feeBearer", "NOBODY"},
                               {"customer", bj::object{{"email", "nope"}, {"age", 3}}},
                               {"colour", "red"}},
                    errors);
  const auto& d = errors.details();
  for (const char* f : {"apiKey", "amount", "orderId", "description", "shopName", "successUrl", "failureUrl", "line",
                        "area", "feeBearer", "customer.email", "customer.age", "colour"})
    EXPECT_TRUE(d.contains(f)) << f << " in " << bj::serialize(d);
  EXPECT_NE(std::string(d.at("amount").as_string()).find("no minor unit"), std::string::npos);
}

TEST(CheckoutModel, AmountsAreWholeInTheCurrencysMinorUnit) {
  auto amount_of = [](bj::value amount, std::string currency) -> std::optional<std::int64_t> {
    bj::object o = order();
    o["amount"] = amount;
    o["currency"] = currency;
    json::FieldErrors e;
    NewSession n = parse_new_session(o, e);
    if (e.details().contains("amount")) return std::nullopt;
    return n.amount;
  };
  EXPECT_EQ(amount_of(5000, "XAF"), 5000);
  EXPECT_EQ(amount_of("5000", "XOF"), 5000);  // a form post's text
  EXPECT_EQ(amount_of(5000.0, "XAF"), 5000);
  EXPECT_EQ(amount_of(10.5, "USD"), 1050);
  EXPECT_EQ(amount_of("10.25", "USD"), 1025);
  EXPECT_FALSE(amount_of(10.5, "XAF"));
  EXPECT_FALSE(amount_of("10.255", "USD"));
  EXPECT_FALSE(amount_of(0, "XAF"));
  EXPECT_FALSE(amount_of(-5, "XAF"));
  EXPECT_FALSE(amount_of("1e3", "XAF"));
  EXPECT_FALSE(amount_of(true, "XAF"));
}

TEST(CheckoutModel, ReturnUrlsAreHttpOrHttpsOnly) {
  EXPECT_EQ(check_return_url("https://shop.example/ok"), "");
  EXPECT_EQ(check_return_url("http://localhost:8080/ok?x=1"), "");
  for (const char* bad :
       {"javascript:alert(1)", "JAVASCRIPT:alert(1)", "data:text/html,<script>", "ftp://shop.example/",
        "//shop.example/ok", "/relative", "https:///nohost", "https://a@shop.example/", "https://shop.example/#frag",
        "https://shop.example:99999/", "vbscript:msgbox"})
    EXPECT_NE(check_return_url(bad), "") << bad;
  EXPECT_TRUE(host_in_domain("shop.example", "shop.example"));
  EXPECT_TRUE(host_in_domain("pay.shop.example", "shop.example"));
  EXPECT_FALSE(host_in_domain("evilshop.example", "shop.example"));
  EXPECT_FALSE(host_in_domain("shop.example.evil", "shop.example"));
}

TEST(CheckoutModel, DistributionRatesMustNotSumBeyondAHundredAndTheMerchantKeepsTheRest) {
  bj::object o = order();
  o["settlement_mode"] = "SPLIT";
  o["distribution"] = bj::array{bj::object{{"matricule", "MCH-CM-0002"}, {"rate", 60}},
                                bj::object{{"matricule", "MCH-CM-0003"}, {"rate", 40.5}}};
  json::FieldErrors e;
  parse_new_session(o, e);
  EXPECT_TRUE(e.details().contains("distribution")) << bj::serialize(e.details());

  o["distribution"] = bj::array{bj::object{{"matricule", "MCH-CM-0002"}, {"rate", 30}}};
  json::FieldErrors fine;
  NewSession n = parse_new_session(o, fine);
  ASSERT_TRUE(fine.empty()) << bj::serialize(fine.details());
  auto lines = settlement_lines(n.distribution, "MCH-CM-0001");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rate_ppm, 300'000);
  EXPECT_EQ(lines[1].matricule, "MCH-CM-0001");
  EXPECT_EQ(lines[1].rate_ppm, 700'000);

  o["settlement_mode"] = "DIRECT";
  json::FieldErrors direct;
  parse_new_session(o, direct);
  EXPECT_TRUE(direct.details().contains("distribution"));
}

TEST(CheckoutModel, FormFieldsTakeTheShapeOfTheJsonRequest) {
  bj::object form{{"customer[name]", "Awa"},
                  {"customer[phone]", "237690000000"},
                  {"distribution", R"([{"matricule":"MCH-CM-0002","rate":10}])"},
                  {"amount", "5000"}};
  json::FieldErrors e;
  bj::object o = form_to_object(form, e);
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(o.at("customer").at("name").as_string(), "Awa");
  EXPECT_TRUE(o.at("distribution").is_array());
  form["distribution"] = "[not json";
  json::FieldErrors bad;
  form_to_object(form, bad);
  EXPECT_TRUE(bad.details().contains("distribution"));
}

TEST(CheckoutModel, TheSignatureCoversEveryByteOfServiceData) {
  ReturnData d;
  d.transaction_reference = "TX-1";
  d.reference = "ORD-1";
  d.status = "COMPLETED";
  d.amount = 5000;
  d.currency = "XAF";
  const std::string data = service_data(d);
  auto parsed = bj::parse(data).as_object();
  for (const char* f : {"transaction_reference", "reference", "invoice_reference", "provider_reference", "status",
                        "success", "operation", "channel", "amount", "currency"})
    EXPECT_TRUE(parsed.contains(f)) << f;
  EXPECT_TRUE(parsed.at("success").as_bool());
  const std::string secret = merchant_secret("server-key", "MCH-CM-0001");
  EXPECT_NE(secret, merchant_secret("server-key", "MCH-CM-0002"));
  EXPECT_NE(secret, merchant_secret("other-server-key", "MCH-CM-0001"));
  const std::string sig = sign(secret, data);
  EXPECT_TRUE(verify(secret, data, sig));
  std::string tampered = data;
  tampered.replace(tampered.find("5000"), 4, "5001");
  EXPECT_FALSE(verify(secret, tampered, sig));
  EXPECT_FALSE(verify(merchant_secret("server-key", "MCH-CM-0002"), data, sig));
  EXPECT_FALSE(verify(secret, data, sig.substr(0, 63)));
  EXPECT_FALSE(verify(secret, data, ""));
  const std::string url = return_url("https://shop.example/ok?order=1#top", data, sig);
  EXPECT_TRUE(url.starts_with("https://shop.example/ok?order=1&service_data=%7B")) << url;
  EXPECT_TRUE(url.ends_with("&signature=" + sig));
}

TEST(CheckoutFx, RatesAreExactFractionsAndConversionsRoundForTheMerchant) {
  using catalog::fx::Ratio;
  EXPECT_EQ(catalog::fx::parse_ratio("655.957"), (Ratio{655957, 1000}));
  EXPECT_EQ(catalog::fx::parse_ratio("1"), (Ratio{1, 1}));
  EXPECT_EQ(catalog::fx::parse_ratio("1000/655957"), (Ratio{1000, 655957}));
  EXPECT_EQ(catalog::fx::parse_ratio("0.0015/1.5"), (Ratio{1, 1000}));
  for (const char* bad : {"", "0", "-1", "1e3", "abc", "1.", ".5", "1/0", "1.0000000001", "12345678901234567"})
    EXPECT_FALSE(catalog::fx::parse_ratio(bad)) << bad;
  EXPECT_EQ(catalog::fx::ratio_text({655957, 1000}), "655.957");
  EXPECT_EQ(catalog::fx::ratio_text({1, 1}), "1");
  EXPECT_EQ(catalog::fx::ratio_text({1000, 655957}), "1000/655957");
  // Reduced fractions whose denominator divides a power of ten read as decimals.
  EXPECT_EQ(catalog::fx::ratio_text({1525, 2}), "762.5");
  EXPECT_EQ(catalog::fx::ratio_text({1, 8}), "0.125");
  EXPECT_EQ(catalog::fx::ratio_text({3, 40}), "0.075");
  EXPECT_EQ(catalog::fx::ratio_text({1, 3}), "1/3");
  // 10.00 EUR at 655.957 is 6559.57 XAF: the customer pays 6560 (rounded up to the franc).
  EXPECT_EQ(catalog::fx::convert_up(1000, "EUR", "XAF", {655957, 1000}), 6560);
  EXPECT_EQ(catalog::fx::convert_up(100000, "EUR", "XAF", {655957, 1000}), 655957);  // exact: no rounding
  EXPECT_EQ(catalog::fx::convert_up(5000, "XAF", "XOF", {1, 1}), 5000);
  // 5000 XAF in EUR: 7.6224... EUR, rounded up to 7.63.
  EXPECT_EQ(catalog::fx::convert_up(5000, "XAF", "EUR", {1000, 655957}), 763);
  // Back into the order's currency, rounded down: 6560 XAF are worth 10.00 EUR, not more.
  EXPECT_EQ(catalog::fx::convert_back_down(6560, "EUR", "XAF", {655957, 1000}), 1000);
  EXPECT_EQ(catalog::fx::convert_back_down(6559, "EUR", "XAF", {655957, 1000}), 999);
  EXPECT_FALSE(catalog::fx::convert_up(std::numeric_limits<std::int64_t>::max(), "EUR", "XAF", {655957, 1000}));
}

TEST(CheckoutModel, ServiceDataNamesTheSecretVersionAndAConversion) {
  ReturnData d;
  d.reference = "ORD-1";
  d.status = "COMPLETED";
  d.amount = 1000;
  d.currency = "EUR";
  auto plain = bj::parse(service_data(d)).as_object();
  EXPECT_EQ(plain.at("kid").as_int64(), 1);
  EXPECT_FALSE(plain.contains("charged_amount"));
  d.charged_amount = 6724;
  d.charged_currency = "XOF";
  d.rate = "655.957";
  d.kid = 3;
  auto converted = bj::parse(service_data(d)).as_object();
  EXPECT_EQ(converted.at("amount").as_int64(), 1000);
  EXPECT_EQ(converted.at("currency").as_string(), "EUR");
  EXPECT_EQ(converted.at("charged_amount").as_int64(), 6724);
  EXPECT_EQ(converted.at("charged_currency").as_string(), "XOF");
  EXPECT_EQ(converted.at("rate").as_string(), "655.957");
  EXPECT_EQ(converted.at("kid").as_int64(), 3);
  // A rotated version depends on the server key, the merchant, the version and the salt.
  const std::string v2 = merchant_secret("server-key", "MCH-CM-0001", 2, "salt-a");
  EXPECT_NE(v2, merchant_secret("server-key", "MCH-CM-0001"));
  EXPECT_NE(v2, merchant_secret("server-key", "MCH-CM-0001", 2, "salt-b"));
  EXPECT_NE(v2, merchant_secret("server-key", "MCH-CM-0001", 3, "salt-a"));
  EXPECT_NE(v2, merchant_secret("other-server-key", "MCH-CM-0001", 2, "salt-a"));
  EXPECT_EQ(merchant_secret("server-key", "MCH-CM-0001", 1, "ignored"), merchant_secret("server-key", "MCH-CM-0001"));
}

// A merchant collecting in Cameroon (XAF) and Côte d'Ivoire (XOF), with its merchant API key.
struct FxMerchant {
  merchant::Merchant m;
  merchant::IssuedKey key;
};

class CheckoutTest : public payments::testing::PaymentsTest {
 protected:
  FxMerchant fx_merchant(const std::string& matricule) {
    FxMerchant fx;
    EXPECT_TRUE(
        db_->write([&](store::Conn& c) -> Status {
             SIKA_ASSIGN_OR_RETURN(
                 fx.m, merchant::create(c, {matricule, "Boutique Euro", "e@example.com", {"CMR", "CIV"}, "sandbox"},
                                        now_ms()));
             SIKA_ASSIGN_OR_RETURN(
                 fx.key, merchant::issue_key(c, kPepper, fx.m.id, merchant::KeyKind::merchant, "sandbox", now_ms()));
             return {};
           })
            .ok());
    return fx;
  }

  void SetUp() override {
    PaymentsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    Options o;
    o.page_base_url = "https://pay.example.test/checkout";
    o.pepper = std::string(kPepper);
    o.server_key = "checkout-server-key";
    o.session_ttl_ms = 10 * 60 * 1000;
    o.clock = [this] { return now_ms() + offset_.load(); };
    checkout_ = std::make_unique<Service>(
        *db_, *service_, [this] { return catalog_; }, o);
    ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(key1_, merchant::issue_key(c, kPepper, m1_.id, merchant::KeyKind::merchant,
                                                                      "sandbox", now_ms()));
                     SIKA_ASSIGN_OR_RETURN(link_key_, merchant::issue_key(c, kPepper, m1_.id, merchant::KeyKind::link,
                                                                          "sandbox", now_ms()));
                     return {};
                   })
                    .ok());
  }
  void TearDown() override {
    checkout_.reset();
    PaymentsTest::TearDown();
  }

  web::Request post(const bj::object& body, bool form = false) {
    web::Request req;
    req.method = "POST";
    req.locale = i18n::Locale::en;
    if (form) {
      req.headers = {{"content-type", "application/x-www-form-urlencoded"}};
      for (const auto& [k, v] : body) {
        if (!req.body.empty()) req.body += "&";
        req.body += web::percent_encode(k) + "=" +
                    web::percent_encode(v.is_string() ? std::string(v.as_string()) : bj::serialize(v));
      }
    } else {
      req.headers = {{"content-type", "application/json"}};
      req.body = bj::serialize(body);
    }
    return req;
  }

  // Authenticates like the router, then runs the handler.
  web::Response create(bj::object body, bool form = false, std::string key = "") {
    body["apiKey"] = key.empty() ? key1_.key : key;
    web::Request req = post(body, form);
    auto p = checkout_->authenticate(req);
    if (!p) return checkout_->refusal(req, p.error());
    req.principal = *p;
    return checkout_->create(req);
  }

  Session open_ok(bj::object body = order()) {
    auto res = create(std::move(body));
    EXPECT_EQ(res.status, 201) << res.body;
    auto env = bj::parse(res.body).as_object();
    auto s = checkout_->session(env.at("data").at("reference").as_string());
    EXPECT_TRUE(s.ok());
    return s.ok() ? *s : Session{};
  }

  // Waits until the session's current collection leaves `from`.
  std::optional<payments::Transaction> wait(const Session& s, payments::TxStatus from, int ms = 5000) {
    std::optional<payments::Transaction> tx;
    for (int i = 0; i < ms / 10; ++i) {
      auto fresh = checkout_->session(s.reference);
      if (!fresh) return std::nullopt;
      auto cur = checkout_->current(*fresh);
      if (cur && *cur && (*cur)->status != from) return *cur;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return tx;
  }

  web::Response page_call(web::Response (Service::*fn)(web::Request&), const Session& s, std::string body = "",
                          std::string suffix_lang = "en") {
    web::Request req;
    req.method = body.empty() ? "GET" : "POST";
    req.body = std::move(body);
    req.headers = {{"content-type", "application/x-www-form-urlencoded"}};
    req.query = {{"lang", suffix_lang}};
    req.remote_ip = "10.0.0.1";
    req.path_params = {{"reference", s.reference}};
    return ((*checkout_).*fn)(req);
  }

  std::unique_ptr<Service> checkout_;
  merchant::IssuedKey key1_, link_key_;
};

TEST_P(CheckoutTest, JsonCreatesASessionWithItsPageUrl) {
  auto res = create(order());
  ASSERT_EQ(res.status, 201) << res.body;
  auto data = bj::parse(res.body).at("data").as_object();
  const std::string ref(data.at("reference").as_string());
  EXPECT_TRUE(valid_reference(ref)) << ref;
  EXPECT_EQ(data.at("page_url").as_string(), "https://pay.example.test/checkout/session/" + ref);
  EXPECT_EQ(data.at("status").as_string(), "OPEN");
  EXPECT_EQ(data.at("amount").as_int64(), 5000);
  EXPECT_EQ(data.at("orderId").as_string(), "ORD-1");
}

TEST_P(CheckoutTest, AFormPostIsRedirectedToThePageAndAFormErrorIsAPageNamingTheField) {
  auto res = create(order("ORD-FORM"), /*form=*/true);
  ASSERT_EQ(res.status, 303) << res.body;
  EXPECT_TRUE(res.get("Location").starts_with("https://pay.example.test/checkout/session/chk_"));

  bj::object bad = order("ORD-BAD");
  bad["successUrl"] = "javascript:alert(document.cookie)";
  auto page = create(bad, /*form=*/true);
  EXPECT_EQ(page.status, 400);
  EXPECT_TRUE(page.get("Content-Type").starts_with("text/html"));
  EXPECT_NE(page.body.find("successUrl"), std::string::npos);
  EXPECT_EQ(page.body.find("javascript:alert"), std::string::npos);
  EXPECT_NE(page.get("Content-Security-Policy").find("frame-ancestors 'none'"), std::string::npos);

  auto json_bad = create(bad);
  EXPECT_EQ(json_bad.status, 400);
  EXPECT_TRUE(bj::parse(json_bad.body).at("error").at("details").as_object().contains("successUrl"));
}

TEST_P(CheckoutTest, OnlyAnActiveMerchantKeyAuthenticates) {
  EXPECT_EQ(create(order(), false, "sk_test_not-a-real-key-at-all").status, 401);
  EXPECT_EQ(create(order(), false, link_key_.key).status, 401);  // a link API key is another kind
  web::Request none = post(bj::object{{"amount", 1}});
  auto p = checkout_->authenticate(none);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(p.error().is(ErrorKind::unauthenticated));
  EXPECT_TRUE(p.error().details.as_object().contains("apiKey"));
  auto form_refusal = create(order(), true, "sk_test_not-a-real-key-at-all");
  EXPECT_EQ(form_refusal.status, 401);
  EXPECT_NE(form_refusal.body.find("apiKey"), std::string::npos);
}

TEST_P(CheckoutTest, CatalogRulesNameTheirField) {
  bj::object o = order("ORD-CUR");
  o["currency"] = "XOF";  // m1 collects in Cameroon only
  auto res = create(o);
  EXPECT_EQ(res.status, 400);
  EXPECT_TRUE(bj::parse(res.body).at("error").at("details").as_object().contains("currency")) << res.body;
  o = order("ORD-AREA");
  o["area"] = "CI";
  res = create(o);
  EXPECT_EQ(res.status, 400);
  EXPECT_TRUE(bj::parse(res.body).at("error").at("details").as_object().contains("area")) << res.body;
  o = order("ORD-SPLIT");
  o["settlement_mode"] = "SPLIT";
  o["distribution"] = bj::array{bj::object{{"matricule", "MCH-CM-0003"}, {"rate", 10}}};  // inactive merchant
  res = create(o);
  EXPECT_EQ(res.status, 400);
  EXPECT_TRUE(bj::parse(res.body).at("error").at("details").as_object().contains("distribution[0].matricule"))
      << res.body;
}

TEST_P(CheckoutTest, ReturnUrlsMustBeOnRegisteredDomainsWhenThereAreAny) {
  ASSERT_TRUE(db_->write([&](store::Conn& c) { return tables::add_domain(c, m1_.id, "shop.example", now_ms()); }).ok());
  EXPECT_EQ(create(order("ORD-D1")).status, 201);
  bj::object o = order("ORD-D2");
  o["failureUrl"] = "https://evil.example/ko";
  auto res = create(o);
  EXPECT_EQ(res.status, 400);
  EXPECT_TRUE(bj::parse(res.body).at("error").at("details").as_object().contains("failureUrl")) << res.body;
}

TEST_P(CheckoutTest, TheSameOrderFindsTheSameOpenSessionAndAChangedOneIsAConflict) {
  Session first = open_ok(order("ORD-IDEM"));
  auto again = create(order("ORD-IDEM"));
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(bj::parse(again.body).at("data").at("reference").as_string(), first.reference);
  auto changed = create(order("ORD-IDEM", 6000));
  EXPECT_EQ(changed.status, 409);
  EXPECT_TRUE(bj::parse(changed.body).at("error").at("details").as_object().contains("orderId"));
  EXPECT_EQ(count("SELECT COUNT(*) FROM chk_sessions WHERE order_id = 'ORD-IDEM'"), 1);
}

TEST_P(CheckoutTest, ConcurrentPostsOfOneOrderMakeOneSession) {
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      auto res = create(order("ORD-RACE"));
      if (res.status == 200 || res.status == 201) ++ok;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 8);
  EXPECT_EQ(count("SELECT COUNT(*) FROM chk_sessions WHERE order_id = 'ORD-RACE'"), 1);
}

TEST_P(CheckoutTest, PayingMakesOneCollectionAndAPaidOrderCannotBePaidTwice) {
  Session s = open_ok(order("ORD-PAY"));
  auto tx = checkout_->pay(s.reference, PayForm{"MTN_MOMO_CMR", "237690000000", std::nullopt, 0});
  ASSERT_TRUE(tx.ok()) << bj::serialize(tx.error().details);
  EXPECT_EQ(tx->amount, 5000);
  EXPECT_EQ(tx->merchant_id, m1_.id);
  EXPECT_NE(tx->metadata.find(s.reference), std::string::npos);
  // A second submission of the same page makes nothing.
  auto twice = checkout_->pay(s.reference, PayForm{"MTN_MOMO_CMR", "237690000000", std::nullopt, 0});
  EXPECT_FALSE(twice.ok());
  auto done = wait(s, payments::TxStatus::pending);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->status, payments::TxStatus::completed);
  EXPECT_EQ(checkout_->session(s.reference)->status, kPaid);
  auto after = checkout_->pay(s.reference, PayForm{"MTN_MOMO_CMR", "237690000000", std::nullopt, 1});
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.error().code, "order_paid");
  auto reopen = create(order("ORD-PAY"));
  EXPECT_EQ(reopen.status, 409);
  EXPECT_EQ(bj::parse(reopen.body).at("message").as_string(), "order_paid");
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE merchant_id = ?", {m1_.id}), 1);
  expect_ledger_clean();
}

TEST_P(CheckoutTest, ConcurrentSubmissionsOfOnePageMakeOneCollection) {
  Session s = open_ok(order("ORD-DOUBLE"));
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      if (checkout_->pay(s.reference, PayForm{"MTN_MOMO_CMR", "237690000000", std::nullopt, 0})) ++ok;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE merchant_id = ?", {m1_.id}), 1);
}

TEST_P(CheckoutTest, AnOperatorWithACodeAsksForItBeforeAnythingIsCreated) {
  Session s = open_ok(order("ORD-OTP"));
  auto asked = checkout_->pay(s.reference, PayForm{"ORANGE_MONEY_CMR", "237690000000", std::nullopt, 0});
  ASSERT_FALSE(asked.ok());
  EXPECT_EQ(asked.error().code, "otp_required");
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE merchant_id = ?", {m1_.id}), 0);
  auto wrong = checkout_->pay(s.reference, PayForm{"ORANGE_MONEY_CMR", "237690000000", "000000", 0});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code, "invalid_otp");
  // The same collection gets the right code.
  auto right = checkout_->pay(s.reference, PayForm{"ORANGE_MONEY_CMR", "237690000000", "123456", 1});
  ASSERT_TRUE(right.ok()) << right.error().code;
  auto done = wait(s, payments::TxStatus::pending);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->status, payments::TxStatus::completed);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE merchant_id = ?", {m1_.id}), 1);
}

TEST_P(CheckoutTest, AFailureLetsTheCustomerTryAnotherMethod) {
  Session s = open_ok(order("ORD-FAIL"));
  ASSERT_TRUE(checkout_->pay(s.reference, PayForm{"MTN_MOMO_CMR", "237690000001", std::nullopt, 0}).ok());
  auto failed = wait(s, payments::TxStatus::pending);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status, payments::TxStatus::failed);
  auto page = page_call(&Service::page, s);
  EXPECT_NE(page.body.find("did not go through"), std::string::npos);
  EXPECT_NE(page.body.find("name=\"attempt\" value=\"1\""), std::string::npos);
  ASSERT_TRUE(checkout_->pay(s.reference, PayForm{"MTN_MOMO_CMR", "237690000000", std::nullopt, 1}).ok());
  auto done = wait(s, payments::TxStatus::pending);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->status, payments::TxStatus::completed);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE merchant_id = ?", {m1_.id}), 2);
}

TEST_P(CheckoutTest, TheReturnCarriesSignedDataTheMerchantCanVerify) {
  Session s = open_ok(order("ORD-RET"));
  ASSERT_TRUE(checkout_->pay(s.reference, PayForm{"MTN_MOMO_CMR", "237690000000", std::nullopt, 0}).ok());
  ASSERT_TRUE(wait(s, payments::TxStatus::pending));
  auto res = page_call(&Service::finish, s);
  ASSERT_EQ(res.status, 303);
  const std::string location(res.get("Location"));
  ASSERT_TRUE(location.starts_with("https://shop.example/ok?order=1&service_data=")) << location;
  const std::size_t a = location.find("service_data=") + 13, b = location.find("&signature=");
  const std::string data = *web::percent_decode(location.substr(a, b - a), false);
  const std::string sig = location.substr(b + 11);
  const std::string secret = checkout_->merchant_secret("MCH-CM-0001");
  EXPECT_TRUE(verify(secret, data, sig));
  auto d = bj::parse(data).as_object();
  EXPECT_EQ(d.at("status").as_string(), "COMPLETED");
  EXPECT_TRUE(d.at("success").as_bool());
  EXPECT_EQ(d.at("reference").as_string(), "ORD-RET");
  EXPECT_EQ(d.at("amount").as_int64(), 5000);
  EXPECT_EQ(d.at("operation").as_string(), "COLLECTION");
  EXPECT_TRUE(d.at("transaction_reference").as_string().starts_with("TX-"));
}

TEST_P(CheckoutTest, CancelGoesBackToFailureUrlAndExpiryClosesTheSession) {
  Session s = open_ok(order("ORD-CANCEL"));
  auto res = page_call(&Service::cancel, s, "x=1");
  ASSERT_EQ(res.status, 303);
  EXPECT_TRUE(res.get("Location").starts_with("https://shop.example/ko?service_data=")) << res.get("Location");
  EXPECT_NE(res.get("Location").find("%22CANCELLED%22"), std::string::npos);
  EXPECT_FALSE(checkout_->pay(s.reference, PayForm{"MTN_MOMO_CMR", "237690000000", std::nullopt, 0}).ok());
  // A cancelled, unpaid order can be posted again: a new session on the same row.
  Session again = open_ok(order("ORD-CANCEL"));
  EXPECT_NE(again.reference, s.reference);
  EXPECT_EQ(checkout_->session(s.reference).error().kind, ErrorKind::not_found);

  Session late = open_ok(order("ORD-LATE"));
  offset_ = 11 * 60 * 1000;
  auto expired = checkout_->pay(late.reference, PayForm{"MTN_MOMO_CMR", "237690000000", std::nullopt, 0});
  ASSERT_FALSE(expired.ok());
  EXPECT_EQ(expired.error().code, "session_expired");
  EXPECT_EQ(page_call(&Service::page, late).status, 410);
  auto back = page_call(&Service::finish, late);
  ASSERT_EQ(back.status, 303);
  EXPECT_NE(back.get("Location").find("%22EXPIRED%22"), std::string::npos);
}

TEST_P(CheckoutTest, SplitSettlementGivesTheMerchantWhatTheLinesLeave) {
  bj::object o = order("ORD-SPLIT-OK");
  o["settlement_mode"] = "SPLIT";
  o["distribution"] = bj::array{bj::object{{"matricule", "MCH-CM-0002"}, {"rate", 30}}};
  Session s = open_ok(o);
  ASSERT_TRUE(checkout_->pay(s.reference, PayForm{"MTN_MOMO_CMR", "237690000000", std::nullopt, 0}).ok());
  auto done = wait(s, payments::TxStatus::pending);
  ASSERT_TRUE(done);
  ASSERT_EQ(done->status, payments::TxStatus::completed);
  EXPECT_EQ(count("SELECT amount FROM pay_splits WHERE matricule = 'MCH-CM-0002'"), 1500);
  EXPECT_EQ(count("SELECT amount FROM pay_splits WHERE matricule = 'MCH-CM-0001'"), 3500);
  expect_ledger_clean();
}

TEST_P(CheckoutTest, AFeeOnTheMerchantLeavesTheCustomerTheOrderAmountToPay) {
  bj::object o = order("ORD-MERCHANT-FEE");
  o["feeBearer"] = "MERCHANT";
  Session s = open_ok(o);
  auto tx = checkout_->pay(s.reference, PayForm{"MTN_MOMO_CMR", "237690000000", std::nullopt, 0});
  ASSERT_TRUE(tx.ok()) << bj::serialize(tx.error().details);
  EXPECT_EQ(tx->required_total, 5000);  // the customer pays the order's amount
  EXPECT_EQ(tx->fee, 100);
  EXPECT_EQ(tx->amount, 4900);  // the merchant is credited it less the fee
  auto done = wait(s, payments::TxStatus::pending);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->status, payments::TxStatus::completed);
  expect_ledger_clean();
}

TEST_P(CheckoutTest, ThePageShowsTheShopTheAmountTheMethodsWithFeesAndThePrefill) {
  Session s = open_ok(order("ORD-PAGE"));
  auto res = page_call(&Service::page, s);
  ASSERT_EQ(res.status, 200);
  EXPECT_NE(res.body.find("Boutique Akwa"), std::string::npos);
  EXPECT_NE(res.body.find("2 T-shirts"), std::string::npos);
  EXPECT_NE(res.body.find("5&#8239;000 XAF"), std::string::npos);
  EXPECT_NE(res.body.find("MTN_MOMO_CMR"), std::string::npos);
  EXPECT_NE(res.body.find("ORANGE_MONEY_CMR"), std::string::npos);
  EXPECT_EQ(res.body.find("MTN_MOMO_CIV"), std::string::npos);  // another currency
  EXPECT_EQ(res.body.find("SIKA_WALLET_CMR"), std::string::npos);
  EXPECT_NE(res.body.find("5&#8239;100 XAF"), std::string::npos);  // 2 % fee on top
  EXPECT_NE(res.body.find("value=\"237690000000\""), std::string::npos);
  EXPECT_NE(res.body.find("countdown"), std::string::npos);
  EXPECT_NE(res.get("Content-Security-Policy").find("form-action 'self' https://shop.example"), std::string::npos);
  auto fr = page_call(&Service::page, s, "", "fr");
  EXPECT_NE(fr.body.find("lang=\"fr\""), std::string::npos);
  EXPECT_NE(fr.body.find("Moyen de paiement"), std::string::npos);
  web::Request unknown;
  unknown.method = "GET";
  unknown.path_params = {{"reference", "chk_AAAAAAAAAAAAAAAAAAAAAA"}};
  EXPECT_EQ(checkout_->page(unknown).status, 404);
}

TEST_P(CheckoutTest, TheRateInForceIsTheLatestNotInTheFuture) {
  const std::int64_t t = now_ms();
  auto bad = catalog::fx::set_rate(*db_, {"EUR", "EUR", "0", std::nullopt, ""}, t);
  ASSERT_FALSE(bad.ok());
  for (const char* f : {"quote", "rate", "set_by"})
    EXPECT_TRUE(bad.error().details.as_object().contains(f)) << f << " in " << bj::serialize(bad.error().details);
  ASSERT_TRUE(catalog::fx::set_rate(*db_, {"EUR", "XAF", "650", t - 2000, "ops"}, t).ok());
  ASSERT_TRUE(catalog::fx::set_rate(*db_, {"EUR", "XAF", "655.957", t - 1000, "ops"}, t).ok());
  ASSERT_TRUE(catalog::fx::set_rate(*db_, {"EUR", "XAF", "700", t + 60'000, "ops"}, t).ok());  // not yet
  ASSERT_TRUE(catalog::fx::set_rate(*db_, {"XAF", "XOF", "1", std::nullopt, "ops"}, t).ok());
  auto rates = catalog::fx::list_rates(*db_, t);
  ASSERT_TRUE(rates.ok());
  ASSERT_EQ(rates->size(), 2u);
  EXPECT_EQ((*rates)[0].base, "EUR");
  EXPECT_EQ(catalog::fx::ratio_text((*rates)[0].rate), "655.957");
  EXPECT_EQ((*rates)[0].set_by, "ops");
  EXPECT_EQ((*rates)[1].quote, "XOF");
  auto later = catalog::fx::list_rates(*db_, t + 120'000);
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(catalog::fx::ratio_text((*later)[0].rate), "700");
}

TEST_P(CheckoutTest, LineUpChargesTheMethodsCurrencyAtTheLockedQuoteAndTheLedgerRecordsBothSides) {
  FxMerchant fx = fx_merchant("MCH-FX-0001");
  ASSERT_FALSE(HasFailure());
  const std::int64_t t = now_ms() - 1000;
  ASSERT_TRUE(catalog::fx::set_rate(*db_, {"EUR", "XOF", "655.957", t, "ops"}, t).ok());
  ASSERT_TRUE(catalog::fx::set_rate(*db_, {"EUR", "XAF", "655.957", t, "ops"}, t).ok());

  bj::object o = order("ORD-EUR");
  o["currency"] = "EUR";
  o["amount"] = "10.00";
  // Without line=up an EUR order has no method: no country of the merchant collects euros.
  auto refused = create(o, false, fx.key.key);
  EXPECT_EQ(refused.status, 400) << refused.body;
  o["line"] = "up";
  auto res = create(o, false, fx.key.key);
  ASSERT_EQ(res.status, 201) << res.body;
  auto data = bj::parse(res.body).at("data").as_object();
  ASSERT_EQ(data.at("quotes").as_array().size(), 2u) << res.body;
  Session s = *checkout_->session(data.at("reference").as_string());
  ASSERT_NE(s.quote_for("XOF"), nullptr);
  EXPECT_EQ(s.quote_for("XOF")->amount, 6560);  // 6559.57 rounded up

  // The operator changes the rate: the open session keeps its quote.
  ASSERT_TRUE(catalog::fx::set_rate(*db_, {"EUR", "XOF", "700", std::nullopt, "ops"}, now_ms()).ok());
  auto page = page_call(&Service::page, s);
  ASSERT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("MTN_MOMO_CIV"), std::string::npos);
  EXPECT_NE(page.body.find("6&#8239;560 XOF"), std::string::npos) << page.body;
  EXPECT_NE(page.body.find("655.957"), std::string::npos);
  EXPECT_NE(page.body.find("6&#8239;724 XOF"), std::string::npos);  // 2.5 % fee on top, in francs

  auto tx = checkout_->pay(s.reference, PayForm{"MTN_MOMO_CIV", "2250500000000", std::nullopt, 0});
  ASSERT_TRUE(tx.ok()) << bj::serialize(tx.error().details);
  EXPECT_EQ(tx->currency, "XOF");
  EXPECT_EQ(tx->amount, 6560);
  EXPECT_EQ(tx->fee, 164);
  EXPECT_EQ(tx->required_total, 6724);
  auto done = wait(s, payments::TxStatus::pending);
  ASSERT_TRUE(done);
  ASSERT_EQ(done->status, payments::TxStatus::completed);

  auto balance = [&](const payments::ledger::AccountKey& k) {
    std::int64_t b = 0;
    EXPECT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(b, payments::ledger::balance(c, k));
                     return {};
                   })
                    .ok());
    return b;
  };
  namespace L = payments::ledger;
  EXPECT_EQ(balance(L::merchant_available(fx.m.id, "sandbox", "EUR")), 1000);  // the order, in euros
  EXPECT_EQ(balance(L::merchant_available(fx.m.id, "sandbox", "XOF")), 0);
  EXPECT_EQ(balance(L::fx_position("sandbox", "XOF")), 6560);
  EXPECT_EQ(balance(L::fx_position("sandbox", "EUR")), -1000);
  EXPECT_EQ(balance(L::fee_revenue("sandbox", "XOF")), 164);
  EXPECT_EQ(balance(L::operator_clearing("MTN_MOMO_CIV", "sandbox", "XOF")), -6724);
  EXPECT_EQ(count("SELECT COUNT(*) FROM ledger_journals WHERE transaction_id = ? AND kind = 'FX_SETTLEMENT' "
                  "AND currency = 'EUR'",
                  {done->id}),
            1);
  expect_ledger_clean();

  auto back = page_call(&Service::finish, s);
  ASSERT_EQ(back.status, 303);
  const std::string location(back.get("Location"));
  const std::size_t a = location.find("service_data=") + 13, b = location.find("&signature=");
  const std::string sd = *web::percent_decode(location.substr(a, b - a), false);
  EXPECT_TRUE(verify(checkout_->merchant_secret("MCH-FX-0001"), sd, location.substr(b + 11)));
  auto d = bj::parse(sd).as_object();
  EXPECT_EQ(d.at("amount").as_int64(), 1000);
  EXPECT_EQ(d.at("currency").as_string(), "EUR");
  EXPECT_EQ(d.at("charged_amount").as_int64(), 6724);
  EXPECT_EQ(d.at("charged_currency").as_string(), "XOF");
  EXPECT_EQ(d.at("rate").as_string(), "655.957");
  EXPECT_EQ(d.at("kid").as_int64(), 1);
}

TEST_P(CheckoutTest, AConvertedSplitDividesWhatTheMerchantsAreCreditedInTheOrdersCurrency) {
  FxMerchant fx = fx_merchant("MCH-FX-0003");
  ASSERT_FALSE(HasFailure());
  const std::int64_t t = now_ms() - 1000;
  ASSERT_TRUE(catalog::fx::set_rate(*db_, {"EUR", "XOF", "655.957", t, "ops"}, t).ok());
  bj::object o = order("ORD-EUR-SPLIT");
  o["currency"] = "EUR";
  o["amount"] = "10.00";
  o["line"] = "up";
  o["feeBearer"] = "MERCHANT";
  o["settlement_mode"] = "SPLIT";
  o["distribution"] = bj::array{bj::object{{"matricule", "MCH-CM-0002"}, {"rate", 30}}};
  auto res = create(o, false, fx.key.key);
  ASSERT_EQ(res.status, 201) << res.body;
  Session s = *checkout_->session(bj::parse(res.body).at("data").at("reference").as_string());
  auto tx = checkout_->pay(s.reference, PayForm{"MTN_MOMO_CIV", "2250500000000", std::nullopt, 0});
  ASSERT_TRUE(tx.ok()) << bj::serialize(tx.error().details);
  EXPECT_EQ(tx->required_total, 6560);  // the customer pays the converted price
  EXPECT_EQ(tx->fee, 164);
  EXPECT_EQ(tx->amount, 6396);
  auto done = wait(s, payments::TxStatus::pending);
  ASSERT_TRUE(done);
  ASSERT_EQ(done->status, payments::TxStatus::completed);
  // 6396 XOF are worth 9.75 EUR at 655.957 (rounded down): the merchants share 975 cents.
  EXPECT_EQ(count("SELECT amount FROM pay_conversions WHERE transaction_id = ?", {done->id}), 975);
  EXPECT_EQ(count("SELECT amount FROM pay_splits WHERE matricule = 'MCH-CM-0002'"), 293);
  EXPECT_EQ(count("SELECT amount FROM pay_splits WHERE matricule = 'MCH-FX-0003'"), 682);
  expect_ledger_clean();
}

TEST_P(CheckoutTest, WithoutLineUpMethodsInAnotherCurrencyAreNotOffered) {
  FxMerchant fx = fx_merchant("MCH-FX-0002");
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(catalog::fx::set_rate(*db_, {"XAF", "XOF", "1", now_ms() - 1000, "ops"}, now_ms()).ok());
  auto res = create(order("ORD-XAF"), false, fx.key.key);
  ASSERT_EQ(res.status, 201) << res.body;
  Session s = *checkout_->session(bj::parse(res.body).at("data").at("reference").as_string());
  EXPECT_TRUE(s.quotes.empty());
  auto page = page_call(&Service::page, s);
  EXPECT_NE(page.body.find("MTN_MOMO_CMR"), std::string::npos);
  EXPECT_EQ(page.body.find("MTN_MOMO_CIV"), std::string::npos);
  auto refused = checkout_->pay(s.reference, PayForm{"MTN_MOMO_CIV", "2250500000000", std::nullopt, 0});
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.error().details.as_object().contains("provider"));
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_conversions"), 0);
}

TEST_P(CheckoutTest, ARotatedSecretSignsWithItsKidAndTheOldOneNoLonger) {
  Session s = open_ok(order("ORD-ROT"));
  auto v1 = checkout_->signing_secret(m1_.id, "MCH-CM-0001");
  ASSERT_TRUE(v1.ok());
  EXPECT_EQ(v1->kid, 1);
  EXPECT_EQ(v1->secret, checkout_->merchant_secret("MCH-CM-0001"));
  auto v2 = checkout_->rotate_secret(m1_.id, "MCH-CM-0001");
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->kid, 2);
  EXPECT_NE(v2->secret, v1->secret);
  auto again = checkout_->signing_secret(m1_.id, "MCH-CM-0001");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->kid, 2);
  EXPECT_EQ(again->secret, v2->secret);  // derived again from the stored salt, the same
  // Nothing stored signs: the salt is not the secret.
  EXPECT_EQ(count("SELECT COUNT(*) FROM chk_secrets WHERE merchant_id = ? AND version = 2", {m1_.id}), 1);

  auto res = page_call(&Service::cancel, s, "x=1");
  ASSERT_EQ(res.status, 303);
  const std::string location(res.get("Location"));
  const std::size_t a = location.find("service_data=") + 13, b = location.find("&signature=");
  const std::string sd = *web::percent_decode(location.substr(a, b - a), false);
  const std::string sig = location.substr(b + 11);
  EXPECT_EQ(bj::parse(sd).at("kid").as_int64(), 2);
  EXPECT_TRUE(verify(v2->secret, sd, sig));
  EXPECT_FALSE(verify(v1->secret, sd, sig));
  auto v3 = checkout_->rotate_secret(m1_.id, "MCH-CM-0001");
  ASSERT_TRUE(v3.ok());
  EXPECT_EQ(v3->kid, 3);
}

TEST_P(CheckoutTest, AFormErrorPageListsTheFieldProblemsInFrench) {
  bj::object bad = order("ORD-FR");
  bad["successUrl"] = "javascript:alert(1)";
  bad["currency"] = "xaf";
  bad["description"] = "";
  bad["amount"] = "10.5";
  bad["apiKey"] = key1_.key;
  web::Request req = post(bad, /*form=*/true);
  req.locale = i18n::Locale::fr;  // Accept-Language: fr
  auto p = checkout_->authenticate(req);
  ASSERT_TRUE(p.ok());
  req.principal = *p;
  auto page = checkout_->create(req);
  EXPECT_EQ(page.status, 400);
  EXPECT_NE(page.body.find("lang=\"fr\""), std::string::npos);
  EXPECT_NE(page.body.find("Corrigez ces champs"), std::string::npos) << page.body;
  EXPECT_NE(page.body.find("doit utiliser http ou https"), std::string::npos) << page.body;
  EXPECT_NE(page.body.find("doit être un code ISO 4217"), std::string::npos);
  EXPECT_NE(page.body.find("est obligatoire"), std::string::npos);
  EXPECT_EQ(page.body.find("must be"), std::string::npos) << page.body;  // no English left
  EXPECT_EQ(page.body.find("is required"), std::string::npos);
  bad["area"] = "CI";
  web::Request area = post(bad, true);
  area.locale = i18n::Locale::fr;
  area.principal = *p;
  EXPECT_NE(checkout_->create(area).body.find("n&#39;est pas un pays où ce marchand encaisse"), std::string::npos);
  // The same post in English (Accept-Language en): English problems.
  req.locale = i18n::Locale::en;
  auto en = checkout_->create(req);
  EXPECT_NE(en.body.find("must use http or https"), std::string::npos);
  // A whole-amount problem keeps its value in French.
  bj::object cents = order("ORD-FR2");
  cents["amount"] = "10.5";
  cents["apiKey"] = key1_.key;
  web::Request r2 = post(cents, true);
  r2.locale = i18n::Locale::fr;
  r2.principal = *checkout_->authenticate(r2);
  auto p2 = checkout_->create(r2);
  EXPECT_NE(p2.body.find("doit être un nombre entier de XAF (cette devise n&#39;a pas de subdivision)"),
            std::string::npos)
      << p2.body;
}

INSTANTIATE_TEST_SUITE_P(Backends, CheckoutTest, ::testing::Values("sqlite", "postgres"));

}  // namespace
}  // namespace sika::checkout
