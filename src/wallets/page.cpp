// The user's wallet page (checkout surface, GET|POST /wallet): sign-in by phone number and a
// one-time code sent through the notifier, then the balance, the history, the partner links with
// the limits the user consented to, and unlinking. Plain forms, no JavaScript, fr/en. The
// session is a random token in an HttpOnly, SameSite=Strict cookie (only its hash is stored);
// every change also carries a CSRF token derived from the session. Links are relative, so the
// page works under any mount prefix.
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

namespace sika::wallets {

namespace bj = boost::json;
using web::html::escape;

namespace {

constexpr std::string_view kCookie = "sika_wallet";
constexpr std::string_view kSigninPurpose = "wallet_signin";
constexpr std::string_view kWithdrawPurpose = "wallet_withdraw";
constexpr std::string_view kLoginCookie = "sika_wallet_login";

struct Texts {
  const char *title, *phone, *phone_hint, *send, *code, *code_sent, *verify, *balance, *history, *links, *no_links,
      *no_history, *per_payment, *per_period, *spent, *unlink, *signout, *wrong_code, *bad_phone, *status, *partner,
      *since, *unlinked_notice, *too_many, *approve, *approved_notice, *topup, *withdraw, *amount, *topup_notice,
      *withdraw_notice, *withdraw_code_sent, *confirm_withdraw, *refused, *with_identity, *no_phone, *pending,
      *pending_hint, *fee, *pay_code, *approve_payment, *decline, *resend, *paid_notice, *declined_notice,
      *pay_code_notice, *insufficient;
};
constexpr Texts kFr{"Mon portefeuille Sika",
                    "Numéro de téléphone",
                    "avec l'indicatif du pays, ex. +237690000042",
                    "Recevoir un code",
                    "Code reçu par SMS",
                    "Si ce numéro a un portefeuille, un code lui a été envoyé par SMS (valable quelques minutes).",
                    "Se connecter",
                    "Solde",
                    "Historique",
                    "Applications liées",
                    "Aucune application liée.",
                    "Aucun mouvement.",
                    "par paiement",
                    "par période de",
                    "dépensé sur la période",
                    "Délier",
                    "Se déconnecter",
                    "Code incorrect ou expiré.",
                    "Numéro invalide.",
                    "Statut",
                    "Partenaire",
                    "depuis",
                    "Le lien a été supprimé ; le partenaire en est informé.",
                    "Trop de demandes.",
                    "Autoriser",
                    "Lien autorisé : le partenaire peut débiter votre portefeuille dans ces limites.",
                    "Recharger depuis mon mobile money",
                    "Retirer vers mon mobile money",
                    "Montant",
                    "Recharge demandée : validez-la sur votre téléphone ; le solde change quand l'opérateur confirme.",
                    "Retrait envoyé : il arrive sur votre mobile money ; s'il échoue, le montant revient ici.",
                    "Un code vient d'être envoyé par SMS pour confirmer ce retrait.",
                    "Confirmer le retrait",
                    "Opération refusée",
                    "Se connecter avec un compte Sika",
                    "Ce compte Sika n'a pas de numéro de téléphone servi par un portefeuille.",
                    "Paiements à autoriser",
                    "Ces paiements dépassent les limites que vous avez accordées : chacun attend votre accord, avec "
                    "le code reçu par SMS pour lui.",
                    "frais",
                    "Code reçu par SMS pour ce paiement",
                    "Autoriser le paiement",
                    "Refuser",
                    "Renvoyer le code",
                    "Paiement autorisé : il a été réglé depuis votre portefeuille.",
                    "Paiement refusé : rien n'a été débité ; le partenaire en est informé.",
                    "Le code de ce paiement a été envoyé par SMS.",
                    "Solde insuffisant : le paiement a échoué."};
constexpr Texts kEn{"My Sika wallet",
                    "Phone number",
                    "with the country code, e.g. +237690000042",
                    "Get a code",
                    "Code received by SMS",
                    "If this number has a wallet, a code was sent to it by SMS (valid for a few minutes).",
                    "Sign in",
                    "Balance",
                    "History",
                    "Linked apps",
                    "No linked app.",
                    "No movement yet.",
                    "per payment",
                    "per period of",
                    "spent this period",
                    "Unlink",
                    "Sign out",
                    "Wrong or expired code.",
                    "Invalid number.",
                    "Status",
                    "Partner",
                    "since",
                    "The link was removed; the partner is told.",
                    "Too many requests.",
                    "Approve",
                    "Link approved: the partner may charge your wallet within these limits.",
                    "Top up from my mobile money",
                    "Withdraw to my mobile money",
                    "Amount",
                    "Top-up requested: approve it on your phone; the balance changes once the operator confirms.",
                    "Withdrawal sent: it reaches your mobile money; if it fails, the amount comes back here.",
                    "A code was just sent by SMS to confirm this withdrawal.",
                    "Confirm the withdrawal",
                    "Refused",
                    "Sign in with a Sika account",
                    "This Sika account has no phone number a wallet serves.",
                    "Payments awaiting your approval",
                    "These payments go beyond the limits you gave: each waits for your approval, with the code "
                    "sent to you by SMS for it.",
                    "fees",
                    "Code received by SMS for this payment",
                    "Approve the payment",
                    "Decline",
                    "Send the code again",
                    "Payment approved: it was paid from your wallet.",
                    "Payment declined: nothing was taken; the partner is told.",
                    "The code for this payment was sent by SMS.",
                    "Insufficient balance: the payment failed."};
const Texts& texts(i18n::Locale l) { return l == i18n::Locale::en ? kEn : kFr; }

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

// A link/init payment waiting for the user's approval: a WALLET collection from the wallet's
// number started through a wallet link (its metadata names the link, as link/approve checks),
// INITIATED, waiting for its code and not yet expired.
struct PendingPayment {
  std::string reference;
  std::string link;  // the wallet link's reference
  std::string partner_name;
  std::string currency;
  std::string description;
  std::int64_t amount = 0;
  std::int64_t fee = 0;
  std::int64_t expires_at = 0;
};

// The wallet's pending link payments, newest first (at most 20), or only the one of `reference`.
Result<std::vector<PendingPayment>> pending_payments(store::Conn& c, const Wallet& w, std::int64_t at,
                                                     std::string_view reference = {}) {
  // Only payments of this wallet's own links, by the link's partner: the metadata is exactly the
  // one link/init writes (json::dump of {"wallet_link": reference}, as link/approve compares it),
  // and no merchant or payer can send that key (payments::kReservedMetadataKeys).
  std::string sql =
      "SELECT t.reference, l.reference, m.name, t.currency, t.description, t.amount, t.fee, t.expires_at "
      "FROM pay_transactions t JOIN wlt_links l ON l.wallet_id = ? AND l.partner_id = t.merchant_id AND "
      "t.metadata = '{\"wallet_link\":\"' || l.reference || '\"}' JOIN merchants m ON m.id = t.merchant_id "
      "WHERE t.customer_wallet = ? AND t.environment = ? AND t.operation = ? AND t.channel = ? AND t.status = ? "
      "AND t.needs_otp = 1 AND t.expires_at > ?";
  store::Params params{w.id,
                       w.msisdn,
                       w.environment,
                       std::string(payments::kCollection),
                       std::string(payments::kChannelWallet),
                       std::string(payments::to_string(payments::TxStatus::initiated)),
                       at};
  if (!reference.empty()) {
    sql += " AND t.reference = ?";
    params.emplace_back(std::string(reference));
  }
  sql += " ORDER BY t.id DESC LIMIT 20";
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query(sql, params));
  std::vector<PendingPayment> out;
  for (const auto& r : rows)
    out.push_back(PendingPayment{r.str(0), r.str(1), r.str(2), r.str(3), r.str(4), r.i64(5), r.i64(6), r.i64(7)});
  return out;
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
  const i18n::Locale locale = locale_of(req, nullptr);
  const Texts& t = texts(locale);
  const std::string lang(i18n::name(locale));
  const std::string other = locale == i18n::Locale::en ? "fr" : "en";
  web::html::Page pg;
  pg.locale = locale;
  pg.title = t.title;
  pg.other_language_url = "?lang=" + other;
  // What the action that redirected here did (`notice=` of its redirect), in the page's language.
  static constexpr std::pair<std::string_view, const char * Texts::*> kNotices[] = {
      {"unlinked", &Texts::unlinked_notice}, {"approved", &Texts::approved_notice},
      {"topup", &Texts::topup_notice},       {"withdrawn", &Texts::withdraw_notice},
      {"paid", &Texts::paid_notice},         {"declined", &Texts::declined_notice},
      {"paycode", &Texts::pay_code_notice}};
  std::string notice;
  if (auto n = req.query_param("notice"))
    for (const auto& [name, text] : kNotices)
      if (*n == name) notice = t.*text;
  Wallet wallet;
  if (!session_wallet(req, wallet)) {
    // Signed out: the phone step.
    pg.body_html = "<form method=\"post\" action=\"wallet\"><input type=\"hidden\" name=\"lang\" value=\"" + lang +
                   "\"><input type=\"hidden\" name=\"action\" value=\"send\"><label for=\"phone\">" + t.phone +
                   "</label><input id=\"phone\" name=\"phone\" inputmode=\"tel\" autocomplete=\"tel\" required><p "
                   "class=\"hint\">" +
                   t.phone_hint + "</p><button class=\"go\" type=\"submit\" id=\"send\">" + t.send + "</button></form>";
    if (options_.identity)
      pg.body_html += "<p><a class=\"go\" id=\"signin-identity\" href=\"wallet/login?lang=" + lang + "\">" +
                      t.with_identity + "</a></p>";
    return web::html::page_response(200, pg);
  }
  const std::string csrf = page_csrf(options_).issue(web::cookie(req, kCookie));
  std::string h;
  if (!notice.empty()) h += "<p class=\"notice\" id=\"notice\">" + escape(notice) + "</p>";
  h += "<p id=\"wallet\">" + escape(wallet.matricule) + " · " + escape(masked_phone(wallet.msisdn)) + "</p>";
  h += "<h2>" + std::string(t.balance) + "</h2><ul id=\"balances\">";
  auto bal = balances(wallet);
  if (bal)
    for (const auto& b : *bal) h += "<li><strong>" + money::format(b.available, b.currency, true) + "</strong></li>";
  h += "</ul>";
  // Top-up and withdrawal between the wallet and the same number's mobile money; each form
  // carries a fresh transaction_uuid, so a form sent twice moves the money once.
  if (!options_.page_merchant.empty()) {
    auto money_form = [&](std::string_view action, std::string_view id, const char* label) {
      return "<form method=\"post\" action=\"wallet\" id=\"" + std::string(id) +
             "\"><input type=\"hidden\" name=\"lang\" value=\"" + lang + "\">" + web::Csrf::field_html(csrf) +
             "<input type=\"hidden\" name=\"action\" value=\"" + std::string(action) +
             "\"><input type=\"hidden\" name=\"uuid\" value=\"" + uuid_v4() + "\"><label for=\"" + std::string(id) +
             "-amount\">" + t.amount + " (" + escape(wallet.currency) + ")</label><input id=\"" + std::string(id) +
             "-amount\" name=\"amount\" inputmode=\"numeric\" pattern=\"[0-9]{1,12}\" required><button "
             "type=\"submit\">" +
             label + "</button></form>";
    };
    h += money_form("topup", "topup", t.topup);
    h += money_form("withdraw_code", "withdraw", t.withdraw);
  }
  h += "<h2>" + std::string(t.links) + "</h2>";
  auto ls = links(wallet);
  if (!ls || ls->empty()) h += "<p>" + std::string(t.no_links) + "</p>";
  const std::int64_t at = now();
  if (ls) {
    h += "<ul id=\"links\">";
    for (const auto& l : *ls) {
      h += "<li class=\"link\" data-reference=\"" + escape(l.reference) + "\"><strong>" + escape(l.partner_name) +
           "</strong> (" + escape(web::html::state_words(l.status, locale)) + ")<br>" +
           money::format(l.limits.per_payment, l.currency, true) + " " + t.per_payment + ", " +
           money::format(l.limits.per_period, l.currency, true) + " " + t.per_period + " " +
           period_text(l.limits.period_ms) + "<br>" + t.spent + " : " +
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
             "\"><button class=\"go\" type=\"submit\">" + t.approve + "</button></form>";
      if (l.status != kUnlinked)
        h += "<form method=\"post\" action=\"wallet\"><input type=\"hidden\" name=\"lang\" value=\"" + lang + "\">" +
             web::Csrf::field_html(csrf) +
             "<input type=\"hidden\" name=\"action\" value=\"unlink\"><input type=\"hidden\" name=\"link\" "
             "value=\"" +
             escape(l.reference) + "\"><button class=\"no\" type=\"submit\">" + t.unlink + "</button></form>";
      h += "</li>";
    }
    h += "</ul>";
  }
  // Payments beyond the consent, waiting for the user: approved here with their code (the user
  // never has to hand it to the partner), or declined.
  std::vector<PendingPayment> pending;
  (void)db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(pending, pending_payments(c, wallet, at));
    return {};
  });
  if (!pending.empty()) {
    h += "<h2>" + std::string(t.pending) + "</h2><p class=\"hint\">" + t.pending_hint + "</p><ul id=\"pending\">";
    for (const auto& p : pending) {
      const std::string ref = escape(p.reference);
      auto form = [&](std::string_view action, const std::string& inside) {
        return "<form method=\"post\" action=\"wallet\"><input type=\"hidden\" name=\"lang\" value=\"" + lang + "\">" +
               web::Csrf::field_html(csrf) + "<input type=\"hidden\" name=\"action\" value=\"" + std::string(action) +
               "\"><input type=\"hidden\" name=\"payment\" value=\"" + ref + "\">" + inside + "</form>";
      };
      h += "<li class=\"payment\" data-reference=\"" + ref + "\"><strong>" + escape(p.partner_name) +
           "</strong> · <strong>" + money::format(p.amount + p.fee, p.currency, true) + "</strong> (" + t.fee + " " +
           money::format(p.fee, p.currency, true) + ")";
      if (!p.description.empty()) h += "<br>" + escape(p.description);
      h += "<br>" + ref;
      h += form("pay_approve", "<label for=\"otp-" + ref + "\">" + std::string(t.pay_code) +
                                   "</label><input id=\"otp-" + ref +
                                   "\" name=\"otp\" inputmode=\"numeric\" autocomplete=\"one-time-code\" "
                                   "pattern=\"[0-9]{4,8}\" required><button class=\"go\" type=\"submit\">" +
                                   t.approve_payment + "</button>");
      h += form("pay_code", "<button class=\"secondary\" type=\"submit\">" + std::string(t.resend) + "</button>");
      h +=
          form("pay_decline", "<button class=\"secondary no\" type=\"submit\">" + std::string(t.decline) + "</button>");
      h += "</li>";
    }
    h += "</ul>";
    pg.extra_head_html =
        "<style>li.payment{margin-bottom:1.25rem;padding-bottom:1rem;border-bottom:1px solid #ccc}</style>";
  }
  h += "<h2>" + std::string(t.history) + "</h2>";
  auto hist = history(wallet, std::nullopt, 20);
  if (!hist || hist->items.empty()) {
    h += "<p>" + std::string(t.no_history) + "</p>";
  } else {
    h += "<ul id=\"history\">";
    for (const auto& m : hist->items) {
      // A top-up or withdrawal says what it is (its memo) rather than whose account carried it.
      std::string who = m.merchant_name && !m.memo.starts_with("wallet ") ? *m.merchant_name : m.memo;
      const std::string when = tz::date_time(m.at, locale, tz::of_country(wallet.country));
      h += "<li>" + escape(when) + " · " + escape(who) + " · <strong>" + (m.amount > 0 ? "+" : "") +
           money::format(m.amount, m.currency, true) + "</strong></li>";
    }
    h += "</ul>";
  }
  h += "<form method=\"post\" action=\"wallet\"><input type=\"hidden\" name=\"lang\" value=\"" + lang + "\">" +
       web::Csrf::field_html(csrf) +
       "<input type=\"hidden\" name=\"action\" value=\"signout\"><button type=\"submit\">" + t.signout +
       "</button></form>";
  pg.body_html = std::move(h);
  return web::html::page_response(200, pg);
}

