#pragma once
// The HTTP/1.1 server: Boost.Beast on N I/O threads, handlers on a bounded thread pool.
// No Beast or Asio type appears in this header (the implementation is behind a pimpl) so
// that including it costs nothing. See docs/http.md for limits, timeouts and shutdown.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/i18n.hpp"
#include "core/result.hpp"
#include "web/message.hpp"

namespace sika::http {

// One line of the access log, produced after each response is sent (or the connection
// dropped while answering). The query string is never logged: it may carry secrets.
struct AccessLogEntry {
  std::int64_t time_ms = 0;  // epoch milliseconds when the request started
  std::string request_id;
  std::string remote;  // peer IP address
  std::string method;  // "" when the request line could not be parsed
  std::string path;    // percent-decoded path, without the query string
  int status = 0;
  std::uint64_t bytes = 0;       // response body bytes (0 for HEAD)
  std::int64_t duration_us = 0;  // first byte of the request -> last byte of the response
  std::string user_agent;
  int route_id = -1;  // web::Request::route_id after the handler (-1: no route matched)

  // Returns the entry as one JSON object on one line (no trailing newline):
  // {"time":"...Z","request_id":..,"remote":..,"method":..,"path":..,"status":..,
  //  "bytes":..,"duration_us":..,"user_agent":..}
  std::string json() const;
  // Appends json() and a newline to `out` (the access-log writer batches lines this way).
  void append_line(std::string& out) const;
};

struct ServerOptions {
  std::string host = "127.0.0.1";  // IP literal or resolvable name ("0.0.0.0", "::")
  unsigned short port = 8080;      // 0 picks a free port (see Server::port())
  int io_threads = 2;
  int handler_threads = 32;
  std::size_t handler_queue = 10000;    // requests waiting for a handler thread; beyond: 503
  std::size_t max_connections = 10000;  // beyond: new connections are closed at once
  std::size_t max_body_bytes = 1 << 20;
  std::size_t max_header_bytes = 16 * 1024;  // request line + header fields
  int header_timeout_ms = 10000;             // request line + headers, and a new connection's first byte
  int body_timeout_ms = 30000;               // whole body once the headers are in
  int write_timeout_ms = 30000;              // whole response
  int idle_timeout_ms = 60000;               // keep-alive connection waiting for its next request
  int shutdown_grace_ms = 15000;             // stop(): how long in-flight requests may take to finish
  // Requests for which this returns true run on the I/O thread instead of the handler pool.
  // Only for handlers that never block (no database, no I/O, bounded CPU), such as /healthz.
  std::function<bool(const web::Request&)> run_inline;
  // Called on an I/O thread after each response: must not block (see http::AccessLog).
  std::function<void(AccessLogEntry&&)> access_log;
  i18n::Locale default_locale = i18n::Locale::fr;
};

using RequestHandler = std::function<web::Response(web::Request&)>;

// An HTTP/1.1 server. Thread-safe: stop() may be called from any thread (a signal watcher,
// a handler), several times. Destroying a running server stops it and waits.
class Server {
 public:
  Server(ServerOptions options, RequestHandler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds, listens and starts the I/O and handler threads; returns at once.
  // Fails (500 "internal_error" with the reason in details) when the address cannot be bound.
  Status start();
  // The bound port (meaningful after start(); resolves port 0).
  unsigned short port() const;
  // Graceful: stops accepting, closes idle keep-alive connections, lets in-flight requests
  // finish and answers them with "Connection: close", force-closes what is left after
  // shutdown_grace_ms. Returns at once; wait() blocks until all of that is done.
  void stop();
  // Blocks until stop() has completed and every I/O and handler thread has exited.
  // Must not be called from a handler.
  void wait();

  // Counters, for tests and /metrics.
  struct Stats {
    std::uint64_t connections_open = 0;
    std::uint64_t requests = 0;
    std::uint64_t rejected_busy = 0;  // 503 because the handler queue was full
  };
  Stats stats() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// Returns true iff `id` is acceptable as a client-supplied X-Request-Id:
// 1 to 128 visible ASCII characters (0x21..0x7e).
bool valid_request_id(std::string_view id);

}  // namespace sika::http
