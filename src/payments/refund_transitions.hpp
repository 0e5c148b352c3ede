#pragma once
// The one way a refund's status changes, and the journals of a refund (docs/refunds.md, "Ledger").
// The same idea as transitions.hpp for transactions: a table of legal moves (kRefundStatus, in
// refund.hpp), one conditional UPDATE per move, and in the same write unit its ledger journal, the
// end of its reservation on the collection (and the collection's move to REFUNDED when it is then
// refunded in full) and its outbox event refund.status_changed, all or nothing.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "payments/connector.hpp"
#include "payments/ledger.hpp"
#include "payments/model.hpp"
#include "payments/refund.hpp"
#include "payments/refund_store.hpp"
#include "payments/transitions.hpp"
#include "store/db.hpp"

namespace sika::payments {

// One requested refund move and what it carries.
struct RefundMove {
  RefundStatus to = RefundStatus::processing;
  std::string_view source;  // refund | connector | callback | poll | recovery
  std::optional<std::string> reason;
  std::optional<std::string> operator_reference;
  // A move that leaves the refund in flight (PROCESSING): when recovery first asks the operator. A
  // final move clears it.
  std::optional<std::int64_t> check_at;
};

// The move an operator's final answer asks for: COMPLETED, or FAILED with its reason
// (OPERATOR_FAILURE when it gave none), with the operator's reference.
RefundMove refund_move_for(const OperatorStatus& st, std::string_view source);

// What each party of the collection gives back for a refund of `amount`: the merchant alone, or for a
// SPLIT collection each beneficiary its share of `amount` by the split's largest-remainder rule
// (allocate_split over the split lines' rates), so the shares always sum to `amount`. Reads the
// split lines in the caller's unit.
Result<std::vector<SplitShare>> refund_shares(store::Conn& conn, const Transaction& tx, std::int64_t amount);

// The journal a refund's step implies; `from` nullopt is its creation (PENDING):
//   creation          REFUND_RESERVE  each share's merchant available -> its merchant pending
//   -> COMPLETED      REFUND          each share's merchant pending -> the customer (the wallet for
//                                     the WALLET channel, else the collection's operator clearing)
//   -> FAILED         REFUND_RELEASE  each share's merchant pending -> its merchant available
//   PENDING -> PROCESSING: no legs.
// Every journal it returns balances and moves exactly refund.amount. With `cost` (a converted
// collection) the journals are in cost->currency and move cost->amount, `shares` being shares of it,
// and REFUND credits that currency's FX position instead of the customer (refund_fx_journal pays
// the customer).
ledger::Posting refund_journal(const Refund& refund, const Transaction& tx, std::optional<RefundStatus> from,
                               RefundStatus to, const std::vector<SplitShare>& shares,
                               const tables::RefundCost* cost = nullptr);

// The second journal of a converted collection's refund at COMPLETED, in the collection's currency:
// REFUND_FX, the FX position of refund.currency -> the customer (wallet or operator clearing),
// refund.amount. Each of the two journals balances in its own currency.
ledger::Posting refund_fx_journal(const Refund& refund, const Transaction& tx);

// What refunding `amount` of a collection of `collected` (its currency) costs when the collection
// credited `converted` in the order's currency and its COMPLETED refunds already cost `spent` of it:
// ceil(amount * converted / collected), exact integer arithmetic, never beyond what is left
// (converted - spent); the refund that takes the last of the collection (`last`) costs exactly what
// is left, so a collection refunded in full costs its merchant(s) exactly `converted`.
std::int64_t converted_refund_cost(std::int64_t amount, std::int64_t collected, std::int64_t converted,
                                   std::int64_t spent, bool last);

// Inside the caller's write unit, for a refund just inserted (PENDING) and reserved on its
// collection: posts its REFUND_RESERVE. For a converted collection it first works out and records
// the refund's cost in the order's currency (converted_refund_cost, set_refund_cost), and reserves
// that. A merchant balance that does not cover it is 409 insufficient_funds naming amount: the
// caller's unit must then fail so nothing it wrote remains.
Status reserve_refund(store::Conn& conn, const Refund& refund, const Transaction& tx, std::int64_t at,
                      const ledger::AccountCache* cache, ledger::Learned& learned);

// Moves `refund` by `move` inside the caller's write unit: one conditional UPDATE on the status it
// was read in (store::transition over kRefundStatus), and for a final move the end of its
// reservation on the collection (refunded_amount grows when it COMPLETED), its journal, the
// collection's move COMPLETED -> REFUNDED (payments::transition) once refunded_amount reaches its
// amount; then the event refund.status_changed with the moved record. Returns true and sets `refund`
// to the moved refund; false, writing nothing, when the row had already left refund.status. An
// illegal move is a 500 (a bug).
Result<bool> transition(store::Conn& conn, Refund& refund, const RefundMove& move, std::int64_t at,
                        const ledger::AccountCache* cache, ledger::Learned& learned);

}  // namespace sika::payments
