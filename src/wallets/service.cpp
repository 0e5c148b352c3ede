// Wallet and wallet link operations. The link API's HTTP handlers are in handlers.cpp, the
// wallet page in page.cpp, the SQL in store.cpp and the read models in queries.cpp.
#include "wallets/service.hpp"

#include <spdlog/spdlog.h>
#include <boost/json.hpp>

#include <algorithm>

#include "catalog/model.hpp"
#include "core/crypto.hpp"
#include "core/money.hpp"
#include "core/random.hpp"
#include "core/time.hpp"
#include "merchant/merchant.hpp"
#include "payments/sandbox.hpp"
#include "store/outbox.hpp"
#include "wallets/store.hpp"

namespace sika::wallets {

namespace bj = boost::json;

namespace {
constexpr std::string_view kConsentPurpose = "wallet_link";

Error apikey_not_found() { return not_found(bj::object{{"apikey", "no such link for this partner"}}); }

Error not_active(const Link& l) {
  std::string why = l.status == kPending ? "the user has not consented yet (link/confirm)" : "the link was unlinked";
  return conflict(bj::object{{"apikey", "is not ACTIVE: " + why}});
}

bj::object event_payload(const Link& l, std::int64_t at) {
  return bj::object{{"link_reference", l.reference},
                    {"matricule", l.wallet.matricule},
                    {"status", l.status},
                    {"unlinked_by", l.unlinked_by.empty() ? bj::value(nullptr) : bj::value(l.unlinked_by)},
                    {"environment", l.wallet.environment},
                    {"at", iso8601(at)}};
}
}  // namespace

Service::Service(store::Db& db, payments::Service& payments, payments::CatalogSnapshot catalog, otp::Service& otp,
                 notify::Notifier& notifier, Options options)
    : db_(db),
      payments_(payments),
      catalog_(std::move(catalog)),
      otp_(otp),
      notifier_(notifier),
      options_(std::move(options)) {}

std::int64_t Service::now() const { return options_.clock ? options_.clock() : now_ms(); }

// The key is a MAC of the link's reference and its random nonce under the server secret: link/new
// answers the same key on every call without storing it, and a new nonce (relinking) makes a new one.
std::string Service::link_key(std::string_view reference, std::string_view nonce) const {
  return "wk_" + base64url_encode(crypto::hmac_sha256(
                     options_.secret, "wallet-link-key:v1:" + std::string(reference) + ":" + std::string(nonce)));
}

std::string Service::key_hash(std::string_view key) const { return crypto::secret_hash(options_.pepper, key); }

Result<const catalog::PaymentService*> Service::wallet_service(std::string_view country, std::string_view field) const {
  auto cat = catalog_();
  if (!cat || !cat->loaded()) return unavailable(bj::string("the catalog is not loaded"));
  const catalog::Country* c = cat->country(country);
  if (c)
    for (const auto& s : cat->services())
      if (s.kind == catalog::ServiceKind::wallet && s.country_id == c->id && cat->usable(s)) return &s;
  return empty_data(bj::object{{field, "there is no Sika wallet service in this country"}});
}

Result<Linked> Service::link(const web::Principal& partner, const LinkRequest& r) {
  auto cat = catalog_();
  if (!cat || !cat->loaded()) return unavailable(bj::string("the catalog is not loaded"));
  // The country of the dialling code, its wallet service, and the number in international digits.
  const catalog::Country* country = nullptr;
  for (const auto& c : cat->countries())
    if (c.dialling_code == r.phone_country && c.active) country = &c;
  if (!country) return empty_data(bj::object{{"phoneCountry", "is not the dialling code of a served country"}});
  SIKA_ASSIGN_OR_RETURN(const catalog::PaymentService* service, wallet_service(country->code, "phoneCountry"));
  auto msisdn = cat->normalize_msisdn(*service, r.phone_country + r.phone, "phone");
  if (!msisdn && r.phone.starts_with(country->dialling_digits()))
    msisdn = cat->normalize_msisdn(*service, "+" + r.phone, "phone");
  if (!msisdn) return msisdn.take_error();

  Limits limits = options_.default_limits;
  if (r.per_payment) limits.per_payment = *r.per_payment;
  if (r.per_period)
    limits.per_period = *r.per_period;
  else
    limits.per_period = std::max(limits.per_period, limits.per_payment);
  if (r.period_seconds) limits.period_ms = *r.period_seconds * 1000;
  if (limits.per_payment > limits.per_period)
    return empty_data(bj::object{{"limits.per_payment", "must not exceed per_period"}});

  const std::int64_t at = now();
  Wallet fresh{0, random_reference("WAL-", 12), partner.environment, *msisdn, country->code, country->currency, r.email,
               at};
  const std::string reference = random_reference("WLK-", 16);
  const std::string nonce = random_token(18);
  Linked out;
  std::string stored_nonce;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(Wallet wallet, tables::find_or_create_wallet(c, fresh));
    SIKA_ASSIGN_OR_RETURN(auto existing, tables::link_of(c, partner.merchant_id, wallet.id));
    if (!existing) {
      Link l;
      l.reference = reference;
      l.partner_id = partner.merchant_id;
      l.currency = wallet.currency;
      l.limits = limits;
      l.created_at = l.updated_at = at;
      l.wallet = wallet;
      SIKA_TRY(tables::insert_link(c, l, key_hash(link_key(reference, nonce)), nonce));
    } else if (existing->status == kUnlinked) {
      // Linking again after an unlink: a new key and a new consent.
      SIKA_TRY(tables::relink(c, existing->id, limits, key_hash(link_key(existing->reference, nonce)), nonce, at));
    } else if (existing->status == kPending) {
      SIKA_TRY(tables::set_pending_limits(c, existing->id, limits, at));
    }
    SIKA_ASSIGN_OR_RETURN(auto now_link, tables::link_of(c, partner.merchant_id, wallet.id));
    if (!now_link) return internal_error(bj::string("the link vanished in its own unit"));
    out.link = std::move(*now_link);
    SIKA_ASSIGN_OR_RETURN(stored_nonce, tables::key_nonce(c, out.link.id));
    return {};
  }));
  out.apikey = link_key(out.link.reference, stored_nonce);
  if (out.link.status == kPending) {
    auto sent = send_consent_code(out.link, out.retry_after);
    if (sent) {
      out.consent_sent = true;
    } else if (sent.error().is(ErrorKind::rate_limited)) {
      out.consent_note = "a code was sent recently; ask again after retry_after seconds";
    } else {
      return sent.take_error();
    }
  }
  return out;
}

