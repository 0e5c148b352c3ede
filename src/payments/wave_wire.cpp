#include "payments/wave_wire.hpp"

#include <boost/json.hpp>

#include <charconv>

#include "core/crypto.hpp"
#include "core/json.hpp"
#include "core/money.hpp"
#include "core/random.hpp"

namespace sika::payments::wave {

namespace bj = boost::json;

namespace {

std::string str(const bj::object& o, std::string_view key) {
  const bj::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

// The code of an error object nested under `key` ({"code"} or {"error_code"}), "" when none.
std::string nested_code(const bj::object& o, std::string_view key) {
  const bj::value* v = o.if_contains(key);
  if (!v || !v->is_object()) return {};
  std::string c = str(v->as_object(), "code");
  return c.empty() ? str(v->as_object(), "error_code") : c;
}

Session session_of(const bj::object& o) {
  Session s;
  s.id = str(o, "id");
  s.amount = str(o, "amount");
  s.wave_launch_url = str(o, "wave_launch_url");
  s.checkout_status = str(o, "checkout_status");
  s.payment_status = str(o, "payment_status");
  s.transaction_id = str(o, "transaction_id");
  s.client_reference = str(o, "client_reference");
  s.error_code = nested_code(o, "last_payment_error");
  s.when_expires = str(o, "when_expires");
  return s;
}

Payout payout_of(const bj::object& o) {
  Payout p;
  p.id = str(o, "id");
  p.status = str(o, "status");
  p.transaction_id = str(o, "transaction_id");
  p.client_reference = str(o, "client_reference");
  p.error_code = nested_code(o, "payout_error");
  return p;
}

Error unreadable(std::string_view what) {
  return make_error(ErrorKind::upstream_failed, "upstream_error", bj::string("unreadable " + std::string(what)));
}

}  // namespace

std::string amount_text(std::int64_t minor, std::string_view currency) {
  const int e = money::exponent(currency);
  if (e <= 0) return std::to_string(minor);
  std::int64_t scale = 1;
  for (int i = 0; i < e; ++i) scale *= 10;
  std::string frac = std::to_string(minor % scale);
  frac.insert(0, static_cast<std::size_t>(e) - frac.size(), '0');
  return std::to_string(minor / scale) + "." + frac;
}

std::string e164(std::string_view msisdn) {
  if (msisdn.starts_with('+')) return std::string(msisdn);
  return "+" + std::string(msisdn);
}

std::string idempotency_key(std::string_view what, std::string_view provider_reference) {
  return hex_encode(crypto::sha256("wave:" + std::string(what) + ":" + std::string(provider_reference))).substr(0, 32);
}

std::string checkout_body(const PaymentOrder& order) {
  bj::object o;
  o["amount"] = amount_text(order.amount, order.currency);
  o["currency"] = order.currency;
  o["client_reference"] = order.provider_reference;
  // The customer comes back to our confirmation page, which shows where the payment stands.
  o["success_url"] = order.return_url;
  o["error_url"] = order.return_url;
  o["restrict_payer_mobile"] = e164(order.msisdn);
  return bj::serialize(o);
}

std::string payout_body(const PaymentOrder& order) {
  bj::object o;
  o["currency"] = order.currency;
  o["receive_amount"] = amount_text(order.amount, order.currency);
  o["mobile"] = e164(order.msisdn);
  o["client_reference"] = order.provider_reference;
  // Shown to the recipient; Wave allows at most 40 characters of a limited set: the reference only.
  o["payment_reason"] = order.transaction_reference.substr(0, 40);
  return bj::serialize(o);
}

Result<Session> parse_session(std::string_view body) {
  auto o = json::parse_object(body);
  if (!o) return unreadable("checkout session");
  Session s = session_of(*o);
  if (s.id.empty()) return unreadable("checkout session (no id)");
  return s;
}

Result<std::optional<Session>> pick_from_search(std::string_view body, std::string_view client_reference) {
  auto o = json::parse_object(body);
  const bj::value* list = o ? o->if_contains("result") : nullptr;
  if (!list || !list->is_array()) return unreadable("checkout session search");
  std::optional<Session> succeeded, open, last;
  for (const bj::value& v : list->as_array()) {
    if (!v.is_object()) continue;
    Session s = session_of(v.as_object());
    if (s.id.empty() || s.client_reference != client_reference) continue;
    if (s.checkout_status == "complete" && s.payment_status == "succeeded") succeeded = s;
    if (s.checkout_status == "open") open = s;
    last = s;
  }
  if (succeeded) return succeeded;
  if (open) return open;
  return last;
}

OperatorStatus session_status(const Session& s) {
  OperatorStatus out;
  if (s.checkout_status == "complete" && s.payment_status == "succeeded") {
    out.state = OperatorStatus::State::succeeded;
    out.operator_reference = s.transaction_id;
  } else if (s.checkout_status == "expired") {
    out.state = OperatorStatus::State::failed;
    out.reason = s.error_code.empty() ? "TIMEOUT" : std::string(failure_reason(s.error_code));
  }
  return out;  // open (the customer may still pay, or pay again after a failed attempt), and the unknown
}

Result<Payout> parse_payout(std::string_view body) {
  auto o = json::parse_object(body);
  if (!o) return unreadable("payout");
  Payout p = payout_of(*o);
  if (p.id.empty()) return unreadable("payout (no id)");
  return p;
}

OperatorStatus payout_status(const Payout& p) {
  OperatorStatus out;
  if (p.status == "succeeded") {
    out.state = OperatorStatus::State::succeeded;
    out.operator_reference = p.transaction_id.empty() ? p.id : p.transaction_id;
  } else if (p.status == "failed") {
    out.state = OperatorStatus::State::failed;
    out.reason = std::string(failure_reason(p.error_code));
  }
  return out;  // processing, reversed, and the unknown
}

std::string_view failure_reason(std::string_view c) {
  if (c == "insufficient-funds" || c == "insufficient-client-balance") return "INSUFFICIENT_FUNDS";
  if (c == "customer-age-limit-exceeded" || c == "kyb-limit-exceeded" || c == "payout-limit-exceeded" ||
      c == "recipient-limit-exceeded" || c == "wallet-limit-exceeded" || c == "amount-too-large")
    return "LIMIT_EXCEEDED";
  if (c == "recipient-not-found" || c == "no-matching-wallet" || c == "invalid-wallet" || c == "name-mismatch" ||
      c == "mobile-invalid")
    return "INVALID_ACCOUNT";
  if (c == "payment-cancelled" || c == "cancelled-by-customer") return "REJECTED_BY_CUSTOMER";
  if (c == "checkout-session-expired") return "TIMEOUT";
  if (c == "blocked-account" || c == "cross-border-payment-not-allowed" || c == "payer-mobile-mismatch" ||
      c == "currency-mismatch" || c == "not-allowed")
    return "OPERATOR_REFUSED";
  return "OPERATOR_ERROR";
}

std::string error_code(std::string_view body) {
  auto o = json::parse_object(body);
  if (!o) return {};
  return str(*o, "code");
}

bool definite_refusal(int status) {
  if (status == 404 || status == 408 || status == 409 || status == 429) return false;
  return status >= 400 && status < 500;
}

// ---- webhooks ---------------------------------------------------------------------------------

std::string signature_header(std::string_view secret, std::int64_t unix_seconds, std::string_view body) {
  const std::string t = std::to_string(unix_seconds);
  return "t=" + t + ",v1=" + hex_encode(crypto::hmac_sha256(secret, t + std::string(body)));
}

Signature verify_signature(std::string_view header, std::string_view body, std::string_view secret,
                           std::int64_t now_seconds) {
  if (header.empty()) return Signature::missing;
  std::string_view t;
  std::vector<std::string_view> v1;
  while (!header.empty()) {
    const std::size_t comma = header.find(',');
    std::string_view part = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    const std::size_t eq = part.find('=');
    if (eq == std::string_view::npos) return Signature::malformed;
    const std::string_view k = part.substr(0, eq), v = part.substr(eq + 1);
    if (k == "t") {
      if (!t.empty()) return Signature::malformed;
      t = v;
    } else if (k == "v1") {
      v1.push_back(v);
    }  // other schemes: ignored, as Wave documents
  }
  std::int64_t at = 0;
  if (t.empty() || t.size() > 12 || v1.empty()) return Signature::malformed;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), at);
  if (ec != std::errc() || end != t.data() + t.size()) return Signature::malformed;
  const std::string expected = hex_encode(crypto::hmac_sha256(secret, std::string(t) + std::string(body)));
  bool match = false;
  for (std::string_view candidate : v1) match = crypto::constant_time_equal(candidate, expected) || match;
  if (!match) return Signature::mismatch;
  const std::int64_t age = now_seconds - at;
  if (age > kSignatureToleranceSeconds || age < -kSignatureToleranceSeconds) return Signature::stale;
  return Signature::valid;
}

