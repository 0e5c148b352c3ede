// The database-backed rate limiter on both backends: counting per window, refusal with
// Retry-After, blocks after repeated excess, exact counts under concurrency from two nodes, and
// eviction of expired windows only; the limiter that serves reserved blocks of the quota from
// memory: never more than the limit on two nodes (random interleavings), blocks valid in their
// own window only, blocking across nodes, unused blocks given back.
#include <boost/json.hpp>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "limits/limiter.hpp"
#include "limits/local.hpp"
#include "limits/reserved.hpp"
#include "support/test_db.hpp"

namespace sika::limits {
namespace {

class LimitsTest : public sika::testing::DbTest {
 protected:
  void SetUp() override {
    DbTest::SetUp();
    if (IsSkipped()) return;
    limiter_ = std::make_unique<Limiter>(*db_, Options{.clock = [this] { return clock_.load(); }});
  }
  void TearDown() override {
    limiter_.reset();
    DbTest::TearDown();
  }

  Decision hit(const std::string& bucket, const Policy& p) {
    auto d = limiter_->hit(bucket, p);
    EXPECT_TRUE(d.ok()) << (d.ok() ? "" : boost::json::serialize(d.error().details));
    return d.ok() ? *d : Decision{};
  }

  std::int64_t rows() {
    std::int64_t n = -1;
    EXPECT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(auto r, c.query_one("SELECT COUNT(*) FROM rate_limits"));
                     n = r->i64(0);
                     return {};
                   })
                    .ok());
    return n;
  }

  std::atomic<std::int64_t> clock_{1'700'000'000'000};
  std::unique_ptr<Limiter> limiter_;
};

TEST_P(LimitsTest, CountsHitsPerWindowAndRefusesBeyondTheLimit) {
  Policy p{.limit = 3, .window_ms = 60000};
  for (int i = 1; i <= 3; ++i) {
    Decision d = hit("k", p);
    EXPECT_TRUE(d.allowed) << i;
    EXPECT_EQ(d.count, i);
    clock_ += 1000;
  }
  Decision refused = hit("k", p);
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.count, 4);
  EXPECT_EQ(refused.retry_after_ms, 57000);  // the window started 3 s ago
  // Other buckets are independent.
  EXPECT_TRUE(hit("other", p).allowed);
  // The window ends 60 s after its first hit: a new one starts at 1.
  clock_ += 57000;
  Decision fresh = hit("k", p);
  EXPECT_TRUE(fresh.allowed);
  EXPECT_EQ(fresh.count, 1);
}

TEST_P(LimitsTest, PeekDoesNotCount) {
  Policy p{.limit = 2, .window_ms = 1000};
  auto first = limiter_->peek("k", p);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->allowed);
  EXPECT_EQ(first->count, 0);
  hit("k", p);
  auto after_one = limiter_->peek("k", p);
  ASSERT_TRUE(after_one.ok());
  EXPECT_TRUE(after_one->allowed);
  EXPECT_EQ(after_one->count, 1);
  hit("k", p);
  auto full = limiter_->peek("k", p);
  ASSERT_TRUE(full.ok());
  EXPECT_FALSE(full->allowed);
  EXPECT_EQ(full->retry_after_ms, 1000);
  EXPECT_EQ(hit("k", p).count, 3);  // peeks were not counted
  clock_ += 1000;
  auto next_window = limiter_->peek("k", p);
  ASSERT_TRUE(next_window.ok());
  EXPECT_TRUE(next_window->allowed);
  EXPECT_EQ(next_window->count, 0);
}

