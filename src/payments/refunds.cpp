// Refunds of completed collections (docs/refunds.md): the creating unit (idempotency key, one refund
// in flight per collection, the refundable amount and the merchant's funds reserved, all in one
// write unit), the submission to the operator after it, operator callbacks about refunds, and the
// recovery of refunds in flight. The status moves are in refund_transitions.cpp, the SQL in
// refund_store.cpp.
#include <spdlog/spdlog.h>

#include <boost/json.hpp>

#include "core/codes.hpp"
#include "core/money.hpp"
#include "core/random.hpp"
#include "core/reason.hpp"
#include "payments/refund_store.hpp"
#include "payments/service.hpp"
#include "payments/store.hpp"
#include "store/leasing.hpp"

namespace sika::payments {

namespace bj = boost::json;

namespace {

Error not_refundable(Problem problem) {
  return with_problem(make_error(ErrorKind::conflict, std::string(codes::not_refundable.name)), "transaction_reference",
                      std::move(problem));
}

// Why a refund of `amount` (nullopt: everything left) of `tx`, as it now is, was not accepted.
Error refusal(const Transaction& tx, std::optional<std::int64_t> amount) {
  if (tx.status == TxStatus::refunded) return not_refundable(Reason::refund_nothing_left);
  if (tx.status != TxStatus::completed)
    return not_refundable(reason::with(Reason::refund_status, "status", std::string(to_string(tx.status))));
  const std::int64_t refundable = tx.amount - tx.refunded_amount - tx.refunding_amount;
  if (!amount && tx.refunding_amount > 0)
    return with_problem(make_error(ErrorKind::conflict, std::string(codes::refund_in_progress.name)),
                        "transaction_reference", Reason::refund_in_flight);
  Error e = with_problem(empty_data(nullptr), "amount",
                         reason::with(Reason::refund_beyond, "refundable", money::format(refundable, tx.currency)));
  if (e.details.is_object()) e.details.as_object()["refundable"] = refundable;
  return e;
}

// A refund channel and the connector that carries it.
struct Route {
  std::string channel, connector;
};

// The refund `request` asks of `tx`, PENDING, before its amount and channel are decided.
Refund refund_draft(const Transaction& tx, const RefundRequest& request, std::int64_t at, std::int64_t ttl_ms) {
  Refund draft;
  draft.reference = sortable_reference("RF-");
  draft.provider_reference = uuid_v7();
  draft.merchant_id = tx.merchant_id;
  draft.transaction_id = tx.id;
  draft.transaction_reference = tx.reference;
  draft.environment = tx.environment;
  draft.refund_uuid = request.refund_uuid;
  draft.request_hash = request.fingerprint.empty() ? refund_fingerprint(request) : request.fingerprint;
  draft.currency = tx.currency;
  draft.status = RefundStatus::pending;
  draft.reason = request.reason;
  draft.description = request.description;
  draft.metadata = request.metadata.empty() ? "{}" : request.metadata;
  draft.expires_at = at + ttl_ms;
  draft.created_at = at;
  draft.updated_at = at;
  return draft;
}

// How the money of a refund of `amount` of `t` goes back: to the wallet, through the sandbox
// operator, the operator's refund, or a payout to the payer (`conn`: the collection's connector).
Result<Route> refund_route(const Transaction& t, std::int64_t amount, Connector* conn, const Connector& sandbox) {
  if (t.channel == kChannelWallet) return Route{std::string(kRefundWallet), ""};
  if (t.environment == "sandbox") return Route{std::string(kRefundSandbox), std::string(sandbox.name())};
  if (!conn || conn == &sandbox)
    return provider_unavailable(bj::object{{"transaction_reference", "no connector carries this refund"}});
  const bool partial = amount != t.amount;
  if (conn->refunds(partial)) return Route{std::string(kRefundOperator), t.connector};
  if (!conn->pays_out()) return not_refundable(Reason::refund_no_channel);
  return Route{std::string(kRefundPayout), t.connector};
}

}  // namespace

PaymentOrder Service::refund_order(const Refund& r, const Transaction& tx) const {
  PaymentOrder o;
  o.operation = r.channel == kRefundPayout ? std::string(kDisbursement) : std::string("REFUND");
  o.transaction_reference = r.reference;
  o.provider_reference = r.provider_reference;
  o.service_code = tx.service_code;
  o.msisdn = tx.customer_wallet;
  o.amount = r.amount;
  o.currency = r.currency;
  o.environment = r.environment;
  o.submitted_at = r.created_at;
  o.message = "Refund " + tx.reference;
  o.refunded_reference = tx.provider_reference;
  o.operator_state = r.operator_state;
  return o;
}

Result<Refund> Service::refund(const RefundRequest& request, const Acting& merchant, const RefundCreated& on_created) {
  if (merchant.merchant_id == 0) return forbidden(bj::string("this credential is not bound to a merchant"));
  SIKA_ASSIGN_OR_RETURN(Transaction tx, find(merchant, request.transaction_reference, kCollection));
  const std::int64_t at = now();
  const Refund draft = refund_draft(tx, request, at, options_.disbursement_ttl_ms);
  auto route = [&](const Transaction& t, std::int64_t amount) {
    return refund_route(t, amount, connector(t.connector), *sandbox_);
  };

  Refund out;
  bool created = false, queued = false;
  ledger::Learned learned;
  // Without a place among the request threads allowed to wait on operators, the refund is queued
  // (sent by the queued-payout sender) instead of sent before the answer.
  const OperatorGate::Ticket ticket = gate_.enter();
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    learned.clear();
    created = false;
    queued = false;
    SIKA_ASSIGN_OR_RETURN(Transaction fresh, tables::load(c, tx.reference));
    Refund r = draft;
    r.amount = request.amount.value_or(fresh.amount - fresh.refunded_amount - fresh.refunding_amount);
    if (r.amount <= 0) {
      // Only an absent amount gets here: nothing is left to refund now, unless this is a replay.
      SIKA_ASSIGN_OR_RETURN(auto stored, tables::find_replay(c, r));
      if (!stored) return refusal(fresh, request.amount);
      out = std::move(*stored);
      return {};
    }
    Result<Route> way = route(fresh, r.amount);
    if (way) {
      r.channel = way->channel;
      r.connector = way->connector;
    } else {
      r.channel = std::string(kRefundPayout);
    }
    SIKA_ASSIGN_OR_RETURN(auto keyed, tables::insert_refund_or_replay(c, r));
    if (!keyed.id) {
      out = std::move(*keyed.stored);  // the same request again: its refund as it is
      return {};
    }
    r.id = *keyed.id;
    if (fresh.settlement_mode == kOwnWallet) return not_refundable(Reason::refund_top_up);
    if (!way) return way.take_error();
    // The check and the act in one statement: the collection is COMPLETED and the amount fits.
    SIKA_ASSIGN_OR_RETURN(bool reserved, tables::reserve_refundable(c, fresh.id, r.amount));
    if (!reserved) {
      SIKA_ASSIGN_OR_RETURN(Transaction now_tx, tables::load(c, tx.reference));
      return refusal(now_tx, request.amount);
    }
    SIKA_TRY(reserve_refund(c, r, fresh, at, &accounts_, learned));
    if (r.channel == kRefundWallet) {
      // The wallet is credited at once: nothing waits on an operator.
      RefundMove paid;
      paid.to = RefundStatus::completed;
      paid.source = "wallet";
      SIKA_ASSIGN_OR_RETURN(bool moved, transition(c, r, paid, at, &accounts_, learned));
      if (!moved) return internal_error(bj::string("new wallet refund could not complete"));
    } else {
      // Held while its operator is not OPERATIONAL (and behind the refunds held before it), as payouts
      // are; otherwise asked of its operator once this unit commits, and recovery asks about it if no
      // answer comes.
      SIKA_ASSIGN_OR_RETURN(
          queued, tables::queue_refund(c, r, !ticket || holds_payouts(r.connector), at, at + recovery_delay_ms(0)));
    }
    if (on_created) SIKA_TRY(on_created(c, r));
    out = std::move(r);
    created = true;
    return {};
  }));
  accounts_.remember(learned);
  if (!created || out.channel == kRefundWallet) return out;
  if (queued) {
    if (sender_) sender_->wake();
    return out;
  }
  return submit_refund(std::move(out), tx);
}

