#pragma once
// Runs the jobs of store/jobs.hpp on this node: worker threads claim due jobs of the queues that
// have a handler, run the handler, and complete the job or fail it with exponential backoff; a
// heartbeat keeps the leases of running jobs alive, and a reaper gives the jobs of dead nodes
// back. Every loop is a core/periodic.hpp Periodic.
//
// Exactly once: a handler that commits its effect through JobScope::commit commits it in the
// same write unit as the job's completion, conditional on the lease, so the effect commits once
// even if a stalled node wakes up after its job was taken over. A handler with outside effects
// (an HTTP call) runs at least once: make the call idempotent (a key the receiver deduplicates).
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/periodic.hpp"
#include "core/result.hpp"
#include "core/thread_annotations.hpp"
#include "store/db.hpp"
#include "store/jobs.hpp"

namespace sika::store {

struct JobRunnerOptions {
  std::string node_id;                  // lease owner prefix; make_node_id() when empty
  int workers = 2;                      // threads running jobs on this node
  int batch = 4;                        // jobs one worker claims at once
  std::int64_t lease_ms = 30'000;       // heartbeats every lease_ms / 3; a silent node loses its jobs after this
  std::int64_t poll_interval_ms = 500;  // idle polling for due jobs
  std::int64_t retry_base_ms = 1'000;   // delay after the first failure, doubling at each attempt
  std::int64_t retry_max_ms = 3'600'000;
  int jitter_percent = 20;              // retry delays spread by +/- this much
  std::function<std::int64_t()> clock;  // epoch ms; now_ms() when empty
};

struct JobRunnerStats {
  std::int64_t claimed = 0;
  std::int64_t completed = 0;
  std::int64_t failed = 0;    // handler errors (retried or dead)
  std::int64_t lost = 0;      // completions refused: the lease had been lost
  std::int64_t released = 0;  // given back unrun at stop
  std::int64_t reaped = 0;    // jobs of dead nodes made claimable again (or dead)
};

// What a handler may do with its job.
class JobScope {
 public:
  JobScope(Db& db, const Job& job, std::function<std::int64_t()> clock)
      : db_(db), job_(job), clock_(std::move(clock)) {}
  const Job& job() const { return job_; }
  // Runs fn and the job's completion in one write unit: fn's writes commit iff this node still
  // holds the lease (a 409 conflict otherwise, and nothing fn wrote remains). At most once per job.
  Status commit(const std::function<Status(Conn&)>& fn);
  // True once commit succeeded.
  bool committed() const { return committed_; }

 private:
  Db& db_;
  const Job& job_;
  std::function<std::int64_t()> clock_;
  bool committed_ = false;
};

// Runs one job. Ok: the job is done (completed now unless the handler called scope.commit).
// An error: the job runs again after a backoff, or is dead once it has used its attempts.
using JobHandler = std::function<Status(const Job& job, JobScope& scope)>;

// Runs a page of claimed jobs of one queue at once (one read and one write unit for the page
// instead of one each per job). Returns one Status per job, in the order given: ok, the job is
// done (the runner completes every ok job of the page in one write unit); an error, that job
// runs again after a backoff like a JobHandler's. Effects are at least once, as for a
// JobHandler that does not commit through its scope: make them idempotent.
using PageHandler = std::function<std::vector<Status>(const std::vector<Job>& jobs)>;

class JobRunner {
 public:
  JobRunner(Db& db, JobRunnerOptions options);
  ~JobRunner();
  JobRunner(const JobRunner&) = delete;
  JobRunner& operator=(const JobRunner&) = delete;

  // Registers the handler of a queue; call before start().
  void handle(std::string queue, JobHandler handler);
  // Registers the page handler of a queue: a worker claims up to page_size of its due jobs at
  // once and hands them over together.
  void handle_pages(std::string queue, PageHandler handler, int page_size);
  bool has_handlers() const { return !handlers_.empty(); }
  // The queues a handler was registered for, in name order.
  std::vector<std::string> queues() const;

  // Starts the workers, the heartbeat and the reaper; no-op when running.
  void start();
  // Runs the next poll now (e.g. right after enqueueing work due now).
  void wake();
  // Lets the jobs in progress finish, gives claimed jobs that have not started back, joins.
  void stop();

  // One pass without threads (tests, tools): reaps, then claims and runs every due job of every
  // queue until none is left. Returns the number of jobs run.
  Result<int> run_once();

  // The delay before the attempt that follows `failed_attempt`, with jitter.
  std::int64_t retry_delay_ms(int failed_attempt) const;

  JobRunnerStats stats() const;
  const std::string& node_id() const { return options_.node_id; }

 private:
  Result<Pace> work();
  Result<Pace> beat();
  Result<Pace> reap_dead();
  // Claims up to n jobs of `queue` and runs them; returns how many were claimed.
  Result<int> claim_and_run(const std::string& queue, int n, const std::function<bool()>& keep_going);
  struct Handler {
    JobHandler one;
    PageHandler page;
    int claim = 0;  // jobs claimed at once
  };
  void run(const Job& job, const JobHandler& handler);
  void run_page(const std::vector<Job>& jobs, const PageHandler& handler);
  // Records a handler's error: the job runs again after a backoff, or is dead.
  void record_failure(const Job& job, const Error& error);
  std::int64_t now() const;
  std::string next_owner();

  Db& db_;
  JobRunnerOptions options_;
  std::map<std::string, Handler> handlers_;
  std::atomic<std::uint64_t> owner_seq_{0};
  std::atomic<std::uint64_t> next_queue_{0};

  sika::Mutex held_mu_;
  std::map<std::int64_t, JobLease> held_ GUARDED_BY(held_mu_);  // claimed and not yet finished on this node

  std::vector<std::unique_ptr<Periodic>> workers_;
  std::unique_ptr<Periodic> heartbeat_;
  std::unique_ptr<Periodic> reaper_;
  std::atomic<bool> stopping_{false};

  std::atomic<std::int64_t> claimed_{0}, completed_{0}, failed_{0}, lost_{0}, released_{0}, reaped_{0};
};

}  // namespace sika::store
