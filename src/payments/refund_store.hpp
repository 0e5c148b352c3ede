#pragma once
// Every SQL statement that writes or loads refunds (pay_refunds, and the refund columns of
// pay_transactions), run inside the caller's read or write unit. The same SQL on both backends.
// docs/refunds.md.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "payments/refund.hpp"
#include "store/db.hpp"
#include "store/idempotency.hpp"

namespace sika::payments::tables {

// Inserts `refund` (PENDING) unless a refund of the same (merchant, environment, refund_uuid) exists
// or another refund of the same transaction is in flight (pay_refunds_in_flight): the new row's id;
// or, when the key is taken by the same request (same request_hash), the stored refund (a replay);
// a 409 naming refund_uuid when it is taken by another request; 409 refund_in_progress naming
// transaction_reference when another refund of the transaction is PENDING or PROCESSING. One INSERT
// on the normal path; the unique index decides, never a read before it.
Result<store::Keyed<Refund>> insert_refund_or_replay(store::Conn& conn, const Refund& refund);

// Inside a unit that did not insert: the refund of `refund`'s idempotency key when it was made by the
// same request (a replay); a 409 naming refund_uuid when by another; nullopt when there is none.
Result<std::optional<Refund>> find_replay(store::Conn& conn, const Refund& refund);
// The refund of an idempotency key, or nullopt.
Result<std::optional<Refund>> find_refund_by_uuid(store::Conn& conn, std::int64_t merchant_id,
                                                  std::string_view environment, std::string_view refund_uuid);
// The refund of a refund_reference; 404 naming refund_reference when none.
Result<Refund> load_refund(store::Conn& conn, std::string_view reference);
// The refund an operator knows by `provider_reference`, or nullopt.
Result<std::optional<Refund>> find_refund_by_provider_reference(store::Conn& conn, std::string_view provider_reference);

// Reserves `amount` of a COMPLETED collection for a refund, by one conditional UPDATE:
//   refunding_amount += amount WHERE status = 'COMPLETED' AND refunded_amount + refunding_amount + amount <= amount.
// Returns false, writing nothing, when the collection is not COMPLETED or the amount is beyond what
// is still refundable.
Result<bool> reserve_refundable(store::Conn& conn, std::int64_t transaction_id, std::int64_t amount);
// Ends the reservation of a refund of `amount` that reached a final status: refunding_amount -=
// amount, and refunded_amount += amount when it `completed`. Returns the collection's refunded_amount
// after it. A reservation that is not there is a 500 (a bug).
Result<std::int64_t> end_reservation(store::Conn& conn, std::int64_t transaction_id, std::int64_t amount,
                                     bool completed);

// What a refund of a converted collection costs its merchant(s) in the order's currency
// (pay_refunds.converted_currency / converted_amount, docs/refunds.md "Converted collections").
struct RefundCost {
  std::string currency;
  std::int64_t amount = 0;
};
// Records the cost of a refund, in the unit that creates it (before its REFUND_RESERVE).
Status set_refund_cost(store::Conn& conn, std::int64_t refund_id, const RefundCost& cost);
// The cost a refund recorded, or nullopt for a refund of a collection without conversion.
Result<std::optional<RefundCost>> find_refund_cost(store::Conn& conn, std::int64_t refund_id);
// What the COMPLETED refunds of a converted collection cost, in the order's currency.
Result<std::int64_t> completed_refund_cost(store::Conn& conn, std::int64_t transaction_id);

// Keeps what the operator's acceptance of a refund left (its operator_state).
Status keep_refund_accepted(store::Conn& conn, std::int64_t refund_id, std::string_view operator_state);
// Makes a refund in flight due for its next operator question at `at`.
Status refund_check_now(store::Conn& conn, std::int64_t refund_id, std::int64_t at);

// A refund in flight claimed for one question to its operator (recovery).
struct ClaimedRefund {
  Refund refund;
  std::int64_t checks = 0;  // questions asked, this one included
};
// Claims up to `limit` refunds in flight (PENDING or PROCESSING) whose next_check_at <= at, oldest
// first, for `owner` until `lease_until`, one conditional UPDATE per row, as claim_checks does for
// transactions: each refund is held by one claim at a time whatever the number of nodes. Run in a
// queue unit (store::queue_isolation).
Result<std::vector<ClaimedRefund>> claim_refund_checks(store::Conn& conn, std::int64_t at, std::int64_t lease_until,
                                                       std::string_view owner, int limit);
// Schedules the next question of a refund `owner` still holds (still in flight, claim not taken
// over) at `next_at` and releases the claim. Returns false, writing nothing, otherwise.
Result<bool> reschedule_refund_check(store::Conn& conn, std::int64_t refund_id, std::string_view owner,
                                     std::int64_t next_at);

// Inside the unit that accepted a refund to be sent to `refund.connector`: queues it (queued_at = at, no
// recovery question) when `hold`, or when refunds of that connector are queued already (it goes behind
// them); otherwise makes its first recovery question due at `check_at`. Returns true when queued.
Result<bool> queue_refund(store::Conn& conn, const Refund& refund, bool hold, std::int64_t at, std::int64_t check_at);
// Claims up to `limit` queued refunds of `connectors`, oldest first: one conditional UPDATE per row
// (still PENDING, still queued) clears queued_at and sets next_check_at = check_at, so each is claimed,
// and sent, by one node. Run in a queue unit (store::queue_isolation).
Result<std::vector<Refund>> claim_queued_refunds(store::Conn& conn, const std::vector<std::string>& connectors,
                                                 std::int64_t check_at, int limit);

// Which refunds to list: a merchant's, in an environment; 0 / "" / nullopt: any.
struct RefundFilter {
  std::int64_t merchant_id = 0;
  std::string environment;
  std::string transaction_reference;
  std::optional<RefundStatus> status;
  std::optional<std::int64_t> before;  // keyset: only refunds whose id is below it
  std::int64_t limit = 25;
  std::int64_t offset = 0;
};
// One page of refunds, newest first, and how many match in all.
Result<std::pair<std::vector<Refund>, std::int64_t>> list_refunds(store::Conn& conn, const RefundFilter& filter);

}  // namespace sika::payments::tables
