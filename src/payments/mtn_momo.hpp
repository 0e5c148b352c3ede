#pragma once
// The MTN Mobile Money Open API connector (docs/operators.md, "MTN MoMo"): Collection
// (requesttopay), Disbursement (transfer, refund), status queries, account holders, balances, and
// MTN's unsigned callbacks. The wire format is mtn_momo_wire.hpp; this file makes the calls:
//   - one OAuth token per product, fetched with Basic apiUser:apiKey, shared by every request of
//     the node and reused until `token_margin_ms` before it expires (one fetch at a time; a 401 on
//     a call drops it and the call is made once more with a new one);
//   - an initiation is sent with its own UUID v4 X-Reference-Id, derived from the order, and sent
//     again with the same reference after a timeout, a network error or a 5xx, up to
//     `initiation_attempts` times; a 409 means MTN holds it (accepted). When no attempt got a
//     definite answer the error is returned and the order stays PENDING: recovery's status query by
//     that reference decides (404: never accepted, sent again while the order's deadline allows);
//   - status queries are spaced to at most `status_per_second` per node (MTN allows 10 per second);
//     a query that cannot get a slot within `status_wait_ms` is rate_limited (asked again later);
//   - at most `max_in_flight` calls at once; every call is reported to `calls` (no secret).
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <string>

#include "core/thread_annotations.hpp"
#include "payments/connector.hpp"
#include "payments/mtn_momo_wire.hpp"
#include "payments/operator_calls.hpp"
#include "web/client.hpp"

namespace sika::payments {

struct MtnCredentials {
  std::string subscription_key;  // Ocp-Apim-Subscription-Key of the product
  std::string api_user;          // UUID of the API user
  std::string api_key;
};

struct MtnMomoOptions {
  std::string name = "mtn_momo";  // the connector instance's name (catalog provider.connector)
  std::string base_url;           // e.g. https://proxy.momoapi.mtn.com, no trailing slash
  std::string target_environment;
  MtnCredentials collection, disbursement;
  std::string callback_url;  // X-Callback-Url; empty sends none (recovery polls)
  int status_per_second = 10;
  std::int64_t status_wait_ms = 2000;
  int max_in_flight = 64;
  int initiation_attempts = 3;
  std::int64_t retry_pause_ms = 200;  // before the 2nd attempt; doubled for each next one
  int connect_timeout_ms = 5000;
  int timeout_ms = 15000;
  std::int64_t token_margin_ms = 300'000;
  std::function<std::int64_t()> clock;  // epoch ms; now_ms() when empty
  OperatorCallSink* calls = nullptr;
};

class MtnMomo final : public Connector {
 public:
  MtnMomo(web::HttpClient& http, MtnMomoOptions options);

  std::string_view name() const override { return options_.name; }
  Status check_otp(const PaymentOrder&) override { return {}; }  // MTN prompts the customer itself
  Status request_collection(const PaymentOrder& order) override;
  Status request_payout(const PaymentOrder& order) override;
  Status request_refund(const PaymentOrder& order) override;
  Result<OperatorStatus> query_status(const PaymentOrder& order) override;
  Result<CallbackReport> parse_callback(const web::Request& req) override;
  Result<std::string> account_holder(std::string_view service_code, std::string_view msisdn) override;
  bool refunds(bool /*partial*/) const override { return true; }
  bool signs_callbacks() const override { return false; }
  bool expires_pending() const override { return false; }
  bool resubmits_unknown() const override { return true; }
  bool query_on_read() const override { return false; }
  bool serves(std::string_view currency) const override { return currency == currency_; }

  // The product's available balance, in minor units of the environment's currency.
  Result<std::int64_t> balance(mtn::Product product);
  // Tokens fetched since start (each product's one, and again before each expires).
  std::int64_t tokens_fetched() const;

 private:
  struct Token {
    std::string value;
    std::int64_t expires_at = 0;
  };
  struct Exchange {
    std::string operation, provider_reference, reference_id;
  };
  std::int64_t now() const;
  Status initiate(mtn::Call call, const PaymentOrder& order);
  // One authenticated exchange with the product's token (fetched or refreshed as needed; a 401
  // drops it and the request is made once more). Reported to the call sink.
  Result<web::ClientResponse> call(mtn::Product product, web::ClientRequest req, const Exchange& what);
  Result<web::ClientResponse> send_reported(const web::ClientRequest& req, const Exchange& what);
  Result<std::string> token(mtn::Product product, std::string_view stale);
  Result<Token> fetch_token(mtn::Product product);
  const MtnCredentials& credentials(mtn::Product p) const;
  // Waits for a status query slot; false when none came within status_wait_ms.
  bool status_slot();
  void enter();
  void leave();

  web::HttpClient& http_;
  MtnMomoOptions options_;
  std::string currency_;
  mutable sika::Mutex mu_;
  std::condition_variable cv_;
  Token tokens_[2] GUARDED_BY(mu_);
  std::int64_t tokens_fetched_ GUARDED_BY(mu_) = 0;
  int in_flight_ GUARDED_BY(mu_) = 0;
  std::int64_t next_status_at_ GUARDED_BY(mu_) = 0;  // steady ms of the next status query slot
  sika::Mutex fetch_mu_[2];                          // one token fetch per product at a time
};

}  // namespace sika::payments
