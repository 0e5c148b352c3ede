#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Statements (docs/statements.md) read an account's entries over a time range in (created_at, id)
// order, a keyset page at a time: this index makes each page a range scan, whatever the size of
// the account's history.
extern const Migration k0032Statements{32, "statements", R"SQL(
CREATE INDEX ledger_entries_account_time ON ledger_entries(account_id, created_at, id)
)SQL"};

}  // namespace sika::store::migrations
