// Wallet mandates of subscriptions: the merchant asks for one, the customer approves it with a
// code sent to the wallet's phone or revokes it, on a page under the checkout surface
// ({checkout_url}/mandate/{token}, fr/en, plain forms, no JavaScript). The page's link carries a
// random secret; only its SHA-256 is stored, and the lookup is by that hash.
#include <spdlog/spdlog.h>

#include <boost/json.hpp>

#include "billing/service.hpp"
#include "core/crypto.hpp"
#include "core/money.hpp"
#include "core/random.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "otp/code.hpp"
#include "payments/intent.hpp"
#include "payments/sandbox.hpp"
#include "store/outbox.hpp"
#include "web/acting.hpp"
#include "web/envelope.hpp"
#include "web/html.hpp"
#include "web/texts.hpp"

namespace sika::billing {

namespace bj = boost::json;
using web::html::escape;

namespace {

constexpr std::string_view kMandatePurpose = "billing_mandate";

std::string token_hash(std::string_view token) { return hex_encode(crypto::sha256(token)); }

Error mandate_not_found() { return not_found(bj::object{{"token", "no such mandate"}}); }

bool plausible_token(std::string_view token) {
  return token.size() >= 32 && token.size() <= 64 &&
         token.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") ==
             std::string_view::npos;
}

}  // namespace

Result<std::optional<Mandate>> Service::mandate_of(const Subscription& s) {
  std::optional<Mandate> m;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(m, tables::mandate_of(c, s.id));
    return {};
  }));
  return m;
}

store::Effects Service::mandate_effects(std::int64_t subscription_id, std::int64_t at) {
  store::Effects effects;
  effects.event = [subscription_id, at](store::Conn& c) -> Result<store::Event> {
    SIKA_ASSIGN_OR_RETURN(auto s, tables::by_id(c, subscription_id));
    SIKA_ASSIGN_OR_RETURN(auto m, tables::mandate_of(c, subscription_id));
    if (!s || !m) return internal_error(bj::string("mandate vanished inside its unit"));
    return store::Event{s->merchant_id, s->reference, mandate_event_payload(*s, *m), at};
  };
  return effects;
}

Result<std::pair<Mandate, std::string>> Service::request_mandate(const Acting& merchant, std::string_view reference,
                                                                 const MandateRequest& request) {
  SIKA_ASSIGN_OR_RETURN(Subscription s, find(merchant, reference));
  if (!options_.otp || options_.checkout_url.empty())
    return unavailable(bj::object{{"mandate", "wallet mandates are not enabled on this platform"}});
  if (s.status != kActive)
    return conflict(bj::object{{"status", "a " + s.status + " subscription cannot take a mandate"}});
  json::FieldErrors errors;
  std::optional<std::string> wallet = request.wallet   ? request.wallet
                                      : s.payer_wallet ? s.payer_wallet
                                                       : s.customer_phone;
  if (!wallet) errors.add("wallet_phone_number", Reason::no_phone_on_file);
  const std::int64_t cap = request.cap.value_or(s.amount);
  if (cap < s.amount)
    errors.add("cap", Problem(Reason::cap_at_least_amount, {{"amount", money::format(s.amount, s.currency)}}));
  SIKA_TRY(errors.status());

  const std::int64_t at = now();
  Mandate m;
  m.reference = random_reference("MDT-", 16);
  m.subscription_id = s.id;
  m.wallet = *wallet;
  m.cap = cap;
  m.currency = s.currency;
  m.frequency = s.frequency;
  m.status = std::string(kMandatePending);
  m.created_at = m.updated_at = at;
  const std::string token = random_token(32);
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto id, tables::insert_mandate(c, m, token_hash(token)));
    if (!id) return conflict(bj::object{{"mandate", "this subscription has a pending or active mandate already"}});
    m.id = *id;
    return {};
  }));
  std::string url = options_.checkout_url + "/mandate/" + token;
  if (notifier_) {
    auto st = notifier_->send_sms(m.wallet,
                                  "Approve automatic payments of " + money::format(s.amount, s.currency) + " (" +
                                      std::string(to_string(s.frequency)) + ", at most " +
                                      money::format(cap, s.currency) + " per cycle) from your Sika wallet for " +
                                      (s.description.empty() ? s.reference : s.description) +
                                      ", or revoke them at any time: " + url,
                                  "billing:mandate");
    if (!st) spdlog::warn("billing: mandate {} not sent: {}", m.reference, st.error().code);
  }
  return std::pair{std::move(m), std::move(url)};
}

