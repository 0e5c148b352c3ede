#include "identity/service.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <stdexcept>

#include "core/crypto.hpp"
#include "core/random.hpp"
#include "core/time.hpp"
#include "identity/internal.hpp"
#include "web/envelope.hpp"

namespace sika::identity {

namespace bj = boost::json;

namespace {

constexpr std::size_t kTokenShards = 16;
constexpr std::size_t kClientCacheMax = 10000;

bool iequals_prefix(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<std::int64_t> claim_int(const bj::object& o, std::string_view k) {
  auto it = o.find(k);
  if (it == o.end()) return std::nullopt;
  if (it->value().is_int64()) return it->value().get_int64();
  if (it->value().is_uint64() && it->value().get_uint64() < (1ull << 62))
    return static_cast<std::int64_t>(it->value().get_uint64());
  if (it->value().is_double()) return static_cast<std::int64_t>(it->value().get_double());
  return std::nullopt;
}

std::string claim_str(const bj::object& o, std::string_view k) {
  auto it = o.find(k);
  return it != o.end() && it->value().is_string() ? std::string(it->value().get_string()) : std::string();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// internal helpers shared with authorize.cpp

Error oauth_error(ErrorKind kind, std::string_view code, std::string_view description) {
  bj::object d;
  d["error"] = code;
  d["error_description"] = description;
  return Error{kind, std::string(code), std::move(d)};
}

Error invalid_token(std::string_view description) {
  bj::object d;
  d["error"] = "invalid_token";
  d["error_description"] = description;
  return make_error(ErrorKind::unauthenticated, "invalid_token", std::move(d));
}

std::string param(const bj::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_string()) return {};
  return std::string(it->value().get_string());
}

std::string cookie(const web::Request& req, std::string_view name) {
  std::string_view h = req.header("cookie");
  std::size_t pos = 0;
  while (pos < h.size()) {
    std::size_t end = h.find(';', pos);
    if (end == std::string_view::npos) end = h.size();
    std::string_view item = trim(h.substr(pos, end - pos));
    pos = end + 1;
    std::size_t eq = item.find('=');
    if (eq != std::string_view::npos && item.substr(0, eq) == name) return std::string(item.substr(eq + 1));
  }
  return {};
}

std::string pkce_s256(std::string_view verifier) { return base64url_encode(crypto::sha256(verifier)); }

bool valid_pkce_verifier(std::string_view v) {
  if (v.size() < 43 || v.size() > 128) return false;
  return std::all_of(v.begin(), v.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' || c == '~';
  });
}

void no_store(web::Response& res) {
  res.set("Cache-Control", "no-store");
  res.set("Pragma", "no-cache");
}

// ---------------------------------------------------------------------------------------------

struct Service::CachedClient {
  std::shared_ptr<const Client> client;
  std::int64_t fetched_at = 0;
};

struct Service::CachedToken {
  std::shared_ptr<const web::Principal> principal;
  std::int64_t exp_ms = 0;
  std::int64_t checked_at = 0;  // last denylist check (ms)
  bool revoked = false;
};

struct Service::TokenShard {
  std::mutex mu;
  std::unordered_map<std::string, CachedToken> map;
};

struct Service::ClientAuth {
  std::shared_ptr<const Client> client;
  bool basic = false;
};

struct Service::Issued {
  std::string access_token;
  std::string scope;
  std::string refresh_token;
  std::string id_token;
  std::int64_t expires_in = 0;
};

Service::Service(store::Db& db, Options options) : db_(db), opts_(std::move(options)) {
  if (!opts_.clock) opts_.clock = [] { return now_ms(); };
  while (!opts_.issuer.empty() && opts_.issuer.back() == '/') opts_.issuer.pop_back();
  if (opts_.pepper.empty()) throw std::runtime_error("identity: the server secret key is empty");
  access_alg_ = parse_alg(opts_.default_alg).value_or(Alg::ES256);
  csrf_key_ = crypto::hmac_sha256(opts_.pepper, "sika.identity.csrf.v1");
  token_shards_ = std::make_unique<TokenShard[]>(kTokenShards);
  auto ring = load_keys(db_, opts_.pepper, now(), true);
  if (!ring) throw std::runtime_error("identity: cannot load signing keys: " + bj::serialize(ring.error().details));
  keys_ = std::move(ring).value();
  last_key_reload_ = now();

  // Discovery document (OIDC Discovery 1.0 and RFC 8414 share these members).
  const std::string& iss = opts_.issuer;
  bj::object d;
  d["issuer"] = iss;
  d["authorization_endpoint"] = iss + "/oauth/v2/authorize";
  d["token_endpoint"] = iss + "/oauth/v2/token";
  d["userinfo_endpoint"] = iss + "/oauth/v2/userinfo";
  d["jwks_uri"] = iss + "/.well-known/jwks.json";
  d["revocation_endpoint"] = iss + "/oauth/v2/revoke";
  d["introspection_endpoint"] = iss + "/oauth/v2/introspect";
  bj::array scopes;
  for (auto s : kApiScopes) scopes.push_back(bj::string(s));
  for (auto s : kOidcScopes) scopes.push_back(bj::string(s));
  d["scopes_supported"] = std::move(scopes);
  d["response_types_supported"] = bj::array{"code"};
  d["response_modes_supported"] = bj::array{"query"};
  d["grant_types_supported"] = bj::array{"authorization_code", "client_credentials", "refresh_token"};
  d["subject_types_supported"] = bj::array{"public"};
  d["id_token_signing_alg_values_supported"] = bj::array{"RS256", "ES256"};
  d["token_endpoint_auth_methods_supported"] = bj::array{"client_secret_basic", "client_secret_post", "none"};
  d["revocation_endpoint_auth_methods_supported"] = bj::array{"client_secret_basic", "client_secret_post", "none"};
  d["introspection_endpoint_auth_methods_supported"] = bj::array{"client_secret_basic", "client_secret_post"};
  d["code_challenge_methods_supported"] = bj::array{"S256"};
  d["claims_supported"] = bj::array{"sub",   "iss",          "aud",           "exp",         "iat",
                                    "auth_time", "nonce",    "at_hash",       "name",        "email",
                                    "email_verified", "phone_number", "phone_number_verified", "updated_at"};
  d["ui_locales_supported"] = bj::array{"fr", "en"};
  d["prompt_values_supported"] = bj::array{"none", "login", "consent"};
  d["claims_parameter_supported"] = false;
  d["request_parameter_supported"] = false;
  d["request_uri_parameter_supported"] = false;
  d["authorization_response_iss_parameter_supported"] = true;
  d["access_token_signing_alg_values_supported"] = bj::array{"ES256", "RS256"};
  discovery_json_ = bj::serialize(d);
}

Service::~Service() { stop(); }

std::int64_t Service::key_publish_seconds() const {
  return std::max(opts_.access_token_ttl, opts_.id_token_ttl) + opts_.key_reload_seconds + 300;
}

std::shared_ptr<const KeyRing> Service::keys() const {
  std::shared_lock lock(keys_mu_);
  return keys_;
}

Status Service::reload_keys() {
  SIKA_ASSIGN_OR_RETURN(auto ring, load_keys(db_, opts_.pepper, now(), true));
  {
    std::unique_lock lock(keys_mu_);
    keys_ = std::move(ring);
  }
  last_key_reload_ = now();
  return {};
}

void Service::invalidate_client_cache() {
  std::unique_lock lock(clients_mu_);
  clients_.clear();
}

// ---------------------------------------------------------------------------------------------
// throttling

bool Service::rate_hit(const std::string& key, int limit, std::int64_t window_ms) {
  if (limit <= 0) return true;
  std::int64_t t = now();
  std::lock_guard lock(rate_mu_);
  if (rates_.size() > 100000) rates_.clear();  // bounded memory under a flood of keys
  auto& [start, hits] = rates_[key];
  if (t - start >= window_ms) {
    start = t;
    hits = 0;
  }
  ++hits;
  return hits <= limit;
}

bool Service::rate_blocked(const std::string& key, int limit, std::int64_t window_ms) {
  if (limit <= 0) return false;
  std::int64_t t = now();
  std::lock_guard lock(rate_mu_);
  auto it = rates_.find(key);
  if (it == rates_.end()) return false;
  if (t - it->second.first >= window_ms) return false;
  return it->second.second >= limit;
}

Result<bool> Service::shared_rate_hit(const std::string& bucket, int limit, std::int64_t window_ms) {
  if (limit <= 0) return true;
  std::int64_t t = now();
  std::int64_t hits = 0;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(
        auto row, c.query_one("INSERT INTO identity_throttle (bucket, window_start, hits) VALUES (?, ?, 1) "
                              "ON CONFLICT (bucket) DO UPDATE SET "
                              "hits = CASE WHEN identity_throttle.window_start < ? THEN 1 "
                              "ELSE identity_throttle.hits + 1 END, "
                              "window_start = CASE WHEN identity_throttle.window_start < ? THEN ? "
                              "ELSE identity_throttle.window_start END RETURNING hits",
                              {bucket, t, t - window_ms, t - window_ms, t}));
    hits = row ? row->i64(0) : 1;
    return {};
  }));
  return hits <= limit;
}

