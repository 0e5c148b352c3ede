#include "limits/reserved.hpp"

#include <spdlog/spdlog.h>
#include <boost/json.hpp>

#include <algorithm>
#include <functional>
#include <tuple>
#include <vector>

namespace sika::limits {

ReservedLimiter::ReservedLimiter(Limiter& shared, ReservedOptions options)
    : shared_(shared), opts_(options), max_keys_per_shard_(std::max<std::size_t>(1, opts_.max_keys / kShards)) {}

ReservedLimiter::~ReservedLimiter() { wait_for_top_ups(); }

std::int64_t ReservedLimiter::block_size(const Policy& p) const {
  const std::int64_t share = p.limit / std::max<std::int64_t>(1, opts_.grant_divisor);
  return std::clamp<std::int64_t>(share, 1, std::max<std::int64_t>(1, opts_.max_grant));
}

void ReservedLimiter::wait_for_top_ups() {
  sika::UniqueLock lock(flight_mu_);
  lock.wait(flight_done_, [this]() REQUIRES(flight_mu_) { return in_flight_ == 0; });
}

Result<Decision> ReservedLimiter::hit(std::string_view bucket, const Policy& p) {
  SIKA_ASSIGN_OR_RETURN(auto d, decide(bucket, p, true));
  return *d;  // a decision that may block always decides
}

Result<std::optional<Decision>> ReservedLimiter::try_hit(std::string_view bucket, const Policy& p) {
  return decide(bucket, p, false);
}

Result<std::optional<Decision>> ReservedLimiter::decide(std::string_view bucket, const Policy& p, bool may_block) {
  using Maybe = std::optional<Decision>;
  if (p.limit <= 0) return Maybe{Decision{}};
  auto refuse = [&p](std::int64_t count, std::int64_t retry_after_ms) {
    count_refusal(p);
    return Decision{false, count, std::max<std::int64_t>(1, retry_after_ms)};
  };
  Shard& shard = shards_[std::hash<std::string_view>{}(bucket) % kShards];
  sika::UniqueLock lock(shard.mu);
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
        if (!may_block) return Maybe{std::nullopt};
        lock.unlock();
        SIKA_ASSIGN_OR_RETURN(Decision d, shared_.hit(bucket, p));  // every remembered bucket is live
        return Maybe{d};                                            // counted one by one
      }
      it = shard.entries.emplace(std::string(bucket), Entry{}).first;
    }
    Entry& e = it->second;
    if (e.refuse_until > t) return Maybe{refuse(e.count, e.refuse_until - t)};
    if (e.window_end <= t) {  // a block is worth nothing past its window
      e.remaining = 0;
      e.exhausted = false;
    }
    if (e.remaining > 0) {
      --e.remaining;
      const Decision d{true, e.count - e.remaining, 0};
      top_up_if_low(shard, lock, bucket, e, p);
      return Maybe{d};
    }
    if (!may_block) return Maybe{std::nullopt};
    if (e.reserving) {
      lock.wait(shard.reserved);
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
    e.limit = p.limit;
    e.count = g->count;
    e.remaining = 0;
    e.exhausted = g->granted == 0;
    if (g->blocked_until > t) {
      e.refuse_until = g->blocked_until;
      return Maybe{refuse(e.count, g->blocked_until - t)};
    }
    if (g->granted > 0) {
      e.remaining = g->granted - 1;  // this hit takes the first
      return Maybe{Decision{true, e.count - e.remaining, 0}};
    }
    // The window is used up and this hit was counted as refused. With a block to come, the next
    // refusals are counted in the database too (they may start it); without, none can change
    // anything before the window ends.
    if (p.block_ms <= 0) e.refuse_until = e.window_end;
    return Maybe{refuse(e.count, e.window_end - t)};
  }
}

void ReservedLimiter::top_up_if_low(Shard& shard, sika::UniqueLock& lock, std::string_view bucket, Entry& e,
                                    const Policy& p) {
  const std::int64_t block = block_size(p);
  if (block < 4 || e.reserving || e.exhausted || e.remaining > block / 2) {
    lock.unlock();
    return;
  }
  // Up to a full block, so that a node never holds more than one unused block.
  const std::int64_t want = block - e.remaining;
  e.reserving = true;
  lock.unlock();
  {
    sika::MutexLock flight(flight_mu_);
    ++in_flight_;
  }
  std::string key(bucket);
  shared_.top_up(key, p, want, [this, &shard, key, p](Result<Grant> g) {
    topped_up(shard, key, p, g);
    sika::MutexLock flight(flight_mu_);
    if (--in_flight_ == 0) flight_done_.notify_all();
  });
}

void ReservedLimiter::topped_up(Shard& shard, const std::string& bucket, const Policy& p, const Result<Grant>& g) {
  sika::MutexLock lock(shard.mu);
  auto it = shard.entries.find(bucket);
  if (it == shard.entries.end()) return;  // cannot happen while `reserving` is set
  Entry& e = it->second;
  e.reserving = false;
  shard.reserved.notify_all();
  if (!g) {
    // The next reservation, on a request's path, will tell; the block in hand is still good.
    spdlog::warn("rate limit top-up: {}", boost::json::serialize(g.error().details));
    return;
  }
  const std::int64_t t = shared_.now();
  if (g->window_start != e.window_start) {  // the window rolled over meanwhile: the old block is void
    e.window_start = g->window_start;
    e.window_end = g->window_start + p.window_ms;
    e.limit = p.limit;
    e.remaining = 0;
  }
  e.count = g->count;
  if (g->blocked_until > t) {  // another node's refusals blocked the address: so does this node
    e.remaining = 0;
    e.refuse_until = g->blocked_until;
    return;
  }
  e.remaining += g->granted;
  e.exhausted = g->granted == 0;
}

Result<std::int64_t> ReservedLimiter::release() {
  wait_for_top_ups();
  std::vector<std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t>> unused;  // bucket, limit, window, hits
  const std::int64_t t = shared_.now();
  for (Shard& shard : shards_) {
    sika::MutexLock lock(shard.mu);
    for (auto& [bucket, e] : shard.entries) {
      if (e.remaining > 0 && e.window_end > t) unused.emplace_back(bucket, e.limit, e.window_start, e.remaining);
      e.remaining = 0;
    }
  }
  std::int64_t total = 0;
  for (const auto& [bucket, limit, window_start, hits] : unused) {
    SIKA_TRY(shared_.give_back(bucket, Policy{.limit = limit}, window_start, hits));
    total += hits;
  }
  return total;
}

}  // namespace sika::limits
