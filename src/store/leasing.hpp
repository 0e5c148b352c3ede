#pragma once
// Building blocks of leased work queues (the jobs table, webhook deliveries), with the dialect
// differences kept here: a queue unit's isolation level and how due rows are picked without two
// claimers taking the same row.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "store/db.hpp"

namespace sika::store {

// Makes the current write unit a queue unit; must be the unit's first statement. A queue's
// safety comes from row locks (FOR UPDATE SKIP LOCKED) and conditional updates, not from
// predicate locks: under PostgreSQL's SERIALIZABLE (the default for write units) concurrent
// claimers reading the same index range abort each other in a loop, so queue units run at READ
// COMMITTED, the isolation the SKIP LOCKED pattern is made for. A no-op on SQLite, whose writer
// runs units one at a time.
Status queue_isolation(Conn& conn);

// The clause that ends a SELECT picking rows to claim: on PostgreSQL it locks the picked rows
// for the unit and skips rows another unit holds (" FOR UPDATE SKIP LOCKED"); on SQLite it is
// empty (the single writer already serializes claimers).
std::string_view skip_locked(const Conn& conn);

// What follows a table's name in FROM to make SQLite read it through `index` (" INDEXED BY index"),
// for a pick whose right index the planner cannot tell from an unanalyzed table (a partial index
// of the few queued rows beside an index on a column every row has); empty on PostgreSQL, whose
// planner has its statistics.
std::string indexed_by(const Conn& conn, std::string_view index);

// A pick of due rows spread over groups (e.g. deliveries per endpoint).
struct GroupedPick {
  std::string_view table;         // the queue table
  std::string_view group_column;  // the column rows are grouped by (BIGINT)
  std::string_view due;           // condition on the table's unqualified columns, with `?` placeholders
  Params due_params;              // the values of `due`'s placeholders
  std::string_view order_by;      // order inside a group, unqualified columns
  std::vector<std::pair<std::int64_t, std::int64_t>> groups;  // (group value, most rows of it), in priority order
  std::int64_t limit = 0;                                     // most rows in all
};

// Returns the ids of up to `limit` due rows, at most each group's quota per group, taking groups
// in the given order. On PostgreSQL the rows are locked for the unit and rows that another unit
// holds are skipped (one statement); on SQLite they are plain reads. Callers still claim the ids
// with a conditional UPDATE that repeats the due condition.
Result<std::vector<std::int64_t>> pick_due_per_group(Conn& conn, const GroupedPick& pick);

// "?, ?, ?" with n placeholders.
std::string placeholders(std::size_t n);

}  // namespace sika::store
