// The store's behaviour on both backends. The PostgreSQL instance needs SIKA_TEST_PG_DSN (an
// admin DSN; each test creates and drops its own database) and skips itself without it (fails
// under CI=true or SIKA_REQUIRE_PG=1):
//   scripts/with-postgres.sh build/tests/store/store_test
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <latch>
#include <limits>
#include <mutex>
#include <set>
#include <thread>

#include "core/metrics.hpp"
#include "core/random.hpp"
#include "store/backend.hpp"
#include "store/db.hpp"
#include "store/migrations.hpp"
#include "store/outbox.hpp"
#include "store/read.hpp"
#include "support/test_db.hpp"

namespace sika::store {
namespace {

using namespace std::chrono_literals;

using sika::testing::admin_exec;
using sika::testing::with_database;

std::string details_text(const Error& e) { return boost::json::serialize(e.details); }

class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgres") {
      SIKA_TEST_PG_DSN_OR_END(admin_dsn_);
      database_ = "sika_store_test_" + hex_encode(random_bytes(6));
      admin_exec(admin_dsn_, "CREATE DATABASE " + database_);
      dsn_ = with_database(admin_dsn_, database_);
    } else {
      dir_ = std::filesystem::temp_directory_path() / ("sika-store-test-" + hex_encode(random_bytes(6)));
      // The database lives one level down, so open() has to create the parent directory.
      dsn_ = "sqlite://" + (dir_ / "data" / "sika.db").string();
    }
    db_ = open_db();
    ASSERT_NE(db_, nullptr);
  }

  void TearDown() override {
    if (db_) db_->close();
    db_.reset();
    if (!database_.empty()) admin_exec(admin_dsn_, "DROP DATABASE IF EXISTS " + database_ + " WITH (FORCE)");
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  bool pg() const { return GetParam() == "postgres"; }

  std::unique_ptr<Db> open_db(const DbOptions& options = {}) {
    auto db = open(dsn_, options);
    EXPECT_TRUE(db.ok()) << (db.ok() ? "" : details_text(db.error()));
    return db.ok() ? std::move(db).value() : nullptr;
  }

  void write_sql(const std::string& sql, const Params& params = {}) {
    Status st = db_->write([&](Conn& c) -> Status {
      SIKA_TRY(c.exec(sql, params));
      return {};
    });
    ASSERT_TRUE(st.ok()) << sql << ": " << details_text(st.error());
  }

  // Runs the query `sql` alone in a read.
  Status read_sql(const std::string& sql, const Params& params = {}) {
    return db_->read([&](Conn& c) -> Status {
      SIKA_TRY(c.query(sql, params));
      return {};
    });
  }

  // Runs `threads` threads (started together when `together`), each writing `units` write units
  // one after another, unit(c, thread, i) for its i-th. Every unit must commit.
  void write_concurrently(int threads, int units, const std::function<Status(Conn&, int, int)>& unit,
                          bool together = false) {
    std::atomic<int> failures{0};
    std::latch start(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        if (together) start.arrive_and_wait();
        for (int i = 0; i < units; ++i) {
          Status st = db_->write([&](Conn& c) -> Status { return unit(c, t, i); });
          if (!st) {
            ++failures;
            ADD_FAILURE() << kind_name(st.error().kind) << " " << details_text(st.error());
          }
        }
      });
    for (auto& th : pool) th.join();
    EXPECT_EQ(failures.load(), 0);
  }

  std::int64_t count(const std::string& sql, const Params& params = {}) {
    std::int64_t n = -1;
    Status st = db_->read([&](Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(auto row, c.query_one(sql, params));
      n = row ? row->i64(0) : -1;
      return {};
    });
    EXPECT_TRUE(st.ok()) << sql << ": " << (st.ok() ? "" : details_text(st.error()));
    return n;
  }

  void create_values_table() {
    write_sql("CREATE TABLE vals (k TEXT PRIMARY KEY, i BIGINT, d DOUBLE PRECISION, s TEXT)");
  }

  std::string admin_dsn_;
  std::string database_;
  std::filesystem::path dir_;
  std::string dsn_;
  std::unique_ptr<Db> db_;
};

TEST_P(StoreTest, ReportsDialectAndPings) {
  EXPECT_EQ(db_->dialect(), pg() ? Dialect::postgres : Dialect::sqlite);
  EXPECT_TRUE(db_->ping().ok());
}

TEST_P(StoreTest, RoundTripsEveryValueType) {
  create_values_table();
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  const std::int64_t small = std::numeric_limits<std::int64_t>::min();
  const std::string utf8 =
      "Ngaound\xC3\xA9r\xC3\xA9 \xE2\x80\x94 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x9A\x80 'quoted' \\ ?";
  write_sql("INSERT INTO vals (k, i, d, s) VALUES (?, ?, ?, ?)", {std::string("a"), big, 0.1, utf8});
  write_sql("INSERT INTO vals (k, i, d, s) VALUES (?, ?, ?, ?)", {std::string("b"), small, -1e300, std::string()});
  write_sql("INSERT INTO vals (k, i, d, s) VALUES (?, ?, ?, ?)", {std::string("c"), nullptr, nullptr, nullptr});
  write_sql("INSERT INTO vals (k, i, d, s) VALUES (?, ?, ?, ?)",
            {std::string("d"), opt(std::optional<std::int64_t>(-1)), opt(std::optional<double>(2.5)),
             opt(std::optional<std::string>())});

  Rows rows;
  ASSERT_TRUE(db_->read([&](Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(rows, c.query("SELECT k, i, d, s FROM vals ORDER BY k"));
                   return {};
                 })
                  .ok());
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].str(0), "a");
  EXPECT_EQ(rows[0].i64(1), big);
  EXPECT_EQ(rows[0].f64(2), 0.1);
  EXPECT_EQ(rows[0].str(3), utf8);
  EXPECT_EQ(rows[1].i64(1), small);
  EXPECT_EQ(rows[1].f64(2), -1e300);
  EXPECT_EQ(rows[1].str(3), "");
  EXPECT_FALSE(rows[1].is_null(3));
  for (std::size_t col = 1; col <= 3; ++col) EXPECT_TRUE(rows[2].is_null(col)) << col;
  EXPECT_EQ(rows[2].i64(1), 0);
  EXPECT_EQ(rows[2].str(3), "");
  EXPECT_EQ(rows[2].opt_i64(1), std::nullopt);
  EXPECT_EQ(rows[2].opt_f64(2), std::nullopt);
  EXPECT_EQ(rows[2].opt_str(3), std::nullopt);
  EXPECT_EQ(rows[3].opt_i64(1), -1);
  EXPECT_EQ(rows[3].opt_f64(2), 2.5);
  EXPECT_TRUE(rows[3].is_null(3));
  // Accessors convert across types and an index past the end reads as NULL.
  EXPECT_EQ(rows[3].str(1), "-1");
  EXPECT_EQ(rows[3].str(2), "2.5");
  EXPECT_TRUE(rows[3].boolean(1));
  EXPECT_TRUE(rows[3].is_null(99));
  EXPECT_EQ(rows[3].i64(99), 0);
}

