#pragma once
// The MTN Mobile Money Open API connector (docs/operators.md, "MTN MoMo"): Collection
// (requesttopay), Disbursement (transfer, refund), status queries, account holders, balances, and
// MTN's unsigned callbacks. The wire format is mtn_momo_wire.hpp; this file makes the calls:
//   - one OAuth token per product (BearerToken, operator_http.hpp), fetched with Basic
//     apiUser:apiKey, shared by every request of the node and reused until `token_margin_ms` before
//     it expires (one fetch at a time; a 401 on a call drops it and the call is made once more);
//   - an initiation is sent with its own UUID v4 X-Reference-Id, derived from the order, and sent
//     again with the same reference after a timeout, a network error or a 5xx, up to
//     `initiation_attempts` times; a 409 means MTN holds it (accepted). When no attempt got a
//     definite answer the error is returned and the order stays PENDING: recovery's status query by
//     that reference decides (404: never accepted, sent again while the order's deadline allows);
//   - status queries are spaced to at most `status_per_second` per node (MTN allows 10 per second);
//     a query that cannot get a slot within `status_wait_ms` is rate_limited (asked again later);
//   - at most `max_in_flight` calls at once; every call is reported to `calls` (no secret).
#include <cstdint>
#include <functional>
#include <string>

#include "payments/connector.hpp"
#include "payments/mtn_momo_wire.hpp"
#include "payments/operator_calls.hpp"
#include "payments/operator_http.hpp"
#include "web/client.hpp"

namespace sika::payments {

struct MtnCredentials {
  std::string subscription_key;  // Ocp-Apim-Subscription-Key of the product
  std::string api_user;          // UUID of the API user
  std::string api_key;
};

struct MtnMomoOptions : OperatorOptions {
  std::string name = "mtn_momo";  // the connector instance's name (catalog provider.connector)
  std::string base_url;           // e.g. https://proxy.momoapi.mtn.com, no trailing slash
  std::string target_environment;
  MtnCredentials collection, disbursement;
  std::string callback_url;  // X-Callback-Url; empty sends none (recovery polls)
  int status_per_second = 10;
  std::int64_t status_wait_ms = 2000;
  int initiation_attempts = 3;
  std::int64_t token_margin_ms = 300'000;
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
  Status initiate(mtn::Call call, const PaymentOrder& order);
  // One authenticated exchange with the product's token (fetched or refreshed as needed; a 401
  // drops it and the request is made once more). Reported to the call sink.
  Result<web::ClientResponse> call(mtn::Product product, web::ClientRequest req, const Exchange& what);
  Result<BearerToken::Token> fetch_token(mtn::Product product);
  const MtnCredentials& credentials(mtn::Product p) const;
  BearerToken& token(mtn::Product p) { return p == mtn::Product::collection ? collection_token_ : disbursement_token_; }

  MtnMomoOptions options_;
  std::string currency_;
  OperatorHttp http_;
  BearerToken collection_token_, disbursement_token_;  // one per product
};

}  // namespace sika::payments
