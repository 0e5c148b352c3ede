#include "payments/recon_format.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <unordered_set>

#include "core/money.hpp"
#include "core/time.hpp"

namespace sika::payments::recon {

namespace {

using Map = std::vector<std::pair<std::string_view, std::string_view>>;

// Wave's Balance & Reconciliation API lists balance movements only (no status): each is done.
const std::vector<Format> kFormats = {
    {.kind = "normalised",
     .operator_reference = "operator_reference",
     .our_reference = "our_reference",
     .timestamp = "timestamp",
     .amount_minor = "amount_minor",
     .statuses = {{"succeeded", "succeeded"}, {"failed", "failed"}, {"pending", "pending"}},
     .types = {{"collection", "collection"}, {"payout", "payout"}, {"refund", "refund"}}},
    // MTN MoMo publishes no statement format: the columns are the fields of its status answer
    // (GET /collection/v1_0/requesttopay/{ref}, /disbursement/v1_0/transfer/{ref}).
    {.kind = "mtn_momo",
     .operator_reference = "financialTransactionId",
     .our_reference = "externalId",
     .statuses = {{"SUCCESSFUL", "succeeded"}, {"FAILED", "failed"}, {"PENDING", "pending"}},
     .types = {{"COLLECTION", "collection"},
               {"REQUESTTOPAY", "collection"},
               {"DISBURSEMENT", "payout"},
               {"TRANSFER", "payout"},
               {"REFUND", "refund"}}},
    // Orange Money publishes no statement format: the fields of its Web Payment status and
    // notification (txnid, order_id, status).
    {.kind = "orange_money",
     .operator_reference = "txnid",
     .our_reference = "order_id",
     .statuses = {{"SUCCESS", "succeeded"},
                  {"SUCCESSFULL", "succeeded"},
                  {"FAILED", "failed"},
                  {"EXPIRED", "failed"},
                  {"CANCELLED", "failed"},
                  {"INITIATED", "pending"},
                  {"PENDING", "pending"}},
     .types = {{"PAYMENT", "collection"}, {"CASHIN", "payout"}, {"REFUND", "refund"}}},
    // Wave's Balance & Reconciliation API (GET /v1/transactions), one CSV row per transaction.
    {.kind = "wave",
     .operator_reference = "transaction_id",
     .our_reference = "client_reference",
     .type = "transaction_type",
     .status = "",
     .timestamp = "timestamp",
     .signed_amount = true,
     .default_status = "succeeded",
     .statuses = {},
     .types = {{"merchant_payment", "collection"},
               {"checkout", "collection"},
               {"payout", "payout"},
               {"api_payout", "payout"},
               {"refund", "refund"},
               {"merchant_payment_refund", "refund"}}},
    // Airtel Money publishes no statement format: the fields of its Transaction Enquiry
    // (data.transaction {airtel_money_id, id, status TS | TF | TA | TIP}).
    {.kind = "airtel_money",
     .operator_reference = "airtel_money_id",
     .our_reference = "id",
     .undashed_uuid_ref = true,
     .statuses = {{"TS", "succeeded"}, {"TF", "failed"}, {"TA", "pending"}, {"TIP", "pending"}},
     .types = {{"COLLECTION", "collection"}, {"B2C", "payout"}, {"REFUND", "refund"}}},
};

Error refused(std::int64_t line_no, const std::string& what) {
  return empty_data(boost::json::object{{"file", "line " + std::to_string(line_no) + ": " + what}});
}

// Splits one CSV record (no embedded newlines) into fields; false on an unclosed quote.
bool split_record(std::string_view line, std::vector<std::string>& out) {
  out.clear();
  std::string field;
  bool quoted = false, was_quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"' && field.empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else if (c == ',') {
      out.push_back(std::move(field));
      field.clear();
      was_quoted = false;
    } else {
      field += c;
    }
  }
  if (quoted) return false;
  out.push_back(std::move(field));
  for (auto& f : out) {
    auto b = f.find_first_not_of(" \t");
    auto e = f.find_last_not_of(" \t");
    f = b == std::string::npos ? std::string() : f.substr(b, e - b + 1);
  }
  return true;
}

std::optional<std::string_view> mapped(const Map& map, std::string_view value) {
  for (const auto& [from, to] : map)
    if (from.size() == value.size() && std::equal(from.begin(), from.end(), value.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        }))
      return to;
  return std::nullopt;
}

