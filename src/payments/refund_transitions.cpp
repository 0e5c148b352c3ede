#include "payments/refund_transitions.hpp"

#include <boost/json.hpp>

#include <algorithm>

#include "core/codes.hpp"
#include "core/reason.hpp"
#include "payments/refund_store.hpp"
#include "payments/store.hpp"
#include "store/state_machine.hpp"

namespace sika::payments {

namespace bj = boost::json;

RefundMove refund_move_for(const OperatorStatus& st, std::string_view source) {
  RefundMove m;
  m.source = source;
  if (st.state == OperatorStatus::State::succeeded) {
    m.to = RefundStatus::completed;
  } else {
    m.to = RefundStatus::failed;
    m.reason = st.reason.empty() ? "OPERATOR_FAILURE" : st.reason;
  }
  if (!st.operator_reference.empty()) m.operator_reference = st.operator_reference;
  return m;
}

Result<std::vector<SplitShare>> refund_shares(store::Conn& conn, const Transaction& tx, std::int64_t amount) {
  std::vector<SplitShare> shares;
  if (tx.settlement_mode != kSplit) {
    shares.push_back({tx.merchant_id, amount});
    return shares;
  }
  SIKA_ASSIGN_OR_RETURN(auto lines, tables::split_lines(conn, tx.id));
  if (lines.empty()) return internal_error(bj::string("split transaction without split lines"));
  std::vector<std::int64_t> rates;
  for (const auto& l : lines) rates.push_back(l.rate_ppm);
  const auto amounts = allocate_split(amount, rates);
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (amounts[i] > 0) shares.push_back({lines[i].merchant_id, amounts[i]});
  return shares;
}

ledger::Posting refund_journal(const Refund& refund, const Transaction& tx, std::optional<RefundStatus> from,
                               RefundStatus to, const std::vector<SplitShare>& shares, const tables::RefundCost* cost) {
  ledger::Posting posting;
  posting.refund_id = refund.id;
  posting.environment = refund.environment;
  posting.currency = cost ? cost->currency : refund.currency;
  const auto& env = refund.environment;
  const auto& cur = posting.currency;
  const std::int64_t amount = cost ? cost->amount : refund.amount;
  auto each_share = [&](bool from_available) {
    for (const auto& s : shares) {
      if (s.amount <= 0) continue;
      const auto available = ledger::merchant_available(s.merchant_id, env, cur);
      const auto pending = ledger::merchant_pending(s.merchant_id, env, cur);
      posting.legs.push_back({from_available ? available : pending, s.amount, 0});
      posting.legs.push_back({from_available ? pending : available, 0, s.amount});
    }
  };
  if (!from && to == RefundStatus::pending) {
    posting.kind = ledger::kRefundReserve;
    posting.memo = "refund reserve " + refund.reference + " of " + tx.reference;
    each_share(true);
  } else if (from && !is_final(*from) && to == RefundStatus::completed) {
    posting.kind = ledger::kRefund;
    posting.memo = "refund " + refund.reference + " of " + tx.reference;
    for (const auto& s : shares)
      if (s.amount > 0) posting.legs.push_back({ledger::merchant_pending(s.merchant_id, env, cur), s.amount, 0});
    if (amount > 0)
      posting.legs.push_back({cost                              ? ledger::fx_position(env, cur)
                              : refund.channel == kRefundWallet ? ledger::customer_wallet(tx.customer_wallet, env, cur)
                                                                : ledger::operator_clearing(tx.service_code, env, cur),
                              0, amount});
  } else if (from && !is_final(*from) && to == RefundStatus::failed) {
    posting.kind = ledger::kRefundRelease;
    posting.memo = "refund release " + refund.reference + " of " + tx.reference;
    each_share(false);
  }
  return posting;
}

ledger::Posting refund_fx_journal(const Refund& refund, const Transaction& tx) {
  ledger::Posting posting;
  posting.refund_id = refund.id;
  posting.environment = refund.environment;
  posting.currency = refund.currency;
  posting.kind = ledger::kRefundFx;
  posting.memo = "refund fx " + refund.reference + " of " + tx.reference;
  const auto& env = refund.environment;
  const auto& cur = refund.currency;
  posting.legs.push_back({ledger::fx_position(env, cur), refund.amount, 0});
  posting.legs.push_back({refund.channel == kRefundWallet ? ledger::customer_wallet(tx.customer_wallet, env, cur)
                                                          : ledger::operator_clearing(tx.service_code, env, cur),
                          0, refund.amount});
  return posting;
}

std::int64_t converted_refund_cost(std::int64_t amount, std::int64_t collected, std::int64_t converted,
                                   std::int64_t spent, bool last) {
  const std::int64_t left = std::max<std::int64_t>(0, converted - spent);
  if (last || collected <= 0) return left;
  // amount <= collected, so the quotient is at most `converted`: it fits once divided.
  const __int128 product = static_cast<__int128>(amount) * converted;
  const auto share = static_cast<std::int64_t>((product + collected - 1) / collected);
  return std::min(share, left);
}

namespace {

// The cost of a refund just reserved on a converted collection, recorded on its row; nullopt when
// the collection has no conversion. Reads the collection again: the reservation's UPDATE holds its
// row, so what it and its COMPLETED refunds say now is what this unit commits against (one refund
// at most is in flight per collection: pay_refunds_in_flight).
Result<std::optional<tables::RefundCost>> price_refund(store::Conn& conn, const Refund& refund, const Transaction& tx) {
  SIKA_ASSIGN_OR_RETURN(auto conversion, tables::find_conversion(conn, tx.id));
  if (!conversion) return std::optional<tables::RefundCost>{};
  SIKA_ASSIGN_OR_RETURN(Transaction now, tables::load(conn, tx.reference));
  SIKA_ASSIGN_OR_RETURN(std::int64_t spent, tables::completed_refund_cost(conn, tx.id));
  const bool last = now.refunded_amount + refund.amount >= now.amount;
  tables::RefundCost cost{conversion->currency,
                          converted_refund_cost(refund.amount, now.amount, conversion->amount, spent, last)};
  SIKA_TRY(tables::set_refund_cost(conn, refund.id, cost));
  return std::optional<tables::RefundCost>(std::move(cost));
}

}  // namespace

Status reserve_refund(store::Conn& conn, const Refund& refund, const Transaction& tx, std::int64_t at,
                      const ledger::AccountCache* cache, ledger::Learned& learned) {
  SIKA_ASSIGN_OR_RETURN(auto cost, price_refund(conn, refund, tx));
  SIKA_ASSIGN_OR_RETURN(auto shares, refund_shares(conn, tx, cost ? cost->amount : refund.amount));
  const ledger::Posting posting =
      refund_journal(refund, tx, std::nullopt, RefundStatus::pending, shares, cost ? &*cost : nullptr);
  if (posting.legs.empty()) return {};  // a converted refund that costs nothing of what is left
  Status posted = ledger::post(conn, posting, at, cache, learned);
  if (!posted && posted.error().is(codes::insufficient_funds))
    // Which account fell short is not the caller's to know (a split's other beneficiaries).
    return with_problem(make_error(ErrorKind::conflict, std::string(codes::insufficient_funds.name)), "amount",
                        Reason::refund_funds);
  return posted;
}

Result<bool> transition(store::Conn& conn, Refund& refund, const RefundMove& move, std::int64_t at,
                        const ledger::AccountCache* cache, ledger::Learned& learned) {
  const RefundStatus from = refund.status;
  Refund next = refund;
  next.status = move.to;
  next.updated_at = std::max(at, refund.updated_at);
  if (move.reason) next.failure_reason = move.reason;
  if (move.operator_reference && !move.operator_reference->empty()) next.operator_reference = move.operator_reference;
  const std::optional<std::int64_t> check_at = is_final(move.to) ? std::nullopt : move.check_at;

  store::Change change;
  change.set = "failure_reason = ?, operator_reference = ?, updated_at = ?, next_check_at = ?, check_owner = NULL";
  change.set_params = {store::opt(next.failure_reason), store::opt(next.operator_reference), next.updated_at,
                       store::opt(check_at)};
  change.where = "id = ?";
  change.where_params = {refund.id};

  store::Effects effects;
  effects.then = [&](store::Conn& c) -> Status {
    if (!is_final(move.to)) return {};
    const bool completed = move.to == RefundStatus::completed;
    SIKA_ASSIGN_OR_RETURN(Transaction tx, tables::load(c, refund.transaction_reference));
    SIKA_ASSIGN_OR_RETURN(std::int64_t refunded, tables::end_reservation(c, tx.id, refund.amount, completed));
    SIKA_ASSIGN_OR_RETURN(auto cost, tables::find_refund_cost(c, refund.id));
    SIKA_ASSIGN_OR_RETURN(auto shares, refund_shares(c, tx, cost ? cost->amount : refund.amount));
    const ledger::Posting posting = refund_journal(next, tx, from, move.to, shares, cost ? &*cost : nullptr);
    if (!posting.legs.empty()) SIKA_TRY(ledger::post(c, posting, next.updated_at, cache, learned));
    // A converted collection's customer is paid back in its currency, from the FX position.
    if (completed && cost) SIKA_TRY(ledger::post(c, refund_fx_journal(next, tx), next.updated_at, cache, learned));
    if (completed && refunded >= tx.amount && tx.status == TxStatus::completed) {
      tx.refunded_amount = refunded;
      tx.refunding_amount -= refund.amount;
      SIKA_ASSIGN_OR_RETURN(bool moved,
                            payments::transition(c, tx, move_to(TxStatus::refunded, "refund"), at, cache, learned));
      if (!moved) return internal_error(bj::string("a refunded collection could not become REFUNDED"));
    }
    return {};
  };
  effects.event = [&](store::Conn&) -> Result<store::Event> {
    return store::Event{next.merchant_id, next.reference, to_record(next), next.updated_at};
  };
  SIKA_ASSIGN_OR_RETURN(bool moved, store::transition(conn, kRefundStatus, from, move.to, change, effects));
  if (!moved) return false;
  refund = std::move(next);
  return true;
}

}  // namespace sika::payments
