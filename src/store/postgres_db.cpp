// The PostgreSQL backend: a bounded pool of libpq connections. Write units run in
// SERIALIZABLE transactions (the same guarantees as SQLite's single writer) and are run again
// on serialization failures and deadlocks until they commit or their retry deadline passes;
// broken connections are discarded and replaced.
#include <libpq-fe.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "core/random.hpp"
#include "core/thread_annotations.hpp"
#include "store/backend.hpp"

namespace sika::store::detail {

namespace {

// Type OIDs from pg_type.
constexpr Oid kBoolOid = 16;
constexpr Oid kByteaOid = 17;
constexpr Oid kInt8Oid = 20;
constexpr Oid kInt2Oid = 21;
constexpr Oid kInt4Oid = 23;
constexpr Oid kOidOid = 26;
constexpr Oid kFloat4Oid = 700;
constexpr Oid kFloat8Oid = 701;

// Runs again after a broken connection or a stale prepared statement (not conflicts: those
// are bounded by the retry deadline). A read runs again once, a write unit up to three times.
constexpr int kMaxReadReconnects = 1;
constexpr int kMaxWriteReconnects = 3;
// Backoff after the n-th conflict: a random pause in [cap/2, cap) with cap = 1 ms * 2^(n-1),
// at most 128 ms.
constexpr std::uint32_t kBackoffBaseUs = 1000;
constexpr int kBackoffMaxDoublings = 7;
constexpr std::size_t kStatementCacheLimit = 512;
constexpr auto kPoolWait = std::chrono::seconds(10);

struct PgResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, PgResultDeleter>;

// libpq's messages on one line: "FATAL:  terminating ...\nserver closed ...\n\tThis ..." -> "... ...".
std::string trim(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// A failed statement, classified.
struct Failure {
  Error error;
  bool broken = false;      // the connection is unusable; the server rolled the transaction back
  bool retryable = false;   // the whole transaction may succeed if run again
  bool conflict = false;    // serialization failure or deadlock: another transaction won
  bool stale_plan = false;  // a prepared statement's result columns changed (after a migration)
};

bool starts_with(const char* s, std::string_view prefix) {
  return s != nullptr && std::string_view(s).starts_with(prefix);
}

Failure classify(PGconn* conn, const PGresult* res, std::string_view sql, const Params& params) {
  const char* state = res != nullptr ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  const char* primary = res != nullptr ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  std::string message = redact_params(trim(primary != nullptr ? primary : PQerrorMessage(conn)), params);
  std::string sqlstate = state != nullptr ? state : "";
  Failure f;
  f.broken = PQstatus(conn) != CONNECTION_OK || sqlstate.starts_with("08") || sqlstate == "57P01" ||
             sqlstate == "57P02" || sqlstate == "57P03";
  if (f.broken) {
    f.retryable = true;
    f.error = storage_error(true, "database connection lost: " + message, sql);
    return f;
  }
  if (sqlstate == "23505" || sqlstate == "23503" || sqlstate == "23514" || sqlstate == "23P01") {
    const char* constraint = PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME);
    f.error = constraint_error(constraint != nullptr ? std::string(constraint) : message);
    return f;
  }
  if (!sqlstate.empty()) message += " (SQLSTATE " + sqlstate + ")";
  if (sqlstate == "40001" || sqlstate == "40P01") {
    f.retryable = f.conflict = true;
    f.error = sika::retryable(boost::json::string("concurrent update, try again: " + message));
    return f;
  }
  // A prepared statement whose result columns changed after a migration: prepare it again.
  if (sqlstate == "0A000" && message.find("cached plan") != std::string::npos) f.retryable = f.stale_plan = true;
  bool unavailable = sqlstate.starts_with("53") || sqlstate.starts_with("57") || sqlstate == "55P03" ||
                     sqlstate == "55006" || sqlstate.empty();
  f.error = storage_error(unavailable, message, sql);
  return f;
}

std::string decode_bytea(const char* text, int size) {
  if (size < 2 || text[0] != '\\' || text[1] != 'x') return std::string(text, size);
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return 0;
  };
  std::string out;
  out.reserve((size - 2) / 2);
  for (int i = 2; i + 1 < size; i += 2) out += static_cast<char>(nibble(text[i]) << 4 | nibble(text[i + 1]));
  return out;
}

// A result cell as a typed Value: integers, floats and booleans are parsed, bytea decoded,
// everything else (text, numeric) kept as text for Row's accessors to convert.
Value cell_value(const PGresult* res, int row, int col) {
  if (PQgetisnull(res, row, col) != 0) return nullptr;
  const char* text = PQgetvalue(res, row, col);
  int size = PQgetlength(res, row, col);
  switch (PQftype(res, col)) {
    case kInt8Oid:
    case kInt4Oid:
    case kInt2Oid:
    case kOidOid:
      if (auto v = parse_i64(std::string_view(text, size))) return *v;
      break;
    case kFloat8Oid:
    case kFloat4Oid:
      if (auto v = parse_f64(std::string_view(text, size))) return *v;
      break;
    case kBoolOid: return std::int64_t{text[0] == 't' ? 1 : 0};
    case kByteaOid: return decode_bytea(text, size);
    default: break;
  }
  return std::string(text, size);
}

// One libpq connection and its prepared statements; used by one thread at a time.
class PgConnection {
 public:
  struct Prepared {
    std::string name;
    std::vector<Oid> param_types;  // as the server resolved them
  };

