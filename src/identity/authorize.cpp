// The authorization endpoint (RFC 6749 §4.1, OIDC Core §3.1.2): login and consent pages,
// login sessions, sign-up and logout.
#include <boost/json.hpp>
#include <boost/url/parse.hpp>

#include <algorithm>
#include <charconv>

#include "core/crypto.hpp"
#include "core/random.hpp"
#include "identity/internal.hpp"
#include "identity/pages.hpp"
#include "identity/service.hpp"
#include "identity/store.hpp"
#include "web/cookie.hpp"
#include "web/envelope.hpp"

namespace sika::identity {

namespace bj = boost::json;

namespace {

constexpr std::string_view kSessionCookie = "sika_session";
constexpr std::string_view kCsrfCookie = "sika_csrf";

bool has_field(const web::Fields& f, std::string_view k) {
  for (const auto& [name, value] : f)
    if (name == k) return true;
  return false;
}

bool valid_b64url(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; });
}

}  // namespace

struct Service::AuthzRequest {
  std::shared_ptr<const Client> client;
  std::string redirect_uri;
  bool redirect_uri_given = false;
  std::vector<std::string> scopes;
  std::string state;
  std::string nonce;
  std::string code_challenge;
  std::string code_challenge_method;
  std::string prompt;
  std::string ui_locales;
  std::string login_hint;
  std::optional<std::int64_t> max_age;
  std::string error;  // set when the request is invalid but the redirect URI is trusted
  std::string error_description;

  // Hidden form fields that carry the request through the login form.
  web::Fields hidden() const {
    web::Fields f;
    f.emplace_back("client_id", client->client_id);
    if (redirect_uri_given) f.emplace_back("redirect_uri", redirect_uri);
    f.emplace_back("response_type", "code");
    f.emplace_back("scope", join_list(scopes));
    if (!state.empty()) f.emplace_back("state", state);
    if (!nonce.empty()) f.emplace_back("nonce", nonce);
    if (!code_challenge.empty()) {
      f.emplace_back("code_challenge", code_challenge);
      f.emplace_back("code_challenge_method", code_challenge_method);
    }
    if (!ui_locales.empty()) f.emplace_back("ui_locales", ui_locales);
    return f;
  }

  // The request's parameters other than ui_locales, to ask for the same page in another language.
  web::Fields request_params() const {
    web::Fields f;
    for (auto& [k, v] : hidden())
      if (k != "ui_locales") f.emplace_back(k, v);
    if (!prompt.empty()) f.emplace_back("prompt", prompt);
    if (max_age) f.emplace_back("max_age", std::to_string(*max_age));
    if (!login_hint.empty()) f.emplace_back("login_hint", login_hint);
    return f;
  }

  // The first problem of a request whose redirect URI is trusted: it goes back to that URI.
  struct Problem {
    std::string_view error;
    std::string description;
  };
  // Each reader below sets the fields it reads, up to the first problem, which it returns.
  std::optional<Problem> read_response(const web::Fields& params);  // state, grant, response type and mode
  std::optional<Problem> read_scopes(const web::Fields& params);
  std::optional<Problem> read_pkce(const web::Fields& params);
  std::optional<Problem> read_oidc(const web::Fields& params);  // nonce, prompt, max_age, login_hint
};

std::optional<Service::AuthzRequest::Problem> Service::AuthzRequest::read_response(const web::Fields& params) {
  state = web::field_value(params, "state");
  if (state.size() > 2048) {
    state.clear();
    return Problem{"invalid_request", "state is too long"};
  }
  if (!client->allows_grant("authorization_code"))
    return Problem{"unauthorized_client", "this client may not use the authorization code flow"};
  std::string response_type = web::field_value(params, "response_type");
  if (response_type.empty()) return Problem{"invalid_request", "response_type is required"};
  if (response_type != "code") return Problem{"unsupported_response_type", "only response_type=code is supported"};
  std::string mode = web::field_value(params, "response_mode");
  if (!mode.empty() && mode != "query") return Problem{"invalid_request", "only response_mode=query is supported"};
  if (has_field(params, "request")) return Problem{"request_not_supported", "request objects are not supported"};
  if (has_field(params, "request_uri")) return Problem{"request_uri_not_supported", "request_uri is not supported"};
  return std::nullopt;
}

