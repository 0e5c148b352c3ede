#pragma once
// An intent before it is stored: the request (read from a body, or built by code such as
// payment links, hosted checkout or subscriptions) and its plan (the service that carries the
// money, the resolved channel, the connector, the fee), computed from the catalog snapshot and
// the merchant's credential without any database access. docs/payments.md, "Validation".
#include <boost/json/object.hpp>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/model.hpp"
#include "core/acting.hpp"
#include "core/json.hpp"
#include "core/result.hpp"
#include "payments/ledger.hpp"
#include "payments/model.hpp"
#include "web/message.hpp"

namespace sika::payments {

// Who pays a collection's fee. CUSTOMER: on top of the price (the customer pays price + fee,
// the merchant is credited the price). MERCHANT: out of the price (the customer pays the price,
// the merchant is credited the price less the fee). The stored transaction always reads
// required_total (what the customer pays) = amount (what the merchant is credited) + fee.
// Payouts: always the merchant.
inline constexpr std::string_view kCustomerBearsFee = "CUSTOMER";
inline constexpr std::string_view kMerchantBearsFee = "MERCHANT";

// What a merchant asks for: a collection or a payout.
struct IntentRequest {
  std::string operation = std::string(kCollection);  // COLLECTION | DISBURSEMENT
  std::int64_t amount = 0;                           // minor units
  std::string currency;
  std::string transaction_uuid;
  std::string provider;                                 // service code
  std::string channel = std::string(kChannelProvider);  // PROVIDER | WALLET | AUTO
  std::string customer_wallet;                          // as given; normalized by the plan
  std::string description;
  std::string metadata = "{}";                              // JSON text of an object
  std::string settlement_mode = std::string(kDirect);       // DIRECT | SPLIT (collections)
  std::vector<SplitLine> distribution;                      // SPLIT: the beneficiaries, position = index
  std::string fee_bearer = std::string(kCustomerBearsFee);  // collections built by code (links, checkout)
  // WALLET only: the customer authorised this debit beforehand (a wallet link's consent, within
  // its limits), so no one-time code is sent or asked for. Set only by code inside the platform,
  // never read from a request body.
  bool preauthorized = false;
  // Set only by code (hosted checkout, line=up): the collection is charged in `currency` and
  // credits the merchant in conversion->currency. `amount` is then the converted price, and
  // conversion->amount is left to create(), which works it out from the fee.
  std::optional<Conversion> conversion;
  // PROVIDER only: the customer's own platform wallet is the other side (settlement_mode
  // WALLET, model.hpp): a collection tops it up, a payout withdraws from it. Set only by code
  // (the wallets component), never read from a request body.
  bool own_wallet = false;
  // Identifies the request for idempotency (a replay with the same uuid must match it).
  // Empty: computed from the fields above by request_fingerprint.
  std::string fingerprint;
};

// Reads the body of POST /collection/intent or /disbursement/intent into a request. Every
// problem of the body is recorded in `errors` under its field name (`distribution[1].rate`);
// a field with a problem keeps its default. Unknown fields are refused by name, and fields the
// platform sets ("fee", "status", ...) with a message saying so. The fingerprint is SHA-256 of
// the operation and the body's canonical JSON.
IntentRequest parse_intent(const boost::json::object& body, std::string_view operation, json::FieldErrors& errors);

// Records a problem for every key of `body` outside `allowed` (under `prefix` + key): "is set
// by the platform and cannot be sent" for top-level fields the platform sets, "is not a known
// field" otherwise.
void refuse_unknown_fields(const boost::json::object& body, std::initializer_list<std::string_view> allowed,
                           json::FieldErrors& errors, std::string_view prefix = "");

// The metadata keys the platform writes into a transaction's metadata and reads back as facts
// (which wallet link, payment link, checkout session or wallet a payment belongs to): a merchant
// or a payer may never send them. Records "metadata.<key>: is reserved ..." for each one found.
inline constexpr std::string_view kReservedMetadataKeys[] = {
    "wallet_link", "wallet", "origin", "payment_link_reference", "checkout_reference", "order_id", "shop_name"};
void refuse_reserved_metadata(const boost::json::object& metadata, json::FieldErrors& errors,
                              std::string_view field = "metadata");

// A rate as sent (integer or number) -> parts per million; nullopt with `problem` set otherwise
// (Reason::split_rate for a number that is not a rate: 0 < rate <= 100, at most 4 decimals).
std::optional<std::int64_t> rate_to_ppm(const boost::json::value& v, std::optional<Reason>& problem);
// "33.3333" for 333'333 ppm.
std::string percent_text(std::int64_t ppm);

// SHA-256 (hex) of the operation and the canonical JSON of the request's fields: the
// fingerprint of a request built by code.
std::string request_fingerprint(const IntentRequest& request);

// What planning needs besides the request. The two functions are the only facts from outside
// the catalog; tests give them fixed answers.
struct PlanInputs {
  const catalog::Catalog* catalog = nullptr;    // the snapshot (never null when planning)
  const Acting* merchant = nullptr;             // merchant_id, environment, user tier, granted countries
  std::int64_t max_amount = 1'000'000'000'000;  // absolute cap, whatever the service says
  // The balance of a ledger account, nullopt when it does not exist. Asked only for AUTO in
  // the sandbox (does the customer's platform wallet cover the price?).
  std::function<Result<std::optional<std::int64_t>>(const ledger::AccountKey&)> balance;
  // Returns true iff a connector of that name is registered.
  std::function<bool(std::string_view)> has_connector;
  // True when the connector's customers approve on the operator's page or app (no code of ours).
  std::function<bool(std::string_view)> approves_at_operator;
  // In prod, refuse a number in another operator's block (payments.refuse_other_operator_numbers;
  // off where ported numbers are common: a ported number keeps its first operator's prefix).
  bool refuse_other_operator_numbers = true;
  // The connector instance of a provider's connector in a country (alpha-2): "<connector>_<cc>"
  // when one is registered (orange_money_ci), else the connector itself. Unset: the connector.
  std::function<std::string(std::string_view connector, std::string_view alpha2)> instance;
  // Returns true iff operator health has CLOSED that connector (new collections are refused).
  std::function<bool(std::string_view)> closed;
};

// A request checked against the catalog and priced. Amounts in minor units of `currency`.
struct IntentPlan {
  std::string channel;       // resolved: PROVIDER | WALLET
  std::string service_code;  // the service that carries the money
  std::string country;       // alpha-3
  std::string connector;     // "wallet" for WALLET, else the provider's connector ("sandbox" in sandbox)
  std::string msisdn;        // the customer's wallet, international digits
  std::string currency;
  std::int64_t fee = 0;
  std::int64_t required_total = 0;  // amount + fee: what the customer pays (collection) or the merchant (payout)
  std::string confirmation_method;  // MSISDN | OTP | NONE
  bool needs_otp = false;
};

// What an operation of `amount` through `service` costs, from the fee engine: the one price used
// by plan_intent and by the fee quote (POST /transactions/fees/quote), so that a quote and the
// payment that follows never differ.
struct Price {
  std::int64_t fee = 0;
  std::int64_t required_total = 0;  // what the customer pays (collection) or the merchant's balance gives (payout)
  std::int64_t credited = 0;        // required_total - fee: what the merchant is credited (collection)
};
// The fee of the service's operation (incoming service for a collection, outgoing for a payout)
// for the merchant's tier, borne as `fee_bearer` says (collections; payouts: the merchant, on
// top). Errors: 400 no_pricing_rule; 400 empty_data naming amount when the merchant would bear a
// fee that is not less than the price, or the total overflows.
Result<Price> price_operation(const catalog::Catalog& catalog, const catalog::PaymentService& service, bool collection,
                              std::int64_t amount, std::string_view fee_bearer, std::int64_t user_tier);

// Checks `request` (every field rule, then against the catalog) and prices it. Problems of
// fields are 400 empty_data naming each field, reported at once together with the problems
// already in `errors` (a field keeps its first problem); a country the credential does not
// grant is 403 access_denied naming provider; a channel that cannot carry it 400 naming
// channel; no fee rule 400 no_pricing_rule; an unknown connector 503 provider_unavailable, and a
// collection whose connector is CLOSED (operator health) 503 provider_unavailable naming provider.
Result<IntentPlan> plan_intent(const IntentRequest& request, const PlanInputs& inputs, json::FieldErrors errors = {});

// The service of `code` if it exists and is usable (it, its provider and country active);
// nullptr with the problem recorded under `field` otherwise.
const catalog::PaymentService* usable_service(const catalog::Catalog& catalog, std::string_view code,
                                              std::string_view field, json::FieldErrors& errors);
// A wallet number normalized to international digits for `service` (its country's dialling
// code and MSISDN pattern); "" with the problem recorded under `field` otherwise.
std::string normalize_wallet(const catalog::Catalog& catalog, const catalog::PaymentService& service,
                             std::string_view input, std::string_view field, json::FieldErrors& errors);

// The 503 of a service whose operator has no connector here.
Error provider_unavailable(Details details);

}  // namespace sika::payments