// ---------------------------------------------------------------------------------------------
// clients

Result<std::shared_ptr<const Client>> Service::load_client(std::string_view client_id) {
  std::int64_t t = now();
  std::string key(client_id);
  {
    std::shared_lock lock(clients_mu_);
    auto it = clients_.find(key);
    if (it != clients_.end() && t - it->second->fetched_at < opts_.client_cache_seconds * 1000LL)
      return it->second->client;
  }
  std::optional<Client> found;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(found, find_client(c, client_id));
    return {};
  }));
  if (!found) return std::shared_ptr<const Client>();
  auto entry = std::make_shared<CachedClient>();
  entry->client = std::make_shared<const Client>(std::move(*found));
  entry->fetched_at = t;
  {
    std::unique_lock lock(clients_mu_);
    if (clients_.size() >= kClientCacheMax) clients_.clear();
    clients_[key] = entry;
  }
  return entry->client;
}

Result<Service::ClientAuth> Service::authenticate_client(const web::Request& req, const bj::object& body,
                                                         bool allow_public) {
  ClientAuth out;
  std::string id = param(body, "client_id");
  std::string secret = param(body, "client_secret");
  bool has_secret = body.contains("client_secret");
  std::string_view authz = req.header("authorization");
  if (iequals_prefix(authz, "basic ")) {
    out.basic = true;
    std::string decoded;
    std::string_view b64 = trim(authz.substr(6));
    std::size_t colon = std::string::npos;
    if (!base64_decode(b64, decoded) || (colon = decoded.find(':')) == std::string::npos)
      return oauth_error(ErrorKind::unauthenticated, "invalid_client", "malformed HTTP Basic credentials");
    auto bid = web::percent_decode(std::string_view(decoded).substr(0, colon), true);
    auto bsecret = web::percent_decode(std::string_view(decoded).substr(colon + 1), true);
    if (!bid || !bsecret) return oauth_error(ErrorKind::unauthenticated, "invalid_client", "malformed HTTP Basic credentials");
    if (has_secret) return oauth_error(ErrorKind::invalid, "invalid_request", "use one client authentication method, not two");
    if (!id.empty() && id != *bid) return oauth_error(ErrorKind::invalid, "invalid_request", "client_id differs from HTTP Basic");
    id = std::move(*bid);
    secret = std::move(*bsecret);
    has_secret = true;
  }
  if (id.empty()) return oauth_error(ErrorKind::unauthenticated, "invalid_client", "client authentication is required (client_id)");
  std::string ip_key = "cf:" + req.remote_ip;
  if (rate_blocked(ip_key, opts_.failed_client_auth_per_ip, 60000)) {
    Error e = oauth_error(ErrorKind::rate_limited, "rate_limited", "too many failed client authentications; retry in a minute");
    return e;
  }
  auto fail = [&](std::string_view why) -> Error {
    rate_hit(ip_key, opts_.failed_client_auth_per_ip, 60000);
    return oauth_error(ErrorKind::unauthenticated, "invalid_client", why);
  };
  SIKA_ASSIGN_OR_RETURN(auto client, load_client(id));
  if (!client || !client->active || !client->merchant_active) return fail("unknown or disabled client");
  if (client->confidential) {
    if (!has_secret || secret.empty()) return fail("client_secret is required");
    if (!crypto::secret_matches(opts_.pepper, secret, client->secret_hash)) return fail("client authentication failed");
  } else {
    if (!allow_public) return fail("a public client cannot use this endpoint");
    if (has_secret && !secret.empty()) return fail("a public client has no secret");
  }
  out.client = std::move(client);
  return out;
}

