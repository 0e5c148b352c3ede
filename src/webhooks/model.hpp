#pragma once
// Webhook objects as stored and as shown to merchants.
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/state_machine.hpp"

namespace sika::webhooks {

// A merchant's notification endpoint. Its signing secret is never part of this view.
struct Endpoint {
  std::int64_t row = 0;
  std::string id;  // public id "we_..."
  std::int64_t merchant_id = 0;
  std::string url;
  std::string description;
  std::vector<std::string> event_types;  // {"*"} = every kind
  bool enabled = true;
  std::optional<std::string> disabled_reason;  // "merchant", "gone" (410), "failing", "operator"
  std::optional<std::int64_t> disabled_at;
  std::int64_t secret_created_at = 0;
  std::optional<std::int64_t> previous_secret_expires_at;
  std::optional<std::int64_t> failing_since;
  std::optional<std::int64_t> last_success_at;
  std::optional<std::int64_t> last_failure_at;
  std::int64_t created_at = 0;
  std::int64_t updated_at = 0;
};

// An endpoint with its secret in clear, returned once by creation and rotation.
struct EndpointWithSecret {
  Endpoint endpoint;
  std::string secret;  // "whsec_..."
};

// Delivery states: pending (due or waiting for a retry), succeeded, failed (retries exhausted
// or 410 Gone), cancelled (the endpoint was disabled or deleted before it succeeded).
inline constexpr std::string_view kPending = "pending";
inline constexpr std::string_view kSucceeded = "succeeded";
inline constexpr std::string_view kFailed = "failed";
inline constexpr std::string_view kCancelled = "cancelled";
// A recorded attempt keeps a delivery pending (a retry is due later) or ends it; disabling or
// deleting its endpoint cancels it. No event (deliveries carry events; they emit none).
enum class DeliveryStatus { pending, succeeded, failed, cancelled };
inline constexpr store::StateMachine<DeliveryStatus, 4, 4> kDeliveryStatus{
    "webhook_deliveries",
    {kPending, kSucceeded, kFailed, kCancelled},
    {{{DeliveryStatus::pending, DeliveryStatus::pending, ""},
      {DeliveryStatus::pending, DeliveryStatus::succeeded, ""},
      {DeliveryStatus::pending, DeliveryStatus::failed, ""},
      {DeliveryStatus::pending, DeliveryStatus::cancelled, ""}}}};

// One event sent to one endpoint (a redelivery is a new delivery of the same event).
struct Delivery {
  std::int64_t row = 0;
  std::string id;  // public id "wd_..."
  std::string event_id;
  std::string event_type;
  std::string endpoint_id;
  std::string url;
  std::int64_t generation = 0;  // 0 = automatic, 1.. = redeliveries asked for
  std::string status;
  std::int64_t attempts = 0;
  std::optional<std::int64_t> next_attempt_at;  // pending only
  std::optional<std::int64_t> last_attempt_at;
  std::optional<std::int64_t> last_status_code;
  std::optional<std::string> last_error;
  std::int64_t created_at = 0;
  std::optional<std::int64_t> completed_at;
};

// One HTTP attempt of a delivery, as recorded.
struct Attempt {
  std::int64_t attempt = 0;
  std::int64_t started_at = 0;
  std::int64_t latency_ms = 0;
  std::optional<std::int64_t> status_code;
  std::string outcome;  // "succeeded", "http_error", "timeout", "network_error", "blocked_address", "gone"
  std::optional<std::string> error;
  std::optional<std::string> response_excerpt;
};

// An outbox event of a merchant.
struct Event {
  std::int64_t row = 0;
  std::string event_id;
  std::string event_type;
  std::string subject;
  std::int64_t sequence = 0;
  std::string payload;  // JSON object text
  std::int64_t created_at = 0;
};

boost::json::object to_json(const Endpoint& e);
boost::json::object to_json(const EndpointWithSecret& e);
boost::json::object to_json(const Delivery& d);
boost::json::object to_json(const Attempt& a);
boost::json::object to_json(const Event& e);

// The body POSTed for an event: event_id, event_type, created_at, sequence, then the event's
// own payload fields (the spec's transaction fields). Deterministic for a given event.
std::string delivery_body(const Event& e);

// Returns true iff `event_type` matches one of `patterns` ("*", an exact kind, or "prefix.*").
bool matches(const std::vector<std::string>& patterns, std::string_view event_type);
std::string join_types(const std::vector<std::string>& types);
std::vector<std::string> split_types(std::string_view csv);
// Returns true iff `pattern` is a valid event-kind filter.
bool valid_type_pattern(std::string_view pattern);

// Returns prefix + 24 random lowercase hex characters.
std::string new_public_id(std::string_view prefix);

// Returns `text` cut to at most `max_bytes` bytes of valid UTF-8 without NUL bytes (invalid
// sequences become U+FFFD), so that any response body can be stored in a TEXT column.
std::string sanitize_excerpt(std::string_view text, std::size_t max_bytes);

}  // namespace sika::webhooks