TEST_P(StoreTest, RoundTripsBinaryBlobs) {
  write_sql(std::string("CREATE TABLE blobs (k TEXT PRIMARY KEY, v ") + (pg() ? "BYTEA" : "BLOB") + ")");
  std::string bytes("\x00\xFF\\x41\x01'\"?", 9);
  std::string random = random_bytes(64);
  write_sql("INSERT INTO blobs (k, v) VALUES (?, ?)", {std::string("a"), bytes});
  write_sql("INSERT INTO blobs (k, v) VALUES (?, ?)", {std::string("b"), random});
  std::string a, b;
  ASSERT_TRUE(db_->read([&](Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(auto ra, c.query_one("SELECT v FROM blobs WHERE k = ?", {std::string("a")}));
                   SIKA_ASSIGN_OR_RETURN(auto rb, c.query_one("SELECT v FROM blobs WHERE k = ?", {std::string("b")}));
                   a = ra->str(0);
                   b = rb->str(0);
                   return {};
                 })
                  .ok());
  EXPECT_EQ(a, bytes);
  EXPECT_EQ(b, random);
}

TEST_P(StoreTest, PlaceholdersInsideLiteralsAreNotParameters) {
  create_values_table();
  write_sql("INSERT INTO vals (k, s) VALUES (?, 'what?')", {std::string("q")});
  std::string literal, param, stored, quoted;
  ASSERT_TRUE(db_->read([&](Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(
                       auto row, c.query_one("SELECT '?' AS \"col?\", ? /* ? */, s FROM vals -- ?\n WHERE k = ?",
                                             {std::string("x"), std::string("q")}));
                   literal = row->str(0);
                   param = row->str(1);
                   stored = row->str(2);
                   SIKA_ASSIGN_OR_RETURN(auto q2, c.query_one("SELECT 'it''s ?' || ?", {std::string("!")}));
                   quoted = q2->str(0);
                   return {};
                 })
                  .ok());
  EXPECT_EQ(literal, "?");
  EXPECT_EQ(param, "x");
  EXPECT_EQ(stored, "what?");
  EXPECT_EQ(quoted, "it's ?!");
}

TEST(StoreRewrite, RewritesOnlyRealPlaceholders) {
  auto r = detail::rewrite_placeholders(
      "SELECT ?, '?''?', \"a?\"\"?\", E'\\'?', $$ ? $$, $t$ ? $t$, a$b, ? -- ?\n/* ? /* ? */ ? */ ?");
  EXPECT_EQ(r.sql, "SELECT $1, '?''?', \"a?\"\"?\", E'\\'?', $$ ? $$, $t$ ? $t$, a$b, $2 -- ?\n/* ? /* ? */ ? */ $3");
  EXPECT_EQ(r.placeholders, 3u);
  auto same = detail::rewrite_placeholders("SELECT 1");
  EXPECT_EQ(same.sql, "SELECT 1");
  EXPECT_EQ(same.placeholders, 0u);
}

TEST(StoreRewrite, RedactsBoundValues) {
  EXPECT_EQ(detail::redact_params("invalid input syntax for type bigint: \"hunter22\"", {std::string("hunter22")}),
            "invalid input syntax for type bigint: \"<param>\"");
  EXPECT_EQ(detail::redact_params("value 123456 out of range", {std::int64_t{123456}}), "value <param> out of range");
}

TEST_P(StoreTest, ConstraintViolationsAreConflicts) {
  write_sql("CREATE TABLE parents (id BIGINT PRIMARY KEY, email TEXT UNIQUE, amount BIGINT CHECK (amount >= 0))");
  write_sql("CREATE TABLE children (id BIGINT PRIMARY KEY, parent_id BIGINT REFERENCES parents(id))");
  write_sql("INSERT INTO parents (id, email, amount) VALUES (1, 'a@example.com', 5)");
  struct Case {
    const char* sql;
    Params params;
  };
  std::vector<Case> cases = {
      {"INSERT INTO parents (id, email, amount) VALUES (?, ?, 1)", {std::int64_t{2}, std::string("a@example.com")}},
      {"INSERT INTO parents (id, email, amount) VALUES (?, ?, 1)", {std::int64_t{1}, std::string("b@example.com")}},
      {"INSERT INTO parents (id, email, amount) VALUES (?, ?, ?)",
       {std::int64_t{3}, std::string("c@example.com"), std::int64_t{-1}}},
      {"INSERT INTO children (id, parent_id) VALUES (?, ?)", {std::int64_t{1}, std::int64_t{42}}},
  };
  for (const auto& k : cases) {
    Status st = db_->write([&](Conn& c) -> Status {
      SIKA_TRY(c.exec(k.sql, k.params));
      return {};
    });
    ASSERT_FALSE(st.ok()) << k.sql;
    EXPECT_EQ(st.error().kind, sika::ErrorKind::conflict) << k.sql;
    EXPECT_EQ(st.error().code, "conflict");
    ASSERT_TRUE(st.error().details.is_object()) << details_text(st.error());
    const auto* name = st.error().details.as_object().if_contains("constraint");
    ASSERT_NE(name, nullptr);
    EXPECT_FALSE(name->as_string().empty());
    // The conflicting value (an e-mail address here) is never part of the error.
    EXPECT_EQ(details_text(st.error()).find("example.com"), std::string::npos) << details_text(st.error());
  }
  EXPECT_EQ(count("SELECT COUNT(*) FROM parents"), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM children"), 0);
}

TEST_P(StoreTest, ErrorsNeverEchoBoundValues) {
  create_values_table();
  const std::string secret = "sk_live_supersecretvalue";
  Status st = db_->write([&](Conn& c) -> Status {
    SIKA_TRY(c.exec("INSERT INTO vals (k, i) VALUES (?, ?)", {std::string("k"), secret}));
    SIKA_TRY(c.exec("SELECT no_such_column FROM vals WHERE s = ?", {secret}));
    return {};
  });
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, sika::ErrorKind::internal);
  EXPECT_EQ(details_text(st.error()).find("supersecret"), std::string::npos) << details_text(st.error());
}

TEST_P(StoreTest, FailingWriteUnitLeavesNothing) {
  create_values_table();
  Status st = db_->write([&](Conn& c) -> Status {
    SIKA_TRY(c.exec("INSERT INTO vals (k, i) VALUES (?, ?)", {std::string("x"), std::int64_t{1}}));
    return not_found(boost::json::string("on purpose"));
  });
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, sika::ErrorKind::not_found);
  EXPECT_EQ(st.error().details.as_string(), "on purpose");

  st = db_->write([&](Conn& c) -> Status {
    SIKA_TRY(c.exec("INSERT INTO vals (k, i) VALUES (?, ?)", {std::string("y"), std::int64_t{1}}));
    throw std::runtime_error("boom");
  });
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, sika::ErrorKind::internal);
  EXPECT_EQ(st.error().code, "internal_error");

  // A unit that swallows a failed statement still fails as a whole (the transaction is aborted).
  write_sql("INSERT INTO vals (k, i) VALUES ('dup', 0)");
  st = db_->write([&](Conn& c) -> Status {
    SIKA_TRY(c.exec("INSERT INTO vals (k, i) VALUES (?, ?)", {std::string("z"), std::int64_t{1}}));
    auto dup = c.exec("INSERT INTO vals (k, i) VALUES ('dup', 1)");
    EXPECT_FALSE(dup.ok());
    auto after = c.exec("UPDATE vals SET i = 2 WHERE k = 'z'");
    EXPECT_FALSE(after.ok());
    return {};
  });
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, sika::ErrorKind::conflict);
  EXPECT_EQ(count("SELECT COUNT(*) FROM vals"), 1);
}

