#pragma once
// Operator statements (docs/reconciliation.md, "Formats"): Sika's normalised CSV and one export
// format per connector kind, each a row of one table (columns by header name, how amounts are
// written, the operator's statuses and types mapped to ours), read by one parser. Pure: no I/O.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace sika::payments::recon {

// One operator line, normalised: amounts in integer minor units of `currency`, `status`
// succeeded | failed | pending, `type` collection | payout | refund.
struct StatementLine {
  std::int64_t line_no = 0;  // 1-based line of the file
  std::string operator_reference;
  std::string our_reference;  // "" when the operator does not echo ours
  std::string type;
  std::int64_t amount = 0;
  std::string currency;
  std::string status;
  std::string operator_status;   // as the file wrote it
  std::int64_t occurred_at = 0;  // epoch ms
  std::int64_t fee = 0;
};

struct Statement {
  std::vector<StatementLine> lines;
  // From a `#closing_balance,<amount>,<currency>` line (amount written as the format writes amounts).
  std::optional<std::int64_t> closing_balance;
  std::string closing_currency;
  // From a `#period,<start>,<end>` line (ISO 8601); else the lines' first and last times.
  std::optional<std::int64_t> period_start, period_end;
};

// How amounts are written in a format.
enum class AmountStyle {
  major_decimal,  // "1500", "15.50": major units, parsed exactly with the currency's decimals
  minor_integer,  // "1550": minor units
};

// One export format, as a table row.
struct Format {
  std::string_view kind;  // normalised | mtn_momo | orange_money | wave | airtel_money
  // Header names of each field ("" when the format has no such column); the defaults are the
  // names most operators' status answers use, so a format names only where it differs.
  std::string_view operator_reference, our_reference;
  std::string_view type = "type";
  std::string_view amount = "amount";
  std::string_view currency = "currency";
  std::string_view status = "status";
  std::string_view timestamp = "date";
  std::string_view fee = "fee";
  std::string_view amount_minor;  // an alternative column of minor units ("" when none)
  AmountStyle style = AmountStyle::major_decimal;
  bool signed_amount = false;       // a negative amount is money out (its type is payout when there is no type column)
  bool undashed_uuid_ref = false;   // our reference is echoed as a UUID without its dashes (Airtel's transaction.id)
  std::string_view default_status;  // when the format has no status column
  std::vector<std::pair<std::string_view, std::string_view>> statuses;  // operator status -> ours
  std::vector<std::pair<std::string_view, std::string_view>> types;     // operator type -> ours
};

// The formats, normalised first.
const std::vector<Format>& formats();
// The format of a kind, or nullptr.
const Format* format_named(std::string_view kind);

// Parses a statement: the first line that is not a `#` directive is the header; fields are
// comma-separated, RFC 4180 quoting. 400 empty_data with details {file: "line N: ..."} on the
// first refused line (an unknown status or type, an amount that is not exact, a missing
// reference, a reference twice, an unreadable time or currency).
Result<Statement> parse(std::string_view text, const Format& format);

// The UUID `hex` (32 hex digits) with its dashes (8-4-4-4-12), or `hex` unchanged when it is not one.
std::string dashed_uuid(std::string_view hex);

}  // namespace sika::payments::recon
