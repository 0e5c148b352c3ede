#pragma once
// One-time codes (OTP): issued to a person through a Notifier, verified once.
//
// A challenge is keyed by (purpose, subject), e.g. ("collection", transaction reference).
// Guarantees:
//  - Codes come from the CSPRNG (code_length digits) and are stored only as a keyed BLAKE2b hash
//    under the server pepper, bound to the challenge id; comparison is constant time.
//  - Each verify consumes one attempt in ONE conditional UPDATE (attempts < max_attempts, not
//    used, not expired) before the code is compared: however many verifies run at once on however
//    many nodes, at most max_attempts of them ever compare a code, and at most one succeeds.
//  - A challenge is live until it is used or expires (ttl_ms after its last send). Issuing again
//    while it is live is a resend: a new code replaces the old one, the attempt count is kept, and
//    resends are refused during resend_cooldown_ms after the last send and after max_sends sends
//    (429 with Retry-After). Sends to one destination are also limited per hour, across
//    challenges and nodes (sends_per_destination_per_hour). Once the challenge is used or expired,
//    issuing again starts a fresh challenge with a new id.
//  - The fixed sandbox code is used only when the caller asks for it (IssueRequest::sandbox_code),
//    which callers do only for the sandbox's magic numbers; it is hashed and limited like any code.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/i18n.hpp"
#include "core/result.hpp"
#include "limits/limiter.hpp"
#include "notify/notifier.hpp"
#include "store/db.hpp"

namespace sika::otp {

struct Options {
  std::string pepper;                       // the server's secret-hash pepper
  std::int64_t ttl_ms = 300000;             // a code is valid this long after it was sent
  int max_attempts = 3;                     // verifies per challenge (resends do not reset them)
  int code_length = 6;                      // digits, 4 to 8
  std::int64_t resend_cooldown_ms = 30000;  // least time between two sends of one challenge
  int max_sends = 5;                        // sends per challenge (the first included)
  int sends_per_destination_per_hour = 10;  // all challenges, all nodes; <= 0: unlimited
  std::string sandbox_code;                 // the fixed code of IssueRequest::sandbox_code
  std::function<std::int64_t()> clock;      // epoch ms; now_ms() when empty
};

struct IssueRequest {
  std::string purpose;      // what the code authorises, e.g. "collection"
  std::string subject;      // which object, e.g. the transaction reference
  std::string destination;  // phone number (sms) or address (email)
  notify::Channel channel = notify::Channel::sms;
  bool sandbox_code = false;  // send Options::sandbox_code instead of a random code
  i18n::Locale locale = i18n::Locale::fr;
  // What the code authorises, said in the message after the code so that the person sees what
  // they approve (e.g. "5 000 XAF, Boutique Akwa, TX-..."); empty: nothing is added.
  std::string context;
  // The environment (sandbox, prod) of the merchant or partner the code is for, kept with the
  // message in the outbox; "" when none.
  std::string environment;
};

struct Issued {
  std::string challenge_id;  // "otp_" + 24 base64url characters
  std::int64_t expires_at = 0;
  int sends = 1;               // 1 for a fresh challenge, more for resends
  std::int64_t resend_at = 0;  // earliest next send (epoch ms)
};

enum class Outcome { verified, wrong_code, too_many_attempts, expired, already_used, not_found };
std::string_view to_string(Outcome o);

struct Verification {
  Outcome outcome = Outcome::not_found;
  int attempts_left = 0;
  std::string challenge_id;
  bool ok() const { return outcome == Outcome::verified; }
};

class Service {
 public:
  Service(store::Db& db, notify::Notifier& notifier, Options options);

  // Issues (or resends) the code of (purpose, subject) and sends it through the notifier.
  // Errors: 400 empty_data naming the field; 409 conflict when the live challenge has used up its
  // attempts or was issued to another destination; 429 rate_limited (cool-down, max sends,
  // destination limit) with details.retry_after; the notifier's error when sending failed (the
  // challenge then stays resendable at once).
  Result<Issued> issue(const IssueRequest& request);

  // Consumes one attempt of the challenge and compares the code. Database failures are errors;
  // every answer about the code itself is a Verification.
  Result<Verification> verify(std::string_view challenge_id, std::string_view code);
  Result<Verification> verify(std::string_view purpose, std::string_view subject, std::string_view code);

  const Options& options() const { return opts_; }

 private:
  std::int64_t now() const;
  std::string code_hash(std::string_view challenge_id, std::string_view code) const;
  Result<Verification> verify_where(std::string_view where, store::Params key, std::string_view code);

  store::Db& db_;
  notify::Notifier& notifier_;
  Options opts_;
  limits::Limiter limiter_;
};

// The error answering a failed verification, on the request field `field` (e.g. "otp"):
// wrong code, too many attempts and expiry are 400 invalid_otp (details: the field's problem and
// attempts_left); a used challenge 409 conflict; no challenge 404.
Error verification_error(const Verification& v, std::string_view field = "otp");

}  // namespace sika::otp
