// Stored catalog on both backends: records validated field by field, modes, version bumps,
// all-or-nothing imports, export round trips, the demo catalog, and the snapshot's freshness
// across two nodes.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "catalog/demo.hpp"
#include "catalog/service.hpp"
#include "catalog/store.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "support/test_db.hpp"

namespace sika::catalog {
namespace {

namespace bj = boost::json;
using namespace std::chrono_literals;

std::string text(const Error& e) { return bj::serialize(e.details); }

bj::object obj(std::string_view json) { return bj::parse(json).as_object(); }

class CatalogStore : public testing::DbTest {
 protected:
  Result<Outcome> put_record(Kind kind, std::string_view json, Mode mode = Mode::create) {
    Result<Outcome> out = internal_error();
    Status st = db_->write([&](store::Conn& c) -> Status {
      out = catalog::put(c, kind, obj(json), mode, now_ms());
      if (!out) return out.error();
      return {};
    });
    if (!st) return st.error();
    return out;
  }
  Result<Outcome> activate(Kind kind, std::string_view code, bool active) {
    Result<Outcome> out = internal_error();
    Status st = db_->write([&](store::Conn& c) -> Status {
      out = catalog::set_active(c, kind, code, active, now_ms());
      if (!out) return out.error();
      return {};
    });
    if (!st) return st.error();
    return out;
  }
  Result<ImportReport> import(const bj::value& doc, Mode mode = Mode::upsert) {
    Result<ImportReport> out = internal_error();
    Status st = db_->write([&](store::Conn& c) -> Status {
      out = import_catalog(c, doc, mode, now_ms());
      if (!out) return out.error();
      return {};
    });
    if (!st) return st.error();
    return out;
  }
  std::shared_ptr<const Catalog> load() {
    std::shared_ptr<const Catalog> cat;
    Status st = db_->read([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(cat, load_catalog(c));
      return {};
    });
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : text(st.error()));
    return cat;
  }
  std::int64_t version() { return load()->version(); }

  void seed_cameroon() {
    ASSERT_TRUE(put_record(Kind::country, kCmr).ok());
    ASSERT_TRUE(put_record(Kind::country, kCiv).ok());
    ASSERT_TRUE(put_record(Kind::provider, R"({"code":"MTN","name":"MTN","connector":"sandbox"})").ok());
    ASSERT_TRUE(put_record(Kind::service, kMtn).ok());
  }

  static constexpr std::string_view kCmr =
      R"({"code":"CMR","alpha2":"CM","name_fr":"Cameroun","name_en":"Cameroon","dialling_code":"+237",
          "currency":"XAF","msisdn_length":9,"msisdn_pattern":"6\\d{8}"})";
  static constexpr std::string_view kCiv =
      R"({"code":"CIV","alpha2":"CI","name_fr":"Côte d'Ivoire","name_en":"Côte d'Ivoire","dialling_code":"+225",
          "currency":"XOF","msisdn_length":10})";
  static constexpr std::string_view kMtn =
      R"({"code":"MTN_MOMO_CMR","name":"MTN Mobile Money","provider":"MTN","country":"CMR","kind":"mobile_money",
          "min_amount":100,"max_amount":1000000})";
};

TEST_P(CatalogStore, StartsEmptyAtVersionZero) {
  auto cat = load();
  ASSERT_TRUE(cat);
  EXPECT_EQ(cat->version(), 0);
  EXPECT_TRUE(cat->loaded());
  EXPECT_TRUE(cat->countries().empty());
  EXPECT_TRUE(cat->rules().empty());
}

