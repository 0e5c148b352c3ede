// The fee engine and the snapshot's lookups, without a database: exact decimal conversion,
// rounding, rule precedence (table cases and a brute-force reference on random catalogs), and the
// properties every percentage fee must have.
#include <gtest/gtest.h>

#include <regex>

#include <boost/json.hpp>

#include <algorithm>
#include <limits>
#include <random>

#include "catalog/fees.hpp"
#include "catalog/model.hpp"

namespace sika::catalog {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

std::string problem(const Error& e) { return boost::json::serialize(e.details); }

// ---- decimal conversion ------------------------------------------------------------------------

TEST(DecimalToScaled, ConvertsPercentagesExactly) {
  struct Case {
    const char* text;
    std::int64_t ppm;
  } cases[] = {
      {"1.5", 15000},    {"0.35", 3500},        {"2", 20000},      {"100", 1000000}, {"0", 0},
      {"0.0001", 1},     {"12.3456", 123456},   {"1.", 10000},     {".5", 5000},     {"+3", 30000},
      {"1e-2", 100},     {"1.5E0", 15000},      {"2.5e1", 250000}, {"3.5E-1", 3500}, {"0e999", 0},
      {"007.25", 72500}, {"99.99995", 1000000},
  };
  for (const auto& c : cases) {
    auto r = percent_to_ppm(std::string_view(c.text));
    ASSERT_TRUE(r.ok()) << c.text << ": " << problem(r.error());
    EXPECT_EQ(*r, c.ppm) << c.text;
  }
}

TEST(DecimalToScaled, RoundsHalfUpBeyondTheFourthDecimal) {
  EXPECT_EQ(*percent_to_ppm(std::string_view("0.00005")), 1);   // 0.5 ppm -> 1
  EXPECT_EQ(*percent_to_ppm(std::string_view("0.000049")), 0);  // 0.49 ppm -> 0
  EXPECT_EQ(*percent_to_ppm(std::string_view("1.23455")), 12346);
  EXPECT_EQ(*percent_to_ppm(std::string_view("1.234549999")), 12345);
  EXPECT_EQ(*percent_to_ppm(std::string_view("0.000000001")), 0);  // far below: zero padding, no rounding up
}

TEST(DecimalToScaled, RefusesMalformedNegativeAndTooLarge) {
  for (const char* bad :
       {"", "-1", "-0.5", "abc", ".", "1e", "1.2.3", "1,5", " 1", "1 ", "0x10", "1e99999", "nan", "inf", "1e+", "e5"}) {
    auto r = percent_to_ppm(std::string_view(bad));
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.error().kind, sika::ErrorKind::invalid) << bad;
      EXPECT_EQ(r.error().code, "empty_data") << bad;
    }
  }
  EXPECT_FALSE(percent_to_ppm(std::string_view("100.00005")).ok());  // rounds to 1000001 ppm
  EXPECT_FALSE(percent_to_ppm(std::string_view("101")).ok());
  EXPECT_FALSE(percent_to_ppm(std::string_view("1e400")).ok());
  EXPECT_FALSE(decimal_to_scaled("99999999999999999999", 0, false, kMax).ok());
  auto max = decimal_to_scaled("9223372036854775807", 0, false, kMax);
  ASSERT_TRUE(max.ok());
  EXPECT_EQ(*max, kMax);
  EXPECT_FALSE(decimal_to_scaled("9223372036854775808", 0, false, kMax).ok());
  EXPECT_FALSE(decimal_to_scaled("9223372036854775807.5", 0, true, kMax).ok());  // rounding would overflow
}

