// The user's wallet page (checkout surface, GET|POST /wallet): sign-in by phone number and a
// one-time code sent through the notifier, then the balance, the history, the partner links with
// the limits the user consented to, and unlinking. Plain forms, no JavaScript, fr/en. The
// session is a random token in an HttpOnly, SameSite=Strict cookie (only its hash is stored);
// every change also carries a CSRF token derived from the session. Links are relative, so the
// page works under any mount prefix. What the page does to the data and the money is the
// service's (page_actions.cpp and the operations of service.cpp); this file reads the forms,
// calls them and renders.
#include <spdlog/spdlog.h>
#include <boost/json.hpp>

#include <algorithm>
#include <utility>

#include "core/crypto.hpp"
#include "core/money.hpp"
#include "core/random.hpp"
#include "core/time.hpp"
#include "core/time_zone.hpp"
#include "identity/relying_party.hpp"
#include "identity/store.hpp"
#include "otp/code.hpp"
#include "payments/sandbox.hpp"
#include "wallets/service.hpp"
#include "wallets/store.hpp"
#include "web/cookie.hpp"
#include "web/csrf.hpp"
#include "web/envelope.hpp"
#include "web/html.hpp"
#include "web/texts.hpp"

namespace sika::wallets {

namespace bj = boost::json;
using web::html::escape;

namespace {

constexpr std::string_view kCookie = "sika_wallet";
constexpr std::string_view kSigninPurpose = "wallet_signin";
constexpr std::string_view kWithdrawPurpose = "wallet_withdraw";
constexpr std::string_view kLoginCookie = "sika_wallet_login";

// The page's texts (web/texts.hpp).
constexpr web::texts::Entry kTextsData[] = {
    {"title", "Mon portefeuille Sika", "My Sika wallet"},
    {"phone", "Numéro de téléphone", "Phone number"},
    {"phone_hint", "avec l'indicatif du pays, ex. +237690000042", "with the country code, e.g. +237690000042"},
    {"send", "Recevoir un code", "Get a code"},
    {"code", "Code reçu par SMS", "Code received by SMS"},
    {"code_sent", "Si ce numéro a un portefeuille, un code lui a été envoyé par SMS (valable quelques minutes).",
     "If this number has a wallet, a code was sent to it by SMS (valid for a few minutes)."},
    {"verify", "Se connecter", "Sign in"},
    {"balance", "Solde", "Balance"},
    {"history", "Historique", "History"},
    {"links", "Applications liées", "Linked apps"},
    {"no_links", "Aucune application liée.", "No linked app."},
    {"no_history", "Aucun mouvement.", "No movement yet."},
    {"per_payment", "par paiement", "per payment"},
    {"per_period", "par période de", "per period of"},
    {"spent", "dépensé sur la période", "spent this period"},
    {"unlink", "Délier", "Unlink"},
    {"signout", "Se déconnecter", "Sign out"},
    {"wrong_code", "Code incorrect ou expiré.", "Wrong or expired code."},
    {"bad_phone", "Numéro invalide.", "Invalid number."},
    {"status", "Statut", "Status"},
    {"partner", "Partenaire", "Partner"},
    {"since", "depuis", "since"},
    {"unlinked_notice", "Le lien a été supprimé ; le partenaire en est informé.",
     "The link was removed; the partner is told."},
    {"too_many", "Trop de demandes.", "Too many requests."},
    {"approve", "Autoriser", "Approve"},
    {"approved_notice", "Lien autorisé : le partenaire peut débiter votre portefeuille dans ces limites.",
     "Link approved: the partner may charge your wallet within these limits."},
    {"topup", "Recharger depuis mon mobile money", "Top up from my mobile money"},
    {"withdraw", "Retirer vers mon mobile money", "Withdraw to my mobile money"},
    {"amount", "Montant", "Amount"},
    {"topup_notice", "Recharge demandée : validez-la sur votre téléphone ; le solde change quand l'opérateur confirme.",
     "Top-up requested: approve it on your phone; the balance changes once the operator confirms."},
    {"withdraw_notice", "Retrait envoyé : il arrive sur votre mobile money ; s'il échoue, le montant revient ici.",
     "Withdrawal sent: it reaches your mobile money; if it fails, the amount comes back here."},
    {"withdraw_code_sent", "Un code vient d'être envoyé par SMS pour confirmer ce retrait.",
     "A code was just sent by SMS to confirm this withdrawal."},
    {"confirm_withdraw", "Confirmer le retrait", "Confirm the withdrawal"},
    {"refused", "Opération refusée", "Refused"},
    {"with_identity", "Se connecter avec un compte Sika", "Sign in with a Sika account"},
    {"no_phone", "Ce compte Sika n'a pas de numéro de téléphone servi par un portefeuille.",
     "This Sika account has no phone number a wallet serves."},
    {"pending", "Paiements à autoriser", "Payments awaiting your approval"},
    {"pending_hint",
     "Ces paiements dépassent les limites que vous avez accordées : chacun attend votre accord, avec "
     "le code reçu par SMS pour lui.",
     "These payments go beyond the limits you gave: each waits for your approval, with the code "
     "sent to you by SMS for it."},
    {"fee", "frais", "fees"},
    {"pay_code", "Code reçu par SMS pour ce paiement", "Code received by SMS for this payment"},
    {"approve_payment", "Autoriser le paiement", "Approve the payment"},
    {"decline", "Refuser", "Decline"},
    {"resend", "Renvoyer le code", "Send the code again"},
    {"paid_notice", "Paiement autorisé : il a été réglé depuis votre portefeuille.",
     "Payment approved: it was paid from your wallet."},
    {"declined_notice", "Paiement refusé : rien n'a été débité ; le partenaire en est informé.",
     "Payment declined: nothing was taken; the partner is told."},
    {"pay_code_notice", "Le code de ce paiement a été envoyé par SMS.", "The code for this payment was sent by SMS."},
    {"insufficient", "Solde insuffisant : le paiement a échoué.", "Insufficient balance: the payment failed."},
};
constexpr auto kTexts = web::texts::table(kTextsData);
const web::texts::Enrolled kEnrolled{"wallets/page", kTexts};
using Key = web::texts::Key<kTexts>;
using Words = web::texts::Words<kTexts>;

// "try again in 25 s" / "réessayez dans 2 min": when a refused request may be made again.
std::string retry_text(i18n::Locale l, std::int64_t seconds) {
  const bool en = l == i18n::Locale::en;
  const std::string when =
      seconds < 120 ? std::to_string(seconds) + " s" : std::to_string((seconds + 59) / 60) + " min";
  return (en ? "Try again in " : "Réessayez dans ") + when + ".";
}

std::string digits_of(std::string_view s) {
  std::string d;
  for (char c : s)
    if (c >= '0' && c <= '9') d.push_back(c);
  return d;
}

// The page's CSRF tokens: web::Csrf bound to the session cookie's token.
web::Csrf page_csrf(const Options& options) { return web::Csrf(options.secret, "sika:wallets:page:csrf:v1"); }

i18n::Locale locale_of(const web::Request& req, const web::Fields* form) {
  std::optional<std::string> lang = req.query_param("lang");
  if (form)
    for (const auto& [k, v] : *form)
      if (k == "lang") lang = v;
  if (lang == "en") return i18n::Locale::en;
  if (lang == "fr") return i18n::Locale::fr;
  return req.locale;
}

// What the action that redirected here did (`notice=` of its redirect), in the page's language.
std::string notice_of(const web::Request& req, const Words& t) {
  struct Notice {
    std::string_view name;
    Key text;
  };
  static constexpr Notice kNotices[] = {{"unlinked", "unlinked_notice"}, {"approved", "approved_notice"},
                                        {"topup", "topup_notice"},       {"withdrawn", "withdraw_notice"},
                                        {"paid", "paid_notice"},         {"declined", "declined_notice"},
                                        {"paycode", "pay_code_notice"}};
  std::string notice;
  if (auto n = req.query_param("notice"))
    for (const auto& [name, text] : kNotices)
      if (*n == name) notice = t(text);
  return notice;
}

}  // namespace

// One request of the wallet page: its form, language and layout, and the answers its steps give.
struct PageCall {
  PageCall(const web::Request& request, web::Fields fields, bool posted)
      : req(request),
        form(std::move(fields)),
        locale(locale_of(req, posted ? &form : nullptr)),
        t{locale},
        lang(i18n::name(locale)) {
    pg.locale = locale;
    pg.title = t("title");
    pg.other_language_url =
        std::string(posted ? "wallet?lang=" : "?lang=") + (locale == i18n::Locale::en ? "fr" : "en");
  }
  // The page with an error message and a link back to the wallet.
  web::Response message_page(int status, std::string text) {
    pg.body_html = "<p class=\"error\" id=\"error\">" + escape(text) + "</p><p><a href=\"wallet?lang=" + lang + "\">" +
                   t("title") + "</a></p>";
    return web::html::page_response(status, pg);
  }
  // A refusal of the page's limits: 429 with Retry-After, and when to try again in words.
  web::Response too_many(std::int64_t retry_after_ms) {
    const std::int64_t seconds = std::max<std::int64_t>(1, (retry_after_ms + 999) / 1000);
    web::Response res = message_page(429, std::string(t("too_many")) + " " + retry_text(locale, seconds));
    res.set("Retry-After", std::to_string(seconds));
    return res;
  }
  // "Refused : <what>" with the status of `e`.
  web::Response refused(const Error& e) {
    return message_page(web::http_status(e.kind), std::string(t("refused")) + " : " + e.code);
  }
  // Back to the wallet page, which shows the notice (notice_of) of what was done.
  web::Response redirect(std::string_view notice) const {
    web::Response res = web::Response::redirect("wallet?lang=" + lang + "&notice=" + std::string(notice), 303);
    web::html::secure_headers(res);
    return res;
  }
  web::Response page(int status, std::string body) {
    pg.body_html = std::move(body);
    return web::html::page_response(status, pg);
  }

