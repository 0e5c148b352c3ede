// Hosted checkout over a real payments::Service (the sandbox operator) on both backends.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "catalog/fx.hpp"
#include "checkout/service.hpp"
#include "checkout/store.hpp"
#include "core/crypto.hpp"
#include "core/random.hpp"
#include "core/reason.hpp"
#include "payments/failure.hpp"
#include "payments/fixture.hpp"
#include "payments/refund_store.hpp"
#include "payments/refund_transitions.hpp"
#include "web/acting.hpp"

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
  std::optional<payments::Transaction> converted_paid(const FxMerchant& fx, const std::string& order_id);
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

  // Waits until no session of `sessions` has a collection in flight (the status poll asks the
  // sandbox operator, as the page does).
  void settle(const std::vector<Session>& sessions) {
    for (int i = 0; i < 500; ++i) {
      bool busy = false;
      for (const Session& s : sessions) {
        auto fresh = checkout_->session(s.reference);
        if (!fresh) continue;
        auto cur = checkout_->current(*fresh);
        if (cur && *cur && !payments::is_terminal((*cur)->status)) busy = true;
      }
      if (!busy) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "collections still in flight";
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

  // Signs a request as docs/checkout.md ("Signed requests") tells merchants to: the canonical
  // text is written out here from the documented rule, not taken from the code under test.
  // `minor` is the amount in minor units.
  static bj::object signed_request(bj::object o, std::int64_t minor, std::string_view secret) {
    auto text = [&](std::string_view k, std::string def) {
      const bj::value* v = o.if_contains(k);
      return v ? std::string(v->as_string()) : def;
    };
    std::string lines;
    if (const bj::value* d = o.if_contains("distribution"))
      for (const auto& l : d->as_array()) {
        if (!lines.empty()) lines += ",";
        lines += std::string(l.at("matricule").as_string()) + ":" +
                 std::to_string(std::llround(l.at("rate").to_number<double>() * 10000));
      }
    const std::string canonical = "sika-checkout-v1\norderId=" + text("orderId", "") +
                                  "\namount=" + std::to_string(minor) + "\ncurrency=" + text("currency", "") +
                                  "\nsettlement_mode=" + text("settlement_mode", "DIRECT") + "\ndistribution=" + lines +
                                  "\nfeeBearer=" + text("feeBearer", "CUSTOMER");
    o["signature"] = hex_encode(crypto::hmac_sha256(secret, canonical));
    return o;
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

// Two tabs, a retrying client: submissions of one session at the same moment with consecutive
// `attempt` values. The session must never have more than one collection in flight, nor a second
// one once one completed; every order is paid once and the ledger balances.
TEST_P(CheckoutTest, ConcurrentSubmissionsWithConsecutiveAttemptsPayAnOrderOnce) {
  constexpr int kSessions = 10, kSubmits = 4;
  std::vector<Session> sessions;
  for (int i = 0; i < kSessions; ++i) sessions.push_back(open_ok(order("ORD-TABS-" + std::to_string(i))));
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (const Session& s : sessions)
    for (int a = 0; a < kSubmits; ++a)
      threads.emplace_back([&, ref = s.reference, a] {
        while (!go.load()) std::this_thread::yield();
        (void)checkout_->pay(ref, PayForm{"MTN_MOMO_CMR", "237690000000", std::nullopt, a});
      });
  go = true;
  for (auto& t : threads) t.join();
  settle(sessions);
  for (const Session& s : sessions) {
    const std::string like = "%" + s.reference + "%";
    EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE metadata LIKE ?", {like}), 1) << s.order_id;
    EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE metadata LIKE ? AND status = 'COMPLETED'", {like}), 1)
        << s.order_id;
  }
  expect_ledger_clean();
}

// Cancelling and paying one session at the same moment: a cancelled session never gets a
// collection, and a session that got one is not cancelled under it.
TEST_P(CheckoutTest, CancelAndPayAtOnceNeverLeaveACancelledSessionWithAPayment) {
  constexpr int kSessions = 8;
  std::vector<Session> sessions;
  for (int i = 0; i < kSessions; ++i) sessions.push_back(open_ok(order("ORD-CXL-" + std::to_string(i))));
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (const Session& s : sessions) {
    threads.emplace_back([&, s] {
      while (!go.load()) std::this_thread::yield();
      (void)checkout_->pay(s.reference, PayForm{"MTN_MOMO_CMR", "237690000000", std::nullopt, 0});
    });
    threads.emplace_back([&, s] {
      while (!go.load()) std::this_thread::yield();
      (void)checkout_->return_to(s.reference, /*give_up=*/true);
    });
  }
  go = true;
  for (auto& t : threads) t.join();
  settle(sessions);
  for (const Session& s : sessions) {
    const std::string like = "%" + s.reference + "%";
    const auto fresh = checkout_->session(s.reference);
    ASSERT_TRUE(fresh.ok());
    const std::int64_t paid =
        count("SELECT COUNT(*) FROM pay_transactions WHERE metadata LIKE ? AND status = 'COMPLETED'", {like});
    EXPECT_LE(paid, 1);
    if (fresh->status == kCancelled)
      EXPECT_EQ(paid, 0) << s.order_id;
    else
      EXPECT_EQ(paid, 1) << s.order_id;
  }
  expect_ledger_clean();
}

// Posts of an order whose session was cancelled, at the same moment: one new life, the same for all.
TEST_P(CheckoutTest, ConcurrentPostsOfACancelledOrderReopenItOnce) {
  Session first = open_ok(order("ORD-REOPEN"));
  ASSERT_TRUE(checkout_->return_to(first.reference, true).ok());
  std::vector<std::thread> threads;
  std::mutex mu;
  std::set<std::string> references;
  std::atomic<int> created{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      auto res = create(order("ORD-REOPEN"));
      if (res.status == 201) ++created;
      if (res.status != 200 && res.status != 201) return;
      std::lock_guard lock(mu);
      references.insert(std::string(bj::parse(res.body).at("data").at("reference").as_string()));
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(created.load(), 1);
  ASSERT_EQ(references.size(), 1u);
  EXPECT_NE(*references.begin(), first.reference);
  EXPECT_EQ(count("SELECT COUNT(*) FROM chk_sessions WHERE order_id = 'ORD-REOPEN'"), 1);
}

// Codes for the collection that waits for one, submitted at once: one execution.
TEST_P(CheckoutTest, ConcurrentCodesForOneCollectionExecuteItOnce) {
  Session s = open_ok(order("ORD-OTP-RACE"));
  auto first = checkout_->pay(s.reference, PayForm{"ORANGE_MONEY_CMR", "237690000000", "000000", 0});
  ASSERT_FALSE(first.ok());  // created, a wrong code: it waits for the right one
  // Two tabs send the right code at once (payments takes a code attempt per submission: two
  // stay within its three attempts).
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i)
    threads.emplace_back([&] {
      while (!go.load()) std::this_thread::yield();
      (void)checkout_->pay(s.reference, PayForm{"ORANGE_MONEY_CMR", "237690000000", "123456", 1});
    });
  go = true;
  for (auto& t : threads) t.join();
  auto done = wait(s, payments::TxStatus::pending);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->status, payments::TxStatus::completed) << done->failure_reason.value_or("");
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE merchant_id = ?", {m1_.id}), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transitions t JOIN pay_transactions x ON x.id = t.transaction_id "
                  "WHERE x.merchant_id = ? AND t.to_status = 'COMPLETED'",
                  {m1_.id}),
            1);
  expect_ledger_clean();
}

