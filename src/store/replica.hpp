#pragma once
// A read replica in front of the primary (`database.read_url`, docs/deployment.md): a Db whose
// reads run on the replica, and on the primary while the replica cannot answer (unreachable,
// restarting, or cancelling a read that conflicts with recovery), and whose writes always run on
// the primary. A read from it may lag the primary by the replication delay: use it only where a
// slightly stale answer is acceptable (dashboard lists, statements), never for a read that
// decides a write.
#include <memory>

#include "store/db.hpp"

namespace sika::store {

// `primary` must outlive the result, which owns `replica`.
std::unique_ptr<Db> read_routed(Db& primary, std::unique_ptr<Db> replica);

}  // namespace sika::store
