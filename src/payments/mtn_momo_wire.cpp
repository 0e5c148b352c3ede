#include "payments/mtn_momo_wire.hpp"

#include <boost/json.hpp>

#include <array>
#include <utility>

#include "core/crypto.hpp"
#include "core/json.hpp"
#include "core/money.hpp"
#include "core/random.hpp"

namespace sika::payments::mtn {

namespace bj = boost::json;

namespace {

constexpr std::size_t kMaxMessage = 160;  // characters of payerMessage / payeeNote

// Cuts `text` to at most `max` characters (UTF-8 code points), never inside one.
std::string cut_characters(std::string_view text, std::size_t max) {
  std::size_t chars = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte
    if (chars == max) return std::string(text.substr(0, i));
    ++chars;
  }
  return std::string(text);
}

std::string_view call_name(Call c) {
  switch (c) {
    case Call::request_to_pay: return "requesttopay";
    case Call::transfer: return "transfer";
    case Call::refund: return "refund";
  }
  return "requesttopay";
}

}  // namespace

std::string_view product_path(Product p) { return p == Product::collection ? "collection" : "disbursement"; }

Product product_of(Call c) { return c == Call::request_to_pay ? Product::collection : Product::disbursement; }

std::string_view initiation_path(Call c) {
  switch (c) {
    case Call::request_to_pay: return "/collection/v1_0/requesttopay";
    case Call::transfer: return "/disbursement/v1_0/transfer";
    case Call::refund: return "/disbursement/v2_0/refund";
  }
  return "";
}

std::string_view status_path(Call c) {
  switch (c) {
    case Call::request_to_pay: return "/collection/v1_0/requesttopay/";
    case Call::transfer: return "/disbursement/v1_0/transfer/";
    case Call::refund: return "/disbursement/v1_0/refund/";
  }
  return "";
}

Result<Call> call_for(std::string_view operation) {
  if (operation == "COLLECTION") return Call::request_to_pay;
  if (operation == "DISBURSEMENT") return Call::transfer;
  if (operation == "REFUND") return Call::refund;
  return bad_request("invalid_operation", bj::object{{"operation", "is not one MTN MoMo carries"}});
}

std::string reference_id(Call call, std::string_view provider_reference) {
  std::string b = crypto::sha256("mtn-momo:" + std::string(call_name(call)) + ":" + std::string(provider_reference));
  b.resize(16);
  b[6] = static_cast<char>((b[6] & 0x0F) | 0x40);  // version 4
  b[8] = static_cast<char>((b[8] & 0x3F) | 0x80);  // variant 1 (RFC 9562)
  const std::string h = hex_encode(b);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" + h.substr(20, 12);
}

std::string_view environment_currency(std::string_view env) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 16> kCurrencies{{
      {"sandbox", "EUR"},
      {"mtncameroon", "XAF"},
      {"mtncongo", "XAF"},
      {"mtnivorycoast", "XOF"},
      {"mtnbenin", "XOF"},
      {"mtnguineaconakry", "GNF"},
      {"mtnghana", "GHS"},
      {"mtnuganda", "UGX"},
      {"mtnzambia", "ZMW"},
      {"mtnrwanda", "RWF"},
      {"mtnliberia", "LRD"},
      {"mtnswaziland", "SZL"},
      {"mtnsouthsudan", "SSP"},
      {"mtnguineabissau", "XOF"},
      {"mtnsouthafrica", "ZAR"},
      {"mtnnigeria", "NGN"},
  }};
  for (const auto& [name, currency] : kCurrencies)
    if (name == env) return currency;
  return {};
}

std::string major_amount(std::int64_t minor, std::string_view currency) {
  const int e = money::exponent(currency);
  if (e <= 0) return std::to_string(minor);
  std::int64_t scale = 1;
  for (int i = 0; i < e; ++i) scale *= 10;
  std::string frac = std::to_string(minor % scale);
  frac.insert(0, static_cast<std::size_t>(e) - frac.size(), '0');
  return std::to_string(minor / scale) + "." + frac;
}

