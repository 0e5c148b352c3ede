#pragma once
// The refund model (docs/refunds.md): a refund of a COMPLETED collection, its lifecycle, the stored
// row, its public record (the API's `data`, also the payload of its webhook event).
//
// Lifecycle (kRefundStatus; every move emits refund.status_changed):
//   PENDING    -> PROCESSING (the operator accepted it) | COMPLETED | FAILED
//   PROCESSING -> COMPLETED | FAILED
//   COMPLETED and FAILED are final.
// A refund is created PENDING with its funds reserved; a WALLET refund completes in the very unit
// that creates it.
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/json.hpp"
#include "store/db.hpp"
#include "store/state_machine.hpp"

namespace sika::payments {

// The outbox event of every refund move.
inline constexpr std::string_view kRefundStatusChangedEvent = "refund.status_changed";

enum class RefundStatus { pending, processing, completed, failed };
inline constexpr store::StateMachine<RefundStatus, 4, 5> kRefundStatus{
    "pay_refunds",
    {"PENDING", "PROCESSING", "COMPLETED", "FAILED"},
    {{{RefundStatus::pending, RefundStatus::processing, kRefundStatusChangedEvent},
      {RefundStatus::pending, RefundStatus::completed, kRefundStatusChangedEvent},
      {RefundStatus::pending, RefundStatus::failed, kRefundStatusChangedEvent},
      {RefundStatus::processing, RefundStatus::completed, kRefundStatusChangedEvent},
      {RefundStatus::processing, RefundStatus::failed, kRefundStatusChangedEvent}}}};

inline std::string_view to_string(RefundStatus s) { return kRefundStatus.text(s); }
inline std::optional<RefundStatus> parse_refund_status(std::string_view t) { return kRefundStatus.parse(t); }
// True iff nothing may follow `s` (COMPLETED, FAILED).
inline bool is_final(RefundStatus s) { return s == RefundStatus::completed || s == RefundStatus::failed; }

// How the money goes back to the customer.
inline constexpr std::string_view kRefundWallet = "WALLET";             // the customer's platform wallet, at once
inline constexpr std::string_view kRefundSandbox = "SANDBOX";           // the sandbox operator
inline constexpr std::string_view kRefundOperator = "OPERATOR_REFUND";  // the operator's refund of the collection
inline constexpr std::string_view kRefundPayout = "OPERATOR_PAYOUT";    // a payout to the payer's number

// Why the merchant refunds (the request's `reason`).
inline constexpr std::string_view kRefundReasons[] = {"REQUESTED_BY_CUSTOMER", "DUPLICATE", "FRAUDULENT", "OTHER"};
bool is_refund_reason(std::string_view reason);

// One row of pay_refunds.
struct Refund {
  std::int64_t id = 0;
  std::string reference;  // refund_reference, "RF-..."
  std::int64_t merchant_id = 0;
  std::int64_t transaction_id = 0;
  std::string transaction_reference;
  std::string environment;
  std::string refund_uuid;
  std::string request_hash;
  std::string provider_reference;  // our reference of the refund at the operator (unique)
  std::int64_t amount = 0;         // what the customer gets back, minor units
  std::string currency;
  RefundStatus status = RefundStatus::pending;
  std::string reason;
  std::string description;
  std::string metadata;  // JSON text of an object
  std::optional<std::string> failure_reason;
  std::optional<std::string> operator_reference;
  std::string channel;    // kRefundWallet | kRefundSandbox | kRefundOperator | kRefundPayout
  std::string connector;  // the connector instance that carries it ("" for WALLET)
  std::string operator_state;
  std::int64_t expires_at = 0;  // after this, a refund its operator never knew of FAILS
  std::int64_t created_at = 0;
  std::int64_t updated_at = 0;
};

// The SELECT list matching refund_from_row.
extern const std::string_view kRefundColumns;
Refund refund_from_row(const store::Row& row);

// The public refund record: the API's `data` and the payload of refund.status_changed.
boost::json::object to_record(const Refund& r);

// A refund as the merchant asks for it (POST /collection/refund).
struct RefundRequest {
  std::string transaction_reference;
  std::string refund_uuid;             // the idempotency key, a UUID
  std::optional<std::int64_t> amount;  // nullopt: everything still refundable
  std::string reason;                  // one of kRefundReasons
  std::string description;
  std::string metadata = "{}";  // JSON text of an object
  // Identifies the request for idempotency: body_fingerprint("REFUND", body) of the body as sent (an
  // absent amount stays absent). Empty: computed from the fields above by refund_fingerprint.
  std::string fingerprint;
};

// Reads the body of POST /collection/refund. Every problem is recorded in `errors` under its field
// (typed reasons): transaction_reference and refund_uuid (a UUID) and reason required, amount a
// positive integer when present, description at most 255 characters, metadata an object of at most
// 4096 bytes; unknown fields refused by name.
RefundRequest parse_refund(const boost::json::object& body, json::FieldErrors& errors);
// The fingerprint of a request built by code (the same as parse_refund gives for its body).
std::string refund_fingerprint(const RefundRequest& request);

}  // namespace sika::payments