// Submits a refund whose funds are reserved (committed): accepted -> PROCESSING; a refusal FAILS it
// and releases them; an unknown outcome leaves it PENDING until recovery's question settles it.
Result<Refund> Service::submit_refund(Refund r, const Transaction& tx) {
  Connector* conn = connector(r.connector);
  const PaymentOrder order = refund_order(r, tx);
  Status sent = !conn                        ? Status(provider_unavailable(nullptr))
                : r.channel == kRefundPayout ? conn->request_payout(order)
                                             : conn->request_refund(order);
  RefundMove m;
  m.source = "connector";
  if (conn && sent) {
    if (auto accepted = conn->take_accepted(r.provider_reference)) {
      Status kept = db_.write(
          [&](store::Conn& c) -> Status { return tables::keep_refund_accepted(c, r.id, accepted->operator_state); });
      if (kept)
        r.operator_state = accepted->operator_state;
      else
        spdlog::warn("payments: what {} left for refund {} was not kept: {}", conn->name(), r.reference,
                     kept.error().code);
    }
    m.to = RefundStatus::processing;
    m.check_at = now() + recovery_delay_ms(0);
    return move_refund(r, m);
  }
  if (conn && !is_refusal(sent.error())) {
    spdlog::warn("payments: refund {} sent to {} has no known outcome ({}); PENDING until the operator answers",
                 r.reference, r.connector, sent.error().code);
    return r;
  }
  m.to = RefundStatus::failed;
  m.reason = sent.error().is(ErrorKind::not_found) ? "INVALID_ACCOUNT" : "OPERATOR_REFUSED";
  return move_refund(r, m);
}

