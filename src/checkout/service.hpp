#pragma once
// Hosted checkout (docs/checkout.md): a merchant's site posts an order (form or JSON, the
// merchant API key in the payload); the customer pays on our page; the customer comes back to
// the merchant's successUrl or failureUrl with signed return data. The guarantees:
//  - one session per (merchant, environment, orderId): the same order again finds the same open
//    session (the same fields, or 409 naming orderId), an order that was paid is never opened
//    again (409 order_paid), and an unpaid one that expired or was cancelled is opened anew;
//  - each payment is an ordinary collection of the merchant, made with
//    payments::Service::collect for a present payer (created and pushed at once), so status,
//    ledger, webhooks and split settlement are those of any collection;
//  - a session has at most one collection in flight, and none once one completed: a new one is
//    taken by a conditional UPDATE on the attempt the customer's page showed, checked against
//    that attempt's collection (absent, or ended without completing) and written, all in the
//    one write unit that creates the collection (payments' creation step);
//  - what decides where the money goes (settlement_mode SPLIT, a distribution, feeBearer
//    MERCHANT) is accepted only in a request signed with the merchant's checkout secret
//    (request_canonical); the signature, when sent, also binds orderId, amount and currency;
//    a merchant with "signed checkout requests only" on has every request without a signature
//    refused (400 naming signature), so nobody can post its form again with another amount;
//  - the return data names everything that decided the merchant's money (settlement mode, lines,
//    fee bearer, fee, credited amount) and is signed with the merchant's checkout secret (HMAC-SHA256), derived from
//    the server secret and the merchant (and, once rotated, a stored salt), so the merchant can
//    reject forged or altered returns; `kid` names the version that signed;
//  - line=up: a method in another currency charges the order's amount converted at the quote
//    locked when the session opened (rounded up), and its collection credits the merchant the
//    order's amount in the order's currency through the FX position (payments::Conversion);
//  - a session page shows nothing of another session; an unknown reference is a 404.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "checkout/model.hpp"
#include "core/acting.hpp"
#include "core/i18n.hpp"
#include "core/result.hpp"
#include "limits/limiter.hpp"
#include "merchant/merchant.hpp"
#include "payments/model.hpp"
#include "payments/service.hpp"
#include "store/db.hpp"
#include "web/message.hpp"

