#pragma once
// A payment link: a merchant's reusable request for money, shared as a short code. Each payment
// made through it is an ordinary collection (payments/) of the link's merchant.
#include <boost/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/json.hpp"
#include "store/db.hpp"
#include "store/state_machine.hpp"

namespace sika::links {

inline constexpr std::string_view kActive = "ACTIVE";
inline constexpr std::string_view kDisabled = "DISABLED";
inline constexpr std::string_view kExpired = "EXPIRED";  // shown, never stored: expires_at has passed

// The stored statuses of a link: the merchant (or an operator) sets either at any time, setting
// the one it has included (it stamps updated_at); a subscription's end disables its links. No event.
enum class LinkStatus { active, disabled };
inline constexpr store::StateMachine<LinkStatus, 2, 4> kLinkStatus{
    "lnk_links",
    {kActive, kDisabled},
    {{{LinkStatus::active, LinkStatus::disabled, ""},
      {LinkStatus::disabled, LinkStatus::active, ""},
      {LinkStatus::active, LinkStatus::active, ""},
      {LinkStatus::disabled, LinkStatus::disabled, ""}}}};

struct Link {
  std::int64_t id = 0;
  std::string reference;   // PLK-...
  std::string short_code;  // ^[A-Za-z0-9]{10}$ (the route accepts 8 to 12)
  std::int64_t merchant_id = 0;
  std::string environment;
  std::int64_t user_tier = 1;              // the creating credential's tier: fees of the link's payments
  std::string status;                      // stored: ACTIVE | DISABLED
  std::optional<std::int64_t> amount;      // fixed amount (minor units); nullopt: the payer chooses
  std::optional<std::int64_t> min_amount;  // open amounts: inclusive bounds
  std::optional<std::int64_t> max_amount;
  std::string currency;
  std::optional<std::string> provider;  // service code the payer must use; nullopt: the payer chooses
  std::string channel = "PROVIDER";     // PROVIDER | WALLET | AUTO
  std::string fee_bearer = "CUSTOMER";  // CUSTOMER | MERCHANT
  std::string title;
  std::string description;
  std::optional<std::int64_t> expires_at;  // epoch ms
  std::optional<std::int64_t> max_usage;   // completed payments allowed; nullopt: unlimited
  std::int64_t held = 0;                   // uses given out (completed + in flight)
  std::string metadata = "{}";
  std::int64_t created_at = 0;
  std::int64_t updated_at = 0;
  // Figures, read with the link.
  std::int64_t payments_completed = 0;
  std::int64_t total_collected = 0;

  // ACTIVE, DISABLED, or EXPIRED when expires_at is at or before `now`.
  std::string_view status_at(std::int64_t now) const;
};

// The link as the API shows it; `payment_url` is its public page.
boost::json::object to_json(const Link& link, std::string_view payment_url, std::int64_t now);

// A new short code: 10 characters of [A-Za-z0-9] from the CSPRNG, 62^10 ≈ 8.4e17 codes (59.5 bits).
std::string new_short_code();
// True iff `code` matches ^[A-Za-z0-9]{8,12}$.
bool valid_short_code(std::string_view code);

// What a merchant sends to create a link (the checks that need no catalog are done here).
struct NewLink {
  std::optional<std::int64_t> amount, min_amount, max_amount, expires_at, max_usage;
  std::string currency;
  std::optional<std::string> provider;
  std::string channel = "PROVIDER";
  std::string fee_bearer = "CUSTOMER";
  std::string title, description;
  std::string metadata = "{}";
};
// Reads a create body; problems go to `errors` under their field names. `now` bounds expires_at.
NewLink parse_new_link(const boost::json::object& body, std::int64_t now, json::FieldErrors& errors);

// The changes of PATCH: fields absent stay as they are; expires_at null clears the expiry.
struct LinkUpdate {
  std::optional<std::string> title, description;
  bool set_expiry = false;
  std::optional<std::int64_t> expires_at;
};
LinkUpdate parse_update(const boost::json::object& body, std::int64_t now, json::FieldErrors& errors);

// What a payer sends to POST /pay/{shortCode}/pay.
struct PayRequest {
  std::string customer_phone;
  std::string transaction_uuid;
  std::string customer_name, customer_email;
  std::optional<std::int64_t> amount;
  std::optional<std::string> provider;
  std::optional<std::string> channel;
  std::optional<std::string> otp;
  std::string metadata = "{}";
};
// `otp_length`: the digits of one-time codes, to which an integer `otp` is left-padded.
PayRequest parse_pay(const boost::json::object& body, json::FieldErrors& errors, int otp_length);

}  // namespace sika::links
