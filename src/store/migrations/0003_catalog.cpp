#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// The catalog: countries, providers, services, pricing rules, and the version counter every
// change bumps in its own write unit (nodes poll it to refresh their in-memory snapshot).
// Rows are never deleted (transactions reference them): `active` = 0 retires one.
extern const Migration k0003Catalog{3, "catalog", R"SQL(
CREATE TABLE catalog_version (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  version BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
INSERT INTO catalog_version (id, version, updated_at) VALUES (1, 0, 0);
CREATE TABLE catalog_countries (
  id {{pk}},
  code TEXT NOT NULL UNIQUE,
  alpha2 TEXT NOT NULL UNIQUE,
  name_fr TEXT NOT NULL,
  name_en TEXT NOT NULL,
  dialling_code TEXT NOT NULL,
  currency TEXT NOT NULL,
  msisdn_length INTEGER NOT NULL CHECK (msisdn_length BETWEEN 4 AND 15),
  msisdn_pattern TEXT NOT NULL DEFAULT '',
  active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE TABLE catalog_providers (
  id {{pk}},
  code TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  connector TEXT NOT NULL,
  active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE TABLE catalog_services (
  id {{pk}},
  code TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  provider_id BIGINT NOT NULL REFERENCES catalog_providers(id),
  country_id BIGINT NOT NULL REFERENCES catalog_countries(id),
  currency TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('mobile_money', 'wallet')),
  needs_otp INTEGER NOT NULL DEFAULT 0 CHECK (needs_otp IN (0, 1)),
  msisdn_pattern TEXT NOT NULL DEFAULT '',
  min_amount BIGINT CHECK (min_amount >= 0),
  max_amount BIGINT CHECK (max_amount >= 0),
  active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  CHECK (min_amount IS NULL OR max_amount IS NULL OR min_amount <= max_amount)
);
CREATE INDEX catalog_services_country ON catalog_services(country_id);
CREATE INDEX catalog_services_provider ON catalog_services(provider_id);
CREATE TABLE catalog_pricing_rules (
  id {{pk}},
  code TEXT NOT NULL UNIQUE,
  country_id BIGINT NOT NULL REFERENCES catalog_countries(id),
  operation TEXT NOT NULL CHECK (operation IN ('COLLECTION', 'DISBURSEMENT')),
  user_tier BIGINT NOT NULL CHECK (user_tier >= 1),
  min_amount BIGINT CHECK (min_amount >= 0),
  max_amount BIGINT CHECK (max_amount >= 0),
  fee_type TEXT NOT NULL CHECK (fee_type IN ('FIXED', 'PERCENTAGE')),
  fee_units BIGINT NOT NULL CHECK (fee_units >= 0),
  reward_value DOUBLE PRECISION,
  sponsor_reward_value DOUBLE PRECISION,
  incoming_service_id BIGINT REFERENCES catalog_services(id),
  outgoing_service_id BIGINT REFERENCES catalog_services(id),
  active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  CHECK (min_amount IS NULL OR max_amount IS NULL OR min_amount <= max_amount),
  CHECK (fee_type = 'FIXED' OR fee_units <= 1000000)
);
CREATE INDEX catalog_pricing_rules_country ON catalog_pricing_rules(country_id, operation, user_tier)
)SQL"};

}  // namespace sika::store::migrations
