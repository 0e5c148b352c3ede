// Sign-in (OpenID Connect with our identity service), the TOTP step, the page layout, and the
// pages every role shares (home, audit log, security, team).
#include "dashboard/service.hpp"
#include "dashboard/texts.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <map>

#include "core/crypto.hpp"
#include "core/money.hpp"
#include "core/random.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "core/time_zone.hpp"
#include "dashboard/internal.hpp"
#include "dashboard/totp.hpp"
#include "identity/relying_party.hpp"
#include "identity/service.hpp"
#include "identity/store.hpp"
#include "limits/limiter.hpp"
#include "links/qr.hpp"
#include "payments/queries.hpp"
#include "web/envelope.hpp"
#include "webhooks/secret_box.hpp"

namespace sika::dashboard {

namespace bj = boost::json;
using web::html::escape;

namespace {

// The dashboard's texts, registered for the test that checks both languages.
const web::texts::Enrolled kEnrolled{"dashboard", kTexts};
using Key = web::texts::Key<kTexts>;

constexpr std::string_view kLoginCookie = "sika_dsh_login";
constexpr std::string_view kLangCookie = "sika_dsh_lang";

// The path part of a URL ("http://h:1/dashboard" -> "/dashboard", "https://h" -> "").
std::string path_of(std::string_view url) {
  std::size_t scheme = url.find("://");
  std::size_t slash = url.find('/', scheme == std::string_view::npos ? 0 : scheme + 3);
  if (slash == std::string_view::npos) return {};
  std::string p(url.substr(slash));
  while (!p.empty() && p.back() == '/') p.pop_back();
  return p;
}

// Styles beyond the shared layout, mobile first: on a phone the menu folds into a <details>
// (no JavaScript) and each table row becomes a card whose cells carry their column's name
// (label_cells: every table with a header gets class "cards"), so amount and status are always in
// view and nothing scrolls sideways; from
// 48rem the menu is a line of links and tables are tables (scrolling inside their own region
// when wider than the screen). Status badges; contrast stays at WCAG AA.
constexpr std::string_view kStyle =
    "<style>main{max-width:72rem;overflow-wrap:anywhere}nav.dsh{display:flex;align-items:flex-start;"
    "gap:.5rem 1rem;padding:.5rem 1rem;background:#fff;"
    "border-bottom:1px solid #ccc}nav.dsh a{color:#0b3d2e;font-weight:600}nav.dsh form{margin:0}"
    "nav.dsh button{width:auto;margin:0;padding:.2rem .6rem}.menu{display:flex;flex-wrap:wrap;gap:.4rem .9rem;"
    "align-items:center;flex:1}details.menu-phone{flex:1}details.menu-phone .menu{padding:.5rem 0}"
    "details.menu-phone summary{margin:0;padding:.2rem 0}"
    ".menu-wide{display:none}.scroll{overflow-x:auto}table{border-collapse:collapse;width:100%;background:#fff}"
    "th,td{text-align:left;padding:.4rem .5rem;border-bottom:1px solid #ddd}td.num,th.num{text-align:right}"
    ".cards thead{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%)}"
    ".cards,.cards tbody,.cards tr,.cards td{display:block}.cards tr{border-bottom:2px solid #bbb;"
    "padding:.3rem 0}.cards td{border:0;display:flex;justify-content:space-between;gap:1rem;text-align:right;"
    "padding:.2rem .5rem}.cards "
    "td::before{content:attr(data-label);font-weight:600;text-align:left;color:#333;flex:none;"
    "white-space:nowrap}.cards caption{display:block;text-align:left}"
    "@media(min-width:48rem){details.menu-phone{display:none}.menu-wide{display:flex}"
    ".cards caption{display:table-caption}"
    ".cards thead{position:static;width:auto;height:auto;overflow:visible;clip-path:none}"
    ".cards{display:table}.cards thead{display:table-header-group}.cards tbody{display:table-row-group}"
    ".cards tr{display:table-row;border:0}.cards td{display:table-cell;border-bottom:1px solid #ddd;"
    "text-align:left;padding:.4rem .5rem}.cards td.num{text-align:right}.cards td::before{content:none}"
    "th,td{white-space:nowrap}td.wrap{white-space:normal;min-width:16rem}}.badge{padding:.1rem "
    ".4rem;border-radius:.3rem;"
    "background:#e8e8e8}.COMPLETED,.ACTIVE{background:#d8f0df}.FAILED,.DISABLED,.EXPIRED{background:#f7d9d9}"
    ".filters{display:grid;grid-template-columns:repeat(auto-fill,minmax(10rem,1fr));gap:0 .75rem}"
    ".secret{font-family:monospace;word-break:break-all;background:#fff7d6;padding:.5rem}"
    "form.inline{display:inline}form.inline button{width:auto;margin:0;padding:.3rem .7rem}"
    "summary{cursor:pointer;font-weight:600;margin-top:.75rem}.vh{position:absolute;width:1px;height:1px;"
    "overflow:hidden;clip-path:inset(50%);white-space:nowrap}</style>";

// The text of an HTML fragment without its tags.
std::string text_of(std::string_view html) {
  std::string out;
  bool in_tag = false;
  for (char ch : html) {
    if (ch == '<')
      in_tag = true;
    else if (ch == '>')
      in_tag = false;
    else if (!in_tag)
      out.push_back(ch);
  }
  return out;
}

// Gives every body cell of every table the text of its column's header (data-label, shown
// before the value when rows are cards), and makes each scrolling table region reachable from
// the keyboard with a name (tabindex=0, role=region, aria-label: the page's title, numbered
// from the second). A header cell left empty (a column of buttons) is named `actions`.
std::string label_cells(std::string_view html, std::string_view title, std::string_view actions) {
  std::string out;
  out.reserve(html.size() + html.size() / 8);
  int regions = 0;
  std::size_t pos = 0;
  while (pos < html.size()) {
    const std::size_t scroll = html.find("<div class=\"scroll\">", pos);
    const std::size_t table = html.find("<table", pos);
    const std::size_t next = std::min(scroll, table);
    if (next == std::string_view::npos) break;
    out.append(html.substr(pos, next - pos));
    if (next == scroll) {
      ++regions;
      std::string label(title);
      if (regions > 1) label += " (" + std::to_string(regions) + ")";
      out += "<div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-label=\"" + escape(label) + "\">";
      pos = scroll + std::string_view("<div class=\"scroll\">").size();
      continue;
    }
    const std::size_t end = html.find("</table>", table);
    if (end == std::string_view::npos) break;
    std::string_view t = html.substr(table, end - table);
    std::vector<std::string> labels;
    const std::size_t head_end = t.find("</thead>");
    if (head_end != std::string_view::npos)
      for (std::size_t th = t.find("<th"); th < head_end; th = t.find("<th", th + 3)) {
        const std::size_t open_end = t.find('>', th);
        const std::size_t close = t.find("</th>", open_end);
        if (open_end == std::string_view::npos || close == std::string_view::npos) break;
        if (t.substr(th, 6) == "<thead") continue;
        std::string label = text_of(t.substr(open_end + 1, close - open_end - 1));
        labels.push_back(label.empty() ? std::string(actions) : label);
      }
    std::size_t column = 0;
    std::size_t at = 0;
    const std::size_t body_start = head_end == std::string_view::npos ? 0 : head_end;
    std::string head(t.substr(0, body_start));
    if (!labels.empty()) head.insert(std::string_view("<table").size(), " class=\"cards\"");
    // A column of buttons has a header too (hidden), for screen readers and the cards.
    for (std::size_t at_th = head.find("<th></th>"); at_th != std::string::npos; at_th = head.find("<th></th>", at_th))
      head.replace(at_th, 9, "<th><span class=\"vh\">" + escape(actions) + "</span></th>");
    out += head;
    at = body_start;
    while (at < t.size()) {
      const std::size_t tr = t.find("<tr", at);
      const std::size_t td = t.find("<td", at);
      const std::size_t step = std::min(tr, td);
      if (step == std::string_view::npos) break;
      out.append(t.substr(at, step - at));
      if (step == tr) {
        column = 0;
        out += "<tr";
        at = tr + 3;
        continue;
      }
      out += "<td";
      if (column < labels.size() && !labels[column].empty()) out += " data-label=\"" + escape(labels[column]) + "\"";
      ++column;
      at = td + 3;
    }
    out.append(t.substr(at));
    pos = end;
  }
  out.append(html.substr(pos));
  return out;
}

}  // namespace

Error not_allowed(Reason why) {
  Error e = with_problem(forbidden(), "role", why);
  e.details.as_object()["error"] = "access_denied";
  return e;
}

Result<web::Fields> form_of(const web::Request& req) {
  if (req.content_type() != "application/x-www-form-urlencoded")
    return with_problem(make_error(ErrorKind::unsupported_media_type, "unsupported_media_type"), "content-type",
                        Reason::form_content_type);
  return web::parse_form(req.body);
}

std::string when(std::int64_t epoch_ms, std::string_view zone) {
  return tz::short_date_time(epoch_ms, i18n::Locale::en, zone);
}

struct Service::Sealer {
  explicit Sealer(std::string_view pepper) : box(pepper) {}
  webhooks::SecretBox box;
  static std::string bound_to(std::int64_t user_id) { return "dashboard-totp:" + std::to_string(user_id); }
};

Service::Service(store::Db& db, Components components, Options options)
    : db_(db),
      lists_(options.list_reads != nullptr ? *options.list_reads : db),
      parts_(components),
      opts_(std::move(options)),
      sessions_(db, SessionOptions{opts_.pepper, opts_.idle_ms, opts_.absolute_ms, 60LL * 1000, opts_.clock}),
      base_path_(path_of(opts_.dashboard_url)),
      pkce_key_(crypto::hmac_sha256(opts_.pepper, "sika:dashboard:pkce:v1")),
      sealer_(std::make_unique<Sealer>(opts_.pepper)) {}

Service::~Service() = default;

std::int64_t Service::now() const { return opts_.clock ? opts_.clock() : now_ms(); }

std::string Service::path(std::string_view rel) const { return base_path_ + std::string(rel); }

web::Response Service::see_other(std::string_view rel) const { return web::Response::redirect(path(rel), 303); }

i18n::Locale Service::locale_of(const web::Request& req) const {
  std::string lang = req.query_param("lang").value_or(web::cookie(req, kLangCookie));
  if (lang == "fr") return i18n::Locale::fr;
  if (lang == "en") return i18n::Locale::en;
  return req.locale;
}

web::CookieSpec Service::cookie_spec(const web::Request& req, std::string_view name, std::string_view value,
                                     std::int64_t max_age_s) const {
  return {.name = name,
          .value = value,
          .path = base_path_.empty() ? std::string_view("/") : std::string_view(base_path_),
          .max_age = max_age_s,
          .secure = opts_.dashboard_url.starts_with("https://") || req.header("x-forwarded-proto") == "https"};
}
Result<web::Principal> Service::authenticate(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(Session s, sessions_.authenticate(req));
  return Sessions::principal(s);
}

Result<Service::Ctx> Service::context(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(Session s, sessions_.authenticate(req));
  Ctx c;
  c.principal = Sessions::principal(s);
  c.session = std::move(s);
  c.locale = locale_of(req);
  if (c.session.merchant) c.zone = merchant::time_zone_of(*c.session.merchant);
  return c;
}

Result<Service::Ctx> Service::member_context(web::Request& req, bool changes) {
  SIKA_ASSIGN_OR_RETURN(Ctx c, context(req));
  // Operators run merchants from their own pages.
  if (c.is_operator()) return not_found(bj::string("merchant pages are for merchant members"));
  if (changes && !c.principal.can_change()) return not_allowed(Reason::viewers_change_nothing);
  return c;
}

Status Service::record(const Ctx& c, std::optional<std::int64_t> merchant_id, std::string action, std::string object,
                       std::string details) {
  AuditEntry e;
  e.at = now();
  e.user_id = c.session.row.user_id;
  e.actor = c.session.row.email;
  e.merchant_id = merchant_id;
  e.action = std::move(action);
  e.object = std::move(object);
  e.details = std::move(details);
  return db_.write([&](store::Conn& conn) { return append_audit(conn, e); });
}

// ---- layout ------------------------------------------------------------------------------

web::Response Service::bare_page(const web::Request& req, std::string title, std::string body, int status) {
  web::html::Page p;
  p.locale = locale_of(req);
  p.title = std::move(title);
  p.body_html = std::move(body);
  p.other_language_url = p.locale == i18n::Locale::fr ? "?lang=en" : "?lang=fr";
  p.extra_head_html = std::string(kStyle);
  web::Response res = web::html::page_response(status, p);
  if (auto lang = req.query_param("lang"); lang && (*lang == "fr" || *lang == "en"))
    web::set_cookie(res, cookie_spec(req, kLangCookie, *lang, 365LL * 86400));
  return res;
}

web::Response Service::page(const web::Request& req, const Ctx& c, std::string title, std::string body, int status) {
  // The navigation: one line per page.
  struct Item {
    const char* rel;
    web::texts::Key<kTexts> label;
    bool operators;  // shown to operators (else to members)
    bool owners_only;
  };
  static constexpr Item kNav[] = {
      {"/", "nav_home", false, false},
      {"/transactions", "nav_transactions", false, false},
      {"/refunds", "nav_refunds", false, false},
      {"/links", "nav_payment_links", false, false},
      {"/payouts", "nav_payouts", false, false},
      {"/statements", "nav_statements", false, false},
      {"/settlement", "nav_settlement", false, false},
      {"/subscriptions", "nav_subscriptions", false, false},
      {"/checkout", "nav_checkout", false, false},
      {"/wallet-links", "nav_linked_wallets", false, false},
      {"/webhooks", "nav_webhooks", false, false},
      {"/developers", "nav_developers", false, false},
      {"/sandbox", "nav_sandbox", false, false},
      {"/team", "nav_team", false, false},
      {"/settings", "nav_settings", false, false},
      {"/audit", "nav_audit_log", false, true},
      {"/security", "nav_security", false, false},
      {"/operator/merchants", "nav_merchants", true, false},
      {"/operator/catalog", "nav_catalog", true, false},
      {"/operator/ledger", "nav_ledger", true, false},
      {"/operator/settlement", "nav_settlement", true, false},
      {"/operator/health", "nav_health", true, false},
      {"/operator/recon", "nav_recon", true, false},
      {"/audit", "nav_audit_log", true, false},
  };
  // The menu once, shown folded in a <details> on a phone and as a line of links from 48rem
  // (the hidden copy is display:none, so neither readers nor the keyboard meet it twice).
  std::string menu;
  for (const auto& item : kNav) {
    if (item.operators != c.is_operator()) continue;
    if (item.owners_only && c.principal.role != web::Role::owner) continue;
    menu += "<a href=\"" + escape(path(item.rel)) + "\">" + escape(item.label.in(c.locale)) + "</a>";
  }
  menu += "<span class=\"muted\">" + escape(c.session.row.email);
  if (c.session.merchant) menu += " · " + escape(c.session.merchant->name);
  menu += " · " + escape(web::role_name(c.principal.role)) + " · " + escape(say(c.locale, "times_in")) +
          escape(c.zone) + " (" + escape(tz::offset_label(tz::find(c.zone) ? tz::find(c.zone)->offset_minutes : 0)) +
          ")</span>";
  std::string nav = "<nav class=\"dsh\" aria-label=\"" + std::string(say(c.locale, "main_menu")) + "\">";
  nav += "<div class=\"menu menu-wide\">" + menu + "</div><details class=\"menu-phone\"><summary>" +
         std::string(say(c.locale, "menu")) + "</summary><div class=\"menu\">" + menu + "</div></details>";
  // Signing out stays in view (once) beside the folded menu.
  nav += "<form method=\"post\" action=\"" + escape(path("/logout")) + "\">" + c.csrf_field() +
         "<button class=\"secondary\">" + escape(say(c.locale, "sign_out")) + "</button></form></nav>";
  std::string labelled = label_cells(body, title, say(c.locale, "actions"));
  return bare_page(req, std::move(title), nav + labelled, status);
}

web::Response Service::error_page(const web::Request& req, const Error& e) {
  const i18n::Locale l = locale_of(req);
  std::string body = "<div class=\"card\" role=\"alert\"><p class=\"error\">" + escape(i18n::text(e.code, l)) + "</p>";
  const bool server_side = e.is(ErrorKind::internal) || e.is(ErrorKind::unavailable) || e.is(ErrorKind::retryable);
  // Each field's problem in the reader's language (its typed reason); a value without one as sent.
  if (!server_side && e.details.is_object())
    for (const auto& [k, v] : e.details.as_object()) {
      const Problem* p = e.problem(k);
      if (!p && !v.is_string()) continue;
      body += "<p><strong>" + escape(k) + "</strong>" + (l == i18n::Locale::fr ? "&nbsp;: " : ": ") +
              escape(p ? reason::text(*p, l) : std::string(v.as_string())) + "</p>";
    }
  body += "<p><a href=\"" + escape(path("/")) + "\">" + std::string(say(l, "back_home")) + "</a></p></div>";
  return bare_page(req, std::string(say(l, "error")), body, web::http_status(e.kind));
}

// ---- sign-in -----------------------------------------------------------------------------

web::Response Service::login(web::Request& req) {
  if (auto s = sessions_.find(web::cookie(req, kSessionCookie)); s)
    return see_other(s->row.second_factor == SecondFactor::done ? "/" : "/totp");
  if (!parts_.identity) return error_page(req, unavailable(bj::string("identity service not configured")));
  const auto start = relying_party().begin(locale_of(req));
  web::Response res = web::Response::redirect(start.url, 303);
  web::html::secure_headers(res);
  web::set_cookie(res, cookie_spec(req, kLoginCookie, start.state, 600));
  return res;
}

identity::RelyingParty Service::relying_party() const {
  return identity::RelyingParty(*parts_.identity, opts_.client_id, opts_.dashboard_url + "/callback", pkce_key_);
}

web::Response Service::callback(web::Request& req) {
  if (!parts_.identity) return error_page(req, unavailable(bj::string("identity service not configured")));
  auto claims = relying_party().finish(req, web::cookie(req, kLoginCookie));
  if (!claims) return error_page(req, claims.error());

  std::int64_t user_id = 0;
  auto read = db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto user, identity::find_user_by_subject(c, claims->subject));
    user_id = user && user->active ? user->id : 0;
    return {};
  });
  if (!read) return error_page(req, read.error());
  if (user_id == 0) return error_page(req, with_problem(unauthorized(), "user", Reason::user_unknown_or_disabled));
  auto opened = sessions_.open(user_id);
  if (!opened) return error_page(req, opened.error());

  web::Response res = see_other(opened->second_factor == SecondFactor::done ? "/" : "/totp");
  web::html::secure_headers(res);
  web::set_cookie(res, cookie_spec(req, kSessionCookie, opened->token, opts_.absolute_ms / 1000));
  web::set_cookie(res, cookie_spec(req, kLoginCookie, "", 0));
  return res;
}

