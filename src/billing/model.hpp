#pragma once
// Subscriptions, their payments, and the state machine of a subscription (docs/subscriptions.md).
//
//            suspend (merchant, or dunning exhausted)
//   ACTIVE ------------------------------------------> SUSPENDED
//     ^  \            reactivate (overdue collected first) /  |
//     |   \<-----------------------------------------------/   |
//     |    \-- cancel (now, or at period end) --> CANCELLED <---/ cancel
//     |     \- end date / cycle count reached --> EXPIRED
//
// CANCELLED and EXPIRED are final. A subscription payment is PENDING (owed, not yet asked or
// waiting for the customer's link payment), PROCESSING (a collection was pushed), PAID, FAILED
// (its collection failed; dunning may ask again) or CANCELLED (the subscription ended first).
#include <boost/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "billing/calendar.hpp"
#include "core/json.hpp"
#include "store/state_machine.hpp"

namespace sika::billing {

inline constexpr std::string_view kActive = "ACTIVE";
inline constexpr std::string_view kSuspended = "SUSPENDED";
inline constexpr std::string_view kCancelled = "CANCELLED";
inline constexpr std::string_view kExpired = "EXPIRED";

inline constexpr std::string_view kPayPending = "PENDING";
inline constexpr std::string_view kPayProcessing = "PROCESSING";
inline constexpr std::string_view kPayPaid = "PAID";
inline constexpr std::string_view kPayFailed = "FAILED";
inline constexpr std::string_view kPayCancelled = "CANCELLED";

// The statuses of a subscription and its legal moves, each with its event (store/state_machine.hpp).
enum class SubStatus { active, suspended, cancelled, expired };
inline constexpr store::StateMachine<SubStatus, 4, 6> kSubscriptionStatus{
    "bil_subscriptions",
    {kActive, kSuspended, kCancelled, kExpired},
    {{{SubStatus::active, SubStatus::suspended, "subscription.suspended"},
      {SubStatus::suspended, SubStatus::active, "subscription.reactivated"},
      {SubStatus::active, SubStatus::cancelled, "subscription.cancelled"},
      {SubStatus::suspended, SubStatus::cancelled, "subscription.cancelled"},
      {SubStatus::active, SubStatus::expired, "subscription.expired"},
      {SubStatus::suspended, SubStatus::expired, "subscription.expired"}}}};

// The moves of a subscription.
enum class Move { suspend, reactivate, cancel, expire };
std::string_view to_string(Move m);
// The status `move` leads to from `from`; nullopt when the move is not allowed there.
std::optional<std::string_view> next_status(std::string_view from, Move move);
// The webhook event type of a move ("subscription.suspended", ...).
std::string_view event_type(Move move);

// Event types besides the moves.
inline constexpr std::string_view kEventCreated = "subscription.created";
inline constexpr std::string_view kEventPaymentSucceeded = "subscription.payment_succeeded";
inline constexpr std::string_view kEventPaymentFailed = "subscription.payment_failed";
// A wallet mandate was approved by the customer, or revoked (by the customer, the merchant's end
// of the subscription, or an operator); the payload carries the mandate.
inline constexpr std::string_view kEventMandateApproved = "subscription.mandate_approved";
inline constexpr std::string_view kEventMandateRevoked = "subscription.mandate_revoked";

// The statuses of a subscription payment and its legal moves: asked (PROCESSING), paid, failed
// into dunning, asked again (FAILED -> PENDING), cancelled with its subscription (a bulk move).
enum class PayStatus { pending, processing, paid, failed, cancelled };
inline constexpr store::StateMachine<PayStatus, 5, 8> kPaymentStatus{
    "bil_payments",
    {kPayPending, kPayProcessing, kPayPaid, kPayFailed, kPayCancelled},
    {{{PayStatus::pending, PayStatus::processing, ""},
      {PayStatus::pending, PayStatus::paid, kEventPaymentSucceeded},
      {PayStatus::processing, PayStatus::paid, kEventPaymentSucceeded},
      {PayStatus::pending, PayStatus::failed, kEventPaymentFailed},
      {PayStatus::processing, PayStatus::failed, kEventPaymentFailed},
      {PayStatus::failed, PayStatus::pending, ""},
      {PayStatus::pending, PayStatus::cancelled, ""},
      {PayStatus::failed, PayStatus::cancelled, ""}}}};

struct Subscription {
  std::int64_t id = 0;
  std::string reference;  // SUB-...
  std::string uuid;
  std::int64_t merchant_id = 0;
  std::string merchant;  // matricule (not stored; filled when known)
  std::string environment;
  std::int64_t user_tier = 1;
  std::optional<std::string> idempotency_key;
  std::string request_hash;
  std::string customer_email;
  std::optional<std::string> customer_phone;
  std::optional<std::string> customer_user_id;
  std::int64_t amount = 0;
  std::string currency;
  Frequency frequency = Frequency::monthly;
  std::string time_zone;
  std::string description;
  std::string metadata = "{}";
  std::string status;
  std::optional<std::string> status_reason;
  std::int64_t anchor_at = 0;
  std::int64_t next_cycle = 1;
  std::optional<std::int64_t> next_payment_at;
  std::optional<std::int64_t> end_at;
  std::optional<std::int64_t> max_cycles;
  bool cancel_at_period_end = false;
  std::optional<std::string> payer_provider;  // learnt from the consent payment
  std::optional<std::string> payer_wallet;
  std::int64_t epoch = 0;
  std::int64_t clock_offset_ms = 0;
  std::int64_t subscribed_at = 0;
  std::optional<std::int64_t> last_payment_at, cancelled_at, suspended_at, reactivated_at, expired_at;
  std::int64_t created_at = 0;
  std::int64_t updated_at = 0;