// An amount as the format writes it, in minor units of `currency`; negative when `allow_sign`
// and written with a leading '-'.
std::optional<std::int64_t> read_amount(std::string_view text, std::string_view currency, AmountStyle style,
                                        bool allow_sign) {
  bool negative = false;
  if (allow_sign && !text.empty() && (text[0] == '-' || text[0] == '+')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  std::optional<std::int64_t> v;
  if (style == AmountStyle::minor_integer) {
    if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    std::int64_t x = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
    if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
    v = x;
  } else {
    v = money::parse_decimal(text, currency);
  }
  if (!v) return std::nullopt;
  return negative ? -*v : *v;
}

// ISO 8601, or "YYYY-MM-DD HH:MM:SS" / "YYYY-MM-DD" read as UTC.
std::optional<std::int64_t> read_time(std::string_view text) {
  if (auto t = parse_iso8601(text)) return t;
  std::string s(text);
  if (s.size() == 10)
    s += "T00:00:00Z";
  else if (s.size() == 19 && s[10] == ' ')
    s[10] = 'T', s += 'Z';
  else if (s.size() == 19 && s[10] == 'T')
    s += 'Z';
  return parse_iso8601(s);
}

struct Columns {
  int operator_reference = -1, our_reference = -1, type = -1, amount = -1, amount_minor = -1, currency = -1,
      status = -1, timestamp = -1, fee = -1;
};

int column_of(const std::vector<std::string>& header, std::string_view name) {
  if (name.empty()) return -1;
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i].size() == name.size() && std::equal(name.begin(), name.end(), header[i].begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        }))
      return static_cast<int>(i);
  return -1;
}

Result<Columns> read_header(const std::vector<std::string>& header, const Format& f, std::int64_t line_no) {
  Columns c;
  c.operator_reference = column_of(header, f.operator_reference);
  c.our_reference = column_of(header, f.our_reference);
  c.type = column_of(header, f.type);
  c.amount = column_of(header, f.amount);
  c.amount_minor = column_of(header, f.amount_minor);
  c.currency = column_of(header, f.currency);
  c.status = column_of(header, f.status);
  c.timestamp = column_of(header, f.timestamp);
  c.fee = column_of(header, f.fee);
  auto need = [&](int col, std::string_view name) -> Status {
    if (col < 0) return refused(line_no, "the header has no column " + std::string(name));
    return {};
  };
  SIKA_TRY(need(c.operator_reference, f.operator_reference));
  if (c.amount < 0 && c.amount_minor < 0) SIKA_TRY(need(c.amount, f.amount));
  SIKA_TRY(need(c.currency, f.currency));
  SIKA_TRY(need(c.timestamp, f.timestamp));
  if (f.default_status.empty()) SIKA_TRY(need(c.status, f.status));
  if (!f.signed_amount) SIKA_TRY(need(c.type, f.type));
  return c;
}

std::string_view cell(const std::vector<std::string>& r, int col) {
  return col >= 0 && static_cast<std::size_t>(col) < r.size() ? std::string_view(r[col]) : std::string_view();
}

Result<StatementLine> read_line(const std::vector<std::string>& r, const Columns& c, const Format& f,
                                std::int64_t line_no) {
  StatementLine l;
  l.line_no = line_no;
  l.operator_reference = std::string(cell(r, c.operator_reference));
  if (l.operator_reference.empty()) return refused(line_no, "no operator reference");
  if (l.operator_reference.size() > 100) return refused(line_no, "the operator reference is over 100 characters");
  l.our_reference = std::string(cell(r, c.our_reference));
  if (f.undashed_uuid_ref) l.our_reference = dashed_uuid(l.our_reference);
  l.currency = std::string(cell(r, c.currency));
  if (!money::is_currency_code(l.currency)) return refused(line_no, "currency is not an ISO 4217 code");
  const bool minor = c.amount_minor >= 0 && !cell(r, c.amount_minor).empty();
  const AmountStyle style = minor ? AmountStyle::minor_integer : f.style;
  auto amount = read_amount(cell(r, minor ? c.amount_minor : c.amount), l.currency, style, f.signed_amount);
  if (!amount) return refused(line_no, "amount is not an exact amount of " + l.currency);
  std::string_view type_text = cell(r, c.type);
  if (!type_text.empty() || !f.signed_amount) {
    auto t = mapped(f.types, type_text);
    if (!t) return refused(line_no, "unknown type " + std::string(type_text));
    l.type = std::string(*t);
  } else {
    l.type = *amount < 0 ? "payout" : "collection";
  }
  l.amount = *amount < 0 ? -*amount : *amount;
  if (l.amount == 0) return refused(line_no, "amount is zero");
  std::string_view fee_text = cell(r, c.fee);
  if (!fee_text.empty()) {
    auto fee = read_amount(fee_text, l.currency, style, f.signed_amount);
    if (!fee) return refused(line_no, "fee is not an exact amount of " + l.currency);
    l.fee = *fee < 0 ? -*fee : *fee;
  }
  if (c.status >= 0 && !cell(r, c.status).empty()) {
    l.operator_status = std::string(cell(r, c.status));
    auto s = mapped(f.statuses, l.operator_status);
    if (!s) return refused(line_no, "unknown status " + l.operator_status);
    l.status = std::string(*s);
  } else if (!f.default_status.empty()) {
    l.operator_status = std::string(f.default_status);
    l.status = std::string(f.default_status);
  } else {
    return refused(line_no, "no status");
  }
  auto at = read_time(cell(r, c.timestamp));
  if (!at) return refused(line_no, "timestamp is not an ISO 8601 time");
  l.occurred_at = *at;
  return l;
}

