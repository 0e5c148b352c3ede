// Recovery of pending payments (docs/payments.md, "Recovery of pending payments"): the engine that
// drives every transaction submitted to an operator to a final state when the operator's callback
// does not come (lost, never sent, or sent while this node was down). Each node runs it as a
// Periodic loop; the work is shared through the rows themselves: a question is claimed by a
// conditional UPDATE that moves the row's next_check_at to the end of a lease (tables::claim_checks),
// so each transaction is asked by one node at a time, and a node that dies mid-question loses its
// claim when the lease ends. A final answer goes through transition(); any other answer (pending,
// an error, an unknown reference) is never a failure: it schedules the next question.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "payments/service.hpp"
#include "payments/store.hpp"
#include "store/leasing.hpp"

namespace sika::payments {

namespace {
constexpr std::string_view kSucceeded = "succeeded";
constexpr std::string_view kFailed = "failed";
constexpr std::string_view kPending = "pending";
constexpr std::string_view kUnknown = "unknown";
}  // namespace

void Service::register_connector(Connector& connector) {
  connectors_.insert_or_assign(std::string(connector.name()), &connector);
}

std::int64_t Service::recovery_delay_ms(std::int64_t checks) const {
  const auto& d = options_.recovery_delays_ms;
  if (d.empty()) return 5'000;
  const auto i = static_cast<std::size_t>(std::clamp<std::int64_t>(checks, 0, static_cast<std::int64_t>(d.size()) - 1));
  return std::max<std::int64_t>(1, d[i]);
}

Service::RecoveryStats Service::recovery_stats() const {
  RecoveryStats s;
  s.succeeded = checks_succeeded_.load(std::memory_order_relaxed);
  s.failed = checks_failed_.load(std::memory_order_relaxed);
  s.pending = checks_pending_.load(std::memory_order_relaxed);
  s.unknown = checks_unknown_.load(std::memory_order_relaxed);
  return s;
}

Result<Service::RecoveryBacklog> Service::recovery_backlog() {
  RecoveryBacklog out;
  const std::int64_t at = now();
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto b, tables::recovery_backlog(c, at));
    out.waiting = b.waiting;
    out.oldest_since = b.oldest_since;
    return {};
  }));
  return out;
}

// One recovery question about `tx`, its answer written into `check` (outcome pending or unknown
// and a reason, when it is not final). An order its operator does not know, at an operator that
// deduplicates by reference (Connector::resubmits_unknown), never reached it: it is sent again while
// its deadline allows, and FAILED after (it can no longer arrive, so nothing was taken or paid).
std::optional<OperatorStatus> Service::ask_recovery_question(const Transaction& tx, tables::StatusCheckRow& check) {
  check.outcome = std::string(kUnknown);
  Connector* conn = connector_for(tx);
  if (!conn) {
    check.reason = "no_connector";
    return std::nullopt;
  }
  auto st = conn->query_status(order_for(tx));
  if (st && st->state == OperatorStatus::State::pending) {
    check.outcome = std::string(kPending);
    return std::nullopt;
  }
  if (st) {
    if (!st->reason.empty()) check.reason = st->reason;
    return std::move(*st);
  }
  check.reason = st.error().code;
  if (!st.error().is(ErrorKind::not_found) || !conn->resubmits_unknown()) return std::nullopt;
  OperatorStatus failed;
  failed.state = OperatorStatus::State::failed;
  if (tx.expires_at <= now()) {
    check.reason = "never_accepted";
    failed.reason = "OPERATOR_ERROR";
    return failed;
  }
  const PaymentOrder order = order_for(tx);
  Status sent = tx.operation == kCollection ? conn->request_collection(order) : conn->request_payout(order);
  check.reason = sent ? "resubmitted" : "resubmission_" + sent.error().code;
  if (sent) (void)keep_accepted(tx, *conn);
  if (sent || !is_refusal(sent.error())) return std::nullopt;
  failed.reason = sent.error().is(ErrorKind::not_found) ? "INVALID_ACCOUNT" : "OPERATOR_REFUSED";
  return failed;
}

Result<int> Service::recover_due() {
  const std::int64_t at = now();
  const std::string owner = options_.node_id + ":" + std::to_string(++recovery_seq_);
  std::vector<tables::ClaimedCheck> claimed;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_TRY(store::queue_isolation(c));
    SIKA_ASSIGN_OR_RETURN(claimed,
                          tables::claim_checks(c, at, at + std::max<std::int64_t>(1, options_.recovery_lease_ms), owner,
                                               options_.recovery_batch));
    return {};
  }));
  int asked = 0;
  for (auto& item : claimed) {
    if (recovery_ && !recovery_->running()) break;  // stopping: the claims lapse at their lease's end
    Transaction& tx = item.tx;
    tables::StatusCheckRow check;
    check.transaction_id = tx.id;
    check.node = owner;
    check.asked_at = now();
    // Any answer but a final one (pending, an error, an unknown reference, no connector) is pending.
    std::optional<OperatorStatus> final_answer = ask_recovery_question(tx, check);
    ++asked;
    check.answered_at = now();
    const std::string_view outcome = !final_answer ? std::string_view(check.outcome)
                                     : final_answer->state == OperatorStatus::State::succeeded ? kSucceeded
                                                                                               : kFailed;
    check.outcome = std::string(outcome);
    (outcome == kSucceeded ? checks_succeeded_
     : outcome == kFailed  ? checks_failed_
     : outcome == kPending ? checks_pending_
                           : checks_unknown_)
        .fetch_add(1, std::memory_order_relaxed);
    const std::int64_t next_at = check.answered_at + recovery_delay_ms(item.checks);
    Status st = write([&](store::Conn& c, ledger::Learned& learned) -> Status {
      SIKA_TRY(tables::insert_status_check(c, check));
      if (final_answer) {
        // Conditional on PENDING: a callback or the expiry that got there first wins, and this
        // answer changes nothing.
        Transaction current = tx;
        SIKA_ASSIGN_OR_RETURN(bool moved, apply(c, current, move_for(*final_answer, "recovery"), learned));
        (void)moved;
        return {};
      }
      SIKA_ASSIGN_OR_RETURN(bool kept, tables::reschedule_check(c, tx.id, owner, next_at));
      (void)kept;  // false: moved meanwhile, or the claim lapsed and another node holds it now
      return {};
    });
    if (!st) spdlog::warn("payments recovery of {} failed: {}", tx.reference, st.error().code);
  }
  // Refunds in flight are driven to a final state by the same loop (refunds.cpp).
  SIKA_ASSIGN_OR_RETURN(int refunds_asked, recover_refunds_due());
  SIKA_ASSIGN_OR_RETURN(int mismatches_asked, ask_about_final_mismatches());
  return asked + refunds_asked + mismatches_asked;
}

