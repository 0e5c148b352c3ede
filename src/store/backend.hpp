#pragma once
// Internal to sika_store: the two backends' entry points and the helpers they share.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "store/db.hpp"

namespace sika::store::detail {

// Opens the SQLite database at `path` (parent directories are created).
Result<std::unique_ptr<Db>> open_sqlite(const std::string& path, const DbOptions& options);
// Opens a PostgreSQL pool for a libpq connection URI (postgres:// or postgresql://).
Result<std::unique_ptr<Db>> open_postgres(const std::string& dsn, const DbOptions& options);

// The SQL with each `?` outside string literals, quoted identifiers, comments and
// dollar-quoted strings replaced by $1, $2, ... in order, and how many there were.
struct RewrittenSql {
  std::string sql;
  std::size_t placeholders = 0;
};
RewrittenSql rewrite_placeholders(std::string_view sql);

// Returns `message` with every occurrence of a bound text or number parameter (of two
// characters or more) replaced by "<param>", so a database error never echoes a value.
std::string redact_params(std::string message, const Params& params);

// The 409 conflict error for a violated unique, foreign-key or check constraint.
Error constraint_error(std::string_view constraint);
// A 500 internal_error (bug, bad SQL) or 503 service_unavailable (database unreachable,
// busy, full) whose details carry `message`; logged once here.
Error storage_error(bool unavailable, std::string_view message, std::string_view sql);
// The error for any call on a closed Db.
Error closed_error();
// The error for a statement run after another statement of the same unit failed.
Error aborted_error(std::string_view sql);

// Runs a read or write function; an exception becomes a logged 500 internal_error.
Status run_unit(const std::function<Status(Conn&)>& fn, Conn& conn);

// Parses a decimal 64-bit integer occupying the whole string.
std::optional<std::int64_t> parse_i64(std::string_view s);
// Parses a decimal floating-point number (also inf/infinity/nan) occupying the whole string.
std::optional<double> parse_f64(std::string_view s);
// The shortest decimal form that reads back as the same double.
std::string format_f64(double v);

}  // namespace sika::store::detail