  explicit PgConnection(PGconn* raw) : raw_(raw) {}
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;
  ~PgConnection() { PQfinish(raw_); }

  static Result<std::unique_ptr<PgConnection>> connect(const std::string& dsn) {
    // Defaults first: settings in the DSN override them.
    const char* keys[] = {"connect_timeout", "application_name", "client_encoding", "dbname", nullptr};
    const char* values[] = {"10", "sika", "UTF8", dsn.c_str(), nullptr};
    auto c = std::make_unique<PgConnection>(PQconnectdbParams(keys, values, 1));
    if (c->raw_ == nullptr)
      return sika::unavailable(boost::json::string("cannot connect to PostgreSQL: out of memory"));
    if (PQstatus(c->raw_) != CONNECTION_OK)
      return sika::unavailable(boost::json::string("cannot connect to PostgreSQL: " + trim(PQerrorMessage(c->raw_))));
    PQsetNoticeProcessor(
        c->raw_, [](void*, const char*) {}, nullptr);
    return c;
  }

  PGconn* raw() const { return raw_; }
  bool broken() const { return broken_ || PQstatus(raw_) != CONNECTION_OK; }
  void mark_broken() { broken_ = true; }

  // Returns true iff an idle pooled connection still looks usable, without a round trip:
  // reading what the server sent while it sat idle reveals a terminated backend (EOF).
  bool usable_when_idle() {
    for (int i = 0; i < 2; ++i) {
      if (PQconsumeInput(raw_) == 0) return false;
    }
    return PQstatus(raw_) == CONNECTION_OK && PQtransactionStatus(raw_) == PQTRANS_IDLE;
  }

  // Runs a parameterless statement (BEGIN, COMMIT, ...); returns its command tag.
  Result<std::string> simple(const char* sql, std::optional<Failure>& failure) {
    PgResult res(PQexec(raw_, sql));
    if (res == nullptr || PQresultStatus(res.get()) != PGRES_COMMAND_OK) {
      failure = classify(raw_, res.get(), sql, {});
      if (failure->broken) broken_ = true;
      return failure->error;
    }
    return std::string(PQcmdStatus(res.get()));
  }

  // Returns the statement prepared for sql and these parameter kinds, preparing it on first use.
  Result<const Prepared*> prepare(std::string_view sql, const Params& params, std::optional<Failure>& failure) {
    std::string key(sql);
    key += '\0';
    std::vector<Oid> types(params.size(), 0);
    for (std::size_t i = 0; i < params.size(); ++i) {
      // Numbers go typed, so `? - 1000` on a bigint never becomes int4 arithmetic; text and
      // NULL take the type the server infers from context (text, bytea, bigint ...).
      if (std::holds_alternative<std::int64_t>(params[i])) {
        types[i] = kInt8Oid;
        key += 'i';
      } else if (std::holds_alternative<double>(params[i])) {
        types[i] = kFloat8Oid;
        key += 'd';
      } else {
        key += 'u';
      }
    }
    if (auto it = cache_.find(key); it != cache_.end()) return &it->second;
    RewrittenSql rewritten = rewrite_placeholders(sql);
    if (rewritten.placeholders != params.size()) {
      failure = Failure{storage_error(false,
                                      "statement has " + std::to_string(rewritten.placeholders) + " placeholders but " +
                                          std::to_string(params.size()) + " parameters were bound",
                                      sql)};
      return failure->error;
    }
    if (cache_.size() >= kStatementCacheLimit) {
      PgResult(PQexec(raw_, "DEALLOCATE ALL"));
      cache_.clear();
    }
    Prepared p{"s" + std::to_string(++statement_counter_), {}};
    PgResult res(PQprepare(raw_, p.name.c_str(), rewritten.sql.c_str(), static_cast<int>(types.size()), types.data()));
    if (res == nullptr || PQresultStatus(res.get()) != PGRES_COMMAND_OK) {
      failure = classify(raw_, res.get(), sql, params);
      if (failure->broken) broken_ = true;
      return failure->error;
    }
    res.reset(PQdescribePrepared(raw_, p.name.c_str()));
    if (res == nullptr || PQresultStatus(res.get()) != PGRES_COMMAND_OK) {
      failure = classify(raw_, res.get(), sql, params);
      if (failure->broken) broken_ = true;
      return failure->error;
    }
    int n = PQnparams(res.get());
    for (int i = 0; i < n; ++i) p.param_types.push_back(PQparamtype(res.get(), i));
    auto [it, inserted] = cache_.emplace(std::move(key), std::move(p));
    return &it->second;
  }

