#pragma once
// The access log, written off the I/O threads: the server hands each entry to post(), which
// never blocks; one thread formats the entries as JSON lines and writes them in batches.
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "core/thread_annotations.hpp"
#include "http/server.hpp"

namespace sika::http {

class AccessLog {
 public:
  // Writes to `out` (not owned; stdout in `serve`). At most `capacity` entries wait for the
  // writer; beyond that post() drops the entry and counts it instead of blocking the caller.
  explicit AccessLog(std::FILE* out, std::size_t capacity = 65536);
  // Writes what is still queued, then stops the writer thread.
  ~AccessLog();
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  // Queues one entry; returns false (and counts a drop) when the queue is full. Thread-safe.
  bool post(AccessLogEntry&& entry);
  // Blocks until every entry queued before the call is written and flushed.
  void flush();

  std::uint64_t written() const;
  std::uint64_t dropped() const;

 private:
  void run();

  std::FILE* out_;
  std::size_t capacity_;
  mutable sika::Mutex mu_;
  std::condition_variable wake_;     // the writer: work arrived (or stop)
  std::condition_variable written_;  // flush(): a batch was written
  std::vector<AccessLogEntry> queue_ GUARDED_BY(mu_);
  std::uint64_t posted_ GUARDED_BY(mu_) = 0;
  std::uint64_t written_count_ GUARDED_BY(mu_) = 0;
  std::uint64_t dropped_ GUARDED_BY(mu_) = 0;
  bool stop_ GUARDED_BY(mu_) = false;
  bool flush_requested_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace sika::http
