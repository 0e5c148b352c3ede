#pragma once
// The outbound HTTP(S) client (web::HttpClient) used for webhook delivery and sandbox
// callbacks: Beast + OpenSSL behind this Beast-free header. See docs/http.md
// ("Outbound client") for the SSRF policy, timeouts, pooling and per-host limits.
#include <cstddef>
#include <memory>
#include <string>

#include "web/client.hpp"

namespace sika::http {

struct ClientOptions {
  // Keep-alive pool: idle connections per (scheme, host, port), and in total.
  std::size_t max_idle_per_host = 4;
  std::size_t max_idle_total = 64;
  // An idle pooled connection older than this is closed instead of reused.
  int idle_keep_ms = 15000;
  // At most this many requests in flight to one (scheme, host, port); an extra caller waits
  // up to host_wait_ms (never past its connect timeout) for a slot, then gets 503 "host_busy".
  std::size_t max_in_flight_per_host = 8;
  int host_wait_ms = 1000;
  // Response header block limit (the body is bounded by ClientRequest::max_response_bytes).
  std::size_t max_response_header_bytes = 64 * 1024;
  std::string user_agent = "Sika/0.1";
  // PEM file of additional trust anchors (a private PKI, tests). The system CA store is
  // always trusted; peer and host name verification are always on.
  std::string extra_ca_file;
};

// Returns a client safe to share between threads. Errors of send():
//   400 "bad_request"      malformed URL (scheme other than http/https, credentials, bad host) or header
//   403 "blocked_address"  a resolved address is not public and allow_private_addresses is false
//   503 "host_busy"        max_in_flight_per_host reached for host_wait_ms
//   502 "upstream_error"   DNS failure, connection refused, TLS failure, malformed response
//   504 "upstream_timeout" connect (DNS + TCP + TLS) or exchange timeout
std::unique_ptr<web::HttpClient> make_http_client(ClientOptions options = {});

}  // namespace sika::http
