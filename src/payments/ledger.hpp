#pragma once
// The double-entry ledger. Every movement of money is a journal of two or more entries whose
// debits equal their credits; entries are only ever inserted. Each account is one
// (owner, environment, currency, kind); its balance is credits minus debits (credit-normal),
// updated by the same write unit that inserts the entries.
//
// Owners and kinds:
//   merchant:<id>        available | pending   what the platform owes a merchant; pending holds
//                                               payouts in flight (reserved, not spendable)
//   customer:<msisdn>    available | pending   a customer's platform wallet (WALLET channel);
//                                               pending holds its withdrawals in flight
//   platform:fees        revenue               fees earned
//   operator:<service>   clearing              what an operator owes us (negative: it holds our
//                                               money; payouts through it bring it back up)
//   platform:funding     funding               money entering customer wallets from outside
//   platform:recon       adjustment            operator reconciliation's accepted differences
//                                               (docs/reconciliation.md; may go negative)
//   platform:fx          position              the platform's currency position: a converted
//                                               collection credits it in the customer's currency
//                                               and debits it in the merchant's (may go negative)
// Accounts of kind available, pending and revenue can never go below zero.
#include <boost/json/object.hpp>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "core/thread_annotations.hpp"
#include "store/db.hpp"

namespace sika::payments::ledger {

struct AccountKey {
  std::string owner;
  std::string environment;
  std::string currency;
  std::string kind;

  // Returns true iff the account is an operator clearing or funding account.
  bool may_go_negative() const {
    return kind == "clearing" || kind == "funding" || kind == "position" || kind == "adjustment";
  }
  // "owner/environment/currency/kind", unique per account.
  std::string text() const { return owner + "/" + environment + "/" + currency + "/" + kind; }
};

AccountKey merchant_available(std::int64_t merchant_id, std::string_view env, std::string_view currency);
AccountKey merchant_pending(std::int64_t merchant_id, std::string_view env, std::string_view currency);
AccountKey customer_wallet(std::string_view msisdn, std::string_view env, std::string_view currency);
// A wallet's withdrawals in flight (reserved, not spendable), like merchant_pending.
AccountKey customer_pending(std::string_view msisdn, std::string_view env, std::string_view currency);
AccountKey fee_revenue(std::string_view env, std::string_view currency);
AccountKey operator_clearing(std::string_view service_code, std::string_view env, std::string_view currency);
AccountKey funding(std::string_view env, std::string_view currency);
AccountKey fx_position(std::string_view env, std::string_view currency);

struct Leg {
  AccountKey account;
  std::int64_t debit = 0;
  std::int64_t credit = 0;
};

// Journal kinds; a transaction posts each kind at most once (a unique constraint guards it).
inline constexpr std::string_view kCollection = "COLLECTION";         // completed collection
inline constexpr std::string_view kPayoutReserve = "PAYOUT_RESERVE";  // available -> pending
inline constexpr std::string_view kPayout = "PAYOUT";                 // pending -> paid out + fee
inline constexpr std::string_view kPayoutRelease = "PAYOUT_RELEASE";  // pending -> available
inline constexpr std::string_view kWalletFunding = "WALLET_FUNDING";  // funding -> customer wallet
// A converted collection's second journal, in the merchant's currency: FX position -> merchant(s).
inline constexpr std::string_view kFxSettlement = "FX_SETTLEMENT";
// A refund's journals (docs/refunds.md), each posted at most once per refund.
inline constexpr std::string_view kRefundReserve = "REFUND_RESERVE";  // merchant available -> pending
inline constexpr std::string_view kRefund = "REFUND";                 // merchant pending -> the customer
inline constexpr std::string_view kRefundRelease = "REFUND_RELEASE";  // merchant pending -> available
// A converted collection's refund, in the collection's currency: FX position -> the customer.
inline constexpr std::string_view kRefundFx = "REFUND_FX";

struct Posting {
  std::optional<std::int64_t> transaction_id;
  std::optional<std::int64_t> refund_id;  // a refund's journal (transaction_id then unset)
  std::string kind;
  std::string environment;
  std::string currency;
  std::string memo;
  std::vector<Leg> legs;
};

// Account ids by AccountKey::text(). Accounts are never deleted, so an id learned from a
// committed write unit stays right forever.
class AccountCache {
 public:
  std::optional<std::int64_t> find(const std::string& key) const;
  void remember(const std::vector<std::pair<std::string, std::int64_t>>& learned);

 private:
  mutable sika::Mutex mu_;
  std::unordered_map<std::string, std::int64_t> ids_ GUARDED_BY(mu_);
};

// Ids learned inside one write unit; merged into the cache only after the unit committed.
using Learned = std::vector<std::pair<std::string, std::int64_t>>;

// Posts a balanced journal inside the caller's write unit: refuses an unbalanced or
// malformed posting (500: a bug), creates missing accounts, applies each balance change,
// inserts the journal and its entries. A debit that would take a non-negative account below
// zero fails with 409 insufficient_funds (details name the account); the caller's unit must
// then be abandoned (return the error) so nothing it wrote remains.
// `journal_id`, when given, receives the new journal's id.
Status post(store::Conn& conn, const Posting& posting, std::int64_t now, const AccountCache* cache, Learned& learned,
            std::int64_t* journal_id = nullptr);

// The balance of an account, or nullopt when it does not exist yet.
Result<std::optional<std::int64_t>> find_balance(store::Conn& conn, const AccountKey& key);
// The balance of an account (0 when it does not exist yet).
Result<std::int64_t> balance(store::Conn& conn, const AccountKey& key);

struct Violation {
  std::string rule;     // e.g. "journal_unbalanced"
  std::string subject;  // what it is about
  std::string detail;
};

struct Report {
  std::int64_t accounts = 0;
  std::int64_t journals = 0;
  std::int64_t entries = 0;
  // Per environment and currency: total debits and credits.
  struct Total {
    std::string environment, currency;
    std::int64_t debits = 0, credits = 0;
  };
  std::vector<Total> totals;
  std::vector<Violation> violations;
  bool ok() const { return violations.empty(); }
  boost::json::object to_json() const;
};

// Verifies, in one consistent snapshot: every entry is a positive debit or credit; every
// journal balances and stays in its currency; debits equal credits per environment and
// currency; every account balance equals the sum of its entries; no non-negative account is
// below zero; every transaction posted exactly the journals its status implies, each
// moving its required_total; every refund posted exactly the journals its status implies, each
// moving its amount; and each collection's refunded_amount and refunding_amount are the sums of its
// COMPLETED and in-flight refunds, never beyond its amount, REFUNDED exactly when refunded in full.
Result<Report> check(store::Db& db);

}  // namespace sika::payments::ledger
