// The PostgreSQL backend: a few writer threads, each owning one libpq connection, gather
// concurrent write units into one transaction (group commit, each unit in its own savepoint),
// and a bounded pool of connections serves reads. Write units run SERIALIZABLE (the same
// guarantees as SQLite's single writer), or READ COMMITTED when they ask for it
// (counter_isolation); a batch that hits a serialization failure or a deadlock is rolled back
// whole and its units run again one per transaction, with backoff, until they commit or their
// retry deadline passes; broken connections are discarded and replaced.
#include <libpq-fe.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

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
// Most units in one batch: PostgreSQL caches up to 64 subtransaction ids per backend; past that
// every snapshot taken anywhere on the server has to consult pg_subtrans (subxid overflow).
constexpr int kMaxBatch = 64;
// The SQL of counter_isolation (and of the migrations' unit): a unit that runs it first asks for
// READ COMMITTED. A batch cannot change its isolation inside a savepoint, so such a unit is taken
// out of a SERIALIZABLE batch and runs in a READ COMMITTED batch, where the statement is a no-op.
constexpr std::string_view kReadCommitted = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED";
// The savepoint around each unit of a batch (Conn::nested uses its own name inside it).
constexpr const char* kUnitSavepoint = "SAVEPOINT sika_unit";
constexpr const char* kNextUnitSavepoint = "RELEASE SAVEPOINT sika_unit; SAVEPOINT sika_unit";
constexpr const char* kUndoUnit = "ROLLBACK TO SAVEPOINT sika_unit";

// The number of cores, at least 1.
int cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

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

  // `options`: the server settings of the session (libpq's options, "-c name=value ...").
  static Result<std::unique_ptr<PgConnection>> connect(const std::string& dsn, const std::string& options = {}) {
    // Defaults first: settings in the DSN override them.
    const char* keys[] = {"connect_timeout", "application_name", "client_encoding", "options", "dbname", nullptr};
    const char* values[] = {"10", "sika", "UTF8", options.c_str(), dsn.c_str(), nullptr};
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
    return PQstatus(raw_) == CONNECTION_OK && (commit_sent_ || PQtransactionStatus(raw_) == PQTRANS_IDLE);
  }

  // A read's COMMIT goes out without waiting for its answer: a read-only transaction's COMMIT
  // cannot change what the read returned. The next user of the connection reads the answer first
  // (settle), by which time it has usually arrived. False (the connection broken) if it was not sent.
  bool send_commit() {
    commit_sent_ = PQenterPipelineMode(raw_) == 1 &&
                   PQsendQueryParams(raw_, "COMMIT", 0, nullptr, nullptr, nullptr, nullptr, 0) == 1 &&
                   PQpipelineSync(raw_) == 1;
    if (!commit_sent_) broken_ = true;
    return commit_sent_;
  }
  bool commit_sent() const { return commit_sent_; }
  // Reads the answer to a COMMIT sent earlier, if any; false (the connection broken) unless the
  // connection is back to idle, out of pipeline mode.
  bool settle() {
    if (!commit_sent_) return !broken();
    commit_sent_ = false;
    PgResult done = next_result();
    PgResult sync(PQgetResult(raw_));
    const bool ok = done != nullptr && PQresultStatus(done.get()) == PGRES_COMMAND_OK && sync != nullptr &&
                    PQresultStatus(sync.get()) == PGRES_PIPELINE_SYNC && PQexitPipelineMode(raw_) == 1 &&
                    PQtransactionStatus(raw_) == PQTRANS_IDLE;
    if (!ok) broken_ = true;
    return ok;
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

  // A read's BEGIN waits to go out with the read's first statement, so that both take one round
  // trip (libpq's pipeline mode) where BEGIN alone would take one more; a read that runs no
  // statement opens no transaction at all.
  void defer_begin(const char* begin) { deferred_begin_ = begin; }
  // True iff a deferred BEGIN has not gone out: no transaction is open. Forgets it.
  bool take_unsent_begin() { return std::exchange(deferred_begin_, nullptr) != nullptr; }

  // Runs prepared statement `p`, after the deferred BEGIN when one waits: both in one pipeline,
  // BEGIN's failure (if any) being the answer. A pipeline that does not end as libpq documents
  // leaves the connection broken (it is not pooled again).
  PgResult exec_prepared(const Prepared& p, int n, const char* const* values, const int* lengths, const int* formats) {
    if (deferred_begin_ == nullptr)
      return PgResult(PQexecPrepared(raw_, p.name.c_str(), n, values, lengths, formats, 0));
    const char* begin = std::exchange(deferred_begin_, nullptr);
    if (PQenterPipelineMode(raw_) != 1) {
      PgResult begun(PQexec(raw_, begin));
      if (begun == nullptr || PQresultStatus(begun.get()) != PGRES_COMMAND_OK) return begun;
      return PgResult(PQexecPrepared(raw_, p.name.c_str(), n, values, lengths, formats, 0));
    }
    const bool sent = PQsendQueryParams(raw_, begin, 0, nullptr, nullptr, nullptr, nullptr, 0) == 1 &&
                      PQsendQueryPrepared(raw_, p.name.c_str(), n, values, lengths, formats, 0) == 1 &&
                      PQpipelineSync(raw_) == 1;
    PgResult begun = sent ? next_result() : nullptr;
    PgResult result = sent ? next_result() : nullptr;
    PgResult sync(sent ? PQgetResult(raw_) : nullptr);
    const bool ended =
        sync != nullptr && PQresultStatus(sync.get()) == PGRES_PIPELINE_SYNC && PQexitPipelineMode(raw_) == 1;
    if (!ended) broken_ = true;
    if (begun == nullptr || PQresultStatus(begun.get()) != PGRES_COMMAND_OK) return begun;
    return result;
  }

  // Forgets prepared statements (after a result-type change), so they are prepared again.
  void forget_statements() {
    PgResult(PQexec(raw_, "DEALLOCATE ALL"));
    cache_.clear();
  }

 private:
  // The results of a pipeline's next query: the last of them, read up to the NULL that ends them.
  PgResult next_result() {
    PgResult last;
    while (PGresult* r = PQgetResult(raw_)) last.reset(r);
    return last;
  }

  PGconn* raw_;
  bool broken_ = false;
  const char* deferred_begin_ = nullptr;
  bool commit_sent_ = false;  // a read's COMMIT whose answer has not been read
  std::unordered_map<std::string, Prepared> cache_;
  std::uint64_t statement_counter_ = 0;
};

