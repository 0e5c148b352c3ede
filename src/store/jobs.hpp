#pragma once
// Leased jobs: the one queue for background work that must run exactly once across nodes.
//
// A job is a row of `jobs`, identified by (queue, key): enqueueing a key that exists does
// nothing, so a producer may enqueue the same work twice (a retried request, two nodes noticing
// the same due subscription cycle) and it still runs once. States:
//
//   pending --claim--> running --complete--> done
//      ^                  |  \---fail(no retry) / attempts exhausted--> dead
//      +--fail(retry_at)--+
//      +--reap (lease expired: the node died or stalled)
//
// A claim gives the job to one node under a lease (an owner token unique to the claim and an
// expiry); the node extends it with heartbeats while the handler runs. Every later change is
// conditional on that owner token, so once a lease has expired and the job was reaped and claimed
// again, the first node's complete/fail is refused: a handler that commits its effect in the same
// write unit as `complete` (see JobScope in store/job_runner.hpp) commits it exactly once.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "store/db.hpp"

namespace sika::store {

inline constexpr std::string_view kJobPending = "pending";
inline constexpr std::string_view kJobRunning = "running";
inline constexpr std::string_view kJobDone = "done";
inline constexpr std::string_view kJobDead = "dead";

struct NewJob {
  std::string queue;                   // what kind of work ("subscriptions.bill"); one handler per queue
  std::string key;                     // unique within the queue ("sub_123:2026-11")
  std::string payload = "{}";          // JSON text handed to the handler
  std::optional<std::int64_t> run_at;  // epoch ms; now when unset
  int max_attempts = 10;               // claims before the job is dead
};

// A lease on one claimed job: what every later change must present.
struct JobLease {
  std::int64_t job_id = 0;
  std::string owner;  // unique per claim
  std::int64_t until = 0;
};

struct Job {
  std::int64_t id = 0;
  std::string queue;
  std::string key;
  std::string payload;
  int attempt = 1;  // this claim's number (1 for the first run)
  int max_attempts = 10;
  std::int64_t run_at = 0;
  std::int64_t created_at = 0;
  JobLease lease;
};

// A job as stored (tests, operators).
struct JobInfo {
  std::int64_t id = 0;
  std::string queue;
  std::string key;
  std::string payload;
  std::string state;
  int attempts = 0;
  int max_attempts = 0;
  std::int64_t run_at = 0;
  std::optional<std::string> lease_owner;
  std::optional<std::int64_t> lease_until;
  std::optional<std::int64_t> heartbeat_at;
  std::optional<std::string> last_error;
  std::optional<std::int64_t> finished_at;
};

// Enqueues inside the caller's write unit, so the job commits with the state change that causes
// it or not at all. Returns true iff a job was created; false when (queue, key) already exists,
// whatever its state (enqueue is idempotent). Empty queue or key is a 400.
Result<bool> enqueue(Conn& conn, const NewJob& job, std::int64_t now);
// The same in a write unit of its own.
Result<bool> enqueue(Db& db, const NewJob& job, std::int64_t now);

// Leases up to `n` pending jobs of `queue` due at `now` (oldest run_at first) to `owner` until
// now + lease_ms, counting one attempt each. Two concurrent claims never get the same job
// (PostgreSQL: FOR UPDATE SKIP LOCKED, so claimers do not wait for each other; SQLite: the
// conditional UPDATE in its single writer).
Result<std::vector<Job>> claim(Db& db, std::string_view queue, std::string_view owner, int n, std::int64_t lease_ms,
                               std::int64_t now);

// Extends the leases still held to now + lease_ms and records the heartbeat. Returns the ids of
// the jobs whose lease was extended; a missing id means the lease was lost (reaped, taken over).
Result<std::vector<std::int64_t>> heartbeat(Db& db, const std::vector<JobLease>& leases, std::int64_t lease_ms,
                                            std::int64_t now);

// Marks the job done, inside the caller's write unit (commit the job's effect in the same unit).
// A lease that is no longer held (expired and reaped, or claimed by another node) is a 409
// conflict, which rolls the whole unit back.
Status complete(Conn& conn, const JobLease& lease, std::int64_t now);
Status complete(Db& db, const JobLease& lease, std::int64_t now);

// Gives the job back to run again at `retry_at`, or makes it dead when retry_at is unset or the
// job has used its attempts; stores `error` as last_error. A lease no longer held is a 409.
Status fail(Db& db, const JobLease& lease, std::optional<std::int64_t> retry_at, std::string_view error,
            std::int64_t now);

// Gives a claimed job back unrun (e.g. at shutdown): pending, due at `now`, its attempt not
// counted. A lease no longer held is a 409.
Status release(Db& db, const JobLease& lease, std::int64_t now);

struct ReapResult {
  int requeued = 0;  // made pending again, due now
  int dead = 0;      // their node died on their last attempt
};

// Makes the running jobs whose lease expired before `now` (their node died or stopped
// heartbeating) claimable again, or dead when they have used their attempts. Any node may reap.
Result<ReapResult> reap(Db& db, std::int64_t now);

// The job (queue, key), if any.
Result<std::optional<JobInfo>> find_job(Db& db, std::string_view queue, std::string_view key);

struct JobFilter {
  std::string queue;  // empty: every queue
  std::string state;  // empty: every state
  int limit = 100;
};

// Jobs matching the filter, newest first (operators: `sika admin list-jobs`).
Result<std::vector<JobInfo>> list_jobs(Db& db, const JobFilter& filter);

// Makes a dead job pending again, due at `now`, with its attempts counted from zero (an operator
// fixed the cause). Returns false when the job does not exist or is not dead.
Result<bool> retry_dead(Db& db, std::string_view queue, std::string_view key, std::int64_t now);

// Live figures of one queue: jobs pending, running and dead (every node), and the run_at of the
// oldest pending job that is due at `now` (nullopt when none is). Reads only the partial indexes
// of those states, never the history of done jobs.
struct QueueStats {
  std::string queue;
  std::int64_t pending = 0, running = 0, dead = 0;
  std::optional<std::int64_t> oldest_due;
};
Result<std::vector<QueueStats>> queue_stats(Db& db, std::int64_t now);

// A node id for lease owners: host:pid:random, unique across restarts.
std::string make_node_id();

}  // namespace sika::store
