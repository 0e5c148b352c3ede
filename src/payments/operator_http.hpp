#pragma once
// What every operator connector over HTTP shares (docs/operators.md, "The interface"), so that
// each connector keeps only its wire (paths, bodies, headers, how its operator's answers read):
//   - OperatorHttp: every call with the instance's timeouts, at most `max_in_flight` at once,
//     status queries spaced to at most `status_per_second` per node, and every call reported to
//     the call sink (no secret);
//   - BearerToken: an OAuth token shared by every call of the node, fetched one at a time and
//     reused until it expires; a call answered 401 drops it and is made once more with a new one;
//   - resend: a submission sent again while no definite answer came, with doubling pauses;
//   - AcceptedOrders: what accepted submissions leave (Connector::take_accepted), until taken;
//   - the errors of an operator's refusal and of an answer that decides nothing.
#include <boost/json/value.hpp>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "core/thread_annotations.hpp"
#include "payments/connector.hpp"
#include "payments/operator_calls.hpp"
#include "web/client.hpp"

namespace sika::payments {

// Which order a call is about, for its report.
struct Exchange {
  std::string operation, provider_reference, operator_reference;
};

// What the options of every HTTP connector hold (each connector's own options derive from it).
struct OperatorOptions {
  int max_in_flight = 64;             // calls at once from this node
  std::int64_t retry_pause_ms = 200;  // before the 2nd attempt of a resend; doubled for each next one
  int connect_timeout_ms = 5000;
  int timeout_ms = 15000;
  std::function<std::int64_t()> clock;  // epoch ms; now_ms() when empty
  OperatorCallSink* calls = nullptr;
};

struct OperatorHttpOptions {
  std::string name;      // the connector instance's name
  std::string base_url;  // no trailing slash; the reported path is what follows it
  int max_in_flight = 64;
  int connect_timeout_ms = 5000;
  int timeout_ms = 15000;
  int status_per_second = 0;  // 0: status queries are not spaced
  std::int64_t status_wait_ms = 2000;
  std::function<std::int64_t()> clock;  // epoch ms; now_ms() when empty
  OperatorCallSink* calls = nullptr;
  // How a call is reported, in the operator's terms: the error code of an answer ("" for none),
  // the outcome (http_outcome when empty) and the path (what follows base_url, cut of what is an
  // order's id or a query string by `report_path` when there is one: cut_query).
  std::function<std::string(const web::ClientResponse&)> answer_code;
  std::function<OperatorCall::Outcome(const Result<web::ClientResponse>&)> outcome;
  std::function<void(std::string& path)> report_path;
};

// The options of a connector's OperatorHttp from the connector's own options (their fields of the
// same names); `base_url` is cut of its trailing slashes.
template <class ConnectorOptions>
OperatorHttpOptions http_options(const ConnectorOptions& o) {
  OperatorHttpOptions h;
  h.name = o.name;
  h.base_url = o.base_url;
  while (!h.base_url.empty() && h.base_url.back() == '/') h.base_url.pop_back();
  h.max_in_flight = o.max_in_flight;
  h.connect_timeout_ms = o.connect_timeout_ms;
  h.timeout_ms = o.timeout_ms;
  if constexpr (requires { o.status_per_second; }) {
    h.status_per_second = o.status_per_second;
    h.status_wait_ms = o.status_wait_ms;
  }
  h.clock = o.clock;
  h.calls = o.calls;
  return h;
}

class OperatorHttp {
 public:
  OperatorHttp(web::HttpClient& http, OperatorHttpOptions options);

  // Sends `req` with the options' timeouts once a call slot is free (max_in_flight), and reports
  // it to the call sink. The operator's address is configuration, trusted: it may be private.
  Result<web::ClientResponse> send(web::ClientRequest req, const Exchange& what);
  // Waits for a status query slot; false when none came within status_wait_ms.
  bool status_slot();
  std::int64_t now() const;

 private:
  void enter();
  void leave();
  void report(const web::ClientRequest& req, const Result<web::ClientResponse>& res, const Exchange& what,
              std::int64_t started);

