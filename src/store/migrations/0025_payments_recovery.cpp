#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Recovery of pending payments (docs/payments.md, "Recovery of pending payments").
// pay_transactions.next_check_at: when the operator is next asked about a PENDING PROVIDER
// transaction (NULL once it is final, and for everything that waits for no operator); checks: how
// many times it was asked; check_owner: the claim that holds it while its operator is asked (its
// next_check_at is then the lease's end). Every transaction already PENDING at an operator is due
// at once. pay_status_checks: each question asked and its answer. sandbox_operator_requests: what
// the sandbox operator was asked to do, so that it answers after a restart and on every node as an
// operator outside the platform would.
extern const Migration k0025PaymentsRecovery{25, "payments_recovery", R"SQL(
ALTER TABLE pay_transactions ADD COLUMN next_check_at BIGINT;
ALTER TABLE pay_transactions ADD COLUMN checks INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pay_transactions ADD COLUMN check_owner TEXT;
UPDATE pay_transactions SET next_check_at = 0 WHERE status = 'PENDING' AND channel = 'PROVIDER';
CREATE INDEX pay_transactions_recovery ON pay_transactions(next_check_at) WHERE next_check_at IS NOT NULL;
CREATE TABLE pay_status_checks (
  id {{pk}},
  transaction_id BIGINT NOT NULL REFERENCES pay_transactions(id),
  node TEXT NOT NULL,
  asked_at BIGINT NOT NULL,
  answered_at BIGINT NOT NULL,
  outcome TEXT NOT NULL,
  reason TEXT
);
CREATE INDEX pay_status_checks_transaction ON pay_status_checks(transaction_id, id);
CREATE TABLE sandbox_operator_requests (
  provider_reference TEXT PRIMARY KEY,
  submitted_at BIGINT NOT NULL
)
)SQL"};

}  // namespace sika::store::migrations
