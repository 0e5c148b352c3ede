#pragma once
// Sign-in of the platform's own pages (the dashboard, the wallet page) with our identity
// service, as an OpenID Connect relying party: authorization code + PKCE S256, a state bound to
// the browser (the caller keeps it in a short-lived cookie), and a nonce. The code verifier and
// the nonce derive from the state under the caller's server key, so nothing of an unfinished
// sign-in is stored. The code is exchanged in process through the identity service's own token
// endpoint handler (the same checks as over HTTP: PKCE, redirect URI, single use, rate limits)
// and the ID token is verified (signature, iss, aud, exp, nonce) before any claim is trusted.
#include <string>
#include <string_view>

#include "core/i18n.hpp"
#include "core/result.hpp"
#include "identity/service.hpp"
#include "web/message.hpp"

namespace sika::identity {

class RelyingParty {
 public:
  // `key`: a server secret of the caller (its own label), from which verifiers and nonces derive.
  RelyingParty(Service& identity, std::string client_id, std::string redirect_uri, std::string key);

  struct Start {
    std::string url;    // the authorization request to redirect the browser to
    std::string state;  // to bind to the browser (cookie) until the callback
  };
  Start begin(i18n::Locale locale, std::string_view scope = "openid profile email") const;

  // The callback: `req` carries code and state (or error); `bound_state` is the browser's
  // cookie. A refusal at the identity service is 403 naming `error`, a state that does not match
  // 400 access_denied naming `state`, a refused code 401 naming `code`; the token's own
  // problems are verify_id_token's.
  Result<IdTokenClaims> finish(const web::Request& req, std::string_view bound_state) const;

 private:
  std::string derived(std::string_view label, std::string_view state) const;

  Service& identity_;
  std::string client_id_, redirect_uri_, key_;
};

}  // namespace sika::identity
