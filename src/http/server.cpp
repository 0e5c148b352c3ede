// The HTTP/1.1 server. Threading model:
//  - N I/O threads run one io_context. Each connection lives on its own strand, so its
//    socket, buffer and parser are never touched by two threads at once.
//  - A connection handles one request at a time: read -> handler -> write -> read. Pipelined
//    requests wait in the read buffer, so responses always leave in request order and a bad
//    request can never overtake (or break) an earlier valid response.
//  - Handlers run on a bounded HandlerPool, never on an I/O thread; the response is posted
//    back to the connection's strand. A full queue is answered 503 at once.
//  - Timeouts use beast::tcp_stream's expiry: on expiry the socket is closed.
#include "http/server.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/json.hpp"
#include "core/random.hpp"
#include "core/thread_annotations.hpp"
#include "core/time.hpp"
#include "web/envelope.hpp"

namespace sika::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

bool valid_request_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(), [](char c) { return c >= 0x21 && c <= 0x7e; });
}

std::string AccessLogEntry::json() const {
  std::string out;
  append_line(out);
  out.pop_back();
  return out;
}

void AccessLogEntry::append_line(std::string& out) const {
  auto field = [&out](std::string_view name, std::string_view value) {
    out += name;
    json::dump_string_to(value, out);
  };
  field("{\"time\":", iso8601(time_ms));
  field(",\"request_id\":", request_id);
  field(",\"remote\":", remote);
  field(",\"method\":", method);
  field(",\"path\":", path);
  out += ",\"status\":" + std::to_string(status);
  out += ",\"bytes\":" + std::to_string(bytes);
  out += ",\"duration_us\":" + std::to_string(duration_us);
  field(",\"user_agent\":", user_agent);
  out += "}\n";
}

namespace {

constexpr std::size_t kIdleReadBytes = 2048;
constexpr std::size_t kShrinkAbove = 32 * 1024;
// Lingering close: how long and how much the server keeps reading (and discarding) after its
// last response, so that a client still sending a refused body reads the answer instead of a reset.
constexpr std::size_t kLingerMaxBytes = 16 << 20;
constexpr auto kLingerTime = std::chrono::seconds(5);
constexpr auto kLingerIdle = std::chrono::seconds(1);
constexpr auto kShutdownPoll = std::chrono::milliseconds(20);

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool iequals(std::string_view a, std::string_view b) { return a.size() == b.size() && lower(a) == lower(b); }

bool valid_header_name(std::string_view n) {
  if (n.empty()) return false;
  for (unsigned char c : n) {
    if (std::isalnum(c)) continue;
    if (!std::strchr("!#$%&'*+-.^_`|~", c) || c == 0) return false;
  }
  return true;
}

bool valid_header_value(std::string_view v) {
  return std::none_of(v.begin(), v.end(), [](char c) { return c == '\r' || c == '\n' || c == '\0'; });
}

// IMF-fixdate of the current second, formatted once per second per thread.
std::string_view http_date() {
  thread_local std::time_t cached = 0;
  thread_local char buf[40];
  std::time_t now = std::time(nullptr);
  if (now != cached) {
    static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                              "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    std::tm tm{};
    gmtime_r(&now, &tm);
    std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[tm.tm_wday], tm.tm_mday,
                  kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
    cached = now;
  }
  return buf;
}

std::string ip_string(const tcp::endpoint& ep) {
  auto a = ep.address();
  if (a.is_v6() && a.to_v6().is_v4_mapped()) return net::ip::make_address_v4(net::ip::v4_mapped, a.to_v6()).to_string();
  return a.to_string();
}

// Returns "" when the request's framing is unambiguous, else why it is refused. Only a single
// "chunked" coding is accepted (RFC 9112 §6.3: a request whose last coding is not chunked has no
// reliable length), and never together with Content-Length, which a proxy in front may have
// used to frame the same bytes differently.
std::string framing_problem(const bhttp::request_parser<bhttp::string_body>::value_type& h) {
  if (h.count(bhttp::field::transfer_encoding) == 0) return {};
  if (h.count(bhttp::field::content_length) > 0) return "must not be sent together with Content-Length";
  std::vector<std::string> codings;
  for (const auto& f : h) {
    if (f.name() != bhttp::field::transfer_encoding) continue;
    std::string_view v = f.value();
    std::size_t pos = 0;
    while (pos <= v.size()) {
      std::size_t comma = std::min(v.find(',', pos), v.size());
      std::string_view c = v.substr(pos, comma - pos);
      while (!c.empty() && (c.front() == ' ' || c.front() == '\t')) c.remove_prefix(1);
      while (!c.empty() && (c.back() == ' ' || c.back() == '\t')) c.remove_suffix(1);
      if (!c.empty()) codings.push_back(lower(c));
      pos = comma + 1;
    }
  }
  if (codings.empty() || codings.back() != "chunked") return "the last transfer coding must be chunked";
  if (codings.size() != 1) return "only chunked is supported";
  return {};
}

bool is_disconnect(const beast::error_code& ec) {
  return ec == net::error::eof || ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message ||
         ec == beast::error::timeout || ec == net::error::operation_aborted || ec == net::error::connection_reset ||
         ec == net::error::broken_pipe || ec == net::error::bad_descriptor || ec == net::error::not_connected;
}

}  // namespace

