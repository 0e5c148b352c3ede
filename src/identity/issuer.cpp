#include "identity/issuer.hpp"

#include <boost/json.hpp>

#include <stdexcept>
#include <system_error>

#include "core/crypto.hpp"
#include "core/random.hpp"
#include "identity/jwt.hpp"

namespace sika::identity {

namespace bj = boost::json;

namespace {

constexpr std::string_view kRefreshPrefix = "rt_";

std::string json_str(const bj::object& o, std::string_view k) {
  auto it = o.find(k);
  return it != o.end() && it->value().is_string() ? std::string(it->value().get_string()) : std::string();
}

std::int64_t json_int(const bj::object& o, std::string_view k) {
  auto it = o.find(k);
  return it != o.end() && it->value().is_int64() ? it->value().get_int64() : 0;
}

}  // namespace

TokenIssuer::TokenIssuer(const Options& options, KeySource keys)
    : opts_(options),
      keys_(std::move(keys)),
      access_alg_(parse_alg(options.default_alg).value_or(Alg::ES256)),
      seal_key_(crypto::hmac_sha256(options.pepper, "sika.identity.sealed-refresh.v1")) {
  (void)random_bytes(0);  // libsodium initialised
  crypto_auth_hmacsha256_init(&seal_mac_, reinterpret_cast<const unsigned char*>(seal_key_.data()), seal_key_.size());
}

std::string TokenIssuer::seal_mac(std::string_view data) const {
  crypto_auth_hmacsha256_state state = seal_mac_;
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(data.data()), data.size());
  unsigned char mac[crypto_auth_hmacsha256_BYTES];
  crypto_auth_hmacsha256_final(&state, mac);
  sodium_memzero(&state, sizeof state);
  std::string out;
  append_base64url(out, std::string_view(reinterpret_cast<const char*>(mac), sizeof mac));
  return out;
}

Ticket TokenIssuer::ticket(std::int64_t now_ms, Ticket::Refresh refresh) const {
  Ticket t;
  t.now_ms = now_ms;
  t.access_expires_at = (now_ms / 1000 + opts_.access_token_ttl) * 1000;
  t.refresh = refresh;
  // One draw for all identifiers: 128-bit jti and family id, 256-bit refresh token.
  const std::string r = random_bytes(refresh == Ticket::Refresh::none     ? 16
                                     : refresh == Ticket::Refresh::sealed ? 32
                                                                          : 64);
  const std::string_view bytes(r);
  t.jti = base64url_encode(bytes.substr(0, 16));
  if (refresh != Ticket::Refresh::none) t.family_id = base64url_encode(bytes.substr(16, 16));
  if (refresh == Ticket::Refresh::recorded)
    t.refresh_token = std::string(kRefreshPrefix) + base64url_encode(bytes.substr(32, 32));
  return t;
}

RefreshToken TokenIssuer::refresh_record(const Ticket& t, const Grant& g, std::string_view family_id,
                                         std::string_view family_scope) const {
  RefreshToken r;
  r.token_hash = crypto::secret_hash(opts_.pepper, t.refresh_token);
  r.family_id = family_id;
  r.client_id = g.client->client_id;
  r.user_id = g.user ? g.user->id : 0;
  r.scope = family_scope;
  r.nonce = g.nonce;
  r.auth_time = g.auth_time;
  r.access_jti = t.jti;
  r.access_expires_at = t.access_expires_at;
  r.expires_at = t.now_ms + opts_.refresh_token_ttl * 1000LL;
  r.created_at = t.now_ms;
  return r;
}

std::string TokenIssuer::access_token(const Ticket& t, const Grant& g) const {
  auto ring = keys_();
  const Jwk* key = ring->signer(access_alg_);
  if (!key) return {};
  const Client& client = *g.client;
  const User* user = g.user;
  const std::int64_t iat = t.now_ms / 1000;
  std::string p;
  p.reserve(512);
  JsonWriter w(p);
  w.begin();
  w.str("iss", opts_.issuer);
  w.str("sub", user ? user->subject : client.client_id);
  w.str("aud", opts_.audience);
  w.num("exp", t.access_expires_at / 1000);
  w.num("iat", iat);
  w.str("jti", t.jti);
  w.str("client_id", client.client_id);
  w.str("scope", g.scope);
  if (user) {
    w.num("auth_time", g.auth_time / 1000);
    if (!user->merchant.empty()) {
      w.str("merchant", user->merchant);
      w.num("merchant_id", user->merchant_id);
      w.num("grants_version", user->merchant_grants_version);
    }
    w.num("tier", user->user_tier);
    w.str_array("countries", user->countries);
    w.boolean("admin", user->admin);
  } else {
    if (!client.merchant.empty()) {
      w.str("merchant", client.merchant);
      w.num("merchant_id", client.merchant_id);
      w.num("grants_version", client.merchant_grants_version);
    }
    w.num("tier", client.user_tier);
    w.str_array("countries", client.countries);
    w.boolean("admin", client.admin);
  }
  w.str("environment", client.environment);
  w.end();
  return key->sign(key->access_header(), p);
}