// The right code from eight tabs at once, more than the collection's three code attempts: the
// submissions that find no attempt left never fail the collection, which completes once.
TEST_P(CheckoutTest, EightTabsWithTheRightCodePayTheOrderOnce) {
  Session s = open_ok(order("ORD-OTP-EIGHT"));
  auto first = checkout_->pay(s.reference, PayForm{"ORANGE_MONEY_CMR", "237690000000", "000000", 0});
  ASSERT_FALSE(first.ok());  // created, a wrong code: it waits for the right one (two attempts left)
  std::atomic<int> ready{0};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      ++ready;
      while (ready.load() < 8) std::this_thread::yield();
      auto r = checkout_->pay(s.reference, PayForm{"ORANGE_MONEY_CMR", "237690000000", "123456", 1});
      if (!r && r.error().code == "invalid_otp") ++wrong;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  auto done = wait(s, payments::TxStatus::pending);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->status, payments::TxStatus::completed) << done->failure_reason.value_or("");
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transitions t JOIN pay_transactions x ON x.id = t.transaction_id "
                  "WHERE x.merchant_id = ? AND t.to_status = 'COMPLETED'",
                  {m1_.id}),
            1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transitions t JOIN pay_transactions x ON x.id = t.transaction_id "
                  "WHERE x.merchant_id = ? AND t.to_status = 'FAILED'",
                  {m1_.id}),
            0);
  expect_ledger_clean();
}