// A fixed set of threads running queued jobs; refuses new jobs when `capacity` are waiting.
class HandlerPool {
 public:
  HandlerPool(int threads, std::size_t capacity) : threads_n_(std::max(1, threads)), capacity_(capacity) {}
  ~HandlerPool() { shutdown(); }

  void start() {
    sika::MutexLock lock(mu_);
    if (!threads_.empty() || stopped_) return;
    for (int i = 0; i < threads_n_; ++i) threads_.emplace_back([this] { run(); });
  }

  // Returns false when the queue is full or the pool is shut down.
  bool try_post(std::function<void()> job) {
    {
      sika::MutexLock lock(mu_);
      if (stopped_ || queue_.size() >= capacity_) return false;
      queue_.push_back(std::move(job));
    }
    cv_.notify_one();
    return true;
  }

  // Runs what is queued, then joins the threads.
  void shutdown() {
    std::vector<std::thread> threads;
    {
      sika::MutexLock lock(mu_);
      stopped_ = true;
      threads.swap(threads_);
    }
    cv_.notify_all();
    for (auto& t : threads) t.join();
  }

 private:
  void run() {
    web::mark_request_thread(true);
    for (;;) {
      std::function<void()> job;
      {
        sika::UniqueLock lock(mu_);
        lock.wait(cv_, [&]() REQUIRES(mu_) { return stopped_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job();
    }
  }

  int threads_n_;
  std::size_t capacity_;
  sika::Mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_ GUARDED_BY(mu_);
  std::vector<std::thread> threads_ GUARDED_BY(mu_);
  bool stopped_ GUARDED_BY(mu_) = false;
};

class Connection;

struct Server::Impl {
  Impl(ServerOptions o, RequestHandler h)
      : opt(std::move(o)),
        handler(std::move(h)),
        ioc(std::max(1, opt.io_threads)),
        accept_strand(net::make_strand(ioc)),
        acceptor(accept_strand),
        accept_retry(accept_strand),
        shutdown_timer(accept_strand),
        pool(opt.handler_threads, opt.handler_queue) {}

  void do_accept();
  void on_accept(beast::error_code ec, tcp::socket socket);
  void begin_shutdown();
  void poll_shutdown();
  void add(const std::shared_ptr<Connection>& c);
  void remove(Connection* c);
  std::vector<std::shared_ptr<Connection>> snapshot();

  ServerOptions opt;
  RequestHandler handler;
  net::io_context ioc;
  net::strand<net::io_context::executor_type> accept_strand;
  tcp::acceptor acceptor;
  net::steady_timer accept_retry;
  net::steady_timer shutdown_timer;
  HandlerPool pool;
  std::vector<std::thread> io_threads;

  std::atomic<bool> started{false};
  std::atomic<bool> running{false};  // the I/O threads were launched
  std::atomic<bool> stopping{false};
  std::atomic<unsigned short> bound_port{0};
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> rejected_busy{0};
  Clock::time_point shutdown_deadline;  // accept_strand only
  bool forced = false;                  // accept_strand only
  bool shutdown_begun = false;          // accept_strand only

  sika::Mutex conns_mu;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> conns GUARDED_BY(conns_mu);

  sika::Mutex wait_mu;  // one wait() joins the threads (io_threads is written by start() alone, before)
  bool joined GUARDED_BY(wait_mu) = false;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Server::Impl& srv, tcp::socket&& socket)
      : srv_(srv), strand_(socket.get_executor()), stream_(std::move(socket)) {
    beast::error_code ec;
    auto ep = stream_.socket().remote_endpoint(ec);
    if (!ec) remote_ip_ = ip_string(ep);
  }
  ~Connection() { srv_.remove(this); }

  const net::any_io_executor& strand() const { return strand_; }

  void start() { do_read(); }

  // Server stopping: an idle keep-alive connection is closed now; a busy one finishes its
  // current request and closes after the response (do_read() checks `stopping`).
  void notify_stop() {
    if (state_ == State::idle) close();
  }

  void force_close() { close(); }

 private:
  enum class State { idle, reading, handling, writing, closing, closed };

  void do_read() {
    if (srv_.stopping.load()) return close();
    if (buffer_.size() == 0) {
      state_ = State::idle;
      if (buffer_.capacity() > kShrinkAbove) buffer_.shrink_to_fit();
      stream_.expires_after(std::chrono::milliseconds(first_ ? srv_.opt.header_timeout_ms : srv_.opt.idle_timeout_ms));
      stream_.async_read_some(buffer_.prepare(kIdleReadBytes),
                              [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                                if (ec) return self->close();
                                self->buffer_.commit(n);
                                self->read_header();
                              });
      return;
    }
    read_header();
  }

  void read_header() {
    state_ = State::reading;
    first_ = false;
    started_ = Clock::now();
    log_ = AccessLogEntry{};
    log_.time_ms = now_ms();
    log_.remote = remote_ip_;
    keep_alive_ = false;
    head_ = false;
    version_ = 11;
    locale_ = srv_.opt.default_locale;
    request_id_.clear();
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(srv_.opt.max_header_bytes, UINT32_MAX)));
    parser_->body_limit(srv_.opt.max_body_bytes);
    stream_.expires_after(std::chrono::milliseconds(srv_.opt.header_timeout_ms));
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
  }

