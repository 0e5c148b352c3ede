#pragma once
#include "store/migrations.hpp"

namespace sika::store::migrations {
// One per component, in version order. Add a new file and a line in migrations.cpp.
extern const Migration k0001Foundation;
extern const Migration k0002Identity;
extern const Migration k0003Catalog;
extern const Migration k0004Payments;
extern const Migration k0005Webhooks;
extern const Migration k0006PaymentsLists;
extern const Migration k0007IdentityClientCredentials;
extern const Migration k0008Limits;
extern const Migration k0009Notify;
extern const Migration k0010Otp;
extern const Migration k0011Jobs;
extern const Migration k0012PaymentLinks;
extern const Migration k0013Checkout;
extern const Migration k0014Wallets;
extern const Migration k0015Billing;
extern const Migration k0016Dashboard;
extern const Migration k0017JobsDeadIndex;
extern const Migration k0018CatalogOtpHelper;
extern const Migration k0019FxCheckout;
extern const Migration k0020WalletDistributions;
extern const Migration k0021BillingMandates;
extern const Migration k0022DashboardReads;
extern const Migration k0023MerchantGrants;
extern const Migration k0024BillingDunning;
extern const Migration k0025PaymentsRecovery;
extern const Migration k0026NotifyEnvironment;
extern const Migration k0027MerchantTimeZone;
extern const Migration k0028CheckoutSignedOnly;
extern const Migration k0029OperatorHealth;
extern const Migration k0030OperatorState;
extern const Migration k0031Refunds;
extern const Migration k0032Statements;
extern const Migration k0033Reconciliation;
extern const Migration k0035SettlementPayouts;
extern const Migration k0037ReconLiveAndLease;
extern const Migration k0038RefundConversion;
}  // namespace sika::store::migrations
