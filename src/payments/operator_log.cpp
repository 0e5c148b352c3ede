// The operator-call log: a bounded queue in memory written in batches (operator_log.hpp).
#include "payments/operator_log.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "store/jobs.hpp"

namespace sika::payments {

namespace {
store::Value text_or_null(const std::string& s) { return s.empty() ? store::Value(nullptr) : store::Value(s); }
}  // namespace

OperatorLog::OperatorLog(store::Db& db, Health* health, OperatorLogOptions options)
    : db_(db), health_(health), options_(std::move(options)) {
  if (options_.node_id.empty()) options_.node_id = store::make_node_id();
  options_.batch = std::max<std::size_t>(1, options_.batch);
  loop_ = std::make_unique<Periodic>("operator calls",
                                     std::chrono::milliseconds(std::max<std::int64_t>(10, options_.flush_ms)),
                                     [this] { return flush(); });
}

OperatorLog::~OperatorLog() { stop(); }

void OperatorLog::record(const OperatorCall& call) {
  if (health_) health_->observe(call);
  sika::MutexLock lock(mu_);
  if (queue_.size() >= options_.capacity) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  queue_.push_back(call);
}

Result<Pace> OperatorLog::flush() {
  std::vector<OperatorCall> batch;
  bool more = false;
  {
    sika::MutexLock lock(mu_);
    const std::size_t n = std::min(options_.batch, queue_.size());
    batch.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.begin() + n));
    queue_.erase(queue_.begin(), queue_.begin() + n);
    more = !queue_.empty();
  }
  if (batch.empty()) return Pace::idle;
  Status st = db_.write([&](store::Conn& c) -> Status {
    for (const OperatorCall& call : batch)
      SIKA_TRY(c.exec(
          "INSERT INTO pay_operator_calls (connector, operation, provider_reference, operator_reference, "
          "method, path, http_status, code, outcome, started_at, latency_ms, node) "
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
          {call.connector, call.operation, text_or_null(call.provider_reference), text_or_null(call.operator_reference),
           call.method, call.path, std::int64_t{call.http_status}, text_or_null(call.code),
           std::string(to_string(call.outcome)), call.started_at, call.latency_ms, options_.node_id}));
    return {};
  });
  if (!st) {
    // The batch goes back to the head of the queue (within the bound) to be written next time.
    sika::MutexLock lock(mu_);
    const std::size_t room = options_.capacity > queue_.size() ? options_.capacity - queue_.size() : 0;
    const std::size_t keep = std::min(room, batch.size());
    dropped_.fetch_add(batch.size() - keep, std::memory_order_relaxed);
    queue_.insert(queue_.begin(), std::make_move_iterator(batch.begin()),
                  std::make_move_iterator(batch.begin() + static_cast<std::ptrdiff_t>(keep)));
    return st.take_error();
  }
  written_.fetch_add(batch.size(), std::memory_order_relaxed);
  return more ? Pace::busy : Pace::idle;
}

void OperatorLog::start() { loop_->start(); }

void OperatorLog::stop() {
  loop_->stop();
  for (int i = 0; i < 1000; ++i) {
    auto pace = flush();
    if (!pace) {
      spdlog::warn("operator calls: {} not written at stop", pace.error().code);
      return;
    }
    if (*pace == Pace::idle) return;
  }
}

}  // namespace sika::payments
