// The mobile numbering plans and what is predicted from them, on the demo catalog's countries,
// providers and services (src/catalog/demo_catalog.json), without a database.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "catalog/demo.hpp"
#include "catalog/numbering.hpp"
#include "core/reason.hpp"

namespace sika::catalog {
namespace {

namespace bj = boost::json;
using numbering::operator_of;

std::string text(const bj::object& o, std::string_view key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_string() ? std::string(it->value().as_string()) : std::string();
}

// The demo catalog as a snapshot (ids in file order).
Catalog demo_catalog() {
  bj::object doc = bj::parse(demo_catalog_json()).as_object();
  std::vector<Country> countries;
  std::vector<Provider> providers;
  std::vector<PaymentService> services;
  for (const auto& v : doc.at("countries").as_array()) {
    const auto& o = v.as_object();
    countries.push_back({.id = static_cast<std::int64_t>(countries.size() + 1),
                         .code = text(o, "code"),
                         .alpha2 = text(o, "alpha2"),
                         .name_fr = text(o, "name_fr"),
                         .name_en = text(o, "name_en"),
                         .dialling_code = text(o, "dialling_code"),
                         .currency = text(o, "currency"),
                         .msisdn_length = o.at("msisdn_length").as_int64(),
                         .msisdn_pattern = text(o, "msisdn_pattern")});
  }
  for (const auto& v : doc.at("providers").as_array()) {
    const auto& o = v.as_object();
    providers.push_back({.id = static_cast<std::int64_t>(providers.size() + 1),
                         .code = text(o, "code"),
                         .name = text(o, "name"),
                         .connector = text(o, "connector")});
  }
  auto id_of = [](const auto& rows, const std::string& code) {
    for (const auto& r : rows)
      if (r.code == code) return r.id;
    return std::int64_t{0};
  };
  for (const auto& v : doc.at("services").as_array()) {
    const auto& o = v.as_object();
    PaymentService s;
    s.id = static_cast<std::int64_t>(services.size() + 1);
    s.code = text(o, "code");
    s.name = text(o, "name");
    s.provider_id = id_of(providers, text(o, "provider"));
    s.country_id = id_of(countries, text(o, "country"));
    s.kind = text(o, "kind") == "wallet" ? ServiceKind::wallet : ServiceKind::mobile_money;
    s.msisdn_pattern = text(o, "msisdn_pattern");
    services.push_back(std::move(s));
  }
  for (auto& s : services) s.currency = countries[static_cast<std::size_t>(s.country_id - 1)].currency;
  return Catalog(1, std::move(countries), std::move(providers), std::move(services), {});
}

class Numbering : public ::testing::Test {
 protected:
  Catalog cat_ = demo_catalog();

