#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Merchants, their API keys, platform settings and the transactional outbox.
extern const Migration k0001Foundation{1, "foundation", R"SQL(
CREATE TABLE settings (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE merchants (
  id {{pk}},
  matricule TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  email TEXT,
  countries TEXT NOT NULL DEFAULT '',
  environment TEXT NOT NULL DEFAULT 'sandbox',
  active INTEGER NOT NULL DEFAULT 1,
  created_at BIGINT NOT NULL
);
CREATE TABLE api_keys (
  id {{pk}},
  merchant_id BIGINT NOT NULL REFERENCES merchants(id),
  kind TEXT NOT NULL,
  display_prefix TEXT NOT NULL,
  secret_hash TEXT NOT NULL UNIQUE,
  environment TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  revoked_at BIGINT
);
CREATE INDEX api_keys_merchant ON api_keys(merchant_id);
CREATE TABLE events (
  id {{pk}},
  event_id TEXT NOT NULL UNIQUE,
  merchant_id BIGINT REFERENCES merchants(id),
  event_type TEXT NOT NULL,
  subject TEXT NOT NULL,
  sequence BIGINT NOT NULL,
  payload TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  UNIQUE (subject, sequence)
);
CREATE INDEX events_merchant ON events(merchant_id, id)
)SQL"};

}  // namespace sika::store::migrations
