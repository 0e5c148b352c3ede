// The hosted checkout page (checkout surface, no account): the shop's name, the order's
// description and amount, the expiry with a countdown, the payment methods of the session with
// their fee and total, the phone number (prefilled from `customer`), the OTP step when the
// method needs a code, the payment's status refreshing itself until it ends, another method
// after a failure, and cancel (back to failureUrl). Plain forms: usable without JavaScript;
// /page.js counts the expiry down, /live.js follows a payment on its way (web::html::live_html). Links are relative, so
// the page works under any mount prefix of the checkout surface.
#include <boost/json.hpp>
#include <boost/url/parse.hpp>

#include <algorithm>

#include "catalog/fx.hpp"
#include "catalog/numbering.hpp"
#include "checkout/service.hpp"
#include "core/codes.hpp"
#include "core/money.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "core/time_zone.hpp"
#include "payments/failure.hpp"
#include "web/envelope.hpp"
#include "web/html.hpp"
#include "web/texts.hpp"

namespace sika::checkout {

namespace bj = boost::json;
using web::field_value;
using web::html::escape;
using web::html::page_locale;

namespace {

// The page's texts (web/texts.hpp).
constexpr web::texts::Entry kTextsData[] = {
    {"pay", "Payer", "Pay"},
    {"amount", "Montant", "Amount"},
    {"fee", "Frais", "Fee"},
    {"total", "Total à payer", "Total to pay"},
    {"method", "Moyen de paiement", "Payment method"},
    {"phone", "Numéro de téléphone", "Phone number"},
    {"phone_hint", "avec l'indicatif du pays, ex.", "with the country code, e.g."},
    {"otp", "Code à usage unique (OTP)", "One-time code (OTP)"},
    {"otp_how", "pour l'obtenir :", "to get it:"},
    {"submit", "Payer", "Pay"},
    {"cancel", "Annuler et retourner à la boutique", "Cancel and return to the shop"},
    {"expires_in", "Expire dans", "Expires in"},
    {"minutes", "min", "min"},
    {"waiting",
     "Une demande de paiement a été envoyée sur votre téléphone. Validez-la avec votre code secret. Cette page se "
     "met à jour toute seule.",
     "A payment request was sent to your phone. Approve it with your PIN. This page refreshes by itself."},
    {"completed", "Paiement réussi. Merci ! Retour à la boutique…",
     "Payment completed. Thank you! Returning to the shop…"},
    {"back", "Retourner à la boutique", "Return to the shop"},
    {"refunded", "Remboursé", "Refunded"},
    {"refunded_all", "Cette commande a été payée, puis remboursée :", "This order was paid, then refunded:"},
    {"partly_refunded", "Remboursé en partie :", "Partly refunded:"},
    {"refunded_of", "sur", "of"},
    {"expired", "Cette session de paiement a expiré.", "This checkout session has expired."},
    {"cancelled", "Ce paiement a été annulé.", "This payment was cancelled."},
    {"not_found", "Cette session de paiement n'existe pas.", "This checkout session does not exist."},
    {"no_method", "Aucun moyen de paiement n'est disponible pour cette commande.",
     "No payment method is available for this order."},
    {"refused", "Le paiement n'a pas pu être créé", "The payment could not be created"},
    {"fix_fields", "Corrigez ces champs", "Please correct these fields"},
    {"order", "Commande", "Order"},
    {"rate", "taux garanti jusqu'à l'expiration :", "rate locked until expiry:"},
};
constexpr auto kTexts = web::texts::table(kTextsData);
const web::texts::Enrolled kEnrolled{"checkout/page", kTexts};
using Key = web::texts::Key<kTexts>;
using Words = web::texts::Words<kTexts>;

std::string lang_of(i18n::Locale l) { return std::string(i18n::name(l)); }

// The problems of an error as a list a customer (or the merchant's developer) reads, in the
// page's language: each typed problem from its reason's text; an untyped details object as sent.
std::string problems_html(const Error& e, i18n::Locale l) {
  std::string out;
  for (const auto& p : e.problems)
    if (!p.field.empty())
      out += "<li><strong>" + escape(p.field) + "</strong> : " + escape(reason::text(p.problem, l)) + "</li>";
  if (e.problems.empty() && e.details.is_object())
    for (const auto& [k, v] : e.details.as_object()) {
      if (k == "otp_helper" || !v.is_string()) continue;
      out += "<li><strong>" + escape(k) + "</strong> : " + escape(v.as_string()) + "</li>";
    }
  if (!out.empty()) return "<ul>" + out + "</ul>";
  return "<p>" + escape(i18n::text(e.code, l)) + "</p>";
}

// scheme://host[:port] of an http(s) URL, for the page's form-action (cancel redirects there).
std::string origin_of(std::string_view url) {
  auto u = boost::urls::parse_absolute_uri(url);
  if (!u) return "";
  std::string o = std::string(u->scheme()) + "://" + std::string(u->encoded_host());
  if (u->has_port()) o += ":" + std::string(u->port());
  return o;
}

// "à 14:35 UTC+1": the expiry in the merchant's time zone.
std::string expiry_at(const Session& s, const merchant::Merchant& m, i18n::Locale l) {
  return std::string(l == i18n::Locale::fr ? "à " : "at ") + tz::time_of_day(s.expires_at, merchant::time_zone_of(m));
}

// An example phone number of the country the session collects in (its area, else the
// merchant's country of its currency).
std::string example_phone(const std::shared_ptr<const catalog::Catalog>& cat, const Session& s,
                          const std::vector<std::string>& countries) {
  if (!cat) return "";
  const catalog::Country* c = s.area.empty() ? cat->country_for(s.currency, countries) : cat->country(s.area);
  return c ? c->example_msisdn() : "";
}

web::html::PagePolicy page_policy(const Session* s) {
  web::html::PagePolicy p;
  p.self_scripts = true;
  if (s) {
    // Cancelling posts to us and is answered with a redirect to the merchant's site, which
    // browsers check against form-action.
    for (const std::string* url : {&s->success_url, &s->failure_url})
      if (std::string o = origin_of(*url); !o.empty() && p.form_action.find(" " + o) == std::string::npos)
        p.form_action += " " + o;
  }
  return p;
}

}  // namespace

web::Response Service::message_page(i18n::Locale locale, std::string_view title, std::string_view text, int status) {
  web::html::Page page;
  page.locale = locale;
  page.title = std::string(title);
  page.body_html = "<div class=\"card\"><p role=\"alert\">" + escape(text) + "</p></div>";
  return web::html::page_response(status, page, page_policy(nullptr));
}

web::Response Service::refusal(const web::Request& req, const Error& err) {
  if (req.content_type() != "application/x-www-form-urlencoded") return web::error(req, err);
  const i18n::Locale locale = page_locale(req);
  const Words t{locale};
  web::html::Page page;
  page.locale = locale;
  page.title = t("refused");
  page.body_html = "<div class=\"card\" role=\"alert\"><p class=\"error\">" + escape(t("fix_fields")) + "</p>" +
                   problems_html(err, locale) + "</div>";
  return web::html::page_response(web::http_status(err.kind), page, page_policy(nullptr));
}

namespace {

// The order: what it is for, its amount, and while the session is open, when it expires.
std::string summary_html(const Words& t, const Session& s, const merchant::Merchant& m, i18n::Locale locale,
                         std::int64_t left_ms, bool live) {
  std::string h = "<div class=\"card\"><p>" + escape(s.description) + "</p><p class=\"muted\">" + escape(t("order")) +
                  " " + escape(s.order_id) + "</p><p class=\"amount\">" + money::format(s.amount, s.currency, true) +
                  "</p>";
  if (live)
    h += "<p class=\"muted\">" + escape(t("expires_in")) + " <span id=\"countdown\" data-expires-at=\"" +
         std::to_string(s.expires_at) + "\">" + std::to_string((left_ms + 59'999) / 60'000) + " " + t("minutes") +
         "</span> (" + escape(expiry_at(s, m, locale)) + ")</p>";
  return h + "</div>";
}

// Why the form is shown again: the notice of the last submission, else the failure of the last
// attempt; nothing on a first visit.
std::string failure_html(std::string_view notice, const std::optional<payments::Transaction>& tx, i18n::Locale locale) {
  if (!notice.empty())
    return "<div class=\"card\" role=\"alert\"><p class=\"error\">" + std::string(notice) + "</p></div>";
  if (tx && payments::is_terminal(tx->status))
    return "<div class=\"card\" role=\"alert\"><p class=\"error\">" +
           escape(i18n::text(payments::failure_message_code(payments::failure_reason(*tx)), locale)) + "</p><p>" +
           escape(i18n::text("checkout_try_again", locale)) + "</p></div>";
  return {};
}

// The methods offered, one radio button each with its fee and total (and its conversion).
std::string methods_html(const Words& t, const Session& s, const std::vector<Method>& offered,
                         const std::string& chosen) {
  std::string h = "<fieldset><legend>" + escape(t("method")) + "</legend>";
  for (const auto& mt : offered) {
    const std::string id = "m-" + escape(mt.code);
    h += "<label class=\"method\" for=\"" + id + "\"><input type=\"radio\" name=\"provider\" id=\"" + id +
         "\" value=\"" + escape(mt.code) + "\"" + (mt.code == chosen ? " checked" : "") + " required><span><strong>" +
         escape(mt.name) + "</strong><br>";
    if (mt.quote)
      h += "<span class=\"muted fx\">" + money::format(s.amount, s.currency, true) + " = " +
           money::format(mt.price, mt.currency, true) + " (" + escape(t("rate")) + " 1 " + escape(s.currency) + " = " +
           escape(catalog::fx::ratio_text({mt.quote->numerator, mt.quote->denominator})) + " " + escape(mt.currency) +
           ")</span><br>";
    h += "<span class=\"muted\">" + escape(t("fee")) + " " + money::format(mt.fee, mt.currency, true) + " · " +
         escape(t("total")) + " " + money::format(mt.total, mt.currency, true) + "</span></span></label>";
  }
  return h + "</fieldset>";
}

// The payer's number, with an example of the session's country.
std::string phone_html(const Words& t, const std::string& example, const std::string& phone) {
  return "<label for=\"phone\">" + escape(t("phone")) + " <small class=\"muted\">" + escape(t("phone_hint")) + " " +
         escape(example) +
         "</small></label><input id=\"phone\" name=\"customer_phone\" type=\"tel\" inputmode=\"tel\" "
         "autocomplete=\"tel\" required placeholder=\"" +
         escape(example) + "\" value=\"" + escape(phone) + "\">";
}

// The method preselected for the payer's number (catalog/numbering.hpp): the one chosen unless
// the number belongs to another offered operator.
std::string predicted_method(const std::shared_ptr<const catalog::Catalog>& cat, const std::vector<Method>& offered,
                             const std::string& chosen, const std::string& phone) {
  if (!cat || phone.empty()) return chosen;
  std::vector<std::string> codes;
  for (const Method& m : offered) codes.push_back(m.code);
  return catalog::numbering::preselect(*cat, codes, chosen, phone);
}

// The page of a session that takes no new attempt: paid, paying (followed live), cancelled or
// expired; nullopt while it takes one.
std::optional<web::Response> settled_page(const Words& t, web::html::Page& page, const Session& s,
                                          const std::optional<payments::Transaction>& tx, const std::string& ref,
                                          const std::string& lang, bool live, i18n::Locale locale) {
  if (tx && payments::was_paid(tx->status) && tx->refunded_amount > 0) {
    // Paid, then refunded in whole or in part: the order stays paid; the page says what came back
    // (what the customer paid: the collection's required_total; the fee is not given back).
    const bool all = tx->status == payments::TxStatus::refunded;
    const std::string back = money::format(tx->refunded_amount, tx->currency, true);
    const std::string headline = all ? escape(t("refunded"))
                                     : escape(t("partly_refunded")) + " " + back + " " + escape(t("refunded_of")) +
                                           " " + money::format(tx->required_total, tx->currency, true);
    page.body_html += "<div class=\"card\"><p class=\"ok\" role=\"status\"><strong>" + headline + "</strong></p>" +
                      (all ? "<p>" + escape(t("refunded_all")) + " " + back + "</p>" : std::string()) + "<p>" +
                      escape(tx->reference) + "</p><p><a href=\"" + ref + "/return\">" + escape(t("back")) +
                      "</a></p></div>";
    return web::html::page_response(200, page, page_policy(&s));
  }
  if (tx && payments::was_paid(tx->status)) {
    page.body_html += web::html::live_html({.page_url = s.reference + lang,
                                            .script_src = "../live.js",
                                            .message_html = "<p class=\"ok\"><strong>" + escape(t("completed")) +
                                                            "</strong></p><p>" + escape(tx->reference) + "</p>",
                                            .next_url = s.reference + "/return",
                                            .next_label = t("back")},
                                           locale);
    return web::html::page_response(200, page, web::html::live_policy(page_policy(&s)));
  }
  if (tx && tx->status == payments::TxStatus::pending) {
    page.body_html += web::html::live_html({.state = page.live_state,
                                            .page_url = s.reference + lang,
                                            .script_src = "../live.js",
                                            .message_html = "<p>" + escape(t("waiting")) + "</p>"},
                                           locale);
    return web::html::page_response(200, page, web::html::live_policy(page_policy(&s)));
  }
  if (s.status == kCancelled || !live) {
    page.body_html += "<div class=\"card\"><p role=\"alert\">" +
                      escape(s.status == kCancelled ? t("cancelled") : t("expired")) + "</p><p><a href=\"" + ref +
                      "/return\">" + escape(t("back")) + "</a></p></div>";
    return web::html::page_response(s.status == kCancelled ? 200 : 410, page, page_policy(&s));
  }
  return std::nullopt;
}

}  // namespace

web::Response Service::page(web::Request& req) {
  return render(req, page_locale(req), Session{}, "", false, PayForm{}, 200);
}

web::Response Service::render(const web::Request& req, i18n::Locale locale, const Session& given,
                              std::string_view notice, bool otp_step, const PayForm& values, int status) {
  const Words t{locale};
  const std::string reference = req.path_param("reference");
  Session s = given;
  if (s.id == 0) {
    auto found = session(reference);
    if (!found) return message_page(locale, t("pay"), t("not_found"), web::http_status(found.error().kind));
    s = std::move(found).value();
  }
  auto m = merchant_of(s.merchant_id);
  if (!m) return message_page(locale, t("pay"), t("not_found"), 404);
  auto tx_now = current(s);
  if (!tx_now) return message_page(locale, t("pay"), i18n::text(tx_now.error().code, locale), 503);
  const std::optional<payments::Transaction>& tx = *tx_now;
  const std::string ref = escape(s.reference);
  const std::string lang = "?lang=" + lang_of(locale);

  web::html::Page page;
  page.locale = locale;
  page.title = std::string(t("pay")) + " " + s.shop_name;
  page.other_language_url = s.reference + "?lang=" + std::string(web::html::other_language(locale));
  std::string& h = page.body_html;
  const std::int64_t left_ms = s.expires_at - now();
  const bool live = s.status_at(now()) == kOpen;
  h += summary_html(t, s, *m, locale, left_ms, live);
  page.extra_head_html =
      "<style>fieldset{border:0;padding:0;margin:0}.method{display:flex;gap:.6rem;align-items:flex-start;"
      "font-weight:400;padding:.6rem;border:1px solid #c8c8c8;border-radius:.35rem}.method input{width:auto;"
      "margin:.3rem 0 0}</style><script src=\"../page.js\" defer></script>";

  const std::string cancel_form = "<form method=\"post\" action=\"" + ref + "/cancel" + lang +
                                  "\"><button type=\"submit\" class=\"secondary\">" + escape(t("cancel")) +
                                  "</button></form>";
  // A payment on its way: live.js follows it (web::html::live_html), no meta refresh.
  page.live_state = tx ? std::string(payments::to_string(tx->status)) : std::string(s.status_at(now()));
  if (auto settled = settled_page(t, page, s, tx, ref, lang, live, locale)) return std::move(*settled);

  // The form: a new attempt, or the code of the current one that waits for it.
  const bool waiting_for_code = tx && tx->status == payments::TxStatus::initiated;
  h += failure_html(notice, tx, locale);
  const std::vector<Method> offered = methods(s, m->countries);
  if (offered.empty()) {
    h += "<div class=\"card\"><p role=\"alert\">" + escape(t("no_method")) + "</p>" + cancel_form + "</div>";
    return web::html::page_response(200, page, page_policy(&s));
  }
  std::string phone = values.phone.empty() ? s.customer.phone : values.phone;
  if (phone.empty() && tx) phone = tx->customer_wallet;
  std::string chosen = values.provider;
  if (chosen.empty() && waiting_for_code) chosen = tx->service_code;
  if (!waiting_for_code) chosen = predicted_method(catalog_(), offered, chosen, phone);
  if (chosen.empty()) chosen = offered.front().code;
  h += "<form method=\"post\" action=\"" + ref + lang + "\" class=\"card\">";
  h += "<input type=\"hidden\" name=\"attempt\" value=\"" + std::to_string(s.attempt) + "\">";
  h += methods_html(t, s, offered, chosen);
  const std::string example = example_phone(catalog_(), s, m->countries);
  h += phone_html(t, example, phone);
  auto picked = std::find_if(offered.begin(), offered.end(), [&](const Method& x) { return x.code == chosen; });
  if (otp_step || waiting_for_code) {
    const std::string& helper = picked != offered.end() ? picked->otp_helper : options_.otp_helper;
    h += "<label for=\"otp\">" + escape(t("otp")) + " <small class=\"muted\">" + escape(t("otp_how")) + " " +
         escape(helper) +
         "</small></label><input id=\"otp\" name=\"otp\" inputmode=\"numeric\" autocomplete=\"one-time-code\" "
         "required autofocus>";
  }
  h += "<button type=\"submit\">" + escape(t("submit")) + "</button></form>";
  h += "<div class=\"card\">" + cancel_form + "</div>";
  return web::html::page_response(status, page, page_policy(&s));
}

web::Response Service::submit(web::Request& req) {
  const i18n::Locale locale = page_locale(req);
  const std::string reference = req.path_param("reference");
  auto fields = web::parse_form(req.body);
  if (!fields) return render(req, locale, Session{}, problems_html(fields.error(), locale), false, PayForm{}, 400);
  PayForm form;
  form.provider = field_value(*fields, "provider");
  form.phone = field_value(*fields, "customer_phone");
  if (std::string otp = field_value(*fields, "otp"); !otp.empty()) form.otp = otp;
  const std::string attempt = field_value(*fields, "attempt");
  if (attempt.empty() || attempt.size() > 9 || attempt.find_first_not_of("0123456789") != std::string::npos)
    return render(req, locale, Session{}, problems_html(field_error("attempt", Reason::whole_number), locale), false,
                  form, 400);
  form.seen_attempt = std::stoll(attempt);
  if (options_.limiter) {
    auto hit = options_.limiter->hit("checkout:pay:ip:" + req.remote_ip, options_.per_address);
    if (hit && !hit->allowed) {
      const Error e = limits::refusal(*hit, "payments per address per minute");
      return render(req, locale, Session{}, problems_html(e, locale), false, form, 429);
    }
  }
  auto tx = pay(reference, form);
  if (tx) return web::Response::redirect(web::percent_encode(reference) + "?lang=" + lang_of(locale), 303);
  const Error& e = tx.error();
  if (e.is(codes::otp_required)) return render(req, locale, Session{}, "", true, form, 200);
  if (e.is(ErrorKind::invalid) || e.is(ErrorKind::unavailable))
    return render(req, locale, Session{}, problems_html(e, locale), e.is(codes::invalid_otp), form,
                  web::http_status(e.kind));
  // The session moved on (paid, in progress, expired, another tab): the page shows where it is.
  return web::Response::redirect(web::percent_encode(reference) + "?lang=" + lang_of(locale), 303);
}

web::Response Service::cancel(web::Request& req) {
  const i18n::Locale locale = page_locale(req);
  const std::string reference = req.path_param("reference");
  auto url = return_to(reference, /*give_up=*/true);
  if (!url && url.error().is(ErrorKind::not_found))
    return message_page(locale, Words{locale}("pay"), Words{locale}("not_found"), 404);
  if (url && *url) return web::Response::redirect(**url, 303);
  return web::Response::redirect("../" + web::percent_encode(reference) + "?lang=" + lang_of(locale), 303);
}

web::Response Service::finish(web::Request& req) {
  const i18n::Locale locale = page_locale(req);
  const std::string reference = req.path_param("reference");
  auto url = return_to(reference, /*give_up=*/false);
  if (!url && url.error().is(ErrorKind::not_found))
    return message_page(locale, Words{locale}("pay"), Words{locale}("not_found"), 404);
  if (url && *url) return web::Response::redirect(**url, 303);
  return web::Response::redirect("../" + web::percent_encode(reference) + "?lang=" + lang_of(locale), 303);
}

namespace {

// Counts the expiry down on the page (the page works without it: it shows the minutes left
// and the time of expiry).
constexpr std::string_view kPageScript = R"JS((function () {
  var el = document.getElementById('countdown');
  if (!el) return;
  var at = Number(el.getAttribute('data-expires-at'));
  function tick() {
    var left = Math.max(0, Math.floor((at - Date.now()) / 1000));
    el.textContent = Math.floor(left / 60) + ':' + String(left % 60).padStart(2, '0');
    if (left === 0) { location.reload(); return; }
    setTimeout(tick, 1000);
  }
  tick();
})();
)JS";

