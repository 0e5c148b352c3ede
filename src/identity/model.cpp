#include "identity/model.hpp"

#include <boost/json.hpp>
#include <boost/url/parse.hpp>

#include <algorithm>
#include <cctype>

#include "core/crypto.hpp"
#include "core/json.hpp"
#include "core/random.hpp"

namespace sika::identity {

namespace bj = boost::json;

bool is_known_scope(std::string_view scope) {
  for (auto s : kApiScopes)
    if (s == scope) return true;
  for (auto s : kOidcScopes)
    if (s == scope) return true;
  return false;
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (text[pos] == ' ' || text[pos] == ',') {
      ++pos;
      continue;
    }
    std::size_t end = text.find_first_of(" ,", pos);
    if (end == std::string_view::npos) end = text.size();
    std::string item(text.substr(pos, end - pos));
    if (!contains(out, item)) out.push_back(std::move(item));
    pos = end;
  }
  return out;
}

std::string join_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out.push_back(' ');
    out += s;
  }
  return out;
}

bool contains(const std::vector<std::string>& items, std::string_view item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

std::string normalize_email(std::string_view email) {
  std::string out;
  std::size_t b = email.find_first_not_of(" \t");
  std::size_t e = email.find_last_not_of(" \t");
  if (b == std::string_view::npos) return out;
  for (char c : email.substr(b, e - b + 1)) out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

namespace {

bool is_loopback_host(std::string_view host) {
  return host == "127.0.0.1" || host == "[::1]" || host == "localhost" || host.starts_with("127.");
}

// Returns "" when acceptable, else the problem.
std::string check_redirect_uri(std::string_view uri, bool confidential, std::string_view environment) {
  auto u = boost::urls::parse_absolute_uri(uri);
  if (!u) return "must be an absolute URI";
  if (u->has_fragment()) return "must not contain a fragment";
  std::string scheme(u->scheme());
  if (scheme == "https") return u->encoded_host().empty() ? "must have a host" : "";
  if (scheme == "http") {
    if (u->encoded_host().empty()) return "must have a host";
    if (is_loopback_host(u->encoded_host()) || environment == "sandbox") return "";
    return "must use https (http is allowed for loopback hosts and sandbox clients)";
  }
  // Private-use URI schemes of native apps (RFC 8252 §7.1): reverse domain names.
  if (!confidential && scheme.find('.') != std::string::npos) return "";
  return "must use https";
}

bool valid_alpha3(std::string_view c) {
  return c.size() == 3 && std::all_of(c.begin(), c.end(), [](char ch) { return ch >= 'A' && ch <= 'Z'; });
}

constexpr std::string_view kClientColumns =
    "c.id, c.client_id, c.name, c.confidential, c.secret_hash, c.redirect_uris, c.grant_types, c.scopes, "
    "c.merchant_id, m.matricule, c.environment, c.countries, c.user_tier, c.admin, c.id_token_alg, c.active, "
    "c.created_at, c.updated_at, COALESCE(m.active, 1) FROM oauth_clients c LEFT JOIN merchants m ON m.id = c.merchant_id";

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
  return c;
}

constexpr std::string_view kUserColumns =
    "u.id, u.subject, u.email, u.phone, u.name, u.password_hash, u.user_tier, u.countries, u.admin, u.merchant_id, "
    "m.matricule, u.active, u.failed_logins, u.locked_until, u.created_at, u.updated_at "
    "FROM identity_users u LEFT JOIN merchants m ON m.id = u.merchant_id";

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
  return u;
}

std::string new_client_secret() { return "cs_" + random_token(32); }

}  // namespace

bool Client::redirect_uri_registered(std::string_view uri) const {
  for (const auto& r : redirect_uris)
    if (r == uri) return true;
  // RFC 8252 §7.3: loopback redirect URIs of native apps may use any port.
  auto given = boost::urls::parse_absolute_uri(uri);
  if (!given || given->scheme() != "http" || !is_loopback_host(given->encoded_host()) || given->has_fragment())
    return false;
  for (const auto& r : redirect_uris) {
    auto reg = boost::urls::parse_absolute_uri(r);
    if (!reg || reg->scheme() != "http" || !is_loopback_host(reg->encoded_host())) continue;
    if (reg->encoded_host() == given->encoded_host() && reg->encoded_path() == given->encoded_path() &&
        reg->encoded_query() == given->encoded_query() && reg->has_query() == given->has_query())
      return true;
  }
  return false;
}

