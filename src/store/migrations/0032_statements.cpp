#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Statements (docs/statements.md) read an account's entries over a time range in (created_at, id)
// order, a keyset page at a time: ledger_entries_account_time makes each page a range scan,
// whatever the size of the account's history.
// Settlement (docs/settlement.md): where and when each merchant's money goes (stl_settings, the
// reserve set by an operator), and one batch per merchant, environment, currency and period
// (the UNIQUE key makes it so whatever the number of nodes). A batch covers the entries of the
// merchant's available account in (after_entry_id, last_entry_id], its own SETTLEMENT entry last.
extern const Migration k0032Statements{32, "statements", R"SQL(
CREATE INDEX ledger_entries_account_time ON ledger_entries(account_id, created_at, id);
CREATE TABLE stl_settings (
  merchant_id BIGINT NOT NULL REFERENCES merchants(id),
  environment TEXT NOT NULL,
  currency TEXT NOT NULL,
  destination TEXT NOT NULL,
  provider TEXT NOT NULL DEFAULT '',
  msisdn TEXT NOT NULL DEFAULT '',
  iban TEXT NOT NULL DEFAULT '',
  bic TEXT NOT NULL DEFAULT '',
  holder TEXT NOT NULL DEFAULT '',
  schedule TEXT NOT NULL,
  minimum BIGINT NOT NULL DEFAULT 0,
  reserve BIGINT NOT NULL DEFAULT 0,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (merchant_id, environment, currency)
);
CREATE TABLE stl_batches (
  id {{pk}},
  reference TEXT NOT NULL UNIQUE,
  merchant_id BIGINT NOT NULL REFERENCES merchants(id),
  environment TEXT NOT NULL,
  currency TEXT NOT NULL,
  period TEXT NOT NULL,
  account_id BIGINT NOT NULL REFERENCES ledger_accounts(id),
  after_entry_id BIGINT NOT NULL,
  last_entry_id BIGINT NOT NULL,
  destination TEXT NOT NULL,
  gross BIGINT NOT NULL,
  fees BIGINT NOT NULL,
  net BIGINT NOT NULL,
  status TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  paid_at BIGINT,
  UNIQUE (merchant_id, environment, currency, period)
);
CREATE INDEX stl_batches_account ON stl_batches(account_id, last_entry_id)
)SQL"};

}  // namespace sika::store::migrations
