#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Reconciliation (docs/reconciliation.md): the operator's live answer about a status mismatch
// (`operator_live_status`, asked through the connector's status API; `live_check_at` is when it
// is next asked, or the end of the asking node's claim, NULL when nothing is to be asked), and
// the lease of a run being imported (its importer heartbeats `lease_until` at every batch; a run
// whose lease expired is an interrupted import, cleaned up by the next import of its file).
extern const Migration k0037ReconLiveAndLease{37, "recon_live_and_lease", R"SQL(
ALTER TABLE recon_items ADD COLUMN operator_live_status TEXT;
ALTER TABLE recon_items ADD COLUMN live_checked_at BIGINT;
ALTER TABLE recon_items ADD COLUMN live_checks INTEGER NOT NULL DEFAULT 0;
ALTER TABLE recon_items ADD COLUMN live_check_at BIGINT;
CREATE INDEX recon_items_live ON recon_items(live_check_at) WHERE live_check_at IS NOT NULL;
ALTER TABLE recon_runs ADD COLUMN lease_owner TEXT;
ALTER TABLE recon_runs ADD COLUMN lease_until BIGINT
)SQL"};

}  // namespace sika::store::migrations
