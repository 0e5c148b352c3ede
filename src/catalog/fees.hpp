#pragma once
// The fee engine: picks the one pricing rule that applies to an operation and computes its fee
// in exact integer arithmetic. Plain functions of a Catalog snapshot; no I/O.
//
// Rule selection (docs/catalog.md, "Fee engine"):
//   candidates: active rules of the services' country with the same operation, the exact user
//   tier, min_amount <= amount <= max_amount (both bounds inclusive, null = unbounded), and whose
//   incoming/outgoing service is either null (any) or the requested one;
//   precedence: both services named > incoming only > outgoing only > neither; then lowest id.
//   No candidate: the operation is refused (400 no_pricing_rule); a free route is configured
//   explicitly with a FIXED 0 rule.
// Fees: FIXED = fee_units minor units; PERCENTAGE = amount * ppm / 10^6 rounded half up.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "catalog/model.hpp"
#include "core/result.hpp"

namespace sika::catalog {

// Largest FIXED fee and PERCENTAGE (100 %) accepted in a rule.
inline constexpr std::int64_t kMaxFixedFee = 1'000'000'000'000;  // minor units
inline constexpr std::int64_t kPpmPerPercent = 10'000;
inline constexpr std::int64_t kMaxPpm = 100 * kPpmPerPercent;

// Converts a decimal number written in text ("1.5", "0.35", "2", "1e-2") to an integer scaled by
// 10^scale (scale 4 turns a percentage into parts per million). Digits beyond the scale are
// rounded half up when `round` is true and refused otherwise. Negative numbers, more than
// `max_scaled` after scaling, and malformed text are refused; the Error is 400 empty_data with a
// string detail (callers re-key it by field).
Result<std::int64_t> decimal_to_scaled(std::string_view text, int scale, bool round, std::int64_t max_scaled);

// A percentage given as text or as a JSON/double number -> ppm (nearest, half up), 0..kMaxPpm.
// A double goes through its shortest round-trip decimal form, so 0.35 gives exactly 3500.
Result<std::int64_t> percent_to_ppm(std::string_view text);
Result<std::int64_t> percent_to_ppm(double percent);
// A FIXED fee as text or number -> whole minor units, 0..kMaxFixedFee; fractions are refused.
Result<std::int64_t> fixed_to_units(std::string_view text);
Result<std::int64_t> fixed_to_units(double units);

// amount * ppm / 10^6 rounded half up, in 128-bit arithmetic. Requires amount >= 0 and
// 0 <= ppm <= kMaxPpm; the result is then in [0, amount].
std::int64_t percentage_fee(std::int64_t amount, std::int64_t ppm);

// The fee of `rule` for `amount` (>= 0): FIXED gives fee_units, PERCENTAGE percentage_fee.
std::int64_t rule_fee(const PricingRule& rule, std::int64_t amount);

// A service named by id or by code.
using ServiceKey = std::variant<std::int64_t, std::string>;

struct FeeQuote {
  std::int64_t rule_id = 0;
  std::string rule_code;
  Operation operation = Operation::collection;
  std::int64_t user_tier = 1;
  std::int64_t amount = 0;  // minor units, as requested
  std::int64_t fee = 0;     // minor units, >= 0
  std::int64_t total = 0;   // amount + fee (the caller decides who bears the fee)
  std::string currency;     // the services' currency
  std::string country;      // alpha-3 of the services' country
  FeeType fee_type = FeeType::fixed;
  double fee_value = 0;                             // as configured (for display)
  std::int64_t fee_units = 0;                       // minor units (FIXED) or ppm (PERCENTAGE)
  std::optional<double> reward_value;               // carried from the rule, not applied here
  std::optional<double> sponsor_reward_value;       // carried from the rule, not applied here
  std::optional<std::int64_t> incoming_service_id;  // as resolved from the request
  std::string incoming_service_code;                // "" when none
  std::optional<std::int64_t> outgoing_service_id;
  std::string outgoing_service_code;
};

// Picks the rule applying to this operation (see the header comment) and computes its fee.
// At least one service must be given; given services must exist, be usable (service, provider
// and country active) and share one country and currency; amount must be >= 1.
// Errors: 400 empty_data {incoming_service|outgoing_service|amount: problem};
//         400 no_pricing_rule {operation, user_tier, amount, incoming_service, outgoing_service}.
Result<FeeQuote> quote_fee(const Catalog& catalog, Operation operation, const std::optional<ServiceKey>& incoming,
                           const std::optional<ServiceKey>& outgoing, std::int64_t amount, std::int64_t user_tier);

// Returns the rule quote_fee would pick among the rules of `country_id`, or nullptr. Services are
// given by id (nullopt = none requested).
const PricingRule* select_rule(const Catalog& catalog, std::int64_t country_id, Operation operation,
                               std::optional<std::int64_t> incoming_id, std::optional<std::int64_t> outgoing_id,
                               std::int64_t amount, std::int64_t user_tier);

}  // namespace sika::catalog
