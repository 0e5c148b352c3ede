#include "payments/orange_money_wire.hpp"

#include <boost/json.hpp>

#include <array>
#include <utility>

#include "core/crypto.hpp"
#include "core/json.hpp"
#include "core/random.hpp"

namespace sika::payments::orange {

namespace bj = boost::json;

namespace {

constexpr std::string_view kBase32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

std::string base32(std::string_view bytes, std::size_t chars) {
  std::string out;
  std::uint32_t buffer = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    buffer = (buffer << 8) | c;
    bits += 8;
    while (bits >= 5 && out.size() < chars) {
      out.push_back(kBase32[(buffer >> (bits - 5)) & 31]);
      bits -= 5;
    }
  }
  if (bits > 0 && out.size() < chars) out.push_back(kBase32[(buffer << (5 - bits)) & 31]);
  return out;
}

std::optional<std::string> unbase32(std::string_view text, std::size_t bytes) {
  std::string out;
  std::uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    auto at = kBase32.find(c);
    if (at == std::string_view::npos) return std::nullopt;
    buffer = (buffer << 5) | static_cast<std::uint32_t>(at);
    bits += 5;
    if (bits >= 8) {
      out.push_back(static_cast<char>((buffer >> (bits - 8)) & 0xFF));
      bits -= 8;
    }
  }
  if (out.size() != bytes) return std::nullopt;
  return out;
}

std::string string_of(const bj::object& o, std::string_view key) {
  const bj::value* v = o.if_contains(key);
  if (!v) return {};
  if (v->is_string()) return std::string(v->as_string());
  if (v->is_int64()) return std::to_string(v->as_int64());
  return {};
}

// The object a push answer carries its payment in: {"data": {...}} or the body itself.
const bj::object& payload(const bj::object& o) {
  if (const bj::value* d = o.if_contains("data"); d && d->is_object()) return d->as_object();
  return o;
}

Error unreadable(std::string_view what) {
  return make_error(ErrorKind::upstream_failed, "upstream_error", bj::string("unreadable " + std::string(what)));
}

}  // namespace

std::string cut_characters(std::string_view text, std::size_t max) {
  std::size_t chars = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c & 0xC0) == 0x80) continue;
    if (chars == max) return std::string(text.substr(0, i));
    ++chars;
  }
  return std::string(text);
}

std::string order_id(std::string_view ref) {
  if (is_uuid(ref)) {
    std::string bytes;
    for (std::size_t i = 0; i + 1 < ref.size(); ++i) {
      if (ref[i] == '-') continue;
      bytes.push_back(static_cast<char>(std::stoi(std::string(ref.substr(i, 2)), nullptr, 16)));
      ++i;
    }
    return "SK" + base32(bytes, 26);
  }
  return "SH" + base32(crypto::sha256("orange-money:order:" + std::string(ref)), 26);
}

std::optional<std::string> provider_reference_of(std::string_view id) {
  if (id.size() != 28 || id.substr(0, 2) != "SK") return std::nullopt;
  auto bytes = unbase32(id.substr(2), 16);
  if (!bytes) return std::nullopt;
  const std::string h = hex_encode(*bytes);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" + h.substr(20, 12);
}

std::string_view country_currency(std::string_view country) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 12> kCurrencies{{
      {"cm", "XAF"},
      {"cf", "XAF"},
      {"ci", "XOF"},
      {"sn", "XOF"},
      {"ml", "XOF"},
      {"bf", "XOF"},
      {"ne", "XOF"},
      {"gw", "XOF"},
      {"gn", "GNF"},
      {"mg", "MGA"},
      {"cd", "CDF"},
      {"dev", "OUV"},
  }};
  for (const auto& [c, currency] : kCurrencies)
    if (c == country) return currency;
  return {};
}

std::string_view country_alpha3(std::string_view country) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 12> kCountries{{
      {"cm", "CMR"},
      {"cf", "CAF"},
      {"ci", "CIV"},
      {"sn", "SEN"},
      {"ml", "MLI"},
      {"bf", "BFA"},
      {"ne", "NER"},
      {"gw", "GNB"},
      {"gn", "GIN"},
      {"mg", "MDG"},
      {"cd", "COD"},
      {"dev", "CMR"},
  }};
  for (const auto& [c, alpha3] : kCountries)
    if (c == country) return alpha3;
  return {};
}

std::string write_state(const State& s) {
  bj::object o;
  o["flow"] = s.flow == Flow::push ? "push" : "webpay";
  o["order_id"] = s.order_id;
  o["pay_token"] = s.pay_token;
  o["notif_token"] = s.notif_token;
  return bj::serialize(o);
}

std::optional<State> read_state(std::string_view text) {
  if (text.empty()) return std::nullopt;
  auto o = json::parse_object(text);
  if (!o) return std::nullopt;
  State s;
  const std::string flow = string_of(*o, "flow");
  if (flow != "push" && flow != "webpay") return std::nullopt;
  s.flow = flow == "push" ? Flow::push : Flow::webpay;
  s.order_id = string_of(*o, "order_id");
  s.pay_token = string_of(*o, "pay_token");
  s.notif_token = string_of(*o, "notif_token");
  if (s.pay_token.empty()) return std::nullopt;
  return s;
}

