#pragma once
// How many of the node's request threads may wait on operators at once (docs/payments.md, "A
// slow operator"). A request thread that calls an operator (a collection or payout submitted, a
// callback verified, an account holder looked up) holds a place for as long as the call lasts;
// when every place is taken the request does not wait: it is answered at once (a collection 503
// provider_unavailable, nothing written; a payout or refund queued, as while its operator is
// DELAYED; a callback recorded and verified by recovery). So an operator that answers slowly or
// not at all holds at most `limit` request threads, and every other request of the node (status
// reads, intents, the dashboard, other operators' payments) keeps its threads.
//
// Only threads of the server's handler pool count (web::on_request_thread): background work
// (recovery, queued payouts, billing runs) has threads of its own. A thread that already holds a
// place (a present payer's collection, then its execution) holds the same one.
#include <atomic>

namespace sika::payments {

class OperatorGate {
 public:
  // limit <= 0: no limit.
  explicit OperatorGate(int limit = 0) : limit_(limit) {}
  OperatorGate(const OperatorGate&) = delete;
  OperatorGate& operator=(const OperatorGate&) = delete;

  // A place, held until destroyed; false (holding nothing) when every place is taken.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& o) noexcept : gate_(o.gate_), granted_(o.granted_), counted_(o.counted_) { o.gate_ = nullptr; }
    Ticket& operator=(Ticket&&) = delete;
    ~Ticket();
    explicit operator bool() const { return granted_; }

   private:
    friend class OperatorGate;
    Ticket(OperatorGate* gate, bool granted, bool counted) : gate_(gate), granted_(granted), counted_(counted) {}
    OperatorGate* gate_ = nullptr;  // the gate to give the place back to; null: nothing taken
    bool granted_ = false;
    bool counted_ = false;  // took a place of the gate (else: the same thread's place, again)
  };

  // On a request thread: a place when one is free or this thread holds one already. Elsewhere:
  // granted, counting nothing.
  Ticket enter();
  // Places held now, and the limit (0: none).
  int held() const { return held_.load(std::memory_order_relaxed); }
  int limit() const { return limit_; }
  // Requests answered at once since start because every place was taken.
  long refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  void leave(bool counted);

  int limit_;
  std::atomic<int> held_{0};
  std::atomic<long> refused_{0};
};

}  // namespace sika::payments