// ---------------------------------------------------------------------------------------------
// token building

std::string Service::build_access_token(const Client& client, const User* user, std::string_view scope,
                                        const std::string& jti, std::int64_t iat, std::int64_t exp,
                                        std::int64_t auth_time) {
  auto ring = keys();
  const Jwk* key = ring->signer(access_alg_);
  if (!key) return {};
  std::string p;
  p.reserve(512);
  JsonWriter w(p);
  w.begin();
  w.str("iss", opts_.issuer);
  w.str("sub", user ? user->subject : client.client_id);
  w.str("aud", opts_.audience);
  w.num("exp", exp);
  w.num("iat", iat);
  w.str("jti", jti);
  w.str("client_id", client.client_id);
  w.str("scope", scope);
  if (user) {
    w.num("auth_time", auth_time);
    if (!user->merchant.empty()) {
      w.str("merchant", user->merchant);
      w.num("merchant_id", user->merchant_id);
    }
    w.num("tier", user->user_tier);
    w.str_array("countries", user->countries);
    w.boolean("admin", user->admin);
  } else {
    if (!client.merchant.empty()) {
      w.str("merchant", client.merchant);
      w.num("merchant_id", client.merchant_id);
    }
    w.num("tier", client.user_tier);
    w.str_array("countries", client.countries);
    w.boolean("admin", client.admin);
  }
  w.str("environment", client.environment);
  w.end();
  return key->sign(key->access_header(), p);
}

std::string Service::build_id_token(const Client& client, const User& user, std::string_view scope,
                                    std::string_view nonce, std::int64_t auth_time, std::string_view access_token,
                                    std::int64_t iat) {
  auto ring = keys();
  const Jwk* key = ring->signer(parse_alg(client.id_token_alg).value_or(Alg::RS256));
  if (!key) return {};
  auto scopes = split_list(scope);
  std::string p;
  JsonWriter w(p);
  w.begin();
  w.str("iss", opts_.issuer);
  w.str("sub", user.subject);
  w.str("aud", client.client_id);
  w.str("azp", client.client_id);
  w.num("exp", iat + opts_.id_token_ttl);
  w.num("iat", iat);
  w.num("auth_time", auth_time);
  if (!nonce.empty()) w.str("nonce", nonce);
  if (!access_token.empty()) w.str("at_hash", half_hash(access_token));
  if (contains(scopes, "profile")) w.str("name", user.name);
  if (contains(scopes, "email")) {
    w.str("email", user.email);
    w.boolean("email_verified", false);
  }
  if (contains(scopes, "phone") && !user.phone.empty()) {
    w.str("phone_number", user.phone);
    w.boolean("phone_number_verified", false);
  }
  w.end();
  return key->sign(key->id_header(), p);
}

std::string Service::token_response(const Issued& is) {
  std::string out;
  out.reserve(is.access_token.size() + is.id_token.size() + 200);
  JsonWriter w(out);
  w.begin();
  w.str("access_token", is.access_token);
  w.str("token_type", "Bearer");
  w.num("expires_in", is.expires_in);
  w.str("scope", is.scope);
  if (!is.refresh_token.empty()) w.str("refresh_token", is.refresh_token);
  if (!is.id_token.empty()) w.str("id_token", is.id_token);
  w.end();
  return out;
}

web::Response Service::token_error(const web::Request& req, const Error& e, bool basic) {
  web::Response res = web::error(req, e);
  no_store(res);
  basic = basic || iequals_prefix(req.header("authorization"), "basic ");
  if (e.is(ErrorKind::unauthenticated) && basic) res.set("WWW-Authenticate", "Basic realm=\"sika\", charset=\"UTF-8\"");
  if (e.is(ErrorKind::rate_limited)) res.set("Retry-After", "60");
  return res;
}

// ---------------------------------------------------------------------------------------------
// token endpoint

web::Response Service::token(web::Request& req) {
  auto body = web::body_object(req, true);
  if (!body) {
    bj::object d;
    d["error"] = "invalid_request";
    d["error_description"] =
        body.error().details.is_string() ? body.error().details.get_string() : bj::string("unparsable body");
    return token_error(req, empty_data(std::move(d)));
  }
  for (const auto& kv : *body)
    if (!kv.value().is_string())
      return token_error(req, oauth_error(ErrorKind::invalid, "invalid_request", std::string(kv.key()) + " must be a string"));
  std::string grant = param(*body, "grant_type");
  if (grant.empty()) return token_error(req, oauth_error(ErrorKind::invalid, "invalid_request", "grant_type is required"));
  if (grant == "client_credentials") return token_client_credentials(req, *body);
  if (grant == "authorization_code") return token_authorization_code(req, *body);
  if (grant == "refresh_token") return token_refresh(req, *body);
  return token_error(req, oauth_error(ErrorKind::invalid, "unsupported_grant_type",
                                      "supported: client_credentials, authorization_code, refresh_token"));
}

namespace {

// Resolves the requested scope against what is allowed; "" means an error was set.
std::string resolve_scope(std::string_view requested, const std::vector<std::string>& allowed,
                          const std::vector<std::string>& defaults, std::string& problem) {
  std::vector<std::string> want = requested.empty() ? defaults : split_list(requested);
  for (const auto& s : want) {
    if (!is_known_scope(s)) {
      problem = "unknown scope " + s;
      return {};
    }
    if (!contains(allowed, s)) {
      problem = "scope " + s + " is not allowed for this client";
      return {};
    }
  }
  if (want.empty()) problem = "no scope could be granted";
  return join_list(want);
}

}  // namespace

