#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Dunning of link cycles and mandates after a revocation (billing/, docs/subscriptions.md).
// bil_payments.link_deadline_at: when a cycle paid by a payment link (its operator needs a code)
// fails unless its link was paid, on the subscription's clock; each attempt's new link sets it.
// bil_mandates is rebuilt without UNIQUE (subscription_id): a subscription keeps its REVOKED
// mandates for history and may take a new one, but has at most one live (PENDING or ACTIVE)
// mandate, which the partial unique index enforces whatever the number of nodes. Nothing refers
// to a mandate's id, so the copy lets each backend number the rows again (in the same order).
extern const Migration k0024BillingDunning{24, "billing_dunning", R"SQL(
ALTER TABLE bil_payments ADD COLUMN link_deadline_at BIGINT;
CREATE TABLE bil_mandates_v2 (
  id {{pk}},
  reference TEXT NOT NULL UNIQUE,
  subscription_id BIGINT NOT NULL REFERENCES bil_subscriptions(id),
  wallet TEXT NOT NULL,
  cap BIGINT NOT NULL,
  currency TEXT NOT NULL,
  frequency TEXT NOT NULL,
  status TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE,
  debits BIGINT NOT NULL DEFAULT 0,
  last_debit_at BIGINT,
  approved_at BIGINT,
  revoked_at BIGINT,
  revoked_by TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
INSERT INTO bil_mandates_v2 (reference, subscription_id, wallet, cap, currency, frequency, status, token_hash, debits,
  last_debit_at, approved_at, revoked_at, revoked_by, created_at, updated_at)
  SELECT reference, subscription_id, wallet, cap, currency, frequency, status, token_hash, debits, last_debit_at,
  approved_at, revoked_at, revoked_by, created_at, updated_at FROM bil_mandates ORDER BY id;
DROP TABLE bil_mandates;
ALTER TABLE bil_mandates_v2 RENAME TO bil_mandates;
CREATE UNIQUE INDEX bil_mandates_live ON bil_mandates(subscription_id) WHERE status IN ('PENDING', 'ACTIVE');
CREATE INDEX bil_mandates_subscription ON bil_mandates(subscription_id, id)
)SQL"};

}  // namespace sika::store::migrations
