#include "dashboard/store.hpp"

#include "core/reason.hpp"

namespace sika::dashboard {

std::string_view second_factor_name(SecondFactor f) {
  switch (f) {
    case SecondFactor::enrol: return "enrol";
    case SecondFactor::verify: return "verify";
    case SecondFactor::done: return "done";
  }
  return "verify";
}

namespace {
SecondFactor parse_second_factor(std::string_view s) {
  if (s == "done") return SecondFactor::done;
  if (s == "enrol") return SecondFactor::enrol;
  return SecondFactor::verify;
}
}  // namespace

web::Role parse_role(std::string_view name) {
  if (name == "owner") return web::Role::owner;
  if (name == "developer") return web::Role::developer;
  if (name == "viewer") return web::Role::viewer;
  if (name == "operator") return web::Role::operator_;
  return web::Role::none;
}

Status insert_session(store::Conn& c, std::string_view token_hash, std::int64_t user_id,
                      std::optional<std::int64_t> merchant_id, SecondFactor second_factor, std::int64_t now) {
  SIKA_TRY(
      c.exec("INSERT INTO dsh_sessions (token_hash, user_id, merchant_id, second_factor, created_at, last_seen_at) "
             "VALUES (?, ?, ?, ?, ?, ?)",
             {std::string(token_hash), user_id, store::opt(merchant_id), std::string(second_factor_name(second_factor)),
              now, now}));
  return {};
}

Result<std::optional<SessionRow>> find_session(store::Conn& c, std::string_view token_hash) {
  SIKA_ASSIGN_OR_RETURN(
      auto row,
      c.query_one("SELECT s.id, s.user_id, s.merchant_id, s.second_factor, s.created_at, s.last_seen_at, s.ended_at, "
                  "u.subject, u.email, u.name, u.active, o.user_id, m.role "
                  "FROM dsh_sessions s JOIN identity_users u ON u.id = s.user_id "
                  "LEFT JOIN dsh_operators o ON o.user_id = s.user_id "
                  "LEFT JOIN dsh_members m ON m.user_id = s.user_id AND m.merchant_id = s.merchant_id "
                  "WHERE s.token_hash = ?",
                  {std::string(token_hash)}));
  if (!row) return std::optional<SessionRow>{};
  SessionRow s;
  s.id = row->i64(0);
  s.user_id = row->i64(1);
  s.merchant_id = row->opt_i64(2);
  s.second_factor = parse_second_factor(row->str(3));
  s.created_at = row->i64(4);
  s.last_seen_at = row->i64(5);
  s.ended = !row->is_null(6);
  s.subject = row->str(7);
  s.email = row->str(8);
  s.name = row->str(9);
  s.user_active = row->boolean(10);
  s.is_operator = !row->is_null(11);
  s.member_role = row->is_null(12) ? web::Role::none : parse_role(row->str(12));
  if (s.member_role == web::Role::operator_) s.member_role = web::Role::none;  // never from a membership
  return std::optional<SessionRow>(std::move(s));
}

Status touch_session(store::Conn& c, std::int64_t session_id, std::int64_t now) {
  SIKA_TRY(
      c.exec("UPDATE dsh_sessions SET last_seen_at = ? WHERE id = ? AND last_seen_at < ?", {now, session_id, now}));
  return {};
}

Status set_second_factor(store::Conn& c, std::int64_t session_id, SecondFactor f) {
  SIKA_TRY(c.exec("UPDATE dsh_sessions SET second_factor = ? WHERE id = ?",
                  {std::string(second_factor_name(f)), session_id}));
  return {};
}

Status end_session(store::Conn& c, std::string_view token_hash, std::int64_t now) {
  SIKA_TRY(c.exec("UPDATE dsh_sessions SET ended_at = ? WHERE token_hash = ? AND ended_at IS NULL",
                  {now, std::string(token_hash)}));
  return {};
}

Result<std::int64_t> purge_sessions(store::Conn& c, std::int64_t started_before) {
  return c.exec("DELETE FROM dsh_sessions WHERE ended_at IS NOT NULL OR created_at < ?", {started_before});
}

Result<bool> is_operator(store::Conn& c, std::int64_t user_id) {
  SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT 1 FROM dsh_operators WHERE user_id = ?", {user_id}));
  return row.has_value();
}

Status add_operator(store::Conn& c, std::int64_t user_id, std::int64_t now) {
  SIKA_TRY(c.exec("INSERT INTO dsh_operators (user_id, created_at) VALUES (?, ?) ON CONFLICT (user_id) DO NOTHING",
                  {user_id, now}));
  return {};
}

Status put_member(store::Conn& c, std::int64_t user_id, std::int64_t merchant_id, web::Role role, std::int64_t now) {
  if (role != web::Role::owner && role != web::Role::developer && role != web::Role::viewer)
    return with_problem(bad_request("validation_error"), "role", Reason::member_role);
  SIKA_TRY(
      c.exec("INSERT INTO dsh_members (user_id, merchant_id, role, created_at) VALUES (?, ?, ?, ?) "
             "ON CONFLICT (user_id, merchant_id) DO UPDATE SET role = excluded.role",
             {user_id, merchant_id, std::string(web::role_name(role)), now}));
  return {};
}

Result<bool> remove_member(store::Conn& c, std::int64_t user_id, std::int64_t merchant_id) {
  SIKA_ASSIGN_OR_RETURN(
      auto n, c.exec("DELETE FROM dsh_members WHERE user_id = ? AND merchant_id = ?", {user_id, merchant_id}));
  return n > 0;
}

namespace {
Result<std::vector<Member>> members_where(store::Conn& c, std::string_view where, std::int64_t id,
                                          std::string_view order) {
  std::string sql =
      "SELECT m.user_id, u.email, u.name, m.merchant_id, m.role, m.created_at FROM dsh_members m "
      "JOIN identity_users u ON u.id = m.user_id WHERE ";
  sql += where;
  sql += " ORDER BY ";
  sql += order;
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query(sql, {id}));
  std::vector<Member> out;
  out.reserve(rows.size());
  for (const auto& r : rows)
    out.push_back(Member{r.i64(0), r.str(1), r.str(2), r.i64(3), parse_role(r.str(4)), r.i64(5)});
  return out;
}
}  // namespace

