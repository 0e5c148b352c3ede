// The SQLite backend: one writer thread owns the write connection and commits queued write
// units in batches (group commit); reads use a pool of WAL reader connections.
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "core/metrics.hpp"
#include "core/thread_annotations.hpp"
#include "store/backend.hpp"
#include "store/sqlite_wal_vfs.hpp"

namespace sika::store::detail {

namespace {

constexpr std::size_t kStatementCacheLimit = 512;
constexpr auto kReaderWait = std::chrono::seconds(30);
// Reader connections when DbOptions::pool_size is 0.
constexpr int kDefaultReaders = 16;
// Checkpoints: the checkpointer thread is asked to copy the WAL into the database once per
// kCheckpointFrames new pages (SQLite's own default threshold). Under a steady load its copy never catches up
// with the last frame, so the WAL file cannot start over; at kWriterCheckpointFrames the writer
// checkpoints itself between two batches, which copies only what the checkpointer has not yet
// and lets the next transaction restart the WAL from its beginning.
constexpr int kCheckpointFrames = 1000;
constexpr int kWriterCheckpointFrames = 16 * kCheckpointFrames;
// The writer's page cache (negative: KiB): twice SQLite's default, and no more. A bigger cache
// keeps more index pages from being read back through the kernel, but costs more at every commit:
// when a B-tree page split reorders pages, SQLite parks one of them under the page number of the
// lock-byte page, and at the end of the transaction pcache1Truncate then walks the cache's whole
// hash table (as many slots as cached pages). With 64 MiB that walk took more writer time than the
// reads it saved (storage.md, "The writer's page cache").
constexpr const char* kWriterCacheSize = "PRAGMA cache_size=-4096";

// Hashes std::string and std::string_view alike, so cache lookups do not allocate.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// The text after "constraint failed: " in SQLite's message ("merchants.matricule"), else the message.
std::string constraint_name(const std::string& message) {
  static constexpr std::string_view kMarker = "constraint failed: ";
  std::size_t pos = message.find(kMarker);
  if (pos == std::string::npos) return message;
  return message.substr(pos + kMarker.size());
}

// One SQLite connection and its prepared statements; used by one thread at a time.
class Handle {
 public:
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  ~Handle() {
    clear_cache();
    sqlite3_close_v2(db_);
  }

  // Opens the writer connection (WAL, synchronous=FULL) or a query-only reader connection.
  static Result<std::unique_ptr<Handle>> open(const std::string& path, bool writer, const DbOptions& options) {
    sqlite3* db = nullptr;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (writer ? SQLITE_OPEN_CREATE : 0);
    // The write connections gather each transaction's WAL frames into one write (sqlite_wal_vfs.hpp).
    int rc = sqlite3_open_v2(path.c_str(), &db, flags, writer ? wal_buffering_vfs() : nullptr);
    std::unique_ptr<Handle> h(new Handle(db));
    if (rc != SQLITE_OK) {
      std::string msg = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
      return unavailable(boost::json::string("cannot open SQLite database " + path + ": " + msg));
    }
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, options.busy_timeout_ms);
    std::vector<std::string> pragmas = {"PRAGMA foreign_keys=ON", "PRAGMA temp_store=MEMORY"};
    if (writer) {
      auto mode = h->pragma_text("PRAGMA journal_mode=WAL");
      if (!mode) return mode.take_error();
      if (*mode != "wal")
        return unavailable(boost::json::string("cannot switch " + path + " to WAL (journal_mode is " + *mode + ")"));
      pragmas.emplace_back("PRAGMA synchronous=FULL");
      pragmas.emplace_back(kWriterCacheSize);
      // After a burst, checkpoints shrink the WAL file back to 64 MiB instead of keeping its peak size.
      pragmas.emplace_back("PRAGMA journal_size_limit=67108864");
    } else {
      pragmas.emplace_back("PRAGMA query_only=ON");
    }
    for (const auto& p : pragmas) SIKA_TRY(h->run_control(p));
    return h;
  }

  sqlite3* raw() const { return db_; }