web::Response Service::logout(web::Request& req) {
  const std::string token = web::cookie(req, kSessionCookie);
  if (auto c = context(req); c) (void)record(*c, c->merchant_id(), "session.logout", c->session.row.email);
  if (auto ended = sessions_.end(token); !ended) return error_page(req, ended.error());
  // The identity service's sign-in session ends too, or the next visit would sign in again
  // without a password.
  web::Response res = parts_.identity ? web::Response::redirect(parts_.identity->options().issuer + "/logout", 303)
                                      : see_other("/login");
  web::html::secure_headers(res);
  web::set_cookie(res, cookie_spec(req, kSessionCookie, "", 0));
  return res;
}

// ---- TOTP ---------------------------------------------------------------------------------

web::Response Service::totp_page(web::Request& req) {
  auto found = sessions_.find(web::cookie(req, kSessionCookie));
  if (!found) return see_other("/login");
  Session& s = *found;
  if (s.row.second_factor == SecondFactor::done) return see_other("/");
  const i18n::Locale l = locale_of(req);
  std::string body = "<div class=\"card\">";
  if (s.row.second_factor == SecondFactor::enrol) {
    std::string sealed;
    auto stored = db_.write([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(auto row, find_totp(c, s.row.user_id));
      if (row && !row->confirmed) {
        sealed = row->secret_sealed;
        return {};
      }
      // A fresh secret: 160 bits, the size RFC 4226 recommends for HMAC-SHA1.
      sealed = sealer_->box.seal(Sealer::bound_to(s.row.user_id), random_bytes(20));
      SIKA_ASSIGN_OR_RETURN(bool put, put_pending_totp(c, s.row.user_id, sealed, now()));
      if (!put) return with_problem(conflict(), "totp", Reason::totp_enrolled);
      return {};
    });
    if (!stored) return error_page(req, stored.error());
    auto secret = sealer_->box.open(Sealer::bound_to(s.row.user_id), sealed);
    if (!secret) return error_page(req, internal_error(bj::string("TOTP secret does not open")));
    const std::string b32 = totp::base32_encode(*secret);
    const std::string uri = totp::otpauth_uri("Sika", s.row.email, b32);
    auto svg = links::qr_svg(uri, 5);
    std::string qr = svg ? *svg : std::string();
    if (auto at = qr.find("<svg"); at != std::string::npos) qr.erase(0, at);
    body += "<h2>" + std::string(say(l, "totp_set_up")) + "</h2><p>" + std::string(say(l, "totp_scan")) +
            "</p><figure role=\"img\" aria-label=\"" + std::string(say(l, "totp_qr")) +
            "\" style=\"max-width:14rem\">" + qr + "</figure><p>" + std::string(say(l, "totp_type_key")) +
            "<code class=\"secret\" id=\"totp-secret\">" + escape(b32) + "</code></p><p class=\"muted\">" +
            "<a id=\"otpauth\" href=\"" + escape(uri) + "\">otpauth://</a></p>";
  } else {
    body += "<h2>" + std::string(say(l, "totp_verification_code")) + "</h2><p>" + std::string(say(l, "totp_enter")) +
            "</p>";
  }
  if (auto e = req.query_param("error"); e)
    body += "<p class=\"error\" role=\"alert\">" +
            std::string(say(l, *e == "rate" ? Key("totp_too_many") : Key("totp_incorrect"))) + "</p>";
  body += "<form method=\"post\" action=\"" + escape(path("/totp")) + "\">" + web::Csrf::field_html(s.csrf) +
          "<label for=\"code\">" + std::string(say(l, "totp_code")) +
          "</label><input id=\"code\" name=\"code\" inputmode=\"numeric\" autocomplete=\"one-time-code\" "
          "pattern=\"[0-9]{6}\" maxlength=\"6\" required><button>" +
          std::string(say(l, "totp_verify")) + "</button></form></div>";
  return bare_page(req, std::string(say(l, "totp_title")), body);
}