Result<Refund> Service::move_refund(const Refund& refund, const RefundMove& m) {
  Refund moved_refund;
  bool moved = false;
  SIKA_TRY(write([&](store::Conn& c, ledger::Learned& learned) -> Status {
    moved_refund = refund;
    SIKA_ASSIGN_OR_RETURN(moved, transition(c, moved_refund, m, now(), &accounts_, learned));
    if (!moved) {
      SIKA_ASSIGN_OR_RETURN(moved_refund, tables::load_refund(c, refund.reference));
    }
    return {};
  }));
  return moved_refund;
}

Result<Refund> Service::find_refund(const Acting& p, std::string_view reference) {
  Refund r;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(r, tables::load_refund(c, reference));
    return {};
  }));
  if ((!p.admin && r.merchant_id != p.merchant_id) || r.environment != p.environment)
    return not_found(bj::object{{"refund_reference", "no such refund"}});
  return r;
}

Result<std::pair<std::vector<Refund>, std::int64_t>> Service::list_refunds(const Acting& p,
                                                                           tables::RefundFilter filter) {
  if (p.merchant_id == 0) return forbidden(bj::string("this credential is not bound to a merchant"));
  filter.merchant_id = p.merchant_id;
  filter.environment = p.environment;
  std::pair<std::vector<Refund>, std::int64_t> out;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(out, tables::list_refunds(c, filter));
    return {};
  }));
  return out;
}

// ---- callbacks -----------------------------------------------------------------------------------

Result<std::string> Service::refund_callback(store::Conn& c, Refund& r, Connector& conn, bool trusted,
                                             const OperatorStatus& truth, ledger::Learned& learned) {
  const bool in_flight = !is_final(r.status);
  if (r.connector != conn.name()) return std::string("wrong_connector");
  if (!trusted && in_flight) {
    SIKA_TRY(tables::refund_check_now(c, r.id, now()));
    return std::string("unverified");
  }
  if (truth.state == OperatorStatus::State::pending) return std::string("progress");
  if (in_flight) {
    SIKA_ASSIGN_OR_RETURN(bool moved, transition(c, r, refund_move_for(truth, "callback"), now(), &accounts_, learned));
    return std::string(moved ? "applied" : "lost_race");
  }
  const bool same = (r.status == RefundStatus::completed && truth.state == OperatorStatus::State::succeeded) ||
                    (r.status == RefundStatus::failed && truth.state == OperatorStatus::State::failed);
  return std::string(same ? "duplicate" : "late");
}