// Rotations of one merchant's secret at once: each made version is distinct and stored once.
TEST_P(CheckoutTest, ConcurrentRotationsMakeDistinctVersions) {
  std::vector<std::thread> threads;
  std::mutex mu;
  std::set<std::int64_t> kids;
  std::atomic<int> made{0};
  for (int i = 0; i < 6; ++i)
    threads.emplace_back([&] {
      auto v = checkout_->rotate_secret(m1_.id, "MCH-CM-0001");
      if (!v) return;
      ++made;
      std::lock_guard lock(mu);
      kids.insert(v->kid);
    });
  for (auto& t : threads) t.join();
  EXPECT_GE(made.load(), 1);
  EXPECT_EQ(static_cast<int>(kids.size()), made.load());
  EXPECT_EQ(count("SELECT COUNT(*) FROM chk_secrets WHERE merchant_id = ?", {m1_.id}), made.load());
  EXPECT_EQ(checkout_->signing_secret(m1_.id, "MCH-CM-0001")->kid, *kids.rbegin());
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
  Session s = open_ok(signed_request(o, 5000, checkout_->merchant_secret("MCH-CM-0001")));
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
  Session s = open_ok(signed_request(o, 5000, checkout_->merchant_secret("MCH-CM-0001")));
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

// The copy-paste form is in the customer's browser: a customer who adds settlement_mode,
// distribution or feeBearer to it must not decide who is paid, nor how much the merchant gets.
TEST_P(CheckoutTest, AnUnsignedRequestMayNotDecideWhereTheMoneyGoes) {
  for (bool form : {true, false}) {
    bj::object split = order(form ? "ORD-HIJACK-FORM" : "ORD-HIJACK-JSON");
    split["settlement_mode"] = "SPLIT";
    split["distribution"] = bj::array{bj::object{{"matricule", "MCH-CM-0002"}, {"rate", 100}}};
    auto res = create(split, form);
    EXPECT_EQ(res.status, 400) << res.body;
    if (form) {
      EXPECT_NE(res.body.find("settlement_mode"), std::string::npos) << res.body;
      EXPECT_NE(res.body.find("distribution"), std::string::npos) << res.body;
    } else {
      auto d = bj::parse(res.body).at("error").at("details").as_object();
      EXPECT_TRUE(d.contains("settlement_mode")) << res.body;
      EXPECT_TRUE(d.contains("distribution")) << res.body;
      EXPECT_NE(std::string(d.at("distribution").as_string()).find("signed"), std::string::npos);
    }
    bj::object fee = order(form ? "ORD-FEE-FORM" : "ORD-FEE-JSON");
    fee["feeBearer"] = "MERCHANT";
    auto refused = create(fee, form);
    EXPECT_EQ(refused.status, 400) << refused.body;
    EXPECT_NE(refused.body.find("feeBearer"), std::string::npos) << refused.body;
  }
  EXPECT_EQ(count("SELECT COUNT(*) FROM chk_sessions WHERE merchant_id = ?", {m1_.id}), 0);
  // The customer's page says it in French too.
  bj::object hijack = order("ORD-HIJACK-FR");
  hijack["feeBearer"] = "MERCHANT";
  hijack["apiKey"] = key1_.key;
  web::Request fr = post(hijack, /*form=*/true);
  fr.locale = i18n::Locale::fr;
  fr.principal = *checkout_->authenticate(fr);
  auto fr_page = checkout_->create(fr);
  EXPECT_EQ(fr_page.status, 400);
  EXPECT_NE(fr_page.body.find("ne peut être fixé que dans une requête signée"), std::string::npos) << fr_page.body;
  // The defaults change nothing and need no signature.
  bj::object plain = order("ORD-DEFAULTS");
  plain["settlement_mode"] = "DIRECT";
  plain["feeBearer"] = "CUSTOMER";
  EXPECT_EQ(create(plain, true).status, 303);
}

TEST_P(CheckoutTest, ASignedRequestSetsTheMoneyFieldsAndATamperedOneIsRefused) {
  bj::object o = order("ORD-SIGNED");
  o["settlement_mode"] = "SPLIT";
  o["distribution"] = bj::array{bj::object{{"matricule", "MCH-CM-0002"}, {"rate", 30}}};
  o["feeBearer"] = "MERCHANT";
  const std::string secret = checkout_->merchant_secret("MCH-CM-0001");
  const bj::object good = signed_request(o, 5000, secret);
  // The customer changes a signed field: the rate, the beneficiary, the amount, the fee bearer.
  for (auto tamper : std::vector<std::function<void(bj::object&)>>{
           [](bj::object& t) { t["distribution"].as_array()[0].as_object()["rate"] = 100; },
           [](bj::object& t) { t["distribution"].as_array()[0].as_object()["matricule"] = "MCH-CI-0001"; },
           [](bj::object& t) { t["amount"] = 50; }, [](bj::object& t) { t["feeBearer"] = "CUSTOMER"; },
           [](bj::object& t) { t["orderId"] = "ORD-OTHER"; }}) {
    for (bool form : {true, false}) {
      bj::object t = good;
      tamper(t);
      auto res = create(t, form);
      EXPECT_EQ(res.status, 400) << res.body;
      EXPECT_NE(res.body.find("signature"), std::string::npos) << res.body;
    }
  }
  // Another merchant's secret, or a malformed signature.
  auto other = create(signed_request(o, 5000, checkout_->merchant_secret("MCH-CM-0002")));
  EXPECT_EQ(other.status, 400);
  EXPECT_TRUE(bj::parse(other.body).at("error").at("details").as_object().contains("signature"));
  bj::object short_sig = good;
  short_sig["signature"] = "abc";
  EXPECT_TRUE(bj::parse(create(short_sig).body).at("error").at("details").as_object().contains("signature"));
  EXPECT_EQ(count("SELECT COUNT(*) FROM chk_sessions WHERE merchant_id = ?", {m1_.id}), 0);

  // The signed form opens the session with its split and fee bearer.
  auto res = create(good, /*form=*/true);
  ASSERT_EQ(res.status, 303) << res.body;
  Session s = *checkout_->session(std::string(res.get("Location")).substr(res.get("Location").rfind('/') + 1));
  EXPECT_EQ(s.settlement_mode, "SPLIT");
  EXPECT_EQ(s.fee_bearer, "MERCHANT");
  // Paid: service_data carries everything that decided the merchant's money.
  ASSERT_TRUE(checkout_->pay(s.reference, PayForm{"MTN_MOMO_CMR", "237690000000", std::nullopt, 0}).ok());
  ASSERT_TRUE(wait(s, payments::TxStatus::pending));
  auto back = page_call(&Service::finish, s);
  ASSERT_EQ(back.status, 303);
  const std::string location(back.get("Location"));
  const std::size_t a = location.find("service_data=") + 13, b = location.find("&signature=");
  const std::string data = *web::percent_decode(location.substr(a, b - a), false);
  ASSERT_TRUE(verify(secret, data, location.substr(b + 11)));
  auto d = bj::parse(data).as_object();
  EXPECT_EQ(d.at("status").as_string(), "COMPLETED");
  EXPECT_EQ(d.at("amount").as_int64(), 5000);
  EXPECT_EQ(d.at("settlement_mode").as_string(), "SPLIT");
  EXPECT_EQ(d.at("fee_bearer").as_string(), "MERCHANT");
  EXPECT_EQ(d.at("fee").as_int64(), 100);
  EXPECT_EQ(d.at("credited_amount").as_int64(), 4900);
  const auto& lines = d.at("distribution").as_array();
  ASSERT_EQ(lines.size(), 2u) << data;
  EXPECT_EQ(lines[0].at("matricule").as_string(), "MCH-CM-0002");
  EXPECT_EQ(lines[0].at("rate").to_number<double>(), 30);
  EXPECT_EQ(lines[1].at("matricule").as_string(), "MCH-CM-0001");
  EXPECT_EQ(lines[1].at("rate").to_number<double>(), 70);
  expect_ledger_clean();
}

// "Signed checkout requests only": off, a plain unsigned form opens a session as before; on,
// every request (form or JSON) must carry a valid signature, so an unsigned one and one whose
// amount or order was changed are refused naming signature, and a signed one opens the session.
TEST_P(CheckoutTest, WithSignedRequestsOnlyEveryRequestMustCarryAValidSignature) {
  const std::string secret = checkout_->merchant_secret("MCH-CM-0001");
  auto set = [&](bool on) {
    bool changed = false;
    EXPECT_TRUE(db_->write([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(changed, tables::set_signed_only(c, m1_.id, on, "test", now_ms()));
                     return {};
                   })
                    .ok());
    return changed;
  };
  // Off by default: the plain copy-paste form works unsigned.
  EXPECT_FALSE(*checkout_->signed_only(m1_.id));
  EXPECT_EQ(create(order("ORD-OFF-PLAIN"), /*form=*/true).status, 303);
  EXPECT_FALSE(set(false));  // off again: no change
  EXPECT_TRUE(set(true));
  EXPECT_FALSE(set(true));  // already on
  EXPECT_TRUE(*checkout_->signed_only(m1_.id));
  EXPECT_FALSE(*checkout_->signed_only(m3_.id));  // another merchant's setting is its own

  for (bool form : {true, false}) {
    const std::int64_t before = count("SELECT COUNT(*) FROM chk_sessions WHERE merchant_id = ?", {m1_.id});
    const std::string id = form ? "ORD-ON-FORM" : "ORD-ON-JSON";
    // Unsigned: refused naming signature, and only signature.
    auto unsigned_res = create(order(id), form);
    EXPECT_EQ(unsigned_res.status, 400) << unsigned_res.body;
    if (form) {
      EXPECT_NE(unsigned_res.body.find("signature"), std::string::npos) << unsigned_res.body;
      EXPECT_NE(unsigned_res.body.find("accepts only requests signed"), std::string::npos) << unsigned_res.body;
    } else {
      auto env = bj::parse(unsigned_res.body).as_object();
      EXPECT_EQ(env.at("message").as_string(), "empty_data");
      auto d = env.at("error").at("details").as_object();
      ASSERT_TRUE(d.contains("signature")) << unsigned_res.body;
      EXPECT_EQ(d.size(), 1u) << unsigned_res.body;
      EXPECT_EQ(d.at("signature").as_string(),
                "is required: this merchant accepts only requests signed with its checkout secret");
    }
    // Signed for 5 000 XAF, then the customer changes the amount or the order: refused.
    const bj::object good = signed_request(order(id), 5000, secret);
    for (auto tamper : std::vector<std::function<void(bj::object&)>>{
             [](bj::object& t) { t["amount"] = 50; }, [](bj::object& t) { t["amount"] = 4999; },
             [](bj::object& t) { t["orderId"] = "ORD-X"; }, [](bj::object& t) { t.erase("signature"); }}) {
      bj::object t = good;
      tamper(t);
      auto res = create(t, form);
      EXPECT_EQ(res.status, 400) << res.body;
      if (!form)
        EXPECT_TRUE(bj::parse(res.body).at("error").at("details").as_object().contains("signature")) << res.body;
      else
        EXPECT_NE(res.body.find("signature"), std::string::npos) << res.body;
    }
    // Signed with another merchant's secret: refused.
    auto other = create(signed_request(order(id), 5000, checkout_->merchant_secret("MCH-CM-0002")), form);
    EXPECT_EQ(other.status, 400) << other.body;
    EXPECT_EQ(count("SELECT COUNT(*) FROM chk_sessions WHERE merchant_id = ?", {m1_.id}), before);
    // Signed: the session opens with the signed amount.
    auto ok = create(good, form);
    EXPECT_EQ(ok.status, form ? 303 : 201) << ok.body;
  }
  EXPECT_EQ(count("SELECT COUNT(*) FROM chk_sessions WHERE merchant_id = ? AND amount = 5000 AND order_id LIKE "
                  "'ORD-ON-%'",
                  {m1_.id}),
            2);
  // The customer's page says it in French too.
  bj::object fr_body = order("ORD-ON-FR");
  fr_body["apiKey"] = key1_.key;
  web::Request fr = post(fr_body, /*form=*/true);
  fr.locale = i18n::Locale::fr;
  fr.principal = *checkout_->authenticate(fr);
  auto fr_page = checkout_->create(fr);
  EXPECT_EQ(fr_page.status, 400);
  EXPECT_NE(fr_page.body.find("que les requêtes signées avec son secret de paiement"), std::string::npos)
      << fr_page.body;
  // Off again: the plain form works again.
  EXPECT_TRUE(set(false));
  EXPECT_EQ(create(order("ORD-OFF-AGAIN"), /*form=*/true).status, 303);
}

TEST_P(CheckoutTest, ServiceDataOfAPlainOrderNamesDirectSettlementAndTheCreditedAmount) {
  Session s = open_ok(order("ORD-PLAIN-DATA"));
  ASSERT_TRUE(checkout_->pay(s.reference, PayForm{"MTN_MOMO_CMR", "237690000000", std::nullopt, 0}).ok());
  ASSERT_TRUE(wait(s, payments::TxStatus::pending));
  const std::string location(page_call(&Service::finish, s).get("Location"));
  const std::size_t a = location.find("service_data=") + 13, b = location.find("&signature=");
  auto d = bj::parse(*web::percent_decode(location.substr(a, b - a), false)).as_object();
  EXPECT_EQ(d.at("settlement_mode").as_string(), "DIRECT");
  EXPECT_TRUE(d.at("distribution").as_array().empty());
  EXPECT_EQ(d.at("fee_bearer").as_string(), "CUSTOMER");
  EXPECT_EQ(d.at("fee").as_int64(), 100);
  EXPECT_EQ(d.at("credited_amount").as_int64(), 5000);
}

// Refunds the session's collection by `amount` through the payments API's operation and waits
// until the refund is COMPLETED (the sandbox operator's callback).
void refund_and_wait(payments::Service& svc, const merchant::Merchant& m, const std::string& tx_ref,
                     std::int64_t amount) {
  web::Principal p;
  p.merchant_id = m.id;
  p.merchant = m.matricule;
  p.environment = "sandbox";
  payments::RefundRequest r;
  r.transaction_reference = tx_ref;
  r.refund_uuid = uuid_v4();
  r.amount = amount;
  r.reason = "REQUESTED_BY_CUSTOMER";
  auto made = svc.refund(r, web::acting(p));
  ASSERT_TRUE(made.ok()) << made.error().code << " " << bj::serialize(made.error().details);
  for (int i = 0; i < 500; ++i) {
    auto now = svc.find_refund(web::acting(p), made->reference);
    ASSERT_TRUE(now.ok());
    if (now->status == payments::RefundStatus::completed) return;
    ASSERT_NE(now->status, payments::RefundStatus::failed);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  FAIL() << "the refund did not complete";
}

bj::object service_data_of(const web::Response& res) {
  const std::string location(res.get("Location"));
  const std::size_t a = location.find("service_data=") + 13, b = location.find("&signature=");
  return bj::parse(*web::percent_decode(location.substr(a, b - a), false)).as_object();
}

// A refunded order stays paid: its page says how much came back (fr/en), its return goes to the
// success URL with the refunds in service_data, and it is never opened or paid again.
TEST_P(CheckoutTest, ARefundedOrderStaysPaidShowsItsRefundsAndIsNeverOpenedAgain) {
  service_->start();  // the sandbox operator's callbacks complete the refunds
  Session s = open_ok(order("ORD-REFUND"));
  ASSERT_TRUE(checkout_->pay(s.reference, PayForm{"MTN_MOMO_CMR", "237690000000", std::nullopt, 0}).ok());
  auto paid = wait(s, payments::TxStatus::pending);
  ASSERT_TRUE(paid);
  ASSERT_EQ(paid->status, payments::TxStatus::completed);
  auto fresh = [&] { return *checkout_->session(s.reference); };

  refund_and_wait(*service_, m1_, paid->reference, 2000);
  auto page = page_call(&Service::page, fresh());
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("Partly refunded: 2"), std::string::npos) << page.body;
  EXPECT_NE(page.body.find(" of 5"), std::string::npos) << page.body;
  auto page_fr = page_call(&Service::page, fresh(), "", "fr");
  EXPECT_NE(page_fr.body.find("Remboursé en partie"), std::string::npos) << page_fr.body;
  auto ret = page_call(&Service::finish, fresh());
  ASSERT_EQ(ret.status, 303);
  EXPECT_TRUE(std::string(ret.get("Location")).starts_with("https://shop.example/ok?order=1&"));
  auto d = service_data_of(ret);
  EXPECT_EQ(d.at("status").as_string(), "COMPLETED");
  EXPECT_TRUE(d.at("success").as_bool());
  EXPECT_EQ(d.at("refunded_amount").as_int64(), 2000);
  EXPECT_EQ(d.at("refund_state").as_string(), "PARTIAL");
  EXPECT_EQ(d.at("credited_amount").as_int64(), 5000);

  refund_and_wait(*service_, m1_, paid->reference, 3000);
  page = page_call(&Service::page, fresh());
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("Refunded"), std::string::npos) << page.body;
  EXPECT_EQ(page.body.find("name=\"provider\""), std::string::npos) << "no payment form: " << page.body;
  d = service_data_of(page_call(&Service::finish, fresh()));
  EXPECT_EQ(d.at("status").as_string(), "COMPLETED");
  EXPECT_EQ(d.at("refunded_amount").as_int64(), 5000);
  EXPECT_EQ(d.at("refund_state").as_string(), "FULL");
  EXPECT_EQ(d.at("fee").as_int64(), 100);

  // Never paid again, never opened again, whatever the session's clock says.
  auto again = checkout_->pay(s.reference, PayForm{"MTN_MOMO_CMR", "237690000000", std::nullopt, 1});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, "order_paid");
  offset_ += 60 * 60 * 1000;  // past the session's expiry
  auto reopen = create(order("ORD-REFUND"));
  EXPECT_EQ(reopen.status, 409) << reopen.body;
  EXPECT_EQ(bj::parse(reopen.body).at("message").as_string(), "order_paid");
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE merchant_id = ? AND operation = 'COLLECTION'", {m1_.id}),
            1);
  expect_ledger_clean();
}

