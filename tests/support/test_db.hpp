#pragma once
// Shared by the component test suites. A fresh, migrated database per test on the backend named by the test parameter:
// "sqlite" (a file in a temporary directory) or "postgres" (a new database created in SIKA_TEST_PG_DSN). Without that
// variable a PostgreSQL test skips itself, or fails when PostgreSQL is required: under CI (CI=true) or with
// SIKA_REQUIRE_PG=1 (scripts/test.sh), so a run without PostgreSQL never looks green.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <boost/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "core/random.hpp"
#include "store/db.hpp"

namespace sika::testing {

// Returns true iff a missing PostgreSQL must fail the PostgreSQL tests instead of skipping them.
inline bool postgres_required() {
  auto set = [](const char* name, std::string_view yes) {
    const char* v = std::getenv(name);
    return v != nullptr && std::string_view(v) == yes;
  };
  return set("CI", "true") || set("SIKA_REQUIRE_PG", "1");
}

// Returns SIKA_TEST_PG_DSN (an admin DSN), or "" when it is unset.
inline std::string postgres_admin_dsn() {
  const char* v = std::getenv("SIKA_TEST_PG_DSN");
  return v != nullptr ? std::string(v) : std::string();
}

// Sets `dsn` to the PostgreSQL admin DSN, or ends the calling SetUp or test body without one:
// failed when PostgreSQL is required (postgres_required()), skipped otherwise.
#define SIKA_TEST_PG_DSN_OR_END(dsn)                                                           \
  do {                                                                                         \
    (dsn) = ::sika::testing::postgres_admin_dsn();                                             \
    if ((dsn).empty()) {                                                                       \
      if (::sika::testing::postgres_required())                                                \
        GTEST_FAIL() << "SIKA_TEST_PG_DSN is not set, and PostgreSQL is required (CI=true or " \
                        "SIKA_REQUIRE_PG=1): run under scripts/with-postgres.sh";              \
      GTEST_SKIP() << "SIKA_TEST_PG_DSN is not set";                                           \
    }                                                                                          \
  } while (0)

inline std::string with_database(const std::string& dsn, const std::string& name) {
  std::size_t host = dsn.find("://");
  std::size_t slash = dsn.find('/', host + 3);
  std::size_t query = dsn.find('?', host + 3);
  std::string tail = query == std::string::npos ? "" : dsn.substr(query);
  std::string head = slash == std::string::npos || (query != std::string::npos && slash > query)
                         ? dsn.substr(0, query == std::string::npos ? dsn.size() : query)
                         : dsn.substr(0, slash);
  return head + "/" + name + tail;
}

inline void admin_exec(const std::string& dsn, const std::string& sql) {
  PGconn* c = PQconnectdb(dsn.c_str());
  ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
  PGresult* r = PQexec(c, sql.c_str());
  ExecStatusType st = PQresultStatus(r);
  EXPECT_TRUE(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) << sql << ": " << PQerrorMessage(c);
  PQclear(r);
  PQfinish(c);
}

class DbTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgres") {
      SIKA_TEST_PG_DSN_OR_END(admin_dsn_);
      database_ = "sika_test_" + hex_encode(random_bytes(6));
      admin_exec(admin_dsn_, "CREATE DATABASE " + database_);
      dsn_ = with_database(admin_dsn_, database_);
    } else {
      dir_ = std::filesystem::temp_directory_path() / ("sika-test-" + hex_encode(random_bytes(6)));
      std::filesystem::create_directories(dir_);
      dsn_ = "sqlite://" + (dir_ / "sika.db").string();
    }
    db_ = open_db();
    ASSERT_NE(db_, nullptr);
    auto migrated = store::migrate(*db_);
    ASSERT_TRUE(migrated.ok()) << boost::json::serialize(migrated.error().details);
  }

  void TearDown() override {
    extra_.clear();
    if (db_) db_->close();
    db_.reset();
    if (!database_.empty()) admin_exec(admin_dsn_, "DROP DATABASE IF EXISTS " + database_ + " WITH (FORCE)");
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Another handle on the same database, as a second node would have (closed in TearDown).
  store::Db& second_node() {
    extra_.push_back(open_db());
    return *extra_.back();
  }

  std::unique_ptr<store::Db> open_db() {
    auto db = store::open(dsn_);
    EXPECT_TRUE(db.ok()) << (db.ok() ? "" : boost::json::serialize(db.error().details));
    return db.ok() ? std::move(db).value() : nullptr;
  }

  std::string admin_dsn_, database_, dsn_;
  std::filesystem::path dir_;
  std::unique_ptr<store::Db> db_;
  std::vector<std::unique_ptr<store::Db>> extra_;
};

}  // namespace sika::testing
