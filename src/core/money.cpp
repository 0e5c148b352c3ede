#include "core/money.hpp"

#include <algorithm>
#include <array>
#include <limits>

namespace sika::money {

int exponent(std::string_view currency) {
  // ISO 4217 currencies whose minor unit is not 2 decimals.
  static constexpr std::array<std::string_view, 17> kZero = {"BIF", "CLP", "DJF", "GNF", "ISK", "JPY",
                                                             "KMF", "KRW", "PYG", "RWF", "UGX", "UYI",
                                                             "VND", "VUV", "XAF", "XOF", "XPF"};
  static constexpr std::array<std::string_view, 7> kThree = {"BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"};
  if (std::find(kZero.begin(), kZero.end(), currency) != kZero.end()) return 0;
  if (std::find(kThree.begin(), kThree.end(), currency) != kThree.end()) return 3;
  return 2;
}

bool is_currency_code(std::string_view code) {
  return code.size() == 3 && std::all_of(code.begin(), code.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

std::string format(std::int64_t minor, std::string_view currency, bool html) {
  const int exp = exponent(currency);
  // The magnitude as unsigned so that INT64_MIN does not overflow.
  std::uint64_t magnitude = minor < 0 ? 0 - static_cast<std::uint64_t>(minor) : static_cast<std::uint64_t>(minor);
  std::string digits = std::to_string(magnitude);
  if (static_cast<int>(digits.size()) <= exp) digits.insert(0, static_cast<std::size_t>(exp) + 1 - digits.size(), '0');
  std::string whole = digits.substr(0, digits.size() - static_cast<std::size_t>(exp));
  std::string decimals = digits.substr(digits.size() - static_cast<std::size_t>(exp));
  const std::string_view space = html ? "&#8239;" : "\u202f";
  std::string out = minor < 0 ? "-" : "";
  for (std::size_t i = 0; i < whole.size(); ++i) {
    if (i > 0 && (whole.size() - i) % 3 == 0) out += space;
    out += whole[i];
  }
  if (exp > 0) out += "." + decimals;
  out += " ";
  out += currency;
  return out;
}

std::optional<std::int64_t> parse_decimal(std::string_view text, std::string_view currency) {
  const int exp = exponent(currency);
  if (text.empty()) return std::nullopt;
  std::size_t dot = text.find('.');
  std::string_view whole = text.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
  if (whole.empty() || (dot != std::string_view::npos && frac.empty())) return std::nullopt;
  auto all_digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!all_digits(whole) || !all_digits(frac)) return std::nullopt;
  // Trailing zeros beyond the currency's decimals change nothing ("1500.00" XAF is 1500).
  while (static_cast<int>(frac.size()) > exp && frac.back() == '0') frac.remove_suffix(1);
  if (static_cast<int>(frac.size()) > exp) return std::nullopt;
  std::int64_t value = 0;
  auto push = [&value](char c) {
    if (value > (std::numeric_limits<std::int64_t>::max() - (c - '0')) / 10) return false;
    value = value * 10 + (c - '0');
    return true;
  };
  for (char c : whole)
    if (!push(c)) return std::nullopt;
  for (int i = 0; i < exp; ++i)
    if (!push(i < static_cast<int>(frac.size()) ? frac[static_cast<std::size_t>(i)] : '0')) return std::nullopt;
  return value;
}

}  // namespace sika::money
