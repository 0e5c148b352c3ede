// Leased jobs (store/jobs.hpp, store/job_runner.hpp) on both backends. The PostgreSQL instance
// needs SIKA_TEST_PG_DSN and skips itself without it:
//   scripts/with-postgres.sh build/tests/store/jobs_test
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/periodic.hpp"
#include "core/time.hpp"
#include "store/job_runner.hpp"
#include "store/jobs.hpp"
#include "store/leasing.hpp"
#include "support/test_db.hpp"

namespace sika::store {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t kT0 = 1'800'000'000'000;

class JobsTest : public sika::testing::DbTest {
 protected:
  void SetUp() override {
    DbTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // Stands for a domain table the job's effect writes (a charge, an expiry).
    ASSERT_TRUE(db_->write([](Conn& c) -> Status {
                     SIKA_TRY(c.exec("CREATE TABLE effects (job_key TEXT NOT NULL, runner TEXT NOT NULL)"));
                     return {};
                   })
                    .ok());
  }

  NewJob job(std::string key, std::string queue = "test.queue") {
    NewJob j;
    j.queue = std::move(queue);
    j.key = std::move(key);
    j.payload = R"({"n":1})";
    return j;
  }

  // Job `key` of test.queue, run at most `max_attempts` times.
  NewJob job_tried(std::string key, int max_attempts) {
    NewJob j = job(std::move(key));
    j.max_attempts = max_attempts;
    return j;
  }

  std::int64_t count(const std::string& sql) {
    std::int64_t n = -1;
    EXPECT_TRUE(db_->read([&](Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(auto row, c.query_one(sql));
                     n = row ? row->i64(0) : -1;
                     return {};
                   })
                    .ok());
    return n;
  }

  // Claims for `owner` at `now`, on a 1000 ms lease, the one job of test.queue due then.
  void claim_one(std::string_view owner, std::int64_t now, Job& out) {
    auto claimed = claim(*db_, "test.queue", owner, 1, 1000, now);
    ASSERT_TRUE(claimed.ok());
    ASSERT_EQ(claimed->size(), 1u);
    out = (*claimed)[0];
  }

  std::string state_of(const std::string& key) {
    auto j = find_job(*db_, "test.queue", key);
    EXPECT_TRUE(j.ok());
    return j.ok() && *j ? (*j)->state : "missing";
  }

  // One node's runner on a test clock, retrying after exactly 1 s, then 2 s, 4 s...
  static JobRunnerOptions on_clock(std::int64_t& clock) {
    JobRunnerOptions o;
    o.node_id = "n1";
    o.retry_base_ms = 1000;
    o.jitter_percent = 0;
    o.clock = [&clock] { return clock; };
    return o;
  }

  // Enqueues `jobs` jobs, runs them with three runners (nodes) made ready by `attach` (which
  // registers the handler writing one effect per job), and checks each ran once. Returns the
  // runners' completed count.
  std::int64_t run_on_three_nodes(int jobs, const std::function<void(JobRunner&, const std::string&)>& attach) {
    EXPECT_TRUE(db_->write([&](Conn& c) -> Status {
                     for (int i = 0; i < jobs; ++i) SIKA_TRY(enqueue(c, job("job-" + std::to_string(i)), now_ms()));
                     return {};
                   })
                    .ok());
    std::vector<std::unique_ptr<JobRunner>> runners;
    for (int n = 0; n < 3; ++n) {
      JobRunnerOptions o;
      o.node_id = "node" + std::to_string(n);
      o.workers = 2;
      o.batch = 3;
      o.poll_interval_ms = 20;
      runners.push_back(std::make_unique<JobRunner>(second_node(), o));
      attach(*runners.back(), o.node_id);
    }
    for (auto& r : runners) r->start();
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (count("SELECT COUNT(*) FROM jobs WHERE state = 'done'") < jobs &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(20ms);
    for (auto& r : runners) r->stop();
    EXPECT_EQ(count("SELECT COUNT(*) FROM jobs WHERE state = 'done'"), jobs);
    EXPECT_EQ(count("SELECT COUNT(*) FROM effects"), jobs);
    EXPECT_EQ(count("SELECT COUNT(DISTINCT job_key) FROM effects"), jobs);
    std::int64_t completed = 0;
    for (auto& r : runners) completed += r->stats().completed;
    return completed;
  }
};

TEST_P(JobsTest, EnqueueIsIdempotentOnQueueAndKey) {
  auto first = enqueue(*db_, job("sub_1:2026-11"), kT0);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(*first);
  auto again = enqueue(*db_, job("sub_1:2026-11"), kT0 + 5);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
  auto other_queue = enqueue(*db_, job("sub_1:2026-11", "other.queue"), kT0);
  ASSERT_TRUE(other_queue.ok());
  EXPECT_TRUE(*other_queue);
  EXPECT_EQ(count("SELECT COUNT(*) FROM jobs"), 2);

  // Still a no-op once the job has run: the key stays taken.
  auto claimed = claim(*db_, "test.queue", "n1/1", 10, 1000, kT0);
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->size(), 1u);
  EXPECT_EQ((*claimed)[0].payload, R"({"n":1})");
  ASSERT_TRUE(complete(*db_, (*claimed)[0].lease, kT0 + 1).ok());
  auto after_done = enqueue(*db_, job("sub_1:2026-11"), kT0 + 10);
  ASSERT_TRUE(after_done.ok());
  EXPECT_FALSE(*after_done);
  EXPECT_EQ(state_of("sub_1:2026-11"), "done");

