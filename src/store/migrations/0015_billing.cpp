#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Subscriptions and their payments (billing/, docs/subscriptions.md).
// bil_subscriptions.next_cycle is the next cycle to bill; it only moves by a conditional UPDATE
// (... WHERE next_cycle = n) in the write unit that inserts the payment of cycle n, and
// bil_payments is UNIQUE (subscription_id, cycle): a cycle has one payment row, whatever the
// number of nodes, restarts or runs of its job. epoch counts reactivations (it keys the billing
// jobs of each active period). clock_offset_ms is the sandbox test clock: the subscription's
// "now" is the wall clock plus this offset. (merchant_id, environment, idempotency_key) makes
// the subscribe request idempotent; NULL keys do not collide. bil_counts keeps how many
// subscriptions each merchant has per status, in 16 shards (concurrent units seldom touch the same
// row), changed in the units that insert a subscription or move its status: the list's total
// reads at most 64 rows instead of counting the merchant's subscriptions.
extern const Migration k0015Billing{15, "billing", R"SQL(
CREATE TABLE bil_subscriptions (
  id {{pk}},
  reference TEXT NOT NULL UNIQUE,
  uuid TEXT NOT NULL UNIQUE,
  merchant_id BIGINT NOT NULL REFERENCES merchants(id),
  environment TEXT NOT NULL,
  user_tier BIGINT NOT NULL,
  idempotency_key TEXT,
  request_hash TEXT NOT NULL,
  customer_email TEXT NOT NULL,
  customer_phone TEXT,
  customer_user_id TEXT,
  amount BIGINT NOT NULL,
  currency TEXT NOT NULL,
  frequency TEXT NOT NULL,
  time_zone TEXT NOT NULL,
  description TEXT NOT NULL,
  metadata TEXT NOT NULL,
  status TEXT NOT NULL,
  status_reason TEXT,
  anchor_at BIGINT NOT NULL,
  next_cycle BIGINT NOT NULL,
  next_payment_at BIGINT,
  end_at BIGINT,
  max_cycles BIGINT,
  cancel_at_period_end BIGINT NOT NULL DEFAULT 0,
  payer_provider TEXT,
  payer_wallet TEXT,
  epoch BIGINT NOT NULL DEFAULT 0,
  clock_offset_ms BIGINT NOT NULL DEFAULT 0,
  subscribed_at BIGINT NOT NULL,
  last_payment_at BIGINT,
  cancelled_at BIGINT,
  suspended_at BIGINT,
  reactivated_at BIGINT,
  expired_at BIGINT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  UNIQUE (merchant_id, environment, idempotency_key)
);
CREATE INDEX bil_subscriptions_merchant ON bil_subscriptions(merchant_id, environment, id);
CREATE INDEX bil_subscriptions_status ON bil_subscriptions(merchant_id, environment, status, id);
CREATE INDEX bil_subscriptions_email ON bil_subscriptions(merchant_id, environment, customer_email, id);
CREATE TABLE bil_payments (
  id {{pk}},
  reference TEXT NOT NULL UNIQUE,
  subscription_id BIGINT NOT NULL REFERENCES bil_subscriptions(id),
  cycle BIGINT NOT NULL,
  amount BIGINT NOT NULL,
  currency TEXT NOT NULL,
  status TEXT NOT NULL,
  due_at BIGINT NOT NULL,
  paid_at BIGINT,
  attempts BIGINT NOT NULL DEFAULT 0,
  failed_at BIGINT,
  next_retry_at BIGINT,
  payment_intent_reference TEXT,
  payment_link_reference TEXT,
  wallet_transaction_id TEXT,
  failure_reason TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  UNIQUE (subscription_id, cycle)
);
CREATE INDEX bil_payments_status ON bil_payments(status, id);
CREATE TABLE bil_counts (
  merchant_id BIGINT NOT NULL,
  environment TEXT NOT NULL,
  status TEXT NOT NULL,
  shard BIGINT NOT NULL,
  n BIGINT NOT NULL,
  PRIMARY KEY (merchant_id, environment, status, shard)
)
)SQL"};

}  // namespace sika::store::migrations
