#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Transaction lists (payments/queries.hpp): a merchant's transactions newest first, paged by
// id, without scanning other merchants' rows or sorting.
extern const Migration k0006PaymentsLists{6, "payments_lists", R"SQL(
CREATE INDEX pay_transactions_merchant ON pay_transactions(merchant_id, environment, id)
)SQL"};

}  // namespace sika::store::migrations
