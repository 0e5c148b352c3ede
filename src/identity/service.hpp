#pragma once
// The identity service: an OAuth 2.0 authorization server and OpenID Connect provider at
// {auth_url}, and the gateway's bearer-token middleware (`authenticate`).
//
// Guarantees:
//  - client_credentials tokens are stateless JWTs (no database write); client records are
//    cached in memory for at most Options::client_cache_seconds (the bound on how long a
//    rotated secret or a disabled client keeps working on another process/node).
//  - A revoked access token is refused by `authenticate` on every node as soon as the
//    revocation committed when token_cache_seconds == 0 (the default: one indexed lookup per
//    request), or within token_cache_seconds otherwise. So is a token of a merchant whose
//    countries, tier or status changed after the token was issued (its grants version moved).
//    A token issued within client_cache_seconds of such a change, from a cached client record,
//    carries the old version and is refused too.
//  - Refresh tokens rotate at every use; a reused (already rotated) token revokes its whole
//    family, except within refresh_grace_seconds of its rotation where parallel refreshes
//    each succeed. Authorization codes are single-use; a replayed code revokes what it issued.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/periodic.hpp"
#include "core/result.hpp"
#include "core/thread_annotations.hpp"
#include "identity/issuer.hpp"
#include "identity/keys.hpp"
#include "identity/model.hpp"
#include "identity/options.hpp"
#include "limits/limiter.hpp"
#include "limits/local.hpp"
#include "store/db.hpp"
#include "web/csrf.hpp"
#include "web/message.hpp"

namespace sika::identity {

// What the dashboard learns from a verified ID token.
struct IdTokenClaims {
  std::string subject;
  std::int64_t auth_time = 0;  // epoch seconds
  std::string email, name;     // with the email / profile scopes
};

class Service {
 public:
  // Loads the signing keys, creating an ES256 and an RS256 key when none exist.
  // Throws std::runtime_error if the keys cannot be loaded (e.g. wrong secret key).
  Service(store::Db& db, Options options);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // --- identity surface (mount: {auth_url}) ---
  // POST /oauth/v2/token: client_credentials, authorization_code (+PKCE), refresh_token.
  web::Response token(web::Request& req);
  // POST /oauth/v2/revoke (RFC 7009): 200 for unknown tokens; 400 unauthorized_client for a
  // token issued to another client (RFC 7009 §2.1), which stays valid.
  web::Response revoke(web::Request& req);
  // POST /oauth/v2/introspect (RFC 7662), client-authenticated.
  web::Response introspect(web::Request& req);
  // GET /oauth/v2/authorize: validates the request, then shows the login/consent page or
  // redirects with a code when a session and consent exist.
  web::Response authorize(web::Request& req);
  // POST /oauth/v2/authorize: the login + consent form (or a form-encoded authorization request).
  web::Response authorize_submit(web::Request& req);
  // GET and POST /oauth/v2/userinfo (OIDC Core §5.3).
  web::Response userinfo(web::Request& req);
  // GET /.well-known/jwks.json (also /oauth/v2/jwks).
  web::Response jwks(web::Request& req);
  // GET /.well-known/openid-configuration.
  web::Response discovery(web::Request& req);
  // GET /.well-known/oauth-authorization-server (RFC 8414).
  web::Response as_metadata(web::Request& req);
  // GET and POST /signup (404 unless signup_enabled).
  web::Response signup_page(web::Request& req);
  web::Response signup_submit(web::Request& req);
  // GET /logout: ends the login session (cookie and database row).
  web::Response logout(web::Request& req);

  // --- gateway middleware ---
  // Reads `x-sp-auth-token: Bearer <jwt>` or `Authorization: Bearer <jwt>`; checks alg, typ,
  // kid, signature, iss, aud, exp/nbf and the denylist. Errors are 401: message
  // "unauthorized" when no token is present, "invalid_token" otherwise, with
  // details {error, error_description}.
  Result<web::Principal> authenticate(const web::Request& req);
  // Verifies a token string the same way (no header parsing).
  Result<web::Principal> verify_access_token(std::string_view token);
  // Verifies an ID token issued to `client_id` (a relying party of our own, e.g. the dashboard):
  // signature by a published key, typ JWT, iss, aud (and azp), exp, and the nonce of the
  // authorization request. Errors are 401 invalid_token.
  Result<IdTokenClaims> verify_id_token(std::string_view token, std::string_view client_id, std::string_view nonce);