// The consent code: sent to the wallet's phone, stating the partner and the limits the user
// approves (the same text the wallet page shows).
Result<std::string> Service::send_consent_code(const Link& l, std::int64_t& retry_after) {
  otp::IssueRequest r;
  r.purpose = std::string(kConsentPurpose);
  r.subject = l.reference;
  r.destination = "+" + l.wallet.msisdn;
  r.sandbox_code = l.wallet.environment == "sandbox" && payments::sandbox_fixed_code(l.wallet.msisdn);
  r.context = l.partner_name.substr(0, 80) + " : max " + money::format(l.limits.per_payment, l.currency) + " / " +
              "paiement, " + money::format(l.limits.per_period, l.currency) + " / " + period_text(l.limits.period_ms) +
              ", " + l.reference;
  auto issued = otp_.issue(r);
  if (!issued) {
    const bj::value& d = issued.error().details;
    if (d.is_object())
      if (const bj::value* s = d.as_object().if_contains("retry_after"); s && s->is_int64())
        retry_after = s->as_int64();
    return issued.take_error();
  }
  return issued->challenge_id;
}

Result<Link> Service::find(const web::Principal& partner, std::string_view apikey) {
  if (apikey.empty()) return empty_data(bj::object{{"apikey", "is required"}});
  if (apikey.size() > 128) return apikey_not_found();
  std::optional<Link> link;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(link, tables::link_by_key_hash(c, key_hash(apikey)));
    return {};
  }));
  // Another partner's link does not exist for this one.
  if (!link || link->partner_id != partner.merchant_id || link->wallet.environment != partner.environment)
    return apikey_not_found();
  return std::move(*link);
}

