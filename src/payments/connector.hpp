#pragma once
// Operator connectors: the one interface every mobile-money operator sits behind.
// A connector submits collections (a push to the customer's phone) and payouts, answers
// status queries, authenticates and parses the operator's callbacks, and looks up account
// holders. Submissions are asynchronous: the outcome arrives later by callback or query.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "payments/operator_calls.hpp"
#include "web/client.hpp"
#include "web/message.hpp"

namespace sika::payments {

// What a connector is asked to do for one transaction.
struct PaymentOrder {
  std::string operation;  // COLLECTION | DISBURSEMENT | REFUND
  std::string transaction_reference;
  std::string provider_reference;  // our reference at the operator (unique)
  std::string service_code;
  std::string msisdn;       // international digits
  std::int64_t amount = 0;  // collected from (required_total) or paid to (amount) the customer
  std::string currency;
  std::string environment;
  std::optional<std::string> otp;
  std::int64_t submitted_at = 0;   // epoch ms
  std::string message;             // shown to the customer by the operator (merchant name, reference)
  std::string refunded_reference;  // REFUND: the provider_reference of the collection refunded
  std::string operator_state;      // what the connector left at acceptance (Accepted), "" before
  std::string return_url;          // COLLECTION: our confirmation page, where a redirect flow comes back
};

// What an accepted submission leaves for later, kept on the transaction: where the customer
// approves a redirect payment (empty for a push to the phone), and the connector's own data about
// the order (its tokens and ids at the operator), given back in PaymentOrder::operator_state.
struct Accepted {
  std::string customer_url;
  std::string operator_state;
};

// An operator's view of a transaction.
struct OperatorStatus {
  enum class State { pending, succeeded, failed };
  State state = State::pending;
  std::string reason;  // failure reason code, e.g. INSUFFICIENT_FUNDS
  std::string operator_reference;
};

// A callback, authenticated and parsed.
struct CallbackReport {
  std::string provider_reference;
  OperatorStatus status;
};

class Connector {
 public:
  virtual ~Connector() = default;
  virtual std::string_view name() const = 0;
  // Checks a one-time code before anything is submitted, when the connector can tell;
  // 400 invalid_otp when it is wrong. Connectors that cannot tell accept it.
  virtual Status check_otp(const PaymentOrder& order) = 0;
  // Submits; ok means accepted for processing. An error is a synchronous refusal; a payout
  // refused with kind not_found names a payee account that does not exist (INVALID_ACCOUNT).
  virtual Status request_collection(const PaymentOrder& order) = 0;
  virtual Status request_payout(const PaymentOrder& order) = 0;
  // Submits a refund of a completed collection (order.refunded_reference); 503 when the operator
  // or this connector has none.
  virtual Status request_refund(const PaymentOrder& order);
  // True when request_refund carries a refund of this operator's collection: of part of it
  // (`partial`) or of the whole of it. False: the platform refunds by a payout to the payer's number.
  virtual bool refunds(bool /*partial*/) const { return false; }
  // False when request_payout carries nothing (the operator's API has no payouts): a refund this
  // connector cannot refund is then refused before anything is reserved.
  virtual bool pays_out() const { return true; }
  // The operator's current view of a submitted order. Recovery asks it of every PENDING order
  // whose answer is late (docs/payments.md, "Recovery of pending payments"), with back-off, from
  // one node at a time. Only a definite answer of the operator is succeeded or failed: a state the
  // operator does not report as final, a reference it does not know, a timeout or an unreachable
  // operator is pending or an error (recovery treats both as "ask again later"), never failed.
  virtual Result<OperatorStatus> query_status(const PaymentOrder& order) = 0;
  // What the last accepted submission of `provider_reference` left (its Accepted), taken once, right
  // after request_collection / request_payout / request_refund returned ok; nullopt when nothing.
  virtual std::optional<Accepted> take_accepted(std::string_view /*provider_reference*/) { return std::nullopt; }
  // Authenticates (401 unauthorized) and parses (400 empty_data) a callback request.
  virtual Result<CallbackReport> parse_callback(const web::Request& req) = 0;
  // Authenticates a parsed callback against its order, for an operator that echoes a per-payment
  // secret instead of signing (Orange's notif_token): `order` is the transaction the report names
  // at this connector (its operator_state as accepted), null when there is none. 401 unauthorized
  // refuses the callback before anything is recorded. Default: nothing more to check.
  virtual Status authenticate_callback(const web::Request& /*req*/, const CallbackReport& /*report*/,
                                       const PaymentOrder* /*order*/) {
    return {};
  }
  // What the operator must hold before a collection is submitted, kept on the transaction before
  // request_collection is called (which then finds it in order.operator_state): an id without
  // which the order could not be asked about later (Orange Cameroon's payToken). nullopt when the
  // connector needs none. An error is read as request_collection's (is_refusal).
  virtual Result<std::optional<Accepted>> prepare_collection(const PaymentOrder& /*order*/) {
    return std::optional<Accepted>{};
  }
  // True when the customer approves a collection on the operator's page (Accepted::customer_url)
  // rather than on the phone.
  virtual bool redirects_customer() const { return false; }
  // True when the customer pays in the operator's app, opened by the accepted submission's
  // customer_url (a link on a phone, its QR code on a computer: Wave).
  virtual bool pays_in_app() const { return false; }
  // True when the prompt of this PENDING collection can be sent to the customer's phone again;
  // prompt_again sends it (503 when the connector has no such call).
  virtual bool prompts_again(const PaymentOrder& /*order*/) const { return false; }
  virtual Status prompt_again(const PaymentOrder& order);
  // The account holder's name for a wallet; 404 account_not_found when there is none.
  virtual Result<std::string> account_holder(std::string_view service_code, std::string_view msisdn) = 0;

  // What the platform may assume of this operator (docs/payments.md, "Recovery of pending payments"):
  // True when a callback is signed by the operator and may be applied as it says; false when it
  // is only a hint, verified with query_status before any money moves.
  virtual bool signs_callbacks() const { return true; }
  // True when the platform may end a PENDING order by time (the sandbox operator); false when only
  // the operator's final answer ends it, whatever the time.
  virtual bool expires_pending() const { return true; }
  // True when an order the operator does not know (query_status answers not_found) may be submitted
  // again as it is: the operator deduplicates it by its reference.
  virtual bool resubmits_unknown() const { return false; }
  // True when a status read of a PENDING order may ask the operator (the sandbox); false when the
  // operator's query budget is kept for recovery and callback verification (MTN: 10 per second).
  virtual bool query_on_read() const { return true; }
  // True when this connector can carry amounts in `currency` (its operator's account currency).
  virtual bool serves(std::string_view /*currency*/) const { return true; }
};

// True when an error of request_collection / request_payout / request_refund says the operator
// refused the order for good (it fails); false when the order may have reached the operator (it
// stays PENDING and recovery asks). By the error's kind only, never its text.
bool is_refusal(const Error& e);

// How a call to an operator went, for its OperatorCall report: an answer as its API documents it
// (2xx, or a documented 404 / 409) ok, a 4xx refusal (not 429) refused, a 5xx or 429 failed, no
// answer a timeout or a network error. A connector whose operator documents more (Airtel's "already
// exists") reads those itself first.
OperatorCall::Outcome http_outcome(const Result<web::ClientResponse>& res);

}  // namespace sika::payments