std::optional<Service::AuthzRequest::Problem> Service::AuthzRequest::read_scopes(const web::Fields& params) {
  scopes = split_list(web::field_value(params, "scope"));
  if (scopes.empty()) return Problem{"invalid_scope", "scope is required"};
  for (const auto& s : scopes) {
    if (!is_known_scope(s)) return Problem{"invalid_scope", "unknown scope " + s};
    if (!contains(client->scopes, s)) return Problem{"invalid_scope", "scope " + s + " is not allowed for this client"};
  }
  return std::nullopt;
}

std::optional<Service::AuthzRequest::Problem> Service::AuthzRequest::read_pkce(const web::Fields& params) {
  code_challenge = web::field_value(params, "code_challenge");
  code_challenge_method = web::field_value(params, "code_challenge_method");
  if (!code_challenge.empty()) {
    if (code_challenge_method.empty() || code_challenge_method == "plain")
      return Problem{"invalid_request", "code_challenge_method must be S256 (plain is not supported)"};
    if (code_challenge_method != "S256") return Problem{"invalid_request", "code_challenge_method must be S256"};
    if (code_challenge.size() != 43 || !valid_b64url(code_challenge))
      return Problem{"invalid_request", "code_challenge must be base64url(SHA-256(code_verifier))"};
  } else if (!code_challenge_method.empty()) {
    return Problem{"invalid_request", "code_challenge_method without code_challenge"};
  } else if (!client->confidential) {
    return Problem{"invalid_request", "PKCE with code_challenge_method=S256 is required for public clients"};
  }
  return std::nullopt;
}

std::optional<Service::AuthzRequest::Problem> Service::AuthzRequest::read_oidc(const web::Fields& params) {
  nonce = web::field_value(params, "nonce");
  if (nonce.size() > 512) return Problem{"invalid_request", "nonce is too long"};
  prompt = web::field_value(params, "prompt");
  auto prompts = split_list(prompt);
  for (const auto& p : prompts)
    if (p != "none" && p != "login" && p != "consent" && p != "select_account")
      return Problem{"invalid_request", "unknown prompt value " + p};
  if (contains(prompts, "none") && prompts.size() > 1)
    return Problem{"invalid_request", "prompt=none cannot be combined with other values"};
  if (std::string ma = web::field_value(params, "max_age"); !ma.empty()) {
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(ma.data(), ma.data() + ma.size(), v);
    if (ec != std::errc() || ptr != ma.data() + ma.size() || v < 0)
      return Problem{"invalid_request", "max_age must be a non-negative integer"};
    max_age = v;
  }
  login_hint = web::field_value(params, "login_hint");
  if (login_hint.size() > 254) login_hint.clear();
  return std::nullopt;
}

std::string Service::cookie_path() const {
  auto u = boost::urls::parse_absolute_uri(opts_.issuer);
  if (!u || u->encoded_path().empty()) return "/";
  return std::string(u->encoded_path());
}

bool Service::secure_cookies() const { return opts_.issuer.starts_with("https://"); }

std::string Service::cookie_header(std::string_view name, std::string_view value, std::int64_t max_age) const {
  const std::string path = cookie_path();
  return web::set_cookie_value(
      {.name = name, .value = value, .path = path, .max_age = max_age, .secure = secure_cookies()});
}

Service::FormCsrf Service::form_csrf(const web::Request& req) const {
  std::string bound = web::cookie(req, kCsrfCookie);
  FormCsrf out;
  if (bound.size() < 20 || bound.size() > 100) {
    bound = random_token(24);
    out.set_cookie = cookie_header(kCsrfCookie, bound, 3600);
  }
  out.token = csrf_.issue(bound);
  return out;
}

bool Service::csrf_ok(const web::Request& req, const web::Fields& form) const {
  return csrf_.check(web::cookie(req, kCsrfCookie), web::field_value(form, "csrf"));
}

i18n::Locale Service::page_locale(const web::Request& req, std::string_view ui_locales) const {
  for (const auto& tag : split_list(ui_locales)) {
    if (tag.starts_with("fr")) return i18n::Locale::fr;
    if (tag.starts_with("en")) return i18n::Locale::en;
  }
  return i18n::negotiate(req.header("accept-language"), req.locale);
}