  // Returns the cached prepared statement for sql, preparing it on first use.
  Result<sqlite3_stmt*> prepare(std::string_view sql, const Params& params) {
    if (auto it = cache_.find(sql); it != cache_.end()) return it->second;
    if (cache_.size() >= kStatementCacheLimit) clear_cache();
    sqlite3_stmt* stmt = nullptr;
    const char* tail = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt, &tail);
    if (rc != SQLITE_OK) return error(rc, sql, params);
    if (stmt == nullptr) return internal_error(boost::json::string("empty SQL statement"));
    std::string_view rest(tail, sql.data() + sql.size() - tail);
    if (rest.find_first_not_of(" \t\r\n;") != std::string_view::npos) {
      sqlite3_finalize(stmt);
      return storage_error(false, "one SQL statement per call", sql);
    }
    cache_.emplace(std::string(sql), stmt);
    return stmt;
  }

  // Runs a parameterless statement that returns no rows (BEGIN, SAVEPOINT, PRAGMA ...).
  Status run_control(std::string_view sql) {
    auto stmt = prepare(sql, {});
    if (!stmt) return stmt.take_error();
    int rc;
    while ((rc = sqlite3_step(*stmt)) == SQLITE_ROW) {
    }
    Status st;
    if (rc != SQLITE_DONE) st = error(rc, sql, {});
    sqlite3_reset(*stmt);
    return st;
  }

  // Maps a failed call's result code and message to a store Error.
  Error error(int rc, std::string_view sql, const Params& params) const {
    int ext = sqlite3_extended_errcode(db_);
    if ((rc & 0xff) != (ext & 0xff)) ext = rc;
    std::string msg = redact_params(sqlite3_errmsg(db_), params);
    switch (ext) {
      case SQLITE_CONSTRAINT_UNIQUE:
      case SQLITE_CONSTRAINT_PRIMARYKEY:
      case SQLITE_CONSTRAINT_CHECK:
      case SQLITE_CONSTRAINT_FOREIGNKEY: return constraint_error(constraint_name(msg));
      default: break;
    }
    switch (ext & 0xff) {
      case SQLITE_BUSY:
      case SQLITE_LOCKED:
      case SQLITE_FULL:
      case SQLITE_IOERR:
      case SQLITE_CANTOPEN:
      case SQLITE_NOMEM:
      case SQLITE_READONLY:
      case SQLITE_PROTOCOL:
      case SQLITE_CORRUPT:
      case SQLITE_NOTADB: return storage_error(true, msg, sql);
      default: return storage_error(false, msg, sql);
    }
  }

 private:
  explicit Handle(sqlite3* db) : db_(db) {}

  Result<std::string> pragma_text(const char* sql) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr);
    if (rc != SQLITE_OK) return error(rc, sql, {});
    std::string out;
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    } else if (rc != SQLITE_DONE) {
      Error e = error(rc, sql, {});
      sqlite3_finalize(stmt);
      return e;
    }
    sqlite3_finalize(stmt);
    return out;
  }

  void clear_cache() {
    for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
    cache_.clear();
  }

  sqlite3* db_;
  std::unordered_map<std::string, sqlite3_stmt*, StringHash, std::equal_to<>> cache_;
};

// Resets a statement and drops its bindings when the statement's run ends.
struct StatementReset {
  sqlite3_stmt* stmt;
  ~StatementReset() {
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
  }
};

// The Conn handed to read and write functions.
class SqliteConn final : public Conn {
 public:
  explicit SqliteConn(Handle& h) : h_(h) {}

  Dialect dialect() const override { return Dialect::sqlite; }

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

  Result<std::optional<std::int64_t>> insert_id(std::string_view sql, const Params& params) override {
    std::int64_t changes = 0;
    SIKA_TRY(run(sql, params, nullptr, changes));
    if (changes == 0) return std::optional<std::int64_t>();
    return std::optional<std::int64_t>(sqlite3_last_insert_rowid(h_.raw()));
  }

  // The first statement error of this unit, if any.
  const std::optional<Error>& failure() const { return failure_; }
  void reset() { failure_.reset(); }

 protected:
  bool failure_undone() override {
    failure_.reset();
    return true;
  }

 private:
  Status run(std::string_view sql, const Params& params, Rows* rows, std::int64_t& changes) {
    if (failure_) return aborted_error(sql);
    Status st = run_statement(sql, params, rows, changes);
    if (!st) failure_ = st.error();
    return st;
  }

