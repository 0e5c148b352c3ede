// Every entity with a status moves only along its table (store/state_machine.hpp): each table is
// walked pair by pair on both backends (scripts/with-postgres.sh build/tests/store/state_machines_test).
// Payments' transactions have their own exhaustive tests (tests/payments/transitions_test.cpp).
#include <gtest/gtest.h>

#include "billing/model.hpp"
#include "checkout/model.hpp"
#include "identity/model.hpp"
#include "links/model.hpp"
#include "support/state_machine_walk.hpp"
#include "support/test_db.hpp"
#include "wallets/model.hpp"
#include "webhooks/model.hpp"

namespace sika {
namespace {

using StateMachines = testing::DbTest;

TEST_P(StateMachines, SubscriptionsMoveOnlyAlongTheirTable) {
  testing::walk_every_move(*db_, billing::kSubscriptionStatus);
}
TEST_P(StateMachines, SubscriptionPaymentsMoveOnlyAlongTheirTable) {
  testing::walk_every_move(*db_, billing::kPaymentStatus);
}
TEST_P(StateMachines, MandatesMoveOnlyAlongTheirTable) { testing::walk_every_move(*db_, billing::kMandateStatus); }
TEST_P(StateMachines, PaymentLinksMoveOnlyAlongTheirTable) { testing::walk_every_move(*db_, links::kLinkStatus); }
TEST_P(StateMachines, CheckoutSessionsMoveOnlyAlongTheirTable) {
  testing::walk_every_move(*db_, checkout::kSessionStatus);
}
TEST_P(StateMachines, WalletLinksMoveOnlyAlongTheirTable) { testing::walk_every_move(*db_, wallets::kLinkStatus); }
TEST_P(StateMachines, WebhookDeliveriesMoveOnlyAlongTheirTable) {
  testing::walk_every_move(*db_, webhooks::kDeliveryStatus);
}
TEST_P(StateMachines, RefreshTokensMoveOnlyAlongTheirTable) {
  testing::walk_every_move(*db_, identity::kRefreshStatus);
}
TEST_P(StateMachines, SigningKeysMoveOnlyAlongTheirTable) { testing::walk_every_move(*db_, identity::kKeyStatus); }

INSTANTIATE_TEST_SUITE_P(Backends, StateMachines, ::testing::Values("sqlite", "postgres"));

TEST(StateMachineTexts, EveryStatusTextParsesBack) {
  for (std::size_t i = 0; i < billing::kPaymentStatus.size(); ++i)
    EXPECT_EQ(billing::kPaymentStatus.parse(billing::kPaymentStatus.names[i]), static_cast<billing::PayStatus>(i));
  EXPECT_FALSE(billing::kPaymentStatus.parse("paid"));
  EXPECT_EQ(billing::kSubscriptionStatus.parse("SUSPENDED"), billing::SubStatus::suspended);
}

}  // namespace
}  // namespace sika
