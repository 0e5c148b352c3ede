#pragma once
// What a connector reports of each call it makes to its operator: the transaction's timeline on
// the dashboard shows them, and operator health (OPERATIONAL / DELAYED / CLOSED) is decided from
// their outcomes and latencies. Never a secret: no credential, token or request body.
#include <cstdint>
#include <string>
#include <string_view>

namespace sika::payments {

struct OperatorCall {
  enum class Outcome {
    ok,       // the operator answered as its API documents (2xx, or a documented 404 / 409)
    refused,  // the operator answered and refused (4xx with a refusal code)
    failed,   // the operator answered 5xx or 429, or something its API does not document
    timeout,  // no answer within the deadline
    network,  // refused connection, reset, DNS or TLS failure
  };
  std::string connector;           // instance name, e.g. "mtn_momo"
  std::string operation;           // token | collection | payout | refund | status | holder | balance
  std::string provider_reference;  // ours at the operator; empty for token, holder, balance
  std::string operator_reference;  // the operator's reference of the call (e.g. MTN X-Reference-Id)
  std::string method, path;        // "POST", "/collection/v1_0/requesttopay" (no query, no secret)
  int http_status = 0;             // 0 when no answer came
  std::string code;                // the operator's error code, or ours (upstream_timeout, ...)
  Outcome outcome = Outcome::ok;
  std::int64_t started_at = 0;  // epoch ms
  std::int64_t latency_ms = 0;
};

constexpr std::string_view to_string(OperatorCall::Outcome o) {
  switch (o) {
    case OperatorCall::Outcome::ok: return "ok";
    case OperatorCall::Outcome::refused: return "refused";
    case OperatorCall::Outcome::failed: return "failed";
    case OperatorCall::Outcome::timeout: return "timeout";
    case OperatorCall::Outcome::network: return "network";
  }
  return "failed";
}

// Where connectors report their calls. Implementations must be cheap and never block on I/O in
// record(): it runs on the caller's thread, between an operator's answer and the payment's move.
class OperatorCallSink {
 public:
  virtual ~OperatorCallSink() = default;
  virtual void record(const OperatorCall& call) = 0;
};

}  // namespace sika::payments
