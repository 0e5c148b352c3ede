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
#include "identity/store.hpp"
#include "web/envelope.hpp"

namespace sika::identity {

namespace bj = boost::json;

namespace {

constexpr std::size_t kTokenShards = 16;
constexpr std::size_t kClientCacheMax = 10000;

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
  sika::Mutex mu;
  std::unordered_map<std::string, CachedToken> map GUARDED_BY(mu);
};

Service::Service(store::Db& db, Options options)
    : db_(db),
      opts_(std::move(options)),
      issuer_(opts_, [this] { return keys(); }),
      limiter_(db, limits::Options{.clock = [this] { return now(); }}) {
  if (!opts_.clock) opts_.clock = [] { return now_ms(); };
  while (!opts_.issuer.empty() && opts_.issuer.back() == '/') opts_.issuer.pop_back();
  if (opts_.pepper.empty()) throw std::runtime_error("identity: the server secret key is empty");
  csrf_ = web::Csrf(opts_.pepper, "sika.identity.csrf.v1");
  login_key_ = crypto::hmac_sha256(opts_.pepper, "sika.identity.login.v1");
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
  d["claims_supported"] = bj::array{"sub",
                                    "iss",
                                    "aud",
                                    "exp",
                                    "iat",
                                    "auth_time",
                                    "nonce",
                                    "at_hash",
                                    "name",
                                    "email",
                                    "email_verified",
                                    "phone_number",
                                    "phone_number_verified",
                                    "updated_at"};
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
  sika::ReaderLock lock(keys_mu_);
  return keys_;
}

Status Service::reload_keys() {
  SIKA_ASSIGN_OR_RETURN(auto ring, load_keys(db_, opts_.pepper, now(), true));
  {
    sika::WriterLock lock(keys_mu_);
    keys_ = std::move(ring);
  }
  last_key_reload_ = now();
  return {};
}

void Service::invalidate_client_cache() {
  sika::WriterLock lock(clients_mu_);
  clients_.clear();
}

// ---------------------------------------------------------------------------------------------
// throttling

namespace {
// Bounds of the per-process maps: past them only expired entries are dropped, and a new key is
// not remembered while every entry is live (the shared database counters still apply).
constexpr std::size_t kRateKeysMax = 100000;
constexpr std::int64_t kClientAuthWindowMs = 60000;

// A 429 in the OAuth error shape, with details.retry_after for the Retry-After header.
Error oauth_throttled(const limits::Decision& d, std::string_view description) {
  Error e = limits::refusal(d, description);
  auto& o = e.details.as_object();
  o.erase("limit");
  o["error"] = "rate_limited";
  o["error_description"] = description;
  return e;
}

template <class Map, class Expired>
bool make_room(Map& map, Expired expired) {
  if (map.size() < kRateKeysMax) return true;
  std::erase_if(map, expired);
  return map.size() < kRateKeysMax;
}
}  // namespace

bool Service::rate_hit(const std::string& key, int limit, std::int64_t window_ms, std::string_view name) {
  return local_limiter_.hit(key, limits::Policy{.limit = limit, .window_ms = window_ms, .name = name}).allowed;
}

Result<bool> Service::shared_rate_hit(const std::string& bucket, int limit, std::int64_t window_ms,
                                      std::string_view name) {
  SIKA_ASSIGN_OR_RETURN(auto d,
                        limiter_.hit(bucket, limits::Policy{.limit = limit, .window_ms = window_ms, .name = name}));
  return d.allowed;
}

std::optional<Error> Service::address_throttled(const std::string& address) {
  std::int64_t t = now();
  sika::MutexLock lock(rate_mu_);
  auto it = throttled_addresses_.find(address);
  if (it == throttled_addresses_.end()) return std::nullopt;
  if (it->second <= t) {
    throttled_addresses_.erase(it);
    return std::nullopt;
  }
  limits::Decision d{false, 0, it->second - t};
  return oauth_throttled(d, "too many failed client authentications from this address");
}

Error Service::client_auth_failed(const std::string& address, const Client* client, std::string_view why) {
  limits::Policy per_address{.limit = opts_.failed_client_auth_per_ip,
                             .window_ms = kClientAuthWindowMs,
                             .name = "client_auth_failures_per_address"};
  auto from_address = limiter_.hit("client-auth:addr:" + address, per_address);
  if (!from_address) return from_address.take_error();
  if (!from_address->allowed) {
    std::int64_t until = now() + from_address->retry_after_ms;
    {
      sika::MutexLock lock(rate_mu_);
      std::int64_t t = now();
      if (make_room(throttled_addresses_, [&](const auto& kv) { return kv.second <= t; }))
        throttled_addresses_[address] = until;
    }
    return oauth_throttled(*from_address, "too many failed client authentications from this address");
  }
  // Only existing clients are counted: unknown ids cannot fill the table with buckets.
  if (client) {
    limits::Policy per_client{.limit = opts_.failed_client_auth_per_client,
                              .window_ms = kClientAuthWindowMs,
                              .name = "client_auth_failures_per_client"};
    auto of_client = limiter_.hit("client-auth:client:" + client->client_id, per_client);
    if (!of_client) return of_client.take_error();
    if (!of_client->allowed) return oauth_throttled(*of_client, "too many failed authentications of this client");
  }
  return oauth_error(ErrorKind::unauthenticated, "invalid_client", why);
}

// ---------------------------------------------------------------------------------------------
// clients

Result<std::shared_ptr<const Client>> Service::load_client(std::string_view client_id, bool* missed) {
  std::int64_t t = now();
  std::string key(client_id);
  {
    sika::ReaderLock lock(clients_mu_);
    auto it = clients_.find(key);
    if (it != clients_.end() && t - it->second->fetched_at < opts_.client_cache_seconds * 1000LL)
      return it->second->client;
  }
  if (missed != nullptr) {
    *missed = true;
    return unavailable(bj::string("the client is not cached"));
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
    sika::WriterLock lock(clients_mu_);
    if (clients_.size() >= kClientCacheMax) clients_.clear();
    clients_[key] = entry;
  }
  return entry->client;
}

Result<Service::ClientAuth> Service::authenticate_client(const web::Request& req, const bj::object& body,
                                                         bool allow_public, bool* would_block) {
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
    if (!bid || !bsecret)
      return oauth_error(ErrorKind::unauthenticated, "invalid_client", "malformed HTTP Basic credentials");
    if (has_secret)
      return oauth_error(ErrorKind::invalid, "invalid_request", "use one client authentication method, not two");
    if (!id.empty() && id != *bid)
      return oauth_error(ErrorKind::invalid, "invalid_request", "client_id differs from HTTP Basic");
    id = std::move(*bid);
    secret = std::move(*bsecret);
    has_secret = true;
  }
  if (id.empty())
    return oauth_error(ErrorKind::unauthenticated, "invalid_client", "client authentication is required (client_id)");
  // A right secret costs no database write; each failure is counted per address and per client.
  if (auto throttled = address_throttled(req.remote_ip)) return *throttled;
  SIKA_ASSIGN_OR_RETURN(auto client, load_client(id, would_block));
  auto fail = [&](std::string_view why) -> Error {
    if (would_block == nullptr) return client_auth_failed(req.remote_ip, client.get(), why);
    *would_block = true;  // failures are counted in the shared limiter, which may write
    return unauthorized(bj::string(why));
  };
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

web::Response Service::token_error(const web::Request& req, const Error& e, bool basic) {
  web::Response res = web::error(req, e);
  no_store(res);
  basic = basic || iequals_prefix(req.header("authorization"), "basic ");
  if (e.is(ErrorKind::unauthenticated) && basic) res.set("WWW-Authenticate", "Basic realm=\"sika\", charset=\"UTF-8\"");
  if (e.is(ErrorKind::rate_limited) && res.get("Retry-After").empty()) res.set("Retry-After", "60");
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
    sika::MutexLock lock(shard.mu);
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
    SIKA_ASSIGN_OR_RETURN(bool revoked, is_revoked(*principal));
    sika::MutexLock lock(shard.mu);
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
  sika::WriterLock lock(local_revoked_mu_);
  for (const auto& [jti, exp] : jtis) local_revoked_[jti] = exp;
}

bool Service::revoked_here(const std::string& jti) {
  sika::ReaderLock lock(local_revoked_mu_);
  return !local_revoked_.empty() && local_revoked_.count(jti) != 0;
}

Result<bool> Service::is_revoked(const web::Principal& p) {
  bool found = false;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(found, access_token_revoked(c, p.jti, p.merchant_id, p.grants_version));
    return {};
  }));
  return found;
}

