#include "identity/relying_party.hpp"

#include <boost/json.hpp>

#include "core/crypto.hpp"
#include "core/random.hpp"

namespace sika::identity {

namespace bj = boost::json;

RelyingParty::RelyingParty(Service& identity, std::string client_id, std::string redirect_uri, std::string key)
    : identity_(identity),
      client_id_(std::move(client_id)),
      redirect_uri_(std::move(redirect_uri)),
      key_(std::move(key)) {}

std::string RelyingParty::derived(std::string_view label, std::string_view state) const {
  return base64url_encode(crypto::hmac_sha256(key_, std::string(label) + ":" + std::string(state)));
}

RelyingParty::Start RelyingParty::begin(i18n::Locale locale, std::string_view scope) const {
  Start s;
  s.state = random_token(24);
  const std::string challenge = base64url_encode(crypto::sha256(derived("verifier", s.state)));
  s.url = identity_.options().issuer +
          "/oauth/v2/authorize?response_type=code&client_id=" + web::percent_encode(client_id_) +
          "&redirect_uri=" + web::percent_encode(redirect_uri_) + "&scope=" + web::percent_encode(scope) +
          "&state=" + s.state + "&nonce=" + derived("nonce", s.state) + "&code_challenge=" + challenge +
          "&code_challenge_method=S256&ui_locales=" + (locale == i18n::Locale::fr ? "fr" : "en");
  return s;
}

Result<IdTokenClaims> RelyingParty::finish(const web::Request& req, std::string_view bound_state) const {
  if (auto e = req.query_param("error")) return forbidden(bj::object{{"error", "access_denied"}, {"identity", *e}});
  auto code = req.query_param("code");
  auto state = req.query_param("state");
  if (!code || !state || bound_state.empty() || !crypto::constant_time_equal(bound_state, *state))
    return bad_request("access_denied", bj::object{{"state", "does not match this browser's sign-in"}});
  web::Request token_req;
  token_req.method = "POST";
  token_req.path = "/oauth/v2/token";
  token_req.headers = {{"content-type", "application/x-www-form-urlencoded"}};
  token_req.body = "grant_type=authorization_code&code=" + web::percent_encode(*code) +
                   "&redirect_uri=" + web::percent_encode(redirect_uri_) +
                   "&client_id=" + web::percent_encode(client_id_) + "&code_verifier=" + derived("verifier", *state);
  token_req.remote_ip = req.remote_ip;
  token_req.peer_ip = req.peer_ip;
  token_req.request_id = req.request_id;
  token_req.locale = req.locale;
  web::Response answer = identity_.token(token_req);
  std::string id_token;
  if (answer.status == 200) {
    boost::system::error_code ec;
    bj::value v = bj::parse(answer.body, ec);
    if (!ec && v.is_object())
      if (const auto* t = v.as_object().if_contains("id_token"); t && t->is_string()) id_token = t->as_string();
  }
  if (id_token.empty()) return unauthorized(bj::object{{"code", "refused by the identity service"}});
  return identity_.verify_id_token(id_token, client_id_, derived("nonce", *state));
}

}  // namespace sika::identity