  // The subscription's own clock: the wall clock plus the sandbox test clock's offset.
  std::int64_t clock(std::int64_t wall_now) const { return wall_now + clock_offset_ms; }
  // True iff cycle `cycle`, due at `due`, is past the subscription's end (date or count).
  bool ends_before(std::int64_t cycle, std::int64_t due) const;
};

struct Payment {
  std::int64_t id = 0;
  std::string reference;  // SPY-...
  std::int64_t subscription_id = 0;
  std::int64_t cycle = 0;
  std::int64_t amount = 0;
  std::string currency;
  std::string status;
  std::int64_t due_at = 0;
  std::optional<std::int64_t> paid_at;
  std::int64_t attempts = 0;  // collections asked for so far
  std::optional<std::int64_t> failed_at;
  std::optional<std::int64_t> next_retry_at;
  std::optional<std::string> payment_intent_reference;
  std::optional<std::string> payment_link_reference;
  std::optional<std::string> wallet_transaction_id;
  std::optional<std::string> failure_reason;
  // A cycle paid by a payment link: when the current attempt's link lapses unpaid (the
  // subscription's clock).
  std::optional<std::int64_t> link_deadline_at;
  std::int64_t created_at = 0;
  std::int64_t updated_at = 0;
  // What the refunds of the collection that paid it gave back (minor units; 0 when none, or not
  // PAID). A refund changes neither the payment's status nor the subscription: the cycle was paid.
  std::int64_t refunded_amount = 0;

