#pragma once
// OAuth clients and users: creation, lookup and secret rotation. These are plain functions
// over a store::Conn so that the admin CLI, the demo seeding and the service share them;
// callers run them inside db.write / db.read units.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "store/db.hpp"

namespace sika::identity {

// Scopes a client or user may be granted.
inline constexpr std::string_view kApiScopes[] = {"payments", "services", "countries", "providers"};
inline constexpr std::string_view kOidcScopes[] = {"openid", "profile", "email", "phone", "offline_access"};
bool is_known_scope(std::string_view scope);

// Splits on spaces (runs of spaces are one separator); joins with one space.
std::vector<std::string> split_list(std::string_view text);
std::string join_list(const std::vector<std::string>& items);
bool contains(const std::vector<std::string>& items, std::string_view item);

struct ClientSpec {
  std::string client_id;                  // generated ("sika_" + random) when empty
  std::string name;
  bool confidential = true;
  std::optional<std::string> secret;      // a caller-chosen secret (>= 43 chars, demo seeding); random otherwise
  std::vector<std::string> redirect_uris; // exact match (loopback http URIs match on any port, RFC 8252)
  std::vector<std::string> grant_types;   // default: client_credentials (confidential) or authorization_code+refresh_token
  std::vector<std::string> scopes;        // default: payments services countries providers
  std::optional<std::int64_t> merchant_id;
  std::string environment = "sandbox";    // "sandbox" or "prod"
  std::vector<std::string> countries;     // ISO alpha-3
  std::int64_t user_tier = 1;
  bool admin = false;
  std::string id_token_alg = "RS256";     // "RS256" or "ES256"
};

struct Client {
  std::int64_t id = 0;
  std::string client_id;
  std::string name;
  bool confidential = true;
  std::string secret_hash;  // "" for public clients
  std::vector<std::string> redirect_uris;
  std::vector<std::string> grant_types;
  std::vector<std::string> scopes;
  std::int64_t merchant_id = 0;  // 0 when none
  std::string merchant;          // matricule of merchant_id ("" when none)
  bool merchant_active = true;   // false when the owning merchant is deactivated
  std::string environment;
  std::vector<std::string> countries;
  std::int64_t user_tier = 1;
  bool admin = false;
  std::string id_token_alg = "RS256";
  bool active = true;
  std::int64_t created_at = 0;
  std::int64_t updated_at = 0;

  bool allows_grant(std::string_view g) const { return contains(grant_types, g); }
  // Returns true iff `uri` is registered (exact match; loopback http URIs ignore the port).
  bool redirect_uri_registered(std::string_view uri) const;
};

struct CreatedClient {
  Client client;
  std::string client_secret;  // plaintext, returned once; "" for public clients
};

// Validates and inserts a client. 400 empty_data with per-field details on bad input,
// 409 conflict when the client_id exists.
Result<CreatedClient> create_client(store::Conn& c, std::string_view pepper, const ClientSpec& spec,
                                    std::int64_t now_ms);
// Replaces the secret of a confidential client; returns the new plaintext secret once.
// Running services stop accepting the old secret within Options::client_cache_seconds.
Result<std::string> rotate_client_secret(store::Conn& c, std::string_view pepper, std::string_view client_id,
                                         std::int64_t now_ms);
// Sets the secret to `secret` (demo seeding keeps secrets derived from the server key).
Status set_client_secret(store::Conn& c, std::string_view pepper, std::string_view client_id,
                         std::string_view secret, std::int64_t now_ms);
Status set_client_active(store::Conn& c, std::string_view client_id, bool active, std::int64_t now_ms);
Result<std::optional<Client>> find_client(store::Conn& c, std::string_view client_id);
Result<std::vector<Client>> list_clients(store::Conn& c);

struct UserSpec {
  std::string email;
  std::string password;   // plaintext; hashed with argon2id outside the write unit
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
  bool active = true;
  std::int64_t failed_logins = 0;
  std::int64_t locked_until = 0;  // epoch ms
  std::int64_t created_at = 0;
  std::int64_t updated_at = 0;
};

// Checks a user spec (email shape, password length 10..256, tier, countries); per-field details.
Status validate_user(const UserSpec& spec);
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

std::string normalize_email(std::string_view email);

}  // namespace sika::identity