Result<Event> parse_event(std::string_view body) {
  auto o = json::parse_object(body);
  if (!o) return bad_request("empty_data", bj::object{{"body", "is not a JSON object"}});
  Event e;
  e.id = str(*o, "id");
  e.type = str(*o, "type");
  if (e.id.empty() || e.id.size() > 128) return bad_request("empty_data", bj::object{{"id", "is required"}});
  if (e.type.empty()) return bad_request("empty_data", bj::object{{"type", "is required"}});
  const bj::value* data = o->if_contains("data");
  if (!data || !data->is_object()) return bad_request("empty_data", bj::object{{"data", "is required"}});
  const bj::object& d = data->as_object();
  e.client_reference = str(d, "client_reference");
  e.object_id = str(d, "id");
  if (e.type.starts_with("checkout.session.")) {
    Session s = session_of(d);
    // A failed attempt leaves the session open (the customer may pay again): its reason is kept,
    // the order is final only once the session can take no payment (wave.cpp expires it first).
    e.status = session_status(s);
    if (e.type == "checkout.session.payment_failed" && e.status.state == OperatorStatus::State::pending)
      e.status.reason = std::string(failure_reason(s.error_code));
  } else if (e.type.starts_with("payout.")) {
    e.status = payout_status(payout_of(d));
  }
  if (e.client_reference.empty() && (e.type.starts_with("checkout.session.") || e.type.starts_with("payout.")))
    return bad_request("empty_data", bj::object{{"client_reference", "is required"}});
  return e;
}

}  // namespace sika::payments::wave
