// The tables of moves of identity's entities with a status, walked pair by pair on both backends
// (scripts/with-postgres.sh build/tests/identity/identity_state_machine_test).
#include <gtest/gtest.h>

#include "identity/model.hpp"
#include "support/state_machine_walk.hpp"
#include "support/test_db.hpp"

namespace sika::identity {
namespace {

using IdentityStateMachine = testing::DbTest;

TEST_P(IdentityStateMachine, RefreshTokensMoveOnlyAlongTheirTable) { testing::walk_every_move(*db_, kRefreshStatus); }

TEST_P(IdentityStateMachine, SigningKeysMoveOnlyAlongTheirTable) { testing::walk_every_move(*db_, kKeyStatus); }

INSTANTIATE_TEST_SUITE_P(Backends, IdentityStateMachine, ::testing::Values("sqlite", "postgres"));

}  // namespace
}  // namespace sika::identity
