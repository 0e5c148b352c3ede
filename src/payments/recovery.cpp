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
    std::optional<OperatorStatus> final_answer;
    std::string_view outcome = kUnknown;
    if (Connector* conn = connector_for(tx)) {
      auto st = conn->query_status(order_for(tx));
      if (!st) {
        check.reason = st.error().code;
      } else if (st->state == OperatorStatus::State::pending) {
        outcome = kPending;
      } else {
        outcome = st->state == OperatorStatus::State::succeeded ? kSucceeded : kFailed;
        if (!st->reason.empty()) check.reason = st->reason;
        final_answer = std::move(*st);
      }
    } else {
      check.reason = "no_connector";
    }
    ++asked;
    check.answered_at = now();
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
  return asked;
}

}  // namespace sika::payments
