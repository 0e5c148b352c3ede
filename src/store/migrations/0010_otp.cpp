#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// One-time-code challenges. One row per (purpose, subject): issuing again for the same pair is
// a resend (new code, same attempt count) while the challenge is live, and a fresh challenge
// once the old one was used or has expired. code_hash is keyed by the server pepper and bound to
// challenge_id; the code itself is never stored.
extern const Migration k0010Otp{10, "otp", R"SQL(
CREATE TABLE otp_challenges (
  id {{pk}},
  challenge_id TEXT NOT NULL UNIQUE,
  purpose TEXT NOT NULL,
  subject TEXT NOT NULL,
  channel TEXT NOT NULL,
  destination TEXT NOT NULL,
  code_hash TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL,
  sends INTEGER NOT NULL,
  last_sent_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  used_at BIGINT,
  created_at BIGINT NOT NULL,
  UNIQUE (purpose, subject)
);
CREATE INDEX otp_challenges_expiry ON otp_challenges(expires_at)
)SQL"};

}  // namespace sika::store::migrations
