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
  res.set("X-Robots-Tag", "noindex, nofollow");
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
    ".muted{color:#555}a.button{display:inline-block;padding:.55rem 1rem;border:1px solid #0b3d2e;"
    "border-radius:.35rem;color:#0b3d2e;font-weight:600;text-decoration:none;margin-top:.5rem}"
    ".amount{font-size:1.75rem;font-weight:700}@media(min-width:48rem){main{max-width:40rem}}";
}  // namespace

std::string begin(const Page& page) {
  const bool fr = page.locale == i18n::Locale::fr;
  std::string out;
  out.reserve(2048);
  out += "<!doctype html><html lang=\"";
  out += fr ? "fr" : "en";
  out +=
      "\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
      "<title>";
  out += escape(page.title);
  out += "</title>";
  const std::string_view style = page.style ? std::string_view(*page.style) : kStyle;
  if (!style.empty()) {
    out += "<style>";
    out += style;
    out += "</style>";
  }
  out += kNoIndexMeta;
  out += page.extra_head_html;
  out += "</head><body>";
  if (page.header) {
    out += "<header><h1>";
    out += escape(page.title);
    out += "</h1>";
    if (!page.other_language_url.empty()) {
      out += "<a href=\"" + escape(page.other_language_url) + "\" hreflang=\"" + (fr ? "en" : "fr") + "\" lang=\"" +
             (fr ? "en" : "fr") + "\">" + (fr ? "English" : "Français") + "</a>";
    }
    out += "</header>";
  }
  out += "<main>";
  return out;
}

std::string render(const Page& page) {
  std::string out = begin(page);
  out.reserve(out.size() + page.body_html.size() + kEnd.size());
  out += page.body_html;
  out += kEnd;
  return out;
}

Response page_response(int status, const Page& page, const PagePolicy& policy) {
  Response res = Response::html(status, render(page));
  secure_headers(res, policy);
  if (!page.live_state.empty()) set_live_state(res, page.live_state);
  return res;
}

// ---- pages that wait for a state to change -------------------------------------------------

namespace {

struct LiveTexts {
  const char* refresh;
  const char* changed;
  const char* stopped;
  const char* moving_on;
};
constexpr LiveTexts kLiveFr{"Actualiser la page", "Le statut a changé : mise à jour de la page…",
                            "La page ne se met plus à jour toute seule : utilisez le bouton Actualiser.",
                            "Vous allez être redirigé dans quelques secondes."};
constexpr LiveTexts kLiveEn{"Refresh the page", "The status changed: updating the page…",
                            "The page no longer updates by itself: use the Refresh button.",
                            "You will be redirected in a few seconds."};

// Same origin only (script-src 'self', connect-src 'self'); no inline code, no eval.
constexpr std::string_view kLiveScript = R"JS((function () {
  var live = document.getElementById('sika-live');
  if (!live) return;
  var news = document.getElementById('sika-live-news');
  var state = live.getAttribute('data-state');
  var url = live.getAttribute('data-url') || location.href;
  var next = live.getAttribute('data-next');
  function say(text) { if (news && text) news.textContent = text; }
  if (next) {
    say(live.getAttribute('data-moving-on'));
    setTimeout(function () { location.assign(next); }, 3000);
    return;
  }
  if (!state || !window.fetch) return;
  var delay = 2000, cap = 30000, polls = 0, most = 40;
  function later() {
    if (polls >= most) { say(live.getAttribute('data-stopped')); return; }
    setTimeout(poll, delay);
    delay = Math.min(delay * 2, cap);
  }
  function poll() {
    if (document.hidden) {
      document.addEventListener('visibilitychange', function wake() {
        if (document.hidden) return;
        document.removeEventListener('visibilitychange', wake);
        poll();
      });
      return;
    }
    polls++;
    fetch(url, { credentials: 'same-origin', cache: 'no-store', headers: { 'Accept': 'text/html' } })
      .then(function (res) {
        var now = res.headers.get('X-Sika-State');
        if (now && now !== state) {
          say(live.getAttribute('data-changed'));
          setTimeout(function () { location.replace(url); }, 800);
        } else {
          later();
        }
      }, later);
  }
  later();
})();
)JS";

}  // namespace

std::string live_html(const Live& live, i18n::Locale locale) {
  const LiveTexts& t = locale == i18n::Locale::fr ? kLiveFr : kLiveEn;
  std::string out = "<div class=\"card\" id=\"sika-live\" data-url=\"" + escape(live.page_url) + "\"";
  if (!live.state.empty()) out += " data-state=\"" + escape(live.state) + "\"";
  if (!live.next_url.empty()) out += " data-next=\"" + escape(live.next_url) + "\"";
  out += std::string(" data-changed=\"") + t.changed + "\" data-stopped=\"" + t.stopped + "\" data-moving-on=\"" +
         t.moving_on + "\">";
  out += "<div role=\"status\">" + live.message_html + "</div>";
  // Filled by live.js when the state changes; empty (and silent) until then.
  out += "<p id=\"sika-live-news\" class=\"muted\" role=\"status\" aria-live=\"polite\"></p>";
  if (!live.next_url.empty())
    out += "<p><a class=\"button\" href=\"" + escape(live.next_url) + "\">" + escape(live.next_label) + "</a></p>";
  else
    out +=
        "<p><a class=\"button\" id=\"sika-refresh\" href=\"" + escape(live.page_url) + "\">" + t.refresh + "</a></p>";
  out += "<script src=\"" + escape(live.script_src) + "\" defer></script></div>";
  return out;
}

PagePolicy live_policy(PagePolicy policy) {
  policy.self_scripts = true;
  policy.self_connect = true;
  return policy;
}

void set_live_state(Response& res, std::string_view state) { res.set("X-Sika-State", std::string(state)); }

Response live_script() {
  Response res = Response::text(200, std::string(kLiveScript), "text/javascript; charset=utf-8");
  res.set("Cache-Control", "public, max-age=300");
  res.set("X-Content-Type-Options", "nosniff");
  return res;
}

std::string state_words(std::string_view code, i18n::Locale locale) {
  struct Words {
    std::string_view code, fr, en;
  };
  static constexpr Words kWords[] = {
      {"INITIATED", "en attente de votre confirmation", "awaiting your confirmation"},
      {"PENDING", "en attente de validation", "awaiting approval"},
      {"PROCESSING", "en cours de traitement", "processing"},
      {"COMPLETED", "réussi", "completed"},
      {"FAILED", "échoué", "failed"},
      {"EXPIRED", "expiré", "expired"},
      {"CANCELLED", "annulé", "cancelled"},
      {"OPEN", "ouvert", "open"},
      {"PAID", "payé", "paid"},
      {"ACTIVE", "actif", "active"},
      {"DISABLED", "désactivé", "disabled"},
      {"SUSPENDED", "suspendu", "suspended"},
      {"REVOKED", "révoqué", "revoked"},
      {"UNLINKED", "délié", "unlinked"},
      {"REFUNDED", "remboursé", "refunded"},
      {"DAILY", "chaque jour", "daily"},
      {"WEEKLY", "chaque semaine", "weekly"},
      {"MONTHLY", "chaque mois", "monthly"},
      {"QUARTERLY", "chaque trimestre", "quarterly"},
      {"YEARLY", "chaque année", "yearly"},
  };
  for (const Words& w : kWords)
    if (w.code == code) return std::string(locale == i18n::Locale::fr ? w.fr : w.en);
  std::string out(code);
  for (char& c : out) c = c == '_' ? ' ' : static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

}  // namespace sika::web::html
