// Wallet and wallet link operations. The link API's HTTP handlers are in handlers.cpp, the
// wallet page in page.cpp, the SQL in store.cpp and the read models in queries.cpp.
#include "wallets/service.hpp"

#include <spdlog/spdlog.h>
#include <boost/json.hpp>

#include <algorithm>

#include "catalog/model.hpp"
#include "core/codes.hpp"
#include "core/crypto.hpp"
#include "core/money.hpp"
#include "core/random.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "merchant/merchant.hpp"
#include "otp/code.hpp"
#include "payments/ledger.hpp"
#include "payments/sandbox.hpp"
#include "store/outbox.hpp"
#include "wallets/store.hpp"

namespace sika::wallets {

namespace bj = boost::json;

namespace {
constexpr std::string_view kConsentPurpose = "wallet_link";

bool same_limits(const Limits& a, const Limits& b) {
  return a.per_payment == b.per_payment && a.per_period == b.per_period && a.period_ms == b.period_ms;
}

// The consent challenge's subject: the link and the limits its message states, so that a code
// sent with some limits never verifies for others.
std::string consent_subject(std::string_view reference, const Limits& l) {
  return std::string(reference) + ":" +
         hex_encode(crypto::sha256("wallet-link-limits:" + std::to_string(l.per_payment) + ":" +
                                   std::to_string(l.per_period) + ":" + std::to_string(l.period_ms)))
             .substr(0, 16);
}

Error apikey_not_found() { return not_found(bj::object{{"apikey", "no such link for this partner"}}); }

Error not_active(const Link& l) {
  std::string why = l.status == kPending ? "the user has not consented yet (link/confirm)" : "the link was unlinked";
  return conflict(bj::object{{"apikey", "is not ACTIVE: " + why}});
}

// The rules every charge, payout, top-up and withdrawal shares; `currency` is the link's (the
// wallet's home) currency, `whose` says which (Reason::link_currency or Reason::wallet_currency).
void check_transfer(const Transfer& t, std::string_view currency, Reason whose, json::FieldErrors& errors) {
  if (t.amount <= 0) errors.add("amount", Reason::positive_minor_units);
  if (!t.currency.empty() && t.currency != currency)
    errors.add("currency", reason::with(whose, "currency", std::string(currency)));
  if (!is_uuid(t.transaction_uuid)) errors.add("transaction_uuid", Reason::uuid_plain);
  if (t.description.size() > 255) errors.add("description", reason::at_most_chars(255));
}

// The payments request of a checked transfer.
payments::IntentRequest intent_of(const Transfer& t, std::string_view operation, std::string_view currency,
                                  std::string_view provider, std::string_view channel, std::string_view wallet,
                                  const bj::object& metadata) {
  payments::IntentRequest r;
  r.operation = std::string(operation);
  r.amount = t.amount;
  r.currency = std::string(currency);
  r.transaction_uuid = t.transaction_uuid;
  r.provider = std::string(provider);
  r.channel = std::string(channel);
  r.customer_wallet = std::string(wallet);
  r.description = t.description;
  r.metadata = json::dump(metadata);
  return r;
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

Result<Linked> Service::link(const Acting& partner, const LinkRequest& r) {
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

  // The limits asked for, over `base`: the defaults for a new (or relinked) link, the stored ones
  // for a PENDING link, so a link/new that names none (or some) keeps what the partner asked before.
  auto limits_over = [&r](Limits limits) -> Result<Limits> {
    if (r.per_payment) limits.per_payment = *r.per_payment;
    if (r.per_period)
      limits.per_period = *r.per_period;
    else
      limits.per_period = std::max(limits.per_period, limits.per_payment);
    if (r.period_seconds) limits.period_ms = *r.period_seconds * 1000;
    if (limits.per_payment > limits.per_period)
      return empty_data(bj::object{{"limits.per_payment", "must not exceed per_period"}});
    return limits;
  };
  SIKA_TRY(limits_over(options_.default_limits));

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
    const bool pending = existing && existing->status == kPending;
    SIKA_ASSIGN_OR_RETURN(Limits limits, limits_over(pending ? existing->limits : options_.default_limits));
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
    } else if (pending && !same_limits(existing->limits, limits)) {
      // Other limits: the code already sent (bound to the old ones) can no longer activate the
      // link, and a code stating the new ones is sent below.
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
  r.subject = consent_subject(l.reference, l.limits);
  r.destination = "+" + l.wallet.msisdn;
  r.sandbox_code = l.wallet.environment == "sandbox" && payments::sandbox_fixed_code(l.wallet.msisdn);
  r.environment = l.wallet.environment;
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

Result<Link> Service::find(const Acting& partner, std::string_view apikey) {
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

Result<Link> Service::confirm(const Acting& partner, std::string_view apikey, std::string_view code) {
  SIKA_ASSIGN_OR_RETURN(Link l, find(partner, apikey));
  if (l.status == kActive) return l;  // confirming twice changes nothing
  if (l.status != kPending) return not_active(l);
  if (code.empty()) return empty_data(bj::object{{"otp", "is required"}});
  std::optional<Reason> problem;
  if (!otp::code_from_text(code, &problem)) return field_error("otp", *problem);
  // The code of these limits only: a code sent with other limits is another challenge.
  SIKA_ASSIGN_OR_RETURN(otp::Verification v,
                        otp_.verify(kConsentPurpose, consent_subject(l.reference, l.limits), code));
  if (!v.ok()) return otp::verification_error(v, "otp");
  return activate(l, l.limits, "otp");
}

// PENDING -> ACTIVE with its event, in one unit, only while the link's limits are still
// `consented` (what the code's message or the page stated); the link as it now is.
Result<Link> Service::activate(const Link& l, const Limits& consented, std::string_view field) {
  const std::int64_t at = now();
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    Link active = l;
    active.status = std::string(kActive);
    store::Effects effects;
    effects.event = [&](store::Conn&) -> Result<store::Event> {
      return store::Event{l.partner_id, l.reference, event_payload(active, at), at};
    };
    SIKA_ASSIGN_OR_RETURN(bool activated, tables::activate(c, l.id, consented, at, effects));
    if (!activated) {
      SIKA_ASSIGN_OR_RETURN(auto now_link, tables::link_by_reference(c, l.reference));
      if (now_link && now_link->status == kPending)
        return conflict(bj::object{{std::string(field),
                                    "the link's limits changed since this consent was asked; a new code states "
                                    "the new ones"}});
      return conflict(bj::object{{std::string(field), "the link changed meanwhile"}});
    }
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

Result<Link> Service::consent_by_user(const Wallet& wallet, std::string_view reference, const Limits& shown) {
  SIKA_ASSIGN_OR_RETURN(Link l, link_of_wallet(wallet, reference));
  if (l.status == kActive) return l;
  if (l.status != kPending) return not_active(l);
  return activate(l, shown, "link");
}

Result<Link> Service::unlink(const Link& l, std::string_view by) {
  const std::int64_t at = now();
  bool changed = false;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    Link now_link = l;
    now_link.status = std::string(kUnlinked);
    now_link.unlinked_by = std::string(by);
    // The partner hears of it through its webhooks, in the unit that unlinks.
    store::Effects effects;
    effects.event = [&](store::Conn&) -> Result<store::Event> {
      return store::Event{l.partner_id, l.reference, event_payload(now_link, at), at};
    };
    SIKA_ASSIGN_OR_RETURN(changed, tables::unlink(c, l.id, by, at, effects));
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

Result<Link> Service::unlink_by_partner(const Acting& partner, std::string_view apikey) {
  SIKA_ASSIGN_OR_RETURN(Link l, find(partner, apikey));
  return unlink(l, "partner");
}

Result<std::vector<Link>> Service::partner_links(const Acting& partner, std::optional<std::int64_t> before, int limit) {
  std::vector<Link> out;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(out, tables::links_of_partner(c, partner.merchant_id, partner.environment, before, limit));
    return {};
  }));
  return out;
}

Result<Link> Service::unlink_by_reference(const Acting& partner, std::string_view reference) {
  std::optional<Link> l;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(l, tables::link_by_reference(c, reference));
    return {};
  }));
  if (!l || l->partner_id != partner.merchant_id || l->wallet.environment != partner.environment)
    return not_found(bj::object{{"reference", "no such link"}});
  return unlink(*l, "partner");
}

Result<Link> Service::unlink_by_user(const Wallet& wallet, std::string_view reference) {
  SIKA_ASSIGN_OR_RETURN(Link l, link_of_wallet(wallet, reference));
  return unlink(l, "user");
}

Result<payments::IntentRequest> Service::transfer_intent(const KeyedLink& l, const Transfer& t,
                                                         std::string_view operation) {
  json::FieldErrors errors;
  check_transfer(t, l.currency, Reason::link_currency, errors);
  SIKA_TRY(errors.status());
  SIKA_ASSIGN_OR_RETURN(const catalog::PaymentService* service, wallet_service(l.wallet.country, "apikey"));
  payments::IntentRequest r = intent_of(t, operation, l.currency, service->code, payments::kChannelWallet,
                                        l.wallet.msisdn, bj::object{{"wallet_link", l.reference}});
  r.preauthorized = operation == payments::kCollection;
  return r;
}

std::shared_ptr<const Service::KeyedLink> Service::keyed(const Link& l) {
  return std::make_shared<const KeyedLink>(KeyedLink{l.id, l.reference, l.partner_id, l.currency, l.limits, l.wallet});
}

Result<std::shared_ptr<const Service::KeyedLink>> Service::keyed_link(const Acting& partner, std::string_view apikey,
                                                                      const std::string& hash) {
  std::shared_ptr<const KeyedLink> known;
  {
    sika::MutexLock lock(keys_mutex_);
    if (auto it = keyed_links_.find(hash); it != keyed_links_.end()) known = it->second;
  }
  if (!known) {
    SIKA_ASSIGN_OR_RETURN(Link l, active_link(partner, apikey));
    known = keyed(l);
    sika::MutexLock lock(keys_mutex_);
    if (keyed_links_.size() >= kKeyedLinks) keyed_links_.clear();  // bounded; the next charges read again
    keyed_links_.emplace(hash, known);
  }
  // Another partner's link does not exist for this one (as find() answers).
  if (known->partner_id != partner.merchant_id || known->wallet.environment != partner.environment)
    return apikey_not_found();
  return known;
}

void Service::forget_key(const std::string& hash) {
  sika::MutexLock lock(keys_mutex_);
  keyed_links_.erase(hash);
}

payments::Service::ChargeCheck Service::consent_check(std::shared_ptr<const KeyedLink> l, std::string hash,
                                                      std::int64_t at) {
  using Refusal = payments::Service::Refusal;
  return [this, l = std::move(l), hash = std::move(hash), at](store::Conn& c, const payments::Transaction& tx,
                                                              bool covered) -> Result<std::optional<Refusal>> {
    if (tx.required_total > l->limits.per_payment)
      return std::optional<Refusal>(Refusal{
          "LIMIT_EXCEEDED",
          bad_request("limit_exceeded",
                      bj::object{{"amount", "the payment (" + money::format(tx.required_total, tx.currency) +
                                                ", fee included) exceeds the consent's " +
                                                money::format(l->limits.per_payment, l->currency) + " per payment"}})});
    if (!covered) return std::optional<Refusal>{};  // the payment FAILS: the budget stays whole
    SIKA_ASSIGN_OR_RETURN(auto window, tables::take_budget(c, l->id, hash, tx.required_total, at));
    if (window) return std::optional<Refusal>{};
    // Refused: the row as this unit sees it says why. A key no longer ACTIVE aborts the unit, so
    // the payment is not even recorded, as when the key is refused before it.
    SIKA_ASSIGN_OR_RETURN(auto now_link, tables::link_by_key_hash(c, hash));
    if (!now_link || now_link->id != l->id) {
      forget_key(hash);
      return apikey_not_found();
    }
    if (now_link->status != kActive) {
      forget_key(hash);
      return not_active(*now_link);
    }
    const std::int64_t left = std::max<std::int64_t>(0, now_link->limits.per_period - spent_at(*now_link, at));
    return std::optional<Refusal>(
        Refusal{"LIMIT_EXCEEDED",
                bad_request("limit_exceeded",
                            bj::object{{"amount", "the payment (" + money::format(tx.required_total, tx.currency) +
                                                      ") exceeds what the consent leaves in this period: " +
                                                      money::format(left, l->currency) + " of " +
                                                      money::format(now_link->limits.per_period, l->currency) +
                                                      " per " + period_text(now_link->limits.period_ms)}})});
  };
}

Result<Service::Charge> Service::charge_of(const Acting& partner, std::string_view apikey, const Transfer& t) {
  if (apikey.empty()) return empty_data(bj::object{{"apikey", "is required"}});
  if (apikey.size() > 128) return apikey_not_found();
  std::string hash = key_hash(apikey);
  SIKA_ASSIGN_OR_RETURN(std::shared_ptr<const KeyedLink> l, keyed_link(partner, apikey, hash));
  Charge out;
  SIKA_ASSIGN_OR_RETURN(out.request, transfer_intent(*l, t, payments::kCollection));
  out.check = consent_check(std::move(l), std::move(hash), now());
  return out;
}

Result<payments::Transaction> Service::charge(const Acting& partner, std::string_view apikey, const Transfer& t) {
  SIKA_ASSIGN_OR_RETURN(Charge c, charge_of(partner, apikey, t));
  return payments_.collect(c.request, partner,
                           payments::Service::How::preauthorized(std::move(c.check), "wallet-link"));
}

void Service::charge_async(const Acting& partner, std::string_view apikey, const Transfer& t,
                           std::function<void(Result<payments::Transaction>)> done) {
  auto c = charge_of(partner, apikey, t);
  if (!c) return done(c.take_error());
  payments_.collect_async(std::move(c->request), partner,
                          payments::Service::How::preauthorized(std::move(c->check), "wallet-link"), {},
                          std::move(done));
}

Result<payments::Transaction> Service::payout(const Acting& partner, std::string_view apikey, const Transfer& t) {
  SIKA_ASSIGN_OR_RETURN(Link l, active_link(partner, apikey));
  SIKA_ASSIGN_OR_RETURN(payments::IntentRequest request, transfer_intent(*keyed(l), t, payments::kDisbursement));
  return payments_.create_disbursement(request, partner);
}

Result<Link> Service::active_link(const Acting& partner, std::string_view apikey) {
  SIKA_ASSIGN_OR_RETURN(Link l, find(partner, apikey));
  if (l.status != kActive) return not_active(l);
  return l;
}

// A top-up or withdrawal between `wallet` and the same number's account at an operator.
Result<payments::IntentRequest> Service::mobile_money_intent(const Wallet& w, const Transfer& t,
                                                             std::string_view operation, std::string_view origin) {
  auto cat = catalog_();
  if (!cat || !cat->loaded()) return unavailable(bj::string("the catalog is not loaded"));
  json::FieldErrors errors;
  check_transfer(t, w.currency, Reason::wallet_currency, errors);
  const catalog::Country* country = cat->country(w.country);
  const std::string number = "+" + w.msisdn;
  const catalog::PaymentService* service = nullptr;
  auto serves = [&](const catalog::PaymentService& s) {
    return country && s.kind == catalog::ServiceKind::mobile_money && s.country_id == country->id && cat->usable(s) &&
           cat->normalize_msisdn(s, number, "provider").ok();
  };
  if (!t.provider.empty()) {
    const catalog::PaymentService* s = cat->service(t.provider);
    if (!s || !serves(*s))
      errors.add("provider", Problem(Reason::wallet_service_inactive, {{"country", w.country}, {"msisdn", w.msisdn}}));
    else
      service = s;
  } else {
    for (const auto& s : cat->services())
      if (serves(s)) {
        service = &s;
        break;
      }
    if (!service)
      errors.add("provider", Problem(Reason::wallet_service_none, {{"country", w.country}, {"msisdn", w.msisdn}}));
  }
  SIKA_TRY(errors.status());
  payments::IntentRequest r = intent_of(t, operation, w.currency, service->code, payments::kChannelProvider, number,
                                        bj::object{{"wallet", w.matricule}, {"origin", origin}});
  r.own_wallet = true;
  return r;
}

Result<payments::Transaction> Service::topup(const Acting& merchant, const Wallet& w, const Transfer& t,
                                             std::string_view source) {
  SIKA_ASSIGN_OR_RETURN(payments::IntentRequest request, mobile_money_intent(w, t, payments::kCollection, source));
  std::optional<std::string> code;
  if (!t.otp.empty()) code = t.otp;
  return payments_.collect(request, merchant, payments::Service::How::present(std::move(code), std::string(source)));
}

Result<payments::Transaction> Service::withdraw(const Acting& merchant, const Wallet& w, const Transfer& t,
                                                const payments::Service::CreationStep& step) {
  SIKA_ASSIGN_OR_RETURN(payments::IntentRequest request,
                        mobile_money_intent(w, t, payments::kDisbursement, step ? "wallet-link" : "wallet-page"));
  return payments_.create_disbursement(request, merchant, step);
}

Result<payments::Transaction> Service::topup_by_partner(const Acting& partner, std::string_view apikey,
                                                        const Transfer& t) {
  SIKA_ASSIGN_OR_RETURN(Link l, active_link(partner, apikey));
  return topup(partner, l.wallet, t, "wallet-link");
}

Result<payments::Transaction> Service::withdraw_by_partner(const Acting& partner, std::string_view apikey,
                                                           const Transfer& t) {
  SIKA_ASSIGN_OR_RETURN(Link l, active_link(partner, apikey));
  const std::int64_t at = now();
  const std::string hash = key_hash(apikey);
  // The consent bounds what the partner moves out of the wallet, as for a charge: the budget is
  // taken in the unit that reserves the money, so both commit or neither.
  return withdraw(partner, l.wallet, t, [&](store::Conn& c, const payments::Transaction& tx) -> Status {
    if (tx.required_total > l.limits.per_payment)
      return bad_request("limit_exceeded",
                         bj::object{{"amount", "the withdrawal (" + money::format(tx.required_total, tx.currency) +
                                                   ", fee included) exceeds the consent's " +
                                                   money::format(l.limits.per_payment, l.currency) + " per payment"}});
    SIKA_ASSIGN_OR_RETURN(auto window, tables::take_budget(c, l.id, hash, tx.required_total, at));
    if (!window)
      return bad_request("limit_exceeded",
                         bj::object{{"amount", "the withdrawal (" + money::format(tx.required_total, tx.currency) +
                                                   ") exceeds what the consent leaves in this period"}});
    return {};
  });
}

Result<payments::Transaction> Service::init(const Acting& partner, std::string_view apikey, const Transfer& t) {
  SIKA_ASSIGN_OR_RETURN(Link l, active_link(partner, apikey));
  std::shared_ptr<const KeyedLink> k = keyed(l);
  SIKA_ASSIGN_OR_RETURN(payments::IntentRequest request, transfer_intent(*k, t, payments::kCollection));
  // Within what the consent leaves now: charged at once (one unit, as a charge); beyond: the
  // user approves it by code. The fingerprint leaves the way out, so a replay finds the same
  // payment whichever it was.
  const std::int64_t at = now();
  request.preauthorized = t.amount <= l.limits.per_payment && spent_at(l, at) + t.amount <= l.limits.per_period;
  request.fingerprint =
      hex_encode(crypto::sha256("wallet-link-init\n" + l.reference + "\n" + std::to_string(t.amount) + "\n" +
                                request.currency + "\n" + t.transaction_uuid + "\n" + t.description));
  if (!request.preauthorized) return payments_.collect(request, partner, {});  // the code is on its way
  // The read only chooses; the budget, taken in the charge's unit, decides. When the consent
  // refuses there (another payment, on any node, took the budget since the read; or the fee
  // puts it over the per-payment limit) the unit is aborted, so nothing of the charge remains,
  // and the payment waits for the user's code as one beyond the consent does: never debited past
  // the consent, never refused while the user can still approve it. A key no longer ACTIVE still
  // aborts with its 404 or 409.
  bool beyond = false;
  payments::Service::ChargeCheck within = [&beyond, check = consent_check(std::move(k), key_hash(apikey), at)](
                                              store::Conn& c, const payments::Transaction& tx,
                                              bool covered) -> Result<std::optional<payments::Service::Refusal>> {
    beyond = false;  // the unit may run more than once
    SIKA_ASSIGN_OR_RETURN(auto refusal, check(c, tx, covered));
    if (!refusal) return refusal;
    beyond = true;
    return std::move(refusal->error);
  };
  auto charged =
      payments_.collect(request, partner, payments::Service::How::preauthorized(std::move(within), "wallet-link"));
  if (charged || !beyond || !charged.error().is(codes::limit_exceeded)) return charged;
  request.preauthorized = false;
  return payments_.collect(request, partner, {});
}

Result<payments::Transaction> Service::approve(const Acting& partner, std::string_view apikey,
                                               std::string_view transaction_reference, std::string_view code) {
  SIKA_ASSIGN_OR_RETURN(Link l, active_link(partner, apikey));
  auto tx = payments_.find(partner, transaction_reference, payments::kCollection);
  const std::string mark = json::dump(bj::object{{"wallet_link", l.reference}});
  // Only a payment started through this link (its metadata names the link) on this wallet.
  if (!tx || tx->metadata != mark || tx->customer_wallet != l.wallet.msisdn)
    return not_found(bj::object{{"transaction_reference", "no such payment on this link"}});
  if (tx->status != payments::TxStatus::initiated || !tx->needs_otp) return *tx;
  if (code.empty()) return empty_data(bj::object{{"otp", "is required (the code sent to the user)"}});
  return payments_.execute_collection(std::move(*tx), std::string(code), "wallet-link");
}

namespace {

// What each line of a distribution receives, and their total in `total`: the amounts given, or
// the amount divided by the lines' rates (largest remainder, as a split); 400 when a line would
// receive nothing.
Result<std::vector<std::int64_t>> line_amounts(const DistributionRequest& r, std::int64_t& total) {
  std::vector<std::int64_t> amounts;
  if (r.lines.front().rate_ppm) {
    std::vector<std::int64_t> rates;
    for (const auto& line : r.lines) rates.push_back(*line.rate_ppm);
    total = *r.amount;
    amounts = payments::allocate_split(total, rates);
  } else {
    for (const auto& line : r.lines) {
      amounts.push_back(*line.amount);
      total += *line.amount;
    }
  }
  json::FieldErrors errors;
  for (std::size_t i = 0; i < amounts.size(); ++i)
    if (amounts[i] <= 0) errors.add("distribution[" + std::to_string(i) + "].rate", Reason::line_gets_nothing);
  SIKA_TRY(errors.status());
  return amounts;
}

Problem link_in_currency(const std::string& link_currency, const std::string& currency) {
  return Problem(Reason::link_in_currency, {{"link_currency", link_currency}, {"currency", currency}});
}
Problem wallet_of_line(std::size_t line) { return Problem(Reason::wallet_of_line, {{"line", std::to_string(line)}}); }

}  // namespace

Result<Distribution> Service::distribute(const Acting& partner, const DistributionRequest& r) {
  std::optional<Distribution> done;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(done, tables::replay_distribution(c, partner.merchant_id, partner.environment,
                                                            r.transaction_uuid, r.fingerprint));
    return {};
  }));
  if (done) return std::move(*done);

  // Every line's link: the partner's (404 otherwise), in one currency.
  std::vector<Link> links;
  json::FieldErrors errors;
  for (std::size_t i = 0; i < r.lines.size(); ++i) {
    const std::string field = "distribution[" + std::to_string(i) + "].apikey";
    auto l = find(partner, r.lines[i].apikey);
    if (!l) {
      if (l.error().is(ErrorKind::not_found)) return not_found(bj::object{{field, "no such link for this partner"}});
      return l.take_error();
    }
    const std::string& currency =
        r.currency.empty() ? (links.empty() ? l->currency : links.front().currency) : r.currency;
    if (l->currency != currency) errors.add(field, link_in_currency(l->currency, currency));
    links.push_back(std::move(*l));
  }
  SIKA_TRY(errors.status());
  for (std::size_t i = 0; i < links.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (links[i].wallet.id == links[j].wallet.id)
        errors.add("distribution[" + std::to_string(i) + "].apikey", wallet_of_line(j));
  SIKA_TRY(errors.status());

  Distribution d;
  d.reference = random_reference("WDS-", 16);
  d.transaction_uuid = r.transaction_uuid;
  d.currency = links.front().currency;
  d.description = r.description;
  d.created_at = now();
  SIKA_ASSIGN_OR_RETURN(std::vector<std::int64_t> amounts, line_amounts(r, d.amount));

  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    done.reset();
    d.lines.clear();
    SIKA_ASSIGN_OR_RETURN(auto keyed, tables::insert_or_replay_distribution(c, partner.merchant_id, partner.environment,
                                                                            d, r.fingerprint));
    if (!keyed.id) {  // a concurrent call with the same transaction_uuid made it first
      done = std::move(keyed.stored->first);
      return {};
    }
    d.id = *keyed.id;
    payments::ledger::Posting posting;
    posting.kind = std::string(kDistributionJournal);
    posting.environment = partner.environment;
    posting.currency = d.currency;
    posting.memo = "distribution " + d.reference + " by " + partner.merchant;
    posting.legs.push_back(
        {payments::ledger::merchant_available(partner.merchant_id, partner.environment, d.currency), d.amount, 0});
    for (std::size_t i = 0; i < links.size(); ++i) {
      // The link as it is in this unit: an unlink that committed meanwhile refuses the whole.
      SIKA_ASSIGN_OR_RETURN(auto now_link, tables::link_by_reference(c, links[i].reference));
      if (!now_link || now_link->status != kActive)
        return conflict(bj::object{{"distribution[" + std::to_string(i) + "].apikey", "is not an ACTIVE link"}});
      SIKA_TRY(tables::insert_distribution_line(c, d.id, static_cast<int>(i), links[i].id, amounts[i]));
      d.lines.push_back({static_cast<int>(i), links[i].reference, links[i].wallet.matricule, amounts[i]});
      posting.legs.push_back(
          {payments::ledger::customer_wallet(links[i].wallet.msisdn, partner.environment, d.currency), 0, amounts[i]});
    }
    SIKA_ASSIGN_OR_RETURN(std::int64_t available, payments::ledger::balance(c, posting.legs.front().account));
    if (available < d.amount)
      return bad_request("insufficient_funds", bj::object{{"amount", "the available balance does not cover " +
                                                                         money::format(d.amount, d.currency)}});
    payments::ledger::Learned learned;
    SIKA_TRY(payments::ledger::post(c, posting, d.created_at, nullptr, learned));
    SIKA_TRY(
        store::append_event(c, partner.merchant_id, "wallet_link.distribution", d.reference, to_json(d), d.created_at));
    return {};
  }));
  if (done) return std::move(*done);
  return d;
}

