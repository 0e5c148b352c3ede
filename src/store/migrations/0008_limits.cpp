#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Shared rate-limit windows (limits::Limiter): one row per bucket, counted by one upsert.
// expires_at is when the window ends; a row is evictable once both it and blocked_until have
// passed. It replaces identity_throttle, whose windows were only ever a minute long.
extern const Migration k0008Limits{8, "limits", R"SQL(
CREATE TABLE rate_limits (
  bucket TEXT PRIMARY KEY,
  window_start BIGINT NOT NULL,
  hits BIGINT NOT NULL,
  blocked_until BIGINT NOT NULL DEFAULT 0,
  expires_at BIGINT NOT NULL
);
CREATE INDEX rate_limits_expiry ON rate_limits(expires_at);
DROP TABLE identity_throttle
)SQL"};

}  // namespace sika::store::migrations
