#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// The dashboard's search by the last digits of a customer's number (payments/queries.hpp): an
// index on the number's last four digits, so "0021" reads the few rows ending so instead of every
// row of the merchant. It is an index on an expression, written by the database with the row in
// the same statement: the payments insert is unchanged and pays one index entry. The expression
// is spelt the same on both backends and must stay identical to kWalletTail in queries.cpp, or
// the planner does not use it.
extern const Migration k0022PaymentsWalletTail{22, "payments_wallet_tail", R"SQL(
CREATE INDEX pay_transactions_wallet_tail ON pay_transactions(substr(customer_wallet, length(customer_wallet) - 3), merchant_id, id)
)SQL"};

}  // namespace sika::store::migrations
