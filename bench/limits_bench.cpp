// Measures the shared limits on a real database: rate-limiter hits (one upsert each) spread over
// many buckets and all on one hot bucket, the same through the reserved limiter (the link API's:
// blocks of the quota reserved in the database, hits served in memory), and OTP verifications (one conditional UPDATE
// plus the hash comparison). Prints operations/s and p50/p99 latency per operation. Usage:
//   limits_bench [--dsn sqlite://DIR/x.db | postgres://...] [--threads 16] [--seconds 2]
// Without --dsn, a fresh SQLite file in a temporary directory. A postgres:// DSN must name an
// empty database (the benchmark migrates it).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/random.hpp"
#include "limits/limiter.hpp"
#include "limits/reserved.hpp"
#include "notify/notifier.hpp"
#include "otp/service.hpp"
#include "store/db.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Figures {
  double per_second = 0;
  double p50_us = 0, p99_us = 0;
  long errors = 0;
};

// Runs `op(thread, i)` from `threads` threads for `seconds`.
Figures run(int threads, double seconds, const std::function<bool(int, long)>& op) {
  std::vector<std::vector<double>> latencies(static_cast<std::size_t>(threads));
  std::atomic<long> errors{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> pool;
  auto start = Clock::now();
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      auto& mine = latencies[static_cast<std::size_t>(t)];
      for (long i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        auto a = Clock::now();
        if (!op(t, i)) ++errors;
        mine.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count());
      }
    });
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& th : pool) th.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  Figures f;
  f.errors = errors.load();
  if (all.empty()) return f;
  f.per_second = static_cast<double>(all.size()) / elapsed;
  f.p50_us = all[all.size() / 2];
  f.p99_us = all[std::min(all.size() - 1, all.size() * 99 / 100)];
  return f;
}

void print(const char* mode, int threads, const Figures& f) {
  std::printf("%-22s threads=%-3d %9.0f ops/s  p50 %7.0f us  p99 %7.0f us  errors %ld\n", mode, threads, f.per_second,
              f.p50_us, f.p99_us, f.errors);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dsn;
  int threads = 16;
  double seconds = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--dsn")
      dsn = argv[i + 1];
    else if (a == "--threads")
      threads = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--seconds")
      seconds = std::max(0.1, std::atof(argv[i + 1]));
  }
  std::filesystem::path dir;
  if (dsn.empty()) {
    dir = std::filesystem::temp_directory_path() / ("sika-limits-bench-" + sika::hex_encode(sika::random_bytes(6)));
    dsn = "sqlite://" + (dir / "sika.db").string();
  }
  auto db = sika::store::open(dsn);
  if (!db) {
    std::fprintf(stderr, "open failed\n");
    return 1;
  }
  if (!sika::store::migrate(**db)) {
    std::fprintf(stderr, "migrate failed\n");
    return 1;
  }
  sika::limits::Limiter limiter(**db);
  sika::limits::Policy policy{.limit = 1'000'000'000, .window_ms = 3'600'000};

  print("limiter hit, spread", threads, run(threads, seconds, [&](int t, long i) {
          return limiter.hit("bench:" + std::to_string(t) + ":" + std::to_string(i % 1000), policy).ok();
        }));
  print("limiter hit, one key", threads,
        run(threads, seconds, [&](int, long) { return limiter.hit("bench:hot", policy).ok(); }));

  // The link API's limiter: blocks of the quota reserved in the database, hits served in memory.
  {
    sika::limits::ReservedLimiter reserved(limiter);
    const sika::limits::Policy per_hour{.limit = 600, .window_ms = 3'600'000, .name = "bench"};
    print("reserved, 600/h spread", threads, run(threads, seconds, [&](int t, long i) {
            // 80,000 addresses, each well within its 600 per hour during the run.
            return reserved.hit("reserved:" + std::to_string(t) + ":" + std::to_string(i % 5000), per_hour).ok();
          }));
    print("reserved hit, one key", threads,
          run(threads, seconds, [&](int, long) { return reserved.hit("reserved:hot", policy).ok(); }));
  }

  sika::notify::SandboxNotifier notifier(**db);
  sika::otp::Options o;
  o.pepper = std::string(64, 'a');
  o.max_attempts = 1'000'000'000;
  o.sends_per_destination_per_hour = 0;
  sika::otp::Service otp(**db, notifier, o);
  std::vector<std::string> challenges;
  for (int i = 0; i < 256; ++i) {
    auto issued =
        otp.issue({.purpose = "bench", .subject = std::to_string(i), .destination = "+2376900" + std::to_string(i)});
    if (!issued) {
      std::fprintf(stderr, "issue failed\n");
      return 1;
    }
    challenges.push_back(issued->challenge_id);
  }
  print("otp verify (wrong)", threads, run(threads, seconds, [&](int t, long i) {
          auto v = otp.verify(challenges[static_cast<std::size_t>((t * 7919 + i) % 256)], "000000");
          return v.ok();
        }));
  (*db)->close();
  if (!dir.empty()) std::filesystem::remove_all(dir);
  return 0;
}
