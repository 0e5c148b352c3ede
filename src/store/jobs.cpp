#include "store/jobs.hpp"

#include <map>

#include <unistd.h>

#include "core/random.hpp"
#include "store/leasing.hpp"

namespace sika::store {

namespace {

constexpr std::size_t kMaxErrorChars = 500;

std::string bounded(std::string_view text) { return std::string(text.substr(0, kMaxErrorChars)); }

Status require_held(std::int64_t changed, const JobLease& lease) {
  if (changed == 1) return {};
  return conflict(boost::json::object{{"job", lease.job_id}, {"lease", "no longer held by " + lease.owner}});
}

constexpr const char* kInfoColumns =
    "id, queue, job_key, payload, state, attempts, max_attempts, run_at, lease_owner, lease_until, heartbeat_at, "
    "last_error, finished_at";

JobInfo info_of(const Row& row) {
  JobInfo j;
  j.id = row.i64(0);
  j.queue = row.str(1);
  j.key = row.str(2);
  j.payload = row.str(3);
  j.state = row.str(4);
  j.attempts = static_cast<int>(row.i64(5));
  j.max_attempts = static_cast<int>(row.i64(6));
  j.run_at = row.i64(7);
  j.lease_owner = row.opt_str(8);
  j.lease_until = row.opt_i64(9);
  j.heartbeat_at = row.opt_i64(10);
  j.last_error = row.opt_str(11);
  j.finished_at = row.opt_i64(12);
  return j;
}

}  // namespace

Result<bool> enqueue(Conn& conn, const NewJob& job, std::int64_t now) {
  if (job.queue.empty()) return empty_data(boost::json::object{{"queue", "is required"}});
  if (job.key.empty()) return empty_data(boost::json::object{{"key", "is required"}});
  SIKA_ASSIGN_OR_RETURN(
      auto inserted,
      conn.exec("INSERT INTO jobs (queue, job_key, payload, state, run_at, attempts, max_attempts, created_at, "
                "updated_at) VALUES (?, ?, ?, 'pending', ?, 0, ?, ?, ?) ON CONFLICT (queue, job_key) DO NOTHING",
                {job.queue, job.key, job.payload, job.run_at.value_or(now), std::int64_t{std::max(1, job.max_attempts)},
                 now, now}));
  return inserted == 1;
}

Result<bool> enqueue(Db& db, const NewJob& job, std::int64_t now) {
  bool created = false;
  SIKA_TRY(db.write([&](Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(created, enqueue(c, job, now));
    return {};
  }));
  return created;
}

Result<std::vector<Job>> claim(Db& db, std::string_view queue, std::string_view owner, int n, std::int64_t lease_ms,
                               std::int64_t now) {
  std::vector<Job> out;
  if (n <= 0) return out;
  const std::int64_t until = now + lease_ms;
  SIKA_TRY(db.write([&](Conn& c) -> Status {
    out.clear();
    SIKA_TRY(queue_isolation(c));
    // The pick locks what it takes on PostgreSQL and skips what concurrent claimers hold; the
    // UPDATE re-checks the state. Two statements: PostgreSQL does not promise to evaluate a
    // LIMITed sub-select inside an UPDATE once, and that form claimed more than n rows.
    SIKA_ASSIGN_OR_RETURN(auto picked, c.query("SELECT id FROM jobs WHERE queue = ? AND state = 'pending' AND "
                                               "run_at <= ? ORDER BY run_at, id LIMIT ?" +
                                                   std::string(skip_locked(c)),
                                               {std::string(queue), now, std::int64_t{n}}));
    if (picked.empty()) return {};
    Params params{std::string(owner), until, now, now};
    for (const auto& r : picked) params.emplace_back(r.i64(0));
    SIKA_ASSIGN_OR_RETURN(
        auto rows, c.query("UPDATE jobs SET state = 'running', lease_owner = ?, lease_until = ?, heartbeat_at = ?, "
                           "attempts = attempts + 1, updated_at = ? WHERE state = 'pending' AND id IN (" +
                               placeholders(picked.size()) +
                               ") RETURNING id, queue, job_key, payload, attempts, max_attempts, run_at, created_at",
                           params));
    for (const auto& r : rows) {
      Job j;
      j.id = r.i64(0);
      j.queue = r.str(1);
      j.key = r.str(2);
      j.payload = r.str(3);
      j.attempt = static_cast<int>(r.i64(4));
      j.max_attempts = static_cast<int>(r.i64(5));
      j.run_at = r.i64(6);
      j.created_at = r.i64(7);
      j.lease = {j.id, std::string(owner), until};
      out.push_back(std::move(j));
    }
    return {};
  }));
  std::sort(out.begin(), out.end(),
            [](const Job& a, const Job& b) { return a.run_at != b.run_at ? a.run_at < b.run_at : a.id < b.id; });
  return out;
}

Result<std::vector<std::int64_t>> heartbeat(Db& db, const std::vector<JobLease>& leases, std::int64_t lease_ms,
                                            std::int64_t now) {
  std::vector<std::int64_t> held;
  if (leases.empty()) return held;
  SIKA_TRY(db.write([&](Conn& c) -> Status {
    held.clear();
    SIKA_TRY(queue_isolation(c));
    for (const auto& l : leases) {
      SIKA_ASSIGN_OR_RETURN(auto changed,
                            c.exec("UPDATE jobs SET lease_until = ?, heartbeat_at = ?, updated_at = ? WHERE id = ? "
                                   "AND lease_owner = ? AND state = 'running'",
                                   {now + lease_ms, now, now, l.job_id, l.owner}));
      if (changed == 1) held.push_back(l.job_id);
    }
    return {};
  }));
  return held;
}

Status complete(Conn& conn, const JobLease& lease, std::int64_t now) {
  SIKA_ASSIGN_OR_RETURN(auto changed,
                        conn.exec("UPDATE jobs SET state = 'done', lease_owner = NULL, lease_until = NULL, "
                                  "last_error = NULL, finished_at = ?, updated_at = ? WHERE id = ? AND lease_owner = ? "
                                  "AND state = 'running'",
                                  {now, now, lease.job_id, lease.owner}));
  return require_held(changed, lease);
}

Status complete(Db& db, const JobLease& lease, std::int64_t now) {
  return db.write([&](Conn& c) -> Status { return complete(c, lease, now); });
}

Status fail(Db& db, const JobLease& lease, std::optional<std::int64_t> retry_at, std::string_view error,
            std::int64_t now) {
  const std::string text = bounded(error);
  return db.write([&](Conn& c) -> Status {
    SIKA_TRY(queue_isolation(c));
    std::int64_t changed = 0;
    if (retry_at) {
      SIKA_ASSIGN_OR_RETURN(changed, c.exec("UPDATE jobs SET state = 'pending', run_at = ?, lease_owner = NULL, "
                                            "lease_until = NULL, last_error = ?, updated_at = ? WHERE id = ? AND "
                                            "lease_owner = ? AND state = 'running' AND attempts < max_attempts",
                                            {*retry_at, text, now, lease.job_id, lease.owner}));
      if (changed == 1) return {};
    }
    // No retry asked for, or the attempts are used up: the job is dead.
    SIKA_ASSIGN_OR_RETURN(changed, c.exec("UPDATE jobs SET state = 'dead', lease_owner = NULL, lease_until = NULL, "
                                          "last_error = ?, finished_at = ?, updated_at = ? WHERE id = ? AND "
                                          "lease_owner = ? AND state = 'running'",
                                          {text, now, now, lease.job_id, lease.owner}));
    return require_held(changed, lease);
  });
}

Status release(Db& db, const JobLease& lease, std::int64_t now) {
  return db.write([&](Conn& c) -> Status {
    SIKA_TRY(queue_isolation(c));
    SIKA_ASSIGN_OR_RETURN(auto changed,
                          c.exec("UPDATE jobs SET state = 'pending', run_at = ?, attempts = attempts - 1, "
                                 "lease_owner = NULL, lease_until = NULL, updated_at = ? WHERE id = ? AND "
                                 "lease_owner = ? AND state = 'running'",
                                 {now, now, lease.job_id, lease.owner}));
    return require_held(changed, lease);
  });
}

Result<ReapResult> reap(Db& db, std::int64_t now) {
  ReapResult out;
  SIKA_TRY(db.write([&](Conn& c) -> Status {
    out = ReapResult{};
    SIKA_TRY(queue_isolation(c));
    // The lease owner is kept in last_error so an operator can tell which node lost the job.
    SIKA_ASSIGN_OR_RETURN(auto dead,
                          c.exec("UPDATE jobs SET state = 'dead', last_error = 'lease of ' || lease_owner || "
                                 "' expired on the last attempt', lease_owner = NULL, lease_until = NULL, "
                                 "finished_at = ?, updated_at = ? WHERE state = 'running' AND lease_until < ? AND "
                                 "attempts >= max_attempts",
                                 {now, now, now}));
    SIKA_ASSIGN_OR_RETURN(auto requeued,
                          c.exec("UPDATE jobs SET state = 'pending', run_at = ?, last_error = 'lease of ' || "
                                 "lease_owner || ' expired', lease_owner = NULL, lease_until = NULL, updated_at = ? "
                                 "WHERE state = 'running' AND lease_until < ?",
                                 {now, now, now}));
    out.dead = static_cast<int>(dead);
    out.requeued = static_cast<int>(requeued);
    return {};
  }));
  return out;
}

Result<std::optional<JobInfo>> find_job(Db& db, std::string_view queue, std::string_view key) {
  std::optional<JobInfo> out;
  SIKA_TRY(db.read([&](Conn& c) -> Status {
    out.reset();
    SIKA_ASSIGN_OR_RETURN(
        auto row, c.query_one(std::string("SELECT ") + kInfoColumns + " FROM jobs WHERE queue = ? AND job_key = ?",
                              {std::string(queue), std::string(key)}));
    if (!row) return {};
    out = info_of(*row);
    return {};
  }));
  return out;
}

Result<std::vector<JobInfo>> list_jobs(Db& db, const JobFilter& filter) {
  std::vector<JobInfo> out;
  std::string sql = std::string("SELECT ") + kInfoColumns + " FROM jobs WHERE 1 = 1";
  Params params;
  if (!filter.queue.empty()) {
    sql += " AND queue = ?";
    params.emplace_back(filter.queue);
  }
  if (!filter.state.empty()) {
    sql += " AND state = ?";
    params.emplace_back(filter.state);
  }
  sql += " ORDER BY id DESC LIMIT ?";
  params.emplace_back(std::int64_t{std::max(1, filter.limit)});
  SIKA_TRY(db.read([&](Conn& c) -> Status {
    out.clear();
    SIKA_ASSIGN_OR_RETURN(auto rows, c.query(sql, params));
    for (const auto& r : rows) out.push_back(info_of(r));
    return {};
  }));
  return out;
}

Result<bool> retry_dead(Db& db, std::string_view queue, std::string_view key, std::int64_t now) {
  std::int64_t changed = 0;
  SIKA_TRY(db.write([&](Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(changed, c.exec("UPDATE jobs SET state = 'pending', attempts = 0, run_at = ?, "
                                          "finished_at = NULL, updated_at = ? WHERE queue = ? AND job_key = ? AND "
                                          "state = 'dead'",
                                          {now, now, std::string(queue), std::string(key)}));
    return {};
  }));
  return changed == 1;
}

Result<std::vector<QueueStats>> queue_stats(Db& db, std::int64_t now) {
  std::map<std::string, QueueStats> by_queue;
  SIKA_TRY(db.read([&](Conn& c) -> Status {
    by_queue.clear();
    SIKA_ASSIGN_OR_RETURN(auto counts, c.query("SELECT queue, state, COUNT(*) FROM jobs WHERE state IN "
                                               "('pending', 'running', 'dead') GROUP BY queue, state"));
    for (const Row& r : counts) {
      QueueStats& q = by_queue[r.str(0)];
      q.queue = r.str(0);
      const std::string state = r.str(1);
      (state == kJobPending ? q.pending : state == kJobRunning ? q.running : q.dead) = r.i64(2);
    }
    SIKA_ASSIGN_OR_RETURN(auto due, c.query("SELECT queue, MIN(run_at) FROM jobs WHERE state = 'pending' AND "
                                            "run_at <= ? GROUP BY queue",
                                            {now}));
    for (const Row& r : due) by_queue[r.str(0)].oldest_due = r.i64(1);
    return {};
  }));
  std::vector<QueueStats> out;
  for (auto& [queue, q] : by_queue) out.push_back(std::move(q));
  return out;
}

std::string make_node_id() {
  char host[64] = {};
  ::gethostname(host, sizeof host - 1);
  return std::string(host) + ":" + std::to_string(::getpid()) + ":" + hex_encode(random_bytes(4));
}

}  // namespace sika::store
