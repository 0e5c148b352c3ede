#include "identity/store.hpp"

#include <boost/json.hpp>

#include "core/crypto.hpp"
#include "core/json.hpp"
#include "core/random.hpp"
#include "core/reason.hpp"
#include "store/read.hpp"

namespace sika::identity {

namespace bj = boost::json;

namespace {

constexpr std::string_view kClientColumns =
    "c.id, c.client_id, c.name, c.confidential, c.secret_hash, c.redirect_uris, c.grant_types, c.scopes, "
    "c.merchant_id, m.matricule, c.environment, c.countries, c.user_tier, c.admin, c.id_token_alg, c.active, "
    "c.created_at, c.updated_at, COALESCE(m.active, 1), c.strict_client_credentials, COALESCE(m.grants_version, 0) "
    "FROM oauth_clients c LEFT JOIN merchants m ON m.id = c.merchant_id";

Client client_from_row(const store::Row& r) {
  Client c;
  c.id = r.i64(0);
  c.client_id = r.str(1);
  c.name = r.str(2);
  c.confidential = r.boolean(3);
  c.secret_hash = r.str(4);
  c.redirect_uris = split_list(r.str(5));
  c.grant_types = split_list(r.str(6));
  c.scopes = split_list(r.str(7));
  c.merchant_id = r.i64(8);
  c.merchant = r.str(9);
  c.environment = r.str(10);
  c.countries = split_list(r.str(11));
  c.user_tier = r.i64(12);
  c.admin = r.boolean(13);
  c.id_token_alg = r.str(14);
  c.active = r.boolean(15);
  c.created_at = r.i64(16);
  c.updated_at = r.i64(17);
  c.merchant_active = r.boolean(18);
  c.strict_client_credentials = r.boolean(19);
  c.merchant_grants_version = r.i64(20);
  return c;
}

constexpr std::string_view kUserColumns =
    "u.id, u.subject, u.email, u.phone, u.name, u.password_hash, u.user_tier, u.countries, u.admin, u.merchant_id, "
    "m.matricule, u.active, u.failed_logins, u.locked_until, u.created_at, u.updated_at, "
    "COALESCE(m.grants_version, 0) FROM identity_users u LEFT JOIN merchants m ON m.id = u.merchant_id";

User user_from_row(const store::Row& r) {
  User u;
  u.id = r.i64(0);
  u.subject = r.str(1);
  u.email = r.str(2);
  u.phone = r.str(3);
  u.name = r.str(4);
  u.password_hash = r.str(5);
  u.user_tier = r.i64(6);
  u.countries = split_list(r.str(7));
  u.admin = r.boolean(8);
  u.merchant_id = r.i64(9);
  u.merchant = r.str(10);
  u.active = r.boolean(11);
  u.failed_logins = r.i64(12);
  u.locked_until = r.i64(13);
  u.created_at = r.i64(14);
  u.updated_at = r.i64(15);
  u.merchant_grants_version = r.i64(16);
  return u;
}

std::string new_client_secret() { return "cs_" + random_token(32); }

constexpr std::string_view kCodeColumns =
    "id, code_hash, client_id, user_id, redirect_uri, redirect_uri_given, scope, nonce, code_challenge, auth_time, "
    "expires_at, created_at, used_at, family_id, access_jti, access_expires_at FROM oauth_codes";

AuthorizationCode code_from_row(const store::Row& r) {
  AuthorizationCode a;
  a.id = r.i64(0);
  a.code_hash = r.str(1);
  a.client_id = r.str(2);
  a.user_id = r.i64(3);
  a.redirect_uri = r.str(4);
  a.redirect_uri_given = r.boolean(5);
  a.scope = r.str(6);
  a.nonce = r.str(7);
  a.code_challenge = r.str(8);
  a.auth_time = r.i64(9);
  a.expires_at = r.i64(10);
  a.created_at = r.i64(11);
  if (!r.is_null(12)) a.used_at = r.i64(12);
  a.family_id = r.str(13);
  a.access_jti = r.str(14);
  a.access_expires_at = r.i64(15);
  return a;
}

constexpr std::string_view kRefreshColumns =
    "r.id, r.token_hash, r.family_id, r.client_id, r.user_id, u.subject, r.scope, r.nonce, r.auth_time, r.status, "
    "r.access_jti, r.access_expires_at, r.expires_at, r.created_at "
    "FROM oauth_refresh_tokens r LEFT JOIN identity_users u ON u.id = r.user_id";

RefreshToken refresh_from_row(const store::Row& r) {
  RefreshToken t;
  t.id = r.i64(0);
  t.token_hash = r.str(1);
  t.family_id = r.str(2);
  t.client_id = r.str(3);
  t.user_id = r.is_null(4) ? 0 : r.i64(4);
  t.subject = r.str(5);
  t.scope = r.str(6);
  t.nonce = r.str(7);
  t.auth_time = r.is_null(8) ? 0 : r.i64(8);
  t.status = r.str(9);
  t.access_jti = r.str(10);
  t.access_expires_at = r.is_null(11) ? 0 : r.i64(11);
  t.expires_at = r.i64(12);
  t.created_at = r.i64(13);
  return t;
}

store::Value text_or_null(std::string_view s) {
  return s.empty() ? store::Value(nullptr) : store::Value(std::string(s));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// clients

Result<CreatedClient> create_client(store::Conn& c, std::string_view pepper, const ClientSpec& spec,
                                    std::int64_t now_ms) {
  ClientSpec s = spec;
  json::FieldErrors errors = check_client_spec(s);
  if (s.merchant_id) {
    SIKA_ASSIGN_OR_RETURN(auto m, c.query_one("SELECT id FROM merchants WHERE id = ?", {*s.merchant_id}));
    if (!m) errors.add("merchant_id", Reason::unknown_merchant);
  }
  SIKA_TRY(errors.status());

  CreatedClient out;
  std::optional<std::string> hash;
  if (s.confidential) {
    out.client_secret = s.secret ? *s.secret : new_client_secret();
    hash = crypto::secret_hash(pepper, out.client_secret);
  }
  auto rows = c.query(
      "INSERT INTO oauth_clients (client_id, name, confidential, secret_hash, redirect_uris, grant_types, scopes, "
      "merchant_id, environment, countries, user_tier, admin, id_token_alg, strict_client_credentials, active, "
      "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?) RETURNING id",
      {s.client_id, s.name, std::int64_t{s.confidential}, store::opt(hash), join_list(s.redirect_uris),
       join_list(s.grant_types), join_list(s.scopes), store::opt(s.merchant_id), s.environment, join_list(s.countries),
       s.user_tier, std::int64_t{s.admin}, s.id_token_alg, std::int64_t{s.strict_client_credentials}, now_ms, now_ms});
  if (!rows) {
    if (rows.error().is(ErrorKind::conflict)) return conflict(bj::object{{"client_id", "already exists"}});
    return rows.take_error();
  }
  SIKA_ASSIGN_OR_RETURN(auto found, find_client(c, s.client_id));
  if (!found) return internal_error("client vanished after insert");
  out.client = std::move(*found);
  return out;
}

Status set_client_secret(store::Conn& c, std::string_view pepper, std::string_view client_id, std::string_view secret,
                         std::int64_t now_ms) {
  if (secret.size() < 43) return empty_data(bj::object{{"secret", "must be at least 43 characters"}});
  SIKA_ASSIGN_OR_RETURN(auto n, c.exec("UPDATE oauth_clients SET secret_hash = ?, updated_at = ? "
                                       "WHERE client_id = ? AND confidential = 1",
                                       {crypto::secret_hash(pepper, secret), now_ms, std::string(client_id)}));
  if (n == 0) return not_found(bj::object{{"client_id", "no confidential client with this id"}});
  return {};
}

Result<std::string> rotate_client_secret(store::Conn& c, std::string_view pepper, std::string_view client_id,
                                         std::int64_t now_ms) {
  std::string secret = new_client_secret();
  SIKA_TRY(set_client_secret(c, pepper, client_id, secret, now_ms));
  return secret;
}

Status set_client_active(store::Conn& c, std::string_view client_id, bool active, std::int64_t now_ms) {
  SIKA_ASSIGN_OR_RETURN(auto n, c.exec("UPDATE oauth_clients SET active = ?, updated_at = ? WHERE client_id = ?",
                                       {std::int64_t{active}, now_ms, std::string(client_id)}));
  if (n == 0) return not_found(bj::object{{"client_id", "unknown client"}});
  return {};
}

Result<Client> update_client(store::Conn& c, std::string_view client_id, const ClientUpdate& update,
                             std::int64_t now_ms) {
  json::FieldErrors errors;
  if (update.scopes) {
    if (update.scopes->empty()) errors.add("scopes", Reason::scope_needed);
    for (const auto& sc : *update.scopes)
      if (!is_known_scope(sc)) errors.add("scopes", unknown_scope(sc));
  }
  SIKA_TRY(errors.status());
  SIKA_ASSIGN_OR_RETURN(auto found, find_client(c, client_id));
  if (!found) return not_found(bj::object{{"client_id", "unknown client"}});
  if (update.strict_client_credentials && *update.strict_client_credentials != found->strict_client_credentials)
    SIKA_TRY(c.exec("UPDATE oauth_clients SET strict_client_credentials = ?, updated_at = ? WHERE id = ?",
                    {std::int64_t{*update.strict_client_credentials}, now_ms, found->id}));
  if (update.scopes && join_list(*update.scopes) != join_list(found->scopes))
    SIKA_TRY(c.exec("UPDATE oauth_clients SET scopes = ?, updated_at = ? WHERE id = ?",
                    {join_list(*update.scopes), now_ms, found->id}));
  SIKA_ASSIGN_OR_RETURN(found, find_client(c, client_id));
  if (!found) return internal_error("client vanished after update");
  return std::move(*found);
}

Result<std::optional<Client>> find_client(store::Conn& c, std::string_view client_id) {
  return store::read_one(c, "SELECT " + std::string(kClientColumns) + " WHERE c.client_id = ?",
                         {std::string(client_id)}, client_from_row);
}

Result<std::vector<Client>> list_clients(store::Conn& c) {
  return store::read_all(c, "SELECT " + std::string(kClientColumns) + " ORDER BY c.id", {}, client_from_row);
}

// ---------------------------------------------------------------------------------------------
// users

Result<User> insert_user(store::Conn& c, const UserSpec& spec, std::string_view password_hash, std::int64_t now_ms) {
  std::string email = normalize_email(spec.email);
  auto rows = c.query(
      "INSERT INTO identity_users (subject, email, phone, name, password_hash, user_tier, countries, admin, "
      "merchant_id, active, failed_logins, locked_until, created_at, updated_at) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 0, 0, ?, ?) RETURNING id",
      {uuid_v4(), email, spec.phone.empty() ? store::Value(nullptr) : store::Value(spec.phone), spec.name,
       std::string(password_hash), spec.user_tier, join_list(spec.countries), std::int64_t{spec.admin},
       store::opt(spec.merchant_id), now_ms, now_ms});
  if (!rows) {
    if (rows.error().is(ErrorKind::conflict)) return conflict(bj::object{{"email", "already registered"}});
    return rows.take_error();
  }
  SIKA_ASSIGN_OR_RETURN(auto u, find_user_by_email(c, email));
  if (!u) return internal_error("user vanished after insert");
  return std::move(*u);
}

Result<User> create_user(store::Db& db, const UserSpec& spec, std::int64_t now_ms) {
  SIKA_TRY(validate_user(spec));
  std::string hash = crypto::password_hash(spec.password);
  std::optional<User> out;
  SIKA_TRY(db.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto u, insert_user(c, spec, hash, now_ms));
    out = std::move(u);
    return {};
  }));
  return std::move(*out);
}