Status read_directive(std::string_view line, const Format& f, Statement& s, std::int64_t line_no) {
  std::vector<std::string> r;
  if (!split_record(line.substr(1), r)) return refused(line_no, "unclosed quote");
  if (r.empty()) return {};
  if (r[0] == "closing_balance") {
    if (r.size() != 3 || !money::is_currency_code(r[2]))
      return refused(line_no, "#closing_balance needs an amount and a currency");
    auto v = read_amount(r[1], r[2], f.style, true);
    if (!v) return refused(line_no, "closing balance is not an exact amount of " + r[2]);
    s.closing_balance = *v;
    s.closing_currency = r[2];
  } else if (r[0] == "period") {
    std::optional<std::int64_t> a = r.size() == 3 ? read_time(r[1]) : std::nullopt;
    std::optional<std::int64_t> b = r.size() == 3 ? read_time(r[2]) : std::nullopt;
    if (!a || !b || *b <= *a) return refused(line_no, "#period needs a start and a later end (ISO 8601)");
    s.period_start = a;
    s.period_end = b;
  }
  return {};  // any other `#` line is a comment
}

}  // namespace

const std::vector<Format>& formats() { return kFormats; }

const Format* format_named(std::string_view kind) {
  for (const auto& f : kFormats)
    if (f.kind == kind) return &f;
  return nullptr;
}

std::string dashed_uuid(std::string_view hex) {
  if (hex.size() != 32 ||
      !std::all_of(hex.begin(), hex.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }))
    return std::string(hex);
  std::string out;
  out.reserve(36);
  for (std::size_t i = 0; i < 32; ++i) {
    if (i == 8 || i == 12 || i == 16 || i == 20) out += '-';
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(hex[i])));
  }
  return out;
}

Result<Statement> parse(std::string_view text, const Format& f) {
  Statement s;
  std::optional<Columns> columns;
  std::vector<std::string> record;
  std::unordered_set<std::string> seen;
  std::int64_t line_no = 0;
  std::size_t pos = 0;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") pos = 3;  // a UTF-8 byte order mark, as spreadsheets write it
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (line[0] == '#') {
      SIKA_TRY(read_directive(line, f, s, line_no));
      continue;
    }
    if (!split_record(line, record)) return refused(line_no, "unclosed quote");
    if (!columns) {
      SIKA_ASSIGN_OR_RETURN(columns, read_header(record, f, line_no));
      continue;
    }
    SIKA_ASSIGN_OR_RETURN(auto l, read_line(record, *columns, f, line_no));
    if (!seen.insert(l.operator_reference).second)
      return refused(line_no, "operator reference " + l.operator_reference + " appears twice");
    s.lines.push_back(std::move(l));
  }
  if (!columns) return refused(line_no, "no header line");
  if (!s.period_start && !s.lines.empty()) {
    auto [lo, hi] = std::minmax_element(s.lines.begin(), s.lines.end(),
                                        [](const auto& a, const auto& b) { return a.occurred_at < b.occurred_at; });
    s.period_start = lo->occurred_at;
    s.period_end = hi->occurred_at + 1;
  }
  return s;
}

}  // namespace sika::payments::recon
