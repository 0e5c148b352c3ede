// The hosted confirmation page (checkout surface): shows what is being paid, lets the customer
// push the request to the phone (or pay from the platform wallet with the one-time code), or
// decline; fr/en. The link is a capability: it carries an HMAC of the transaction reference.
#include <spdlog/spdlog.h>
#include <boost/json.hpp>

#include "catalog/service.hpp"
#include "core/codes.hpp"
#include "core/crypto.hpp"
#include "core/money.hpp"
#include "core/reason.hpp"
#include "merchant/merchant.hpp"
#include "payments/failure.hpp"
#include "payments/service.hpp"
#include "payments/store.hpp"
#include "web/envelope.hpp"
#include "web/html.hpp"
#include "web/qr.hpp"
#include "web/texts.hpp"

namespace sika::payments {

namespace {

using web::html::escape;

std::string masked(std::string_view msisdn) {
  if (msisdn.size() <= 6) return "+" + std::string(msisdn);
  return "+" + std::string(msisdn.substr(0, 4)) + std::string(msisdn.size() - 6, '*') +
         std::string(msisdn.substr(msisdn.size() - 2));
}

// The page's texts (web/texts.hpp).
constexpr web::texts::Entry kTextsData[] = {
    {"title", "Confirmer le paiement", "Confirm the payment"},
    {"merchant", "Marchand", "Merchant"},
    {"description", "Objet", "For"},
    {"amount", "Montant", "Amount"},
    {"fee", "Frais", "Fee"},
    {"total", "Total à payer", "Total to pay"},
    {"wallet", "Numéro", "Number"},
    {"reference", "Référence", "Reference"},
    {"push", "Envoyer la demande sur mon téléphone", "Send the request to my phone"},
    {"pay_wallet", "Payer depuis mon portefeuille Sika", "Pay from my Sika wallet"},
    {"otp", "Code à usage unique (OTP)", "One-time code (OTP)"},
    {"decline", "Refuser le paiement", "Decline the payment"},
    {"initiated",
     "Vérifiez le montant puis envoyez la demande : vous la validerez sur votre téléphone avec votre code secret.",
     "Check the amount, then send the request: you will approve it on your phone with your PIN."},
    {"pending",
     "Une demande de paiement a été envoyée sur votre téléphone. Validez-la avec votre code secret. Cette page se met "
     "à jour toute seule.",
     "A payment request was sent to your phone. Approve it with your PIN. This page refreshes by itself."},
    {"completed", "Paiement réussi. Merci !", "Payment completed. Thank you!"},
    {"expired", "Cette demande de paiement a expiré.", "This payment request has expired."},
    {"cancelled", "Paiement annulé.", "Payment cancelled."},
    {"other_language", "English", "Français"},
    {"not_found", "Cette page de paiement n'existe pas.", "This payment page does not exist."},
    {"bad_otp", "Code incorrect.", "Incorrect code."},
    {"sent", "Demande envoyée.", "Request sent."},
    {"pending_redirect",
     "Payez dans l'application de l'opérateur : touchez le bouton ci-dessous sur votre téléphone, ou scannez le code "
     "QR depuis votre ordinateur. Cette page se met à jour toute seule.",
     "Pay in the operator's app: tap the button below on your phone, or scan the QR code from your computer. This "
     "page refreshes by itself."},
    {"pay_wave", "Payer avec Wave", "Pay with Wave"},
    {"pay_operator", "Payer dans l'application de l'opérateur", "Pay in the operator's app"},
    {"qr_label", "Code QR du paiement : scannez-le avec l'application de l'opérateur sur votre téléphone",
     "QR code of the payment: scan it with the operator's app on your phone"},
    {"qr_hint", "Sur ordinateur : scannez ce code avec votre téléphone.",
     "On a computer: scan this code with your phone."},
    {"redirect_initiated", "Vérifiez le montant puis continuez : vous validerez le paiement sur la page de ",
     "Check the amount, then continue: you will approve the payment on the page of "},
    {"continue", "Continuer vers ", "Continue to "},
    {"redirect_pending", "Vous allez être redirigé vers ", "You will be taken to "},
    {"redirect_pending_end", " pour valider le paiement. Revenez ensuite sur cette page : elle montre où il en est.",
     " to approve the payment. Then come back to this page: it shows where it stands."},
    {"confirm_phone",
     "Confirmez le paiement sur votre téléphone : une demande y a été envoyée. Rien reçu ? Demandez-la à nouveau.",
     "Confirm the payment on your phone: a request was sent to it. Nothing came? Ask for it again."},
    {"prompt_again", "Renvoyer la demande sur mon téléphone", "Send the request to my phone again"},
    {"prompted", "Demande renvoyée sur votre téléphone.", "The request was sent to your phone again."},
};
constexpr auto kTexts = web::texts::table(kTextsData);
const web::texts::Enrolled kEnrolled{"payments/page", kTexts};
using Key = web::texts::Key<kTexts>;
using Words = web::texts::Words<kTexts>;

// The confirmation page's stylesheet (in the shared layout, web::html::begin).
constexpr std::string_view kPageStyle =
    "body{font-family:system-ui,sans-serif;background:#f4f5f7;margin:0;padding:24px;color:#1d2433}"
    "main{max-width:440px;margin:auto;background:#fff;border-radius:12px;padding:24px;"
    "box-shadow:0 2px 8px rgba(0,0,0,.08)}h1{font-size:1.3em;margin-top:0}"
    "dl{display:grid;grid-template-columns:auto 1fr;gap:6px 16px}dt{color:#5b6473}dd{margin:0;text-align:right}"
    ".total{font-weight:700;font-size:1.1em}button{width:100%;padding:12px;border:0;border-radius:8px;"
    "font-size:1em;cursor:pointer;margin-top:8px}.go{background:#0b6bcb;color:#fff}"
    "a.button{display:block;text-align:center;padding:12px;border-radius:8px;text-decoration:none}.no{background:#"
    "e9ecf1}"
    "input{width:100%;padding:10px;font-size:1em;box-sizing:border-box;margin:4px 0 8px}"
    ".notice{padding:10px;border-radius:8px;background:#fff4d6}.ok{background:#dff6e5}.ko{background:#fde2e1}"
    "nav{text-align:right;font-size:.9em}a.go{display:block;text-align:center;padding:12px;border-radius:8px;"
    "text-decoration:none;margin-top:8px;font-weight:600}.qr{text-align:center;margin-top:16px}"
    ".qr svg{width:200px;height:200px}@media (max-width:600px){.qr{display:none}}";

i18n::Locale page_locale(const web::Request& req, const std::optional<std::string>& lang) {
  if (lang == "fr") return i18n::Locale::fr;
  if (lang == "en") return i18n::Locale::en;
  return req.locale;
}

web::Response not_found_page(i18n::Locale l) {
  const Words t{l};
  web::html::Page page;
  page.locale = l;
  page.title = "Sika";
  page.style = "";
  page.header = false;
  page.body_html = std::string("<p>") + t("not_found") + "</p>";
  return web::html::page_response(404, page);
}

// What the page says about a failed action.
std::string error_notice(const Error& e, i18n::Locale locale) {
  const Words t{locale};
  if (e.is(codes::invalid_otp)) return t("bad_otp");
  if (e.is(codes::empty_data))
    if (const Problem* otp = e.problem("otp")) return std::string(t("otp")) + ": " + reason::text(*otp, locale);
  return std::string(i18n::text(e.code, locale));
}

// The page's HTTP status after a failed action: the customer's mistakes are 400, the
// platform's own failures keep their status.
int page_status(const Error& e) { return e.server_side() ? web::http_status(e.kind) : 400; }

}  // namespace

// How the customer of `tx` approves it (render_page): in the operator's app, on the operator's
// page, or on the phone; and whether the operator's page or app has an address to go to.
Service::Way Service::way_of(const Transaction& tx) {
  Way w;
  Connector* conn = tx.channel == kChannelProvider ? connector_for(tx) : nullptr;
  w.redirect = conn && conn->redirects_customer();
  w.in_app = conn && conn->pays_in_app();
  w.prompt = tx.status == TxStatus::pending && conn && conn->prompts_again(order_for(tx));
  // Only a web address of the operator is ever a link (never another scheme).
  w.has_url = tx.status == TxStatus::pending &&
              (tx.customer_url.starts_with("https://") || tx.customer_url.starts_with("http://"));
  w.operator_name = tx.service_code;
  if (auto cat = catalog())
    if (const catalog::PaymentService* svc = cat->service(tx.service_code)) w.operator_name = svc->name;
  return w;
}

namespace {

// The status line of the page, in the way the customer approves it.
std::string status_html(const Transaction& tx, const Service::Way& way, const Words& t, i18n::Locale locale) {
  std::string h;
  h += "<p id=\"status\" data-status=\"" + std::string(to_string(tx.status)) + "\" class=\"notice";
  switch (tx.status) {
    case TxStatus::initiated:
      h += "\">" + (way.redirect && !way.in_app ? std::string(t("redirect_initiated")) + escape(way.operator_name) + "."
                                                : std::string(t("initiated")));
      break;
    case TxStatus::pending:
      if (way.has_url && way.in_app)
        h += "\">" + std::string(t("pending_redirect"));
      else if (way.has_url)
        h += "\">" + std::string(t("redirect_pending")) + escape(way.operator_name) + t("redirect_pending_end");
      else
        h += "\">" + std::string(way.prompt ? t("confirm_phone") : t("pending"));
      break;
    case TxStatus::completed:
    case TxStatus::refunded: h += " ok\">" + std::string(t("completed")); break;
    case TxStatus::failed:
      // Why, in the page's language, from the typed reason (never the raw code).
      h += " ko\">" + escape(i18n::text(failure_message_code(failure_reason(tx)), locale));
      break;
    case TxStatus::expired: h += " ko\">" + std::string(t("expired")); break;
    case TxStatus::cancelled: h += " ko\">" + std::string(t("cancelled")); break;
  }
  h += "</p>";
  return h;
}

// The way to the operator: its app (a link, and a QR code for a computer), its page, or the
// prompt sent to the phone again.
std::string operator_html(const Transaction& tx, const Service::Way& way, const Words& t, const std::string& self,
                          const std::string& sig, const std::string& lang) {
  std::string h;
  if (way.has_url && way.in_app) {
    h += "<a class=\"go\" id=\"operator-link\" href=\"" + escape(tx.customer_url) + "\">" +
         std::string(tx.connector.starts_with("wave") ? t("pay_wave") : t("pay_operator")) + "</a>";
    if (auto svg = web::qr_svg(tx.customer_url, 4)) {
      std::string image = std::move(*svg);
      image.insert(4, " aria-hidden=\"true\" focusable=\"false\"");
      h += "<div class=\"qr\"><div role=\"img\" id=\"operator-qr\" aria-label=\"" + escape(t("qr_label")) + "\">" +
           image + "</div><p>" + std::string(t("qr_hint")) + "</p></div>";
    }
  } else if (way.has_url) {
    h += "<p><a class=\"go button\" id=\"operator\" rel=\"noreferrer\" href=\"" + escape(tx.customer_url) + "\">" +
         t("continue") + escape(way.operator_name) + "</a></p>";
  }
  if (way.prompt)
    h += "<form method=\"post\" action=\"" + escape(self) + "\"><input type=\"hidden\" name=\"sig\" value=\"" +
         escape(sig) + "\"><input type=\"hidden\" name=\"lang\" value=\"" + lang +
         "\"><button class=\"no\" type=\"submit\" name=\"action\" value=\"prompt\" id=\"prompt\">" + t("prompt_again") +
         "</button></form>";
  return h;
}

}  // namespace

web::Response Service::render_page(const Transaction& tx, i18n::Locale locale, std::string_view notice, int status) {
  const Words t{locale};
  // The merchant's name is decoration: a page without it still lets the customer pay.
  std::string merchant_name;
  Status named = db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto m, merchant::find_by_id(c, tx.merchant_id));
    if (m) merchant_name = m->name;
    return {};
  });
  if (!named) spdlog::warn("confirmation page of {}: merchant name unavailable: {}", tx.reference, named.error().code);
  std::string lang(i18n::name(locale));
  std::string other = locale == i18n::Locale::fr ? "en" : "fr";
  std::string sig = page_signature(tx.reference);
  std::string self = "?sig=" + sig;
  std::string h;
  h.reserve(4096);
  web::html::Page page;
  page.locale = locale;
  page.title = std::string(t("title")) + " - Sika";
  page.style = std::string(kPageStyle);
  page.header = false;
  h += web::html::begin(page);
  h += "<nav><a href=\"" + escape(self + "&lang=" + other) + "\">" + t("other_language") + "</a></nav>";
  h += "<h1>" + std::string(t("title")) + "</h1><dl>";
  h += "<dt>" + std::string(t("merchant")) + "</dt><dd>" + escape(merchant_name) + "</dd>";
  if (!tx.description.empty())
    h += "<dt>" + std::string(t("description")) + "</dt><dd>" + escape(tx.description) + "</dd>";
  h += "<dt>" + std::string(t("amount")) + "</dt><dd>" + money::format(tx.amount, tx.currency, /*html=*/true) + "</dd>";
  h += "<dt>" + std::string(t("fee")) + "</dt><dd>" + money::format(tx.fee, tx.currency, /*html=*/true) + "</dd>";
  h += "<dt class=\"total\">" + std::string(t("total")) + "</dt><dd class=\"total\" id=\"total\">" +
       money::format(tx.required_total, tx.currency, /*html=*/true) + "</dd>";
  h += "<dt>" + std::string(t("wallet")) + "</dt><dd>" + escape(masked(tx.customer_wallet)) + " (" +
       escape(tx.service_code) + ")</dd>";
  h += "<dt>" + std::string(t("reference")) + "</dt><dd>" + escape(tx.reference) + "</dd></dl>";
  if (!notice.empty()) {
    std::string cls = status >= 400 ? "notice ko" : "notice";
    h += "<p class=\"" + cls + "\" id=\"notice\">" + escape(notice) + "</p>";
  }
  // How the customer approves it: in the operator's app (Wave: its link on a phone, its QR code on
  // a computer), on the operator's page (Orange Money's Web Payment), or on the phone (a push).
  const Way way = way_of(tx);
  h += status_html(tx, way, t, locale);
  // A payment on its way: live.js follows it (web::html::live_html), no meta refresh.
  if (tx.status == TxStatus::pending)
    h += web::html::live_html({.state = std::string(to_string(tx.status)),
                               .page_url = self + "&lang=" + lang,
                               .script_src = "../live.js",
                               .message_html = ""},
                              locale);
  h += operator_html(tx, way, t, self, sig, lang);
  if (tx.status == TxStatus::initiated) {
    h += "<form method=\"post\" action=\"" + escape(self) + "\"><input type=\"hidden\" name=\"sig\" value=\"" +
         escape(sig) + "\"><input type=\"hidden\" name=\"lang\" value=\"" + lang + "\">";
    if (tx.needs_otp)
      h += "<label for=\"otp\">" + std::string(t("otp")) +
           "</label><input id=\"otp\" name=\"otp\" inputmode=\"numeric\" autocomplete=\"one-time-code\" "
           "pattern=\"[0-9]{4,8}\" required>";
    h += "<button class=\"go\" type=\"submit\" name=\"action\" value=\"pay\" id=\"pay\">" +
         (tx.channel == kChannelWallet ? std::string(t("pay_wallet"))
          : way.redirect               ? t("continue") + escape(way.operator_name)
                                       : std::string(t("push"))) +
         "</button>";
    h += "<button class=\"no\" type=\"submit\" name=\"action\" value=\"decline\" formnovalidate id=\"decline\">" +
         std::string(t("decline")) + "</button></form>";
  }
  h += web::html::kEnd;
  web::Response res = web::Response::html(status, std::move(h));
  web::html::secure_headers(res, web::html::live_policy({}));
  web::html::set_live_state(res, to_string(tx.status));
  return res;
}