namespace {

web::Response html_page(int status, std::string body) {
  web::Response res = web::Response::html(status, std::move(body));
  pages::secure_headers(res);
  return res;
}

web::Response unavailable_page(i18n::Locale loc) {
  return html_page(503, pages::error(loc, "temporarily_unavailable", pages::text(loc, "err_retry")));
}

// Adds the Set-Cookie headers of a sign-in (each "" when not set).
void add_cookies(web::Response& res, const std::string& session, const std::string& device) {
  for (const std::string* c : {&session, &device})
    if (!c->empty()) res.headers.emplace_back("Set-Cookie", *c);
}

Status insert_session(store::Conn& c, const std::string& sid_hash, std::int64_t user_id, std::int64_t t,
                      std::int64_t expires_at) {
  SIKA_TRY(
      c.exec("INSERT INTO identity_sessions (session_hash, user_id, auth_time, expires_at, created_at) "
             "VALUES (?, ?, ?, ?, ?)",
             {sid_hash, user_id, t, expires_at, t}));
  return {};
}

// Records (or replaces) the scopes the user consented to for this client.
Status store_consent(store::Conn& c, std::int64_t user_id, const std::string& client_id, const std::string& scope,
                     std::int64_t t) {
  SIKA_TRY(
      c.exec("INSERT INTO oauth_consents (user_id, client_id, scope, granted_at) VALUES (?, ?, ?, ?) "
             "ON CONFLICT (user_id, client_id) DO UPDATE SET scope = excluded.scope, granted_at = excluded.granted_at",
             {user_id, client_id, scope, t}));
  return {};
}

std::string append_query(std::string uri, const web::Fields& params) {
  char sep = uri.find('?') == std::string::npos ? '?' : '&';
  for (const auto& [k, v] : params) {
    uri.push_back(sep);
    sep = '&';
    uri += web::percent_encode(k);
    uri.push_back('=');
    uri += web::percent_encode(v);
  }
  return uri;
}

}  // namespace

Result<Service::AuthzRequest> Service::parse_authz(const web::Fields& params, web::Response& page_error,
                                                   const web::Request& req) {
  AuthzRequest a;
  a.ui_locales = web::field_value(params, "ui_locales");
  i18n::Locale loc = page_locale(req, a.ui_locales);
  auto fail_page = [&](std::string_view code, std::string_view description) -> Error {
    page_error = html_page(400, pages::error(loc, code, description));
    return bad_request(std::string(code), bj::string(description));
  };
  std::string client_id = web::field_value(params, "client_id");
  if (client_id.empty()) return fail_page("invalid_request", pages::text(loc, "err_client_id"));
  auto client = load_client(client_id);
  if (!client) {
    page_error = unavailable_page(loc);
    return client.take_error();
  }
  if (!*client || !(*client)->active || !(*client)->merchant_active)
    return fail_page("invalid_client", pages::text(loc, "err_client"));
  a.client = *client;
  a.redirect_uri = web::field_value(params, "redirect_uri");
  a.redirect_uri_given = !a.redirect_uri.empty();
  if (a.redirect_uri_given) {
    if (!a.client->redirect_uri_registered(a.redirect_uri))
      return fail_page("invalid_request", pages::text(loc, "err_redirect"));
  } else if (a.client->redirect_uris.size() == 1) {
    a.redirect_uri = a.client->redirect_uris.front();
  } else {
    return fail_page("invalid_request", pages::text(loc, "err_redirect_required"));
  }
  // From here on, errors go back to the client's redirect URI (RFC 6749 §4.1.2.1).
  for (auto read :
       {&AuthzRequest::read_response, &AuthzRequest::read_scopes, &AuthzRequest::read_pkce, &AuthzRequest::read_oidc})
    if (auto problem = (a.*read)(params)) {
      a.error = problem->error;
      a.error_description = std::move(problem->description);
      return a;
    }
  return a;
}