// Several items in one unit, each all or nothing: a failing item (here a constraint violation,
// which on PostgreSQL would otherwise abort the whole transaction) leaves nothing of its own and
// the unit goes on and commits the others.
TEST_P(StoreTest, NestedItemFailsAloneInsideItsUnit) {
  create_values_table();
  write_sql("INSERT INTO vals (k, i) VALUES ('dup', 0)");
  std::vector<Status> items;
  ASSERT_TRUE(db_->write([&](Conn& c) -> Status {
                   items.clear();
                   items.push_back(c.nested([&]() -> Status {
                     SIKA_TRY(c.exec("INSERT INTO vals (k, i) VALUES ('a', 1)"));
                     return {};
                   }));
                   items.push_back(c.nested([&]() -> Status {
                     SIKA_TRY(c.exec("INSERT INTO vals (k, i) VALUES ('b', 1)"));
                     SIKA_TRY(c.exec("INSERT INTO vals (k, i) VALUES ('dup', 1)"));  // fails: b goes too
                     return {};
                   }));
                   items.push_back(c.nested([&]() -> Status {
                     SIKA_TRY(c.exec("INSERT INTO vals (k, i) VALUES ('c', 1)"));
                     return conflict(boost::json::string("refused by the item"));  // c goes too
                   }));
                   items.push_back(c.nested([&]() -> Status {
                     SIKA_TRY(c.exec("UPDATE vals SET i = 5 WHERE k = 'a'"));
                     return {};
                   }));
                   return {};
                 })
                  .ok());
  ASSERT_EQ(items.size(), 4u);
  EXPECT_TRUE(items[0].ok());
  ASSERT_FALSE(items[1].ok());
  EXPECT_EQ(items[1].error().kind, sika::ErrorKind::conflict);
  ASSERT_FALSE(items[2].ok());
  EXPECT_EQ(items[2].error().details.as_string(), "refused by the item");
  EXPECT_TRUE(items[3].ok());
  EXPECT_EQ(count("SELECT COUNT(*) FROM vals"), 2);
  EXPECT_EQ(count("SELECT i FROM vals WHERE k = 'a'"), 5);
  EXPECT_EQ(count("SELECT COUNT(*) FROM vals WHERE k IN ('b', 'c')"), 0);
}

TEST_P(StoreTest, ExecReportsChangedRows) {
  create_values_table();
  std::int64_t inserted = 0, updated = 0, selected = -1, none = -1;
  ASSERT_TRUE(db_->write([&](Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(inserted,
                                         c.exec("INSERT INTO vals (k, i) VALUES ('a', 1), ('b', 1), ('c', 2)"));
                   SIKA_ASSIGN_OR_RETURN(
                       updated, c.exec("UPDATE vals SET i = ? WHERE i = ?", {std::int64_t{5}, std::int64_t{1}}));
                   SIKA_ASSIGN_OR_RETURN(selected, c.exec("SELECT * FROM vals"));
                   SIKA_ASSIGN_OR_RETURN(none, c.exec("UPDATE vals SET i = 0 WHERE k = 'missing'"));
                   return {};
                 })
                  .ok());
  EXPECT_EQ(inserted, 3);
  EXPECT_EQ(updated, 2);
  EXPECT_EQ(selected, 0);
  EXPECT_EQ(none, 0);
  std::optional<std::int64_t> returned;
  ASSERT_TRUE(db_->write([&](Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(
                       auto row, c.query_one("UPDATE vals SET i = i + 1 WHERE k = ? RETURNING i", {std::string("c")}));
                   returned = row ? row->opt_i64(0) : std::nullopt;
                   return {};
                 })
                  .ok());
  EXPECT_EQ(returned, 3);
}

struct KeyedValue {
  std::string k;
  std::int64_t i = 0;
};
KeyedValue keyed_value_from(const Row& r) { return {r.str(0), r.i64(1)}; }

TEST_P(StoreTest, ReadOneAndReadAllUseTheRowReader) {
  create_values_table();
  write_sql("INSERT INTO vals (k, i) VALUES ('a', 1), ('b', 2), ('c', 3)");
  std::optional<KeyedValue> b, missing;
  std::vector<KeyedValue> desc, none;
  ASSERT_TRUE(db_->read([&](Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(
                       b, read_one(c, "SELECT k, i FROM vals WHERE k = ?", {std::string("b")}, keyed_value_from));
                   SIKA_ASSIGN_OR_RETURN(
                       missing, read_one(c, "SELECT k, i FROM vals WHERE k = ?", {std::string("z")}, keyed_value_from));
                   SIKA_ASSIGN_OR_RETURN(desc, read_all(c, "SELECT k, i FROM vals WHERE i > ? ORDER BY k DESC",
                                                        {std::int64_t{1}}, keyed_value_from));
                   SIKA_ASSIGN_OR_RETURN(none, read_all(c, "SELECT k, i FROM vals WHERE i > 9", {}, keyed_value_from));
                   return {};
                 })
                  .ok());
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->k, "b");
  EXPECT_EQ(b->i, 2);
  EXPECT_FALSE(missing.has_value());
  ASSERT_EQ(desc.size(), 2u);
  EXPECT_EQ(desc[0].k, "c");
  EXPECT_EQ(desc[1].k, "b");
  EXPECT_TRUE(none.empty());
  Status bad = db_->read([&](Conn& c) -> Status {
    SIKA_TRY(read_one(c, "SELECT k, i FROM no_such_table", {}, keyed_value_from));
    return {};
  });
  EXPECT_FALSE(bad.ok());
}

TEST_P(StoreTest, PlaceholderCountMismatchIsAnError) {
  create_values_table();
  Status st = read_sql("SELECT * FROM vals WHERE k = ? AND i = ?", {std::string("a")});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, sika::ErrorKind::internal);
}

TEST_P(StoreTest, ReadsCannotWrite) {
  create_values_table();
  Status st = db_->read([&](Conn& c) -> Status {
    SIKA_TRY(c.exec("INSERT INTO vals (k) VALUES ('r')"));
    return {};
  });
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(count("SELECT COUNT(*) FROM vals"), 0);
}

// A read's transaction starts with its first statement (on PostgreSQL, BEGIN goes out with it):
// every statement of the read sees that one snapshot, a read without statements opens nothing, and
// a read whose first statement fails leaves its connection fit for the next one.
TEST_P(StoreTest, AReadSeesOneSnapshotFromItsFirstStatement) {
  create_values_table();
  write_sql("INSERT INTO vals (k, i) VALUES ('a', 1)");
  std::int64_t before = -1;
  std::int64_t after = -1;
  Status committed;
  Status st = db_->read([&](Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto first, c.query_one("SELECT COUNT(*) FROM vals"));
    before = first->i64(0);
    committed = db_->write([](Conn& w) -> Status {
      SIKA_TRY(w.exec("INSERT INTO vals (k, i) VALUES ('b', 1)"));
      return {};
    });
    SIKA_ASSIGN_OR_RETURN(auto second, c.query_one("SELECT COUNT(*) FROM vals"));
    after = second->i64(0);
    return {};
  });
  ASSERT_TRUE(st.ok()) << details_text(st.error());
  ASSERT_TRUE(committed.ok()) << details_text(committed.error());
  EXPECT_EQ(before, 1);
  EXPECT_EQ(after, 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM vals"), 2);

  for (int i = 0; i < 8; ++i) {  // more reads than the pool has connections
    EXPECT_TRUE(db_->read([](Conn&) -> Status { return {}; }).ok());
    Status bad = read_sql("SELECT no_such_column FROM vals");
    EXPECT_FALSE(bad.ok());
    EXPECT_EQ(count("SELECT COUNT(*) FROM vals"), 2);
  }
}