// The failure page names why the payment failed, from the collection's typed reason, in the
// customer's language.
TEST_P(CheckoutTest, TheFailurePageNamesTheReasonInTheCustomersLanguage) {
  struct Case {
    const char* phone;
    const char* en;
    const char* fr;
  };
  const Case cases[] = {
      {"237690000001", "balance is insufficient", "solde du compte mobile money est insuffisant"},
      {"237690000002", "declined on the phone", "refusée sur le téléphone"},
      {"237690000003", "not approved in time", "validée à temps"},
      {"237690000004", "no account with this operator", "pas de compte chez cet opérateur"},
  };
  int n = 0;
  for (const Case& c : cases) {
    Session s = open_ok(order("ORD-WHY-" + std::to_string(n++)));
    ASSERT_TRUE(checkout_->pay(s.reference, PayForm{"MTN_MOMO_CMR", c.phone, std::nullopt, 0}).ok());
    auto failed = wait(s, payments::TxStatus::pending);
    ASSERT_TRUE(failed);
    ASSERT_EQ(failed->status, payments::TxStatus::failed);
    const std::string en = page_call(&Service::page, s).body;
    EXPECT_NE(en.find(c.en), std::string::npos) << c.phone << en;
    EXPECT_NE(en.find("You may try again"), std::string::npos);
    const std::string fr = page_call(&Service::page, s, "", "fr").body;
    EXPECT_NE(fr.find(c.fr), std::string::npos) << c.phone;
    EXPECT_NE(fr.find("Vous pouvez réessayer"), std::string::npos);
  }
}

