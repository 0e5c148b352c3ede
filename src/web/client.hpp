#pragma once
// Outbound HTTP(S) client interface, used by domains (webhook delivery, sandbox operator
// callbacks). The implementation lives in http/ (Beast + OpenSSL); app/ injects it.
#include <cstdint>
#include <memory>
#include <string>

#include "core/result.hpp"
#include "web/message.hpp"

namespace sika::web {

struct ClientRequest {
  std::string method = "POST";
  std::string url;  // http:// or https://
  Fields headers;
  std::string body;
  int connect_timeout_ms = 5000;
  int timeout_ms = 15000;                      // whole exchange after connecting
  std::size_t max_response_bytes = 64 * 1024;  // longer bodies are truncated, not an error
  // When false, every resolved address is checked and loopback, private (RFC 1918, CGNAT),
  // link-local (incl. 169.254.169.254), unique-local IPv6, multicast and unspecified
  // addresses are refused (SSRF protection). Redirects are never followed.
  bool allow_private_addresses = false;
};

struct ClientResponse {
  int status = 0;
  Fields headers;    // names lower-cased
  std::string body;  // at most max_response_bytes
  std::int64_t latency_ms = 0;
  std::string remote_ip;
};

class HttpClient {
 public:
  virtual ~HttpClient() = default;
  // Blocking; safe to call from many threads. Errors: kind forbidden "blocked_address" (SSRF),
  // 502 "upstream_error" (DNS, connect, TLS, protocol), 504 "upstream_timeout".
  virtual Result<ClientResponse> send(const ClientRequest& req) = 0;
};

}  // namespace sika::web