  Status run_statement(std::string_view sql, const Params& params, Rows* rows, std::int64_t& changes) {
    auto prepared = h_.prepare(sql, params);
    if (!prepared) return prepared.take_error();
    sqlite3_stmt* stmt = *prepared;
    StatementReset reset{stmt};
    int expected = sqlite3_bind_parameter_count(stmt);
    if (static_cast<std::size_t>(expected) != params.size())
      return storage_error(false,
                           "statement has " + std::to_string(expected) + " placeholders but " +
                               std::to_string(params.size()) + " parameters were bound",
                           sql);
    for (std::size_t i = 0; i < params.size(); ++i) {
      int idx = static_cast<int>(i) + 1;
      const Value& v = params[i];
      int rc = SQLITE_OK;
      if (auto p = std::get_if<std::int64_t>(&v)) {
        rc = sqlite3_bind_int64(stmt, idx, *p);
      } else if (auto d = std::get_if<double>(&v)) {
        rc = sqlite3_bind_double(stmt, idx, *d);
      } else if (auto s = std::get_if<std::string>(&v)) {
        rc = sqlite3_bind_text64(stmt, idx, s->data(), s->size(), SQLITE_STATIC, SQLITE_UTF8);
      } else {
        rc = sqlite3_bind_null(stmt, idx);
      }
      if (rc != SQLITE_OK) return h_.error(rc, sql, params);
    }
    sqlite3* db = h_.raw();
    sqlite3_int64 before = sqlite3_total_changes64(db);
    int columns = sqlite3_column_count(stmt);
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      if (rows == nullptr) continue;
      std::vector<Value> cells;
      cells.reserve(columns);
      for (int c = 0; c < columns; ++c) {
        switch (sqlite3_column_type(stmt, c)) {
          case SQLITE_INTEGER: cells.emplace_back(static_cast<std::int64_t>(sqlite3_column_int64(stmt, c))); break;
          case SQLITE_FLOAT: cells.emplace_back(sqlite3_column_double(stmt, c)); break;
          case SQLITE_TEXT: {
            auto text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
            cells.emplace_back(std::string(text, sqlite3_column_bytes(stmt, c)));
            break;
          }
          case SQLITE_BLOB: {
            auto blob = static_cast<const char*>(sqlite3_column_blob(stmt, c));
            int size = sqlite3_column_bytes(stmt, c);
            cells.emplace_back(size > 0 ? std::string(blob, size) : std::string());
            break;
          }
          default: cells.emplace_back(nullptr);
        }
      }
      rows->emplace_back(std::move(cells));
    }
    if (rc != SQLITE_DONE) return h_.error(rc, sql, params);
    changes = sqlite3_total_changes64(db) != before ? sqlite3_changes64(db) : 0;
    return {};
  }

  Handle& h_;
  std::optional<Error> failure_;
};

// Identifies the Db whose writer thread is running this thread, to refuse nested writes.
thread_local const void* tl_writer_of = nullptr;

class SqliteDb final : public Db {
 public:
  SqliteDb(std::string path, const DbOptions& options, std::unique_ptr<Handle> writer,
           std::unique_ptr<Handle> checkpointer)
      : path_(std::move(path)),
        options_(options),
        writer_conn_(std::move(writer)),
        checkpointer_conn_(std::move(checkpointer)) {
    // Replaces SQLite's automatic checkpoint, which would run on the writer after a commit.
    sqlite3_wal_hook(writer_conn_->raw(), &SqliteDb::on_wal_commit, this);
    checkpointer_ = std::thread([this] { checkpointer_loop(); });
    completer_ = std::thread([this] { completer_loop(); });
    writer_ = std::thread([this] { writer_loop(); });
  }

  ~SqliteDb() override { close(); }

  Dialect dialect() const override { return Dialect::sqlite; }