Result<CreatedClient> create_client(store::Conn& c, std::string_view pepper, const ClientSpec& spec,
                                    std::int64_t now_ms) {
  json::FieldErrors errors;
  ClientSpec s = spec;
  if (s.client_id.empty()) s.client_id = "sika_" + hex_encode(random_bytes(12));
  if (s.client_id.size() > 100 ||
      !std::all_of(s.client_id.begin(), s.client_id.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.';
      }))
    errors.add("client_id", "must be 1-100 letters, digits, '-', '_' or '.'");
  if (s.name.empty()) s.name = s.client_id;
  if (s.name.size() > 200) errors.add("name", "must be at most 200 characters");
  if (s.environment != "sandbox" && s.environment != "prod") errors.add("environment", "must be sandbox or prod");
  if (s.grant_types.empty()) {
    if (s.confidential)
      s.grant_types = {"client_credentials"};
    else
      s.grant_types = {"authorization_code", "refresh_token"};
    if (s.confidential && !s.redirect_uris.empty()) {
      s.grant_types.push_back("authorization_code");
      s.grant_types.push_back("refresh_token");
    }
  }
  for (const auto& g : s.grant_types) {
    if (g != "client_credentials" && g != "authorization_code" && g != "refresh_token")
      errors.add("grant_types", "allowed values: client_credentials authorization_code refresh_token");
    if (g == "client_credentials" && !s.confidential)
      errors.add("grant_types", "a public client cannot use client_credentials");
  }
  if (s.scopes.empty()) s.scopes.assign(std::begin(kApiScopes), std::end(kApiScopes));
  for (const auto& sc : s.scopes)
    if (!is_known_scope(sc)) errors.add("scopes", "unknown scope " + sc);
  bool code_flow = contains(s.grant_types, "authorization_code");
  if (code_flow && s.redirect_uris.empty()) errors.add("redirect_uris", "required for authorization_code");
  for (const auto& u : s.redirect_uris) {
    std::string problem = check_redirect_uri(u, s.confidential, s.environment);
    if (!problem.empty()) errors.add("redirect_uris", u + " " + problem);
  }
  for (const auto& ct : s.countries)
    if (!valid_alpha3(ct)) errors.add("countries", "must be ISO alpha-3 codes in upper case");
  if (s.user_tier < 0 || s.user_tier > 100) errors.add("user_tier", "must be between 0 and 100");
  if (s.id_token_alg != "RS256" && s.id_token_alg != "ES256") errors.add("id_token_alg", "must be RS256 or ES256");
  if (s.secret && !s.confidential) errors.add("secret", "a public client has no secret");
  if (s.secret && s.secret->size() < 43) errors.add("secret", "must be at least 43 characters");
  if (s.merchant_id) {
    SIKA_ASSIGN_OR_RETURN(auto m, c.query_one("SELECT id FROM merchants WHERE id = ?", {*s.merchant_id}));
    if (!m) errors.add("merchant_id", "unknown merchant");
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
      "merchant_id, environment, countries, user_tier, admin, id_token_alg, active, created_at, updated_at) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?) RETURNING id",
      {s.client_id, s.name, std::int64_t{s.confidential}, store::opt(hash), join_list(s.redirect_uris),
       join_list(s.grant_types), join_list(s.scopes), store::opt(s.merchant_id), s.environment,
       join_list(s.countries), s.user_tier, std::int64_t{s.admin}, s.id_token_alg, now_ms, now_ms});
  if (!rows) {
    if (rows.error().is(ErrorKind::conflict)) return conflict(bj::object{{"client_id", "already exists"}});
    return rows.take_error();
  }
  SIKA_ASSIGN_OR_RETURN(auto found, find_client(c, s.client_id));
  if (!found) return internal_error("client vanished after insert");
  out.client = std::move(*found);
  return out;
}

Status set_client_secret(store::Conn& c, std::string_view pepper, std::string_view client_id,
                         std::string_view secret, std::int64_t now_ms) {
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

Result<std::optional<Client>> find_client(store::Conn& c, std::string_view client_id) {
  SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT " + std::string(kClientColumns) + " WHERE c.client_id = ?",
                                              {std::string(client_id)}));
  if (!row) return std::optional<Client>{};
  return std::optional<Client>{client_from_row(*row)};
}

Result<std::vector<Client>> list_clients(store::Conn& c) {
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT " + std::string(kClientColumns) + " ORDER BY c.id"));
  std::vector<Client> out;
  for (const auto& r : rows) out.push_back(client_from_row(r));
  return out;
}

Status validate_user(const UserSpec& spec) {
  json::FieldErrors errors;
  std::string email = normalize_email(spec.email);
  auto at = email.find('@');
  if (email.size() > 254 || at == std::string::npos || at == 0 || at + 1 >= email.size() ||
      email.find('.', at) == std::string::npos || email.find_first_of(" \t\r\n<>\"'") != std::string::npos)
    errors.add("email", "must be an e-mail address");
  if (spec.password.size() < 10) errors.add("password", "must be at least 10 characters");
  if (spec.password.size() > 256) errors.add("password", "must be at most 256 characters");
  if (!spec.phone.empty() && (spec.phone.size() > 20 || spec.phone.find_first_not_of("+0123456789") != std::string::npos))
    errors.add("phone", "must be digits with an optional leading +");
  if (spec.name.size() > 200) errors.add("name", "must be at most 200 characters");
  if (spec.user_tier < 0 || spec.user_tier > 100) errors.add("user_tier", "must be between 0 and 100");
  for (const auto& ct : spec.countries)
    if (!valid_alpha3(ct)) errors.add("countries", "must be ISO alpha-3 codes in upper case");
  return errors.status();
}

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
  SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT " + std::string(kUserColumns) + " WHERE u.email = ?",
                                              {normalize_email(email)}));
  if (!row) return std::optional<User>{};
  return std::optional<User>{user_from_row(*row)};
}

Result<std::optional<User>> find_user_by_id(store::Conn& c, std::int64_t id) {
  SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT " + std::string(kUserColumns) + " WHERE u.id = ?", {id}));
  if (!row) return std::optional<User>{};
  return std::optional<User>{user_from_row(*row)};
}

Result<std::optional<User>> find_user_by_subject(store::Conn& c, std::string_view subject) {
  SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT " + std::string(kUserColumns) + " WHERE u.subject = ?",
                                              {std::string(subject)}));
  if (!row) return std::optional<User>{};
  return std::optional<User>{user_from_row(*row)};
}

Result<std::vector<User>> list_users(store::Conn& c) {
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT " + std::string(kUserColumns) + " ORDER BY u.id"));
  std::vector<User> out;
  for (const auto& r : rows) out.push_back(user_from_row(r));
  return out;
}

}  // namespace sika::identity
