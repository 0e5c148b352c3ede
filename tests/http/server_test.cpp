#include "http/server.hpp"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include <unistd.h>

#include "http/access_log.hpp"
#include "raw_client.hpp"
#include "web/envelope.hpp"

namespace sika::http {
namespace {

using test::RawClient;
using test::RawResponse;
using test::request;
using Clock = std::chrono::steady_clock;
namespace bj = boost::json;

// A one-shot gate handlers can block on.
class Gate {
 public:
  void open() {
    {
      std::lock_guard l(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock l(mu_);
    cv_.wait(l, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

std::int64_t elapsed_ms(Clock::time_point since) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count();
}

std::string str(const bj::value& v) { return v.is_string() ? std::string(v.as_string()) : bj::serialize(v); }

bj::object envelope(const RawResponse& r) { return bj::parse(r.body).as_object(); }

// Echoes what the server put in web::Request, as JSON.
web::Response echo(web::Request& req) {
  bj::object o;
  o["method"] = req.method;
  o["target"] = req.target;
  o["path"] = req.path;
  o["query_string"] = req.query_string;
  bj::object q;
  for (auto& [k, v] : req.query) q[k] = v;
  o["query"] = q;
  bj::object h;
  for (auto& [k, v] : req.headers) h[k] = v;
  o["headers"] = h;
  o["body"] = req.body;
  o["remote_ip"] = req.remote_ip;
  o["request_id"] = req.request_id;
  o["locale"] = i18n::name(req.locale);
  return web::Response::json(200, bj::serialize(o));
}

class ServerTest : public ::testing::Test {
 protected:
  void start(ServerOptions opt, RequestHandler h) {
    opt.host = "127.0.0.1";
    opt.port = 0;
    if (!opt.access_log)
      opt.access_log = [this](const AccessLogEntry& e) {
        std::lock_guard l(log_mu_);
        log_.push_back(e);
      };
    server_ = std::make_unique<Server>(std::move(opt), std::move(h));
    auto st = server_->start();
    ASSERT_TRUE(st.ok());
    ASSERT_NE(server_->port(), 0);
  }
  void TearDown() override {
    if (server_) {
      server_->stop();
      server_->wait();
    }
  }
  std::vector<AccessLogEntry> logs() {
    std::lock_guard l(log_mu_);
    return log_;
  }
  unsigned short port() const { return server_->port(); }

  std::unique_ptr<Server> server_;
  std::mutex log_mu_;
  std::vector<AccessLogEntry> log_;
};

TEST_F(ServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  start({}, echo);
  RawClient c(port());
  ASSERT_TRUE(c.connected());
  for (int i = 0; i < 3; ++i) {
    std::string target = "/items/caf%C3%A9?n=" + std::to_string(i) + "&name=a%20b+c";
    ASSERT_TRUE(c.send(request("get", target, "Accept-Language: en-GB,fr;q=0.5\r\nX-Custom-Header: V\r\n")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << "request " << i;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->header("connection"), "");  // HTTP/1.1 default keep-alive
    EXPECT_FALSE(r->header("date").empty());
    auto o = envelope(*r);
    EXPECT_EQ(o["method"], "GET");
    EXPECT_EQ(o["path"], "/items/café");
    EXPECT_EQ(str(o["target"]), target);
    EXPECT_EQ(str(o["query_string"]), "n=" + std::to_string(i) + "&name=a%20b+c");
    EXPECT_EQ(str(o["query"].as_object()["n"]), std::to_string(i));
    EXPECT_EQ(o["query"].as_object()["name"], "a b c");
    EXPECT_EQ(o["headers"].as_object()["x-custom-header"], "V");
    EXPECT_EQ(o["remote_ip"], "127.0.0.1");
    EXPECT_EQ(o["locale"], "en");
  }
  EXPECT_EQ(server_->stats().requests, 3u);
  EXPECT_EQ(server_->stats().connections_open, 1u);
}

TEST_F(ServerTest, PipelinedRequestsAreAnsweredInOrder) {
  // The first request is the slowest: a server answering out of order would be caught.
  start({}, [](web::Request& req) {
    if (req.path == "/1") std::this_thread::sleep_for(std::chrono::milliseconds(150));
    if (req.path == "/2") std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return web::Response::text(200, "answer" + req.path + ":" + req.body);
  });
  RawClient c(port());
  ASSERT_TRUE(c.send(request("GET", "/1") + request("POST", "/2", "", "body-two") + request("GET", "/3")));
  for (int i = 1; i <= 3; ++i) {
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "answer/" + std::to_string(i) + ":" + (i == 2 ? "body-two" : ""));
  }
}

TEST_F(ServerTest, BadRequestAfterPipelinedValidOneKeepsTheEarlierResponse) {
  start({}, [](web::Request& req) { return web::Response::text(200, "ok" + req.path); });
  RawClient c(port());
  ASSERT_TRUE(c.send(request("GET", "/first") + "THIS IS NOT HTTP\r\n\r\n"));
  auto first = c.read_response();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(first->body, "ok/first");
  auto second = c.read_response();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 400);
  EXPECT_EQ(second->header("connection"), "close");
  EXPECT_EQ(envelope(*second)["message"], "bad_request");
  EXPECT_TRUE(c.wait_closed(3000));
}

TEST_F(ServerTest, MalformedRequestGets400EnvelopeThenClose) {
  start({}, echo);
  RawClient c(port());
  ASSERT_TRUE(c.send("GET / HTTP/1.1\r\nHost: x\r\nBad Header Without Colon\r\n\r\n"));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  auto o = envelope(*r);
  EXPECT_EQ(o["success"], false);
  EXPECT_EQ(o["code"], 400);
  EXPECT_EQ(o["message"], "bad_request");
  EXPECT_EQ(o["locale"], "fr");
  EXPECT_FALSE(r->header("x-request-id").empty());
  EXPECT_TRUE(c.wait_closed(3000));
}

TEST_F(ServerTest, AmbiguousFramingIsRefused) {
  // Request smuggling vectors: both framings, or two different lengths.
  std::atomic<int> calls{0};
  start({}, [&](web::Request&) {
    ++calls;
    return web::Response::text(200, "x");
  });
  for (std::string raw :
       {std::string("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
        std::string("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"),
        std::string("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef")}) {
    RawClient c(port());
    ASSERT_TRUE(c.send(raw));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_TRUE(c.wait_closed(3000));
  }
  EXPECT_EQ(calls.load(), 0);
}

TEST_F(ServerTest, TransferEncodingNotEndingInChunkedIs400AndCloses) {
  // A request smuggled behind a body without reliable length must never be answered.
  std::atomic<int> calls{0};
  start({}, [&](web::Request&) {
    ++calls;
    return web::Response::text(200, "x");
  });
  const std::string smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
  for (std::string te : {"identity", "gzip", "chunked, identity", "gzip, chunked", "chunked\r\nTransfer-Encoding: gzip",
                         "chunked, chunked"}) {
    RawClient c(port());
    ASSERT_TRUE(c.send("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + te + "\r\n\r\n" + smuggled));
    auto r = c.read_response();
    ASSERT_TRUE(r) << te;
    EXPECT_EQ(r->status, 400) << te;
    EXPECT_EQ(r->header("connection"), "close") << te;
    EXPECT_NE(r->body.find("ransfer-"), std::string::npos) << te << ": " << r->body;
    EXPECT_TRUE(c.wait_closed(3000)) << te;
    EXPECT_FALSE(c.read_response(false, 200)) << te << ": the smuggled request was answered";
  }
  EXPECT_EQ(calls.load(), 0);
  // A plain chunked body is still fine.
  RawClient c(port());
  ASSERT_TRUE(c.send("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(calls.load(), 1);
}

TEST_F(ServerTest, ClientStillSendingARefusedBodyReadsThe413) {
  // The client writes its whole body before reading (as curl without Expect, Python and browsers
  // do); the body exceeds what socket buffers absorb, so without a lingering drain the server's
  // close would reset the connection and destroy the 413 before the client reads it.
  ServerOptions opt;
  opt.max_body_bytes = 1024;
  start(opt, [](web::Request&) { return web::Response::text(200, "x"); });
  RawClient c(port());
  const std::size_t body = 12u << 20;
  ASSERT_TRUE(c.send("POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body) + "\r\n\r\n"));
  ASSERT_TRUE(c.send(std::string(body, 'a'))) << "the server reset the connection while the body was sent";
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(envelope(*r)["message"], "payload_too_large");
  EXPECT_TRUE(c.wait_closed(7000));
}

TEST_F(ServerTest, MissingHostOnHttp11Is400) {
  start({}, echo);
  RawClient c(port());
  ASSERT_TRUE(c.send("GET / HTTP/1.1\r\n\r\n"));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_TRUE(envelope(*r)["error"].as_object()["details"].as_object().contains("host"));
}

TEST_F(ServerTest, BodyOverLimitIs413WithEnvelope) {
  ServerOptions opt;
  opt.max_body_bytes = 1024;
  std::atomic<int> calls{0};
  start(opt, [&](web::Request&) {
    ++calls;
    return web::Response::text(200, "x");
  });
  {
    // Declared length over the limit: refused before reading the body.
    RawClient c(port());
    ASSERT_TRUE(
        c.send("POST /upload HTTP/1.1\r\nHost: t\r\nAccept-Language: en\r\nContent-Length: 2000000\r\n\r\nabc"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
    auto o = envelope(*r);
    EXPECT_EQ(o["message"], "payload_too_large");
    EXPECT_EQ(o["code"], 413);
    EXPECT_EQ(o["locale"], "en");
    EXPECT_EQ(r->header("connection"), "close");
    EXPECT_TRUE(c.wait_closed(3000));
  }
  {
    // Chunked body growing past the limit.
    RawClient c(port());
    std::string chunk(800, 'a');
    ASSERT_TRUE(
        c.send("POST /upload HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
               "320\r\n" +
               chunk + "\r\n320\r\n" + chunk + "\r\n0\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
    EXPECT_EQ(envelope(*r)["message"], "payload_too_large");
  }
  {
    // At the limit: accepted.
    RawClient c(port());
    ASSERT_TRUE(c.send(request("POST", "/upload", "", std::string(1024, 'b'))));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
  EXPECT_EQ(calls.load(), 1);
}

TEST_F(ServerTest, HugeHeadersAre431) {
  ServerOptions opt;
  opt.max_header_bytes = 4096;
  start(opt, echo);
  RawClient c(port());
  ASSERT_TRUE(c.send(request("GET", "/", "X-Big: " + std::string(8000, 'h') + "\r\n")));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 431);
  EXPECT_EQ(envelope(*r)["message"], "header_too_large");
  EXPECT_TRUE(c.wait_closed(3000));
}

TEST_F(ServerTest, SlowlorisIsDisconnectedAfterHeaderTimeout) {
  ServerOptions opt;
  opt.header_timeout_ms = 300;
  start(opt, echo);
  {
    RawClient c(port());
    auto t0 = Clock::now();
    ASSERT_TRUE(c.send("GET / HTTP/1.1\r\nHost: x\r\n"));
    EXPECT_TRUE(c.wait_closed(3000));
    EXPECT_GE(elapsed_ms(t0), 250);
    EXPECT_LT(elapsed_ms(t0), 2000);
  }
  {
    // Dripping a byte at a time does not reset the clock.
    RawClient c(port());
    auto t0 = Clock::now();
    bool closed = false;
    for (int i = 0; i < 40 && !closed; ++i) {
      c.send("X");
      closed = c.wait_closed(50);
    }
    EXPECT_TRUE(closed || c.wait_closed(1000));
    EXPECT_LT(elapsed_ms(t0), 1500);
  }
  {
    // A connection that never sends anything is bounded too.
    RawClient c(port());
    auto t0 = Clock::now();
    EXPECT_TRUE(c.wait_closed(3000));
    EXPECT_LT(elapsed_ms(t0), 2000);
  }
}

TEST_F(ServerTest, IdleKeepAliveConnectionIsClosed) {
  ServerOptions opt;
  opt.idle_timeout_ms = 300;
  start(opt, echo);
  RawClient c(port());
  ASSERT_TRUE(c.send(request("GET", "/")));
  ASSERT_TRUE(c.read_response());
  auto t0 = Clock::now();
  EXPECT_TRUE(c.wait_closed(3000));
  EXPECT_GE(elapsed_ms(t0), 250);
}

TEST_F(ServerTest, SlowBodyIsDisconnectedAfterBodyTimeout) {
  ServerOptions opt;
  opt.body_timeout_ms = 300;
  start(opt, echo);
  RawClient c(port());
  ASSERT_TRUE(c.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly-a-part"));
  auto t0 = Clock::now();
  EXPECT_TRUE(c.wait_closed(3000));
  EXPECT_LT(elapsed_ms(t0), 2000);
}

TEST_F(ServerTest, RequestIdIsEchoedOrGenerated) {
  start({}, echo);
  RawClient c(port());
  ASSERT_TRUE(c.send(request("GET", "/", "X-Request-Id: client-id-123\r\n")));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->header("x-request-id"), "client-id-123");
  EXPECT_EQ(envelope(*r)["request_id"], "client-id-123");

  ASSERT_TRUE(c.send(request("GET", "/")));
  r = c.read_response();
  ASSERT_TRUE(r);
  std::string generated = r->header("x-request-id");
  EXPECT_EQ(generated.size(), 36u);
  EXPECT_EQ(str(envelope(*r)["request_id"]), generated);

  // Invalid ids (too long, or with a space) are replaced.
  for (std::string bad : {std::string(129, 'a'), std::string("has space")}) {
    ASSERT_TRUE(c.send(request("GET", "/", "X-Request-Id: " + bad + "\r\n")));
    r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_NE(r->header("x-request-id"), bad);
    EXPECT_EQ(r->header("x-request-id").size(), 36u);
  }
  EXPECT_TRUE(valid_request_id(std::string(128, '~')));
  EXPECT_FALSE(valid_request_id(""));
}

TEST_F(ServerTest, HeadSendsGetHeadersWithoutBody) {
  start({}, [](web::Request& req) { return web::Response::text(200, req.method == "HEAD" ? "0123456789" : "abc"); });
  RawClient c(port());
  // HEAD then GET in one write: a body after the HEAD response would corrupt the second one.
  ASSERT_TRUE(c.send(request("HEAD", "/x") + request("GET", "/y")));
  auto head = c.read_response(/*head=*/true);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->header("content-length"), "10");
  auto get = c.read_response();
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status_line, "HTTP/1.1 200 OK");
  EXPECT_EQ(get->body, "abc");
}

TEST_F(ServerTest, BadPercentEncodingIs400Envelope) {
  std::atomic<int> calls{0};
  start({}, [&](web::Request&) {
    ++calls;
    return web::Response::text(200, "x");
  });
  for (std::string target : {"/a%zz", "/a%4", "/a%00b", "/ok?x=%zz"}) {
    RawClient c(port());
    ASSERT_TRUE(c.send(request("GET", target, "Accept-Language: en\r\n")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << target;
    EXPECT_EQ(r->status, 400) << target;
    auto o = envelope(*r);
    EXPECT_EQ(o["message"], "bad_request");
    EXPECT_EQ(o["locale"], "en");
    EXPECT_TRUE(o["error"].as_object()["details"].is_object());
  }
  EXPECT_EQ(calls.load(), 0);
}

TEST_F(ServerTest, HandlerExceptionIs500AndServerKeepsServing) {
  start({}, [](web::Request& req) -> web::Response {
    if (req.path == "/boom") throw std::runtime_error("boom");
    if (req.path == "/int") throw 42;
    return web::Response::text(200, "fine");
  });
  for (std::string path : {"/boom", "/int"}) {
    RawClient c(port());
    ASSERT_TRUE(c.send(request("GET", path)));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 500);
    auto o = envelope(*r);
    EXPECT_EQ(o["message"], "internal_error");
    EXPECT_EQ(o["success"], false);
    // The connection stays usable.
    ASSERT_TRUE(c.send(request("GET", "/ok")));
    r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "fine");
  }
}

TEST_F(ServerTest, FullHandlerPoolAnswers503) {
  ServerOptions opt;
  opt.handler_threads = 1;
  opt.handler_queue = 1;
  Gate gate;
  std::atomic<int> entered{0};
  start(opt, [&](web::Request&) {
    ++entered;
    gate.wait();
    return web::Response::text(200, "done");
  });
  RawClient running(port()), queued(port()), rejected(port());
  ASSERT_TRUE(running.send(request("GET", "/slow")));
  for (int i = 0; i < 200 && entered.load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(entered.load(), 1);
  ASSERT_TRUE(queued.send(request("GET", "/slow")));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(rejected.send(request("GET", "/slow", "Accept-Language: en\r\n")));
  auto r = rejected.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(envelope(*r)["message"], "service_unavailable");
  EXPECT_EQ(r->header("retry-after"), "1");
  EXPECT_EQ(server_->stats().rejected_busy, 1u);
  gate.open();
  auto a = running.read_response();
  auto b = queued.read_response();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->status, 200);
  EXPECT_EQ(b->status, 200);
}

TEST_F(ServerTest, HandlersDoNotBlockTheEventLoop) {
  ServerOptions opt;
  opt.io_threads = 1;
  opt.handler_threads = 4;
  Gate gate;
  start(opt, [&](web::Request& req) {
    if (req.path == "/slow") gate.wait();
    return web::Response::text(200, "ok");
  });
  RawClient slow(port());
  ASSERT_TRUE(slow.send(request("GET", "/slow")));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  RawClient fast(port());
  ASSERT_TRUE(fast.send(request("GET", "/fast")));
  auto r = fast.read_response(false, 2000);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  gate.open();
  EXPECT_TRUE(slow.read_response());
}

// A handler answering later from another thread (as a write's completion does), run inline on
// the I/O thread for /inline and on the pool otherwise; /blocking moves itself to the pool.
class LaterAnswers {
 public:
  ~LaterAnswers() {
    for (auto& t : threads_) t.join();
  }
  web::Response handle(web::Request& req) {
    if (req.path == "/blocking")
      return web::run_blocking(req, [this](web::Request& r) {
        blocking_on_pool_ = r.offload_to == nullptr;
        return web::Response::text(200, "blocking " + r.body);
      });
    web::Reply reply = web::answer_later(req);
    if (!reply) return web::Response::text(500, "no reply channel");
    std::lock_guard l(mu_);
    threads_.emplace_back([reply = std::move(reply), body = req.body, this] {
      gate_.wait();
      reply(web::Response::text(201, "later " + body));
    });
    return web::Response::later();
  }
  void release() { gate_.open(); }
  bool blocking_on_pool() const { return blocking_on_pool_; }

 private:
  Gate gate_;
  std::mutex mu_;
  std::vector<std::thread> threads_;  // guarded by mu_
  std::atomic<bool> blocking_on_pool_{false};
};

TEST_F(ServerTest, HandlersAnswerLaterFromAnotherThread) {
  LaterAnswers later;
  ServerOptions opt;
  opt.io_threads = 1;
  opt.run_inline = [](const web::Request& req) { return req.path == "/inline" || req.path == "/blocking"; };
  start(opt, [&](web::Request& req) { return later.handle(req); });
  RawClient inline_client(port()), pooled(port()), blocking(port()), other(port());
  ASSERT_TRUE(inline_client.send(request("POST", "/inline", "", "a")));
  ASSERT_TRUE(pooled.send(request("POST", "/pooled", "", "b")));
  // Pending answers hold neither the I/O thread nor a pool thread: others are served meanwhile.
  ASSERT_TRUE(blocking.send(request("POST", "/blocking", "", "c")));
  auto c = blocking.read_response(false, 2000);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status, 200);
  EXPECT_EQ(c->body, "blocking c");
  EXPECT_TRUE(later.blocking_on_pool());
  EXPECT_FALSE(inline_client.read_response(false, 100));
  later.release();
  auto a = inline_client.read_response(false, 2000);
  auto b = pooled.read_response(false, 2000);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->status, 201);
  EXPECT_EQ(a->body, "later a");
  EXPECT_EQ(b->status, 201);
  EXPECT_EQ(b->body, "later b");
  // The connection goes on after a later answer.
  ASSERT_TRUE(inline_client.send(request("POST", "/blocking", "", "d")));
  auto d = inline_client.read_response(false, 2000);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->body, "blocking d");
}

TEST_F(ServerTest, StopWaitsForAPendingLaterAnswer) {
  LaterAnswers later;
  start({}, [&](web::Request& req) { return later.handle(req); });
  RawClient c(port());
  ASSERT_TRUE(c.send(request("POST", "/pending", "", "x")));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  server_->stop();
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    later.release();
  });
  auto r = c.read_response(false, 3000);
  release.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->body, "later x");
  server_->wait();
}

TEST_F(ServerTest, GracefulStopDeliversInFlightResponse) {
  Gate entered;
  start({}, [&](web::Request& req) {
    if (req.path == "/slow") {
      entered.open();
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
    }
    return web::Response::text(200, "finished" + req.path);
  });
  RawClient idle(port());
  ASSERT_TRUE(idle.send(request("GET", "/warm")));
  ASSERT_TRUE(idle.read_response());

  RawClient busy(port());
  ASSERT_TRUE(busy.send(request("GET", "/slow")));
  entered.wait();
  auto t0 = Clock::now();
  server_->stop();
  // The idle keep-alive connection is closed at once.
  EXPECT_TRUE(idle.wait_closed(1000));
  EXPECT_LT(elapsed_ms(t0), 300);
  // The in-flight one gets its answer, with Connection: close.
  auto r = busy.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "finished/slow");
  EXPECT_EQ(r->header("connection"), "close");
  server_->wait();
  EXPECT_LT(elapsed_ms(t0), 5000);
  // No longer accepting.
  RawClient late(port());
  EXPECT_FALSE(late.connected() && late.send(request("GET", "/")) && late.read_response(false, 500));
}

TEST_F(ServerTest, StopForceClosesAfterGracePeriod) {
  ServerOptions opt;
  opt.shutdown_grace_ms = 200;
  opt.header_timeout_ms = 30000;
  start(opt, echo);
  RawClient half(port());
  ASSERT_TRUE(half.send("GET / HTTP/1.1\r\nHost:"));  // never completes
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto t0 = Clock::now();
  server_->stop();
  server_->wait();
  EXPECT_LT(elapsed_ms(t0), 2000);
  EXPECT_TRUE(half.wait_closed(1000));
}

TEST_F(ServerTest, AccessLogHasOneEntryPerRequestWithoutQueryString) {
  start({}, echo);
  RawClient c(port());
  ASSERT_TRUE(c.send(request("GET", "/pay/abc?secret=hunter2", "User-Agent: tester/1\r\nX-Request-Id: rid-1\r\n")));
  ASSERT_TRUE(c.read_response());
  ASSERT_TRUE(c.send(request("GET", "/bad%zz")));
  ASSERT_TRUE(c.read_response());
  c.wait_closed(2000);
  auto entries = logs();
  ASSERT_EQ(entries.size(), 2u);
  const auto& e = entries[0];
  EXPECT_EQ(e.request_id, "rid-1");
  EXPECT_EQ(e.method, "GET");
  EXPECT_EQ(e.path, "/pay/abc");
  EXPECT_EQ(e.status, 200);
  EXPECT_EQ(e.remote, "127.0.0.1");
  EXPECT_EQ(e.user_agent, "tester/1");
  EXPECT_GT(e.bytes, 0u);
  EXPECT_GE(e.duration_us, 0);
  std::string line = e.json();
  EXPECT_EQ(line.find("hunter2"), std::string::npos);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto o = bj::parse(line).as_object();
  for (auto key : {"time", "request_id", "remote", "method", "path", "status", "bytes", "duration_us", "user_agent"})
    EXPECT_TRUE(o.contains(key)) << key;
  EXPECT_EQ(entries[1].status, 400);
}

TEST(AccessLog, WritesJsonLinesOffTheCallerAndDropsWhenFull) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    AccessLog log(f, 1000);
    for (int i = 0; i < 10; ++i) {
      AccessLogEntry e;
      e.request_id = "r" + std::to_string(i);
      e.path = "/p";
      e.status = 200;
      EXPECT_TRUE(log.post(std::move(e)));
    }
    log.flush();
    EXPECT_EQ(log.written(), 10u);
    EXPECT_EQ(log.dropped(), 0u);
  }
  std::rewind(f);
  char line[512];
  int lines = 0;
  while (std::fgets(line, sizeof line, f)) {
    auto o = bj::parse(line).as_object();
    EXPECT_EQ(o["request_id"].as_string(), "r" + std::to_string(lines));
    ++lines;
  }
  EXPECT_EQ(lines, 10);
  std::fclose(f);

  // A sink that never drains: post() neither blocks nor grows past the capacity.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::FILE* pipe_out = ::fdopen(fds[1], "w");
  {
    AccessLog log(pipe_out, 4);
    AccessLogEntry big;
    big.user_agent = std::string(200000, 'u');  // larger than a pipe buffer: the writer blocks on it
    log.post(AccessLogEntry(big));
    auto start = Clock::now();
    int accepted = 0;
    for (int i = 0; i < 1000; ++i) accepted += log.post(AccessLogEntry(big)) ? 1 : 0;
    EXPECT_LT(elapsed_ms(start), 2000);
    EXPECT_LE(accepted, 8);  // at most one batch taken by the writer plus a full queue
    EXPECT_GE(log.dropped(), 992u);
    // Unblock the writer so the destructor can finish.
    std::thread reader([fd = fds[0]] {
      char buf[65536];
      while (::read(fd, buf, sizeof buf) > 0) {
      }
    });
    reader.detach();
  }
  std::fclose(pipe_out);
}

TEST_F(ServerTest, AccessLogEntryNamesTheMatchedRoute) {
  start({}, [](web::Request& req) {
    if (req.path == "/routed") req.route_id = 7;
    return web::Response::text(200, "x");
  });
  RawClient c(port());
  ASSERT_TRUE(c.send(request("GET", "/routed")));
  ASSERT_TRUE(c.read_response());
  ASSERT_TRUE(c.send(request("GET", "/other")));
  ASSERT_TRUE(c.read_response());
  for (int i = 0; i < 100 && logs().size() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto l = logs();
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].route_id, 7);
  EXPECT_EQ(l[1].route_id, -1);
}

TEST_F(ServerTest, Expect100ContinueIsHonoured) {
  start({}, [](web::Request& req) { return web::Response::text(200, "got:" + req.body); });
  RawClient c(port());
  ASSERT_TRUE(c.send("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"));
  auto cont = c.read_response();
  ASSERT_TRUE(cont);
  EXPECT_EQ(cont->status, 100);
  ASSERT_TRUE(c.send("hello"));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "got:hello");
}

TEST_F(ServerTest, UnsafeResponseHeadersAreDropped) {
  start({}, [](web::Request&) {
    auto r = web::Response::text(200, "x");
    r.set("X-Injected", "a\r\nSet-Cookie: evil=1");
    r.set("X-Fine", "yes");
    r.set("Content-Length", "999");
    return r;
  });
  RawClient c(port());
  ASSERT_TRUE(c.send(request("GET", "/")));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->header("x-fine"), "yes");
  EXPECT_EQ(r->header("x-injected"), "");
  EXPECT_EQ(r->header("set-cookie"), "");
  EXPECT_EQ(r->header("content-length"), "1");
}

TEST_F(ServerTest, Http10ClientIsClosedUnlessKeepAlive) {
  start({}, echo);
  RawClient c(port());
  ASSERT_TRUE(c.send("GET / HTTP/1.0\r\n\r\n"));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(c.wait_closed(3000));
}

// A body of `pieces` pieces "piece0", "piece1", ..., then, when `fail_after` is set, an error.
web::Response streamed(int pieces, std::optional<int> fail_after = std::nullopt) {
  return web::Response::streamed(200, "text/csv",
                                 [n = 0, pieces, fail_after](std::string& out) mutable -> Result<bool> {
                                   if (fail_after && n == *fail_after) return unavailable("database gone");
                                   out += "piece" + std::to_string(n++);
                                   return n < pieces;
                                 });
}

// The body of a chunked message starting at `at` in `raw` (the chunks' data joined), or nullopt
// when the last chunk never came; `at` is left after it.
std::optional<std::string> dechunk(const std::string& raw, std::size_t& at) {
  std::string body;
  for (;;) {
    std::size_t eol = raw.find("\r\n", at);
    if (eol == std::string::npos) return std::nullopt;
    std::size_t size = std::stoul(raw.substr(at, eol - at), nullptr, 16);
    at = eol + 2;
    if (size == 0) {
      if (raw.compare(at, 2, "\r\n") != 0) return std::nullopt;
      at += 2;
      return body;
    }
    if (raw.size() < at + size + 2) return std::nullopt;
    body += raw.substr(at, size);
    at += size + 2;
  }
}

TEST_F(ServerTest, StreamedBodyIsSentChunkedAndTheConnectionServesTheNextRequest) {
  start({}, [](web::Request& req) { return req.path == "/s" ? streamed(3) : web::Response::text(200, "after"); });
  RawClient c(port());
  ASSERT_TRUE(c.send(request("GET", "/s") + request("GET", "/t", "Connection: close\r\n")));
  std::string raw = c.read_until_close(5000);
  std::size_t head_end = raw.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos) << raw;
  std::string head = raw.substr(0, head_end);
  EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
  EXPECT_NE(head.find("Transfer-Encoding: chunked"), std::string::npos) << head;
  EXPECT_EQ(head.find("Content-Length"), std::string::npos) << head;
  EXPECT_NE(head.find("Content-Type: text/csv"), std::string::npos) << head;
  std::size_t at = head_end + 4;
  EXPECT_EQ(dechunk(raw, at), std::optional<std::string>("piece0piece1piece2"));
  EXPECT_EQ(raw.compare(at, 12, "HTTP/1.1 200"), 0) << raw.substr(at);
  EXPECT_TRUE(raw.ends_with("after")) << raw;
}

TEST_F(ServerTest, StreamedBodyErrorCutsTheConnectionBeforeTheLastChunk) {
  start({}, [](web::Request&) { return streamed(5, /*fail_after=*/2); });
  RawClient c(port());
  ASSERT_TRUE(c.send(request("GET", "/s")));
  std::string raw = c.read_until_close(5000);
  std::size_t head_end = raw.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos) << raw;
  EXPECT_EQ(raw.rfind("HTTP/1.1 200", 0), 0u) << raw;
  std::size_t at = head_end + 4;
  EXPECT_FALSE(dechunk(raw, at).has_value()) << "an incomplete body must not look whole: " << raw;
  EXPECT_NE(raw.find("piece1"), std::string::npos) << raw;
  EXPECT_EQ(raw.find("piece2"), std::string::npos) << raw;
}

TEST_F(ServerTest, StreamedBodyToHttp10AndHeadIsAnOrdinaryAnswer) {
  start({}, [](web::Request&) { return streamed(3); });
  {
    RawClient c(port());
    ASSERT_TRUE(c.send("GET /s HTTP/1.0\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->header("content-length"), "18");
    EXPECT_EQ(r->header("transfer-encoding"), "");
    EXPECT_EQ(r->body, "piece0piece1piece2");
  }
  RawClient c(port());
  ASSERT_TRUE(c.send(request("HEAD", "/s") + request("GET", "/s", "Connection: close\r\n")));
  auto head = c.read_response(/*head=*/true);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  std::string raw = c.read_until_close(5000);
  EXPECT_EQ(raw.rfind("HTTP/1.1 200", 0), 0u) << "no body after the HEAD answer: " << raw;
}

TEST_F(ServerTest, StartFailsCleanlyWhenPortIsTaken) {
  start({}, echo);
  ServerOptions opt;
  opt.host = "127.0.0.1";
  opt.port = port();
  Server second(opt, echo);
  auto st = second.start();
  EXPECT_FALSE(st.ok());
}

}  // namespace
}  // namespace sika::http
