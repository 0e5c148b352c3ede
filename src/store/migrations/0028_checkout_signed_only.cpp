#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Hosted checkout settings of a merchant (docs/checkout.md, "Signed requests only").
// signed_only = 1: every POST {checkout_url} of the merchant must carry a valid signature, so the
// customer cannot change the amount of a form. No row means off: merchants that existed before
// keep their plain copy-paste forms working until they sign them and turn it on.
extern const Migration k0028CheckoutSignedOnly{28, "checkout_signed_only", R"SQL(
CREATE TABLE chk_settings (
  merchant_id BIGINT PRIMARY KEY REFERENCES merchants(id),
  signed_only INTEGER NOT NULL DEFAULT 0,
  updated_at BIGINT NOT NULL,
  updated_by TEXT NOT NULL
)
)SQL"};

}  // namespace sika::store::migrations