Result<std::optional<Acting>> Service::page_merchant() {
  if (options_.page_merchant.empty()) return std::optional<Acting>{};
  std::optional<merchant::Merchant> m;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(m, merchant::find_by_matricule(c, options_.page_merchant));
    return {};
  }));
  if (!m) return std::optional<Acting>{};
  return payments::acting_merchant(db_, m->id, options_.page_environment, 1, "wallet-page");
}

Result<Wallet> Service::wallet_of_phone(std::string_view phone, std::string_view email) {
  auto cat = catalog_();
  if (!cat || !cat->loaded()) return unavailable(bj::string("the catalog is not loaded"));
  std::string number;
  for (char ch : phone)
    if (ch >= '0' && ch <= '9') number.push_back(ch);
  // The served country whose dialling code starts the number, and the number as its wallet
  // service writes it.
  for (const auto& c : cat->countries()) {
    if (!c.active || c.dialling_digits().empty() || !number.starts_with(c.dialling_digits())) continue;
    auto service = wallet_service(c.code, "phone");
    if (!service) continue;
    auto msisdn = cat->normalize_msisdn(**service, "+" + number, "phone");
    if (!msisdn) continue;
    Wallet fresh{
        0,    random_reference("WAL-", 12), options_.page_environment, *msisdn, c.code, c.currency, std::string(email),
        now()};
    Wallet w;
    SIKA_TRY(db_.write([&](store::Conn& conn) -> Status {
      SIKA_ASSIGN_OR_RETURN(w, tables::find_or_create_wallet(conn, fresh));
      return {};
    }));
    return w;
  }
  return not_found(bj::object{{"phone", "no wallet service serves this number"}});
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
