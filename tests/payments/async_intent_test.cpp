// POST /collection/intent on an I/O thread, as the server runs it where writes are asynchronous
// (answers_later): the handler hands a PROVIDER collection's write to Db::write_async and answers
// from its completion; what must block (a WALLET collection) goes to a handler thread.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "fixture.hpp"

namespace sika::payments::testing {
namespace {

class AsyncIntentTest : public PaymentsTest {
 protected:
  // What the server does for a request on an I/O thread: the reply channel (answers kept, from
  // any thread) and the handler pool (jobs kept until run_jobs, refused while the pool is full).
  struct IoThread {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<web::Response> replies;
    std::vector<std::function<void()>> jobs;
    bool pool_full = false;

    void attach(web::Request& req) {
      req.reply_to = [this](web::Response res, int) {
        std::lock_guard lock(mu);
        replies.push_back(std::move(res));
        cv.notify_all();
      };
      req.offload_to = [this](std::function<void()> job) {
        if (pool_full) return false;
        jobs.push_back(std::move(job));
        return true;
      };
    }
    // Waits until `n` answers were sent (or 5 s passed); returns how many were.
    std::size_t wait_replies(std::size_t n) {
      std::unique_lock lock(mu);
      cv.wait_for(lock, std::chrono::seconds(5), [&] { return replies.size() >= n; });
      return replies.size();
    }
    std::size_t sent() {
      std::lock_guard lock(mu);
      return replies.size();
    }
    void run_jobs() {
      auto pending = std::move(jobs);
      jobs.clear();
      for (auto& job : pending) job();
    }
  };

  Result<web::Response> intent_on_io_thread(IoThread& io, const bj::object& body) {
    web::Request req = request(principal(m1_), body);
    io.attach(req);
    return service_->create_intent(req);
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, AsyncIntentTest, ::testing::Values("sqlite", "postgres"));

// A PROVIDER collection is answered once, from its write's completion, with the record the
// blocking path gives; nothing goes to the handler pool.
TEST_P(AsyncIntentTest, AProviderIntentIsAnsweredOnceFromItsWrite) {
  IoThread io;
  const bj::object body = intent_body();
  auto now = intent_on_io_thread(io, body);
  ASSERT_TRUE(now);
  EXPECT_TRUE(now->deferred);
  ASSERT_EQ(io.wait_replies(1), 1u);
  EXPECT_TRUE(io.jobs.empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(io.sent(), 1u);  // never a second answer
  const web::Response& sent = io.replies[0];
  EXPECT_EQ(sent.status, 200);
  auto env = parse(sent);
  EXPECT_EQ(env.at("message"), "submitted");
  EXPECT_EQ(env.at("locale"), "en");
  EXPECT_EQ(env.at("data").at("status"), "INITIATED");
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions"), 1);
  // The same body on the blocking path is the same transaction.
  auto [status, again] = call(&Service::create_intent, principal(m1_), body);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(again.at("data").at("transaction_reference"), env.at("data").at("transaction_reference"));
}

// Refusals are envelopes: a body that cannot be read is the handler's error (the router answers
// it, nothing is sent later); a field refused by the plan and an idempotency conflict are sent
// through the reply, once each, as the blocking path answers them.
TEST_P(AsyncIntentTest, RefusalsAreAnsweredAsEnvelopes) {
  IoThread io;
  web::Request bad = request(principal(m1_), bj::object{});
  bad.body = "{not json";
  io.attach(bad);
  auto refused = service_->create_intent(bad);
  ASSERT_FALSE(refused);
  EXPECT_EQ(web::respond(bad, std::move(refused)).status, 400);

  bj::object too_small = intent_body();
  too_small["amount"] = 99;
  auto later = intent_on_io_thread(io, too_small);
  ASSERT_TRUE(later);
  EXPECT_TRUE(later->deferred);
  ASSERT_EQ(io.wait_replies(1), 1u);
  EXPECT_EQ(io.replies[0].status, 400);
  auto env = parse(io.replies[0]);
  EXPECT_EQ(env.at("success"), false);
  EXPECT_EQ(env.at("message"), "empty_data");
  EXPECT_TRUE(env.at("error").at("details").as_object().contains("amount"));
  auto [status, direct] = call(&Service::create_intent, principal(m1_), too_small);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(direct.at("error"), env.at("error"));

  bj::object first = intent_body();
  ASSERT_TRUE(intent_on_io_thread(io, first));
  ASSERT_EQ(io.wait_replies(2), 2u);
  EXPECT_EQ(io.replies[1].status, 200);
  bj::object changed = first;
  changed["amount"] = 20'000;
  ASSERT_TRUE(intent_on_io_thread(io, changed));
  ASSERT_EQ(io.wait_replies(3), 3u);
  EXPECT_EQ(io.replies[2].status, 409);
  EXPECT_EQ(parse(io.replies[2]).at("message"), "conflict");
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions"), 1);
}

// A WALLET collection must send its code after the commit: it goes to the handler pool and is
// answered there once; a full pool answers 503 now with nothing created; a failure that throws
// there is answered 500, once.
TEST_P(AsyncIntentTest, AWalletIntentGoesToTheHandlerPool) {
  ASSERT_TRUE(service_->fund_wallet("sandbox", "237690000020", "XAF", 30'000, "test top-up").ok());
  auto wallet_body = [] {
    auto body = intent_body("237690000020", 2000, "SIKA_WALLET_CMR");
    body["channel"] = "WALLET";
    return body;
  };

  IoThread io;
  io.pool_full = true;
  auto busy = intent_on_io_thread(io, wallet_body());
  ASSERT_TRUE(busy);
  EXPECT_FALSE(busy->deferred);
  EXPECT_EQ(busy->status, 503);
  EXPECT_EQ(busy->get("Retry-After"), "1");
  EXPECT_EQ(parse(*busy).at("message"), "service_unavailable");
  EXPECT_TRUE(io.replies.empty());
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions"), 0);

  io.pool_full = false;
  auto queued = intent_on_io_thread(io, wallet_body());
  ASSERT_TRUE(queued);
  EXPECT_TRUE(queued->deferred);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions"), 0);  // not before the handler thread
  ASSERT_EQ(io.jobs.size(), 1u);
  io.run_jobs();
  ASSERT_EQ(io.wait_replies(1), 1u);
  EXPECT_EQ(io.replies[0].status, 200);
  EXPECT_EQ(parse(io.replies[0]).at("data").at("channel"), "WALLET");
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions"), 1);

  auto throwing = intent_on_io_thread(io, wallet_body());
  ASSERT_TRUE(throwing);
  EXPECT_TRUE(throwing->deferred);
  clock_throws_ = true;
  io.run_jobs();
  clock_throws_ = false;
  ASSERT_EQ(io.wait_replies(2), 2u);
  EXPECT_EQ(io.replies[1].status, 500);
  EXPECT_EQ(parse(io.replies[1]).at("message"), "internal_error");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(io.sent(), 2u);
}

}  // namespace
}  // namespace sika::payments::testing
