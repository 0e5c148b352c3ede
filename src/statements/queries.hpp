#pragma once
// The statement's reads: the account's balances at the statement's two instants and its entries
// between them, a keyset page at a time (ledger_entries_account_time, migration 0032).
#include <cstdint>
#include <optional>
#include <vector>

#include "core/result.hpp"
#include "payments/ledger.hpp"
#include "statements/model.hpp"
#include "store/db.hpp"

namespace sika::statements::queries {

// What one read unit learns before the movements are listed: every later page reads entries up
// to `last_entry_id` only, so a statement streamed over several read units lists exactly the
// entries its balances were computed from.
struct Frame {
  std::optional<std::int64_t> account_id;  // none: the account has no money yet (no entries)
  std::int64_t opening = 0, closing = 0;
  std::int64_t last_entry_id = 0;
  // The paid settlement batches covering entries up to last_entry_id: (after, last] -> paid_at,
  // ordered by last.
  struct Settled {
    std::int64_t after_entry_id = 0, last_entry_id = 0, paid_at = 0;
  };
  std::vector<Settled> settled;
  // When the paid batch covering entry `id` was paid, if one does.
  std::optional<std::int64_t> settled_at(std::int64_t id) const;
};

// The balances of `account` at start_ms and at end_ms (its balance less what entries at or after
// the instant moved) and the newest entry id, in one read unit.
Result<Frame> frame(store::Conn& c, const payments::ledger::AccountKey& account, std::int64_t start_ms,
                    std::int64_t end_ms);

// Where a page starts: after the entry (created_at, id), or at the start when empty.
struct Cursor {
  std::int64_t created_at = 0, id = 0;
};

// Up to `limit` entries of the account in [start_ms, end_ms) with id <= last_entry_id, in
// (created_at, id) order, after `after`.
Result<std::vector<EntryRow>> entries(store::Conn& c, std::int64_t account_id, std::int64_t start_ms,
                                      std::int64_t end_ms, std::int64_t last_entry_id,
                                      const std::optional<Cursor>& after, int limit);

}  // namespace sika::statements::queries