TEST(CheckoutModel, AFailureReasonIsReadFromTheTypedCodeNotFromText) {
  using payments::failure_message_code;
  using payments::failure_reason;
  using payments::FailureReason;
  payments::Transaction tx;
  tx.status = payments::TxStatus::failed;
  auto reason = [&](std::optional<std::string> code) {
    tx.failure_reason = std::move(code);
    return failure_reason(tx);
  };
  EXPECT_EQ(reason("INSUFFICIENT_FUNDS"), FailureReason::insufficient_funds);
  EXPECT_EQ(reason("REJECTED_BY_CUSTOMER"), FailureReason::declined);
  EXPECT_EQ(reason("TIMEOUT"), FailureReason::timeout);
  EXPECT_EQ(reason("INVALID_ACCOUNT"), FailureReason::invalid_account);
  EXPECT_EQ(reason("INVALID_OTP"), FailureReason::invalid_otp);
  EXPECT_EQ(reason("OPERATOR_REFUSED"), FailureReason::refused);
  EXPECT_EQ(reason("LIMIT_EXCEEDED"), FailureReason::limit_exceeded);
  EXPECT_EQ(reason("OPERATOR_ERROR"), FailureReason::operator_error);
  EXPECT_EQ(reason("insufficient funds on the account"), FailureReason::other);  // a text, not a code
  EXPECT_EQ(reason(std::nullopt), FailureReason::other);
  tx.status = payments::TxStatus::expired;
  EXPECT_EQ(reason("EXPIRED"), FailureReason::timeout);
  tx.status = payments::TxStatus::cancelled;
  EXPECT_EQ(reason("DECLINED_BY_CUSTOMER"), FailureReason::declined);
  EXPECT_EQ(reason("cancelled by the customer"), FailureReason::cancelled);
  for (auto r :
       {FailureReason::insufficient_funds, FailureReason::declined, FailureReason::timeout,
        FailureReason::invalid_account, FailureReason::invalid_otp, FailureReason::refused,
        FailureReason::limit_exceeded, FailureReason::operator_error, FailureReason::cancelled, FailureReason::other}) {
    const std::string_view code = failure_message_code(r);
    EXPECT_TRUE(i18n::known(code)) << code;
    EXPECT_NE(i18n::text(code, i18n::Locale::fr), i18n::text(code, i18n::Locale::en)) << code;
  }
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
  auto res = create(signed_request(o, 1000, checkout_->merchant_secret("MCH-FX-0003")), false, fx.key.key);
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

// A COMPLETED line=up collection of a 10.00 EUR order paid in XOF at 655.957 (2.5 % fee on top):
// the customer is charged 6724, the collection's amount is 6560 XOF, the merchant credited 1000 cents.
std::optional<payments::Transaction> CheckoutTest::converted_paid(const FxMerchant& fx, const std::string& order_id) {
  const std::int64_t t = now_ms() - 1000;
  EXPECT_TRUE(catalog::fx::set_rate(*db_, {"EUR", "XOF", "655.957", t, "ops"}, t).ok());
  bj::object o = order(order_id);
  o["currency"] = "EUR";
  o["amount"] = "10.00";
  o["line"] = "up";
  auto res = create(o, false, fx.key.key);
  EXPECT_EQ(res.status, 201) << res.body;
  if (res.status != 201) return std::nullopt;
  Session s = *checkout_->session(bj::parse(res.body).at("data").at("reference").as_string());
  auto tx = checkout_->pay(s.reference, PayForm{"MTN_MOMO_CIV", "2250500000000", std::nullopt, 0});
  EXPECT_TRUE(tx.ok());
  if (!tx.ok()) return std::nullopt;
  auto done = wait(s, payments::TxStatus::pending);
  EXPECT_TRUE(done && done->status == payments::TxStatus::completed);
  if (!done || done->status != payments::TxStatus::completed) return std::nullopt;
  EXPECT_EQ(done->amount, 6560);
  EXPECT_EQ(count("SELECT amount FROM pay_conversions WHERE transaction_id = ?", {done->id}), 1000);
  return done;
}

TEST(ConvertedRefund, CostsItsShareRoundedUpNeverBeyondWhatIsLeftAndTheLastTakesTheRest) {
  using payments::converted_refund_cost;
  EXPECT_EQ(converted_refund_cost(2000, 6560, 1000, 0, false), 305);  // 304.87... rounded up
  EXPECT_EQ(converted_refund_cost(6560, 6560, 1000, 0, true), 1000);
  EXPECT_EQ(converted_refund_cost(4560, 6560, 1000, 305, true), 695);
  EXPECT_EQ(converted_refund_cost(1, 655, 1, 0, false), 1);
  EXPECT_EQ(converted_refund_cost(1, 655, 1, 1, false), 0) << "never beyond what the collection credited";
  EXPECT_EQ(converted_refund_cost(653, 655, 1, 1, true), 0);
  // No overflow on large amounts: the product is taken on 128 bits.
  const std::int64_t big = std::int64_t{1} << 50;
  EXPECT_EQ(converted_refund_cost(big / 2, big, big, 0, false), big / 2);
}

TEST_P(CheckoutTest, AConvertedCollectionIsRefundedInPartsAndCostsTheMerchantExactlyWhatItWasCredited) {
  service_->start();  // the sandbox operator's callbacks complete the refunds
  FxMerchant fx = fx_merchant("MCH-FX-0004");
  ASSERT_FALSE(HasFailure());
  auto paid = converted_paid(fx, "ORD-EUR-REFUND");
  ASSERT_TRUE(paid);
  namespace L = payments::ledger;
  const auto eur = L::merchant_available(fx.m.id, "sandbox", "EUR");
  ASSERT_EQ(balance(eur), 1000);

  // 2000 of the 6560 XOF come back to the customer; the merchant gives back ceil(2000 * 1000 / 6560).
  refund_and_wait(*service_, fx.m, paid->reference, 2000);
  EXPECT_EQ(balance(eur), 1000 - 305);
  EXPECT_EQ(balance(L::merchant_pending(fx.m.id, "sandbox", "EUR")), 0);
  EXPECT_EQ(balance(L::merchant_available(fx.m.id, "sandbox", "XOF")), 0);
  EXPECT_EQ(balance(L::fx_position("sandbox", "XOF")), 6560 - 2000);
  EXPECT_EQ(balance(L::fx_position("sandbox", "EUR")), -1000 + 305);
  EXPECT_EQ(balance(L::operator_clearing("MTN_MOMO_CIV", "sandbox", "XOF")), -6724 + 2000);
  EXPECT_EQ(count("SELECT converted_amount FROM pay_refunds WHERE transaction_id = ?", {paid->id}), 305);
  expect_ledger_clean();

  // The rest: the collection is REFUNDED and the merchant gave back exactly what it was credited.
  refund_and_wait(*service_, fx.m, paid->reference, 4560);
  EXPECT_EQ(balance(eur), 0);
  EXPECT_EQ(balance(L::fx_position("sandbox", "XOF")), 0);
  EXPECT_EQ(balance(L::fx_position("sandbox", "EUR")), 0);
  EXPECT_EQ(balance(L::operator_clearing("MTN_MOMO_CIV", "sandbox", "XOF")), -164);  // the fee stays collected
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE id = ? AND status = 'REFUNDED'", {paid->id}), 1);
  EXPECT_EQ(count("SELECT refunded_amount FROM pay_transactions WHERE id = ?", {paid->id}), 6560);
  EXPECT_EQ(count("SELECT SUM(converted_amount) FROM pay_refunds WHERE transaction_id = ?", {paid->id}), 1000);
  EXPECT_EQ(count("SELECT COUNT(*) FROM ledger_journals j JOIN pay_refunds r ON r.id = j.refund_id "
                  "WHERE r.transaction_id = ? AND j.kind = 'REFUND' AND j.currency = 'EUR'",
                  {paid->id}),
            2);
  EXPECT_EQ(count("SELECT COUNT(*) FROM ledger_journals j JOIN pay_refunds r ON r.id = j.refund_id "
                  "WHERE r.transaction_id = ? AND j.kind = 'REFUND_FX' AND j.currency = 'XOF'",
                  {paid->id}),
            2);
  expect_ledger_clean();

  // The ledger check holds the costs to what the collection credited.
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_TRY(
                       c.exec("UPDATE pay_refunds SET converted_amount = converted_amount + 1 WHERE id = "
                              "(SELECT MAX(id) FROM pay_refunds WHERE transaction_id = ?)",
                              {paid->id}));
                   return {};
                 })
                  .ok());
  auto report = L::check(*db_);
  ASSERT_TRUE(report.ok());
  std::set<std::string> rules;
  for (const auto& v : report->violations) rules.insert(v.rule);
  EXPECT_TRUE(rules.contains("refund_beyond_converted")) << bj::serialize(report->to_json());
}