Status set_user_password(store::Db& db, std::string_view email, std::string_view password, std::int64_t now_ms) {
  if (password.size() < 10 || password.size() > 256)
    return empty_data(bj::object{{"password", "must be 10 to 256 characters"}});
  std::string hash = crypto::password_hash(password);
  std::string e = normalize_email(email);
  return db.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto n, c.exec("UPDATE identity_users SET password_hash = ?, failed_logins = 0, "
                                         "locked_until = 0, updated_at = ? WHERE email = ?",
                                         {hash, now_ms, e}));
    if (n == 0) return not_found(bj::object{{"email", "unknown user"}});
    return {};
  });
}

Result<std::optional<User>> find_user_by_email(store::Conn& c, std::string_view email) {
  return store::read_one(c, "SELECT " + std::string(kUserColumns) + " WHERE u.email = ?", {normalize_email(email)},
                         user_from_row);
}

Result<std::optional<User>> find_user_by_id(store::Conn& c, std::int64_t id) {
  return store::read_one(c, "SELECT " + std::string(kUserColumns) + " WHERE u.id = ?", {id}, user_from_row);
}

Result<std::optional<User>> find_user_by_subject(store::Conn& c, std::string_view subject) {
  return store::read_one(c, "SELECT " + std::string(kUserColumns) + " WHERE u.subject = ?", {std::string(subject)},
                         user_from_row);
}

