#include "catalog/fees.hpp"

#include <boost/json.hpp>

#include <charconv>
#include <limits>

#include "core/reason.hpp"

namespace sika::catalog {

namespace bj = boost::json;

namespace {
Error decimal_error(Problem problem) { return field_error("", std::move(problem)); }

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Parses at most 19 decimal digits; false when the value does not fit an int64.
bool digits_to_int(std::string_view digits, std::int64_t& out) {
  if (digits.empty()) {
    out = 0;
    return true;
  }
  if (digits.size() > 19) return false;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
  return ec == std::errc() && p == digits.data() + digits.size();
}

std::string shortest(double v) {
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  if (ec != std::errc()) return "nan";
  return std::string(buf, p);
}
}  // namespace

Result<std::int64_t> decimal_to_scaled(std::string_view text, int scale, bool round, std::int64_t max_scaled) {
  std::size_t i = 0;
  if (i < text.size() && text[i] == '+') ++i;
  if (i < text.size() && text[i] == '-') return decimal_error(Reason::not_negative);
  std::string mantissa;
  int fraction_digits = 0;
  bool any_digit = false;
  while (i < text.size() && is_digit(text[i])) {
    mantissa.push_back(text[i++]);
    any_digit = true;
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && is_digit(text[i])) {
      mantissa.push_back(text[i++]);
      ++fraction_digits;
      any_digit = true;
    }
  }
  if (!any_digit) return decimal_error(Reason::decimal_number);
  long exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool negative = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
    std::size_t start = i;
    while (i < text.size() && is_digit(text[i])) {
      if (i - start >= 4) return decimal_error(Reason::exponent_range);
      exponent = exponent * 10 + (text[i++] - '0');
    }
    if (i == start) return decimal_error(Reason::decimal_number);
    if (negative) exponent = -exponent;
  }
  if (i != text.size()) return decimal_error(Reason::decimal_number);
  if (fraction_digits > 1000) return decimal_error(Reason::too_many_digits);

  // value = mantissa * 10^shift after scaling.
  std::size_t first = mantissa.find_first_not_of('0');
  mantissa = first == std::string::npos ? std::string() : mantissa.substr(first);
  long shift = exponent - fraction_digits + scale;
  std::int64_t result = 0;
  if (mantissa.empty()) return std::int64_t{0};
  if (shift >= 0) {
    if (static_cast<long>(mantissa.size()) + shift > 19) return decimal_error(Reason::too_large);
    mantissa.append(static_cast<std::size_t>(shift), '0');
    if (!digits_to_int(mantissa, result)) return decimal_error(Reason::too_large);
  } else {
    auto dropped = static_cast<std::size_t>(-shift);
    std::string kept = mantissa.size() > dropped ? mantissa.substr(0, mantissa.size() - dropped) : std::string();
    std::string_view tail = std::string_view(mantissa).substr(kept.size());  // the dropped digits (no padding)
    bool exact = tail.find_first_not_of('0') == std::string_view::npos;
    if (!exact && !round) return decimal_error(reason::with(Reason::more_decimals, "max", std::to_string(scale)));
    if (!digits_to_int(kept, result)) return decimal_error(Reason::too_large);
    // The first dropped digit is tail[0] only when no zero padding sits in front of it.
    bool half_up = mantissa.size() >= dropped && !tail.empty() && tail.front() >= '5';
    if (round && half_up) {
      if (result == std::numeric_limits<std::int64_t>::max()) return decimal_error(Reason::too_large);
      ++result;
    }
  }
  if (result > max_scaled) return decimal_error(Reason::too_large);
  return result;
}

Result<std::int64_t> percent_to_ppm(std::string_view text) {
  auto r = decimal_to_scaled(text, 4, true, kMaxPpm);
  if (!r && r.error().has(Reason::too_large)) return decimal_error(Reason::percentage);
  return r;
}

Result<std::int64_t> percent_to_ppm(double percent) {
  if (!(percent >= 0) || percent > 100) return decimal_error(Reason::percentage);
  return percent_to_ppm(shortest(percent));
}

Result<std::int64_t> fixed_to_units(std::string_view text) {
  auto r = decimal_to_scaled(text, 0, false, kMaxFixedFee);
  if (!r && r.error().has(Reason::more_decimals)) return decimal_error(Reason::whole_minor_units);
  return r;
}

Result<std::int64_t> fixed_to_units(double units) {
  if (!(units >= 0)) return decimal_error(Reason::not_negative);
  if (units > static_cast<double>(kMaxFixedFee)) return decimal_error(Reason::too_large);
  return fixed_to_units(shortest(units));
}

// 128-bit integers (a GCC/Clang extension): amount * ppm needs up to 83 bits.
__extension__ typedef __int128 Int128;

