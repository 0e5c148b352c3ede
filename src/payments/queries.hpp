#pragma once
// Read models of payments, shared by the gateway, the admin CLI and the dashboard: transaction
// lists with filters and keyset pagination, a transaction's timeline (status history, ledger
// entries, operator callbacks), balances. Each runs inside the caller's read unit.
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "payments/model.hpp"
#include "store/db.hpp"

namespace sika::payments::queries {

// A wallet search of this many digits or more is a whole international number (E.164 without '+').
inline constexpr std::size_t kWholeNumberDigits = 11;

// Which transactions to list. Empty strings and nullopt mean "any".
struct TransactionFilter {
  std::optional<std::int64_t> merchant_id;  // nullopt: every merchant (operators only)
  std::string environment;                  // sandbox | prod
  std::optional<TxStatus> status;
  std::string operation;                     // COLLECTION | DISBURSEMENT
  std::string channel;                       // PROVIDER | WALLET
  std::string provider;                      // service code
  std::optional<std::int64_t> created_from;  // epoch ms, inclusive
  std::optional<std::int64_t> created_to;    // epoch ms, exclusive
  // A transaction, invoice or provider reference (exact), or the customer's wallet number: with
  // kWholeNumberDigits digits or more, the whole international number (exact, by index); fewer
  // digits match the end of the number ("+237 6 90 00 00 01" and "0001" both match 237690000001).
  std::string search;
  std::optional<std::int64_t> before;  // keyset cursor: the `next` of the previous page
  int limit = 50;                      // 1..500
};

struct TransactionPage {
  std::vector<Transaction> items;    // newest first (descending id)
  std::optional<std::int64_t> next;  // pass as `before` for the following page; nullopt on the last
};

// One page of transactions matching `filter`. Pages never overlap or skip rows, even while new
// transactions are created (they have larger ids than every cursor).
Result<TransactionPage> list_transactions(store::Conn& conn, const TransactionFilter& filter);

struct StatusStep {
  std::string from, to, source;
  std::optional<std::string> reason;
  std::int64_t at = 0;
};
struct LedgerLine {
  std::int64_t journal_id = 0;
  std::string journal_kind;  // COLLECTION, PAYOUT_RESERVE, ...
  std::string memo;
  std::string owner, kind, currency;  // the account
  std::int64_t debit = 0, credit = 0;
  std::int64_t at = 0;
};
struct CallbackLine {
  std::string connector, reported_status, outcome;
  std::optional<std::string> reason;
  std::int64_t received_at = 0;
};
// A call to the operator about the transaction (pay_operator_calls, by provider_reference).
struct OperatorCallLine {
  std::string connector, operation, method, path, outcome;
  std::int64_t http_status = 0;
  std::optional<std::string> code, operator_reference;
  std::int64_t started_at = 0, latency_ms = 0;
};
// A status question recovery asked (pay_status_checks).
struct StatusCheckLine {
  std::string node, outcome;
  std::optional<std::string> reason;
  std::int64_t asked_at = 0, answered_at = 0;
};
struct Timeline {
  Transaction tx;
  std::vector<StatusStep> steps;        // in order
  std::vector<LedgerLine> entries;      // by journal, then entry
  std::vector<CallbackLine> callbacks;  // in arrival order
  std::vector<OperatorCallLine> calls;  // by start time (the first 200)
  std::vector<StatusCheckLine> checks;  // in order (the first 200)
};

// The history of a transaction; 404 naming transaction_reference when it does not exist.
Result<Timeline> timeline(store::Conn& conn, std::string_view reference);
// {record, transitions, entries, callbacks} with ISO 8601 times.
boost::json::object to_json(const Timeline& t);

// A ledger account and its balance; `matricule` set for merchant accounts.
struct AccountBalance {
  std::string owner, environment, currency, kind;
  std::int64_t balance = 0;
  std::optional<std::string> matricule;
};
// Accounts ordered by environment, currency, owner, kind. `owner` "" for every owner.
Result<std::vector<AccountBalance>> account_balances(store::Conn& conn, std::string_view owner,
                                                     std::string_view environment);
// The ledger owner of a merchant ("merchant:<id>"); 404 naming merchant when no merchant has
// this matricule.
Result<std::string> merchant_owner(store::Conn& conn, std::string_view matricule);

// A merchant's balances in one currency: available and pending (payouts in flight).
struct CurrencyBalance {
  std::string currency;
  std::int64_t available = 0, pending = 0;
};
// Ordered by currency; currencies without an account are absent.
Result<std::vector<CurrencyBalance>> merchant_balances(store::Conn& conn, std::int64_t merchant_id,
                                                       std::string_view environment);

// An operator callback that arrived after its transaction ended otherwise (to reconcile).
struct LateCallback {
  std::string transaction_reference, status, reported_status, connector;
  std::optional<std::string> reason;
  std::int64_t received_at = 0;
};
Result<std::vector<LateCallback>> late_callbacks(store::Conn& conn);

// One day of a merchant's collections in one currency (the dashboard's chart).
struct DailyVolume {
  std::int64_t day = 0;  // epoch ms of the day's start (UTC)
  std::string currency;
  std::int64_t completed_amount = 0;  // sum of COMPLETED amounts
  std::int64_t count = 0;             // collections created that day
  std::int64_t completed = 0;         // of which COMPLETED
  std::int64_t ended = 0;             // of which ended (COMPLETED, FAILED, EXPIRED, CANCELLED)
};
// Days in [from, to) that have collections, by day then currency.
Result<std::vector<DailyVolume>> daily_volume(store::Conn& conn, std::int64_t merchant_id, std::string_view environment,
                                              std::int64_t from, std::int64_t to);

}  // namespace sika::payments::queries
