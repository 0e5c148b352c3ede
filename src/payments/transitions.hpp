#pragma once
// The one way a transaction's status changes. docs/payments.md, "Lifecycle".
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "payments/connector.hpp"
#include "payments/ledger.hpp"
#include "payments/model.hpp"
#include "store/db.hpp"

namespace sika::payments {

// One requested status change and what it carries.
struct Move {
  TxStatus to = TxStatus::pending;
  std::string_view source;  // intent | execute | checkout | merchant | callback | poll | expiry | wallet | connector
                            // | recovery
  std::optional<std::string> reason;
  std::optional<std::string> operator_reference;
  std::optional<std::int64_t> submitted_at;
  std::optional<std::int64_t> expires_at;
  // A move to PENDING at an operator: when recovery first asks the operator if no answer came
  // (pay_transactions.next_check_at). Every other move clears it.
  std::optional<std::int64_t> check_at;
};

// A move to `to` by `source`, with an optional reason.
Move move_to(TxStatus to, std::string_view source, std::optional<std::string> reason = std::nullopt);

// The move an operator's final answer (succeeded or failed) asks for: COMPLETED, or FAILED with
// its reason (OPERATOR_FAILURE when it gave none), with the operator's reference.
Move move_for(const OperatorStatus& st, std::string_view source);

// The transaction as `move` leaves it at time `at`: status, reason, operator reference,
// submission and expiry times, split_status (SETTLED at COMPLETED, CANCELLED at another end),
// updated_at never earlier than before. Pure; does not check the move is legal.
Transaction after_move(const Transaction& tx, const Move& move, std::int64_t at);

// A split beneficiary's share of a completed SPLIT collection.
struct SplitShare {
  std::int64_t merchant_id = 0;
  std::int64_t amount = 0;
};

// What a completed collection leaves to its merchant(s): required_total - fee, the amount.
std::int64_t merchant_share(const Transaction& tx);

// The ledger journal that moving `tx` from `from` to `to` implies: COLLECTION at a completed
// collection (customer wallet or operator clearing debited required_total; the merchant, or
// each share of `shares` for SPLIT, credited merchant_share; fees credited fee), PAYOUT_RESERVE when a
// payout becomes PENDING, PAYOUT when it completes, PAYOUT_RELEASE when a PENDING payout ends
// otherwise. No legs when the move moves no money. Every journal it returns balances. With a
// `conversion`, the COLLECTION journal credits the FX position instead of the merchant(s), and
// fx_settlement_for carries the money on in the merchant's currency.
ledger::Posting journal_for(const Transaction& tx, TxStatus from, TxStatus to, const std::vector<SplitShare>& shares,
                            const Conversion* conversion = nullptr);
// The FX_SETTLEMENT journal of a converted collection that completed, in conversion.currency:
// the FX position debited conversion.amount, the merchant (or each share of `shares`, which then
// divide conversion.amount) credited. Balances in its own currency, as COLLECTION does in the
// transaction's.
ledger::Posting fx_settlement_for(const Transaction& tx, const Conversion& conversion,
                                  const std::vector<SplitShare>& shares);

// Moves `tx` by `move` inside the caller's write unit: one conditional UPDATE on the status
// `tx` was read in (store::transition over kTxStatus, once legal_move(tx, move.to) holds; it also
// sets next_check_at to move.check_at, or clears it, and releases a recovery claim), its
// pay_transitions row, the journal of journal_for (SPLIT shares by the
// largest-remainder rule, stored on the split lines) and the outbox event, all or nothing.
// Returns true and sets `tx` to the moved transaction; returns false and writes nothing when
// the row had already left tx.status (another actor moved it first). An illegal move is a 500
// (a bug). A journal that would take a non-negative account below zero is 409
// insufficient_funds: the caller's unit must then fail so nothing it wrote remains.
Result<bool> transition(store::Conn& conn, Transaction& tx, const Move& move, std::int64_t at,
                        const ledger::AccountCache* cache, ledger::Learned& learned);

}  // namespace sika::payments
