#include "otp/service.hpp"

#include <algorithm>

#include "core/crypto.hpp"
#include "core/random.hpp"
#include "core/time.hpp"

namespace sika::otp {

namespace bj = boost::json;

std::string_view to_string(Outcome o) {
  switch (o) {
    case Outcome::verified: return "verified";
    case Outcome::wrong_code: return "wrong_code";
    case Outcome::too_many_attempts: return "too_many_attempts";
    case Outcome::expired: return "expired";
    case Outcome::already_used: return "already_used";
    case Outcome::not_found: return "not_found";
  }
  return "not_found";
}

namespace {
constexpr std::size_t kMaxField = 256;

std::string random_code(int length) {
  std::uint32_t bound = 1;
  for (int i = 0; i < length; ++i) bound *= 10;
  std::string digits = std::to_string(random_uniform(bound));
  return std::string(static_cast<std::size_t>(length) - digits.size(), '0') + digits;
}

std::string message_text(i18n::Locale locale, std::string_view code, std::string_view context, std::int64_t ttl_ms) {
  std::string minutes = std::to_string(std::max<std::int64_t>(1, ttl_ms / 60000));
  std::string what = context.empty() ? std::string() : " (" + std::string(context) + ")";
  if (locale == i18n::Locale::en)
    return "Sika: your code is " + std::string(code) + what + ". It expires in " + minutes +
           " min. Never share it with anyone.";
  return "Sika : votre code est " + std::string(code) + what + ". Il expire dans " + minutes +
         " min. Ne le communiquez à personne.";
}

std::string_view email_subject(i18n::Locale locale) {
  return locale == i18n::Locale::en ? "Your Sika code" : "Votre code Sika";
}

Error too_long(std::string_view field) {
  return empty_data(bj::object{{field, "must be at most " + std::to_string(kMaxField) + " characters"}});
}

// A live challenge as issue() reads it.
struct Live {
  std::int64_t id = 0;
  std::string challenge_id;
  std::string channel, destination;
  std::int64_t attempts = 0, max_attempts = 0, sends = 0, last_sent_at = 0, expires_at = 0;
  bool used = false;
};
}  // namespace

Service::Service(store::Db& db, notify::Notifier& notifier, Options options)
    : db_(db), notifier_(notifier), opts_(std::move(options)), limiter_(db, limits::Options{.clock = opts_.clock}) {
  opts_.code_length = std::clamp(opts_.code_length, 4, 8);
  opts_.max_attempts = std::max(1, opts_.max_attempts);
  opts_.max_sends = std::max(1, opts_.max_sends);
}

std::int64_t Service::now() const { return opts_.clock ? opts_.clock() : now_ms(); }

namespace {
// What is hashed: the code bound to its challenge, so equal codes never share a hash.
std::string bound_code(std::string_view challenge_id, std::string_view code) {
  return std::string(challenge_id) + ":" + std::string(code);
}
}  // namespace

std::string Service::code_hash(std::string_view challenge_id, std::string_view code) const {
  return crypto::secret_hash(opts_.pepper, bound_code(challenge_id, code));
}

namespace {

// Every field is present and not too long, and a sandbox code is configured when one is asked for.
Status check_request(const IssueRequest& r, const Options& opts) {
  for (auto [field, value] :
       {std::pair{"purpose", &r.purpose}, std::pair{"subject", &r.subject}, std::pair{"destination", &r.destination}}) {
    if (value->empty()) return empty_data(bj::object{{field, "is required"}});
    if (value->size() > kMaxField) return too_long(field);
  }
  if (r.context.size() > kMaxField) return too_long("context");
  if (r.sandbox_code && opts.sandbox_code.empty())
    return internal_error(bj::string("a sandbox code was asked for but none is configured"));
  return {};
}

// The challenge of (purpose, subject) as read by issue(), or none.
Result<std::optional<store::Row>> find_challenge(store::Conn& c, const IssueRequest& r) {
  return c.query_one(
      "SELECT id, challenge_id, channel, destination, attempts, max_attempts, sends, "
      "last_sent_at, expires_at, used_at FROM otp_challenges WHERE purpose = ? AND subject = ?",
      {r.purpose, r.subject});
}

// Why the live challenge may not be sent again now (another destination, attempts used up,
// cool-down, sends per code); ok when it may.
Status refuse_resend(const Live& live, const std::string& channel, const IssueRequest& r, const Options& opts,
                     std::int64_t t) {
  if (live.channel != channel || live.destination != r.destination)
    return conflict(bj::object{{"destination", "differs from the one this code was sent to"}});
  if (live.attempts >= live.max_attempts)
    return conflict(bj::object{{"otp", "too many attempts; this code can no longer be used"}});
  if (t < live.last_sent_at + opts.resend_cooldown_ms)
    return limits::refusal({false, live.sends, live.last_sent_at + opts.resend_cooldown_ms - t},
                           "one send per resend cool-down");
  if (live.sends >= opts.max_sends) return limits::refusal({false, live.sends, live.expires_at - t}, "sends per code");
  return {};
}

// Writes a fresh challenge: in place of a used or expired one (row), else as a new row.
Status write_fresh_challenge(store::Conn& c, const IssueRequest& r, const std::optional<store::Row>& row,
                             const std::string& fresh_id, const std::string& channel, const std::string& hash,
                             const Options& opts, std::int64_t t, std::int64_t expires_at) {
  if (row) {
    // Used or expired: a fresh challenge takes its place.
    SIKA_TRY(c.exec(
        "UPDATE otp_challenges SET challenge_id = ?, channel = ?, destination = ?, code_hash = ?, "
        "attempts = 0, max_attempts = ?, sends = 1, last_sent_at = ?, expires_at = ?, used_at = NULL, "
        "created_at = ? WHERE id = ?",
        {fresh_id, channel, r.destination, hash, std::int64_t{opts.max_attempts}, t, expires_at, t, row->i64(0)}));
    return {};
  }
  SIKA_TRY(
      c.exec("INSERT INTO otp_challenges (challenge_id, purpose, subject, channel, destination, code_hash, "
             "attempts, max_attempts, sends, last_sent_at, expires_at, created_at) "
             "VALUES (?, ?, ?, ?, ?, ?, 0, ?, 1, ?, ?, ?)",
             {fresh_id, r.purpose, r.subject, channel, r.destination, hash, std::int64_t{opts.max_attempts}, t,
              expires_at, t}));
  return {};
}

notify::Message code_message(const IssueRequest& r, const std::string& code, const Options& opts) {
  notify::Message m;
  m.channel = r.channel;
  m.to = r.destination;
  m.body = message_text(r.locale, code, r.context, opts.ttl_ms);
  if (r.channel == notify::Channel::email) m.subject = std::string(email_subject(r.locale));
  m.tag = "otp:" + r.purpose;
  m.environment = r.environment;
  return m;
}

}  // namespace

Result<Issued> Service::issue(const IssueRequest& r) {
  SIKA_TRY(check_request(r, opts_));
  const std::string channel(notify::to_string(r.channel));

  // Sends to one destination, across challenges and nodes: counted before the challenge changes,
  // so a refused send leaves the challenge as it was.
  limits::Policy per_destination{
      .limit = opts_.sends_per_destination_per_hour, .window_ms = 3600000, .name = "otp_sends_per_destination"};
  SIKA_ASSIGN_OR_RETURN(auto dest, limiter_.hit("otp-send:" + channel + ":" + r.destination, per_destination));
  if (!dest.allowed) return limits::refusal(dest, "codes sent to this destination per hour");

  const std::string code = r.sandbox_code ? opts_.sandbox_code : random_code(opts_.code_length);
  const std::string fresh_id = "otp_" + random_token(18);
  const std::int64_t t = now();
  Issued out;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    out = Issued{};
    SIKA_ASSIGN_OR_RETURN(auto row, find_challenge(c, r));
    out.expires_at = t + opts_.ttl_ms;
    out.resend_at = t + opts_.resend_cooldown_ms;
    if (row && row->is_null(9) && row->i64(8) > t) {
      Live live{row->i64(0), row->str(1), row->str(2), row->str(3), row->i64(4),
                row->i64(5), row->i64(6), row->i64(7), row->i64(8), false};
      SIKA_TRY(refuse_resend(live, channel, r, opts_, t));
      // Conditional on what was read, so a concurrent resend cannot slip in between.
      SIKA_ASSIGN_OR_RETURN(auto changed,
                            c.exec("UPDATE otp_challenges SET code_hash = ?, sends = sends + 1, last_sent_at = ?, "
                                   "expires_at = ? WHERE id = ? AND sends = ? AND used_at IS NULL",
                                   {code_hash(live.challenge_id, code), t, out.expires_at, live.id, live.sends}));
      if (changed == 0) return conflict(bj::object{{"otp", "was sent or used concurrently; try again"}});
      out.challenge_id = live.challenge_id;
      out.sends = static_cast<int>(live.sends + 1);
      return {};
    }
    out.challenge_id = fresh_id;
    const std::string hash = code_hash(fresh_id, code);
    return write_fresh_challenge(c, r, row, fresh_id, channel, hash, opts_, t, out.expires_at);
  }));

  Status sent = notifier_.send(code_message(r, code, opts_));
  if (!sent) {
    // Not delivered: lift the cool-down so that the caller may ask for a resend at once.
    (void)db_.write([&](store::Conn& c) -> Status {
      SIKA_TRY(c.exec("UPDATE otp_challenges SET last_sent_at = 0 WHERE challenge_id = ? AND last_sent_at = ?",
                      {out.challenge_id, t}));
      return {};
    });
    return sent.take_error();
  }
  return out;
}

