#include "statements/model.hpp"

#include <boost/json.hpp>

#include "core/json.hpp"
#include "core/money.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "payments/ledger.hpp"
#include "payments/model.hpp"

namespace sika::statements {

namespace bj = boost::json;

std::string_view to_string(MovementType t) {
  switch (t) {
    case MovementType::collection: return "COLLECTION";
    case MovementType::payout: return "PAYOUT";
    case MovementType::refund: return "REFUND";
    case MovementType::fee: return "FEE";
    case MovementType::split_share: return "SPLIT_SHARE";
    case MovementType::settlement: return "SETTLEMENT";
    case MovementType::adjustment: return "ADJUSTMENT";
  }
  return "ADJUSTMENT";
}

namespace {

constexpr std::int64_t kDayMs = 86'400'000;

// The UTC midnight starting a day written YYYY-MM-DD, or nullopt when it is not a real date.
std::optional<std::int64_t> utc_day(std::string_view text) {
  if (text.size() != 10) return std::nullopt;
  auto at = parse_iso8601(std::string(text) + "T00:00:00Z");
  // 2026-02-30 parses as 2026-03-02: a date is real when it reads back the same.
  if (!at || iso8601(*at).substr(0, 10) != text) return std::nullopt;
  return at;
}

}  // namespace

Result<Query> parse_query(const web::Request& req, int offset_minutes) {
  Query q;
  json::FieldErrors errors;
  auto param = [&](std::string_view name) { return req.query_param(name).value_or(""); };
  q.currency = param("currency");
  if (q.currency.empty())
    errors.add("currency", Reason::required);
  else if (!money::is_currency_code(q.currency))
    errors.add("currency", Reason::currency_code);
  q.from = param("from");
  q.to = param("to");
  std::optional<std::int64_t> from, to;
  for (auto [name, text, day] : {std::tuple{"from", &q.from, &from}, std::tuple{"to", &q.to, &to}}) {
    if (text->empty())
      errors.add(name, Reason::required);
    else if (!(*day = utc_day(*text)))
      errors.add(name, Reason::day_date);
  }
  if (from && to && *to < *from)
    errors.add("to", Reason::not_before_from);
  else if (from && to && (*to - *from) / kDayMs + 1 > kMaxDays)
    errors.add("to", reason::with(Reason::at_most_days, "max", std::to_string(kMaxDays)));
  const std::string format = param("format");
  if (format == "csv")
    q.csv = true;
  else if (!format.empty() && format != "json")
    errors.add("format", reason::with(Reason::one_of, "values", "json, csv"));
  auto csv_format = web::csv::format(req, /*bom_with_semicolon=*/true);
  if (!csv_format)
    errors.add_error(csv_format.error(), "separator");
  else
    q.format = *csv_format;
  SIKA_TRY(errors.status());
  const std::int64_t offset_ms = std::int64_t{offset_minutes} * 60'000;
  q.start_ms = *from - offset_ms;
  q.end_ms = *to + kDayMs - offset_ms;
  return q;
}

MovementType type_of(std::string_view kind, bool split) {
  if (kind == payments::ledger::kCollection || kind == payments::ledger::kFxSettlement)
    return split ? MovementType::split_share : MovementType::collection;
  if (kind == payments::ledger::kPayoutReserve || kind == payments::ledger::kPayoutRelease ||
      kind == payments::ledger::kPayout)
    return MovementType::payout;
  if (kind == kRefundReserveJournal || kind == kRefundJournal || kind == kRefundReleaseJournal)
    return MovementType::refund;
  if (kind == kSettlementJournal) return MovementType::settlement;
  if (kind == "FEE") return MovementType::fee;
  return MovementType::adjustment;
}

namespace {

// The order id a transaction carries in its metadata (hosted checkout: "order_id"), or "".
std::string order_id_of(const std::string& metadata) {
  if (metadata.find("\"order_id\"") == std::string::npos) return "";
  boost::system::error_code ec;
  bj::value v = bj::parse(metadata, ec);
  if (ec || !v.is_object()) return "";
  const bj::value* id = v.as_object().if_contains("order_id");
  return id && id->is_string() ? std::string(id->as_string()) : "";
}

// The last word of a journal's memo: every journal's memo ends with the reference of what
// posted it ("collection TX-…", "refund RF-…", "settlement ST-…").
std::string memo_reference(std::string_view memo) {
  auto space = memo.rfind(' ');
  return std::string(space == std::string_view::npos ? memo : memo.substr(space + 1));
}

}  // namespace

Movement movement_of(const EntryRow& row, std::int64_t balance_before) {
  Movement m;
  const bool split = row.settlement_mode && *row.settlement_mode == payments::kSplit;
  m.type = type_of(row.journal_kind, split);
  m.net = row.credit - row.debit;
  // The fee is the transaction's when the movement is the whole of it: a collection credited in
  // its own currency (fee taken from it), a payout's reserve (fee reserved with it) and release
  // (fee given back: negative). Shares, conversions, refunds and the rest carry no fee here.
  if (row.journal_kind == payments::ledger::kCollection && !split)
    m.fee = row.tx_fee;
  else if (row.journal_kind == payments::ledger::kPayoutReserve)
    m.fee = row.tx_fee;
  else if (row.journal_kind == payments::ledger::kPayoutRelease)
    m.fee = -row.tx_fee;
  m.gross = m.net + m.fee;
  m.balance_after = balance_before + m.net;
  const bool own_reference = row.reference && m.type != MovementType::refund && m.type != MovementType::settlement;
  m.reference = own_reference          ? *row.reference
                : row.refund_reference ? *row.refund_reference
                                       : memo_reference(row.memo);
  if (row.transaction_uuid) {
    std::string order = order_id_of(row.metadata.value_or(""));
    m.merchant_reference = order.empty() ? *row.transaction_uuid : order;
  }
  if (row.operator_reference && !row.operator_reference->empty()) m.operator_reference = row.operator_reference;
  m.created_at = row.created_at;
  m.settled_at = row.settled_at;
  return m;
}

bj::object to_json(const Movement& m) {
  auto opt = [](const std::optional<std::string>& s) { return s ? bj::value(*s) : bj::value(nullptr); };
  bj::object o;
  o["type"] = to_string(m.type);
  o["reference"] = m.reference;
  o["merchant_reference"] = opt(m.merchant_reference);
  o["operator_reference"] = opt(m.operator_reference);
  o["gross"] = m.gross;
  o["fee"] = m.fee;
  o["net"] = m.net;
  o["balance_after"] = m.balance_after;
  o["created_at"] = iso8601(m.created_at);
  o["settled_at"] = m.settled_at ? bj::value(iso8601(*m.settled_at)) : bj::value(nullptr);
  return o;
}

namespace {
constexpr std::string_view kColumns[] = {"type", "reference", "merchant_reference", "operator_reference", "gross",
                                         "fee",  "net",       "balance_after",      "created_at",         "settled_at"};
}

std::string csv_header(const web::csv::Format& f) {
  std::string out = f.bom ? std::string(web::csv::kBom) : std::string();
  for (std::size_t i = 0; i < std::size(kColumns); ++i) {
    if (i > 0) out += f.separator;
    out += kColumns[i];
  }
  return out + "\r\n";
}

std::string csv_row(const Movement& m, const web::csv::Format& f) {
  const char s = f.separator;
  std::string out;
  out.reserve(160);
  out += to_string(m.type);
  out += s;
  out += web::csv::cell(m.reference, s);
  out += s;
  if (m.merchant_reference) out += web::csv::cell(*m.merchant_reference, s);
  out += s;
  if (m.operator_reference) out += web::csv::cell(*m.operator_reference, s);
  for (std::int64_t v : {m.gross, m.fee, m.net, m.balance_after}) {
    out += s;
    out += std::to_string(v);
  }
  out += s;
  out += iso8601(m.created_at);
  out += s;
  if (m.settled_at) out += iso8601(*m.settled_at);
  out += "\r\n";
  return out;
}

}  // namespace sika::statements
