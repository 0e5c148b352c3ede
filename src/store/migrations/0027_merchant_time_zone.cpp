#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// merchants.time_zone: the zone the dashboard and the merchant's customer pages show times in
// (core/time_zone.hpp); '' means the zone of the merchant's first country.
extern const Migration k0027MerchantTimeZone{27, "merchant_time_zone", R"SQL(
ALTER TABLE merchants ADD COLUMN time_zone TEXT NOT NULL DEFAULT ''
)SQL"};

}  // namespace sika::store::migrations