// The Conn handed to read and write functions.
class PgConn final : public Conn {
 public:
  // How a unit's SET TRANSACTION ISOLATION LEVEL READ COMMITTED is handled.
  enum class Isolation {
    own,                   // the unit has its own transaction: the statement runs
    serializable_batch,    // inside a SERIALIZABLE batch: the unit stops and asks for a READ COMMITTED batch
    read_committed_batch,  // inside a READ COMMITTED batch: nothing to do
  };

  explicit PgConn(PgConnection& c, Isolation isolation = Isolation::own) : c_(c), isolation_(isolation) {}

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
  // True iff the unit asked for READ COMMITTED inside a SERIALIZABLE batch (and was stopped).
  bool wants_read_committed() const { return wants_read_committed_; }

 protected:
  // A savepoint may undo a statement's own failure (a constraint, a bad value); a serialization
  // failure, a deadlock or a broken connection stays the unit's, which runs again or fails whole.
  bool failure_undone() override {
    if (failure_ && (failure_->retryable || failure_->broken || wants_read_committed_)) return false;
    failure_.reset();
    return true;
  }

 private:
  Status run(std::string_view sql, const Params& params, Rows* rows, std::int64_t& changes) {
    if (failure_) return aborted_error(sql);
    if (isolation_ != Isolation::own && params.empty() && sql == kReadCommitted) {
      if (isolation_ == Isolation::read_committed_batch) return {};
      if (!statements_) {
        // Not a failure of the unit: the batch runs it again in a READ COMMITTED transaction.
        wants_read_committed_ = true;
        failure_ = Failure{internal_error(boost::json::string("moved to a READ COMMITTED batch"))};
        return failure_->error;
      }
      // Too late to change isolation: the unit's own transaction would have refused it as well.
      failure_ = Failure{storage_error(false, "SET TRANSACTION ISOLATION LEVEL must be called before any query", sql)};
      return failure_->error;
    }
    ++statements_;
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
    PgResult res = c_.exec_prepared(**prepared, static_cast<int>(n), values.data(), lengths.data(), formats.data());
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
  const Isolation isolation_;
  std::optional<Failure> failure_;
  int statements_ = 0;
  bool wants_read_committed_ = false;
};

// A bounded pool of connections; a broken connection is dropped and replaced on demand.
// Waiters are served in arrival order: a released connection goes to the longest waiter, so
// under load the wait is the queue's length, never a lottery between woken threads.
class Pool {
 public:
  Pool(std::string dsn, int capacity, std::string session_options = {})
      : dsn_(std::move(dsn)), session_options_(std::move(session_options)), capacity_(capacity) {}

