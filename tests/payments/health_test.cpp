// Operator health (payments/health.hpp) from synthetic calls on a clock the test moves: the
// window's errors and latencies decide OPERATIONAL / DELAYED / CLOSED, a better state waits for
// recover_ms, the sandbox is never judged, two nodes on one database use the worst of their fresh
// summaries, and an operator's override wins everywhere. The operator-call log writes its bounded
// queue in batches. On SQLite and PostgreSQL.
#include <gtest/gtest.h>

#include <atomic>

#include "core/time.hpp"
#include "payments/health.hpp"
#include "payments/operator_log.hpp"
#include "support/test_db.hpp"

namespace sika::payments {
namespace {

using Outcome = OperatorCall::Outcome;

OperatorCall call_of(std::string connector, Outcome outcome, std::int64_t latency_ms = 100,
                     std::string reference = "") {
  OperatorCall c;
  c.connector = std::move(connector);
  c.operation = "collection";
  c.provider_reference = std::move(reference);
  c.method = "POST";
  c.path = "/collection/v1_0/requesttopay";
  c.http_status = outcome == Outcome::ok ? 202 : outcome == Outcome::failed ? 500 : 0;
  c.outcome = outcome;
  c.started_at = now_ms();
  c.latency_ms = latency_ms;
  return c;
}

class HealthTest : public sika::testing::DbTest {
 protected:
  HealthOptions options(std::string node) {
    HealthOptions o;
    o.window_ms = 60'000;
    o.min_calls = 5;
    o.delayed_error_ratio = 0.2;
    o.delayed_p90_ms = 5'000;
    o.closed_error_ratio = 0.5;
    o.closed_consecutive = 5;
    o.recover_ms = 30'000;
    o.stale_ms = 10'000;
    o.node_id = std::move(node);
    o.clock = [this] { return clock_.load(); };
    return o;
  }
  void feed(Health& h, const std::string& connector, Outcome outcome, int n, std::int64_t latency_ms = 100) {
    for (int i = 0; i < n; ++i) {
      h.observe(call_of(connector, outcome, latency_ms));
      clock_ += 10;
    }
  }
  std::int64_t count(const std::string& sql) {
    std::int64_t n = -1;
    EXPECT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(auto row, c.query_one(sql));
                     n = row ? row->i64(0) : -1;
                     return {};
                   })
                    .ok());
    return n;
  }
  std::atomic<std::int64_t> clock_{1'700'000'000'000};
};

INSTANTIATE_TEST_SUITE_P(Backends, HealthTest, ::testing::Values("sqlite", "postgres"));

TEST_P(HealthTest, ErrorsAndLatencyDecideTheStateAndABetterOneWaitsForRecoverMs) {
  Health h(*db_, options("node-a"));
  EXPECT_EQ(h.state("mtn_momo"), Availability::operational) << "nothing known: OPERATIONAL";
  feed(h, "mtn_momo", Outcome::ok, 10);
  // Refusals are answers, not errors.
  feed(h, "mtn_momo", Outcome::refused, 10);
  EXPECT_EQ(h.state("mtn_momo"), Availability::operational);
  // Slow answers: p90 above 5 s.
  feed(h, "mtn_momo", Outcome::ok, 20, 8'000);
  EXPECT_EQ(h.state("mtn_momo"), Availability::delayed);
  // Fast again: DELAYED until the slow calls left the window and the better state held 30 s.
  clock_ += 61'000;
  feed(h, "mtn_momo", Outcome::ok, 10);
  EXPECT_EQ(h.state("mtn_momo"), Availability::delayed) << "hysteresis: not better at once";
  clock_ += 29'000;
  feed(h, "mtn_momo", Outcome::ok, 1);
  EXPECT_EQ(h.state("mtn_momo"), Availability::delayed);
  clock_ += 2'000;
  feed(h, "mtn_momo", Outcome::ok, 1);
  EXPECT_EQ(h.state("mtn_momo"), Availability::operational);
  // Five failures in a row close it at once, whatever the ratio.
  feed(h, "mtn_momo", Outcome::ok, 10);
  feed(h, "mtn_momo", Outcome::timeout, 4);
  EXPECT_EQ(h.state("mtn_momo"), Availability::operational) << "4 of 26 failed (15 %), 4 in a row";
  feed(h, "mtn_momo", Outcome::network, 1);
  EXPECT_EQ(h.state("mtn_momo"), Availability::closed);
  // An error ratio alone: 3 errors of 10 (30 %) is DELAYED on another connector.
  feed(h, "orange", Outcome::ok, 7);
  for (int i = 0; i < 3; ++i) {
    feed(h, "orange", Outcome::failed, 1);
    feed(h, "orange", Outcome::ok, i < 2 ? 1 : 0);
  }
  EXPECT_EQ(h.state("orange"), Availability::delayed);
  // Silence: the failures leave the window, then the better state holds recover_ms.
  clock_ += 61'000;
  ASSERT_TRUE(h.refresh().ok());
  EXPECT_EQ(h.state("mtn_momo"), Availability::closed);
  clock_ += 31'000;
  ASSERT_TRUE(h.refresh().ok());
  EXPECT_EQ(h.state("mtn_momo"), Availability::operational);
  auto changes = h.transitions();
  EXPECT_EQ((changes[{"mtn_momo", "DELAYED"}]), 1u);
  EXPECT_EQ((changes[{"mtn_momo", "CLOSED"}]), 1u);
  EXPECT_EQ((changes[{"mtn_momo", "OPERATIONAL"}]), 2u);
}

TEST_P(HealthTest, TheSandboxIsNeverJudgedButAnOverrideForcesIt) {
  Health h(*db_, options("node-a"));
  feed(h, "sandbox", Outcome::timeout, 50, 30'000);
  EXPECT_EQ(h.state("sandbox"), Availability::operational);
  ASSERT_TRUE(h.force("sandbox", Availability::closed, "ops@example.com").ok());
  EXPECT_EQ(h.state("sandbox"), Availability::closed);
  auto snap = h.snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].forced, Availability::closed);
  EXPECT_EQ(snap[0].forced_by, "ops@example.com");
  ASSERT_TRUE(h.refresh().ok());
  EXPECT_EQ(h.state("sandbox"), Availability::closed) << "the override row holds across refreshes";
  ASSERT_TRUE(h.force("sandbox", std::nullopt, "ops@example.com").ok());
  EXPECT_EQ(h.state("sandbox"), Availability::operational);
  ASSERT_TRUE(h.refresh().ok());
  EXPECT_EQ(h.state("sandbox"), Availability::operational);
}

