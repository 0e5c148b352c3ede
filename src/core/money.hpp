#pragma once
// Amounts are int64 minor units of an ISO 4217 currency; this is the one place that knows how
// many decimals a currency has and how an amount is written for people.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sika::money {

// Returns the number of decimals of the currency's minor unit (ISO 4217): 0 for XAF, XOF, GNF,
// RWF …, 3 for BHD, KWD, TND …, 2 for the others.
int exponent(std::string_view currency);

// Returns true iff `code` is three upper-case ASCII letters.
bool is_currency_code(std::string_view code);

// Writes a minor-unit amount for people: digits grouped by thousands with a narrow no-break
// space (U+202F), the currency's decimals after a point, then the code ("12 500 XAF",
// "10.50 USD"). `html` writes the space as "&#8239;" for pages.
std::string format(std::int64_t minor, std::string_view currency, bool html = false);

// Converts a decimal text ("1500", "10.5", "10.50") into minor units of the currency; nullopt
// when the text is not a plain non-negative decimal, has more decimals than the currency allows,
// or overflows.
std::optional<std::int64_t> parse_decimal(std::string_view text, std::string_view currency);

}  // namespace sika::money
