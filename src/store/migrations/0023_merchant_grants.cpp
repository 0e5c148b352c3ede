#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// What a merchant's credentials may do, changed by the operator (docs/dashboard.md).
// merchants.tier: the pricing tier its OAuth applications and staff act with; existing merchants
// take the highest tier of their applications (1 without any).
// merchants.grants_version: moves at every change of the merchant's countries, tier or status.
// Access tokens carry the version their claims were read at; the gateway refuses a token whose
// version is no longer the merchant's (identity::access_token_revoked), so a removed country or a
// disabled merchant stops working at once instead of when the token expires.
extern const Migration k0023MerchantGrants{23, "merchant_grants", R"SQL(
ALTER TABLE merchants ADD COLUMN tier BIGINT NOT NULL DEFAULT 1;
ALTER TABLE merchants ADD COLUMN grants_version BIGINT NOT NULL DEFAULT 0;
UPDATE merchants SET tier = COALESCE((SELECT MAX(c.user_tier) FROM oauth_clients c WHERE c.merchant_id = merchants.id), 1)
)SQL"};

}  // namespace sika::store::migrations
