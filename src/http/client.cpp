// The outbound client. Each pooled connection owns a tiny io_context that the calling thread
// runs while it uses the connection (a connection is checked out by one caller at a time),
// so send() is a plain blocking call with deadlines enforced by beast::tcp_stream.
#include "http/client.hpp"

#include <netdb.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/url/parse.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/thread_annotations.hpp"
#include "web/address_policy.hpp"

namespace sika::http {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;
namespace bj = boost::json;

namespace {

constexpr int kMaxPendingLookups = 64;
std::atomic<int> g_pending_lookups{0};

Error upstream_error(std::string details) {
  return make_error(ErrorKind::upstream_failed, "upstream_error", bj::string(details));
}
Error upstream_timeout(std::string details) {
  return make_error(ErrorKind::upstream_timeout, "upstream_timeout", bj::string(details));
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (!std::isalnum(c) && !std::strchr("!#$%&'*+-.^_`|~", c)) return false;
  return true;
}

bool safe_value(std::string_view v) {
  return std::none_of(v.begin(), v.end(), [](char c) { return c == '\r' || c == '\n' || c == '\0'; });
}

struct Target {
  bool https = false;
  std::string host;  // lower-case name, or IP literal without brackets
  bool host_is_ip = false;
  unsigned short port = 0;
  std::string request_target;  // "/path?query"
  std::string host_header;
  std::string pool_key;  // "https://host:port"
};

Result<Target> parse_target(std::string_view url) {
  auto bad = [](std::string problem) { return bad_request("bad_request", bj::object{{"url", problem}}); };
  auto r = boost::urls::parse_uri(url);
  if (!r) return bad("is not an absolute URL");
  const auto& u = *r;
  Target t;
  if (u.scheme_id() == boost::urls::scheme::https)
    t.https = true;
  else if (u.scheme_id() != boost::urls::scheme::http)
    return bad("scheme must be http or https");
  if (u.has_userinfo()) return bad("must not contain credentials");
  switch (u.host_type()) {
    case boost::urls::host_type::ipv4:
      t.host = u.host_ipv4_address().to_string();
      t.host_is_ip = true;
      break;
    case boost::urls::host_type::ipv6:
      t.host = u.host_ipv6_address().to_string();
      t.host_is_ip = true;
      break;
    case boost::urls::host_type::name: {
      std::string_view h = u.encoded_host();
      if (h.empty() || h.size() > 253) return bad("has no valid host");
      for (char c : h)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') return bad("has no valid host");
      t.host = lower(h);
      break;
    }
    default: return bad("has no valid host");
  }
  unsigned short default_port = t.https ? 443 : 80;
  t.port = default_port;
  if (u.has_port()) {
    std::string_view p = u.port();
    if (p.empty() || p.size() > 5) return bad("has an invalid port");
    unsigned long v = std::stoul(std::string(p));
    if (v == 0 || v > 65535) return bad("has an invalid port");
    t.port = static_cast<unsigned short>(v);
  }
  std::string authority = u.host_type() == boost::urls::host_type::ipv6 ? "[" + t.host + "]" : t.host;
  t.host_header = t.port == default_port ? authority : authority + ":" + std::to_string(t.port);
  t.request_target = u.encoded_path().empty() ? "/" : std::string(u.encoded_path());
  if (t.request_target.front() != '/') return bad("has an invalid path");
  if (u.has_query()) t.request_target += "?" + std::string(u.encoded_query());
  t.pool_key = (t.https ? "https://" : "http://") + authority + ":" + std::to_string(t.port);
  return t;
}

// Resolves `host` on a helper thread so that a hung resolver cannot hold the caller past
// its deadline (getaddrinfo cannot be cancelled; the helper finishes on its own).
Result<std::vector<net::ip::address>> resolve(const std::string& host, Clock::time_point deadline) {
  struct Job {
    sika::Mutex mu;
    std::condition_variable cv;
    bool done GUARDED_BY(mu) = false;
    int rc GUARDED_BY(mu) = 0;
    std::vector<net::ip::address> addrs GUARDED_BY(mu);
  };
  if (g_pending_lookups.fetch_add(1) >= kMaxPendingLookups) {
    g_pending_lookups.fetch_sub(1);
    return upstream_error("too many DNS lookups in progress");
  }
  auto job = std::make_shared<Job>();
  try {
    std::thread([job, host] {
      addrinfo hints{};
      hints.ai_family = AF_UNSPEC;
      hints.ai_socktype = SOCK_STREAM;
      hints.ai_flags = AI_ADDRCONFIG;
      addrinfo* res = nullptr;
      int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
      std::vector<net::ip::address> addrs;
      for (addrinfo* ai = res; rc == 0 && ai; ai = ai->ai_next) {
        if (ai->ai_family == AF_INET) {
          const auto* sa = reinterpret_cast<const sockaddr_in*>(ai->ai_addr);
          net::ip::address_v4::bytes_type b;
          std::memcpy(b.data(), &sa->sin_addr, 4);
          addrs.emplace_back(net::ip::address_v4(b));
        } else if (ai->ai_family == AF_INET6) {
          const auto* sa = reinterpret_cast<const sockaddr_in6*>(ai->ai_addr);
          net::ip::address_v6::bytes_type b;
          std::memcpy(b.data(), &sa->sin6_addr, 16);
          addrs.emplace_back(net::ip::address_v6(b, sa->sin6_scope_id));
        }
      }
      if (res) ::freeaddrinfo(res);
      {
        sika::MutexLock lock(job->mu);
        job->rc = rc;
        job->addrs = std::move(addrs);
        job->done = true;
      }
      job->cv.notify_all();
      g_pending_lookups.fetch_sub(1);
    }).detach();
  } catch (const std::system_error& e) {
    g_pending_lookups.fetch_sub(1);
    return upstream_error(std::string("cannot start DNS lookup: ") + e.what());
  }
  sika::UniqueLock lock(job->mu);
  if (!lock.wait_until(job->cv, deadline, [&]() REQUIRES(job->mu) { return job->done; }))
    return upstream_timeout("DNS resolution timed out");
  if (job->rc != 0 || job->addrs.empty()) return upstream_error("could not resolve host");
  // Duplicates (one per socket type on some resolvers) are harmless but noisy.
  std::vector<net::ip::address> out;
  for (auto& a : job->addrs)
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  return out;
}

bool is_public(const net::ip::address& a) {
  return a.is_v4() ? web::is_public_ipv4(a.to_v4().to_bytes()) : web::is_public_ipv6(a.to_v6().to_bytes());
}

std::string ip_string(const net::ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) return net::ip::make_address_v4(net::ip::v4_mapped, a.to_v6()).to_string();
  return a.to_string();
}

// One connection, used by one caller at a time, who runs its io_context.
struct Conn {
  net::io_context ioc{1};
  std::optional<beast::tcp_stream> tcp;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buffer;
  std::string remote_ip;
  bool remote_public = false;
  Clock::time_point idle_since;

  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *tcp; }