Result<std::vector<User>> list_users(store::Conn& c) {
  return store::read_all(c, "SELECT " + std::string(kUserColumns) + " ORDER BY u.id", {}, user_from_row);
}

// ---------------------------------------------------------------------------------------------
// authorization codes

Status insert_code(store::Conn& c, const AuthorizationCode& a) {
  SIKA_TRY(
      c.exec("INSERT INTO oauth_codes (code_hash, client_id, user_id, redirect_uri, redirect_uri_given, scope, "
             "nonce, code_challenge, auth_time, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
             {a.code_hash, a.client_id, a.user_id, a.redirect_uri, std::int64_t{a.redirect_uri_given}, a.scope,
              text_or_null(a.nonce), text_or_null(a.code_challenge), a.auth_time, a.expires_at, a.created_at}));
  return {};
}

Result<std::optional<AuthorizationCode>> find_code(store::Conn& c, std::string_view code_hash) {
  return store::read_one(c, "SELECT " + std::string(kCodeColumns) + " WHERE code_hash = ?", {std::string(code_hash)},
                         code_from_row);
}

Status burn_code(store::Conn& c, std::int64_t id, std::int64_t now_ms) {
  SIKA_TRY(c.exec("UPDATE oauth_codes SET used_at = ? WHERE id = ? AND used_at IS NULL", {now_ms, id}));
  return {};
}