web::Response Service::authz_redirect_error(const AuthzRequest& a, std::string_view error,
                                            std::string_view description) {
  web::Fields p;
  p.emplace_back("error", std::string(error));
  if (!description.empty()) p.emplace_back("error_description", std::string(description));
  if (!a.state.empty()) p.emplace_back("state", a.state);
  p.emplace_back("iss", opts_.issuer);
  web::Response res = web::Response::redirect(append_query(a.redirect_uri, p), 303);
  no_store(res);
  return res;
}

web::Response Service::authz_issue_code(const AuthzRequest& a, std::int64_t user_id, std::int64_t auth_time,
                                        bool* not_consented, std::string_view session_hash) {
  const std::int64_t t = now();
  std::string code = random_token(32);
  std::string hash = crypto::secret_hash(opts_.pepper, code);
  AuthorizationCode row{.code_hash = std::move(hash),
                        .client_id = a.client->client_id,
                        .user_id = user_id,
                        .redirect_uri = a.redirect_uri,
                        .redirect_uri_given = a.redirect_uri_given,
                        .scope = join_list(a.scopes),
                        .nonce = a.nonce,
                        .code_challenge = a.code_challenge,
                        .auth_time = auth_time,
                        .expires_at = t + opts_.code_ttl * 1000LL,
                        .created_at = t};
  // Without the form, the code is issued only if the consent stored covers the scopes when the
  // code is: the check and the insert are one write unit.
  bool consented = true;
  Status st = db_.write([&](store::Conn& c) -> Status {
    if (not_consented) {
      // The session the request came with must still be there (not signed out meanwhile).
      if (!session_hash.empty()) {
        SIKA_ASSIGN_OR_RETURN(auto live, c.query_one("SELECT 1 FROM identity_sessions WHERE session_hash = ? AND "
                                                     "expires_at > ?",
                                                     {std::string(session_hash), t}));
        consented = live.has_value();
        if (!consented) return {};
      }
      SIKA_ASSIGN_OR_RETURN(auto granted,
                            c.query_one("SELECT scope FROM oauth_consents WHERE user_id = ? AND client_id = ?",
                                        {user_id, a.client->client_id}));
      auto have = split_list(granted ? granted->str(0) : std::string());
      consented =
          std::all_of(a.scopes.begin(), a.scopes.end(), [&](const std::string& s) { return contains(have, s); });
      if (!consented) return {};
    }
    return insert_code(c, row);
  });
  if (!st) return authz_redirect_error(a, "server_error", "could not store the authorization code");
  if (!consented) {
    *not_consented = true;
    return {};
  }
  web::Fields p;
  p.emplace_back("code", code);
  if (!a.state.empty()) p.emplace_back("state", a.state);
  p.emplace_back("iss", opts_.issuer);
  web::Response res = web::Response::redirect(append_query(a.redirect_uri, p), 303);
  no_store(res);
  return res;
}

Result<std::optional<std::pair<User, std::int64_t>>> Service::current_session(const web::Request& req) {
  std::string sid = web::cookie(req, kSessionCookie);
  using Out = std::optional<std::pair<User, std::int64_t>>;
  if (sid.empty() || sid.size() > 100) return Out{};
  std::string hash = crypto::secret_hash(opts_.pepper, sid);
  const std::int64_t t = now();
  Out out;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    out.reset();
    SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT user_id, auth_time FROM identity_sessions "
                                                "WHERE session_hash = ? AND expires_at > ?",
                                                {hash, t}));
    if (!row) return {};
    SIKA_ASSIGN_OR_RETURN(auto user, find_user_by_id(c, row->i64(0)));
    if (user && user->active) out = std::make_pair(std::move(*user), row->i64(1));
    return {};
  }));
  return out;
}