namespace {

// How many times a final payment's status mismatch is asked about when the operator does not
// give a final answer (an error, pending); after that it waits for an operator's decision.
constexpr std::int64_t kLiveChecks = 8;

std::string_view sika_state(std::string_view status) {
  return status == "COMPLETED" ? kSucceeded : (status == "FAILED" || status == "EXPIRED") ? kFailed : kPending;
}

}  // namespace

Result<int> Service::ask_about_final_mismatches() {
  struct Claimed {
    std::int64_t item_id = 0, checks = 0;
    Transaction tx;
  };
  const std::int64_t at = now();
  const std::int64_t lease_end = at + std::max<std::int64_t>(1, options_.recovery_lease_ms);
  std::vector<Claimed> claimed;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    claimed.clear();
    SIKA_ASSIGN_OR_RETURN(
        auto rows, c.query("SELECT i.id, i.live_check_at, i.live_checks, t.reference FROM recon_items i JOIN "
                           "pay_transactions t ON t.id = i.transaction_id WHERE i.live_check_at <= ? AND "
                           "i.state = 'open' AND i.kind = 'mismatch_status' ORDER BY i.live_check_at, i.id LIMIT ?",
                           {at, std::int64_t{std::max(1, options_.recovery_batch)}}));
    for (const auto& r : rows) {
      // The claim: only the node whose UPDATE still sees the time it read moves it to its lease's end.
      SIKA_ASSIGN_OR_RETURN(std::int64_t won, c.exec("UPDATE recon_items SET live_check_at = ? WHERE id = ? AND "
                                                     "live_check_at = ? AND state = 'open'",
                                                     {lease_end, r.i64(0), r.i64(1)}));
      if (won != 1) continue;
      SIKA_ASSIGN_OR_RETURN(Transaction tx, tables::load(c, r.str(3)));
      claimed.push_back({r.i64(0), r.i64(2), std::move(tx)});
    }
    return {};
  }));
  int asked = 0;
  for (auto& item : claimed) {
    if (recovery_ && !recovery_->running()) break;  // stopping: the claims lapse at their lease's end
    Connector* conn = connector_for(item.tx);
    std::optional<std::string> live;
    if (conn) {
      auto st = conn->query_status(order_for(item.tx));
      ++asked;
      if (st)
        live = std::string(st->state == OperatorStatus::State::succeeded ? kSucceeded
                           : st->state == OperatorStatus::State::failed  ? kFailed
                                                                         : kPending);
      else
        spdlog::info("reconciliation: the status of {} could not be asked: {}", item.tx.reference, st.error().code);
    }
    const std::int64_t answered = now();
    const bool final_answer = live && *live != kPending;
    const bool agrees = final_answer && *live == sika_state(to_string(item.tx.status));
    const std::int64_t checks = item.checks + 1;
    const store::Value next = final_answer || checks >= kLiveChecks
                                  ? store::Value(nullptr)
                                  : store::Value(answered + recovery_delay_ms(checks));
    Status st = db_.write([&](store::Conn& c) -> Status {
      // Conditional on this node's claim and on the item still open: a decision taken meanwhile wins.
      SIKA_ASSIGN_OR_RETURN(
          std::int64_t changed,
          c.exec(std::string("UPDATE recon_items SET operator_live_status = COALESCE(?, operator_live_status), "
                             "live_checked_at = ?, live_checks = ?, live_check_at = ?") +
                     (agrees ? ", state = 'resolved', decided_by = 'recovery', decided_at = ?, decision_reason = "
                               "'the operator''s live status agrees with Sika'"
                             : "") +
                     " WHERE id = ? AND state = 'open' AND live_check_at = ?",
                 agrees ? store::Params{store::opt(live), answered, checks, next, answered, item.item_id, lease_end}
                        : store::Params{store::opt(live), answered, checks, next, item.item_id, lease_end}));
      (void)changed;  // 0: decided meanwhile, or the claim lapsed and another node asked
      return {};
    });
    if (!st)
      spdlog::warn("reconciliation: the live status of {} was not recorded: {}", item.tx.reference, st.error().code);
  }
  return asked;
}

}  // namespace sika::payments
