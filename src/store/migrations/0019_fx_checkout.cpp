#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Currency conversion and checkout secret rotation (docs/checkout.md):
//  - fx_rates: the operator's rate table. A row is never changed: setting a pair again inserts
//    a new row, and the rate in force for a pair is its row with the latest valid_from not in
//    the future. A rate is an exact fraction: 1 unit of `base` is numerator/denominator units
//    of `quote` (major units).
//  - pay_conversions: a collection charged in another currency than the one its merchant is
//    credited in; its completion posts the FX_SETTLEMENT journal from it.
//  - chk_sessions.fx_quotes: the quotes locked on a line=up session (JSON array).
//  - chk_secrets: the random salt of each rotated checkout secret version (the secret itself
//    is derived from the server key and never stored).
extern const Migration k0019FxCheckout{19, "fx_checkout", R"SQL(
CREATE TABLE fx_rates (
  id {{pk}},
  base TEXT NOT NULL,
  quote TEXT NOT NULL,
  numerator BIGINT NOT NULL CHECK (numerator > 0),
  denominator BIGINT NOT NULL CHECK (denominator > 0),
  valid_from BIGINT NOT NULL,
  set_by TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE INDEX fx_rates_pair ON fx_rates (base, quote, valid_from);
CREATE TABLE pay_conversions (
  transaction_id BIGINT PRIMARY KEY REFERENCES pay_transactions(id),
  currency TEXT NOT NULL,
  order_amount BIGINT NOT NULL,
  amount BIGINT NOT NULL,
  numerator BIGINT NOT NULL,
  denominator BIGINT NOT NULL,
  quoted_at BIGINT NOT NULL
);
ALTER TABLE chk_sessions ADD COLUMN fx_quotes TEXT NOT NULL DEFAULT '[]';
CREATE TABLE chk_secrets (
  merchant_id BIGINT NOT NULL REFERENCES merchants(id),
  version BIGINT NOT NULL,
  salt TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (merchant_id, version)
)
)SQL"};

}  // namespace sika::store::migrations