TEST_P(CatalogStore, CreatesUpdatesAndDeactivatesWithVersionBumps) {
  auto created = put_record(Kind::country, kCmr);
  ASSERT_TRUE(created.ok()) << text(created.error());
  EXPECT_EQ(created->change, Change::created);
  EXPECT_GT(created->id, 0);
  EXPECT_EQ(version(), 1);

  auto again = put_record(Kind::country, kCmr);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().kind, sika::ErrorKind::conflict);
  EXPECT_EQ(version(), 1);

  auto same = put_record(Kind::country, kCmr, Mode::upsert);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->change, Change::unchanged);
  EXPECT_EQ(same->id, created->id);
  EXPECT_EQ(version(), 1);  // nothing changed, nothing bumped

  auto renamed = put_record(Kind::country, R"({"code":"CMR","name_en":"Republic of Cameroon"})", Mode::update);
  ASSERT_TRUE(renamed.ok()) << text(renamed.error());
  EXPECT_EQ(renamed->change, Change::updated);
  EXPECT_EQ(version(), 2);
  auto cat = load();
  EXPECT_EQ(cat->country("CMR")->name_en, "Republic of Cameroon");
  EXPECT_EQ(cat->country("CMR")->name_fr, "Cameroun");  // update leaves other fields alone
  EXPECT_EQ(cat->country("CMR")->msisdn_pattern, "6\\d{8}");

  auto off = activate(Kind::country, "CMR", false);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->change, Change::updated);
  EXPECT_EQ(version(), 3);
  EXPECT_FALSE(load()->country("CMR")->active);
  EXPECT_EQ(activate(Kind::country, "CMR", false)->change, Change::unchanged);
  EXPECT_EQ(version(), 3);
  EXPECT_EQ(activate(Kind::country, "XYZ", false).error().kind, sika::ErrorKind::not_found);
  EXPECT_EQ(put_record(Kind::country, R"({"code":"XYZ","name_en":"x"})", Mode::update).error().kind,
            sika::ErrorKind::not_found);

  // Upsert replaces: absent optional fields go back to their defaults (active = true).
  auto replaced = put_record(Kind::country, kCmr, Mode::upsert);
  ASSERT_TRUE(replaced.ok());
  EXPECT_EQ(replaced->change, Change::updated);
  EXPECT_TRUE(load()->country("CMR")->active);
  EXPECT_EQ(load()->country("CMR")->name_en, "Cameroon");
}

TEST_P(CatalogStore, NamesEveryBadCountryField) {
  auto r = put_record(Kind::country, R"({"code":"CMR","alpha2":"cm","name_fr":"","dialling_code":"237",
      "currency":"xaf","msisdn_length":40,"msisdn_pattern":"(6","colour":"green"})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, sika::ErrorKind::invalid);
  EXPECT_EQ(r.error().code, "empty_data");
  const auto& d = r.error().details.as_object();
  for (const char* f :
       {"alpha2", "name_fr", "name_en", "dialling_code", "currency", "msisdn_length", "msisdn_pattern", "colour"})
    EXPECT_TRUE(d.contains(f)) << f << " in " << text(r.error());
  EXPECT_EQ(text(put_record(Kind::country, R"({"code":"Cameroon"})").error()),
            R"j({"code":"must be an ISO 3166-1 alpha-3 code (e.g. CMR)"})j");
  EXPECT_EQ(text(put_record(Kind::country, R"({"name_en":"x"})").error()), R"({"code":"is required"})");
  ASSERT_TRUE(put_record(Kind::country, kCmr).ok());
  auto dup = put_record(Kind::country, R"({"code":"CMX","alpha2":"CM","name_fr":"x","name_en":"x",
      "dialling_code":"+237","currency":"XAF","msisdn_length":9})");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().kind, sika::ErrorKind::conflict);
  EXPECT_EQ(text(dup.error()), R"({"alpha2":"already used by CMR"})");
  EXPECT_EQ(version(), 1);
}

TEST_P(CatalogStore, RefusalsAreTypedProblemsNeverUntypedTexts) {
  auto r = put_record(Kind::country, R"({"code":"CMR","alpha2":"cm","name_fr":"","dialling_code":"237",
      "currency":"xaf","msisdn_length":40,"msisdn_pattern":"(6","colour":"green"})");
  ASSERT_FALSE(r.ok());
  for (const auto& p : r.error().problems) EXPECT_NE(p.problem.reason, Reason::text) << p.field;
  EXPECT_EQ(r.error().problem("alpha2")->reason, Reason::alpha2_code);
  EXPECT_EQ(r.error().problem("dialling_code")->reason, Reason::dialling_code);
  EXPECT_EQ(r.error().problem("currency")->reason, Reason::currency_iso_shape);
  EXPECT_EQ(r.error().problem("msisdn_pattern")->reason, Reason::regular_expression);
  EXPECT_EQ(r.error().problem("colour")->reason, Reason::unknown_field_short);
  EXPECT_EQ(r.error().problem("msisdn_length")->reason, Reason::between);
  EXPECT_EQ(r.error().details.at("msisdn_length").as_string(), "must be between 4 and 14");
  ASSERT_TRUE(put_record(Kind::country, kCmr).ok());
  auto again = put_record(Kind::country, kCmr);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().kind, sika::ErrorKind::conflict);
  EXPECT_EQ(again.error().problem("code")->reason, Reason::entry_exists);
  auto missing = put_record(Kind::country, R"({"code":"ZZZ","name_en":"x"})", Mode::update);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, sika::ErrorKind::not_found);
  EXPECT_EQ(missing.error().problem("code")->reason, Reason::no_entry);
  auto imported = import(obj(R"({"services":[{"code":"X_CMR","name":"X","provider":"NOPE","country":"CMR",
      "kind":"mobile_money"}]})"));
  ASSERT_FALSE(imported.ok());
  ASSERT_NE(imported.error().problem("services[0].provider"), nullptr) << text(imported.error());
  EXPECT_EQ(imported.error().problem("services[0].provider")->reason, Reason::unknown_provider);
  auto not_object = import(bj::value(bj::array{}));
  ASSERT_FALSE(not_object.ok());
  EXPECT_EQ(not_object.error().problem("")->reason, Reason::catalog_not_object);
  EXPECT_EQ(text(not_object.error()), R"("the catalog document must be a JSON object")");
}

