#pragma once
// Plain HTTP request and response types. No socket or Beast type appears here: handlers
// are plain functions Request& -> Response that unit tests call directly.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/i18n.hpp"
#include "core/result.hpp"

namespace sika::web {

using Fields = std::vector<std::pair<std::string, std::string>>;

// What a caller may do inside a merchant (or, for operators, across merchants). API credentials
// (OAuth clients of a merchant) act with the owner's authority; the dashboard gives people a role.
enum class Role { none, operator_, owner, developer, viewer };
std::string_view role_name(Role role);

// The authenticated caller of a route, filled by the route's auth policy (web/router.hpp).
struct Principal {
  std::string subject;  // JWT sub: the client_id (client_credentials) or the user id
  std::string client_id;
  std::string jti;
  std::int64_t expires_at = 0;  // epoch seconds
  std::vector<std::string> scopes;
  std::string merchant;  // owning merchant's matricule ("" when none)
  std::int64_t merchant_id = 0;
  std::int64_t grants_version = 0;  // the merchant's grants version the claims were read at
  std::int64_t user_tier = 1;
  std::vector<std::string> countries;  // ISO alpha-3 codes the credential may act in
  bool admin = false;
  std::string environment = "sandbox";  // "sandbox" or "prod"
  Role role = Role::none;

  bool has_scope(std::string_view s) const;
  // True iff the role may change things (everyone but viewers and anonymous callers).
  bool can_change() const { return role == Role::operator_ || role == Role::owner || role == Role::developer; }
  bool grants_country(std::string_view alpha3) const;
};

struct Request {
  std::string method;        // upper case, e.g. "GET"
  std::string target;        // as received
  std::string path;          // percent-decoded path, without the query
  std::string query_string;  // raw, without '?'
  Fields query;              // decoded query parameters, in order
  Fields headers;            // names lower-cased
  std::string body;
  std::string remote_ip;  // the client address (behind trusted proxies: from their forwarding header)
  std::string peer_ip;    // the TCP peer, set by Router::dispatch ("" before)
  std::string request_id;
  i18n::Locale locale = i18n::Locale::fr;
  Fields path_params;  // from {name} segments of the matched route
  int route_id = -1;   // index of the matched route in the route table (-1: none); a metrics label
  std::optional<Principal> principal;
  // Set by the server. reply_to sends this request's response from any thread, once (see
  // answer_later). offload_to runs a job on a handler thread, where it may block; it is set only
  // while the request runs on an I/O thread (see "Where a request runs" below), empty on a
  // handler thread and in unit tests. Both empty: the handler's return value is the answer.
  std::function<void(struct Response, int route_id)> reply_to;
  std::function<bool(std::function<void()>)> offload_to;

  // Returns the first header value with this (lower-case) name, or "".
  std::string_view header(std::string_view lower_name) const;
  std::optional<std::string> query_param(std::string_view name) const;
  std::string path_param(std::string_view name) const;
  // Media type of the body without parameters, lower-cased ("application/json").
  std::string content_type() const;
};

// Appends the next piece of a streamed body to `out`; returns whether more pieces follow.
using BodyProducer = std::function<Result<bool>(std::string& out)>;

struct Response {
  int status = 200;
  Fields headers;  // Content-Length is added by the server
  std::string body;
  // A body made piece by piece instead of `body` (a large download in constant memory). The server
  // sends it chunked, calling the producer on the handler thread, one piece at a time and only once
  // the previous piece is written, so the client's pace bounds what is held. Once the first piece
  // is out the status is sent: a producer's error then cuts the connection, so the client sees an
  // incomplete body rather than a short one that looks whole.
  BodyProducer stream;

  void set(std::string name, std::string value);
  std::string_view get(std::string_view name) const;  // case-insensitive

  static Response json(int status, std::string body);
  static Response html(int status, std::string body);
  static Response text(int status, std::string body, std::string content_type = "text/plain; charset=utf-8");
  static Response redirect(std::string location, int status = 302);
  // What a handler returns when it answers later through answer_later().
  static Response later();
  bool deferred = false;  // true for later(): the server sends nothing now
  // `status` with `content_type` and the body made by `producer`.
  static Response streamed(int status, std::string content_type, BodyProducer producer);
};

// Runs a streamed response's producer to its end and puts the whole body in `body` (for an
// HTTP/1.0 client, which has no chunked framing, and for tests); nothing to do without one.
Status collect_stream(Response& r);

// Sends a response later, from any thread, exactly once.
using Reply = std::function<void(Response)>;

// Takes the request's reply channel: the handler then returns Response::later() and calls the
// Reply once. Returns an empty Reply when the request has none (a unit test calling the handler
// directly): the handler then answers by its return value.
Reply answer_later(Request& req);

// Where a request runs. The server runs a route declared non_blocking, or answers_later on a
// database whose writes are asynchronous, on the I/O thread that read it, with offload_to set;
// every other request runs on a handler thread. On an I/O thread nothing may block (no database
// read that waits, no lock held long, no network). The one way from there to a handler thread
// is run_blocking, through offload_to:
//  - a handler calls run_blocking(req, handler) and returns what it gives;
//  - an authenticator, which cannot answer itself, returns handler_thread_needed(): the router
//    then runs the whole request again through run_blocking (its authenticator too, now on a
//    handler thread, where it may block).
// Code that runs on a handler thread never sees offload_to, so it never asks.

// Runs `handler` where it may block: on a handler thread when the request runs on an I/O thread
// (the answer goes through reply_to, once; returns Response::later()), else here (returns its
// answer). The request is moved into the job. A full handler pool answers 503 with Retry-After,
// now and here.
Response run_blocking(Request& req, std::function<Response(Request&)> handler);
// True on a thread of the server's handler pool, where a client waits for the answer (the
// server marks its handler threads with mark_request_thread). What may hold such a thread long
// (a call to an operator) is bounded by it: payments::OperatorGate.
bool on_request_thread();
void mark_request_thread(bool on);
// What an authenticator returns when it cannot decide without blocking on an I/O thread
// (offload_to set); see "Where a request runs". Only Router::dispatch acts on it.
Error handler_thread_needed();
bool is_handler_thread_needed(const Error& err);

// Returns the caller when it acts for a merchant: unauthenticated without a principal,
// forbidden when the credential is not bound to a merchant.
Result<const Principal*> merchant_caller(const Request& req);

// Percent-decodes; '+' becomes a space when `plus_is_space`. nullopt on a bad escape or a NUL byte.
std::optional<std::string> percent_decode(std::string_view in, bool plus_is_space);
std::string percent_encode(std::string_view in);
// Returns true iff `port` is the decimal text of a TCP port, 1 to 65535, as written in a URL
// authority (boost::urls' port_number() wraps 99999 around instead of refusing it).
bool valid_port(std::string_view port);
// Parses "a=1&b=2" (query strings and application/x-www-form-urlencoded bodies).
Result<Fields> parse_form(std::string_view text);
// The first value of `name` in `fields`, or "".
std::string field_value(const Fields& fields, std::string_view name);
// Splits a request target, origin-form "/path?query" or absolute-form "http://host/path?query",
// into req.path (percent-decoded), req.query_string (raw) and req.query (decoded). On a malformed
// target returns 400 bad_request whose details name "target", "path" or "query"; req.path then
// holds the raw path, for the access log.
Status parse_target(std::string_view target, Request& req);

}  // namespace sika::web