TEST_P(CheckoutTest, AFailedRefundOfAConvertedCollectionGivesTheOrdersCurrencyBack) {
  FxMerchant fx = fx_merchant("MCH-FX-0005");
  ASSERT_FALSE(HasFailure());
  auto paid = converted_paid(fx, "ORD-EUR-FAIL");
  ASSERT_TRUE(paid);
  namespace L = payments::ledger;
  const auto eur = L::merchant_available(fx.m.id, "sandbox", "EUR");
  // A refund of 1000 XOF accepted (reserved as the service does), then refused by its operator.
  payments::Refund r;
  r.reference = "RF-TEST-FX-FAIL";
  r.merchant_id = fx.m.id;
  r.transaction_id = paid->id;
  r.transaction_reference = paid->reference;
  r.environment = "sandbox";
  r.refund_uuid = uuid_v4();
  r.request_hash = "h";
  r.provider_reference = uuid_v7();
  r.amount = 1000;
  r.currency = "XOF";
  r.reason = "OTHER";
  r.metadata = "{}";
  r.channel = std::string(payments::kRefundSandbox);
  r.connector = "sandbox";
  r.expires_at = now_ms() + 60'000;
  r.created_at = r.updated_at = now_ms();
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(auto keyed, payments::tables::insert_refund_or_replay(c, r));
                   r.id = *keyed.id;
                   SIKA_ASSIGN_OR_RETURN(bool reserved, payments::tables::reserve_refundable(c, paid->id, r.amount));
                   if (!reserved) return internal_error(bj::string("not reserved"));
                   payments::ledger::Learned learned;
                   return payments::reserve_refund(c, r, *paid, now_ms(), nullptr, learned);
                 })
                  .ok());
  EXPECT_EQ(balance(eur), 1000 - 153);  // ceil(1000 * 1000 / 6560)
  EXPECT_EQ(balance(L::merchant_pending(fx.m.id, "sandbox", "EUR")), 153);
  expect_ledger_clean();
  payments::OperatorStatus failed;
  failed.state = payments::OperatorStatus::State::failed;
  failed.reason = "OPERATOR_REFUSED";
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   payments::ledger::Learned learned;
                   SIKA_ASSIGN_OR_RETURN(
                       bool moved, payments::transition(c, r, payments::refund_move_for(failed, "callback"), now_ms(),
                                                        nullptr, learned));
                   if (!moved) return internal_error(bj::string("not moved"));
                   return {};
                 })
                  .ok());
  EXPECT_EQ(balance(eur), 1000) << "the reservation is given back in euros";
  EXPECT_EQ(balance(L::merchant_pending(fx.m.id, "sandbox", "EUR")), 0);
  EXPECT_EQ(balance(L::fx_position("sandbox", "XOF")), 6560);
  EXPECT_EQ(count("SELECT refunding_amount + refunded_amount FROM pay_transactions WHERE id = ?", {paid->id}), 0);
  expect_ledger_clean();
}