  // A new connection with the pool's session settings (not counted in the pool).
  Result<std::unique_ptr<PgConnection>> connect() const { return PgConnection::connect(dsn_, session_options_); }

  void adopt(std::unique_ptr<PgConnection> c) {
    sika::MutexLock lk(mu_);
    ++open_;
    idle_.push_back(std::move(c));
  }

  Result<std::unique_ptr<PgConnection>> acquire() {
    sika::UniqueLock lk(mu_);
    if (closed_) return closed_error();
    // Served in turn: nobody may take a connection past earlier waiters.
    if (waiters_.empty()) {
      while (!idle_.empty()) {
        std::unique_ptr<PgConnection> c = std::move(idle_.back());
        idle_.pop_back();
        if (c->usable_when_idle()) return c;
        --open_;
        reconnects_.fetch_add(1, std::memory_order_relaxed);
      }
      if (open_ < capacity_) return open_new(lk);
    }
    Waiter w;
    waiters_.push_back(&w);
    const auto deadline = std::chrono::steady_clock::now() + kPoolWait;
    while (!w.served && !closed_) {
      if (lk.wait_until(w.cv, deadline) == std::cv_status::timeout && !w.served) break;
    }
    if (!w.served) {
      waiters_.erase(std::find(waiters_.begin(), waiters_.end(), &w));
      if (closed_) return closed_error();
      return sika::unavailable(boost::json::string("all PostgreSQL connections are busy"));
    }
    if (w.conn) {
      if (w.conn->usable_when_idle()) return std::move(w.conn);
      reconnects_.fetch_add(1, std::memory_order_relaxed);
      w.conn.reset();
    }
    // Handed a free slot (or a dead connection, whose slot is ours): connect.
    return open_new(lk, /*slot_taken=*/true);
  }

  void release(std::unique_ptr<PgConnection> c) {
    bool keep = !c->broken() && (c->commit_sent() || PQtransactionStatus(c->raw()) == PQTRANS_IDLE);
    sika::MutexLock lk(mu_);
    if (!keep) reconnects_.fetch_add(1, std::memory_order_relaxed);
    if (closed_) {
      --open_;
      c.reset();
      return;
    }
    if (!keep) c.reset();
    if (!waiters_.empty()) {
      // The slot (with the connection when it is usable) goes straight to the longest waiter.
      Waiter* w = waiters_.front();
      waiters_.pop_front();
      w->conn = std::move(c);
      w->served = true;
      w->cv.notify_one();
      return;
    }
    if (c) {
      idle_.push_back(std::move(c));
    } else {
      --open_;
    }
  }

  // Drops every idle connection: one broke mid-statement, so the server probably restarted.
  void drop_idle() {
    sika::MutexLock lk(mu_);
    open_ -= static_cast<int>(idle_.size());
    idle_.clear();
  }

  void close() {
    sika::MutexLock lk(mu_);
    closed_ = true;
    open_ -= static_cast<int>(idle_.size());
    idle_.clear();
    for (Waiter* w : waiters_) w->cv.notify_one();
  }

  std::uint64_t reconnects() const { return reconnects_.load(std::memory_order_relaxed); }
  void count_reconnect() { reconnects_.fetch_add(1, std::memory_order_relaxed); }
  const std::string& dsn() const { return dsn_; }

 private:
  struct Waiter {
    std::condition_variable cv;
    bool served = false;                 // handed a connection or a free slot
    std::unique_ptr<PgConnection> conn;  // null: a free slot, connect
  };

