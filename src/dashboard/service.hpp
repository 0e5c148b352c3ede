#pragma once
// The dashboard (docs/dashboard.md): the web console of operators and merchant members, on the
// dashboard surface. Server-rendered pages (fr/en, no script), plain forms.
//
// Guarantees:
//  - sign-in is OpenID Connect with our own identity service (authorization code + PKCE S256,
//    state bound to the browser by a cookie, nonce), and the ID token is verified before a
//    session opens; the code verifier and nonce derive from the state under the server secret,
//    so nothing of an unfinished sign-in is stored;
//  - sessions, CSRF and timeouts are those of dashboard/sessions.hpp; operators pass TOTP at
//    every sign-in, members who enrolled too;
//  - a viewer changes nothing (403); a member sees only their merchant's objects (another's is
//    404); every change made through the dashboard is written to the audit log;
//  - pages read through the components' read models (payments::queries, links, webhooks,
//    identity and dashboard stores): no SQL here.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "dashboard/sessions.hpp"
#include "merchant/merchant.hpp"
#include "store/db.hpp"
#include "web/cookie.hpp"
#include "web/html.hpp"
#include "web/message.hpp"

namespace sika::identity {
class Service;
class RelyingParty;
}  // namespace sika::identity
namespace sika::links {
class Service;
}
namespace sika::webhooks {
class Service;
}
namespace sika::limits {
class Limiter;
}
namespace sika::catalog {
class Service;
class Catalog;
}  // namespace sika::catalog
namespace sika::billing {
class Service;
}
namespace sika::payments {
class Service;
struct Transaction;
struct Refund;
namespace recon {
class Reconciler;
}
}  // namespace sika::payments
namespace sika::checkout {
class Service;
}
namespace sika::statements {
class Service;
}
namespace sika::wallets {
class Service;
}

namespace sika::dashboard {

// Changes a merchant's countries and tier (identity::set_merchant_grants: its OAuth applications
// and staff follow, tokens issued before are refused) and appends the audit entry
// `merchant.grants` in the same write unit (none when they are as they were), after checking them
// against the catalog (identity::check_merchant_grants): 400 empty_data naming countries or tier,
// 404 when no merchant has this matricule. The operator's page and `sika admin
// set-merchant-grants` use it.
Result<merchant::Merchant> change_merchant_grants(store::Db& db, const catalog::Catalog& catalog,
                                                  std::string_view matricule, const std::vector<std::string>& countries,
                                                  std::int64_t tier, std::int64_t user_id, const std::string& actor,
                                                  std::int64_t now);

// Turns a merchant's "signed checkout requests only" on or off (docs/checkout.md) and appends
// the audit entry `checkout.signed_only` in the same write unit (none when it was already so).
// 404 naming merchant when no merchant has this matricule. The merchant's checkout page (owners)
// and `sika admin checkout signed-only` use it. Returns whether it changed.
Result<bool> set_checkout_signed_only(store::Db& db, std::string_view matricule, bool on, std::int64_t user_id,
                                      const std::string& actor, std::int64_t now);

struct Options {
  std::string dashboard_url;              // public URL of the surface, no trailing slash
  std::string client_id = "demo-public";  // our OAuth client at the identity service (public, PKCE)
  std::string pepper;
  std::int64_t idle_ms = 30LL * 60 * 1000;
  std::int64_t absolute_ms = 12LL * 3600 * 1000;
  int totp_attempts_per_window = 5;     // wrong or right TOTP codes per user per 5 minutes
  std::function<std::int64_t()> clock;  // epoch ms; now_ms() when empty
  // Where the transaction lists are read (a read replica, database.read_url); null: the database.
  store::Db* list_reads = nullptr;
};

// The other components the pages read and act through; any may be null (their pages then say so).
struct Components {
  identity::Service* identity = nullptr;
  links::Service* links = nullptr;
  webhooks::Service* webhooks = nullptr;
  limits::Limiter* limiter = nullptr;
  catalog::Service* catalog = nullptr;
  billing::Service* billing = nullptr;  // set by attach_billing (billing is built after the dashboard)
  payments::Service* payments = nullptr;
  checkout::Service* checkout = nullptr;
  wallets::Service* wallets = nullptr;           // set by attach_wallets: the partner's links
  statements::Service* statements = nullptr;     // set by attach_statements: the statement pages
  payments::recon::Reconciler* recon = nullptr;  // operator reconciliation (operators' pages)
};

class Service {
 public:
  Service(store::Db& db, Components components, Options options);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // The router's authenticator for Auth::dashboard_session and Auth::operator_session.
  Result<web::Principal> authenticate(web::Request& req);
  Sessions& sessions() { return sessions_; }
  // Gives the subscription pages their service; call before serving.
  void attach_billing(billing::Service* billing) { parts_.billing = billing; }
  void attach_wallets(wallets::Service* wallets) { parts_.wallets = wallets; }
  void attach_statements(statements::Service* statements) { parts_.statements = statements; }