  // Takes what the parser already knows (locale, request id, method, path) for an error answer.
  void absorb_partial_header() {
    const auto& h = parser_->get();
    locale_ = i18n::negotiate(h[bhttp::field::accept_language], srv_.opt.default_locale);
    std::string_view rid = h["x-request-id"];
    if (valid_request_id(rid)) request_id_ = std::string(rid);
    log_.method = std::string(h.method_string());
    std::string_view t = h.target();
    log_.path = std::string(t.substr(0, t.find('?')));
    log_.user_agent = std::string(h[bhttp::field::user_agent]);
  }

  void on_header(beast::error_code ec) {
    if (ec == bhttp::error::body_limit) {
      absorb_partial_header();
      return fail(make_error(ErrorKind::payload_too_large, "payload_too_large",
                             boost::json::object{{"max_body_bytes", srv_.opt.max_body_bytes}}));
    }
    if (ec == bhttp::error::header_limit)
      return fail(make_error(ErrorKind::headers_too_large, "header_too_large",
                             boost::json::object{{"max_header_bytes", srv_.opt.max_header_bytes}}));
    if (ec && is_disconnect(ec)) return close();
    if (ec && ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category())
      return fail(bad_request("bad_request", boost::json::string("malformed HTTP request: " + ec.message())));
    if (ec) return close();

    auto& h = parser_->get();
    if (h.version() >= 11 && h.count(bhttp::field::host) != 1) {
      absorb_partial_header();
      return fail(bad_request("bad_request", boost::json::object{{"host", "exactly one Host header is required"}}));
    }
    if (auto problem = framing_problem(h); !problem.empty()) {
      absorb_partial_header();
      return fail(bad_request("bad_request", boost::json::object{{"transfer-encoding", problem}}));
    }
    if (parser_->is_done()) return dispatch();
    if (h.version() >= 11 && iequals(h[bhttp::field::expect], "100-continue")) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      stream_.expires_after(std::chrono::milliseconds(srv_.opt.write_timeout_ms));
      net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                       [self = shared_from_this()](beast::error_code ec, std::size_t) {
                         if (ec) return self->close();
                         self->read_body();
                       });
      return;
    }
    read_body();
  }

  void read_body() {
    stream_.expires_after(std::chrono::milliseconds(srv_.opt.body_timeout_ms));
    bhttp::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec == bhttp::error::body_limit) {
        self->absorb_partial_header();
        return self->fail(make_error(ErrorKind::payload_too_large, "payload_too_large",
                                     boost::json::object{{"max_body_bytes", self->srv_.opt.max_body_bytes}}));
      }
      if (ec && is_disconnect(ec)) return self->close();
      if (ec && ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category()) {
        self->absorb_partial_header();
        return self->fail(bad_request("bad_request", boost::json::string("malformed HTTP request: " + ec.message())));
      }
      if (ec) return self->close();
      self->dispatch();
    });
  }

  // Builds the web::Request, then hands it to the handler pool.
  void dispatch() {
    auto msg = parser_->release();
    parser_.reset();
    srv_.requests.fetch_add(1, std::memory_order_relaxed);

    web::Request req;
    req.method = std::string(msg.method_string());
    for (char& c : req.method) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    req.target = std::string(msg.target());
    req.headers.reserve(16);
    for (const auto& f : msg) req.headers.emplace_back(lower(f.name_string()), std::string(f.value()));
    req.body = std::move(msg.body());
    req.remote_ip = remote_ip_;
    std::string_view rid = req.header("x-request-id");
    req.request_id = valid_request_id(rid) ? std::string(rid) : uuid_v4();
    req.locale = i18n::negotiate(req.header("accept-language"), srv_.opt.default_locale);

    request_id_ = req.request_id;
    locale_ = req.locale;
    keep_alive_ = msg.keep_alive();
    head_ = req.method == "HEAD";
    version_ = msg.version();
    log_.method = req.method;
    log_.user_agent = std::string(req.header("user-agent"));

    Status target = web::parse_target(req.target, req);
    log_.path = req.path;
    if (!target) return fail(target.error());

    state_ = State::handling;
    // The way back for a response made later or elsewhere: posted to this connection's strand.
    // It holds the io_context's work, so the server does not stop under a pending answer.
    auto work = net::prefer(srv_.ioc.get_executor(), net::execution::outstanding_work.tracked);
    req.reply_to = [self = shared_from_this(), work, locale = req.locale](web::Response res, int route) {
      // A streamed body answered this way is made whole first, on the replying thread (no
      // route answers later with a stream today; its body must not be lost if one does).
      if (Status whole = web::collect_stream(res); !whole) res = web::error(locale, whole.error());
      net::post(self->strand_, [self, res = std::move(res), route, work]() mutable {
        self->log_.route_id = route;
        self->send(std::move(res));
      });
    };
    if (srv_.opt.run_inline && srv_.opt.run_inline(req)) {
      // A route that never blocks (non_blocking, or answers_later on a database that writes
      // asynchronously) runs on this strand: no hand-off. What must block goes to the pool.
      req.offload_to = [impl = &srv_](std::function<void()> job) { return impl->pool.try_post(std::move(job)); };
      web::Response res = run_handler(req);
      if (res.deferred) return;
      log_.route_id = req.route_id;
      if (Status whole = web::collect_stream(res); !whole) res = web::error(locale_, whole.error());
      send(std::move(res));
      return;
    }
    bool queued = srv_.pool.try_post([self = shared_from_this(), req = std::move(req)]() mutable {
      web::Response res = self->run_handler(req);
      if (res.deferred) return;
      if (res.stream) return self->stream(std::move(res), req.route_id);  // req (its reply_to) holds the work
      if (req.reply_to) return req.reply_to(std::move(res), req.route_id);
      // The handler took the reply channel and answered by its return value as well.
      spdlog::error("handler answered twice: request_id={} path={}", req.request_id, req.path);
    });
    if (!queued) {
      srv_.rejected_busy.fetch_add(1, std::memory_order_relaxed);
      web::Response res = web::error(locale_, unavailable("server busy, retry shortly"));
      res.set("Retry-After", "1");
      send(std::move(res));
    }
  }

  web::Response run_handler(web::Request& req) {
    try {
      return srv_.handler(req);
    } catch (const std::exception& e) {
      spdlog::error("handler failed: request_id={} method={} path={}: {}", req.request_id, req.method, req.path,
                    e.what());
    } catch (...) {
      spdlog::error("handler failed: request_id={} method={} path={}: unknown exception", req.request_id, req.method,
                    req.path);
    }
    return web::error(req.locale, internal_error());
  }

  // Answers an error and closes the connection (the stream may hold unread or unparsable bytes).
  void fail(const Error& err) {
    close_after_ = true;
    parser_.reset();
    send(web::error(locale_, err));
  }

  void send(web::Response r) {
    if (state_ == State::closed) return;
    prepare_header(r);
    bool bodiless_status = r.status < 200 || r.status == 204 || r.status == 304;
    if (bodiless_status) {
      log_.bytes = 0;
    } else if (head_) {
      res_.content_length(r.body.size());
      log_.bytes = 0;
    } else {
      log_.bytes = r.body.size();
      res_.body() = std::move(r.body);
      res_.content_length(res_.body().size());
    }
    state_ = State::writing;
    stream_.expires_after(std::chrono::milliseconds(srv_.opt.write_timeout_ms));
    bhttp::async_write(stream_, res_,
                       [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_write(ec); });
  }

  // On a handler thread: sends a response whose body is made piece by piece (web::Response::stream).
  // HTTP/1.1 gets the header, then one chunk per piece, each written before the next is made: this
  // thread waits for every write (on the strand), so one piece is held at a time and a slow client
  // slows the producer instead of filling memory (each write within write_timeout_ms). HEAD, an
  // HTTP/1.0 client and a bodiless status get the ordinary answer.
  void stream(web::Response r, int route_id) {
    const bool bodiless_status = r.status < 200 || r.status == 204 || r.status == 304 || r.status > 599;
    if (head_ || version_ == 10 || bodiless_status) {
      if (head_ || bodiless_status) {
        r.stream = nullptr;
      } else if (Status whole = web::collect_stream(r); !whole) {
        r = web::error(locale_, whole.error());
      }
      net::post(strand_, [self = shared_from_this(), r = std::move(r), route_id]() mutable {
        self->log_.route_id = route_id;
        self->send(std::move(r));
      });
      return;
    }
    web::BodyProducer produce = std::move(r.stream);
    r.stream = nullptr;
    beast::error_code ec = on_strand([&](auto done) {
      if (state_ == State::closed) return done(net::error::operation_aborted, 0);
      log_.route_id = route_id;
      prepare_header(r);
      res_.chunked(true);
      log_.bytes = 0;
      state_ = State::writing;
      serializer_.emplace(res_);
      stream_.expires_after(std::chrono::milliseconds(srv_.opt.write_timeout_ms));
      bhttp::async_write_header(stream_, *serializer_, std::move(done));
    });
    std::string piece;
    for (bool more = true; !ec && more;) {
      piece.clear();
      Result<bool> next = false;
      try {
        next = produce(piece);
      } catch (const std::exception& e) {
        next = internal_error(boost::json::string(e.what()));
      }
      if (!next) {
        spdlog::error("streamed body failed: request_id={}: {} {}", request_id_, next.error().code,
                      boost::json::serialize(next.error().details));
        ec = net::error::operation_aborted;  // cut the connection: the body is incomplete
        break;
      }
      more = *next;
      if (piece.empty()) continue;
      ec = on_strand([&](auto done) {
        if (state_ == State::closed) return done(net::error::operation_aborted, 0);
        log_.bytes += piece.size();
        stream_.expires_after(std::chrono::milliseconds(srv_.opt.write_timeout_ms));
        net::async_write(stream_, bhttp::make_chunk(net::buffer(piece)), std::move(done));
      });
    }
    if (!ec)
      ec = on_strand([&](auto done) {
        if (state_ == State::closed) return done(net::error::operation_aborted, 0);
        stream_.expires_after(std::chrono::milliseconds(srv_.opt.write_timeout_ms));
        net::async_write(stream_, bhttp::make_chunk_last(), std::move(done));
      });
    net::post(strand_, [self = shared_from_this(), ec] {
      self->serializer_.reset();
      self->on_write(ec);
    });
  }

  // From a handler thread: runs start(done) on the strand and waits until done(ec, bytes) is
  // called. A handler dropped without running (the I/O stopped) counts as aborted.
  template <class Start>
  beast::error_code on_strand(Start start) {
    auto finished = std::make_shared<std::promise<beast::error_code>>();
    auto result = finished->get_future();
    net::post(strand_, [self = shared_from_this(), &start, finished]() mutable {
      start([finished](beast::error_code ec, std::size_t) { finished->set_value(ec); });
    });
    try {
      return result.get();
    } catch (const std::future_error&) {
      return net::error::operation_aborted;
    }
  }

  // The status line and headers of `r` into res_ (its body not yet set), and the access log's
  // status and request id.
  void prepare_header(web::Response& r) {
    if (request_id_.empty()) request_id_ = uuid_v4();
    if (r.status < 100 || r.status > 599) {
      spdlog::error("handler returned invalid status {}: request_id={}", r.status, request_id_);
      r = web::error(locale_, internal_error());
    }
    res_ = {};
    res_.version(version_ == 10 ? 10 : 11);
    res_.result(static_cast<unsigned>(r.status));
    for (auto& [name, value] : r.headers) {
      if (iequals(name, "content-length") || iequals(name, "transfer-encoding") || iequals(name, "connection") ||
          iequals(name, "x-request-id") || iequals(name, "date"))
        continue;
      if (!valid_header_name(name) || !valid_header_value(value)) {
        spdlog::warn("dropped invalid response header {}: request_id={}", name, request_id_);
        continue;
      }
      res_.insert(name, value);
    }
    res_.set(bhttp::field::date, http_date());
    res_.set("X-Request-Id", request_id_);
    bool ka = keep_alive_ && !close_after_ && !srv_.stopping.load();
    res_.keep_alive(ka);
    keep_alive_ = ka;
    log_.status = r.status;
    log_.request_id = request_id_;
  }

  void on_write(beast::error_code ec) {
    log_.duration_us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started_).count();
    if (srv_.opt.access_log) {
      try {
        srv_.opt.access_log(std::move(log_));
      } catch (const std::exception& e) {
        spdlog::error("access log callback failed: {}", e.what());
      }
    }
    res_ = {};
    if (ec) return close();
    if (!keep_alive_) return linger_close();
    do_read();
  }

  // Half-closes, then discards what the client still sends for a while, so that the kernel
  // does not answer unread bytes with a reset that would destroy the response in flight.
  void linger_close() {
    state_ = State::closing;
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return close();
    buffer_.clear();
    linger_deadline_ = Clock::now() + kLingerTime;
    drain();
  }

  // Reads and discards until the client closes, stays silent for kLingerIdle, or the
  // kLingerTime / kLingerMaxBytes budget is spent.
  void drain() {
    stream_.expires_at(std::min(linger_deadline_, Clock::now() + kLingerIdle));
    buffer_.clear();
    stream_.async_read_some(buffer_.prepare(16384), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
      self->drained_ += n;
      if (ec || self->drained_ > kLingerMaxBytes) return self->close();
      self->drain();
    });
  }

  void close() {
    if (state_ == State::closed) return;
    state_ = State::closed;
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }

  Server::Impl& srv_;
  net::any_io_executor strand_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  bhttp::response<bhttp::string_body> res_;
  std::optional<bhttp::response_serializer<bhttp::string_body>> serializer_;  // a streamed response's header
  std::string remote_ip_;
  State state_ = State::idle;
  bool first_ = true;
  bool close_after_ = false;
  bool keep_alive_ = false;
  bool head_ = false;
  unsigned version_ = 11;
  i18n::Locale locale_ = i18n::Locale::fr;
  std::string request_id_;
  std::size_t drained_ = 0;
  Clock::time_point linger_deadline_;
  Clock::time_point started_ = Clock::now();
  AccessLogEntry log_;
};