Result<Mandate> Service::mandate_by_token(std::string_view token) {
  if (!plausible_token(token)) return mandate_not_found();
  std::optional<Mandate> m;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(m, tables::mandate_by_token(c, token_hash(token)));
    return {};
  }));
  if (!m) return mandate_not_found();
  return std::move(*m);
}

Status Service::send_mandate_code(std::string_view token, i18n::Locale locale) {
  SIKA_ASSIGN_OR_RETURN(Mandate m, mandate_by_token(token));
  if (m.status != kMandatePending) return conflict(bj::object{{"status", "the mandate is " + m.status}});
  std::optional<Subscription> s;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(s, tables::by_id(c, m.subscription_id));
    return {};
  }));
  if (!s) return mandate_not_found();
  otp::IssueRequest r;
  // The sandbox's magic and demo numbers get the fixed code, as for every other code.
  r.sandbox_code = s->environment == "sandbox" && payments::sandbox_fixed_code(m.wallet);
  r.environment = s->environment;
  r.purpose = std::string(kMandatePurpose);
  r.subject = m.reference;
  r.destination = m.wallet;
  r.channel = notify::Channel::sms;
  r.locale = locale;
  r.context = money::format(m.cap, m.currency) + " / " + std::string(to_string(m.frequency)) + ", " + m.reference;
  SIKA_TRY(options_.otp->issue(r));
  return {};
}

Result<Mandate> Service::approve_mandate(std::string_view token, std::string_view code) {
  SIKA_ASSIGN_OR_RETURN(Mandate m, mandate_by_token(token));
  if (m.status != kMandatePending) return conflict(bj::object{{"status", "the mandate is " + m.status}});
  if (code.empty()) return empty_data(bj::object{{"otp", "is required"}});
  std::optional<Reason> problem;
  if (!otp::code_from_text(code, &problem)) return field_error("otp", *problem);
  SIKA_ASSIGN_OR_RETURN(otp::Verification v, options_.otp->verify(kMandatePurpose, m.reference, code));
  if (!v.ok()) return otp::verification_error(v, "otp");
  const std::int64_t at = now();
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(bool approved, tables::approve_mandate(c, m.id, at, mandate_effects(m.subscription_id, at)));
    if (!approved) return conflict(bj::object{{"status", "the mandate changed meanwhile"}});
    return {};
  }));
  return mandate_by_token(token);
}

Result<Mandate> Service::revoke_mandate(std::string_view token) {
  SIKA_ASSIGN_OR_RETURN(Mandate m, mandate_by_token(token));
  // This page's mandate only: an older page's secret never reaches a newer mandate.
  const std::int64_t at = now();
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(bool revoked,
                          tables::revoke_mandate_id(c, m.id, "customer", at, mandate_effects(m.subscription_id, at)));
    if (!revoked) return conflict(bj::object{{"mandate", "there is no mandate to revoke"}});
    return {};
  }));
  return mandate_by_token(token);
}

Result<Mandate> Service::revoke_mandate_of(std::int64_t subscription_id, std::string_view by) {
  std::optional<Mandate> after;
  const std::int64_t at = now();
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(bool revoked,
                          tables::revoke_mandate(c, subscription_id, by, at, mandate_effects(subscription_id, at)));
    if (!revoked) return conflict(bj::object{{"mandate", "there is no mandate to revoke"}});
    SIKA_ASSIGN_OR_RETURN(after, tables::mandate_of(c, subscription_id));
    return {};
  }));
  if (!after) return internal_error(bj::string("mandate vanished inside its unit"));
  return std::move(*after);
}

