#pragma once
// Currency conversion (docs/checkout.md, "Currency conversion"): the operator's rate table and
// the exact arithmetic that converts amounts with it. A rate is a fraction of two positive
// integers, never a floating-point number: 1 unit of `base` is numerator/denominator units of
// `quote`, in major units (EUR -> XAF 655.957 is 655957/1000). A pair is directed: XAF -> XOF
// and XOF -> XAF are two rows the operator sets. Rows are only inserted; the rate in force for a
// pair is the one with the latest valid_from not after now, so the history stays readable.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "store/db.hpp"

namespace sika::catalog::fx {

// An exact positive fraction, reduced (gcd 1).
struct Ratio {
  std::int64_t numerator = 1;
  std::int64_t denominator = 1;
  friend bool operator==(const Ratio&, const Ratio&) = default;
};

// One row of fx_rates.
struct Rate {
  std::int64_t id = 0;
  std::string base, quote;  // ISO 4217 codes
  Ratio rate;
  std::int64_t valid_from = 0;  // epoch ms
  std::string set_by;           // who set it (an operator's name, "demo", ...)
  std::int64_t created_at = 0;
};

// Reads a rate written as a decimal ("655.957", at most 9 decimals) or a fraction
// ("1000/655957"); the result is reduced. nullopt when it is not a positive number that fits.
std::optional<Ratio> parse_ratio(std::string_view text);
// The rate as people read it: the exact decimal when the denominator is a power of ten
// ("655.957"), else "numerator/denominator".
std::string ratio_text(const Ratio& r);

// `amount` minor units of `from` in minor units of `to` at `rate` (from -> to), rounded up to
// the minor unit of `to`; nullopt on overflow. Rounding up means the payer never pays less than
// the converted amount, so the payee never gets less.
std::optional<std::int64_t> convert_up(std::int64_t amount, std::string_view from, std::string_view to,
                                       const Ratio& rate);
// `amount` minor units of `to` back into minor units of `from` at the same rate (from -> to),
// rounded down: what a converted amount is worth at most in the original currency.
std::optional<std::int64_t> convert_back_down(std::int64_t amount, std::string_view from, std::string_view to,
                                              const Ratio& rate);

// --- storage (fx_rates); each runs inside the caller's read or write unit ---
Result<std::int64_t> insert(store::Conn& c, const Rate& r);
// The rate of base -> quote in force at `at` (epoch ms), if any.
Result<std::optional<Rate>> in_force(store::Conn& c, std::string_view base, std::string_view quote, std::int64_t at);
// Every pair's rate in force at `at`, ordered by base and quote.
Result<std::vector<Rate>> all_in_force(store::Conn& c, std::int64_t at);
// Every row of a pair (or of every pair when base is empty), the newest first, at most `limit`.
Result<std::vector<Rate>> history(store::Conn& c, std::string_view base, std::string_view quote, std::int64_t limit);

// --- the service the admin CLI and the dashboard call ---
// What an operator sets.
struct NewRate {
  std::string base, quote;
  std::string rate;                        // text for parse_ratio
  std::optional<std::int64_t> valid_from;  // epoch ms; now when absent
  std::string set_by;
};
// Checks and records a rate: 400 empty_data naming `base`, `quote`, `rate`, `set_by` or
// `valid_from` when one is wrong (same currency on both sides, a zero rate, ...).
Result<Rate> set_rate(store::Db& db, const NewRate& request, std::int64_t now);
// The rates in force at `now`, one per pair.
Result<std::vector<Rate>> list_rates(store::Db& db, std::int64_t now);

}  // namespace sika::catalog::fx
