#include "wallets/model.hpp"

#include <boost/json.hpp>

#include <algorithm>

#include "core/reason.hpp"
#include "core/time.hpp"

namespace sika::wallets {

namespace bj = boost::json;

std::int64_t spent_at(const Link& link, std::int64_t at) {
  return link.period_start + link.limits.period_ms <= at ? 0 : link.period_spent;
}

namespace {
bj::value time_or_null(const std::optional<std::int64_t>& t) { return t ? bj::value(iso8601(*t)) : bj::value(nullptr); }

// A field as text: strings as they are, integers as their digits (phone is an integer in the spec).
std::optional<std::string> text_field(const bj::object& o, std::string_view key, json::FieldErrors& errors) {
  const bj::value* v = o.if_contains(key);
  if (!v || v->is_null()) {
    errors.add(key, Reason::required);
    return std::nullopt;
  }
  if (v->is_string()) return std::string(v->as_string());
  if (v->is_int64() && v->as_int64() >= 0) return std::to_string(v->as_int64());
  if (v->is_uint64()) return std::to_string(v->as_uint64());
  errors.add(key, Reason::not_string);
  return std::nullopt;
}

// A positive integer limit, given as a JSON integer or (query string) as digits.
std::optional<std::int64_t> limit_field(const bj::object& o, std::string_view key, json::FieldErrors& errors) {
  const bj::value* v = o.if_contains(key);
  if (!v || v->is_null()) return std::nullopt;
  std::optional<std::int64_t> n;
  if (v->is_int64()) n = v->as_int64();
  if (v->is_string()) {
    std::string_view s = v->as_string();
    if (!s.empty() && s.size() <= 15 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
      n = std::stoll(std::string(s));
  }
  if (!n || *n <= 0) {
    errors.add(key, Reason::positive_integer);
    return std::nullopt;
  }
  return n;
}

bool digits_only(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}
}  // namespace

bj::object to_json(const Wallet& w) {
  return bj::object{{"matricule", w.matricule}, {"phone", "+" + w.msisdn}, {"country", w.country},
                    {"currency", w.currency},   {"email", w.email},        {"created_at", iso8601(w.created_at)}};
}

bj::object to_json(const Link& l, std::int64_t at) {
  bj::object limits{{"currency", l.currency},
                    {"per_payment", l.limits.per_payment},
                    {"per_period", l.limits.per_period},
                    {"period_seconds", l.limits.period_ms / 1000}};
  const std::int64_t spent = spent_at(l, at);
  bj::object period{{"spent", spent}, {"remaining", std::max<std::int64_t>(0, l.limits.per_period - spent)}};
  period["ends_at"] = spent > 0 ? bj::value(iso8601(l.period_start + l.limits.period_ms)) : bj::value(nullptr);
  return bj::object{{"reference", l.reference},
                    {"status", l.status},
                    {"matricule", l.wallet.matricule},
                    {"phone", masked_phone(l.wallet.msisdn)},
                    {"partner", l.partner},
                    {"limits", std::move(limits)},
                    {"period", std::move(period)},
                    {"confirmed_at", time_or_null(l.confirmed_at)},
                    {"unlinked_at", time_or_null(l.unlinked_at)},
                    {"unlinked_by", l.unlinked_by.empty() ? bj::value(nullptr) : bj::value(l.unlinked_by)},
                    {"created_at", iso8601(l.created_at)},
                    {"updated_at", iso8601(l.updated_at)}};
}

LinkRequest parse_link_request(const bj::object& fields, json::FieldErrors& errors) {
  LinkRequest r;
  static constexpr std::string_view kKnown[] = {"email",       "phone",      "phoneCountry",  "limits",
                                                "per_payment", "per_period", "period_seconds"};
  for (const auto& kv : fields)
    if (std::find(std::begin(kKnown), std::end(kKnown), kv.key()) == std::end(kKnown))
      errors.add(kv.key(), Reason::unknown_field);
  if (auto email = text_field(fields, "email", errors)) {
    r.email = *email;
    const auto at = r.email.find('@');
    const bool ok = r.email.size() <= 254 && at != std::string::npos && at > 0 && at + 1 < r.email.size() &&
                    r.email.find('@', at + 1) == std::string::npos &&
                    r.email.find_first_of(" \t\r\n<>\",;") == std::string::npos &&
                    r.email.find('.', at) != std::string::npos;
    if (!ok) errors.add("email", Reason::email);
  }
  if (auto phone = text_field(fields, "phone", errors)) {
    r.phone = *phone;
    if (!digits_only(r.phone) || r.phone.size() > 15) errors.add("phone", Reason::digits_at_most_15);
  }
  if (auto cc = text_field(fields, "phoneCountry", errors)) {
    r.phone_country = *cc;
    if (r.phone_country.size() < 2 || r.phone_country.size() > 4 || r.phone_country[0] != '+' ||
        !digits_only(std::string_view(r.phone_country).substr(1)))
      errors.add("phoneCountry", Reason::dialling_code_plus);
  }
  // Limits the partner asks for: at the top level (query strings) or in a "limits" object.
  const bj::object* limits = &fields;
  std::string prefix;
  if (const bj::value* l = fields.if_contains("limits"); l && !l->is_null()) {
    if (!l->is_object()) {
      errors.add("limits", reason::with(Reason::object_of, "fields", "{per_payment, per_period, period_seconds}"));
    } else {
      limits = &l->as_object();
      prefix = "limits.";
      for (const auto& kv : *limits)
        if (kv.key() != "per_payment" && kv.key() != "per_period" && kv.key() != "period_seconds")
          errors.add("limits." + std::string(kv.key()), Reason::unknown_field);
    }
  }
  json::FieldErrors limit_errors;
  r.per_payment = limit_field(*limits, "per_payment", limit_errors);
  r.per_period = limit_field(*limits, "per_period", limit_errors);
  r.period_seconds = limit_field(*limits, "period_seconds", limit_errors);
  errors.add_all(prefix, limit_errors);
  if (r.per_payment && r.per_period && *r.per_payment > *r.per_period)
    errors.add(prefix + "per_payment", reason::with(Reason::not_exceed, "other", "per_period"));
  if (r.period_seconds && (*r.period_seconds < 60 || *r.period_seconds > 31 * 86400))
    errors.add(prefix + "period_seconds",
               Problem(Reason::between_days, {{"min", "60"}, {"max", "2678400"}, {"days", "31"}}));
  return r;
}

std::string period_text(std::int64_t ms) {
  const std::int64_t s = ms / 1000;
  if (s > 86400 && s % 86400 == 0) return std::to_string(s / 86400) + " d";
  if (s > 0 && s % 3600 == 0) return std::to_string(s / 3600) + " h";
  return std::to_string(std::max<std::int64_t>(1, s / 60)) + " min";
}

std::string masked_phone(std::string_view msisdn) {
  if (msisdn.size() < 6) return "+" + std::string(msisdn);
  std::string out = "+" + std::string(msisdn.substr(0, 3)) + " ";
  for (std::size_t i = 3; i + 2 < msisdn.size(); ++i) out += "\xE2\x80\xA2";  // a bullet per hidden digit
  out += std::string(msisdn.substr(msisdn.size() - 2));
  return out;
}

}  // namespace sika::wallets
