#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Operator calls and operator health (docs/payments.md, "Operator health" and "Operator calls and
// the timeline").
// pay_operator_calls: every call a connector made to its operator (no secret: no credential, token
// or body), written in batches; a transaction's timeline finds its calls by provider_reference.
// pay_operator_health: each node's summary of its recent calls per connector (node '*' holds an
// operator's forced state), so every node decides from the same rows.
// pay_transactions.queued_at: a PROVIDER payout whose funds are reserved but that waits for its
// operator to be OPERATIONAL before it is sent (NULL for everything else).
extern const Migration k0029OperatorHealth{29, "operator_health", R"SQL(
CREATE TABLE pay_operator_calls (
  id {{pk}},
  connector TEXT NOT NULL,
  operation TEXT NOT NULL,
  provider_reference TEXT,
  operator_reference TEXT,
  method TEXT NOT NULL,
  path TEXT NOT NULL,
  http_status INTEGER NOT NULL,
  code TEXT,
  outcome TEXT NOT NULL,
  started_at BIGINT NOT NULL,
  latency_ms BIGINT NOT NULL,
  node TEXT NOT NULL
);
CREATE INDEX pay_operator_calls_reference ON pay_operator_calls(provider_reference, started_at)
  WHERE provider_reference IS NOT NULL;
CREATE INDEX pay_operator_calls_started ON pay_operator_calls(started_at);
CREATE TABLE pay_operator_health (
  connector TEXT NOT NULL,
  node TEXT NOT NULL,
  state TEXT NOT NULL,
  calls INTEGER NOT NULL,
  errors INTEGER NOT NULL,
  p50_ms BIGINT NOT NULL,
  p90_ms BIGINT NOT NULL,
  changed_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  updated_by TEXT,
  PRIMARY KEY (connector, node)
);
ALTER TABLE pay_transactions ADD COLUMN queued_at BIGINT;
CREATE INDEX pay_transactions_queued ON pay_transactions(queued_at, id) WHERE queued_at IS NOT NULL
)SQL"};

}  // namespace sika::store::migrations