  // --- sign-in (open routes) ---
  web::Response login(web::Request& req);        // GET /login: redirects to the identity service
  web::Response callback(web::Request& req);     // GET /callback?code&state
  web::Response totp_page(web::Request& req);    // GET /totp: enrolment (QR) or the code form
  web::Response totp_submit(web::Request& req);  // POST /totp
  // --- any session ---
  web::Response logout(web::Request& req);          // POST /logout
  web::Response home(web::Request& req);            // GET /
  web::Response audit(web::Request& req);           // GET /audit (owners and operators)
  web::Response security(web::Request& req);        // GET /security: TOTP for members
  web::Response security_enrol(web::Request& req);  // POST /security/totp
  // --- merchant pages (dashboard_session) ---
  web::Response settings(web::Request& req);           // GET /settings: the merchant's time zone
  web::Response settings_submit(web::Request& req);    // POST /settings (owners)
  web::Response transactions(web::Request& req);       // GET /transactions
  web::Response transactions_csv(web::Request& req);   // GET /transactions.csv
  web::Response transaction(web::Request& req);        // GET /transactions/{reference}
  web::Response redeliver(web::Request& req);          // POST /transactions/{reference}/redeliver
  web::Response force_outcome(web::Request& req);      // POST /transactions/{reference}/force (sandbox)
  web::Response links_page(web::Request& req);         // GET /links
  web::Response link_create(web::Request& req);        // POST /links
  web::Response link_qr(web::Request& req);            // GET /links/{reference}/qr.png
  web::Response link_disable(web::Request& req);       // POST /links/{reference}/disable
  web::Response developers(web::Request& req);         // GET /developers
  web::Response app_create(web::Request& req);         // POST /developers/apps
  web::Response app_rotate(web::Request& req);         // POST /developers/apps/{client_id}/rotate
  web::Response webhooks_page(web::Request& req);      // GET /webhooks
  web::Response webhook_create(web::Request& req);     // POST /webhooks (secret shown once)
  web::Response webhook_rotate(web::Request& req);     // POST /webhooks/{endpoint_id}/rotate (shown once)
  web::Response webhook_redeliver(web::Request& req);  // POST /webhooks/redeliver
  web::Response sandbox(web::Request& req);            // GET /sandbox?to= (the notifier's outbox)
  web::Response key_issue(web::Request& req);          // POST /developers/keys (shown once)
  web::Response key_revoke(web::Request& req);         // POST /developers/keys/{key_id}/revoke
  web::Response team(web::Request& req);               // GET /team
  web::Response team_put(web::Request& req);           // POST /team
  web::Response checkout_sessions(web::Request& req);  // GET /checkout (sessions, the secret's form)
  web::Response checkout_session(web::Request& req);   // GET /checkout/{reference}
  web::Response checkout_secret(web::Request& req);    // POST /checkout/secret (shown, audited)
  web::Response payouts(web::Request& req);            // GET /payouts (a payout's page is its transaction's)
  // GET /statements?currency=&month=YYYY-MM: the statement of a currency and month (first rows),
  // GET /statements.csv?currency=&month=&separator=: all of it as CSV (docs/statements.md).
  web::Response statement(web::Request& req);
  web::Response statement_csv(web::Request& req);
  // Settlement (docs/settlement.md): GET /settlement?currency= (settings, batches), POST
  // /settlement (owners; audited), POST /settlement/now (owners: a settlement asked now).
  web::Response settlement(web::Request& req);
  web::Response settlement_submit(web::Request& req);
  web::Response settlement_now(web::Request& req);
  web::Response subscriptions(web::Request& req);  // GET /subscriptions?status&page
  web::Response subscription(web::Request& req);   // GET /subscriptions/{reference}
  web::Response subscription_change(
      web::Request& req);  // POST /subscriptions/{reference}/suspend|reactivate|cancel|test-clock
  // POST /checkout/signed-only: the merchant's signed checkout requests only (owners; audited)
  web::Response checkout_signed_only(web::Request& req);
  // Refunds (refund_pages.cpp; docs/refunds.md): POST /transactions/{reference}/refund (owners;
  // audited) through payments::Service::refund, the API's operation; GET
  // /refunds?status=&transaction_reference=&before= (the merchant's refunds).
  web::Response refund_submit(web::Request& req);
  web::Response refunds(web::Request& req);
  // --- operator pages (operator_session) ---
  web::Response merchants(web::Request& req);            // GET /operator/merchants
  web::Response merchant_create(web::Request& req);      // POST /operator/merchants
  web::Response merchant_page(web::Request& req);        // GET /operator/merchants/{matricule}
  web::Response merchant_status(web::Request& req);      // POST /operator/merchants/{matricule}/enable|disable
  web::Response merchant_app_create(web::Request& req);  // POST /operator/merchants/{matricule}/apps
  web::Response merchant_member(web::Request& req);      // POST /operator/merchants/{matricule}/members
  web::Response merchant_grants(web::Request& req);      // POST /operator/merchants/{matricule}/grants
  web::Response ledger(web::Request& req);               // GET /operator/ledger
  web::Response health(web::Request& req);               // GET /operator/health
  web::Response health_override(web::Request& req);      // POST /operator/health/override (connector, state)
  // Operator reconciliation (recon_pages.cpp).
  web::Response recon_runs(web::Request& req);      // GET /operator/recon
  web::Response recon_run(web::Request& req);       // GET /operator/recon/{run}?kind=&state=&after=
  web::Response recon_decide(web::Request& req);    // POST /operator/recon/items/{item} (decision, reason; audited)
  web::Response recon_closing(web::Request& req);   // POST /operator/recon/closing (audited)
  web::Response catalog_page(web::Request& req);    // GET /operator/catalog
  web::Response wallet_links(web::Request& req);    // GET /wallet-links: the partner's wallet links
  web::Response wallet_unlink(web::Request& req);   // POST /wallet-links/{reference}/unlink
  web::Response fx_put(web::Request& req);          // POST /operator/catalog/fx (base, quote, rate)
  web::Response catalog_put(web::Request& req);     // POST /operator/catalog (a record: create/update/upsert)
  web::Response catalog_active(web::Request& req);  // POST /operator/catalog/{kind}/{code}/enable|disable
  // GET /operator/settlement?environment= (pending bank batches, the reserve's form),
  // GET /operator/settlement/pain001.xml?environment=, POST /operator/settlement/{reference}/paid,
  // POST /operator/settlement/reserve (merchant, currency, amount); changes audited.
  web::Response operator_settlement(web::Request& req);
  web::Response operator_pain001(web::Request& req);
  web::Response operator_settlement_paid(web::Request& req);
  web::Response operator_settlement_reserve(web::Request& req);