  const web::Request& req;
  web::Fields form;
  i18n::Locale locale;
  Words t;
  std::string lang;
  web::html::Page pg;
};

namespace {

// Signed out: the phone step (and the identity service's sign-in when there is one).
std::string signed_out_html(const PageCall& call, bool with_identity) {
  const Words& t = call.t;
  const std::string& lang = call.lang;
  std::string h = "<form method=\"post\" action=\"wallet\"><input type=\"hidden\" name=\"lang\" value=\"" + lang +
                  "\"><input type=\"hidden\" name=\"action\" value=\"send\"><label for=\"phone\">" + t("phone") +
                  "</label><input id=\"phone\" name=\"phone\" inputmode=\"tel\" autocomplete=\"tel\" required><p "
                  "class=\"hint\">" +
                  t("phone_hint") + "</p><button class=\"go\" type=\"submit\" id=\"send\">" + t("send") +
                  "</button></form>";
  if (with_identity)
    h += "<p><a class=\"go\" id=\"signin-identity\" href=\"wallet/login?lang=" + lang + "\">" + t("with_identity") +
         "</a></p>";
  return h;
}

// Top-up and withdrawal between the wallet and the same number's mobile money; each form
// carries a fresh transaction_uuid, so a form sent twice moves the money once.
std::string money_forms_html(const PageCall& call, const std::string& csrf, const Wallet& wallet) {
  auto money_form = [&](std::string_view action, std::string_view id, const char* label) {
    return "<form method=\"post\" action=\"wallet\" id=\"" + std::string(id) +
           "\"><input type=\"hidden\" name=\"lang\" value=\"" + call.lang + "\">" + web::Csrf::field_html(csrf) +
           "<input type=\"hidden\" name=\"action\" value=\"" + std::string(action) +
           "\"><input type=\"hidden\" name=\"uuid\" value=\"" + uuid_v4() + "\"><label for=\"" + std::string(id) +
           "-amount\">" + call.t("amount") + " (" + escape(wallet.currency) + ")</label><input id=\"" +
           std::string(id) +
           "-amount\" name=\"amount\" inputmode=\"numeric\" pattern=\"[0-9]{1,12}\" required><button "
           "type=\"submit\">" +
           label + "</button></form>";
  };
  return money_form("topup", "topup", call.t("topup")) + money_form("withdraw_code", "withdraw", call.t("withdraw"));
}

// One partner link: its limits and what was spent, with approve (a PENDING link) and unlink.
std::string link_html(const PageCall& call, const std::string& csrf, const Link& l, std::int64_t at) {
  const Words& t = call.t;
  const std::string& lang = call.lang;
  std::string h = "<li class=\"link\" data-reference=\"" + escape(l.reference) + "\"><strong>" +
                  escape(l.partner_name) + "</strong> (" + escape(web::html::state_words(l.status, call.locale)) +
                  ")<br>" + money::format(l.limits.per_payment, l.currency, true) + " " + t("per_payment") + ", " +
                  money::format(l.limits.per_period, l.currency, true) + " " + t("per_period") + " " +
                  period_text(l.limits.period_ms) + "<br>" + t("spent") + " : " +
                  money::format(spent_at(l, at), l.currency, true);
  if (l.status == kPending)
    h += "<form method=\"post\" action=\"wallet\"><input type=\"hidden\" name=\"lang\" value=\"" + lang + "\">" +
         web::Csrf::field_html(csrf) +
         "<input type=\"hidden\" name=\"action\" value=\"approve\"><input type=\"hidden\" name=\"link\" "
         "value=\"" +
         escape(l.reference) +
         // The limits shown above: approving activates these, and nothing if they changed since.
         "\"><input type=\"hidden\" name=\"per_payment\" value=\"" + std::to_string(l.limits.per_payment) +
         "\"><input type=\"hidden\" name=\"per_period\" value=\"" + std::to_string(l.limits.per_period) +
         "\"><input type=\"hidden\" name=\"period_ms\" value=\"" + std::to_string(l.limits.period_ms) +
         "\"><button class=\"go\" type=\"submit\">" + t("approve") + "</button></form>";
  if (l.status != kUnlinked)
    h += "<form method=\"post\" action=\"wallet\"><input type=\"hidden\" name=\"lang\" value=\"" + lang + "\">" +
         web::Csrf::field_html(csrf) +
         "<input type=\"hidden\" name=\"action\" value=\"unlink\"><input type=\"hidden\" name=\"link\" "
         "value=\"" +
         escape(l.reference) + "\"><button class=\"no\" type=\"submit\">" + t("unlink") + "</button></form>";
  return h + "</li>";
}

std::string links_html(const PageCall& call, const std::string& csrf, const Result<std::vector<Link>>& ls,
                       std::int64_t at) {
  std::string h = "<h2>" + std::string(call.t("links")) + "</h2>";
  if (!ls || ls->empty()) h += "<p>" + std::string(call.t("no_links")) + "</p>";
  if (ls) {
    h += "<ul id=\"links\">";
    for (const auto& l : *ls) h += link_html(call, csrf, l, at);
    h += "</ul>";
  }
  return h;
}

// Payments beyond the consent, waiting for the user: approved here with their code (the user
// never has to hand it to the partner), or declined.
std::string pending_html(const PageCall& call, const std::string& csrf,
                         const std::vector<queries::PendingPayment>& pending) {
  const Words& t = call.t;
  std::string h =
      "<h2>" + std::string(t("pending")) + "</h2><p class=\"hint\">" + t("pending_hint") + "</p><ul id=\"pending\">";
  for (const auto& p : pending) {
    const std::string ref = escape(p.reference);
    auto form = [&](std::string_view action, const std::string& inside) {
      return "<form method=\"post\" action=\"wallet\"><input type=\"hidden\" name=\"lang\" value=\"" + call.lang +
             "\">" + web::Csrf::field_html(csrf) + "<input type=\"hidden\" name=\"action\" value=\"" +
             std::string(action) + "\"><input type=\"hidden\" name=\"payment\" value=\"" + ref + "\">" + inside +
             "</form>";
    };
    h += "<li class=\"payment\" data-reference=\"" + ref + "\"><strong>" + escape(p.partner_name) +
         "</strong> · <strong>" + money::format(p.amount + p.fee, p.currency, true) + "</strong> (" + t("fee") + " " +
         money::format(p.fee, p.currency, true) + ")";
    if (!p.description.empty()) h += "<br>" + escape(p.description);
    h += "<br>" + ref;
    h += form("pay_approve", "<label for=\"otp-" + ref + "\">" + std::string(t("pay_code")) +
                                 "</label><input id=\"otp-" + ref +
                                 "\" name=\"otp\" inputmode=\"numeric\" autocomplete=\"one-time-code\" "
                                 "pattern=\"[0-9]{4,8}\" required><button class=\"go\" type=\"submit\">" +
                                 t("approve_payment") + "</button>");
    h += form("pay_code", "<button class=\"secondary\" type=\"submit\">" + std::string(t("resend")) + "</button>");
    h += form("pay_decline",
              "<button class=\"secondary no\" type=\"submit\">" + std::string(t("decline")) + "</button>");
    h += "</li>";
  }
  return h + "</ul>";
}

std::string history_html(const PageCall& call, const Wallet& wallet, const Result<queries::History>& hist) {
  std::string h = "<h2>" + std::string(call.t("history")) + "</h2>";
  if (!hist || hist->items.empty()) return h + "<p>" + std::string(call.t("no_history")) + "</p>";
  h += "<ul id=\"history\">";
  for (const auto& m : hist->items) {
    // A top-up or withdrawal says what it is (its memo) rather than whose account carried it.
    std::string who = m.merchant_name && !m.memo.starts_with("wallet ") ? *m.merchant_name : m.memo;
    const std::string when = tz::date_time(m.at, call.locale, tz::of_country(wallet.country));
    h += "<li>" + escape(when) + " · " + escape(who) + " · <strong>" + (m.amount > 0 ? "+" : "") +
         money::format(m.amount, m.currency, true) + "</strong></li>";
  }
  return h + "</ul>";
}

// The step after a code was sent: the code's form (`hidden` carries what the code is for).
std::string code_form_html(const PageCall& call, std::string_view sent, const std::string& before_form,
                           const std::string& hidden, std::string_view button_id, std::string_view button) {
  return "<p id=\"sent\">" + std::string(sent) + "</p>" + before_form +
         "<form method=\"post\" action=\"wallet\"><input type=\"hidden\" name=\"lang\" value=\"" + call.lang + "\">" +
         hidden + "<label for=\"otp\">" + call.t("code") +
         "</label><input id=\"otp\" name=\"otp\" inputmode=\"numeric\" autocomplete=\"one-time-code\" "
         "pattern=\"[0-9]{4,8}\" required><button class=\"go\" type=\"submit\" id=\"" +
         std::string(button_id) + "\">" + std::string(button) + "</button></form>";
}

}  // namespace

// The signed-in wallet of the request's session cookie; 401 when there is none.
Result<web::Principal> Service::session_wallet(const web::Request& req, Wallet& wallet) {
  std::string token = web::cookie(req, kCookie);
  if (token.empty() || token.size() > 128) return unauthorized();
  std::optional<std::int64_t> id;
  std::optional<Wallet> w;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(id, tables::session_wallet(c, key_hash("session:" + token), now()));
    if (!id) return {};
    SIKA_ASSIGN_OR_RETURN(w, tables::wallet_by_id(c, *id));
    return {};
  }));
  if (!w) return unauthorized();
  wallet = std::move(*w);
  web::Principal p;
  p.subject = "wallet:" + wallet.matricule;
  p.environment = wallet.environment;
  return p;
}

