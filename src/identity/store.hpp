#pragma once
// All SQL of the identity service: clients, users, authorization codes, refresh tokens and
// the access-token denylist. Plain functions over a store::Conn, run by callers inside
// db.write / db.read units, so that the service, the admin CLI and the demo seeding share them.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "identity/model.hpp"
#include "merchant/merchant.hpp"
#include "store/db.hpp"

namespace sika::identity {

// --- clients ---
// Validates and inserts a client. 400 empty_data with per-field details on bad input,
// 409 conflict when the client_id exists.
Result<CreatedClient> create_client(store::Conn& c, std::string_view pepper, const ClientSpec& spec,
                                    std::int64_t now_ms);
// Replaces the secret of a confidential client; returns the new plaintext secret once.
// Running services stop accepting the old secret within Options::client_cache_seconds.
Result<std::string> rotate_client_secret(store::Conn& c, std::string_view pepper, std::string_view client_id,
                                         std::int64_t now_ms);
// Sets the secret to `secret` (demo seeding keeps secrets derived from the server key).
Status set_client_secret(store::Conn& c, std::string_view pepper, std::string_view client_id, std::string_view secret,
                         std::int64_t now_ms);
Status set_client_active(store::Conn& c, std::string_view client_id, bool active, std::int64_t now_ms);

// The settings `update_client` may change; an empty member leaves the setting as it is.
struct ClientUpdate {
  std::optional<std::vector<std::string>> scopes;
  std::optional<bool> strict_client_credentials;
};
// Changes a client's settings. 400 empty_data with per-field details, 404 when unknown.
// Running services apply them within Options::client_cache_seconds; refreshes of
// client_credentials families re-read the record, so they apply there at once.
Result<Client> update_client(store::Conn& c, std::string_view client_id, const ClientUpdate& update,
                             std::int64_t now_ms);
Result<std::optional<Client>> find_client(store::Conn& c, std::string_view client_id);
Result<std::vector<Client>> list_clients(store::Conn& c);

// --- users ---
// Inserts a user whose password is already hashed (crypto::password_hash). 409 when the email exists.
Result<User> insert_user(store::Conn& c, const UserSpec& spec, std::string_view password_hash, std::int64_t now_ms);
// Validates, hashes the password (slow, outside any write unit) and inserts the user.
Result<User> create_user(store::Db& db, const UserSpec& spec, std::int64_t now_ms);
// Replaces a user's password and clears its lockout.
Status set_user_password(store::Db& db, std::string_view email, std::string_view password, std::int64_t now_ms);
Result<std::optional<User>> find_user_by_email(store::Conn& c, std::string_view email);
Result<std::optional<User>> find_user_by_id(store::Conn& c, std::int64_t id);
Result<std::optional<User>> find_user_by_subject(store::Conn& c, std::string_view subject);
Result<std::vector<User>> list_users(store::Conn& c);

// --- authorization codes ---

// One authorization code (RFC 6749 §4.1.2): what the user approved, and once redeemed, the
// access token and refresh-token family it issued (so that a replay can revoke them).
struct AuthorizationCode {
  std::int64_t id = 0;
  std::string code_hash;
  std::string client_id;
  std::int64_t user_id = 0;
  std::string redirect_uri;
  bool redirect_uri_given = false;
  std::string scope;
  std::string nonce;           // "" when none
  std::string code_challenge;  // "" when none
  std::int64_t auth_time = 0;  // ms
  std::int64_t expires_at = 0;
  std::int64_t created_at = 0;
  std::optional<std::int64_t> used_at;
  std::string family_id;   // "" when no refresh token was issued
  std::string access_jti;  // "" until redeemed
  std::int64_t access_expires_at = 0;
};

Status insert_code(store::Conn& c, const AuthorizationCode& code);
Result<std::optional<AuthorizationCode>> find_code(store::Conn& c, std::string_view code_hash);
// Marks a code used without issuing anything (a failed redemption burns it).
Status burn_code(store::Conn& c, std::int64_t id, std::int64_t now_ms);
// Marks an unused code redeemed with what it issued; false when it was used meanwhile.
Result<bool> redeem_code(store::Conn& c, std::int64_t id, std::int64_t now_ms, std::string_view family_id,
                         std::string_view access_jti, std::int64_t access_expires_at);

// --- refresh tokens ---

// One refresh token of a family. user_id 0 marks a client_credentials family (the client
// acts for itself); subject is the user's `sub` ("" for those).
struct RefreshToken {
  std::int64_t id = 0;
  std::string token_hash;
  std::string family_id;
  std::string client_id;
  std::int64_t user_id = 0;
  std::string subject;
  std::string scope;
  std::string nonce;
  std::int64_t auth_time = 0;     // ms
  std::string status = "active";  // active, rotated or revoked
  std::string access_jti;         // the access token issued with it
  std::int64_t access_expires_at = 0;
  std::int64_t expires_at = 0;
  std::int64_t created_at = 0;
};

// Records a refresh token; a row with the same hash already there is kept (a client_credentials
// token is recorded at its first use, possibly by two parallel refreshes).
Status insert_refresh_token(store::Conn& c, const RefreshToken& token);
Result<std::optional<RefreshToken>> find_refresh_token(store::Conn& c, std::string_view token_hash);
// Rotation, atomically: an active token becomes rotated; a token rotated less than grace_ms
// ago may be presented again. False when neither holds (reuse).
Result<bool> rotate_refresh_token(store::Conn& c, std::int64_t id, std::int64_t now_ms, std::int64_t grace_ms);
// Revokes every refresh token of a family and denylists the access tokens it issued; appends
// the denylisted jtis (with their expiry, ms) to `revoked` when given.
Status revoke_family(store::Conn& c, std::string_view family_id, std::int64_t now_ms,
                     std::vector<std::pair<std::string, std::int64_t>>* revoked = nullptr);

// --- access-token denylist ---

// Denylists one access token until it expires (expires_at in ms); idempotent.
Status revoke_access_token(store::Conn& c, std::string_view jti, std::string_view client_id, std::int64_t expires_at,
                           std::int64_t now_ms);
// True iff the access token `jti` is denylisted, or it acts for merchant `merchant_id` (0: none)
// and carries a grants version that is no longer the merchant's (its countries, tier or status
// changed after the token's claims were read).
Result<bool> access_token_revoked(store::Conn& c, std::string_view jti, std::int64_t merchant_id,
                                  std::int64_t grants_version);

// --- a merchant's grants ---

// Changes what a merchant's credentials may do, in the caller's write unit: the merchant's
// countries and tier (merchant::set_grants, which moves its grants version), and for each of its
// OAuth clients and staff users, the countries removed taken away, those added given, the tier
// set. Tokens issued from then on carry the change; those issued before are refused by the
// gateway (access_token_revoked). The same countries (in the same order) and tier change nothing.
// Returns the merchant as it was; 404 when no merchant has this id. The values are checked by the
// caller (check_merchant_grants).
Result<merchant::Merchant> set_merchant_grants(store::Conn& c, std::int64_t merchant_id,
                                               const std::vector<std::string>& countries, std::int64_t tier,
                                               std::int64_t now_ms);

// Deletes expired codes (a day after expiry, so that a late replay still revokes), refresh
// tokens and denylist rows whose token has expired.
Status purge_expired_tokens(store::Conn& c, std::int64_t now_ms);

}  // namespace sika::identity
