#pragma once
// All SQL of the dashboard (tables dsh_*, migration 16): operators, members and their roles,
// sessions, TOTP secrets and the audit log. Every function runs inside the caller's read or
// write unit.
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "store/db.hpp"
#include "web/message.hpp"

namespace sika::dashboard {

// What a session still owes before its pages open: the TOTP enrolment, the TOTP code, or nothing.
enum class SecondFactor { enrol, verify, done };
std::string_view second_factor_name(SecondFactor f);

// "owner" | "developer" | "viewer" | "operator" -> Role; Role::none for anything else.
web::Role parse_role(std::string_view name);

// A session row with its user, and the user's current role in the session's merchant (read at
// every request, so a removed or changed membership applies at once).
struct SessionRow {
  std::int64_t id = 0;
  std::int64_t user_id = 0;
  std::optional<std::int64_t> merchant_id;
  SecondFactor second_factor = SecondFactor::verify;
  std::int64_t created_at = 0;
  std::int64_t last_seen_at = 0;
  bool ended = false;
  std::string subject, email, name;
  bool user_active = false;
  bool is_operator = false;
  web::Role member_role = web::Role::none;  // in merchant_id
};

Status insert_session(store::Conn& c, std::string_view token_hash, std::int64_t user_id,
                      std::optional<std::int64_t> merchant_id, SecondFactor second_factor, std::int64_t now);
Result<std::optional<SessionRow>> find_session(store::Conn& c, std::string_view token_hash);
Status touch_session(store::Conn& c, std::int64_t session_id, std::int64_t now);
Status set_second_factor(store::Conn& c, std::int64_t session_id, SecondFactor f);
Status end_session(store::Conn& c, std::string_view token_hash, std::int64_t now);
// Deletes sessions that ended or began before `started_before` (past every absolute timeout).
Result<std::int64_t> purge_sessions(store::Conn& c, std::int64_t started_before);

// --- operators and members ---
Result<bool> is_operator(store::Conn& c, std::int64_t user_id);
Status add_operator(store::Conn& c, std::int64_t user_id, std::int64_t now);
struct Member {
  std::int64_t user_id = 0;
  std::string email, name;
  std::int64_t merchant_id = 0;
  web::Role role = web::Role::none;
  std::int64_t created_at = 0;
};
// Sets the user's role in the merchant (inserts or changes it).
Status put_member(store::Conn& c, std::int64_t user_id, std::int64_t merchant_id, web::Role role, std::int64_t now);
// Returns true iff a membership was removed.
Result<bool> remove_member(store::Conn& c, std::int64_t user_id, std::int64_t merchant_id);
// A merchant's members by e-mail.
Result<std::vector<Member>> list_members(store::Conn& c, std::int64_t merchant_id);
// The user's memberships, oldest first (the first is the merchant a new session opens on).
Result<std::vector<Member>> memberships(store::Conn& c, std::int64_t user_id);

// --- TOTP ---
struct TotpRow {
  std::string secret_sealed;
  bool confirmed = false;
  std::int64_t last_step = 0;
};
Result<std::optional<TotpRow>> find_totp(store::Conn& c, std::int64_t user_id);
// Stores a new unconfirmed secret, replacing an unconfirmed one; a confirmed one is kept (false).
Result<bool> put_pending_totp(store::Conn& c, std::int64_t user_id, std::string_view sealed, std::int64_t now);
// Records that the code of `step` was used: true iff no code of this or a later step was used
// before (a code works once), confirming the secret if it was pending.
Result<bool> use_totp_step(store::Conn& c, std::int64_t user_id, std::int64_t step, std::int64_t now);

// --- audit log ---
struct AuditEntry {
  std::int64_t id = 0;
  std::int64_t at = 0;
  std::int64_t user_id = 0;
  std::string actor;  // the user's e-mail at the time
  std::optional<std::int64_t> merchant_id;
  std::string action;   // e.g. "link.create"
  std::string object;   // the object's public reference
  std::string details;  // JSON text
};
Status append_audit(store::Conn& c, const AuditEntry& entry);
// Newest first; `merchant_id` nullopt: every entry (operators). Keyset on id (`before`).
Result<std::vector<AuditEntry>> list_audit(store::Conn& c, std::optional<std::int64_t> merchant_id,
                                           std::optional<std::int64_t> before, int limit);

// --- system health (operators) ---
// The webhook outbox and its deliveries, read with bounded cost (primary-key ranges only).
struct OutboxLag {
  std::int64_t waiting = 0;               // events not yet fanned out to endpoints
  std::optional<std::int64_t> oldest_at;  // creation time of the oldest of them
};
Result<OutboxLag> outbox_lag(store::Conn& c);
// Outcomes of the last `limit` webhook delivery attempts: outcome -> count ("succeeded",
// "http_error", "timeout", ...).
Result<std::vector<std::pair<std::string, std::int64_t>>> recent_attempt_outcomes(store::Conn& c, int limit);

}  // namespace sika::dashboard