TEST(DecimalToScaled, ConvertsDoublesThroughTheirShortestDecimal) {
  EXPECT_EQ(*percent_to_ppm(0.35), 3500);  // 0.35 * 10000 is 3499.9999999999995 in binary
  EXPECT_EQ(*percent_to_ppm(1.1), 11000);
  EXPECT_EQ(*percent_to_ppm(0.1 + 0.2), 3000);  // 0.30000000000000004
  EXPECT_EQ(*percent_to_ppm(33.3333), 333333);
  EXPECT_EQ(*percent_to_ppm(100.0), 1000000);
  EXPECT_EQ(*percent_to_ppm(1e-5), 0);
  EXPECT_EQ(*percent_to_ppm(5e-5), 1);
  EXPECT_FALSE(percent_to_ppm(100.5).ok());
  EXPECT_FALSE(percent_to_ppm(-1.0).ok());
  EXPECT_FALSE(percent_to_ppm(std::numeric_limits<double>::quiet_NaN()).ok());
  EXPECT_FALSE(percent_to_ppm(std::numeric_limits<double>::infinity()).ok());
}

TEST(DecimalToScaled, FixedFeesAreWholeMinorUnits) {
  EXPECT_EQ(*fixed_to_units(std::string_view("150")), 150);
  EXPECT_EQ(*fixed_to_units(std::string_view("150.000")), 150);
  EXPECT_EQ(*fixed_to_units(std::string_view("1e3")), 1000);
  EXPECT_EQ(*fixed_to_units(150.0), 150);
  EXPECT_EQ(*fixed_to_units(0.0), 0);
  auto frac = fixed_to_units(std::string_view("10.5"));
  ASSERT_FALSE(frac.ok());
  EXPECT_EQ(problem(frac.error()), "\"must be a whole number of minor units\"");
  EXPECT_FALSE(fixed_to_units(10.5).ok());
  EXPECT_FALSE(fixed_to_units(-1.0).ok());
  EXPECT_FALSE(fixed_to_units(std::string_view("1000000000001")).ok());  // above kMaxFixedFee
}

// ---- percentage arithmetic ---------------------------------------------------------------------

TEST(PercentageFee, RoundsHalfUpToTheMinorUnit) {
  EXPECT_EQ(percentage_fee(1000, 15000), 15);  // 1.5 % of 1000
  EXPECT_EQ(percentage_fee(999, 15000), 15);   // 14.985
  EXPECT_EQ(percentage_fee(33, 15000), 0);     // 0.495
  EXPECT_EQ(percentage_fee(34, 15000), 1);     // 0.51
  EXPECT_EQ(percentage_fee(100, 5000), 1);     // exactly 0.5 -> 1
  EXPECT_EQ(percentage_fee(300, 5000), 2);     // 1.5 -> 2
  EXPECT_EQ(percentage_fee(0, 20000), 0);
  EXPECT_EQ(percentage_fee(12345, 0), 0);
  EXPECT_EQ(percentage_fee(12345, kMaxPpm), 12345);
  EXPECT_EQ(percentage_fee(kMax, kMaxPpm), kMax);                 // no overflow at the extremes
  EXPECT_EQ(percentage_fee(kMax, 999999), kMax - 9223372036855);  // kMax * (1 - 1e-6), rounded
  EXPECT_EQ(percentage_fee(kMax, 1), 9223372036855);              // 9223372036854.775807 -> ...855
}

// Exact reference without 128-bit products: amount = q * 10^6 + r.
std::int64_t reference_fee(std::int64_t amount, std::int64_t ppm) {
  std::int64_t q = amount / 1'000'000, r = amount % 1'000'000;
  return q * ppm + (r * ppm + 500'000) / 1'000'000;
}

TEST(PercentageFee, PropertiesHoldOnRandomAmountsAndRates) {
  std::mt19937_64 rng(20260422);
  std::uniform_int_distribution<std::int64_t> ppm_dist(0, kMaxPpm - 1);  // under 100 %
  for (int i = 0; i < 200000; ++i) {
    std::int64_t ppm = ppm_dist(rng);
    // Amounts over many magnitudes, up to the largest value whose fee cannot overflow.
    int digits = static_cast<int>(rng() % 19);
    std::int64_t scale = 1;
    for (int d = 0; d < digits; ++d) scale *= 10;
    std::int64_t a = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(scale)) + 1;
    std::int64_t b = a + static_cast<std::int64_t>(rng() % 1000);
    std::int64_t fa = percentage_fee(a, ppm), fb = percentage_fee(b, ppm);
    ASSERT_GE(fa, 0) << a << " " << ppm;
    ASSERT_LE(fa, a) << a << " " << ppm;                      // never more than the amount under 100 %
    ASSERT_LE(fa, fb) << a << " <= " << b << " at " << ppm;   // monotone in the amount
    ASSERT_EQ(fa, reference_fee(a, ppm)) << a << " " << ppm;  // exact, rounded half up
  }
}