web::Response Service::token_client_credentials(const web::Request& req, const bj::object& body) {
  auto auth = authenticate_client(req, body, false);
  if (!auth) return token_error(req, auth.error(), false);
  const Client& client = *auth->client;
  if (!client.allows_grant("client_credentials"))
    return token_error(req, oauth_error(ErrorKind::invalid, "unauthorized_client", "client_credentials is not allowed for this client"),
                       auth->basic);
  if (opts_.token_rate_per_client > 0 && !rate_hit("tr:" + client.client_id, opts_.token_rate_per_client, 1000))
    return token_error(req, oauth_error(ErrorKind::rate_limited, "rate_limited", "token rate limit of this client reached"));
  std::string requested = param(body, "scope");
  std::vector<std::string> defaults;
  for (auto s : kApiScopes)
    if (contains(client.scopes, s)) defaults.emplace_back(s);
  std::vector<std::string> api_allowed = defaults;
  std::string problem;
  std::string scope = resolve_scope(requested, api_allowed, defaults, problem);
  if (scope.empty()) {
    if (problem.starts_with("scope ") && !requested.empty()) {
      for (const auto& s : split_list(requested))
        if (contains(client.scopes, s)) problem = "scope " + s + " needs a user (authorization_code)";
    }
    return token_error(req, oauth_error(ErrorKind::invalid, "invalid_scope", problem), auth->basic);
  }
  std::string resource = param(body, "resource");
  if (!resource.empty() && resource != opts_.audience)
    return token_error(req, oauth_error(ErrorKind::invalid, "invalid_target", "the only resource is " + opts_.audience));

  std::int64_t iat = now() / 1000;
  Issued is;
  is.expires_in = opts_.access_token_ttl;
  is.scope = std::move(scope);
  is.access_token = build_access_token(client, nullptr, is.scope, random_token(16), iat, iat + opts_.access_token_ttl, 0);
  if (is.access_token.empty()) return token_error(req, internal_error("signing failed"));
  web::Response res = web::Response::json(200, token_response(is));
  no_store(res);
  return res;
}

// Marks refresh-token families and their access tokens revoked (inside a write unit).
Status revoke_family(store::Conn& c, std::string_view family_id, std::int64_t t,
                     std::vector<std::pair<std::string, std::int64_t>>* revoked) {
  if (revoked) {
    SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT access_jti, access_expires_at FROM oauth_refresh_tokens "
                                             "WHERE family_id = ? AND access_jti IS NOT NULL AND access_expires_at > ?",
                                             {std::string(family_id), t}));
    for (const auto& r : rows) revoked->emplace_back(r.str(0), r.i64(1));
  }
  SIKA_TRY(c.exec("INSERT INTO oauth_revoked_tokens (jti, client_id, expires_at, revoked_at) "
                  "SELECT access_jti, client_id, access_expires_at, ? FROM oauth_refresh_tokens "
                  "WHERE family_id = ? AND access_jti IS NOT NULL AND access_expires_at > ? "
                  "ON CONFLICT (jti) DO NOTHING",
                  {t, std::string(family_id), t}));
  SIKA_TRY(c.exec("UPDATE oauth_refresh_tokens SET status = 'revoked', revoked_at = ? "
                  "WHERE family_id = ? AND status <> 'revoked'",
                  {t, std::string(family_id)}));
  return {};
}

web::Response Service::token_authorization_code(const web::Request& req, const bj::object& body) {
  auto auth = authenticate_client(req, body, true);
  if (!auth) return token_error(req, auth.error(), false);
  const Client& client = *auth->client;
  bool basic = auth->basic;
  if (!client.allows_grant("authorization_code"))
    return token_error(req, oauth_error(ErrorKind::invalid, "unauthorized_client", "authorization_code is not allowed for this client"),
                       basic);
  std::string code = param(body, "code");
  if (code.empty()) return token_error(req, oauth_error(ErrorKind::invalid, "invalid_request", "code is required"), basic);
  std::string redirect_uri = param(body, "redirect_uri");
  std::string verifier = param(body, "code_verifier");
  if (!verifier.empty() && !valid_pkce_verifier(verifier))
    return token_error(req, oauth_error(ErrorKind::invalid, "invalid_request", "code_verifier must be 43-128 unreserved characters"),
                       basic);

  const std::int64_t t = now();
  const std::string code_hash = crypto::secret_hash(opts_.pepper, code);
  const std::string jti = random_token(16);
  const std::string refresh = "rt_" + random_token(32);
  const std::string family = random_token(16);
  const bool with_refresh = client.allows_grant("refresh_token");
  const std::int64_t access_exp_ms = (t / 1000 + opts_.access_token_ttl) * 1000;

  enum class Outcome { ok, invalid, replay };
  Outcome outcome = Outcome::invalid;
  std::string problem;
  std::string scope, nonce;
  std::int64_t auth_time = 0;
  std::optional<User> user;
  std::vector<std::pair<std::string, std::int64_t>> revoked;
  Status st = db_.write([&](store::Conn& c) -> Status {
    outcome = Outcome::invalid;
    problem.clear();
    user.reset();
    revoked.clear();
    SIKA_ASSIGN_OR_RETURN(
        auto row, c.query_one("SELECT id, client_id, user_id, redirect_uri, redirect_uri_given, scope, nonce, "
                              "code_challenge, auth_time, expires_at, used_at, family_id, access_jti, "
                              "access_expires_at FROM oauth_codes WHERE code_hash = ?",
                              {code_hash}));
    if (!row) {
      problem = "unknown authorization code";
      return {};
    }
    std::int64_t id = row->i64(0);
    if (!row->is_null(10)) {
      // Replay: revoke everything the first redemption issued (RFC 6749 §4.1.2).
      outcome = Outcome::replay;
      problem = "authorization code already used; the tokens it issued are revoked";
      if (!row->is_null(11)) SIKA_TRY(revoke_family(c, row->str(11), t, &revoked));
      if (!row->is_null(12) && row->i64(13) > t) {
        revoked.emplace_back(row->str(12), row->i64(13));
        SIKA_TRY(c.exec("INSERT INTO oauth_revoked_tokens (jti, client_id, expires_at, revoked_at) "
                        "VALUES (?, ?, ?, ?) ON CONFLICT (jti) DO NOTHING",
                        {row->str(12), row->str(1), row->i64(13), t}));
      }
      return {};
    }
    auto burn = [&](std::string why) -> Status {
      problem = std::move(why);
      SIKA_TRY(c.exec("UPDATE oauth_codes SET used_at = ? WHERE id = ? AND used_at IS NULL", {t, id}));
      return {};
    };
    if (row->str(1) != client.client_id) {
      problem = "the code was issued to another client";
      return {};
    }
    if (row->i64(9) < t) return burn("authorization code expired");
    if (row->boolean(4) && redirect_uri != row->str(3)) return burn("redirect_uri does not match the authorization request");
    if (!row->boolean(4) && !redirect_uri.empty() && redirect_uri != row->str(3))
      return burn("redirect_uri does not match the registered one");
    std::string challenge = row->str(7);
    if (challenge.empty()) {
      if (!verifier.empty()) return burn("code_verifier sent but no code_challenge was in the authorization request");
      if (!client.confidential) return burn("PKCE is required for public clients");
    } else {
      if (verifier.empty()) return burn("code_verifier is required");
      if (!crypto::constant_time_equal(pkce_s256(verifier), challenge)) return burn("code_verifier does not match");
    }
    SIKA_ASSIGN_OR_RETURN(user, find_user_by_id(c, row->i64(2)));
    if (!user || !user->active) return burn("the user is disabled");
    SIKA_ASSIGN_OR_RETURN(auto marked,
                          c.exec("UPDATE oauth_codes SET used_at = ?, family_id = ?, access_jti = ?, "
                                 "access_expires_at = ? WHERE id = ? AND used_at IS NULL",
                                 {t, with_refresh ? store::Value(family) : store::Value(nullptr), jti, access_exp_ms, id}));
    if (marked != 1) {
      outcome = Outcome::replay;
      problem = "authorization code already used";
      return {};
    }
    scope = row->str(5);
    nonce = row->str(6);
    auth_time = row->i64(8);
    if (with_refresh)
      SIKA_TRY(c.exec("INSERT INTO oauth_refresh_tokens (token_hash, family_id, client_id, user_id, scope, nonce, "
                      "auth_time, status, access_jti, access_expires_at, expires_at, created_at) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?)",
                      {crypto::secret_hash(opts_.pepper, refresh), family, client.client_id, user->id, scope, nonce,
                       auth_time, jti, access_exp_ms, t + opts_.refresh_token_ttl * 1000LL, t}));
    outcome = Outcome::ok;
    return {};
  });
  if (!st) return token_error(req, st.error());
  note_revoked(revoked);
  if (outcome != Outcome::ok) return token_error(req, oauth_error(ErrorKind::invalid, "invalid_grant", problem), basic);

  std::int64_t iat = t / 1000;
  Issued is;
  is.expires_in = opts_.access_token_ttl;
  is.scope = scope;
  is.access_token = build_access_token(client, &*user, scope, jti, iat, iat + opts_.access_token_ttl, auth_time / 1000);
  if (with_refresh) is.refresh_token = refresh;
  if (contains(split_list(scope), "openid"))
    is.id_token = build_id_token(client, *user, scope, nonce, auth_time / 1000, is.access_token, iat);
  web::Response res = web::Response::json(200, token_response(is));
  no_store(res);
  return res;
}