Result<Link> Service::confirm(const web::Principal& partner, std::string_view apikey, std::string_view code) {
  SIKA_ASSIGN_OR_RETURN(Link l, find(partner, apikey));
  if (l.status == kActive) return l;  // confirming twice changes nothing
  if (l.status != kPending) return not_active(l);
  if (code.empty()) return empty_data(bj::object{{"otp", "is required"}});
  SIKA_ASSIGN_OR_RETURN(otp::Verification v, otp_.verify(kConsentPurpose, l.reference, code));
  if (!v.ok()) return otp::verification_error(v, "otp");
  return activate(l);
}

// PENDING -> ACTIVE with its event, in one unit; the link as it now is.
Result<Link> Service::activate(const Link& l) {
  const std::int64_t at = now();
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(bool activated, tables::activate(c, l.id, at));
    if (!activated) return conflict(bj::object{{"apikey", "the link changed meanwhile"}});
    Link now_link = l;
    now_link.status = std::string(kActive);
    SIKA_TRY(
        store::append_event(c, l.partner_id, "wallet_link.activated", l.reference, event_payload(now_link, at), at));
    return {};
  }));
  return link_of_wallet(l.wallet, l.reference);
}

// A link of `wallet` by its reference; another wallet's is 404.
Result<Link> Service::link_of_wallet(const Wallet& wallet, std::string_view reference) {
  std::optional<Link> l;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(l, tables::link_by_reference(c, reference));
    return {};
  }));
  if (!l || l->wallet.id != wallet.id) return not_found(bj::object{{"link", "no such link on this wallet"}});
  return std::move(*l);
}

Result<Link> Service::consent_by_user(const Wallet& wallet, std::string_view reference) {
  SIKA_ASSIGN_OR_RETURN(Link l, link_of_wallet(wallet, reference));
  if (l.status == kActive) return l;
  if (l.status != kPending) return not_active(l);
  return activate(l);
}

Result<Link> Service::unlink(const Link& l, std::string_view by) {
  const std::int64_t at = now();
  bool changed = false;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(changed, tables::unlink(c, l.id, by, at));
    if (!changed) return {};
    Link now_link = l;
    now_link.status = std::string(kUnlinked);
    now_link.unlinked_by = std::string(by);
    // The partner hears of it through its webhooks, in the unit that unlinks.
    SIKA_TRY(
        store::append_event(c, l.partner_id, "wallet_link.unlinked", l.reference, event_payload(now_link, at), at));
    return {};
  }));
  std::optional<Link> fresh;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(fresh, tables::link_by_reference(c, l.reference));
    return {};
  }));
  if (!fresh) return apikey_not_found();
  if (changed) {
    // The user hears of it by SMS (after the commit: a transport may do network I/O).
    std::string text = "Sika : votre portefeuille " + fresh->wallet.matricule + " n'est plus lié à " +
                       fresh->partner_name + " (" + fresh->reference + ").";
    if (Status st = notifier_.send_sms("+" + fresh->wallet.msisdn, text, "wallet_link:unlinked"); !st)
      spdlog::warn("unlink notice for {} not sent: {}", fresh->reference, st.error().code);
  }
  return std::move(*fresh);
}

Result<Link> Service::unlink_by_partner(const web::Principal& partner, std::string_view apikey) {
  SIKA_ASSIGN_OR_RETURN(Link l, find(partner, apikey));
  return unlink(l, "partner");
}

Result<Link> Service::unlink_by_user(const Wallet& wallet, std::string_view reference) {
  SIKA_ASSIGN_OR_RETURN(Link l, link_of_wallet(wallet, reference));
  return unlink(l, "user");
}

Result<payments::IntentRequest> Service::transfer_intent(const Link& l, const Transfer& t, std::string_view operation) {
  json::FieldErrors errors;
  if (t.amount <= 0) errors.add("amount", "must be a positive integer (minor units)");
  if (!t.currency.empty() && t.currency != l.currency)
    errors.add("currency", "must be the link's currency " + l.currency);
  if (!is_uuid(t.transaction_uuid)) errors.add("transaction_uuid", "must be a UUID");
  if (t.description.size() > 255) errors.add("description", "must be at most 255 characters");
  SIKA_TRY(errors.status());
  SIKA_ASSIGN_OR_RETURN(const catalog::PaymentService* service, wallet_service(l.wallet.country, "apikey"));
  payments::IntentRequest r;
  r.operation = std::string(operation);
  r.amount = t.amount;
  r.currency = l.currency;
  r.transaction_uuid = t.transaction_uuid;
  r.provider = service->code;
  r.channel = std::string(payments::kChannelWallet);
  r.customer_wallet = l.wallet.msisdn;
  r.description = t.description;
  r.metadata = json::dump(bj::object{{"wallet_link", l.reference}});
  r.preauthorized = operation == payments::kCollection;
  return r;
}

