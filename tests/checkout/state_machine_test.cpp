// The table of moves of checkout's entity with a status, walked pair by pair on both backends
// (scripts/with-postgres.sh build/tests/checkout/checkout_state_machine_test).
#include <gtest/gtest.h>

#include "checkout/model.hpp"
#include "support/state_machine_walk.hpp"
#include "support/test_db.hpp"

namespace sika::checkout {
namespace {

using CheckoutSessionsStateMachine = testing::DbTest;

TEST_P(CheckoutSessionsStateMachine, MovesOnlyAlongItsTable) { testing::walk_every_move(*db_, kSessionStatus); }

INSTANTIATE_TEST_SUITE_P(Backends, CheckoutSessionsStateMachine, ::testing::Values("sqlite", "postgres"));

}  // namespace
}  // namespace sika::checkout
