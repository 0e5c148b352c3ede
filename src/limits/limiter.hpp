#pragma once
// A rate limiter shared by every node through the database (table rate_limits).
//
// Guarantees:
//  - A bucket counts hits in fixed windows of Policy::window_ms, the first starting at the
//    bucket's first hit. hit() is ONE statement (an upsert that increments and returns the
//    count), so concurrent hits on any number of nodes are each counted exactly once and at
//    most `limit` of them are allowed per window.
//  - With Policy::block_ms > 0, the hit that makes the window's count reach
//    limit + block_after blocks the bucket for block_ms: every hit is refused until then,
//    even in later windows.
//  - Refusals carry retry_after_ms: when the window ends or the block lifts, whichever is later.
//  - reserve() hands one node a block of a window's quota (limits/reserved.hpp serves hits from
//    it in memory): the blocks granted in one window never add up to more than `limit`, and
//    once none is left each call counts one refused hit towards the block, like hit().
//  - evict_expired() deletes only rows whose window has ended and whose block has lifted, in
//    batches; a live window is never forgotten, whatever the number of buckets.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "core/result.hpp"
#include "core/thread_annotations.hpp"
#include "store/db.hpp"

namespace sika::limits {

struct Policy {
  std::int64_t limit = 0;  // hits allowed per window; <= 0 means unlimited (nothing is stored)
  std::int64_t window_ms = 60000;
  std::int64_t block_ms = 0;     // 0: no block, the bucket is free again when its window ends
  std::int64_t block_after = 1;  // refused hits in one window that start the block
  // What the policy limits, as a metrics label ("links_pay_per_address"): a fixed name, never
  // the bucket (which holds addresses and codes, an unbounded set).
  std::string_view name = "unnamed";
};

struct Decision {
  bool allowed = true;
  std::int64_t count = 0;           // hits in the current window, this one included (peek: without it)
  std::int64_t retry_after_ms = 0;  // 0 when allowed
};

// A block of one bucket's quota reserved for one node (Limiter::reserve).
struct Grant {
  std::int64_t granted = 0;        // hits the node may allow in this window only; 0: none left, or blocked
  std::int64_t window_start = 0;   // the window the block belongs to (the row's, set by its first hit)
  std::int64_t count = 0;          // the window's count after this call, on every node (granted + refused)
  std::int64_t blocked_until = 0;  // > now: the bucket is blocked until then
};

struct Options {
  std::int64_t sweep_interval_ms = 60000;  // how often the background sweep evicts expired windows
  int sweep_batch = 1000;                  // rows deleted per write unit
  std::function<std::int64_t()> clock;     // epoch ms; now_ms() when empty
};

class Limiter {
 public:
  explicit Limiter(store::Db& db, Options options = {});
  ~Limiter();
  Limiter(const Limiter&) = delete;
  Limiter& operator=(const Limiter&) = delete;

  // Counts one hit on `bucket` and says whether it is allowed. A refusal is counted in
  // sika_rate_limit_refusals_total{limit=policy.name}.
  Result<Decision> hit(std::string_view bucket, const Policy& policy);
  // Says whether one more hit would be allowed, without counting it (one indexed read).
  Result<Decision> peek(std::string_view bucket, const Policy& policy);
  // Reserves up to `want` hits of the bucket's current window in one write unit: while the window
  // has room, granted = min(want, limit - count) and the count grows by that much; when it has
  // none, granted = 0 and this call is counted as one refused hit (which may start the block, as
  // in hit()). While the bucket is blocked nothing changes. The grants of one window never add
  // up to more than policy.limit, whatever the number of nodes. Refusals are not counted in the
  // metric here: the caller decides which hits it refuses.
  Result<Grant> reserve(std::string_view bucket, const Policy& policy, std::int64_t want);
  // As reserve(), for a node topping up its block ahead of need: a window with no room is left
  // as it is (granted 0, nobody was refused). When the database writes asynchronously (SQLite)
  // it returns at once and `done` gets the outcome after the commit, on the database's
  // completer thread (it must not block); otherwise `done` is called before it returns.
  void top_up(std::string bucket, const Policy& policy, std::int64_t want, std::function<void(Result<Grant>)> done);
  // Gives back `unused` hits of a grant made under `policy` in the window that started at
  // `window_start`; does nothing once another window has replaced it. The hits refused past the
  // limit are forgotten with it (they counted towards a block that has not started; a block that
  // has stays), so the room given back can be granted again. The count never drops below zero.
  Status give_back(std::string_view bucket, const Policy& policy, std::int64_t window_start, std::int64_t unused);
  // Forgets a bucket (e.g. after a success that should clear its failures).
  Status reset(std::string_view bucket);
  // Deletes expired windows, `batch` rows per write unit, until none is left; returns how many.
  Result<std::int64_t> evict_expired(int batch = 1000);

  // Starts / stops the background sweep (evict_expired every sweep_interval_ms).
  void start();
  void stop();

  // The limiter's clock (epoch ms): Options::clock, or now_ms().
  std::int64_t now() const;

 private:
  store::Db& db_;
  Options opts_;
  sika::Mutex mu_;
  std::condition_variable cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread sweeper_ GUARDED_BY(mu_);
};

// Counts a refused hit in sika_rate_limit_refusals_total{limit=policy.name}.
void count_refusal(const Policy& policy);

// The refusal for a Decision that is not allowed: 429 rate_limited with details
// {"retry_after": seconds (rounded up, at least 1), "limit": what was exceeded}.
Error refusal(const Decision& d, std::string_view what);

}  // namespace sika::limits
