#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// The sandbox notifier's outbox: every SMS and e-mail the platform would have sent.
extern const Migration k0009Notify{9, "notify", R"SQL(
CREATE TABLE notify_outbox (
  id {{pk}},
  message_id TEXT NOT NULL UNIQUE,
  channel TEXT NOT NULL,
  recipient TEXT NOT NULL,
  subject TEXT NOT NULL DEFAULT '',
  body TEXT NOT NULL,
  tag TEXT NOT NULL DEFAULT '',
  created_at BIGINT NOT NULL
);
CREATE INDEX notify_outbox_recipient ON notify_outbox(recipient, id);
CREATE INDEX notify_outbox_created ON notify_outbox(created_at)
)SQL"};

}  // namespace sika::store::migrations