Result<bool> redeem_code(store::Conn& c, std::int64_t id, std::int64_t now_ms, std::string_view family_id,
                         std::string_view access_jti, std::int64_t access_expires_at) {
  SIKA_ASSIGN_OR_RETURN(auto marked,
                        c.exec("UPDATE oauth_codes SET used_at = ?, family_id = ?, access_jti = ?, "
                               "access_expires_at = ? WHERE id = ? AND used_at IS NULL",
                               {now_ms, text_or_null(family_id), std::string(access_jti), access_expires_at, id}));
  return marked == 1;
}

// ---------------------------------------------------------------------------------------------
// refresh tokens

Status insert_refresh_token(store::Conn& c, const RefreshToken& t) {
  SIKA_TRY(
      c.exec("INSERT INTO oauth_refresh_tokens (token_hash, family_id, client_id, user_id, scope, nonce, "
             "auth_time, status, access_jti, access_expires_at, expires_at, created_at) "
             "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (token_hash) DO NOTHING",
             {t.token_hash, t.family_id, t.client_id, t.user_id != 0 ? store::Value(t.user_id) : store::Value(nullptr),
              t.scope, text_or_null(t.nonce), t.auth_time, t.status, text_or_null(t.access_jti), t.access_expires_at,
              t.expires_at, t.created_at}));
  return {};
}

Result<std::optional<RefreshToken>> find_refresh_token(store::Conn& c, std::string_view token_hash) {
  return store::read_one(c, "SELECT " + std::string(kRefreshColumns) + " WHERE r.token_hash = ?",
                         {std::string(token_hash)}, refresh_from_row);
}

Result<bool> rotate_refresh_token(store::Conn& c, std::int64_t id, std::int64_t now_ms, std::int64_t grace_ms) {
  // An active token rotates; a rotated one is used again only within the grace period.
  SIKA_ASSIGN_OR_RETURN(bool rotated,
                        store::transition(c, kRefreshStatus, RefreshStatus::active, RefreshStatus::rotated,
                                          {"rotated_at = COALESCE(rotated_at, ?)", {now_ms}, "id = ?", {id}}));
  if (rotated) return true;
  return store::transition(
      c, kRefreshStatus, RefreshStatus::rotated, RefreshStatus::rotated,
      {"rotated_at = COALESCE(rotated_at, ?)", {now_ms}, "id = ? AND rotated_at >= ?", {id, now_ms - grace_ms}});
}

Status revoke_family(store::Conn& c, std::string_view family_id, std::int64_t t,
                     std::vector<std::pair<std::string, std::int64_t>>* revoked) {
  if (revoked) {
    SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT access_jti, access_expires_at FROM oauth_refresh_tokens "
                                             "WHERE family_id = ? AND access_jti IS NOT NULL AND access_expires_at > ?",
                                             {std::string(family_id), t}));
    for (const auto& r : rows) revoked->emplace_back(r.str(0), r.i64(1));
  }
  SIKA_TRY(
      c.exec("INSERT INTO oauth_revoked_tokens (jti, client_id, expires_at, revoked_at) "
             "SELECT access_jti, client_id, access_expires_at, ? FROM oauth_refresh_tokens "
             "WHERE family_id = ? AND access_jti IS NOT NULL AND access_expires_at > ? "
             "ON CONFLICT (jti) DO NOTHING",
             {t, std::string(family_id), t}));
  SIKA_TRY(store::transition_all(c, kRefreshStatus, {RefreshStatus::active, RefreshStatus::rotated},
                                 RefreshStatus::revoked,
                                 {"revoked_at = ?", {t}, "family_id = ?", {std::string(family_id)}}));
  return {};
}

