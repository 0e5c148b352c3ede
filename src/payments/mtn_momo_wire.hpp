#pragma once
// MTN MoMo Open API wire format (docs/operators.md, "MTN MoMo"): request bodies, the operator's
// references, the answers' status and reason mapped to ours. No I/O here: mtn_momo.cpp makes the
// calls. The rule of every mapping below: only an explicit SUCCESSFUL or FAILED of the operator is
// final; any other status, a body we cannot read, or a field we do not know is PENDING.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "payments/connector.hpp"

namespace sika::payments::mtn {

// The MTN products Sika uses and the operations they carry.
enum class Product { collection, disbursement };
enum class Call { request_to_pay, transfer, refund };

std::string_view product_path(Product p);  // "collection" | "disbursement"
Product product_of(Call c);
// "/collection/v1_0/requesttopay", "/disbursement/v1_0/transfer", "/disbursement/v2_0/refund"
std::string_view initiation_path(Call c);
// The status query's path prefix (the reference is appended): .../requesttopay/, .../transfer/,
// /disbursement/v1_0/refund/
std::string_view status_path(Call c);
// The call an order is: a COLLECTION is a request to pay, a DISBURSEMENT a transfer, a REFUND a refund.
Result<Call> call_for(std::string_view operation);

// MTN accepts only a UUID version 4 as X-Reference-Id. Ours is derived from the order's
// provider_reference and the call (so the same order always has the same reference at MTN, after
// a timeout, a restart or on another node, and a resend is answered 409 when the first arrived):
// SHA-256 of "mtn-momo:<call>:<provider_reference>", laid out as version 4, variant 1.
std::string reference_id(Call call, std::string_view provider_reference);

// The target environment's currency (mtncameroon XAF, mtnivorycoast XOF, sandbox EUR ...); empty
// when the environment is not one MTN documents.
std::string_view environment_currency(std::string_view target_environment);

// An amount in minor units as MTN writes it: a string of major units ("1500" XAF, "15.50" EUR).
std::string major_amount(std::int64_t minor, std::string_view currency);

// The JSON body of an initiation. `message` (payerMessage / payeeNote) is cut to MTN's 160
// characters, on a UTF-8 character boundary.
std::string initiation_body(Call call, const PaymentOrder& order);

// The operator's answer to a status query (or a callback, which carries the same body), mapped:
// SUCCESSFUL -> succeeded (operator_reference = financialTransactionId), FAILED -> failed with our
// failure reason (failure_reason below), anything else -> pending.
Result<OperatorStatus> parse_status(std::string_view body);
// The order's provider_reference of a callback body: its externalId (we send our provider
// reference as externalId), plus the status the body claims. 400 when the body is not one.
Result<CallbackReport> parse_callback_body(std::string_view body);

// MTN's reason code -> our stable failure_reason (docs/payments.md, "Failure reasons"):
//   PAYER_NOT_FOUND, PAYEE_NOT_FOUND                        INVALID_ACCOUNT
//   NOT_ENOUGH_FUNDS                                        INSUFFICIENT_FUNDS
//   APPROVAL_REJECTED, PAYMENT_NOT_APPROVED                 REJECTED_BY_CUSTOMER
//   EXPIRED                                                 TIMEOUT
//   PAYER_LIMIT_REACHED                                     LIMIT_EXCEEDED
//   PAYEE_NOT_ALLOWED_TO_RECEIVE, NOT_ALLOWED, TRANSACTION_CANCELED,
//   NOT_ALLOWED_TARGET_ENVIRONMENT, INVALID_CURRENCY        OPERATOR_REFUSED
//   anything else (INTERNAL_PROCESSING_ERROR, SERVICE_UNAVAILABLE, none) OPERATOR_ERROR
std::string_view failure_reason(std::string_view mtn_reason);

// The error code of an operator's 4xx/5xx body ({"code": ...} or {"statusCode": ..., "message"}),
// empty when there is none.
std::string error_code(std::string_view body);
// True when an initiation's refusal is definite: the operator answered and will not process it
// (4xx other than 404/408/409/429, or a 500 with a refusal code such as INVALID_CURRENCY).
bool definite_refusal(int http_status, std::string_view code);

}  // namespace sika::payments::mtn
