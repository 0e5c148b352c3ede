#pragma once
// The operator-call log (docs/payments.md, "Operator calls and the timeline"): where every
// connector reports its calls. record() copies the call into a bounded queue in memory (beyond the
// bound the call is dropped and counted: a connector never waits) and into operator health; a
// loop writes the queue to pay_operator_calls in batches, one write unit per batch, and stop()
// writes what is left.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/periodic.hpp"
#include "core/result.hpp"
#include "core/thread_annotations.hpp"
#include "payments/health.hpp"
#include "payments/operator_calls.hpp"
#include "store/db.hpp"

namespace sika::payments {

struct OperatorLogOptions {
  std::size_t capacity = 10'000;  // calls waiting to be written; more are dropped (and counted)
  std::size_t batch = 500;        // calls per write unit
  std::int64_t flush_ms = 500;    // how often the queue is written
  std::string node_id;            // the node column; store::make_node_id() when empty
};

class OperatorLog : public OperatorCallSink {
 public:
  // `health` (may be null) is fed every call.
  OperatorLog(store::Db& db, Health* health, OperatorLogOptions options);
  ~OperatorLog() override;
  OperatorLog(const OperatorLog&) = delete;
  OperatorLog& operator=(const OperatorLog&) = delete;

  void record(const OperatorCall& call) override;
  // Writes up to one batch of the queue; Pace::busy when calls are left.
  Result<Pace> flush();
  // Calls dropped because the queue was full; calls written.
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  std::uint64_t written() const { return written_.load(std::memory_order_relaxed); }

  void start();
  // Stops the loop and writes every call still queued.
  void stop();

 private:
  store::Db& db_;
  Health* health_;
  OperatorLogOptions options_;
  sika::Mutex mu_;
  std::vector<OperatorCall> queue_ GUARDED_BY(mu_);
  std::atomic<std::uint64_t> dropped_{0}, written_{0};
  std::unique_ptr<Periodic> loop_;
};

}  // namespace sika::payments
