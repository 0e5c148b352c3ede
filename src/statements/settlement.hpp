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
#include "store/state_machine.hpp"

namespace sika::statements::settlement {

inline constexpr std::string_view kPaidJournal = "SETTLEMENT_PAID";  // settlement account -> paid out
inline constexpr std::string_view kPaidEvent = "settlement.paid";
// A mobile-money batch handed to its payout: settlement account -> available, in the unit that
// creates the payout (whose PAYOUT_RESERVE takes it at once).
inline constexpr std::string_view kHandoverJournal = "SETTLEMENT_PAYOUT";
// A batch whose payout could not be created: settlement account -> available.
inline constexpr std::string_view kReversalJournal = "SETTLEMENT_REVERSAL";

// A batch's statuses and their moves (store/state_machine.hpp), made only by store::transition:
//   PENDING -> PAID    settlement.paid (mark_paid by hand or the bank file, paid_by_payout)
//   PENDING -> FAILED  no event (fail_batch: its payout failed or could not be created)
//   PAID and FAILED are final.
enum class BatchStatus { pending, paid, failed };
inline constexpr store::StateMachine<BatchStatus, 3, 2> kBatchStatus{
    "stl_batches",
    {"PENDING", "PAID", "FAILED"},
    {{{BatchStatus::pending, BatchStatus::paid, kPaidEvent}, {BatchStatus::pending, BatchStatus::failed, ""}}}};

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
  int weekday = 1;                // WEEKLY: the day it settles, 1 Monday .. 7 Sunday
};

// True when `iban` (upper case, no spaces) has a country, check digits that pass ISO 7064
// mod 97-10 and 15 to 34 letters and digits.
bool iban_valid(std::string_view iban);
// True when `bic` is 8 or 11 characters: 4 letters (bank), 2 letters (country), 2 letters or
// digits (location), optionally 3 letters or digits (branch).
bool bic_valid(std::string_view bic);
// Checks a merchant's settings as its owner gives them (destination, provider and msisdn or iban,
// bic and holder, schedule and weekday, minimum) and normalizes them in place (IBAN and BIC upper
// case without spaces, the number's digits, the other destination's fields emptied): 400
// empty_data naming every field in error.
Status check_settings(Settings& s);
// The period a DAILY or WEEKLY schedule settles at `now` for a merchant `offset_minutes` east of
// UTC: DAILY the day that ended (`D2026-03-01`), WEEKLY the latest of its weekday on or before
// today (`W2026-03-02`). nullopt for ON_REQUEST.
std::optional<std::string> due_period(const Settings& s, std::int64_t now, int offset_minutes);

struct Batch {
  std::int64_t id = 0;
  std::string reference;  // ST-...
  std::int64_t merchant_id = 0;
  std::string environment, currency, period;
  std::int64_t account_id = 0, after_entry_id = 0, last_entry_id = 0;
  std::string destination;
  std::int64_t gross = 0, fees = 0, net = 0;  // of the movements it covers; net: the amount paid out
  std::string status;                         // PENDING | PAID | FAILED
  std::int64_t created_at = 0;
  std::optional<std::int64_t> paid_at;
  std::optional<std::string> payout_reference;  // MOBILE_MONEY: the payout paying it
  std::optional<std::int64_t> failed_at;
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

// Sets the reserve of a merchant's settings in a currency, in the caller's write unit; false when
// it has no settings in that currency.
Result<bool> set_reserve(store::Conn& c, std::int64_t merchant_id, std::string_view env, std::string_view currency,
                         std::int64_t reserve, std::int64_t now);

// In the caller's write unit (the payout's creating unit): a PENDING mobile-money batch without
// a payout records `payout_reference` (a conditional UPDATE) and its money goes back from the
// settlement account to the available account (SETTLEMENT_PAYOUT) for the payout to reserve. 409
// settlement_conflict when the batch is not such a one (paid, failed, or given a payout already).
Status hand_to_payout(store::Conn& c, const Batch& b, const std::string& payout_reference, std::int64_t now,
                      payments::ledger::Learned& learned);
// In the caller's write unit: the PENDING batch paid by its payout, which COMPLETED, becomes PAID
// (conditional UPDATE) and `settlement.paid` is appended; no journal (the payout's PAYOUT journal
// took the money). False when it was not PENDING.
Result<bool> paid_by_payout(store::Conn& c, const std::string& reference, std::int64_t now);
// In the caller's write unit: a PENDING batch becomes FAILED (conditional UPDATE). With
// `reverse` (its payout was never created) a SETTLEMENT_REVERSAL journal puts its money back on
// the available account; otherwise the failed payout's PAYOUT_RELEASE did. False when it was not
// PENDING.
Result<bool> fail_batch(store::Conn& c, const std::string& reference, bool reverse, std::int64_t now,
                        payments::ledger::Learned& learned);

// A merchant's batches in an environment, newest first.
Result<std::vector<Batch>> list_batches(store::Conn& c, std::int64_t merchant_id, std::string_view env, int limit);
// The PENDING BANK batches of an environment with where each goes, oldest first.
struct BankTransfer;
Result<std::vector<BankTransfer>> pending_bank_transfers(store::Conn& c, std::string_view env);
// A PENDING mobile-money batch and the status of its payout ("" when it has none).
struct OpenPayout {
  Batch batch;
  std::string payout_status;
};
// The PENDING mobile-money batches whose payout ended, or that have none and were made before
// `made_before` (their payout is to be created again), oldest first.
Result<std::vector<OpenPayout>> open_payouts(store::Conn& c, std::int64_t made_before, int limit);

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
