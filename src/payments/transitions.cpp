#include "payments/transitions.hpp"

#include <boost/json.hpp>

#include <algorithm>

#include "payments/store.hpp"
#include "store/state_machine.hpp"

namespace sika::payments {

namespace bj = boost::json;

Move move_to(TxStatus to, std::string_view source, std::optional<std::string> reason) {
  Move m;
  m.to = to;
  m.source = source;
  m.reason = std::move(reason);
  return m;
}

Move move_for(const OperatorStatus& st, std::string_view source) {
  const bool succeeded = st.state == OperatorStatus::State::succeeded;
  Move m = move_to(succeeded ? TxStatus::completed : TxStatus::failed, source);
  if (!succeeded) m.reason = st.reason.empty() ? "OPERATOR_FAILURE" : st.reason;
  m.operator_reference = st.operator_reference;
  return m;
}

Transaction after_move(const Transaction& tx, const Move& move, std::int64_t at) {
  Transaction next = tx;
  next.status = move.to;
  next.updated_at = std::max(at, tx.updated_at);
  if (move.reason) next.failure_reason = move.reason;
  if (move.operator_reference && !move.operator_reference->empty()) next.operator_reference = move.operator_reference;
  if (move.submitted_at) next.submitted_at = move.submitted_at;
  if (move.expires_at) next.expires_at = *move.expires_at;
  // A refunded collection's split stays SETTLED: its refunds debited each beneficiary's share.
  if (next.settlement_mode == kSplit && move.to != TxStatus::refunded) {
    if (move.to == TxStatus::completed)
      next.split_status = kSplitSettled;
    else if (is_terminal(move.to))
      next.split_status = kSplitCancelled;
  }
  return next;
}

std::int64_t merchant_share(const Transaction& tx) { return tx.required_total - tx.fee; }

namespace {

// Credits the merchant, or each non-zero share of a SPLIT collection, in `cur`.
void credit_merchants(ledger::Posting& posting, const Transaction& tx, std::string_view cur, std::int64_t amount,
                      const std::vector<SplitShare>& shares) {
  if (tx.settlement_mode == kSplit) {
    for (const auto& share : shares)
      if (share.amount > 0)
        posting.legs.push_back({ledger::merchant_available(share.merchant_id, tx.environment, cur), 0, share.amount});
  } else {
    posting.legs.push_back({ledger::merchant_available(tx.merchant_id, tx.environment, cur), 0, amount});
  }
}

}  // namespace

ledger::Posting fx_settlement_for(const Transaction& tx, const Conversion& conversion,
                                  const std::vector<SplitShare>& shares) {
  ledger::Posting posting;
  posting.transaction_id = tx.id;
  posting.environment = tx.environment;
  posting.currency = conversion.currency;
  posting.kind = ledger::kFxSettlement;
  posting.memo = "fx settlement " + tx.reference;
  if (conversion.amount <= 0) return posting;
  posting.legs.push_back({ledger::fx_position(tx.environment, conversion.currency), conversion.amount, 0});
  credit_merchants(posting, tx, conversion.currency, conversion.amount, shares);
  return posting;
}

ledger::Posting journal_for(const Transaction& tx, TxStatus from, TxStatus to, const std::vector<SplitShare>& shares,
                            const Conversion* conversion) {
  ledger::Posting posting;
  posting.transaction_id = tx.id;
  posting.environment = tx.environment;
  posting.currency = tx.currency;
  const auto& env = tx.environment;
  const auto& cur = tx.currency;
  // Where the customer's money comes from (collection) or goes to (payout).
  auto customer_side = [&] {
    return tx.channel == kChannelWallet ? ledger::customer_wallet(tx.customer_wallet, env, cur)
                                        : ledger::operator_clearing(tx.service_code, env, cur);
  };
  // Whose balance a collection credits and a payout is paid from: the merchant's, or with
  // settlement_mode WALLET the customer's own platform wallet (a top-up or a withdrawal).
  const bool own_wallet = tx.settlement_mode == kOwnWallet;
  auto available = [&] {
    return own_wallet ? ledger::customer_wallet(tx.customer_wallet, env, cur)
                      : ledger::merchant_available(tx.merchant_id, env, cur);
  };
  auto pending = [&] {
    return own_wallet ? ledger::customer_pending(tx.customer_wallet, env, cur)
                      : ledger::merchant_pending(tx.merchant_id, env, cur);
  };
  if (tx.operation == kCollection && to == TxStatus::completed) {
    posting.kind = ledger::kCollection;
    posting.memo = (own_wallet ? "wallet top-up " : "collection ") + tx.reference;
    posting.legs.push_back({customer_side(), tx.required_total, 0});
    if (tx.fee > 0) posting.legs.push_back({ledger::fee_revenue(env, cur), 0, tx.fee});
    if (conversion) {
      if (merchant_share(tx) > 0) posting.legs.push_back({ledger::fx_position(env, cur), 0, merchant_share(tx)});
    } else {
      // A top-up credits the customer's own wallet; otherwise the merchant or the split's shares.
      if (own_wallet)
        posting.legs.push_back({available(), 0, merchant_share(tx)});
      else
        credit_merchants(posting, tx, cur, merchant_share(tx), shares);
    }
  } else if (tx.operation == kDisbursement && to == TxStatus::pending) {
    posting.kind = ledger::kPayoutReserve;
    posting.memo = (own_wallet ? "wallet withdrawal reserve " : "payout reserve ") + tx.reference;
    posting.legs.push_back({available(), tx.required_total, 0});
    posting.legs.push_back({pending(), 0, tx.required_total});
  } else if (tx.operation == kDisbursement && to == TxStatus::completed) {
    posting.kind = ledger::kPayout;
    posting.memo = (own_wallet ? "wallet withdrawal " : "payout ") + tx.reference;
    posting.legs.push_back({pending(), tx.required_total, 0});
    posting.legs.push_back({customer_side(), 0, tx.amount});
    if (tx.fee > 0) posting.legs.push_back({ledger::fee_revenue(env, cur), 0, tx.fee});
  } else if (tx.operation == kDisbursement && from == TxStatus::pending && is_terminal(to)) {
    posting.kind = ledger::kPayoutRelease;
    posting.memo = (own_wallet ? "wallet withdrawal refund " : "payout release ") + tx.reference;
    posting.legs.push_back({pending(), tx.required_total, 0});
    posting.legs.push_back({available(), 0, tx.required_total});
  }
  return posting;
}

namespace {

// What a collection's move to COMPLETED credits: each SPLIT line's share (largest-remainder rule,
// stored on the line) of what its merchants are credited, in the currency they are credited in.
Result<std::vector<SplitShare>> settle_split(store::Conn& conn, const Transaction& tx,
                                             const std::optional<Conversion>& conversion) {
  std::vector<SplitShare> shares;
  SIKA_ASSIGN_OR_RETURN(auto lines, tables::split_lines(conn, tx.id));
  if (lines.empty()) return internal_error(bj::string("split transaction without split lines"));
  std::vector<std::int64_t> rates;
  for (const auto& l : lines) rates.push_back(l.rate_ppm);
  auto amounts = allocate_split(conversion ? conversion->amount : merchant_share(tx), rates);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    SIKA_TRY(tables::set_split_amount(conn, lines[i].id, amounts[i]));
    shares.push_back({lines[i].merchant_id, amounts[i]});
  }
  return shares;
}

// The consequences of `tx` having moved by `move` to `next`, in its unit: the pay_transitions row,
// the SPLIT shares of a completed collection and the journal(s) of the move.
Status follow_move(store::Conn& conn, const Transaction& tx, const Transaction& next, const Move& move,
                   const ledger::AccountCache* cache, ledger::Learned& learned) {
  SIKA_TRY(tables::insert_transition(conn, tx.id, tx.status, move.to, move.source, move.reason, next.updated_at));
  std::vector<SplitShare> shares;
  std::optional<Conversion> conversion;
  const bool collected = tx.operation == kCollection && move.to == TxStatus::completed;
  if (collected) {
    SIKA_ASSIGN_OR_RETURN(conversion, tables::find_conversion(conn, tx.id));
  }
  if (collected && tx.settlement_mode == kSplit) {
    SIKA_ASSIGN_OR_RETURN(shares, settle_split(conn, tx, conversion));
  }
  ledger::Posting posting = journal_for(tx, tx.status, move.to, shares, conversion ? &*conversion : nullptr);
  if (!posting.legs.empty()) SIKA_TRY(ledger::post(conn, posting, next.updated_at, cache, learned));
  if (conversion) {
    ledger::Posting settlement = fx_settlement_for(tx, *conversion, shares);
    if (!settlement.legs.empty()) SIKA_TRY(ledger::post(conn, settlement, next.updated_at, cache, learned));
  }
  return {};
}

}  // namespace

