#include "http/access_log.hpp"

#include <algorithm>
#include <chrono>
#include <string>

namespace sika::http {

namespace {
// The writer wakes at least this often; post() only wakes it early when the queue is half
// full, so a steady stream of requests costs no wake-up per request.
constexpr auto kWriterPeriod = std::chrono::milliseconds(20);
}  // namespace

AccessLog::AccessLog(std::FILE* out, std::size_t capacity) : out_(out), capacity_(std::max<std::size_t>(1, capacity)) {
  queue_.reserve(std::min<std::size_t>(capacity_, 4096));
  thread_ = std::thread([this] { run(); });
}

AccessLog::~AccessLog() {
  {
    sika::MutexLock lock(mu_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

bool AccessLog::post(AccessLogEntry&& entry) {
  bool wake;
  {
    sika::MutexLock lock(mu_);
    if (queue_.size() >= capacity_) {
      ++dropped_;
      return false;
    }
    queue_.push_back(std::move(entry));
    ++posted_;
    wake = queue_.size() == capacity_ / 2 + 1;
  }
  if (wake) wake_.notify_one();
  return true;
}

void AccessLog::flush() {
  sika::UniqueLock lock(mu_);
  std::uint64_t target = posted_;
  flush_requested_ = true;
  wake_.notify_one();
  lock.wait(written_, [&]() REQUIRES(mu_) { return written_count_ >= target || stop_; });
}

std::uint64_t AccessLog::written() const {
  sika::MutexLock lock(mu_);
  return written_count_;
}

std::uint64_t AccessLog::dropped() const {
  sika::MutexLock lock(mu_);
  return dropped_;
}

void AccessLog::run() {
  std::vector<AccessLogEntry> batch;
  std::string text;
  for (;;) {
    bool stopping;
    {
      sika::UniqueLock lock(mu_);
      lock.wait_for(wake_, kWriterPeriod,
                    [&]() REQUIRES(mu_) { return stop_ || flush_requested_ || queue_.size() > capacity_ / 2; });
      flush_requested_ = false;
      batch.swap(queue_);
      stopping = stop_;
    }
    if (!batch.empty()) {
      text.clear();
      for (const auto& e : batch) e.append_line(text);
      std::fwrite(text.data(), 1, text.size(), out_);
      std::fflush(out_);
    }
    {
      sika::MutexLock lock(mu_);
      written_count_ += batch.size();
    }
    written_.notify_all();
    batch.clear();
    if (stopping) {
      sika::MutexLock lock(mu_);
      if (queue_.empty()) return;
    }
  }
}

}  // namespace sika::http
