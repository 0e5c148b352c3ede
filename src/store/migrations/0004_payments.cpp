#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Payments: transactions (collections and disbursements), their status history, split lines,
// operator callbacks as received, and the double-entry ledger.
//
// Ledger amounts are integer minor units. An entry carries a debit or a credit (never both);
// an account's balance is the sum of its credits minus the sum of its debits (credit-normal),
// kept in ledger_accounts.balance by the same write unit that inserts the entries, and checked
// against them by `sika admin check-ledger`. Entries and journals are only ever inserted.
extern const Migration k0004Payments{4, "payments", R"SQL(
CREATE TABLE pay_transactions (
  id {{pk}},
  reference TEXT NOT NULL UNIQUE,
  merchant_id BIGINT NOT NULL REFERENCES merchants(id),
  environment TEXT NOT NULL,
  operation TEXT NOT NULL,
  transaction_uuid TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  invoice_reference TEXT NOT NULL,
  provider_reference TEXT NOT NULL UNIQUE,
  status TEXT NOT NULL,
  channel TEXT NOT NULL,
  service_code TEXT NOT NULL,
  country TEXT NOT NULL,
  connector TEXT NOT NULL,
  customer_wallet TEXT NOT NULL,
  amount BIGINT NOT NULL,
  currency TEXT NOT NULL,
  fee BIGINT NOT NULL,
  required_total BIGINT NOT NULL,
  confirmation_method TEXT NOT NULL,
  confirmation_url TEXT NOT NULL,
  settlement_mode TEXT NOT NULL,
  split_reference TEXT NOT NULL,
  split_status TEXT NOT NULL,
  description TEXT NOT NULL,
  metadata TEXT NOT NULL,
  needs_otp INTEGER NOT NULL,
  otp_failures INTEGER NOT NULL DEFAULT 0,
  failure_reason TEXT,
  operator_reference TEXT,
  submitted_at BIGINT,
  expires_at BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  UNIQUE (merchant_id, environment, transaction_uuid),
  CHECK (amount > 0 AND fee >= 0 AND required_total = amount + fee)
);
CREATE INDEX pay_transactions_open ON pay_transactions(expires_at) WHERE status IN ('INITIATED', 'PENDING');
CREATE TABLE pay_splits (
  id {{pk}},
  transaction_id BIGINT NOT NULL REFERENCES pay_transactions(id),
  position INTEGER NOT NULL,
  matricule TEXT NOT NULL,
  merchant_id BIGINT NOT NULL REFERENCES merchants(id),
  rate_ppm BIGINT NOT NULL,
  amount BIGINT,
  description TEXT NOT NULL,
  metadata TEXT NOT NULL,
  UNIQUE (transaction_id, position)
);
CREATE TABLE pay_transitions (
  id {{pk}},
  transaction_id BIGINT NOT NULL REFERENCES pay_transactions(id),
  from_status TEXT NOT NULL,
  to_status TEXT NOT NULL,
  source TEXT NOT NULL,
  reason TEXT,
  at BIGINT NOT NULL
);
CREATE INDEX pay_transitions_tx ON pay_transitions(transaction_id, id);
CREATE TABLE pay_callbacks (
  id {{pk}},
  connector TEXT NOT NULL,
  provider_reference TEXT NOT NULL,
  transaction_id BIGINT REFERENCES pay_transactions(id),
  reported_status TEXT NOT NULL,
  reason TEXT,
  outcome TEXT NOT NULL,
  body TEXT NOT NULL,
  received_at BIGINT NOT NULL
);
CREATE INDEX pay_callbacks_tx ON pay_callbacks(transaction_id);
CREATE TABLE ledger_accounts (
  id {{pk}},
  owner TEXT NOT NULL,
  environment TEXT NOT NULL,
  currency TEXT NOT NULL,
  kind TEXT NOT NULL,
  may_go_negative INTEGER NOT NULL,
  balance BIGINT NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL,
  UNIQUE (owner, environment, currency, kind)
);
CREATE TABLE ledger_journals (
  id {{pk}},
  transaction_id BIGINT REFERENCES pay_transactions(id),
  kind TEXT NOT NULL,
  environment TEXT NOT NULL,
  currency TEXT NOT NULL,
  memo TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  UNIQUE (transaction_id, kind)
);
CREATE TABLE ledger_entries (
  id {{pk}},
  journal_id BIGINT NOT NULL REFERENCES ledger_journals(id),
  account_id BIGINT NOT NULL REFERENCES ledger_accounts(id),
  debit BIGINT NOT NULL,
  credit BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  CHECK (debit >= 0 AND credit >= 0 AND (debit = 0 OR credit = 0))
);
CREATE INDEX ledger_entries_account ON ledger_entries(account_id);
CREATE INDEX ledger_entries_journal ON ledger_entries(journal_id)
)SQL"};

}  // namespace sika::store::migrations
