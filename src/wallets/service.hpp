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
//    budget taken by ONE conditional UPDATE of the link's row (on its status and its key) inside
//    the one write unit that creates the collection and debits the wallet
//    (payments::Service::collect, a preauthorized payer), so the payment, the budget and the debit commit
//    together or not at all, concurrent charges on any number of nodes never spend past the
//    limit, and an unlinked (or relinked) key stops charging at once on every node, whatever
//    this node remembers of the key;
//  - charges and payouts are ordinary payments (payments::Service::collect / create_disbursement), so
//    the ledger, the history, webhooks and the ledger check see them like any other;
//  - another partner's link is 404; unlinking (by either side) emits `wallet_link.unlinked` to
//    the partner's webhooks in the unit that unlinks, and the user is told by SMS.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/acting.hpp"
#include "core/result.hpp"
#include "core/thread_annotations.hpp"
#include "identity/service.hpp"
#include "limits/limiter.hpp"
#include "limits/reserved.hpp"
#include "notify/notifier.hpp"
#include "otp/service.hpp"
#include "payments/service.hpp"
#include "store/db.hpp"
#include "wallets/distribution.hpp"
#include "wallets/model.hpp"
#include "wallets/queries.hpp"
#include "web/message.hpp"

namespace sika::wallets {

struct Options {
  std::string secret;  // derives link API keys (server-derived, never stored)
  std::string pepper;  // keys the hashes of link keys and page session tokens
  // The consent's limits when the partner asks for none, in the wallet's home currency.
  Limits default_limits{50'000, 200'000, 86'400'000};
  // Requests per client address on /api/agent, shared by every node through blocks of the quota
  // reserved in the database (limits/reserved.hpp); no api_limiter: none.
  limits::ReservedLimiter* api_limiter = nullptr;
  // The wallet page's sign-ins per address, counted hit by hit; no limiter: none.
  limits::Limiter* limiter = nullptr;
  limits::Policy per_address{
      .limit = 600, .window_ms = 3'600'000, .block_ms = 900'000, .block_after = 60, .name = "link_api_per_address"};
  std::string page_environment = "sandbox";      // the wallets the page signs in to
  std::int64_t session_ttl_ms = 30 * 60 * 1000;  // a signed-in page session
  bool secure_cookies = true;                    // Secure attribute on the page's session cookie
  // The merchant (matricule) the page's top-ups and withdrawals belong to: the platform's own
  // wallet account, whose webhooks hear of them. Empty: the page offers neither.
  std::string page_merchant;
  // Sign-in to the page with the identity service (OIDC code + PKCE); without it, only the
  // phone and code. `page_url` is the page's public URL ({checkout_url}/wallet).
  identity::Service* identity = nullptr;
  std::string client_id = "demo-public";
  std::string page_url;
  std::function<std::int64_t()> clock;  // epoch ms; now_ms() when empty
};

// What link/new answers.
struct Linked {
  Link link;
  std::string apikey;         // the link's key (derived again on every call: the same key)
  bool consent_sent = false;  // a consent code was sent by this call
  std::string consent_note;   // why none was sent, when the link is PENDING and none was
  std::int64_t retry_after = 0;
};

// A charge or a payout asked by the partner, or a top-up or withdrawal between the wallet and
// its owner's mobile money.
struct Transfer {
  std::int64_t amount = 0;
  std::string currency;  // optional: the link's (the wallet's home) currency
  std::string transaction_uuid;
  std::string description;
  // Top-up and withdrawal: the operator's mobile-money service (a service code); empty: the
  // first usable service of the wallet's country whose numbers include the wallet's.
  std::string provider;
  std::string otp;  // top-up through a service whose operator asks the payer for a code
};

struct PageCall;  // one request of the wallet page (page.cpp)

class Service {
 public:
  Service(store::Db& db, payments::Service& payments, payments::CatalogSnapshot catalog, otp::Service& otp,
          notify::Notifier& notifier, Options options);

