// The table of moves of wallets's entity with a status, walked pair by pair on both backends
// (scripts/with-postgres.sh build/tests/wallets/wallets_state_machine_test).
#include <gtest/gtest.h>

#include "support/state_machine_walk.hpp"
#include "support/test_db.hpp"
#include "wallets/model.hpp"

namespace sika::wallets {
namespace {

using WalletLinksStateMachine = testing::DbTest;

TEST_P(WalletLinksStateMachine, MovesOnlyAlongItsTable) { testing::walk_every_move(*db_, kLinkStatus); }

INSTANTIATE_TEST_SUITE_P(Backends, WalletLinksStateMachine, ::testing::Values("sqlite", "postgres"));

}  // namespace
}  // namespace sika::wallets
