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

  enum class Outcome { ok, invalid, replay };
  Outcome outcome = Outcome::invalid;
  std::string problem;
  std::optional<User> user;
  Grant grant{.client = &client};
  std::vector<std::pair<std::string, std::int64_t>> revoked;
  Status st = db_.write([&](store::Conn& c) -> Status {
    outcome = Outcome::invalid;
    problem.clear();
    user.reset();
    revoked.clear();
    SIKA_ASSIGN_OR_RETURN(auto row, find_code(c, code_hash));
    if (!row) {
      problem = "unknown authorization code";
      return {};
    }
    if (row->used_at) {
      // Replay: revoke everything the first redemption issued (RFC 6749 §4.1.2).
      outcome = Outcome::replay;
      problem = "authorization code already used; the tokens it issued are revoked";
      if (!row->family_id.empty()) SIKA_TRY(revoke_family(c, row->family_id, t, &revoked));
      if (!row->access_jti.empty() && row->access_expires_at > t) {
        revoked.emplace_back(row->access_jti, row->access_expires_at);
        SIKA_TRY(revoke_access_token(c, row->access_jti, row->client_id, row->access_expires_at, t));
      }
      return {};
    }
    auto burn = [&](std::string why) -> Status {
      problem = std::move(why);
      return burn_code(c, row->id, t);
    };
    if (row->client_id != client.client_id) {
      problem = "the code was issued to another client";
      return {};
    }
    if (row->expires_at < t) return burn("authorization code expired");
    if (row->redirect_uri_given && redirect_uri != row->redirect_uri)
      return burn("redirect_uri does not match the authorization request");
    if (!row->redirect_uri_given && !redirect_uri.empty() && redirect_uri != row->redirect_uri)
      return burn("redirect_uri does not match the registered one");
    if (row->code_challenge.empty()) {
      if (!verifier.empty()) return burn("code_verifier sent but no code_challenge was in the authorization request");
      if (!client.confidential) return burn("PKCE is required for public clients");
    } else {
      if (verifier.empty()) return burn("code_verifier is required");
      if (!crypto::constant_time_equal(pkce_s256(verifier), row->code_challenge))
        return burn("code_verifier does not match");
    }
    SIKA_ASSIGN_OR_RETURN(user, find_user_by_id(c, row->user_id));
    if (!user || !user->active) return burn("the user is disabled");
    SIKA_ASSIGN_OR_RETURN(bool redeemed, redeem_code(c, row->id, t, with_refresh ? ticket.family_id : std::string(),
                                                     ticket.jti, ticket.access_expires_at));
    if (!redeemed) {
      outcome = Outcome::replay;
      problem = "authorization code already used";
      return {};
    }
    grant.user = &*user;
    grant.scope = row->scope;
    grant.nonce = row->nonce;
    grant.auth_time = row->auth_time;
    grant.id_token = contains(split_list(row->scope), "openid");
    if (with_refresh)
      SIKA_TRY(insert_refresh_token(c, issuer_.refresh_record(ticket, grant, ticket.family_id, row->scope)));
    outcome = Outcome::ok;
    return {};
  });
  if (!st) return token_error(req, st.error());
  note_revoked(revoked);
  if (outcome != Outcome::ok) return token_error(req, oauth_error(ErrorKind::invalid, "invalid_grant", problem), basic);
  return token_issued(req, ticket, grant);
}

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

  enum class Outcome { ok, invalid, reuse };
  Outcome outcome = Outcome::invalid;
  std::string problem;
  std::optional<User> user;
  std::optional<Client> fresh;  // the client record re-read for a client_credentials family
  Grant grant{.client = &client};
  std::vector<std::pair<std::string, std::int64_t>> revoked;
  Status st = db_.write([&](store::Conn& c) -> Status {
    outcome = Outcome::invalid;
    problem.clear();
    user.reset();
    fresh.reset();
    revoked.clear();
    SIKA_ASSIGN_OR_RETURN(auto row, find_refresh_token(c, hash));
    if (!row) {
      // A client_credentials refresh token is recorded at its first use.
      if (auto sealed = issuer_.open_sealed(token)) {
        SIKA_TRY(insert_refresh_token(c, issuer_.sealed_record(*sealed, token)));
        SIKA_ASSIGN_OR_RETURN(row, find_refresh_token(c, hash));
      }
    }
    if (!row) {
      problem = "unknown refresh token";
      return {};
    }
    if (row->client_id != client.client_id) {
      problem = "the refresh token was issued to another client";
      return {};
    }
    if (row->status == "revoked") {
      problem = "refresh token revoked";
      return {};
    }
    if (row->expires_at < t) {
      problem = "refresh token expired";
      return {};
    }
    grant.scope = row->scope;
    if (!requested.empty()) {
      auto have = split_list(row->scope);
      for (const auto& s : split_list(requested))
        if (!contains(have, s)) {
          problem = "scope " + s + " was not granted originally";
          return {};
        }
      grant.scope = join_list(split_list(requested));
    }
    if (row->user_id == 0) {
      // A client_credentials family lives only as long as the client may still get such
      // tokens: re-read its record (the cached one may be client_cache_seconds old).
      SIKA_ASSIGN_OR_RETURN(fresh, find_client(c, client.client_id));
      if (!fresh || !fresh->active || !fresh->merchant_active || !fresh->full_client_credentials()) {
        problem = "the client may no longer refresh client_credentials tokens; the token family is revoked";
        return revoke_family(c, row->family_id, t, &revoked);
      }
      for (const auto& s : split_list(grant.scope))
        if (!contains(fresh->scopes, s)) {
          problem = "scope " + s + " is no longer allowed for this client";
          return {};
        }
    }
    SIKA_ASSIGN_OR_RETURN(bool rotated, rotate_refresh_token(c, row->id, t, opts_.refresh_grace_seconds * 1000LL));
    if (!rotated) {
      outcome = Outcome::reuse;
      problem = "refresh token reused; the token family is revoked";
      return revoke_family(c, row->family_id, t, &revoked);
    }
    if (row->user_id != 0) {
      SIKA_ASSIGN_OR_RETURN(user, find_user_by_id(c, row->user_id));
      if (!user || !user->active) {
        problem = "the user is disabled";
        return revoke_family(c, row->family_id, t, &revoked);
      }
      grant.user = &*user;
      grant.id_token = contains(split_list(grant.scope), "openid");
      grant.auth_time = row->auth_time;
    } else {
      grant.client = &*fresh;
      grant.id_token = true;
      grant.auth_time = t;  // the client authenticated with this request
    }
    // The nonce stays with the family but is not repeated in refreshed ID tokens.
    Grant recorded = grant;
    recorded.nonce = row->nonce;
    SIKA_TRY(insert_refresh_token(c, issuer_.refresh_record(ticket, recorded, row->family_id, row->scope)));
    outcome = Outcome::ok;
    return {};
  });
  if (!st) return token_error(req, st.error());
  note_revoked(revoked);
  if (outcome != Outcome::ok) return token_error(req, oauth_error(ErrorKind::invalid, "invalid_grant", problem), basic);
  return token_issued(req, ticket, grant);
}

}  // namespace sika::identity
