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

namespace sika::payments::tables {

// Inserts a new transaction (status, counters and times as in `tx`), unless one with the
// same (merchant, environment, transaction_uuid) exists. Returns the new id, or nullopt when
// that key is already taken (nothing written).
Result<std::optional<std::int64_t>> insert_transaction(store::Conn& conn, const Transaction& tx);

// The transaction of a transaction_reference; 404 naming transaction_reference when none.
Result<Transaction> load(store::Conn& conn, std::string_view reference);
// The transaction an operator knows by `provider_reference`, or nullopt.
Result<std::optional<Transaction>> find_by_provider_reference(store::Conn& conn, std::string_view provider_reference);
// The transaction of an idempotency key, or nullopt.
Result<std::optional<Transaction>> find_by_uuid(store::Conn& conn, std::int64_t merchant_id,
                                                std::string_view environment, std::string_view transaction_uuid);

// Writes `next`'s status, split_status, failure_reason, operator_reference, submitted_at,
// expires_at and updated_at iff the row is still in `from`. Returns true iff it was.
Result<bool> update_status(store::Conn& conn, const Transaction& next, TxStatus from);
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
Result<std::vector<std::string>> due_for_expiry(store::Conn& conn, std::int64_t at, int limit);

}  // namespace sika::payments::tables
