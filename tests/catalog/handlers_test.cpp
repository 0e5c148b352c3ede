// The catalog routes as plain handlers (web::Request with a principal) over the demo catalog,
// on both backends: envelopes, every bad parameter named, 403 for an ungranted country,
// pagination meta, and inactive entries hidden from non-admins.
#include <gtest/gtest.h>

#include <set>

#include "catalog/demo.hpp"
#include "catalog/service.hpp"
#include "support/test_db.hpp"
#include "web/envelope.hpp"

namespace sika::catalog {
namespace {

namespace bj = boost::json;

class CatalogHandlers : public testing::DbTest {
 protected:
  void SetUp() override {
    DbTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    service_ = std::make_unique<Service>(*db_, Options{});
    auto r = service_->import(bj::parse(demo_catalog_json()), Mode::upsert);
    ASSERT_TRUE(r.ok()) << bj::serialize(r.error().details);
  }
  void TearDown() override {
    service_.reset();
    DbTest::TearDown();
  }

  // A CMR merchant's token (tier 1) unless told otherwise.
  static web::Principal merchant(std::vector<std::string> countries = {"CMR"}, std::int64_t tier = 1) {
    web::Principal p;
    p.subject = "client-1";
    p.client_id = "client-1";
    p.merchant = "MCH-CM-0001";
    p.merchant_id = 1;
    p.scopes = {"payments", "services", "countries", "providers"};
    p.countries = std::move(countries);
    p.user_tier = tier;
    return p;
  }
  static web::Principal admin() {
    web::Principal p = merchant({});
    p.admin = true;
    return p;
  }

  static web::Request request(std::string path, web::Fields query, web::Principal who,
                              i18n::Locale locale = i18n::Locale::fr) {
    web::Request req;
    req.method = "GET";
    req.path = std::move(path);
    req.query = std::move(query);
    req.principal = std::move(who);
    req.locale = locale;
    return req;
  }

  struct Reply {
    int status;
    bj::object body;
    const bj::array& data() const { return body.at("data").as_array(); }
    const bj::object& pagination() const { return body.at("meta").at("pagination").as_object(); }
    const bj::object& details() const { return body.at("error").at("details").as_object(); }
  };
  static Reply parse(const web::Response& res) { return Reply{res.status, bj::parse(res.body).as_object()}; }

  Reply countries(web::Fields q, web::Principal who = merchant(), i18n::Locale l = i18n::Locale::fr) {
    auto req = request("/country/list", std::move(q), std::move(who), l);
    return parse(service_->list_countries(req));
  }
  Reply fees(web::Fields q, web::Principal who = merchant()) {
    auto req = request("/pricing-rule/fees", std::move(q), std::move(who));
    return parse(web::respond(req, service_->list_fees(req)));
  }
  Reply services(web::Fields q, web::Principal who = merchant()) {
    auto req = request("/service/list", std::move(q), std::move(who));
    return parse(service_->list_services(req));
  }
  Reply providers(web::Fields q, web::Principal who = merchant()) {
    auto req = request("/provider/list", std::move(q), std::move(who));
    return parse(service_->list_providers(req));
  }

  static void expect_pagination(const Reply& r, std::int64_t page, std::int64_t limit, std::int64_t total) {
    ASSERT_EQ(r.status, 200) << bj::serialize(r.body);
    const auto& p = r.pagination();
    std::int64_t pages = (total + limit - 1) / limit;
    EXPECT_EQ(p.at("page"), page);
    EXPECT_EQ(p.at("limit"), limit);
    EXPECT_EQ(p.at("total"), total);
    EXPECT_EQ(p.at("pages"), pages);
    EXPECT_EQ(p.at("has_next").as_bool(), page < pages);
    EXPECT_EQ(p.at("has_previous").as_bool(), page > 1);
    std::int64_t expected_items = std::max<std::int64_t>(0, std::min(limit, total - (page - 1) * limit));
    EXPECT_EQ(static_cast<std::int64_t>(r.data().size()), expected_items);
  }

  static void expect_bad(const Reply& r, std::set<std::string> fields) {
    ASSERT_EQ(r.status, 400) << bj::serialize(r.body);
    EXPECT_EQ(r.body.at("success"), false);
    EXPECT_EQ(r.body.at("code"), 400);
    EXPECT_EQ(r.body.at("message"), "empty_data");
    std::set<std::string> named;
    for (const auto& kv : r.details()) named.insert(std::string(kv.key()));
    EXPECT_EQ(named, fields) << bj::serialize(r.body);
  }

