#include "webhooks/model.hpp"

#include <boost/json.hpp>

#include "core/json.hpp"
#include "core/random.hpp"
#include "core/time.hpp"

namespace sika::webhooks {

namespace bj = boost::json;

namespace {
bj::value iso_or_null(const std::optional<std::int64_t>& ms) {
  if (!ms) return nullptr;
  return bj::string(iso8601(*ms));
}
template <class T>
bj::value or_null(const std::optional<T>& v) {
  if (!v) return nullptr;
  return bj::value(*v);
}
}  // namespace

bj::object to_json(const Endpoint& e) {
  bj::object o;
  o["id"] = e.id;
  o["url"] = e.url;
  o["description"] = e.description;
  bj::array types;
  for (const auto& t : e.event_types) types.emplace_back(t);
  o["event_types"] = std::move(types);
  o["enabled"] = e.enabled;
  o["disabled_reason"] = or_null(e.disabled_reason);
  o["disabled_at"] = iso_or_null(e.disabled_at);
  o["failing_since"] = iso_or_null(e.failing_since);
  o["last_success_at"] = iso_or_null(e.last_success_at);
  o["last_failure_at"] = iso_or_null(e.last_failure_at);
  o["secret_created_at"] = iso8601(e.secret_created_at);
  o["previous_secret_expires_at"] = iso_or_null(e.previous_secret_expires_at);
  o["created_at"] = iso8601(e.created_at);
  o["updated_at"] = iso8601(e.updated_at);
  return o;
}

bj::object to_json(const EndpointWithSecret& e) {
  bj::object o = to_json(e.endpoint);
  o["secret"] = e.secret;
  return o;
}

bj::object to_json(const Delivery& d) {
  bj::object o;
  o["id"] = d.id;
  o["event_id"] = d.event_id;
  o["event_type"] = d.event_type;
  o["endpoint_id"] = d.endpoint_id;
  o["url"] = d.url;
  o["redelivery"] = d.generation > 0;
  o["status"] = d.status;
  o["attempt_count"] = d.attempts;
  o["next_attempt_at"] = iso_or_null(d.next_attempt_at);
  o["last_attempt_at"] = iso_or_null(d.last_attempt_at);
  o["last_status_code"] = or_null(d.last_status_code);
  o["last_error"] = or_null(d.last_error);
  o["created_at"] = iso8601(d.created_at);
  o["completed_at"] = iso_or_null(d.completed_at);
  return o;
}

bj::object to_json(const Attempt& a) {
  bj::object o;
  o["attempt"] = a.attempt;
  o["started_at"] = iso8601(a.started_at);
  o["latency_ms"] = a.latency_ms;
  o["status_code"] = or_null(a.status_code);
  o["outcome"] = a.outcome;
  o["error"] = or_null(a.error);
  o["response_excerpt"] = or_null(a.response_excerpt);
  return o;
}

bj::object to_json(const Event& e) {
  bj::object o;
  o["event_id"] = e.event_id;
  o["event_type"] = e.event_type;
  o["subject"] = e.subject;
  o["sequence"] = e.sequence;
  o["created_at"] = iso8601(e.created_at);
  boost::system::error_code ec;
  bj::value payload = bj::parse(e.payload, ec);
  o["payload"] = ec ? bj::value(nullptr) : std::move(payload);
  return o;
}

std::string delivery_body(const Event& e) {
  bj::object o;
  o["event_id"] = e.event_id;
  o["event_type"] = e.event_type;
  o["created_at"] = iso8601(e.created_at);
  o["sequence"] = e.sequence;
  boost::system::error_code ec;
  bj::value payload = bj::parse(e.payload, ec);
  if (!ec && payload.is_object())
    for (auto& [k, v] : payload.as_object())
      if (!o.contains(k)) o[k] = v;
  return json::dump(o);
}

bool valid_type_pattern(std::string_view p) {
  if (p == "*") return true;
  if (p.empty() || p.size() > 100) return false;
  if (p.ends_with(".*")) p.remove_suffix(2);
  if (p.empty() || p.front() == '.' || p.back() == '.') return false;
  char prev = 0;
  for (char c : p) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
    if (!ok || (c == '.' && prev == '.')) return false;
    prev = c;
  }
  return true;
}

bool matches(const std::vector<std::string>& patterns, std::string_view type) {
  for (const auto& p : patterns) {
    if (p == "*" || p == type) return true;
    if (p.size() > 2 && p.ends_with(".*") && type.size() > p.size() - 1 &&
        type.substr(0, p.size() - 1) == std::string_view(p).substr(0, p.size() - 1))
      return true;
  }
  return false;
}

std::string join_types(const std::vector<std::string>& types) {
  std::string out;
  for (const auto& t : types) {
    if (!out.empty()) out.push_back(',');
    out += t;
  }
  return out;
}

std::vector<std::string> split_types(std::string_view csv) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < csv.size()) {
    std::size_t end = csv.find(',', pos);
    if (end == std::string_view::npos) end = csv.size();
    if (end > pos) out.emplace_back(csv.substr(pos, end - pos));
    pos = end + 1;
  }
  if (out.empty()) out.emplace_back("*");
  return out;
}

std::string new_public_id(std::string_view prefix) { return std::string(prefix) + hex_encode(random_bytes(12)); }

std::string sanitize_excerpt(std::string_view in, std::size_t max_bytes) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(std::min(in.size(), max_bytes));
  std::size_t i = 0;
  while (i < in.size()) {
    auto c = static_cast<unsigned char>(in[i]);
    std::size_t len = 0;
    if (c < 0x80)
      len = 1;
    else if (c >= 0xC2 && c <= 0xDF)
      len = 2;
    else if (c >= 0xE0 && c <= 0xEF)
      len = 3;
    else if (c >= 0xF0 && c <= 0xF4)
      len = 4;
    bool valid = len > 0 && i + len <= in.size();
    for (std::size_t k = 1; valid && k < len; ++k)
      if ((static_cast<unsigned char>(in[i + k]) & 0xC0) != 0x80) valid = false;
    if (valid && len >= 3) {
      auto c1 = static_cast<unsigned char>(in[i + 1]);
      if (c == 0xE0 && c1 < 0xA0) valid = false;  // overlong
      if (c == 0xED && c1 > 0x9F) valid = false;  // surrogates
      if (c == 0xF0 && c1 < 0x90) valid = false;  // overlong
      if (c == 0xF4 && c1 > 0x8F) valid = false;  // beyond U+10FFFF
    }
    std::string_view piece = valid ? in.substr(i, len) : kReplacement;
    if (valid && len == 1 && c == 0) piece = kReplacement;
    if (out.size() + piece.size() > max_bytes) break;
    out.append(piece);
    i += valid ? len : 1;
  }
  return out;
}

}  // namespace sika::webhooks