TEST_P(StoreTest, ConcurrentWritersAreAllDurable) {
  create_values_table();
  constexpr int kThreads = 16;
  constexpr int kWrites = 40;
  write_concurrently(kThreads, kWrites, [](Conn& c, int t, int w) -> Status {
    SIKA_TRY(c.exec("INSERT INTO vals (k, i) VALUES (?, ?)",
                    {std::to_string(t) + "-" + std::to_string(w), std::int64_t{t}}));
    return {};
  });
  // Durable: a fresh connection (a restart, for SQLite) sees every row.
  db_->close();
  db_ = open_db();
  EXPECT_EQ(count("SELECT COUNT(*) FROM vals"), kThreads * kWrites);
}

TEST_P(StoreTest, HotCounterUnitsCountEveryIncrementWithoutRetries) {
  write_sql("CREATE TABLE counters (k TEXT PRIMARY KEY, n BIGINT NOT NULL)");
  constexpr int kThreads = 16;
  constexpr int kIncrements = 20;
  const std::uint64_t retries_before = db_->stats().retries;
  write_concurrently(kThreads, kIncrements, [&](Conn& c, int, int) -> Status {
    SIKA_TRY(counter_isolation(c));
    SIKA_TRY(
        c.query_one("INSERT INTO counters (k, n) VALUES ('hot', 1) ON CONFLICT (k) DO UPDATE SET "
                    "n = counters.n + 1 RETURNING n"));
    return {};
  });
  EXPECT_EQ(count("SELECT n FROM counters WHERE k = 'hot'"), kThreads * kIncrements);
  // One row updated by every unit at once: no serialization failure had to be retried.
  EXPECT_EQ(db_->stats().retries, retries_before);
}

TEST_P(StoreTest, FailingUnitInABatchRollsBackAlone) {
  create_values_table();
  std::latch blocker_running(1);
  std::thread blocker([&] {
    Status st = db_->write([&](Conn& c) -> Status {
      SIKA_TRY(c.exec("INSERT INTO vals (k) VALUES ('blocker')"));
      blocker_running.count_down();
      // Holds the SQLite writer so the next units queue up and share one batch.
      std::this_thread::sleep_for(500ms);
      return {};
    });
    EXPECT_TRUE(st.ok());
  });
  blocker_running.wait();
  std::vector<std::thread> units;
  std::vector<Status> results(5);
  for (int i = 0; i < 5; ++i) {
    units.emplace_back([&, i] {
      results[i] = db_->write([&](Conn& c) -> Status {
        SIKA_TRY(c.exec("INSERT INTO vals (k) VALUES (?)", {"unit-" + std::to_string(i)}));
        if (i == 2) return bad_request("rejected", boost::json::string("unit 2 fails"));
        if (i == 3) SIKA_TRY(c.exec("INSERT INTO vals (k) VALUES ('blocker')"));  // conflicts
        return {};
      });
    });
  }
  for (auto& th : units) th.join();
  blocker.join();
  EXPECT_TRUE(results[0].ok());
  EXPECT_TRUE(results[1].ok());
  ASSERT_FALSE(results[2].ok());
  EXPECT_EQ(results[2].error().code, "rejected");
  ASSERT_FALSE(results[3].ok());
  EXPECT_EQ(results[3].error().kind, sika::ErrorKind::conflict);
  EXPECT_TRUE(results[4].ok());
  EXPECT_EQ(count("SELECT COUNT(*) FROM vals"), 4);
  EXPECT_EQ(count("SELECT COUNT(*) FROM vals WHERE k IN ('unit-2', 'unit-3')"), 0);
  if (!pg()) {
    DbStats s = db_->stats();
    EXPECT_GE(s.largest_batch, 5u) << "the five queued units should have shared one transaction";
    EXPECT_GE(s.batched_units, 5u);
  }
}

// Waits for a number of write_async completions.
class Completions {
 public:
  void add(Status st) {
    std::lock_guard lk(mu_);
    results_.push_back(std::move(st));
    cv_.notify_all();
  }
  std::vector<Status> wait_for(std::size_t n) {
    std::unique_lock lk(mu_);
    EXPECT_TRUE(cv_.wait_for(lk, std::chrono::seconds(30), [&] { return results_.size() >= n; }));
    return results_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Status> results_;
};

TEST_P(StoreTest, WriteAsyncCommitsDurablyBeforeItsCompletion) {
  create_values_table();
  EXPECT_TRUE(db_->writes_async());
  constexpr int kThreads = 8;
  constexpr int kWrites = 50;
  Completions done;
  std::atomic<int> seen_before_done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int w = 0; w < kWrites; ++w) {
        std::string key = std::to_string(t) + "-" + std::to_string(w);
        db_->write_async(
            [key](Conn& c) -> Status {
              SIKA_TRY(c.exec("INSERT INTO vals (k, i) VALUES (?, 1)", {key}));
              return {};
            },
            [&, key](Status st) {
              // When the completion runs, the row is committed: a reader sees it.
              if (st && count("SELECT COUNT(*) FROM vals WHERE k = ?", {key}) == 1) seen_before_done.fetch_add(1);
              done.add(std::move(st));
            });
      }
    });
  }
  for (auto& th : threads) th.join();
  auto results = done.wait_for(kThreads * kWrites);
  ASSERT_EQ(results.size(), static_cast<std::size_t>(kThreads * kWrites));  // each completion exactly once
  for (const auto& st : results) EXPECT_TRUE(st.ok());
  EXPECT_EQ(seen_before_done.load(), kThreads * kWrites);
  db_->close();
  db_ = open_db();
  EXPECT_EQ(count("SELECT COUNT(*) FROM vals"), kThreads * kWrites);
}