TEST_P(CatalogStore, ValidatesServicesAgainstTheirReferences) {
  seed_cameroon();
  auto bad = put_record(Kind::service, R"({"code":"X_CMR","name":"X","provider":"NOPE","country":"ZZZ",
      "kind":"bank","min_amount":-1})");
  ASSERT_FALSE(bad.ok());
  const auto& d = bad.error().details.as_object();
  EXPECT_EQ(d.at("provider"), "unknown provider");
  EXPECT_EQ(d.at("country"), "unknown country");
  EXPECT_EQ(d.at("kind"), "must be mobile_money or wallet");
  EXPECT_TRUE(d.contains("min_amount"));

  EXPECT_EQ(text(put_record(Kind::service, R"({"code":"Y_CMR","name":"Y","provider":"MTN","country":"CMR",
      "kind":"wallet","currency":"XOF"})")
                     .error()),
            R"j({"currency":"must be the country's currency (XAF)"})j");
  EXPECT_EQ(text(put_record(Kind::service, R"({"code":"Y_CMR","name":"Y","provider":"MTN","country":"CMR",
      "kind":"wallet","min_amount":500,"max_amount":100})")
                     .error()),
            R"({"max_amount":"must be >= min_amount"})");
  // A service never moves to another country.
  EXPECT_EQ(text(put_record(Kind::service, R"({"code":"MTN_MOMO_CMR","country":"CIV"})", Mode::update).error()),
            R"j({"country":"cannot be changed (create another service)"})j");
  // A patch can clear an optional bound with null.
  ASSERT_TRUE(put_record(Kind::service, R"({"code":"MTN_MOMO_CMR","max_amount":null})", Mode::update).ok());
  auto cat = load();
  const PaymentService* mtn = cat->service("MTN_MOMO_CMR");
  ASSERT_NE(mtn, nullptr);
  EXPECT_EQ(mtn->currency, "XAF");  // taken from the country
  EXPECT_EQ(mtn->min_amount, 100);
  EXPECT_EQ(mtn->max_amount, std::nullopt);
  EXPECT_EQ(cat->provider_by_id(mtn->provider_id)->code, "MTN");
}

TEST_P(CatalogStore, StoresPricingRulesAsExactIntegers) {
  seed_cameroon();
  auto pct = put_record(Kind::pricing_rule, R"({"code":"CMR_MTN_COL_T1","operation":"COLLECTION","user_tier":1,
      "incoming_service":"MTN_MOMO_CMR","fee_type":"PERCENTAGE","fee_value":0.35,"reward_value":0.25})");
  ASSERT_TRUE(pct.ok()) << text(pct.error());
  auto text_value = put_record(Kind::pricing_rule, R"({"code":"CMR_MTN_COL_T2","operation":"COLLECTION","user_tier":2,
      "incoming_service":"MTN_MOMO_CMR","fee_type":"PERCENTAGE","fee_value":"1.23456"})");
  ASSERT_TRUE(text_value.ok()) << text(text_value.error());
  auto fixed = put_record(Kind::pricing_rule, R"({"code":"CMR_DISB_T1","country":"CMR","operation":"DISBURSEMENT",
      "user_tier":1,"fee_type":"FIXED","fee_value":150,"min_amount":0,"max_amount":50000})");
  ASSERT_TRUE(fixed.ok()) << text(fixed.error());
  auto cat = load();
  const PricingRule* r1 = cat->rule("CMR_MTN_COL_T1");
  ASSERT_NE(r1, nullptr);
  EXPECT_EQ(r1->fee_units, 3500);
  EXPECT_EQ(r1->country_id, cat->country("CMR")->id);  // taken from the service
  EXPECT_EQ(r1->reward_value, 0.25);
  EXPECT_EQ(r1->sponsor_reward_value, std::nullopt);
  EXPECT_EQ(cat->rule("CMR_MTN_COL_T2")->fee_units, 12346);  // rounded half up to the ppm
  const PricingRule* r3 = cat->rule("CMR_DISB_T1");
  EXPECT_EQ(r3->fee_type, FeeType::fixed);
  EXPECT_EQ(r3->fee_units, 150);
  EXPECT_EQ(r3->min_amount, 0);
  EXPECT_EQ(r3->max_amount, 50000);
  EXPECT_FALSE(r3->incoming_service_id.has_value());

  auto q = quote_fee(*cat, Operation::collection, ServiceKey{"MTN_MOMO_CMR"}, std::nullopt, 100000, 1);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->fee, 350);
}

