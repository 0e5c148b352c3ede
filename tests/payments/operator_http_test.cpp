// What the HTTP connectors share (payments/operator_http.hpp), against a scripted operator: the
// report of every call, the token kept by the node and fetched once more after a 401, a submission
// sent again only while the answer decides nothing, and the errors of a refusal.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "payments/connector.hpp"
#include "payments/operator_http.hpp"

using namespace sika;
using namespace sika::payments;
namespace bj = boost::json;

namespace {

struct Recorder : OperatorCallSink {
  std::mutex mu;
  std::vector<OperatorCall> calls;
  void record(const OperatorCall& c) override {
    std::lock_guard lock(mu);
    calls.push_back(c);
  }
};

// Answers in order what it was given (a timeout once none is left); records what it was sent.
struct Scripted : web::HttpClient {
  std::mutex mu;
  std::deque<Result<web::ClientResponse>> answers;
  std::vector<web::ClientRequest> sent;
  Result<web::ClientResponse> send(const web::ClientRequest& req) override {
    std::lock_guard lock(mu);
    sent.push_back(req);
    if (answers.empty()) return make_error(ErrorKind::upstream_timeout, "upstream_timeout");
    auto a = answers.front();
    answers.pop_front();
    return a;
  }
};

web::ClientResponse answer(int status, std::string body = "{}") {
  return web::ClientResponse{status, {}, std::move(body), 0, ""};
}

OperatorHttpOptions options(Recorder* calls, std::int64_t* clock) {
  OperatorHttpOptions o;
  o.name = "op";
  o.base_url = "http://op.test";
  o.calls = calls;
  o.clock = [clock] { return *clock; };
  return o;
}

std::int64_t seconds_of(const bj::value& v) { return v.is_int64() ? v.as_int64() : 0; }

TEST(OperatorHttp, EveryCallIsReportedInTheConnectorsTerms) {
  Recorder rec;
  std::int64_t clock = 1000;
  Scripted op;
  OperatorHttpOptions o = options(&rec, &clock);
  o.answer_code = [](const web::ClientResponse& r) { return r.status >= 400 ? std::string("E42") : std::string(); };
  o.report_path = cut_query;
  o.connect_timeout_ms = 321;
  o.timeout_ms = 4321;
  OperatorHttp http(op, o);
  op.answers.push_back(answer(200));
  op.answers.push_back(answer(500));
  web::ClientRequest req;
  req.method = "GET";
  req.url = "http://op.test/v1/status/abc?secret=1";
  ASSERT_TRUE(http.send(req, Exchange{"status", "ref-1", "abc"}));
  ASSERT_TRUE(http.send(req, Exchange{"status", "ref-1", "abc"}));
  EXPECT_FALSE(http.send(req, Exchange{"status", "ref-1", "abc"})) << "no answer left: a timeout";
  ASSERT_EQ(rec.calls.size(), 3u);
  EXPECT_EQ(op.sent[0].connect_timeout_ms, 321);
  EXPECT_EQ(op.sent[0].timeout_ms, 4321);
  EXPECT_TRUE(op.sent[0].allow_private_addresses) << "the operator's address is configuration";
  EXPECT_EQ(rec.calls[0].connector, "op");
  EXPECT_EQ(rec.calls[0].path, "/v1/status/abc") << "never the query";
  EXPECT_EQ(rec.calls[0].operator_reference, "abc");
  EXPECT_EQ(rec.calls[0].outcome, OperatorCall::Outcome::ok);
  EXPECT_EQ(rec.calls[0].code, "");
  EXPECT_EQ(rec.calls[1].http_status, 500);
  EXPECT_EQ(rec.calls[1].code, "E42");
  EXPECT_EQ(rec.calls[1].outcome, OperatorCall::Outcome::failed);
  EXPECT_EQ(rec.calls[2].code, "upstream_timeout");
  EXPECT_EQ(rec.calls[2].outcome, OperatorCall::Outcome::timeout);
}

TEST(BearerToken, OneTokenServesTheNodeUntilNearItsExpiryAndA401FetchesItOnceMore) {
  std::int64_t clock = 1'000'000;
  Scripted op;
  OperatorHttp http(op, options(nullptr, &clock));
  int fetches = 0;
  const BearerToken::Answer how{"refused", false, seconds_of};
  BearerToken token(http, [&]() -> Result<BearerToken::Token> {
    ++fetches;
    return BearerToken::read(answer(200, R"({"access_token":"T)" + std::to_string(fetches) + R"(","expires_in":600})"),
                             clock, 300'000, how);
  });
  web::ClientRequest req;
  req.url = "http://op.test/pay";
  op.answers.push_back(answer(202));
  op.answers.push_back(answer(202));
  ASSERT_TRUE(token.send(req, {}));
  ASSERT_TRUE(token.send(req, {}));
  EXPECT_EQ(token.fetched(), 1);
  EXPECT_EQ(op.sent[1].headers.back(), (std::pair<std::string, std::string>{"Authorization", "Bearer T1"}));

  clock += 300'000;  // renewed token_margin before it expires
  op.answers.push_back(answer(202));
  ASSERT_TRUE(token.send(req, {}));
  EXPECT_EQ(token.fetched(), 2);

  // Revoked early: the 401 drops it, the call is made once more with a new one, and no more.
  op.answers.push_back(answer(401));
  op.answers.push_back(answer(401));
  auto res = token.send(req, {});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_EQ(token.fetched(), 3);
  EXPECT_EQ(op.sent.back().headers.back().second, "Bearer T3");
}

TEST(BearerToken, ConcurrentCallsFetchOneToken) {
  std::int64_t clock = 1'000'000;
  Scripted op;
  OperatorHttp http(op, options(nullptr, &clock));
  for (int i = 0; i < 16; ++i) op.answers.push_back(answer(200));
  BearerToken token(http, [&]() -> Result<BearerToken::Token> {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return BearerToken::Token{"T", clock + 60'000};
  });
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i) threads.emplace_back([&] { EXPECT_TRUE(token.send(web::ClientRequest{}, {})); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(token.fetched(), 1);
}

TEST(BearerToken, ReadsTheAnswerOfATokenRequest) {
  const BearerToken::Answer strict{"refused", false, seconds_of}, lenient{"refused", true, seconds_of};
  auto ok = BearerToken::read(answer(200, R"({"access_token":"A","expires_in":3600})"), 1000, 300'000, strict);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->value, "A");
  EXPECT_EQ(ok->expires_at, 1000 + 3'600'000 - 300'000);
  auto short_lived = BearerToken::read(answer(200, R"({"access_token":"A","expires_in":180})"), 0, 300'000, strict);
  ASSERT_TRUE(short_lived);
  EXPECT_EQ(short_lived->expires_at, 90'000) << "half its life when the margin is longer";
  for (const char* body : {R"({"expires_in":3600})", R"({"access_token":"A"})", R"({"access_token":"","expires_in":9})",
                           R"({"access_token":"A","expires_in":"3600"})", "not json"}) {
    auto bad = BearerToken::read(answer(200, body), 0, 0, strict);
    ASSERT_FALSE(bad) << body;
    EXPECT_EQ(bad.error().code, "operator_error") << body;
  }
  EXPECT_EQ(BearerToken::read(answer(401), 0, 0, strict).error().kind, ErrorKind::unauthenticated);
  EXPECT_EQ(BearerToken::read(answer(403), 0, 0, strict).error().kind, ErrorKind::unauthenticated);
  EXPECT_EQ(BearerToken::read(answer(400), 0, 0, strict).error().kind, ErrorKind::upstream_failed);
  EXPECT_EQ(BearerToken::read(answer(400), 0, 0, lenient).error().kind, ErrorKind::unauthenticated);
  auto refused = BearerToken::read(answer(503), 0, 0, lenient);
  EXPECT_EQ(refused.error().code, "operator_token");
  EXPECT_EQ(refused.error().kind, ErrorKind::upstream_failed);
  EXPECT_EQ(refused.error().details.as_object().at("operator_status").as_int64(), 503);
}

TEST(Resend, SendsAgainOnlyWhileTheAnswerDecidesNothing) {
  int calls = 0;
  // Undecided each time: every attempt is made, the last error returned.
  Status st = resend(3, 0, [&]() -> Status {
    ++calls;
    return operator_unknown_outcome(500 + calls, "");
  });
  ASSERT_FALSE(st);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(st.error().details.as_object().at("operator_status").as_int64(), 503);

  calls = 0;
  auto decided = resend(5, 0, [&]() -> Result<int> {
    if (++calls < 2) return make_error(ErrorKind::upstream_timeout, "upstream_timeout");
    return 7;
  });
  ASSERT_TRUE(decided);
  EXPECT_EQ(*decided, 7);
  EXPECT_EQ(calls, 2);

  calls = 0;
  st = resend(5, 0, [&]() -> Status {
    ++calls;
    return operator_refusal(400, "BAD");
  });
  EXPECT_EQ(calls, 1) << "a refusal is never sent again";
  EXPECT_EQ(st.error().code, "operator_refused");

  calls = 0;
  st = resend(0, 0, [&]() -> Status {
    ++calls;
    return operator_unknown_outcome(500, "");
  });
  EXPECT_EQ(calls, 1) << "at least once";
}

TEST(OperatorErrors, ARefusalSaysWhyByKindAndAnUndecidedAnswerLeavesTheOrderPending) {
  const Error unknown = operator_refusal(404, "PAYER_NOT_FOUND", true);
  EXPECT_EQ(unknown.kind, ErrorKind::not_found);
  EXPECT_EQ(unknown.code, "account_not_found");
  EXPECT_EQ(unknown.details.as_object().at("operator_code").as_string(), "PAYER_NOT_FOUND");
  EXPECT_EQ(operator_refusal(401, "").code, "operator_unauthorized");
  EXPECT_EQ(operator_refusal(403, "").code, "operator_forbidden");
  const Error refused = operator_refusal(400, "");
  EXPECT_EQ(refused.code, "operator_refused");
  EXPECT_FALSE(refused.details.as_object().contains("operator_code"));
  for (const Error& e : {unknown, refused}) EXPECT_TRUE(is_refusal(e)) << e.code;
  const Error undecided_answer = operator_unknown_outcome(502, "X");
  EXPECT_EQ(undecided_answer.kind, ErrorKind::upstream_failed);
  EXPECT_EQ(undecided_answer.code, "operator_error");
  EXPECT_FALSE(is_refusal(undecided_answer));
  EXPECT_TRUE(undecided(undecided_answer));
}

}  // namespace
