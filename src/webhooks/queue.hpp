#pragma once
// The delivery queue in the database, shared by every node:
//  - fan_out turns new outbox events into one delivery row per subscribed endpoint;
//  - claim leases due deliveries to one worker (a lease owner token and an expiry); a claimed
//    delivery is invisible to other claims until its lease expires, so two workers never hold
//    the same delivery at once, and one that dies mid-delivery loses it only for the lease;
//  - record stores attempts and moves each delivery on (succeeded, retry later, failed).
// Every function is one write unit with no network I/O.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "store/db.hpp"
#include "webhooks/model.hpp"
#include "webhooks/schedule.hpp"

namespace sika::webhooks {

struct FanoutOptions {
  std::string owner;                         // this node; holds the fan-out lease
  int batch = 1000;                          // events per call
  std::int64_t lease_ms = 30'000;            // other nodes stay off the fan-out for this long
  std::int64_t gap_ttl_ms = 10 * 60 * 1000;  // how long a missing event id is waited for
};

struct FanoutResult {
  bool leased = true;  // false: another node is fanning out
  int events = 0;      // events read
  int deliveries = 0;  // deliveries created
  bool more = false;   // a full batch was read: call again
};

// Reads events past the cursor (plus ids that were missing last time: on PostgreSQL a lower id
// can commit after a higher one) and creates their deliveries, due now, for the merchant's
// enabled endpoints subscribed to the kind and created before the event. Idempotent.
Result<FanoutResult> fan_out(store::Db& db, const FanoutOptions& options, std::int64_t now);

struct ClaimOptions {
  std::string owner;                                          // lease owner token, unique per claim call
  int limit = 256;                                            // most deliveries claimed
  int per_endpoint = 8;                                       // most deliveries of one endpoint claimed
  std::vector<std::pair<std::int64_t, int>> endpoint_limits;  // per-endpoint overrides of per_endpoint
  std::vector<std::int64_t> exclude_endpoints;                // endpoints this worker cannot take more of
  std::int64_t after_endpoint = 0;                            // round-robin: endpoints after this row id come first
  std::int64_t lease_ms = 60'000;
};

// A leased delivery with everything needed to send it.
struct Claimed {
  std::int64_t delivery_row = 0;
  std::string delivery_id;
  int attempt = 1;  // number of the attempt about to be made
  std::string lease_owner;
  std::int64_t lease_until = 0;
  std::int64_t endpoint_row = 0;
  std::string endpoint_id;
  std::string url;
  std::int64_t merchant_id = 0;
  std::string secret_box;
  std::optional<std::string> previous_secret_box;
  std::optional<std::int64_t> previous_secret_expires_at;
  Event event;
};

// Leases up to `limit` due deliveries of enabled endpoints (PostgreSQL: FOR UPDATE SKIP LOCKED;
// both: a conditional UPDATE on status and due time), at most `per_endpoint` per endpoint.
Result<std::vector<Claimed>> claim(store::Db& db, const ClaimOptions& options, std::int64_t now);

// What one HTTP attempt gave. outcome: "succeeded" (2xx), "gone" (410), "http_error" (other
// status), "timeout", "network_error", "blocked_address" (SSRF check at delivery), "signing_error",
// or "deferred": not sent at all (the client's per-host limit was full), so no attempt is
// counted and the delivery is due again one second later.
struct AttemptResult {
  std::int64_t delivery_row = 0;
  std::int64_t endpoint_row = 0;
  std::string lease_owner;
  int attempt = 1;
  std::int64_t started_at = 0;
  std::int64_t finished_at = 0;
  std::int64_t latency_ms = 0;
  std::optional<int> status_code;
  std::string outcome;
  std::optional<std::string> error;
  std::optional<std::string> response_excerpt;  // already bounded and sanitized
};

struct RecordOptions {
  RetrySchedule schedule;
  std::int64_t disable_after_ms = 3LL * 24 * 3600 * 1000;  // failing this long with no success: disabled
  std::string worker;                                      // recorded with each attempt
};

struct RecordResult {
  int recorded = 0;
  int stale = 0;  // attempts whose lease had been lost (recorded; the delivery was left alone)
  std::vector<std::int64_t> disabled_endpoints;
};

// Records the attempts and applies each outcome: success ends the delivery; 410 ends it and
// disables the endpoint; other failures schedule the next attempt or, past the schedule, fail it.
// Tracks the endpoint's failure streak and disables it after `disable_after_ms` without success.
Result<RecordResult> record(store::Db& db, const std::vector<AttemptResult>& results, const RecordOptions& options,
                            std::int64_t now);

// Gives claimed but unsent deliveries back (due now), e.g. at shutdown.
Status release(store::Db& db, const std::vector<Claimed>& claimed, std::int64_t now);

}  // namespace sika::webhooks