std::string initiation_body(Call call, const PaymentOrder& order) {
  bj::object o;
  o["amount"] = major_amount(order.amount, order.currency);
  o["currency"] = order.currency;
  o["externalId"] = order.provider_reference;
  const std::string message = cut_characters(order.message, kMaxMessage);
  if (call == Call::refund) {
    o["referenceIdToRefund"] = reference_id(Call::request_to_pay, order.refunded_reference);
  } else {
    o[call == Call::request_to_pay ? "payer" : "payee"] =
        bj::object{{"partyIdType", "MSISDN"}, {"partyId", order.msisdn}};
  }
  o["payerMessage"] = message;
  o["payeeNote"] = message;
  return bj::serialize(o);
}

std::string_view failure_reason(std::string_view r) {
  if (r == "PAYER_NOT_FOUND" || r == "PAYEE_NOT_FOUND") return "INVALID_ACCOUNT";
  if (r == "NOT_ENOUGH_FUNDS") return "INSUFFICIENT_FUNDS";
  if (r == "APPROVAL_REJECTED" || r == "PAYMENT_NOT_APPROVED") return "REJECTED_BY_CUSTOMER";
  if (r == "EXPIRED") return "TIMEOUT";
  if (r == "PAYER_LIMIT_REACHED") return "LIMIT_EXCEEDED";
  if (r == "PAYEE_NOT_ALLOWED_TO_RECEIVE" || r == "NOT_ALLOWED" || r == "TRANSACTION_CANCELED" ||
      r == "NOT_ALLOWED_TARGET_ENVIRONMENT" || r == "INVALID_CURRENCY")
    return "OPERATOR_REFUSED";
  return "OPERATOR_ERROR";
}

namespace {

// The reason of a FAILED body: a string, or an object {code, message} as older API versions send.
std::string reason_of(const bj::object& o) {
  const bj::value* r = o.if_contains("reason");
  if (!r) return {};
  if (r->is_string()) return std::string(r->as_string());
  if (r->is_object())
    if (const bj::value* code = r->as_object().if_contains("code"); code && code->is_string())
      return std::string(code->as_string());
  return {};
}

OperatorStatus status_of(const bj::object& o) {
  OperatorStatus out;
  const bj::value* s = o.if_contains("status");
  const std::string_view status = s && s->is_string() ? std::string_view(s->as_string()) : std::string_view();
  if (status == "SUCCESSFUL") {
    out.state = OperatorStatus::State::succeeded;
    if (const bj::value* f = o.if_contains("financialTransactionId"); f && f->is_string())
      out.operator_reference = std::string(f->as_string());
  } else if (status == "FAILED") {
    out.state = OperatorStatus::State::failed;
    out.reason = std::string(failure_reason(reason_of(o)));
  }
  return out;  // PENDING, and every status MTN does not document as final
}

}  // namespace

Result<OperatorStatus> parse_status(std::string_view body) {
  auto o = json::parse_object(body);
  if (!o) return make_error(ErrorKind::upstream_failed, "upstream_error", bj::string("unreadable status answer"));
  return status_of(*o);
}

Result<CallbackReport> parse_callback_body(std::string_view body) {
  auto o = json::parse_object(body);
  if (!o) return o.take_error();
  const bj::value* ext = o->if_contains("externalId");
  if (!ext || !ext->is_string() || ext->as_string().empty() || ext->as_string().size() > 64)
    return bad_request("empty_data", bj::object{{"externalId", "is required"}});
  CallbackReport report;
  report.provider_reference = std::string(ext->as_string());
  report.status = status_of(*o);
  return report;
}

std::string error_code(std::string_view body) {
  auto o = json::parse_object(body);
  if (!o) return {};
  if (const bj::value* c = o->if_contains("code"); c && c->is_string()) return std::string(c->as_string());
  return {};
}

bool definite_refusal(int status, std::string_view code) {
  if (status == 404 || status == 408 || status == 409 || status == 429) return false;
  if (status >= 400 && status < 500) return true;
  return code == "INVALID_CURRENCY" || code == "NOT_ALLOWED" || code == "NOT_ALLOWED_TARGET_ENVIRONMENT" ||
         code == "PAYER_NOT_FOUND" || code == "PAYEE_NOT_FOUND";
}

}  // namespace sika::payments::mtn
