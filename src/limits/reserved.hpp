#pragma once
// The shared limiter for hot routes that every node must count together (the link API's 600
// requests per hour per address) without a database write per request: each node reserves a
// block of a bucket's quota with one write (Limiter::reserve) and serves hits from it in memory.
//
// Guarantees, for buckets that are always hit with the same Policy:
//  - Never more than policy.limit hits allowed per window on all nodes together: a node allows
//    only hits of a block the database granted it, and the blocks of one window add up to at most
//    the limit. A block is valid in its own window only (the database row's, started by the
//    bucket's first hit on any node); what is left of it when the window ends is dropped.
//  - A node holds at most block_size(policy) = clamp(limit / grant_divisor, 1, max_grant) unused
//    hits of a bucket (50 for 600 per hour: an early refusal costs an address at most a twelfth
//    of its limit per other node; the cap only binds limits above 12,000). When a block of 4 or more runs down to half,
//    the hit that sees it asks for a top-up to a full block without waiting for it (Limiter::top_up: on SQLite the
//    write is queued on the group-commit writer; on PostgreSQL that one hit pays it), so hits on a busy bucket wait for
//    the database about once per block at most, and not at all while the top-ups keep up. Concurrent hits on a bucket
//    whose block is empty wait for the one reservation under way instead of each writing their own.
//  - An address may be refused early by at most the unused block of each other node: with N
//    nodes, at least limit - (N - 1) × block_size of its hits are allowed per window when it asks
//    for more (550 of 600 on two nodes). release() gives the unused parts back (on shutdown).
//  - Past the limit, every refused hit is counted in the database (one write each) until the
//    block of policy.block_ms starts, as with Limiter::hit, so repeated excess spread over the
//    nodes blocks the address on all of them; a blocked node then refuses from memory until the
//    block lifts. A node still holding part of a block serves it first (at most block_size hits)
//    unless its top-up learns of the block. Without block_ms, a node that found the window used
//    up refuses from memory until it ends.
//  - Memory is bounded by max_keys: past it only entries whose window has ended and which are not
//    blocked are dropped, and a new bucket that finds every entry live is counted by
//    Limiter::hit (one write per hit, exact), never let through uncounted.
//  - Refusals are counted in sika_rate_limit_refusals_total{limit=policy.name}.
#include <array>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/result.hpp"
#include "core/thread_annotations.hpp"
#include "limits/limiter.hpp"

namespace sika::limits {

struct ReservedOptions {
  std::int64_t max_grant = 1000;    // most hits one reservation takes
  std::int64_t grant_divisor = 12;  // and at most limit / grant_divisor (at least 1): small limits stay exact
  std::size_t max_keys = 100'000;   // buckets remembered in memory
};

class ReservedLimiter {
 public:
  explicit ReservedLimiter(Limiter& shared, ReservedOptions options = {});
  // Waits for the top-ups under way.
  ~ReservedLimiter();
  ReservedLimiter(const ReservedLimiter&) = delete;
  ReservedLimiter& operator=(const ReservedLimiter&) = delete;

  // Counts one hit on `bucket` and says whether it is allowed (count: the window's hits on every
  // node as last seen from here, this node's unused block excluded).
  Result<Decision> hit(std::string_view bucket, const Policy& policy);
  // The same as hit when the decision needs no wait (a block with hits left, a bucket refused
  // from memory); nullopt, and nothing counted, when hit would reserve in the database or wait for
  // another thread's reservation. For a thread that must not block (an I/O thread).
  Result<std::optional<Decision>> try_hit(std::string_view bucket, const Policy& policy);
  // Gives the unused part of every live block back to the database and forgets it, once the
  // top-ups under way have ended; the next hit on a bucket reserves again. For a node that
  // stops taking requests. Returns how many hits were given back.
  Result<std::int64_t> release();
  // The hits one reservation asks for under `policy`.
  std::int64_t block_size(const Policy& policy) const;

 private:
  struct Entry {
    std::int64_t window_start = 0;
    std::int64_t window_end = 0;    // the block is valid before this only
    std::int64_t limit = 0;         // the policy's, for giving the block back
    std::int64_t remaining = 0;     // hits of the block not yet allowed
    std::int64_t count = 0;         // the window's count at the last reservation
    std::int64_t refuse_until = 0;  // refused from memory until then (blocked, or used up without block)
    bool reserving = false;         // a reservation or top-up of this bucket is under way
    bool exhausted = false;         // a top-up found no room left in this window
  };
  struct Shard {
    sika::Mutex mu;
    std::condition_variable reserved;  // a reservation of this shard ended
    std::unordered_map<std::string, Entry> entries GUARDED_BY(mu);
  };
  static constexpr std::size_t kShards = 16;

  // Asks for a top-up of `e` (shard locked by `lock`, released on return) when its block runs low.
  // Unchecked: clang 14 cannot follow a scoped lock passed by reference.
  void top_up_if_low(Shard& shard, sika::UniqueLock& lock, std::string_view bucket, Entry& e,
                     const Policy& p) NO_THREAD_SAFETY_ANALYSIS;
  // Applies a top-up's outcome to the bucket's entry.
  void topped_up(Shard& shard, const std::string& bucket, const Policy& p, const Result<Grant>& g);
  void wait_for_top_ups();
  // hit, or try_hit when !may_block.
  Result<std::optional<Decision>> decide(std::string_view bucket, const Policy& p, bool may_block);

  Limiter& shared_;
  ReservedOptions opts_;
  std::size_t max_keys_per_shard_;
  std::array<Shard, kShards> shards_;
  sika::Mutex flight_mu_;  // in_flight_ and the wait for it to reach zero
  std::condition_variable flight_done_;
  int in_flight_ GUARDED_BY(flight_mu_) = 0;  // top-ups whose outcome has not been applied yet
};

}  // namespace sika::limits