  // The caller of a page and its session (defined in dashboard/internal.hpp, for the page files).
  struct Ctx;

 private:
  std::int64_t now() const;
  i18n::Locale locale_of(const web::Request& req) const;
  // The caller of a dashboard route (set by the router) with its session.
  Result<Ctx> context(web::Request& req);
  // The caller of a merchant page: 404 for operators, and 403 for viewers when the page `changes`.
  Result<Ctx> member_context(web::Request& req, bool changes);
  std::string path(std::string_view rel) const;  // the public path of a page
  // A cookie of the dashboard: its path, Lax, Secure behind https.
  web::CookieSpec cookie_spec(const web::Request& req, std::string_view name, std::string_view value,
                              std::int64_t max_age_s) const;
  // The dashboard's sign-in with the identity service (parts_.identity must be set).
  identity::RelyingParty relying_party() const;
  web::Response page(const web::Request& req, const Ctx& c, std::string title, std::string body, int status = 200);
  web::Response bare_page(const web::Request& req, std::string title, std::string body, int status = 200);
  web::Response error_page(const web::Request& req, const Error& e);
  // The operators' health section of GET /operator/health (health_pages.cpp).
  std::string operators_health(const Ctx& c) const;
  web::Response see_other(std::string_view rel) const;
  Status record(const Ctx& c, std::optional<std::int64_t> merchant_id, std::string action, std::string object,
                std::string details = "{}");
  // The operator's page of a merchant; with the grants form's refusal (`refused`, 400) and what
  // was `submitted` when given, shown next to its fields.
  web::Response merchant_view(web::Request& req, const Ctx& c, const std::string& matricule, const Error* refused,
                              const web::Fields* submitted);
  // A transaction's page; with the refund form's refusal (`refused`, rendered with its status) and
  // what was `submitted` when given.
  web::Response transaction_view(web::Request& req, const Ctx& c, const std::string& reference, const Error* refused,
                                 const web::Fields* submitted);
  // The refunds card of a collection's page: its refunds, what is refunded, and the refund form for
  // owners while something is left to refund (refund_pages.cpp).
  std::string refunds_card(const Ctx& c, const payments::Transaction& tx, const std::vector<payments::Refund>& refunds,
                           const Error* refused, const web::Fields* submitted);
  // Creates an OAuth application of a merchant and renders its secret once.
  web::Response create_app(web::Request& req, const Ctx& c, std::int64_t merchant_id, std::string_view back);
  // Queues a new delivery of the merchant's event (to one endpoint, or every subscribed one); audited.
  Status replay(const Ctx& c, std::string_view event_id, std::string_view endpoint_id);
  // Gives a user (by e-mail) a role in a merchant, or removes it ("none"); audited.
  Status put_membership(const Ctx& c, std::int64_t merchant_id, std::string_view email, std::string_view role);

  store::Db& db_;
  store::Db& lists_;  // the transaction lists' reads (options.list_reads, else db_)
  Components parts_;
  Options opts_;
  Sessions sessions_;
  std::string base_path_;  // path of dashboard_url ("" or "/dashboard")
  std::string pkce_key_;
  struct Sealer;
  std::unique_ptr<Sealer> sealer_;
};

}  // namespace sika::dashboard
