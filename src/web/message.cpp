#include "web/message.hpp"

#include <algorithm>
#include <cctype>
#include <memory>

#include <spdlog/spdlog.h>

#include "web/envelope.hpp"

namespace sika::web {

namespace {
bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}
int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

bool Principal::has_scope(std::string_view s) const {
  return std::find(scopes.begin(), scopes.end(), s) != scopes.end();
}

bool Principal::grants_country(std::string_view alpha3) const {
  return admin || std::find(countries.begin(), countries.end(), alpha3) != countries.end();
}

std::string_view role_name(Role role) {
  switch (role) {
    case Role::none: return "none";
    case Role::operator_: return "operator";
    case Role::owner: return "owner";
    case Role::developer: return "developer";
    case Role::viewer: return "viewer";
  }
  return "none";
}

Result<const Principal*> merchant_caller(const Request& req) {
  if (!req.principal) return unauthorized(std::string_view("a valid access token is required"));
  if (req.principal->merchant_id <= 0) return forbidden(std::string_view("this credential is not bound to a merchant"));
  return &*req.principal;
}

std::string_view Request::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (k == name) return v;
  return {};
}

std::optional<std::string> Request::query_param(std::string_view name) const {
  for (const auto& [k, v] : query)
    if (k == name) return v;
  return std::nullopt;
}

std::string Request::path_param(std::string_view name) const {
  for (const auto& [k, v] : path_params)
    if (k == name) return v;
  return {};
}

std::string Request::content_type() const {
  std::string_view ct = header("content-type");
  ct = ct.substr(0, ct.find(';'));
  std::string out;
  for (char c : ct)
    if (!std::isspace(static_cast<unsigned char>(c)))
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

void Response::set(std::string name, std::string value) {
  for (auto& [k, v] : headers) {
    if (iequals(k, name)) {
      v = std::move(value);
      return;
    }
  }
  headers.emplace_back(std::move(name), std::move(value));
}

std::string_view Response::get(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return v;
  return {};
}

Response Response::json(int status, std::string body) {
  Response r;
  r.status = status;
  r.body = std::move(body);
  r.headers.emplace_back("Content-Type", "application/json; charset=utf-8");
  return r;
}

Response Response::html(int status, std::string body) {
  return text(status, std::move(body), "text/html; charset=utf-8");
}

Response Response::text(int status, std::string body, std::string content_type) {
  Response r;
  r.status = status;
  r.body = std::move(body);
  r.headers.emplace_back("Content-Type", std::move(content_type));
  return r;
}

Response Response::streamed(int status, std::string content_type, BodyProducer producer) {
  Response r;
  r.status = status;
  r.headers.emplace_back("Content-Type", std::move(content_type));
  r.stream = std::move(producer);
  return r;
}

Status collect_stream(Response& r) {
  if (!r.stream) return {};
  BodyProducer producer = std::move(r.stream);
  r.stream = nullptr;
  for (;;) {
    SIKA_ASSIGN_OR_RETURN(bool more, producer(r.body));
    if (!more) return {};
  }
}

Response Response::redirect(std::string location, int status) {
  Response r;
  r.status = status;
  r.headers.emplace_back("Location", std::move(location));
  return r;
}

Response Response::later() {
  Response r;
  r.deferred = true;
  return r;
}

Reply answer_later(Request& req) {
  if (!req.reply_to) return {};
  return [to = std::move(req.reply_to), route = req.route_id](Response res) { to(std::move(res), route); };
}

namespace {
// A handler moved to a handler thread with its request; answers through the request's reply_to,
// a 500 envelope when the handler throws (nothing above it on the pool's thread would answer).
struct BlockingJob {
  Request req;
  std::function<Response(Request&)> handler;
  void operator()() {
    Response res;
    try {
      res = handler(req);
    } catch (const std::exception& e) {
      spdlog::error("handler failed: request_id={} method={} path={}: {}", req.request_id, req.method, req.path,
                    e.what());
      res = error(req, internal_error());
    }
    if (res.deferred) return;
    if (Reply reply = answer_later(req)) reply(std::move(res));
  }
};
}  // namespace

Response run_blocking(Request& req, std::function<Response(Request&)> handler) {
  if (!req.offload_to || !req.reply_to) return handler(req);
  auto offload = std::move(req.offload_to);
  auto job = std::make_shared<BlockingJob>(BlockingJob{std::move(req), std::move(handler)});
  if (offload([job] { (*job)(); })) return Response::later();
  // The pool is full: answered now, as the server answers a request it cannot queue.
  req = std::move(job->req);
  Response res = error(req, unavailable("server busy, retry shortly"));
  res.set("Retry-After", "1");
  return res;
}

namespace {
thread_local bool t_request_thread = false;
}  // namespace

bool on_request_thread() { return t_request_thread; }
void mark_request_thread(bool on) { t_request_thread = on; }

namespace {
constexpr std::string_view kHandlerThreadNeeded = "handler_thread_needed";
}  // namespace

Error handler_thread_needed() { return make_error(ErrorKind::unavailable, std::string(kHandlerThreadNeeded)); }

bool is_handler_thread_needed(const Error& err) {
  return err.is(ErrorKind::unavailable) && err.code == kHandlerThreadNeeded;
}

namespace {
enum class Decoded { ok, bad_escape, nul };

Decoded decode_into(std::string_view in, bool plus_is_space, std::string& out) {
  out.clear();
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return Decoded::bad_escape;
      int hi = hexval(in[i + 1]);
      int lo = hexval(in[i + 2]);
      if (hi < 0 || lo < 0) return Decoded::bad_escape;
      c = static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      c = ' ';
    }
    if (c == '\0') return Decoded::nul;
    out.push_back(c);
  }
  return Decoded::ok;
}
}  // namespace

