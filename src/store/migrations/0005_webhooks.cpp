#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Webhook endpoints, the fan-out cursor over the outbox, deliveries (one per event and
// endpoint, leased by the delivery workers) and every delivery attempt.
extern const Migration k0005Webhooks{5, "webhooks", R"SQL(
CREATE TABLE webhook_endpoints (
  id {{pk}},
  public_id TEXT NOT NULL UNIQUE,
  merchant_id BIGINT NOT NULL REFERENCES merchants(id),
  url TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  event_types TEXT NOT NULL DEFAULT '*',
  enabled INTEGER NOT NULL DEFAULT 1,
  disabled_reason TEXT,
  disabled_at BIGINT,
  secret_box TEXT NOT NULL,
  secret_created_at BIGINT NOT NULL,
  previous_secret_box TEXT,
  previous_secret_expires_at BIGINT,
  failing_since BIGINT,
  last_success_at BIGINT,
  last_failure_at BIGINT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  deleted_at BIGINT
);
CREATE INDEX webhook_endpoints_merchant ON webhook_endpoints(merchant_id, id);
CREATE TABLE webhook_fanout (
  name TEXT PRIMARY KEY,
  last_event BIGINT NOT NULL,
  gaps TEXT NOT NULL DEFAULT '',
  version BIGINT NOT NULL DEFAULT 0,
  lease_owner TEXT,
  lease_until BIGINT,
  updated_at BIGINT NOT NULL
);
INSERT INTO webhook_fanout (name, last_event, gaps, version, updated_at) VALUES ('events', 0, '', 0, 0);
CREATE TABLE webhook_deliveries (
  id {{pk}},
  public_id TEXT NOT NULL UNIQUE,
  event_row BIGINT NOT NULL REFERENCES events(id),
  endpoint_row BIGINT NOT NULL REFERENCES webhook_endpoints(id),
  merchant_id BIGINT NOT NULL,
  generation INTEGER NOT NULL DEFAULT 0,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at BIGINT NOT NULL,
  lease_owner TEXT,
  lease_until BIGINT,
  last_attempt_at BIGINT,
  last_status_code INTEGER,
  last_error TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  completed_at BIGINT,
  UNIQUE (event_row, endpoint_row, generation)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(endpoint_row, next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_merchant ON webhook_deliveries(merchant_id, id);
CREATE TABLE webhook_attempts (
  id {{pk}},
  delivery_row BIGINT NOT NULL REFERENCES webhook_deliveries(id),
  attempt INTEGER NOT NULL,
  started_at BIGINT NOT NULL,
  latency_ms BIGINT NOT NULL,
  status_code INTEGER,
  outcome TEXT NOT NULL,
  error TEXT,
  response_excerpt TEXT,
  worker TEXT NOT NULL
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts(delivery_row, id)
)SQL"};

}  // namespace sika::store::migrations
