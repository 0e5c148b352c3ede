#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Wallet mandates of subscriptions (billing/, docs/subscriptions.md, "Wallet mandates"): the
// customer's approval, given with a code sent to the wallet's phone, that each cycle may be
// debited from that Sika wallet without a prompt, up to `cap` per cycle. One mandate per
// subscription (UNIQUE subscription_id); it is PENDING until approved, then ACTIVE, and REVOKED
// for good (by the customer from the notification's link, or when the subscription ends).
// token_hash is the SHA-256 of the page link's secret (the link is the customer's capability;
// the secret itself is not stored). Each debit takes the mandate by a conditional UPDATE
// (status ACTIVE, cap covering it) in the debit's own write unit, so a revocation that commits
// first stops every later debit on every node.
extern const Migration k0021BillingMandates{21, "billing_mandates", R"SQL(
CREATE TABLE bil_mandates (
  id {{pk}},
  reference TEXT NOT NULL UNIQUE,
  subscription_id BIGINT NOT NULL UNIQUE REFERENCES bil_subscriptions(id),
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
)
)SQL"};

}  // namespace sika::store::migrations