// SQLite: the WAL is copied into the database by the checkpointer thread, not by the writer after
// its commits, and what the writer commits meanwhile is all there.
TEST_P(StoreTest, TheWalIsCheckpointedOffTheWriterThread) {
  if (pg()) GTEST_SKIP() << "SQLite only";
  auto& by_checkpointer = metrics::registry().counter("sika_db_checkpoints_total", "", {{"thread", "checkpointer"}});
  const std::uint64_t before = by_checkpointer.value();
  write_sql("CREATE TABLE pages (id INTEGER PRIMARY KEY, b TEXT NOT NULL)");
  // About 3,000 pages of 4 KiB: past the 1,000 that call the checkpointer, three times over.
  const std::string blob(4000, 'x');
  for (int unit = 0; unit < 120; ++unit) {
    Status st = db_->write([&](Conn& c) -> Status {
      for (int i = 0; i < 25; ++i) SIKA_TRY(c.exec("INSERT INTO pages (b) VALUES (?)", {blob}));
      return {};
    });
    ASSERT_TRUE(st.ok()) << details_text(st.error());
  }
  for (int i = 0; i < 500 && by_checkpointer.value() == before; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_GT(by_checkpointer.value(), before);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pages"), 120 * 25);
  db_->close();
  db_ = open_db();
  EXPECT_EQ(count("SELECT COUNT(*) FROM pages WHERE length(b) = 4000"), 120 * 25);
}

// insert_id gives each inserted row's own id (not another row's, not a neighbour statement's),
// and nothing when ON CONFLICT DO NOTHING skipped the row.
TEST_P(StoreTest, InsertIdReturnsTheNewRowsIdOrNothingWhenSkipped) {
  write_sql(std::string("CREATE TABLE items (id ") +
            (pg() ? "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT") +
            ", k TEXT NOT NULL UNIQUE)");
  write_sql("CREATE TABLE other (id " +
            std::string(pg() ? "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY" : "INTEGER PRIMARY KEY") +
            ", v TEXT)");
  std::vector<std::optional<std::int64_t>> ids;
  Status st = db_->write([&](Conn& c) -> Status {
    for (const char* k : {"a", "b", "a", "c"}) {
      // Another table's insert in between must not leak its id into the next answer.
      SIKA_TRY(c.exec("INSERT INTO other (v) VALUES ('x'), ('y'), ('z')"));
      SIKA_ASSIGN_OR_RETURN(
          auto id, c.insert_id("INSERT INTO items (k) VALUES (?) ON CONFLICT (k) DO NOTHING", {std::string(k)}));
      ids.push_back(id);
    }
    return {};
  });
  ASSERT_TRUE(st.ok()) << details_text(st.error());
  ASSERT_EQ(ids.size(), 4u);
  ASSERT_TRUE(ids[0] && ids[1] && ids[3]);
  EXPECT_FALSE(ids[2].has_value());
  EXPECT_EQ(count("SELECT id FROM items WHERE k = 'a'"), *ids[0]);
  EXPECT_EQ(count("SELECT id FROM items WHERE k = 'b'"), *ids[1]);
  EXPECT_EQ(count("SELECT id FROM items WHERE k = 'c'"), *ids[3]);
  EXPECT_EQ(count("SELECT COUNT(*) FROM items"), 3);
}

// SQLite: the writer hands a transaction's WAL frames to the kernel in a few large writes, and
// loses nothing doing so: not in a transaction bigger than its page cache (pages spilled to the
// WAL before the commit, then read back and written again in place), nor in many small ones.
TEST_P(StoreTest, TheWriterGathersWalFramesIntoFewWrites) {
  if (pg()) GTEST_SKIP() << "SQLite only";
  auto& asked = metrics::registry().counter("sika_db_wal_writes_total", "", {{"kind", "asked"}});
  auto& made = metrics::registry().counter("sika_db_wal_writes_total", "", {{"kind", "made"}});
  write_sql("CREATE TABLE pages (id INTEGER PRIMARY KEY, n INTEGER NOT NULL, b TEXT NOT NULL)");
  const std::string blob(4000, 'x');
  auto insert_pages = [&](Conn& c, int from, int to) -> Status {
    for (int i = from; i < to; ++i) SIKA_TRY(c.exec("INSERT INTO pages (n, b) VALUES (?, ?)", {std::int64_t{i}, blob}));
    return {};
  };
  // About 24 MiB in one unit (six times the writer's cache, three times the gathering limit),
  // then 50 small units.
  const std::uint64_t asked0 = asked.value(), made0 = made.value();
  Status st = db_->write([&](Conn& c) { return insert_pages(c, 0, 6000); });
  ASSERT_TRUE(st.ok()) << details_text(st.error());
  for (int unit = 0; unit < 50; ++unit) {
    Status small = db_->write([&](Conn& c) -> Status {
      for (int i = 0; i < 10; ++i) SIKA_TRY(c.exec("INSERT INTO pages (n, b) VALUES (0, ?)", {std::string(100, 'y')}));
      return {};
    });
    ASSERT_TRUE(small.ok()) << details_text(small.error());
  }
  const std::uint64_t asked_n = asked.value() - asked0, made_n = made.value() - made0;
  EXPECT_GT(asked_n, 12000u);        // two per page: a frame's header, then the page
  EXPECT_LT(made_n * 10, asked_n);   // gathered: ten frames' writes or more per write made
  EXPECT_GE(made_n, 50u + 24u * 8);  // one per commit at least; the big unit in pieces of 124 KiB

  // Pages spilled early in a unit are changed again and read back before it commits.
  std::int64_t seen_in_unit = -1;
  st = db_->write([&](Conn& c) -> Status {
    SIKA_TRY(insert_pages(c, 6000, 9000));
    SIKA_TRY(c.exec("UPDATE pages SET n = n + 1000000 WHERE id <= 100 OR id > 8900"));
    SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT SUM(n) FROM pages WHERE length(b) = 4000"));
    seen_in_unit = row ? row->i64(0) : -1;
    return {};
  });
  ASSERT_TRUE(st.ok()) << details_text(st.error());
  // Rows 1..6000 hold n = 0..5999, rows 6501..9500 n = 6000..8999 (rows 6001..6500 are the small
  // ones); 100 + 600 of them got a million more.
  const std::int64_t expected = 8999LL * 9000 / 2 + 700LL * 1000000;
  EXPECT_EQ(seen_in_unit, expected);
  EXPECT_EQ(count("SELECT SUM(n) FROM pages WHERE length(b) = 4000"), expected);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pages"), 9000 + 500);
  db_->close();
  db_ = open_db();
  EXPECT_EQ(count("SELECT COUNT(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'"), 1);
  EXPECT_EQ(count("SELECT SUM(n) FROM pages WHERE length(b) = 4000"), expected);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pages"), 9000 + 500);
}

// write_async hands the unit over and returns: the unit runs after it returned (it waits here for
// the caller to say so; a synchronous write_async would run it first and time out waiting).
TEST_P(StoreTest, WriteAsyncReturnsBeforeItsUnitRuns) {
  create_values_table();
  std::promise<void> returned;
  std::shared_future<void> gate = returned.get_future().share();
  std::atomic<bool> ran_after_return{false};
  Completions done;
  db_->write_async(
      [&ran_after_return, gate](Conn& c) -> Status {
        ran_after_return = gate.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
        SIKA_TRY(c.exec("INSERT INTO vals (k, i) VALUES ('late', 1)"));
        return {};
      },
      [&](Status st) { done.add(std::move(st)); });
  returned.set_value();
  auto results = done.wait_for(1);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].ok());
  EXPECT_TRUE(ran_after_return.load());
  EXPECT_EQ(count("SELECT COUNT(*) FROM vals WHERE k = 'late'"), 1);
}

// A write unit that inserts the row k.
std::function<Status(Conn&)> insert_val(std::string k) {
  return [k = std::move(k)](Conn& c) -> Status {
    SIKA_TRY(c.exec("INSERT INTO vals (k, i) VALUES (?, 1)", {k}));
    return {};
  };
}

// A completion may queue the next unit (a request's second write) and even write synchronously:
// neither waits for the thread that is answering it.
TEST_P(StoreTest, ACompletionMayQueueAnotherUnitOrWrite) {
  create_values_table();
  Completions done;
  Status inner_write;
  db_->write_async(insert_val("first"), [&](Status st) {
    if (st) {
      db_->write_async(insert_val("second"), [&](Status second) { done.add(std::move(second)); });
      if (pg())  // SQLite's completer may not write synchronously (it would wait for itself)
        inner_write = db_->write(insert_val("third"));
    }
    // Last: the second completion may run on another writer before this one has finished.
    done.add(std::move(st));
  });
  auto results = done.wait_for(2);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(results[0].ok());
  EXPECT_TRUE(results[1].ok());
  if (pg()) {
    EXPECT_TRUE(inner_write.ok());
    EXPECT_EQ(count("SELECT COUNT(*) FROM vals WHERE k = 'third'"), 1);
  }
  EXPECT_EQ(count("SELECT COUNT(*) FROM vals WHERE k IN ('first', 'second')"), 2);
}