// ---- catalog fixtures --------------------------------------------------------------------------

struct World {
  std::vector<Country> countries;
  std::vector<Provider> providers;
  std::vector<PaymentService> services;
  std::vector<PricingRule> rules;
  std::shared_ptr<const Catalog> build() const {
    return std::make_shared<const Catalog>(7, countries, providers, services, rules);
  }
};

Country country(std::int64_t id, std::string code, std::string dial, std::string currency, std::int64_t len,
                std::string pattern) {
  Country c;
  c.id = id;
  c.code = code;
  c.alpha2 = code.substr(0, 2);
  c.name_fr = code + "-fr";
  c.name_en = code + "-en";
  c.dialling_code = dial;
  c.currency = currency;
  c.msisdn_length = len;
  c.msisdn_pattern = pattern;
  return c;
}

PaymentService service(std::int64_t id, std::string code, std::int64_t country_id, std::string currency,
                       std::string pattern = "") {
  PaymentService s;
  s.id = id;
  s.code = code;
  s.name = code;
  s.provider_id = 1;
  s.country_id = country_id;
  s.currency = currency;
  s.msisdn_pattern = pattern;
  return s;
}

PricingRule rule(std::int64_t id, Operation op, std::int64_t tier, FeeType type, std::int64_t units,
                 std::optional<std::int64_t> in = std::nullopt, std::optional<std::int64_t> out = std::nullopt,
                 std::int64_t country_id = 1) {
  PricingRule r;
  r.id = id;
  r.code = "R" + std::to_string(id);
  r.country_id = country_id;
  r.operation = op;
  r.user_tier = tier;
  r.fee_type = type;
  r.fee_units = units;
  r.incoming_service_id = in;
  r.outgoing_service_id = out;
  return r;
}

constexpr std::int64_t kMtn = 11, kOrange = 12, kWallet = 13, kCivService = 21;

World base_world() {
  World w;
  w.countries = {country(1, "CMR", "+237", "XAF", 9, "6\\d{8}"), country(2, "CIV", "+225", "XOF", 10, "0[157]\\d{8}"),
                 country(3, "GAB", "+241", "XAF", 8, "[67]\\d{7}")};
  w.providers = {Provider{1, "OP", "Operator", "sandbox", true}};
  w.services = {service(kMtn, "MTN_MOMO_CMR", 1, "XAF", "6\\d{8}"), service(kOrange, "ORANGE_MONEY_CMR", 1, "XAF"),
                service(kWallet, "SIKA_WALLET_CMR", 1, "XAF"),
                service(kCivService, "ORANGE_MONEY_CIV", 2, "XOF", "07\\d{8}"),
                service(31, "AIRTEL_MONEY_GAB", 3, "XAF", "7[47]\\d{6}")};
  return w;
}

// Rules of base_world used by the precedence table (ids deliberately not in specificity order).
World precedence_world() {
  World w = base_world();
  const auto C = Operation::collection;
  w.rules = {
      rule(10, C, 1, FeeType::fixed, 500),                        // neither service
      rule(11, C, 1, FeeType::percentage, 20000, kMtn),           // incoming only
      rule(12, C, 1, FeeType::fixed, 50, std::nullopt, kWallet),  // outgoing only
      rule(13, C, 1, FeeType::percentage, 10000, kMtn, kWallet),  // both
      rule(9, C, 2, FeeType::percentage, 30000, kMtn),            // other tier
      rule(14, Operation::disbursement, 1, FeeType::fixed, 150),  // other operation
  };
  return w;
}

Result<FeeQuote> quote(const Catalog& c, std::optional<ServiceKey> in, std::optional<ServiceKey> out,
                       std::int64_t amount, std::int64_t tier = 1, Operation op = Operation::collection) {
  return quote_fee(c, op, in, out, amount, tier);
}

