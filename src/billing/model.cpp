#include "billing/model.hpp"

#include <array>

#include "core/crypto.hpp"
#include "core/money.hpp"
#include "core/random.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "payments/intent.hpp"
#include "payments/model.hpp"

namespace sika::billing {

namespace bj = boost::json;

namespace {

constexpr std::size_t kMaxDescription = 500;
constexpr std::size_t kMaxReason = 500;
constexpr std::size_t kMaxKey = 255;
constexpr std::int64_t kMaxCycles = 10'000;

bj::value when(const std::optional<std::int64_t>& at) { return at ? bj::value(iso8601(*at)) : bj::value(nullptr); }
bj::value text(const std::optional<std::string>& v) { return v ? bj::value(*v) : bj::value(nullptr); }

bool plausible_email(std::string_view e) {
  const std::size_t at = e.find('@');
  if (e.size() > 254 || at == std::string_view::npos || at == 0 || e.find('@', at + 1) != std::string_view::npos)
    return false;
  const std::string_view domain = e.substr(at + 1);
  const std::size_t dot = domain.find('.');
  if (dot == std::string_view::npos || dot == 0 || domain.back() == '.') return false;
  for (char c : e)
    if (static_cast<unsigned char>(c) <= ' ' || c == '<' || c == '>' || c == ',' || c == ';') return false;
  return true;
}

bool plausible_phone(std::string_view p) {
  if (!p.empty() && p.front() == '+') p.remove_prefix(1);
  if (p.size() < 8 || p.size() > 15) return false;
  return p.find_first_not_of("0123456789") == std::string_view::npos;
}

}  // namespace

std::string_view to_string(Move m) {
  switch (m) {
    case Move::suspend: return "suspend";
    case Move::reactivate: return "reactivate";
    case Move::cancel: return "cancel";
    case Move::expire: return "expire";
  }
  return "suspend";
}

namespace {

constexpr SubStatus target(Move move) {
  switch (move) {
    case Move::suspend: return SubStatus::suspended;
    case Move::reactivate: return SubStatus::active;
    case Move::cancel: return SubStatus::cancelled;
    case Move::expire: return SubStatus::expired;
  }
  return SubStatus::suspended;
}

}  // namespace

std::optional<std::string_view> next_status(std::string_view from, Move move) {
  auto f = kSubscriptionStatus.parse(from);
  if (!f || !kSubscriptionStatus.legal(*f, target(move))) return std::nullopt;
  return kSubscriptionStatus.text(target(move));
}

std::string_view event_type(Move move) {
  // Every move to a status emits the same event, whatever the status it leaves.
  for (const auto& e : kSubscriptionStatus.edges)
    if (e.to == target(move)) return e.event;
  return "subscription.suspended";
}

bool Subscription::ends_before(std::int64_t cycle, std::int64_t due) const {
  return (max_cycles && cycle >= *max_cycles) || (end_at && due > *end_at);
}

bj::object summary_json(const Subscription& s) {
  bj::object o;
  o["reference"] = s.reference;
  o["customer_email"] = s.customer_email;
  o["amount"] = s.amount;
  o["currency"] = s.currency;
  o["frequency"] = to_string(s.frequency);
  o["status"] = s.status;
  o["next_payment_at"] = when(s.next_payment_at);
  o["created_at"] = iso8601(s.created_at);
  return o;
}

bj::object payment_json(const Payment& p) {
  bj::object o;
  o["reference"] = p.reference;
  o["amount"] = p.amount;
  o["currency"] = p.currency;
  o["status"] = p.status;
  o["due_at"] = iso8601(p.due_at);
  o["paid_at"] = when(p.paid_at);
  o["payment_intent_reference"] = text(p.payment_intent_reference);
  o["payment_link_reference"] = text(p.payment_link_reference);
  o["wallet_transaction_id"] = text(p.wallet_transaction_id);
  o["failure_reason"] = text(p.failure_reason);
  o["refunded_amount"] = p.refunded_amount;
  o["created_at"] = iso8601(p.created_at);
  o["updated_at"] = iso8601(p.updated_at);
  return o;
}

bj::object mandate_json(const Mandate& m) {
  return bj::object{{"reference", m.reference},
                    {"status", m.status},
                    {"wallet", m.wallet},
                    {"cap", m.cap},
                    {"currency", m.currency},
                    {"frequency", to_string(m.frequency)},
                    {"debits", m.debits},
                    {"last_debit_at", when(m.last_debit_at)},
                    {"approved_at", when(m.approved_at)},
                    {"revoked_at", when(m.revoked_at)},
                    {"revoked_by", text(m.revoked_by)},
                    {"created_at", iso8601(m.created_at)}};
}

bj::object detail_json(const Subscription& s, const std::vector<Payment>& latest, bool merchant_view,
                       const Mandate* mandate) {
  bj::object o = summary_json(s);
  o["uuid"] = s.uuid;
  o["merchant_id"] = s.merchant;
  o["customer_user_id"] = text(s.customer_user_id);
  o["description"] = s.description;
  o["subscribed_at"] = iso8601(s.subscribed_at);
  o["last_payment_at"] = when(s.last_payment_at);
  o["cancelled_at"] = when(s.cancelled_at);
  o["suspended_at"] = when(s.suspended_at);
  o["reactivated_at"] = when(s.reactivated_at);
  if (merchant_view) {
    auto meta = json::parse(s.metadata);
    o["metadata"] = meta && meta->is_object() ? std::move(*meta) : bj::value(bj::object{});
    // Why the subscription is in its status (a suspension by dunning names the cycle and the
    // operator's reason), and the sandbox test clock.
    o["status_reason"] = text(s.status_reason);
    o["cancel_at_period_end"] = s.cancel_at_period_end;
    if (s.environment == "sandbox") o["clock"] = iso8601(s.clock(now_ms()));
    // The wallet mandate later cycles are debited under, when one was asked for.
    o["mandate"] = mandate ? bj::value(mandate_json(*mandate)) : bj::value(nullptr);
  }
  bj::array payments;
  for (const auto& p : latest) {
    bj::object po = payment_json(p);
    if (!merchant_view) po["failure_reason"] = nullptr;
    payments.push_back(std::move(po));
  }
  o["latest_payments"] = std::move(payments);
  return o;
}

std::string amount_text(const Subscription& s) { return money::format(s.amount, s.currency); }

std::string label(const Subscription& s) {
  return s.description.empty() ? "subscription " + s.reference : s.description;
}

bj::object event_payload(const Subscription& s, const Payment* payment) {
  bj::object o = summary_json(s);
  o["uuid"] = s.uuid;
  o["status_reason"] = text(s.status_reason);
  if (payment) o["payment"] = payment_json(*payment);
  return o;
}

bj::object mandate_event_payload(const Subscription& s, const Mandate& m) {
  bj::object o = event_payload(s, nullptr);
  o["mandate"] = mandate_json(m);
  return o;
}

NewSubscription parse_subscribe(const bj::object& body, std::string_view header_key, std::int64_t now,
                                json::FieldErrors& errors) {
  payments::refuse_unknown_fields(body,
                                  {"customer_email", "customer_phone_number", "amount", "currency", "frequency",
                                   "description", "metadata", "idempotency_key", "time_zone", "end_at", "max_cycles"},
                                  errors);
  NewSubscription n;
  if (auto e = json::get_string(body, "customer_email", errors, true)) {
    if (plausible_email(*e))
      n.customer_email = *e;
    else
      errors.add("customer_email", Reason::email);
  }
  if (auto p = json::get_string(body, "customer_phone_number", errors)) {
    if (plausible_phone(*p))
      n.customer_phone = *p;
    else
      errors.add("customer_phone_number", Reason::international_number);
  }
  if (auto a = json::get_int(body, "amount", errors, true)) {
    if (*a <= 0)
      errors.add("amount", Reason::positive_minor_units);
    else
      n.amount = *a;
  }
  if (auto c = json::get_string(body, "currency", errors, true)) {
    if (money::is_currency_code(*c))
      n.currency = *c;
    else
      errors.add("currency", Reason::currency_iso);
  }
  if (auto f = json::get_string(body, "frequency", errors, true)) {
    if (auto parsed = parse_frequency(*f))
      n.frequency = *parsed;
    else
      errors.add("frequency", Reason::frequency);
  }
  if (auto d = json::get_string(body, "description", errors)) {
    if (d->size() > kMaxDescription)
      errors.add("description", reason::at_most_chars(static_cast<std::int64_t>(kMaxDescription)));
    else
      n.description = *d;
  }
  if (const bj::object* m = json::get_object(body, "metadata", errors)) {
    payments::refuse_reserved_metadata(*m, errors);
    n.metadata = bj::serialize(*m);
  }
  if (auto z = json::get_string(body, "time_zone", errors)) {
    if (known_time_zone(*z))
      n.time_zone = *z;
    else
      errors.add("time_zone", Reason::time_zone);
  }
  if (auto e = json::get_string(body, "end_at", errors)) {
    auto at = parse_iso8601(*e);
    if (!at)
      errors.add("end_at", reason::with(Reason::date_time_example, "example", "2027-12-31T23:59:59Z"));
    else if (*at <= now)
      errors.add("end_at", Reason::in_future);
    else
      n.end_at = at;
  }
  if (auto m = json::get_int(body, "max_cycles", errors)) {
    if (*m < 1 || *m > kMaxCycles)
      errors.add("max_cycles", reason::with(Reason::integer_one_to, "max", std::to_string(kMaxCycles)));
    else
      n.max_cycles = m;
  }
  auto body_key = json::get_string(body, "idempotency_key", errors);
  if (!header_key.empty() && body_key && *body_key != header_key)
    errors.add("idempotency_key", Reason::idempotency_header);
  std::optional<std::string> key = header_key.empty() ? body_key : std::optional<std::string>(header_key);
  if (key && (key->empty() || key->size() > kMaxKey))
    errors.add("idempotency_key", reason::with(Reason::one_to_chars, "max", std::to_string(kMaxKey)));
  else
    n.idempotency_key = key;
  bj::object canonical = body;
  canonical.erase("idempotency_key");
  n.request_hash = hex_encode(crypto::sha256(payments::canonical_json(canonical)));
  return n;
}

MoveRequest parse_move(const bj::object& body, bool cancel, json::FieldErrors& errors) {
  if (cancel)
    payments::refuse_unknown_fields(body, {"uuid", "reason", "at_period_end"}, errors);
  else
    payments::refuse_unknown_fields(body, {"uuid", "reason"}, errors);
  MoveRequest m;
  if (auto u = json::get_string(body, "uuid", errors)) {
    if (is_uuid(*u))
      m.uuid = *u;
    else
      errors.add("uuid", Reason::uuid_plain);
  }
  if (auto r = json::get_string(body, "reason", errors)) {
    if (r->size() > kMaxReason)
      errors.add("reason", reason::at_most_chars(static_cast<std::int64_t>(kMaxReason)));
    else
      m.reason = *r;
  }
  if (cancel)
    if (auto p = json::get_bool(body, "at_period_end", errors)) m.at_period_end = *p;
  return m;
}

std::optional<RetrySchedule> RetrySchedule::parse(std::string_view text) {
  RetrySchedule s;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(pos, end - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty() || item.size() > 2 || item.find_first_not_of("0123456789") != std::string_view::npos)
      return std::nullopt;
    const std::int64_t days = std::stoll(std::string(item));
    if (days < 1 || days > 60 || (!s.days.empty() && days <= s.days.back())) return std::nullopt;
    s.days.push_back(days);
    pos = end + 1;
  }
  return s;
}

}  // namespace sika::billing