  // Background work: key reload, purge of expired codes, tokens, sessions and keys.
  void start();
  void stop();
  // One pass of that work (tests call it directly).
  Status run_maintenance();
  // Re-reads the key table now.
  Status reload_keys();
  // Forgets cached client records (this process).
  void invalidate_client_cache();

  const Options& options() const { return opts_; }
  // Seconds a retired key must stay published: the longest token lifetime plus the time
  // other nodes may keep signing with it before they reload keys.
  std::int64_t key_publish_seconds() const;

 private:
  struct CachedClient;
  struct CachedToken;
  struct TokenShard;
  // An authenticated client, and whether it used HTTP Basic (401s then carry WWW-Authenticate).
  struct ClientAuth {
    std::shared_ptr<const Client> client;
    bool basic = false;
  };
  struct AuthzRequest;

  std::int64_t now() const { return opts_.clock(); }
  std::shared_ptr<const KeyRing> keys() const;
  // With missed set: a client not in the cache is not read from the database; the answer is then
  // an error and *missed is true.
  Result<std::shared_ptr<const Client>> load_client(std::string_view client_id, bool* missed = nullptr);
  // With would_block set (the request runs on an I/O thread): a step that would wait for the
  // database (a client not in the cache, counting a failed authentication) is not taken; the
  // answer is then an error to ignore and *would_block is true.
  Result<ClientAuth> authenticate_client(const web::Request& req, const boost::json::object& body, bool allow_public,
                                         bool* would_block = nullptr);
  web::Response token_client_credentials(web::Request& req, const boost::json::object& body);
  web::Response token_authorization_code(const web::Request& req, const boost::json::object& body);
  web::Response token_refresh(const web::Request& req, const boost::json::object& body);
  web::Response token_error(const web::Request& req, const Error& e, bool basic = false);
  // The 200 answer of the token endpoint: the issuer's response, not cached.
  web::Response token_issued(const web::Request& req, const Ticket& ticket, const Grant& grant);
  // Parses a JWS and checks its alg, its key (one we publish) and signature, and its issuer.
  Result<ParsedJwt> signed_by_us(std::string_view token);
  // True iff the token is denylisted or its merchant's grants moved since its claims were read.
  Result<bool> is_revoked(const web::Principal& p);
  // Revocations made by this process, applied to its cache at once (token_cache_seconds > 0).
  void note_revoked(const std::vector<std::pair<std::string, std::int64_t>>& jtis);
  bool revoked_here(const std::string& jti);
  Result<std::shared_ptr<const web::Principal>> verify_cached(std::string_view token);
  // Per-process rate (token_rate_per_client): true iff this hit is within `limit` per window.
  // `name` labels the refusal metric (see limits::Policy::name).
  bool rate_hit(const std::string& key, int limit, std::int64_t window_ms, std::string_view name);
  // Shared rate (all nodes, through the database): true iff this hit is within `limit` per window.
  // `name` labels the refusal metric (see limits::Policy::name).
  Result<bool> shared_rate_hit(const std::string& bucket, int limit, std::int64_t window_ms, std::string_view name);
  // Counts a failed client authentication and returns the error to answer (401, or 429 past a limit).
  Error client_auth_failed(const std::string& address, const Client* client, std::string_view why);
  // The 429 for an address this process knows to be over its failure limit; nullopt otherwise.
  std::optional<Error> address_throttled(const std::string& address);