TEST_P(LimitsTest, RepeatedExcessBlocksBeyondTheWindow) {
  Policy p{.limit = 2, .window_ms = 1000, .block_ms = 10000, .block_after = 2};
  EXPECT_TRUE(hit("ip", p).allowed);
  EXPECT_TRUE(hit("ip", p).allowed);
  Decision first_excess = hit("ip", p);
  EXPECT_FALSE(first_excess.allowed);
  EXPECT_EQ(first_excess.retry_after_ms, 1000);  // not blocked yet: the window's end
  Decision second_excess = hit("ip", p);
  EXPECT_FALSE(second_excess.allowed);
  EXPECT_EQ(second_excess.retry_after_ms, 10000);  // blocked
  clock_ += 5000;                                  // a later window, still blocked
  Decision blocked = hit("ip", p);
  EXPECT_FALSE(blocked.allowed);
  EXPECT_EQ(blocked.retry_after_ms, 5000);
  auto peeked = limiter_->peek("ip", p);
  ASSERT_TRUE(peeked.ok());
  EXPECT_FALSE(peeked->allowed);
  clock_ += 5000;  // the block lifts
  Decision free = hit("ip", p);
  EXPECT_TRUE(free.allowed);
  EXPECT_EQ(free.count, 1);
  // Without block_ms the bucket is free at the next window.
  Policy plain{.limit = 1, .window_ms = 1000};
  hit("plain", plain);
  hit("plain", plain);
  hit("plain", plain);
  clock_ += 1000;
  EXPECT_TRUE(hit("plain", plain).allowed);
}

