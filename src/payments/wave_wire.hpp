#pragma once
// Wave Business API wire format (docs/operators.md, "Wave"): checkout sessions, payouts, the
// webhook signature and events, the answers' status and reason mapped to ours. No I/O here:
// wave.cpp makes the calls. The rule of every mapping below: only an explicit final state of Wave
// is final (a complete session whose payment succeeded, an expired session, a failed payment, a
// succeeded or failed payout); any other state, a body we cannot read, or a field we do not know is
// PENDING.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "payments/connector.hpp"

namespace sika::payments::wave {

// The one currency of the wallets this connector serves (Wave Côte d'Ivoire, Senegal: XOF).
inline constexpr std::string_view kCurrency = "XOF";
// Webhooks older (or newer) than this are stale: rejected, they move nothing (Wave: 5 minutes).
inline constexpr std::int64_t kSignatureToleranceSeconds = 300;

// An amount in minor units as Wave writes it: a string of major units, no decimals for XOF ("1500").
std::string amount_text(std::int64_t minor, std::string_view currency);
// A number of international digits in E.164 ("2250701020304" -> "+2250701020304").
std::string e164(std::string_view msisdn);

// The idempotency-key of a POST, derived from the order's provider_reference and what is asked
// (so a resend after a timeout, a restart or on another node is the same request at Wave): the
// hex SHA-256 of "wave:<what>:<provider_reference>", 32 characters.
std::string idempotency_key(std::string_view what, std::string_view provider_reference);

// POST /v1/checkout/sessions: {amount, currency, client_reference, success_url, error_url,
// restrict_payer_mobile}.
std::string checkout_body(const PaymentOrder& order);
// POST /v1/payout: {currency, receive_amount, mobile, client_reference, payment_reason}.
std::string payout_body(const PaymentOrder& order);

// A checkout session as Wave answers it (creation, GET, search result, webhook data).
struct Session {
  std::string id;      // cos-…
  std::string amount;  // major units, as sent
  std::string wave_launch_url;
  std::string checkout_status;  // open | complete | expired
  std::string payment_status;   // processing | cancelled | succeeded (and what Wave adds)
  std::string transaction_id;
  std::string client_reference;
  std::string error_code;  // last_payment_error.code
  std::string when_expires;
};
Result<Session> parse_session(std::string_view body);
// The session of `client_reference` among a search answer ({"result": [sessions]}): a succeeded
// one first, else an open one, else the last; nullopt when there is none.
Result<std::optional<Session>> pick_from_search(std::string_view body, std::string_view client_reference);
// complete + succeeded -> succeeded (operator_reference = transaction_id); expired -> failed
// TIMEOUT (or the last payment error's reason when there is one); anything else -> pending.
OperatorStatus session_status(const Session& s);

// A payout as Wave answers it.
struct Payout {
  std::string id;      // pt-…
  std::string status;  // processing | succeeded | failed | reversed
  std::string transaction_id;
  std::string client_reference;
  std::string error_code;  // payout_error.error_code
};
Result<Payout> parse_payout(std::string_view body);
// succeeded -> succeeded; failed -> failed with our reason; processing -> pending; reversed
// (Wave took back a payout it had paid: the payee's money came back to the wallet) -> pending,
// left to the operations team (docs/operators.md): never a second final answer.
OperatorStatus payout_status(const Payout& p);

// Wave's error code (a session's last_payment_error, a payout's payout_error, a refusal's
// {"code"}) -> our stable failure_reason (docs/payments.md, "Failure reasons").
std::string_view failure_reason(std::string_view wave_code);
// The error code of an error answer ({"code": "...", "message": "..."}), empty when none.
std::string error_code(std::string_view body);
// True when a POST's refusal is definite: Wave answered and will not process it (4xx other than
// 404, 408, 409, 429).
bool definite_refusal(int http_status);

// ---- webhooks ---------------------------------------------------------------------------------

// The Wave-Signature header value of `body` signed at `unix_seconds`:
// "t=<seconds>,v1=<hex HMAC-SHA256(secret, "<seconds>" + body)>".
std::string signature_header(std::string_view secret, std::int64_t unix_seconds, std::string_view body);

enum class Signature { valid, missing, malformed, mismatch, stale };
// Checks a Wave-Signature header: its t is within kSignatureToleranceSeconds of `now_seconds` and
// one of its v1 values (Wave sends several while a secret is being rotated) is the HMAC of
// t + body, compared in constant time.
Signature verify_signature(std::string_view header, std::string_view body, std::string_view secret,
                           std::int64_t now_seconds);

// A webhook event: {id, type, data}.
struct Event {
  std::string id;    // AE_… ; Wave may deliver an event more than once
  std::string type;  // checkout.session.completed | checkout.session.payment_failed | …
  std::string client_reference;
  std::string object_id;  // data.id: the session (cos-…) or payout (pt-…)
  OperatorStatus status;  // what the event says of the order (pending for types we do not act on)
};
// 400 empty_data naming the field when the body is not an event we can read.
Result<Event> parse_event(std::string_view body);

}  // namespace sika::payments::wave
