#pragma once
// Payment links (docs/payment-links.md): merchants create, list, change, disable and enable
// links; anyone pays one by its short code. The guarantees:
//  - a payment is an ordinary collection of the link's merchant, created with
//    payments::Service::collect for a present payer (created and pushed in the same call),
//    so status, ledger, webhooks and settlement are those of any collection;
//  - a payer's attempt is idempotent on (link, transaction_uuid): the same attempt gives the
//    same transaction, never a second one;
//  - max_usage is never exceeded: a use is taken, by a conditional UPDATE of the link's row, in
//    the write unit that records the attempt and before the payer's phone is asked for money;
//    it is given back when the collection cannot be created or ends without completing, so the
//    payers who lose a race on a used-up link are refused before anything is taken from them;
//  - another merchant's link is not found (404).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/acting.hpp"
#include "core/result.hpp"
#include "limits/limiter.hpp"
#include "limits/local.hpp"
#include "links/model.hpp"
#include "links/store.hpp"
#include "merchant/merchant.hpp"
#include "otp/service.hpp"
#include "payments/model.hpp"
#include "payments/service.hpp"
#include "store/db.hpp"
#include "web/message.hpp"

namespace sika::links {

struct Options {
  std::string page_base_url;  // {checkout_url}: a link's public page is {page_base_url}/pay/{short_code}
  // Told to payers of a service that needs a code but whose catalog entry says nothing of how to get it.
  std::string otp_helper = "Get a one-time code from your operator's mobile-money menu, then enter it here.";
  // A use reserved by an attempt that never got its collection (the process stopped between
  // the two units) is given back after this long.
  std::int64_t stale_reservation_ms = 10 * 60 * 1000;
  std::function<std::int64_t()> clock;  // epoch ms; now_ms() when empty
  // The one-time codes of WALLET payments, sent to the wallet's phone before anything is
  // created (docs/payment-links.md, "Paying from a Sika wallet"); none: WALLET payments are 503.
  otp::Service* otp = nullptr;
  std::string wallet_otp_helper = "A one-time code was sent by SMS to the wallet's phone: enter it to pay.";
  // Rate limits of paying (the API route and the page's form), shared by every node; no
  // limiter: none. Payments per client address, and per link, per minute.
  limits::Limiter* limiter = nullptr;
  limits::Policy per_address{.limit = 30, .window_ms = 60'000, .name = "links_pay_per_address"};
  limits::Policy per_link{.limit = 600, .window_ms = 60'000, .name = "links_pay_per_link"};
  // Views of the public pages (the form and the status page) per client address, counted by
  // each node in memory: a view writes nothing, so a database write per view would cost more
  // than the page. The status page refreshes every few seconds while a payment runs.
  limits::Policy page_views_per_address{.limit = 120, .window_ms = 60'000, .name = "links_page_views_per_address"};
};

class Service {
 public:
  Service(store::Db& db, payments::Service& payments, payments::CatalogSnapshot catalog, Options options);

  // --- HTTP handlers (gateway) ---
  Result<web::Response> create(web::Request& req);   // POST /payment-links
  Result<web::Response> list(web::Request& req);     // GET /payment-links?status=&from=&to=&page=&limit=
  Result<web::Response> show(web::Request& req);     // GET /payment-links/{reference}
  Result<web::Response> update(web::Request& req);   // PATCH /payment-links/{reference}
  Result<web::Response> disable(web::Request& req);  // POST /payment-links/{reference}/disable
  Result<web::Response> enable(web::Request& req);   // POST /payment-links/{reference}/enable
  Result<web::Response> pay(web::Request& req);      // POST /pay/{shortCode}/pay (no token)
  // GET /payment-links/{reference}/qr.svg and /qr.png: the QR code of payment_url (?size=2..32
  // pixels per module, default 8).
  Result<web::Response> qr_svg(web::Request& req);
  Result<web::Response> qr_png(web::Request& req);
  // The public page (checkout surface, page.cpp): GET /pay/{shortCode}?lang=, its form
  // POST /pay/{shortCode}, and GET /pay/{shortCode}/status?t={transaction_uuid}: the payment's
  // status, refreshing until it ends, then its receipt (the payer's uuid is the secret).
  web::Response page(web::Request& req);
  web::Response page_submit(web::Request& req);
  web::Response status_page(web::Request& req);

  // --- operations ---
  Result<Link> create_link(const Acting& merchant, const NewLink& request, json::FieldErrors errors = {});
  Result<Link> find(const Acting& merchant, std::string_view reference);
  Result<std::pair<std::vector<Link>, std::int64_t>> list_links(const Acting& merchant,
                                                                const tables::ListFilter& filter);
  Result<Link> update_link(const Acting& merchant, std::string_view reference, const LinkUpdate& update);
  Result<Link> set_status(const Acting& merchant, std::string_view reference, std::string_view status);
  // The link of a short code, whoever owns it (404 naming shortCode when there is none).
  Result<Link> by_code(std::string_view short_code);
  // Pays a link: the collection, created and pushed to the payer's phone (guarantees above).
  Result<payments::Transaction> pay_link(std::string_view short_code, const PayRequest& request);

  std::string payment_url(const Link& link) const;
  std::int64_t now() const;

 private:
  // The merchant a link's payments are collected for, as payments::Service::collect takes it.
  Result<Acting> merchant_of(const Link& link);
  // The helper text of the OTP step when paying `link` with `provider` needs a code the
  // request does not bring; nullopt when no step is needed.
  // Counts a payment submission against the address and link limits; 429 rate_limited when over.
  Status throttle(const web::Request& req, std::string_view short_code);
  std::optional<std::string> otp_step(const Link& link, std::string_view provider, bool has_otp) const;
  // The uuid of the collection of (link, payer uuid): distinct per link, so a payer's uuid
  // never meets the merchant's own intents.
  static std::string collection_uuid(const Link& link, std::string_view payer_uuid);
  // Creates and pushes the collection of an attempt that holds a use; gives the use back when
  // the collection cannot be created or ends without completing.
  // Creates (or replays) the payer's collection of `link`, its use taken in the creating unit,
  // and pushes it; gives the use back when the payment ends at once without completing.
  Result<payments::Transaction> collect(const Link& link, std::string_view payer_uuid,
                                        const payments::IntentRequest& intent, const Acting& merchant,
                                        std::optional<std::string> otp);
  Status release(const Link& link, std::int64_t attempt_id);
  // Gives back, in their own unit, the uses held by attempts that ended without completing (or
  // stale past stale_reservation_ms at `at`); true when any was given back, so that a payer
  // refused link_used_up may ask for a use once more.
  Result<bool> release_ended_uses(const Link& link, std::int64_t at);
  // A payment from the payer's Sika wallet: without `otp`, a code bound to this payment (link,
  // payer uuid, amount, wallet) is sent and 400 otp_required answered, with nothing reserved or
  // created; with it, the code is checked, then the collection, its use and the debit commit in
  // one unit (payments::Service::collect, a preauthorized payer).
  Result<payments::Transaction> pay_from_wallet(const Link& link, const PayRequest& p, payments::IntentRequest intent,
                                                const Acting& merchant, const payments::IntentPlan& plan);
  Result<web::Response> qr_image(web::Request& req, bool png);
  struct Form;
  // The 429 page when the client has viewed too many pages; nullopt when it may see one more.
  std::optional<web::Response> page_throttled(const web::Request& req, i18n::Locale locale);
  web::Response render_form(const web::Request& req, i18n::Locale locale, const Form& form, int status);
  // The link's merchant: the page shows its display name only.
  Result<merchant::Merchant> shop_of(const Link& link);
  // The (service code, name) pairs a payer may choose: the link's provider, or the usable
  // mobile-money services collecting in the link's currency in the merchant's `countries`.
  std::vector<std::pair<std::string, std::string>> operators(const Link& link,
                                                             const std::vector<std::string>& countries) const;

  store::Db& db_;
  payments::Service& payments_;
  payments::CatalogSnapshot catalog_;
  Options options_;
  limits::LocalLimiter page_views_;
};

}  // namespace sika::links
