// The identity service's JSON handlers outside the token endpoint (grants.cpp): userinfo, the
// signing keys and the discovery documents.
#include "identity/service.hpp"

#include <algorithm>
#include <boost/json.hpp>
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
    return bearer_error(
        oauth_error(ErrorKind::forbidden, "insufficient_scope", "userinfo needs a user token with the openid scope"),
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

}  // namespace sika::identity
