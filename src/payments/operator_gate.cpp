// The bound on request threads waiting on operators (operator_gate.hpp).
#include "payments/operator_gate.hpp"

#include "web/message.hpp"

namespace sika::payments {

namespace {
// The gate whose place this thread holds, and how many times it entered it (a present payer's
// collection, then its execution, hold one place).
thread_local const OperatorGate* t_gate = nullptr;
thread_local int t_entered = 0;
}  // namespace

OperatorGate::Ticket::~Ticket() {
  if (gate_) gate_->leave(counted_);
}

OperatorGate::Ticket OperatorGate::enter() {
  if (limit_ <= 0 || !web::on_request_thread()) return Ticket(nullptr, true, false);
  if (t_gate == this && t_entered > 0) {
    ++t_entered;
    return Ticket(this, true, false);
  }
  int now = held_.load(std::memory_order_relaxed);
  do {
    if (now >= limit_) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      return Ticket(nullptr, false, false);
    }
  } while (!held_.compare_exchange_weak(now, now + 1, std::memory_order_acq_rel));
  if (t_entered == 0) {
    t_gate = this;
    t_entered = 1;
  }
  return Ticket(this, true, true);
}

void OperatorGate::leave(bool counted) {
  if (!counted) {
    --t_entered;
    return;
  }
  if (t_gate == this) {
    t_gate = nullptr;
    t_entered = 0;
  }
  held_.fetch_sub(1, std::memory_order_acq_rel);
}

}  // namespace sika::payments
