// Payouts held while their operator is not OPERATIONAL (docs/payments.md, "Operator health"): a
// new PROVIDER payout reserves its funds at intent as always (PENDING), and is queued instead of
// sent when operator health says its connector is DELAYED or CLOSED (or payouts of it are queued
// already: it goes behind them). Every node runs the sender; a queued payout is claimed by one
// conditional UPDATE (tables::claim_queued_payouts), so it is sent by exactly one node, once its
// connector is OPERATIONAL again, oldest first, payout_send_batch at a time. Refunds to an operator
// are held and sent the same way (tables::queue_refund, claim_queued_refunds; docs/refunds.md).
#include <spdlog/spdlog.h>

#include "payments/refund_store.hpp"
#include "payments/service.hpp"
#include "payments/store.hpp"
#include "store/leasing.hpp"

namespace sika::payments {

bool Service::holds_payouts(std::string_view connector) const {
  return options_.health && options_.health->state(connector) != Availability::operational;
}

std::vector<std::string> Service::connector_names() const {
  std::vector<std::string> out;
  for (const auto& [name, conn] : connectors_) out.push_back(name);
  return out;
}

Result<int> Service::send_queued() {
  std::vector<std::string> open;
  for (const auto& name : connector_names())
    if (!holds_payouts(name)) open.push_back(name);
  if (open.empty()) return 0;
  const std::int64_t at = now();
  std::vector<Transaction> claimed;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_TRY(store::queue_isolation(c));
    SIKA_ASSIGN_OR_RETURN(claimed, tables::claim_queued_payouts(c, open, at + recovery_delay_ms(0),
                                                                std::max(1, options_.payout_send_batch)));
    return {};
  }));
  // Refunds held the same way (refunds.cpp) are claimed the same way and sent first.
  std::vector<Refund> refunds;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_TRY(store::queue_isolation(c));
    SIKA_ASSIGN_OR_RETURN(refunds, tables::claim_queued_refunds(c, open, at + recovery_delay_ms(0),
                                                                std::max(1, options_.payout_send_batch)));
    return {};
  }));
  int sent = 0;
  for (Refund& r : refunds) {
    Transaction tx;
    Status read = db_.read([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(tx, tables::load(c, r.transaction_reference));
      return {};
    });
    if (!read) {
      // Claimed and not sent: recovery asks the operator from check_at, and sends it if it never arrived.
      spdlog::warn("payments: queued refund {} not sent: {}", r.reference, read.error().code);
      continue;
    }
    spdlog::info("payments: sending queued refund {} to {}", r.reference, r.connector);
    auto done = submit_refund(std::move(r), tx);
    if (!done) spdlog::warn("payments: queued refund not settled after its refusal: {}", done.error().code);
    ++sent;
  }
  for (Transaction& tx : claimed) {
    // Claimed: it is this node's to send, even while stopping (recovery settles it if the answer
    // is lost), as a payout submitted at intent is.
    spdlog::info("payments: sending queued payout {} to {}", tx.reference, tx.connector);
    auto done = submit_payout(std::move(tx));
    if (!done) spdlog::warn("payments: queued payout not settled after its refusal: {}", done.error().code);
    ++sent;
  }
  return sent;
}

}  // namespace sika::payments
