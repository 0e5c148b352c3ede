#pragma once
// What every server-rendered page shares: escaping, security headers, and one page layout
// (mobile-first, fr/en with a language switch, no third-party assets, usable without JavaScript).
#include <optional>
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
  std::string extra_head_html;  // e.g. a <script src> of our own
  // The page's own stylesheet instead of the shared one ("" for none); the shared one when unset.
  std::optional<std::string> style;
  // The shared header (the title and the language switch) above <main>; pages that place their
  // title and switch inside their body leave it out.
  bool header = true;
  // The state the page shows ("PENDING", "COMPLETED"…), sent as the X-Sika-State header so that
  // the live script (live_html) sees a change without reading the page; "" for none.
  std::string live_state;
};

// Every page says no to search engines: <meta name="robots" content="noindex, nofollow"> in the
// layout and X-Robots-Tag: noindex, nofollow from secure_headers (payment, checkout, wallet and
// dashboard pages are private to whoever holds their address).
constexpr std::string_view kNoIndexMeta = "<meta name=\"robots\" content=\"noindex, nofollow\">";

// A page that waits for a state to change (a payment waiting for the customer's phone) without
// <meta http-equiv=refresh> (which takes the page away from screen readers and keyboards):
//  - without JavaScript: `message_html` and a plain "Refresh" link to `page_url`;
//  - with JavaScript (live.js, same origin): polls `page_url` after 2 s, then 4, 8, 16, 30, 30… s
//    (at most 40 polls, paused while the tab is hidden); when the X-Sika-State header of the
//    answer differs from `state`, says so in the aria-live region and loads the page again.
// `next_url` (with an empty `state`): a finished page that moves on by itself after 3 s
// (checkout: back to the shop), announced first; the link is the way without JavaScript.
struct Live {
  std::string state;         // the state shown, e.g. "PENDING"
  std::string page_url;      // the page itself (relative URLs are fine)
  std::string script_src;    // live.js of this surface, relative to the page
  std::string message_html;  // what the customer waits for (already HTML)
  std::string next_url;      // see above; "" for none
  std::string next_label;    // the link's text for next_url
};
// The live region, the refresh link and the <script> tag (the page's policy needs
// self_scripts and self_connect: live_policy).
std::string live_html(const Live& live, i18n::Locale locale);
// Adds what live_html needs to a page's policy.
PagePolicy live_policy(PagePolicy policy);
// Sets X-Sika-State on a response (pages not rendered through page_response).
void set_live_state(Response& res, std::string_view state);
// GET live.js: the script of live_html (cacheable, nosniff).
Response live_script();

// A state code in words, in the page's language: "PENDING" → "en attente de validation".
// Codes of payments, checkout sessions, links, wallet links and mandates; an unknown code is
// returned lower-cased with '_' as spaces.
std::string state_words(std::string_view code, i18n::Locale locale);

// Renders `page` in the shared layout: <html lang>, viewport, inline stylesheet, noindex, a header
// with the title, a language switch link, and a <main> landmark holding the body.
std::string render(const Page& page);
// The layout in two halves, for pages written piece by piece: everything up to and including
// <main> (page.body_html is not used), and what closes it. render(p) == begin(p) + body + kEnd.
std::string begin(const Page& page);
constexpr std::string_view kEnd = "</main></body></html>";

// Renders `page` into a response with `status` and the headers of `policy`.
Response page_response(int status, const Page& page, const PagePolicy& policy = {});

}  // namespace sika::web::html