// The pay button for a merchant's site: every <form data-sika-checkout> gets its fields checked
// and a styled button; the form itself posts to {checkout_url} as the plain HTML form does, so
// the page pays the same with or without this script.
constexpr std::string_view kButtonScript = R"JS((function () {
  var script = document.currentScript;
  var action = script && script.src ? script.src.replace(/\/button\.js(\?.*)?$/, '/') : '';
  function decorate(form) {
    if (form.getAttribute('data-sika-ready')) return;
    form.setAttribute('data-sika-ready', '1');
    if (!form.getAttribute('action') && action) form.setAttribute('action', action);
    form.setAttribute('method', 'post');
    var label = form.getAttribute('data-label') || 'Payer / Pay';
    var button = form.querySelector('button[type=submit]');
    if (!button) {
      button = document.createElement('button');
      button.type = 'submit';
      form.appendChild(button);
    }
    button.textContent = label;
    button.style.cssText = 'font:600 16px system-ui,sans-serif;color:#fff;background:#0b3d2e;border:0;' +
      'border-radius:6px;padding:12px 20px;cursor:pointer';
  }
  function all() {
    var forms = document.querySelectorAll('form[data-sika-checkout]');
    for (var i = 0; i < forms.length; i++) decorate(forms[i]);
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', all); else all();
})();
)JS";

web::Response script_response(std::string_view body) {
  web::Response res = web::Response::text(200, std::string(body), "text/javascript; charset=utf-8");
  res.set("Cache-Control", "public, max-age=300");
  res.set("X-Content-Type-Options", "nosniff");
  return res;
}

}  // namespace

web::Response Service::page_script(web::Request&) { return script_response(kPageScript); }
web::Response Service::button_script(web::Request&) { return script_response(kButtonScript); }

}  // namespace sika::checkout
