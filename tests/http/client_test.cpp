#include "http/client.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <boost/json/serialize.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include "http/server.hpp"
#include "raw_client.hpp"

namespace sika::http {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t elapsed_ms(Clock::time_point since) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count();
}

std::string header(const web::Fields& f, std::string_view name) {
  for (const auto& [k, v] : f)
    if (k == name) return v;
  return {};
}

// A local upstream made of our own server; every request is counted.
class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions opt;
    opt.host = "127.0.0.1";
    opt.port = 0;
    opt.handler_threads = 16;
    server_ = std::make_unique<Server>(opt, [this](web::Request& req) { return handle(req); });
    ASSERT_TRUE(server_->start().ok());
    base_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }
  void TearDown() override {
    server_->stop();
    server_->wait();
  }

  web::Response handle(web::Request& req) {
    ++hits_;
    if (req.path == "/echo") {
      auto r = web::Response::text(201, req.method + " " + req.target + " " + req.body);
      r.set("X-Seen-Header", std::string(req.header("x-test")));
      r.set("X-Seen-Agent", std::string(req.header("user-agent")));
      return r;
    }
    if (req.path == "/slow") {
      std::this_thread::sleep_for(std::chrono::milliseconds(800));
      return web::Response::text(200, "late");
    }
    if (req.path == "/big") return web::Response::text(200, std::string(100000, 'z'));
    if (req.path == "/redirect") return web::Response::redirect("/target", 302);
    if (req.path == "/target") {
      ++redirect_followed_;
      return web::Response::text(200, "followed");
    }
    return web::Response::text(404, "none");
  }

  web::ClientRequest get(std::string path) {
    web::ClientRequest r;
    r.method = "GET";
    r.url = base_ + path;
    r.allow_private_addresses = true;
    return r;
  }

  std::unique_ptr<Server> server_;
  std::string base_;
  std::atomic<int> hits_{0};
  std::atomic<int> redirect_followed_{0};
};

TEST_F(ClientTest, SendsAndReadsAResponse) {
  auto client = make_http_client();
  web::ClientRequest req;
  req.method = "POST";
  req.url = base_ + "/echo?a=1";
  req.headers = {{"X-Test", "yes"}, {"Content-Type", "application/json"}};
  req.body = R"({"k":1})";
  req.allow_private_addresses = true;
  auto r = client->send(req);
  ASSERT_TRUE(r.ok()) << r.error().code;
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->body, R"(POST /echo?a=1 {"k":1})");
  EXPECT_EQ(header(r->headers, "x-seen-header"), "yes");
  EXPECT_EQ(header(r->headers, "x-seen-agent"), "Sika/0.1");
  EXPECT_EQ(header(r->headers, "content-type"), "text/plain; charset=utf-8");
  EXPECT_EQ(r->remote_ip, "127.0.0.1");
  EXPECT_GE(r->latency_ms, 0);
}

TEST_F(ClientTest, ReusesKeepAliveConnections) {
  auto client = make_http_client();
  for (int i = 0; i < 5; ++i) {
    auto r = client->send(get("/echo"));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 201);
  }
  EXPECT_EQ(server_->stats().connections_open, 1u);
  EXPECT_EQ(server_->stats().requests, 5u);
}

TEST_F(ClientTest, ExchangeTimeoutIs504) {
  auto client = make_http_client();
  auto req = get("/slow");
  req.timeout_ms = 200;
  auto t0 = Clock::now();
  auto r = client->send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, sika::ErrorKind::upstream_timeout);
  EXPECT_EQ(r.error().code, "upstream_timeout");
  EXPECT_LT(elapsed_ms(t0), 700);
  // The client still works afterwards.
  auto ok = client->send(get("/echo"));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->status, 201);
}

