#include "catalog/fx.hpp"

#include <boost/json.hpp>

#include <limits>
#include <numeric>

#include "core/json.hpp"
#include "core/money.hpp"
#include "core/reason.hpp"
#include "store/read.hpp"

namespace sika::catalog::fx {

namespace bj = boost::json;

namespace {

__extension__ using Int128 = __int128;

// Bounds of a rate's numerator and denominator: with amounts below 2^63 and at most three
// decimals on each side, every product the conversions form stays inside 128 bits.
constexpr std::int64_t kMaxTerm = 1'000'000'000'000'000;  // 10^15
constexpr int kMaxDecimals = 9;

Int128 pow10(int e) {
  Int128 p = 1;
  for (int i = 0; i < e; ++i) p *= 10;
  return p;
}

std::optional<Ratio> reduced(std::int64_t n, std::int64_t d) {
  if (n <= 0 || d <= 0) return std::nullopt;
  const std::int64_t g = std::gcd(n, d);
  n /= g;
  d /= g;
  if (n > kMaxTerm || d > kMaxTerm) return std::nullopt;
  return Ratio{n, d};
}

// A plain non-negative decimal into digits / 10^decimals; nullopt when malformed or too long.
std::optional<Ratio> decimal(std::string_view text) {
  if (text.empty() || text.size() > 30) return std::nullopt;
  std::int64_t digits = 0, scale = 1;
  bool point = false, any = false;
  int decimals = 0;
  for (char ch : text) {
    if (ch == '.') {
      if (point) return std::nullopt;
      point = true;
      continue;
    }
    if (ch < '0' || ch > '9') return std::nullopt;
    any = true;
    if (digits > kMaxTerm) return std::nullopt;
    digits = digits * 10 + (ch - '0');
    if (point) {
      if (++decimals > kMaxDecimals) return std::nullopt;
      scale *= 10;
    }
  }
  if (!any || text.back() == '.' || text.front() == '.') return std::nullopt;
  return reduced(digits, scale);
}

Rate from_row(const store::Row& r) {
  return Rate{r.i64(0), r.str(1), r.str(2), Ratio{r.i64(3), r.i64(4)}, r.i64(5), r.str(6), r.i64(7)};
}

constexpr std::string_view kSelect =
    "SELECT id, base, quote, numerator, denominator, valid_from, set_by, created_at FROM fx_rates r ";
// The row in force for its pair at the bound time: no later row of the pair that is also in force.
constexpr std::string_view kInForce =
    "r.valid_from <= ? AND NOT EXISTS (SELECT 1 FROM fx_rates n WHERE n.base = r.base AND n.quote = r.quote "
    "AND n.valid_from <= ? AND (n.valid_from > r.valid_from OR (n.valid_from = r.valid_from AND n.id > r.id))) ";

}  // namespace

std::optional<Ratio> parse_ratio(std::string_view text) {
  const std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) return decimal(text);
  auto n = decimal(text.substr(0, slash));
  auto d = decimal(text.substr(slash + 1));
  if (!n || !d) return std::nullopt;
  // (a/b) / (c/d) = (a*d) / (b*c), checked before it is reduced.
  const Int128 num = Int128(n->numerator) * d->denominator;
  const Int128 den = Int128(n->denominator) * d->numerator;
  Int128 a = num, b = den;
  while (b != 0) {
    Int128 t = a % b;
    a = b;
    b = t;
  }
  const Int128 rn = num / a, rd = den / a;
  if (rn > kMaxTerm || rd > kMaxTerm) return std::nullopt;
  return reduced(static_cast<std::int64_t>(rn), static_cast<std::int64_t>(rd));
}

std::string ratio_text(const Ratio& r) {
  // A denominator whose only prime factors are 2 and 5 divides a power of ten: the ratio is then
  // an exact decimal (655957/1000 is 655.957, and 1525/2, which 762.5 reduces to, is 762.5).
  std::int64_t d = r.denominator;
  int twos = 0, fives = 0;
  while (d > 0 && d % 2 == 0) d /= 2, ++twos;
  while (d > 0 && d % 5 == 0) d /= 5, ++fives;
  const int decimals = std::max(twos, fives);
  if (d != 1 || decimals > 18) return std::to_string(r.numerator) + "/" + std::to_string(r.denominator);
  std::int64_t scale = 1;
  for (int i = 0; i < decimals; ++i) scale *= 10;
  std::string whole = std::to_string(r.numerator / r.denominator);
  if (decimals == 0) return whole;
  // remainder * (scale / denominator) < scale <= 10^18: no overflow.
  std::string frac = std::to_string((r.numerator % r.denominator) * (scale / r.denominator));
  frac.insert(0, static_cast<std::size_t>(decimals) - frac.size(), '0');
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  return frac.empty() ? whole : whole + "." + frac;
}