TEST_P(CatalogStore, RefusesInconsistentPricingRules) {
  seed_cameroon();
  ASSERT_TRUE(put_record(Kind::provider, R"({"code":"ORANGE","name":"Orange","connector":"sandbox"})").ok());
  ASSERT_TRUE(put_record(Kind::service, R"({"code":"ORANGE_MONEY_CIV","name":"Orange Money","provider":"ORANGE",
      "country":"CIV","kind":"mobile_money"})")
                  .ok());
  auto r = put_record(Kind::pricing_rule, R"({"code":"BAD","operation":"PAYOUT","user_tier":0,"fee_type":"FLAT",
      "fee_value":"x","min_amount":10,"max_amount":5,"sponsor_reward_value":-1})");
  ASSERT_FALSE(r.ok());
  const auto& d = r.error().details.as_object();
  for (const char* f : {"operation", "user_tier", "fee_type", "sponsor_reward_value", "country"})
    EXPECT_TRUE(d.contains(f)) << f << " in " << text(r.error());

  EXPECT_EQ(text(put_record(Kind::pricing_rule, R"({"code":"P","country":"CMR","operation":"COLLECTION","user_tier":1,
      "fee_type":"PERCENTAGE","fee_value":150})")
                     .error()),
            R"({"fee_value":"must be a percentage between 0 and 100"})");
  EXPECT_EQ(text(put_record(Kind::pricing_rule, R"({"code":"F","country":"CMR","operation":"COLLECTION","user_tier":1,
      "fee_type":"FIXED","fee_value":10.5})")
                     .error()),
            R"({"fee_value":"must be a whole number of minor units"})");
  EXPECT_EQ(text(put_record(Kind::pricing_rule, R"({"code":"X","country":"CMR","operation":"COLLECTION","user_tier":1,
      "fee_type":"FIXED","fee_value":10,"incoming_service":"ORANGE_MONEY_CIV"})")
                     .error()),
            R"({"incoming_service":"must be a service of the rule's country"})");
  EXPECT_EQ(text(put_record(Kind::pricing_rule, R"({"code":"Y","operation":"COLLECTION","user_tier":1,
      "fee_type":"FIXED","fee_value":10,"outgoing_service":"NOPE"})")
                     .error()),
            R"({"outgoing_service":"unknown service"})");
  EXPECT_EQ(load()->rules().size(), 0u);

  ASSERT_TRUE(put_record(Kind::pricing_rule, R"({"code":"OK","country":"CMR","operation":"COLLECTION","user_tier":1,
      "fee_type":"FIXED","fee_value":10})")
                  .ok());
  EXPECT_EQ(text(put_record(Kind::pricing_rule, R"({"code":"OK","fee_type":"PERCENTAGE"})", Mode::update).error()),
            R"({"fee_value":"is required when fee_type changes"})");
  auto changed =
      put_record(Kind::pricing_rule, R"({"code":"OK","fee_type":"PERCENTAGE","fee_value":"2.5"})", Mode::update);
  ASSERT_TRUE(changed.ok()) << text(changed.error());
  EXPECT_EQ(load()->rule("OK")->fee_units, 25000);
  EXPECT_EQ(text(put_record(Kind::pricing_rule, R"({"code":"OK","country":"CIV"})", Mode::update).error()),
            R"({"country":"cannot be changed"})");
}

bj::value demo_document() { return bj::parse(demo_catalog_json()); }

