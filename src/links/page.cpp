// The public page of a payment link (checkout surface, no account): the shop's display name,
// the title, the amount or an amount field, the operators of the link's country, the phone
// number, the OTP step when the operator needs a code, then a status page that follows the
// payment until it ends (live.js, or its Refresh link without JavaScript) and shows the receipt.
// Plain forms, usable without JavaScript; nothing about the
// merchant beyond its display name. Links are relative, so the pages work under any mount
// prefix of the checkout surface.
#include <boost/json.hpp>

#include <algorithm>

#include "catalog/fees.hpp"
#include "catalog/numbering.hpp"
#include "core/money.hpp"
#include "core/random.hpp"
#include "core/time.hpp"
#include "core/time_zone.hpp"
#include "links/service.hpp"
#include "merchant/merchant.hpp"
#include "payments/store.hpp"
#include "web/envelope.hpp"
#include "web/html.hpp"
#include "web/texts.hpp"

namespace sika::links {

namespace bj = boost::json;
using web::field_value;
using web::html::escape;
using web::html::page_locale;

namespace {

// The page's texts (web/texts.hpp).
constexpr web::texts::Entry kTextsData[] = {
    {"pay_title", "Payer", "Pay"},
    {"amount", "Montant", "Amount"},
    {"operator", "Opérateur", "Operator"},
    {"phone", "Numéro de téléphone", "Phone number"},
    {"phone_hint", "avec l'indicatif du pays, ex.", "with the country code, e.g."},
    {"otp", "Code à usage unique (OTP)", "One-time code (OTP)"},
    {"otp_how", "pour l'obtenir :", "to get it:"},
    {"submit", "Payer maintenant", "Pay now"},
    {"waiting",
     "Une demande de paiement a été envoyée sur votre téléphone. Validez-la avec votre code secret. "
     "Cette page se met à jour toute seule.",
     "A payment request was sent to your phone. Approve it with your PIN. This page refreshes by "
     "itself."},
    {"completed", "Paiement réussi. Merci !", "Payment completed. Thank you!"},
    {"failed", "Le paiement n'a pas abouti.", "The payment did not go through."},
    {"receipt", "Reçu", "Receipt"},
    {"refunded", "Remboursé :", "Refunded:"},
    {"partly_refunded", "Remboursé en partie :", "Partly refunded:"},
    {"reference", "Référence", "Reference"},
    {"fee", "Frais", "Fee"},
    {"total", "Total payé", "Total paid"},
    {"date", "Date", "Date"},
    {"again", "Réessayer", "Try again"},
    {"status", "Statut", "Status"},
    {"unavailable", "Ce lien de paiement n'accepte plus de paiement.", "This payment link no longer accepts payments."},
    {"not_found", "Ce lien de paiement n'existe pas.", "This payment link does not exist."},
    {"to_pay", "Total à payer", "Total to pay"},
};
constexpr auto kTexts = web::texts::table(kTextsData);
const web::texts::Enrolled kEnrolled{"links/page", kTexts};
using Key = web::texts::Key<kTexts>;
using Words = web::texts::Words<kTexts>;

// The message a payer reads for a refusal: the field problems, or the error's text.
std::string notice_of(const Error& e, i18n::Locale l) {
  if (e.details.is_object()) {
    std::string out;
    for (const auto& [k, v] : e.details.as_object()) {
      if (k == "otp_helper") continue;
      if (v.is_string()) out += std::string(k) + ": " + std::string(v.as_string()) + ". ";
    }
    if (!out.empty()) return out;
  }
  return std::string(i18n::text(e.code, l));
}

// What the payer will pay with each operator, before paying: the fee of the payments fee engine
// (catalog::quote_fee, which prices the collection) for `amount`, and the total; with the fee on
// the merchant the total is the price. A WALLET link is priced with the country's Sika wallet
// service, as its payment is.
std::string fee_table(const catalog::Catalog& cat, const Link& link,
                      const std::vector<std::pair<std::string, std::string>>& operators, std::int64_t amount,
                      const Words& t) {
  if (amount <= 0 || !cat.loaded()) return {};
  std::vector<std::pair<std::string, std::string>> priced;
  for (const auto& op : operators) {
    const catalog::PaymentService* s = cat.service(op.first);
    if (s && link.channel == payments::kChannelWallet) {
      for (const auto& w : cat.services())
        if (w.kind == catalog::ServiceKind::wallet && w.country_id == s->country_id && cat.usable(w)) {
          priced.emplace_back(w.code, w.name);
          break;
        }
      break;
    }
    priced.push_back(op);
  }
  std::string rows;
  for (const auto& [code, name] : priced) {
    auto q = catalog::quote_fee(cat, catalog::Operation::collection, catalog::ServiceKey(code), std::nullopt, amount,
                                link.user_tier);
    if (!q) continue;
    const std::int64_t fee = link.fee_bearer == payments::kMerchantBearsFee ? 0 : q->fee;
    rows += "<tr><th scope=\"row\">" + escape(name) + "</th><td>" + money::format(fee, link.currency, true) +
            "</td><td><strong>" + money::format(amount + fee, link.currency, true) + "</strong></td></tr>";
  }
  if (rows.empty()) return {};
  return "<table class=\"fees\" id=\"fees\"><thead><tr><th scope=\"col\">" + escape(t("operator")) +
         "</th><th scope=\"col\">" + escape(t("fee")) + "</th><th scope=\"col\">" + escape(t("to_pay")) +
         "</th></tr></thead><tbody>" + rows + "</tbody></table>";
}

// The operator preselected: the one chosen, unless the number typed belongs to another offered
// operator (catalog/numbering.hpp).
std::string preselected(const std::shared_ptr<const catalog::Catalog>& cat,
                        const std::vector<std::pair<std::string, std::string>>& offered, const web::Fields& values) {
  std::string chosen = field_value(values, "provider");
  const std::string phone = field_value(values, "customer_phone");
  if (!cat || phone.empty()) return chosen;
  std::vector<std::string> codes;
  for (const auto& op : offered) codes.push_back(op.first);
  return catalog::numbering::preselect(*cat, codes, chosen, phone);
}

}  // namespace

// What the form shows; `notice` and `otp_helper` come from a refused submission.
struct Service::Form {
  std::string notice;
  std::string otp_helper;
  web::Fields values;
};

std::optional<web::Response> Service::page_throttled(const web::Request& req, i18n::Locale locale) {
  limits::Decision d = page_views_.hit(req.remote_ip, options_.page_views_per_address);
  if (d.allowed) return std::nullopt;
  const Error refused = limits::refusal(d, "page views per address per minute");
  web::html::Page page;
  page.locale = locale;
  page.title = Words{locale}("pay_title");
  page.body_html = "<p role=\"alert\">" + escape(i18n::text(refused.code, locale)) + "</p>";
  web::Response r = web::html::page_response(429, page);
  r.set("Retry-After", std::to_string(refused.details.at("retry_after").as_int64()));
  return r;
}

web::Response Service::page(web::Request& req) {
  const i18n::Locale locale = page_locale(req);
  if (auto refused = page_throttled(req, locale)) return std::move(*refused);
  Form form;
  return render_form(req, locale, form, 200);
}

web::Response Service::render_form(const web::Request& req, i18n::Locale locale, const Form& form, int status) {
  const Words t{locale};
  const std::string code = req.path_param("shortCode");
  auto link = by_code(code);
  web::html::Page page;
  page.locale = locale;
  page.other_language_url = web::percent_encode(code) + "?lang=" + std::string(web::html::other_language(locale));
  if (!link) {
    page.title = t("pay_title");
    page.body_html = "<p role=\"alert\">" + escape(t("not_found")) + "</p>";
    return web::html::page_response(link.error().is(ErrorKind::not_found) ? 404 : 400, page);
  }
  auto shop = shop_of(*link);
  page.title = std::string(t("pay_title")) + " " + (shop ? shop->name : std::string());
  std::string& h = page.body_html;
  h += "<h2>" + escape(link->title.empty() ? link->reference : link->title) + "</h2>";
  if (!link->description.empty()) h += "<p>" + escape(link->description) + "</p>";
  if (link->status_at(now()) != kActive) {
    h += "<p role=\"alert\">" + escape(t("unavailable")) + "</p>";
    return web::html::page_response(410, page);
  }
  if (!form.notice.empty()) h += "<p role=\"alert\" class=\"error\">" + escape(form.notice) + "</p>";
  const std::string uuid = form.values.empty() ? uuid_v4() : field_value(form.values, "transaction_uuid");
  h +=
      "<form method=\"post\" action=\"" + escape(link->short_code) + "?lang=" + std::string(i18n::name(locale)) + "\">";
  h += "<input type=\"hidden\" name=\"transaction_uuid\" value=\"" + escape(uuid) + "\">";
  if (link->amount) {
    h += "<p class=\"amount\">" + escape(t("amount")) + " : <strong>" +
         money::format(*link->amount, link->currency, true) + "</strong></p>";
  } else {
    h += "<label>" + escape(t("amount")) + " (" + escape(link->currency) +
         ")<input name=\"amount\" inputmode=\"numeric\" pattern=\"[0-9]+\" required value=\"" +
         escape(field_value(form.values, "amount")) + "\"";
    if (link->min_amount) h += " min=\"" + std::to_string(*link->min_amount) + "\"";
    if (link->max_amount) h += " max=\"" + std::to_string(*link->max_amount) + "\"";
    h += "></label>";
  }
  h += "<label>" + escape(t("operator")) + "<select name=\"provider\" required>";
  const auto offered = operators(*link, shop ? shop->countries : std::vector<std::string>{});
  const std::string chosen = preselected(catalog_(), offered, form.values);
  for (const auto& s : offered)
    h += "<option value=\"" + escape(s.first) + "\"" + (s.first == chosen ? " selected" : "") + ">" + escape(s.second) +
         "</option>";
  h += "</select></label>";
  {
    // The fee and the total are shown before paying (for an open amount, once it is typed).
    std::int64_t amount = link->amount.value_or(0);
    const std::string typed = field_value(form.values, "amount");
    if (!link->amount && !typed.empty() && typed.size() <= 12 &&
        typed.find_first_not_of("0123456789") == std::string::npos)
      amount = std::stoll(typed);
    if (auto cat = catalog_()) h += fee_table(*cat, *link, offered, amount, t);
    page.extra_head_html +=
        "<style>table.fees{width:100%;border-collapse:collapse;margin:.25rem 0 1rem}table.fees th,table.fees "
        "td{text-align:left;padding:.4rem .3rem;border-bottom:1px solid #ccc}table.fees td{white-space:nowrap}"
        "</style>";
  }
  std::string example;  // a number of the link's country
  if (auto cat = catalog_())
    if (const catalog::Country* c =
            cat->country_for(link->currency, shop ? shop->countries : std::vector<std::string>{}))
      example = c->example_msisdn();
  h += "<label>" + escape(t("phone")) + " <small>" + escape(t("phone_hint")) + " " + escape(example) +
       "</small><input name=\"customer_phone\" type=\"tel\" inputmode=\"tel\" autocomplete=\"tel\" required "
       "placeholder=\"" +
       escape(example) + "\" value=\"" + escape(field_value(form.values, "customer_phone")) + "\"></label>";
  if (!form.otp_helper.empty()) {
    h += "<label>" + escape(t("otp")) + " <small>" + escape(t("otp_how")) + " " + escape(form.otp_helper) +
         "</small><input name=\"otp\" inputmode=\"numeric\" autocomplete=\"one-time-code\" required></label>";
  }
  h += "<button type=\"submit\">" + escape(t("submit")) + "</button></form>";
  return web::html::page_response(status, page);
}

web::Response Service::page_submit(web::Request& req) {
  const i18n::Locale locale = page_locale(req);
  auto fields = web::parse_form(req.body);
  Form form;
  if (!fields) {
    form.notice = notice_of(fields.error(), locale);
    return render_form(req, locale, form, 400);
  }
  form.values = *fields;
  bj::object body;
  for (const char* key : {"customer_phone", "transaction_uuid", "provider", "otp"}) {
    std::string v = field_value(*fields, key);
    if (!v.empty()) body[key] = v;
  }
  std::string amount = field_value(*fields, "amount");
  if (!amount.empty()) {
    if (amount.size() > 15 || amount.find_first_not_of("0123456789") != std::string::npos) {
      form.notice =
          "amount: " + std::string(locale == i18n::Locale::fr ? "entrez un nombre entier" : "enter a whole number");
      return render_form(req, locale, form, 400);
    }
    body["amount"] = std::stoll(amount);
  }
  json::FieldErrors errors;
  PayRequest p = parse_pay(body, errors, payments_.otp_code_length());
  if (!errors.empty()) {
    form.notice = notice_of(errors.status().error(), locale);
    return render_form(req, locale, form, 400);
  }
  // The OTP step: the form comes back with the code field and the operator's helper text.
  if (auto link = by_code(req.path_param("shortCode"))) {
    if (auto helper = otp_step(*link, p.provider.value_or(""), p.otp.has_value())) {
      form.otp_helper = *helper;
      return render_form(req, locale, form, 200);
    }
  }
  if (auto st = throttle(req, req.path_param("shortCode")); !st) {
    form.notice = notice_of(st.error(), locale);
    return render_form(req, locale, form, web::http_status(st.error().kind));
  }
  auto tx = pay_link(req.path_param("shortCode"), p);
  if (!tx) {
    form.notice = notice_of(tx.error(), locale);
    return render_form(req, locale, form, web::http_status(tx.error().kind));
  }
  return web::Response::redirect(web::percent_encode(req.path_param("shortCode")) +
                                     "/status?t=" + web::percent_encode(p.transaction_uuid) +
                                     "&lang=" + std::string(i18n::name(locale)),
                                 303);
}

web::Response Service::status_page(web::Request& req) {
  const i18n::Locale locale = page_locale(req);
  if (auto refused = page_throttled(req, locale)) return std::move(*refused);
  const Words t{locale};
  const std::string code = req.path_param("shortCode");
  const std::string payer_uuid = req.query_param("t").value_or("");
  web::html::Page page;
  page.locale = locale;
  page.title = t("receipt");
  page.other_language_url =
      "status?t=" + web::percent_encode(payer_uuid) + "&lang=" + std::string(web::html::other_language(locale));
  auto link = by_code(code);
  std::optional<payments::Transaction> tx;
  if (link && is_uuid(payer_uuid)) {
    auto st = db_.read([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(tx, payments::tables::find_by_uuid(c, link->merchant_id, link->environment,
                                                               collection_uuid(*link, payer_uuid)));
      return {};
    });
    if (!st) tx.reset();
  }
  if (!tx) {
    page.body_html = "<p role=\"alert\">" + escape(t("not_found")) + "</p>";
    return web::html::page_response(404, page);
  }
  auto now_tx = payments_.current(*tx, "payment-link-page");
  if (now_tx) tx = std::move(*now_tx);
  std::string& h = page.body_html;
  auto shop = shop_of(*link);
  if (shop) h += "<p>" + escape(shop->name) + "</p>";
  page.live_state = std::string(payments::to_string(tx->status));
  if (!payments::was_paid(tx->status)) page.title = t("pay_title");  // a receipt once paid only
  if (!payments::is_terminal(tx->status)) {
    // A payment on its way: live.js follows it (web::html::live_html), no meta refresh.
    h += web::html::live_html(
        {.state = page.live_state,
         .page_url = "status?t=" + web::percent_encode(payer_uuid) + "&lang=" + std::string(i18n::name(locale)),
         .script_src = "../../live.js",
         .message_html = "<p>" + escape(t("waiting")) + "</p>"},
        locale);
  } else if (payments::was_paid(tx->status)) {
    // Paid; refunded in whole or in part afterwards (REFUNDED is a paid payment given back).
    h += "<p role=\"status\" class=\"ok\"><strong>" + escape(t("completed")) + "</strong></p>";
    if (tx->refunded_amount > 0)
      h += "<p role=\"status\">" +
           escape(tx->status == payments::TxStatus::refunded ? t("refunded") : t("partly_refunded")) + " " +
           money::format(tx->refunded_amount, tx->currency, true) + "</p>";
  } else {
    h += "<p role=\"alert\">" + escape(t("failed")) + "</p><p><a href=\"../" + escape(code) +
         "?lang=" + std::string(i18n::name(locale)) + "\">" + escape(t("again")) + "</a></p>";
  }
  h += "<dl><dt>" + escape(t("reference")) + "</dt><dd>" + escape(tx->reference) + "</dd><dt>" + escape(t("amount")) +
       "</dt><dd>" + money::format(tx->amount, tx->currency, true) + "</dd><dt>" + escape(t("fee")) + "</dt><dd>" +
       money::format(tx->fee, tx->currency, true) + "</dd><dt>" + escape(t("total")) + "</dt><dd>" +
       money::format(tx->required_total, tx->currency, true) + "</dd><dt>" + escape(t("date")) + "</dt><dd>" +
       escape(tz::date_time(tx->updated_at, locale, shop ? merchant::time_zone_of(*shop) : "UTC")) + "</dd><dt>" +
       escape(t("status")) + "</dt><dd>" + escape(web::html::state_words(payments::to_string(tx->status), locale)) +
       "</dd></dl>";
  return web::html::page_response(200, page, web::html::live_policy({}));
}

Result<merchant::Merchant> Service::shop_of(const Link& link) {
  std::optional<merchant::Merchant> m;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(m, merchant::find_by_id(c, link.merchant_id));
    return {};
  }));
  if (!m) return not_found();
  return std::move(*m);
}

std::vector<std::pair<std::string, std::string>> Service::operators(const Link& link,
                                                                    const std::vector<std::string>& countries) const {
  std::vector<std::pair<std::string, std::string>> out;
  auto cat = catalog_();
  if (!cat) return out;
  if (link.provider) {
    const catalog::PaymentService* s = cat->service(*link.provider);
    out.emplace_back(*link.provider, s ? s->name : *link.provider);
    return out;
  }
  for (const auto& s : cat->services())
    if (s.currency == link.currency && cat->usable(s) && s.kind == catalog::ServiceKind::mobile_money) {
      const catalog::Country* country = cat->country_by_id(s.country_id);
      if (country && std::find(countries.begin(), countries.end(), country->code) != countries.end())
        out.emplace_back(s.code, s.name);
    }
  return out;
}

}  // namespace sika::links