web::Response Service::page_submit(web::Request& req) {
  auto parsed = web::parse_form(req.body);
  web::Fields form = parsed ? std::move(*parsed) : web::Fields{};
  const i18n::Locale locale = locale_of(req, &form);
  const Texts& t = texts(locale);
  const std::string lang(i18n::name(locale));
  const std::string action = web::field_value(form, "action");
  web::html::Page pg;
  pg.locale = locale;
  pg.title = t.title;
  pg.other_language_url = std::string("wallet?lang=") + (locale == i18n::Locale::en ? "fr" : "en");
  auto message_page = [&](int status, std::string text) {
    pg.body_html = "<p class=\"error\" id=\"error\">" + escape(text) + "</p><p><a href=\"wallet?lang=" + lang + "\">" +
                   t.title + "</a></p>";
    return web::html::page_response(status, pg);
  };
  // A refusal of the page's limits: 429 with Retry-After, and when to try again in words.
  auto too_many = [&](std::int64_t retry_after_ms) {
    const std::int64_t seconds = std::max<std::int64_t>(1, (retry_after_ms + 999) / 1000);
    web::Response res = message_page(429, std::string(t.too_many) + " " + retry_text(locale, seconds));
    res.set("Retry-After", std::to_string(seconds));
    return res;
  };
  // Sign-in and its codes are counted per address across nodes.
  if (options_.limiter) {
    auto d = options_.limiter->hit(
        "wallet-page:ip:" + req.remote_ip,
        limits::Policy{.limit = 30, .window_ms = 60'000, .name = "wallet_page_sign_ins_per_address"});
    if (d && !d->allowed) return too_many(d->retry_after_ms);
  }
  const std::string environment = options_.page_environment;
  if (action == "send" || action == "verify") {
    const std::string msisdn = digits_of(web::field_value(form, "phone"));
    if (msisdn.size() < 8 || msisdn.size() > 15) return message_page(400, t.bad_phone);
    if (action == "send" && options_.limiter) {
      // Codes asked per number, counted for every number alike (with a wallet or not) before
      // anything depends on whether it has one: as many as one code's sends (otp.max_sends) per
      // code lifetime (otp.ttl_seconds).
      const auto& o = otp_.options();
      auto d = options_.limiter->hit("wallet-page:send:" + msisdn,
                                     limits::Policy{.limit = std::max(1, o.max_sends),
                                                    .window_ms = std::max<std::int64_t>(60'000, o.ttl_ms),
                                                    .name = "wallet_page_codes_per_number"});
      if (!d) return message_page(503, d.error().code);
      if (!d->allowed) return too_many(d->retry_after_ms);
    }
    auto wallet = wallet_of(environment, msisdn);
    if (!wallet) return message_page(503, wallet.error().code);
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
        r.locale = locale;
        r.sandbox_code = environment == "sandbox" && payments::sandbox_fixed_code(msisdn);
        r.context = std::string(t.title);
        auto issued = otp_.issue(r);
        if (!issued && !issued.error().is(ErrorKind::rate_limited) && !issued.error().is(ErrorKind::conflict))
          spdlog::warn("wallet page sign-in code not sent: {}", issued.error().code);
      }
      pg.body_html = "<p id=\"sent\">" + std::string(t.code_sent) +
                     "</p><form method=\"post\" action=\"wallet\"><input type=\"hidden\" name=\"lang\" value=\"" +
                     lang +
                     "\"><input type=\"hidden\" name=\"action\" value=\"verify\"><input type=\"hidden\" "
                     "name=\"phone\" value=\"" +
                     escape(msisdn) + "\"><label for=\"otp\">" + t.code +
                     "</label><input id=\"otp\" name=\"otp\" inputmode=\"numeric\" autocomplete=\"one-time-code\" "
                     "pattern=\"[0-9]{4,8}\" required><button class=\"go\" type=\"submit\" id=\"verify\">" +
                     t.verify + "</button></form>";
      return web::html::page_response(200, pg);
    }
    if (!*wallet) return message_page(400, t.wrong_code);
    // A malformed code is refused before an attempt is taken.
    auto code = otp::code_from_text(web::field_value(form, "otp"));
    if (!code) return message_page(400, t.wrong_code);
    auto v = otp_.verify(kSigninPurpose, (*wallet)->matricule, *code);
    if (!v) return message_page(503, v.error().code);
    if (!v->ok()) return message_page(400, t.wrong_code);
    web::Response res = web::Response::redirect("wallet?lang=" + lang, 303);
    if (Status st = open_session(res, (*wallet)->id, req.path); !st) return message_page(503, st.error().code);
    web::html::secure_headers(res);
    return res;
  }
  // Changes need the session and its CSRF token.
  Wallet wallet;
  if (!session_wallet(req, wallet)) return message_page(401, t.wrong_code);
  const std::string token = web::cookie(req, kCookie);
  const std::string csrf = page_csrf(options_).issue(token);
  if (!page_csrf(options_).check(token, web::field_value(form, "csrf"))) return message_page(403, "CSRF");
  // Back to the wallet page, which shows the notice (page_notice) of what was done.
  auto redirect = [&lang](std::string_view notice) {
    web::Response res = web::Response::redirect("wallet?lang=" + lang + "&notice=" + std::string(notice), 303);
    web::html::secure_headers(res);
    return res;
  };
  if (action == "unlink") {
    auto done = unlink_by_user(wallet, web::field_value(form, "link"));
    if (!done) return message_page(web::http_status(done.error().kind), done.error().code);
    return redirect("unlinked");
  }
  if (action == "approve") {
    // The limits the page showed with the button; a form without them approves nothing.
    Limits shown;
    for (auto [name, into] : {std::pair{"per_payment", &shown.per_payment}, std::pair{"per_period", &shown.per_period},
                              std::pair{"period_ms", &shown.period_ms}}) {
      const std::string v = web::field_value(form, name);
      if (v.empty() || v.size() > 15 || digits_of(v) != v)
        return message_page(400, std::string(t.refused) + " : " + name);
      *into = std::stoll(v);
    }
    auto done = consent_by_user(wallet, web::field_value(form, "link"), shown);
    if (!done) return message_page(web::http_status(done.error().kind), done.error().code);
    return redirect("approved");
  }
  if (action == "pay_approve" || action == "pay_code" || action == "pay_decline") {
    // A payment link/init left waiting: found as link/approve finds it (a payment of one of this
    // wallet's links, on this wallet), then executed with its code (the code is what approves a
    // payment beyond the consent: being signed in is not enough to move money out), or cancelled.
    const std::string reference = web::field_value(form, "payment");
    std::vector<PendingPayment> found;
    if (Status st = db_.read([&](store::Conn& c) -> Status {
          SIKA_ASSIGN_OR_RETURN(found, pending_payments(c, wallet, now(), reference));
          return {};
        });
        !st)
      return message_page(503, st.error().code);
    if (reference.empty() || found.empty()) return message_page(404, std::string(t.refused) + " : payment");
    auto l = link_of_wallet(wallet, found.front().link);
    if (!l) return message_page(web::http_status(l.error().kind), std::string(t.refused) + " : " + l.error().code);
    if (action != "pay_decline" && l->status != kActive)
      return message_page(409, std::string(t.refused) + " : " + std::string(l->status));
    auto partner = payments::acting_merchant(db_, l->partner_id, wallet.environment, 1, "wallet-page");
    if (!partner) return message_page(503, partner.error().code);
    if (!*partner) return message_page(404, std::string(t.refused) + " : payment");
    auto tx = payments_.find(**partner, reference, payments::kCollection);
    if (!tx || tx->metadata != json::dump(bj::object{{"wallet_link", l->reference}}) ||
        tx->customer_wallet != wallet.msisdn)
      return message_page(404, std::string(t.refused) + " : payment");
    if (action == "pay_decline") {
      auto done = payments_.cancel_collection(*tx, "wallet-page", "DECLINED_BY_CUSTOMER");
      if (!done)
        return message_page(web::http_status(done.error().kind), std::string(t.refused) + " : " + done.error().code);
      return redirect("declined");
    }
    std::optional<std::string> code;
    if (action == "pay_approve") {
      code = web::field_value(form, "otp");
      if (code->empty()) return message_page(400, t.wrong_code);
    }
    // Without a code, the payment's code is sent again (within its resend limits).
    auto done = payments_.execute_collection(std::move(*tx), std::move(code), "wallet-page");
    if (action == "pay_code") {
      if (!done && done.error().is(ErrorKind::invalid)) return redirect("paycode");
      return message_page(done ? 409 : web::http_status(done.error().kind),
                          std::string(t.refused) + " : " + (done ? "status" : done.error().code));
    }
    if (!done) {
      if (done.error().is(ErrorKind::invalid)) return message_page(400, t.wrong_code);
      return message_page(web::http_status(done.error().kind), std::string(t.refused) + " : " + done.error().code);
    }
    if (done->status != payments::TxStatus::completed) return message_page(402, t.insufficient);
    return redirect("paid");
  }
  if (action == "topup" || action == "withdraw_code" || action == "withdraw") {
    auto merchant = page_merchant();
    if (!merchant) return message_page(503, merchant.error().code);
    if (!*merchant) return message_page(404, "action");
    Transfer m;
    m.transaction_uuid = web::field_value(form, "uuid");
    const std::string amount = digits_of(web::field_value(form, "amount"));
    if (amount.empty() || amount.size() > 12 || amount != web::field_value(form, "amount"))
      return message_page(400, std::string(t.amount) + " ?");
    m.amount = std::stoll(amount);
    if (action == "topup") {
      auto done = topup(**merchant, wallet, m, "wallet-page");
      if (!done)
        return message_page(web::http_status(done.error().kind), std::string(t.refused) + " : " + done.error().code);
      return redirect("topup");
    }
    // A withdrawal needs a fresh code sent to the phone, bound to this withdrawal (its uuid and
    // amount): being signed in is not enough to move money out.
    if (!is_uuid(m.transaction_uuid)) return message_page(400, "uuid");
    const std::string subject = wallet.matricule + ":" + m.transaction_uuid + ":" + amount;
    if (action == "withdraw_code") {
      otp::IssueRequest r;
      r.purpose = std::string(kWithdrawPurpose);
      r.subject = subject;
      r.destination = "+" + wallet.msisdn;
      r.locale = locale;
      r.sandbox_code = environment == "sandbox" && payments::sandbox_fixed_code(wallet.msisdn);
      r.context = std::string(t.withdraw) + " : " + money::format(m.amount, wallet.currency);
      auto issued = otp_.issue(r);
      if (!issued && issued.error().is(ErrorKind::rate_limited)) {
        const bj::value& d = issued.error().details;
        const bj::value* after = d.is_object() ? d.as_object().if_contains("retry_after") : nullptr;
        return too_many(after && after->is_int64() ? after->as_int64() * 1000 : 60'000);
      }
      if (!issued) return message_page(web::http_status(issued.error().kind), issued.error().code);
      pg.body_html = "<p id=\"sent\">" + std::string(t.withdraw_code_sent) + "</p><p>" +
                     escape(money::format(m.amount, wallet.currency, true)) +
                     "</p><form method=\"post\" action=\"wallet\"><input type=\"hidden\" name=\"lang\" value=\"" +
                     lang + "\">" + web::Csrf::field_html(csrf) +
                     "<input type=\"hidden\" name=\"action\" value=\"withdraw\"><input type=\"hidden\" "
                     "name=\"uuid\" value=\"" +
                     escape(m.transaction_uuid) + "\"><input type=\"hidden\" name=\"amount\" value=\"" + amount +
                     "\"><label for=\"otp\">" + t.code +
                     "</label><input id=\"otp\" name=\"otp\" inputmode=\"numeric\" autocomplete=\"one-time-code\" "
                     "pattern=\"[0-9]{4,8}\" required><button class=\"go\" type=\"submit\" id=\"confirm-withdraw\">" +
                     t.confirm_withdraw + "</button></form>";
      return web::html::page_response(200, pg);
    }
    auto code = otp::code_from_text(web::field_value(form, "otp"));
    if (!code) return message_page(400, t.wrong_code);
    auto v = otp_.verify(kWithdrawPurpose, subject, *code);
    if (!v) return message_page(503, v.error().code);
    if (!v->ok()) return message_page(400, t.wrong_code);
    auto done = withdraw(**merchant, wallet, m);
    if (!done)
      return message_page(web::http_status(done.error().kind), std::string(t.refused) + " : " + done.error().code);
    return redirect("withdrawn");
  }
  if (action == "signout") {
    (void)db_.write([&](store::Conn& c) -> Status { return tables::delete_session(c, key_hash("session:" + token)); });
    web::Response res = web::Response::redirect("wallet?lang=" + lang, 303);
    res.set("Set-Cookie", web::set_cookie_value({.name = kCookie,
                                                 .value = "",
                                                 .path = req.path,
                                                 .max_age = 0,
                                                 .same_site = web::SameSite::strict,
                                                 .secure = options_.secure_cookies}));
    web::html::secure_headers(res);
    return res;
  }
  return message_page(400, "action");
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
    pg.title = texts(locale).title;
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
  const Texts& t = texts(locale);
  const std::string lang(i18n::name(locale));
  web::html::Page pg;
  pg.locale = locale;
  pg.title = t.title;
  auto message_page = [&](int status, std::string text) {
    pg.body_html = "<p class=\"error\" id=\"error\">" + escape(text) + "</p><p><a href=\"../wallet?lang=" + lang +
                   "\">" + t.title + "</a></p>";
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
  if (!user || !user->active) return message_page(401, t.wrong_code);
  if (user->phone.empty()) return message_page(404, t.no_phone);
  auto wallet = wallet_of_phone(user->phone, user->email);
  if (!wallet) return message_page(404, t.no_phone);
  web::Response res = web::Response::redirect("../wallet?lang=" + lang, 303);
  const std::string path = page_path(req.path);
  if (Status st = open_session(res, wallet->id, path); !st) return message_page(503, st.error().code);
  web::set_cookie(res,
                  {.name = kLoginCookie, .value = "", .path = path, .max_age = 0, .secure = options_.secure_cookies});
  web::html::secure_headers(res);
  return res;
}

}  // namespace sika::wallets
