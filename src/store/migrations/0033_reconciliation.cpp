#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Operator reconciliation (docs/reconciliation.md). recon_runs: one imported statement of a
// connector instance (the same file twice is the same run: UNIQUE (connector, file_hash));
// recon_lines: its parsed lines, amounts in integer minor units, status normalised to
// succeeded | failed | pending; recon_items: the result per reference (matched, missing_in_sika,
// missing_at_operator, timing, mismatch_amount, mismatch_currency, mismatch_status), its state
// (open, resolved, under_investigation, adjusted) changed only by a conditional UPDATE, with who
// decided, when and why, and the adjustment journal an accepted figure posted; *_held: what the
// operator holds for us because of the payment (+ a succeeded collection, - a payout or refund),
// by Sika's books and by the statement. recon_closings: a connector's day, Sika's clearing
// against the operator's closing balance. Two indexes let the matcher find a transaction by the
// operator's reference and list a connector's submitted transactions of a period.
extern const Migration k0033Reconciliation{33, "reconciliation", R"SQL(
CREATE TABLE recon_runs (
  id {{pk}},
  connector TEXT NOT NULL,
  environment TEXT NOT NULL,
  format TEXT NOT NULL,
  file_hash TEXT NOT NULL,
  file_name TEXT NOT NULL,
  service_code TEXT,
  period_start BIGINT NOT NULL,
  period_end BIGINT NOT NULL,
  line_count BIGINT NOT NULL,
  closing_balance BIGINT,
  closing_currency TEXT,
  status TEXT NOT NULL,
  imported_by TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  finished_at BIGINT,
  UNIQUE (connector, file_hash)
);
CREATE TABLE recon_lines (
  id {{pk}},
  run_id BIGINT NOT NULL REFERENCES recon_runs(id),
  line_no BIGINT NOT NULL,
  operator_reference TEXT NOT NULL,
  our_reference TEXT,
  type TEXT NOT NULL,
  amount BIGINT NOT NULL,
  currency TEXT NOT NULL,
  status TEXT NOT NULL,
  operator_status TEXT NOT NULL,
  occurred_at BIGINT NOT NULL,
  fee BIGINT NOT NULL,
  UNIQUE (run_id, operator_reference)
);
CREATE TABLE recon_items (
  id {{pk}},
  run_id BIGINT NOT NULL REFERENCES recon_runs(id),
  line_id BIGINT REFERENCES recon_lines(id),
  transaction_id BIGINT REFERENCES pay_transactions(id),
  reference TEXT NOT NULL,
  kind TEXT NOT NULL,
  state TEXT NOT NULL,
  sika_currency TEXT,
  sika_amount BIGINT,
  sika_status TEXT,
  sika_held BIGINT NOT NULL,
  operator_currency TEXT,
  operator_amount BIGINT,
  operator_status TEXT,
  operator_held BIGINT NOT NULL,
  occurred_at BIGINT,
  journal_id BIGINT REFERENCES ledger_journals(id),
  decided_by TEXT,
  decided_at BIGINT,
  decision_reason TEXT,
  created_at BIGINT NOT NULL
);
CREATE INDEX recon_items_run ON recon_items(run_id, kind, state, id);
CREATE INDEX recon_items_transaction ON recon_items(transaction_id) WHERE transaction_id IS NOT NULL;
CREATE INDEX recon_items_open ON recon_items(state, kind) WHERE state IN ('open', 'under_investigation');
CREATE TABLE recon_closings (
  id {{pk}},
  connector TEXT NOT NULL,
  day TEXT NOT NULL,
  currency TEXT NOT NULL,
  run_id BIGINT REFERENCES recon_runs(id),
  sika_clearing BIGINT NOT NULL,
  operator_balance BIGINT NOT NULL,
  open_items BIGINT NOT NULL,
  open_count BIGINT NOT NULL,
  operator_fees BIGINT NOT NULL,
  unexplained BIGINT NOT NULL,
  entered_by TEXT NOT NULL,
  computed_at BIGINT NOT NULL,
  UNIQUE (connector, day, currency)
);
CREATE INDEX pay_transactions_operator_reference ON pay_transactions(connector, operator_reference)
  WHERE operator_reference IS NOT NULL;
CREATE INDEX pay_transactions_connector_submitted ON pay_transactions(connector, submitted_at, id)
)SQL"};

}  // namespace sika::store::migrations
