// Webhook delivery throughput with every attempt recorded durably (SQLite, WAL,
// synchronous=FULL), through the real outbound client, to local receivers
// (bench/webhooks_receiver.mjs). Two phases, each on a fresh database:
//   1. healthy: `--endpoints` merchants, one endpoint each (one receiver port each), `--events`
//      events per merchant already in the outbox; the worker starts and the clock runs until
//      every delivery succeeded (fan-out, claims, POSTs and attempt records all included);
//   2. the same, but one more merchant (whose events exist in both phases) has an endpoint that
//      never answers (the hanging port): the rate to the healthy endpoints is compared with
//      phase 1. The only difference between the phases is that hanging endpoint.
// Usage: webhooks_bench --ports P1,P2,... --hang PORT [--events 10000] [--rounds 3] [--threads 64]
//        [--per-endpoint 8] [--dir /tmp] [--timeout-ms 15000] [--progress 1]
// The phases take turns (--rounds times each); totals are over all rounds.
#include <boost/json.hpp>

#include <algorithm>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/random.hpp"
#include "core/time.hpp"
#include "http/client.hpp"
#include "merchant/merchant.hpp"
#include "store/db.hpp"
#include "store/outbox.hpp"
#include "webhooks/registry.hpp"
#include "webhooks/worker.hpp"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;
using namespace sika;

struct Args {
  std::vector<int> ports;
  int hang = 0;
  int events = 10000;
  int threads = 64;
  int per_endpoint = 8;
  int timeout_ms = 15000;
  std::string dir = "/tmp";
  bool progress = false;
  int rounds = 3;
};

void die(const std::string& what, const Error& e) {
  std::fprintf(stderr, "%s: %s %s\n", what.c_str(), e.code.c_str(), boost::json::serialize(e.details).c_str());
  std::exit(1);
}

std::int64_t scalar(store::Db& db, const std::string& sql) {
  std::int64_t n = 0;
  Status st = db.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto row, c.query_one(sql));
    n = row ? row->i64(0) : 0;
    return {};
  });
  if (!st) die(sql, st.error());
  return n;
}

struct PhaseResult {
  double seconds = 0;
  std::int64_t delivered = 0;
  std::int64_t attempts = 0;
};

PhaseResult run_phase(const Args& a, bool with_hanging) {
  fs::path dir = fs::path(a.dir) / ("sika-webhooks-bench-" + hex_encode(random_bytes(4)));
  fs::create_directories(dir);
  auto opened = store::open("sqlite://" + (dir / "sika.db").string());
  if (!opened) die("open", opened.error());
  auto db = std::move(opened).value();
  if (auto m = store::migrate(*db); !m) die("migrate", m.error());

  webhooks::RegistryOptions ro;
  ro.pepper = hex_encode(random_bytes(32));
  ro.allow_private_targets = true;
  webhooks::Registry registry(*db, ro);

  std::vector<std::int64_t> merchants;
  std::vector<std::string> urls;
  for (int p : a.ports) urls.push_back("http://127.0.0.1:" + std::to_string(p) + "/hook");
  urls.push_back(with_hanging ? "http://127.0.0.1:" + std::to_string(a.hang) + "/hook" : "");
  const std::int64_t created_at = now_ms() - 60'000;
  for (std::size_t i = 0; i < urls.size(); ++i) {
    Status st = db->write([&](store::Conn& c) -> Status {
      merchant::NewMerchant m;
      m.matricule = "BENCH-" + std::to_string(i);
      m.name = m.matricule;
      m.countries = {"CMR"};
      SIKA_ASSIGN_OR_RETURN(auto created, merchant::create(c, m, created_at));
      merchants.push_back(created.id);
      return {};
    });
    if (!st) die("merchant", st.error());
    if (urls[i].empty()) continue;  // phase 1: the last merchant has no endpoint
    webhooks::EndpointChange ch;
    ch.url = urls[i];
    auto e = registry.create(merchants.back(), ch, created_at);
    if (!e) die("endpoint", e.error());
  }
  // The outbox: `events` status changes per merchant, 1,000 per write unit.
  for (std::size_t m = 0; m < merchants.size(); ++m) {
    for (int done = 0; done < a.events;) {
      int n = std::min(1000, a.events - done);
      Status st = db->write([&](store::Conn& c) -> Status {
        for (int k = 0; k < n; ++k) {
          std::string ref = "TX-" + std::to_string(m) + "-" + std::to_string(done + k);
          boost::json::object p{{"transaction_reference", ref},
                                {"invoice_reference", "INV-" + ref},
                                {"provider_reference", "PRV-" + ref},
                                {"operation", "COLLECTION"},
                                {"status", "COMPLETED"},
                                {"amount", 1500},
                                {"currency", "XAF"},
                                {"updated_at", iso8601(now_ms())}};
          SIKA_TRY(store::append_event(c, merchants[m], "transaction.status_changed", ref, p, now_ms()));
        }
        return {};
      });
      if (!st) die("events", st.error());
      done += n;
    }
  }

  http::ClientOptions co;
  co.max_in_flight_per_host = static_cast<std::size_t>(a.per_endpoint);
  co.max_idle_per_host = co.max_in_flight_per_host;
  auto client = http::make_http_client(co);
  webhooks::WorkerOptions wo;
  wo.threads = a.threads;
  wo.max_in_flight_per_endpoint = a.per_endpoint;
  wo.timeout_ms = a.timeout_ms;
  wo.poll_interval_ms = 20;
  wo.allow_private_targets = true;
  webhooks::Worker worker(*db, *client, registry, wo);

  const std::int64_t expected = static_cast<std::int64_t>(a.ports.size()) * a.events;
  const std::string healthy =
      "SELECT COUNT(*) FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = "
      "d.endpoint_row WHERE d.status = 'succeeded' AND e.url NOT LIKE '%:" +
      std::to_string(a.hang) + "/%'";
  const auto t0 = Clock::now();
  worker.start();
  // The clock stops when the worker reports every success durably recorded (its recorder
  // counts them after the write unit committed); the database confirms it below. Only the
  // healthy endpoints can succeed: the hanging one never answers within the run.
  auto next_report = Clock::now();
  while (worker.stats().recorded_succeeded < expected) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (Clock::now() - t0 > std::chrono::minutes(5)) break;
    if (a.progress && Clock::now() >= next_report) {
      auto s = worker.stats();
      std::printf("  %6.2fs claimed %lld attempts %lld recorded %lld ok %lld\n",
                  std::chrono::duration<double>(Clock::now() - t0).count(), static_cast<long long>(s.claimed),
                  static_cast<long long>(s.attempts), static_cast<long long>(s.recorded),
                  static_cast<long long>(s.recorded_succeeded));
      next_report += std::chrono::milliseconds(500);
    }
  }
  PhaseResult r;
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.delivered = scalar(*db, healthy);
  worker.stop();
  r.attempts = scalar(*db, "SELECT COUNT(*) FROM webhook_attempts WHERE outcome = 'succeeded'");
  db->close();
  fs::remove_all(dir);
  return r;
}

