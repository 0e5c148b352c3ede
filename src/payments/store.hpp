#pragma once
// Every SQL statement that writes or loads payments rows (pay_transactions, pay_splits,
// pay_transitions, pay_callbacks), run inside the caller's read or write unit. The same SQL
// on both backends. Read models for lists and histories are in queries.hpp.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "payments/model.hpp"
#include "store/db.hpp"
#include "store/idempotency.hpp"

namespace sika::payments::tables {

// Inserts a new transaction (status, counters and times as in `tx`), unless one with the
// same (merchant, environment, transaction_uuid) exists. Returns the new id, or nullopt when
// that key is already taken (nothing written).
Result<std::optional<std::int64_t>> insert_transaction(store::Conn& conn, const Transaction& tx);
// Inserts `tx` under its idempotency key (merchant, environment, transaction_uuid): the new
// row's id; or, when the key is taken by the same request (same request_hash), the stored
// transaction; a 409 naming transaction_uuid and the stored transaction_reference when it is
// taken by another request. One INSERT on the normal path (store/idempotency.hpp).
Result<store::Keyed<Transaction>> insert_or_replay(store::Conn& conn, const Transaction& tx);

// The transaction of a transaction_reference; 404 naming transaction_reference when none.
Result<Transaction> load(store::Conn& conn, std::string_view reference);
// The transaction an operator knows by `provider_reference`, or nullopt.
Result<std::optional<Transaction>> find_by_provider_reference(store::Conn& conn, std::string_view provider_reference);
// The transaction of an idempotency key, or nullopt.
Result<std::optional<Transaction>> find_by_uuid(store::Conn& conn, std::int64_t merchant_id,
                                                std::string_view environment, std::string_view transaction_uuid);

// Appends a status history row.
Status insert_transition(store::Conn& conn, std::int64_t transaction_id, TxStatus from, TxStatus to,
                         std::string_view source, const std::optional<std::string>& reason, std::int64_t at);
// Counts one more wrong one-time code on a transaction that is still INITIATED; returns the
// new count, or nullopt when it is no longer INITIATED (nothing written).
// Takes one of the transaction's `max_attempts` one-time-code attempts, in one conditional
// UPDATE, before the code is compared: returns the attempts used so far including this one, or
// nothing when the collection is no longer INITIATED or has no attempt left. However many
// requests race, at most max_attempts codes are ever compared.
Result<std::optional<std::int64_t>> take_otp_attempt(store::Conn& conn, std::int64_t transaction_id,
                                                     std::int64_t max_attempts);

// A merchant named by a split line.
struct Beneficiary {
  std::int64_t id = 0;
  bool active = false;
};
// The merchants of these matricules that exist, by matricule.
Result<std::map<std::string, Beneficiary, std::less<>>> find_beneficiaries(store::Conn& conn,
                                                                           const std::vector<SplitLine>& lines);
// Inserts the split lines of a transaction; `merchant_ids` in the lines' order.
Status insert_splits(store::Conn& conn, std::int64_t transaction_id, const std::vector<SplitLine>& lines,
                     const std::vector<std::int64_t>& merchant_ids);

// A stored split line, as settlement needs it.
struct StoredSplit {
  std::int64_t id = 0;
  std::int64_t merchant_id = 0;
  std::int64_t rate_ppm = 0;
};
// The split lines of a transaction in distribution order.
Result<std::vector<StoredSplit>> split_lines(store::Conn& conn, std::int64_t transaction_id);
// Records a settled line's share.
Status set_split_amount(store::Conn& conn, std::int64_t split_id, std::int64_t amount);

// The conversion of a collection charged in another currency (pay_conversions), if any.
Status insert_conversion(store::Conn& conn, std::int64_t transaction_id, const Conversion& conversion);
Result<std::optional<Conversion>> find_conversion(store::Conn& conn, std::int64_t transaction_id);

// An operator callback as received, with what it did (docs/payments.md, "Callbacks").
struct CallbackRow {
  std::string connector;
  std::string provider_reference;
  std::optional<std::int64_t> transaction_id;
  std::string reported_status;  // SUCCESSFUL | FAILED | PENDING
  std::string reason;           // "" when none
  std::string outcome;
  std::string body;  // at most 8 KiB of it is stored
  std::int64_t received_at = 0;
};
Status insert_callback(store::Conn& conn, const CallbackRow& row);

// References of open (INITIATED or PENDING) transactions whose expires_at <= at, oldest first.
// `operator_ended`: connectors whose PENDING orders end by the operator's answer only (never by time).
Result<std::vector<std::string>> due_for_expiry(store::Conn& conn, std::int64_t at, int limit,
                                                const std::vector<std::string>& operator_ended = {});

// ---- recovery of pending payments (recovery.cpp) ----

// A PENDING transaction claimed for one question to its operator.
struct ClaimedCheck {
  Transaction tx;
  std::int64_t checks = 0;  // questions asked, this one included
};
// Claims up to `limit` PENDING transactions whose next_check_at <= at, oldest first, for `owner`
// until `lease_until`: one conditional UPDATE per row (still PENDING, still due) sets
// next_check_at = lease_until, check_owner = owner and counts the question. A claimed row is not
// due again before lease_until, so however many nodes claim, each row is held by one claim at a
// time. Run in a queue unit (store::queue_isolation): on PostgreSQL the pick skips rows another
// claim holds (FOR UPDATE SKIP LOCKED).
Result<std::vector<ClaimedCheck>> claim_checks(store::Conn& conn, std::int64_t at, std::int64_t lease_until,
                                               std::string_view owner, int limit);
// Keeps what an operator's acceptance left on a transaction (customer_url, operator_state).
Status keep_accepted(store::Conn& conn, std::int64_t transaction_id, std::string_view customer_url,
                     std::string_view operator_state);
// Makes a PENDING transaction's next question due at `at` (an unverified callback came), unless it
// is due already.
Status check_now(store::Conn& conn, std::int64_t transaction_id, std::int64_t at);
// Schedules the next question of a transaction `owner` still holds (still PENDING, claim not
// taken over) at `next_at` and releases the claim. Returns false, writing nothing, otherwise.
Result<bool> reschedule_check(store::Conn& conn, std::int64_t transaction_id, std::string_view owner,
                              std::int64_t next_at);

// One question to an operator and its answer (pay_status_checks).
struct StatusCheckRow {
  std::int64_t transaction_id = 0;
  std::string node;  // the claim's owner
  std::int64_t asked_at = 0;
  std::int64_t answered_at = 0;
  std::string outcome;  // succeeded | failed | pending | unknown
  std::optional<std::string> reason;
};
Status insert_status_check(store::Conn& conn, const StatusCheckRow& row);

// PENDING transactions waiting for recovery at `at` (asked at least once, or due), and the
// submission time of the oldest of them.
struct RecoveryBacklog {
  std::int64_t waiting = 0;
  std::optional<std::int64_t> oldest_since;
};
Result<RecoveryBacklog> recovery_backlog(store::Conn& conn, std::int64_t at);

// ---- payouts held while their operator is not OPERATIONAL (payout_queue.cpp) ----

// The pick of a queue of held payouts or refunds: the ids of `table`'s PENDING rows queued for one
// of `connectors` connectors (`?` each, then `?` for the limit), oldest first, read through `index`,
// the table's partial index of its queued rows (store::indexed_by), never through an index of every
// row; locked for the unit (store::skip_locked) when `lock`.
std::string queued_pick(const store::Conn& conn, std::string_view table, std::string_view index, std::size_t connectors,
                        bool lock);
// The queue claim of payouts and refunds held while their operator was not OPERATIONAL: picks up to
// `limit` PENDING rows of `table` queued for one of `connectors`, oldest first, and claims each
// (queued_at cleared, next_check_at = check_at) by a conditional UPDATE returning `columns`; a row
// sent or ended since the pick (queued_pick) is skipped.
Result<store::Rows> claim_queued(store::Conn& conn, std::string_view table, std::string_view index,
                                 std::string_view columns, const std::vector<std::string>& connectors,
                                 std::int64_t check_at, int limit);
// Inside the unit that reserved a new PROVIDER payout `tx`: queues it (queued_at = at, no
// recovery question) when `hold`, or when payouts of its connector are already queued (it goes
// behind them). Returns true when it was queued.
Result<bool> queue_payout(store::Conn& conn, const Transaction& tx, bool hold, std::int64_t at);
// Claims up to `limit` queued PENDING payouts of `connectors`, oldest first: one conditional
// UPDATE per row (still PENDING, still queued) clears queued_at and sets next_check_at = check_at
// (recovery asks about it from then on), so each is claimed, and sent, once whatever the number of
// nodes. Run in a queue unit (store::queue_isolation).
Result<std::vector<Transaction>> claim_queued_payouts(store::Conn& conn, const std::vector<std::string>& connectors,
                                                      std::int64_t check_at, int limit);

}  // namespace sika::payments::tables