  // Connects outside the lock on a slot counted in open_; a failed connection frees the slot.
  Result<std::unique_ptr<PgConnection>> open_new(sika::UniqueLock& lk,
                                                 bool slot_taken = false) NO_THREAD_SAFETY_ANALYSIS {
    if (!slot_taken) ++open_;
    lk.unlock();
    auto c = connect();
    lk.lock();
    if (!c) {
      if (!waiters_.empty() && !closed_) {
        Waiter* w = waiters_.front();
        waiters_.pop_front();
        w->served = true;  // with a free slot: it tries to connect itself
        w->cv.notify_one();
      } else {
        --open_;
      }
    }
    return c;
  }

  const std::string dsn_;
  const std::string session_options_;
  const int capacity_;
  sika::Mutex mu_;
  std::vector<std::unique_ptr<PgConnection>> idle_ GUARDED_BY(mu_);
  std::deque<Waiter*> waiters_ GUARDED_BY(mu_);
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

// The server settings of every connection: statements and lock waits bounded by the request's
// deadline (DbOptions::statement_timeout_ms); a statement past it fails with SQLSTATE 57014 or
// 55P03, which classify() answers 503.
std::string session_options(const DbOptions& options) {
  if (options.statement_timeout_ms <= 0) return {};
  const std::string ms = std::to_string(options.statement_timeout_ms);
  return "-c statement_timeout=" + ms + " -c lock_timeout=" + ms;
}

// Identifies the PostgresDb whose writer thread is running this thread: a write called from
// inside a unit runs on a connection of its own instead of waiting for its own writer.
thread_local const void* tl_writer_of = nullptr;
// True while that writer thread runs a unit's function (false while it answers a unit).
thread_local bool tl_in_unit = false;

class PostgresDb final : public Db {
 public:
  PostgresDb(std::string dsn, const DbOptions& options)
      : pool_(std::move(dsn), options.pool_size > 0 ? options.pool_size : std::max(4, 2 * cores()),
              session_options(options)),
        retry_deadline_(options.retry_deadline_ms),
        max_batch_(std::clamp(options.max_batch, 1, kMaxBatch)) {
    const int writers = options.pg_writers > 0 ? options.pg_writers : std::max(2, cores());
    for (int i = 0; i < writers; ++i) writers_.emplace_back([this] { writer_loop(); });
  }
  ~PostgresDb() override { close(); }

  void adopt(std::unique_ptr<PgConnection> c) { pool_.adopt(std::move(c)); }

  Dialect dialect() const override { return Dialect::postgres; }

