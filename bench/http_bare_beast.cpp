// bare_beast: the floor for the HTTP benchmark. A minimal Boost.Beast HTTP/1.1 keep-alive
// server answering every request with one fixed response (the bytes of sika's /healthz,
// captured by bench/run_http_bench.sh), with the same per-request Date and X-Request-Id
// headers sika sends. No router, no handler pool, no timeouts, no limits: what is left is
// parsing and writing, so `sika serve` minus this is the cost of everything else.
//
// Usage: bare_beast PORT IO_THREADS BODY_FILE ["Name: value" ...]
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/random.hpp"

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;

namespace {

std::string g_body;
std::vector<std::pair<std::string, std::string>> g_headers;

std::string_view http_date() {
  thread_local std::time_t cached = 0;
  thread_local char buf[40];
  std::time_t now = std::time(nullptr);
  if (now != cached) {
    std::tm tm{};
    gmtime_r(&now, &tm);
    std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    cached = now;
  }
  return buf;
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  explicit Session(tcp::socket s) : stream_(std::move(s)) {}
  void read() {
    req_ = {};
    http::async_read(stream_, buffer_, req_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return;
      self->write();
    });
  }

 private:
  void write() {
    res_ = {};
    res_.version(req_.version());
    res_.result(http::status::ok);
    for (const auto& [k, v] : g_headers) res_.insert(k, v);
    res_.set(http::field::date, http_date());
    res_.set("X-Request-Id", sika::uuid_v4());
    res_.keep_alive(req_.keep_alive());
    res_.body() = g_body;
    res_.content_length(g_body.size());
    http::async_write(stream_, res_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec || !self->res_.keep_alive()) return;
      self->read();
    });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> req_;
  http::response<http::string_body> res_;
};

void accept(tcp::acceptor& acceptor, net::io_context& ioc) {
  acceptor.async_accept(net::make_strand(ioc), [&](beast::error_code ec, tcp::socket s) {
    if (!ec) {
      s.set_option(tcp::no_delay(true));
      std::make_shared<Session>(std::move(s))->read();
    }
    accept(acceptor, ioc);
  });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: bare_beast PORT IO_THREADS BODY_FILE [\"Name: value\" ...]\n";
    return 2;
  }
  auto port = static_cast<unsigned short>(std::stoi(argv[1]));
  int threads = std::max(1, std::stoi(argv[2]));
  std::ifstream in(argv[3], std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  g_body = ss.str();
  for (int i = 4; i < argc; ++i) {
    std::string h = argv[i];
    auto colon = h.find(':');
    if (colon == std::string::npos) continue;
    std::string value = h.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    g_headers.emplace_back(h.substr(0, colon), value);
  }

  net::io_context ioc(threads);
  tcp::acceptor acceptor(ioc, {net::ip::make_address("127.0.0.1"), port});
  acceptor.listen(net::socket_base::max_listen_connections);
  accept(acceptor, ioc);
  net::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](beast::error_code, int) { ioc.stop(); });
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back([&] { ioc.run(); });
  ioc.run();
  for (auto& t : pool) t.join();
  return 0;
}