web::Response Service::token_refresh(const web::Request& req, const bj::object& body) {
  auto auth = authenticate_client(req, body, true);
  if (!auth) return token_error(req, auth.error(), false);
  const Client& client = *auth->client;
  bool basic = auth->basic;
  if (!client.allows_grant("refresh_token"))
    return token_error(req, oauth_error(ErrorKind::invalid, "unauthorized_client", "refresh_token is not allowed for this client"),
                       basic);
  std::string token = param(body, "refresh_token");
  if (token.empty()) return token_error(req, oauth_error(ErrorKind::invalid, "invalid_request", "refresh_token is required"), basic);
  std::string requested = param(body, "scope");

  const std::int64_t t = now();
  const std::string hash = crypto::secret_hash(opts_.pepper, token);
  const std::string jti = random_token(16);
  const std::string next = "rt_" + random_token(32);
  const std::int64_t access_exp_ms = (t / 1000 + opts_.access_token_ttl) * 1000;

  enum class Outcome { ok, invalid, reuse };
  Outcome outcome = Outcome::invalid;
  std::string problem, scope, nonce;
  std::int64_t auth_time = 0;
  std::optional<User> user;
  std::vector<std::pair<std::string, std::int64_t>> revoked;
  Status st = db_.write([&](store::Conn& c) -> Status {
    outcome = Outcome::invalid;
    problem.clear();
    user.reset();
    revoked.clear();
    SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT id, family_id, client_id, user_id, scope, nonce, auth_time, "
                                                "status, expires_at FROM oauth_refresh_tokens WHERE token_hash = ?",
                                                {hash}));
    if (!row) {
      problem = "unknown refresh token";
      return {};
    }
    if (row->str(2) != client.client_id) {
      problem = "the refresh token was issued to another client";
      return {};
    }
    if (row->str(7) == "revoked") {
      problem = "refresh token revoked";
      return {};
    }
    if (row->i64(8) < t) {
      problem = "refresh token expired";
      return {};
    }
    scope = row->str(4);
    if (!requested.empty()) {
      auto have = split_list(scope);
      for (const auto& s : split_list(requested))
        if (!contains(have, s)) {
          problem = "scope " + s + " was not granted originally";
          return {};
        }
      scope = join_list(split_list(requested));
    }
    // Rotation, atomically: an active token becomes rotated; a token rotated less than the
    // grace period ago may be presented again (parallel refreshes, lost responses).
    SIKA_ASSIGN_OR_RETURN(auto changed,
                          c.exec("UPDATE oauth_refresh_tokens SET status = 'rotated', rotated_at = COALESCE(rotated_at, ?) "
                                 "WHERE id = ? AND (status = 'active' OR (status = 'rotated' AND rotated_at >= ?))",
                                 {t, row->i64(0), t - opts_.refresh_grace_seconds * 1000LL}));
    if (changed != 1) {
      outcome = Outcome::reuse;
      problem = "refresh token reused; the token family is revoked";
      return revoke_family(c, row->str(1), t, &revoked);
    }
    if (!row->is_null(3)) {
      SIKA_ASSIGN_OR_RETURN(user, find_user_by_id(c, row->i64(3)));
      if (!user || !user->active) {
        problem = "the user is disabled";
        return revoke_family(c, row->str(1), t, &revoked);
      }
    }
    nonce = row->str(5);
    auth_time = row->i64(6);
    SIKA_TRY(c.exec("INSERT INTO oauth_refresh_tokens (token_hash, family_id, client_id, user_id, scope, nonce, "
                    "auth_time, status, access_jti, access_expires_at, expires_at, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?)",
                    {crypto::secret_hash(opts_.pepper, next), row->str(1), client.client_id,
                     row->is_null(3) ? store::Value(nullptr) : store::Value(row->i64(3)), row->str(4), nonce,
                     auth_time, jti, access_exp_ms, t + opts_.refresh_token_ttl * 1000LL, t}));
    outcome = Outcome::ok;
    return {};
  });
  if (!st) return token_error(req, st.error());
  note_revoked(revoked);
  if (outcome != Outcome::ok) return token_error(req, oauth_error(ErrorKind::invalid, "invalid_grant", problem), basic);

  std::int64_t iat = t / 1000;
  Issued is;
  is.expires_in = opts_.access_token_ttl;
  is.scope = scope;
  is.access_token = build_access_token(client, user ? &*user : nullptr, scope, jti, iat, iat + opts_.access_token_ttl,
                                       auth_time / 1000);
  is.refresh_token = next;
  if (user && contains(split_list(scope), "openid"))
    is.id_token = build_id_token(client, *user, scope, "", auth_time / 1000, is.access_token, iat);
  web::Response res = web::Response::json(200, token_response(is));
  no_store(res);
  return res;
}

