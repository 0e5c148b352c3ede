#pragma once
// The webhooks component: merchant-facing gateway handlers for notification endpoints,
// deliveries and events, and the background delivery worker.
//
// Routes (gateway, JWT with scope "payments", the caller's merchant only; another merchant's
// object is a 404):
//   GET    /webhook/endpoints                        list_endpoints
//   POST   /webhook/endpoints                        create_endpoint   (secret shown once)
//   GET    /webhook/endpoints/{endpoint_id}          get_endpoint
//   PATCH  /webhook/endpoints/{endpoint_id}          update_endpoint
//   DELETE /webhook/endpoints/{endpoint_id}          delete_endpoint
//   POST   /webhook/endpoints/{endpoint_id}/rotate-secret   rotate_secret (new secret shown once)
//   GET    /webhook/deliveries                       list_deliveries (?endpoint_id, event_id, status)
//   GET    /webhook/deliveries/{delivery_id}         get_delivery (with every attempt)
//   GET    /webhook/events                           list_events (?event_type)
//   POST   /webhook/events/{event_id}/redeliver      redeliver ({endpoint_id} optional)
#include <memory>
#include <string>

#include "store/db.hpp"
#include "web/client.hpp"
#include "web/message.hpp"
#include "webhooks/registry.hpp"
#include "webhooks/worker.hpp"

namespace sika::webhooks {

struct Options {
  std::string pepper;                  // server pepper: seals the endpoints' signing secrets
  bool allow_private_targets = false;  // config webhooks.allow_private_targets
  int max_endpoints_per_merchant = 20;
  std::int64_t secret_overlap_ms = 24LL * 3600 * 1000;
  WorkerOptions worker;  // its allow_private_targets is set from the field above
};

class Service {
 public:
  Service(store::Db& db, web::HttpClient& client, Options options);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  Result<web::Response> list_endpoints(web::Request& req);
  Result<web::Response> create_endpoint(web::Request& req);
  Result<web::Response> get_endpoint(web::Request& req);
  Result<web::Response> update_endpoint(web::Request& req);
  Result<web::Response> delete_endpoint(web::Request& req);
  Result<web::Response> rotate_secret(web::Request& req);
  Result<web::Response> list_deliveries(web::Request& req);
  Result<web::Response> get_delivery(web::Request& req);
  Result<web::Response> list_events(web::Request& req);
  Result<web::Response> redeliver(web::Request& req);

  // Starts / stops the delivery worker (stop waits for requests in flight, at most the timeout).
  void start();
  void stop();

  Registry& registry() { return *registry_; }
  Worker& worker() { return *worker_; }

 private:
  store::Db& db_;
  std::unique_ptr<Registry> registry_;
  std::unique_ptr<Worker> worker_;
};

}  // namespace sika::webhooks