std::optional<std::int64_t> convert_up(std::int64_t amount, std::string_view from, std::string_view to,
                                       const Ratio& rate) {
  if (amount < 0 || rate.numerator <= 0 || rate.denominator <= 0) return std::nullopt;
  const Int128 num = Int128(amount) * rate.numerator * pow10(money::exponent(to));
  const Int128 den = Int128(rate.denominator) * pow10(money::exponent(from));
  const Int128 out = (num + den - 1) / den;
  if (out > std::numeric_limits<std::int64_t>::max()) return std::nullopt;
  return static_cast<std::int64_t>(out);
}

std::optional<std::int64_t> convert_back_down(std::int64_t amount, std::string_view from, std::string_view to,
                                              const Ratio& rate) {
  if (amount < 0 || rate.numerator <= 0 || rate.denominator <= 0) return std::nullopt;
  const Int128 num = Int128(amount) * rate.denominator * pow10(money::exponent(from));
  const Int128 den = Int128(rate.numerator) * pow10(money::exponent(to));
  const Int128 out = num / den;
  if (out > std::numeric_limits<std::int64_t>::max()) return std::nullopt;
  return static_cast<std::int64_t>(out);
}

Result<std::int64_t> insert(store::Conn& c, const Rate& r) {
  SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("INSERT INTO fx_rates (base, quote, numerator, denominator, valid_from, "
                                              "set_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                                              {r.base, r.quote, r.rate.numerator, r.rate.denominator, r.valid_from,
                                               r.set_by, r.created_at}));
  if (!row) return internal_error(bj::string("fx rate insert returned no id"));
  return row->i64(0);
}

Result<std::optional<Rate>> in_force(store::Conn& c, std::string_view base, std::string_view quote, std::int64_t at) {
  return store::read_one(c, std::string(kSelect) + "WHERE r.base = ? AND r.quote = ? AND " + std::string(kInForce),
                         {std::string(base), std::string(quote), at, at}, from_row);
}

Result<std::vector<Rate>> all_in_force(store::Conn& c, std::int64_t at) {
  return store::read_all(c, std::string(kSelect) + "WHERE " + std::string(kInForce) + "ORDER BY r.base, r.quote",
                         {at, at}, from_row);
}

Result<std::vector<Rate>> history(store::Conn& c, std::string_view base, std::string_view quote, std::int64_t limit) {
  if (base.empty())
    return store::read_all(c, std::string(kSelect) + "ORDER BY r.valid_from DESC, r.id DESC LIMIT ?", {limit},
                           from_row);
  return store::read_all(c,
                         std::string(kSelect) +
                             "WHERE r.base = ? AND r.quote = ? ORDER BY r.valid_from DESC, r.id DESC "
                             "LIMIT ?",
                         {std::string(base), std::string(quote), limit}, from_row);
}

Result<Rate> set_rate(store::Db& db, const NewRate& request, std::int64_t now) {
  json::FieldErrors errors;
  for (auto [key, code] : {std::pair{"base", &request.base}, std::pair{"quote", &request.quote}})
    if (!money::is_currency_code(*code)) errors.add(key, Reason::currency_iso_upper);
  if (errors.empty() && request.base == request.quote)
    errors.add("quote", Problem(Reason::differ_from, {{"other", "base"}}));
  auto ratio = parse_ratio(request.rate);
  if (!ratio) errors.add("rate", Reason::fx_rate_shape);
  if (request.set_by.empty() || request.set_by.size() > 100) errors.add("set_by", Reason::rate_setter);
  if (request.valid_from && *request.valid_from < 0) errors.add("valid_from", Reason::a_time);
  SIKA_TRY(errors.status());
  Rate r{0, request.base, request.quote, *ratio, request.valid_from.value_or(now), request.set_by, now};
  SIKA_TRY(db.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(r.id, insert(c, r));
    return {};
  }));
  return r;
}

Result<std::vector<Rate>> list_rates(store::Db& db, std::int64_t now) {
  std::vector<Rate> out;
  SIKA_TRY(db.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(out, all_in_force(c, now));
    return {};
  }));
  return out;
}

}  // namespace sika::catalog::fx
