// Measures durable write throughput on SQLite (WAL, synchronous=FULL):
//   1. the one-row-per-commit ceiling: one thread, BEGIN IMMEDIATE; INSERT; COMMIT with raw sqlite3;
//   2. the same through Db::write from one thread;
//   3. group commit: many threads each running one-row write units through Db::write.
// Prints rows/s and p50/p99 latency per row. Usage:
//   store_bench [--rounds 5] [--seconds 1] [--threads 4,16,64] [--dir DIR] [--warm-wal 1|0]
// Each mode runs `rounds` slices of `seconds`, the modes taking turns.
// --warm-wal 1 (default) measures the steady state of a running server, whose WAL file already
// has its working size; 0 measures a brand-new database whose WAL grows with every commit.
#include <sqlite3.h>

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/random.hpp"
#include "store/db.hpp"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr const char* kCreate = "CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, k TEXT NOT NULL, v BIGINT)";
constexpr const char* kInsert = "INSERT INTO rows (k, v) VALUES (?, ?)";

void check(int rc, sqlite3* db, const char* what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
    std::fprintf(stderr, "%s: %s\n", what, sqlite3_errmsg(db));
    std::exit(1);
  }
}

// Grows the WAL file to its working size (about 8 MiB) and checkpoints it, so the measured
// commits overwrite the WAL in place as a long-running server's do, instead of appending to a
// new file (appends make every fsync also commit file-size metadata).
// Returns the connection that did it: it stays open during the run, because closing the last
// connection deletes the WAL file.
sqlite3* warm_up(const fs::path& file) {
  sqlite3* db = nullptr;
  check(sqlite3_open(file.c_str(), &db), db, "open");
  for (const char* sql : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", kCreate, "CREATE TABLE warm (b BLOB)",
                          "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) "
                          "INSERT INTO warm SELECT randomblob(4000) FROM n",
                          "DROP TABLE warm", "PRAGMA wal_checkpoint(RESTART)"})
    check(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), db, sql);
  return db;
}

// One measured configuration; its slices accumulate here.
struct Mode {
  std::string name;
  int threads = 1;
  bool raw = false;
  fs::path file;
  std::vector<std::int64_t> lat_us;
  double seconds = 0;
  std::uint64_t units = 0;
  std::uint64_t commits = 0;
};

// rows/s and latency percentiles of a mode's accumulated slices.
void print_mode(Mode& m) {
  std::sort(m.lat_us.begin(), m.lat_us.end());
  double p50 = 0, p99 = 0;
  if (!m.lat_us.empty()) {
    p50 = static_cast<double>(m.lat_us[m.lat_us.size() / 2]) / 1000.0;
    p99 = static_cast<double>(m.lat_us[std::min(m.lat_us.size() - 1, m.lat_us.size() * 99 / 100)]) / 1000.0;
  }
  std::printf("%-32s %7d %12.0f %9.3f %9.3f %12.1f\n", m.name.c_str(), m.threads,
              static_cast<double>(m.lat_us.size()) / m.seconds, p50, p99,
              m.commits > 0 ? static_cast<double>(m.units) / static_cast<double>(m.commits) : 0.0);
}