  auto no_key = enqueue(*db_, job(""), kT0);
  ASSERT_FALSE(no_key.ok());
  EXPECT_EQ(no_key.error().kind, ErrorKind::invalid);
  EXPECT_TRUE(no_key.error().details.as_object().contains("key"));
}

TEST_P(JobsTest, EnqueueCommitsWithTheCallersUnitOrNotAtAll) {
  Status failed = db_->write([&](Conn& c) -> Status {
    SIKA_TRY(c.exec("INSERT INTO effects (job_key, runner) VALUES ('cause', 'x')"));
    SIKA_TRY(enqueue(c, job("rolled-back"), kT0));
    return conflict("the state change failed");
  });
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(state_of("rolled-back"), "missing");
  EXPECT_EQ(count("SELECT COUNT(*) FROM effects"), 0);

  Status ok = db_->write([&](Conn& c) -> Status {
    SIKA_TRY(c.exec("INSERT INTO effects (job_key, runner) VALUES ('cause', 'x')"));
    SIKA_TRY(enqueue(c, job("committed"), kT0));
    return {};
  });
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(state_of("committed"), "pending");
}

TEST_P(JobsTest, ClaimTakesDueJobsOfItsQueueOnly) {
  NewJob later = job("later");
  later.run_at = kT0 + 60'000;
  ASSERT_TRUE(enqueue(*db_, later, kT0).ok());
  ASSERT_TRUE(enqueue(*db_, job("now"), kT0).ok());
  ASSERT_TRUE(enqueue(*db_, job("elsewhere", "other.queue"), kT0).ok());
  auto claimed = claim(*db_, "test.queue", "n1/1", 10, 1000, kT0);
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->size(), 1u);
  EXPECT_EQ((*claimed)[0].key, "now");
  EXPECT_EQ((*claimed)[0].attempt, 1);
  EXPECT_EQ((*claimed)[0].lease.until, kT0 + 1000);
  // A claimed job is not claimable again while its lease lasts.
  auto none = claim(*db_, "test.queue", "n2/1", 10, 1000, kT0 + 500);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto due_later = claim(*db_, "test.queue", "n2/2", 10, 1000, kT0 + 60'000);
  ASSERT_TRUE(due_later.ok());
  ASSERT_EQ(due_later->size(), 1u);
  EXPECT_EQ((*due_later)[0].key, "later");
}

// Many claimers on their own connections (as many nodes would be) never share a job.
TEST_P(JobsTest, ConcurrentClaimsGiveEachJobToExactlyOneClaimer) {
  constexpr int kJobs = 300;
  constexpr int kClaimers = 8;
  ASSERT_TRUE(db_->write([&](Conn& c) -> Status {
                   for (int i = 0; i < kJobs; ++i) SIKA_TRY(enqueue(c, job("job-" + std::to_string(i)), kT0));
                   return {};
                 })
                  .ok());
  std::vector<Db*> nodes;
  for (int i = 0; i < kClaimers; ++i) nodes.push_back(&second_node());
  std::mutex mu;
  std::map<std::int64_t, int> times_claimed;
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kClaimers; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0;; ++round) {
        auto got =
            claim(*nodes[t], "test.queue", "node" + std::to_string(t) + "/" + std::to_string(round), 3, 60'000, kT0);
        if (!got) {
          ++errors;
          return;
        }
        if (got->empty()) return;
        if (got->size() > 3) ++errors;  // never more than asked for
        for (const auto& j : *got) {
          {
            std::lock_guard lock(mu);
            ++times_claimed[j.id];
          }
          if (!complete(*nodes[t], j.lease, kT0 + 1)) ++errors;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(times_claimed.size(), static_cast<std::size_t>(kJobs));
  for (const auto& [id, n] : times_claimed) EXPECT_EQ(n, 1) << "job " << id;
  EXPECT_EQ(count("SELECT COUNT(*) FROM jobs WHERE state = 'done' AND attempts = 1"), kJobs);
}

TEST_P(JobsTest, ExpiredLeaseIsReapedAndTheStaleCompletionRefused) {
  ASSERT_TRUE(enqueue(*db_, job("k"), kT0).ok());
  Job first;
  ASSERT_NO_FATAL_FAILURE(claim_one("dead-node/1", kT0, first));
  const JobLease stale = first.lease;

  auto early = reap(*db_, kT0 + 999);
  ASSERT_TRUE(early.ok());
  EXPECT_EQ(early->requeued, 0);
  auto reaped = reap(*db_, kT0 + 1001);
  ASSERT_TRUE(reaped.ok());
  EXPECT_EQ(reaped->requeued, 1);
  auto info = find_job(*db_, "test.queue", "k");
  ASSERT_TRUE(info.ok() && *info);
  EXPECT_EQ((*info)->state, "pending");
  ASSERT_TRUE((*info)->last_error.has_value());
  EXPECT_NE((*info)->last_error->find("dead-node/1"), std::string::npos);

  Job second;
  ASSERT_NO_FATAL_FAILURE(claim_one("live-node/1", kT0 + 1002, second));
  EXPECT_EQ(second.attempt, 2);

  // The first node wakes up: neither its completion nor its failure nor its heartbeat counts,
  // and an effect committed with its completion is rolled back.
  Status late = db_->write([&](Conn& c) -> Status {
    SIKA_TRY(complete(c, stale, kT0 + 1003));
    SIKA_TRY(c.exec("INSERT INTO effects (job_key, runner) VALUES ('k', 'dead-node')"));
    return {};
  });
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().kind, ErrorKind::conflict);
  EXPECT_EQ(fail(*db_, stale, kT0 + 5000, "late", kT0 + 1003).error().kind, ErrorKind::conflict);
  auto beat = heartbeat(*db_, {stale}, 1000, kT0 + 1003);
  ASSERT_TRUE(beat.ok());
  EXPECT_TRUE(beat->empty());
  EXPECT_EQ(count("SELECT COUNT(*) FROM effects"), 0);

  ASSERT_TRUE(complete(*db_, second.lease, kT0 + 1004).ok());
  EXPECT_EQ(state_of("k"), "done");
}

TEST_P(JobsTest, HeartbeatKeepsTheLease) {
  ASSERT_TRUE(enqueue(*db_, job("k"), kT0).ok());
  Job claimed;
  ASSERT_NO_FATAL_FAILURE(claim_one("n1/1", kT0, claimed));
  auto beat = heartbeat(*db_, {claimed.lease}, 1000, kT0 + 800);
  ASSERT_TRUE(beat.ok());
  ASSERT_EQ(beat->size(), 1u);
  auto kept = reap(*db_, kT0 + 1500);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->requeued, 0);
  auto info = find_job(*db_, "test.queue", "k");
  ASSERT_TRUE(info.ok() && *info);
  EXPECT_EQ((*info)->state, "running");
  EXPECT_EQ((*info)->heartbeat_at, kT0 + 800);
  EXPECT_EQ((*info)->lease_until, kT0 + 1800);
  EXPECT_TRUE(complete(*db_, claimed.lease, kT0 + 1700).ok());
  auto after = reap(*db_, kT0 + 5000);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->requeued, 0);
  EXPECT_EQ(state_of("k"), "done");
}