// ---- rule precedence ---------------------------------------------------------------------------

TEST(QuoteFee, PicksTheMostSpecificRule) {
  auto cat = precedence_world().build();
  struct Case {
    std::optional<ServiceKey> in, out;
    std::int64_t tier;
    Operation op;
    std::int64_t rule, fee;
  } cases[] = {
      {ServiceKey{"MTN_MOMO_CMR"}, ServiceKey{"SIKA_WALLET_CMR"}, 1, Operation::collection, 13, 100},   // both
      {ServiceKey{"MTN_MOMO_CMR"}, std::nullopt, 1, Operation::collection, 11, 200},                    // incoming
      {ServiceKey{"MTN_MOMO_CMR"}, ServiceKey{"ORANGE_MONEY_CMR"}, 1, Operation::collection, 11, 200},  // in beats none
      {ServiceKey{"ORANGE_MONEY_CMR"}, ServiceKey{"SIKA_WALLET_CMR"}, 1, Operation::collection, 12, 50},
      {std::nullopt, ServiceKey{"SIKA_WALLET_CMR"}, 1, Operation::collection, 12, 50},    // outgoing
      {ServiceKey{"ORANGE_MONEY_CMR"}, std::nullopt, 1, Operation::collection, 10, 500},  // fallback
      {ServiceKey{kMtn}, std::nullopt, 2, Operation::collection, 9, 300},                 // by id, tier 2
      {ServiceKey{"MTN_MOMO_CMR"}, std::nullopt, 1, Operation::disbursement, 14, 150},
  };
  for (const auto& c : cases) {
    auto q = quote_fee(*cat, c.op, c.in, c.out, 10000, c.tier);
    ASSERT_TRUE(q.ok()) << problem(q.error());
    EXPECT_EQ(q->rule_id, c.rule);
    EXPECT_EQ(q->fee, c.fee) << "rule " << c.rule;
    EXPECT_EQ(q->total, 10000 + c.fee);
    EXPECT_EQ(q->currency, "XAF");
    EXPECT_EQ(q->country, "CMR");
  }
}

TEST(QuoteFee, TierIsExactAndNoRuleIsARefusal) {
  auto cat = precedence_world().build();
  auto q = quote(*cat, ServiceKey{"MTN_MOMO_CMR"}, std::nullopt, 10000, 3);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.error().kind, sika::ErrorKind::invalid);
  EXPECT_EQ(q.error().code, "no_pricing_rule");
  const auto& d = q.error().details.as_object();
  EXPECT_EQ(d.at("operation"), "COLLECTION");
  EXPECT_EQ(d.at("user_tier"), 3);
  EXPECT_EQ(d.at("amount"), 10000);
  EXPECT_EQ(d.at("incoming_service"), "MTN_MOMO_CMR");
  EXPECT_TRUE(d.at("outgoing_service").is_null());
  // Tier 2 has only an MTN rule: Orange in tier 2 is refused, not priced with tier 1's fallback.
  EXPECT_EQ(quote(*cat, ServiceKey{"ORANGE_MONEY_CMR"}, std::nullopt, 10000, 2).error().code, "no_pricing_rule");
  // No rule in another country leaks over: CIV has none.
  EXPECT_EQ(quote(*cat, ServiceKey{"ORANGE_MONEY_CIV"}, std::nullopt, 10000).error().code, "no_pricing_rule");
}

TEST(QuoteFee, TiesGoToTheLowestIdWhateverTheOrder) {
  World w = base_world();
  w.rules = {rule(21, Operation::collection, 1, FeeType::fixed, 21, kMtn),
             rule(20, Operation::collection, 1, FeeType::fixed, 20, kMtn),
             rule(22, Operation::collection, 1, FeeType::fixed, 22, kMtn)};
  for (int i = 0; i < 6; ++i) {
    std::next_permutation(w.rules.begin(), w.rules.end(), [](auto& a, auto& b) { return a.id < b.id; });
    auto q = quote(*w.build(), ServiceKey{"MTN_MOMO_CMR"}, std::nullopt, 1000);
    ASSERT_TRUE(q.ok());
    EXPECT_EQ(q->rule_id, 20);
  }
}