Result<ParsedJwt> Service::signed_by_us(std::string_view token) {
  auto parsed = parse_jwt(token);
  if (!parsed) return invalid_token("malformed token");
  ParsedJwt& p = *parsed;
  auto alg = parse_alg(p.alg);
  if (!alg) return invalid_token("unsupported alg");
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
  if (claim_str(p.payload, "iss") != opts_.issuer) return invalid_token("wrong issuer");
  return std::move(p);
}

Result<IdTokenClaims> Service::verify_id_token(std::string_view token, std::string_view client_id,
                                               std::string_view nonce) {
  SIKA_ASSIGN_OR_RETURN(ParsedJwt p, signed_by_us(token));
  if (p.typ != "JWT") return invalid_token("not an ID token (typ)");
  const bj::object& c = p.payload;
  bool aud_ok = false;
  if (auto it = c.find("aud"); it != c.end()) {
    if (it->value().is_string()) aud_ok = it->value().get_string() == client_id;
    if (it->value().is_array())
      for (const auto& a : it->value().get_array())
        if (a.is_string() && a.get_string() == client_id) aud_ok = true;
  }
  if (!aud_ok) return invalid_token("wrong audience");
  if (auto azp = claim_str(c, "azp"); !azp.empty() && azp != client_id) return invalid_token("wrong azp");
  const std::int64_t t = now() / 1000;
  auto exp = claim_int(c, "exp");
  if (!exp || *exp <= t) return invalid_token("token expired");
  if (auto iat = claim_int(c, "iat"); iat && *iat > t + 30) return invalid_token("token issued in the future");
  if (!crypto::constant_time_equal(claim_str(c, "nonce"), nonce)) return invalid_token("wrong nonce");
  IdTokenClaims out;
  out.subject = claim_str(c, "sub");
  if (out.subject.empty()) return invalid_token("missing sub");
  out.auth_time = claim_int(c, "auth_time").value_or(0);
  out.email = claim_str(c, "email");
  out.name = claim_str(c, "name");
  return out;
}