TEST_P(LimitsTest, ConcurrentHitsFromTwoNodesAllowExactlyTheLimit) {
  store::Db& other = second_node();
  Limiter second(other, Options{.clock = [this] { return clock_.load(); }});
  Policy p{.limit = 10, .window_ms = 60000};
  constexpr int kThreads = 16, kEach = 3;
  std::atomic<int> allowed{0}, refused{0}, failed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      Limiter& l = i % 2 == 0 ? *limiter_ : second;
      for (int j = 0; j < kEach; ++j) {
        auto d = l.hit("shared", p);
        if (!d)
          ++failed;
        else if (d->allowed)
          ++allowed;
        else
          ++refused;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(allowed.load(), 10);
  EXPECT_EQ(refused.load(), kThreads * kEach - 10);
  EXPECT_EQ(hit("shared", p).count, kThreads * kEach + 1);
}

TEST_P(LimitsTest, EvictionDeletesExpiredWindowsOnlyInBatches) {
  Policy minute{.limit = 5, .window_ms = 60000};
  Policy second{.limit = 1, .window_ms = 1000, .block_ms = 30000, .block_after = 1};
  for (int i = 0; i < 7; ++i) hit("short-" + std::to_string(i), Policy{.limit = 5, .window_ms = 1000});
  hit("live", minute);
  hit("live", minute);
  hit("blocked", second);
  hit("blocked", second);  // over the limit: blocked for 30 s
  ASSERT_FALSE(hit("blocked", second).allowed);
  clock_ += 2000;  // the 1 s windows have ended; "live" and the block have not
  EXPECT_EQ(rows(), 9);
  auto evicted = limiter_->evict_expired(3);  // several batches
  ASSERT_TRUE(evicted.ok());
  EXPECT_EQ(*evicted, 7);
  EXPECT_EQ(rows(), 2);
  // The live window kept its count; the block still holds.
  EXPECT_EQ(hit("live", minute).count, 3);
  EXPECT_FALSE(hit("blocked", second).allowed);
  clock_ += 60000;
  auto rest = limiter_->evict_expired(3);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(*rest, 2);
  EXPECT_EQ(rows(), 0);
}

TEST_P(LimitsTest, RefusalIsRateLimitedWithRetryAfterSeconds) {
  Error e = refusal(Decision{false, 7, 1500}, "requests per hour");
  EXPECT_EQ(e.kind, ErrorKind::rate_limited);
  EXPECT_EQ(e.code, "rate_limited");
  EXPECT_EQ(e.details.at("retry_after").as_int64(), 2);
  EXPECT_EQ(e.details.at("limit").as_string(), "requests per hour");
  EXPECT_EQ(refusal(Decision{false, 1, 1}, "x").details.at("retry_after").as_int64(), 1);
}

INSTANTIATE_TEST_SUITE_P(Backends, LimitsTest, ::testing::Values("sqlite", "postgres"));

// Two nodes (two Db connections to one database) each serving blocks of the quota from memory.
class ReservedTest : public LimitsTest {
 protected:
  void SetUp() override {
    LimitsTest::SetUp();
    if (IsSkipped()) return;
    second_ = std::make_unique<Limiter>(second_node(), Options{.clock = [this] { return clock_.load(); }});
  }
  void TearDown() override {
    second_.reset();
    LimitsTest::TearDown();
  }

  static bool allowed(ReservedLimiter& node, const std::string& bucket, const Policy& p) {
    auto d = node.hit(bucket, p);
    EXPECT_TRUE(d.ok()) << (d.ok() ? "" : boost::json::serialize(d.error().details));
    return d.ok() && d->allowed;
  }

  std::unique_ptr<Limiter> second_;
};

TEST_P(ReservedTest, NeverMoreThanTheLimitOnTwoNodesWhateverTheInterleaving) {
  std::mt19937_64 rng(20261122);
  constexpr std::int64_t kWindow = 60'000;
  for (int round = 0; round < 12; ++round) {
    const std::int64_t limit = std::uniform_int_distribution<std::int64_t>(1, 120)(rng);
    const ReservedOptions ro{.max_grant = std::uniform_int_distribution<std::int64_t>(1, 20)(rng),
                             .grant_divisor = std::uniform_int_distribution<std::int64_t>(1, 6)(rng)};
    ReservedLimiter a(*limiter_, ro), b(*second_, ro);
    const Policy p{.limit = limit, .window_ms = kWindow, .name = "test_reserved"};
    const std::int64_t block = a.block_size(p);
    const std::string bucket = "round-" + std::to_string(round);
    for (int window = 0; window < 3; ++window) {
      clock_ += 2 * kWindow;  // a new window for the bucket
      const int threads = std::uniform_int_distribution<int>(1, 4)(rng);
      const int each = std::uniform_int_distribution<int>(1, static_cast<int>(limit))(rng);
      std::atomic<std::int64_t> allowed_hits{0}, refused_hits{0};
      std::vector<std::thread> pool;
      for (int i = 0; i < threads; ++i)
        pool.emplace_back([&, seed = rng()] {
          std::mt19937_64 local(seed);
          for (int j = 0; j < each; ++j) {
            ReservedLimiter& node = local() % 2 == 0 ? a : b;
            if (local() % 8 == 0) clock_ += 10;  // time moves, within the window
            if (allowed(node, bucket, p))
              ++allowed_hits;
            else
              ++refused_hits;
          }
        });
      for (auto& t : pool) t.join();
      const std::int64_t demand = std::int64_t{threads} * each;
      SCOPED_TRACE("round " + std::to_string(round) + " window " + std::to_string(window) + ": limit " +
                   std::to_string(limit) + ", block " + std::to_string(block) + ", demand " + std::to_string(demand));
      EXPECT_EQ(allowed_hits + refused_hits, demand);
      EXPECT_LE(allowed_hits.load(), limit);
      // Refused early by at most one unused block of the other node.
      EXPECT_GE(allowed_hits.load(), std::min(demand, limit - block));
      if (block == 1) {
        EXPECT_EQ(allowed_hits.load(), std::min(demand, limit));
      }
    }
  }
}

TEST_P(ReservedTest, ABlockIsValidInItsOwnWindowOnly) {
  const ReservedOptions ro{.max_grant = 4, .grant_divisor = 1};
  ReservedLimiter a(*limiter_, ro), b(*second_, ro);
  const Policy p{.limit = 10, .window_ms = 1000, .name = "test_reserved"};
  EXPECT_TRUE(allowed(a, "ip", p));  // a holds 3 more of its block of 4
  clock_ += 1000;                    // the window rolls over
  for (int i = 1; i <= 10; ++i) EXPECT_TRUE(allowed(b, "ip", p)) << i;
  // a's block belonged to the last window: nothing is left for it in this one.
  auto late = a.hit("ip", p);
  ASSERT_TRUE(late.ok());
  EXPECT_FALSE(late->allowed);
  EXPECT_EQ(late->retry_after_ms, 1000);
  EXPECT_FALSE(allowed(b, "ip", p));
  clock_ += 1000;
  EXPECT_TRUE(allowed(a, "ip", p));
  EXPECT_EQ(a.hit("ip", p)->count, 4 - 2);  // from its new block: 2 of 4 used
}

TEST_P(ReservedTest, RepeatedExcessOnEitherNodeBlocksTheAddressOnBoth) {
  const ReservedOptions ro{.max_grant = 2, .grant_divisor = 1};
  ReservedLimiter a(*limiter_, ro), b(*second_, ro);
  const Policy p{.limit = 4, .window_ms = 1000, .block_ms = 10'000, .block_after = 2, .name = "test_reserved"};
  EXPECT_TRUE(allowed(a, "ip", p));
  EXPECT_TRUE(allowed(a, "ip", p));
  EXPECT_TRUE(allowed(b, "ip", p));
  EXPECT_TRUE(allowed(b, "ip", p));
  auto first_excess = b.hit("ip", p);
  ASSERT_TRUE(first_excess.ok());
  EXPECT_FALSE(first_excess->allowed);
  EXPECT_EQ(first_excess->retry_after_ms, 1000);  // not blocked yet: the window's end
  auto second_excess = a.hit("ip", p);            // counted with b's: the block starts
  ASSERT_TRUE(second_excess.ok());
  EXPECT_FALSE(second_excess->allowed);
  EXPECT_EQ(second_excess->retry_after_ms, 10'000);
  auto on_b = b.hit("ip", p);
  ASSERT_TRUE(on_b.ok());
  EXPECT_FALSE(on_b->allowed);
  EXPECT_EQ(on_b->retry_after_ms, 10'000);
  clock_ += 5000;  // later windows: still blocked on both, from memory
  for (ReservedLimiter* node : {&a, &b}) {
    auto d = node->hit("ip", p);
    ASSERT_TRUE(d.ok());
    EXPECT_FALSE(d->allowed);
    EXPECT_EQ(d->retry_after_ms, 5000);
  }
  clock_ += 5000;  // the block lifts
  EXPECT_TRUE(allowed(b, "ip", p));
  EXPECT_TRUE(allowed(a, "ip", p));
}

TEST_P(ReservedTest, ReleaseGivesUnusedBlocksBackToTheOtherNodes) {
  const ReservedOptions ro{.max_grant = 4, .grant_divisor = 1};
  ReservedLimiter a(*limiter_, ro), b(*second_, ro);
  const Policy p{.limit = 10, .window_ms = 60'000, .name = "test_reserved"};
  EXPECT_TRUE(allowed(a, "ip", p));
  EXPECT_TRUE(allowed(a, "other", p));
  auto given = a.release();
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(*given, 6);  // 3 unused of each block
  int served = 0;
  for (int i = 0; i < 12; ++i) served += allowed(b, "ip", p) ? 1 : 0;
  EXPECT_EQ(served, 9);  // all but a's one hit
  // a has no block left: its next hit reserves again and finds the window used up.
  EXPECT_FALSE(allowed(a, "ip", p));
  // Giving back to a window that has been replaced changes nothing.
  clock_ += 60'000;
  EXPECT_TRUE(allowed(b, "ip", p));
  ASSERT_TRUE(limiter_->give_back("ip", p, clock_.load() - 60'000, 5).ok());
  auto peeked = limiter_->peek("ip", p);
  ASSERT_TRUE(peeked.ok());
  EXPECT_EQ(peeked->count, 4);  // b's new block
}

TEST_P(ReservedTest, WhatIsGivenBackAfterRefusalsCanBeGrantedAgain) {
  const ReservedOptions ro{.max_grant = 2, .grant_divisor = 1};
  ReservedLimiter a(*limiter_, ro), b(*second_, ro);
  const Policy p{.limit = 10, .window_ms = 60'000, .block_ms = 600'000, .block_after = 100, .name = "test_reserved"};
  EXPECT_TRUE(allowed(b, "ip", p));  // b keeps 1 of its block of 2
  int served = 0;
  for (int i = 0; i < 12; ++i) served += allowed(a, "ip", p) ? 1 : 0;
  EXPECT_EQ(served, 8);  // then 4 refusals counted past the limit
  auto given = b.release();
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(*given, 1);
  EXPECT_TRUE(allowed(a, "ip", p));  // the hit b gave back
  EXPECT_FALSE(allowed(a, "ip", p));
}

// try_hit decides only what memory can: a hit from the block, a refusal of a blocked address;
// a hit that would reserve in the database is nullopt and counts nothing, and hit then reserves.
TEST_P(ReservedTest, TryHitDecidesFromTheBlockAndNeverWrites) {
  const ReservedOptions ro{.max_grant = 3, .grant_divisor = 1};
  ReservedLimiter a(*limiter_, ro);
  const Policy p{.limit = 4, .window_ms = 60'000, .block_ms = 600'000, .block_after = 1, .name = "test_reserved"};
  auto none = a.try_hit("ip", p);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());   // no block yet
  EXPECT_EQ(rows(), 0);              // nothing reserved, nothing counted
  EXPECT_TRUE(allowed(a, "ip", p));  // reserves 3, takes 1
  for (int i = 0; i < 2; ++i) {
    auto from_block = a.try_hit("ip", p);
    ASSERT_TRUE(from_block.ok());
    ASSERT_TRUE(from_block->has_value()) << i;
    EXPECT_TRUE((*from_block)->allowed);
  }
  auto peeked = limiter_->peek("ip", p);
  ASSERT_TRUE(peeked.ok());
  EXPECT_EQ(peeked->count, 3);  // the block, whatever was served from it
  auto used_up = a.try_hit("ip", p);
  ASSERT_TRUE(used_up.ok());
  EXPECT_FALSE(used_up->has_value());  // the next hit needs the database
  EXPECT_TRUE(allowed(a, "ip", p));    // the last of the limit
  EXPECT_FALSE(allowed(a, "ip", p));   // past it: the address is blocked
  auto blocked = a.try_hit("ip", p);   // refused from memory
  ASSERT_TRUE(blocked.ok());
  ASSERT_TRUE(blocked->has_value());
  EXPECT_FALSE((*blocked)->allowed);
  EXPECT_GT((*blocked)->retry_after_ms, 60'000);
}

TEST_P(ReservedTest, BucketsBeyondMemoryAreCountedOneByOne) {
  ReservedLimiter a(*limiter_, ReservedOptions{.max_grant = 50, .grant_divisor = 1, .max_keys = 16});
  const Policy p{.limit = 100, .window_ms = 60'000, .name = "test_reserved"};
  for (int i = 0; i < 200; ++i) EXPECT_TRUE(allowed(a, "rotating-" + std::to_string(i), p)) << i;
  // Buckets that found no room were counted by single hits, never let through uncounted.
  EXPECT_EQ(rows(), 200);
  clock_ += 60'000;  // ended windows make room again
  EXPECT_TRUE(allowed(a, "fresh", p));
  EXPECT_EQ(a.hit("fresh", p)->count, 2);
}

INSTANTIATE_TEST_SUITE_P(Backends, ReservedTest, ::testing::Values("sqlite", "postgres"));

TEST(LocalLimiter, CountsFixedWindowsPerKey) {
  std::int64_t t = 1'000'000;
  LocalLimiter limiter(1000, [&] { return t; });
  const Policy p{.limit = 3, .window_ms = 60'000, .name = "test_local"};
  for (int i = 1; i <= 3; ++i) EXPECT_TRUE(limiter.hit("a", p).allowed) << i;
  Decision refused = limiter.hit("a", p);
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.count, 4);
  EXPECT_EQ(refused.retry_after_ms, 60'000);
  EXPECT_TRUE(limiter.hit("b", p).allowed);  // another key has its own window
  t += 59'999;
  EXPECT_EQ(limiter.hit("a", p).retry_after_ms, 1);
  t += 1;
  EXPECT_TRUE(limiter.hit("a", p).allowed);  // a new window
  EXPECT_TRUE(limiter.hit("x", Policy{.limit = 0}).allowed);
}

TEST(LocalLimiter, RotatingKeysNeverResetALiveWindow) {
  std::int64_t t = 1'000'000;
  LocalLimiter limiter(16, [&] { return t; });  // one key per shard
  const Policy p{.limit = 2, .window_ms = 60'000, .name = "test_local"};
  EXPECT_TRUE(limiter.hit("victim", p).allowed);
  EXPECT_TRUE(limiter.hit("victim", p).allowed);
  for (int i = 0; i < 10'000; ++i) limiter.hit("rotating-" + std::to_string(i), p);
  EXPECT_FALSE(limiter.hit("victim", p).allowed);  // still counted: live windows are never dropped
  t += 60'000;
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(limiter.hit("fresh-" + std::to_string(i), p).allowed);
}

TEST(LocalLimiter, ConcurrentHitsAreEachCounted) {
  LocalLimiter limiter;
  const Policy p{.limit = 1000, .window_ms = 3'600'000, .name = "test_local"};
  std::atomic<int> allowed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      for (int j = 0; j < 500; ++j)
        if (limiter.hit("shared", p).allowed) ++allowed;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(allowed.load(), 1000);
}

}  // namespace
}  // namespace sika::limits