TEST(QuoteFee, AmountBoundsAreInclusive) {
  World w = base_world();
  PricingRule banded = rule(5, Operation::collection, 1, FeeType::fixed, 111, kMtn);
  banded.min_amount = 100;
  banded.max_amount = 1000;
  w.rules = {banded, rule(6, Operation::collection, 1, FeeType::fixed, 999)};
  auto cat = w.build();
  auto rule_for = [&](std::int64_t amount) {
    return quote(*cat, ServiceKey{"MTN_MOMO_CMR"}, std::nullopt, amount)->rule_id;
  };
  EXPECT_EQ(rule_for(99), 6);
  EXPECT_EQ(rule_for(100), 5);
  EXPECT_EQ(rule_for(1000), 5);
  EXPECT_EQ(rule_for(1001), 6);
  EXPECT_TRUE(banded.covers(100));
  EXPECT_TRUE(banded.covers(1000));
  EXPECT_FALSE(banded.covers(1001));
}

TEST(QuoteFee, SkipsInactiveRulesAndRefusesUnusableServices) {
  World w = precedence_world();
  for (auto& r : w.rules)
    if (r.id == 13) r.active = false;
  auto cat = w.build();
  EXPECT_EQ(quote(*cat, ServiceKey{"MTN_MOMO_CMR"}, ServiceKey{"SIKA_WALLET_CMR"}, 10000)->rule_id, 11);

  World off = precedence_world();
  off.services[0].active = false;  // MTN
  auto q = quote(*off.build(), ServiceKey{"MTN_MOMO_CMR"}, std::nullopt, 10000);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(problem(q.error()), R"({"incoming_service":"service is not active"})");

  World closed = precedence_world();
  closed.providers[0].active = false;
  EXPECT_FALSE(quote(*closed.build(), ServiceKey{"MTN_MOMO_CMR"}, std::nullopt, 10000).ok());
  World gone = precedence_world();
  gone.countries[0].active = false;
  EXPECT_FALSE(quote(*gone.build(), ServiceKey{"MTN_MOMO_CMR"}, std::nullopt, 10000).ok());
}

TEST(QuoteFee, RefusesBadRequests) {
  auto cat = precedence_world().build();
  EXPECT_EQ(problem(quote(*cat, ServiceKey{"MTN_MOMO_CMR"}, std::nullopt, 0).error()),
            R"j({"amount":"must be a positive integer (minor units)"})j");
  EXPECT_FALSE(quote(*cat, ServiceKey{"MTN_MOMO_CMR"}, std::nullopt, -5).ok());
  EXPECT_EQ(problem(quote(*cat, std::nullopt, std::nullopt, 100).error()),
            R"({"incoming_service":"an incoming or an outgoing service is required"})");
  EXPECT_EQ(problem(quote(*cat, ServiceKey{"NOPE"}, std::nullopt, 100).error()),
            R"({"incoming_service":"unknown service"})");
  EXPECT_EQ(problem(quote(*cat, std::nullopt, ServiceKey{std::int64_t{999}}, 100).error()),
            R"({"outgoing_service":"unknown service"})");
  auto cross = quote(*cat, ServiceKey{"MTN_MOMO_CMR"}, ServiceKey{"ORANGE_MONEY_CIV"}, 100);
  ASSERT_FALSE(cross.ok());
  EXPECT_EQ(cross.error().code, "empty_data");
  EXPECT_TRUE(cross.error().details.as_object().contains("outgoing_service"));
}