web::Response Service::render_login(const web::Request& req, const AuthzRequest& a, const User* user,
                                    std::string_view error, int status, std::string_view typed_email) {
  pages::LoginView v;
  v.locale = page_locale(req, a.ui_locales);
  v.action = cookie_path() + (cookie_path().ends_with('/') ? "" : "/") + "oauth/v2/authorize";
  v.client_name = a.client->name;
  v.scopes = a.scopes;
  v.signed_in = user != nullptr;
  if (user) v.user_email = user->email;
  v.email = typed_email.empty() ? a.login_hint : std::string(typed_email);
  v.error = std::string(error);
  v.hidden = a.hidden();
  std::string base = cookie_path() + (cookie_path().ends_with('/') ? "" : "/");
  // The language switch: the same authorization request (every parameter) in the other locale.
  for (i18n::Locale l : {i18n::Locale::fr, i18n::Locale::en}) {
    web::Fields p = a.request_params();
    p.emplace_back("ui_locales", std::string(i18n::name(l)));
    v.languages.push_back({l, append_query(base + "oauth/v2/authorize", p)});
  }
  v.logout_url =
      base + "logout?return_to=" + web::percent_encode(append_query(base + "oauth/v2/authorize", a.hidden()));
  if (opts_.signup_enabled)
    v.signup_url =
        base + "signup?return_to=" + web::percent_encode(append_query(base + "oauth/v2/authorize", a.hidden()));
  FormCsrf csrf = form_csrf(req);
  v.hidden.emplace_back("csrf", csrf.token);
  web::Response res = html_page(status, pages::login(v));
  if (!csrf.set_cookie.empty()) res.headers.emplace_back("Set-Cookie", csrf.set_cookie);
  return res;
}

web::Response Service::authorize(web::Request& req) {
  web::Response page_error;
  auto parsed = parse_authz(req.query, page_error, req);
  if (!parsed) return page_error;
  const AuthzRequest& a = *parsed;
  if (!a.error.empty()) return authz_redirect_error(a, a.error, a.error_description);
  auto session = current_session(req);
  if (!session) return authz_redirect_error(a, "temporarily_unavailable", "please retry");
  auto prompts = split_list(a.prompt);
  const std::int64_t t = now();
  bool need_login =
      !*session || contains(prompts, "login") || (a.max_age && t - (*session)->second > *a.max_age * 1000);
  if (!need_login) {
    const User& user = (*session)->first;
    if (!contains(prompts, "consent")) {
      bool not_consented = false;
      web::Response issued = authz_issue_code(a, user.id, (*session)->second, &not_consented,
                                              crypto::secret_hash(opts_.pepper, web::cookie(req, kSessionCookie)));
      if (!not_consented) return issued;
    }
    if (contains(prompts, "none")) return authz_redirect_error(a, "consent_required", "the user has not consented yet");
    return render_login(req, a, &user, "");
  }
  if (contains(prompts, "none")) return authz_redirect_error(a, "login_required", "the user is not signed in");
  return render_login(req, a, nullptr, "");
}