  // Forgets prepared statements (after a result-type change), so they are prepared again.
  void forget_statements() {
    PgResult(PQexec(raw_, "DEALLOCATE ALL"));
    cache_.clear();
  }

 private:
  PGconn* raw_;
  bool broken_ = false;
  std::unordered_map<std::string, Prepared> cache_;
  std::uint64_t statement_counter_ = 0;
};

// The Conn handed to read and write functions.
class PgConn final : public Conn {
 public:
  explicit PgConn(PgConnection& c) : c_(c) {}

  Dialect dialect() const override { return Dialect::postgres; }

  Result<Rows> query(std::string_view sql, const Params& params) override {
    Rows rows;
    std::int64_t changes = 0;
    SIKA_TRY(run(sql, params, &rows, changes));
    return rows;
  }

  Result<std::int64_t> exec(std::string_view sql, const Params& params) override {
    std::int64_t changes = 0;
    SIKA_TRY(run(sql, params, nullptr, changes));
    return changes;
  }

  // The first failed statement of this transaction, if any.
  const std::optional<Failure>& failure() const { return failure_; }

 protected:
  // A savepoint may undo a statement's own failure (a constraint, a bad value); a serialization
  // failure, a deadlock or a broken connection stays the unit's, which runs again or fails whole.
  bool failure_undone() override {
    if (failure_ && (failure_->retryable || failure_->broken)) return false;
    failure_.reset();
    return true;
  }

 private:
  Status run(std::string_view sql, const Params& params, Rows* rows, std::int64_t& changes) {
    if (failure_) return aborted_error(sql);
    auto prepared = c_.prepare(sql, params, failure_);
    if (!prepared) return prepared.take_error();
    const auto& types = (*prepared)->param_types;
    const std::size_t n = params.size();
    std::vector<std::string> numbers(n);
    std::vector<const char*> values(n, nullptr);
    std::vector<int> lengths(n, 0);
    std::vector<int> formats(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const Value& v = params[i];
      if (auto p = std::get_if<std::int64_t>(&v)) {
        numbers[i] = std::to_string(*p);
        values[i] = numbers[i].c_str();
      } else if (auto d = std::get_if<double>(&v)) {
        numbers[i] = format_f64(*d);
        values[i] = numbers[i].c_str();
      } else if (auto s = std::get_if<std::string>(&v)) {
        if (i < types.size() && types[i] == kByteaOid) {
          // Raw bytes, sent in binary format so no escaping can alter them.
          formats[i] = 1;
          lengths[i] = static_cast<int>(s->size());
          values[i] = s->data();
        } else {
          if (s->find('\0') != std::string::npos) {
            failure_ = Failure{storage_error(
                false, "parameter " + std::to_string(i + 1) + " contains a NUL byte, which text cannot hold", sql)};
            return failure_->error;
          }
          values[i] = s->c_str();
        }
      }
    }
    PgResult res(PQexecPrepared(c_.raw(), (*prepared)->name.c_str(), static_cast<int>(n), values.data(), lengths.data(),
                                formats.data(), 0));
    ExecStatusType status = res != nullptr ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
      failure_ = classify(c_.raw(), res.get(), sql, params);
      if (failure_->broken) c_.mark_broken();
      return failure_->error;
    }
    if (rows != nullptr && status == PGRES_TUPLES_OK) {
      int nrows = PQntuples(res.get());
      int ncols = PQnfields(res.get());
      rows->reserve(nrows);
      for (int r = 0; r < nrows; ++r) {
        std::vector<Value> cells;
        cells.reserve(ncols);
        for (int col = 0; col < ncols; ++col) cells.push_back(cell_value(res.get(), r, col));
        rows->emplace_back(std::move(cells));
      }
    }
    // A SELECT changes nothing (PQcmdTuples would give its row count).
    if (!starts_with(PQcmdStatus(res.get()), "SELECT")) changes = parse_i64(PQcmdTuples(res.get())).value_or(0);
    return {};
  }