TEST_P(HealthTest, TwoNodesUseTheWorstOfTheirFreshSummariesAndTheSameOverride) {
  Health a(*db_, options("node-a"));
  Health b(*db_, options("node-b"));
  feed(a, "mtn_momo", Outcome::timeout, 5);
  feed(b, "mtn_momo", Outcome::ok, 5);
  EXPECT_EQ(a.state("mtn_momo"), Availability::closed);
  EXPECT_EQ(b.state("mtn_momo"), Availability::operational) << "b has not read a's summary yet";
  ASSERT_TRUE(a.refresh().ok());
  ASSERT_TRUE(b.refresh().ok());
  EXPECT_EQ(b.state("mtn_momo"), Availability::closed) << "the worst fresh summary";
  auto snap = b.snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].nodes, 2);
  EXPECT_EQ(snap[0].calls, 10);
  EXPECT_EQ(snap[0].errors, 5);
  // a stops publishing: its row goes stale and b decides alone.
  clock_ += 11'000;
  ASSERT_TRUE(b.refresh().ok());
  EXPECT_EQ(b.state("mtn_momo"), Availability::operational);
  // An override written on one node is every node's at their next refresh.
  ASSERT_TRUE(b.force("orange", Availability::delayed, "ops@example.com").ok());
  EXPECT_EQ(a.state("orange"), Availability::operational);
  ASSERT_TRUE(a.refresh().ok());
  EXPECT_EQ(a.state("orange"), Availability::delayed);
  ASSERT_TRUE(a.force("orange", std::nullopt, "ops@example.com").ok());
  ASSERT_TRUE(b.refresh().ok());
  EXPECT_EQ(b.state("orange"), Availability::operational);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_operator_health WHERE node = '*'"), 0);
}

TEST_P(HealthTest, TheCallLogWritesItsBoundedQueueInBatchesAndFeedsHealth) {
  Health h(*db_, options("node-a"));
  OperatorLogOptions o;
  o.capacity = 1000;
  o.batch = 400;
  o.node_id = "node-a";
  auto log = std::make_unique<OperatorLog>(*db_, &h, o);
  for (int i = 0; i < 1200; ++i)
    log->record(call_of("mtn_momo", i % 2 ? Outcome::ok : Outcome::refused, 120, "ref-" + std::to_string(i % 10)));
  EXPECT_EQ(log->dropped(), 200u) << "beyond the bound: dropped, never waited for";
  EXPECT_EQ(h.snapshot().size(), 1u) << "every call fed health, written or not";
  auto first = log->flush();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, Pace::busy);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_operator_calls"), 400);
  log->stop();  // writes what is left
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_operator_calls"), 1000);
  EXPECT_EQ(log->written(), 1000u);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_operator_calls WHERE provider_reference = 'ref-3' AND "
                  "outcome = 'ok' AND http_status = 202 AND latency_ms = 120 AND node = 'node-a'"),
            100);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_operator_calls WHERE operator_reference IS NOT NULL OR code IS NOT NULL"),
            0)
      << "empty texts are NULL";
}

}  // namespace
}  // namespace sika::payments