web::Response Service::totp_submit(web::Request& req) {
  const std::string token = web::cookie(req, kSessionCookie);
  auto found = sessions_.find(token);
  if (!found) return see_other("/login");
  Session& s = *found;
  if (!sessions_.csrf_ok(token, web::Csrf::presented(req))) return error_page(req, csrf_refused());
  if (s.row.second_factor == SecondFactor::done) return see_other("/");
  if (parts_.limiter) {
    limits::Policy policy;
    policy.limit = opts_.totp_attempts_per_window;
    policy.window_ms = 5LL * 60 * 1000;
    policy.name = "dashboard_totp_attempts_per_user";
    auto hit = parts_.limiter->hit("dashboard:totp:" + std::to_string(s.row.user_id), policy);
    if (!hit) return error_page(req, hit.error());
    if (!hit->allowed) return see_other("/totp?error=rate");
  }
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  const std::string code = web::field_value(*fields, "code");
  const bool enrolling = s.row.second_factor == SecondFactor::enrol;
  bool accepted = false;
  auto checked = db_.write([&](store::Conn& c) -> Status {
    accepted = false;
    SIKA_ASSIGN_OR_RETURN(auto row, find_totp(c, s.row.user_id));
    if (!row || (!enrolling && !row->confirmed)) return {};
    auto secret = sealer_->box.open(Sealer::bound_to(s.row.user_id), row->secret_sealed);
    if (!secret) return internal_error(bj::string("TOTP secret does not open"));
    auto step = totp::match(*secret, code, now());
    if (!step) return {};
    SIKA_ASSIGN_OR_RETURN(accepted, use_totp_step(c, s.row.user_id, *step, now()));
    if (accepted) SIKA_TRY(set_second_factor(c, s.row.id, SecondFactor::done));
    return {};
  });
  if (!checked) return error_page(req, checked.error());
  if (!accepted) return see_other("/totp?error=code");
  if (enrolling) {
    Ctx c;
    c.session = s;
    c.principal = Sessions::principal(s);
    (void)record(c, c.merchant_id(), "totp.enrol", s.row.email);
  }
  return see_other("/");
}

