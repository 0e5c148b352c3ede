// The bound on request threads waiting on operators (operator_gate.hpp).
#include "payments/operator_gate.hpp"

#include "web/message.hpp"

namespace sika::payments {

namespace {
// Places this thread holds (nested: a present payer's collection, then its execution).
thread_local int t_held = 0;
}  // namespace

OperatorGate::Ticket::~Ticket() {
  if (gate_) gate_->leave();
}

OperatorGate::Ticket OperatorGate::enter() {
  if (limit_ <= 0 || !web::on_request_thread()) return Ticket(nullptr, true);
  if (t_held > 0) {
    ++t_held;
    return Ticket(this, true);
  }
  int now = held_.load(std::memory_order_relaxed);
  do {
    if (now >= limit_) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      return Ticket(nullptr, false);
    }
  } while (!held_.compare_exchange_weak(now, now + 1, std::memory_order_acq_rel));
  t_held = 1;
  return Ticket(this, true);
}

void OperatorGate::leave() {
  if (--t_held == 0) held_.fetch_sub(1, std::memory_order_acq_rel);
}

}  // namespace sika::payments
