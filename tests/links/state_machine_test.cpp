// The table of moves of links's entity with a status, walked pair by pair on both backends
// (scripts/with-postgres.sh build/tests/links/links_state_machine_test).
#include <gtest/gtest.h>

#include "links/model.hpp"
#include "support/state_machine_walk.hpp"
#include "support/test_db.hpp"

namespace sika::links {
namespace {

using PaymentLinksStateMachine = testing::DbTest;

TEST_P(PaymentLinksStateMachine, MovesOnlyAlongItsTable) { testing::walk_every_move(*db_, kLinkStatus); }

INSTANTIATE_TEST_SUITE_P(Backends, PaymentLinksStateMachine, ::testing::Values("sqlite", "postgres"));

}  // namespace
}  // namespace sika::links