std::string notif_url(std::string_view callback_url, std::string_view ref, std::string_view token) {
  std::string url(callback_url);
  url += url.find('?') == std::string::npos ? "?ref=" : "&ref=";
  url += ref;                                                 // a UUID: nothing to escape
  if (!token.empty()) url += "&token=" + std::string(token);  // hex
  return url;
}

std::string webpay_body(const WebpayOrder& w) {
  bj::object o;
  o["merchant_key"] = w.merchant_key;
  o["currency"] = w.currency;
  o["order_id"] = w.order_id;
  o["amount"] = w.amount;
  o["return_url"] = w.return_url;
  o["cancel_url"] = w.cancel_url;
  o["notif_url"] = w.notif_url;
  o["lang"] = w.lang;
  o["reference"] = cut_characters(w.reference, kMaxOrderId);
  return bj::serialize(o);
}

Result<WebpayCreated> parse_webpay_created(std::string_view body) {
  auto o = json::parse_object(body);
  if (!o) return unreadable("webpayment answer");
  WebpayCreated c{string_of(*o, "pay_token"), string_of(*o, "payment_url"), string_of(*o, "notif_token")};
  if (c.pay_token.empty() || c.payment_url.empty() || c.notif_token.empty()) return unreadable("webpayment answer");
  if (c.payment_url.rfind("https://", 0) != 0 && c.payment_url.rfind("http://", 0) != 0)
    return unreadable("payment_url");
  return c;
}

std::string transactionstatus_body(std::string_view order, std::int64_t amount, std::string_view pay_token) {
  bj::object o;
  o["order_id"] = order;
  o["amount"] = amount;
  o["pay_token"] = pay_token;
  return bj::serialize(o);
}

Result<OperatorStatus> parse_webpay_status(std::string_view body) {
  auto o = json::parse_object(body);
  if (!o) return unreadable("status answer");
  OperatorStatus out;
  const std::string status = string_of(*o, "status");
  if (status == "SUCCESS") {
    out.state = OperatorStatus::State::succeeded;
    out.operator_reference = string_of(*o, "txnid");
  } else if (status == "FAILED") {
    out.state = OperatorStatus::State::failed;
    out.reason = "OPERATOR_REFUSED";
  } else if (status == "EXPIRED") {
    out.state = OperatorStatus::State::failed;
    out.reason = "TIMEOUT";
  }
  return out;  // INITIATED, PENDING and every status Orange does not document as final
}

std::string push_body(const PushOrder& p) {
  bj::object o;
  o["notifUrl"] = p.notif_url;
  o["channelUserMsisdn"] = p.channel_msisdn;
  o["amount"] = std::to_string(p.amount);
  o["subscriberMsisdn"] = p.subscriber_msisdn;
  o["pin"] = p.pin;
  o["orderId"] = p.order_id;
  o["description"] = cut_characters(p.description, 125);
  o["payToken"] = p.pay_token;
  return bj::serialize(o);
}

Result<std::string> parse_pay_token(std::string_view body) {
  auto o = json::parse_object(body);
  if (!o) return unreadable("mp/init answer");
  std::string token = string_of(payload(*o), "payToken");
  if (token.empty() || token.size() > 64) return unreadable("mp/init answer");
  return token;
}

std::string_view push_failure_reason(std::string_view confirm_status) {
  if (confirm_status == "60019") return "INSUFFICIENT_FUNDS";
  return "OPERATOR_REFUSED";
}

Result<OperatorStatus> parse_push_status(std::string_view body) {
  auto o = json::parse_object(body);
  if (!o) return unreadable("payment status answer");
  const bj::object& p = payload(*o);
  OperatorStatus out;
  const std::string status = string_of(p, "status");
  if (status == "SUCCESSFULL" || status == "SUCCESS") {
    out.state = OperatorStatus::State::succeeded;
    out.operator_reference = string_of(p, "txnid");
  } else if (status == "FAILED") {
    out.state = OperatorStatus::State::failed;
    out.reason = std::string(push_failure_reason(string_of(p, "confirmtxnstatus")));
  } else if (status == "CANCELLED") {
    out.state = OperatorStatus::State::failed;
    out.reason = "REJECTED_BY_CUSTOMER";
  } else if (status == "EXPIRED") {
    out.state = OperatorStatus::State::failed;
    out.reason = "TIMEOUT";
  }
  return out;
}

std::string national_msisdn(std::string_view international) {
  if (international.size() == 12 && international.substr(0, 3) == "237") return std::string(international.substr(3));
  return std::string(international);
}

std::string error_code(std::string_view body) {
  auto o = json::parse_object(body);
  if (!o) return {};
  return string_of(*o, "code");
}

bool definite_refusal(int status) {
  if (status == 401 || status == 404 || status == 408 || status == 409 || status == 429) return false;
  return status >= 400 && status < 500;
}

}  // namespace sika::payments::orange