TEST(QuoteFee, CarriesRewardsAndRuleDetails) {
  World w = base_world();
  PricingRule r = rule(3, Operation::collection, 1, FeeType::percentage, 17500, kOrange);
  r.reward_value = 0.25;
  r.sponsor_reward_value = 0.1;
  w.rules = {r};
  auto q = quote(*w.build(), ServiceKey{"ORANGE_MONEY_CMR"}, std::nullopt, 20001);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->rule_code, "R3");
  EXPECT_EQ(q->fee_type, FeeType::percentage);
  EXPECT_DOUBLE_EQ(q->fee_value, 1.75);
  EXPECT_EQ(q->fee_units, 17500);
  EXPECT_EQ(q->fee, 350);  // 350.0175
  EXPECT_EQ(q->reward_value, 0.25);
  EXPECT_EQ(q->sponsor_reward_value, 0.1);
  EXPECT_EQ(q->incoming_service_id, kOrange);
  EXPECT_EQ(q->incoming_service_code, "ORANGE_MONEY_CMR");
  EXPECT_EQ(q->outgoing_service_id, std::nullopt);
  EXPECT_EQ(q->outgoing_service_code, "");
}

TEST(QuoteFee, RefusesATotalThatWouldOverflow) {
  World w = base_world();
  w.rules = {rule(1, Operation::collection, 1, FeeType::fixed, 10, kMtn)};
  auto q = quote(*w.build(), ServiceKey{"MTN_MOMO_CMR"}, std::nullopt, kMax - 5);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.error().code, "empty_data");
}

// Brute-force reference for select_rule: sort all candidates by (specificity rank, id).
const PricingRule* reference_rule(const std::vector<PricingRule>& rules, std::int64_t country, Operation op,
                                  std::optional<std::int64_t> in, std::optional<std::int64_t> out, std::int64_t amount,
                                  std::int64_t tier) {
  std::vector<std::pair<std::pair<int, std::int64_t>, const PricingRule*>> candidates;
  for (const auto& r : rules) {
    if (r.country_id != country || !r.active || r.operation != op || r.user_tier != tier) continue;
    if (r.min_amount && amount < *r.min_amount) continue;
    if (r.max_amount && amount > *r.max_amount) continue;
    if (r.incoming_service_id && r.incoming_service_id != in) continue;
    if (r.outgoing_service_id && r.outgoing_service_id != out) continue;
    int rank = r.incoming_service_id && r.outgoing_service_id ? 0
               : r.incoming_service_id                        ? 1
               : r.outgoing_service_id                        ? 2
                                                              : 3;
    candidates.push_back({{rank, r.id}, &r});
  }
  if (candidates.empty()) return nullptr;
  return std::min_element(candidates.begin(), candidates.end())->second;
}

TEST(QuoteFee, MatchesABruteForceReferenceOnRandomCatalogs) {
  std::mt19937_64 rng(7);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); };
  const std::int64_t svc_ids[] = {kMtn, kOrange, kWallet};
  for (int world = 0; world < 300; ++world) {
    World w = base_world();
    std::vector<std::int64_t> ids(40);
    for (int i = 0; i < 40; ++i) ids[i] = i + 1;
    std::shuffle(ids.begin(), ids.end(), rng);
    for (int i = 0; i < 40; ++i) {
      PricingRule r = rule(ids[i], pick(2) ? Operation::collection : Operation::disbursement, 1 + pick(2),
                           pick(2) ? FeeType::fixed : FeeType::percentage, pick(50000));
      if (pick(2)) r.incoming_service_id = svc_ids[pick(3)];
      if (pick(2)) r.outgoing_service_id = svc_ids[pick(3)];
      if (pick(3) == 0) r.min_amount = pick(5000);
      if (pick(3) == 0) r.max_amount = 2000 + pick(8000);
      r.active = pick(6) != 0;
      w.rules.push_back(r);
    }
    auto cat = w.build();
    for (int probe = 0; probe < 40; ++probe) {
      std::optional<std::int64_t> in, out;
      if (pick(4)) in = svc_ids[pick(3)];
      if (pick(3) == 0 || !in) out = svc_ids[pick(3)];
      Operation op = pick(2) ? Operation::collection : Operation::disbursement;
      std::int64_t amount = 1 + pick(12000), tier = 1 + pick(2);
      const PricingRule* expected = reference_rule(w.rules, 1, op, in, out, amount, tier);
      const PricingRule* got = select_rule(*cat, 1, op, in, out, amount, tier);
      ASSERT_EQ(expected ? expected->id : -1, got ? got->id : -1) << "world " << world << " probe " << probe;
      auto q = quote_fee(*cat, op, in ? std::optional<ServiceKey>(*in) : std::nullopt,
                         out ? std::optional<ServiceKey>(*out) : std::nullopt, amount, tier);
      ASSERT_EQ(q.ok(), expected != nullptr);
      if (q.ok()) {
        ASSERT_EQ(q->fee, rule_fee(*expected, amount));
        ASSERT_GE(q->fee, 0);
      }
    }
  }
}