// ---------------------------------------------------------------------------------------------
// verification (gateway middleware, userinfo, introspection, revocation)

Result<std::shared_ptr<const web::Principal>> Service::verify_cached(std::string_view token) {
  const std::int64_t t = now();
  std::size_t h = std::hash<std::string_view>{}(token);
  TokenShard& shard = token_shards_[h % kTokenShards];
  std::shared_ptr<const web::Principal> principal;
  bool need_check = true;
  {
    std::lock_guard lock(shard.mu);
    auto it = shard.map.find(std::string(token));
    if (it != shard.map.end()) {
      if (it->second.exp_ms <= t) {
        shard.map.erase(it);
        return invalid_token("token expired");
      }
      if (it->second.revoked) return invalid_token("token revoked");
      principal = it->second.principal;
      need_check = opts_.token_cache_seconds <= 0 || t - it->second.checked_at >= opts_.token_cache_seconds * 1000LL;
    }
  }
  if (principal && !need_check && revoked_here(principal->jti)) return invalid_token("token revoked");
  if (!principal) {
    SIKA_ASSIGN_OR_RETURN(auto p, verify_access_token(token));
    principal = std::make_shared<const web::Principal>(std::move(p));
  }
  if (need_check) {
    SIKA_ASSIGN_OR_RETURN(bool revoked, is_revoked(principal->jti));
    std::lock_guard lock(shard.mu);
    if (shard.map.size() >= static_cast<std::size_t>(std::max(16, opts_.token_cache_entries)) / kTokenShards) {
      for (auto it = shard.map.begin(); it != shard.map.end();)
        it = it->second.exp_ms <= t ? shard.map.erase(it) : std::next(it);
      if (shard.map.size() >= static_cast<std::size_t>(std::max(16, opts_.token_cache_entries)) / kTokenShards)
        shard.map.clear();
    }
    CachedToken& e = shard.map[std::string(token)];
    e.principal = principal;
    e.exp_ms = principal->expires_at * 1000;
    e.checked_at = t;
    e.revoked = revoked;
    if (revoked) return invalid_token("token revoked");
  }
  return principal;
}

void Service::note_revoked(const std::vector<std::pair<std::string, std::int64_t>>& jtis) {
  if (jtis.empty() || opts_.token_cache_seconds <= 0) return;
  std::unique_lock lock(local_revoked_mu_);
  for (const auto& [jti, exp] : jtis) local_revoked_[jti] = exp;
}

bool Service::revoked_here(const std::string& jti) {
  std::shared_lock lock(local_revoked_mu_);
  return !local_revoked_.empty() && local_revoked_.count(jti) != 0;
}

Result<bool> Service::is_revoked(std::string_view jti) {
  bool found = false;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT 1 FROM oauth_revoked_tokens WHERE jti = ?", {std::string(jti)}));
    found = row.has_value();
    return {};
  }));
  return found;
}

Result<web::Principal> Service::verify_access_token(std::string_view token) {
  auto parsed = parse_jwt(token);
  if (!parsed) return invalid_token("malformed token");
  const ParsedJwt& p = *parsed;
  auto alg = parse_alg(p.alg);
  if (!alg) return invalid_token("unsupported alg");
  std::string typ = p.typ;
  for (auto& ch : typ) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (typ != "at+jwt" && typ != "application/at+jwt") return invalid_token("not an access token (typ)");
  auto ring = keys();
  const Jwk* key = ring->find(p.kid);
  if (!key && now() - last_key_reload_.load() > 1000) {
    // A key created by another node (rotation): reload at most once a second.
    if (reload_keys()) ring = keys();
    key = ring->find(p.kid);
  }
  if (!key) return invalid_token("unknown signing key");
  if (key->alg() != *alg) return invalid_token("alg does not match the key");
  if (!key->verify(p.signing_input, p.signature)) return invalid_token("bad signature");
  const bj::object& c = p.payload;
  if (claim_str(c, "iss") != opts_.issuer) return invalid_token("wrong issuer");
  bool aud_ok = false;
  if (auto it = c.find("aud"); it != c.end()) {
    if (it->value().is_string()) aud_ok = it->value().get_string() == opts_.audience;
    if (it->value().is_array())
      for (const auto& a : it->value().get_array())
        if (a.is_string() && a.get_string() == opts_.audience) aud_ok = true;
  }
  if (!aud_ok) return invalid_token("wrong audience");
  const std::int64_t t = now() / 1000;
  auto exp = claim_int(c, "exp");
  if (!exp || *exp <= t) return invalid_token("token expired");
  if (auto nbf = claim_int(c, "nbf"); nbf && *nbf > t + 30) return invalid_token("token not yet valid");
  if (auto iat = claim_int(c, "iat"); iat && *iat > t + 30) return invalid_token("token issued in the future");
  web::Principal pr;
  pr.subject = claim_str(c, "sub");
  pr.client_id = claim_str(c, "client_id");
  pr.jti = claim_str(c, "jti");
  if (pr.subject.empty() || pr.client_id.empty() || pr.jti.empty()) return invalid_token("missing sub, client_id or jti");
  pr.expires_at = *exp;
  pr.scopes = split_list(claim_str(c, "scope"));
  pr.merchant = claim_str(c, "merchant");
  pr.merchant_id = claim_int(c, "merchant_id").value_or(0);
  pr.user_tier = claim_int(c, "tier").value_or(1);
  if (auto it = c.find("countries"); it != c.end() && it->value().is_array())
    for (const auto& v : it->value().get_array())
      if (v.is_string()) pr.countries.emplace_back(v.get_string());
  if (auto it = c.find("admin"); it != c.end() && it->value().is_bool()) pr.admin = it->value().get_bool();
  std::string env = claim_str(c, "environment");
  pr.environment = env == "prod" ? "prod" : "sandbox";
  return pr;
}

