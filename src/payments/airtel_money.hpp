#pragma once
// The Airtel Money Open API connector (docs/operators.md, "Airtel Money"): collections (USSD push,
// /merchant/v1/payments/), disbursements with the encrypted PIN, refunds by airtel_money_id, status
// enquiries, KYC (the account holder's name), and Airtel's callbacks, read as unsigned hints. The
// wire format is airtel_money_wire.hpp; this file makes the calls:
//   - one OAuth token (client_credentials; BearerToken, operator_http.hpp) per node, shared by
//     every call and reused until
//     `token_margin_ms` before it expires (or half its life when that is shorter); one fetch at a
//     time; a 401 on a call drops it and the call is made once more with a new one;
//   - every call carries X-Country and X-Currency of the account and the Bearer token;
//   - an initiation carries our transaction id derived from the order (the same for every resend)
//     and is sent again with it after a timeout, a network error or a 5xx, up to
//     `initiation_attempts` times; Airtel's "already exists" (ESB000041, DP00900001017) means it
//     holds it (accepted). When no attempt got a definite answer the order stays PENDING: recovery's
//     status query by the same id decides (ESB000045, not found: sent again);
//   - status queries are spaced to at most `status_per_second` per node; one that cannot get a slot
//     within `status_wait_ms` is rate_limited (asked again later);
//   - at most `max_in_flight` calls at once; every call is reported to `calls` (no secret).
#include <cstdint>
#include <functional>
#include <string>

#include "payments/airtel_money_wire.hpp"
#include "payments/connector.hpp"
#include "payments/operator_calls.hpp"
#include "payments/operator_http.hpp"
#include "web/client.hpp"

namespace sika::payments {

struct AirtelMoneyOptions : OperatorOptions {
  std::string name = "airtel_money";  // the connector instance's name (catalog provider.connector)
  std::string base_url;               // e.g. https://openapi.airtel.africa, no trailing slash
  std::string client_id, client_secret;
  std::string country;   // ISO alpha-2, X-Country (GA)
  std::string currency;  // X-Currency (XAF)
  // Disbursements: the PIN encrypted with Airtel's public key (airtel::encrypt_pin); empty: this
  // instance makes no disbursement.
  std::string encrypted_pin;
  int status_per_second = 10;
  std::int64_t status_wait_ms = 2000;
  int initiation_attempts = 3;
  std::int64_t token_margin_ms = 30'000;
};

class AirtelMoney final : public Connector {
 public:
  // Fails (bad_config) when `country` is not an Airtel Money market.
  static Result<std::unique_ptr<AirtelMoney>> open(web::HttpClient& http, AirtelMoneyOptions options);

  std::string_view name() const override { return options_.name; }
  Status check_otp(const PaymentOrder&) override { return {}; }  // Airtel prompts the customer itself
  Status request_collection(const PaymentOrder& order) override;
  Status request_payout(const PaymentOrder& order) override;
  // Refunds a completed collection (order.refunded_reference) by its airtel_money_id, read from
  // the collection's status enquiry. Airtel answers a refund at once (no refund enquiry is
  // documented): that answer is kept in the refund's operator_state, which query_status reads.
  Status request_refund(const PaymentOrder& order) override;
  Result<OperatorStatus> query_status(const PaymentOrder& order) override;
  std::optional<Accepted> take_accepted(std::string_view provider_reference) override;
  Result<CallbackReport> parse_callback(const web::Request& req) override;
  Result<std::string> account_holder(std::string_view service_code, std::string_view msisdn) override;
  bool refunds(bool partial) const override { return !partial; }  // by airtel_money_id: the whole payment
  bool signs_callbacks() const override { return false; }
  bool expires_pending() const override { return false; }
  bool resubmits_unknown() const override { return true; }
  bool query_on_read() const override { return false; }
  bool serves(std::string_view currency) const override { return currency == options_.currency; }

  std::int64_t tokens_fetched() const;

 private:
  AirtelMoney(web::HttpClient& http, AirtelMoneyOptions options, const airtel::Market& market);
  struct Answered {
    int http = 0;
    std::string body;
    airtel::Answer answer;
  };
  Status initiate(airtel::Call call, const PaymentOrder& order, const std::string& path, const std::string& body,
                  const Exchange& what);
  // One authenticated exchange (token fetched or refreshed as needed; a 401 drops it and the
  // request is made once more). Reported to the call sink.
  Result<Answered> call(web::ClientRequest req, const Exchange& what);
  Result<BearerToken::Token> fetch_token();
  Result<Answered> enquire(airtel::Call call, std::string_view provider_reference);

  AirtelMoneyOptions options_;
  const airtel::Market& market_;
  OperatorHttp http_;
  BearerToken token_;
  AcceptedOrders accepted_;
};

}  // namespace sika::payments