  // Whether this is a later cycle paid by a payment link (its operator needs a code), whose
  // attempts each send a new link; the consent (cycle 0) is a link too but never dunned.
  bool by_link() const { return cycle > 0 && payment_link_reference.has_value(); }
};

// A wallet mandate: the customer's approval that each cycle be debited from a Sika wallet,
// up to `cap` per cycle, without a prompt. PENDING until approved with the code sent to the
// wallet's phone, then ACTIVE; REVOKED is final. A subscription has at most one PENDING or
// ACTIVE mandate; after a revocation the customer may approve a new one (the old stays REVOKED).
inline constexpr std::string_view kMandatePending = "PENDING";
inline constexpr std::string_view kMandateActive = "ACTIVE";
inline constexpr std::string_view kMandateRevoked = "REVOKED";
enum class MandateStatus { pending, active, revoked };
inline constexpr store::StateMachine<MandateStatus, 3, 3> kMandateStatus{
    "bil_mandates",
    {kMandatePending, kMandateActive, kMandateRevoked},
    {{{MandateStatus::pending, MandateStatus::active, kEventMandateApproved},
      {MandateStatus::pending, MandateStatus::revoked, kEventMandateRevoked},
      {MandateStatus::active, MandateStatus::revoked, kEventMandateRevoked}}}};

struct Mandate {
  std::int64_t id = 0;
  std::string reference;  // MDT-...
  std::int64_t subscription_id = 0;
  std::string wallet;  // the wallet's phone number, international digits
  std::int64_t cap = 0;
  std::string currency;
  Frequency frequency = Frequency::monthly;
  std::string status;
  std::int64_t debits = 0;
  std::optional<std::int64_t> last_debit_at, approved_at, revoked_at;
  std::optional<std::string> revoked_by;
  std::int64_t created_at = 0;
  std::int64_t updated_at = 0;
};
// The mandate as the merchant reads it (the detail's `mandate`).
boost::json::object mandate_json(const Mandate& m);

// The summary (list, cancel, suspend, reactivate).
boost::json::object summary_json(const Subscription& s);
// A subscription payment.
boost::json::object payment_json(const Payment& p);
// The detail: the summary plus the spec's fields. `merchant_view` false (for=desc) leaves out
// what only the merchant reads (metadata, status_reason, failure reasons).
boost::json::object detail_json(const Subscription& s, const std::vector<Payment>& latest, bool merchant_view,
                                const Mandate* mandate = nullptr);
// How many of its latest payments the detail of a subscription lists.
inline constexpr int kLatestPayments = 10;
// The subscription's amount as a customer reads it ("1 500 XAF"), and its name in messages
// (its description, else "subscription <reference>").
std::string amount_text(const Subscription& s);
std::string label(const Subscription& s);
// The payload of a subscription event: the summary, and the payment it is about when there is one.
boost::json::object event_payload(const Subscription& s, const Payment* payment);
// The payload of a mandate event: the summary and the mandate.
boost::json::object mandate_event_payload(const Subscription& s, const Mandate& m);

// What a merchant sends to subscribe a customer.
struct NewSubscription {
  std::string customer_email;
  std::optional<std::string> customer_phone;
  std::int64_t amount = 0;
  std::string currency;
  Frequency frequency = Frequency::monthly;
  std::optional<std::string> time_zone;  // nullopt: the configured default
  std::string description;
  std::string metadata = "{}";
  std::optional<std::int64_t> end_at;
  std::optional<std::int64_t> max_cycles;
  std::optional<std::string> idempotency_key;
  std::string request_hash;  // SHA-256 (hex) of the body's canonical JSON, without idempotency_key
};
// Reads a subscribe body; problems go to `errors` under their field names. `header_key` is the
// X-Idempotency-Key header ("" when absent). `now` bounds end_at.
NewSubscription parse_subscribe(const boost::json::object& body, std::string_view header_key, std::int64_t now,
                                json::FieldErrors& errors);

// The body of cancel / suspend / reactivate: {uuid?, reason?} (+ at_period_end? for cancel).
struct MoveRequest {
  std::optional<std::string> uuid;
  std::optional<std::string> reason;
  bool at_period_end = false;
};
MoveRequest parse_move(const boost::json::object& body, bool cancel, json::FieldErrors& errors);

// Dunning: the retries of a failed cycle, in days after its first failure ("1,3,5,7").
struct RetrySchedule {
  std::vector<std::int64_t> days;
  // Parses comma-separated strictly increasing day counts (1 to 60); empty text: no retry.
  static std::optional<RetrySchedule> parse(std::string_view text);
};

}  // namespace sika::billing
