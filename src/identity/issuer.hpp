#pragma once
// The token issuer: the one place where access, refresh and ID tokens are made, for every
// grant (client_credentials, authorization_code, refresh_token). Grants decide what to issue
// (a Grant) and record refresh tokens in their own write unit; the issuer signs and answers.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include <sodium.h>

#include "core/result.hpp"
#include "core/thread_annotations.hpp"
#include "identity/keys.hpp"
#include "identity/model.hpp"
#include "identity/options.hpp"
#include "identity/store.hpp"

namespace sika::identity {

// Fresh identifiers of one issuance, drawn before the grant's write unit so that the
// refresh-token row it records names the access token issued with it.
struct Ticket {
  enum class Refresh {
    none,      // no refresh token
    recorded,  // "rt_" + 256 random bits, recorded (hashed) by the grant's write unit
    sealed,    // a client_credentials token that carries its own row until its first use
  };
  std::int64_t now_ms = 0;
  std::string jti;
  std::int64_t access_expires_at = 0;  // ms, on a whole second (the `exp` claim)
  Refresh refresh = Refresh::none;
  std::string refresh_token;  // recorded only; a sealed token is made by issue()
  std::string family_id;      // of a new family
};

// What a grant decided; the issuer turns it into tokens.
struct Grant {
  const Client* client = nullptr;
  const User* user = nullptr;  // nullptr: the client acts for itself (client_credentials)
  std::string scope;           // of the access token
  std::string nonce;           // ID token `nonce`, "" for none
  std::int64_t auth_time = 0;  // ms: the user's sign-in, or the client's authentication
  bool id_token = false;
};

// What a sealed client_credentials refresh token stands for (read back from the token).
struct SealedRefresh {
  std::string family_id;
  std::string client_id;
  std::string scope;
  std::string access_jti;
  std::int64_t access_expires_at = 0;
  std::int64_t expires_at = 0;
  std::int64_t issued_at = 0;
};

class TokenIssuer {
 public:
  static constexpr std::int64_t kClientIdTokenReuseMs = 60'000;

  using KeySource = std::function<std::shared_ptr<const KeyRing>()>;
  TokenIssuer(const Options& options, KeySource keys);

  // Draws the identifiers of one issuance at now_ms.
  Ticket ticket(std::int64_t now_ms, Ticket::Refresh refresh) const;
  // The row recording the ticket's refresh token in family_id. family_scope is the family's
  // scope, which a refresh that narrows its access token's scope keeps.
  RefreshToken refresh_record(const Ticket& ticket, const Grant& grant, std::string_view family_id,
                              std::string_view family_scope) const;
  // Signs the grant's tokens and returns the token response body (RFC 6749 §5.1): access_token,
  // token_type, expires_in, scope, then refresh_token and id_token when the ticket and grant ask
  // for them. Fails only when no signing key is loaded.
  // A client's own ID token (no user) says only that the client authenticated: it has no
  // at_hash and no nonce, and one is signed per client at most every kClientIdTokenReuseMs per
  // process (its iat and auth_time tell when), because an RS256 signature costs ten times the
  // rest of a client_credentials request.
  Result<std::string> issue(const Ticket& ticket, const Grant& grant) const;

  // Returns what a sealed refresh token stands for, or nullopt unless this server made it.
  std::optional<SealedRefresh> open_sealed(std::string_view token) const;
  // The row a sealed token becomes at its first use (refresh, revocation).
  RefreshToken sealed_record(const SealedRefresh& sealed, std::string_view token) const;

 private:
  struct ClientIdToken {
    std::string token;
    std::string kid;
    std::int64_t iat_ms = 0;
  };

  std::string access_token(const Ticket& ticket, const Grant& grant) const;
  std::string id_token(const Ticket& ticket, const Grant& grant, std::string_view access_token) const;
  std::string client_id_token(const Ticket& ticket, const Grant& grant) const;
  std::string seal(const Ticket& ticket, const Grant& grant) const;
  // base64url(HMAC-SHA256(seal key, data)).
  std::string seal_mac(std::string_view data) const;

  const Options& opts_;
  KeySource keys_;
  Alg access_alg_;
  std::string seal_key_;
  crypto_auth_hmacsha256_state seal_mac_;  // keyed once: each seal copies it
  mutable sika::Mutex client_ids_mu_;
  mutable std::unordered_map<std::string, ClientIdToken> client_ids_
      GUARDED_BY(client_ids_mu_);  // client_id -> its current ID token
};

}  // namespace sika::identity