  std::unique_ptr<Service> service_;
};

TEST_P(CatalogHandlers, ListsCountriesInTheEnvelopeWithLocalizedNames) {
  Reply fr = countries({});
  ASSERT_EQ(fr.status, 200);
  EXPECT_EQ(fr.body.at("success"), true);
  EXPECT_EQ(fr.body.at("code"), 200);
  EXPECT_EQ(fr.body.at("locale"), "fr");
  EXPECT_EQ(fr.body.at("message"), "ok");
  expect_pagination(fr, 1, 25, 4);
  std::vector<std::string> codes;
  for (const auto& c : fr.data()) {
    const auto& o = c.as_object();
    EXPECT_TRUE(o.at("id").is_int64());
    EXPECT_TRUE(o.at("name").is_string());
    EXPECT_EQ(o.at("active"), true);
    codes.emplace_back(o.at("code").as_string());
    if (o.at("code") == "SEN") {
      EXPECT_EQ(o.at("name"), "Sénégal");
      EXPECT_EQ(o.at("alpha2"), "SN");
      EXPECT_EQ(o.at("dialling_code"), "+221");
      EXPECT_EQ(o.at("currency"), "XOF");
    }
  }
  EXPECT_EQ(codes, (std::vector<std::string>{"CIV", "CMR", "GAB", "SEN"}));
  Reply en = countries({}, merchant(), i18n::Locale::en);
  EXPECT_EQ(en.body.at("locale"), "en");
  for (const auto& c : en.data())
    if (c.at("code") == "SEN") {
      EXPECT_EQ(c.at("name"), "Senegal");
    }
}

TEST_P(CatalogHandlers, PaginatesCountries) {
  expect_pagination(countries({{"limit", "2"}}), 1, 2, 4);
  Reply p2 = countries({{"page", "2"}, {"limit", "2"}});
  expect_pagination(p2, 2, 2, 4);
  EXPECT_EQ(p2.data()[0].at("code"), "GAB");
  expect_pagination(countries({{"page", "2"}, {"limit", "3"}}), 2, 3, 4);
  expect_pagination(countries({{"page", "9"}, {"limit", "3"}}), 9, 3, 4);  // past the end: empty page
  expect_pagination(countries({{"limit", "100"}}), 1, 100, 4);
  expect_pagination(countries({{"limit", "1"}, {"page", "4"}}), 4, 1, 4);
}

TEST_P(CatalogHandlers, NamesBadPaginationParameters) {
  expect_bad(countries({{"page", "0"}, {"limit", "101"}}), {"page", "limit"});
  expect_bad(countries({{"page", "x"}}), {"page"});
  expect_bad(countries({{"limit", "0"}}), {"limit"});
  expect_bad(countries({{"limit", "-5"}}), {"limit"});
  expect_bad(countries({{"limit", "2.5"}}), {"limit"});
  expect_bad(countries({{"page", ""}}), {"page"});
}

TEST_P(CatalogHandlers, HidesInactiveCountriesFromNonAdmins) {
  ASSERT_TRUE(service_->set_active(Kind::country, "SEN", false).ok());
  Reply m = countries({});
  expect_pagination(m, 1, 25, 3);
  for (const auto& c : m.data()) EXPECT_NE(c.at("code"), "SEN");
  Reply a = countries({}, admin());
  expect_pagination(a, 1, 25, 4);
  bool seen = false;
  for (const auto& c : a.data())
    if (c.at("code") == "SEN") {
      seen = true;
      EXPECT_EQ(c.at("active"), false);
    }
  EXPECT_TRUE(seen);
}

TEST_P(CatalogHandlers, ListsFeesWithEverySpecField) {
  Reply r = fees({{"country", "CMR"}});
  ASSERT_EQ(r.status, 200) << bj::serialize(r.body);
  ASSERT_FALSE(r.data().empty());
  bool saw_reference = false, saw_null = false, saw_bounds = false;
  for (const auto& item : r.data()) {
    const auto& o = item.as_object();
    for (const char* f : {"id", "min_amount", "max_amount", "operation", "user_tier", "fee_value", "fee_type",
                          "reward_value", "sponsor_reward_value", "incoming_service", "outgoing_service"})
      EXPECT_TRUE(o.contains(f)) << f;
    EXPECT_TRUE(o.at("id").is_int64());
    EXPECT_EQ(o.at("user_tier"), 1);             // the token's tier by default
    EXPECT_TRUE(o.at("fee_value").is_number());  // written as 3, 10000 or 2.5: never in exponent form
    EXPECT_TRUE(o.at("fee_type") == "FIXED" || o.at("fee_type") == "PERCENTAGE");
    EXPECT_TRUE(o.at("operation") == "COLLECTION" || o.at("operation") == "DISBURSEMENT");
    EXPECT_TRUE(o.at("min_amount").is_null() || o.at("min_amount").is_int64());
    saw_bounds |= !o.at("max_amount").is_null();
    for (const char* side : {"incoming_service", "outgoing_service"}) {
      const auto& ref = o.at(side);
      if (ref.is_null()) {
        saw_null = true;
        continue;
      }
      saw_reference = true;
      const auto& s = ref.as_object();
      EXPECT_EQ(s.size(), 4u);
      EXPECT_TRUE(s.at("id").is_int64());
      EXPECT_TRUE(s.at("code").is_string());
      EXPECT_EQ(s.at("country"), "CMR");
      EXPECT_EQ(s.at("currency"), "XAF");
    }
  }
  EXPECT_TRUE(saw_reference && saw_null && saw_bounds);
  // A known rule, field by field.
  Reply mtn = fees({{"country", "CMR"}, {"incoming_service_code", "MTN_MOMO_CMR"}, {"operation", "COLLECTION"}});
  ASSERT_EQ(mtn.data().size(), 1u);
  const auto& rule = mtn.data()[0].as_object();
  EXPECT_EQ(rule.at("fee_type"), "PERCENTAGE");
  EXPECT_EQ(rule.at("fee_value").to_number<double>(), 2.0);
  EXPECT_EQ(rule.at("reward_value").as_double(), 0.25);
  EXPECT_EQ(rule.at("sponsor_reward_value").as_double(), 0.1);
  EXPECT_EQ(rule.at("incoming_service").at("code"), "MTN_MOMO_CMR");
  EXPECT_TRUE(rule.at("outgoing_service").is_null());
}

TEST_P(CatalogHandlers, FiltersFees) {
  auto all_match = [](const Reply& r, auto pred) {
    for (const auto& item : r.data())
      if (!pred(item.as_object())) return false;
    return true;
  };
  auto code_of = [](const bj::value& ref) {
    return ref.is_null() ? std::string() : std::string(ref.at("code").as_string());
  };

  Reply by_service = fees({{"country", "CMR"}, {"service_code", "SIKA_WALLET_CMR"}});
  ASSERT_EQ(by_service.status, 200);
  EXPECT_EQ(by_service.data().size(), 2u);  // wallet collection (incoming) and disbursement (outgoing), tier 1
  EXPECT_TRUE(all_match(by_service, [&](const bj::object& o) {
    return code_of(o.at("incoming_service")) == "SIKA_WALLET_CMR" ||
           code_of(o.at("outgoing_service")) == "SIKA_WALLET_CMR";
  }));
  Reply out = fees({{"country", "CMR"}, {"outgoing_service_code", "SIKA_WALLET_CMR"}});
  ASSERT_EQ(out.data().size(), 1u);
  EXPECT_EQ(out.data()[0].at("operation"), "DISBURSEMENT");

  Reply disb = fees({{"country", "CMR"}, {"operation", "DISBURSEMENT"}});
  EXPECT_TRUE(all_match(disb, [](const bj::object& o) { return o.at("operation") == "DISBURSEMENT"; }));
  EXPECT_GE(disb.data().size(), 3u);

  // user_tier overrides the token's tier; a tier-2 token gets tier 2 by default.
  Reply t2 = fees({{"country", "CMR"}, {"user_tier", "2"}});
  ASSERT_FALSE(t2.data().empty());
  EXPECT_TRUE(all_match(t2, [](const bj::object& o) { return o.at("user_tier") == 2; }));
  Reply t2_token = fees({{"country", "CMR"}}, merchant({"CMR"}, 2));
  EXPECT_EQ(bj::serialize(t2_token.data()), bj::serialize(t2.data()));
  Reply t9 = fees({{"country", "CMR"}, {"user_tier", "9"}});
  expect_pagination(t9, 1, 25, 0);

  Reply paged = fees({{"country", "CMR"}, {"limit", "2"}, {"page", "2"}});
  std::int64_t total = fees({{"country", "CMR"}}).pagination().at("total").as_int64();
  expect_pagination(paged, 2, 2, total);
}

TEST_P(CatalogHandlers, NamesEveryBadFeeParameter) {
  expect_bad(fees({}), {"country"});
  expect_bad(fees({{"country", "CM"}}), {"country"});
  expect_bad(fees({{"country", "C1R"},
                   {"operation", "PAYOUT"},
                   {"user_tier", "0"},
                   {"page", "0"},
                   {"limit", "500"},
                   {"service_code", "mtn momo"},
                   {"incoming_service_code", ""},
                   {"outgoing_service_code", "A;B"}}),
             {"country", "operation", "user_tier", "page", "limit", "service_code", "incoming_service_code",
              "outgoing_service_code"});
  expect_bad(fees({{"country", "CMR"}, {"operation", "collection"}}), {"operation"});
  expect_bad(fees({{"country", "CMR"}, {"user_tier", "abc"}}), {"user_tier"});
  expect_bad(fees({{"country", "CMR"}, {"user_tier", "1.5"}}), {"user_tier"});
  // Well-formed but unknown, or of another country.
  expect_bad(fees({{"country", "ZZZ"}}, admin()), {"country"});
  expect_bad(fees({{"country", "CMR"}, {"service_code", "NOPE"}, {"incoming_service_code", "ORANGE_MONEY_CIV"}}),
             {"service_code", "incoming_service_code"});
  // Lower-case country codes are accepted.
  EXPECT_EQ(fees({{"country", "cmr"}}).status, 200);
}

TEST_P(CatalogHandlers, RefusesAnUngrantedCountry) {
  Reply r = fees({{"country", "CIV"}});
  ASSERT_EQ(r.status, 403);
  EXPECT_EQ(r.body.at("success"), false);
  EXPECT_EQ(r.body.at("code"), 403);
  EXPECT_EQ(r.body.at("message"), "access_denied");
  EXPECT_TRUE(r.details().contains("country"));
  // Even for a country that does not exist: the grant is checked first.
  EXPECT_EQ(fees({{"country", "ZZZ"}}).status, 403);
  // The CIV merchant and the admin may.
  EXPECT_EQ(fees({{"country", "CIV"}}, merchant({"CIV"})).status, 200);
  EXPECT_EQ(fees({{"country", "CIV"}}, admin()).status, 200);
  EXPECT_EQ(fees({{"country", "CIV"}}, merchant({"CMR", "CIV"})).status, 200);
  // No principal at all (a wiring mistake) is never treated as an admin.
  auto req = request("/pricing-rule/fees", {{"country", "CMR"}}, merchant());
  req.principal.reset();
  EXPECT_EQ(web::respond(req, service_->list_fees(req)).status, 403);
}

TEST_P(CatalogHandlers, HidesInactiveRulesAndRulesOfInactiveServicesFromNonAdmins) {
  std::int64_t total = fees({{"country", "CMR"}}).pagination().at("total").as_int64();
  ASSERT_TRUE(service_->set_active(Kind::pricing_rule, "CMR_DISBURSEMENT_T1", false).ok());
  Reply m = fees({{"country", "CMR"}});
  expect_pagination(m, 1, 25, total - 1);
  Reply a = fees({{"country", "CMR"}}, admin());
  expect_pagination(a, 1, 25, total);
  bool inactive_seen = false;
  for (const auto& item : a.data()) inactive_seen |= item.at("active") == false;
  EXPECT_TRUE(inactive_seen);

  // Retiring a service hides its rules and makes it unknown to non-admins.
  ASSERT_TRUE(service_->set_active(Kind::service, "MTN_MOMO_CMR", false).ok());
  Reply after = fees({{"country", "CMR"}});
  for (const auto& item : after.data())
    for (const char* side : {"incoming_service", "outgoing_service"})
      if (!item.at(side).is_null()) {
        EXPECT_NE(item.at(side).at("code"), "MTN_MOMO_CMR");
      }
  expect_bad(fees({{"country", "CMR"}, {"service_code", "MTN_MOMO_CMR"}}), {"service_code"});
  EXPECT_EQ(fees({{"country", "CMR"}, {"service_code", "MTN_MOMO_CMR"}}, admin()).status, 200);

  // A retired country is unknown to non-admins even when granted.
  ASSERT_TRUE(service_->set_active(Kind::country, "CMR", false).ok());
  expect_bad(fees({{"country", "CMR"}}), {"country"});
  EXPECT_EQ(fees({{"country", "CMR"}}, admin()).status, 200);
}

TEST_P(CatalogHandlers, ListsAndFiltersServices) {
  Reply all = services({{"limit", "100"}});
  ASSERT_EQ(all.status, 200);
  std::int64_t total = all.pagination().at("total").as_int64();
  EXPECT_GE(total, 14);
  const auto& first = all.data()[0].as_object();
  for (const char* f : {"id", "code", "name", "kind", "country", "currency", "provider", "needs_otp", "is_need_otp",
                        "otp_helper", "min_amount", "max_amount", "msisdn", "active"})
    EXPECT_TRUE(first.contains(f)) << f;

  Reply cmr = services({{"country", "CMR"}});
  std::set<std::string> codes;
  for (const auto& s : cmr.data()) codes.insert(std::string(s.at("code").as_string()));
  EXPECT_EQ(codes, (std::set<std::string>{"MTN_MOMO_CMR", "ORANGE_MONEY_CMR", "SIKA_WALLET_CMR"}));
  for (const auto& s : cmr.data())
    if (s.at("code") == "MTN_MOMO_CMR") {
      EXPECT_EQ(s.at("provider").at("code"), "MTN");
      EXPECT_EQ(s.at("msisdn").at("dialling_code"), "+237");
      EXPECT_EQ(s.at("msisdn").at("national_length"), 9);
      EXPECT_EQ(s.at("min_amount"), 100);
    }

  Reply wallets = services({{"kind", "wallet"}});
  expect_pagination(wallets, 1, 25, 4);
  Reply wave = services({{"provider", "WAVE"}});
  expect_pagination(wave, 1, 25, 2);
  Reply orange_civ = services({{"provider", "ORANGE"}, {"country", "CIV"}});
  ASSERT_EQ(orange_civ.data().size(), 1u);
  EXPECT_EQ(orange_civ.data()[0].at("needs_otp"), true);
  EXPECT_EQ(orange_civ.data()[0].at("is_need_otp"), true);
  EXPECT_EQ(orange_civ.data()[0].at("otp_helper"), "#144*82#");
  Reply mtn_civ = services({{"provider", "MTN"}, {"country", "CIV"}});
  ASSERT_EQ(mtn_civ.data().size(), 1u);
  EXPECT_EQ(mtn_civ.data()[0].at("is_need_otp"), false);
  EXPECT_TRUE(mtn_civ.data()[0].at("otp_helper").is_null());
  expect_pagination(services({{"limit", "5"}, {"page", "2"}}), 2, 5, total);

  expect_bad(
      services({{"kind", "bank"}, {"active", "yes"}, {"country", "Cameroon"}, {"provider", "m t n"}, {"limit", "0"}}),
      {"kind", "active", "country", "provider", "limit"});
  expect_bad(services({{"country", "ZZZ"}, {"provider", "NOPE"}}), {"country", "provider"});

  ASSERT_TRUE(service_->set_active(Kind::service, "WAVE_SEN", false).ok());
  expect_pagination(services({{"provider", "WAVE"}}), 1, 25, 1);
  expect_pagination(services({{"provider", "WAVE"}, {"active", "false"}}), 1, 25, 0);
  expect_pagination(services({{"provider", "WAVE"}}, admin()), 1, 25, 2);
  expect_pagination(services({{"provider", "WAVE"}, {"active", "false"}}, admin()), 1, 25, 1);
  // A retired provider takes its services with it.
  ASSERT_TRUE(service_->set_active(Kind::provider, "ORANGE", false).ok());
  Reply remaining = services({{"limit", "100"}});
  for (const auto& s : remaining.data()) EXPECT_NE(s.at("provider").at("code"), "ORANGE");
  expect_bad(services({{"provider", "ORANGE"}}), {"provider"});
}

TEST_P(CatalogHandlers, ListsAndFiltersProviders) {
  Reply all = providers({});
  ASSERT_EQ(all.status, 200);
  std::set<std::string> codes;
  for (const auto& p : all.data()) codes.insert(std::string(p.at("code").as_string()));
  EXPECT_TRUE(codes.count("MTN") && codes.count("ORANGE") && codes.count("MOOV") && codes.count("WAVE") &&
              codes.count("AIRTEL") && codes.count("SIKA"));
  for (const auto& p : all.data()) {
    EXPECT_FALSE(p.as_object().contains("connector"));  // internal
    if (p.at("code") == "WAVE") {
      EXPECT_EQ(bj::serialize(p.at("countries")), R"(["CIV","SEN"])");
      EXPECT_EQ(bj::serialize(p.at("kinds")), R"(["mobile_money"])");
    }
  }
  Reply gab = providers({{"country", "GAB"}});
  codes.clear();
  for (const auto& p : gab.data()) codes.insert(std::string(p.at("code").as_string()));
  EXPECT_EQ(codes, (std::set<std::string>{"AIRTEL", "SIKA"}));
  Reply wallet = providers({{"kind", "wallet"}});
  ASSERT_EQ(wallet.data().size(), 1u);
  EXPECT_EQ(wallet.data()[0].at("code"), "SIKA");
  Reply gab_mm = providers({{"country", "GAB"}, {"kind", "mobile_money"}});
  ASSERT_EQ(gab_mm.data().size(), 1u);
  EXPECT_EQ(gab_mm.data()[0].at("code"), "AIRTEL");
  expect_pagination(providers({{"limit", "2"}, {"page", "2"}}), 2, 2, all.pagination().at("total").as_int64());
  expect_bad(providers({{"country", "XX"}, {"kind", "x"}, {"active", "1"}, {"page", "-1"}, {"provider", "a-b"}}),
             {"country", "kind", "active", "page", "provider"});
  expect_bad(providers({{"country", "ZZZ"}, {"provider", "NOPE"}}), {"country", "provider"});
  Reply one = providers({{"provider", "WAVE"}});
  ASSERT_EQ(one.data().size(), 1u);
  EXPECT_EQ(one.data()[0].at("code"), "WAVE");
  expect_pagination(providers({{"provider", "WAVE"}, {"country", "GAB"}}), 1, 25, 0);

  ASSERT_TRUE(service_->set_active(Kind::provider, "MOOV", false).ok());
  Reply visible = providers({});
  for (const auto& p : visible.data()) EXPECT_NE(p.at("code"), "MOOV");
  bool seen = false;
  Reply everything = providers({}, admin());
  for (const auto& p : everything.data()) seen |= p.at("code") == "MOOV";
  EXPECT_TRUE(seen);
}

TEST_P(CatalogHandlers, AnswersFromTheSnapshotOfItsNode) {
  // A change written behind the service's back (another node) is not seen until refresh.
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_TRY(catalog::set_active(c, Kind::country, "GAB", false, 1));
                   return {};
                 })
                  .ok());
  expect_pagination(countries({}), 1, 25, 4);
  ASSERT_TRUE(service_->refresh().ok());
  expect_pagination(countries({}), 1, 25, 3);
}