  Status read(const std::function<Status(Conn&)>& fn) override {
    auto acquired = acquire_reader();
    if (!acquired) return acquired.take_error();
    std::unique_ptr<Handle> h = std::move(acquired).value();
    Status st = h->run_control("BEGIN");
    if (st) {
      SqliteConn conn(*h);
      st = run_unit(fn, conn);
      if (st && conn.failure()) st = *conn.failure();
      // A read transaction has nothing to keep; ROLLBACK also ends it after an error.
      Status end = h->run_control("ROLLBACK");
      if (st && !end) st = std::move(end);
    }
    release_reader(std::move(h));
    return st;
  }

  Status write(const std::function<Status(Conn&)>& fn) override {
    if (tl_writer_of == this)
      return internal_error(boost::json::string("db.write() called inside a write unit of the same database"));
    WriteUnit unit{&fn};
    {
      sika::MutexLock lk(queue_mu_);
      if (stopping_) return closed_error();
      queue_.push_back(&unit);
      // A busy writer takes the queue as its next batch without being woken.
      if (writer_waiting_) {
        writer_waiting_ = false;
        queue_cv_.notify_one();
      }
    }
    sika::UniqueLock lk(unit.mu);
    lk.wait(unit.cv, [&]() REQUIRES(unit.mu) { return unit.done; });
    return std::move(unit.result);
  }

  void write_async(std::function<Status(Conn&)> fn, std::function<void(Status)> done) override {
    if (tl_writer_of == this) {
      done(internal_error(boost::json::string("db.write_async() called inside a write unit of the same database")));
      return;
    }
    // Owned by the queue from here on; the completer calls `done` and deletes it.
    auto* unit = new WriteUnit{nullptr};
    unit->owned_fn = std::move(fn);
    unit->fn = &unit->owned_fn;
    unit->on_done = std::move(done);
    {
      sika::MutexLock lk(queue_mu_);
      if (!stopping_) {
        queue_.push_back(unit);
        if (writer_waiting_) {
          writer_waiting_ = false;
          queue_cv_.notify_one();
        }
        return;
      }
    }
    std::function<void(Status)> cb = std::move(unit->on_done);
    delete unit;
    cb(closed_error());
  }

  bool writes_async() const override { return true; }

  Status ping() override {
    return read([](Conn& c) -> Status {
      SIKA_TRY(c.query("SELECT 1"));
      return {};
    });
  }

  void close() override {
    {
      sika::MutexLock lk(queue_mu_);
      stopping_ = true;
      queue_cv_.notify_all();
    }
    if (tl_writer_of == this) return;  // called from a write unit: the writer stops after this batch
    sika::MutexLock close_lock(close_mu_);
    if (writer_.joinable()) writer_.join();
    {
      sika::MutexLock lk(done_mu_);
      completer_stopping_ = true;
    }
    done_cv_.notify_one();
    if (completer_.joinable()) completer_.join();
    {
      sika::MutexLock lk(checkpoint_mu_);
      checkpointer_stopping_ = true;
    }
    checkpoint_cv_.notify_one();
    if (checkpointer_.joinable()) checkpointer_.join();
    checkpointer_conn_.reset();
    writer_conn_.reset();
    sika::MutexLock lk(readers_mu_);
    closed_ = true;
    idle_readers_.clear();
    readers_cv_.notify_all();
  }