TEST_F(ClientTest, LongBodiesAreTruncated) {
  auto client = make_http_client();
  auto req = get("/big");
  req.max_response_bytes = 1000;
  auto r = client->send(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, std::string(1000, 'z'));
  // A truncated connection is not reused; the next call works on a fresh one.
  auto again = client->send(get("/big"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->body.size(), 64u * 1024);
}

TEST_F(ClientTest, RedirectsAreNotFollowed) {
  auto client = make_http_client();
  auto r = client->send(get("/redirect"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 302);
  EXPECT_EQ(header(r->headers, "location"), "/target");
  EXPECT_EQ(redirect_followed_.load(), 0);
}

TEST_F(ClientTest, HeadRequestReadsNoBody) {
  auto client = make_http_client();
  auto req = get("/big");
  req.method = "HEAD";
  auto r = client->send(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(header(r->headers, "content-length"), "100000");
  EXPECT_TRUE(r->body.empty());
  auto next = client->send(get("/echo"));  // same pooled connection, still in sync
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->status, 201);
}

TEST_F(ClientTest, ConnectionRefusedIs502) {
  auto client = make_http_client();
  web::ClientRequest req;
  req.url = "http://127.0.0.1:" + std::to_string(test::unused_port()) + "/";
  req.allow_private_addresses = true;
  auto r = client->send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, sika::ErrorKind::upstream_failed);
  EXPECT_EQ(r.error().code, "upstream_error");
}

TEST_F(ClientTest, PrivateAddressesAreRefusedBeforeConnecting) {
  auto client = make_http_client();
  std::string port = std::to_string(server_->port());
  for (const std::string& url :
       std::vector<std::string>{"http://127.0.0.1:" + port + "/echo", "http://localhost:" + port + "/echo",
                                "http://LocalHost:" + port + "/echo", "https://localhost:" + port + "/echo",
                                "http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/",
                                "http://[::1]:" + port + "/", "http://[::ffff:127.0.0.1]:" + port + "/",
                                "http://0.0.0.0:" + port + "/", "http://192.168.1.1:8080/", "http://100.64.0.1/"}) {
    web::ClientRequest req;
    req.url = url;
    req.allow_private_addresses = false;
    auto t0 = Clock::now();
    auto r = client->send(req);
    ASSERT_FALSE(r.ok()) << url;
    EXPECT_EQ(r.error().kind, sika::ErrorKind::forbidden) << url;
    EXPECT_EQ(r.error().code, "blocked_address") << url;
    EXPECT_LT(elapsed_ms(t0), 1000) << url;
  }
  EXPECT_EQ(hits_.load(), 0);
  EXPECT_EQ(server_->stats().requests, 0u);
}

TEST_F(ClientTest, PooledPrivateConnectionIsNotReusedForAPublicOnlyRequest) {
  auto client = make_http_client();
  ASSERT_TRUE(client->send(get("/echo")).ok());  // pools a connection to 127.0.0.1
  auto req = get("/echo");
  req.allow_private_addresses = false;
  auto r = client->send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "blocked_address");
  EXPECT_EQ(hits_.load(), 1);
}

TEST_F(ClientTest, MalformedUrlsAndHeadersAre400) {
  auto client = make_http_client();
  for (const std::string& url :
       std::vector<std::string>{"ftp://example.com/", "not a url", "http://user:pw@127.0.0.1/", "http:///path",
                                "http://exa_mple.com/", "http://127.0.0.1:99999/", "file:///etc/passwd"}) {
    web::ClientRequest req;
    req.url = url;
    req.allow_private_addresses = true;
    auto r = client->send(req);
    ASSERT_FALSE(r.ok()) << url;
    EXPECT_EQ(r.error().kind, sika::ErrorKind::invalid) << url;
    EXPECT_EQ(r.error().code, "bad_request") << url;
  }
  auto req = get("/echo");
  req.headers = {{"X-Evil", "a\r\nInjected: 1"}};
  auto r = client->send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "bad_request");
  EXPECT_EQ(hits_.load(), 0);
}

