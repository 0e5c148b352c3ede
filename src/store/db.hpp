#pragma once
// The storage interface. One schema, two backends chosen by DSN:
//   sqlite://PATH       embedded default; WAL, synchronous=FULL, group commit
//   postgres://...      libpq, connection pool, reconnects after a server restart
// SQL is written once with `?` placeholders; the PostgreSQL backend rewrites them to $n.
// Booleans are stored as integers 0/1 and timestamps as integer epoch milliseconds in both.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/result.hpp"

namespace sika::store {

enum class Dialect { sqlite, postgres };

// A bound parameter or a result cell.
using Value = std::variant<std::nullptr_t, std::int64_t, double, std::string>;

// Helpers to bind optionals.
inline Value opt(const std::optional<std::string>& v) { return v ? Value(*v) : Value(nullptr); }
inline Value opt(const std::optional<std::int64_t>& v) { return v ? Value(*v) : Value(nullptr); }
inline Value opt(const std::optional<double>& v) { return v ? Value(*v) : Value(nullptr); }

// One result row. Accessors convert between text and numbers as needed (PostgreSQL
// returns text); reading a NULL cell as a non-optional type gives 0 / "".
class Row {
 public:
  explicit Row(std::vector<Value> cells) : cells_(std::move(cells)) {}
  std::size_t size() const { return cells_.size(); }
  bool is_null(std::size_t i) const;
  std::int64_t i64(std::size_t i) const;
  double f64(std::size_t i) const;
  bool boolean(std::size_t i) const { return i64(i) != 0; }
  std::string str(std::size_t i) const;
  std::optional<std::int64_t> opt_i64(std::size_t i) const;
  std::optional<double> opt_f64(std::size_t i) const;
  std::optional<std::string> opt_str(std::size_t i) const;

 private:
  // The cell at i; an index past the end reads as NULL.
  const Value& cell(std::size_t i) const;

  std::vector<Value> cells_;
};

using Rows = std::vector<Row>;
using Params = std::vector<Value>;

// A connection inside one transaction (read) or one write unit (write). After a statement
// fails, the transaction is aborted on both backends (as PostgreSQL does): later statements
// in the same unit fail, and the unit fails with the first error even if fn returns ok.
// Use ON CONFLICT or conditional updates instead of catching a conflict and going on.
class Conn {
 public:
  virtual ~Conn() = default;
  virtual Dialect dialect() const = 0;
  // Runs one statement and returns its rows. Constraint violations come back as a
  // 409 "conflict" Error whose details name the constraint; other failures as 500/503.
  virtual Result<Rows> query(std::string_view sql, const Params& params = {}) = 0;
  // Runs one statement and returns the number of rows it changed.
  virtual Result<std::int64_t> exec(std::string_view sql, const Params& params = {}) = 0;
  // Runs one statement and returns its first row, if any.
  Result<std::optional<Row>> query_one(std::string_view sql, const Params& params = {});
  // Runs an INSERT of one row, written without a RETURNING clause, into a table keyed by an integer
  // column `id` (on SQLite the rowid), and returns that id, or nullopt when no row was inserted
  // (ON CONFLICT DO NOTHING). PostgreSQL adds RETURNING id; SQLite asks the connection for the last
  // rowid instead, because it runs RETURNING through a temporary table of its own, which costs
  // about as much as the insert of a narrow row.
  virtual Result<std::optional<std::int64_t>> insert_id(std::string_view sql, const Params& params = {});
  // Runs fn inside a savepoint of this write unit: when fn fails, what it wrote is undone (a
  // failed statement included, which otherwise aborts the whole unit) and its error returned,
  // and the unit goes on: several independent items in one unit, each all or nothing.
  Status nested(const std::function<Status()>& fn);