TEST_P(StoreTest, WriteAsyncFailureLeavesNothingAndIsReported) {
  create_values_table();
  write_sql("INSERT INTO vals (k, i) VALUES ('dup', 0)");
  Completions done;
  db_->write_async(
      [](Conn& c) -> Status {
        SIKA_TRY(c.exec("INSERT INTO vals (k, i) VALUES ('a', 1)"));
        return not_found(boost::json::string("on purpose"));
      },
      [&](Status st) { done.add(std::move(st)); });
  db_->write_async(
      [](Conn& c) -> Status {
        SIKA_TRY(c.exec("INSERT INTO vals (k, i) VALUES ('b', 1)"));
        SIKA_TRY(c.exec("INSERT INTO vals (k, i) VALUES ('dup', 1)"));
        return {};
      },
      [&](Status st) { done.add(std::move(st)); });
  db_->write_async(
      [](Conn& c) -> Status {
        SIKA_TRY(c.exec("INSERT INTO vals (k, i) VALUES ('c', 1)"));
        return {};
      },
      [&](Status st) { done.add(std::move(st)); });
  auto results = done.wait_for(3);
  ASSERT_EQ(results.size(), 3u);
  int failed = 0;
  for (const auto& st : results) failed += st.ok() ? 0 : 1;
  EXPECT_EQ(failed, 2);
  EXPECT_EQ(count("SELECT COUNT(*) FROM vals WHERE k IN ('a', 'b')"), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM vals WHERE k = 'c'"), 1);
}

TEST_P(StoreTest, WriteAsyncOnAClosedDbCompletesWithUnavailable) {
  db_->close();
  Completions done;
  db_->write_async([](Conn&) -> Status { return {}; }, [&](Status st) { done.add(std::move(st)); });
  auto results = done.wait_for(1);
  ASSERT_EQ(results.size(), 1u);
  ASSERT_FALSE(results[0].ok());
  EXPECT_EQ(results[0].error().kind, sika::ErrorKind::unavailable);
}

TEST_P(StoreTest, NestedWriteIsRefusedOnSqlite) {
  if (pg()) GTEST_SKIP() << "PostgreSQL runs a nested write on another connection";
  Status inner = Status();
  Status outer = db_->write([&](Conn&) -> Status {
    inner = db_->write([](Conn&) -> Status { return {}; });
    return {};
  });
  EXPECT_TRUE(outer.ok());
  ASSERT_FALSE(inner.ok());
  EXPECT_EQ(inner.error().kind, sika::ErrorKind::internal);
}

TEST_P(StoreTest, ClosedDbRefusesWork) {
  db_->close();
  Status r = db_->read([](Conn&) -> Status { return {}; });
  Status w = db_->write([](Conn&) -> Status { return {}; });
  ASSERT_FALSE(r.ok());
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(r.error().kind, sika::ErrorKind::unavailable);
  EXPECT_EQ(w.error().kind, sika::ErrorKind::unavailable);
  EXPECT_FALSE(db_->ping().ok());
}

TEST_P(StoreTest, MigrationsAreIdempotent) {
  auto v0 = schema_version(*db_);
  ASSERT_TRUE(v0.ok());
  EXPECT_EQ(*v0, 0);
  auto first = migrate(*db_);
  ASSERT_TRUE(first.ok()) << details_text(first.error());
  std::vector<int> all;
  for (const auto& m : all_migrations()) all.push_back(m.version);
  EXPECT_EQ(*first, all);
  auto second = migrate(*db_);
  ASSERT_TRUE(second.ok()) << details_text(second.error());
  EXPECT_TRUE(second->empty());
  auto v = schema_version(*db_);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, all.back());
  EXPECT_EQ(count("SELECT COUNT(*) FROM schema_migrations"), static_cast<std::int64_t>(all.size()));
  // {{pk}} became an auto-increment key on this dialect.
  write_sql("INSERT INTO merchants (matricule, name, created_at) VALUES ('MCH-1', 'One', 1)");
  write_sql("INSERT INTO merchants (matricule, name, created_at) VALUES ('MCH-2', 'Two', 2)");
  EXPECT_EQ(count("SELECT MAX(id) - MIN(id) FROM merchants"), 1);
}

TEST_P(StoreTest, ConcurrentMigrationsFromTwoNodesApplyEachVersionOnce) {
  auto other = open_db();
  ASSERT_NE(other, nullptr);
  Result<std::vector<int>> a = std::vector<int>{}, b = std::vector<int>{};
  std::thread ta([&] { a = migrate(*db_); });
  std::thread tb([&] { b = migrate(*other); });
  ta.join();
  tb.join();
  ASSERT_TRUE(a.ok()) << details_text(a.error());
  ASSERT_TRUE(b.ok()) << details_text(b.error());
  EXPECT_EQ(a->size() + b->size(), all_migrations().size());
  EXPECT_EQ(count("SELECT COUNT(*) FROM schema_migrations"), static_cast<std::int64_t>(all_migrations().size()));
  other->close();
}

TEST_P(StoreTest, OutboxNumbersEventsPerSubject) {
  ASSERT_TRUE(migrate(*db_).ok());
  std::vector<AppendedEvent> events;
  boost::json::object payload;
  payload["amount"] = 1500;
  payload["note"] = "caf\xC3\xA9";
  for (const char* subject : {"TX-A", "TX-A", "TX-B", "TX-A"}) {
    ASSERT_TRUE(db_->write([&](Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(auto e,
                                           append_event(c, std::nullopt, "payment.updated", subject, payload, 1234));
                     events.push_back(e);
                     return {};
                   })
                    .ok());
  }
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].sequence, 1);
  EXPECT_EQ(events[1].sequence, 2);
  EXPECT_EQ(events[2].sequence, 1);
  EXPECT_EQ(events[3].sequence, 3);
  std::set<std::string> ids;
  for (const auto& e : events) {
    EXPECT_TRUE(e.event_id.starts_with("evt_")) << e.event_id;
    EXPECT_GE(e.event_id.size(), 20u);
    ids.insert(e.event_id);
  }
  EXPECT_EQ(ids.size(), 4u);
  std::string stored;
  ASSERT_TRUE(db_->read([&](Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT payload, event_type, created_at FROM events "
                                                               "WHERE event_id = ?",
                                                               {events[2].event_id}));
                   stored = row->str(0);
                   EXPECT_EQ(row->str(1), "payment.updated");
                   EXPECT_EQ(row->i64(2), 1234);
                   return {};
                 })
                  .ok());
  EXPECT_EQ(boost::json::parse(stored), boost::json::value(payload));
}

TEST_P(StoreTest, ConcurrentOutboxAppendsGetDistinctSequences) {
  ASSERT_TRUE(migrate(*db_).ok());
  constexpr int kThreads = 6;
  constexpr int kEach = 5;
  write_concurrently(kThreads, kEach, [](Conn& c, int, int) -> Status {
    SIKA_TRY(append_event(c, std::nullopt, "payment.updated", "TX-HOT", {}, 1));
    return {};
  });
  EXPECT_EQ(count("SELECT COUNT(DISTINCT sequence) FROM events WHERE subject = 'TX-HOT'"), kThreads * kEach);
  EXPECT_EQ(count("SELECT MAX(sequence) FROM events WHERE subject = 'TX-HOT'"), kThreads * kEach);
}