  // Starts one asynchronous operation and runs it to completion on this thread.
  template <class Initiate>
  beast::error_code run(Initiate&& initiate) {
    beast::error_code result = net::error::would_block;
    initiate([&result](beast::error_code ec, auto&&...) { result = ec; });
    ioc.restart();
    ioc.run();
    return result;
  }

  // True iff the peer has neither closed the idle connection nor sent unexpected bytes.
  bool still_usable() {
    char b;
    ssize_t r = ::recv(lowest().socket().native_handle(), &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
};

bool idempotent(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "PUT" || method == "DELETE" || method == "OPTIONS";
}

class Client final : public web::HttpClient {
 public:
  explicit Client(ClientOptions opt) : opt_(std::move(opt)), tls_ctx_(ssl::context::tls_client) {
    beast::error_code ec;
    tls_ctx_.set_default_verify_paths(ec);
    if (ec) spdlog::warn("http client: cannot load the system CA store: {}", ec.message());
    if (!opt_.extra_ca_file.empty()) {
      tls_ctx_.load_verify_file(opt_.extra_ca_file, ec);
      if (ec) spdlog::error("http client: cannot load CA file {}: {}", opt_.extra_ca_file, ec.message());
    }
    tls_ctx_.set_verify_mode(ssl::verify_peer);
    SSL_CTX_set_min_proto_version(tls_ctx_.native_handle(), TLS1_2_VERSION);
    tls_ctx_.set_options(ssl::context::default_workarounds | ssl::context::no_compression);
  }

  Result<web::ClientResponse> send(const web::ClientRequest& req) override {
    const auto start = Clock::now();
    SIKA_ASSIGN_OR_RETURN(Target t, parse_target(req.url));
    if (!is_token(req.method)) return bad_request("bad_request", bj::object{{"method", "is not a valid HTTP method"}});
    for (const auto& [k, v] : req.headers)
      if (!is_token(k) || !safe_value(v))
        return bad_request("bad_request", bj::object{{"headers", "invalid header name or value: " + k}});

    const auto connect_deadline = start + std::chrono::milliseconds(std::max(1, req.connect_timeout_ms));

    // The host check on an IP literal happens before anything else: no slot, no socket.
    if (t.host_is_ip && !req.allow_private_addresses && !web::is_public_address(t.host)) return blocked(t.host);

    if (!acquire_slot(t.pool_key, std::min(connect_deadline, start + std::chrono::milliseconds(opt_.host_wait_ms))))
      return make_error(ErrorKind::unavailable, "host_busy",
                        bj::object{{"host", t.host}, {"max_in_flight", opt_.max_in_flight_per_host}});
    std::unique_ptr<Conn> reusable;
    struct SlotGuard {
      Client* self;
      const std::string& key;
      std::unique_ptr<Conn>& conn;
      ~SlotGuard() { self->release_slot(key, std::move(conn)); }
    } guard{this, t.pool_key, reusable};

    for (int attempt = 0;; ++attempt) {
      std::unique_ptr<Conn> conn = take_idle(t.pool_key, req.allow_private_addresses);
      bool reused = conn != nullptr;
      if (!conn) {
        auto fresh = connect(t, req, connect_deadline);
        if (!fresh) return fresh.take_error();
        conn = std::move(*fresh);
      }
      bool retryable = false;
      auto res = exchange(*conn, t, req, reused, retryable);
      if (!res && retryable && attempt == 0 && idempotent(req.method)) continue;  // stale pooled connection
      if (!res) return res.take_error();
      auto& [response, keep] = *res;
      response.remote_ip = conn->remote_ip;
      response.latency_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
      if (keep) reusable = std::move(conn);
      return std::move(response);
    }
  }

 private:
  struct HostState {
    std::size_t in_flight = 0;
    std::vector<std::unique_ptr<Conn>> idle;
  };

  Error blocked(const std::string& host) {
    return make_error(ErrorKind::forbidden, "blocked_address",
                      bj::object{{"host", host}, {"reason", "resolves to a non-public address"}});
  }

  bool acquire_slot(const std::string& key, Clock::time_point until) {
    sika::UniqueLock lock(mu_);
    auto ok = [&]() REQUIRES(mu_) { return hosts_[key].in_flight < opt_.max_in_flight_per_host; };
    if (!lock.wait_until(cv_, until, ok)) {
      auto it = hosts_.find(key);
      if (it != hosts_.end() && it->second.in_flight == 0 && it->second.idle.empty()) hosts_.erase(it);
      return false;
    }
    ++hosts_[key].in_flight;
    return true;
  }

  // Frees the caller's slot and pools `conn` (when given) within the idle caps.
  void release_slot(const std::string& key, std::unique_ptr<Conn> conn) {
    std::vector<std::unique_ptr<Conn>> doomed;
    {
      sika::MutexLock lock(mu_);
      auto& hs = hosts_[key];
      --hs.in_flight;
      if (conn) {
        if (hs.idle.size() < opt_.max_idle_per_host && total_idle_ < opt_.max_idle_total) {
          conn->idle_since = Clock::now();
          hs.idle.push_back(std::move(conn));
          ++total_idle_;
        } else {
          doomed.push_back(std::move(conn));
        }
      }
      sweep_locked(doomed);
      if (hs.in_flight == 0 && hs.idle.empty()) hosts_.erase(key);
    }
    cv_.notify_all();
  }

  // Moves expired idle connections of every host into `doomed` (at most every second).
  void sweep_locked(std::vector<std::unique_ptr<Conn>>& doomed) REQUIRES(mu_) {
    auto now = Clock::now();
    if (now - last_sweep_ < std::chrono::seconds(1)) return;
    last_sweep_ = now;
    for (auto it = hosts_.begin(); it != hosts_.end();) {
      auto& idle = it->second.idle;
      for (auto c = idle.begin(); c != idle.end();) {
        if (now - (*c)->idle_since > std::chrono::milliseconds(opt_.idle_keep_ms)) {
          doomed.push_back(std::move(*c));
          c = idle.erase(c);
          --total_idle_;
        } else {
          ++c;
        }
      }
      if (it->second.in_flight == 0 && idle.empty())
        it = hosts_.erase(it);
      else
        ++it;
    }
  }

  std::unique_ptr<Conn> take_idle(const std::string& key, bool allow_private) {
    std::vector<std::unique_ptr<Conn>> doomed;
    std::unique_ptr<Conn> found;
    {
      sika::MutexLock lock(mu_);
      auto it = hosts_.find(key);
      if (it == hosts_.end()) return nullptr;
      auto& idle = it->second.idle;
      auto now = Clock::now();
      while (!idle.empty() && !found) {
        auto c = std::move(idle.back());  // most recently used first
        idle.pop_back();
        --total_idle_;
        if (now - c->idle_since > std::chrono::milliseconds(opt_.idle_keep_ms) ||
            (!allow_private && !c->remote_public) || !c->still_usable())
          doomed.push_back(std::move(c));
        else
          found = std::move(c);
      }
    }
    return found;
  }

  Result<std::unique_ptr<Conn>> connect(const Target& t, const web::ClientRequest& req, Clock::time_point deadline) {
    std::vector<net::ip::address> addrs;
    if (t.host_is_ip) {
      addrs.push_back(net::ip::make_address(t.host));
    } else {
      SIKA_ASSIGN_OR_RETURN(addrs, resolve(t.host, deadline));
    }
    bool all_public = true;
    for (const auto& a : addrs) {
      bool pub = is_public(a);
      all_public = all_public && pub;
      if (!pub && !req.allow_private_addresses) return blocked(t.host);
    }
    // Only the addresses checked above are ever connected to (no second resolution).
    std::vector<tcp::endpoint> endpoints;
    for (const auto& a : addrs) endpoints.emplace_back(a, t.port);

    auto conn = std::make_unique<Conn>();
    conn->remote_public = all_public;
    if (t.https)
      conn->tls.emplace(conn->ioc, tls_ctx_);
    else
      conn->tcp.emplace(conn->ioc);
    auto& lowest = conn->lowest();
    if (Clock::now() >= deadline) return upstream_timeout("connect timed out");
    lowest.expires_at(deadline);
    tcp::endpoint connected;
    auto ec = conn->run([&](auto handler) {
      lowest.async_connect(endpoints, [&connected, handler](beast::error_code ec, const tcp::endpoint& ep) mutable {
        connected = ep;
        handler(ec);
      });
    });
    if (ec == beast::error::timeout || Clock::now() >= deadline) return upstream_timeout("connect timed out");
    if (ec) return upstream_error("connect failed: " + ec.message());
    conn->remote_ip = ip_string(connected.address());
    beast::error_code ignored;
    lowest.socket().set_option(tcp::no_delay(true), ignored);

    if (t.https) {
      SSL* ssl = conn->tls->native_handle();
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
      X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      int set_ok = t.host_is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, t.host.c_str())
                                : X509_VERIFY_PARAM_set1_host(param, t.host.c_str(), 0);
      if (set_ok != 1) return upstream_error("TLS setup failed");
      if (!t.host_is_ip && SSL_set_tlsext_host_name(ssl, t.host.c_str()) != 1)
        return upstream_error("TLS setup failed");
      conn->tls->set_verify_mode(ssl::verify_peer);
      ec = conn->run([&](auto handler) { conn->tls->async_handshake(ssl::stream_base::client, handler); });
      if (ec == beast::error::timeout || Clock::now() >= deadline) return upstream_timeout("TLS handshake timed out");
      if (ec) {
        std::string reason = ec.message();
        long verify = SSL_get_verify_result(ssl);
        if (verify != X509_V_OK)
          reason = std::string("certificate verification failed: ") + X509_verify_cert_error_string(verify);
        return upstream_error("TLS handshake failed: " + reason);
      }
    }
    return conn;
  }

  struct Exchanged {
    web::ClientResponse response;
    bool keep = false;
  };

  template <class F>
  beast::error_code io(Conn& c, F&& f) {
    return c.run([&](auto handler) {
      if (c.tls)
        f(*c.tls, handler);
      else
        f(*c.tcp, handler);
    });
  }

  using Parser = bhttp::response_parser<bhttp::buffer_body>;

  static bool timed_out(const beast::error_code& ec, Clock::time_point deadline) {
    return ec == beast::error::timeout || Clock::now() >= deadline;
  }

  // The request message: its method, target, Host and User-Agent, the caller's headers but those
  // the client manages itself (framing, connection), and the body; keep-alive.
  bhttp::request<bhttp::string_body> request_message(const Target& t, const web::ClientRequest& req) const {
    bhttp::request<bhttp::string_body> msg;
    auto verb = bhttp::string_to_verb(req.method);
    if (verb == bhttp::verb::unknown)
      msg.method_string(req.method);
    else
      msg.method(verb);
    msg.target(t.request_target);
    msg.version(11);
    msg.set(bhttp::field::host, t.host_header);
    msg.set(bhttp::field::user_agent, opt_.user_agent);
    for (const auto& [k, v] : req.headers) {
      std::string n = lower(k);
      if (n == "host" || n == "content-length" || n == "transfer-encoding" || n == "connection" || n == "te" ||
          n == "upgrade" || n == "keep-alive")
        continue;
      if (n == "user-agent")
        msg.set(bhttp::field::user_agent, v);
      else
        msg.insert(k, v);
    }
    msg.body() = req.body;
    msg.keep_alive(true);
    msg.prepare_payload();
    return msg;
  }

  // Reads response headers into `parser`, skipping up to four informational (1xx but 101)
  // responses. `retryable` as for exchange().
  Status read_final_header(Conn& c, std::optional<Parser>& parser, bool head, bool reused, bool& retryable,
                           Clock::time_point deadline) {
    for (int informational = 0;; ++informational) {
      parser.emplace();
      parser->header_limit(
          static_cast<std::uint32_t>(std::min<std::size_t>(opt_.max_response_header_bytes, UINT32_MAX)));
      parser->body_limit(std::numeric_limits<std::uint64_t>::max());
      if (head) parser->skip(true);
      auto ec =
          io(c, [&](auto& stream, auto handler) { bhttp::async_read_header(stream, c.buffer, *parser, handler); });
      if (ec) {
        retryable = reused && informational == 0 && !parser->got_some() && !timed_out(ec, deadline);
        return timed_out(ec, deadline) ? upstream_timeout("response timed out")
                                       : upstream_error("reading the response failed: " + ec.message());
      }
      int status = static_cast<int>(parser->get().result_int());
      if (status / 100 != 1 || status == 101) break;
      if (informational >= 4) return upstream_error("too many informational responses");
    }
    return {};
  }

  // Reads the body into res.body, 16 KiB at a time, up to req.max_response_bytes; `truncated`
  // when it was longer (the rest is not read).
  Status read_body(Conn& c, Parser& parser, const web::ClientRequest& req, web::ClientResponse& res, bool& truncated,
                   Clock::time_point deadline) {
    std::vector<char> chunk(16 * 1024);
    while (!parser.is_done()) {
      parser.get().body().data = chunk.data();
      parser.get().body().size = chunk.size();
      auto ec = io(c, [&](auto& stream, auto handler) { bhttp::async_read(stream, c.buffer, parser, handler); });
      if (ec == bhttp::error::need_buffer) ec = {};
      if (ec) {
        return timed_out(ec, deadline) ? upstream_timeout("response timed out")
                                       : upstream_error("reading the response body failed: " + ec.message());
      }
      std::size_t n = chunk.size() - parser.get().body().size;
      std::size_t room = req.max_response_bytes - res.body.size();
      res.body.append(chunk.data(), std::min(n, room));
      if (n > room) {
        truncated = true;
        break;
      }
    }
    return {};
  }

  // Writes the request and reads the response. `retryable` is set when a reused connection
  // failed before any response byte arrived (the server had closed it while idle).
  Result<Exchanged> exchange(Conn& c, const Target& t, const web::ClientRequest& req, bool reused, bool& retryable) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(std::max(1, req.timeout_ms));
    c.lowest().expires_at(deadline);

    auto msg = request_message(t, req);
    auto ec = io(c, [&](auto& stream, auto handler) { bhttp::async_write(stream, msg, handler); });
    if (ec) {
      retryable = reused && !timed_out(ec, deadline);
      return timed_out(ec, deadline) ? upstream_timeout("request timed out")
                                     : upstream_error("write failed: " + ec.message());
    }

    std::optional<Parser> parser;
    SIKA_TRY(read_final_header(c, parser, req.method == "HEAD", reused, retryable, deadline));

    Exchanged out;
    auto& res = out.response;
    res.status = static_cast<int>(parser->get().result_int());
    for (const auto& f : parser->get()) res.headers.emplace_back(lower(f.name_string()), std::string(f.value()));

    bool truncated = false;
    SIKA_TRY(read_body(c, *parser, req, res, truncated, deadline));
    out.keep = !truncated && parser->is_done() && parser->keep_alive() && !parser->need_eof() && res.status != 101 &&
               c.buffer.size() == 0;
    return out;
  }

  ClientOptions opt_;
  ssl::context tls_ctx_;
  sika::Mutex mu_;
  std::condition_variable cv_;  // a host's in-flight count dropped
  std::map<std::string, HostState> hosts_ GUARDED_BY(mu_);
  std::size_t total_idle_ GUARDED_BY(mu_) = 0;
  Clock::time_point last_sweep_ GUARDED_BY(mu_) = Clock::now();
};

}  // namespace

std::unique_ptr<web::HttpClient> make_http_client(ClientOptions options) {
  return std::make_unique<Client>(std::move(options));
}

}  // namespace sika::http