web::Response Service::security(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  bool enrolled = false;
  auto read = db_.read([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto row, find_totp(conn, c->session.row.user_id));
    enrolled = row && row->confirmed;
    return {};
  });
  if (!read) return error_page(req, read.error());
  std::string body = "<div class=\"card\"><h2>" + std::string(say(c->locale, "two_factor_authentication")) + "</h2>";
  if (enrolled) {
    body += "<p>" + std::string(say(c->locale, "on_a_totp_code_is")) + "</p>";
  } else {
    body += "<p>" + std::string(say(c->locale, "off")) + "</p><form method=\"post\" action=\"" +
            escape(path("/security/totp")) + "\">" + c->csrf_field() + "<button>" +
            std::string(say(c->locale, "turn_on")) + "</button></form>";
  }
  body += "</div>";
  return page(req, *c, std::string(say(c->locale, "security")), body);
}

web::Response Service::security_enrol(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  // The session goes back to the enrolment step: its pages open again once a code is verified.
  auto set = db_.write([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto row, find_totp(conn, c->session.row.user_id));
    if (row && row->confirmed) return with_problem(conflict(), "totp", Reason::totp_enrolled);
    return set_second_factor(conn, c->session.row.id, SecondFactor::enrol);
  });
  if (!set) return error_page(req, set.error());
  return see_other("/totp");
}