TEST_P(StoreTest, PostgresReplacesTerminatedConnections) {
  if (!pg()) GTEST_SKIP() << "PostgreSQL only";
  create_values_table();
  ASSERT_TRUE(db_->ping().ok());
  // Another session kills every pooled connection, as a server restart would.
  admin_exec(admin_dsn_, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + database_ +
                             "' AND pid <> pg_backend_pid()");
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(db_->ping().ok());
  write_sql("INSERT INTO vals (k) VALUES ('after-kill')");
  EXPECT_EQ(count("SELECT COUNT(*) FROM vals"), 1);
  EXPECT_GE(db_->stats().reconnects, 1u);

  // A connection that dies in the middle of a read: the read runs again on a new connection.
  int read_calls = 0;
  Status r = db_->read([&](Conn& c) -> Status {
    if (++read_calls == 1) SIKA_TRY(c.query("SELECT pg_terminate_backend(pg_backend_pid())"));
    SIKA_TRY(c.query("SELECT 1"));
    return {};
  });
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : details_text(r.error()));
  EXPECT_EQ(read_calls, 2);

  // ... and in the middle of a write unit (before COMMIT): the unit runs again, exactly once.
  int write_calls = 0;
  Status w = db_->write([&](Conn& c) -> Status {
    SIKA_TRY(c.exec("INSERT INTO vals (k) VALUES ('mid-unit')"));
    if (++write_calls == 1) SIKA_TRY(c.query("SELECT pg_terminate_backend(pg_backend_pid())"));
    return {};
  });
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : details_text(w.error()));
  EXPECT_EQ(write_calls, 2);
  EXPECT_EQ(count("SELECT COUNT(*) FROM vals WHERE k = 'mid-unit'"), 1);
  EXPECT_GE(db_->stats().retries, 2u);
}

// Many threads incrementing one row (read, then write what was read plus one) is the worst case
// for SERIALIZABLE: nearly every unit conflicts with another. Each must still commit, exactly once.
TEST_P(StoreTest, ConflictingReadModifyWritesAllCommit) {
  write_sql("CREATE TABLE hot (id BIGINT PRIMARY KEY, n BIGINT NOT NULL)");
  write_sql("INSERT INTO hot (id, n) VALUES (1, 0)");
  constexpr int kThreads = 24;
  constexpr int kEach = 20;
  write_concurrently(
      kThreads, kEach,
      [](Conn& c, int, int) -> Status {
        SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT n FROM hot WHERE id = 1"));
        if (!row) return internal_error("row 1 missing");
        // Work between the read and the write widens the window in which others commit first.
        std::this_thread::sleep_for(1ms);
        SIKA_TRY(c.exec("UPDATE hot SET n = ? WHERE id = 1", {row->i64(0) + 1}));
        return {};
      },
      /*together=*/true);
  EXPECT_EQ(count("SELECT n FROM hot WHERE id = 1"), kThreads * kEach);
  // The load did provoke conflicts, so the assertions above tested the retries.
  if (pg()) {
    EXPECT_GT(db_->stats().retries, 0u);
  }
}

// A unit that keeps failing with a serialization failure or a deadlock runs again with backoff
// until the retry deadline, then fails as retryable (503); one that stops conflicting commits.
TEST_P(StoreTest, PostgresRetriesConflictsUntilTheDeadline) {
  if (!pg()) GTEST_SKIP() << "PostgreSQL only";
  for (const char* code : {"serialization_failure", "deadlock_detected"}) {
    write_sql(std::string("CREATE OR REPLACE FUNCTION conflict_now() RETURNS BIGINT LANGUAGE plpgsql AS $$ "
                          "BEGIN RAISE EXCEPTION 'simulated conflict' USING ERRCODE = '") +
              code + "'; END $$");
    int calls = 0;
    auto until = [&](int conflicts) {
      return [&calls, conflicts](Conn& c) -> Status {
        if (++calls <= conflicts) SIKA_TRY(c.query("SELECT conflict_now()"));
        SIKA_TRY(c.exec("CREATE TABLE IF NOT EXISTS survived (k BIGINT)"));
        return {};
      };
    };
    // Under the default deadline (5 s) eight conflicts in a row cost well under a second.
    Status st = db_->write(until(8));
    EXPECT_TRUE(st.ok()) << code << ": " << (st.ok() ? "" : details_text(st.error()));
    EXPECT_EQ(calls, 9) << code;

    DbOptions options;
    options.retry_deadline_ms = 300;
    auto db = open_db(options);
    ASSERT_NE(db, nullptr);
    calls = 0;
    auto started = std::chrono::steady_clock::now();
    st = db->write(until(1 << 30));
    auto elapsed = std::chrono::steady_clock::now() - started;
    ASSERT_FALSE(st.ok()) << code;
    EXPECT_EQ(st.error().kind, ErrorKind::retryable) << code;
    EXPECT_GE(calls, 3) << code;
    // It gave up near the deadline: not at once, and without sleeping past it.
    EXPECT_GE(elapsed, 150ms) << code;
    EXPECT_LT(elapsed, 1500ms) << code;
    db->close();

    // A deadline of 0 runs a unit once.
    options.retry_deadline_ms = 0;
    auto once = open_db(options);
    ASSERT_NE(once, nullptr);
    calls = 0;
    EXPECT_FALSE(once->write(until(1)).ok()) << code;
    EXPECT_EQ(calls, 1) << code;
    once->close();
  }
}

// Group commit on PostgreSQL too: concurrent write units share transactions (each in its own
// savepoint), whatever isolation they ask for, and every one of them commits exactly once.
TEST_P(StoreTest, ConcurrentUnitsShareTransactions) {
  create_values_table();
  write_sql("CREATE TABLE counters (k TEXT PRIMARY KEY, n BIGINT NOT NULL)");
  constexpr int kThreads = 32;
  constexpr int kWrites = 25;
  const DbStats before = db_->stats();
  write_concurrently(
      kThreads, kWrites,
      [&](Conn& c, int t, int w) -> Status {
        // Every third unit asks for READ COMMITTED (a counter), the others run SERIALIZABLE.
        if ((t + w) % 3 == 0) {
          SIKA_TRY(counter_isolation(c));
          SIKA_TRY(
              c.exec("INSERT INTO counters (k, n) VALUES ('hot', 1) ON CONFLICT (k) DO UPDATE SET n = counters.n + 1"));
        }
        SIKA_TRY(c.exec("INSERT INTO vals (k, i) VALUES (?, ?)",
                        {std::to_string(t) + "-" + std::to_string(w), std::int64_t{t}}));
        return {};
      },
      /*together=*/true);
  EXPECT_EQ(count("SELECT COUNT(*) FROM vals"), kThreads * kWrites);
  std::int64_t counters = 0;
  for (int t = 0; t < kThreads; ++t)
    for (int w = 0; w < kWrites; ++w) counters += (t + w) % 3 == 0 ? 1 : 0;
  EXPECT_EQ(count("SELECT n FROM counters WHERE k = 'hot'"), counters);
  const DbStats after = db_->stats();
  EXPECT_EQ(after.write_units - before.write_units, static_cast<std::uint64_t>(kThreads * kWrites));
  EXPECT_GE(after.largest_batch, 2u) << "32 concurrent writers should have shared transactions";
  EXPECT_GE(after.batched_units - before.batched_units, 2u);
  EXPECT_LT(after.commits - before.commits, static_cast<std::uint64_t>(kThreads * kWrites));
}

