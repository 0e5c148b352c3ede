#pragma once
// Endpoint management and the merchant's view of events and deliveries. Every call takes a
// scope: a merchant id (its own objects only; another merchant's object is "not found") or
// nullopt for the operator (admin CLI). Used by the gateway handlers and the admin CLI.
#include <boost/json/object.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "store/db.hpp"
#include "webhooks/model.hpp"
#include "webhooks/secret_box.hpp"
#include "webhooks/url_guard.hpp"

namespace sika::webhooks {

struct RegistryOptions {
  std::string pepper;                  // server pepper; keys the sealing of signing secrets
  bool allow_private_targets = false;  // development/tests: accept loopback and private URLs
  int max_endpoints_per_merchant = 20;
  std::int64_t secret_overlap_ms = 24LL * 3600 * 1000;  // default overlap of a rotation
  std::int64_t max_secret_overlap_ms = 7LL * 24 * 3600 * 1000;
};

// Fields a merchant may set on an endpoint; absent fields are left unchanged.
struct EndpointChange {
  std::optional<std::string> url;
  std::optional<std::vector<std::string>> event_types;
  std::optional<std::string> description;
  std::optional<bool> enabled;
};

// Reads an endpoint body ({url, event_types, description, enabled}); unknown fields are refused
// (the secret and the disabled mark are never set by a client). `creating` makes url required.
Result<EndpointChange> parse_endpoint_change(const boost::json::object& body, bool creating);

struct DeliveryFilter {
  std::optional<std::string> endpoint_id;
  std::optional<std::string> event_id;
  std::optional<std::string> status;
  std::optional<std::string> subject;  // the events' subject, e.g. a transaction_reference
};

template <class T>
struct Listing {
  std::vector<T> items;
  std::int64_t total = 0;
};

struct DeliveryDetail {
  Delivery delivery;
  std::vector<Attempt> attempts;
  Event event;
};

using Scope = std::optional<std::int64_t>;  // merchant id, or nullopt for the operator

class Registry {
 public:
  Registry(store::Db& db, RegistryOptions options, std::shared_ptr<Resolver> resolver = nullptr);

  // Creates an endpoint with a new secret (returned once). 400 with details on a bad or
  // non-public URL; 409 when the merchant already has the maximum number of endpoints.
  // `secret` (a "whsec_" secret) replaces the random one: the demo world derives its own.
  Result<EndpointWithSecret> create(std::int64_t merchant_id, const EndpointChange& change, std::int64_t now,
                                    const std::optional<std::string>& secret = std::nullopt);
  Result<Listing<Endpoint>> list(Scope scope, std::int64_t limit, std::int64_t offset);
  Result<Endpoint> get(Scope scope, std::string_view endpoint_id);
  // Changes fields; enabling clears the disabled mark and the failure streak, disabling
  // cancels the endpoint's pending deliveries.
  Result<Endpoint> update(Scope scope, std::string_view endpoint_id, const EndpointChange& change, std::int64_t now);
  // Deletes (soft: past deliveries stay listed) and cancels pending deliveries.
  Status remove(Scope scope, std::string_view endpoint_id, std::int64_t now);
  // Issues a new secret (returned once); the previous one keeps signing, beside the new one,
  // for `overlap_ms` (default options.secret_overlap_ms; 0 ends it at once).
  Result<EndpointWithSecret> rotate_secret(Scope scope, std::string_view endpoint_id,
                                           std::optional<std::int64_t> overlap_ms, std::int64_t now);

  Result<Listing<Delivery>> list_deliveries(Scope scope, const DeliveryFilter& filter, std::int64_t limit,
                                            std::int64_t offset);
  Result<DeliveryDetail> get_delivery(Scope scope, std::string_view delivery_id);
  Result<Listing<Event>> list_events(Scope scope, const std::optional<std::string>& event_type, std::int64_t limit,
                                     std::int64_t offset);
  // Queues a new delivery of the event, due now, to one endpoint or to every enabled endpoint
  // subscribed to its kind. 404 for an unknown event or endpoint; 409 when the endpoint is
  // disabled or when no endpoint subscribes.
  Result<std::vector<Delivery>> redeliver(Scope scope, std::string_view event_id,
                                          const std::optional<std::string>& endpoint_id, std::int64_t now);

  // The keys that sign a delivery now: the current secret, then the previous one while its
  // overlap lasts. Empty when the sealed secret cannot be opened (wrong pepper).
  std::vector<std::string> signing_keys(std::string_view endpoint_id, std::string_view secret_box,
                                        const std::optional<std::string>& previous_box,
                                        std::optional<std::int64_t> previous_expires_at, std::int64_t now) const;

  const RegistryOptions& options() const { return options_; }
  const SecretBox& secret_box() const { return box_; }

 private:
  Result<std::string> check(const std::string& url);

  store::Db& db_;
  RegistryOptions options_;
  SecretBox box_;
  std::shared_ptr<Resolver> resolver_;
};

// Disables an endpoint inside the caller's write unit: marks it (reason, time), cancels its
// pending deliveries and, for automatic reasons ("gone", "failing"), appends an
// "endpoint.disabled" event for the merchant. Returns false when it was already disabled.
Result<bool> disable_endpoint(store::Conn& c, std::int64_t endpoint_row, std::string_view reason, std::int64_t now);

// Reads an endpoint row by SELECT of kEndpointColumns.
extern const char* const kEndpointColumns;
Endpoint endpoint_from_row(const store::Row& r, std::size_t first = 0);

}  // namespace sika::webhooks
