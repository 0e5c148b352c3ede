#pragma once
// A rate limiter inside one process, for hot read-only routes (public page views) where a
// database write per request would cost more than the page itself. It counts per node: with N
// nodes an address gets up to N × limit. Mutating routes use the shared Limiter (limiter.hpp).
//
// Guarantees:
//  - Fixed windows of Policy::window_ms per key, the first starting at the key's first hit; at
//    most `limit` hits are allowed per window on this node. Policy::block_ms is not applied.
//  - Memory is bounded by max_keys: past it only keys whose window has ended are dropped, and a
//    new key is not remembered (its hit is allowed) while every remembered key is live, so
//    rotating source addresses never resets anyone's counter.
//  - Refusals are counted in sika_rate_limit_refusals_total{limit=policy.name}, like the shared
//    limiter's.
#include <array>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/thread_annotations.hpp"
#include "limits/limiter.hpp"

namespace sika::limits {

class LocalLimiter {
 public:
  explicit LocalLimiter(std::size_t max_keys = 100'000, std::function<std::int64_t()> clock = {});
  LocalLimiter(const LocalLimiter&) = delete;
  LocalLimiter& operator=(const LocalLimiter&) = delete;

  // Counts one hit on `key` under `policy` and says whether it is allowed.
  Decision hit(std::string_view key, const Policy& policy);

 private:
  struct Window {
    std::int64_t start = 0;
    std::int64_t hits = 0;
  };
  // Keys are spread over shards so that concurrent hits rarely wait for one another.
  struct Shard {
    sika::Mutex mu;
    std::unordered_map<std::string, Window> windows GUARDED_BY(mu);
  };
  static constexpr std::size_t kShards = 16;

  std::int64_t now() const;

  std::size_t max_keys_per_shard_;
  std::function<std::int64_t()> clock_;
  std::array<Shard, kShards> shards_;
};

}  // namespace sika::limits
