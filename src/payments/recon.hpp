#pragma once
// Operator reconciliation (docs/reconciliation.md): an operator's statement imported as a run,
// matched in bulk with Sika's payments at that connector by the operator's reference (then by
// ours when the operator echoes it), and the result per reference kept as an item:
//   matched              the same currency, status and amount on both sides (resolved at once)
//   missing_in_sika      a line whose reference no payment of the connector has
//   missing_at_operator  a payment of the period whose money moved in Sika's books (COMPLETED) or
//                        that waits for the operator (PENDING), absent from every statement, older
//                        than the grace period; younger: `timing` (may appear in a later statement)
//   mismatch_currency, mismatch_status, mismatch_amount
// A status mismatch of a PENDING payment is asked about at once by the recovery engine (its
// next_check_at moved to now); the operator's answer settles it through the normal conditional
// transition, and the item resolves itself when the statuses agree. Nothing moves money from the
// file alone: every other open item waits for an operator's decision, accept (an audited
// RECON_ADJUSTMENT journal, operator clearing against platform:recon adjustment, in the same write
// unit as the item's conditional state change) or under investigation.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "payments/recon_format.hpp"
#include "store/db.hpp"
#include "store/state_machine.hpp"

namespace sika::payments::recon {

inline constexpr std::string_view kJournalKind = "RECON_ADJUSTMENT";

// A run's statuses and their one move (store/state_machine.hpp), made only by store::transition:
//   importing -> done  no event (the import's last unit, under its lease)
// A run is created `importing`; an import that fails or was interrupted deletes its run instead.
enum class RunStatus { importing, done };
inline constexpr store::StateMachine<RunStatus, 2, 1> kRunStatus{
    "recon_runs", {"importing", "done"}, {{{RunStatus::importing, RunStatus::done, ""}}}};
// The kinds and states, in the order pages list them.
inline constexpr std::string_view kKinds[] = {"matched",         "missing_in_sika",   "missing_at_operator", "timing",
                                              "mismatch_amount", "mismatch_currency", "mismatch_status"};
inline constexpr std::string_view kStates[] = {"open", "under_investigation", "adjusted", "resolved"};

struct Options {
  std::int64_t grace_ms = 48LL * 3600 * 1000;  // a payment younger than this may be in a later statement
  int batch = 5000;                            // lines (or payments) per write unit
  // An import holds its run by a lease renewed by every batch's write unit; a run `importing`
  // whose lease ended was interrupted (its process died): the next import of its file cleans it up.
  std::int64_t lease_ms = 60'000;
};

struct ImportRequest {
  std::string connector;  // the connector instance (pay_transactions.connector)
  std::string format;     // normalised | mtn_momo | orange_money | wave | airtel_money
  std::string file_name;
  std::string text;
  std::string service_code;  // the clearing account of lines Sika does not know; "" = the connector's latest
  std::string actor;         // who imports ("sika admin", a dashboard user's e-mail)
};

struct Closing {
  std::string connector, day, currency;
  std::optional<std::int64_t> run_id;
  std::int64_t sika_clearing = 0;     // Sika's operator clearing at the day's end (negative: the operator holds it)
  std::int64_t operator_balance = 0;  // the operator's closing balance
  std::int64_t open_items = 0;        // what the open items explain (operator minus Sika, held)
  std::int64_t open_count = 0;
  std::int64_t operator_fees = 0;  // the operator's fees on the connector's statement lines up to the day's end
  std::int64_t unexplained = 0;    // operator_balance - (-sika_clearing) - open_items + operator_fees
  std::string entered_by;
  std::int64_t computed_at = 0;
};

struct Summary {
  std::int64_t run_id = 0;
  bool replayed = false;  // the same file was imported before: this is that run
  std::string connector, environment, format, file_name, file_hash, status, imported_by;
  std::string service_code;
  std::int64_t period_start = 0, period_end = 0, lines = 0, created_at = 0;
  std::optional<std::int64_t> finished_at;
  std::map<std::string, std::int64_t> kinds;   // items by kind
  std::map<std::string, std::int64_t> states;  // items by state
  std::optional<Closing> closing;
};

struct Item {
  std::int64_t id = 0, run_id = 0;
  std::optional<std::int64_t> transaction_id, journal_id, occurred_at, decided_at;
  std::string reference, transaction_reference, kind, state;
  std::string sika_currency, sika_status, operator_currency, operator_status;
  std::optional<std::int64_t> sika_amount, operator_amount;
  std::int64_t sika_held = 0, operator_held = 0;
  std::string decided_by, decision_reason;
  // A status mismatch of a payment final here: the operator's live answer through its status API
  // (succeeded, failed, pending; "" until it answered) and when it was asked.
  std::string operator_live_status;
  std::optional<std::int64_t> live_checked_at;
};

enum class Decision { accept, investigate };

struct ItemFilter {
  std::string kind, state;               // "" = any
  std::optional<std::int64_t> after_id;  // keyset
  int limit = 50;
};

class Reconciler {
 public:
  Reconciler(store::Db& db, std::function<std::int64_t()> clock, Options options = {});

