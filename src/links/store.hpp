#pragma once
// All SQL of payment links (tables lnk_links and lnk_payments, migration 12). Every function
// runs inside the caller's read or write unit.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "links/model.hpp"
#include "store/db.hpp"

namespace sika::links::tables {

// Inserts a link; nullopt when its reference or short code is taken (the caller draws again).
Result<std::optional<std::int64_t>> insert_link(store::Conn& c, const Link& link);

// A link by short code (any merchant; without its figures, which stay 0: paying and the public
// page read one row), or with its figures by reference within one merchant's environment
// (another merchant's link is not found).
Result<std::optional<Link>> by_short_code(store::Conn& c, std::string_view short_code);
Result<std::optional<Link>> by_reference(store::Conn& c, std::int64_t merchant_id, std::string_view environment,
                                         std::string_view reference);

struct ListFilter {
  std::optional<std::string> status;     // ACTIVE | DISABLED | EXPIRED
  std::optional<std::int64_t> from, to;  // created_at bounds, inclusive (epoch ms)
  std::int64_t limit = 25, offset = 0;
};
// A merchant's links newest first, and how many match in all.
Result<std::pair<std::vector<Link>, std::int64_t>> list(store::Conn& c, std::int64_t merchant_id,
                                                        std::string_view environment, const ListFilter& f,
                                                        std::int64_t now);

// Applies an update; returns whether the link existed.
Result<bool> update(store::Conn& c, std::int64_t link_id, const LinkUpdate& u, std::int64_t now);
Result<bool> set_status(store::Conn& c, std::int64_t link_id, std::string_view status, std::int64_t now);
// Disables the link `reference` inside the caller's unit unless one of its payments completed or
// may still complete (a collection not FAILED, EXPIRED or CANCELLED, or a use reserved without
// one); true iff it did. A payment takes its use by a conditional UPDATE of the same row
// (take_use), so of this and a concurrent payment whichever commits first wins: after a true,
// the link can no longer be paid.
Result<bool> close_unpaid(store::Conn& c, std::string_view reference, std::int64_t now);

// --- uses (docs/payment-links.md, "Single use under concurrency") ---

// Records the payer's attempt (link, payer_uuid) as RESERVED; nullopt when it already exists.
Result<std::optional<std::int64_t>> insert_attempt(store::Conn& c, std::int64_t link_id, std::string_view payer_uuid,
                                                   std::string_view transaction_uuid, std::int64_t now);
struct Attempt {
  std::int64_t id = 0;
  std::string transaction_uuid;
  std::string state;  // RESERVED | RELEASED
};
Result<std::optional<Attempt>> find_attempt(store::Conn& c, std::int64_t link_id, std::string_view payer_uuid);
// Takes one use: true iff the link is ACTIVE, unexpired at `now` and has a use left.
Result<bool> take_use(store::Conn& c, std::int64_t link_id, std::int64_t now);
// Gives back the use of one RESERVED attempt (exactly once); true iff this call released it.
Result<bool> release_attempt(store::Conn& c, std::int64_t link_id, std::int64_t attempt_id);
// Gives back the uses of attempts whose collection ended without completing (FAILED, EXPIRED,
// CANCELLED), and of attempts older than `stale_before` that never got a collection; returns
// how many were released.
Result<std::int64_t> release_ended(store::Conn& c, const Link& link, std::int64_t stale_before);

}  // namespace sika::links::tables