TEST_P(CheckoutTest, ARefundOfAConvertedCollectionBeyondTheMerchantsEurosIsInsufficientFunds) {
  FxMerchant fx = fx_merchant("MCH-FX-0006");
  ASSERT_FALSE(HasFailure());
  auto paid = converted_paid(fx, "ORD-EUR-SHORT");
  ASSERT_TRUE(paid);
  const auto eur = payments::ledger::merchant_available(fx.m.id, "sandbox", "EUR");
  // The merchant's euros went elsewhere (stands for a payout): 100 cents are left.
  auto set_eur = [&](std::int64_t v) {
    ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                     SIKA_TRY(
                         c.exec("UPDATE ledger_accounts SET balance = ? WHERE owner = ? AND environment = "
                                "'sandbox' AND currency = 'EUR' AND kind = 'available'",
                                {v, "merchant:" + std::to_string(fx.m.id)}));
                     return {};
                   })
                    .ok());
  };
  set_eur(100);
  const web::Principal p = principal(fx.m);
  payments::RefundRequest req;
  req.transaction_reference = paid->reference;
  req.refund_uuid = uuid_v4();
  req.amount = 6560;
  req.reason = "REQUESTED_BY_CUSTOMER";
  auto refused = service_->refund(req, web::acting(p));
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.error().is(ErrorKind::conflict));
  EXPECT_EQ(refused.error().code, "insufficient_funds");
  EXPECT_TRUE(refused.error().details.as_object().contains("amount"));
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_refunds WHERE transaction_id = ?", {paid->id}), 0);
  EXPECT_EQ(balance(eur), 100);
  set_eur(1000);
  // What the euros cover is refundable.
  req.refund_uuid = uuid_v4();
  req.amount = 600;  // ceil(600 * 1000 / 6560) = 92 cents
  auto made = service_->refund(req, web::acting(p));
  ASSERT_TRUE(made.ok()) << made.error().code;
  EXPECT_EQ(balance(eur), 1000 - 92);
  expect_ledger_clean();
}