Result<std::vector<Member>> list_members(store::Conn& c, std::int64_t merchant_id) {
  return members_where(c, "m.merchant_id = ?", merchant_id, "u.email");
}

Result<std::vector<Member>> memberships(store::Conn& c, std::int64_t user_id) {
  return members_where(c, "m.user_id = ?", user_id, "m.created_at, m.merchant_id");
}

Result<std::optional<TotpRow>> find_totp(store::Conn& c, std::int64_t user_id) {
  SIKA_ASSIGN_OR_RETURN(
      auto row,
      c.query_one("SELECT secret_sealed, confirmed_at, last_step FROM dsh_totp WHERE user_id = ?", {user_id}));
  if (!row) return std::optional<TotpRow>{};
  return std::optional<TotpRow>(TotpRow{row->str(0), !row->is_null(1), row->i64(2)});
}

Result<bool> put_pending_totp(store::Conn& c, std::int64_t user_id, std::string_view sealed, std::int64_t now) {
  SIKA_ASSIGN_OR_RETURN(auto n,
                        c.exec("INSERT INTO dsh_totp (user_id, secret_sealed, created_at) VALUES (?, ?, ?) "
                               "ON CONFLICT (user_id) DO UPDATE SET secret_sealed = excluded.secret_sealed, "
                               "created_at = excluded.created_at, last_step = 0 WHERE dsh_totp.confirmed_at IS NULL",
                               {user_id, std::string(sealed), now}));
  return n > 0;
}

Result<bool> use_totp_step(store::Conn& c, std::int64_t user_id, std::int64_t step, std::int64_t now) {
  SIKA_ASSIGN_OR_RETURN(auto n, c.exec("UPDATE dsh_totp SET last_step = ?, confirmed_at = COALESCE(confirmed_at, ?) "
                                       "WHERE user_id = ? AND last_step < ?",
                                       {step, now, user_id, step}));
  return n > 0;
}

Status append_audit(store::Conn& c, const AuditEntry& e) {
  SIKA_TRY(
      c.exec("INSERT INTO dsh_audit (at, user_id, actor, merchant_id, action, object, details) "
             "VALUES (?, ?, ?, ?, ?, ?, ?)",
             {e.at, e.user_id, e.actor, store::opt(e.merchant_id), e.action, e.object, e.details}));
  return {};
}

Result<std::vector<AuditEntry>> list_audit(store::Conn& c, std::optional<std::int64_t> merchant_id,
                                           std::optional<std::int64_t> before, int limit) {
  std::string sql = "SELECT id, at, user_id, actor, merchant_id, action, object, details FROM dsh_audit WHERE 1 = 1";
  store::Params params;
  if (merchant_id) {
    sql += " AND merchant_id = ?";
    params.emplace_back(*merchant_id);
  }
  if (before) {
    sql += " AND id < ?";
    params.emplace_back(*before);
  }
  sql += " ORDER BY id DESC LIMIT ?";
  params.emplace_back(std::int64_t{limit});
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query(sql, params));
  std::vector<AuditEntry> out;
  out.reserve(rows.size());
  for (const auto& r : rows)
    out.push_back(AuditEntry{r.i64(0), r.i64(1), r.i64(2), r.str(3), r.opt_i64(4), r.str(5), r.str(6), r.str(7)});
  return out;
}

Result<OutboxLag> outbox_lag(store::Conn& c) {
  SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT COUNT(*), MIN(created_at) FROM events WHERE id > "
                                              "(SELECT last_event FROM webhook_fanout WHERE name = 'events')"));
  OutboxLag lag;
  if (row) {
    lag.waiting = row->i64(0);
    if (lag.waiting > 0) lag.oldest_at = row->i64(1);
  }
  return lag;
}

Result<std::vector<std::pair<std::string, std::int64_t>>> recent_attempt_outcomes(store::Conn& c, int limit) {
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT outcome, COUNT(*) FROM (SELECT outcome FROM webhook_attempts "
                                           "ORDER BY id DESC LIMIT ?) recent GROUP BY outcome ORDER BY outcome",
                                           {std::int64_t{limit}}));
  std::vector<std::pair<std::string, std::int64_t>> out;
  for (const auto& r : rows) out.emplace_back(r.str(0), r.i64(1));
  return out;
}

}  // namespace sika::dashboard
