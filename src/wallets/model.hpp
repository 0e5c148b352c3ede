#pragma once
// Wallets and wallet links, as stored and as answered (docs/wallet-link.md).
//  - A wallet belongs to one phone number in one environment; it is multi-currency: its money
//    is the ledger's customer:<msisdn> accounts, one per currency (the owner string payments
//    already uses), and `currency` is only its home currency (the country's), the currency of
//    its links' limits.
//  - A link joins a partner (a merchant holding a link API key) to a wallet: PENDING until the
//    user consents with the one-time code sent to the phone, then ACTIVE, until UNLINKED by
//    either side. Its limits bound every charge (per payment) and the sum of the charges of a
//    fixed window of period_ms starting at the window's first charge (per period).
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/i18n.hpp"
#include "core/json.hpp"
#include "store/state_machine.hpp"

namespace sika::wallets {

inline constexpr std::string_view kPending = "PENDING";
inline constexpr std::string_view kActive = "ACTIVE";
inline constexpr std::string_view kUnlinked = "UNLINKED";

// The statuses of a wallet link: PENDING until the customer consents (ACTIVE), UNLINKED by either
// side; a new link/new on an UNLINKED pair makes it PENDING again. The partner hears of each
// consent and each unlink.
enum class LinkStatus { pending, active, unlinked };
inline constexpr store::StateMachine<LinkStatus, 3, 4> kLinkStatus{
    "wlt_links",
    {kPending, kActive, kUnlinked},
    {{{LinkStatus::pending, LinkStatus::active, "wallet_link.activated"},
      {LinkStatus::pending, LinkStatus::unlinked, "wallet_link.unlinked"},
      {LinkStatus::active, LinkStatus::unlinked, "wallet_link.unlinked"},
      {LinkStatus::unlinked, LinkStatus::pending, ""}}}};

struct Wallet {
  std::int64_t id = 0;
  std::string matricule;  // "WAL-" + 12 characters
  std::string environment;
  std::string msisdn;  // international digits
  std::string country;
  std::string currency;  // home currency
  std::string email;
  std::int64_t created_at = 0;
};

struct Limits {
  std::int64_t per_payment = 0;  // minor units of the link's currency, fee included
  std::int64_t per_period = 0;
  std::int64_t period_ms = 0;
};

struct Link {
  std::int64_t id = 0;
  std::string reference;  // "WLK-" + 16 characters
  std::int64_t partner_id = 0;
  std::string partner;       // the partner's matricule
  std::string partner_name;  // its display name
  std::string status;
  std::string currency;
  Limits limits;
  std::int64_t period_start = 0;
  std::int64_t period_spent = 0;
  std::optional<std::int64_t> confirmed_at, unlinked_at;
  std::string unlinked_by;  // "partner" | "user" | ""
  std::int64_t created_at = 0, updated_at = 0;
  Wallet wallet;
};

// What the window of `at` has spent: 0 once the stored window has ended.
std::int64_t spent_at(const Link& link, std::int64_t at);

// Public shapes (times ISO 8601 UTC).
boost::json::object to_json(const Wallet& wallet);
boost::json::object to_json(const Link& link, std::int64_t at);

// The link/new request, read from the query (GET) or the body (POST).
struct LinkRequest {
  std::string email;
  std::string phone;                                                    // digits, as given
  std::string phone_country;                                            // "+237"
  std::optional<std::int64_t> per_payment, per_period, period_seconds;  // the partner's asked limits
  i18n::Locale locale = i18n::Locale::fr;                               // of the consent message
};
// Every problem by field name (email, phone, phoneCountry, limits.*); all three of email, phone
// and phoneCountry are required.
LinkRequest parse_link_request(const boost::json::object& fields, json::FieldErrors& errors);

// "24 h", "7 d", "30 min": a limit's period as people read it (consent message, wallet page).
std::string period_text(std::int64_t period_ms);

// "+237 6•• •• •• 42": the number as the partner may show it back to its user.
std::string masked_phone(std::string_view msisdn);

}  // namespace sika::wallets