TEST_P(CheckoutTest, ConcurrentRefundsOfAConvertedCollectionNeverCostTheMerchantMoreThanItWasCredited) {
  service_->start();  // the sandbox operator's callbacks complete the refunds
  FxMerchant fx = fx_merchant("MCH-FX-0007");
  ASSERT_FALSE(HasFailure());
  auto paid = converted_paid(fx, "ORD-EUR-RACE");
  ASSERT_TRUE(paid);
  const web::Principal p = principal(fx.m);
  auto refunded = [&] {
    return count("SELECT COUNT(*) FROM pay_transactions WHERE id = ? AND status = 'REFUNDED'", {paid->id}) == 1;
  };
  std::atomic<int> accepted{0};
  std::vector<std::thread> threads;
  // Until the collection is refunded in full, or 60 s (a deadline, not a count of tries: each try
  // waits for the refund before it to end, which takes longer on a loaded machine).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; std::chrono::steady_clock::now() < deadline && !refunded(); ++i) {
        payments::RefundRequest req;
        req.transaction_reference = paid->reference;
        req.refund_uuid = uuid_v4();
        // Odd amounts of XOF, and now and then whatever is left.
        if ((t + i) % 5 != 4) req.amount = 333 + 97 * t;
        req.reason = "REQUESTED_BY_CUSTOMER";
        auto made = service_->refund(req, web::acting(p));
        if (made.ok()) ++accepted;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
  for (auto& th : threads) th.join();
  ASSERT_TRUE(refunded());
  EXPECT_GT(accepted.load(), 1);
  namespace L = payments::ledger;
  EXPECT_EQ(count("SELECT refunded_amount FROM pay_transactions WHERE id = ?", {paid->id}), 6560);
  EXPECT_EQ(count("SELECT SUM(converted_amount) FROM pay_refunds WHERE transaction_id = ? AND status = 'COMPLETED'",
                  {paid->id}),
            1000);
  EXPECT_EQ(balance(L::merchant_available(fx.m.id, "sandbox", "EUR")), 0);
  EXPECT_EQ(balance(L::merchant_pending(fx.m.id, "sandbox", "EUR")), 0);
  EXPECT_EQ(balance(L::fx_position("sandbox", "EUR")), 0);
  EXPECT_EQ(balance(L::fx_position("sandbox", "XOF")), 0);
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

// A problem made under payments (the catalog's reading of the customer's number) reaches the page
// as its reason: the French page renders the reason's French text, whatever its English says.
TEST_P(CheckoutTest, APaymentsProblemIsShownOnTheFrenchPageFromItsReason) {
  Session s = open_ok(order("ORD-FR-PHONE"));
  auto tx = checkout_->pay(s.reference, PayForm{"MTN_MOMO_CMR", "2376x", std::nullopt, 0});
  ASSERT_FALSE(tx.ok());
  ASSERT_TRUE(tx.error().has(Reason::phone_characters)) << json::dump(tx.error().details);
  const std::string form = "provider=MTN_MOMO_CMR&customer_phone=2376x&attempt=0";
  const web::Response fr = page_call(&Service::submit, s, form, "fr");
  EXPECT_EQ(fr.status, 400);
  const std::string french(i18n::text(reason::code(Reason::phone_characters), i18n::Locale::fr));
  EXPECT_EQ(french, "doit contenir uniquement des chiffres, des espaces et un + initial");
  EXPECT_NE(fr.body.find(french), std::string::npos) << fr.body;
  EXPECT_EQ(fr.body.find("must contain only digits"), std::string::npos) << fr.body;
  const web::Response en = page_call(&Service::submit, s, form, "en");
  EXPECT_NE(en.body.find("must contain only digits, spaces and a leading"), std::string::npos) << en.body;
}

INSTANTIATE_TEST_SUITE_P(Backends, CheckoutTest, ::testing::Values("sqlite", "postgres"));

}  // namespace
}  // namespace sika::checkout