std::optional<std::string> percent_decode(std::string_view in, bool plus_is_space) {
  std::string out;
  if (decode_into(in, plus_is_space, out) != Decoded::ok) return std::nullopt;
  return out;
}

bool valid_port(std::string_view port) {
  if (port.empty() || port.size() > 5) return false;
  unsigned value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  return value >= 1 && value <= 65535;
}

std::string percent_encode(std::string_view in) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : in) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string field_value(const Fields& fields, std::string_view name) {
  for (const auto& [k, v] : fields)
    if (k == name) return v;
  return "";
}

Result<Fields> parse_form(std::string_view text) {
  Fields out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t amp = text.find('&', pos);
    if (amp == std::string_view::npos) amp = text.size();
    std::string_view pair = text.substr(pos, amp - pos);
    pos = amp + 1;
    if (pair.empty()) continue;
    std::size_t eq = pair.find('=');
    std::string_view raw_key = pair.substr(0, eq);
    std::string key, value;
    Decoded k = decode_into(raw_key, true, key);
    Decoded v = decode_into(eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1), true, value);
    // The details name the field; a key that cannot be decoded is named as sent.
    std::string field = k == Decoded::ok ? key : std::string(raw_key);
    if (k == Decoded::bad_escape || v == Decoded::bad_escape)
      return bad_request("bad_request", boost::json::object{{field, "malformed percent-encoding"}});
    if (k == Decoded::nul || v == Decoded::nul)
      return bad_request("bad_request", boost::json::object{{field, "must not contain NUL characters"}});
    out.emplace_back(std::move(key), std::move(value));
  }
  return out;
}

Status parse_target(std::string_view target, Request& req) {
  std::string_view t = target;
  if (t.starts_with("http://") || t.starts_with("https://")) {
    std::size_t slash = t.find('/', t.find("://") + 3);
    t = slash == std::string_view::npos ? std::string_view("/") : t.substr(slash);
  }
  std::size_t q = t.find('?');
  std::string_view raw_path = t.substr(0, q);
  req.path = std::string(raw_path);
  if (q != std::string_view::npos) req.query_string = std::string(t.substr(q + 1));
  if (raw_path.empty() || raw_path.front() != '/')
    return bad_request("bad_request", boost::json::object{{"target", "must be an absolute path"}});
  auto path = percent_decode(raw_path, false);
  if (!path) return bad_request("bad_request", boost::json::object{{"path", "malformed percent-encoding"}});
  req.path = std::move(*path);
  auto query = parse_form(req.query_string);
  if (!query) return bad_request("bad_request", boost::json::object{{"query", query.error().details}});
  req.query = std::move(*query);
  return {};
}

}  // namespace sika::web
