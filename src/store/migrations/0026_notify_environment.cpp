#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// The environment (sandbox, prod) a message of the outbox is about: GET /sandbox/messages shows
// sandbox merchants the sandbox's messages only. Rows written before it have none ('').
extern const Migration k0026NotifyEnvironment{26, "notify_environment", R"SQL(
ALTER TABLE notify_outbox ADD COLUMN environment TEXT NOT NULL DEFAULT '';
CREATE INDEX notify_outbox_environment ON notify_outbox(environment, recipient, id)
)SQL"};

}  // namespace sika::store::migrations
