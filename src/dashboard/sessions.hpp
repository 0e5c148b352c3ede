#pragma once
// Dashboard sessions (docs/dashboard.md, "Sessions"). Guarantees:
//  - the cookie holds a random token (256 bits); the database holds only its keyed hash, so a
//    copy of the table opens no session;
//  - a session ends after `idle_ms` without a request and `absolute_ms` after sign-in, whatever
//    happens in between, and at logout (the row is marked ended on every node at once);
//  - the role is read from the membership tables at every request: removing a member or changing
//    a role applies to open sessions at once;
//  - every request but GET/HEAD must carry the session's CSRF token (form field `csrf` or header
//    x-csrf-token), an HMAC of the session token, compared in constant time;
//  - pages open only once the second factor is done (operators always; members who enrolled TOTP).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "dashboard/store.hpp"
#include "merchant/merchant.hpp"
#include "store/db.hpp"
#include "web/csrf.hpp"
#include "web/message.hpp"

namespace sika::dashboard {

inline constexpr std::string_view kSessionCookie = "sika_dsh";

struct SessionOptions {
  std::string pepper;                             // the server's pepper: keys token hashes and CSRF tokens
  std::int64_t idle_ms = 30LL * 60 * 1000;        // without a request
  std::int64_t absolute_ms = 12LL * 3600 * 1000;  // after sign-in
  // last_seen_at is written at most this often per session (a write per page view would serialize
  // every read on SQLite's single writer); the idle timeout is therefore exact to within it.
  std::int64_t touch_interval_ms = 60LL * 1000;
  std::function<std::int64_t()> clock;  // epoch ms; now_ms() when empty
};

// The refusal of a request without the session's CSRF token: 403 {"csrf": <the reason's text>,
// "error": "csrf_failed"}.
Error csrf_refused();

// A live session and who it acts for.
struct Session {
  SessionRow row;
  web::Role role = web::Role::none;
  std::optional<merchant::Merchant> merchant;  // the member's merchant; none for operators
  std::string csrf;                            // the token every form of this session carries
};

class Sessions {
 public:
  Sessions(store::Db& db, SessionOptions options);

  // What sign-in opened: the cookie value and the step still owed.
  struct Opened {
    std::string token;
    SecondFactor second_factor = SecondFactor::done;
  };
  // Opens a session for a user who just signed in: an operator (who must pass TOTP, enrolling
  // first when they have no secret), else a member of their first merchant (TOTP when they
  // enrolled). forbidden `no_dashboard_access` when the user is neither.
  Result<Opened> open(std::int64_t user_id);

  // The session of a cookie token, whatever its second-factor step; 401 when the token is
  // unknown, ended, idle or too old, the user disabled, or the user no longer has a role.
  Result<Session> find(std::string_view token);
  // The router's check for dashboard routes: the cookie's session with the second factor done,
  // and the CSRF token on every method but GET/HEAD (403 `csrf_failed` without it).
  Result<Session> authenticate(const web::Request& req);
  // The caller as handlers see it (role, merchant, environment, countries).
  static web::Principal principal(const Session& s);

  Status complete_second_factor(std::int64_t session_id);
  // Ends the session of this token (idempotent).
  Status end(std::string_view token);
  // Deletes ended sessions and those past the absolute timeout.
  Result<std::int64_t> purge();

  std::string csrf_for(std::string_view token) const;
  // True iff `presented` is the CSRF token of `token` (constant time).
  bool csrf_ok(std::string_view token, std::string_view presented) const;

  std::int64_t now() const;
  const SessionOptions& options() const { return opts_; }

 private:
  std::string hash(std::string_view token) const;

  store::Db& db_;
  SessionOptions opts_;
  web::Csrf csrf_;  // tokens: web/csrf.hpp
};

}  // namespace sika::dashboard