TEST_P(CatalogStore, ImportsTheDemoCatalogIdempotently) {
  auto first = import(demo_document());
  ASSERT_TRUE(first.ok()) << text(first.error());
  EXPECT_TRUE(first->changed());
  EXPECT_EQ(first->countries.created, 4);
  EXPECT_GE(first->services.created, 14);
  EXPECT_GE(first->pricing_rules.created, 40);
  std::int64_t v = version();
  EXPECT_GT(v, 0);

  auto second = import(demo_document());
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->changed());
  EXPECT_EQ(second->pricing_rules.unchanged, first->pricing_rules.created);
  EXPECT_EQ(version(), v);  // an idempotent import does not make every node reload

  // create_missing (the demo seeder's mode) keeps an operator's change; upsert restores the file.
  ASSERT_TRUE(activate(Kind::service, "WAVE_SEN", false).ok());
  ASSERT_TRUE(import(demo_document(), Mode::create_missing).ok());
  EXPECT_FALSE(load()->service("WAVE_SEN")->active);
  ASSERT_TRUE(import(demo_document(), Mode::upsert).ok());
  EXPECT_TRUE(load()->service("WAVE_SEN")->active);

  // export -> import changes nothing.
  auto exported = export_catalog(*load());
  auto round = import(exported);
  ASSERT_TRUE(round.ok()) << text(round.error());
  EXPECT_FALSE(round->changed()) << bj::serialize(round->to_json());
}

TEST_P(CatalogStore, AFailedImportChangesNothing) {
  ASSERT_TRUE(import(demo_document()).ok());
  std::int64_t v = version();
  auto before = export_catalog(*load());
  auto doc = obj(R"({"countries":[{"code":"BEN","alpha2":"BJ","name_fr":"Bénin","name_en":"Benin",
      "dialling_code":"+229","currency":"XOF","msisdn_length":10}],
      "services":[{"code":"MTN_MOMO_CMR","name":"renamed","provider":"MTN","country":"CMR","kind":"mobile_money"},
                  {"code":"MTN_MOMO_BEN","name":"MTN","provider":"NOPE","country":"BEN","kind":"mobile_money"}]})");
  auto r = import(doc);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, sika::ErrorKind::invalid);
  EXPECT_EQ(text(r.error()), R"({"services[1].provider":"unknown provider"})");
  EXPECT_EQ(version(), v);
  EXPECT_EQ(export_catalog(*load()), before);
  EXPECT_EQ(load()->country("BEN"), nullptr);

  EXPECT_EQ(text(import(obj(R"({"currencies":[]})")).error()), R"({"currencies":"unknown section"})");
  EXPECT_EQ(text(import(obj(R"({"countries":{}})")).error()), R"({"countries":"must be an array"})");
  EXPECT_EQ(text(import(obj(R"({"providers":[1]})")).error()), R"({"providers[0]":"must be an object"})");
  EXPECT_FALSE(import(bj::value(bj::array{})).ok());
}

TEST_P(CatalogStore, DemoCatalogPricesEveryServiceForBothOperationsAndTiers) {
  ASSERT_TRUE(import(demo_document()).ok());
  auto cat = load();
  for (const char* code : {"CMR", "CIV", "SEN", "GAB"}) {
    ASSERT_NE(cat->country(code), nullptr) << code;
    EXPECT_TRUE(cat->country(code)->active);
  }
  EXPECT_EQ(cat->country("CMR")->currency, "XAF");
  EXPECT_EQ(cat->country("GAB")->currency, "XAF");
  EXPECT_EQ(cat->country("CIV")->currency, "XOF");
  EXPECT_EQ(cat->country("SEN")->currency, "XOF");
  for (const char* code : {"MTN_MOMO_CMR", "ORANGE_MONEY_CMR", "ORANGE_MONEY_CIV", "MTN_MOMO_CIV", "MOOV_MONEY_CIV",
                           "WAVE_CIV", "ORANGE_MONEY_SEN", "WAVE_SEN", "AIRTEL_MONEY_GAB", "SIKA_WALLET_CMR",
                           "SIKA_WALLET_CIV", "SIKA_WALLET_SEN", "SIKA_WALLET_GAB"})
    EXPECT_NE(cat->service(code), nullptr) << code;
  EXPECT_EQ(cat->service("SIKA_WALLET_CMR")->kind, ServiceKind::wallet);
  bool some_fixed = false, some_percentage = false, some_bounded = false;
  for (const auto& r : cat->rules()) {
    some_fixed |= r.fee_type == FeeType::fixed;
    some_percentage |= r.fee_type == FeeType::percentage;
    some_bounded |= r.min_amount.has_value() || r.max_amount.has_value();
  }
  EXPECT_TRUE(some_fixed && some_percentage && some_bounded);
  // Every service is priced for both operations and both tiers, across its whole amount range.
  for (const auto& s : cat->services()) {
    for (Operation op : {Operation::collection, Operation::disbursement}) {
      for (std::int64_t tier : {1, 2}) {
        for (std::int64_t amount :
             {s.min_amount.value_or(1), std::int64_t{5000}, std::int64_t{400001}, s.max_amount.value_or(10'000'000)}) {
          std::optional<ServiceKey> in, out;
          (op == Operation::collection ? in : out) = ServiceKey{s.code};
          auto q = quote_fee(*cat, op, in, out, amount, tier);
          ASSERT_TRUE(q.ok()) << s.code << " " << to_string(op) << " tier " << tier << " amount " << amount << ": "
                              << text(q.error());
          EXPECT_GE(q->fee, 0);
          EXPECT_LT(q->fee, amount / 10 + 1000) << s.code;  // demo fees are plausible
        }
      }
    }
  }
  // The sandbox numbers of the first merchant's country go through both Cameroonian operators.
  for (const char* code : {"MTN_MOMO_CMR", "ORANGE_MONEY_CMR"})
    for (const char* msisdn : {"237600000001", "237690000002", "237670000003", "+237650000004"})
      EXPECT_TRUE(cat->normalize_msisdn(*cat->service(code), msisdn).ok()) << code << " " << msisdn;
}