TEST_P(JobsTest, FailRetriesUntilTheAttemptsAreUsed) {
  ASSERT_TRUE(enqueue(*db_, job_tried("k", 2), kT0).ok());
  Job a1;
  ASSERT_NO_FATAL_FAILURE(claim_one("n1/1", kT0, a1));
  ASSERT_TRUE(fail(*db_, a1.lease, kT0 + 100, "HTTP 502", kT0 + 10).ok());
  auto info = find_job(*db_, "test.queue", "k");
  ASSERT_TRUE(info.ok() && *info);
  EXPECT_EQ((*info)->state, "pending");
  EXPECT_EQ((*info)->run_at, kT0 + 100);
  EXPECT_EQ((*info)->last_error, "HTTP 502");
  auto too_early = claim(*db_, "test.queue", "n1/2", 1, 1000, kT0 + 99);
  ASSERT_TRUE(too_early.ok());
  EXPECT_TRUE(too_early->empty());
  Job a2;
  ASSERT_NO_FATAL_FAILURE(claim_one("n1/3", kT0 + 100, a2));
  EXPECT_EQ(a2.attempt, 2);
  ASSERT_TRUE(fail(*db_, a2.lease, kT0 + 200, "HTTP 502 again", kT0 + 110).ok());
  EXPECT_EQ(state_of("k"), "dead");

  // A node dying on the last attempt makes the job dead too.
  ASSERT_TRUE(enqueue(*db_, job_tried("once", 1), kT0).ok());
  ASSERT_EQ(claim(*db_, "test.queue", "n1/4", 1, 1000, kT0)->size(), 1u);
  auto reaped = reap(*db_, kT0 + 2000);
  ASSERT_TRUE(reaped.ok());
  EXPECT_EQ(reaped->dead, 1);
  EXPECT_EQ(state_of("once"), "dead");
}

