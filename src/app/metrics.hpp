#pragma once
// What `serve` exposes at GET /metrics (docs/metrics.md): HTTP requests by route and status,
// their latency, and the collectors that copy the server's, the database's, the access log's
// and the webhook worker's figures into the process registry at each scrape.
#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "core/metrics.hpp"
#include "http/access_log.hpp"
#include "http/server.hpp"
#include "web/router.hpp"

namespace sika::app {

struct Context;
class Config;

// Request counts by (method, route pattern, status) and latency by route. record() runs on I/O
// threads: after the first request of a (route, status) pair it is a few relaxed atomic
// operations, no lock. The route label is the pattern ("/api/webhook/endpoints/{endpoint_id}"),
// never the raw path, so the number of series stays bounded; requests that matched no route
// (404, 405, and what the server refused before routing) share route="unmatched".
class HttpMetrics {
 public:
  HttpMetrics(metrics::Registry& registry, const web::Router& router);
  void record(const http::AccessLogEntry& e);

 private:
  struct Series {
    std::string method;
    std::string route;
    metrics::Histogram* latency = nullptr;
    std::array<std::atomic<metrics::Counter*>, 500> by_status{};  // status 100..599
  };
  metrics::Counter& status_counter(Series& s, int status);

  metrics::Registry& registry_;
  std::vector<std::unique_ptr<Series>> routes_;  // by route id
  std::unique_ptr<Series> unmatched_;
};

// Registers the scrape-time collectors: HTTP server (open connections, busy refusals), access
// log (lines dropped), database (write units, commits, retries), webhooks (attempts, failures,
// pending deliveries and the age of the oldest one).
void register_collectors(metrics::Registry& registry, Context& ctx, const http::Server& server,
                         const http::AccessLog* access_log);

// GET /metrics: with metrics.token set, only `Authorization: Bearer <token>` (compared in
// constant time) gets the text; without one, only loopback peers do.
web::Response metrics_response(const Config& config, metrics::Registry& registry, const web::Request& req);

}  // namespace sika::app
