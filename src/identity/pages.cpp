#include "identity/pages.hpp"

#include "web/html.hpp"
#include "web/texts.hpp"

#include <algorithm>

namespace sika::identity::pages {

namespace {

// The texts of the sign-in, consent and sign-up pages (web/texts.hpp).
constexpr web::texts::Entry kTextsData[] = {
    {"account_created", "Votre compte a été créé.", "Your account has been created."},
    {"allow", "Autoriser", "Allow"},
    {"app_requests", "L'application « {client} » demande l'accès à votre compte Sika :",
     "The application “{client}” asks to access your Sika account:"},
    {"bad_credentials", "Adresse e-mail ou mot de passe incorrect.", "Incorrect e-mail address or password."},
    {"create_account", "Créer un compte", "Create an account"},
    {"csrf", "Le formulaire a expiré. Rechargez la page et réessayez.",
     "The form has expired. Reload the page and try again."},
    {"deny", "Refuser", "Deny"},
    {"email", "Adresse e-mail", "E-mail address"},
    {"email_taken", "Cette adresse e-mail est déjà utilisée.", "This e-mail address is already registered."},
    {"err_client", "Application inconnue ou désactivée (client_id).", "Unknown or disabled application (client_id)."},
    {"err_client_id", "Le paramètre client_id est obligatoire.", "The client_id parameter is required."},
    {"err_redirect", "Cette adresse de retour (redirect_uri) n'est pas enregistrée pour l'application.",
     "This return address (redirect_uri) is not registered for the application."},
    {"err_redirect_required", "Le paramètre redirect_uri est obligatoire pour cette application.",
     "The redirect_uri parameter is required for this application."},
    {"err_retry", "Service momentanément indisponible, réessayez.", "Service temporarily unavailable, please retry."},
    {"error_title", "Erreur d'autorisation", "Authorization error"},
    {"invalid_form", "Vérifiez les champs du formulaire.", "Check the form fields."},
    {"language", "Langue", "Language"},
    {"locked", "Trop d'échecs de connexion : compte verrouillé temporairement. Réessayez plus tard.",
     "Too many failed sign-in attempts: the account is temporarily locked. Try again later."},
    {"missing_credentials", "Saisissez votre adresse e-mail et votre mot de passe.",
     "Enter your e-mail address and password."},
    {"name", "Nom complet", "Full name"},
    {"not_you", "Ce n'est pas vous ?", "Not you?"},
    {"password", "Mot de passe", "Password"},
    {"password_hint", "10 caractères au minimum", "at least 10 characters"},
    {"phone", "Téléphone (facultatif)", "Phone (optional)"},
    {"rate_limited", "Trop de tentatives depuis votre adresse. Réessayez dans une minute.",
     "Too many attempts from your address. Try again in a minute."},
    {"scope_countries", "Lire la liste des pays", "Read the list of countries"},
    {"scope_email", "Votre adresse e-mail", "Your e-mail address"},
    {"scope_offline_access", "Rester connecté (accès hors ligne)", "Stay signed in (offline access)"},
    {"scope_openid", "Vous identifier", "Identify you"},
    {"scope_payments", "Créer et consulter des paiements", "Create and read payments"},
    {"scope_phone", "Votre numéro de téléphone", "Your phone number"},
    {"scope_profile", "Votre nom", "Your name"},
    {"scope_providers", "Lire la liste des opérateurs de paiement", "Read the list of payment providers"},
    {"scope_services", "Lire le catalogue des services", "Read the service catalog"},
    {"sign_in", "Connexion", "Sign in"},
    {"sign_out", "Se déconnecter", "Sign out"},
    {"signed_in_as", "Connecté en tant que", "Signed in as"},
    {"signed_out", "Vous êtes déconnecté.", "You are signed out."},
    {"signup_disabled", "L'inscription n'est pas ouverte.", "Sign-up is not open."},
    {"signup_title", "Créer un compte Sika", "Create a Sika account"},
    {"throttled", "Trop de tentatives de connexion. Réessayez dans quelques minutes.",
     "Too many sign-in attempts. Try again in a few minutes."},
    {"title", "Connexion à Sika", "Sign in to Sika"},
};
constexpr auto kTexts = web::texts::table(kTextsData);
const web::texts::Enrolled kEnrolled{"identity/pages", kTexts};

constexpr std::string_view kStyle =
    "*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;"
    "background:#f3f5f7;color:#1b2430}main{max-width:420px;margin:6vh auto;background:#fff;border-radius:12px;"
    "box-shadow:0 2px 12px rgba(0,0,0,.08);padding:28px}h1{font-size:1.35rem;margin:0 0 16px}"
    ".brand{font-weight:700;color:#0a7d5a;letter-spacing:.02em;margin-bottom:8px}label{display:block;"
    "margin:12px 0 4px;font-weight:600;font-size:.92rem}input[type=email],input[type=password],input[type=text],"
    "input[type=tel]{width:100%;padding:10px 12px;border:1px solid #c5ccd4;border-radius:8px;font-size:1rem}"
    "input:focus{outline:2px solid #0a7d5a;border-color:#0a7d5a}ul{padding-left:20px}"
    ".lang{display:flex;justify-content:flex-end;gap:12px;margin:-34px 0 8px;font-size:.9rem}"
    ".lang a{padding:4px 2px}.lang [aria-current]{font-weight:700;color:#1b2430;text-decoration:none}"
    ".error{background:#fdecea;color:#8a1c12;border-radius:8px;padding:10px 12px;margin-bottom:12px}"
    ".row{display:flex;gap:12px;margin-top:20px}button{flex:1;padding:11px;border-radius:8px;border:0;"
    "font-size:1rem;cursor:pointer}button.primary{background:#0a7d5a;color:#fff}button.secondary{background:#e6e9ed;"
    "color:#1b2430}.muted{color:#5b6672;font-size:.9rem}a{color:#0a7d5a}";

// The shared layout (web::html) with this service's stylesheet; the brand and the title are in
// the body.
std::string head(i18n::Locale l, std::string_view title) {
  web::html::Page page;
  page.locale = l;
  page.title = std::string(title);
  page.style = std::string(kStyle);
  page.header = false;
  page.extra_head_html = "<meta name=\"referrer\" content=\"no-referrer\">";
  return web::html::begin(page) + "<div class=\"brand\">Sika</div>";
}

constexpr std::string_view kFoot = web::html::kEnd;

void hidden_inputs(std::string& out, const web::Fields& hidden) {
  for (const auto& [k, v] : hidden) {
    out += "<input type=\"hidden\" name=\"";
    out += escape(k);
    out += "\" value=\"";
    out += escape(v);
    out += "\">";
  }
}

// Opens a form page: head, heading, optional error alert, form tag and hidden inputs.
std::string form_page_start(i18n::Locale l, std::string_view title, std::string_view error, std::string_view action,
                            const web::Fields& hidden, std::string_view before_title = {}) {
  std::string out = head(l, title);
  out += before_title;
  out += "<h1>";
  out += escape(title);
  out += "</h1>";
  if (!error.empty()) {
    out += "<div class=\"error\" role=\"alert\">";
    out += escape(error);
    out += "</div>";
  }
  out += "<form method=\"post\" action=\"";
  out += escape(action);
  out += "\">";
  hidden_inputs(out, hidden);
  return out;
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

}  // namespace

std::string_view text(i18n::Locale l, std::string_view key) { return kTexts.lookup(key, l); }

std::string escape(std::string_view in) { return web::html::escape(in); }

std::string login(const LoginView& v) {
  auto t = [&](std::string_view k) { return text(v.locale, k); };
  // The language switch: links to the same request in each language (no script needed).
  std::string nav;
  if (!v.languages.empty()) {
    nav += "<nav class=\"lang\" aria-label=\"";
    nav += escape(t("language"));
    nav += "\">";
    for (const auto& l : v.languages) {
      nav += "<a href=\"";
      nav += escape(l.url);
      nav += "\" lang=\"";
      nav += i18n::name(l.locale);
      nav += "\" hreflang=\"";
      nav += i18n::name(l.locale);
      nav += l.locale == v.locale ? "\" aria-current=\"true\">" : "\">";
      nav += l.locale == i18n::Locale::fr ? "Français" : "English";
      nav += "</a>";
    }
    nav += "</nav>";
  }
  std::string out = form_page_start(v.locale, t("title"), v.error, v.action, v.hidden, nav);
  if (v.signed_in) {
    out += "<p class=\"muted\">";
    out += escape(t("signed_in_as"));
    out += " <strong>";
    out += escape(v.user_email);
    out += "</strong>. <a href=\"";
    out += escape(v.logout_url);
    out += "\">";
    out += escape(t("not_you"));
    out += "</a></p>";
  } else {
    out += "<label for=\"email\">";
    out += escape(t("email"));
    out += "</label><input id=\"email\" type=\"email\" name=\"email\" autocomplete=\"username\" required value=\"";
    out += escape(v.email);
    out += "\"><label for=\"password\">";
    out += escape(t("password"));
    out +=
        "</label><input id=\"password\" type=\"password\" name=\"password\" autocomplete=\"current-password\" "
        "required>";
  }
  out += "<p>";
  out += escape(replace_all(std::string(t("app_requests")), "{client}", v.client_name));
  out += "</p><ul>";
  for (const auto& s : v.scopes) {
    out += "<li>";
    out += escape(text(v.locale, "scope_" + s));
    out += "</li>";
  }
  out +=
      "</ul><div class=\"row\"><button class=\"secondary\" type=\"submit\" name=\"action\" value=\"deny\" "
      "formnovalidate>";
  out += escape(t("deny"));
  out += "</button><button class=\"primary\" type=\"submit\" name=\"action\" value=\"approve\">";
  out += escape(t("allow"));
  out += "</button></div></form>";
  if (!v.signup_url.empty() && !v.signed_in) {
    out += "<p class=\"muted\"><a href=\"";
    out += escape(v.signup_url);
    out += "\">";
    out += escape(t("create_account"));
    out += "</a></p>";
  }
  out += kFoot;
  return out;
}

std::string signup(const SignupView& v) {
  auto t = [&](std::string_view k) { return text(v.locale, k); };
  std::string out = form_page_start(v.locale, t("signup_title"), v.error, v.action, v.hidden);
  auto field = [&](std::string_view id, std::string_view type, std::string_view label, std::string_view value,
                   std::string_view extra) {
    out += "<label for=\"";
    out += id;
    out += "\">";
    out += escape(label);
    out += "</label><input id=\"";
    out += id;
    out += "\" name=\"";
    out += id;
    out += "\" type=\"";
    out += type;
    out += "\" value=\"";
    out += escape(value);
    out += "\" ";
    out += extra;
    out += ">";
  };
  field("email", "email", t("email"), v.email, "required autocomplete=\"email\"");
  field("name", "text", t("name"), v.name, "autocomplete=\"name\"");
  field("phone", "tel", t("phone"), v.phone, "autocomplete=\"tel\"");
  field("password", "password", std::string(t("password")) + " (" + std::string(t("password_hint")) + ")", "",
        "required minlength=\"10\" autocomplete=\"new-password\"");
  out += "<div class=\"row\"><button class=\"primary\" type=\"submit\">";
  out += escape(t("create_account"));
  out += "</button></div></form>";
  out += kFoot;
  return out;
}

std::string error(i18n::Locale l, std::string_view error_code, std::string_view description) {
  std::string out = head(l, text(l, "error_title"));
  out += "<h1>";
  out += escape(text(l, "error_title"));
  out += "</h1><div class=\"error\" role=\"alert\">";
  out += escape(description);
  out += "</div><p class=\"muted\">";
  out += escape(error_code);
  out += "</p>";
  out += kFoot;
  return out;
}

std::string message(i18n::Locale l, std::string_view title_key, std::string_view text_key) {
  std::string out = head(l, text(l, title_key));
  out += "<h1>";
  out += escape(text(l, title_key));
  out += "</h1><p>";
  out += escape(text(l, text_key));
  out += "</p>";
  out += kFoot;
  return out;
}

void secure_headers(web::Response& res) {
  web::html::PagePolicy policy;
  policy.data_images = true;
  policy.form_action.clear();  // the consent form's answer redirects to the client
  web::html::secure_headers(res, policy);
}

}  // namespace sika::identity::pages