Result<web::Response> Service::mandate(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  bj::object body;
  if (!req.body.empty()) {
    SIKA_ASSIGN_OR_RETURN(auto parsed, web::body_object(req));
    body = std::move(parsed);
  }
  json::FieldErrors errors;
  payments::refuse_unknown_fields(body, {"wallet_phone_number", "cap"}, errors);
  MandateRequest r;
  r.wallet = json::get_string(body, "wallet_phone_number", errors);
  if (r.wallet && (r.wallet->size() < 8 || r.wallet->size() > 15 ||
                   r.wallet->find_first_not_of("0123456789") != std::string::npos)) {
    errors.add("wallet_phone_number", Problem(Reason::international_digits, {{"example", "237690000042"}}));
    r.wallet.reset();
  }
  r.cap = json::get_int(body, "cap", errors);
  SIKA_TRY(errors.status());
  SIKA_ASSIGN_OR_RETURN(auto made, request_mandate(acting, req.path_param("reference"), r));
  bj::object data = mandate_json(made.first);
  if (acting.environment == "sandbox") data["mandate_url"] = made.second;
  return web::ok(req, std::move(data), {}, "created", 201);
}

// ---- the customer's page ----------------------------------------------------------------------

namespace {

// The page's texts (web/texts.hpp).
constexpr web::texts::Entry kTextsData[] = {
    {"title", "Prélèvement automatique", "Automatic payment"},
    {"intro",
     "Autorisez le paiement de chaque échéance de votre abonnement depuis votre portefeuille Sika, sans confirmation à "
     "chaque fois. Vous pouvez révoquer cette autorisation à tout moment ici.",
     "Allow each cycle of your subscription to be paid from your Sika wallet without a prompt each time. You can "
     "revoke this at any time here."},
    {"cap", "Plafond par échéance", "Cap per cycle"},
    {"frequency", "Fréquence", "Frequency"},
    {"wallet", "Portefeuille", "Wallet"},
    {"status", "Statut", "Status"},
    {"send", "Recevoir un code par SMS", "Send me a code by SMS"},
    {"code", "Code reçu par SMS", "Code received by SMS"},
    {"approve", "Autoriser", "Approve"},
    {"revoke", "Révoquer l'autorisation", "Revoke"},
    {"sent", "Un code vient d'être envoyé au numéro du portefeuille.", "A code was sent to the wallet's number."},
    {"approved", "Autorisation donnée : les prochaines échéances seront prélevées sur votre portefeuille.",
     "Approved: the next cycles will be paid from your wallet."},
    {"revoked", "Autorisation révoquée : plus rien ne sera prélevé sur votre portefeuille.",
     "Revoked: nothing more will be taken from your wallet."},
    {"wrong_code", "Code incorrect ou expiré.", "Wrong or expired code."},
    {"is_pending", "En attente de votre autorisation", "Waiting for your approval"},
    {"is_active", "Active", "Active"},
    {"is_revoked", "Révoquée", "Revoked"},
    {"not_found", "Ce lien n'est pas valide.", "This link is not valid."},
    {"failed", "La demande n'a pas abouti ; réessayez plus tard.", "That did not work; please try again later."},
};
constexpr auto kTexts = web::texts::table(kTextsData);
const web::texts::Enrolled kEnrolled{"billing/mandate", kTexts};
using Words = web::texts::Words<kTexts>;

std::string masked(const std::string& wallet) {
  return wallet.size() <= 4 ? wallet : std::string(wallet.size() - 4, '*') + wallet.substr(wallet.size() - 4);
}

}  // namespace