TEST(QuoteFee, FeeIsMonotoneWithinEachRule) {
  std::mt19937_64 rng(99);
  for (int i = 0; i < 2000; ++i) {
    PricingRule r = rule(1, Operation::collection, 1, i % 2 ? FeeType::fixed : FeeType::percentage,
                         static_cast<std::int64_t>(rng() % (i % 2 ? 100000 : kMaxPpm)));
    std::int64_t prev = -1;
    std::int64_t amount = 1 + static_cast<std::int64_t>(rng() % 1000);
    for (int step = 0; step < 200; ++step) {
      std::int64_t fee = rule_fee(r, amount);
      ASSERT_GE(fee, 0);
      ASSERT_GE(fee, prev);
      if (r.fee_type == FeeType::percentage) {
        ASSERT_LE(fee, amount);
      }
      prev = fee;
      amount += 1 + static_cast<std::int64_t>(rng() % 5000);
    }
  }
}

// ---- snapshot lookups and MSISDNs --------------------------------------------------------------

TEST(Catalog, IndexesByCodeAndId) {
  auto cat = precedence_world().build();
  EXPECT_EQ(cat->version(), 7);
  EXPECT_TRUE(cat->loaded());
  EXPECT_FALSE(Catalog().loaded());
  ASSERT_NE(cat->country("CIV"), nullptr);
  EXPECT_EQ(cat->country("CIV")->id, 2);
  EXPECT_EQ(cat->country("civ"), nullptr);
  EXPECT_EQ(cat->country_by_id(3)->code, "GAB");
  EXPECT_EQ(cat->service("ORANGE_MONEY_CMR")->id, kOrange);
  EXPECT_EQ(cat->service_by_id(kWallet)->code, "SIKA_WALLET_CMR");
  EXPECT_EQ(cat->provider("OP")->connector, "sandbox");
  EXPECT_EQ(cat->rule("R13")->id, 13);
  EXPECT_EQ(cat->rule_by_id(99), nullptr);
  ASSERT_EQ(cat->rules_of(1).size(), 6u);
  EXPECT_TRUE(
      std::is_sorted(cat->rules_of(1).begin(), cat->rules_of(1).end(), [](auto* a, auto* b) { return a->id < b->id; }));
  EXPECT_TRUE(cat->rules_of(2).empty());
  EXPECT_EQ(cat->country("CMR")->name(i18n::Locale::en), "CMR-en");
}

TEST(Catalog, NormalizesMsisdns) {
  auto cat = base_world().build();
  const PaymentService& mtn = *cat->service("MTN_MOMO_CMR");
  for (const char* ok : {"+237 6 90 00 00 01", "237690000001", "00237690000001", "690000001", "+237-690.00(00)01"})
    EXPECT_EQ(*cat->normalize_msisdn(mtn, ok), "237690000001") << ok;
  // Any 9-digit number starting with 6 is a Cameroonian mobile number here (sandbox numbers too).
  EXPECT_EQ(*cat->normalize_msisdn(mtn, "237650000000"), "237650000000");
  for (const char* bad : {"", "+", "590000001", "+225690000001", "2376900000012", "69000000", "6900000a1",
                          "++237690000001", "237 69000000"}) {
    auto r = cat->normalize_msisdn(mtn, bad, "customer_phone");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, "empty_data");
    EXPECT_TRUE(r.error().details.as_object().contains("customer_phone")) << bad;
  }
  // The service pattern narrows the country's; without one the country's applies.
  const PaymentService& civ = *cat->service("ORANGE_MONEY_CIV");
  EXPECT_EQ(*cat->normalize_msisdn(civ, "+225 07 01 02 03 04"), "2250701020304");
  EXPECT_EQ(*cat->normalize_msisdn(civ, "0701020304"), "2250701020304");
  EXPECT_FALSE(cat->normalize_msisdn(civ, "0501020304").ok());           // an MTN number
  const PaymentService& orange_cmr = *cat->service("ORANGE_MONEY_CMR");  // no pattern of its own
  EXPECT_TRUE(cat->normalize_msisdn(orange_cmr, "699999999").ok());
  EXPECT_FALSE(cat->normalize_msisdn(orange_cmr, "299999999").ok());
  // Gabon: 8 digits after +241; written nationally with a trunk 0.
  const PaymentService& airtel = *cat->service("AIRTEL_MONEY_GAB");
  EXPECT_EQ(*cat->normalize_msisdn(airtel, "+241 77 28 01 50"), "24177280150");
  EXPECT_EQ(*cat->normalize_msisdn(airtel, "077 28 01 50"), "24177280150");
  EXPECT_EQ(*cat->normalize_msisdn(airtel, "74280150"), "24174280150");
  EXPECT_FALSE(cat->normalize_msisdn(airtel, "66280150").ok());  // not Airtel
}

