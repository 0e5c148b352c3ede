#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// How a payer gets the operator's one-time code for a service that needs one (the USSD code to
// dial, for example), shown by the payment pages and returned with `otp_required`.
extern const Migration k0018CatalogOtpHelper{18, "catalog_otp_helper", R"SQL(
ALTER TABLE catalog_services ADD COLUMN otp_helper TEXT NOT NULL DEFAULT ''
)SQL"};

}  // namespace sika::store::migrations
