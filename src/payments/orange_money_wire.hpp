#pragma once
// Orange Money wire format (docs/operators.md, "Orange Money"): the Web Payment API (a redirect to
// Orange's page) and Orange Cameroon's merchant payment (a USSD prompt on the customer's phone).
// Request bodies, our order ids, the answers' status and reason mapped to ours. No I/O here:
// orange_money.cpp makes the calls. The rule of every mapping below: only an explicit final status
// of the operator is final; any other status, a body we cannot read, or a field we do not know is
// PENDING.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "payments/connector.hpp"

namespace sika::payments::orange {

enum class Flow { webpay, push };

// Orange's order_id for our provider_reference: at most 30 characters, the same for the same
// reference on every node and after a restart. A UUID (every provider_reference) is written as
// "SK" and the 26 base32 characters of its 16 bytes (28 characters, reversible by
// provider_reference_of); anything else as "SH" and 26 base32 characters of its SHA-256.
std::string order_id(std::string_view provider_reference);
// The provider_reference an "SK" order id was made from; nullopt for any other text.
std::optional<std::string> provider_reference_of(std::string_view order_id);
inline constexpr std::size_t kMaxOrderId = 30;

// The currency an Orange Money account of `country` carries (cm XAF, ci/sn/ml/bf XOF, ...); the
// development platform ("dev") carries Orange's test currency OUV for XAF and XOF orders. Empty
// when the country is not one Orange Money serves.
std::string_view country_currency(std::string_view country);
// The ISO 3166-1 alpha-3 code of `country` (the live demo merchant's); "dev" is Cameroon's.
std::string_view country_alpha3(std::string_view country);

// What an accepted order leaves, kept on the transaction (Accepted::operator_state) as JSON:
// the flow, Orange's tokens and, for the push flow, our own per-payment secret that its
// notification URL carries.
struct State {
  Flow flow = Flow::webpay;
  std::string order_id;
  std::string pay_token;
  std::string notif_token;  // webpay: Orange's; push: ours (the notifUrl's `token`)
};
std::string write_state(const State& s);
std::optional<State> read_state(std::string_view json);

// The notification URL of an order: the instance's callback URL with ?ref=<provider_reference>
// (and &token=<notif_token> for the push flow, whose notifications carry no token of Orange's).
std::string notif_url(std::string_view callback_url, std::string_view provider_reference, std::string_view token);

// --- Web Payment -----------------------------------------------------------------------------
struct WebpayOrder {
  std::string merchant_key, currency, order_id, return_url, cancel_url, notif_url, lang, reference;
  std::int64_t amount = 0;  // major units (Orange's currencies have no decimals)
};
std::string webpay_body(const WebpayOrder& o);
// {pay_token, payment_url, notif_token} of a webpayment answer; upstream_failed when one is missing.
struct WebpayCreated {
  std::string pay_token, payment_url, notif_token;
};
Result<WebpayCreated> parse_webpay_created(std::string_view body);
std::string transactionstatus_body(std::string_view order_id, std::int64_t amount, std::string_view pay_token);
// A transactionstatus answer or a notification: SUCCESS -> succeeded (operator_reference = txnid),
// FAILED -> failed OPERATOR_REFUSED, EXPIRED -> failed TIMEOUT; INITIATED, PENDING and anything
// else -> pending.
Result<OperatorStatus> parse_webpay_status(std::string_view body);

// --- Cameroon merchant payment (push) ---------------------------------------------------------
struct PushOrder {
  std::string notif_url, channel_msisdn, subscriber_msisdn, pin, order_id, description, pay_token;
  std::int64_t amount = 0;
};
std::string push_body(const PushOrder& o);
// The payToken of an mp/init answer ({"data": {"payToken": ...}}); upstream_failed without one.
Result<std::string> parse_pay_token(std::string_view body);
// An mp/pay or mp/paymentstatus answer, or a notification ({"data": {...}} or the object itself):
// SUCCESSFULL / SUCCESS -> succeeded (txnid), FAILED -> failed (push_failure_reason), CANCELLED
// -> failed REJECTED_BY_CUSTOMER, EXPIRED -> failed TIMEOUT; INITIATED, PENDING and anything else
// -> pending.
Result<OperatorStatus> parse_push_status(std::string_view body);
// The reason of a FAILED push payment from its confirmtxnstatus: 60019 (the payer's balance is
// short) INSUFFICIENT_FUNDS; anything else OPERATOR_REFUSED.
std::string_view push_failure_reason(std::string_view confirm_status);
// The subscriber's number as Orange Cameroon writes it: the 9 national digits (237 removed).
std::string national_msisdn(std::string_view international);

// The error code of an Orange error body ({"code": 42, "message": ...} or {"message": ...}), as
// text; empty when there is none.
std::string error_code(std::string_view body);
// True when an answer to a creation (webpayment, mp/init, mp/pay) is a definite refusal: a 4xx
// other than 401 (the token, fetched again), 404, 408, 409 and 429.
bool definite_refusal(int http_status);
// Cuts `text` to at most `max` characters (UTF-8 code points), never inside one.
std::string cut_characters(std::string_view text, std::size_t max);

}  // namespace sika::payments::orange