Result<web::Principal> Service::authenticate(const web::Request& req) {
  std::string_view v = req.header("x-sp-auth-token");
  if (v.empty()) {
    std::string_view a = req.header("authorization");
    if (iequals_prefix(a, "bearer ")) v = a;
  }
  v = trim(v);
  if (iequals_prefix(v, "bearer ")) v = trim(v.substr(7));
  if (v.empty()) {
    bj::object d;
    d["error"] = "invalid_request";
    d["error_description"] = "send the access token as x-sp-auth-token: Bearer <token>";
    return unauthorized(std::move(d));
  }
  SIKA_ASSIGN_OR_RETURN(auto p, verify_cached(v));
  return *p;
}

// ---------------------------------------------------------------------------------------------
// revocation and introspection

web::Response Service::revoke(web::Request& req) {
  auto body = web::body_object(req, true);
  if (!body) {
    bj::object d;
    d["error"] = "invalid_request";
    d["error_description"] = "token is required";
    return token_error(req, empty_data(std::move(d)));
  }
  auto auth = authenticate_client(req, *body, true);
  if (!auth) return token_error(req, auth.error(), false);
  std::string token = param(*body, "token");
  if (token.empty()) return token_error(req, oauth_error(ErrorKind::invalid, "invalid_request", "token is required"), auth->basic);
  const Client& client = *auth->client;
  const std::int64_t t = now();
  Status st;
  std::vector<std::pair<std::string, std::int64_t>> revoked;
  if (looks_like_jwt(token)) {
    // Access token: accepted only when its signature is ours and it was issued to this client.
    auto parsed = parse_jwt(token);
    if (parsed) {
      auto ring = keys();
      const Jwk* key = ring->find(parsed->kid);
      auto exp = claim_int(parsed->payload, "exp");
      std::string jti = claim_str(parsed->payload, "jti");
      if (key && parse_alg(parsed->alg) == key->alg() && key->verify(parsed->signing_input, parsed->signature) &&
          claim_str(parsed->payload, "client_id") == client.client_id && exp && *exp * 1000 > t && !jti.empty()) {
        st = db_.write([&](store::Conn& c) -> Status {
          SIKA_TRY(c.exec("INSERT INTO oauth_revoked_tokens (jti, client_id, expires_at, revoked_at) "
                          "VALUES (?, ?, ?, ?) ON CONFLICT (jti) DO NOTHING",
                          {jti, client.client_id, *exp * 1000, t}));
          return {};
        });
        revoked.emplace_back(jti, *exp * 1000);
      }
    }
  } else {
    std::string hash = crypto::secret_hash(opts_.pepper, token);
    st = db_.write([&](store::Conn& c) -> Status {
      revoked.clear();
      SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT family_id, client_id FROM oauth_refresh_tokens "
                                                  "WHERE token_hash = ?",
                                                  {hash}));
      if (!row || row->str(1) != client.client_id) return {};
      return revoke_family(c, row->str(0), t, &revoked);
    });
  }
  if (!st) return token_error(req, st.error());
  note_revoked(revoked);
  web::Response res = web::ok(req, bj::object{}, {}, "ok");
  no_store(res);
  return res;
}

web::Response Service::introspect(web::Request& req) {
  auto body = web::body_object(req, true);
  if (!body) {
    bj::object d;
    d["error"] = "invalid_request";
    d["error_description"] = "token is required";
    return token_error(req, empty_data(std::move(d)));
  }
  auto auth = authenticate_client(req, *body, false);
  if (!auth) return token_error(req, auth.error(), false);
  const Client& caller = *auth->client;
  std::string token = param(*body, "token");
  if (token.empty()) return token_error(req, oauth_error(ErrorKind::invalid, "invalid_request", "token is required"), auth->basic);
  bj::object out;
  out["active"] = false;
  if (looks_like_jwt(token)) {
    auto p = verify_cached(token);
    if (p && ((*p)->client_id == caller.client_id || caller.admin)) {
      const web::Principal& pr = **p;
      out["active"] = true;
      out["token_type"] = "Bearer";
      out["scope"] = join_list(pr.scopes);
      out["client_id"] = pr.client_id;
      out["sub"] = pr.subject;
      out["exp"] = pr.expires_at;
      out["iss"] = opts_.issuer;
      out["aud"] = opts_.audience;
      out["jti"] = pr.jti;
      if (!pr.merchant.empty()) {
        out["merchant"] = pr.merchant;
        out["merchant_id"] = pr.merchant_id;
      }
      out["tier"] = pr.user_tier;
      bj::array countries;
      for (const auto& c : pr.countries) countries.push_back(bj::string(c));
      out["countries"] = std::move(countries);
      out["admin"] = pr.admin;
      out["environment"] = pr.environment;
    } else if (!p && p.error().server_side()) {
      return token_error(req, p.error());
    }
  } else {
    std::string hash = crypto::secret_hash(opts_.pepper, token);
    const std::int64_t t = now();
    Status st = db_.read([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT r.client_id, r.scope, r.status, r.expires_at, "
                                                  "r.created_at, u.subject FROM oauth_refresh_tokens r "
                                                  "LEFT JOIN identity_users u ON u.id = r.user_id "
                                                  "WHERE r.token_hash = ?",
                                                  {hash}));
      if (!row || row->str(2) != "active" || row->i64(3) <= t) return {};
      if (row->str(0) != caller.client_id && !caller.admin) return {};
      out["active"] = true;
      out["token_type"] = "refresh_token";
      out["client_id"] = row->str(0);
      out["scope"] = row->str(1);
      out["exp"] = row->i64(3) / 1000;
      out["iat"] = row->i64(4) / 1000;
      out["iss"] = opts_.issuer;
      if (!row->is_null(5)) out["sub"] = row->str(5);
      return {};
    });
    if (!st) return token_error(req, st.error());
  }
  web::Response res = web::Response::json(200, bj::serialize(out));
  no_store(res);
  return res;
}

