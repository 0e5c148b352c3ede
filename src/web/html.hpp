#pragma once
// What every server-rendered page shares: escaping, security headers, and one page layout
// (mobile-first, fr/en with a language switch, no third-party assets, usable without JavaScript).
#include <string>
#include <string_view>

#include "core/i18n.hpp"
#include "web/message.hpp"

namespace sika::web::html {

// Escapes the five HTML-significant characters; safe in text and in quoted attribute values.
std::string escape(std::string_view text);

// The language of a page: `?lang=fr|en` when given (the page's switch), else the request's
// (Accept-Language).
i18n::Locale page_locale(const Request& req);
// "en" for a French page, "fr" for an English one: the target of the language switch.
std::string_view other_language(i18n::Locale locale);

// What a page may load or submit to, beyond itself. Every page gets frame-ancestors 'none'
// (no framing), no referrer, nosniff and no-store.
struct PagePolicy {
  bool data_images = false;   // img-src data: (inline QR codes, icons)
  bool self_images = false;   // img-src 'self' (QR code images served by us)
  bool self_scripts = false;  // script-src 'self' (the small progressive-enhancement script)
  bool self_connect = false;  // connect-src 'self' (status polling)
  // form-action sources; "" leaves the directive out, which a form whose answer redirects to
  // another site needs (OAuth's authorize redirects to the client).
  std::string form_action = "'self'";
};

// Sets the security headers of a page on `res`: Content-Security-Policy from `policy`,
// X-Frame-Options DENY, X-Content-Type-Options nosniff, Referrer-Policy no-referrer, no-store.
void secure_headers(Response& res, const PagePolicy& policy = {});

// A page: its language, title (already plain text), body (already HTML), and the URL of the
// same page in the other language ("" for no switch).
struct Page {
  i18n::Locale locale = i18n::Locale::fr;
  std::string title;
  std::string body_html;
  std::string other_language_url;
  std::string extra_head_html;  // e.g. a <script src> of our own, or a refresh meta
};

// Renders `page` in the shared layout: <html lang>, viewport, inline stylesheet, a header with
// the title, a language switch link, and a <main> landmark holding the body.
std::string render(const Page& page);

// Renders `page` into a response with `status` and the headers of `policy`.
Response page_response(int status, const Page& page, const PagePolicy& policy = {});

}  // namespace sika::web::html
