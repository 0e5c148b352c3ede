#pragma once
// A hosted checkout session: what a merchant's site posts (the spec's POST {checkout_url}), the
// rules every field must meet, and the signed return data (service_data) the customer brings
// back to the merchant. Plain functions: no database, no catalog.
#include <boost/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"
#include "payments/model.hpp"
#include "store/state_machine.hpp"

namespace sika::checkout {

inline constexpr std::string_view kOpen = "OPEN";
inline constexpr std::string_view kPaid = "PAID";
inline constexpr std::string_view kCancelled = "CANCELLED";
inline constexpr std::string_view kExpired = "EXPIRED";  // shown, never stored: expires_at has passed

// The stored statuses of a session: OPEN until its collection completes (PAID) or the customer
// gives up (CANCELLED); both final. No event (the collection's own events tell the merchant).
enum class SessionStatus { open, paid, cancelled };
inline constexpr store::StateMachine<SessionStatus, 3, 2> kSessionStatus{
    "chk_sessions",
    {kOpen, kPaid, kCancelled},
    {{{SessionStatus::open, SessionStatus::paid, ""}, {SessionStatus::open, SessionStatus::cancelled, ""}}}};

// The customer's prefill data (the spec leaves its fields open; these are the ones we use).
struct Customer {
  std::string name, email, phone;
};

// A conversion quote locked on a line=up session when it opens: the order's amount in
// `currency` at the operator's rate then in force (order currency -> `currency`), rounded up to
// the minor unit of `currency` so the merchant never gets less. It holds until the session
// expires; the rate table may change meanwhile.
struct Quote {
  std::string currency;
  std::int64_t numerator = 1, denominator = 1;  // 1 unit of the order's currency = n/d units of `currency`
  std::int64_t amount = 0;                      // minor units of `currency`
  std::int64_t quoted_at = 0;                   // epoch ms
};

// One row of chk_sessions.
struct Session {
  std::int64_t id = 0;
  std::string reference;  // "chk_" + 22 base64url characters (128 random bits): the page's secret
  std::int64_t merchant_id = 0;
  std::string environment;
  std::string order_id;
  std::string fingerprint;  // SHA-256 of the order's fields: the same orderId must carry the same order
  std::string status;       // stored: OPEN | PAID | CANCELLED
  std::int64_t amount = 0;  // minor units of currency
  std::string currency;
  std::string description;
  std::string shop_name;
  std::string success_url, failure_url;
  Customer customer;
  std::string line;  // "" or "up"
  std::string area;  // "" or a country's alpha-3 code
  std::string fee_bearer = "CUSTOMER";
  std::string settlement_mode = std::string(payments::kDirect);
  std::vector<payments::SplitLine> distribution;  // SPLIT: sums to 100 % (the merchant keeps any remainder)
  std::int64_t attempt = 0;   // collections made so far; attempt n's uuid is collection_uuid(reference, n)
  std::vector<Quote> quotes;  // line=up: one per currency a method may charge in, locked at opening
  std::int64_t expires_at = 0;
  std::int64_t created_at = 0;
  std::int64_t updated_at = 0;

