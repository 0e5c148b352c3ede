#include "store/migrations.hpp"

#include "store/migrations/all.hpp"

namespace sika::store {

const std::vector<Migration>& all_migrations() {
  static const std::vector<Migration> kAll = {
      migrations::k0001Foundation,
      migrations::k0002Identity,
      migrations::k0003Catalog,
      migrations::k0004Payments,
      migrations::k0005Webhooks,
      migrations::k0006PaymentsLists,
      migrations::k0007IdentityClientCredentials,
      migrations::k0008Limits,
      migrations::k0009Notify,
      migrations::k0010Otp,
      migrations::k0011Jobs,
      migrations::k0012PaymentLinks,
      migrations::k0013Checkout,
      migrations::k0014Wallets,
      migrations::k0015Billing,
      migrations::k0016Dashboard,
      migrations::k0017JobsDeadIndex,
      migrations::k0018CatalogOtpHelper,
      migrations::k0019FxCheckout,
      migrations::k0020WalletDistributions,
      migrations::k0021BillingMandates,
      migrations::k0022DashboardReads,
      migrations::k0023MerchantGrants,
      migrations::k0024BillingDunning,
      migrations::k0025PaymentsRecovery,
      migrations::k0026NotifyEnvironment,
      migrations::k0027MerchantTimeZone,
      migrations::k0028CheckoutSignedOnly,
      migrations::k0029OperatorHealth,
      migrations::k0030OperatorState,
      migrations::k0031Refunds,
      migrations::k0032Statements,
      migrations::k0033Reconciliation,
      migrations::k0035SettlementPayouts,
      migrations::k0037ReconLiveAndLease,
      migrations::k0038RefundConversion,
  };
  return kAll;
}

}  // namespace sika::store