// ---- home ---------------------------------------------------------------------------------

namespace {

// A bar chart of daily collected volume (one currency) with the daily success rate as a line,
// drawn by the server: no script, no chart service. Labelled for screen readers; the figures
// are also in the table that follows it.
std::string volume_chart(const std::vector<payments::queries::DailyVolume>& days, std::string_view currency,
                         std::int64_t first_day, int n_days, bool fr) {
  const i18n::Locale l = fr ? i18n::Locale::fr : i18n::Locale::en;
  constexpr int W = 640, H = 200, pad = 24;
  std::vector<std::int64_t> volume(static_cast<std::size_t>(n_days), 0);
  std::vector<double> rate(static_cast<std::size_t>(n_days), -1);
  std::int64_t max_volume = 0;
  for (const auto& d : days) {
    if (d.currency != currency) continue;
    std::int64_t i = (d.day - first_day) / 86400000;
    if (i < 0 || i >= n_days) continue;
    volume[static_cast<std::size_t>(i)] = d.completed_amount;
    if (d.ended > 0)
      rate[static_cast<std::size_t>(i)] = static_cast<double>(d.completed) / static_cast<double>(d.ended);
    max_volume = std::max(max_volume, d.completed_amount);
  }
  const double slot = static_cast<double>(W - 2 * pad) / n_days;
  std::string svg = "<svg viewBox=\"0 0 " + std::to_string(W) + " " + std::to_string(H) +
                    "\" role=\"img\" aria-labelledby=\"chart-title\" style=\"width:100%;height:auto;background:#fff\">"
                    "<title id=\"chart-title\">" +
                    std::string(say(l, "chart_title")) + escape(currency) + "</title>";
  svg += "<line x1=\"" + std::to_string(pad) + "\" y1=\"" + std::to_string(H - pad) + "\" x2=\"" +
         std::to_string(W - pad) + "\" y2=\"" + std::to_string(H - pad) + "\" stroke=\"#555\"/>";
  std::string line;
  for (int i = 0; i < n_days; ++i) {
    const double x = pad + i * slot;
    const auto v = volume[static_cast<std::size_t>(i)];
    const int h = max_volume > 0 ? static_cast<int>((H - 2 * pad) * v / max_volume) : 0;
    char buf[160];
    std::snprintf(buf, sizeof buf, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#0b3d2e\"/>", x + 2,
                  H - pad - h, slot - 4, h);
    svg += buf;
    if (double r = rate[static_cast<std::size_t>(i)]; r >= 0) {
      std::snprintf(buf, sizeof buf, "%s%.1f,%.1f", line.empty() ? "" : " ", x + slot / 2,
                    pad + (H - 2 * pad) * (1.0 - r));
      line += buf;
    }
  }
  if (!line.empty()) svg += "<polyline points=\"" + line + "\" fill=\"none\" stroke=\"#f2a900\" stroke-width=\"3\"/>";
  svg += "<text x=\"" + std::to_string(pad) + "\" y=\"14\" font-size=\"12\">" +
         escape(money::format(max_volume, currency)) + "</text><text x=\"" + std::to_string(W - pad - 120) +
         "\" y=\"14\" font-size=\"12\" fill=\"#8a5a00\">" + std::string(say(l, "chart_rate")) + "</text>";
  svg += "</svg>";
  return svg;
}

}  // namespace

