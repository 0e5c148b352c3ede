#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Leased jobs (store/jobs.hpp): one row per (queue, key), claimed under a lease by one node at a
// time. Done and dead rows stay: they keep enqueueing idempotent and show what ran.
extern const Migration k0011Jobs{11, "jobs", R"SQL(
CREATE TABLE jobs (
  id {{pk}},
  queue TEXT NOT NULL,
  job_key TEXT NOT NULL,
  payload TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'done', 'dead')),
  run_at BIGINT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL,
  lease_owner TEXT,
  lease_until BIGINT,
  heartbeat_at BIGINT,
  last_error TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  finished_at BIGINT,
  UNIQUE (queue, job_key)
);
CREATE INDEX jobs_due ON jobs(queue, run_at, id) WHERE state = 'pending';
CREATE INDEX jobs_leases ON jobs(lease_until) WHERE state = 'running'
)SQL"};

}  // namespace sika::store::migrations
