// The tables of moves of billing's entities, walked pair by pair on both backends
// (scripts/with-postgres.sh build/tests/billing/billing_state_machines_test).
#include <gtest/gtest.h>

#include "billing/model.hpp"
#include "support/state_machine_walk.hpp"
#include "support/test_db.hpp"

namespace sika::billing {
namespace {

using BillingStateMachines = testing::DbTest;

TEST_P(BillingStateMachines, SubscriptionsMoveOnlyAlongTheirTable) {
  testing::walk_every_move(*db_, kSubscriptionStatus);
}

TEST_P(BillingStateMachines, SubscriptionPaymentsMoveOnlyAlongTheirTable) {
  testing::walk_every_move(*db_, kPaymentStatus);
}

TEST_P(BillingStateMachines, MandatesMoveOnlyAlongTheirTable) { testing::walk_every_move(*db_, kMandateStatus); }

TEST(BillingStateMachine, EveryStatusTextParsesBack) {
  for (std::size_t i = 0; i < kPaymentStatus.size(); ++i)
    EXPECT_EQ(kPaymentStatus.parse(kPaymentStatus.names[i]), static_cast<PayStatus>(i));
  EXPECT_FALSE(kPaymentStatus.parse("paid"));
  EXPECT_EQ(kSubscriptionStatus.parse("SUSPENDED"), SubStatus::suspended);
}

INSTANTIATE_TEST_SUITE_P(Backends, BillingStateMachines, ::testing::Values("sqlite", "postgres"));

}  // namespace
}  // namespace sika::billing