  // Imports a statement as a run and matches it; the same file of the same connector again
  // answers its run (replayed). 400 empty_data naming the refused line; 409 while that file is
  // being imported (its importer's lease alive). A run left `importing` by an interrupted import
  // (its lease ended) is removed in one unit and the file imported afresh.
  Result<Summary> import(const ImportRequest& req);
  // A run's summary after resolving what has settled since (recovery's answers, later statements,
  // the grace period passing); 404 when there is no such run.
  Result<Summary> report(std::int64_t run_id);
  // The newest runs first; their counts are those of the items still to decide (open or under
  // investigation) only.
  Result<std::vector<Summary>> runs(int limit, std::optional<std::int64_t> before_id = std::nullopt);
  Result<std::vector<Item>> items(std::int64_t run_id, const ItemFilter& filter);
  Result<Item> item(std::int64_t item_id);
  // Decides an open item: accept posts the adjustment journal that makes Sika's clearing say
  // what the operator's statement says, investigate only marks it. `audit` runs in the same write
  // unit. Accept takes an open item or one under investigation; investigate an open one. 409
  // conflict when the item was decided meanwhile (or is matched or resolved), when it waits for
  // the operator's answer (a PENDING payment's status), or on accepting a timing item (it may
  // still be in a later statement); 404 when there is no such item.
  Result<Item> decide(std::int64_t item_id, Decision decision, std::string_view actor, std::string_view reason,
                      const std::function<Status(store::Conn&)>& audit = {});
  // The closing of a connector's day (YYYY-MM-DD, UTC) in a currency against the operator's
  // closing balance; stored (a second closing of the day replaces the first).
  Result<Closing> close_day(std::string_view connector, std::string_view day, std::string_view currency,
                            std::int64_t operator_balance, std::string_view actor,
                            std::optional<std::int64_t> run_id = std::nullopt,
                            const std::function<Status(store::Conn&)>& audit = {});
  Result<std::vector<Closing>> closings(std::string_view connector, int limit);

 private:
  // `owner` holds the run's lease: every write unit renews it (heartbeat) and is abandoned (409)
  // when the run is no longer this importer's.
  Status heartbeat(store::Conn& c, std::int64_t run_id, const std::string& owner);
  // Removes a run left `importing` by an import whose lease ended, in one write unit (claimed by a
  // conditional UPDATE on the expired lease: 409 when it is alive or another import took it).
  Status clean_up_interrupted(std::int64_t run_id);
  Status insert_lines(std::int64_t run_id, const std::string& owner, const Statement& s);
  Status match_lines(std::int64_t run_id, const std::string& owner, const std::string& connector);
  Status find_missing(std::int64_t run_id, const std::string& owner, const std::string& connector, std::int64_t from,
                      std::int64_t to);
  Status refresh(const std::string& connector, std::optional<std::int64_t> run_id);
  Result<Summary> summary(std::int64_t run_id);

  store::Db& db_;
  std::function<std::int64_t()> clock_;
  Options options_;
};

// The UTC day (YYYY-MM-DD) of an epoch-ms time, and the epoch ms of a day's start; nullopt when malformed.
std::string day_of(std::int64_t epoch_ms);
std::optional<std::int64_t> day_start(std::string_view day);

}  // namespace sika::payments::recon