// The collection behind a signed page link, or nullopt (the page then does not exist).
std::optional<Transaction> Service::page_transaction(std::string_view reference,
                                                     const std::optional<std::string>& sig) {
  if (reference.empty() || !sig || !crypto::constant_time_equal(*sig, page_signature(reference))) return std::nullopt;
  Transaction tx;
  Status st = db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(tx, tables::load(c, reference));
    return {};
  });
  if (!st || tx.operation != kCollection) return std::nullopt;
  return tx;
}

web::Response Service::confirm_page(web::Request& req) {
  i18n::Locale locale = page_locale(req, req.query_param("lang"));
  auto tx = page_transaction(req.path_param("reference"), req.query_param("sig"));
  if (!tx) return not_found_page(locale);
  auto shown = expire_if_overdue(*tx, "checkout");
  if (!shown) return render_page(*tx, locale, error_notice(shown.error(), locale), page_status(shown.error()));
  return render_page(*shown, locale, "", 200);
}

web::Response Service::confirm_submit(web::Request& req) {
  auto form = web::parse_form(req.body);
  auto field = [&](std::string_view name) -> std::optional<std::string> {
    if (form)
      for (const auto& [k, v] : *form)
        if (k == name) return v;
    return std::nullopt;
  };
  i18n::Locale locale = page_locale(req, field("lang"));
  auto sig = field("sig");
  if (!sig) sig = req.query_param("sig");
  auto tx = form ? page_transaction(req.path_param("reference"), sig) : std::nullopt;
  if (!tx) return not_found_page(locale);
  const Words t{locale};
  if (field("action") == "decline") {
    if (tx->status != TxStatus::initiated) return render_page(*tx, locale, "", 200);
    // Declined, or (lost race) paid or expired meanwhile: the page shows where it now stands.
    auto declined = move(*tx, move_to(TxStatus::cancelled, "checkout", "DECLINED_BY_CUSTOMER"));
    if (!declined)
      return render_page(*tx, locale, error_notice(declined.error(), locale), page_status(declined.error()));
    return render_page(declined->tx, locale, "", 200);
  }
  if (field("action") == "prompt") {
    Status prompted = prompt_again(*tx);
    if (!prompted)
      return render_page(*tx, locale, error_notice(prompted.error(), locale), page_status(prompted.error()));
    return render_page(*tx, locale, t("prompted"), 200);
  }
  auto otp = field("otp");
  if (otp && otp->empty()) otp.reset();
  auto done = execute_collection(*tx, otp, "checkout");
  if (!done) {
    auto fresh = refresh(*tx);
    return render_page(fresh ? *fresh : *tx, locale, error_notice(done.error(), locale), page_status(done.error()));
  }
  return render_page(*done, locale, done->status == TxStatus::pending ? t("sent") : "", 200);
}

CatalogSnapshot catalog_snapshot(catalog::Service& catalog) {
  return [&catalog] { return catalog.snapshot(); };
}

}  // namespace sika::payments
