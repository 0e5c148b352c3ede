#pragma once
// Settings of the identity service (app/ maps the `identity.*` configuration keys onto them).
#include <cstdint>
#include <functional>
#include <string>

namespace sika::identity {

struct Options {
  std::string issuer;    // {auth_url}, e.g. "https://auth.example.com/auth" (no trailing slash)
  std::string audience;  // {base_url}: the gateway, `aud` of access tokens
  std::string pepper;    // the server's secret key
  int access_token_ttl = 3600;
  int id_token_ttl = 3600;
  int refresh_token_ttl = 30 * 86400;  // sliding: each rotation gets a fresh lifetime
  int refresh_grace_seconds = 10;
  int code_ttl = 60;
  int session_ttl = 8 * 3600;  // login session cookie
  bool signup_enabled = false;
  // Sign-in throttling (docs/identity.md, "Throttling and lockout"), counted in the database on
  // all nodes, keyed by the e-mail typed whether or not an account has it.
  int max_failed_logins = 5;                // attempts per (e-mail, address) and per device cookie per window
  int lockout_seconds = 900;                // that window, and how long the pair is then throttled
  int login_failures_per_account = 100;     // attempts per e-mail per hour from all addresses (no device cookie)
  int device_cookie_seconds = 180 * 86400;  // lifetime of the device cookie set at a successful sign-in
  std::string default_alg = "ES256";        // access tokens
  // Revocation propagation bound for cached verified tokens. 0: the denylist is checked on
  // every authenticate (a revoked token is refused at once on every node). N > 0: the check
  // runs at most every N seconds per token and process; revocations made by this process
  // still apply to it at once, other nodes see them within N seconds.
  int token_cache_seconds = 0;
  int token_cache_entries = 20000;  // verified-token cache size (per process)
  int client_cache_seconds = 5;     // client record cache (rotation / disable bound)
  int key_reload_seconds = 30;      // how often a node re-reads the key table
  int login_attempts_per_ip = 20;   // per minute, shared through the database
  // Failed client authentication (see docs/identity.md, "Throttling and lockout"): counted in the
  // database per address and per client_id, per minute, on all nodes.
  int failed_client_auth_per_ip = 30;      // beyond: the address gets 429, right secret or not
  int failed_client_auth_per_client = 20;  // beyond: that client's failures get 429; its right secret still works
  int token_rate_per_client = 0;           // tokens per second per client and process; 0 = unlimited
  int cleanup_interval_seconds = 60;
  std::function<std::int64_t()> clock;  // epoch ms; defaults to now_ms()
};

}  // namespace sika::identity