// ---------------------------------------------------------------------------------------------
// access-token denylist

Status revoke_access_token(store::Conn& c, std::string_view jti, std::string_view client_id, std::int64_t expires_at,
                           std::int64_t now_ms) {
  SIKA_TRY(
      c.exec("INSERT INTO oauth_revoked_tokens (jti, client_id, expires_at, revoked_at) "
             "VALUES (?, ?, ?, ?) ON CONFLICT (jti) DO NOTHING",
             {std::string(jti), std::string(client_id), expires_at, now_ms}));
  return {};
}

Result<bool> access_token_revoked(store::Conn& c, std::string_view jti, std::int64_t merchant_id,
                                  std::int64_t grants_version) {
  if (merchant_id == 0) {
    SIKA_ASSIGN_OR_RETURN(auto row,
                          c.query_one("SELECT 1 FROM oauth_revoked_tokens WHERE jti = ?", {std::string(jti)}));
    return row.has_value();
  }
  // One round trip for both: the denylist, and the merchant's grants having moved since.
  SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT 1 FROM oauth_revoked_tokens WHERE jti = ? UNION ALL "
                                              "SELECT 1 FROM merchants WHERE id = ? AND grants_version <> ?",
                                              {std::string(jti), merchant_id, grants_version}));
  return row.has_value();
}

namespace {
// `held` without the countries of `removed`, then those of `added` it lacks.
std::vector<std::string> regrant(std::vector<std::string> held, const std::vector<std::string>& removed,
                                 const std::vector<std::string>& added) {
  std::erase_if(held, [&](const std::string& ct) { return contains(removed, ct); });
  for (const auto& ct : added)
    if (!contains(held, ct)) held.push_back(ct);
  return held;
}
}  // namespace

Result<merchant::Merchant> set_merchant_grants(store::Conn& c, std::int64_t merchant_id,
                                               const std::vector<std::string>& countries, std::int64_t tier,
                                               std::int64_t now_ms) {
  SIKA_ASSIGN_OR_RETURN(auto before, merchant::find_by_id(c, merchant_id));
  if (!before) return not_found(bj::object{{"merchant", "not found"}});
  // Saving the same values again changes nothing, so its tokens keep working.
  if (before->countries == countries && before->tier == tier) return *before;
  SIKA_TRY(merchant::set_grants(c, merchant_id, countries, tier));
  std::vector<std::string> removed, added;
  for (const auto& ct : before->countries)
    if (!contains(countries, ct)) removed.push_back(ct);
  for (const auto& ct : countries)
    if (!contains(before->countries, ct)) added.push_back(ct);
  SIKA_ASSIGN_OR_RETURN(auto clients,
                        c.query("SELECT id, countries FROM oauth_clients WHERE merchant_id = ?", {merchant_id}));
  for (const auto& r : clients)
    SIKA_TRY(c.exec("UPDATE oauth_clients SET countries = ?, user_tier = ?, updated_at = ? WHERE id = ?",
                    {join_list(regrant(split_list(r.str(1)), removed, added)), tier, now_ms, r.i64(0)}));
  SIKA_ASSIGN_OR_RETURN(auto users,
                        c.query("SELECT id, countries FROM identity_users WHERE merchant_id = ?", {merchant_id}));
  for (const auto& r : users)
    SIKA_TRY(c.exec("UPDATE identity_users SET countries = ?, user_tier = ?, updated_at = ? WHERE id = ?",
                    {join_list(regrant(split_list(r.str(1)), removed, added)), tier, now_ms, r.i64(0)}));
  return *before;
}

Status purge_expired_tokens(store::Conn& c, std::int64_t t) {
  SIKA_TRY(c.exec("DELETE FROM oauth_codes WHERE expires_at < ?", {t - 86400000LL}));
  SIKA_TRY(c.exec("DELETE FROM oauth_refresh_tokens WHERE expires_at < ?", {t}));
  SIKA_TRY(c.exec("DELETE FROM oauth_revoked_tokens WHERE expires_at < ?", {t}));
  return {};
}

}  // namespace sika::identity
