// The tables of moves of webhooks's entities with a status, walked pair by pair on both backends
// (scripts/with-postgres.sh build/tests/webhooks/webhooks_state_machine_test).
#include <gtest/gtest.h>

#include "support/state_machine_walk.hpp"
#include "support/test_db.hpp"
#include "webhooks/model.hpp"

namespace sika::webhooks {
namespace {

using WebhooksStateMachine = testing::DbTest;

TEST_P(WebhooksStateMachine, DeliveriesMoveOnlyAlongTheirTable) { testing::walk_every_move(*db_, kDeliveryStatus); }

INSTANTIATE_TEST_SUITE_P(Backends, WebhooksStateMachine, ::testing::Values("sqlite", "postgres"));

}  // namespace
}  // namespace sika::webhooks
