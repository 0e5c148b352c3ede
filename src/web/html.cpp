#include "web/html.hpp"

namespace sika::web::html {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

i18n::Locale page_locale(const Request& req) {
  auto lang = req.query_param("lang");
  if (lang == "fr") return i18n::Locale::fr;
  if (lang == "en") return i18n::Locale::en;
  return req.locale;
}

std::string_view other_language(i18n::Locale locale) { return locale == i18n::Locale::fr ? "en" : "fr"; }

void secure_headers(Response& res, const PagePolicy& policy) {
  std::string csp = "default-src 'none'; style-src 'unsafe-inline'";
  if (policy.data_images || policy.self_images) {
    csp += "; img-src";
    if (policy.self_images) csp += " 'self'";
    if (policy.data_images) csp += " data:";
  }
  if (policy.self_scripts) csp += "; script-src 'self'";
  if (policy.self_connect) csp += "; connect-src 'self'";
  if (!policy.form_action.empty()) csp += "; form-action " + policy.form_action;
  csp += "; frame-ancestors 'none'; base-uri 'none'";
  res.set("Content-Security-Policy", csp);
  res.set("X-Frame-Options", "DENY");
  res.set("X-Content-Type-Options", "nosniff");
  res.set("Referrer-Policy", "no-referrer");
  res.set("Cache-Control", "no-store");
  res.set("Pragma", "no-cache");
}

namespace {
// Mobile-first, high-contrast (WCAG AA) styles; focus outlines stay visible for keyboard users.
constexpr std::string_view kStyle =
    "*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;"
    "color:#1a1a1a;background:#f4f5f7}header{display:flex;justify-content:space-between;align-items:center;"
    "padding:.75rem 1rem;background:#0b3d2e;color:#fff}header h1{font-size:1.1rem;margin:0}header a{color:#fff}"
    "main{max-width:32rem;margin:0 auto;padding:1rem}.card{background:#fff;border-radius:.5rem;padding:1rem;"
    "margin:0 0 1rem;box-shadow:0 1px 2px rgba(0,0,0,.08)}label{display:block;font-weight:600;margin:.75rem 0 .25rem}"
    "input,select,button{font:inherit;width:100%;padding:.65rem;border:1px solid #6b6b6b;border-radius:.35rem}"
    "button{background:#0b3d2e;color:#fff;border:0;font-weight:600;margin-top:1rem;cursor:pointer}"
    "button.secondary{background:#fff;color:#0b3d2e;border:1px solid #0b3d2e}"
    ":focus-visible{outline:3px solid #f2a900;outline-offset:2px}.error{color:#a4161a;font-weight:600}"
    ".muted{color:#555}.amount{font-size:1.75rem;font-weight:700}@media(min-width:48rem){main{max-width:40rem}}";
}  // namespace

std::string render(const Page& page) {
  const bool fr = page.locale == i18n::Locale::fr;
  std::string out;
  out.reserve(2048 + page.body_html.size());
  out += "<!doctype html><html lang=\"";
  out += fr ? "fr" : "en";
  out +=
      "\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
      "<title>";
  out += escape(page.title);
  out += "</title><style>";
  out += kStyle;
  out += "</style>";
  out += page.extra_head_html;
  out += "</head><body><header><h1>";
  out += escape(page.title);
  out += "</h1>";
  if (!page.other_language_url.empty()) {
    out += "<a href=\"" + escape(page.other_language_url) + "\" hreflang=\"" + (fr ? "en" : "fr") + "\" lang=\"" +
           (fr ? "en" : "fr") + "\">" + (fr ? "English" : "Français") + "</a>";
  }
  out += "</header><main>";
  out += page.body_html;
  out += "</main></body></html>";
  return out;
}

Response page_response(int status, const Page& page, const PagePolicy& policy) {
  Response res = Response::html(status, render(page));
  secure_headers(res, policy);
  return res;
}

}  // namespace sika::web::html
