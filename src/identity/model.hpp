#pragma once
// OAuth clients and users: their types and the rules that need no database (scopes, lists,
// client and user validation). Their SQL is in identity/store.hpp.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"
#include "core/result.hpp"
#include "store/state_machine.hpp"

namespace sika::identity {

// A refresh token is active until it is used (rotated: a reuse within the grace period rotates it
// again, harmlessly) or its family is revoked. No event.
enum class RefreshStatus { active, rotated, revoked };
inline constexpr store::StateMachine<RefreshStatus, 3, 4> kRefreshStatus{
    "oauth_refresh_tokens",
    {"active", "rotated", "revoked"},
    {{{RefreshStatus::active, RefreshStatus::rotated, ""},
      {RefreshStatus::rotated, RefreshStatus::rotated, ""},
      {RefreshStatus::active, RefreshStatus::revoked, ""},
      {RefreshStatus::rotated, RefreshStatus::revoked, ""}}}};

// A signing key is active until a rotation retires it (still published until publish_until). No event.
enum class KeyStatus { active, retired };
inline constexpr store::StateMachine<KeyStatus, 2, 1> kKeyStatus{
    "identity_keys", {"active", "retired"}, {{{KeyStatus::active, KeyStatus::retired, ""}}}};

// Scopes a client or user may be granted.
inline constexpr std::string_view kApiScopes[] = {"payments", "services", "countries", "providers"};
inline constexpr std::string_view kOidcScopes[] = {"openid", "profile", "email", "phone", "offline_access"};
bool is_known_scope(std::string_view scope);
// The problem of a scope that is not one of those: "unknown scope <scope>".
Problem unknown_scope(std::string_view scope);

// Splits on spaces (runs of spaces are one separator); joins with one space.
std::vector<std::string> split_list(std::string_view text);
std::string join_list(const std::vector<std::string>& items);
bool contains(const std::vector<std::string>& items, std::string_view item);

struct ClientSpec {
  std::string client_id;  // generated ("sika_" + random) when empty
  std::string name;
  bool confidential = true;
  std::optional<std::string> secret;       // a caller-chosen secret (>= 43 chars, demo seeding); random otherwise
  std::vector<std::string> redirect_uris;  // exact match (loopback http URIs match on any port, RFC 8252)
  std::vector<std::string>
      grant_types;                  // default: client_credentials (confidential) or authorization_code+refresh_token
  std::vector<std::string> scopes;  // default: payments services countries providers
  std::optional<std::int64_t> merchant_id;
  std::string environment = "sandbox";  // "sandbox" or "prod"
  std::vector<std::string> countries;   // ISO alpha-3
  std::int64_t user_tier = 1;
  bool admin = false;
  std::string id_token_alg = "RS256";  // "RS256" or "ES256"
  // client_credentials answers only access_token (RFC 6749 §4.4.3) instead of the spec's five fields.
  bool strict_client_credentials = false;
};

// Fills the defaults of a client spec (client_id, name, grant types, scopes) and returns the
// problems found per field; the owning merchant's existence is checked by create_client.
json::FieldErrors check_client_spec(ClientSpec& spec);

struct Client {
  std::int64_t id = 0;
  std::string client_id;
  std::string name;
  bool confidential = true;
  std::string secret_hash;  // "" for public clients
  std::vector<std::string> redirect_uris;
  std::vector<std::string> grant_types;
  std::vector<std::string> scopes;
  std::int64_t merchant_id = 0;              // 0 when none
  std::string merchant;                      // matricule of merchant_id ("" when none)
  bool merchant_active = true;               // false when the owning merchant is deactivated
  std::int64_t merchant_grants_version = 0;  // the owning merchant's, when the record was read
  std::string environment;
  std::vector<std::string> countries;
  std::int64_t user_tier = 1;
  bool admin = false;
  std::string id_token_alg = "RS256";
  bool strict_client_credentials = false;
  bool active = true;
  std::int64_t created_at = 0;
  std::int64_t updated_at = 0;

  bool allows_grant(std::string_view g) const { return contains(grant_types, g); }
  // True iff client_credentials answers a refresh token and an ID token besides the access token.
  bool full_client_credentials() const { return allows_grant("client_credentials") && !strict_client_credentials; }
  // Returns true iff `uri` is registered (exact match; loopback http URIs ignore the port).
  bool redirect_uri_registered(std::string_view uri) const;
};

struct CreatedClient {
  Client client;
  std::string client_secret;  // plaintext, returned once; "" for public clients
};

struct UserSpec {
  std::string email;
  std::string password;  // plaintext; hashed with argon2id outside the write unit
  std::string phone;
  std::string name;
  std::int64_t user_tier = 1;
  std::vector<std::string> countries;
  bool admin = false;
  std::optional<std::int64_t> merchant_id;  // set for a merchant's staff
};

struct User {
  std::int64_t id = 0;
  std::string subject;  // public, stable "sub" (a UUID)
  std::string email;
  std::string phone;
  std::string name;
  std::string password_hash;
  std::int64_t user_tier = 1;
  std::vector<std::string> countries;
  bool admin = false;
  std::int64_t merchant_id = 0;
  std::string merchant;
  std::int64_t merchant_grants_version = 0;  // the merchant's, when the record was read
  bool active = true;
  std::int64_t failed_logins = 0;
  std::int64_t locked_until = 0;  // epoch ms
  std::int64_t created_at = 0;
  std::int64_t updated_at = 0;
};

// Checks a user spec (email shape, password length 10..256, tier, countries); per-field details.
Status validate_user(const UserSpec& spec);
std::string normalize_email(std::string_view email);

// Checks a merchant's new countries and tier: at least one country, each an ISO alpha-3 code the
// catalog has and enables (`enabled_country`), no repeats; the tier within the range of a user's
// or a client's (0..100). Problems per field: countries, tier.
json::FieldErrors check_merchant_grants(const std::vector<std::string>& countries, std::int64_t tier,
                                        const std::function<bool(std::string_view)>& enabled_country);

}  // namespace sika::identity