namespace {

web::Response render_mandate(const web::Request& req, const Result<Mandate>& found, const std::string& notice,
                             int status) {
  const i18n::Locale locale = web::html::page_locale(req);
  const Words t{locale};
  web::html::Page page;
  page.locale = locale;
  page.title = t("title");
  page.other_language_url = "?lang=" + std::string(web::html::other_language(locale));
  if (!found) {
    page.body_html = "<p>" + escape(t("not_found")) + "</p>";
    return web::html::page_response(404, page);
  }
  const Mandate& m = *found;
  const std::string lang = locale == i18n::Locale::en ? "en" : "fr";
  std::string b;
  if (!notice.empty()) b += "<p role=\"status\"><strong>" + escape(notice) + "</strong></p>";
  b += "<p>" + escape(t("intro")) + "</p><dl>";
  b += "<dt>" + escape(t("cap")) + "</dt><dd>" + escape(money::format(m.cap, m.currency)) + "</dd>";
  b += "<dt>" + escape(t("frequency")) + "</dt><dd>" + escape(web::html::state_words(to_string(m.frequency), locale)) +
       "</dd>";
  b += "<dt>" + escape(t("wallet")) + "</dt><dd>" + escape(masked(m.wallet)) + "</dd>";
  b += "<dt>" + escape(t("status")) + "</dt><dd>" +
       escape(m.status == kMandatePending  ? t("is_pending")
              : m.status == kMandateActive ? t("is_active")
                                           : t("is_revoked")) +
       "</dd></dl>";
  auto form = [&](std::string_view action, const std::string& inner) {
    return "<form method=\"post\"><input type=\"hidden\" name=\"lang\" value=\"" + lang +
           "\"><input type=\"hidden\" name=\"action\" value=\"" + std::string(action) + "\">" + inner + "</form>";
  };
  if (m.status == kMandatePending) {
    b += form("send", "<button type=\"submit\">" + escape(t("send")) + "</button>");
    b += form("approve", "<label>" + escape(t("code")) +
                             " <input name=\"otp\" inputmode=\"numeric\" autocomplete=\"one-time-code\" "
                             "maxlength=\"8\" required></label> <button type=\"submit\">" +
                             escape(t("approve")) + "</button>");
  }
  if (m.status != kMandateRevoked) b += form("revoke", "<button type=\"submit\">" + escape(t("revoke")) + "</button>");
  page.body_html = std::move(b);
  return web::html::page_response(status, page);
}

}  // namespace

web::Response Service::mandate_page(web::Request& req) {
  return render_mandate(req, mandate_by_token(req.path_param("token")), "", 200);
}

web::Response Service::mandate_page_submit(web::Request& req) {
  const i18n::Locale locale = web::html::page_locale(req);
  const Words t{locale};
  const std::string token = req.path_param("token");
  auto fields = web::parse_form(req.body);
  if (!fields) return render_mandate(req, mandate_by_token(token), t("failed"), 400);
  const std::string action = web::field_value(*fields, "action");
  std::string notice;
  int status = 200;
  if (action == "send") {
    auto st = send_mandate_code(token, locale);
    notice = st ? t("sent") : t("failed");
    if (!st) status = st.error().is(ErrorKind::not_found) ? 404 : st.error().is(ErrorKind::rate_limited) ? 429 : 409;
  } else if (action == "approve") {
    auto done = approve_mandate(token, web::field_value(*fields, "otp"));
    notice = done ? t("approved") : done.error().is(ErrorKind::invalid) ? t("wrong_code") : t("failed");
    if (!done) status = done.error().is(ErrorKind::not_found) ? 404 : 400;
  } else if (action == "revoke") {
    auto done = revoke_mandate(token);
    notice = done ? t("revoked") : t("failed");
    if (!done) status = done.error().is(ErrorKind::not_found) ? 404 : 409;
  } else {
    notice = t("failed");
    status = 400;
  }
  return render_mandate(req, mandate_by_token(token), notice, status);
}

}  // namespace sika::billing