web::Response Service::home(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  if (c->is_operator()) return see_other("/operator/merchants");
  constexpr int kDays = 14;
  const std::int64_t today = now() / 86400000 * 86400000;
  const std::int64_t first_day = today - (kDays - 1) * 86400000LL;
  std::vector<payments::queries::CurrencyBalance> balances;
  std::vector<payments::queries::DailyVolume> days;
  auto read = db_.read([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(
        balances, payments::queries::merchant_balances(conn, c->principal.merchant_id, c->principal.environment));
    SIKA_ASSIGN_OR_RETURN(days, payments::queries::daily_volume(conn, c->principal.merchant_id,
                                                                c->principal.environment, first_day, today + 86400000));
    return {};
  });
  if (!read) return error_page(req, read.error());
  std::string body = "<section class=\"card\" aria-labelledby=\"bal\"><h2 id=\"bal\">" +
                     std::string(say(c->locale, "balances")) + " <span class=\"badge\">" +
                     escape(c->principal.environment) + "</span></h2>";
  if (balances.empty())
    body += "<p class=\"muted\">" + std::string(say(c->locale, "no_balance_yet")) + "</p>";
  else {
    body += "<div class=\"scroll\"><table><thead><tr><th>" + std::string(say(c->locale, "currency")) +
            "</th><th class=\"num\">" + std::string(say(c->locale, "available")) + "</th><th class=\"num\">" +
            std::string(say(c->locale, "pending")) + "</th></tr></thead><tbody>";
    for (const auto& b : balances)
      body += "<tr><td>" + escape(b.currency) + "</td><td class=\"num\">" +
              escape(money::format(b.available, b.currency)) + "</td><td class=\"num\">" +
              escape(money::format(b.pending, b.currency)) + "</td></tr>";
    body += "</tbody></table></div>";
  }
  body += "</section>";
  // The chart's currency: the one with the most collections in the period.
  std::map<std::string, std::int64_t> per_currency;
  for (const auto& d : days) per_currency[d.currency] += d.count;
  std::string currency;
  std::int64_t best = -1;
  for (const auto& [cur, n] : per_currency)
    if (n > best) best = n, currency = cur;
  body += "<section class=\"card\" aria-labelledby=\"vol\"><h2 id=\"vol\">" +
          std::string(say(c->locale, "volume_of_the_last_14")) + "</h2>";
  if (currency.empty()) {
    body += "<p class=\"muted\">" + std::string(say(c->locale, "no_transaction_in_the_period")) + "</p>";
  } else {
    body += volume_chart(days, currency, first_day, kDays, c->fr());
    body += "<div class=\"scroll\"><table><caption class=\"muted\">" + escape(currency) + "</caption><thead><tr><th>" +
            std::string(say(c->locale, "day")) + "</th><th class=\"num\">" + std::string(say(c->locale, "collected")) +
            "</th><th class=\"num\">" + std::string(say(c->locale, "transactions")) + "</th><th class=\"num\">" +
            std::string(say(c->locale, "success")) + "</th></tr></thead><tbody>";
    for (const auto& d : days) {
      if (d.currency != currency) continue;
      std::string rate = d.ended > 0 ? std::to_string(d.completed * 100 / d.ended) + " %" : "–";
      body += "<tr><td>" + when(d.day).substr(0, 10) + "</td><td class=\"num\">" +
              escape(money::format(d.completed_amount, d.currency)) + "</td><td class=\"num\">" +
              std::to_string(d.count) + "</td><td class=\"num\">" + rate + "</td></tr>";
    }
    body += "</tbody></table></div>";
  }
  body += "</section>";
  return page(req, *c, c->session.merchant ? c->session.merchant->name : std::string("Sika"), body);
}