Result<bool> transition(store::Conn& conn, Transaction& tx, const Move& move, std::int64_t at,
                        const ledger::AccountCache* cache, ledger::Learned& learned) {
  if (!legal_move(tx, move.to))
    return internal_error(
        bj::string("illegal move " + std::string(to_string(tx.status)) + " -> " + std::string(to_string(move.to))));
  Transaction next = after_move(tx, move, at);
  const std::optional<std::int64_t> check_at = move.to == TxStatus::pending ? move.check_at : std::nullopt;

  store::Change change;
  change.set =
      "split_status = ?, failure_reason = ?, operator_reference = ?, submitted_at = ?, expires_at = ?, "
      "updated_at = ?, next_check_at = ?, check_owner = NULL, queued_at = NULL";
  change.set_params = {next.split_status,
                       store::opt(next.failure_reason),
                       store::opt(next.operator_reference),
                       store::opt(next.submitted_at),
                       next.expires_at,
                       next.updated_at,
                       store::opt(check_at)};
  change.where = "id = ?";
  change.where_params = {tx.id};

  store::Effects effects;
  effects.then = [&](store::Conn& c) { return follow_move(c, tx, next, move, cache, learned); };
  effects.event = [&](store::Conn&) -> Result<store::Event> {
    return store::Event{tx.merchant_id, tx.reference, event_payload(next), next.updated_at};
  };
  SIKA_ASSIGN_OR_RETURN(bool moved, store::transition(conn, kTxStatus, tx.status, move.to, change, effects));
  if (!moved) return false;  // another actor moved it first; nothing written
  tx = std::move(next);
  return true;
}

}  // namespace sika::payments
