#include "dashboard/sessions.hpp"

#include "core/crypto.hpp"
#include "core/random.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "web/cookie.hpp"

namespace sika::dashboard {

namespace {
// A 403 naming one field's problem, with the code ("error") that says what to do about it.
Error refused(std::string field, Problem p, std::string_view error) {
  Error e = with_problem(forbidden(), std::move(field), std::move(p));
  e.details.as_object()["error"] = error;
  return e;
}
Error signed_out(std::string_view why) { return unauthorized(boost::json::object{{"session", why}}); }
}  // namespace

Sessions::Sessions(store::Db& db, SessionOptions options)
    : db_(db), opts_(std::move(options)), csrf_(opts_.pepper, "sika:dashboard:csrf:v1") {}

std::int64_t Sessions::now() const { return opts_.clock ? opts_.clock() : now_ms(); }

std::string Sessions::hash(std::string_view token) const { return crypto::secret_hash(opts_.pepper, token); }

std::string Sessions::csrf_for(std::string_view token) const { return csrf_.issue(token); }

bool Sessions::csrf_ok(std::string_view token, std::string_view presented) const {
  return csrf_.check(token, presented);
}

Result<Sessions::Opened> Sessions::open(std::int64_t user_id) {
  Opened opened;
  opened.token = random_token(32);
  const std::int64_t t = now();
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(bool op, is_operator(c, user_id));
    SIKA_ASSIGN_OR_RETURN(auto totp, find_totp(c, user_id));
    const bool enrolled = totp && totp->confirmed;
    std::optional<std::int64_t> merchant_id;
    if (op) {
      opened.second_factor = enrolled ? SecondFactor::verify : SecondFactor::enrol;
    } else {
      SIKA_ASSIGN_OR_RETURN(auto mine, memberships(c, user_id));
      if (mine.empty()) return refused("user", Reason::no_dashboard_role, "no_dashboard_access");
      merchant_id = mine.front().merchant_id;
      opened.second_factor = enrolled ? SecondFactor::verify : SecondFactor::done;
    }
    return insert_session(c, hash(opened.token), user_id, merchant_id, opened.second_factor, t);
  }));
  return opened;
}

Result<Session> Sessions::find(std::string_view token) {
  if (token.empty()) return signed_out("missing");
  const std::int64_t t = now();
  Session s;
  bool found = false;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto row, find_session(c, hash(token)));
    found = row.has_value();
    if (!row) return {};
    s.row = std::move(*row);
    s.merchant.reset();
    if (s.row.merchant_id) {
      SIKA_ASSIGN_OR_RETURN(s.merchant, merchant::find_by_id(c, *s.row.merchant_id));
    }
    return {};
  }));
  if (!found) return signed_out("unknown");
  if (s.row.ended) return signed_out("ended");
  if (t - s.row.created_at >= opts_.absolute_ms) return signed_out("expired");
  if (t - s.row.last_seen_at >= opts_.idle_ms) return signed_out("idle");
  if (!s.row.user_active) return signed_out("user disabled");
  if (s.row.is_operator && !s.row.merchant_id) {
    s.role = web::Role::operator_;
  } else if (s.row.member_role != web::Role::none && s.merchant && s.merchant->active) {
    s.role = s.row.member_role;
  } else {
    return signed_out("no role");
  }
  if (t - s.row.last_seen_at >= opts_.touch_interval_ms)
    SIKA_TRY(db_.write([&](store::Conn& c) { return touch_session(c, s.row.id, t); }));
  s.csrf = csrf_for(token);
  return s;
}

Error csrf_refused() { return refused("csrf", Reason::csrf_token, "csrf_failed"); }

Result<Session> Sessions::authenticate(const web::Request& req) {
  std::string token = web::cookie(req, kSessionCookie);
  SIKA_ASSIGN_OR_RETURN(Session s, find(token));
  if (s.row.second_factor != SecondFactor::done) return signed_out("second factor pending");
  if (req.method != "GET" && req.method != "HEAD" && !csrf_ok(token, web::Csrf::presented(req))) return csrf_refused();
  return s;
}

web::Principal Sessions::principal(const Session& s) {
  web::Principal p;
  p.subject = s.row.subject;
  p.client_id = "dashboard";
  p.role = s.role;
  p.admin = s.role == web::Role::operator_;
  if (s.merchant) {
    p.merchant = s.merchant->matricule;
    p.merchant_id = s.merchant->id;
    p.environment = s.merchant->environment;
    p.countries = s.merchant->countries;
  }
  return p;
}

Status Sessions::complete_second_factor(std::int64_t session_id) {
  return db_.write([&](store::Conn& c) { return set_second_factor(c, session_id, SecondFactor::done); });
}

Status Sessions::end(std::string_view token) {
  if (token.empty()) return {};
  const std::int64_t t = now();
  return db_.write([&](store::Conn& c) { return end_session(c, hash(token), t); });
}

Result<std::int64_t> Sessions::purge() {
  std::int64_t n = 0;
  const std::int64_t before = now() - opts_.absolute_ms;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(n, purge_sessions(c, before));
    return {};
  }));
  return n;
}

}  // namespace sika::dashboard