web::Response Service::page(web::Request& req) {
  PageCall call(req, {}, /*posted=*/false);
  const std::string notice = notice_of(req, call.t);
  Wallet wallet;
  if (!session_wallet(req, wallet)) return call.page(200, signed_out_html(call, options_.identity != nullptr));
  const std::string csrf = page_csrf(options_).issue(web::cookie(req, kCookie));
  std::string h;
  if (!notice.empty()) h += "<p class=\"notice\" id=\"notice\">" + escape(notice) + "</p>";
  h += "<p id=\"wallet\">" + escape(wallet.matricule) + " · " + escape(masked_phone(wallet.msisdn)) + "</p>";
  h += "<h2>" + std::string(call.t("balance")) + "</h2><ul id=\"balances\">";
  auto bal = balances(wallet);
  if (bal)
    for (const auto& b : *bal) h += "<li><strong>" + money::format(b.available, b.currency, true) + "</strong></li>";
  h += "</ul>";
  if (!options_.page_merchant.empty()) h += money_forms_html(call, csrf, wallet);
  const std::int64_t at = now();
  h += links_html(call, csrf, links(wallet), at);
  auto pending = pending_payments(wallet);
  if (pending && !pending->empty()) {
    h += pending_html(call, csrf, *pending);
    call.pg.extra_head_html =
        "<style>li.payment{margin-bottom:1.25rem;padding-bottom:1rem;border-bottom:1px solid #ccc}</style>";
  }
  h += history_html(call, wallet, history(wallet, std::nullopt, 20));
  h += "<form method=\"post\" action=\"wallet\"><input type=\"hidden\" name=\"lang\" value=\"" + call.lang + "\">" +
       web::Csrf::field_html(csrf) +
       "<input type=\"hidden\" name=\"action\" value=\"signout\"><button type=\"submit\">" + call.t("signout") +
       "</button></form>";
  return call.page(200, std::move(h));
}