  // --- the link API (link surface, handlers.cpp); GET and POST alike unless said ---
  // The authenticator of Auth::link_api_key: the address's rate limit, then the partner's key.
  Result<web::Principal> authenticate_partner(web::Request& req);
  Result<web::Response> link_new(web::Request& req);      // /api/agent/link/new {email, phone, phoneCountry, limits?}
  Result<web::Response> link_status(web::Request& req);   // /api/agent/link/status {apikey}
  Result<web::Response> link_confirm(web::Request& req);  // POST /api/agent/link/confirm {apikey, otp}
  Result<web::Response> link_unlink(web::Request& req);   // POST /api/agent/link/unlink {apikey}
  Result<web::Response> link_charge(
      web::Request& req);  // POST /api/agent/link/charge {apikey, amount, transaction_uuid}
  Result<web::Response> link_payout(
      web::Request& req);  // POST /api/agent/link/payout {apikey, amount, transaction_uuid}
  Result<web::Response> link_topup(web::Request& req);  // POST /api/agent/link/topup {apikey, amount, transaction_uuid}
  Result<web::Response> link_withdraw(
      web::Request& req);  // POST /api/agent/link/withdraw {apikey, amount, transaction_uuid}
  Result<web::Response> link_init(web::Request& req);  // POST /api/agent/link/init {apikey, amount, transaction_uuid}
  Result<web::Response> link_approve(
      web::Request& req);  // POST /api/agent/link/approve {apikey, transaction_reference, otp}
  // POST /api/agent/link/fiat-distribution {transaction_uuid, amount?, distribution: [{apikey, amount|rate}]}
  Result<web::Response> link_fiat_distribution(web::Request& req);

  // --- the wallet page (checkout surface, page.cpp) ---
  web::Response page(web::Request& req);           // GET /wallet
  web::Response page_submit(web::Request& req);    // POST /wallet (sign-in steps, unlink, sign-out)
  web::Response page_login(web::Request& req);     // GET /wallet/login: to the identity service
  web::Response page_callback(web::Request& req);  // GET /wallet/callback: back from it, signed in

