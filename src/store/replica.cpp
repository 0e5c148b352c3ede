#include "store/replica.hpp"

#include <atomic>
#include <utility>

namespace sika::store {
namespace {

// True iff `st` says the database could not answer (rather than what fn decided).
bool unavailable(const Status& st) {
  return !st && (st.error().kind == ErrorKind::unavailable || st.error().kind == ErrorKind::retryable);
}

class ReadRouted final : public Db {
 public:
  ReadRouted(Db& primary, std::unique_ptr<Db> replica) : primary_(primary), replica_(std::move(replica)) {}

  Dialect dialect() const override { return primary_.dialect(); }

  Status read(const std::function<Status(Conn&)>& fn) override {
    Status st = replica_->read(fn);
    if (!unavailable(st)) return st;
    fallbacks_.fetch_add(1, std::memory_order_relaxed);
    return primary_.read(fn);
  }

  Status write(const std::function<Status(Conn&)>& fn) override { return primary_.write(fn); }
  void write_async(std::function<Status(Conn&)> fn, std::function<void(Status)> done) override {
    primary_.write_async(std::move(fn), std::move(done));
  }
  bool writes_async() const override { return primary_.writes_async(); }

  // Ready when the primary is: the replica's absence only sends reads to the primary.
  Status ping() override { return primary_.ping(); }
  void close() override { replica_->close(); }

  // The replica's counters; `retries` also counts the reads the primary answered for it.
  DbStats stats() const override {
    DbStats s = replica_->stats();
    s.retries += fallbacks_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  Db& primary_;
  std::unique_ptr<Db> replica_;
  std::atomic<std::uint64_t> fallbacks_{0};
};

}  // namespace

std::unique_ptr<Db> read_routed(Db& primary, std::unique_ptr<Db> replica) {
  return std::make_unique<ReadRouted>(primary, std::move(replica));
}

}  // namespace sika::store
