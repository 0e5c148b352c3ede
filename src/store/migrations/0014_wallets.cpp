#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Wallets (wallets/): one wallet per person and environment, keyed by the phone number; its
// money is the ledger's customer:<msisdn> accounts, one per currency (docs/wallet-link.md).
// wlt_links joins a partner (a merchant holding a link API key) to a wallet: UNIQUE
// (partner_id, wallet_id) makes link/new idempotent per (partner, phone). The link's API key is
// stored only as its keyed hash (key_hash). period_start / period_spent are the consent's
// current window; they only move by conditional UPDATEs of the link's row, so concurrent charges
// on any number of nodes never spend past period_limit. wlt_sessions are the wallet page's
// signed-in sessions (only the hash of the cookie's token).
extern const Migration k0014Wallets{14, "wallets", R"SQL(
CREATE TABLE wlt_wallets (
  id {{pk}},
  matricule TEXT NOT NULL UNIQUE,
  environment TEXT NOT NULL,
  msisdn TEXT NOT NULL,
  country TEXT NOT NULL,
  currency TEXT NOT NULL,
  email TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  UNIQUE (environment, msisdn)
);
CREATE TABLE wlt_links (
  id {{pk}},
  reference TEXT NOT NULL UNIQUE,
  partner_id BIGINT NOT NULL REFERENCES merchants(id),
  wallet_id BIGINT NOT NULL REFERENCES wlt_wallets(id),
  status TEXT NOT NULL,
  key_hash TEXT NOT NULL UNIQUE,
  key_nonce TEXT NOT NULL,
  currency TEXT NOT NULL,
  per_payment_limit BIGINT NOT NULL,
  period_limit BIGINT NOT NULL,
  period_ms BIGINT NOT NULL,
  period_start BIGINT NOT NULL DEFAULT 0,
  period_spent BIGINT NOT NULL DEFAULT 0,
  confirmed_at BIGINT,
  unlinked_at BIGINT,
  unlinked_by TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  UNIQUE (partner_id, wallet_id)
);
CREATE INDEX wlt_links_wallet ON wlt_links(wallet_id, id);
CREATE TABLE wlt_sessions (
  id {{pk}},
  token_hash TEXT NOT NULL UNIQUE,
  wallet_id BIGINT NOT NULL REFERENCES wlt_wallets(id),
  expires_at BIGINT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE INDEX pay_transactions_customer ON pay_transactions(customer_wallet, environment, id)
)SQL"};

}  // namespace sika::store::migrations