Result<payments::Transaction> Service::charge(const web::Principal& partner, std::string_view apikey,
                                              const Transfer& t) {
  SIKA_ASSIGN_OR_RETURN(Link l, find(partner, apikey));
  if (l.status != kActive) return not_active(l);
  SIKA_ASSIGN_OR_RETURN(payments::IntentRequest request, transfer_intent(l, t, payments::kCollection));
  SIKA_ASSIGN_OR_RETURN(payments::Transaction tx, payments_.create_collection(request, partner));
  if (tx.status != payments::TxStatus::initiated) return tx;  // a replay of a charge already made
  const std::int64_t at = now();
  auto refuse = [&](Error why) -> Result<payments::Transaction> {
    (void)payments_.cancel_collection(tx, "wallet-link", "LIMIT_EXCEEDED");
    return why;
  };
  if (tx.required_total > l.limits.per_payment)
    return refuse(
        bad_request("limit_exceeded",
                    bj::object{{"amount", "the payment (" + money::format(tx.required_total, tx.currency) +
                                              ", fee included) exceeds the consent's " +
                                              money::format(l.limits.per_payment, l.currency) + " per payment"}}));
  // The consent's budget is taken in the debit's own unit: both commit, or neither.
  bool over = false;
  auto done = payments_.execute_preauthorized(
      tx,
      [&](store::Conn& c) -> Status {
        over = false;
        SIKA_ASSIGN_OR_RETURN(auto window, tables::take_budget(c, l.id, tx.required_total, at));
        if (window) return {};
        over = true;
        return conflict(bj::object{{"apikey", "the consent's budget is spent"}});
      },
      "wallet-link");
  if (done || !over) return done;
  SIKA_ASSIGN_OR_RETURN(Link fresh, find(partner, apikey));
  if (fresh.status != kActive) return refuse(not_active(fresh));
  const std::int64_t left = std::max<std::int64_t>(0, fresh.limits.per_period - spent_at(fresh, at));
  return refuse(bad_request(
      "limit_exceeded",
      bj::object{{"amount", "the payment (" + money::format(tx.required_total, tx.currency) +
                                ") exceeds what the consent leaves in this period: " + money::format(left, l.currency) +
                                " of " + money::format(l.limits.per_period, l.currency) + " per " +
                                period_text(l.limits.period_ms)}}));
}

Result<payments::Transaction> Service::payout(const web::Principal& partner, std::string_view apikey,
                                              const Transfer& t) {
  SIKA_ASSIGN_OR_RETURN(Link l, find(partner, apikey));
  if (l.status != kActive) return not_active(l);
  SIKA_ASSIGN_OR_RETURN(payments::IntentRequest request, transfer_intent(l, t, payments::kDisbursement));
  return payments_.create_disbursement(request, partner);
}

Result<queries::History> Service::history(const Wallet& wallet, std::optional<std::int64_t> before, int limit) {
  queries::History h;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(h, queries::history(c, wallet, before, limit));
    return {};
  }));
  return h;
}

Result<std::vector<queries::Balance>> Service::balances(const Wallet& wallet) {
  std::vector<queries::Balance> b;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(b, queries::balances(c, wallet));
    return {};
  }));
  return b;
}

Result<std::vector<Link>> Service::links(const Wallet& wallet) {
  std::vector<Link> out;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(out, tables::links_of_wallet(c, wallet.id));
    return {};
  }));
  return out;
}

Result<std::optional<Wallet>> Service::wallet_of(std::string_view environment, std::string_view msisdn) {
  std::optional<Wallet> w;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(w, tables::find_wallet(c, environment, msisdn));
    return {};
  }));
  return w;
}

}  // namespace sika::wallets
