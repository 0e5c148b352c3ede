#pragma once
// The Orange Money connector (docs/operators.md, "Orange Money"): the Web Payment API (the
// customer pays on Orange's page, reached through our confirmation page) or, in Cameroon, the
// merchant payment pushed to the customer's phone (mp/init, mp/pay, mp/paymentstatus, mp/push).
// The wire format is orange_money_wire.hpp; this file makes the calls:
//   - one OAuth client_credentials token (Basic client_id:client_secret; BearerToken,
//     operator_http.hpp), shared by every request
//     of the node and reused until `token_margin_ms` before it expires (one fetch at a time; a 401
//     on a call drops it and the call is made once more with a new one);
//   - a webpayment is created with its order_id derived from the order (orange::order_id) and
//     created again after a timeout, a network error or a 5xx, up to `creation_attempts` times:
//     nothing can be paid until the customer opens the payment_url we keep, so an attempt whose
//     answer was lost leaves nothing payable. Its pay_token, payment_url and notif_token are what
//     the acceptance leaves (take_accepted: customer_url = payment_url);
//   - a push payment's payToken is taken (mp/init) and kept on the transaction before mp/pay is
//     sent (prepare_collection), and mp/pay is sent once: after a lost answer the payToken's
//     status decides (never a second prompt the customer did not ask for);
//   - notifications are not signed: each is refused (401) unless it carries the notif_token of its
//     own payment (authenticate_callback, compared in constant time), and then it is only a hint
//     the platform verifies with query_status (signs_callbacks() false) before any money moves;
//   - status queries are spaced to at most `status_per_second` per node;
//   - at most `max_in_flight` calls at once; every call is reported to `calls` (no secret).
#include <cstdint>
#include <functional>
#include <string>

#include "payments/connector.hpp"
#include "payments/operator_calls.hpp"
#include "payments/operator_http.hpp"
#include "payments/orange_money_wire.hpp"
#include "web/client.hpp"

namespace sika::payments {

struct OrangeMoneyOptions : OperatorOptions {
  std::string name = "orange_money";  // the connector instance's name (catalog provider.connector)
  std::string base_url;               // e.g. https://api.orange.com (webpay), https://api-s1.orange.cm (push)
  std::string client_id, client_secret;
  std::string merchant_key;  // webpay
  orange::Flow flow = orange::Flow::webpay;
  std::string country;                            // cm, ci, sn ... or dev (Orange's development platform)
  std::string channel_msisdn, pin, x_auth_token;  // push
  std::string callback_url;                       // notif_url / notifUrl, ?ref=... appended
  std::string lang = "fr";
  int status_per_second = 5;
  std::int64_t status_wait_ms = 2000;
  int creation_attempts = 3;
  std::int64_t token_margin_ms = 300'000;
};

class OrangeMoney final : public Connector {
 public:
  OrangeMoney(web::HttpClient& http, OrangeMoneyOptions options);

  std::string_view name() const override { return options_.name; }
  Status check_otp(const PaymentOrder&) override { return {}; }  // Orange asks the customer itself
  Result<std::optional<Accepted>> prepare_collection(const PaymentOrder& order) override;
  Status request_collection(const PaymentOrder& order) override;
  // Orange's Web Payment and merchant payment carry no payouts (nor refunds: a refund is a payout
  // to the payer, through another channel): refused, so that the payout fails at once.
  Status request_payout(const PaymentOrder& order) override;
  Result<OperatorStatus> query_status(const PaymentOrder& order) override;
  std::optional<Accepted> take_accepted(std::string_view provider_reference) override;
  Result<CallbackReport> parse_callback(const web::Request& req) override;
  Status authenticate_callback(const web::Request& req, const CallbackReport& report,
                               const PaymentOrder* order) override;
  Result<std::string> account_holder(std::string_view service_code, std::string_view msisdn) override;
  bool pays_out() const override { return false; }  // web and merchant payments carry no payouts
  bool signs_callbacks() const override { return false; }
  bool expires_pending() const override { return false; }
  bool query_on_read() const override { return false; }
  bool serves(std::string_view currency) const override;
  bool redirects_customer() const override { return options_.flow == orange::Flow::webpay; }
  bool prompts_again(const PaymentOrder& order) const override;
  Status prompt_again(const PaymentOrder& order) override;

  // Tokens fetched since start.
  std::int64_t tokens_fetched() const;
  // How long after its submission an order without anything kept at acceptance may still be
  // being created (every attempt timing out); after it, such an order is known never to have
  // reached a state anyone could pay (query_status: FAILED OPERATOR_ERROR).
  std::int64_t creation_window_ms() const;

 private:
  Status create_webpayment(const PaymentOrder& order);
  Status push_payment(const PaymentOrder& order);
  // One authenticated exchange (token fetched or refreshed as needed; a 401 drops it and the
  // request is made once more). Reported to the call sink.
  Result<web::ClientResponse> call(web::ClientRequest req, const Exchange& what);
  Result<BearerToken::Token> fetch_token();
  web::ClientRequest request(std::string method, std::string path) const;

  OrangeMoneyOptions options_;
  std::string currency_;
  OperatorHttp http_;
  BearerToken token_;
  AcceptedOrders accepted_;
};

}  // namespace sika::payments