web::Response Service::page_submit(web::Request& req) {
  auto parsed = web::parse_form(req.body);
  PageCall call(req, parsed ? std::move(*parsed) : web::Fields{}, /*posted=*/true);
  const std::string action = web::field_value(call.form, "action");
  // Sign-in and its codes are counted per address across nodes.
  if (options_.limiter) {
    auto d = options_.limiter->hit(
        "wallet-page:ip:" + req.remote_ip,
        limits::Policy{.limit = 30, .window_ms = 60'000, .name = "wallet_page_sign_ins_per_address"});
    if (d && !d->allowed) return call.too_many(d->retry_after_ms);
  }
  if (action == "send" || action == "verify") return page_sign_in(call, action);
  // Changes need the session and its CSRF token.
  Wallet wallet;
  if (!session_wallet(req, wallet)) return call.message_page(401, call.t("wrong_code"));
  const std::string token = web::cookie(req, kCookie);
  const std::string csrf = page_csrf(options_).issue(token);
  if (!page_csrf(options_).check(token, web::field_value(call.form, "csrf"))) return call.message_page(403, "CSRF");
  if (action == "unlink" || action == "approve") return page_link_change(call, wallet, action);
  if (action == "pay_approve" || action == "pay_code" || action == "pay_decline")
    return page_payment(call, wallet, action);
  if (action == "topup" || action == "withdraw_code" || action == "withdraw")
    return page_money(call, wallet, action, csrf);
  if (action == "signout") {
    (void)close_session(token);
    web::Response res = web::Response::redirect("wallet?lang=" + call.lang, 303);
    res.set("Set-Cookie", web::set_cookie_value({.name = kCookie,
                                                 .value = "",
                                                 .path = req.path,
                                                 .max_age = 0,
                                                 .same_site = web::SameSite::strict,
                                                 .secure = options_.secure_cookies}));
    web::html::secure_headers(res);
    return res;
  }
  return call.message_page(400, "action");
}

// Sign-in: `send` asks for a code for a phone number, `verify` checks it and opens the session.
web::Response Service::page_sign_in(PageCall& call, std::string_view action) {
  const std::string& environment = options_.page_environment;
  const std::string msisdn = digits_of(web::field_value(call.form, "phone"));
  if (msisdn.size() < 8 || msisdn.size() > 15) return call.message_page(400, call.t("bad_phone"));
  if (action == "send" && options_.limiter) {
    // Codes asked per number, counted for every number alike (with a wallet or not) before
    // anything depends on whether it has one: as many as one code's sends (otp.max_sends) per
    // code lifetime (otp.ttl_seconds).
    const auto& o = otp_.options();
    auto d = options_.limiter->hit("wallet-page:send:" + msisdn,
                                   limits::Policy{.limit = std::max(1, o.max_sends),
                                                  .window_ms = std::max<std::int64_t>(60'000, o.ttl_ms),
                                                  .name = "wallet_page_codes_per_number"});
    if (!d) return call.message_page(503, d.error().code);
    if (!d->allowed) return call.too_many(d->retry_after_ms);
  }
  auto wallet = wallet_of(environment, msisdn);
  if (!wallet) return call.message_page(503, wallet.error().code);
  if (action == "send") {
    // The same answer whether or not the number has a wallet: the page tells nobody who has one.
    // The OTP service's own refusals (the resend cool-down, sends per destination and hour) are
    // answered as a send (the code sent before stays good), since a number without a wallet
    // never meets them.
    if (*wallet) {
      otp::IssueRequest r;
      r.purpose = std::string(kSigninPurpose);
      r.subject = (*wallet)->matricule;
      r.destination = "+" + msisdn;
      r.locale = call.locale;
      r.sandbox_code = environment == "sandbox" && payments::sandbox_fixed_code(msisdn);
      r.context = std::string(call.t("title"));
      auto issued = otp_.issue(r);
      if (!issued && !issued.error().is(ErrorKind::rate_limited) && !issued.error().is(ErrorKind::conflict))
        spdlog::warn("wallet page sign-in code not sent: {}", issued.error().code);
    }
    return call.page(200, code_form_html(call, call.t("code_sent"), "",
                                         "<input type=\"hidden\" name=\"action\" value=\"verify\"><input "
                                         "type=\"hidden\" name=\"phone\" value=\"" +
                                             escape(msisdn) + "\">",
                                         "verify", call.t("verify")));
  }
  if (!*wallet) return call.message_page(400, call.t("wrong_code"));
  // A malformed code is refused before an attempt is taken.
  auto code = otp::code_from_text(web::field_value(call.form, "otp"));
  if (!code) return call.message_page(400, call.t("wrong_code"));
  auto v = otp_.verify(kSigninPurpose, (*wallet)->matricule, *code);
  if (!v) return call.message_page(503, v.error().code);
  if (!v->ok()) return call.message_page(400, call.t("wrong_code"));
  web::Response res = web::Response::redirect("wallet?lang=" + call.lang, 303);
  if (Status st = open_session(res, (*wallet)->id, call.req.path); !st) return call.message_page(503, st.error().code);
  web::html::secure_headers(res);
  return res;
}

// `unlink` a link, or `approve` a PENDING one with the limits the page showed.
web::Response Service::page_link_change(PageCall& call, const Wallet& wallet, std::string_view action) {
  if (action == "unlink") {
    auto done = unlink_by_user(wallet, web::field_value(call.form, "link"));
    if (!done) return call.message_page(web::http_status(done.error().kind), done.error().code);
    return call.redirect("unlinked");
  }
  // The limits the page showed with the button; a form without them approves nothing.
  Limits shown;
  for (auto [name, into] : {std::pair{"per_payment", &shown.per_payment}, std::pair{"per_period", &shown.per_period},
                            std::pair{"period_ms", &shown.period_ms}}) {
    const std::string v = web::field_value(call.form, name);
    if (v.empty() || v.size() > 15 || digits_of(v) != v)
      return call.message_page(400, std::string(call.t("refused")) + " : " + name);
    *into = std::stoll(v);
  }
  auto done = consent_by_user(wallet, web::field_value(call.form, "link"), shown);
  if (!done) return call.message_page(web::http_status(done.error().kind), done.error().code);
  return call.redirect("approved");
}

// A payment link/init left waiting: found as link/approve finds it (a payment of one of this
// wallet's links, on this wallet), then executed with its code (the code is what approves a
// payment beyond the consent: being signed in is not enough to move money out), or cancelled.
web::Response Service::page_payment(PageCall& call, const Wallet& wallet, std::string_view action) {
  const std::string refused = std::string(call.t("refused")) + " : ";
  const std::string reference = web::field_value(call.form, "payment");
  auto found = pending_payments(wallet, reference);
  if (!found) return call.message_page(503, found.error().code);
  if (reference.empty() || found->empty()) return call.message_page(404, refused + "payment");
  auto l = link_of_wallet(wallet, found->front().link);
  if (!l) return call.message_page(web::http_status(l.error().kind), refused + l.error().code);
  if (action != "pay_decline" && l->status != kActive) return call.message_page(409, refused + std::string(l->status));
  auto tx = link_payment(wallet, *l, reference);
  if (!tx) return call.message_page(503, tx.error().code);
  if (!*tx) return call.message_page(404, refused + "payment");
  if (action == "pay_decline") {
    auto done = decline_link_payment(**tx);
    if (!done) return call.refused(done.error());
    return call.redirect("declined");
  }
  std::optional<std::string> code;
  if (action == "pay_approve") {
    code = web::field_value(call.form, "otp");
    if (code->empty()) return call.message_page(400, call.t("wrong_code"));
  }
  // Without a code, the payment's code is sent again (within its resend limits).
  auto done = approve_link_payment(std::move(**tx), std::move(code));
  if (action == "pay_code") {
    if (!done && done.error().is(ErrorKind::invalid)) return call.redirect("paycode");
    return call.message_page(done ? 409 : web::http_status(done.error().kind),
                             refused + (done ? "status" : done.error().code));
  }
  if (!done) {
    if (done.error().is(ErrorKind::invalid)) return call.message_page(400, call.t("wrong_code"));
    return call.refused(done.error());
  }
  if (done->status != payments::TxStatus::completed) return call.message_page(402, call.t("insufficient"));
  return call.redirect("paid");
}

// Top-up, and withdrawal in two steps: `withdraw_code` sends a code bound to the withdrawal (its
// uuid and amount), `withdraw` checks it and withdraws: being signed in is not enough to move
// money out.
web::Response Service::page_money(PageCall& call, const Wallet& wallet, std::string_view action,
                                  const std::string& csrf) {
  auto merchant = page_merchant();
  if (!merchant) return call.message_page(503, merchant.error().code);
  if (!*merchant) return call.message_page(404, "action");
  Transfer m;
  m.transaction_uuid = web::field_value(call.form, "uuid");
  const std::string amount = digits_of(web::field_value(call.form, "amount"));
  if (amount.empty() || amount.size() > 12 || amount != web::field_value(call.form, "amount"))
    return call.message_page(400, std::string(call.t("amount")) + " ?");
  m.amount = std::stoll(amount);
  if (action == "topup") {
    auto done = topup(**merchant, wallet, m, "wallet-page");
    if (!done) return call.refused(done.error());
    return call.redirect("topup");
  }
  if (!is_uuid(m.transaction_uuid)) return call.message_page(400, "uuid");
  const std::string subject = wallet.matricule + ":" + m.transaction_uuid + ":" + amount;
  if (action == "withdraw_code") {
    otp::IssueRequest r;
    r.purpose = std::string(kWithdrawPurpose);
    r.subject = subject;
    r.destination = "+" + wallet.msisdn;
    r.locale = call.locale;
    r.sandbox_code = options_.page_environment == "sandbox" && payments::sandbox_fixed_code(wallet.msisdn);
    r.context = std::string(call.t("withdraw")) + " : " + money::format(m.amount, wallet.currency);
    auto issued = otp_.issue(r);
    if (!issued && issued.error().is(ErrorKind::rate_limited)) {
      const bj::value& d = issued.error().details;
      const bj::value* after = d.is_object() ? d.as_object().if_contains("retry_after") : nullptr;
      return call.too_many(after && after->is_int64() ? after->as_int64() * 1000 : 60'000);
    }
    if (!issued) return call.message_page(web::http_status(issued.error().kind), issued.error().code);
    return call.page(
        200,
        code_form_html(
            call, call.t("withdraw_code_sent"), "<p>" + escape(money::format(m.amount, wallet.currency, true)) + "</p>",
            web::Csrf::field_html(csrf) +
                "<input type=\"hidden\" name=\"action\" value=\"withdraw\"><input type=\"hidden\" "
                "name=\"uuid\" value=\"" +
                escape(m.transaction_uuid) + "\"><input type=\"hidden\" name=\"amount\" value=\"" + amount + "\">",
            "confirm-withdraw", call.t("confirm_withdraw")));
  }
  auto code = otp::code_from_text(web::field_value(call.form, "otp"));
  if (!code) return call.message_page(400, call.t("wrong_code"));
  auto v = otp_.verify(kWithdrawPurpose, subject, *code);
  if (!v) return call.message_page(503, v.error().code);
  if (!v->ok()) return call.message_page(400, call.t("wrong_code"));
  auto done = withdraw(**merchant, wallet, m);
  if (!done) return call.refused(done.error());
  return call.redirect("withdrawn");
}

Status Service::open_session(web::Response& res, std::int64_t wallet_id, std::string_view cookie_path) {
  const std::string token = random_token(32);
  const std::int64_t at = now();
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    return tables::insert_session(c, key_hash("session:" + token), wallet_id, at + options_.session_ttl_ms, at);
  }));
  res.set("Set-Cookie", web::set_cookie_value({.name = kCookie,
                                               .value = token,
                                               .path = cookie_path,
                                               .max_age = options_.session_ttl_ms / 1000,
                                               .same_site = web::SameSite::strict,
                                               .secure = options_.secure_cookies}));
  return {};
}

namespace {
// "/x/wallet" of "/x/wallet/login": the page's own path, where its cookies live.
std::string page_path(std::string_view path) {
  auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos || slash == 0 ? path : path.substr(0, slash));
}
}  // namespace