TEST_P(JobsTest, DeadJobsAreListedAndCanBeRetried) {
  ASSERT_TRUE(enqueue(*db_, job_tried("poison", 1), kT0).ok());
  ASSERT_TRUE(enqueue(*db_, job("fine"), kT0).ok());
  Job a;
  ASSERT_NO_FATAL_FAILURE(claim_one("n1/1", kT0, a));
  ASSERT_EQ(a.key, "poison");
  ASSERT_TRUE(fail(*db_, a.lease, kT0 + 100, "bad payload", kT0 + 1).ok());
  auto dead = list_jobs(*db_, {.queue = "test.queue", .state = "dead"});
  ASSERT_TRUE(dead.ok());
  ASSERT_EQ(dead->size(), 1u);
  EXPECT_EQ((*dead)[0].key, "poison");
  EXPECT_EQ((*dead)[0].last_error, "bad payload");
  auto all = list_jobs(*db_, {});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].key, "fine");  // newest first

  EXPECT_FALSE(retry_dead(*db_, "test.queue", "fine", kT0 + 2).value());  // not dead: left alone
  EXPECT_FALSE(retry_dead(*db_, "test.queue", "nope", kT0 + 2).value());
  ASSERT_TRUE(retry_dead(*db_, "test.queue", "poison", kT0 + 2).value());
  auto again = claim(*db_, "test.queue", "n1/2", 2, 1000, kT0 + 2);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), 2u);
  for (const auto& job : *again) EXPECT_EQ(job.attempt, 1) << job.key;
}

