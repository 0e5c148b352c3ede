#pragma once
// The transaction model: the lifecycle, the stored transaction, its public record, the
// webhook payload of a status change, and the split allocation rule.
//
// Lifecycle (docs/payments.md draws it):
//   INITIATED -> PENDING | CANCELLED | EXPIRED | FAILED, and COMPLETED for a WALLET collection
//                (the wallet's debit is the payment: no operator is waited for)
//   PENDING   -> COMPLETED | FAILED | EXPIRED
//   COMPLETED -> REFUNDED, a collection once its refunds gave back its whole amount (docs/refunds.md)
//   REFUNDED, FAILED, EXPIRED, CANCELLED are final: nothing leaves them. COMPLETED is terminal for
//   its own lifecycle (no operator answer moves it) and leaves only by its refunds.
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/db.hpp"
#include "store/state_machine.hpp"

namespace sika::payments {

// The outbox event of every status change.
inline constexpr std::string_view kStatusChangedEvent = "transaction.status_changed";

enum class TxStatus { initiated, pending, completed, failed, expired, cancelled, refunded };
// Every legal move of pay_transactions (the lifecycle above), each emitting transaction.status_changed.
// Two moves are open to some transactions only (legal_move(const Transaction&, ...)): INITIATED ->
// COMPLETED (kWalletDebitMove) to a WALLET collection, COMPLETED -> REFUNDED to a collection.
inline constexpr store::StateMachine<TxStatus, 7, 9> kTxStatus{
    "pay_transactions",
    {"INITIATED", "PENDING", "COMPLETED", "FAILED", "EXPIRED", "CANCELLED", "REFUNDED"},
    {{{TxStatus::initiated, TxStatus::pending, kStatusChangedEvent},
      {TxStatus::initiated, TxStatus::cancelled, kStatusChangedEvent},
      {TxStatus::initiated, TxStatus::expired, kStatusChangedEvent},
      {TxStatus::initiated, TxStatus::failed, kStatusChangedEvent},
      {TxStatus::initiated, TxStatus::completed, kStatusChangedEvent},
      {TxStatus::pending, TxStatus::completed, kStatusChangedEvent},
      {TxStatus::pending, TxStatus::failed, kStatusChangedEvent},
      {TxStatus::pending, TxStatus::expired, kStatusChangedEvent},
      {TxStatus::completed, TxStatus::refunded, kStatusChangedEvent}}}};
// The move of the table only a WALLET collection makes (the wallet's debit is the payment).
inline constexpr store::Edge<TxStatus> kWalletDebitMove = kTxStatus.edges[4];
static_assert(kWalletDebitMove.from == TxStatus::initiated && kWalletDebitMove.to == TxStatus::completed);

// "INITIATED", "PENDING", ...
inline std::string_view to_string(TxStatus s) { return kTxStatus.text(s); }
// Parses the exact upper-case spelling.
inline std::optional<TxStatus> parse_status(std::string_view text) { return kTxStatus.parse(text); }
// Returns true iff the transaction's own lifecycle has ended in `s` (no operator answer, expiry or
// cancellation may follow it): every status but INITIATED and PENDING. A COMPLETED collection may
// still become REFUNDED by its refunds.
bool is_terminal(TxStatus s);
// Returns true iff a collection in `s` was paid: COMPLETED, or REFUNDED (paid, then given back in
// full by its refunds). What a payment bought (an order, a link's use, a subscription's cycle) stays
// paid when it is refunded: it is never opened, retried or charged again for that.
inline bool was_paid(TxStatus s) { return s == TxStatus::completed || s == TxStatus::refunded; }
// Returns true iff `from -> to` is a move of kTxStatus open to any transaction: every edge but
// kWalletDebitMove.
bool legal_move(TxStatus from, TxStatus to);

inline constexpr std::string_view kCollection = "COLLECTION";
inline constexpr std::string_view kDisbursement = "DISBURSEMENT";
inline constexpr std::string_view kChannelProvider = "PROVIDER";
inline constexpr std::string_view kChannelWallet = "WALLET";
inline constexpr std::string_view kChannelAuto = "AUTO";
inline constexpr std::string_view kDirect = "DIRECT";
inline constexpr std::string_view kSplit = "SPLIT";
// settlement_mode of a PROVIDER transaction whose other side is the customer's own platform
// wallet (customer:<customer_wallet>) instead of the merchant: a collection credits the wallet
// (a top-up from the customer's mobile money), a payout reserves and pays from the wallet (a
// withdrawal to it). Set only by code inside the platform (IntentRequest::own_wallet).
inline constexpr std::string_view kOwnWallet = "WALLET";
// split_status values: NONE (DIRECT), PENDING (SPLIT, not settled yet), SETTLED (beneficiaries
// credited at COMPLETED), CANCELLED (the transaction ended without money).
inline constexpr std::string_view kSplitNone = "NONE";
inline constexpr std::string_view kSplitPending = "PENDING";
inline constexpr std::string_view kSplitSettled = "SETTLED";
inline constexpr std::string_view kSplitCancelled = "CANCELLED";

// Rates are held exactly in parts per million of the amount (100 % = 1 000 000).
inline constexpr std::int64_t kRateWhole = 1'000'000;

struct SplitLine {
  int position = 0;
  std::string matricule;
  std::int64_t rate_ppm = 0;
  std::optional<std::int64_t> amount;  // set when settled
  std::string description;
  std::string metadata;  // JSON text of an object
};

// A collection charged in another currency than the one its merchant is credited in (a hosted
// checkout with line=up): the customer pays the transaction's currency into the platform's FX
// position, and the FX position credits the merchant `amount` in `currency` (one row of
// pay_conversions). The rate is the quote's, exact: 1 unit of `currency` is
// numerator/denominator units of the transaction's currency.
struct Conversion {
  std::string currency;           // the merchant's (the order's) currency
  std::int64_t order_amount = 0;  // the order's amount in `currency`, minor units
  std::int64_t amount = 0;        // credited to the merchant(s) in `currency` at completion
  std::int64_t numerator = 1, denominator = 1;
  std::int64_t quoted_at = 0;  // epoch ms
};

// One row of pay_transactions.
struct Transaction {
  std::int64_t id = 0;
  std::string reference;  // transaction_reference
  std::int64_t merchant_id = 0;
  std::string merchant;  // the merchant's matricule (not stored; filled when known)
  std::string environment;
  std::string operation;  // COLLECTION | DISBURSEMENT
  std::string transaction_uuid;
  std::string request_hash;
  std::string invoice_reference;
  std::string provider_reference;
  TxStatus status = TxStatus::initiated;
  std::string channel;  // resolved: PROVIDER | WALLET
  std::string service_code;
  std::string country;
  std::string connector;        // connector of the service's provider ("sandbox", "wallet", ...)
  std::string customer_wallet;  // international digits
  std::int64_t amount = 0;
  std::string currency;
  std::int64_t fee = 0;
  std::int64_t required_total = 0;
  std::string confirmation_method;
  std::string confirmation_url;
  std::string settlement_mode;
  std::string split_reference;
  std::string split_status;
  std::string description;
  std::string metadata;  // JSON text of an object
  bool needs_otp = false;
  std::int64_t otp_failures = 0;
  std::optional<std::string> failure_reason;
  std::optional<std::string> operator_reference;
  std::optional<std::int64_t> submitted_at;
  // Left by the operator's acceptance (Connector::take_accepted): where the customer approves a
  // redirect payment, and the connector's own data about the order (opaque here).
  std::string customer_url;
  std::string operator_state;
  std::int64_t expires_at = 0;
  std::int64_t created_at = 0;
  std::int64_t updated_at = 0;
  // What its COMPLETED refunds gave back (collections; 0 when none), and what its refund in flight
  // has reserved (docs/refunds.md).
  std::int64_t refunded_amount = 0;
  std::int64_t refunding_amount = 0;
};

// Returns true iff tx may move to `to`: legal_move, kWalletDebitMove for a WALLET collection, and
// COMPLETED -> REFUNDED for a collection only.
bool legal_move(const Transaction& tx, TxStatus to);

// The SELECT list matching transaction_from_row.
extern const std::string_view kTransactionColumns;
Transaction transaction_from_row(const store::Row& row);

// The public transaction record (every field of the spec, plus a few of ours).
boost::json::object to_record(const Transaction& tx);
// The payload of a status-change event (the spec's webhook fields).
boost::json::object event_payload(const Transaction& tx);

// Splits `amount` by rates (ppm, summing to kRateWhole) with the largest-remainder rule:
// each share is floor(amount * rate / 1e6); the units left over (fewer than the number of
// lines) go one each to the lines with the largest fractional parts, ties to the earlier line.
// The shares always sum to `amount` exactly.
std::vector<std::int64_t> allocate_split(std::int64_t amount, const std::vector<std::int64_t>& rates_ppm);

// The canonical form of a JSON value (object keys sorted, no spaces), used to fingerprint
// requests for idempotency: two bodies with the same fields and values give the same text.
std::string canonical_json(const boost::json::value& v);
// The fingerprint of a request body under an idempotency key: hex SHA-256 of `operation`, a newline
// and the body's canonical JSON. The same body gives the same fingerprint, another one another.
std::string body_fingerprint(std::string_view operation, const boost::json::value& body);

}  // namespace sika::payments