// ---- recovery ------------------------------------------------------------------------------------

// One recovery question about a refund in flight, as ask_recovery_question asks about a transaction:
// only a final answer of the operator settles it; an order the operator does not know is sent again
// at an operator that deduplicates by reference while its deadline allows, and FAILS after it (it can
// no longer arrive). At the sandbox operator (which ends its orders by time) an unknown one FAILS at
// its deadline.
std::optional<OperatorStatus> Service::ask_refund_question(const Refund& r, std::string& outcome,
                                                           std::optional<std::string>& reason) {
  outcome = "unknown";
  Connector* conn = connector(r.connector);
  Transaction tx;
  Status read = db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(tx, tables::load(c, r.transaction_reference));
    return {};
  });
  if (!conn || !read) {
    reason = conn ? "no_transaction" : "no_connector";
    return std::nullopt;
  }
  const PaymentOrder order = refund_order(r, tx);
  auto st = conn->query_status(order);
  if (st && st->state == OperatorStatus::State::pending) {
    outcome = "pending";
    return std::nullopt;
  }
  if (st) {
    if (!st->reason.empty()) reason = st->reason;
    return std::move(*st);
  }
  reason = st.error().code;
  if (!st.error().is(ErrorKind::not_found)) return std::nullopt;
  OperatorStatus failed;
  failed.state = OperatorStatus::State::failed;
  failed.reason = "OPERATOR_ERROR";
  if (r.expires_at <= now() && (conn->resubmits_unknown() || conn->expires_pending())) {
    reason = "never_accepted";
    return failed;
  }
  if (!conn->resubmits_unknown()) return std::nullopt;
  Status sent = r.channel == kRefundPayout ? conn->request_payout(order) : conn->request_refund(order);
  reason = sent ? "resubmitted" : "resubmission_" + sent.error().code;
  if (sent) {
    if (auto accepted = conn->take_accepted(r.provider_reference))
      (void)db_.write(
          [&](store::Conn& c) -> Status { return tables::keep_refund_accepted(c, r.id, accepted->operator_state); });
  }
  if (sent || !is_refusal(sent.error())) return std::nullopt;
  failed.reason = sent.error().is(ErrorKind::not_found) ? "INVALID_ACCOUNT" : "OPERATOR_REFUSED";
  return failed;
}

Result<int> Service::recover_refunds_due() {
  const std::int64_t at = now();
  const std::string owner = options_.node_id + ":refunds:" + std::to_string(++recovery_seq_);
  std::vector<tables::ClaimedRefund> claimed;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_TRY(store::queue_isolation(c));
    SIKA_ASSIGN_OR_RETURN(
        claimed, tables::claim_refund_checks(c, at, at + std::max<std::int64_t>(1, options_.recovery_lease_ms), owner,
                                             options_.recovery_batch));
    return {};
  }));
  int asked = 0;
  for (auto& item : claimed) {
    if (recovery_ && !recovery_->running()) break;  // stopping: the claims lapse at their lease's end
    const Refund& r = item.refund;
    std::string outcome;
    std::optional<std::string> reason;
    std::optional<OperatorStatus> final_answer = ask_refund_question(r, outcome, reason);
    ++asked;
    const std::int64_t next_at = now() + recovery_delay_ms(item.checks);
    Status st = write([&](store::Conn& c, ledger::Learned& learned) -> Status {
      if (final_answer) {
        // Conditional on the status it was claimed in: a callback that got there first wins.
        Refund current = r;
        SIKA_ASSIGN_OR_RETURN(
            bool moved, transition(c, current, refund_move_for(*final_answer, "recovery"), now(), &accounts_, learned));
        (void)moved;
        return {};
      }
      SIKA_ASSIGN_OR_RETURN(bool kept, tables::reschedule_refund_check(c, r.id, owner, next_at));
      (void)kept;  // false: moved meanwhile, or the claim lapsed and another node holds it now
      return {};
    });
    if (!st)
      spdlog::warn("payments recovery of refund {} failed: {}", r.reference, st.error().code);
    else if (!final_answer)
      spdlog::debug("payments: refund {} still in flight ({} {})", r.reference, outcome, reason.value_or(""));
  }
  return asked;
}

}  // namespace sika::payments