std::vector<int> parse_ports(const std::string& s) {
  std::vector<int> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    std::size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    out.push_back(std::atoi(s.substr(pos, end - pos).c_str()));
    pos = end + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--ports")
      a.ports = parse_ports(v);
    else if (k == "--hang")
      a.hang = std::atoi(v.c_str());
    else if (k == "--events")
      a.events = std::atoi(v.c_str());
    else if (k == "--threads")
      a.threads = std::atoi(v.c_str());
    else if (k == "--per-endpoint")
      a.per_endpoint = std::atoi(v.c_str());
    else if (k == "--timeout-ms")
      a.timeout_ms = std::atoi(v.c_str());
    else if (k == "--dir")
      a.dir = v;
    else if (k == "--progress")
      a.progress = v == "1";
    else if (k == "--rounds")
      a.rounds = std::max(1, std::atoi(v.c_str()));
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (a.ports.empty() || a.hang == 0) {
    std::fprintf(stderr, "usage: webhooks_bench --ports P1,P2,... --hang PORT [--events N]\n");
    return 2;
  }
  std::printf("%zu healthy endpoints x %d events, %d sender threads, %d in flight per endpoint, db in %s\n",
              a.ports.size(), a.events, a.threads, a.per_endpoint, a.dir.c_str());
  std::printf("%-6s %-26s %10s %9s %14s %10s\n", "round", "phase", "delivered", "seconds", "deliveries/s", "attempts");
  // The phases take turns so that both see the same drift of this shared machine.
  double healthy_total = 0, hanging_total = 0, healthy_seconds = 0, hanging_seconds = 0;
  for (int round = 1; round <= a.rounds; ++round) {
    for (bool with_hanging : {false, true}) {
      PhaseResult r = run_phase(a, with_hanging);
      std::printf("%-6d %-26s %10lld %9.2f %14.0f %10lld\n", round,
                  with_hanging ? "+ 1 hanging endpoint" : "healthy endpoints only", static_cast<long long>(r.delivered),
                  r.seconds, static_cast<double>(r.delivered) / r.seconds, static_cast<long long>(r.attempts));
      std::fflush(stdout);
      (with_hanging ? hanging_total : healthy_total) += static_cast<double>(r.delivered);
      (with_hanging ? hanging_seconds : healthy_seconds) += r.seconds;
    }
  }
  const double healthy_rate = healthy_total / healthy_seconds, hanging_rate = hanging_total / hanging_seconds;
  std::printf(
      "all rounds: healthy only %.0f deliveries/s; with a hanging endpoint %.0f deliveries/s to the others "
      "(%.1f%%)\n",
      healthy_rate, hanging_rate, 100.0 * hanging_rate / healthy_rate);
  return 0;
}
