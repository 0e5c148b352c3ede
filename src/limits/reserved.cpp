#include "limits/reserved.hpp"

#include <algorithm>
#include <functional>
#include <tuple>
#include <vector>

namespace sika::limits {

ReservedLimiter::ReservedLimiter(Limiter& shared, ReservedOptions options)
    : shared_(shared), opts_(options), max_keys_per_shard_(std::max<std::size_t>(1, opts_.max_keys / kShards)) {}

std::int64_t ReservedLimiter::block_size(const Policy& p) const {
  const std::int64_t share = p.limit / std::max<std::int64_t>(1, opts_.grant_divisor);
  return std::clamp<std::int64_t>(share, 1, std::max<std::int64_t>(1, opts_.max_grant));
}

Result<Decision> ReservedLimiter::hit(std::string_view bucket, const Policy& p) {
  if (p.limit <= 0) return Decision{};
  auto refuse = [&p](std::int64_t count, std::int64_t retry_after_ms) {
    count_refusal(p);
    return Decision{false, count, std::max<std::int64_t>(1, retry_after_ms)};
  };
  Shard& shard = shards_[std::hash<std::string_view>{}(bucket) % kShards];
  std::unique_lock lock(shard.mu);
  for (;;) {
    std::int64_t t = shared_.now();
    // Found again after every wait: an idle entry may have been dropped meanwhile.
    auto it = shard.entries.find(std::string(bucket));
    if (it == shard.entries.end()) {
      if (shard.entries.size() >= max_keys_per_shard_)
        std::erase_if(shard.entries, [t](const auto& kv) {
          const Entry& e = kv.second;
          return !e.reserving && e.window_end <= t && e.refuse_until <= t;
        });
      if (shard.entries.size() >= max_keys_per_shard_) {
        lock.unlock();
        return shared_.hit(bucket, p);  // every remembered bucket is live: counted one by one
      }
      it = shard.entries.emplace(std::string(bucket), Entry{}).first;
    }
    Entry& e = it->second;
    if (e.refuse_until > t) return refuse(e.count, e.refuse_until - t);
    if (e.window_end <= t) e.remaining = 0;  // a block is worth nothing past its window
    if (e.remaining > 0) {
      --e.remaining;
      return Decision{true, e.count - e.remaining, 0};
    }
    if (e.reserving) {
      shard.reserved.wait(lock);
      continue;
    }
    // This hit reserves the next block; the entry cannot be dropped while `reserving` is set.
    e.reserving = true;
    lock.unlock();
    auto g = shared_.reserve(bucket, p, block_size(p));
    lock.lock();
    e.reserving = false;
    shard.reserved.notify_all();
    if (!g) return g.take_error();
    t = shared_.now();
    e.window_start = g->window_start;
    e.window_end = g->window_start + p.window_ms;
    e.count = g->count;
    e.remaining = 0;
    if (g->blocked_until > t) {
      e.refuse_until = g->blocked_until;
      return refuse(e.count, g->blocked_until - t);
    }
    if (g->granted > 0) {
      e.remaining = g->granted - 1;  // this hit takes the first
      return Decision{true, e.count - e.remaining, 0};
    }
    // The window is used up and this hit was counted as refused. With a block to come, the next
    // refusals are counted in the database too (they may start it); without, none can change
    // anything before the window ends.
    if (p.block_ms <= 0) e.refuse_until = e.window_end;
    return refuse(e.count, e.window_end - t);
  }
}

Result<std::int64_t> ReservedLimiter::release() {
  std::vector<std::tuple<std::string, std::int64_t, std::int64_t>> unused;  // bucket, window, hits
  const std::int64_t t = shared_.now();
  for (Shard& shard : shards_) {
    std::lock_guard lock(shard.mu);
    for (auto& [bucket, e] : shard.entries) {
      if (e.remaining > 0 && e.window_end > t) unused.emplace_back(bucket, e.window_start, e.remaining);
      e.remaining = 0;
    }
  }
  std::int64_t total = 0;
  for (const auto& [bucket, window_start, hits] : unused) {
    SIKA_TRY(shared_.give_back(bucket, window_start, hits));
    total += hits;
  }
  return total;
}

}  // namespace sika::limits
