#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Refunds of converted collections (docs/refunds.md, "Converted collections"): what a refund costs
// its merchant(s) in the order's currency. converted_currency is the conversion's currency and
// converted_amount the refund's cost in it (minor units, never more than what is left of what the
// collection credited), both set in the unit that creates the refund and never changed after; NULL
// for a refund of a collection without conversion.
extern const Migration k0038RefundConversion{38, "refund_conversion", R"SQL(
ALTER TABLE pay_refunds ADD COLUMN converted_currency TEXT;
ALTER TABLE pay_refunds ADD COLUMN converted_amount BIGINT
)SQL"};

}  // namespace sika::store::migrations