  // OPEN, PAID, CANCELLED, or EXPIRED for an OPEN session at or past expires_at.
  std::string_view status_at(std::int64_t now) const;
  // The locked quote of a currency, or nullptr.
  const Quote* quote_for(std::string_view currency) const;
};

// The quotes as stored (JSON text of an array) and back.
std::string quotes_text(const std::vector<Quote>& quotes);
std::vector<Quote> quotes_of(std::string_view text);

// The session as the JSON answer shows it; `page_url` is the customer's page.
boost::json::object to_json(const Session& s, std::string_view page_url, std::int64_t now);

// A new session reference: "chk_" + 128 random bits in base64url.
std::string new_reference();
// Returns true iff `text` has the shape of a session reference.
bool valid_reference(std::string_view text);
// The transaction_uuid of attempt `n` of a session (SHA-256 of both, UUID layout): distinct per
// session and attempt, so it never meets the merchant's own intents.
std::string collection_uuid(std::string_view reference, std::int64_t attempt);

// What a merchant's site posts, read and checked without the catalog or the database.
struct NewSession {
  std::string api_key;
  std::int64_t amount = 0;  // minor units
  std::string currency;
  std::string order_id;
  std::string description;
  std::string shop_name;
  std::string success_url, failure_url;
  Customer customer;
  std::string line;
  std::string area;
  std::string fee_bearer = "CUSTOMER";
  std::string settlement_mode = std::string(payments::kDirect);
  std::vector<payments::SplitLine> distribution;  // as sent: rates sum to at most 100 %
  std::string signature;  // hex HMAC-SHA256 of request_canonical() under the merchant's checkout secret, or ""
};

// Returns true iff the request sets anything that decides where the money goes away from its
// default: settlement_mode SPLIT, a distribution, feeBearer MERCHANT. Such a request must be
// signed by the merchant (an unsigned form is in the customer's hands).
bool sets_money_fields(const NewSession& n);
// The text a merchant signs (docs/checkout.md, "Signed requests"): one `name=value` line per
// field, in this order, joined by "\n", no trailing newline:
//   sika-checkout-v1
//   orderId=<orderId>
//   amount=<the amount in minor units>
//   currency=<currency>
//   settlement_mode=<DIRECT|SPLIT>
//   distribution=<matricule:rate×10000, comma-separated, in the request's order; empty for DIRECT>
//   feeBearer=<CUSTOMER|MERCHANT>
// Defaults are written out (DIRECT, empty, CUSTOMER). No value may hold a newline (text fields
// refuse control characters).
std::string request_canonical(const NewSession& n);

// Turns a form post's fields into the JSON shape of the same request: `customer[name]` style
// fields become the `customer` object, and `distribution` (JSON text in a form) its array.
// A `distribution` or `customer` that is not valid JSON is recorded in `errors`.
boost::json::object form_to_object(const boost::json::object& form, json::FieldErrors& errors);

// Reads and checks a session request; every problem goes to `errors` under the spec's field
// name (`amount`, `successUrl`, `distribution[1].rate`, `customer.email`, ...). The amount is in
// major units ("5000" XAF, "10.50" USD) and must be whole in the currency's minor unit.
NewSession parse_new_session(const boost::json::object& body, json::FieldErrors& errors);

// nullopt when `url` may be a return URL (absolute http or https with a host, no fragment,
// no credentials), else the problem.
std::optional<Reason> return_url_problem(std::string_view url);
// The English text of return_url_problem ("" when there is none).
std::string check_return_url(std::string_view url);
// The host of an absolute URL, lower-cased ("" when it has none).
std::string url_host(std::string_view url);
// Returns true iff `host` is `domain` or one of its subdomains.
bool host_in_domain(std::string_view host, std::string_view domain);

// SHA-256 (hex) of the order's fields: two posts of the same order give the same text.
std::string fingerprint(const NewSession& n);

// The split lines a collection takes: the merchant's lines, plus a line for the merchant
// itself with whatever the lines leave (they may sum to less than 100 %).
std::vector<payments::SplitLine> settlement_lines(const std::vector<payments::SplitLine>& lines,
                                                  std::string_view merchant_matricule);

// The return data: the spec's fields, as the merchant receives them in `service_data`.
struct ReturnData {
  std::string transaction_reference, reference, invoice_reference, provider_reference;
  std::string status;  // COMPLETED | FAILED | CANCELLED | EXPIRED
  std::string operation = std::string(payments::kCollection);
  std::string channel;
  std::int64_t amount = 0;  // minor units
  std::string currency;
  std::string checkout_reference;
  std::int64_t issued_at = 0;  // epoch seconds
  // Set when the customer paid (COMPLETED) in another currency (line=up): what was charged, and the rate
  // (order currency -> charged currency) as ratio_text writes it.
  std::int64_t charged_amount = 0;
  std::string charged_currency;
  std::string rate;
  std::int64_t kid = 1;  // the version of the merchant's checkout secret that signed it
  // What decides the merchant's money: the session's settlement mode and the lines it settles
  // to (the merchant's own remainder line included), who bears the fee, and, once COMPLETED,
  // the fee (minor units of the charged currency) and what the merchant(s) are credited (minor
  // units of `currency`); both 0 otherwise.
  std::string settlement_mode = std::string(payments::kDirect);
  std::vector<payments::SplitLine> distribution;
  std::string fee_bearer = "CUSTOMER";
  std::int64_t fee = 0;
  std::int64_t credited_amount = 0;
  // The collection's refunds once it was paid: what its COMPLETED refunds gave back to the customer
  // (minor units of the collection's currency) and the state that makes: "NONE", "PARTIAL" or "FULL"
  // (the collection is REFUNDED). A refunded order was paid: its status stays COMPLETED.
  std::int64_t refunded_amount = 0;
  std::string refund_state = "NONE";
};
// The JSON text of service_data (the exact text that is signed).
std::string service_data(const ReturnData& data);
// The per-merchant checkout secret, version 1: HMAC-SHA256(server checkout key,
// "checkout-secret:" + matricule), base64url. Derived, never stored: the server can always sign,
// and a leaked database does not reveal it.
std::string merchant_secret(std::string_view server_key, std::string_view matricule);
// A rotated version (2, 3, ...): HMAC-SHA256(server checkout key, "checkout-secret:v" + version +
// ":" + matricule + ":" + salt), base64url, where `salt` is the random text stored for that
// version. The salt alone signs nothing: the server key is needed too.
std::string merchant_secret(std::string_view server_key, std::string_view matricule, std::int64_t version,
                            std::string_view salt);
// The signature of service_data: hex HMAC-SHA256 under the merchant's checkout secret.
std::string sign(std::string_view secret, std::string_view service_data);
// Returns true iff `signature` is sign(secret, service_data), compared in constant time.
bool verify(std::string_view secret, std::string_view service_data, std::string_view signature);
// The return URL with service_data and signature appended to its query.
std::string return_url(std::string_view base, std::string_view service_data, std::string_view signature);

}  // namespace sika::checkout