// ---------------------------------------------------------------------------------------------
// userinfo, metadata

web::Response Service::userinfo(web::Request& req) {
  auto bearer_error = [&](const Error& e, std::string_view code) {
    web::Response res = web::error(req, e);
    std::string desc = e.details.is_object() && e.details.as_object().contains("error_description")
                           ? std::string(e.details.as_object().at("error_description").as_string())
                           : std::string();
    std::string h = "Bearer realm=\"sika\"";
    if (!code.empty()) h += ", error=\"" + std::string(code) + "\"";
    if (!desc.empty()) h += ", error_description=\"" + desc + "\"";
    res.set("WWW-Authenticate", h);
    no_store(res);
    return res;
  };
  std::string token;
  std::string_view a = req.header("authorization");
  if (iequals_prefix(a, "bearer ")) token = std::string(trim(a.substr(7)));
  if (token.empty() && req.method == "POST" && req.content_type() == "application/x-www-form-urlencoded") {
    if (auto f = web::parse_form(req.body))
      for (const auto& [k, v] : *f)
        if (k == "access_token") token = v;
  }
  if (token.empty()) {
    bj::object d;
    d["error"] = "invalid_request";
    d["error_description"] = "send the access token as Authorization: Bearer <token>";
    return bearer_error(unauthorized(std::move(d)), "");
  }
  auto p = verify_cached(token);
  if (!p) return bearer_error(p.error(), p.error().is(ErrorKind::unauthenticated) ? "invalid_token" : "");
  const web::Principal& pr = **p;
  if (!pr.has_scope("openid"))
    return bearer_error(oauth_error(ErrorKind::forbidden, "insufficient_scope", "userinfo needs a user token with the openid scope"),
                        "insufficient_scope");
  std::optional<User> user;
  Status st = db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(user, find_user_by_subject(c, pr.subject));
    return {};
  });
  if (!st) return bearer_error(st.error(), "");
  if (!user || !user->active) return bearer_error(invalid_token("the user no longer exists"), "invalid_token");
  bj::object out;
  out["sub"] = user->subject;
  if (pr.has_scope("profile")) {
    out["name"] = user->name;
    out["updated_at"] = user->updated_at / 1000;
  }
  if (pr.has_scope("email")) {
    out["email"] = user->email;
    out["email_verified"] = false;
  }
  if (pr.has_scope("phone") && !user->phone.empty()) {
    out["phone_number"] = user->phone;
    out["phone_number_verified"] = false;
  }
  web::Response res = web::Response::json(200, bj::serialize(out));
  no_store(res);
  return res;
}

web::Response Service::jwks(web::Request&) {
  web::Response res = web::Response::json(200, keys()->jwks_json());
  res.set("Cache-Control", "public, max-age=300");
  res.set("Access-Control-Allow-Origin", "*");
  return res;
}

web::Response Service::discovery(web::Request&) {
  web::Response res = web::Response::json(200, discovery_json_);
  res.set("Cache-Control", "public, max-age=300");
  res.set("Access-Control-Allow-Origin", "*");
  return res;
}

web::Response Service::as_metadata(web::Request& req) { return discovery(req); }

// ---------------------------------------------------------------------------------------------
// background work

Status Service::run_maintenance() {
  const std::int64_t t = now();
  {
    std::unique_lock lock(local_revoked_mu_);
    for (auto it = local_revoked_.begin(); it != local_revoked_.end();)
      it = it->second <= t ? local_revoked_.erase(it) : std::next(it);
  }
  SIKA_TRY(reload_keys());
  return db_.write([&](store::Conn& c) -> Status {
    // Used codes are kept a day past expiry so that a late replay still revokes its tokens.
    SIKA_TRY(c.exec("DELETE FROM oauth_codes WHERE expires_at < ?", {t - 86400000LL}));
    SIKA_TRY(c.exec("DELETE FROM oauth_refresh_tokens WHERE expires_at < ?", {t}));
    SIKA_TRY(c.exec("DELETE FROM oauth_revoked_tokens WHERE expires_at < ?", {t}));
    SIKA_TRY(c.exec("DELETE FROM identity_sessions WHERE expires_at < ?", {t}));
    SIKA_TRY(c.exec("DELETE FROM identity_throttle WHERE window_start < ?", {t - 3600000LL}));
    SIKA_TRY(purge_retired_keys(c, t));
    return {};
  });
}

void Service::start() {
  std::lock_guard lock(worker_mu_);
  if (worker_.joinable()) return;
  stopping_ = false;
  worker_ = std::thread([this] {
    std::int64_t last_cleanup = 0;
    std::unique_lock lock(worker_mu_);
    while (!stopping_) {
      worker_cv_.wait_for(lock, std::chrono::seconds(std::max(1, opts_.key_reload_seconds)), [this] { return stopping_; });
      if (stopping_) break;
      lock.unlock();
      std::int64_t t = now();
      if (t - last_cleanup >= opts_.cleanup_interval_seconds * 1000LL) {
        (void)run_maintenance();
        last_cleanup = t;
      } else {
        (void)reload_keys();
      }
      lock.lock();
    }
  });
}

void Service::stop() {
  {
    std::lock_guard lock(worker_mu_);
    stopping_ = true;
  }
  worker_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

}  // namespace sika::identity