// ---- audit log -------------------------------------------------------------------------------

web::Response Service::audit(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  if (!c->is_operator() && c->principal.role != web::Role::owner)
    return error_page(req, not_allowed(Reason::owners_read_audit));
  std::optional<std::int64_t> before;
  if (auto b = req.query_param("before"); b && !b->empty()) {
    try {
      before = std::stoll(*b);
    } catch (...) {
      return error_page(req, field_error("before", Reason::not_integer));
    }
  }
  constexpr int kPage = 50;
  std::vector<AuditEntry> entries;
  auto read = db_.read([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(entries, list_audit(conn, c->merchant_id(), before, kPage));
    return {};
  });
  if (!read) return error_page(req, read.error());
  std::string body = "<div class=\"scroll\"><table><thead><tr><th>" + std::string(say(c->locale, "date")) +
                     "</th><th>" + std::string(say(c->locale, "actor")) + "</th><th>" +
                     std::string(say(c->locale, "action")) + "</th><th>" + std::string(say(c->locale, "object")) +
                     "</th><th>" + std::string(say(c->locale, "details")) + "</th></tr></thead><tbody>";
  for (const auto& e : entries)
    body += "<tr><td>" + when(e.at, c->zone) + "</td><td>" + escape(e.actor) + "</td><td>" + escape(e.action) +
            "</td><td>" + escape(e.object) + "</td><td><code>" + escape(e.details) + "</code></td></tr>";
  body += "</tbody></table></div>";
  if (static_cast<int>(entries.size()) == kPage)
    body += "<p><a href=\"?before=" + std::to_string(entries.back().id) + "\">" + std::string(say(c->locale, "older")) +
            "</a></p>";
  return page(req, *c, std::string(say(c->locale, "audit_log")), body);
}

}  // namespace sika::dashboard