  DbStats stats() const override {
    DbStats s;
    s.write_units = write_units_.load(std::memory_order_relaxed);
    s.commits = commits_.load(std::memory_order_relaxed);
    s.largest_batch = largest_batch_.load(std::memory_order_relaxed);
    s.batched_units = batched_units_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  // A queued write unit. A blocking write() keeps it on its caller's stack and waits on cv;
  // write_async() allocates it, and the completer calls on_done and deletes it.
  struct WriteUnit {
    const std::function<Status(Conn&)>* fn;
    Status result;
    sika::Mutex mu;
    std::condition_variable cv;
    bool done GUARDED_BY(mu) = false;
    std::function<Status(Conn&)> owned_fn;  // write_async: the unit's function
    std::function<void(Status)> on_done;    // write_async: called once, after the commit
  };

  void writer_loop() {
    tl_writer_of = this;
    std::vector<WriteUnit*> batch;
    batch.reserve(options_.max_batch);
    for (;;) {
      {
        sika::UniqueLock lk(queue_mu_);
        while (queue_.empty() && !stopping_) {
          writer_waiting_ = true;
          lk.wait(queue_cv_);
        }
        writer_waiting_ = false;
        if (queue_.empty()) break;  // stopping, and every queued unit has been answered
        std::size_t n = std::min(queue_.size(), static_cast<std::size_t>(options_.max_batch));
        batch.assign(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
        queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
      }
      run_batch(batch);
    }
  }

  // Runs the batch in one transaction, each unit in its own savepoint, commits (the fsync)
  // and answers the units that are done. Units that must run again are put back in the queue.
  void run_batch(std::vector<WriteUnit*>& batch) {
    Handle& h = *writer_conn_;
    std::vector<WriteUnit*> finished;
    std::vector<WriteUnit*> requeue;
    finished.reserve(batch.size());
    auto fail_all = [&](const Error& e) {
      for (WriteUnit* u : finished) u->result = e;
      for (WriteUnit* u : batch) u->result = e;
      finished.insert(finished.end(), batch.begin(), batch.end());
      batch.clear();
    };

    if (Status begin = h.run_control("BEGIN IMMEDIATE"); !begin) {
      fail_all(begin.error());
      complete(finished);
      return;
    }
    SqliteConn conn(h);
    std::size_t i = 0;
    for (; i < batch.size(); ++i) {
      WriteUnit* u = batch[i];
      Status control = h.run_control("SAVEPOINT u");
      if (!control) break;
      conn.reset();
      Status st = run_unit(*u->fn, conn);
      if (st && conn.failure()) st = *conn.failure();
      if (sqlite3_get_autocommit(h.raw()) != 0) {
        // SQLite rolled the whole transaction back (I/O error, disk full, or a statement
        // with ON CONFLICT ROLLBACK): this unit is answered; the others run again.
        if (st) st = storage_error(true, "the database rolled the transaction back", "COMMIT");
        u->result = std::move(st);
        requeue.assign(finished.begin(), finished.end());
        requeue.insert(requeue.end(), batch.begin() + static_cast<std::ptrdiff_t>(i) + 1, batch.end());
        finished.assign(1, u);
        batch.clear();
        put_back(requeue);
        complete(finished);
        return;
      }
      if (st) {
        control = h.run_control("RELEASE u");
      } else {
        control = h.run_control("ROLLBACK TO u");
        if (control) control = h.run_control("RELEASE u");
      }
      u->result = std::move(st);
      if (!control) break;
      finished.push_back(u);
    }
    if (i < batch.size()) {
      // A savepoint statement failed: the transaction can no longer be trusted.
      Error e = storage_error(true, "write batch aborted: savepoint failed", "SAVEPOINT");
      batch.erase(batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(i));
      (void)h.run_control("ROLLBACK");
      fail_all(e);
      complete(finished);
      return;
    }
    batch.clear();
    if (Status commit = h.run_control("COMMIT"); !commit) {
      if (sqlite3_get_autocommit(h.raw()) == 0) (void)h.run_control("ROLLBACK");
      fail_all(commit.error());
      complete(finished);
      return;
    }
    commits_.fetch_add(1, std::memory_order_relaxed);
    std::uint64_t n = finished.size();
    batch_sizes_.observe(static_cast<double>(n));
    if (n > 1) batched_units_.fetch_add(n, std::memory_order_relaxed);
    std::uint64_t largest = largest_batch_.load(std::memory_order_relaxed);
    while (n > largest && !largest_batch_.compare_exchange_weak(largest, n, std::memory_order_relaxed)) {
    }
    complete(finished);
  }

  // Called on the writer thread after each commit, with the number of pages in the WAL.
  static int on_wal_commit(void* self, sqlite3* db, const char* schema, int frames) {
    auto* me = static_cast<SqliteDb*>(self);
    if (frames >= kWriterCheckpointFrames) {
      // A checkpoint the checkpointer holds makes this one return SQLITE_BUSY: the next commit
      // tries again.
      if (sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr) == SQLITE_OK)
        me->writer_checkpoints_.inc();
    } else {
      // Once per kCheckpointFrames new pages: a checkpoint after every commit would copy a few
      // pages and sync the database file each time.
      int done = me->checkpointed_frames_.load(std::memory_order_relaxed);
      if (frames < done) {  // the WAL restarted from its beginning
        done = 0;
        me->checkpointed_frames_.store(0, std::memory_order_relaxed);
      }
      if (frames - done >= kCheckpointFrames) {
        bool wake = false;
        {
          sika::MutexLock lk(me->checkpoint_mu_);
          wake = !me->checkpoint_wanted_;
          me->checkpoint_wanted_ = true;
        }
        if (wake) me->checkpoint_cv_.notify_one();
      }
    }
    return SQLITE_OK;
  }

  // Copies the WAL into the database file and syncs it, on its own connection and thread, so
  // that the writer's batches go on meanwhile (a PASSIVE checkpoint takes no lock a writer needs).
  void checkpointer_loop() {
    for (;;) {
      {
        sika::UniqueLock lk(checkpoint_mu_);
        lk.wait(checkpoint_cv_,
                [&]() REQUIRES(checkpoint_mu_) { return checkpoint_wanted_ || checkpointer_stopping_; });
        if (checkpointer_stopping_) return;
        checkpoint_wanted_ = false;
      }
      int log = 0;
      int copied = 0;
      int rc = sqlite3_wal_checkpoint_v2(checkpointer_conn_->raw(), nullptr, SQLITE_CHECKPOINT_PASSIVE, &log, &copied);
      if (rc == SQLITE_OK) {
        checkpoints_.inc();
        checkpointed_frames_.store(std::max(copied, 0), std::memory_order_relaxed);
      } else if (rc != SQLITE_BUSY) {
        spdlog::warn("sqlite: checkpoint of {} failed: {}", path_, sqlite3_errmsg(checkpointer_conn_->raw()));
      }
    }
  }

  void put_back(const std::vector<WriteUnit*>& units) {
    sika::MutexLock lk(queue_mu_);
    queue_.insert(queue_.begin(), units.begin(), units.end());
  }

  // Hands the answered units to the completer thread, which wakes their callers: waking a
  // thread is a system call, and the writer would otherwise make one per unit before it could
  // start the next batch. A caller is woken only after its unit's commit returned.
  void complete(std::vector<WriteUnit*>& units) {
    write_units_.fetch_add(units.size(), std::memory_order_relaxed);
    bool wake = false;
    {
      sika::MutexLock lk(done_mu_);
      done_.insert(done_.end(), units.begin(), units.end());
      wake = completer_waiting_;
      completer_waiting_ = false;
    }
    if (wake) done_cv_.notify_one();
    units.clear();
  }

  // Wakes the callers of answered units. A unit lives on its caller's stack and may be
  // destroyed as soon as its caller sees done, so it is notified while its mutex is held.
  void completer_loop() {
    std::vector<WriteUnit*> units;
    for (;;) {
      {
        sika::UniqueLock lk(done_mu_);
        while (done_.empty() && !completer_stopping_) {
          completer_waiting_ = true;
          lk.wait(done_cv_);
        }
        completer_waiting_ = false;
        if (done_.empty()) return;  // stopping, and every answered unit has been woken
        units.swap(done_);
      }
      for (WriteUnit* u : units) {
        if (u->on_done) {
          std::unique_ptr<WriteUnit> owned(u);
          std::function<void(Status)> done = std::move(u->on_done);
          try {
            done(std::move(u->result));
          } catch (const std::exception& e) {
            spdlog::error("sqlite: a write completion failed: {}", e.what());
          }
          continue;
        }
        sika::MutexLock lk(u->mu);
        u->done = true;
        u->cv.notify_one();
      }
      units.clear();
    }
  }

  Result<std::unique_ptr<Handle>> acquire_reader() {
    sika::UniqueLock lk(readers_mu_);
    for (;;) {
      if (closed_) return closed_error();
      if (!idle_readers_.empty()) {
        auto h = std::move(idle_readers_.back());
        idle_readers_.pop_back();
        return h;
      }
      if (open_readers_ < (options_.pool_size > 0 ? options_.pool_size : kDefaultReaders)) break;
      if (!lk.wait_for(readers_cv_, kReaderWait,
                       [&]() REQUIRES(readers_mu_) { return closed_ || !idle_readers_.empty(); }))
        return unavailable(boost::json::string("no SQLite reader connection free"));
    }
    ++open_readers_;
    lk.unlock();
    auto h = Handle::open(path_, false, options_);
    if (!h) {
      sika::MutexLock relock(readers_mu_);
      --open_readers_;
      readers_cv_.notify_one();
    }
    return h;
  }

  void release_reader(std::unique_ptr<Handle> h) {
    sika::MutexLock lk(readers_mu_);
    if (closed_ || sqlite3_get_autocommit(h->raw()) == 0) {
      --open_readers_;
      h.reset();
    } else {
      idle_readers_.push_back(std::move(h));
    }
    readers_cv_.notify_one();
  }

  const std::string path_;
  const DbOptions options_;
  std::unique_ptr<Handle> writer_conn_;        // used by the writer thread only
  std::unique_ptr<Handle> checkpointer_conn_;  // used by the checkpointer thread only
  std::thread writer_ GUARDED_BY(close_mu_);

  std::thread checkpointer_ GUARDED_BY(close_mu_);
  sika::Mutex checkpoint_mu_;
  std::condition_variable checkpoint_cv_;
  bool checkpoint_wanted_ GUARDED_BY(checkpoint_mu_) = false;
  std::atomic<int> checkpointed_frames_{0};  // WAL frames the last checkpoint left copied
  bool checkpointer_stopping_ GUARDED_BY(checkpoint_mu_) = false;

  sika::Mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<WriteUnit*> queue_ GUARDED_BY(queue_mu_);
  bool writer_waiting_ GUARDED_BY(queue_mu_) = false;
  bool stopping_ GUARDED_BY(queue_mu_) = false;

  // Answered units waiting for the completer thread to wake their callers.
  std::thread completer_ GUARDED_BY(close_mu_);
  sika::Mutex done_mu_;
  std::condition_variable done_cv_;
  std::vector<WriteUnit*> done_ GUARDED_BY(done_mu_);
  bool completer_waiting_ GUARDED_BY(done_mu_) = false;
  bool completer_stopping_ GUARDED_BY(done_mu_) = false;

  sika::Mutex readers_mu_;
  std::condition_variable readers_cv_;
  std::vector<std::unique_ptr<Handle>> idle_readers_ GUARDED_BY(readers_mu_);
  int open_readers_ GUARDED_BY(readers_mu_) = 0;
  bool closed_ GUARDED_BY(readers_mu_) = false;

  sika::Mutex close_mu_;  // one close() joins the threads

  std::atomic<std::uint64_t> write_units_{0};
  std::atomic<std::uint64_t> commits_{0};
  std::atomic<std::uint64_t> largest_batch_{0};
  std::atomic<std::uint64_t> batched_units_{0};
  metrics::Histogram& batch_sizes_ = metrics::registry().histogram(
      "sika_db_commit_batch_units", "Write units committed together by one SQLite group commit",
      metrics::size_buckets());
  metrics::Counter& checkpoints_ =
      metrics::registry().counter("sika_db_checkpoints_total", "SQLite WAL checkpoints", {{"thread", "checkpointer"}});
  metrics::Counter& writer_checkpoints_ =
      metrics::registry().counter("sika_db_checkpoints_total", "SQLite WAL checkpoints", {{"thread", "writer"}});
};

}  // namespace

Result<std::unique_ptr<Db>> open_sqlite(const std::string& path, const DbOptions& options) {
  if (sqlite3_threadsafe() == 0)
    return internal_error(boost::json::string("the SQLite library was built without thread support"));
  // Memory statistics take a process-wide mutex around every SQLite allocation, which every
  // connection's thread then contends for; nothing reads them. Must precede initialization
  // (a later call is refused by SQLite, harmlessly).
  static std::once_flag configured;
  std::call_once(configured, [] {
    (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    (void)sqlite3_initialize();
  });
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) return unavailable(boost::json::string("cannot create directory " + parent.string() + ": " + ec.message()));
  }
  auto writer = Handle::open(path, true, options);
  if (!writer) return writer.take_error();
  auto checkpointer = Handle::open(path, true, options);
  if (!checkpointer) return checkpointer.take_error();
  return std::unique_ptr<Db>(new SqliteDb(path, options, std::move(writer).value(), std::move(checkpointer).value()));
}

}  // namespace sika::store::detail