Result<Verification> Service::verify(std::string_view challenge_id, std::string_view code) {
  return verify_where("challenge_id = ?", {std::string(challenge_id)}, code);
}

Result<Verification> Service::verify(std::string_view purpose, std::string_view subject, std::string_view code) {
  return verify_where("purpose = ? AND subject = ?", {std::string(purpose), std::string(subject)}, code);
}

Result<Verification> Service::verify_where(std::string_view where, store::Params key, std::string_view code) {
  const std::int64_t t = now();
  const std::string where_sql(where);
  store::Params consume = key;
  consume.emplace_back(t);
  Verification v;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    v = Verification{};
    SIKA_TRY(store::counter_isolation(c));
    // The one statement that decides whether this call may compare a code at all.
    SIKA_ASSIGN_OR_RETURN(auto row,
                          c.query_one("UPDATE otp_challenges SET attempts = attempts + 1 WHERE " + where_sql +
                                          " AND used_at IS NULL AND attempts < max_attempts AND expires_at > ? "
                                          "RETURNING id, challenge_id, code_hash, attempts, max_attempts",
                                      consume));
    if (row) {
      v.challenge_id = row->str(1);
      v.attempts_left = static_cast<int>(std::max<std::int64_t>(0, row->i64(4) - row->i64(3)));
      if (!crypto::secret_matches(opts_.pepper, bound_code(v.challenge_id, code), row->str(2))) {
        v.outcome = Outcome::wrong_code;
        return {};
      }
      SIKA_TRY(c.exec("UPDATE otp_challenges SET used_at = ? WHERE id = ?", {t, row->i64(0)}));
      v.outcome = Outcome::verified;
      return {};
    }
    // Refused: say why (the statement above changed nothing).
    SIKA_ASSIGN_OR_RETURN(auto why, c.query_one("SELECT challenge_id, used_at, attempts, max_attempts, expires_at "
                                                "FROM otp_challenges WHERE " +
                                                    where_sql,
                                                key));
    if (!why) {
      v.outcome = Outcome::not_found;
    } else {
      v.challenge_id = why->str(0);
      v.outcome = !why->is_null(1)             ? Outcome::already_used
                  : why->i64(2) >= why->i64(3) ? Outcome::too_many_attempts
                                               : Outcome::expired;
    }
    return {};
  }));
  return v;
}

Error verification_error(const Verification& v, std::string_view field) {
  bj::object d;
  switch (v.outcome) {
    case Outcome::verified: return internal_error(bj::string("a verified code is not an error"));
    case Outcome::wrong_code:
      d[field] = "is incorrect";
      d["attempts_left"] = v.attempts_left;
      return bad_request("invalid_otp", std::move(d));
    case Outcome::too_many_attempts:
      d[field] = "too many attempts; this code can no longer be used";
      d["attempts_left"] = 0;
      return bad_request("invalid_otp", std::move(d));
    case Outcome::expired:
      d[field] = "has expired; ask for a new code";
      return bad_request("invalid_otp", std::move(d));
    case Outcome::already_used: d[field] = "was already used"; return conflict(std::move(d));
    case Outcome::not_found: d[field] = "no code was issued for this operation"; return not_found(std::move(d));
  }
  return internal_error(nullptr);
}

}  // namespace sika::otp