  Status read(const std::function<Status(Conn&)>& fn) override {
    return run(fn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", false);
  }

  // Queues the unit for a writer and waits until its batch committed (or the unit failed).
  Status write(const std::function<Status(Conn&)>& fn) override {
    if (tl_writer_of == this) return run(fn, "BEGIN ISOLATION LEVEL SERIALIZABLE", true);
    Unit u;
    u.fn = &fn;
    std::promise<Status> answered;
    u.done = [&answered](Status st) { answered.set_value(std::move(st)); };
    {
      sika::MutexLock lk(queue_mu_);
      if (closing_) return closed_error();
      queue_.push_back(&u);
    }
    queue_cv_.notify_one();
    return answered.get_future().get();
  }

  // Queues the unit and returns at once; a writer runs it with its batch and calls `done` after
  // the commit (or with the unit's error), on the writer's thread: `done` must not block.
  void write_async(std::function<Status(Conn&)> fn, std::function<void(Status)> done) override {
    if (tl_writer_of == this && tl_in_unit) return done(run(fn, "BEGIN ISOLATION LEVEL SERIALIZABLE", true));
    auto u = std::make_unique<Unit>();
    u->owned_fn = std::move(fn);
    u->fn = &u->owned_fn;
    u->done = std::move(done);
    u->owned = true;
    {
      sika::MutexLock lk(queue_mu_);
      if (!closing_) queue_.push_back(u.release());  // answer() deletes it
    }
    if (u) return u->done(closed_error());
    queue_cv_.notify_one();
  }
  bool writes_async() const override { return true; }

  Status ping() override {
    return read([](Conn& c) -> Status {
      SIKA_TRY(c.query("SELECT 1"));
      return {};
    });
  }

  // Finishes the queued units, stops the writers and closes every connection.
  void close() override {
    {
      sika::MutexLock lk(queue_mu_);
      closing_ = true;
    }
    queue_cv_.notify_all();
    for (auto& t : writers_) {
      if (t.joinable()) t.join();
    }
    pool_.close();
  }

  DbStats stats() const override {
    DbStats s;
    s.write_units = write_units_.load(std::memory_order_relaxed);
    s.commits = commits_.load(std::memory_order_relaxed);
    s.largest_batch = largest_batch_.load(std::memory_order_relaxed);
    s.batched_units = batched_units_.load(std::memory_order_relaxed);
    s.retries = retries_.load(std::memory_order_relaxed);
    s.reconnects = pool_.reconnects();
    return s;
  }

 private:
  // A queued write unit. `done` is called exactly once, after the unit's batch committed or with
  // the unit's own error.
  struct Unit {
    const std::function<Status(Conn&)>* fn = nullptr;
    std::function<void(Status)> done;
    std::function<Status(Conn&)> owned_fn;  // write_async: the unit's function
    bool owned = false;                     // write_async: allocated by it, deleted when answered
    bool read_committed = false;            // asked for READ COMMITTED (counter_isolation)
    Status status;
  };

  // How a batch ended.
  enum class BatchEnd {
    committed,  // each unit's status is its outcome (ok: committed)
    conflict,   // serialization failure or deadlock: nothing committed, run the units one by one
    broken,     // the connection broke before COMMIT: nothing committed, run the batch again
    failed,     // nothing committed; every unit gets `error`
  };

  void writer_loop() {
    tl_writer_of = this;
    std::unique_ptr<PgConnection> conn;
    std::vector<Unit*> batch;
    batch.reserve(max_batch_);
    for (;;) {
      {
        sika::UniqueLock lk(queue_mu_);
        lk.wait(queue_cv_, [&]() REQUIRES(queue_mu_) { return closing_ || !queue_.empty(); });
        if (queue_.empty()) break;  // closing, and every queued unit has been answered
        std::size_t n = std::min(queue_.size(), static_cast<std::size_t>(max_batch_));
        batch.assign(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
        queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
        if (!queue_.empty()) queue_cv_.notify_one();  // another writer takes the rest
      }
      run_batch(conn, batch);
    }
  }

  // Runs the batch's SERIALIZABLE units together, then those that asked for READ COMMITTED
  // together, and answers every unit.
  void run_batch(std::unique_ptr<PgConnection>& conn, std::vector<Unit*>& batch) {
    tl_in_unit = true;
    std::vector<Unit*> serializable = batch;
    for (Unit* u : batch) u->read_committed = false;
    run_group(conn, serializable, false);
    std::vector<Unit*> rc;
    for (Unit* u : batch) {
      if (u->read_committed) rc.push_back(u);
    }
    if (!rc.empty()) run_group(conn, rc, true);
    for (Unit* u : batch) {
      write_units_.fetch_add(1, std::memory_order_relaxed);
      answer(u);
    }
  }

  // Calls the unit's `done` with its status, outside any unit of this writer. A write() caller
  // may destroy its unit as soon as it is answered, and write_async's is deleted first.
  static void answer(Unit* u) {
    auto done = std::move(u->done);
    Status status = std::move(u->status);
    if (u->owned) delete u;
    tl_in_unit = false;
    done(std::move(status));
  }

  // Runs `units` in one transaction of that isolation; sets each unit's status (units moved to
  // READ COMMITTED keep read_committed set and no status).
  void run_group(std::unique_ptr<PgConnection>& conn, std::vector<Unit*>& units, bool read_committed) {
    for (int attempt = 0;; ++attempt) {
      Error error = closed_error();
      BatchEnd end = BatchEnd::failed;
      if (auto s = writer_connection(conn); !s) {
        error = s.error();
      } else {
        end = run_transaction(*conn, units, read_committed, error);
      }
      if (end == BatchEnd::committed) {
        std::uint64_t n = 0;
        for (Unit* u : units) n += u->read_committed && !read_committed ? 0 : 1;
        // A transaction whose every unit moved to READ COMMITTED committed nothing of theirs.
        if (n > 0) commits_.fetch_add(1, std::memory_order_relaxed);
        if (n > 1) batched_units_.fetch_add(n, std::memory_order_relaxed);
        std::uint64_t largest = largest_batch_.load(std::memory_order_relaxed);
        while (n > largest && !largest_batch_.compare_exchange_weak(largest, n)) {
        }
        return;
      }
      if (end == BatchEnd::broken && attempt < kMaxWriteReconnects) {
        conn.reset();
        pool_.count_reconnect();
        retries_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      if (end == BatchEnd::conflict) {
        // Another transaction won; nothing of the batch remains (units are re-runnable by
        // contract). The units that ran, or were to run, in this transaction are split in halves
        // that run again as batches, so that one conflict costs a few transactions instead of
        // one per unit: a writer running up to 64 units one by one (each with its round trips,
        // the conflicting one after a backoff) is what lets a node that meets conflicts fall far
        // behind the others on a shared server. Only a unit left alone runs alone, with backoff.
        std::vector<Unit*> pending;
        for (Unit* u : units) {
          if (!u->read_committed || read_committed) pending.push_back(u);
        }
        if (pending.size() > 1) {
          retries_.fetch_add(pending.size(), std::memory_order_relaxed);
          const auto middle = pending.begin() + static_cast<std::ptrdiff_t>(pending.size() / 2);
          std::vector<Unit*> first(pending.begin(), middle);
          std::vector<Unit*> second(middle, pending.end());
          // The half holding the unit charged with the conflict runs second, after the other.
          bool charged_first = std::any_of(first.begin(), first.end(), [](Unit* u) { return !u->status; });
          if (charged_first) std::swap(first, second);
          run_group(conn, first, read_committed);
          run_group(conn, second, read_committed);
          return;
        }
        for (Unit* u : units) {
          if (u->read_committed && !read_committed) continue;
          retries_.fetch_add(1, std::memory_order_relaxed);
          const char* begin = read_committed || u->read_committed ? "BEGIN ISOLATION LEVEL READ COMMITTED"
                                                                  : "BEGIN ISOLATION LEVEL SERIALIZABLE";
          u->read_committed = false;
          u->status = run(*u->fn, begin, true, u->status ? 0 : 1);
        }
        return;
      }
      if (end == BatchEnd::broken) {
        conn.reset();
        error = sika::unavailable(boost::json::string("database connection lost"));
      }
      for (Unit* u : units) {
        if (u->read_committed && !read_committed) continue;
        u->status = error;
      }
      return;
    }
  }

  // The writer's own connection, (re)connected when missing or dead.
  Status writer_connection(std::unique_ptr<PgConnection>& conn) {
    if (conn && conn->usable_when_idle()) return {};
    if (conn) pool_.count_reconnect();
    conn.reset();
    auto c = pool_.connect();
    if (!c) return c.take_error();
    conn = std::move(c).value();
    return {};
  }

  // One attempt at the group's transaction. A unit's status: ok (kept), its own error (undone
  // by its savepoint), or, for a conflict, its error with the other units' statuses reset.
  BatchEnd run_transaction(PgConnection& c, std::vector<Unit*>& units, bool read_committed, Error& error) {
    std::optional<Failure> failure;
    auto ended = [&](const Failure& f) {
      error = f.error;
      if (f.broken) return BatchEnd::broken;
      rollback(c);
      if (f.stale_plan) c.forget_statements();
      return f.conflict || f.stale_plan ? BatchEnd::conflict : BatchEnd::failed;
    };
    if (auto r = c.simple(
            read_committed ? "BEGIN ISOLATION LEVEL READ COMMITTED" : "BEGIN ISOLATION LEVEL SERIALIZABLE", failure);
        !r)
      return ended(*failure);
    bool first = true;
    for (Unit* u : units) {
      if (read_committed) {
        u->read_committed = false;
      } else if (u->read_committed) {
        continue;
      }
      u->status = {};
      if (auto r = c.simple(first ? kUnitSavepoint : kNextUnitSavepoint, failure); !r) return ended(*failure);
      first = false;
      PgConn conn(c, read_committed ? PgConn::Isolation::read_committed_batch : PgConn::Isolation::serializable_batch);
      Status st = run_unit(*u->fn, conn);
      if (conn.wants_read_committed()) {
        u->read_committed = true;
        if (auto r = c.simple(kUndoUnit, failure); !r) return ended(*failure);
        continue;
      }
      if (const auto& f = conn.failure()) {
        if (f->broken || f->retryable) {
          // The whole transaction is lost: charge the conflict to this unit, not to the others.
          for (Unit* other : units) other->status = {};
          u->status = f->error;
          return ended(*f);
        }
        // fn's own error when it returned one (it may have mapped the failure), else the failure.
        u->status = st ? Status(f->error) : std::move(st);
        if (auto r = c.simple(kUndoUnit, failure); !r) return ended(*failure);
        continue;
      }
      if (!st) {
        u->status = std::move(st);
        if (auto r = c.simple(kUndoUnit, failure); !r) return ended(*failure);
      }
    }
    if (first) {
      rollback(c);  // every unit moved to READ COMMITTED: nothing to commit here
      return BatchEnd::committed;
    }
    auto tag = c.simple("COMMIT", failure);
    if (!tag) {
      if (failure->broken) {
        // The server may or may not have committed: never run these units again.
        error = sika::unavailable(
            boost::json::string("database connection lost during COMMIT; the write may or may not have been applied"));
        for (Unit* u : units) {
          if (read_committed || !u->read_committed) u->status = error;
        }
        c.mark_broken();
        return BatchEnd::committed;
      }
      for (Unit* u : units) u->status = {};
      return ended(*failure);
    }
    if (*tag != "COMMIT") {
      error = storage_error(false, "transaction was rolled back at COMMIT", "COMMIT");
      return BatchEnd::failed;
    }
    return BatchEnd::committed;
  }

  // Runs fn alone until it succeeds, fails for good, or keeps conflicting past the retry
  // deadline; `conflicts` counts the conflicts it already met (in a batch).
  Status run(const std::function<Status(Conn&)>& fn, const char* begin, bool write, int conflicts = 0) {
    using Clock = std::chrono::steady_clock;
    const auto started = Clock::now();
    const auto deadline = started + retry_deadline_;
    const int max_reconnects = write ? kMaxWriteReconnects : kMaxReadReconnects;
    int reconnects = 0;
    if (conflicts > 0) {
      auto pause = conflict_backoff(conflicts);
      if (Clock::now() + pause >= deadline) return sika::retryable(boost::json::string("concurrent update, try again"));
      std::this_thread::sleep_for(pause);
    }
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
        if (write && tl_writer_of != this) write_units_.fetch_add(1, std::memory_order_relaxed);
        return std::move(a.status);
      }
      retries_.fetch_add(1, std::memory_order_relaxed);
      if (pause.count() > 0) std::this_thread::sleep_for(pause);
    }
  }

  Attempt run_once(PgConnection& c, const std::function<Status(Conn&)>& fn, const char* begin, bool write) {
    std::optional<Failure> failure;
    if (!c.settle())
      return {storage_error(true, "database connection lost: no answer to the previous read's COMMIT", "COMMIT"), true,
              true};
    if (!write) {
      c.defer_begin(begin);  // sent with the first statement
    } else if (auto r = c.simple(begin, failure); !r) {
      return {r.take_error(), failure->retryable, failure->broken, failure->conflict};
    }
    PgConn conn(c);
    Status st = run_unit(fn, conn);
    const bool opened = !c.take_unsent_begin();
    if (const auto& f = conn.failure()) {
      // The transaction is aborted; its first failure decides what happens.
      if (f->broken) return {f->error, true, true};
      if (opened) rollback(c);
      if (f->stale_plan) c.forget_statements();
      if (f->retryable) return {f->error, true, false, f->conflict};
      // fn's own error when it returned one (it may have mapped the failure), else the failure.
      if (st) st = f->error;
      return {std::move(st), false, false};
    }
    if (!st) {
      if (opened) rollback(c);
      return {std::move(st), false, c.broken()};
    }
    if (!opened) return {};
    if (!write) {
      c.send_commit();  // its answer is read by the connection's next user
      return {};
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
  const int max_batch_;
  sika::Mutex queue_mu_;
  std::condition_variable queue_cv_;  // a unit was queued, or closing
  std::deque<Unit*> queue_ GUARDED_BY(queue_mu_);
  bool closing_ GUARDED_BY(queue_mu_) = false;
  std::vector<std::thread> writers_;
  std::atomic<std::uint64_t> write_units_{0};
  std::atomic<std::uint64_t> commits_{0};
  std::atomic<std::uint64_t> largest_batch_{0};
  std::atomic<std::uint64_t> batched_units_{0};
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
  auto first = PgConnection::connect(dsn, session_options(options));
  if (!first) return first.take_error();
  auto db = std::make_unique<PostgresDb>(dsn, options);
  db->adopt(std::move(first).value());
  return std::unique_ptr<Db>(std::move(db));
}

}  // namespace sika::store::detail