  PgConnection& c_;
  std::optional<Failure> failure_;
};

// A bounded pool of connections; a broken connection is dropped and replaced on demand.
class Pool {
 public:
  Pool(std::string dsn, int capacity) : dsn_(std::move(dsn)), capacity_(capacity) {}

  void adopt(std::unique_ptr<PgConnection> c) {
    sika::MutexLock lk(mu_);
    ++open_;
    idle_.push_back(std::move(c));
  }

  Result<std::unique_ptr<PgConnection>> acquire() {
    sika::UniqueLock lk(mu_);
    const auto deadline = std::chrono::steady_clock::now() + kPoolWait;
    for (;;) {
      if (closed_) return closed_error();
      while (!idle_.empty()) {
        std::unique_ptr<PgConnection> c = std::move(idle_.back());
        idle_.pop_back();
        if (c->usable_when_idle()) return c;
        --open_;
        reconnects_.fetch_add(1, std::memory_order_relaxed);
      }
      if (open_ < capacity_) break;
      if (lk.wait_until(cv_, deadline) == std::cv_status::timeout && idle_.empty() && open_ >= capacity_)
        return sika::unavailable(boost::json::string("all PostgreSQL connections are busy"));
    }
    ++open_;
    lk.unlock();
    auto c = PgConnection::connect(dsn_);
    if (!c) {
      sika::MutexLock relock(mu_);
      --open_;
      cv_.notify_one();
    }
    return c;
  }

  void release(std::unique_ptr<PgConnection> c) {
    bool keep = !c->broken() && PQtransactionStatus(c->raw()) == PQTRANS_IDLE;
    sika::MutexLock lk(mu_);
    if (!keep) reconnects_.fetch_add(1, std::memory_order_relaxed);
    if (keep && !closed_) {
      idle_.push_back(std::move(c));
    } else {
      --open_;
      c.reset();
    }
    cv_.notify_one();
  }

  // Drops every idle connection: one broke mid-statement, so the server probably restarted.
  void drop_idle() {
    sika::MutexLock lk(mu_);
    open_ -= static_cast<int>(idle_.size());
    idle_.clear();
    cv_.notify_all();
  }

  void close() {
    sika::MutexLock lk(mu_);
    closed_ = true;
    open_ -= static_cast<int>(idle_.size());
    idle_.clear();
    cv_.notify_all();
  }

  std::uint64_t reconnects() const { return reconnects_.load(std::memory_order_relaxed); }

 private:
  const std::string dsn_;
  const int capacity_;
  sika::Mutex mu_;
  std::condition_variable cv_;  // a connection was released or a slot freed
  std::vector<std::unique_ptr<PgConnection>> idle_ GUARDED_BY(mu_);
  int open_ GUARDED_BY(mu_) = 0;
  bool closed_ GUARDED_BY(mu_) = false;
  std::atomic<std::uint64_t> reconnects_{0};
};

// How one transaction attempt ended.
struct Attempt {
  Status status;
  bool retry = false;     // running the unit again may succeed
  bool broken = false;    // the connection broke
  bool conflict = false;  // a serialization failure or deadlock (retried until the deadline)
};

// The pause before running a unit again after its n-th conflict (n >= 1).
std::chrono::microseconds conflict_backoff(int n) {
  std::uint32_t cap = kBackoffBaseUs << std::min(n - 1, kBackoffMaxDoublings);
  return std::chrono::microseconds(cap / 2 + random_uniform(cap / 2));
}

class PostgresDb final : public Db {
 public:
  PostgresDb(std::string dsn, const DbOptions& options)
      : pool_(std::move(dsn), options.pool_size), retry_deadline_(options.retry_deadline_ms) {}
  ~PostgresDb() override { close(); }

  void adopt(std::unique_ptr<PgConnection> c) { pool_.adopt(std::move(c)); }

  Dialect dialect() const override { return Dialect::postgres; }

