#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// What an operator's accepted submission leaves for later (docs/operators.md, "The interface"):
// customer_url, where the customer approves a redirect payment (Orange Money's page, Wave's launch
// URL), shown from the confirmation page; operator_state, the connector's own data about the order
// (its tokens and ids at the operator), opaque to the platform and given back to the connector.
extern const Migration k0030OperatorState{30, "operator_state", R"SQL(
ALTER TABLE pay_transactions ADD COLUMN customer_url TEXT;
ALTER TABLE pay_transactions ADD COLUMN operator_state TEXT
)SQL"};

}  // namespace sika::store::migrations