web::Response Service::authorize_submit(web::Request& req) {
  if (req.content_type() != "application/x-www-form-urlencoded")
    return html_page(415,
                     pages::error(page_locale(req, ""), "invalid_request", "use application/x-www-form-urlencoded"));
  auto form = web::parse_form(req.body);
  if (!form) return html_page(400, pages::error(page_locale(req, ""), "invalid_request", "malformed form"));
  if (!has_field(*form, "csrf")) {
    // OIDC Core §3.1.2.1: an authorization request may also be POSTed.
    web::Request as_get = req;
    as_get.query = *form;
    return authorize(as_get);
  }
  web::Response page_error;
  auto parsed = parse_authz(*form, page_error, req);
  if (!parsed) return page_error;
  const AuthzRequest& a = *parsed;
  i18n::Locale loc = page_locale(req, a.ui_locales);
  if (!csrf_ok(req, *form)) return html_page(400, pages::error(loc, "invalid_request", pages::text(loc, "csrf")));
  if (!a.error.empty()) return authz_redirect_error(a, a.error, a.error_description);
  if (web::field_value(*form, "action") == "deny")
    return authz_redirect_error(a, "access_denied", "the user denied the request");

  const std::int64_t t = now();
  std::optional<User> user;
  std::int64_t auth_time = 0;
  std::string set_session, set_device;
  std::string email = web::field_value(*form, "email");
  std::string password = web::field_value(*form, "password");
  if (!email.empty() || !password.empty()) {
    if (email.empty() || password.empty())
      return render_login(req, a, nullptr, pages::text(loc, "missing_credentials"), 400, email);
    if (email.size() > 254) return render_login(req, a, nullptr, pages::text(loc, "bad_credentials"), 401);
    auto outcome = attempt_login(req, email, password);
    using Kind = LoginOutcome::Kind;
    if (outcome.kind == Kind::unavailable) return unavailable_page(loc);
    if (outcome.kind == Kind::throttled) {
      web::Response res = render_login(req, a, nullptr, pages::text(loc, "throttled"), 429, email);
      res.set("Retry-After", std::to_string(outcome.retry_after_s));
      return res;
    }
    if (outcome.kind == Kind::refused)
      return render_login(req, a, nullptr, pages::text(loc, "bad_credentials"), 401, email);
    std::string sid = random_token(32);
    std::string sid_hash = crypto::secret_hash(opts_.pepper, sid);
    Status st = db_.write([&](store::Conn& c) -> Status {
      return insert_session(c, sid_hash, outcome.user->id, t, t + opts_.session_ttl * 1000LL);
    });
    if (!st) return unavailable_page(loc);
    set_device = cookie_header("sika_device", device_cookie_for(email), opts_.device_cookie_seconds);
    user = std::move(outcome.user);
    auth_time = t;
    set_session = cookie_header(kSessionCookie, sid, opts_.session_ttl);
  } else {
    auto session = current_session(req);
    if (!session) return unavailable_page(loc);
    if (!*session) return render_login(req, a, nullptr, pages::text(loc, "missing_credentials"), 400);
    if (contains(split_list(a.prompt), "login"))
      return render_login(req, a, nullptr, pages::text(loc, "missing_credentials"), 400);
    user = std::move((*session)->first);
    auth_time = (*session)->second;
  }
  if (web::field_value(*form, "action") != "approve") {
    web::Response res = render_login(req, a, &*user, "");
    add_cookies(res, set_session, set_device);
    return res;
  }
  std::string scope = join_list(a.scopes);
  Status st =
      db_.write([&](store::Conn& c) -> Status { return store_consent(c, user->id, a.client->client_id, scope, t); });
  if (!st) return authz_redirect_error(a, "temporarily_unavailable", "please retry");
  web::Response res = authz_issue_code(a, user->id, auth_time);
  add_cookies(res, set_session, set_device);
  return res;
}

// ---------------------------------------------------------------------------------------------
// sign-up and logout

namespace {

// Only local paths under the identity mount are followed after sign-up/logout (no open redirect).
// Dot segments (also percent-encoded) are refused: "/auth/../evil" resolves outside the mount.
std::string safe_return(std::string_view return_to, std::string_view base) {
  if (!return_to.starts_with(base) || return_to.find("//") != std::string_view::npos ||
      return_to.find('\\') != std::string_view::npos)
    return {};
  std::string_view path = return_to.substr(0, return_to.find_first_of("?#"));
  std::string decoded;
  for (std::size_t i = 0; i < path.size(); ++i) {
    auto c = static_cast<unsigned char>(path[i]);
    if (c < 0x21 || c == 0x7f) return {};
    if (c == '%' && i + 2 < path.size() && path[i + 1] == '2' && (path[i + 2] == 'e' || path[i + 2] == 'E')) {
      decoded.push_back('.');
      i += 2;
    } else if (c == '%' && i + 2 < path.size() && path[i + 1] == '2' && (path[i + 2] == 'f' || path[i + 2] == 'F')) {
      return {};
    } else {
      decoded.push_back(static_cast<char>(c));
    }
  }
  decoded.push_back('/');
  if (decoded.find("/./") != std::string::npos || decoded.find("/../") != std::string::npos) return {};
  return std::string(return_to);
}

}  // namespace

web::Response Service::signup_page(web::Request& req) {
  i18n::Locale loc = page_locale(req, req.query_param("ui_locales").value_or(""));
  if (!opts_.signup_enabled) return html_page(404, pages::message(loc, "signup_title", "signup_disabled"));
  std::string base = cookie_path() + (cookie_path().ends_with('/') ? "" : "/");
  pages::SignupView v;
  v.locale = loc;
  v.action = base + "signup";
  FormCsrf csrf = form_csrf(req);
  v.hidden.emplace_back("csrf", csrf.token);
  if (auto r = req.query_param("return_to")) v.hidden.emplace_back("return_to", safe_return(*r, base));
  web::Response res = html_page(200, pages::signup(v));
  if (!csrf.set_cookie.empty()) res.headers.emplace_back("Set-Cookie", csrf.set_cookie);
  return res;
}