void Server::Impl::add(const std::shared_ptr<Connection>& c) {
  sika::MutexLock lock(conns_mu);
  conns.emplace(c.get(), c);
}

void Server::Impl::remove(Connection* c) {
  sika::MutexLock lock(conns_mu);
  conns.erase(c);
}

std::vector<std::shared_ptr<Connection>> Server::Impl::snapshot() {
  std::vector<std::shared_ptr<Connection>> out;
  sika::MutexLock lock(conns_mu);
  out.reserve(conns.size());
  for (auto& [_, w] : conns)
    if (auto c = w.lock()) out.push_back(std::move(c));
  return out;
}

void Server::Impl::do_accept() {
  acceptor.async_accept(net::make_strand(ioc),
                        [this](beast::error_code ec, tcp::socket socket) { on_accept(ec, std::move(socket)); });
}

void Server::Impl::on_accept(beast::error_code ec, tcp::socket socket) {
  if (stopping.load() || !acceptor.is_open()) return;
  if (ec) {
    // EMFILE and friends: back off instead of spinning.
    spdlog::warn("accept failed: {}", ec.message());
    accept_retry.expires_after(std::chrono::milliseconds(50));
    accept_retry.async_wait([this](beast::error_code wec) {
      if (!wec && !stopping.load()) do_accept();
    });
    return;
  }
  bool full;
  {
    sika::MutexLock lock(conns_mu);
    full = conns.size() >= opt.max_connections;
  }
  if (full) {
    beast::error_code ignored;
    socket.close(ignored);
  } else {
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    auto conn = std::make_shared<Connection>(*this, std::move(socket));
    add(conn);
    net::dispatch(conn->strand(), [conn] { conn->start(); });
  }
  do_accept();
}

