// Token revocation (RFC 7009) and introspection (RFC 7662).
#include <boost/json.hpp>

#include "core/crypto.hpp"
#include "identity/internal.hpp"
#include "identity/jwt.hpp"
#include "identity/service.hpp"
#include "identity/store.hpp"
#include "web/envelope.hpp"

namespace sika::identity {

namespace bj = boost::json;

namespace {

// An empty or unparsable body: empty_data, as the spec names it, with the OAuth code in details.
Error token_required() {
  bj::object d;
  d["error"] = "invalid_request";
  d["error_description"] = "token is required";
  return empty_data(std::move(d));
}

}  // namespace

web::Response Service::revoke(web::Request& req) {
  auto body = web::body_object(req, true);
  if (!body) return token_error(req, token_required());
  auto auth = authenticate_client(req, *body, true);
  if (!auth) return token_error(req, auth.error(), false);
  std::string token = param(*body, "token");
  if (token.empty())
    return token_error(req, oauth_error(ErrorKind::invalid, "invalid_request", "token is required"), auth->basic);
  const Client& client = *auth->client;
  const std::int64_t t = now();
  // RFC 7009 §2.1: a token issued to another client is refused, and stays valid. Unknown,
  // expired and foreign-signed tokens answer 200: there is nothing of the caller's to revoke.
  bool foreign = false;
  Status st;
  std::vector<std::pair<std::string, std::int64_t>> revoked;
  if (looks_like_jwt(token)) {
    auto found = verify_access_token(token);
    if (found && found->expires_at * 1000 > t) {
      if (found->client_id != client.client_id) {
        foreign = true;
      } else {
        st = db_.write([&](store::Conn& c) {
          return revoke_access_token(c, found->jti, client.client_id, found->expires_at * 1000, t);
        });
        revoked.emplace_back(found->jti, found->expires_at * 1000);
      }
    }
  } else {
    std::string hash = crypto::secret_hash(opts_.pepper, token);
    st = db_.write([&](store::Conn& c) -> Status {
      revoked.clear();
      foreign = false;
      SIKA_ASSIGN_OR_RETURN(auto row, find_refresh_token(c, hash));
      if (!row) {
        auto sealed = issuer_.open_sealed(token);
        if (!sealed || sealed->expires_at <= t) return {};
        if (sealed->client_id != client.client_id) {
          foreign = true;
          return {};
        }
        // Recorded now so that the family (and the access token issued with it) is revoked.
        SIKA_TRY(insert_refresh_token(c, issuer_.sealed_record(*sealed, token)));
        return revoke_family(c, sealed->family_id, t, &revoked);
      }
      if (row->client_id != client.client_id) {
        foreign = true;
        return {};
      }
      return revoke_family(c, row->family_id, t, &revoked);
    });
  }
  if (!st) return token_error(req, st.error());
  if (foreign)
    return token_error(req,
                       oauth_error(ErrorKind::invalid, "unauthorized_client", "the token was issued to another client"),
                       auth->basic);
  note_revoked(revoked);
  web::Response res = web::ok(req, bj::object{}, {}, "ok");
  no_store(res);
  return res;
}

web::Response Service::introspect(web::Request& req) {
  auto body = web::body_object(req, true);
  if (!body) return token_error(req, token_required());
  auto auth = authenticate_client(req, *body, false);
  if (!auth) return token_error(req, auth.error(), false);
  const Client& caller = *auth->client;
  std::string token = param(*body, "token");
  if (token.empty())
    return token_error(req, oauth_error(ErrorKind::invalid, "invalid_request", "token is required"), auth->basic);
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
    std::optional<RefreshToken> row;
    Status st = db_.read([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(row, find_refresh_token(c, hash));
      return {};
    });
    if (!st) return token_error(req, st.error());
    if (!row) {
      // A client_credentials refresh token not used yet has no row: it is active.
      if (auto sealed = issuer_.open_sealed(token)) row = issuer_.sealed_record(*sealed, token);
    }
    if (row && row->status == "active" && row->expires_at > t && (row->client_id == caller.client_id || caller.admin)) {
      out["active"] = true;
      out["token_type"] = "refresh_token";
      out["client_id"] = row->client_id;
      out["scope"] = row->scope;
      out["exp"] = row->expires_at / 1000;
      out["iat"] = row->created_at / 1000;
      out["iss"] = opts_.issuer;
      if (!row->subject.empty()) out["sub"] = row->subject;
    }
  }
  web::Response res = web::Response::json(200, bj::serialize(out));
  no_store(res);
  return res;
}

}  // namespace sika::identity
