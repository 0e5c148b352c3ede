#pragma once
// The delivery worker: one loop fans out new events into deliveries, one dispatcher loop claims
// due deliveries (both core/periodic.hpp loops), a pool of sender threads POSTs them, one
// recorder thread stores the attempts in batches.
// Fairness: each endpoint has at most `max_in_flight_per_endpoint` requests in flight here (and
// as many waiting), so an endpoint that hangs holds that many threads, never the whole pool.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/periodic.hpp"
#include "core/result.hpp"
#include "core/thread_annotations.hpp"
#include "store/db.hpp"
#include "web/client.hpp"
#include "webhooks/queue.hpp"
#include "webhooks/registry.hpp"
#include "webhooks/schedule.hpp"

namespace sika::webhooks {

struct WorkerOptions {
  int threads = 64;                    // sender threads
  int max_in_flight_per_endpoint = 8;  // concurrent requests to one endpoint from this node
  // Deliveries of one endpoint held here (queued + in flight) while it answers promptly, so that
  // claims (one durable write each) stay ahead of the senders; an endpoint that times out or
  // fails to connect is "slow" for slow_ms and holds no more than its in-flight maximum, its
  // queued deliveries given back at once. 0: 4 x max_in_flight_per_endpoint.
  int prefetch_per_endpoint = 0;
  std::int64_t slow_ms = 60'000;
  int max_local = 0;  // deliveries held here in total; 0: 4 x threads
  int connect_timeout_ms = 5000;
  int timeout_ms = 15000;      // success = a 2xx within this time
  int poll_interval_ms = 200;  // idle polling of the outbox and of due retries
  int claim_batch = 256;
  int fanout_batch = 1000;
  int record_batch = 512;
  std::int64_t lease_ms = 0;              // 0: 2 x (connect + timeout) + 30 s
  std::size_t max_response_bytes = 4096;  // read from a response
  std::size_t excerpt_bytes = 1024;       // stored per attempt
  bool allow_private_targets = false;     // passed to the client (SSRF check at each delivery)
  RetrySchedule schedule;
  std::int64_t disable_after_ms = 3LL * 24 * 3600 * 1000;
  std::int64_t gap_ttl_ms = 10 * 60 * 1000;
  std::string node_id;  // lease owner prefix; generated when empty
  std::string user_agent = "Sika-Webhooks/1.0";
  std::function<std::int64_t()> clock;  // epoch ms; now_ms() when empty (tests travel in time)

  int effective_prefetch() const {
    return prefetch_per_endpoint > 0 ? std::max(prefetch_per_endpoint, max_in_flight_per_endpoint)
                                     : 4 * max_in_flight_per_endpoint;
  }
  int effective_max_local() const { return max_local > 0 ? max_local : 4 * threads; }
  std::int64_t effective_lease_ms() const {
    return lease_ms > 0 ? lease_ms : 2LL * (connect_timeout_ms + timeout_ms) + 30'000;
  }
};

struct WorkerStats {
  std::int64_t claimed = 0;
  std::int64_t attempts = 0;
  std::int64_t succeeded = 0;
  std::int64_t failed_attempts = 0;
  std::int64_t recorded = 0;            // attempts durably written
  std::int64_t recorded_succeeded = 0;  // of which successes
  std::int64_t record_errors = 0;
  std::int64_t claim_errors = 0;
};

class Worker {
 public:
  Worker(store::Db& db, web::HttpClient& client, const Registry& registry, WorkerOptions options);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Starts the threads; no-op when running.
  void start();
  // Stops claiming, lets requests in flight finish (bounded by the timeout), gives unsent
  // claimed deliveries back, records every attempt made, joins the threads.
  void stop();
  bool running() const { return running_; }

  // One synchronous pass without threads (tests and tools): fans out every pending event,
  // claims what is due at `now`, sends each delivery in turn and records the attempts.
  // Returns the number of attempts made.
  Result<int> run_once(std::int64_t now);

  // Sends one claimed delivery (signing it at the current time) and returns what happened.
  AttemptResult send(const Claimed& delivery) const;

  WorkerStats stats() const;
  const WorkerOptions& options() const { return options_; }

 private:
  Result<Pace> fan_out_tick();
  Result<Pace> dispatch_tick();
  void sender_loop();
  void recorder_loop();
  RecordOptions record_options() const;
  std::string next_lease_owner();
  std::int64_t now() const;

  store::Db& db_;
  web::HttpClient& client_;
  const Registry& registry_;
  WorkerOptions options_;
  std::atomic<std::uint64_t> lease_seq_{0};

  std::atomic<bool> running_{false};
  std::atomic<bool> stopping_{false};
  std::unique_ptr<Periodic> fanout_;
  std::unique_ptr<Periodic> dispatcher_;  // woken when capacity frees up or deliveries were fanned out
  std::int64_t round_robin_ = 0;          // dispatcher only: the endpoint claims start after
  std::thread recorder_;
  std::vector<std::thread> senders_;

  mutable sika::Mutex mu_;
  std::condition_variable work_cv_;  // senders wait for deliveries
  std::deque<Claimed> queue_ GUARDED_BY(mu_);
  // endpoint row -> deliveries queued or in flight here
  std::map<std::int64_t, int> local_ GUARDED_BY(mu_);
  std::map<std::int64_t, int> sending_ GUARDED_BY(mu_);              // endpoint row -> requests in flight here
  std::map<std::int64_t, std::int64_t> slow_until_ GUARDED_BY(mu_);  // endpoint row -> epoch ms
  int allowance(std::int64_t endpoint, std::int64_t now) const REQUIRES(mu_);
  int in_flight_ GUARDED_BY(mu_) = 0;

  sika::Mutex results_mu_;
  std::condition_variable results_cv_;
  std::vector<AttemptResult> results_ GUARDED_BY(results_mu_);
  bool recorder_stop_ GUARDED_BY(results_mu_) = false;

  std::atomic<std::int64_t> claimed_{0}, attempts_{0}, succeeded_{0}, failed_attempts_{0}, recorded_{0},
      recorded_succeeded_{0}, record_errors_{0}, claim_errors_{0};
};

}  // namespace sika::webhooks