TEST_P(JobsTest, QueueStatsCountLiveStatesAndTheOldestDueJob) {
  NewJob poison = job("poison");
  poison.max_attempts = 1;
  ASSERT_TRUE(enqueue(*db_, poison, kT0).ok());
  ASSERT_TRUE(enqueue(*db_, job("running"), kT0 + 10).ok());
  NewJob later = job("later");
  later.run_at = kT0 + 60'000;  // not due yet: counted, but not the oldest due
  ASSERT_TRUE(enqueue(*db_, later, kT0).ok());
  ASSERT_TRUE(enqueue(*db_, job("waiting"), kT0 + 20).ok());
  ASSERT_TRUE(enqueue(*db_, job("done", "other.queue"), kT0).ok());
  auto first = claim(*db_, "test.queue", "n1/1", 2, 60'000, kT0 + 100);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 2u);  // poison (due first), running
  ASSERT_EQ((*first)[0].key, "poison");
  ASSERT_TRUE(fail(*db_, (*first)[0].lease, kT0 + 200, "bad payload", kT0 + 101).ok());
  auto other = claim(*db_, "other.queue", "n1/2", 1, 60'000, kT0 + 100);
  ASSERT_TRUE(other.ok());
  ASSERT_EQ(other->size(), 1u);
  ASSERT_TRUE(complete(*db_, (*other)[0].lease, kT0 + 102).ok());

  auto stats = queue_stats(*db_, kT0 + 1000);
  ASSERT_TRUE(stats.ok());
  ASSERT_EQ(stats->size(), 1u);  // a queue whose jobs are all done has no live figures
  const QueueStats& q = (*stats)[0];
  EXPECT_EQ(q.queue, "test.queue");
  EXPECT_EQ(q.pending, 2);  // waiting, later
  EXPECT_EQ(q.running, 1);
  EXPECT_EQ(q.dead, 1);
  EXPECT_EQ(q.oldest_due, kT0 + 20);
  auto before_due = queue_stats(*db_, kT0 + 15);
  ASSERT_TRUE(before_due.ok());
  ASSERT_EQ(before_due->size(), 1u);
  EXPECT_FALSE((*before_due)[0].oldest_due.has_value());
}

TEST_P(JobsTest, ReleaseGivesTheJobBackWithoutCountingTheAttempt) {
  ASSERT_TRUE(enqueue(*db_, job("k"), kT0).ok());
  auto a = claim(*db_, "test.queue", "n1/1", 1, 60'000, kT0);
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->size(), 1u);
  ASSERT_TRUE(release(*db_, (*a)[0].lease, kT0 + 5).ok());
  auto b = claim(*db_, "test.queue", "n2/1", 1, 60'000, kT0 + 5);
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b->size(), 1u);
  EXPECT_EQ((*b)[0].attempt, 1);
  EXPECT_EQ(release(*db_, (*a)[0].lease, kT0 + 6).error().kind, ErrorKind::conflict);
}

// A stalled node whose job was taken over cannot commit the job's effect a second time.
TEST_P(JobsTest, ScopeCommitsTheEffectOnceAcrossATakeover) {
  ASSERT_TRUE(enqueue(*db_, job("k"), kT0).ok());
  Job stalled;
  ASSERT_NO_FATAL_FAILURE(claim_one("stalled/1", kT0, stalled));
  ASSERT_TRUE(reap(*db_, kT0 + 2000).ok());
  Job live;
  ASSERT_NO_FATAL_FAILURE(claim_one("live/1", kT0 + 2000, live));

  auto effect = [&](const char* runner) {
    return [runner](Conn& c) -> Status {
      SIKA_TRY(c.exec("INSERT INTO effects (job_key, runner) VALUES ('k', ?)", {std::string(runner)}));
      return {};
    };
  };
  JobScope live_scope(*db_, live, [] { return kT0 + 2001; });
  ASSERT_TRUE(live_scope.commit(effect("live")).ok());
  EXPECT_TRUE(live_scope.committed());
  EXPECT_FALSE(live_scope.commit(effect("live")).ok());  // at most once per job
  JobScope stalled_scope(*db_, stalled, [] { return kT0 + 2002; });
  Status late = stalled_scope.commit(effect("stalled"));
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().kind, ErrorKind::conflict);
  EXPECT_EQ(count("SELECT COUNT(*) FROM effects"), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM effects WHERE runner = 'live'"), 1);
}

// Three runners (threads, heartbeat, reaper) on their own connections run every job once.
TEST_P(JobsTest, RunnersOnSeveralNodesRunEveryJobOnce) {
  constexpr int kJobs = 120;
  std::atomic<int> handler_runs{0};
  const std::int64_t completed = run_on_three_nodes(kJobs, [&handler_runs](JobRunner& runner, const std::string& name) {
    runner.handle("test.queue", [&handler_runs, name](const Job& job, JobScope& scope) -> Status {
      ++handler_runs;
      return scope.commit([&](Conn& c) -> Status {
        SIKA_TRY(c.exec("INSERT INTO effects (job_key, runner) VALUES (?, ?)", {job.key, name}));
        return {};
      });
    });
  });
  EXPECT_EQ(handler_runs.load(), kJobs);
  EXPECT_EQ(completed, kJobs);
}

TEST_P(JobsTest, RunnerRetriesAFailingHandlerWithBackoffThenMarksItDead) {
  ASSERT_TRUE(enqueue(*db_, job_tried("flaky", 3), kT0).ok());
  std::int64_t clock = kT0;
  JobRunner runner(*db_, on_clock(clock));
  int runs = 0;
  runner.handle("test.queue", [&](const Job& job, JobScope&) -> Status {
    ++runs;
    EXPECT_EQ(job.attempt, runs);
    if (job.attempt < 3) return unavailable("the operator did not answer");
    throw std::runtime_error("a bug in the handler");
  });
  ASSERT_EQ(runner.run_once().value(), 1);
  auto info = find_job(*db_, "test.queue", "flaky");
  ASSERT_TRUE(info.ok() && *info);
  EXPECT_EQ((*info)->state, "pending");
  EXPECT_EQ((*info)->run_at, kT0 + 1000);
  EXPECT_NE((*info)->last_error->find("the operator did not answer"), std::string::npos);
  clock = kT0 + 999;
  EXPECT_EQ(runner.run_once().value(), 0);
  clock = kT0 + 1000;
  EXPECT_EQ(runner.run_once().value(), 1);
  EXPECT_EQ(find_job(*db_, "test.queue", "flaky").value()->run_at, kT0 + 1000 + 2000);  // doubled
  clock = kT0 + 3000;
  EXPECT_EQ(runner.run_once().value(), 1);  // the third attempt throws: logged, and the job is dead
  info = find_job(*db_, "test.queue", "flaky");
  EXPECT_EQ((*info)->state, "dead");
  EXPECT_NE((*info)->last_error->find("a bug in the handler"), std::string::npos);
  EXPECT_EQ(runs, 3);
  EXPECT_EQ(runner.stats().failed, 3);
}

// A page handler gets several jobs at once; its ok jobs are completed together, its failed
// ones retried alone, and with runners on several nodes every job is still run once.
TEST_P(JobsTest, PageHandlerCompletesItsOkJobsAndRetriesTheOthers) {
  constexpr int kJobs = 10;
  for (int i = 0; i < kJobs; ++i) ASSERT_TRUE(enqueue(*db_, job("p" + std::to_string(i)), kT0).ok());
  std::int64_t clock = kT0;
  JobRunner runner(*db_, on_clock(clock));
  std::vector<std::size_t> pages;
  runner.handle_pages(
      "test.queue",
      [&](const std::vector<Job>& jobs) {
        pages.push_back(jobs.size());
        std::vector<Status> out;
        for (const Job& j : jobs)
          out.push_back(j.key == "p3" && j.attempt == 1 ? Status(unavailable("later")) : Status{});
        return out;
      },
      4);
  ASSERT_EQ(runner.run_once().value(), kJobs);
  EXPECT_EQ(pages, (std::vector<std::size_t>{4, 4, 2}));
  EXPECT_EQ(count("SELECT COUNT(*) FROM jobs WHERE state = 'done'"), kJobs - 1);
  auto p3 = find_job(*db_, "test.queue", "p3");
  ASSERT_TRUE(p3.ok() && *p3);
  EXPECT_EQ((*p3)->state, "pending");
  EXPECT_EQ((*p3)->run_at, kT0 + 1000);
  clock = kT0 + 1000;
  ASSERT_EQ(runner.run_once().value(), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM jobs WHERE state = 'done'"), kJobs);
  EXPECT_EQ(runner.stats().completed, kJobs);
  EXPECT_EQ(runner.stats().failed, 1);
}

TEST_P(JobsTest, PageRunnersOnSeveralNodesRunEveryJobOnce) {
  constexpr int kJobs = 150;
  std::atomic<int> handled{0};
  const std::int64_t completed =
      run_on_three_nodes(kJobs, [this, &handled](JobRunner& runner, const std::string& name) {
        runner.handle_pages(
            "test.queue",
            [this, &handled, name](const std::vector<Job>& jobs) {
              Status unit = second_node().write([&](Conn& c) -> Status {
                for (const Job& j : jobs)
                  SIKA_TRY(c.exec("INSERT INTO effects (job_key, runner) VALUES (?, ?)", {j.key, name}));
                return {};
              });
              handled += static_cast<int>(jobs.size());
              return std::vector<Status>(jobs.size(), unit);
            },
            7);
      });
  EXPECT_EQ(handled.load(), kJobs);
  EXPECT_EQ(completed, kJobs);
}

// The per-group pick behind webhook claims: quotas per group in the given order, a total limit,
// and on PostgreSQL rows held by a concurrent unit skipped rather than waited for.
TEST_P(JobsTest, PickDuePerGroupHonoursQuotasAndSkipsLockedRows) {
  ASSERT_TRUE(db_->write([](Conn& c) -> Status {
                   SIKA_TRY(
                       c.exec("CREATE TABLE picks (id BIGINT PRIMARY KEY, grp BIGINT NOT NULL, due BIGINT NOT NULL)"));
                   for (std::int64_t i = 1; i <= 30; ++i)
                     SIKA_TRY(c.exec("INSERT INTO picks (id, grp, due) VALUES (?, ?, ?)", {i, i % 3, i}));
                   return {};
                 })
                  .ok());
  auto pick_in = [](Db& db, std::vector<std::pair<std::int64_t, std::int64_t>> groups, std::int64_t limit,
                    const std::function<void()>& while_held = {}) {
    std::vector<std::int64_t> ids;
    EXPECT_TRUE(db.write([&](Conn& c) -> Status {
                    SIKA_TRY(queue_isolation(c));
                    GroupedPick p;
                    p.table = "picks";
                    p.group_column = "grp";
                    p.due = "due <= ?";
                    p.due_params = {std::int64_t{20}};
                    p.order_by = "due";
                    p.groups = groups;
                    p.limit = limit;
                    SIKA_ASSIGN_OR_RETURN(ids, pick_due_per_group(c, p));
                    if (while_held) while_held();
                    return {};
                  }).ok());
    return ids;
  };
  // Group 1 holds 1, 4, 7, ...; group 2 holds 2, 5, 8, ...; group 0 holds 3, 6, 9, ...: two of
  // group 1, five of group 2, and what the limit leaves (two) of group 0.
  auto ids = pick_in(*db_, {{1, 2}, {2, 5}, {0, 10}}, 9);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 8, 11, 14}));
  EXPECT_TRUE(pick_in(*db_, {}, 10).empty());

  if (GetParam() != "postgres") return;  // SQLite write units never overlap
  Db& other = second_node();
  std::promise<void> held, release;
  auto first = std::async(std::launch::async, [&] {
    return pick_in(*db_, {{1, 3}}, 3, [&] {
      held.set_value();
      release.get_future().wait();
    });
  });
  held.get_future().wait();
  auto second = pick_in(other, {{1, 3}}, 3);  // returns at once: the first unit's rows are skipped
  release.set_value();
  EXPECT_EQ(first.get(), (std::vector<std::int64_t>{1, 4, 7}));
  EXPECT_EQ(second, (std::vector<std::int64_t>{10, 13, 16}));
}