web::Response Service::page_login(web::Request& req) {
  const i18n::Locale locale = locale_of(req, nullptr);
  if (!options_.identity) {
    web::html::Page pg;
    pg.locale = locale;
    pg.title = Words{locale}("title");
    pg.body_html = "<p class=\"error\" id=\"error\">OIDC</p>";
    return web::html::page_response(404, pg);
  }
  identity::RelyingParty rp(*options_.identity, options_.client_id, options_.page_url + "/callback",
                            crypto::hmac_sha256(options_.secret, "wallet-page-oidc"));
  const auto start = rp.begin(locale, "openid profile email phone");
  web::Response res = web::Response::redirect(start.url, 303);
  // Lax: the identity service sends the browser back with a top-level GET from its own site.
  const std::string path = page_path(req.path);
  res.set("Set-Cookie", web::set_cookie_value({.name = kLoginCookie,
                                               .value = start.state,
                                               .path = path,
                                               .max_age = 600,
                                               .secure = options_.secure_cookies}));
  web::html::secure_headers(res);
  return res;
}

web::Response Service::page_callback(web::Request& req) {
  const i18n::Locale locale = locale_of(req, nullptr);
  const Words t{locale};
  const std::string lang(i18n::name(locale));
  web::html::Page pg;
  pg.locale = locale;
  pg.title = t("title");
  auto message_page = [&](int status, std::string text) {
    pg.body_html = "<p class=\"error\" id=\"error\">" + escape(text) + "</p><p><a href=\"../wallet?lang=" + lang +
                   "\">" + t("title") + "</a></p>";
    return web::html::page_response(status, pg);
  };
  if (!options_.identity) return message_page(404, "OIDC");
  identity::RelyingParty rp(*options_.identity, options_.client_id, options_.page_url + "/callback",
                            crypto::hmac_sha256(options_.secret, "wallet-page-oidc"));
  auto claims = rp.finish(req, web::cookie(req, kLoginCookie));
  if (!claims) return message_page(web::http_status(claims.error().kind), claims.error().code);
  // The wallet is the one of the account's phone number, as the identity service holds it.
  std::optional<identity::User> user;
  Status read = db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(user, identity::find_user_by_subject(c, claims->subject));
    return {};
  });
  if (!read) return message_page(503, read.error().code);
  if (!user || !user->active) return message_page(401, t("wrong_code"));
  if (user->phone.empty()) return message_page(404, t("no_phone"));
  auto wallet = wallet_of_phone(user->phone, user->email);
  if (!wallet) return message_page(404, t("no_phone"));
  web::Response res = web::Response::redirect("../wallet?lang=" + lang, 303);
  const std::string path = page_path(req.path);
  if (Status st = open_session(res, wallet->id, path); !st) return message_page(503, st.error().code);
  web::set_cookie(res,
                  {.name = kLoginCookie, .value = "", .path = path, .max_age = 0, .secure = options_.secure_cookies});
  web::html::secure_headers(res);
  return res;
}

}  // namespace sika::wallets
