#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Reads of the dashboard.
// pay_transactions_wallet_tail: the search by the last digits of a customer's number
// (payments/queries.hpp), by the number's last four digits, so "0021" reads the few rows ending so
// instead of every row of the merchant. An index on an expression, written by the database with
// the row in the same statement: the payments insert is unchanged and pays one index entry. The
// expression is spelt the same on both backends and must stay identical to kWalletTail in
// queries.cpp, or the planners do not use it.
// chk_sessions_merchant: a merchant's hosted checkout sessions, newest first
// (checkout::tables::list).
extern const Migration k0022DashboardReads{22, "dashboard_reads", R"SQL(
CREATE INDEX pay_transactions_wallet_tail ON pay_transactions(substr(customer_wallet, length(customer_wallet) - 3), merchant_id, id);
CREATE INDEX chk_sessions_merchant ON chk_sessions(merchant_id, environment, id)
)SQL"};

}  // namespace sika::store::migrations
