#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// OAuth clients, users, signing keys, authorization codes, refresh tokens, the access-token
// denylist, login sessions, consents and shared throttling counters.
// Lists (redirect URIs, grants, scopes, countries) are stored space-separated.
extern const Migration k0002Identity{2, "identity", R"SQL(
CREATE TABLE oauth_clients (
  id {{pk}},
  client_id TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  confidential INTEGER NOT NULL,
  secret_hash TEXT,
  redirect_uris TEXT NOT NULL DEFAULT '',
  grant_types TEXT NOT NULL,
  scopes TEXT NOT NULL,
  merchant_id BIGINT REFERENCES merchants(id),
  environment TEXT NOT NULL DEFAULT 'sandbox',
  countries TEXT NOT NULL DEFAULT '',
  user_tier INTEGER NOT NULL DEFAULT 1,
  admin INTEGER NOT NULL DEFAULT 0,
  id_token_alg TEXT NOT NULL DEFAULT 'RS256',
  active INTEGER NOT NULL DEFAULT 1,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE TABLE identity_users (
  id {{pk}},
  subject TEXT NOT NULL UNIQUE,
  email TEXT NOT NULL UNIQUE,
  phone TEXT,
  name TEXT NOT NULL DEFAULT '',
  password_hash TEXT NOT NULL,
  user_tier INTEGER NOT NULL DEFAULT 1,
  countries TEXT NOT NULL DEFAULT '',
  admin INTEGER NOT NULL DEFAULT 0,
  merchant_id BIGINT REFERENCES merchants(id),
  active INTEGER NOT NULL DEFAULT 1,
  failed_logins INTEGER NOT NULL DEFAULT 0,
  locked_until BIGINT NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE TABLE identity_keys (
  id {{pk}},
  kid TEXT NOT NULL UNIQUE,
  alg TEXT NOT NULL,
  private_key TEXT NOT NULL,
  status TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  retired_at BIGINT,
  publish_until BIGINT
);
CREATE TABLE oauth_codes (
  id {{pk}},
  code_hash TEXT NOT NULL UNIQUE,
  client_id TEXT NOT NULL,
  user_id BIGINT NOT NULL REFERENCES identity_users(id),
  redirect_uri TEXT NOT NULL,
  redirect_uri_given INTEGER NOT NULL,
  scope TEXT NOT NULL,
  nonce TEXT,
  code_challenge TEXT,
  auth_time BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  used_at BIGINT,
  family_id TEXT,
  access_jti TEXT,
  access_expires_at BIGINT,
  created_at BIGINT NOT NULL
);
CREATE INDEX oauth_codes_expiry ON oauth_codes(expires_at);
CREATE TABLE oauth_refresh_tokens (
  id {{pk}},
  token_hash TEXT NOT NULL UNIQUE,
  family_id TEXT NOT NULL,
  client_id TEXT NOT NULL,
  user_id BIGINT REFERENCES identity_users(id),
  scope TEXT NOT NULL,
  nonce TEXT,
  auth_time BIGINT,
  status TEXT NOT NULL,
  access_jti TEXT,
  access_expires_at BIGINT,
  expires_at BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  rotated_at BIGINT,
  revoked_at BIGINT
);
CREATE INDEX oauth_refresh_family ON oauth_refresh_tokens(family_id);
CREATE INDEX oauth_refresh_expiry ON oauth_refresh_tokens(expires_at);
CREATE TABLE oauth_revoked_tokens (
  jti TEXT PRIMARY KEY,
  client_id TEXT NOT NULL,
  expires_at BIGINT NOT NULL,
  revoked_at BIGINT NOT NULL
);
CREATE INDEX oauth_revoked_expiry ON oauth_revoked_tokens(expires_at);
CREATE TABLE identity_sessions (
  id {{pk}},
  session_hash TEXT NOT NULL UNIQUE,
  user_id BIGINT NOT NULL REFERENCES identity_users(id),
  auth_time BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE INDEX identity_sessions_expiry ON identity_sessions(expires_at);
CREATE TABLE oauth_consents (
  user_id BIGINT NOT NULL REFERENCES identity_users(id),
  client_id TEXT NOT NULL,
  scope TEXT NOT NULL,
  granted_at BIGINT NOT NULL,
  PRIMARY KEY (user_id, client_id)
);
CREATE TABLE identity_throttle (
  bucket TEXT PRIMARY KEY,
  window_start BIGINT NOT NULL,
  hits BIGINT NOT NULL
)
)SQL"};

}  // namespace sika::store::migrations