  // The English text of the one problem of a refused prediction, as "field: text".
  static std::string refusal(const Result<numbering::Prediction>& r) {
    if (r.ok() || r.error().code != "empty_data" || !r.error().details.is_object()) return "accepted";
    const auto& d = r.error().details.as_object();
    if (d.size() != 1) return bj::serialize(d);
    return std::string(d.begin()->key()) + ": " + std::string(d.begin()->value().as_string());
  }
};

TEST_F(Numbering, EachBlockNamesItsOperator) {
  struct Case {
    const char* country;
    const char* national;
    const char* op;
  } cases[] = {
      {"CMR", "650000000", "MTN"},       {"CMR", "654999999", "MTN"},     {"CMR", "655000000", "ORANGE"},
      {"CMR", "659000000", "ORANGE"},    {"CMR", "670000001", "MTN"},     {"CMR", "680000000", "MTN"},
      {"CMR", "683000000", "MTN"},       {"CMR", "684000000", "NEXTTEL"}, {"CMR", "685000000", "NEXTTEL"},
      {"CMR", "686000000", "ORANGE"},    {"CMR", "690000001", "ORANGE"},  {"CMR", "660000000", "NEXTTEL"},
      {"CMR", "640000000", "ORANGE"},    {"CMR", "620000000", "CAMTEL"},  {"CIV", "0100000000", "MOOV"},
      {"CIV", "0500000000", "MTN"},      {"CIV", "0700000000", "ORANGE"}, {"SEN", "760000000", "FREE"},
      {"SEN", "770000000", "ORANGE"},    {"SEN", "780000000", "ORANGE"},  {"SEN", "700000000", "EXPRESSO"},
      {"SEN", "750000000", "PROMOBILE"}, {"GAB", "77280150", "AIRTEL"},   {"GAB", "74000000", "AIRTEL"},
      {"GAB", "66000000", "MOOV"},
  };
  for (const auto& c : cases) EXPECT_EQ(operator_of(c.country, c.national), c.op) << c.country << " " << c.national;
}

TEST_F(Numbering, NothingIsPredictedWithoutData) {
  EXPECT_EQ(operator_of("CMR", "630000000"), "") << "63: in no block";
  EXPECT_EQ(operator_of("CMR", "69000000"), "") << "another length than the plan's";
  EXPECT_EQ(operator_of("CIV", "0900000000"), "");
  EXPECT_EQ(operator_of("BEN", "0161000000"), "") << "a country without a plan";
  EXPECT_FALSE(numbering::holds_blocks("CIV", "WAVE")) << "Wave runs on any number";
  EXPECT_FALSE(numbering::holds_blocks("CMR", "SIKA"));
  EXPECT_TRUE(numbering::holds_blocks("CMR", "MTN"));
}

TEST_F(Numbering, EveryPlanHasItsCatalogCountrysLength) {
  for (const Country& c : cat_.countries()) {
    const numbering::Plan* plan = numbering::plan_of(c.code);
    ASSERT_NE(plan, nullptr) << c.code << ": a demo country without a numbering plan";
    EXPECT_EQ(plan->national_length, static_cast<std::size_t>(c.msisdn_length)) << c.code;
    for (const auto& a : plan->blocks)
      for (const auto& b : plan->blocks)
        EXPECT_TRUE(&a == &b || a.prefix != b.prefix) << c.code << " " << a.prefix << ": listed twice";
  }
}

// A demo service's own number pattern never accepts a number of another operator's block.
TEST_F(Numbering, DemoServicePatternsAgreeWithThePlans) {
  const std::pair<const char*, const char*> accepted[] = {
      {"ORANGE_MONEY_CIV", "0700000000"}, {"MTN_MOMO_CIV", "0500000000"},    {"MOOV_MONEY_CIV", "0100000000"},
      {"ORANGE_MONEY_SEN", "770000000"},  {"FREE_MONEY_SEN", "760000000"},   {"AIRTEL_MONEY_GAB", "77280150"},
      {"MTN_MOMO_CMR", "670000000"},      {"ORANGE_MONEY_CMR", "690000000"},
  };
  for (const auto& [code, national] : accepted) {
    const PaymentService* s = cat_.service(code);
    ASSERT_NE(s, nullptr) << code;
    auto msisdn = cat_.normalize_msisdn(*s, national);
    ASSERT_TRUE(msisdn.ok()) << code << " " << national;
    EXPECT_EQ(numbering::operator_mismatch(cat_, *s, *msisdn), std::nullopt) << code;
  }
}

TEST_F(Numbering, PredictReadsEveryWrittenForm) {
  auto p = numbering::predict(cat_, "+237 6 99 00 00 10");
  ASSERT_TRUE(p.ok()) << refusal(p);
  EXPECT_EQ(p->msisdn, "237699000010");
  ASSERT_NE(p->country, nullptr);
  EXPECT_EQ(p->country->code, "CMR");
  EXPECT_EQ(p->providers, std::vector<std::string>{"ORANGE"});
  EXPECT_EQ(numbering::predict(cat_, "00225 05 00 00 00 01")->providers, std::vector<std::string>{"MTN"});
  EXPECT_EQ(numbering::predict(cat_, "237670000001")->providers, std::vector<std::string>{"MTN"});
  auto national = numbering::predict(cat_, "07 00 00 00 00", std::string("CIV"));
  ASSERT_TRUE(national.ok()) << refusal(national);
  EXPECT_EQ(national->msisdn, "2250700000000");
  EXPECT_EQ(national->providers, std::vector<std::string>{"ORANGE"});
  EXPECT_EQ(numbering::predict(cat_, "077280150", std::string("GAB"))->providers, std::vector<std::string>{"AIRTEL"});
  auto unknown = numbering::predict(cat_, "+237 630 000 000");
  ASSERT_TRUE(unknown.ok()) << refusal(unknown);
  EXPECT_TRUE(unknown->providers.empty()) << "a mobile number in no block: nothing predicted, no error";
}

TEST_F(Numbering, PredictNamesWhatIsWrongWithTheInput) {
  EXPECT_EQ(refusal(numbering::predict(cat_, "690000001")),
            "msisdn: must begin with the dialling code of a catalog country (e.g. +237), or come with country");
  EXPECT_EQ(refusal(numbering::predict(cat_, "+229 0161000000")),
            "msisdn: must begin with the dialling code of a catalog country (e.g. +237), or come with country");
  EXPECT_EQ(refusal(numbering::predict(cat_, "six-nine")),
            "msisdn: must contain only digits, spaces and a leading '+'");
  EXPECT_EQ(refusal(numbering::predict(cat_, "")), "msisdn: must not be empty");
  EXPECT_EQ(refusal(numbering::predict(cat_, "+237 222 000 000")), "msisdn: is not a mobile number of CMR");
  EXPECT_EQ(refusal(numbering::predict(cat_, "690000001", std::string("BEN"))),
            "country: is not a country of the catalog");
  EXPECT_EQ(refusal(numbering::predict(cat_, "+225 0700000000", std::string("CMR"))),
            "msisdn: must be a number of CMR (+237)");
}

TEST_F(Numbering, AMismatchNamesBothOperators) {
  const PaymentService* mtn = cat_.service("MTN_MOMO_CMR");
  ASSERT_NE(mtn, nullptr);
  auto m = numbering::operator_mismatch(cat_, *mtn, "237699000010");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->reason, Reason::other_operator_number);
  EXPECT_EQ(reason::text(*m, i18n::Locale::en),
            "belongs to Orange, not MTN (the operator is the one of the service chosen in provider)");
  EXPECT_EQ(reason::text(*m, i18n::Locale::fr),
            "est un numéro Orange, pas MTN (l'opérateur est celui du service choisi dans provider)");
  EXPECT_EQ(numbering::operator_mismatch(cat_, *mtn, "237660000010")->param("operator"), "Nexttel");
  EXPECT_EQ(numbering::operator_mismatch(cat_, *mtn, "237670000010"), std::nullopt);
  EXPECT_EQ(numbering::operator_mismatch(cat_, *mtn, "237630000010"), std::nullopt) << "unknown block";
  EXPECT_EQ(numbering::operator_mismatch(cat_, *cat_.service("WAVE_CIV"), "2250700000000"), std::nullopt);
  EXPECT_EQ(numbering::operator_mismatch(cat_, *cat_.service("SIKA_WALLET_CMR"), "237699000010"), std::nullopt);
}

TEST_F(Numbering, PreselectFollowsTheNumberUnlessTheChoiceFits) {
  const std::vector<std::string> cmr = {"MTN_MOMO_CMR", "ORANGE_MONEY_CMR"};
  EXPECT_EQ(numbering::preselect(cat_, cmr, "", "+237 699 00 00 10"), "ORANGE_MONEY_CMR");
  EXPECT_EQ(numbering::preselect(cat_, cmr, "MTN_MOMO_CMR", "699000010"), "ORANGE_MONEY_CMR");
  EXPECT_EQ(numbering::preselect(cat_, cmr, "", "237670000010"), "MTN_MOMO_CMR");
  EXPECT_EQ(numbering::preselect(cat_, cmr, "ORANGE_MONEY_CMR", "237670000010"), "MTN_MOMO_CMR");
  EXPECT_EQ(numbering::preselect(cat_, cmr, "MTN_MOMO_CMR", "237670000010"), "MTN_MOMO_CMR");
  EXPECT_EQ(numbering::preselect(cat_, cmr, "MTN_MOMO_CMR", "237630000010"), "MTN_MOMO_CMR") << "unknown block";
  EXPECT_EQ(numbering::preselect(cat_, cmr, "", "237630000010"), "");
  EXPECT_EQ(numbering::preselect(cat_, cmr, "", ""), "");
  EXPECT_EQ(numbering::preselect(cat_, cmr, "MTN_MOMO_CMR", "not a number"), "MTN_MOMO_CMR");
  const std::vector<std::string> civ = {"ORANGE_MONEY_CIV", "MTN_MOMO_CIV", "MOOV_MONEY_CIV", "WAVE_CIV"};
  EXPECT_EQ(numbering::preselect(cat_, civ, "WAVE_CIV", "0700000000"), "WAVE_CIV") << "Wave takes any number";
  EXPECT_EQ(numbering::preselect(cat_, civ, "", "+225 01 00 00 00 00"), "MOOV_MONEY_CIV");
  EXPECT_EQ(numbering::preselect(cat_, civ, "ORANGE_MONEY_CIV", "0500000000"), "MTN_MOMO_CIV");
}

}  // namespace
}  // namespace sika::catalog
