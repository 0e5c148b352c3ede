// The token endpoint (RFC 6749 §3.2) and its grants. Each grant checks its request, runs its
// write unit (when it records something) and hands a Grant to the one TokenIssuer.
#include <boost/json.hpp>

#include "core/crypto.hpp"
#include "identity/internal.hpp"
#include "identity/service.hpp"
#include "identity/store.hpp"
#include "web/envelope.hpp"

namespace sika::identity {

namespace bj = boost::json;

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

web::Response Service::token(web::Request& req) {
  auto body = web::body_object(req, true);
  if (!body) {
    bj::object d;
    d["error"] = "invalid_request";
    // Per-field problems (a NUL character, a duplicate key) become "field: problem".
    const bj::value& why = body.error().details;
    std::string description = why.is_string() ? std::string(why.get_string()) : "unparsable body";
    if (why.is_object() && !why.get_object().empty()) {
      const auto& first = *why.get_object().begin();
      description = std::string(first.key()) + ": " +
                    (first.value().is_string() ? std::string(first.value().get_string()) : std::string("is invalid"));
    }
    d["error_description"] = description;
    return token_error(req, empty_data(std::move(d)));
  }
  for (const auto& kv : *body)
    if (!kv.value().is_string())
      return token_error(
          req, oauth_error(ErrorKind::invalid, "invalid_request", std::string(kv.key()) + " must be a string"));
  std::string grant = param(*body, "grant_type");
  if (grant.empty())
    return token_error(req, oauth_error(ErrorKind::invalid, "invalid_request", "grant_type is required"));
  if (grant == "client_credentials") return token_client_credentials(req, *body);
  // On an I/O thread (the route answers later): every other grant reads and writes the database.
  if (req.offload_to) return web::run_blocking(req, [this](web::Request& again) { return token(again); });
  if (grant == "authorization_code") return token_authorization_code(req, *body);
  if (grant == "refresh_token") return token_refresh(req, *body);
  return token_error(req, oauth_error(ErrorKind::invalid, "unsupported_grant_type",
                                      "supported: client_credentials, authorization_code, refresh_token"));
}

web::Response Service::token_issued(const web::Request& req, const Ticket& ticket, const Grant& grant) {
  auto body = issuer_.issue(ticket, grant);
  if (!body) return token_error(req, body.error());
  web::Response res = web::Response::json(200, std::move(*body));
  no_store(res);
  return res;
}

web::Response Service::token_client_credentials(web::Request& req, const bj::object& body) {
  // On an I/O thread, a cached client that authenticates gets its token there: signing is CPU
  // work and nothing is written. A client to read, or a failure to count, goes to a handler thread.
  bool would_block = false;
  auto auth = authenticate_client(req, body, false, req.offload_to ? &would_block : nullptr);
  if (would_block) return web::run_blocking(req, [this](web::Request& again) { return token(again); });
  if (!auth) return token_error(req, auth.error(), false);
  const Client& client = *auth->client;
  if (!client.allows_grant("client_credentials"))
    return token_error(
        req,
        oauth_error(ErrorKind::invalid, "unauthorized_client", "client_credentials is not allowed for this client"),
        auth->basic);
  if (opts_.token_rate_per_client > 0 &&
      !rate_hit("tr:" + client.client_id, opts_.token_rate_per_client, 1000, "token_requests_per_client"))
    return token_error(req,
                       oauth_error(ErrorKind::rate_limited, "rate_limited", "token rate limit of this client reached"));
  std::string requested = param(body, "scope");
  std::vector<std::string> defaults;
  for (auto s : kApiScopes)
    if (contains(client.scopes, s)) defaults.emplace_back(s);
  std::string problem;
  std::string scope = resolve_scope(requested, defaults, defaults, problem);
  if (scope.empty()) {
    if (problem.starts_with("scope ") && !requested.empty()) {
      for (const auto& s : split_list(requested))
        if (contains(client.scopes, s)) problem = "scope " + s + " needs a user (authorization_code)";
    }
    return token_error(req, oauth_error(ErrorKind::invalid, "invalid_scope", problem), auth->basic);
  }
  std::string resource = param(body, "resource");
  if (!resource.empty() && resource != opts_.audience)
    return token_error(req,
                       oauth_error(ErrorKind::invalid, "invalid_target", "the only resource is " + opts_.audience));

  // The spec's five fields by default: the refresh token is sealed (no write on this path;
  // it is recorded at its first use) and the ID token's subject is the client itself.
  const bool full = client.full_client_credentials();
  Ticket ticket = issuer_.ticket(now(), full ? Ticket::Refresh::sealed : Ticket::Refresh::none);
  Grant grant{.client = &client, .scope = std::move(scope), .auth_time = ticket.now_ms, .id_token = full};
  return token_issued(req, ticket, grant);
}

namespace {

using Revoked = std::vector<std::pair<std::string, std::int64_t>>;

// What one authorization-code redemption decided (its write unit clears it at each attempt).
struct CodeRedemption {
  enum class Outcome { ok, invalid, replay };
  Outcome outcome = Outcome::invalid;
  std::string problem;
  std::optional<User> user;
  Revoked revoked;
};

// Revokes what a code's first redemption issued (RFC 6749 §4.1.2): its refresh-token family and
// its access token while unexpired, both listed in `revoked`.
Status revoke_code_tokens(store::Conn& c, const AuthorizationCode& row, std::int64_t t, Revoked& revoked) {
  if (!row.family_id.empty()) SIKA_TRY(revoke_family(c, row.family_id, t, &revoked));
  if (!row.access_jti.empty() && row.access_expires_at > t) {
    revoked.emplace_back(row.access_jti, row.access_expires_at);
    SIKA_TRY(revoke_access_token(c, row.access_jti, row.client_id, row.access_expires_at, t));
  }
  return {};
}

// Why this client's code may not be redeemed with this redirect_uri and verifier (the code is
// then burnt); "" when it may. Reads nothing.
std::string code_rejection(const AuthorizationCode& row, const Client& client, const std::string& redirect_uri,
                           const std::string& verifier, std::int64_t t) {
  if (row.expires_at < t) return "authorization code expired";
  if (row.redirect_uri_given && redirect_uri != row.redirect_uri)
    return "redirect_uri does not match the authorization request";
  if (!row.redirect_uri_given && !redirect_uri.empty() && redirect_uri != row.redirect_uri)
    return "redirect_uri does not match the registered one";
  if (row.code_challenge.empty()) {
    if (!verifier.empty()) return "code_verifier sent but no code_challenge was in the authorization request";
    if (!client.confidential) return "PKCE is required for public clients";
  } else {
    if (verifier.empty()) return "code_verifier is required";
    if (!crypto::constant_time_equal(pkce_s256(verifier), row.code_challenge)) return "code_verifier does not match";
  }
  return {};
}

// The grant a redeemed code stands for: its user, scope, nonce and sign-in time.
void grant_code(Grant& grant, const AuthorizationCode& row, const User& user) {
  grant.user = &user;
  grant.scope = row.scope;
  grant.nonce = row.nonce;
  grant.auth_time = row.auth_time;
  grant.id_token = contains(split_list(row.scope), "openid");
}

}  // namespace

web::Response Service::token_authorization_code(const web::Request& req, const bj::object& body) {
  auto auth = authenticate_client(req, body, true);
  if (!auth) return token_error(req, auth.error(), false);
  const Client& client = *auth->client;
  bool basic = auth->basic;
  if (!client.allows_grant("authorization_code"))
    return token_error(
        req,
        oauth_error(ErrorKind::invalid, "unauthorized_client", "authorization_code is not allowed for this client"),
        basic);
  std::string code = param(body, "code");
  if (code.empty())
    return token_error(req, oauth_error(ErrorKind::invalid, "invalid_request", "code is required"), basic);
  std::string redirect_uri = param(body, "redirect_uri");
  std::string verifier = param(body, "code_verifier");
  if (!verifier.empty() && !valid_pkce_verifier(verifier))
    return token_error(
        req, oauth_error(ErrorKind::invalid, "invalid_request", "code_verifier must be 43-128 unreserved characters"),
        basic);

  const std::string code_hash = crypto::secret_hash(opts_.pepper, code);
  const bool with_refresh = client.allows_grant("refresh_token");
  const Ticket ticket = issuer_.ticket(now(), with_refresh ? Ticket::Refresh::recorded : Ticket::Refresh::none);
  const std::int64_t t = ticket.now_ms;

  using Outcome = CodeRedemption::Outcome;
  CodeRedemption r;
  Grant grant{.client = &client};
  Status st = db_.write([&](store::Conn& c) -> Status {
    r.outcome = Outcome::invalid;
    r.problem.clear();
    r.user.reset();
    r.revoked.clear();
    SIKA_ASSIGN_OR_RETURN(auto row, find_code(c, code_hash));
    if (!row) {
      r.problem = "unknown authorization code";
      return {};
    }
    if (row->used_at) {
      r.outcome = Outcome::replay;
      r.problem = "authorization code already used; the tokens it issued are revoked";
      return revoke_code_tokens(c, *row, t, r.revoked);
    }
    if (row->client_id != client.client_id) {
      r.problem = "the code was issued to another client";
      return {};
    }
    r.problem = code_rejection(*row, client, redirect_uri, verifier, t);
    if (!r.problem.empty()) return burn_code(c, row->id, t);
    SIKA_ASSIGN_OR_RETURN(r.user, find_user_by_id(c, row->user_id));
    if (!r.user || !r.user->active) {
      r.problem = "the user is disabled";
      return burn_code(c, row->id, t);
    }
    SIKA_ASSIGN_OR_RETURN(bool redeemed, redeem_code(c, row->id, t, with_refresh ? ticket.family_id : std::string(),
                                                     ticket.jti, ticket.access_expires_at));
    if (!redeemed) {
      r.outcome = Outcome::replay;
      r.problem = "authorization code already used";
      return {};
    }
    grant_code(grant, *row, *r.user);
    if (with_refresh)
      SIKA_TRY(insert_refresh_token(c, issuer_.refresh_record(ticket, grant, ticket.family_id, row->scope)));
    r.outcome = Outcome::ok;
    return {};
  });
  if (!st) return token_error(req, st.error());
  note_revoked(r.revoked);
  if (r.outcome != Outcome::ok)
    return token_error(req, oauth_error(ErrorKind::invalid, "invalid_grant", r.problem), basic);
  return token_issued(req, ticket, grant);
}

namespace {

// What one refresh decided. Its write unit clears it at each attempt, all but the grant, whose
// fields it sets again before they are used.
struct RefreshAttempt {
  enum class Outcome { ok, invalid, reuse };
  Outcome outcome = Outcome::invalid;
  std::string problem;
  std::optional<User> user;
  std::optional<Client> fresh;  // the client record re-read for a client_credentials family
  Grant grant;
  Revoked revoked;
};

// The refresh token's row; a client_credentials refresh token is recorded at its first use.
Result<std::optional<RefreshToken>> find_or_record_refresh_token(store::Conn& c, const TokenIssuer& issuer,
                                                                 const std::string& token, const std::string& hash) {
  SIKA_ASSIGN_OR_RETURN(auto row, find_refresh_token(c, hash));
  if (!row) {
    if (auto sealed = issuer.open_sealed(token)) {
      SIKA_TRY(insert_refresh_token(c, issuer.sealed_record(*sealed, token)));
      SIKA_ASSIGN_OR_RETURN(row, find_refresh_token(c, hash));
    }
  }
  return row;
}

// Why this client may not use the refresh token at all (nothing is revoked); "" when it may.
std::string refresh_rejection(const RefreshToken& row, const Client& client, std::int64_t t) {
  if (row.client_id != client.client_id) return "the refresh token was issued to another client";
  if (row.status == "revoked") return "refresh token revoked";
  if (row.expires_at < t) return "refresh token expired";
  return {};
}

// Sets a.grant.scope to the requested scope (the family's when none is asked); a problem when it
// asks for a scope the family was not granted.
void refresh_scope(RefreshAttempt& a, const RefreshToken& row, const std::string& requested) {
  a.grant.scope = row.scope;
  if (requested.empty()) return;
  auto have = split_list(row.scope);
  for (const auto& s : split_list(requested))
    if (!contains(have, s)) {
      a.problem = "scope " + s + " was not granted originally";
      return;
    }
  a.grant.scope = join_list(split_list(requested));
}

// A client_credentials family lives only as long as the client may still get such tokens:
// re-reads its record (the cached one may be client_cache_seconds old) into a.fresh. Sets a
// problem (and revokes the family when the client may no longer refresh) when it may not.
Status recheck_client_family(store::Conn& c, RefreshAttempt& a, const RefreshToken& row, const Client& client,
                             std::int64_t t) {
  SIKA_ASSIGN_OR_RETURN(a.fresh, find_client(c, client.client_id));
  if (!a.fresh || !a.fresh->active || !a.fresh->merchant_active || !a.fresh->full_client_credentials()) {
    a.problem = "the client may no longer refresh client_credentials tokens; the token family is revoked";
    return revoke_family(c, row.family_id, t, &a.revoked);
  }
  for (const auto& s : split_list(a.grant.scope))
    if (!contains(a.fresh->scopes, s)) {
      a.problem = "scope " + s + " is no longer allowed for this client";
      return {};
    }
  return {};
}

// Completes the grant of a rotated token: its user (a disabled one sets a problem and revokes the
// family) or, for a client_credentials family, the re-read client.
Status grant_refreshed(store::Conn& c, RefreshAttempt& a, const RefreshToken& row, std::int64_t t) {
  if (row.user_id != 0) {
    SIKA_ASSIGN_OR_RETURN(a.user, find_user_by_id(c, row.user_id));
    if (!a.user || !a.user->active) {
      a.problem = "the user is disabled";
      return revoke_family(c, row.family_id, t, &a.revoked);
    }
    a.grant.user = &*a.user;
    a.grant.id_token = contains(split_list(a.grant.scope), "openid");
    a.grant.auth_time = row.auth_time;
  } else {
    a.grant.client = &*a.fresh;
    a.grant.id_token = true;
    a.grant.auth_time = t;  // the client authenticated with this request
  }
  return {};
}

}  // namespace

web::Response Service::token_refresh(const web::Request& req, const bj::object& body) {
  auto auth = authenticate_client(req, body, true);
  if (!auth) return token_error(req, auth.error(), false);
  const Client& client = *auth->client;
  bool basic = auth->basic;
  if (!client.allows_grant("refresh_token") && !client.full_client_credentials())
    return token_error(
        req, oauth_error(ErrorKind::invalid, "unauthorized_client", "refresh_token is not allowed for this client"),
        basic);
  std::string token = param(body, "refresh_token");
  if (token.empty())
    return token_error(req, oauth_error(ErrorKind::invalid, "invalid_request", "refresh_token is required"), basic);
  std::string requested = param(body, "scope");

  const std::string hash = crypto::secret_hash(opts_.pepper, token);
  const Ticket ticket = issuer_.ticket(now(), Ticket::Refresh::recorded);
  const std::int64_t t = ticket.now_ms;

  using Outcome = RefreshAttempt::Outcome;
  RefreshAttempt a;
  a.grant.client = &client;
  Status st = db_.write([&](store::Conn& c) -> Status {
    a.outcome = Outcome::invalid;
    a.problem.clear();
    a.user.reset();
    a.fresh.reset();
    a.revoked.clear();
    SIKA_ASSIGN_OR_RETURN(auto row, find_or_record_refresh_token(c, issuer_, token, hash));
    if (!row) {
      a.problem = "unknown refresh token";
      return {};
    }
    a.problem = refresh_rejection(*row, client, t);
    if (!a.problem.empty()) return {};
    refresh_scope(a, *row, requested);
    if (!a.problem.empty()) return {};
    if (row->user_id == 0) {
      SIKA_TRY(recheck_client_family(c, a, *row, client, t));
      if (!a.problem.empty()) return {};
    }
    SIKA_ASSIGN_OR_RETURN(bool rotated, rotate_refresh_token(c, row->id, t, opts_.refresh_grace_seconds * 1000LL));
    if (!rotated) {
      a.outcome = Outcome::reuse;
      a.problem = "refresh token reused; the token family is revoked";
      return revoke_family(c, row->family_id, t, &a.revoked);
    }
    SIKA_TRY(grant_refreshed(c, a, *row, t));
    if (!a.problem.empty()) return {};
    // The nonce stays with the family but is not repeated in refreshed ID tokens.
    Grant recorded = a.grant;
    recorded.nonce = row->nonce;
    SIKA_TRY(insert_refresh_token(c, issuer_.refresh_record(ticket, recorded, row->family_id, row->scope)));
    a.outcome = Outcome::ok;
    return {};
  });
  if (!st) return token_error(req, st.error());
  note_revoked(a.revoked);
  if (a.outcome != Outcome::ok)
    return token_error(req, oauth_error(ErrorKind::invalid, "invalid_grant", a.problem), basic);
  return token_issued(req, ticket, a.grant);
}

}  // namespace sika::identity
