#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Refunds of completed collections (docs/refunds.md). pay_refunds: one row per refund, idempotent on
// (merchant_id, environment, refund_uuid) with the request's hash; at most one refund of a
// transaction is in flight (PENDING or PROCESSING) at a time, held by the partial unique index
// pay_refunds_in_flight. pay_transactions.refunded_amount: the sum of its COMPLETED refunds;
// refunding_amount: the amount of its refund in flight. Both move only by conditional UPDATEs in the
// write unit of the refund's own moves, so refunded_amount + refunding_amount never exceeds amount.
// queued_at: a refund accepted (funds reserved) while its operator was not OPERATIONAL, waiting to be
// sent, as pay_transactions.queued_at for payouts. A refund's ledger journals name it by ledger_journals.refund_id
// (their transaction_id is NULL): one journal of each kind per refund (ledger_journals_refund).
extern const Migration k0031Refunds{31, "refunds", R"SQL(
CREATE TABLE pay_refunds (
  id {{pk}},
  reference TEXT NOT NULL UNIQUE,
  merchant_id BIGINT NOT NULL REFERENCES merchants(id),
  transaction_id BIGINT NOT NULL REFERENCES pay_transactions(id),
  transaction_reference TEXT NOT NULL,
  environment TEXT NOT NULL,
  refund_uuid TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  provider_reference TEXT NOT NULL UNIQUE,
  amount BIGINT NOT NULL,
  currency TEXT NOT NULL,
  status TEXT NOT NULL,
  reason TEXT NOT NULL,
  description TEXT NOT NULL,
  metadata TEXT NOT NULL,
  failure_reason TEXT,
  operator_reference TEXT,
  channel TEXT NOT NULL,
  connector TEXT NOT NULL,
  operator_state TEXT,
  expires_at BIGINT NOT NULL,
  next_check_at BIGINT,
  checks INTEGER NOT NULL DEFAULT 0,
  check_owner TEXT,
  queued_at BIGINT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  UNIQUE (merchant_id, environment, refund_uuid),
  CHECK (amount > 0)
);
CREATE UNIQUE INDEX pay_refunds_in_flight ON pay_refunds(transaction_id) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX pay_refunds_merchant ON pay_refunds(merchant_id, environment, id);
CREATE INDEX pay_refunds_transaction ON pay_refunds(transaction_id, id);
CREATE INDEX pay_refunds_recovery ON pay_refunds(next_check_at) WHERE next_check_at IS NOT NULL;
CREATE INDEX pay_refunds_queued ON pay_refunds(queued_at, id) WHERE queued_at IS NOT NULL;
ALTER TABLE pay_transactions ADD COLUMN refunded_amount BIGINT NOT NULL DEFAULT 0;
ALTER TABLE pay_transactions ADD COLUMN refunding_amount BIGINT NOT NULL DEFAULT 0;
ALTER TABLE ledger_journals ADD COLUMN refund_id BIGINT REFERENCES pay_refunds(id);
CREATE UNIQUE INDEX ledger_journals_refund ON ledger_journals(refund_id, kind) WHERE refund_id IS NOT NULL
)SQL"};

}  // namespace sika::store::migrations