  // --- operations ---
  Result<Linked> link(const Acting& partner, const LinkRequest& request);
  // The partner's link of `apikey`; another partner's, or an unknown key, is 404 naming apikey.
  Result<Link> find(const Acting& partner, std::string_view apikey);
  Result<Link> confirm(const Acting& partner, std::string_view apikey, std::string_view code);
  Result<Link> unlink_by_partner(const Acting& partner, std::string_view apikey);
  // The partner's links, newest first (keyset on the link id): the dashboard's list.
  Result<std::vector<Link>> partner_links(const Acting& partner, std::optional<std::int64_t> before, int limit);
  // The partner unlinks by the link's reference (the dashboard holds no link key); another
  // partner's link, or another environment's, is 404 naming reference.
  Result<Link> unlink_by_reference(const Acting& partner, std::string_view reference);
  // The user consents on the wallet page, signed in with a code sent to the phone (the same
  // proof as the consent code): a PENDING link of `wallet` becomes ACTIVE with the limits the
  // page showed (`shown`), and only while they are still its limits (409 otherwise).
  Result<Link> consent_by_user(const Wallet& wallet, std::string_view reference, const Limits& shown);
  // The user unlinks from the wallet page: `reference` must be a link of `wallet`.
  Result<Link> unlink_by_user(const Wallet& wallet, std::string_view reference);
  // A charge: one write unit (collection, consent's budget, debit, journal, events); a refusal
  // of the consent leaves the collection CANCELLED (LIMIT_EXCEEDED) and answers limit_exceeded.
  Result<payments::Transaction> charge(const Acting& partner, std::string_view apikey, const Transfer& t);
  // The same without blocking on the write (payments' collect_async): `done` may
  // run on the database's completer thread and must not block. Before the write it only reads.
  void charge_async(const Acting& partner, std::string_view apikey, const Transfer& t,
                    std::function<void(Result<payments::Transaction>)> done);
  Result<payments::Transaction> payout(const Acting& partner, std::string_view apikey, const Transfer& t);
  // Top-up: a PROVIDER collection from the wallet's own number at an operator (settlement_mode
  // WALLET: its COMPLETED journal credits customer:<msisdn> instead of the merchant), created and
  // submitted at once; the operator's answer completes or fails it later. `merchant` is whom
  // the transaction belongs to (the partner, or the page's operating merchant).
  Result<payments::Transaction> topup(const Acting& merchant, const Wallet& wallet, const Transfer& t,
                                      std::string_view source);
  // Withdrawal: a PROVIDER payout to the wallet's own number paid from the wallet (reserved from
  // customer:<msisdn> in the creating unit, refunded when the payout fails or expires);
  // exactly once per transaction_uuid. `step` runs in the creating unit before the reserve.
  Result<payments::Transaction> withdraw(const Acting& merchant, const Wallet& wallet, const Transfer& t,
                                         const payments::Service::CreationStep& step = {});
  // The partner's top-up of a linked wallet (ACTIVE link; no limit: the user approves it at the
  // operator) and withdrawal from it (ACTIVE link, within the consent's limits: the budget is
  // taken in the unit that reserves the money).
  Result<payments::Transaction> topup_by_partner(const Acting& partner, std::string_view apikey, const Transfer& t);
  Result<payments::Transaction> withdraw_by_partner(const Acting& partner, std::string_view apikey, const Transfer& t);
  // link/init: a payment the partner starts on a linked wallet. Within what the consent leaves
  // (per payment and in the period, as read now) it is a charge, completed at once; beyond it, a
  // WALLET collection that waits (INITIATED) for the user's approval: a one-time code sent to the
  // phone, which the user gives to the partner (approve). The read only chooses: a charge whose
  // unit finds the budget gone (taken meanwhile on any node) leaves nothing and waits for the
  // code instead. The transaction_uuid is the idempotency key whichever way it went.
  Result<payments::Transaction> init(const Acting& partner, std::string_view apikey, const Transfer& t);
  // Executes a link/init payment waiting for approval with the user's code; another link's or
  // another partner's transaction is 404 naming transaction_reference.
  Result<payments::Transaction> approve(const Acting& partner, std::string_view apikey,
                                        std::string_view transaction_reference, std::string_view code);
  // fiat-distribution (distribution.hpp): every line's link must be the partner's and ACTIVE.
  Result<Distribution> distribute(const Acting& partner, const DistributionRequest& request);
  Result<queries::History> history(const Wallet& wallet, std::optional<std::int64_t> before, int limit);
  Result<std::vector<queries::Balance>> balances(const Wallet& wallet);
  Result<std::vector<Link>> links(const Wallet& wallet);
  Result<std::optional<Wallet>> wallet_of(std::string_view environment, std::string_view msisdn);
  // The wallet of a phone number (+ and digits) in the page's environment, created when the
  // number has none (an identity user's number at sign-in; the demo's funded wallets).
  Result<Wallet> wallet_of_phone(std::string_view phone, std::string_view email);

  std::int64_t now() const;

