#include "web/envelope.hpp"

#include <algorithm>
#include <charconv>

#include <spdlog/spdlog.h>

#include "core/json.hpp"

namespace sika::web {

namespace bj = boost::json;

void reply_with(const Reply& reply, i18n::Locale locale, std::string_view what,
                const std::function<Response(const Request&)>& make) {
  Request as_asked;
  as_asked.locale = locale;
  Response res;
  try {
    res = make(as_asked);
  } catch (const std::exception& e) {
    spdlog::error("{}: answer failed: {}", what, e.what());
    res = error(locale, internal_error());
  }
  reply(std::move(res));
}

Response ok(const Request& req, bj::value data, bj::object meta, std::string_view message, int status) {
  meta["text"] = i18n::text(message, req.locale);
  // Written straight out, in the envelope's key order: building the envelope as a JSON object
  // first cost a copy of `data` and doubled the response's allocations.
  std::string body;
  body.reserve(256);
  body += "{\"code\":";
  body += std::to_string(status);
  body += ",\"success\":true,\"locale\":";
  json::dump_string_to(i18n::name(req.locale), body);
  body += ",\"message\":";
  json::dump_string_to(message, body);
  body += ",\"meta\":";
  json::dump_to(bj::value(std::move(meta)), body);  // moved, not copied, into a value
  body += ",\"data\":";
  json::dump_to(data, body);
  body += '}';
  return Response::json(status, std::move(body));
}

int http_status(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::invalid: return 400;
    case ErrorKind::unauthenticated: return 401;
    case ErrorKind::forbidden: return 403;
    case ErrorKind::not_found: return 404;
    case ErrorKind::method_not_allowed: return 405;
    case ErrorKind::conflict: return 409;
    case ErrorKind::payload_too_large: return 413;
    case ErrorKind::unsupported_media_type: return 415;
    case ErrorKind::rate_limited: return 429;
    case ErrorKind::headers_too_large: return 431;
    case ErrorKind::internal: return 500;
    case ErrorKind::upstream_failed: return 502;
    case ErrorKind::retryable:
    case ErrorKind::unavailable: return 503;
    case ErrorKind::upstream_timeout: return 504;
  }
  return 500;
}

Response error(i18n::Locale locale, const Error& err) {
  // A server-side failure's details (database messages, internal state) are logged, never sent;
  // unless they were rendered from typed problems (Reason texts, with_problem): those are written
  // for the caller (e.g. a provider CLOSED by operator health).
  const int status = http_status(err.kind);
  const bool server_side = err.server_side() && err.problems.empty();
  if (server_side) spdlog::error("{} {} {}: {}", status, kind_name(err.kind), err.code, json::dump(err.details));
  bj::object env;
  env["success"] = false;
  env["code"] = status;
  env["message"] = err.code;
  env["locale"] = i18n::name(locale);
  bj::object e;
  e["details"] = server_side ? bj::value(nullptr) : err.details;
  e["text"] = i18n::text(err.code, locale);
  env["error"] = std::move(e);
  Response r = Response::json(status, json::dump(env));
  if (err.is(ErrorKind::rate_limited) && err.details.is_object())
    if (const auto* after = err.details.as_object().if_contains("retry_after"); after && after->is_int64())
      r.set("Retry-After", std::to_string(std::max<std::int64_t>(1, after->as_int64())));
  // A transient failure (the database away or out of connections, a statement cancelled at its
  // deadline, a lost race out of retries): the same call may succeed shortly.
  if (status == 503) r.set("Retry-After", "1");
  return r;
}

Response error(const Request& req, const Error& err) { return error(req.locale, err); }

namespace {
std::optional<std::int64_t> parse_int(std::string_view s) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}
}  // namespace

Page parse_page(const Request& req, bj::object& errors, std::int64_t default_limit) {
  Page p;
  p.limit = default_limit;
  if (auto v = req.query_param("page")) {
    auto n = parse_int(*v);
    if (!n || *n < 1)
      errors["page"] = "must be an integer >= 1";
    else
      p.page = *n;
  }
  if (auto v = req.query_param("limit")) {
    auto n = parse_int(*v);
    if (!n || *n < 1 || *n > 100)
      errors["limit"] = "must be an integer between 1 and 100";
    else
      p.limit = *n;
  }
  // Keeps offset arithmetic far from overflow.
  if (p.page > 1'000'000'000) errors["page"] = "is too large";
  return p;
}

std::optional<std::string> choice_param(const Request& req, std::string_view name,
                                        std::initializer_list<std::string_view> allowed, bj::object& errors) {
  auto v = req.query_param(name);
  if (!v) return std::nullopt;
  if (std::find(allowed.begin(), allowed.end(), std::string_view(*v)) != allowed.end()) return v;
  std::string problem = "must be ";
  std::size_t i = 0;
  for (std::string_view a : allowed) {
    if (i > 0) problem += i + 1 == allowed.size() ? " or " : ", ";
    problem += a;
    ++i;
  }
  errors[name] = problem;
  return std::nullopt;
}

bj::object pagination(const Page& page, std::int64_t total) {
  std::int64_t pages = total == 0 ? 0 : (total + page.limit - 1) / page.limit;
  bj::object o;
  o["page"] = page.page;
  o["limit"] = page.limit;
  o["total"] = total;
  o["pages"] = pages;
  o["has_next"] = page.page < pages;
  o["has_previous"] = page.page > 1;
  bj::object meta;
  meta["pagination"] = std::move(o);
  return meta;
}

Result<bj::object> body_object(const Request& req, bool allow_form) {
  std::string ct = req.content_type();
  if (allow_form && ct == "application/x-www-form-urlencoded") {
    auto fields = parse_form(req.body);
    if (!fields) return empty_data(fields.error().details);
    if (fields->empty()) return empty_data("request body is empty");
    bj::object o;
    for (auto& [k, v] : *fields) o[k] = v;
    return o;
  }
  if (!ct.empty() && ct != "application/json" && !(ct.size() > 5 && ct.ends_with("+json")))
    return make_error(
        ErrorKind::unsupported_media_type, "unsupported_media_type",
        bj::string(allow_form ? "use application/json or application/x-www-form-urlencoded" : "use application/json"));
  return json::parse_object(req.body);
}

}  // namespace sika::web
