#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Settlement made usable (docs/settlement.md): the weekday of a WEEKLY schedule (1 Monday .. 7
// Sunday), and the payout that pays a mobile-money batch (its transaction reference, set once by
// the payout's creating unit) with the time a batch whose payout failed became FAILED.
extern const Migration k0035SettlementPayouts{35, "settlement_payouts", R"SQL(
ALTER TABLE stl_settings ADD COLUMN weekday INTEGER NOT NULL DEFAULT 1;
ALTER TABLE stl_batches ADD COLUMN payout_reference TEXT;
ALTER TABLE stl_batches ADD COLUMN failed_at BIGINT;
CREATE INDEX stl_batches_open ON stl_batches(status, destination)
)SQL"};

}  // namespace sika::store::migrations
