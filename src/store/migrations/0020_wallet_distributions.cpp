#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// A partner's fiat distribution (wallets/, docs/wallet-link.md): one call that moves money from
// the partner's merchant balance to several linked wallets in one write unit and one ledger
// journal (WALLET_DISTRIBUTION). UNIQUE (partner_id, environment, transaction_uuid) makes it
// idempotent: a replay finds the stored distribution and compares request_hash.
extern const Migration k0020WalletDistributions{20, "wallet_distributions", R"SQL(
CREATE TABLE wlt_distributions (
  id {{pk}},
  reference TEXT NOT NULL UNIQUE,
  partner_id BIGINT NOT NULL REFERENCES merchants(id),
  environment TEXT NOT NULL,
  transaction_uuid TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  currency TEXT NOT NULL,
  amount BIGINT NOT NULL,
  description TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  UNIQUE (partner_id, environment, transaction_uuid),
  CHECK (amount > 0)
);
CREATE TABLE wlt_distribution_lines (
  id {{pk}},
  distribution_id BIGINT NOT NULL REFERENCES wlt_distributions(id),
  position INTEGER NOT NULL,
  link_id BIGINT NOT NULL REFERENCES wlt_links(id),
  amount BIGINT NOT NULL,
  UNIQUE (distribution_id, position),
  CHECK (amount > 0)
)
)SQL"};

}  // namespace sika::store::migrations