  // authorize helpers (authorize.cpp)
  Result<AuthzRequest> parse_authz(const web::Fields& params, web::Response& page_error, const web::Request& req);
  web::Response authz_redirect_error(const AuthzRequest& a, std::string_view error, std::string_view description);
  // With not_consented set, the code is issued only if the user's stored consent covers the scopes
  // (checked in the unit that stores the code); otherwise *not_consented becomes true and the
  // answer is to be ignored.
  // session_hash: with not_consented, the login session that must still exist in that unit.
  web::Response authz_issue_code(const AuthzRequest& a, std::int64_t user_id, std::int64_t auth_time,
                                 bool* not_consented = nullptr, std::string_view session_hash = {});
  // typed_email: the e-mail the form was submitted with, shown again ("" for login_hint).
  web::Response render_login(const web::Request& req, const AuthzRequest& a, const User* user, std::string_view error,
                             int status = 200, std::string_view typed_email = {});
  Result<std::optional<std::pair<User, std::int64_t>>> current_session(const web::Request& req);
  // The sign-in attempt of `email` from the request's address, throttled and counted before the
  // password is compared (login.cpp).
  struct LoginOutcome {
    enum class Kind { signed_in, refused, throttled, unavailable } kind = Kind::refused;
    std::optional<User> user;        // signed_in only
    std::int64_t retry_after_s = 0;  // throttled only
  };
  LoginOutcome attempt_login(const web::Request& req, std::string_view email, std::string_view password);
  // The name of an e-mail in rate-limit buckets and device cookies: a keyed hash, never the e-mail.
  std::string account_key(std::string_view email) const;
  // A device cookie for `email` (set after a successful sign-in), and the nonce of the request's
  // device cookie when it is one of ours for that e-mail ("" otherwise).
  std::string device_cookie_for(std::string_view email) const;
  std::string trusted_device(const web::Request& req, std::string_view email) const;
  // The CSRF token of a sign-in or sign-up form (double submit: web::Csrf of the sika_csrf
  // cookie's random value) and the Set-Cookie value minting that cookie ("" when the request has
  // a usable one).
  struct FormCsrf {
    std::string token;
    std::string set_cookie;
  };
  FormCsrf form_csrf(const web::Request& req) const;
  // True iff the form's `csrf` field is the token of the request's sika_csrf cookie.
  bool csrf_ok(const web::Request& req, const web::Fields& form) const;
  // A Set-Cookie value of the identity service (its path, Lax, Secure behind https).
  std::string cookie_header(std::string_view name, std::string_view value, std::int64_t max_age) const;
  std::string cookie_path() const;
  bool secure_cookies() const;
  i18n::Locale page_locale(const web::Request& req, std::string_view ui_locales) const;

  store::Db& db_;
  Options opts_;
  TokenIssuer issuer_;
  std::string discovery_json_;
  web::Csrf csrf_{"", ""};  // set from the pepper by the constructor
  std::string login_key_;   // keys account_key() and device cookies

  mutable sika::SharedMutex keys_mu_;
  std::shared_ptr<const KeyRing> keys_ GUARDED_BY(keys_mu_);
  std::atomic<std::int64_t> last_key_reload_{0};

  sika::SharedMutex clients_mu_;
  std::unordered_map<std::string, std::shared_ptr<CachedClient>> clients_ GUARDED_BY(clients_mu_);

  std::unique_ptr<TokenShard[]> token_shards_;
  sika::SharedMutex local_revoked_mu_;
  std::unordered_map<std::string, std::int64_t> local_revoked_
      GUARDED_BY(local_revoked_mu_);  // jti -> token expiry (ms)

  limits::Limiter limiter_;
  sika::Mutex rate_mu_;  // throttled_addresses_
  limits::LocalLimiter local_limiter_{100'000, [this] { return now(); }};
  // Addresses the shared counter found over failed_client_auth_per_ip -> end of their refusal (ms).
  // A memo of the database's answer, so a flooding address costs no more writes on this node.
  std::unordered_map<std::string, std::int64_t> throttled_addresses_ GUARDED_BY(rate_mu_);

  std::unique_ptr<Periodic> worker_;  // key reloads and maintenance
};

}  // namespace sika::identity