TEST(Catalog, FeeValueIsDerivedFromTheExactUnits) {
  PricingRule p = rule(1, Operation::collection, 1, FeeType::percentage, 3500);
  EXPECT_DOUBLE_EQ(p.fee_value(), 0.35);
  EXPECT_EQ(*percent_to_ppm(p.fee_value()), 3500);  // round trip
  PricingRule f = rule(2, Operation::collection, 1, FeeType::fixed, 150);
  EXPECT_DOUBLE_EQ(f.fee_value(), 150.0);
  EXPECT_EQ(to_string(Operation::disbursement), "DISBURSEMENT");
  EXPECT_EQ(parse_operation("COLLECTION"), Operation::collection);
  EXPECT_EQ(parse_operation("collection"), std::nullopt);
  EXPECT_EQ(parse_fee_type("PERCENTAGE"), FeeType::percentage);
  EXPECT_EQ(parse_service_kind("wallet"), ServiceKind::wallet);
  EXPECT_EQ(parse_service_kind("bank"), std::nullopt);
}

// Example numbers follow each country's pattern and length, so a page shows a number of its own
// country that the country's rules accept.
TEST(ExampleMsisdn, EachCountryGetsANumberOfItsOwnThatItsPatternAccepts) {
  const std::vector<Country> countries = {
      country(1, "CMR", "+237", "XAF", 9, "6\\d{8}"), country(2, "CIV", "+225", "XOF", 10, "0[157]\\d{8}"),
      country(3, "SEN", "+221", "XOF", 9, "7[05-8]\\d{7}"), country(4, "GAB", "+241", "XAF", 8, "[67]\\d{7}"),
      country(5, "XXX", "+999", "XAF", 6, "")};
  EXPECT_EQ(countries[0].example_msisdn(), "+237 612345678");
  EXPECT_EQ(countries[1].example_msisdn(), "+225 0112345678");
  EXPECT_EQ(countries[2].example_msisdn(), "+221 701234567");
  EXPECT_EQ(countries[3].example_msisdn(), "+241 61234567");
  EXPECT_EQ(countries[4].example_msisdn(), "+999 123456");
  for (const Country& c : countries) {
    if (c.msisdn_pattern.empty()) continue;
    const std::string example = c.example_msisdn();
    const std::string national = example.substr(example.find(' ') + 1);
    EXPECT_TRUE(std::regex_match(national, std::regex(c.msisdn_pattern))) << c.code << ": " << example;
    EXPECT_EQ(national.size(), static_cast<std::size_t>(c.msisdn_length)) << c.code;
  }
  const Catalog cat(1, countries, {}, {}, {});
  EXPECT_EQ(cat.country_for("XOF", {"CMR", "SEN"})->code, "SEN");
  EXPECT_EQ(cat.country_for("EUR", {"GAB", "CMR"})->code, "GAB") << "else the first known country";
  EXPECT_EQ(cat.country_for("XAF", {}), nullptr);
}

}  // namespace
}  // namespace sika::catalog
