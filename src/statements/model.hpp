#pragma once
// A merchant's statement: the movements of its `available` ledger account in one currency and
// environment over whole days of its time zone, each typed by the journal that posted it, with
// the opening and closing balances (docs/statements.md).
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "web/csv.hpp"
#include "web/message.hpp"

namespace sika::statements {

// The journal kinds that are not payments' own (payments/ledger.hpp lists those).
inline constexpr std::string_view kRefundReserveJournal = "REFUND_RESERVE";  // a refund accepted
inline constexpr std::string_view kRefundJournal = "REFUND";                 // a refund completed
inline constexpr std::string_view kRefundReleaseJournal = "REFUND_RELEASE";  // a refund failed: given back
inline constexpr std::string_view kSettlementJournal = "SETTLEMENT";         // a settlement paid out

inline constexpr int kMaxDays = 31;

enum class MovementType { collection, payout, refund, fee, split_share, settlement, adjustment };
std::string_view to_string(MovementType t);

// A statement request: the currency, the days [from, to] of the merchant's zone, the instants
// they cover [start_ms, end_ms), and how to answer.
struct Query {
  std::string currency;
  std::string from, to;  // YYYY-MM-DD
  std::int64_t start_ms = 0, end_ms = 0;
  bool csv = false;
  web::csv::Format format;
};

// Reads `currency`, `from`, `to`, `format` and `separator`/`bom` (CSV) of a query string; days
// start at 00:00 in a zone `offset_minutes` east of UTC. Refuses (400, every problem named by
// its parameter) a missing or malformed currency or date, `to` before `from`, more than 31 days,
// or another format or separator.
Result<Query> parse_query(const web::Request& req, int offset_minutes);

// One ledger entry on the account, with what its journal and transaction say about it.
struct EntryRow {
  std::int64_t id = 0;
  std::int64_t created_at = 0;
  std::int64_t debit = 0, credit = 0;
  std::string journal_kind;
  std::string memo;
  // The journal's transaction, when it has one.
  std::optional<std::string> reference, transaction_uuid, metadata, operator_reference, settlement_mode;
  std::int64_t tx_fee = 0;
  std::optional<std::string> refund_reference;  // the refund a REFUND_* journal belongs to (its refund_id)
  std::optional<std::int64_t> settled_at;       // the paid settlement batch that covers the entry
};

struct Movement {
  MovementType type = MovementType::adjustment;
  std::string reference;
  std::optional<std::string> merchant_reference, operator_reference;
  std::int64_t gross = 0, fee = 0, net = 0;  // net = gross - fee, signed as it moved the balance
  std::int64_t balance_after = 0;
  std::int64_t created_at = 0;
  std::optional<std::int64_t> settled_at;
};

// The type of a movement posted by a journal of `kind` (`split`: its transaction is a SPLIT).
MovementType type_of(std::string_view journal_kind, bool split);
// The movement of an entry, the account's balance being `balance_before` before it.
Movement movement_of(const EntryRow& row, std::int64_t balance_before);

boost::json::object to_json(const Movement& m);
// The CSV columns, in order, and one movement's row (CRLF-terminated).
std::string csv_header(const web::csv::Format& f);
std::string csv_row(const Movement& m, const web::csv::Format& f);

}  // namespace sika::statements
