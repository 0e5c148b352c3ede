#pragma once
// All SQL of hosted checkout (tables chk_sessions and chk_domains, migration 13; chk_secrets,
// migration 19; chk_settings, migration 28). Every function runs inside the caller's read or
// write unit.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "checkout/model.hpp"
#include "core/result.hpp"
#include "store/db.hpp"

namespace sika::checkout::tables {

// Inserts a session; nullopt when its (merchant, environment, orderId) or reference exists.
Result<std::optional<std::int64_t>> insert(store::Conn& c, const Session& s);
// Gives an unpaid session's row a new life for the same order (new reference, fields, expiry,
// OPEN, the attempt counter moved on so a page of the old session can take no attempt), only
// while its attempt is still `attempt` and it is not PAID; true iff it did.
Result<bool> reopen(store::Conn& c, std::int64_t id, std::int64_t attempt, const Session& s);
Result<std::optional<Session>> by_reference(store::Conn& c, std::string_view reference);
// A merchant's sessions of one environment, newest first: at most `limit`, those with an id below
// `before` when set (keyset pages; index chk_sessions_merchant, migration 22).
Result<std::vector<Session>> list(store::Conn& c, std::int64_t merchant_id, std::string_view environment,
                                  std::optional<std::int64_t> before, int limit);
Result<std::optional<Session>> by_order(store::Conn& c, std::int64_t merchant_id, std::string_view environment,
                                        std::string_view order_id);
// Takes attempt `seen + 1`: true iff the session is OPEN, unexpired at `now`, and its attempt
// is still `seen` (so two submissions of the same page make one collection). Runs in the unit
// that creates the attempt's collection (Service::pay), with the check of attempt `seen`'s.
Result<bool> take_attempt(store::Conn& c, std::int64_t id, std::int64_t seen, std::int64_t now);
// OPEN -> PAID / CANCELLED; CANCELLED only while the attempt is still `seen`. True iff it moved.
Result<bool> mark_paid(store::Conn& c, std::int64_t id, std::int64_t now);
Result<bool> cancel(store::Conn& c, std::int64_t id, std::int64_t seen, std::int64_t now);

// The latest rotated checkout secret version of a merchant (nullopt: version 1, never rotated):
// its version and salt.
Result<std::optional<std::pair<std::int64_t, std::string>>> latest_secret(store::Conn& c, std::int64_t merchant_id);
// Records version `version` with its salt; false when that version exists (a concurrent rotation).
Result<bool> insert_secret(store::Conn& c, std::int64_t merchant_id, std::int64_t version, std::string_view salt,
                           std::int64_t now);

// "Signed checkout requests only" (chk_settings, migration 28): true when every POST
// {checkout_url} of the merchant must carry a valid signature. No row: off.
Result<bool> signed_only(store::Conn& c, std::int64_t merchant_id);
// Turns it on or off (`by`: who, for the row); true iff it changed (conditional statements, so two
// concurrent identical changes report one change).
Result<bool> set_signed_only(store::Conn& c, std::int64_t merchant_id, bool on, std::string_view by, std::int64_t now);

// The domains a merchant's return URLs must belong to (empty: any host).
Result<std::vector<std::string>> domains(store::Conn& c, std::int64_t merchant_id);
Status add_domain(store::Conn& c, std::int64_t merchant_id, std::string_view domain, std::int64_t now);
Result<bool> remove_domain(store::Conn& c, std::int64_t merchant_id, std::string_view domain);

}  // namespace sika::checkout::tables