INSTANTIATE_TEST_SUITE_P(Backends, JobsTest, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });

TEST(Periodic, TicksWakesEarlyAndSurvivesErrors) {
  std::atomic<int> ticks{0};
  Periodic p("test loop", std::chrono::hours(1), [&]() -> Result<Pace> {
    const int n = ++ticks;
    if (n == 2) return internal_error("a failing tick is logged, not thrown");
    if (n == 3) throw std::runtime_error("nor is a throwing one");
    return Pace::idle;
  });
  p.start();
  auto wait_for = [&](int n) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (ticks.load() < n && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
    return ticks.load();
  };
  EXPECT_EQ(wait_for(1), 1);  // the first tick runs at once; the next would wait an hour
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(ticks.load(), 1);
  p.wake();
  EXPECT_EQ(wait_for(2), 2);
  p.wake();
  EXPECT_EQ(wait_for(3), 3);
  p.wake();
  EXPECT_EQ(wait_for(4), 4);
  EXPECT_EQ(p.errors(), 2u);
  EXPECT_TRUE(p.running());
  const auto t0 = std::chrono::steady_clock::now();
  p.stop();  // ends the hour-long wait at once
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_FALSE(p.running());
}

TEST(Periodic, BusyTicksRunAgainWithoutWaitingTheInterval) {
  std::atomic<int> ticks{0};
  Periodic p("busy loop", std::chrono::hours(1),
             [&]() -> Result<Pace> { return ++ticks < 5 ? Pace::busy : Pace::idle; });
  p.start();
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (ticks.load() < 5 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(ticks.load(), 5);
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(ticks.load(), 5);
  p.stop();
}

}  // namespace
}  // namespace sika::store