// A batch whose unit meets a serialization failure is rolled back whole; its units run again,
// and each effect is there exactly once; a unit that failed on its own still fails alone.
TEST_P(StoreTest, ABatchLostToAConflictLeavesEachUnitOnce) {
  if (!pg()) GTEST_SKIP() << "PostgreSQL only (SQLite has no serialization failures)";
  create_values_table();
  write_sql("INSERT INTO vals (k) VALUES ('taken')");
  write_sql(
      "CREATE OR REPLACE FUNCTION conflict_now() RETURNS BIGINT LANGUAGE plpgsql AS $$ "
      "BEGIN RAISE EXCEPTION 'simulated conflict' USING ERRCODE = 'serialization_failure'; END $$");
  constexpr int kUnits = 40;
  std::vector<std::atomic<int>> calls(kUnits);
  std::vector<Status> results(kUnits);
  std::latch start(kUnits);
  std::vector<std::thread> threads;
  for (int i = 0; i < kUnits; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      results[i] = db_->write([&](Conn& c) -> Status {
        const int call = ++calls[i];
        SIKA_TRY(c.exec("INSERT INTO vals (k, i) VALUES (?, ?)", {"unit-" + std::to_string(i), std::int64_t{call}}));
        if (i % 10 == 3 && call == 1) SIKA_TRY(c.query("SELECT conflict_now()"));
        if (i % 10 == 7) SIKA_TRY(c.exec("INSERT INTO vals (k) VALUES ('taken')"));  // fails alone, every time
        return {};
      });
    });
  }
  for (auto& th : threads) th.join();
  for (int i = 0; i < kUnits; ++i) {
    if (i % 10 == 7) {
      ASSERT_FALSE(results[i].ok()) << i;
      EXPECT_EQ(results[i].error().kind, ErrorKind::conflict) << i;
    } else {
      EXPECT_TRUE(results[i].ok()) << i << ": " << (results[i].ok() ? "" : details_text(results[i].error()));
    }
    if (i % 10 == 3) EXPECT_GE(calls[i].load(), 2) << i;
  }
  EXPECT_EQ(count("SELECT COUNT(*) FROM vals WHERE k LIKE 'unit-%'"), kUnits - kUnits / 10);
  EXPECT_EQ(count("SELECT COUNT(*) FROM vals WHERE k = 'taken'"), 1);
  EXPECT_EQ(count("SELECT COUNT(DISTINCT k) FROM vals"), count("SELECT COUNT(*) FROM vals"));
  EXPECT_GT(db_->stats().retries, 0u);
}

// A conflict in a batch does not make every other unit of the batch run in a transaction of its
// own: the batch is split in halves that run again as batches, and only a unit left alone runs
// alone. (Running the 32 units one by one after one conflict is what lets a node that meets
// conflicts fall far behind the others on a shared server.)
TEST_P(StoreTest, AConflictedBatchIsSplitNotRunUnitByUnit) {
  if (!pg()) GTEST_SKIP() << "PostgreSQL only (SQLite has no serialization failures)";
  DbOptions options;
  options.pg_writers = 1;  // one writer: the queued units form one batch behind the blocker
  auto db = open_db(options);
  ASSERT_NE(db, nullptr);
  ASSERT_TRUE(db->write([](Conn& c) -> Status {
                  SIKA_TRY(c.exec("CREATE TABLE split_vals (k TEXT PRIMARY KEY, calls BIGINT NOT NULL)"));
                  SIKA_TRY(
                      c.exec("CREATE OR REPLACE FUNCTION conflict_now() RETURNS BIGINT LANGUAGE plpgsql AS $$ "
                             "BEGIN RAISE EXCEPTION 'simulated conflict' USING ERRCODE = "
                             "'serialization_failure'; END $$"));
                  return {};
                }).ok());
  constexpr int kUnits = 32;
  std::atomic<int> queued{0};
  std::vector<std::atomic<int>> calls(kUnits);
  std::vector<Status> results(kUnits);
  // The blocker holds the only writer until every unit has been handed to write().
  std::thread blocker([&] {
    ASSERT_TRUE(db->write([&](Conn&) -> Status {
                    while (queued.load() < kUnits) std::this_thread::sleep_for(1ms);
                    std::this_thread::sleep_for(200ms);  // the last ones reach the queue
                    return {};
                  }).ok());
  });
  std::this_thread::sleep_for(50ms);  // the blocker is running
  const DbStats before = db->stats();
  std::vector<std::thread> threads;
  for (int i = 0; i < kUnits; ++i) {
    threads.emplace_back([&, i] {
      queued.fetch_add(1);
      results[i] = db->write([&](Conn& c) -> Status {
        const int call = ++calls[i];
        SIKA_TRY(c.exec("INSERT INTO split_vals (k, calls) VALUES (?, ?)",
                        {"unit-" + std::to_string(i), std::int64_t{call}}));
        if (i == kUnits / 2 && call == 1) SIKA_TRY(c.query("SELECT conflict_now()"));
        return {};
      });
    });
  }
  for (auto& th : threads) th.join();
  blocker.join();
  for (int i = 0; i < kUnits; ++i)
    EXPECT_TRUE(results[i].ok()) << i << ": " << (results[i].ok() ? "" : details_text(results[i].error()));
  EXPECT_EQ(calls[kUnits / 2].load(), 2);
  const DbStats after = db->stats();
  // The blocker, then the batch that met the conflict split in halves: a handful of
  // transactions, not one per unit.
  EXPECT_LE(after.commits - before.commits, 8u) << "a conflicted batch was run unit by unit";
  EXPECT_EQ(after.write_units - before.write_units, static_cast<std::uint64_t>(kUnits) + 1);
  auto n = [&](const std::string& sql) {
    std::int64_t v = -1;
    EXPECT_TRUE(db->read([&](Conn& c) -> Status {
                    SIKA_ASSIGN_OR_RETURN(auto row, c.query_one(sql));
                    v = row ? row->i64(0) : -1;
                    return {};
                  }).ok());
    return v;
  };
  EXPECT_EQ(n("SELECT COUNT(*) FROM split_vals"), kUnits);  // each unit's effect once
  EXPECT_TRUE(db->write([](Conn& c) -> Status {
                  SIKA_TRY(c.exec("DROP TABLE split_vals"));
                  return {};
                }).ok());
  db->close();
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });

TEST(StoreOpen, RejectsBadDsns) {
  for (const char* dsn : {"mysql://localhost/db", "", "sqlite://", "sqlite://:memory:", "postgres://%zz@/"}) {
    auto db = open(dsn);
    ASSERT_FALSE(db.ok()) << dsn;
    EXPECT_GE(db.error().kind, sika::ErrorKind::internal) << dsn;
    ASSERT_TRUE(db.error().details.is_string()) << dsn;
    EXPECT_FALSE(db.error().details.as_string().empty());
  }
  auto unsupported = open("mysql://user:hunter2@localhost/db");
  ASSERT_FALSE(unsupported.ok());
  EXPECT_NE(details_text(unsupported.error()).find("mysql"), std::string::npos);
  EXPECT_EQ(details_text(unsupported.error()).find("hunter2"), std::string::npos);
  // Nothing listens on port 1: a clear 503 that never shows the password.
  auto refused = open("postgres://sika:hunter2@127.0.0.1:1/sika?connect_timeout=2");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, sika::ErrorKind::unavailable);
  EXPECT_EQ(details_text(refused.error()).find("hunter2"), std::string::npos) << details_text(refused.error());
}

}  // namespace
}  // namespace sika::store