std::int64_t percentage_fee(std::int64_t amount, std::int64_t ppm) {
  constexpr Int128 kMillion = 1'000'000;
  Int128 product = static_cast<Int128>(amount) * ppm;
  return static_cast<std::int64_t>((product + kMillion / 2) / kMillion);
}

std::int64_t rule_fee(const PricingRule& rule, std::int64_t amount) {
  return rule.fee_type == FeeType::fixed ? rule.fee_units : percentage_fee(amount, rule.fee_units);
}

const PricingRule* select_rule(const Catalog& catalog, std::int64_t country_id, Operation operation,
                               std::optional<std::int64_t> incoming_id, std::optional<std::int64_t> outgoing_id,
                               std::int64_t amount, std::int64_t user_tier) {
  const PricingRule* best = nullptr;
  int best_rank = 4;
  for (const PricingRule* rule : catalog.rules_of(country_id)) {  // ascending id
    if (!rule->active || rule->operation != operation || rule->user_tier != user_tier || !rule->covers(amount))
      continue;
    if (rule->incoming_service_id && rule->incoming_service_id != incoming_id) continue;
    if (rule->outgoing_service_id && rule->outgoing_service_id != outgoing_id) continue;
    // 0: both services named, 1: incoming only, 2: outgoing only, 3: neither.
    int rank = rule->incoming_service_id ? (rule->outgoing_service_id ? 0 : 1) : (rule->outgoing_service_id ? 2 : 3);
    if (rank < best_rank) {  // strict: among equals the first (lowest id) stays
      best = rule;
      best_rank = rank;
    }
  }
  return best;
}

namespace {
Result<const PaymentService*> resolve(const Catalog& catalog, const std::optional<ServiceKey>& key,
                                      std::string_view field) {
  if (!key) return static_cast<const PaymentService*>(nullptr);
  const PaymentService* s = std::holds_alternative<std::int64_t>(*key)
                                ? catalog.service_by_id(std::get<std::int64_t>(*key))
                                : catalog.service(std::get<std::string>(*key));
  if (!s) return field_error(std::string(field), Reason::unknown_service_key);
  if (!catalog.usable(*s)) return field_error(std::string(field), Reason::service_inactive);
  return s;
}
}  // namespace

Result<FeeQuote> quote_fee(const Catalog& catalog, Operation operation, const std::optional<ServiceKey>& incoming,
                           const std::optional<ServiceKey>& outgoing, std::int64_t amount, std::int64_t user_tier) {
  if (amount < 1) return field_error("amount", Reason::positive_minor_units);
  if (!incoming && !outgoing) return field_error("incoming_service", Reason::service_needed);
  SIKA_ASSIGN_OR_RETURN(const PaymentService* in, resolve(catalog, incoming, "incoming_service"));
  SIKA_ASSIGN_OR_RETURN(const PaymentService* out, resolve(catalog, outgoing, "outgoing_service"));
  if (in && out && (in->country_id != out->country_id || in->currency != out->currency))
    return field_error("outgoing_service", Reason::same_country_currency);
  const PaymentService* any = in ? in : out;
  const Country* country = catalog.country_by_id(any->country_id);

  std::optional<std::int64_t> in_id, out_id;
  if (in) in_id = in->id;
  if (out) out_id = out->id;
  const PricingRule* rule = select_rule(catalog, any->country_id, operation, in_id, out_id, amount, user_tier);
  if (!rule) {
    bj::object d;
    d["operation"] = to_string(operation);
    d["user_tier"] = user_tier;
    d["amount"] = amount;
    d["incoming_service"] = in ? bj::value(in->code) : bj::value(nullptr);
    d["outgoing_service"] = out ? bj::value(out->code) : bj::value(nullptr);
    return bad_request("no_pricing_rule", std::move(d));
  }
  FeeQuote q;
  q.rule_id = rule->id;
  q.rule_code = rule->code;
  q.operation = operation;
  q.user_tier = user_tier;
  q.amount = amount;
  q.fee = rule_fee(*rule, amount);
  if (q.fee > std::numeric_limits<std::int64_t>::max() - amount) return field_error("amount", Reason::too_large);
  q.total = amount + q.fee;
  q.currency = any->currency;
  q.country = country ? country->code : std::string();
  q.fee_type = rule->fee_type;
  q.fee_value = rule->fee_value();
  q.fee_units = rule->fee_units;
  q.reward_value = rule->reward_value;
  q.sponsor_reward_value = rule->sponsor_reward_value;
  if (in) {
    q.incoming_service_id = in->id;
    q.incoming_service_code = in->code;
  }
  if (out) {
    q.outgoing_service_id = out->id;
    q.outgoing_service_code = out->code;
  }
  return q;
}

}  // namespace sika::catalog