TEST_P(CatalogHandlers, RepeatedReadsGiveTheSameBytesUntilTheCatalogChanges) {
  auto body = [&](web::Fields q, web::Principal who, i18n::Locale l = i18n::Locale::fr) {
    auto req = request("/pricing-rule/fees", std::move(q), std::move(who), l);
    web::Response res = web::respond(req, service_->list_fees(req));
    EXPECT_EQ(res.get("content-type"), "application/json; charset=utf-8");
    return res.body;
  };
  std::string first = body({{"country", "CMR"}}, merchant());
  ASSERT_NE(first.find("\"fee_value\":2,"), std::string::npos) << first;  // CMR_MTN_COLLECTION_T1
  EXPECT_EQ(first.find("E0"), std::string::npos) << first;                // numbers as people write them
  EXPECT_EQ(body({{"country", "CMR"}}, merchant()), first);
  EXPECT_EQ(body({{"country", "cmr"}, {"page", "1"}}, merchant()), first);  // same effective parameters
  EXPECT_NE(body({{"country", "CMR"}}, merchant(), i18n::Locale::en), first);
  EXPECT_NE(body({{"country", "CMR"}}, merchant({"CMR"}, 2)), first);  // the token's tier matters
  EXPECT_NE(body({{"country", "CMR"}}, admin()), body({{"country", "CMR"}, {"limit", "3"}}, admin()));
  // A refused request is never answered from a cached success.
  EXPECT_EQ(fees({{"country", "CMR"}}, merchant({"CIV"})).status, 403);
  ASSERT_TRUE(service_->set_active(Kind::pricing_rule, "CMR_MTN_COLLECTION_T1", false).ok());
  std::string after = body({{"country", "CMR"}}, merchant());
  EXPECT_NE(after, first);
  EXPECT_EQ(after.find("\"fee_value\":2,"), std::string::npos) << after;
}

INSTANTIATE_TEST_SUITE_P(Backends, CatalogHandlers, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace sika::catalog