std::string TokenIssuer::id_token(const Ticket& t, const Grant& g, std::string_view access_token) const {
  auto ring = keys_();
  const Client& client = *g.client;
  const Jwk* key = ring->signer(parse_alg(client.id_token_alg).value_or(Alg::RS256));
  if (!key) return {};
  const std::int64_t iat = t.now_ms / 1000;
  std::string p;
  p.reserve(512);
  JsonWriter w(p);
  w.begin();
  w.str("iss", opts_.issuer);
  // Without a user, the subject is the client's service identity: its client_id, the `sub`
  // of its access tokens too.
  w.str("sub", g.user ? g.user->subject : client.client_id);
  w.str("aud", client.client_id);
  w.str("azp", client.client_id);
  w.num("exp", iat + opts_.id_token_ttl);
  w.num("iat", iat);
  w.num("auth_time", g.auth_time / 1000);
  if (!g.nonce.empty()) w.str("nonce", g.nonce);
  if (!access_token.empty()) w.str("at_hash", half_hash(access_token));
  if (const User* user = g.user) {
    auto scopes = split_list(g.scope);
    if (contains(scopes, "profile")) w.str("name", user->name);
    if (contains(scopes, "email")) {
      w.str("email", user->email);
      w.boolean("email_verified", false);
    }
    if (contains(scopes, "phone") && !user->phone.empty()) {
      w.str("phone_number", user->phone);
      w.boolean("phone_number_verified", false);
    }
  }
  w.end();
  return key->sign(key->id_header(), p);
}

std::string TokenIssuer::client_id_token(const Ticket& t, const Grant& g) const {
  const Client& client = *g.client;
  auto ring = keys_();
  const Jwk* key = ring->signer(parse_alg(client.id_token_alg).value_or(Alg::RS256));
  if (!key) return {};
  {
    sika::MutexLock lock(client_ids_mu_);
    auto it = client_ids_.find(client.client_id);
    if (it != client_ids_.end() && it->second.kid == key->kid() &&
        t.now_ms - it->second.iat_ms < kClientIdTokenReuseMs && it->second.iat_ms <= t.now_ms)
      return it->second.token;
  }
  std::string token = id_token(t, g, {});
  sika::MutexLock lock(client_ids_mu_);
  if (client_ids_.size() >= 10000) client_ids_.clear();  // bounded under many clients
  client_ids_[client.client_id] = ClientIdToken{token, key->kid(), t.now_ms};
  return token;
}

// "rt_" + base64url(payload) + "." + base64url(HMAC-SHA256(seal key, everything before the dot)).
std::string TokenIssuer::seal(const Ticket& t, const Grant& g) const {
  std::string p;
  JsonWriter w(p);
  w.begin();
  w.str("f", t.family_id);
  w.str("c", g.client->client_id);
  w.str("s", g.scope);
  w.str("j", t.jti);
  w.num("x", t.access_expires_at);
  w.num("e", t.now_ms + opts_.refresh_token_ttl * 1000LL);
  w.num("i", t.now_ms);
  w.end();
  std::string token(kRefreshPrefix);
  append_base64url(token, p);
  std::string mac = seal_mac(token);
  token.push_back('.');
  token += mac;
  return token;
}

std::optional<SealedRefresh> TokenIssuer::open_sealed(std::string_view token) const {
  if (!token.starts_with(kRefreshPrefix)) return std::nullopt;
  std::size_t dot = token.rfind('.');
  if (dot == std::string_view::npos || token.size() > 4096) return std::nullopt;
  std::string_view body = token.substr(0, dot);
  std::string expected = seal_mac(body);
  if (!crypto::constant_time_equal(expected, token.substr(dot + 1))) return std::nullopt;
  std::string json;
  if (!base64url_decode(body.substr(kRefreshPrefix.size()), json)) return std::nullopt;
  std::error_code ec;
  bj::value v = bj::parse(json, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const bj::object& o = v.get_object();
  SealedRefresh s;
  s.family_id = json_str(o, "f");
  s.client_id = json_str(o, "c");
  s.scope = json_str(o, "s");
  s.access_jti = json_str(o, "j");
  s.access_expires_at = json_int(o, "x");
  s.expires_at = json_int(o, "e");
  s.issued_at = json_int(o, "i");
  if (s.family_id.empty() || s.client_id.empty()) return std::nullopt;
  return s;
}

RefreshToken TokenIssuer::sealed_record(const SealedRefresh& s, std::string_view token) const {
  RefreshToken r;
  r.token_hash = crypto::secret_hash(opts_.pepper, token);
  r.family_id = s.family_id;
  r.client_id = s.client_id;
  r.scope = s.scope;
  r.auth_time = s.issued_at;
  r.access_jti = s.access_jti;
  r.access_expires_at = s.access_expires_at;
  r.expires_at = s.expires_at;
  r.created_at = s.issued_at;
  return r;
}

Result<std::string> TokenIssuer::issue(const Ticket& t, const Grant& g) const {
  std::string access = access_token(t, g);
  if (access.empty()) return internal_error("signing failed");
  std::string refresh;
  if (t.refresh == Ticket::Refresh::recorded) refresh = t.refresh_token;
  if (t.refresh == Ticket::Refresh::sealed) refresh = seal(t, g);
  std::string id;
  if (g.id_token) {
    id = g.user ? id_token(t, g, access) : client_id_token(t, g);
    if (id.empty()) return internal_error("signing failed");
  }
  std::string out;
  out.reserve(access.size() + refresh.size() + id.size() + 128);
  JsonWriter w(out);
  w.begin();
  w.str("access_token", access);
  w.str("token_type", "Bearer");
  w.num("expires_in", opts_.access_token_ttl);
  w.str("scope", g.scope);
  if (!refresh.empty()) w.str("refresh_token", refresh);
  if (!id.empty()) w.str("id_token", id);
  w.end();
  return out;
}

}  // namespace sika::identity