Result<web::Principal> Service::verify_access_token(std::string_view token) {
  SIKA_ASSIGN_OR_RETURN(ParsedJwt p, signed_by_us(token));
  std::string typ = p.typ;
  for (auto& ch : typ) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (typ != "at+jwt" && typ != "application/at+jwt") return invalid_token("not an access token (typ)");
  const bj::object& c = p.payload;
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
  if (pr.subject.empty() || pr.client_id.empty() || pr.jti.empty())
    return invalid_token("missing sub, client_id or jti");
  pr.expires_at = *exp;
  pr.scopes = split_list(claim_str(c, "scope"));
  pr.merchant = claim_str(c, "merchant");
  pr.merchant_id = claim_int(c, "merchant_id").value_or(0);
  pr.grants_version = claim_int(c, "grants_version").value_or(0);
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
// background work

Status Service::run_maintenance() {
  const std::int64_t t = now();
  {
    sika::WriterLock lock(local_revoked_mu_);
    for (auto it = local_revoked_.begin(); it != local_revoked_.end();)
      it = it->second <= t ? local_revoked_.erase(it) : std::next(it);
  }
  SIKA_TRY(reload_keys());
  return db_.write([&](store::Conn& c) -> Status {
    SIKA_TRY(purge_expired_tokens(c, t));
    SIKA_TRY(c.exec("DELETE FROM identity_sessions WHERE expires_at < ?", {t}));
    SIKA_TRY(purge_retired_keys(c, t));
    return {};
  });
}

void Service::start() {
  if (!worker_)
    worker_ = std::make_unique<Periodic>("identity: keys and maintenance",
                                         std::chrono::seconds(std::max(1, opts_.key_reload_seconds)),
                                         [this, last_cleanup = std::int64_t{0}]() mutable -> Result<Pace> {
                                           const std::int64_t t = now();
                                           if (t - last_cleanup >= opts_.cleanup_interval_seconds * 1000LL) {
                                             last_cleanup = t;
                                             SIKA_TRY(run_maintenance());
                                           } else {
                                             SIKA_TRY(reload_keys());
                                           }
                                           return Pace::idle;
                                         });
  worker_->start();
}

void Service::stop() {
  if (worker_) worker_->stop();
}

}  // namespace sika::identity