 private:
  std::string link_key(std::string_view reference, std::string_view nonce) const;
  std::string key_hash(std::string_view key) const;
  // The country's usable wallet service (kind wallet), or a 400 naming `field`.
  Result<const catalog::PaymentService*> wallet_service(std::string_view country, std::string_view field) const;
  Result<std::string> send_consent_code(const Link& link, std::int64_t& retry_after);
  Result<Link> unlink(const Link& link, std::string_view by);
  Result<Link> activate(const Link& link, const Limits& consented, std::string_view field);
  Result<Link> link_of_wallet(const Wallet& wallet, std::string_view reference);
  Result<payments::IntentRequest> mobile_money_intent(const Wallet& wallet, const Transfer& t,
                                                      std::string_view operation, std::string_view origin);
  Result<Link> active_link(const Acting& partner, std::string_view apikey);
  // What a link key stands for while it lives: the facts of its link that nothing changes without
  // changing the key (a relink makes a new one). Neither status nor budget: the charge's unit
  // reads those on the row.
  struct KeyedLink {
    std::int64_t id = 0;
    std::string reference;
    std::int64_t partner_id = 0;
    std::string currency;
    Limits limits;
    Wallet wallet;
  };
  // The partner's ACTIVE link of the key whose hash is `hash`: remembered after the first read
  // (at most kKeyedLinks keys), so a charge reads nothing before its unit. 404 and 409 as find()
  // and active_link() answer.
  Result<std::shared_ptr<const KeyedLink>> keyed_link(const Acting& partner, std::string_view apikey,
                                                      const std::string& hash);
  void forget_key(const std::string& hash);
  static std::shared_ptr<const KeyedLink> keyed(const Link& link);
  Result<payments::IntentRequest> transfer_intent(const KeyedLink& link, const Transfer& t, std::string_view operation);
  // A charge's request and the consent's check in its unit (payments::Service::ChargeCheck):
  // the per-payment limit, then (when the wallet covers it) the period's budget on the row of the
  // link while it is ACTIVE under `hash`; a link no longer so aborts the unit (404 or 409).
  struct Charge {
    payments::IntentRequest request;
    payments::Service::ChargeCheck check;
  };
  Result<Charge> charge_of(const Acting& partner, std::string_view apikey, const Transfer& t);
  payments::Service::ChargeCheck consent_check(std::shared_ptr<const KeyedLink> link, std::string hash,
                                               std::int64_t at);
  Acting as_merchant(const Acting& partner) const;
  Result<web::Principal> session_wallet(const web::Request& req, Wallet& wallet);
  // The principal of options_.page_merchant; nullopt when none is set (or it is not active).
  Result<std::optional<Acting>> page_merchant();
  // Opens a page session for `wallet_id` on `res` (the cookie's Path is `cookie_path`).
  Status open_session(web::Response& res, std::int64_t wallet_id, std::string_view cookie_path);
  // The wallet page's steps (page.cpp), one per kind of form it posts.
  web::Response page_sign_in(PageCall& call, std::string_view action);
  web::Response page_link_change(PageCall& call, const Wallet& wallet, std::string_view action);
  web::Response page_payment(PageCall& call, const Wallet& wallet, std::string_view action);
  web::Response page_money(PageCall& call, const Wallet& wallet, std::string_view action, const std::string& csrf);
  // What the page does to the data and the money (page_actions.cpp).
  // The wallet's link payments waiting for its approval (queries::pending_payments) now.
  Result<std::vector<queries::PendingPayment>> pending_payments(const Wallet& wallet, std::string_view reference = {});
  // The transaction of the pending payment `reference` of `link`, as link/approve finds it (the
  // link partner's collection carrying the link's metadata, from this wallet); nullopt when it is
  // none of these or the partner is not active.
  Result<std::optional<payments::Transaction>> link_payment(const Wallet& wallet, const Link& link,
                                                            std::string_view reference);
  // The user declines it (CANCELLED, DECLINED_BY_CUSTOMER), or approves it with its code (no
  // code: the code is sent again).
  Result<payments::Transaction> decline_link_payment(const payments::Transaction& tx);
  Result<payments::Transaction> approve_link_payment(payments::Transaction tx, std::optional<std::string> code);
  // Signs out: the page session of `token` ends.
  Status close_session(std::string_view token);

  store::Db& db_;
  payments::Service& payments_;
  payments::CatalogSnapshot catalog_;
  otp::Service& otp_;
  notify::Notifier& notifier_;
  Options options_;
  static constexpr std::size_t kKeyedLinks = 100'000;
  sika::Mutex keys_mutex_;
  std::unordered_map<std::string, std::shared_ptr<const KeyedLink>> keyed_links_
      GUARDED_BY(keys_mutex_);  // by key hash
};

}  // namespace sika::wallets
