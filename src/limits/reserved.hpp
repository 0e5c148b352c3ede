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
//  - One database write per block, at most block_size(policy) = clamp(limit / grant_divisor, 1,
//    max_grant) hits (50 for 600 per hour); concurrent hits on one bucket wait for the one
//    reservation under way instead of each writing their own.
//  - An address may be refused early by at most the unused part of one block per other node:
//    with N nodes, at least limit - (N - 1) × (block_size - 1) of its hits are allowed per window
//    (600 - 49 on two nodes). release() gives the unused parts back (on shutdown).
//  - Past the limit, every refused hit is counted in the database (one write each) until the
//    block of policy.block_ms starts, as with Limiter::hit, so repeated excess spread over the
//    nodes blocks the address on all of them; a blocked node then refuses from memory until the
//    block lifts. A node still holding a block of the quota serves it first (at most block_size
//    - 1 hits). Without block_ms, a node that found the window used up refuses from memory until
//    it ends.
//  - Memory is bounded by max_keys: past it only entries whose window has ended and which are not
//    blocked are dropped, and a new bucket that finds every entry live is counted by
//    Limiter::hit (one write per hit, exact), never let through uncounted.
//  - Refusals are counted in sika_rate_limit_refusals_total{limit=policy.name}.
#include <array>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/result.hpp"
#include "limits/limiter.hpp"

namespace sika::limits {

struct ReservedOptions {
  std::int64_t max_grant = 50;      // most hits one reservation takes
  std::int64_t grant_divisor = 12;  // and at most limit / grant_divisor (at least 1): small limits stay exact
  std::size_t max_keys = 100'000;   // buckets remembered in memory
};

class ReservedLimiter {
 public:
  explicit ReservedLimiter(Limiter& shared, ReservedOptions options = {});
  ReservedLimiter(const ReservedLimiter&) = delete;
  ReservedLimiter& operator=(const ReservedLimiter&) = delete;

  // Counts one hit on `bucket` and says whether it is allowed (count: the window's hits on every
  // node as last seen from here, this node's unused block excluded).
  Result<Decision> hit(std::string_view bucket, const Policy& policy);
  // Gives the unused part of every live block back to the database and forgets it; the next
  // hit on a bucket reserves again. Returns how many hits were given back.
  Result<std::int64_t> release();
  // The hits one reservation asks for under `policy`.
  std::int64_t block_size(const Policy& policy) const;

 private:
  struct Entry {
    std::int64_t window_start = 0;
    std::int64_t window_end = 0;    // the block is valid before this only
    std::int64_t remaining = 0;     // hits of the block not yet allowed
    std::int64_t count = 0;         // the window's count at the last reservation
    std::int64_t refuse_until = 0;  // refused from memory until then (blocked, or used up without block)
    bool reserving = false;         // a reservation for this bucket is under way
  };
  struct Shard {
    std::mutex mu;
    std::condition_variable reserved;  // a reservation of this shard ended
    std::unordered_map<std::string, Entry> entries;
  };
  static constexpr std::size_t kShards = 16;

  Limiter& shared_;
  ReservedOptions opts_;
  std::size_t max_keys_per_shard_;
  std::array<Shard, kShards> shards_;
};

}  // namespace sika::limits