// One thread, one INSERT per durable transaction, raw sqlite3 with prepared statements.
void raw_slice(Mode& m, double seconds) {
  sqlite3* db = nullptr;
  check(sqlite3_open(m.file.c_str(), &db), db, "open");
  for (const char* sql : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", kCreate})
    check(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), db, sql);
  sqlite3_stmt *begin, *insert, *commit;
  check(sqlite3_prepare_v2(db, "BEGIN IMMEDIATE", -1, &begin, nullptr), db, "prepare");
  check(sqlite3_prepare_v2(db, kInsert, -1, &insert, nullptr), db, "prepare");
  check(sqlite3_prepare_v2(db, "COMMIT", -1, &commit, nullptr), db, "prepare");
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  std::int64_t i = static_cast<std::int64_t>(m.lat_us.size());
  std::string key;
  for (auto now = start; now < end;) {
    key = "raw-" + std::to_string(i);
    check(sqlite3_step(begin), db, "BEGIN");
    sqlite3_reset(begin);
    sqlite3_bind_text(insert, 1, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
    sqlite3_bind_int64(insert, 2, i++);
    check(sqlite3_step(insert), db, "INSERT");
    sqlite3_reset(insert);
    check(sqlite3_step(commit), db, "COMMIT");
    sqlite3_reset(commit);
    auto done = Clock::now();
    m.lat_us.push_back(std::chrono::duration_cast<std::chrono::microseconds>(done - now).count());
    now = done;
    ++m.units;
    ++m.commits;
  }
  m.seconds += std::chrono::duration<double>(Clock::now() - start).count();
  for (auto* st : {begin, insert, commit}) sqlite3_finalize(st);
  sqlite3_close(db);
}

// m.threads threads each running one-row write units through Db::write.
void store_slice(Mode& m, double seconds) {
  auto opened = sika::store::open("sqlite://" + m.file.string());
  if (!opened) {
    std::fprintf(stderr, "open failed: %s\n", boost::json::serialize(opened.error().details).c_str());
    std::exit(1);
  }
  auto db = std::move(opened).value();
  (void)db->write([](sika::store::Conn& c) -> sika::Status {
    SIKA_TRY(c.exec(kCreate));
    return {};
  });
  const auto before = db->stats();
  std::vector<std::vector<std::int64_t>> lat(m.threads);
  std::atomic<int> failures{0};
  const std::string prefix = std::to_string(m.lat_us.size()) + "-";
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  std::vector<std::thread> workers;
  for (int t = 0; t < m.threads; ++t) {
    workers.emplace_back([&, t] {
      std::int64_t i = 0;
      for (auto now = Clock::now(); now < end;) {
        std::string key = prefix + std::to_string(t) + "-" + std::to_string(i);
        auto st = db->write([&](sika::store::Conn& c) -> sika::Status {
          SIKA_TRY(c.exec(kInsert, {key, i}));
          return {};
        });
        if (!st) failures.fetch_add(1);
        ++i;
        auto done = Clock::now();
        lat[t].push_back(std::chrono::duration_cast<std::chrono::microseconds>(done - now).count());
        now = done;
      }
    });
  }
  for (auto& w : workers) w.join();
  m.seconds += std::chrono::duration<double>(Clock::now() - start).count();
  const auto after = db->stats();
  db->close();
  if (failures.load() != 0) {
    std::fprintf(stderr, "%d write units failed\n", failures.load());
    std::exit(1);
  }
  for (auto& l : lat) m.lat_us.insert(m.lat_us.end(), l.begin(), l.end());
  m.units += after.write_units - before.write_units;
  m.commits += after.commits - before.commits;
}

std::vector<int> parse_threads(const char* text) {
  std::vector<int> out;
  std::string s(text);
  for (std::size_t pos = 0; pos < s.size();) {
    std::size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(std::max(1, std::atoi(s.substr(pos, comma - pos).c_str())));
    pos = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 1;
  int rounds = 5;
  std::vector<int> thread_counts = {4, 16, 64};
  fs::path dir = fs::temp_directory_path();
  bool warm_wal = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string arg = argv[i];
    if (arg == "--seconds") {
      seconds = std::atof(argv[i + 1]);
    } else if (arg == "--rounds") {
      rounds = std::max(1, std::atoi(argv[i + 1]));
    } else if (arg == "--threads") {
      thread_counts = parse_threads(argv[i + 1]);
    } else if (arg == "--dir") {
      dir = argv[i + 1];
    } else if (arg == "--warm-wal") {
      warm_wal = std::string(argv[i + 1]) != "0";
    } else {
      std::fprintf(stderr, "usage: %s [--rounds R] [--seconds S] [--threads 4,16,64] [--dir DIR] [--warm-wal 1|0]\n",
                   argv[0]);
      return 2;
    }
  }
  fs::path work = dir / ("sika-store-bench-" + sika::hex_encode(sika::random_bytes(4)));
  fs::create_directories(work);
  std::vector<Mode> modes;
  modes.push_back(Mode{"raw sqlite3, 1 row per commit", 1, true});
  modes.push_back(Mode{"Db::write, 1 thread", 1, false});
  for (int t : thread_counts) modes.push_back(Mode{"Db::write, group commit", t, false});
  std::vector<sqlite3*> warm;
  for (std::size_t i = 0; i < modes.size(); ++i) {
    modes[i].file = work / ("bench-" + std::to_string(i) + ".db");
    if (warm_wal) warm.push_back(warm_up(modes[i].file));
  }
  // The disk's fsync latency drifts with everything else the machine does, so the modes take
  // turns in short slices and each mode's figures come from all its slices.
  for (int round = 0; round < rounds; ++round) {
    for (Mode& m : modes) {
      if (m.raw)
        raw_slice(m, seconds);
      else
        store_slice(m, seconds);
    }
  }
  for (sqlite3* db : warm) sqlite3_close(db);
  fs::remove_all(work);

  std::printf("SQLite %s, WAL %s, synchronous=FULL, %d rounds of %.1f s per mode, files in %s\n", sqlite3_libversion(),
              warm_wal ? "pre-grown (steady state)" : "new (growing)", rounds, seconds, dir.c_str());
  std::printf("%-32s %7s %12s %9s %9s %12s\n", "mode", "threads", "rows/s", "p50 ms", "p99 ms", "units/commit");
  for (Mode& m : modes) print_mode(m);
  double ceiling = static_cast<double>(modes[0].lat_us.size()) / modes[0].seconds;
  double best = 0;
  for (std::size_t i = 2; i < modes.size(); ++i)
    best = std::max(best, static_cast<double>(modes[i].lat_us.size()) / modes[i].seconds);
  std::printf("group commit / one-row-per-commit ceiling: %.1fx\n", ceiling > 0 ? best / ceiling : 0.0);
  return 0;
}