namespace sika::checkout {

struct Options {
  std::string page_base_url;  // {checkout_url}: a session's page is {page_base_url}/session/{reference}
  std::string pepper;         // keys the API-key hashes (merchant::authenticate_key)
  std::string server_key;     // derives each merchant's checkout secret (merchant_secret)
  std::int64_t session_ttl_ms = 30 * 60 * 1000;
  // Told to customers of a service that needs a code but whose catalog entry says nothing of how to get it.
  std::string otp_helper = "Get a one-time code from your operator's mobile-money menu, then enter it here.";
  std::function<std::int64_t()> clock;  // epoch ms; now_ms() when empty
  // Payment submissions per client address per minute, shared by every node; no limiter: none.
  limits::Limiter* limiter = nullptr;
  limits::Policy per_address{.limit = 30, .window_ms = 60'000, .name = "checkout_pay_per_address"};
  // Requests per client address per hour authenticated by a merchant API key in x-api-key (shop
  // plugins: the fee quote), counted before the key is checked.
  limits::Policy api_per_address{
      .limit = 600, .window_ms = 3'600'000, .block_ms = 900'000, .block_after = 60, .name = "merchant_api_per_address"};
};

// A session as the POST answers it: whether this call opened it.
struct Opened {
  Session session;
  bool created = false;
};

// A version of a merchant's checkout secret.
struct SecretVersion {
  std::int64_t kid = 1;
  std::string secret;
};

// What the customer submits on the page.
struct PayForm {
  std::string provider;
  std::string phone;
  std::optional<std::string> otp;
  std::int64_t seen_attempt = 0;  // the attempt the page showed
};

// A payment method the page offers: its service, name, and the fee and total of the session, in
// the method's currency: the order's, or (line=up) another one at the session's locked quote.
struct Method {
  std::string code, name;
  std::string currency;
  std::int64_t price = 0;  // the order's amount in `currency` (the quote's amount when converted)
  std::int64_t fee = 0, total = 0;
  std::optional<Quote> quote;  // the session's quote when converted
  bool needs_otp = false;
  std::string otp_helper;  // how the customer gets the code: the catalog's text, or Options::otp_helper
};

class Service {
 public:
  Service(store::Db& db, payments::Service& payments, payments::CatalogSnapshot catalog, Options options);

  // --- HTTP handlers (checkout surface) ---
  // POST {checkout_url}: form post -> 303 to the page (or an fr/en error page naming the field);
  // JSON -> the session with its page_url (201 when opened, 200 when the same order found it).
  web::Response create(web::Request& req);
  // The merchant_api_key policy's authenticator: the `apiKey` of a form or JSON payload.
  Result<web::Principal> authenticate(web::Request& req);
  // The merchant_key_or_bearer policy's key half: the client address's hourly budget
  // (Options::api_per_address), then the merchant API key in x-api-key.
  Result<web::Principal> authenticate_header(web::Request& req);
  // The policy's refusal: an fr/en page for a browser's form post, the envelope otherwise.
  web::Response refusal(const web::Request& req, const Error& err);
  // GET /session/{reference}: the page (methods, or the payment's status, or the outcome).
  web::Response page(web::Request& req);
  // POST /session/{reference}: pay (provider, phone, otp, attempt) -> 303 to the page.
  web::Response submit(web::Request& req);
  // POST /session/{reference}/cancel: -> 303 to failureUrl with the signed return data.
  web::Response cancel(web::Request& req);
  // GET /session/{reference}/return: -> 303 to successUrl or failureUrl once the payment ended.
  web::Response finish(web::Request& req);
  // GET /page.js (the page's countdown) and GET /button.js (the pay button for merchants' sites).
  web::Response page_script(web::Request& req);
  web::Response button_script(web::Request& req);

  // --- operations ---
  // Opens (or finds) the session of an order for `merchant` (errors of fields in 400 empty_data
  // with those already in `errors`).
  Result<Opened> open(const merchant::Merchant& merchant, const NewSession& request, json::FieldErrors errors = {});
  // The session of a reference (404 naming reference when none).
  Result<Session> session(std::string_view reference);
  // A merchant's sessions (its environment), newest first, keyset pages on the id (the dashboard).
  Result<std::vector<Session>> list_sessions(const Acting& merchant, std::optional<std::int64_t> before, int limit);
  // The collection of the session's current attempt as it is now (nullopt: none yet). Marks the
  // session PAID when it completed.
  Result<std::optional<payments::Transaction>> current(const Session& s);
  // Pays: takes an attempt and creates and pushes its collection, or pushes the current one
  // again with a code. 400 otp_required (nothing created) when the service needs a code.
  Result<payments::Transaction> pay(std::string_view reference, const PayForm& form);
  // Where the customer goes back to, with the signed return data: successUrl once paid;
  // failureUrl when `give_up` (the session is cancelled) or the session expired. nullopt while
  // the payment may still complete.
  Result<std::optional<std::string>> return_to(std::string_view reference, bool give_up);
  // The methods the session's page offers (filtered by area, currency and the merchant's
  // countries), with their fees.
  std::vector<Method> methods(const Session& s, const std::vector<std::string>& countries) const;
  // The merchant's checkout secret of version 1 (the derivation without salt).
  std::string merchant_secret(std::string_view matricule) const;
  // The merchant's checkout secret now in force: its version (the `kid` of service_data) and text.
  Result<SecretVersion> signing_secret(std::int64_t merchant_id, std::string_view matricule);
  // Makes version N+1 the merchant's checkout secret (a new random salt is stored, the secret is
  // derived from it and the server key and returned once). Returns made version and secret.
  Result<SecretVersion> rotate_secret(std::int64_t merchant_id, std::string_view matricule);
  // Whether the merchant accepts only signed requests ("signed checkout requests only"; off
  // unless the merchant or an operator turned it on: dashboard::set_checkout_signed_only).
  Result<bool> signed_only(std::int64_t merchant_id);
  std::string page_url(const Session& s) const;
  std::int64_t now() const;

 private:
  Result<merchant::Merchant> merchant_of(std::int64_t merchant_id);
  // The credential an API key or signature of `m` authenticates as (scope payments, role owner).
  web::Principal principal_of(const merchant::Merchant& m) const;
  // Who a customer's payment on a session page acts for: the system, for the merchant `m`.
  Acting acting_of(const merchant::Merchant& m) const;
  Result<std::optional<std::string>> signed_return(const Session& s, const merchant::Merchant& m,
                                                   const std::optional<payments::Transaction>& tx,
                                                   std::string_view status);
  // The quotes a line=up session locks: one per other currency a method of `countries` (and the
  // area) charges in, at the rate in force now. Currencies without a rate are not quoted.
  Result<std::vector<Quote>> lock_quotes(const NewSession& n, const std::vector<std::string>& countries);
  // The field problems of an order to open (its scope, signature, return URLs and beneficiaries),
  // with `errors` already found in its body.
  Status check_open(const catalog::Catalog& cat, const merchant::Merchant& m, const NewSession& n,
                    json::FieldErrors errors);
  // Stores the draft `s` of the order, or answers with the order's existing session: the same open
  // one, a reopened expired or cancelled one, or its refusal (paid, in progress, other fields).
  Result<Opened> store_session(const merchant::Merchant& m, const NewSession& n, Session s);
  web::Response render(const web::Request& req, i18n::Locale locale, const Session& s, std::string_view notice,
                       bool otp_step, const PayForm& values, int status);
  web::Response message_page(i18n::Locale locale, std::string_view title, std::string_view text, int status);

  store::Db& db_;
  payments::Service& payments_;
  payments::CatalogSnapshot catalog_;
  Options options_;
};

}  // namespace sika::checkout
