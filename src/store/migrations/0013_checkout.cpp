#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Hosted checkout (checkout/): a merchant's checkout session and the domains its return URLs may
// name. One session row per (merchant, environment, orderId): the same order finds the same
// session, and a session whose order was paid is never opened again. `attempt` counts the
// collections made for the session; a new one is taken only by a conditional UPDATE on the
// attempt the customer saw, so one session has at most one collection in flight
// (docs/checkout.md).
extern const Migration k0013Checkout{13, "checkout", R"SQL(
CREATE TABLE chk_sessions (
  id {{pk}},
  reference TEXT NOT NULL UNIQUE,
  merchant_id BIGINT NOT NULL REFERENCES merchants(id),
  environment TEXT NOT NULL,
  order_id TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  status TEXT NOT NULL,
  amount BIGINT NOT NULL,
  currency TEXT NOT NULL,
  description TEXT NOT NULL,
  shop_name TEXT NOT NULL,
  success_url TEXT NOT NULL,
  failure_url TEXT NOT NULL,
  customer TEXT NOT NULL,
  line TEXT NOT NULL,
  area TEXT NOT NULL,
  fee_bearer TEXT NOT NULL,
  settlement_mode TEXT NOT NULL,
  distribution TEXT NOT NULL,
  attempt BIGINT NOT NULL DEFAULT 0,
  expires_at BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  UNIQUE (merchant_id, environment, order_id)
);
CREATE TABLE chk_domains (
  merchant_id BIGINT NOT NULL REFERENCES merchants(id),
  domain TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (merchant_id, domain)
)
)SQL"};

}  // namespace sika::store::migrations
