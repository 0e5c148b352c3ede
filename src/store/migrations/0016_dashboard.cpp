#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// The dashboard (dashboard/): who may sign in and as what, the sessions, the second factor and
// the audit log of every change made through it.
// dsh_operators: users who run the platform (every merchant). dsh_members: a user's role in one
// merchant (owner, developer or viewer). dsh_sessions: a signed-in browser; only the keyed hash of
// the cookie is stored; `second_factor` is 'enrol' or 'verify' until the TOTP step is passed, then
// 'done'. dsh_totp: a user's TOTP secret, sealed under the server secret (it must be usable for
// HMAC, so it cannot be a one-way hash); last_step refuses a code used twice. The indexes on
// pay_transactions serve the dashboard's reads: the home page's chart (a merchant's collections of
// the last days, read from the index alone: it holds every column the chart sums) and the
// transactions search by invoice reference. The search by whole wallet number uses wallets'
// pay_transactions_customer (customer_wallet, environment, id): every index here is paid for by
// each new transaction, so none repeats another.
extern const Migration k0016Dashboard{16, "dashboard", R"SQL(
CREATE TABLE dsh_operators (
  user_id BIGINT PRIMARY KEY REFERENCES identity_users(id),
  created_at BIGINT NOT NULL
);
CREATE TABLE dsh_members (
  id {{pk}},
  user_id BIGINT NOT NULL REFERENCES identity_users(id),
  merchant_id BIGINT NOT NULL REFERENCES merchants(id),
  role TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  UNIQUE (user_id, merchant_id)
);
CREATE INDEX dsh_members_merchant ON dsh_members(merchant_id);
CREATE TABLE dsh_totp (
  user_id BIGINT PRIMARY KEY REFERENCES identity_users(id),
  secret_sealed TEXT NOT NULL,
  confirmed_at BIGINT,
  last_step BIGINT NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL
);
CREATE TABLE dsh_sessions (
  id {{pk}},
  token_hash TEXT NOT NULL UNIQUE,
  user_id BIGINT NOT NULL REFERENCES identity_users(id),
  merchant_id BIGINT,
  second_factor TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  last_seen_at BIGINT NOT NULL,
  ended_at BIGINT
);
CREATE INDEX dsh_sessions_user ON dsh_sessions(user_id);
CREATE TABLE dsh_audit (
  id {{pk}},
  at BIGINT NOT NULL,
  user_id BIGINT NOT NULL,
  actor TEXT NOT NULL,
  merchant_id BIGINT,
  action TEXT NOT NULL,
  object TEXT NOT NULL,
  details TEXT NOT NULL
);
CREATE INDEX dsh_audit_merchant ON dsh_audit(merchant_id, id);
CREATE INDEX pay_transactions_merchant_created
  ON pay_transactions(merchant_id, environment, created_at, operation, currency, status, amount);
CREATE INDEX pay_transactions_invoice ON pay_transactions(invoice_reference)
)SQL"};

}  // namespace sika::store::migrations
