#include "limits/local.hpp"

#include <algorithm>

#include "core/time.hpp"

namespace sika::limits {

LocalLimiter::LocalLimiter(std::size_t max_keys, std::function<std::int64_t()> clock)
    : max_keys_per_shard_(std::max<std::size_t>(1, max_keys / kShards)), clock_(std::move(clock)) {}

std::int64_t LocalLimiter::now() const { return clock_ ? clock_() : now_ms(); }

Decision LocalLimiter::hit(std::string_view key, const Policy& policy) {
  if (policy.limit <= 0) return Decision{};
  const std::int64_t t = now();
  Shard& shard = shards_[std::hash<std::string_view>{}(key) % kShards];
  Decision d;
  {
    sika::MutexLock lock(shard.mu);
    auto it = shard.windows.find(std::string(key));
    if (it == shard.windows.end()) {
      if (shard.windows.size() >= max_keys_per_shard_)
        std::erase_if(shard.windows, [&](const auto& kv) { return t - kv.second.start >= policy.window_ms; });
      if (shard.windows.size() >= max_keys_per_shard_) return Decision{true, 1, 0};  // every key is live
      it = shard.windows.emplace(std::string(key), Window{t, 0}).first;
    }
    Window& w = it->second;
    if (t - w.start >= policy.window_ms) w = Window{t, 0};
    d.count = ++w.hits;
    if (d.count > policy.limit) {
      d.allowed = false;
      d.retry_after_ms = std::max<std::int64_t>(1, w.start + policy.window_ms - t);
    }
  }
  if (!d.allowed) count_refusal(policy);
  return d;
}

}  // namespace sika::limits
