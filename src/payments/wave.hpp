#pragma once
// The Wave Business API connector (docs/operators.md, "Wave"): one instance serves one Wave
// business wallet (its API key), in XOF. Collections are checkout sessions the customer pays in the
// Wave app (a redirect to wave_launch_url, or its QR code on our confirmation page); payouts are
// Wave payouts; refunds refund a whole checkout session. The wire format is wave_wire.hpp; this
// file makes the calls:
//   - every POST carries an idempotency-key derived from the order, and is sent again with the
//     same key after a timeout, a network error or a 5xx, up to `attempts` times; with no definite
//     answer the order stays PENDING and recovery asks (by the kept id, or by searching our
//     client_reference when the acceptance was never kept; Wave knows none: sent again, same key);
//   - an accepted session leaves its wave_launch_url (customer_url) and id (operator_state), a
//     payout its id (take_accepted);
//   - webhooks are signed (Wave-Signature, HMAC-SHA256 of t + body with the webhook secret): an
//     unsigned, forged or stale (> 5 min) one is 401 and moves nothing; an event id seen on this
//     node in the last 10 minutes is acknowledged and moves nothing;
//   - a failed payment attempt leaves the session open at Wave: the session is expired first, and
//     the order fails only once Wave has expired it (else it stays PENDING);
//   - at most `max_in_flight` calls at once; every call is reported to `calls` (no secret).
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "core/thread_annotations.hpp"
#include "payments/connector.hpp"
#include "payments/operator_calls.hpp"
#include "payments/operator_http.hpp"
#include "payments/wave_wire.hpp"
#include "web/client.hpp"

namespace sika::payments {

struct WaveOptions : OperatorOptions {
  std::string name = "wave";  // the connector instance's name (catalog provider.connector)
  std::string base_url;       // https://api.wave.com, no trailing slash
  std::string api_key;        // Bearer key of the business wallet
  std::string webhook_secret;
  int attempts = 3;
};

class Wave final : public Connector {
 public:
  Wave(web::HttpClient& http, WaveOptions options);

  std::string_view name() const override { return options_.name; }
  Status check_otp(const PaymentOrder&) override { return {}; }  // the customer approves in the Wave app
  Status request_collection(const PaymentOrder& order) override;
  Status request_payout(const PaymentOrder& order) override;
  Status request_refund(const PaymentOrder& order) override;
  Result<OperatorStatus> query_status(const PaymentOrder& order) override;
  std::optional<Accepted> take_accepted(std::string_view provider_reference) override;
  Result<CallbackReport> parse_callback(const web::Request& req) override;
  Result<std::string> account_holder(std::string_view service_code, std::string_view msisdn) override;
  bool refunds(bool partial) const override { return !partial; }  // a whole session only
  bool signs_callbacks() const override { return true; }
  bool expires_pending() const override { return false; }   // Wave expires its sessions itself
  bool resubmits_unknown() const override { return true; }  // same idempotency-key
  bool query_on_read() const override { return false; }
  bool redirects_customer() const override { return true; }
  bool pays_in_app() const override { return true; }
  bool serves(std::string_view currency) const override { return currency == wave::kCurrency; }

 private:
  // One exchange with the Bearer key, reported to the call sink.
  Result<web::ClientResponse> call(web::ClientRequest req, const Exchange& what);
  // A POST sent again (same idempotency-key) while no definite answer came.
  Result<web::ClientResponse> post(const std::string& path, std::string body, const std::string& key,
                                   const Exchange& what);
  Result<OperatorStatus> session_query(const PaymentOrder& order);
  Result<OperatorStatus> payout_query(const PaymentOrder& order);
  Result<std::optional<wave::Session>> find_session(std::string_view client_reference, const Exchange& what);
  // Expires an open session whose payment failed; its final state when Wave answered one.
  OperatorStatus expire_failed(const wave::Event& e);

  WaveOptions options_;
  OperatorHttp http_;
  AcceptedOrders accepted_;
  sika::Mutex mu_;
  std::map<std::string, std::int64_t, std::less<>> seen_events_ GUARDED_BY(mu_);  // event id -> first seen (ms)
};

}  // namespace sika::payments