TEST_P(CatalogStore, ServiceSeesItsOwnChangesAtOnceAndOtherNodesWithinTheRefreshPeriod) {
  Service node_a(*db_, Options{50});
  Service node_b(second_node(), Options{50});
  node_b.start();
  EXPECT_EQ(node_a.snapshot()->version(), 0);
  EXPECT_EQ(node_b.snapshot()->version(), 0);

  auto imported = node_a.import(demo_document(), Mode::create_missing);
  ASSERT_TRUE(imported.ok()) << text(imported.error());
  auto a = node_a.snapshot();
  EXPECT_GT(a->version(), 0);
  ASSERT_NE(a->service("MTN_MOMO_CMR"), nullptr);  // visible on this node as soon as the call returns

  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (node_b.snapshot()->version() != a->version() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(node_b.snapshot()->version(), a->version());
  ASSERT_NE(node_b.snapshot()->service("MTN_MOMO_CMR"), nullptr);

  // A change bumps the version in the same unit; B follows. Snapshots already taken never change.
  auto held = node_b.snapshot();
  ASSERT_TRUE(node_a.set_active(Kind::service, "MTN_MOMO_CMR", false).ok());
  EXPECT_FALSE(node_a.snapshot()->service("MTN_MOMO_CMR")->active);
  deadline = std::chrono::steady_clock::now() + 5s;
  while (node_b.snapshot()->service("MTN_MOMO_CMR")->active && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(node_b.snapshot()->service("MTN_MOMO_CMR")->active);
  EXPECT_TRUE(held->service("MTN_MOMO_CMR")->active);

  // Without polling, a node only sees its own changes until refresh().
  Service node_c(second_node(), Options{60'000});
  std::int64_t c_version = node_c.snapshot()->version();
  ASSERT_TRUE(node_a.put(Kind::provider, obj(R"({"code":"FREE","name":"Free Money"})"), Mode::update).ok());
  EXPECT_EQ(node_c.snapshot()->version(), c_version);
  ASSERT_TRUE(node_c.refresh().ok());
  EXPECT_EQ(node_c.snapshot()->provider("FREE")->name, "Free Money");
  node_b.stop();
  node_b.stop();  // idempotent
}

TEST_P(CatalogStore, ServiceReportsChangeErrorsWithoutTouchingTheSnapshot) {
  Service svc(*db_, Options{});
  ASSERT_TRUE(svc.import(demo_document(), Mode::upsert).ok());
  auto before = svc.snapshot();
  auto r = svc.put(Kind::service, obj(R"({"code":"MTN_MOMO_CMR","kind":"satellite"})"), Mode::update);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(text(r.error()), R"({"kind":"must be mobile_money or wallet"})");
  EXPECT_EQ(svc.snapshot()->version(), before->version());
  EXPECT_EQ(svc.set_active(Kind::pricing_rule, "NOPE", false).error().kind, sika::ErrorKind::not_found);
}

INSTANTIATE_TEST_SUITE_P(Backends, CatalogStore, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace sika::catalog