void Server::Impl::begin_shutdown() {
  if (shutdown_begun) return;
  shutdown_begun = true;
  beast::error_code ignored;
  acceptor.close(ignored);
  accept_retry.cancel();
  shutdown_deadline = Clock::now() + std::chrono::milliseconds(opt.shutdown_grace_ms);
  for (auto& c : snapshot()) net::post(c->strand(), [c] { c->notify_stop(); });
  poll_shutdown();
}

void Server::Impl::poll_shutdown() {
  auto live = snapshot();
  if (live.empty()) return;  // nothing left: the io_context runs out of work and its threads exit
  if (!forced && Clock::now() >= shutdown_deadline) {
    forced = true;
    spdlog::warn("shutdown grace period over: closing {} connection(s)", live.size());
    for (auto& c : live) net::post(c->strand(), [c] { c->force_close(); });
  }
  live.clear();
  shutdown_timer.expires_after(kShutdownPoll);
  shutdown_timer.async_wait([this](beast::error_code ec) {
    if (!ec) poll_shutdown();
  });
}

Server::Server(ServerOptions options, RequestHandler handler)
    : impl_(std::make_shared<Impl>(std::move(options), std::move(handler))) {}

Server::~Server() {
  stop();
  wait();
}

Status Server::start() {
  Impl& s = *impl_;
  if (s.started.exchange(true)) return internal_error("server already started");
  beast::error_code ec;
  tcp::resolver resolver(s.ioc);
  auto results = resolver.resolve(s.opt.host, std::to_string(s.opt.port),
                                  tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || results.empty())
    return internal_error(boost::json::string("cannot resolve listen host " + s.opt.host + ": " + ec.message()));
  tcp::endpoint ep = results.begin()->endpoint();
  s.acceptor.open(ep.protocol(), ec);
  if (!ec) s.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(ep, ec);
  if (!ec) s.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    beast::error_code ignored;
    s.acceptor.close(ignored);
    return internal_error(
        boost::json::string("cannot listen on " + s.opt.host + ":" + std::to_string(s.opt.port) + ": " + ec.message()));
  }
  s.bound_port = s.acceptor.local_endpoint().port();
  s.pool.start();
  net::dispatch(s.accept_strand, [impl = impl_.get()] {
    if (!impl->stopping.load()) impl->do_accept();
  });
  for (int i = 0; i < std::max(1, s.opt.io_threads); ++i) {
    s.io_threads.emplace_back([impl = impl_.get()] {
      for (;;) {
        try {
          impl->ioc.run();
          return;
        } catch (const std::exception& e) {
          spdlog::error("http I/O thread: unexpected exception: {}", e.what());
        }
      }
    });
  }
  // Handlers posted to the io_context capture a plain Impl*: the Impl outlives the I/O threads
  // (wait() joins them before it is destroyed), and nothing left unrun can keep it alive.
  s.running = true;
  if (s.stopping.load()) net::post(s.accept_strand, [impl = impl_.get()] { impl->begin_shutdown(); });
  return {};
}

unsigned short Server::port() const { return impl_->bound_port.load(); }

void Server::stop() {
  if (impl_->stopping.exchange(true)) return;
  if (!impl_->running.load()) return;  // not started, or start() failed: nothing runs
  net::post(impl_->accept_strand, [impl = impl_.get()] { impl->begin_shutdown(); });
}

void Server::wait() {
  Impl& s = *impl_;
  sika::MutexLock lock(s.wait_mu);
  if (s.joined) return;
  for (auto& t : s.io_threads) t.join();
  s.io_threads.clear();
  s.pool.shutdown();
  s.joined = true;
}

Server::Stats Server::stats() const {
  Stats st;
  {
    sika::MutexLock lock(impl_->conns_mu);
    st.connections_open = impl_->conns.size();
  }
  st.requests = impl_->requests.load();
  st.rejected_busy = impl_->rejected_busy.load();
  return st;
}

}  // namespace sika::http