  Status read(const std::function<Status(Conn&)>& fn) override {
    return run(fn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", false);
  }

  Status write(const std::function<Status(Conn&)>& fn) override {
    return run(fn, "BEGIN ISOLATION LEVEL SERIALIZABLE", true);
  }

  Status ping() override {
    return read([](Conn& c) -> Status {
      SIKA_TRY(c.query("SELECT 1"));
      return {};
    });
  }

  void close() override { pool_.close(); }

  DbStats stats() const override {
    DbStats s;
    s.write_units = write_units_.load(std::memory_order_relaxed);
    s.commits = commits_.load(std::memory_order_relaxed);
    s.retries = retries_.load(std::memory_order_relaxed);
    s.reconnects = pool_.reconnects();
    return s;
  }

 private:
  // Runs fn until it succeeds, fails for good, or keeps conflicting past the retry deadline.
  Status run(const std::function<Status(Conn&)>& fn, const char* begin, bool write) {
    using Clock = std::chrono::steady_clock;
    const auto started = Clock::now();
    const auto deadline = started + retry_deadline_;
    const int max_reconnects = write ? kMaxWriteReconnects : kMaxReadReconnects;
    int conflicts = 0;
    int reconnects = 0;
    for (;;) {
      auto acquired = pool_.acquire();
      if (!acquired) return acquired.take_error();
      std::unique_ptr<PgConnection> c = std::move(acquired).value();
      Attempt a = run_once(*c, fn, begin, write);
      pool_.release(std::move(c));
      if (a.broken) pool_.drop_idle();
      if (a.status && write) commits_.fetch_add(1, std::memory_order_relaxed);
      bool again = false;
      std::chrono::microseconds pause{0};
      if (!a.status && a.retry) {
        if (a.conflict) {
          // Randomised exponential backoff so the transactions that conflicted do not meet
          // again; never sleep past the deadline only to fail afterwards.
          pause = conflict_backoff(++conflicts);
          again = Clock::now() + pause < deadline;
          if (!again)
            spdlog::warn("storage unit still conflicting after {} attempts in {} ms; giving up", conflicts,
                         std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count());
        } else {
          again = ++reconnects <= max_reconnects;
        }
      }
      if (!again) {
        if (write) write_units_.fetch_add(1, std::memory_order_relaxed);
        return std::move(a.status);
      }
      retries_.fetch_add(1, std::memory_order_relaxed);
      if (pause.count() > 0) std::this_thread::sleep_for(pause);
    }
  }

  Attempt run_once(PgConnection& c, const std::function<Status(Conn&)>& fn, const char* begin, bool write) {
    std::optional<Failure> failure;
    if (auto r = c.simple(begin, failure); !r)
      return {r.take_error(), failure->retryable, failure->broken, failure->conflict};
    PgConn conn(c);
    Status st = run_unit(fn, conn);
    if (const auto& f = conn.failure()) {
      // The transaction is aborted; its first failure decides what happens.
      if (f->broken) return {f->error, true, true};
      rollback(c);
      if (f->stale_plan) c.forget_statements();
      if (f->retryable) return {f->error, true, false, f->conflict};
      // fn's own error when it returned one (it may have mapped the failure), else the failure.
      if (st) st = f->error;
      return {std::move(st), false, false};
    }
    if (!st) {
      rollback(c);
      return {std::move(st), false, c.broken()};
    }
    auto tag = c.simple("COMMIT", failure);
    if (!tag) {
      if (failure->broken && write)
        return {sika::unavailable(boost::json::string(
                    "database connection lost during COMMIT; the write may or may not have been applied")),
                false, true};
      rollback(c);
      return {tag.take_error(), failure->retryable, failure->broken, failure->conflict};
    }
    if (*tag != "COMMIT")
      return {storage_error(false, "transaction was rolled back at COMMIT", "COMMIT"), false, false};
    return {};
  }

  static void rollback(PgConnection& c) {
    if (c.broken()) return;
    std::optional<Failure> ignored;
    (void)c.simple("ROLLBACK", ignored);
  }

  Pool pool_;
  const std::chrono::milliseconds retry_deadline_;
  std::atomic<std::uint64_t> write_units_{0};
  std::atomic<std::uint64_t> commits_{0};
  std::atomic<std::uint64_t> retries_{0};
};

}  // namespace

Result<std::unique_ptr<Db>> open_postgres(const std::string& dsn, const DbOptions& options) {
  char* err = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(dsn.c_str(), &err);
  if (parsed == nullptr) {
    std::string msg = err != nullptr ? trim(err) : "out of memory";
    PQfreemem(err);
    return internal_error(boost::json::string("invalid PostgreSQL DSN: " + msg));
  }
  PQconninfoFree(parsed);
  // Connect once now, so a wrong host or password is reported at start-up.
  auto first = PgConnection::connect(dsn);
  if (!first) return first.take_error();
  auto db = std::make_unique<PostgresDb>(dsn, options);
  db->adopt(std::move(first).value());
  return std::unique_ptr<Db>(std::move(db));
}

}  // namespace sika::store::detail
