#pragma once
// Settlement (docs/settlement.md): a merchant's available balance, less the reserve an operator
// set for refunds, moved to its settlement account and paid out, one batch per merchant,
// environment, currency and period whatever the number of nodes (the UNIQUE key of stl_batches).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "payments/ledger.hpp"
#include "store/db.hpp"

namespace sika::statements::settlement {

inline constexpr std::string_view kPaidJournal = "SETTLEMENT_PAID";  // settlement account -> paid out
inline constexpr std::string_view kPaidEvent = "settlement.paid";

// Where a merchant's money goes and when.
struct Settings {
  std::int64_t merchant_id = 0;
  std::string environment, currency;
  std::string destination;        // MOBILE_MONEY | BANK
  std::string provider, msisdn;   // MOBILE_MONEY: the service and the number
  std::string iban, bic, holder;  // BANK
  std::string schedule;           // DAILY | WEEKLY | ON_REQUEST
  std::int64_t minimum = 0;       // no settlement below this
  std::int64_t reserve = 0;       // kept back for refunds (operators set it)
};

struct Batch {
  std::int64_t id = 0;
  std::string reference;  // ST-...
  std::int64_t merchant_id = 0;
  std::string environment, currency, period;
  std::int64_t account_id = 0, after_entry_id = 0, last_entry_id = 0;
  std::string destination;
  std::int64_t gross = 0, fees = 0, net = 0;  // of the movements it covers; net: the amount paid out
  std::string status;                         // PENDING | PAID
  std::int64_t created_at = 0;
  std::optional<std::int64_t> paid_at;
};

// The merchant's settlement account: what is settled and not yet confirmed paid.
payments::ledger::AccountKey settlement_account(std::int64_t merchant_id, std::string_view env,
                                                std::string_view currency);

// Stores a merchant's settings (replaces them), in the caller's write unit.
Status put_settings(store::Conn& c, const Settings& s, std::int64_t now);
Result<std::optional<Settings>> find_settings(store::Conn& c, std::int64_t merchant_id, std::string_view env,
                                              std::string_view currency);

// In the caller's write unit: the batch of (merchant, period) when this call made it. Takes the
// available balance less the reserve; below the minimum (or nothing to settle), or when the
// period's batch exists already (the UNIQUE key), it writes nothing and answers nullopt. The
// batch row and its SETTLEMENT journal (available -> settlement account) commit together.
Result<std::optional<Batch>> settle(store::Conn& c, const Settings& s, const std::string& period, std::int64_t now,
                                    payments::ledger::Learned& learned);

// In the caller's write unit: a PENDING batch becomes PAID (a conditional UPDATE), its money
// leaves the settlement account (SETTLEMENT_PAID journal) and `settlement.paid` is appended to
// the outbox. False when it is not PENDING (already paid, or unknown).
Result<bool> mark_paid(store::Conn& c, const std::string& reference, std::int64_t now,
                       payments::ledger::Learned& learned);

// The paid batches of an account that cover entries up to `last_entry_id`, oldest first.
Result<std::vector<Batch>> paid_batches(store::Conn& c, std::int64_t account_id, std::int64_t last_entry_id);
Result<std::optional<Batch>> find_batch(store::Conn& c, const std::string& reference);

// One credit transfer of a bank batch file: a batch and where it goes.
struct BankTransfer {
  Batch batch;
  std::string iban, bic, holder;
};
// The paying account of a batch file (the platform's own bank account).
struct Debtor {
  std::string name, iban, bic;
};
// An ISO 20022 pain.001.001.03 customer credit transfer initiation: one payment information block
// per currency, one CdtTrfTxInf per transfer (EndToEndId = the batch's reference, the amount in
// the currency's decimals), text escaped. `message_id` names the file; `now` dates it.
std::string pain001(const Debtor& debtor, const std::vector<BankTransfer>& transfers, const std::string& message_id,
                    std::int64_t now);

}  // namespace sika::statements::settlement
