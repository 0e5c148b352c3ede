#include <charconv>
#include <cmath>
#include <limits>

#include "store/backend.hpp"
#include "store/db.hpp"

namespace sika::store {

namespace detail {

std::optional<std::int64_t> parse_i64(std::string_view s) {
  std::int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end || s.empty()) return std::nullopt;
  return v;
}

std::optional<double> parse_f64(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end || s.empty()) return std::nullopt;
  return v;
}

std::string format_f64(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, p);
}

}  // namespace detail

namespace {

// Converts a double to int64 by truncation, saturating at the ends of the range (NaN -> 0).
std::int64_t truncate_to_i64(double d) {
  if (std::isnan(d)) return 0;
  if (d >= 9223372036854775807.0) return std::numeric_limits<std::int64_t>::max();
  if (d <= -9223372036854775808.0) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(d);
}

std::int64_t text_to_i64(const std::string& s) {
  if (auto v = detail::parse_i64(s)) return *v;
  // PostgreSQL text forms: numeric ("12.00" from SUM/AVG) and boolean ("t"/"f").
  if (auto d = detail::parse_f64(s)) return truncate_to_i64(*d);
  if (s == "t" || s == "true") return 1;
  return 0;
}

double text_to_f64(const std::string& s) {
  if (auto d = detail::parse_f64(s)) return *d;
  if (s == "t" || s == "true") return 1;
  return 0;
}

const Value kNull = nullptr;

}  // namespace

// An index past the end reads as NULL, so a schema mismatch never crashes a request.
const Value& Row::cell(std::size_t i) const { return i < cells_.size() ? cells_[i] : kNull; }

bool Row::is_null(std::size_t i) const { return std::holds_alternative<std::nullptr_t>(cell(i)); }

std::int64_t Row::i64(std::size_t i) const {
  const Value& v = cell(i);
  if (auto p = std::get_if<std::int64_t>(&v)) return *p;
  if (auto p = std::get_if<double>(&v)) return truncate_to_i64(*p);
  if (auto p = std::get_if<std::string>(&v)) return text_to_i64(*p);
  return 0;
}

double Row::f64(std::size_t i) const {
  const Value& v = cell(i);
  if (auto p = std::get_if<double>(&v)) return *p;
  if (auto p = std::get_if<std::int64_t>(&v)) return static_cast<double>(*p);
  if (auto p = std::get_if<std::string>(&v)) return text_to_f64(*p);
  return 0;
}

std::string Row::str(std::size_t i) const {
  const Value& v = cell(i);
  if (auto p = std::get_if<std::string>(&v)) return *p;
  if (auto p = std::get_if<std::int64_t>(&v)) return std::to_string(*p);
  if (auto p = std::get_if<double>(&v)) return detail::format_f64(*p);
  return {};
}

std::optional<std::int64_t> Row::opt_i64(std::size_t i) const {
  if (is_null(i)) return std::nullopt;
  return i64(i);
}

std::optional<double> Row::opt_f64(std::size_t i) const {
  if (is_null(i)) return std::nullopt;
  return f64(i);
}

std::optional<std::string> Row::opt_str(std::size_t i) const {
  if (is_null(i)) return std::nullopt;
  return str(i);
}

Result<std::optional<Row>> Conn::query_one(std::string_view sql, const Params& params) {
  auto rows = query(sql, params);
  if (!rows) return rows.take_error();
  if (rows->empty()) return std::optional<Row>();
  return std::optional<Row>(std::move(rows->front()));
}

Result<std::optional<std::int64_t>> Conn::insert_id(std::string_view sql, const Params& params) {
  std::string returning;
  returning.reserve(sql.size() + 13);
  returning.append(sql).append(" RETURNING id");
  SIKA_ASSIGN_OR_RETURN(auto row, query_one(returning, params));
  if (!row) return std::optional<std::int64_t>();
  return std::optional<std::int64_t>(row->i64(0));
}

Status Conn::nested(const std::function<Status()>& fn) {
  if (auto r = exec("SAVEPOINT item"); !r) return r.take_error();
  Status st = fn();
  // RELEASE keeps what fn wrote in the unit; ROLLBACK TO undoes it (and, on PostgreSQL, clears
  // the failed state a statement error left), then RELEASE drops the savepoint itself.
  if (st) {
    if (auto r = exec("RELEASE SAVEPOINT item"); !r) return r.take_error();
    return st;
  }
  if (!failure_undone()) return st;  // e.g. a serialization failure: the whole unit runs again
  if (auto r = exec("ROLLBACK TO SAVEPOINT item"); !r) return r.take_error();
  if (auto r = exec("RELEASE SAVEPOINT item"); !r) return r.take_error();
  return st;
}

}  // namespace sika::store