  web::HttpClient& http_;
  OperatorHttpOptions options_;
  sika::Mutex mu_;
  std::condition_variable cv_;
  int in_flight_ GUARDED_BY(mu_) = 0;
  std::int64_t next_status_at_ GUARDED_BY(mu_) = 0;  // steady ms of the next status query slot
};

// An OAuth client-credentials token, kept by the node for every call of its connector.
class BearerToken {
 public:
  struct Token {
    std::string value;
    std::int64_t expires_at = 0;  // epoch ms after which it is fetched again
  };
  using Fetch = std::function<Result<Token>()>;

  BearerToken(OperatorHttp& http, Fetch fetch) : http_(http), fetch_(std::move(fetch)) {}

  // Sends `req` with an "Authorization: Bearer" header (appended last), the token fetched first
  // when none is usable; answered 401, the token is dropped and the call made once more.
  Result<web::ClientResponse> send(web::ClientRequest req, const Exchange& what);
  // Tokens fetched since start.
  std::int64_t fetched() const;

  // How an operator's token answer reads: what a refusal's details say, whether a 400 refuses the
  // credentials too (a 401 and a 403 always do), and expires_in in seconds (0 or less: unreadable).
  struct Answer {
    std::string_view refused;
    bool bad_request_refuses = false;
    std::int64_t (*seconds)(const boost::json::value& expires_in) = nullptr;
  };
  // The token of an answer to a token request made at `asked`: 200 with access_token and
  // expires_in, renewed `margin_ms` before it expires or at half its life when that is shorter. A
  // refusal of the credentials is unauthenticated operator_token, another status upstream_failed
  // operator_token, an unreadable 200 operator_error.
  static Result<Token> read(const web::ClientResponse& res, std::int64_t asked, std::int64_t margin_ms,
                            const Answer& how);
  // What a connector's Fetch does once it has made its token request `req`: sends it (reported as
  // the operation "token") and reads the answer (read).
  static Result<Token> ask(OperatorHttp& http, web::ClientRequest req, std::int64_t margin_ms, const Answer& how);

 private:
  // A usable token other than `stale` (one fetch at a time; the others wait for its token).
  Result<std::string> get(std::string_view stale);

  OperatorHttp& http_;
  Fetch fetch_;
  mutable sika::Mutex mu_;
  Token token_ GUARDED_BY(mu_);
  std::int64_t fetched_ GUARDED_BY(mu_) = 0;
  sika::Mutex fetch_mu_;
};

// What accepted submissions left (Connector::take_accepted), kept by reference until taken.
class AcceptedOrders {
 public:
  void keep(std::string_view provider_reference, Accepted accepted);
  std::optional<Accepted> take(std::string_view provider_reference);

 private:
  sika::Mutex mu_;
  std::map<std::string, Accepted, std::less<>> kept_ GUARDED_BY(mu_);
};

// Cuts a reported path at its query string.
void cut_query(std::string& path);

// True for the errors of a call that may have reached the operator without a definite answer
// (upstream_timeout, upstream_failed): the call may be sent again.
bool undecided(const Error& e);

// Makes `attempt` (-> Result<T> or Status) up to `attempts` times (at least once) while it ends
// undecided, pausing `pause_ms` before the second and twice as long before each next; returns the
// first answer that decides, or the last undecided error. The operator deduplicates the resends
// by the order's reference.
void pause_for(std::int64_t ms);
template <class F>
auto resend(int attempts, std::int64_t pause_ms, F&& attempt) -> decltype(attempt()) {
  const int n = attempts < 1 ? 1 : attempts;
  std::int64_t pause = pause_ms;
  for (int i = 1;; ++i) {
    auto res = attempt();
    if (res.ok() || i >= n || !undecided(res.error())) return res;
    pause_for(pause);
    pause *= 2;
  }
}

// An order the operator refused for good, by kind: an account it does not know (`no_account`)
// not_found (INVALID_ACCOUNT), a 401 unauthenticated, a 403 forbidden, anything else invalid (the
// order fails at once: is_refusal). Details: operator_status and the operator's code.
Error operator_refusal(int status, const std::string& code, bool no_account = false);
// An answer that decides nothing (upstream_failed operator_error): the order stays PENDING.
Error operator_unknown_outcome(int status, const std::string& code);

}  // namespace sika::payments
