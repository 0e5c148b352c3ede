#pragma once
// Wallets and the wallet link API (docs/wallet-link.md). A partner (a merchant holding a link
// API key) links one of its users to a Sika wallet, the user consents with a one-time code sent
// to the phone, then the partner charges the wallet (WALLET collections, no code needed, within
// the consent's limits) and pays out to it. The guarantees:
//  - link/new is idempotent per (partner, phone): one wallet per (environment, phone), one link
//    per (partner, wallet), whatever the number of concurrent calls and nodes (unique keys);
//  - the link's apikey is derived from the server secret and a per-link random nonce, stored
//    only as its keyed hash, and works only for its partner, while the link is ACTIVE;
//  - a charge never exceeds the consent: per payment (fee included) and per period, the period's
//    budget taken by ONE conditional UPDATE of the link's row inside the write unit that debits
//    the wallet (payments::Service::execute_preauthorized), so the budget and the debit commit
//    together or not at all, and concurrent charges on any number of nodes never spend past
//    the limit;
//  - charges and payouts are ordinary payments (create_collection / create_disbursement), so
//    the ledger, the history, webhooks and the ledger check see them like any other;
//  - another partner's link is 404; unlinking (by either side) emits `wallet_link.unlinked` to
//    the partner's webhooks in the unit that unlinks, and the user is told by SMS.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "limits/limiter.hpp"
#include "notify/notifier.hpp"
#include "otp/service.hpp"
#include "payments/service.hpp"
#include "store/db.hpp"
#include "wallets/model.hpp"
#include "wallets/queries.hpp"
#include "web/message.hpp"

namespace sika::wallets {

struct Options {
  std::string secret;  // derives link API keys (server-derived, never stored)
  std::string pepper;  // keys the hashes of link keys and page session tokens
  // The consent's limits when the partner asks for none, in the wallet's home currency.
  Limits default_limits{50'000, 200'000, 86'400'000};
  // Requests per client address on /api/agent, shared by every node; no limiter: none.
  limits::Limiter* limiter = nullptr;
  limits::Policy per_address{
      .limit = 600, .window_ms = 3'600'000, .block_ms = 900'000, .block_after = 60, .name = "link_api_per_address"};
  std::string page_environment = "sandbox";      // the wallets the page signs in to
  std::int64_t session_ttl_ms = 30 * 60 * 1000;  // a signed-in page session
  bool secure_cookies = true;                    // Secure attribute on the page's session cookie
  std::function<std::int64_t()> clock;           // epoch ms; now_ms() when empty
};

// What link/new answers.
struct Linked {
  Link link;
  std::string apikey;         // the link's key (derived again on every call: the same key)
  bool consent_sent = false;  // a consent code was sent by this call
  std::string consent_note;   // why none was sent, when the link is PENDING and none was
  std::int64_t retry_after = 0;
};

// A charge or a payout asked by the partner.
struct Transfer {
  std::int64_t amount = 0;
  std::string currency;  // optional: the link's currency
  std::string transaction_uuid;
  std::string description;
};

class Service {
 public:
  Service(store::Db& db, payments::Service& payments, payments::CatalogSnapshot catalog, otp::Service& otp,
          notify::Notifier& notifier, Options options);

  // --- the link API (link surface, handlers.cpp); GET and POST alike unless said ---
  // The authenticator of Auth::link_api_key: the address's rate limit, then the partner's key.
  Result<web::Principal> authenticate_partner(web::Request& req);
  web::Response link_new(web::Request& req);      // /api/agent/link/new {email, phone, phoneCountry, limits?}
  web::Response link_status(web::Request& req);   // /api/agent/link/status {apikey}
  web::Response link_confirm(web::Request& req);  // POST /api/agent/link/confirm {apikey, otp}
  web::Response link_unlink(web::Request& req);   // POST /api/agent/link/unlink {apikey}
  web::Response link_charge(web::Request& req);   // POST /api/agent/link/charge {apikey, amount, transaction_uuid}
  web::Response link_payout(web::Request& req);   // POST /api/agent/link/payout {apikey, amount, transaction_uuid}

  // --- the wallet page (checkout surface, page.cpp) ---
  web::Response page(web::Request& req);         // GET /wallet
  web::Response page_submit(web::Request& req);  // POST /wallet (sign-in steps, unlink, sign-out)

  // --- operations ---
  Result<Linked> link(const web::Principal& partner, const LinkRequest& request);
  // The partner's link of `apikey`; another partner's, or an unknown key, is 404 naming apikey.
  Result<Link> find(const web::Principal& partner, std::string_view apikey);
  Result<Link> confirm(const web::Principal& partner, std::string_view apikey, std::string_view code);
  Result<Link> unlink_by_partner(const web::Principal& partner, std::string_view apikey);
  // The user consents on the wallet page, signed in with a code sent to the phone (the same
  // proof as the consent code): a PENDING link of `wallet` becomes ACTIVE.
  Result<Link> consent_by_user(const Wallet& wallet, std::string_view reference);
  // The user unlinks from the wallet page: `reference` must be a link of `wallet`.
  Result<Link> unlink_by_user(const Wallet& wallet, std::string_view reference);
  Result<payments::Transaction> charge(const web::Principal& partner, std::string_view apikey, const Transfer& t);
  Result<payments::Transaction> payout(const web::Principal& partner, std::string_view apikey, const Transfer& t);
  Result<queries::History> history(const Wallet& wallet, std::optional<std::int64_t> before, int limit);
  Result<std::vector<queries::Balance>> balances(const Wallet& wallet);
  Result<std::vector<Link>> links(const Wallet& wallet);
  Result<std::optional<Wallet>> wallet_of(std::string_view environment, std::string_view msisdn);

  std::int64_t now() const;

 private:
  std::string link_key(std::string_view reference, std::string_view nonce) const;
  std::string key_hash(std::string_view key) const;
  // The country's usable wallet service (kind wallet), or a 400 naming `field`.
  Result<const catalog::PaymentService*> wallet_service(std::string_view country, std::string_view field) const;
  Result<std::string> send_consent_code(const Link& link, std::int64_t& retry_after);
  Result<Link> unlink(const Link& link, std::string_view by);
  Result<Link> activate(const Link& link);
  Result<Link> link_of_wallet(const Wallet& wallet, std::string_view reference);
  Result<payments::IntentRequest> transfer_intent(const Link& link, const Transfer& t, std::string_view operation);
  web::Principal as_merchant(const web::Principal& partner) const;
  Result<web::Principal> session_wallet(const web::Request& req, Wallet& wallet);

  store::Db& db_;
  payments::Service& payments_;
  payments::CatalogSnapshot catalog_;
  otp::Service& otp_;
  notify::Notifier& notifier_;
  Options options_;
};

}  // namespace sika::wallets