web::Response Service::signup_submit(web::Request& req) {
  i18n::Locale loc = page_locale(req, "");
  if (!opts_.signup_enabled) return html_page(404, pages::message(loc, "signup_title", "signup_disabled"));
  auto form = web::parse_form(req.body);
  if (!form || req.content_type() != "application/x-www-form-urlencoded")
    return html_page(400, pages::error(loc, "invalid_request", "malformed form"));
  if (!csrf_ok(req, *form)) return html_page(400, pages::error(loc, "invalid_request", pages::text(loc, "csrf")));
  std::string base = cookie_path() + (cookie_path().ends_with('/') ? "" : "/");
  UserSpec spec;
  spec.email = web::field_value(*form, "email");
  spec.password = web::field_value(*form, "password");
  spec.name = web::field_value(*form, "name");
  spec.phone = web::field_value(*form, "phone");
  pages::SignupView v;
  v.locale = loc;
  v.action = base + "signup";
  v.email = spec.email;
  v.name = spec.name;
  v.phone = spec.phone;
  v.hidden.emplace_back("csrf", web::field_value(*form, "csrf"));
  std::string return_to = safe_return(web::field_value(*form, "return_to"), base);
  v.hidden.emplace_back("return_to", return_to);
  auto allowed =
      shared_rate_hit("signup-ip:" + req.remote_ip, opts_.login_attempts_per_ip, 60000, "signups_per_address");
  if (!allowed || !*allowed) {
    v.error = pages::text(loc, "rate_limited");
    return html_page(429, pages::signup(v));
  }
  if (auto s = validate_user(spec); !s) {
    v.error = pages::text(loc, "invalid_form");
    if (s.error().details.is_object())
      for (const auto& kv : s.error().details.as_object())
        v.error += " " + std::string(kv.key()) + ": " + std::string(kv.value().as_string()) + ".";
    return html_page(400, pages::signup(v));
  }
  const std::int64_t t = now();
  auto user = create_user(db_, spec, t);
  if (!user) {
    v.error = pages::text(loc, user.error().is(ErrorKind::conflict) ? "email_taken" : "invalid_form");
    return html_page(user.error().is(ErrorKind::conflict) ? 409 : 400, pages::signup(v));
  }
  std::string sid = random_token(32);
  std::string sid_hash = crypto::secret_hash(opts_.pepper, sid);
  Status st = db_.write([&](store::Conn& c) -> Status {
    SIKA_TRY(
        c.exec("INSERT INTO identity_sessions (session_hash, user_id, auth_time, expires_at, created_at) "
               "VALUES (?, ?, ?, ?, ?)",
               {sid_hash, user->id, t, t + opts_.session_ttl * 1000LL, t}));
    return {};
  });
  web::Response res = return_to.empty() ? html_page(201, pages::message(loc, "signup_title", "account_created"))
                                        : web::Response::redirect(return_to, 303);
  pages::secure_headers(res);
  if (st) res.headers.emplace_back("Set-Cookie", cookie_header(kSessionCookie, sid, opts_.session_ttl));
  return res;
}

web::Response Service::logout(web::Request& req) {
  i18n::Locale loc = page_locale(req, "");
  std::string sid = web::cookie(req, kSessionCookie);
  if (!sid.empty() && sid.size() <= 100) {
    std::string hash = crypto::secret_hash(opts_.pepper, sid);
    (void)db_.write([&](store::Conn& c) -> Status {
      SIKA_TRY(c.exec("DELETE FROM identity_sessions WHERE session_hash = ?", {hash}));
      return {};
    });
  }
  std::string base = cookie_path() + (cookie_path().ends_with('/') ? "" : "/");
  std::string back = safe_return(req.query_param("return_to").value_or(""), base);
  web::Response res =
      back.empty() ? html_page(200, pages::message(loc, "sign_out", "signed_out")) : web::Response::redirect(back, 303);
  pages::secure_headers(res);
  res.headers.emplace_back("Set-Cookie", cookie_header(kSessionCookie, "", 0));
  return res;
}

}  // namespace sika::identity
