#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Payment links (links/): a merchant's shareable link and the payments made through it.
// lnk_links.held counts the uses a link has given out: payments completed plus payments in
// flight. It only moves by conditional UPDATEs on the link's row, so concurrent payers of a
// single-use link serialize on that row and only one of them gets the use (docs/payment-links.md).
// lnk_payments is the idempotency key (link, payer's transaction_uuid) and the reservation:
// RESERVED while its collection may still complete, COMPLETED, or RELEASED (the use given back).
extern const Migration k0012PaymentLinks{12, "payment_links", R"SQL(
CREATE TABLE lnk_links (
  id {{pk}},
  reference TEXT NOT NULL UNIQUE,
  short_code TEXT NOT NULL UNIQUE,
  merchant_id BIGINT NOT NULL REFERENCES merchants(id),
  environment TEXT NOT NULL,
  user_tier BIGINT NOT NULL,
  status TEXT NOT NULL,
  amount BIGINT,
  min_amount BIGINT,
  max_amount BIGINT,
  currency TEXT NOT NULL,
  provider TEXT,
  channel TEXT NOT NULL,
  fee_bearer TEXT NOT NULL,
  title TEXT NOT NULL,
  description TEXT NOT NULL,
  expires_at BIGINT,
  max_usage BIGINT,
  held BIGINT NOT NULL DEFAULT 0,
  metadata TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE INDEX lnk_links_merchant ON lnk_links(merchant_id, environment, id);
CREATE TABLE lnk_payments (
  id {{pk}},
  link_id BIGINT NOT NULL REFERENCES lnk_links(id),
  payer_uuid TEXT NOT NULL,
  transaction_uuid TEXT NOT NULL,
  state TEXT NOT NULL,
  reserved_at BIGINT NOT NULL,
  UNIQUE (link_id, payer_uuid)
);
CREATE INDEX lnk_payments_open ON lnk_payments(link_id, state)
)SQL"};

}  // namespace sika::store::migrations