 protected:
  // Called before a savepoint undoes fn's work: forgets a failed statement of fn and returns
  // true when the unit may go on after the savepoint; false when the failure stays the unit's.
  virtual bool failure_undone() { return true; }
};

// For a write unit built around one atomic single-row statement (a counter upsert, a conditional
// UPDATE ... WHERE n < max), or one whose every decision is such a statement or a UNIQUE
// constraint (INSERT ... ON CONFLICT DO NOTHING, UPDATE ... WHERE status = ?), never a value it
// read earlier in the unit: on PostgreSQL, switches the unit to READ COMMITTED, where a concurrent
// update of the same row waits for it and then applies to the newest version (re-checking the
// WHERE clause) instead of failing with a serialization error, so a hot row does not exhaust the
// retries. Must be the unit's first statement; later statements of the unit must not rely on a
// snapshot. SQLite: nothing to do (one writer).
inline Result<void> counter_isolation(Conn& c) {
  if (c.dialect() != Dialect::postgres) return {};
  auto r = c.exec("SET TRANSACTION ISOLATION LEVEL READ COMMITTED");
  if (!r) return r.take_error();
  return {};
}

// Counters describing what a Db has done since it was opened (for tests, benchmarks, metrics).
struct DbStats {
  std::uint64_t write_units = 0;    // write units completed (committed or failed)
  std::uint64_t commits = 0;        // transactions committed (batches)
  std::uint64_t largest_batch = 0;  // most units committed by one transaction (a batch)
  std::uint64_t batched_units = 0;  // units that shared their transaction with at least one other unit
  std::uint64_t retries = 0;        // PostgreSQL units or reads run again (serialization failure, broken connection)
  std::uint64_t reconnects = 0;     // broken connections discarded and replaced
};

struct DbOptions {
  // PostgreSQL: connections for reads (and for units run alone); SQLite: reader connections.
  // 0 sizes it to the machine: PostgreSQL 2 per core (at least 4), SQLite 16.
  int pool_size = 0;
  int busy_timeout_ms = 5000;  // SQLite busy timeout
  // Group commit: most write units in one transaction (PostgreSQL: at most 64, see storage.md).
  int max_batch = 512;
  // PostgreSQL: writer threads, each with its own connection, gathering write units into batches.
  // 0: one per core, at least 2.
  int pg_writers = 0;
  // PostgreSQL: how long a write unit keeps being run again after serialization failures and
  // deadlocks (jittered exponential backoff) before the caller gets 503. 0 runs it once.
  int retry_deadline_ms = 5000;
  // PostgreSQL: the statement_timeout and lock_timeout of every connection. A statement that runs
  // or waits on a lock longer is cancelled and its unit fails with 503 (service_unavailable), so a
  // request is answered within its deadline instead of hanging behind a lock. 0: no limit.
  int statement_timeout_ms = 0;
};

class Db {
 public:
  virtual ~Db() = default;
  virtual Dialect dialect() const = 0;

  // Runs fn in a read transaction (a consistent snapshot). fn's error is returned as is.
  // The PostgreSQL backend runs fn once more on a fresh connection when the connection
  // breaks, so fn should assign its results rather than append to them.
  virtual Status read(const std::function<Status(Conn&)>& fn) = 0;

  // Runs fn as one atomic write unit: everything it wrote commits together, durably,
  // before write() returns; if fn returns an error (or the commit fails) nothing it
  // wrote remains. On both backends, concurrent units share one transaction, each in its own
  // SAVEPOINT (group commit); fn must therefore not keep state across calls, and may be run
  // again (PostgreSQL: after a serialization failure or a broken connection, its own or a
  // batch-mate's).
  virtual Status write(const std::function<Status(Conn&)>& fn) = 0;

  // Runs fn as one write unit with the same guarantees as write(), and hands its outcome to
  // `done` instead of blocking the caller. When writes_async() is true (both backends),
  // write_async returns before the unit runs and `done` is called later, after the commit, on
  // the database's thread (SQLite: its completer; PostgreSQL: the writer that ran the unit's
  // batch): it must not block (post the rest of the work elsewhere). Otherwise the unit runs on
  // the caller's thread and `done` is called before write_async returns. `done` is called
  // exactly once.
  virtual void write_async(std::function<Status(Conn&)> fn, std::function<void(Status)> done) {
    Status st = write(fn);
    done(std::move(st));
  }
  // True iff write_async returns without waiting for the unit.
  virtual bool writes_async() const { return false; }

  // Returns ok iff the database answers a trivial query now.
  virtual Status ping() = 0;

  // Closes connections and stops background threads after the queued writes finish;
  // later calls fail with 503.
  virtual void close() = 0;

  // Returns the counters so far.
  virtual DbStats stats() const { return {}; }
};

// Opens a database by DSN ("sqlite://./data/sika.db", "postgres://user@host:port/db", "postgresql://...").
Result<std::unique_ptr<Db>> open(std::string_view dsn, const DbOptions& options = {});

// Applies pending migrations in order, each in its own write unit; returns the versions applied.
Result<std::vector<int>> migrate(Db& db);
// Returns the highest applied migration version (0 when none).
Result<int> schema_version(Db& db);

}  // namespace sika::store
