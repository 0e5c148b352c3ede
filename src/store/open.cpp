#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>

#include "store/backend.hpp"
#include "store/db.hpp"

namespace sika::store {

namespace detail {

namespace {

bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}

// Returns the length of a dollar-quote tag ("$$" or "$tag$") starting at sql[i], or 0.
std::size_t dollar_tag_length(std::string_view sql, std::size_t i) {
  if (i > 0 && is_ident_char(sql[i - 1])) return 0;  // part of an identifier such as a$b
  std::size_t j = i + 1;
  if (j < sql.size() && std::isdigit(static_cast<unsigned char>(sql[j])) != 0) return 0;  // $1
  while (j < sql.size() && is_ident_char(sql[j]) && sql[j] != '$') ++j;
  if (j < sql.size() && sql[j] == '$') return j - i + 1;
  return 0;
}

// The end of the string literal opening at sql[i] (just past its closing quote; sql.size() when
// unterminated). E'...' strings take backslash escapes; standard strings only double the quote.
std::size_t string_literal_end(std::string_view sql, std::size_t i) {
  const std::size_t n = sql.size();
  bool escapes = i > 0 && (sql[i - 1] == 'E' || sql[i - 1] == 'e') && (i < 2 || !is_ident_char(sql[i - 2]));
  std::size_t j = i + 1;
  while (j < n) {
    if (escapes && sql[j] == '\\') {
      j += 2;
    } else if (sql[j] == '\'') {
      if (j + 1 < n && sql[j + 1] == '\'') {
        j += 2;
      } else {
        ++j;
        break;
      }
    } else {
      ++j;
    }
  }
  return std::min(j, n);
}

// The end of the quoted identifier opening at sql[i] (a doubled quote stays inside it).
std::size_t quoted_identifier_end(std::string_view sql, std::size_t i) {
  const std::size_t n = sql.size();
  std::size_t j = i + 1;
  while (j < n) {
    if (sql[j] == '"') {
      if (j + 1 < n && sql[j + 1] == '"') {
        j += 2;
        continue;
      }
      ++j;
      break;
    }
    ++j;
  }
  return std::min(j, n);
}

// The end of the block comment opening at sql[i]; PostgreSQL block comments nest.
std::size_t block_comment_end(std::string_view sql, std::size_t i) {
  const std::size_t n = sql.size();
  std::size_t j = i + 2;
  int depth = 1;
  while (j < n && depth > 0) {
    if (sql[j] == '/' && j + 1 < n && sql[j + 1] == '*') {
      ++depth;
      j += 2;
    } else if (sql[j] == '*' && j + 1 < n && sql[j + 1] == '/') {
      --depth;
      j += 2;
    } else {
      ++j;
    }
  }
  return std::min(j, n);
}

}  // namespace

RewrittenSql rewrite_placeholders(std::string_view sql) {
  RewrittenSql out;
  out.sql.reserve(sql.size() + 16);
  std::size_t i = 0;
  const std::size_t n = sql.size();
  auto copy_until = [&](std::size_t end) {
    out.sql.append(sql.substr(i, end - i));
    i = end;
  };
  while (i < n) {
    char c = sql[i];
    if (c == '?') {
      out.sql += '$';
      out.sql += std::to_string(++out.placeholders);
      ++i;
    } else if (c == '\'') {
      copy_until(string_literal_end(sql, i));
    } else if (c == '"') {
      copy_until(quoted_identifier_end(sql, i));
    } else if (c == '-' && i + 1 < n && sql[i + 1] == '-') {
      std::size_t j = sql.find('\n', i);
      copy_until(j == std::string_view::npos ? n : j);
    } else if (c == '/' && i + 1 < n && sql[i + 1] == '*') {
      copy_until(block_comment_end(sql, i));
    } else if (c == '$') {
      std::size_t tag = dollar_tag_length(sql, i);
      if (tag == 0) {
        out.sql += c;
        ++i;
        continue;
      }
      std::string_view delimiter = sql.substr(i, tag);
      std::size_t close = sql.find(delimiter, i + tag);
      copy_until(close == std::string_view::npos ? n : close + tag);
    } else {
      out.sql += c;
      ++i;
    }
  }
  return out;
}

std::string redact_params(std::string message, const Params& params) {
  std::vector<std::string> values;
  for (const Value& v : params) {
    if (auto s = std::get_if<std::string>(&v)) {
      values.push_back(*s);
    } else if (auto i = std::get_if<std::int64_t>(&v)) {
      values.push_back(std::to_string(*i));
    } else if (auto d = std::get_if<double>(&v)) {
      values.push_back(format_f64(*d));
    }
  }
  // Longest first, so a value containing another is replaced whole.
  std::sort(values.begin(), values.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  static constexpr std::string_view kMask = "<param>";
  for (const std::string& v : values) {
    if (v.size() < 2) continue;
    for (std::size_t pos = message.find(v); pos != std::string::npos; pos = message.find(v, pos + kMask.size()))
      message.replace(pos, v.size(), kMask);
  }
  return message;
}

Error constraint_error(std::string_view constraint) {
  boost::json::object details;
  details["constraint"] = constraint;
  return conflict(std::move(details));
}

Error storage_error(bool unavailable, std::string_view message, std::string_view sql) {
  constexpr std::size_t kSqlLogLimit = 200;
  std::string_view shown = sql.substr(0, std::min(sql.size(), kSqlLogLimit));
  if (unavailable) {
    spdlog::warn("storage unavailable: {} (sql: {})", message, shown);
    return sika::unavailable(boost::json::string(message));
  }
  spdlog::error("storage error: {} (sql: {})", message, shown);
  return internal_error(boost::json::string(message));
}

Error closed_error() { return sika::unavailable(boost::json::string("database is closed")); }

Error aborted_error(std::string_view sql) {
  return storage_error(false, "statement after a failed statement in the same unit (the transaction is aborted)", sql);
}

Status run_unit(const std::function<Status(Conn&)>& fn, Conn& conn) {
  try {
    return fn(conn);
  } catch (const std::exception& e) {
    spdlog::error("storage unit threw: {}", e.what());
  } catch (...) {
    spdlog::error("storage unit threw a non-standard exception");
  }
  return internal_error(boost::json::string("unexpected exception in a storage unit"));
}

}  // namespace detail

Result<std::unique_ptr<Db>> open(std::string_view dsn, const DbOptions& options) {
  if (options.pool_size < 0 || options.max_batch < 1 || options.busy_timeout_ms < 0 || options.retry_deadline_ms < 0 ||
      options.pg_writers < 0)
    return internal_error(
        boost::json::string("invalid database options: max_batch must be >= 1, pool_size, pg_writers, "
                            "busy_timeout_ms and retry_deadline_ms >= 0"));
  constexpr std::string_view kSqlite = "sqlite://";
  if (dsn.starts_with(kSqlite)) {
    std::string path(dsn.substr(kSqlite.size()));
    if (path.empty()) return internal_error(boost::json::string("invalid database DSN: sqlite:// needs a file path"));
    if (path == ":memory:" || path.starts_with("file:"))
      return internal_error(
          boost::json::string("invalid database DSN: sqlite:// needs a plain file path "
                              "(readers and the writer share it through WAL)"));
    return detail::open_sqlite(path, options);
  }
  if (dsn.starts_with("postgres://") || dsn.starts_with("postgresql://"))
    return detail::open_postgres(std::string(dsn), options);
  // Never echo the DSN itself: it may carry a password.
  std::size_t scheme_end = dsn.find("://");
  std::string scheme = scheme_end == std::string_view::npos || scheme_end > 20 ? std::string("(none)")
                                                                               : std::string(dsn.substr(0, scheme_end));
  return internal_error(boost::json::string("unsupported database DSN scheme " + scheme +
                                            ": expected sqlite://PATH, postgres://... or postgresql://..."));
}

}  // namespace sika::store
