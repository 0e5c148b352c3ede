#pragma once
// Airtel Money Open API wire format (docs/operators.md, "Airtel Money"): request bodies, our ids at
// Airtel, the subscriber's number as Airtel wants it, the answers' envelope, status and response
// codes mapped to ours, the callback body and the disbursement PIN's encryption. No I/O here:
// airtel_money.cpp makes the calls. The rule of every mapping below: only an explicit TS (success)
// or TF (failed) of the operator is final; TA (ambiguous), TIP (in progress), any other status, a
// body we cannot read or a code we do not know is PENDING.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "payments/connector.hpp"

namespace sika::payments::airtel {

// The operations Sika sends to Airtel.
enum class Call { collection, disbursement, refund };
Result<Call> call_for(std::string_view operation);  // COLLECTION | DISBURSEMENT | REFUND

constexpr std::string_view kTokenPath = "/auth/oauth2/token";
constexpr std::string_view kCollectionPath = "/merchant/v1/payments/";
constexpr std::string_view kCollectionStatusPath = "/standard/v1/payments/";  // + id
constexpr std::string_view kRefundPath = "/standard/v2/payments/refund";
constexpr std::string_view kDisbursementPath = "/standard/v2/disbursements/";  // status: + id
constexpr std::string_view kUserPath = "/standard/v1/users/";                  // + national msisdn

// A market Airtel Money serves: its ISO alpha-2 (X-Country), alpha-3, dialling code, currency
// and the digits of a national mobile number.
struct Market {
  std::string_view alpha2, alpha3, dialling, currency;
  int national_digits;
};
const Market* market(std::string_view alpha2);  // nullptr when Airtel Money has no such market

// Our transaction id at Airtel: the order's provider_reference (a UUID) without its dashes, so
// that it is alphanumeric as Airtel asks, the same for every resend of the order (after a timeout,
// a restart or on another node), and read back from a callback by provider_reference_of.
std::string transaction_id(std::string_view provider_reference);
std::string provider_reference_of(std::string_view transaction_id);

// The subscriber's number as Airtel wants it: without the country code ("24174123456" -> "74123456"
// in Gabon). 400 when the number is not one of the market's.
Result<std::string> national_msisdn(std::string_view international, const Market& m);

// Bodies. Amounts are JSON numbers of major units (1500 XAF, 15.5 ZMW).
std::string collection_body(const PaymentOrder& order, const Market& m, std::string_view national);
std::string disbursement_body(const PaymentOrder& order, std::string_view national, std::string_view encrypted_pin);
std::string refund_body(std::string_view airtel_money_id);
// The token request's body: {client_id, client_secret, grant_type: client_credentials}.
std::string token_body(std::string_view client_id, std::string_view client_secret);

// Airtel's answer envelope {data: {transaction: {...}}, status: {code, message, result_code,
// response_code, success}}, read leniently (every field may be missing).
struct Answer {
  bool readable = false;  // a JSON object
  bool success = false;   // status.success
  std::string result_code, response_code, message;
  std::string status;  // data.transaction.status (TS, TF, TA, TIP, "SUCCESS" ...)
  std::string id, airtel_money_id, transaction_message;
};
Answer read_answer(std::string_view body);

// What a submission's answer says.
enum class Verdict {
  accepted,         // Airtel took it (in progress, ambiguous, or already final)
  duplicate,        // Airtel already holds this id: an earlier attempt reached it (accepted)
  refused,          // Airtel refused it for good
  invalid_account,  // refused: the number has no (usable) Airtel Money account
  unknown,          // no definite answer: PENDING, the status query decides
};
Verdict submission_verdict(Call call, int http_status, const Answer& a);

// True when a status query's answer says Airtel has no transaction of that id (ESB000045,
// DP00800001025, DP00900001015 without a status, or 404).
bool unknown_transaction(int http_status, const Answer& a);

// A status answer (or a callback's status_code) mapped: TS -> succeeded (operator_reference =
// airtel_money_id), TF -> failed with our failure reason of the response code, anything else
// (TA, TIP, missing) -> pending.
OperatorStatus status_of(Call call, std::string_view status, std::string_view response_code,
                         std::string_view airtel_money_id);

// Airtel's response code -> our stable failure_reason (docs/payments.md, "Failure reasons"):
//   collections (DP008000010xx)                    disbursements (DP009000010xx)
//   02 wrong PIN        REJECTED_BY_CUSTOMER       03 limit reached        LIMIT_EXCEEDED
//   03 limit exceeded   LIMIT_EXCEEDED             04 invalid amount       OPERATOR_REFUSED
//   04 invalid amount   OPERATOR_REFUSED           07 not enough funds     INSUFFICIENT_FUNDS
//   05 no PIN entered   TIMEOUT                    09, 10, 11, 13, 16, 18  OPERATOR_REFUSED
//   07 not enough money INSUFFICIENT_FUNDS         12 invalid number       INVALID_ACCOUNT
//   08, 09, 26 refused  OPERATOR_REFUSED           14 timed out            TIMEOUT
//   10 barred / not registered INVALID_ACCOUNT
//   24 timed out, 29 expired   TIMEOUT
//   anything else (05 disbursement "failed", none) OPERATOR_ERROR
std::string_view failure_reason(Call call, std::string_view response_code);

// A callback body {transaction: {id, message, status_code, airtel_money_id}} read: the order's
// provider_reference and the status it claims. 400 empty_data when it is not one.
Result<CallbackReport> parse_callback_body(std::string_view body);

// The PIN encrypted as Airtel documents: RSA PKCS#1 v1.5 with the public key Airtel gives (base64
// of its DER SubjectPublicKeyInfo), the ciphertext in base64. A new ciphertext each call (the
// padding is random); invalid when the key is not an RSA public key.
Result<std::string> encrypt_pin(std::string_view pin, std::string_view public_key_base64);

}  // namespace sika::payments::airtel
