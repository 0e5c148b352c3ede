#include "links/model.hpp"

#include <cctype>

#include "core/random.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "otp/code.hpp"
#include "payments/intent.hpp"

namespace sika::links {

namespace bj = boost::json;

namespace {

constexpr std::string_view kCodeAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
constexpr std::size_t kCodeLength = 10;
constexpr std::size_t kMaxTitle = 120;
constexpr std::size_t kMaxDescription = 500;

bj::value opt_json(const std::optional<std::int64_t>& v) { return v ? bj::value(*v) : bj::value(nullptr); }

// A positive amount in minor units, or nullopt with a problem recorded.
std::optional<std::int64_t> positive(const bj::object& body, std::string_view key, json::FieldErrors& errors) {
  auto v = json::get_int(body, key, errors);
  if (v && *v <= 0) {
    errors.add(key, Reason::positive_minor_units);
    return std::nullopt;
  }
  return v;
}

// An ISO 8601 instant after `now`; present-but-null is reported through `was_null`.
std::optional<std::int64_t> future_instant(const bj::object& body, std::string_view key, std::int64_t now,
                                           json::FieldErrors& errors) {
  auto text = json::get_string(body, key, errors);
  if (!text) return std::nullopt;
  auto at = parse_iso8601(*text);
  if (!at) {
    errors.add(key, Reason::date_time);
    return std::nullopt;
  }
  if (*at <= now) {
    errors.add(key, Reason::in_future);
    return std::nullopt;
  }
  return at;
}

std::optional<std::string> bounded_text(const bj::object& body, std::string_view key, std::size_t max,
                                        json::FieldErrors& errors) {
  auto v = json::get_string(body, key, errors);
  if (v && v->size() > max) {
    errors.add(key, reason::at_most_chars(static_cast<std::int64_t>(max)));
    return std::nullopt;
  }
  return v;
}

std::string metadata_of(const bj::object& body, json::FieldErrors& errors) {
  const bj::object* m = json::get_object(body, "metadata", errors);
  if (m) payments::refuse_reserved_metadata(*m, errors);
  return m ? bj::serialize(*m) : "{}";
}

}  // namespace

std::string_view Link::status_at(std::int64_t now) const {
  if (status == kActive && expires_at && *expires_at <= now) return kExpired;
  return status;
}

bj::object to_json(const Link& l, std::string_view payment_url, std::int64_t now) {
  bj::object o;
  o["reference"] = l.reference;
  o["short_code"] = l.short_code;
  o["payment_url"] = payment_url;
  o["status"] = l.status_at(now);
  o["amount"] = opt_json(l.amount);
  o["min_amount"] = opt_json(l.min_amount);
  o["max_amount"] = opt_json(l.max_amount);
  o["currency"] = l.currency;
  o["provider"] = l.provider ? bj::value(*l.provider) : bj::value(nullptr);
  o["channel"] = l.channel;
  o["fee_bearer"] = l.fee_bearer;
  o["title"] = l.title;
  o["description"] = l.description;
  o["expires_at"] = l.expires_at ? bj::value(iso8601(*l.expires_at)) : bj::value(nullptr);
  o["max_usage"] = opt_json(l.max_usage);
  o["payments_completed"] = l.payments_completed;
  o["total_collected"] = l.total_collected;
  auto meta = json::parse(l.metadata);
  o["metadata"] = meta ? *meta : bj::value(bj::object{});
  o["created_at"] = iso8601(l.created_at);
  o["updated_at"] = iso8601(l.updated_at);
  return o;
}

std::string new_short_code() {
  // Rejection sampling: bytes below 248 (4 × 62) map uniformly onto the alphabet.
  std::string code;
  while (code.size() < kCodeLength) {
    for (unsigned char b : random_bytes(16)) {
      if (b >= 248) continue;
      code.push_back(kCodeAlphabet[b % 62]);
      if (code.size() == kCodeLength) break;
    }
  }
  return code;
}

bool valid_short_code(std::string_view code) {
  if (code.size() < 8 || code.size() > 12) return false;
  for (char c : code)
    if (!std::isalnum(static_cast<unsigned char>(c))) return false;
  return true;
}

NewLink parse_new_link(const bj::object& body, std::int64_t now, json::FieldErrors& errors) {
  payments::refuse_unknown_fields(body,
                                  {"amount", "currency", "provider", "channel", "feeBearer", "title", "description",
                                   "expires_at", "max_usage", "min_amount", "max_amount", "metadata"},
                                  errors);
  NewLink n;
  n.amount = positive(body, "amount", errors);
  n.min_amount = positive(body, "min_amount", errors);
  n.max_amount = positive(body, "max_amount", errors);
  if (n.amount && n.min_amount) errors.add("min_amount", Reason::open_amount_only);
  if (n.amount && n.max_amount) errors.add("max_amount", Reason::open_amount_only);
  if (n.min_amount && n.max_amount && *n.min_amount > *n.max_amount) errors.add("max_amount", Reason::not_below_min);
  n.currency = json::get_string(body, "currency", errors, true).value_or("");
  if (body.contains("currency") && n.currency.size() != 3) errors.add("currency", Reason::currency_letters);
  for (char& c : n.currency) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  n.provider = json::get_string(body, "provider", errors);
  if (n.provider && n.provider->empty()) n.provider.reset();
  n.channel = json::get_string(body, "channel", errors).value_or("PROVIDER");
  if (n.channel != "PROVIDER" && n.channel != "WALLET" && n.channel != "AUTO") errors.add("channel", Reason::channel);
  n.fee_bearer = json::get_string(body, "feeBearer", errors).value_or("CUSTOMER");
  if (n.fee_bearer != "CUSTOMER" && n.fee_bearer != "MERCHANT") errors.add("feeBearer", Reason::fee_bearer);
  n.title = bounded_text(body, "title", kMaxTitle, errors).value_or("");
  n.description = bounded_text(body, "description", kMaxDescription, errors).value_or("");
  n.expires_at = future_instant(body, "expires_at", now, errors);
  n.max_usage = json::get_int(body, "max_usage", errors);
  if (n.max_usage && *n.max_usage < 1) {
    errors.add("max_usage", Reason::single_use_min);
    n.max_usage.reset();
  }
  n.metadata = metadata_of(body, errors);
  return n;
}

LinkUpdate parse_update(const bj::object& body, std::int64_t now, json::FieldErrors& errors) {
  payments::refuse_unknown_fields(body, {"title", "description", "expires_at"}, errors);
  LinkUpdate u;
  u.title = bounded_text(body, "title", kMaxTitle, errors);
  u.description = bounded_text(body, "description", kMaxDescription, errors);
  if (auto it = body.find("expires_at"); it != body.end()) {
    u.set_expiry = true;
    if (!it->value().is_null()) u.expires_at = future_instant(body, "expires_at", now, errors);
  }
  if (body.empty()) errors.add("body", Reason::link_update_empty);
  return u;
}

PayRequest parse_pay(const bj::object& body, json::FieldErrors& errors, int otp_length) {
  payments::refuse_unknown_fields(body,
                                  {"customer_phone", "transaction_uuid", "customer_name", "customer_email", "amount",
                                   "provider", "channel", "otp", "metadata"},
                                  errors);
  PayRequest p;
  p.customer_phone = json::get_string(body, "customer_phone", errors, true).value_or("");
  if (body.contains("customer_phone")) {
    std::string digits;
    for (char c : p.customer_phone)
      if (c != ' ' && c != '+') digits.push_back(c);
    bool ok = digits.size() >= 8 && digits.size() <= 15;
    for (char c : digits) ok = ok && std::isdigit(static_cast<unsigned char>(c));
    if (!ok && !errors.has("customer_phone")) errors.add("customer_phone", Reason::phone_country_prefix);
    p.customer_phone = digits;
  }
  p.transaction_uuid = json::get_string(body, "transaction_uuid", errors, true).value_or("");
  if (body.contains("transaction_uuid") && !is_uuid(p.transaction_uuid) && !errors.has("transaction_uuid"))
    errors.add("transaction_uuid", Reason::uuid);
  p.customer_name = bounded_text(body, "customer_name", 120, errors).value_or("");
  p.customer_email = bounded_text(body, "customer_email", 254, errors).value_or("");
  if (!p.customer_email.empty() && p.customer_email.find('@') == std::string::npos)
    errors.add("customer_email", Reason::email);
  p.amount = positive(body, "amount", errors);
  p.provider = json::get_string(body, "provider", errors);
  if (p.provider && p.provider->empty()) p.provider.reset();
  p.channel = json::get_string(body, "channel", errors);
  if (p.channel && *p.channel != "PROVIDER" && *p.channel != "WALLET" && *p.channel != "AUTO")
    errors.add("channel", Reason::channel);
  // The spec types otp as an integer; a string of digits is accepted too.
  p.otp = otp::read_code(body, "otp", otp_length, errors);
  p.metadata = metadata_of(body, errors);
  return p;
}

}  // namespace sika::links