TEST_F(ClientTest, PerHostConcurrencyIsBounded) {
  ClientOptions opt;
  opt.max_in_flight_per_host = 1;
  opt.host_wait_ms = 100;
  auto client = make_http_client(opt);
  std::thread slow([&] {
    auto r = client->send(get("/slow"));
    EXPECT_TRUE(r.ok());
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto t0 = Clock::now();
  auto r = client->send(get("/echo"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, sika::ErrorKind::unavailable);
  EXPECT_EQ(r.error().code, "host_busy");
  EXPECT_GE(elapsed_ms(t0), 80);
  EXPECT_LT(elapsed_ms(t0), 500);
  slow.join();
  EXPECT_TRUE(client->send(get("/echo")).ok());
}

TEST_F(ClientTest, ManyThreadsShareOneClient) {
  ClientOptions opt;
  opt.max_in_flight_per_host = 4;
  opt.host_wait_ms = 5000;
  auto client = make_http_client(opt);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        auto r = client->send(get("/echo"));
        if (r.ok() && r->status == 201) ++ok;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 200);
  EXPECT_LE(server_->stats().connections_open, 4u);
}

TEST_F(ClientTest, StaleKeptAliveConnectionIsReplaced) {
  auto client = make_http_client();
  ASSERT_TRUE(client->send(get("/echo")).ok());
  // The upstream restarts: the pooled connection is dead.
  server_->stop();
  server_->wait();
  ServerOptions opt;
  opt.host = "127.0.0.1";
  opt.port = server_->port();
  server_ = std::make_unique<Server>(opt, [this](web::Request& req) { return handle(req); });
  ASSERT_TRUE(server_->start().ok());
  auto r = client->send(get("/echo"));
  ASSERT_TRUE(r.ok()) << r.error().code;
  EXPECT_EQ(r->status, 201);
}

// `openssl s_server -www` on 127.0.0.1 with a fresh self-signed certificate for "localhost".
class TlsUpstream {
 public:
  TlsUpstream() {
    if (std::system("openssl version >/dev/null 2>&1") != 0) return;
    char tmpl[] = "/tmp/sika-tls-XXXXXX";
    if (!mkdtemp(tmpl)) return;
    dir_ = tmpl;
    std::string cmd =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
        "-subj /CN=localhost -addext subjectAltName=DNS:localhost -keyout " +
        dir_ + "/key.pem -out " + dir_ + "/cert.pem >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) return;
    port_ = test::unused_port();
    std::string accept = "127.0.0.1:" + std::to_string(port_);
    std::string cert = dir_ + "/cert.pem", key = dir_ + "/key.pem";
    pid_ = fork();
    if (pid_ == 0) {
      std::freopen("/dev/null", "w", stdout);
      std::freopen("/dev/null", "w", stderr);
      execlp("openssl", "openssl", "s_server", "-quiet", "-www", "-accept", accept.c_str(), "-cert", cert.c_str(),
             "-key", key.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 100; ++i) {
      test::RawClient probe(port_);
      if (probe.connected()) {
        ready_ = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~TlsUpstream() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  bool ready() const { return ready_; }
  unsigned short port() const { return port_; }
  std::string cert() const { return dir_ + "/cert.pem"; }

 private:
  std::string dir_;
  unsigned short port_ = 0;
  pid_t pid_ = -1;
  bool ready_ = false;
};

TEST(ClientTls, VerifiesTheCertificateAndTheHostName) {
  TlsUpstream upstream;
  if (!upstream.ready()) GTEST_SKIP() << "openssl s_server unavailable";
  std::string port = std::to_string(upstream.port());
  web::ClientRequest req;
  req.method = "GET";
  req.allow_private_addresses = true;
  req.connect_timeout_ms = 3000;
  req.timeout_ms = 3000;

  // Trusted (extra CA) and the name matches: success.
  ClientOptions trusting;
  trusting.extra_ca_file = upstream.cert();
  auto client = make_http_client(trusting);
  req.url = "https://localhost:" + port + "/";
  auto ok = client->send(req);
  ASSERT_TRUE(ok.ok()) << ok.error().code << " " << boost::json::serialize(ok.error().details);
  EXPECT_EQ(ok->status, 200);
  EXPECT_FALSE(ok->body.empty());

  // Same certificate, but the URL names 127.0.0.1, which the certificate does not cover.
  req.url = "https://127.0.0.1:" + port + "/";
  auto mismatch = client->send(req);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.error().code, "upstream_error");
  EXPECT_NE(boost::json::serialize(mismatch.error().details).find("certificate"), std::string::npos);

  // Self-signed and not trusted: refused.
  auto strict = make_http_client();
  req.url = "https://localhost:" + port + "/";
  auto untrusted = strict->send(req);
  ASSERT_FALSE(untrusted.ok());
  EXPECT_EQ(untrusted.error().code, "upstream_error");
  EXPECT_NE(boost::json::serialize(untrusted.error().details).find("certificate"), std::string::npos);
}

}  // namespace
}  // namespace sika::http
