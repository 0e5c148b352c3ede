#include "payments/queries.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "core/time.hpp"
#include "merchant/merchant.hpp"
#include "payments/ledger.hpp"
#include "payments/store.hpp"

namespace sika::payments::queries {

namespace bj = boost::json;

namespace {

constexpr std::string_view kMerchantOwner = "merchant:";

// The last four digits of the customer's number, exactly as the index pay_transactions_wallet_tail
// (migration 22) spells it: the planners match the index by its expression's text.
constexpr std::string_view kWalletTail = "substr(customer_wallet, length(customer_wallet) - 3)";

// The digits of a phone-number search ("+237 6 90-00" -> "237690 00"), or "" when `text` is
// not one (letters, or fewer than 3 digits).
std::string phone_digits(std::string_view text) {
  std::string digits;
  for (char c : text) {
    if (c >= '0' && c <= '9')
      digits.push_back(c);
    else if (c != '+' && c != ' ' && c != '-' && c != '.' && c != '(' && c != ')')
      return "";
  }
  return digits.size() >= 3 ? digits : "";
}

bj::value optional_text(const std::optional<std::string>& s) { return s ? bj::value(*s) : bj::value(nullptr); }

}  // namespace

Result<TransactionPage> list_transactions(store::Conn& conn, const TransactionFilter& f) {
  const std::int64_t limit = std::clamp(f.limit, 1, 500);
  std::string sql = "SELECT " + std::string(kTransactionColumns) + " FROM pay_transactions WHERE 1 = 1";
  store::Params params;
  auto where = [&](std::string_view condition, store::Value v) {
    sql += " AND ";
    sql += condition;
    params.push_back(std::move(v));
  };
  if (f.merchant_id) where("merchant_id = ?", *f.merchant_id);
  if (!f.environment.empty()) where("environment = ?", f.environment);
  if (f.status) where("status = ?", std::string(to_string(*f.status)));
  if (!f.operation.empty()) where("operation = ?", f.operation);
  if (!f.channel.empty()) where("channel = ?", f.channel);
  if (!f.provider.empty()) where("service_code = ?", f.provider);
  if (f.created_from) where("created_at >= ?", *f.created_from);
  if (f.created_to) where("created_at < ?", *f.created_to);
  if (!f.search.empty()) {
    if (std::string digits = phone_digits(f.search); digits.size() >= kWholeNumberDigits) {
      where("customer_wallet = ?", std::move(digits));  // a whole number: by index
    } else if (!digits.empty()) {
      // The end of a number: the last four digits by the index on them (migration 22), then the
      // rest of the digits on those few rows. Three digits are the ten four-digit endings.
      std::string tail = digits.size() >= 4 ? digits.substr(digits.size() - 4) : digits;
      sql += " AND ";
      sql += kWalletTail;
      if (tail.size() == 4) {
        sql += " = ?";
        params.push_back(tail);
      } else {
        sql += " IN (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
        for (char d = '0'; d <= '9'; ++d) params.emplace_back(std::in_place_type<std::string>, d + tail);
      }
      if (digits.size() > 4) where("customer_wallet LIKE ?", "%" + digits);
    } else {
      // Each reference by its own index (an OR of the three would scan the merchant's rows).
      sql +=
          " AND id IN (SELECT id FROM pay_transactions WHERE reference = ? UNION SELECT id FROM pay_transactions "
          "WHERE provider_reference = ? UNION SELECT id FROM pay_transactions WHERE invoice_reference = ?)";
      params.insert(params.end(), {f.search, f.search, f.search});
    }
  }
  if (f.before) where("id < ?", *f.before);
  sql += " ORDER BY id DESC LIMIT ?";
  params.emplace_back(std::in_place_type<std::int64_t>, limit + 1);
  SIKA_ASSIGN_OR_RETURN(auto rows, conn.query(sql, params));
  TransactionPage page;
  for (const auto& r : rows) {
    if (static_cast<std::int64_t>(page.items.size()) == limit) {
      page.next = page.items.back().id;
      break;
    }
    page.items.push_back(transaction_from_row(r));
  }
  return page;
}

namespace {
// The timeline's operator calls and recovery's status questions.
Status operator_lines(store::Conn& conn, Timeline& t) {
  if (!t.tx.provider_reference.empty()) {
    SIKA_ASSIGN_OR_RETURN(auto calls, conn.query("SELECT connector, operation, method, path, outcome, http_status, "
                                                 "code, operator_reference, started_at, latency_ms "
                                                 "FROM pay_operator_calls WHERE provider_reference = ? "
                                                 "ORDER BY started_at, id LIMIT 200",
                                                 {t.tx.provider_reference}));
    for (const auto& c : calls)
      t.calls.push_back(
          {c.str(0), c.str(1), c.str(2), c.str(3), c.str(4), c.i64(5), c.opt_str(6), c.opt_str(7), c.i64(8), c.i64(9)});
  }
  SIKA_ASSIGN_OR_RETURN(auto checks, conn.query("SELECT node, outcome, reason, asked_at, answered_at "
                                                "FROM pay_status_checks WHERE transaction_id = ? ORDER BY id LIMIT 200",
                                                {t.tx.id}));
  for (const auto& c : checks) t.checks.push_back({c.str(0), c.str(1), c.opt_str(2), c.i64(3), c.i64(4)});
  return {};
}
}  // namespace

Result<Timeline> timeline(store::Conn& conn, std::string_view reference) {
  Timeline t;
  SIKA_ASSIGN_OR_RETURN(t.tx, tables::load(conn, reference));
  SIKA_ASSIGN_OR_RETURN(auto moves, conn.query("SELECT from_status, to_status, source, reason, at FROM "
                                               "pay_transitions WHERE transaction_id = ? ORDER BY id",
                                               {t.tx.id}));
  for (const auto& m : moves) t.steps.push_back({m.str(0), m.str(1), m.str(2), m.opt_str(3), m.i64(4)});
  SIKA_ASSIGN_OR_RETURN(auto entries,
                        conn.query("SELECT j.id, j.kind, j.memo, a.owner, a.kind, a.currency, e.debit, e.credit, "
                                   "e.created_at FROM ledger_journals j JOIN ledger_entries e ON e.journal_id = j.id "
                                   "JOIN ledger_accounts a ON a.id = e.account_id WHERE j.transaction_id = ? "
                                   "ORDER BY j.id, e.id",
                                   {t.tx.id}));
  for (const auto& e : entries)
    t.entries.push_back({e.i64(0), e.str(1), e.str(2), e.str(3), e.str(4), e.str(5), e.i64(6), e.i64(7), e.i64(8)});
  SIKA_ASSIGN_OR_RETURN(auto callbacks, conn.query("SELECT connector, reported_status, outcome, reason, received_at "
                                                   "FROM pay_callbacks WHERE transaction_id = ? ORDER BY id",
                                                   {t.tx.id}));
  for (const auto& c : callbacks) t.callbacks.push_back({c.str(0), c.str(1), c.str(2), c.opt_str(3), c.i64(4)});
  SIKA_TRY(operator_lines(conn, t));
  return t;
}

bj::object to_json(const Timeline& t) {
  bj::object out;
  out["record"] = to_record(t.tx);
  bj::array steps;
  for (const auto& s : t.steps)
    steps.push_back(bj::object{{"from", s.from},
                               {"to", s.to},
                               {"source", s.source},
                               {"reason", optional_text(s.reason)},
                               {"at", iso8601(s.at)}});
  out["transitions"] = std::move(steps);
  bj::array entries;
  for (const auto& e : t.entries)
    entries.push_back(bj::object{{"journal", e.journal_kind},
                                 {"memo", e.memo},
                                 {"owner", e.owner},
                                 {"kind", e.kind},
                                 {"currency", e.currency},
                                 {"debit", e.debit},
                                 {"credit", e.credit},
                                 {"at", iso8601(e.at)}});
  out["entries"] = std::move(entries);
  bj::array callbacks;
  for (const auto& c : t.callbacks)
    callbacks.push_back(bj::object{{"reported_status", c.reported_status},
                                   {"reason", optional_text(c.reason)},
                                   {"outcome", c.outcome},
                                   {"received_at", iso8601(c.received_at)}});
  out["callbacks"] = std::move(callbacks);
  return out;
}

Result<std::vector<AccountBalance>> account_balances(store::Conn& conn, std::string_view owner,
                                                     std::string_view environment) {
  const std::string who(owner), env(environment);
  SIKA_ASSIGN_OR_RETURN(auto rows, conn.query("SELECT owner, environment, currency, kind, balance FROM ledger_accounts "
                                              "WHERE (? = '' OR owner = ?) AND (? = '' OR environment = ?) "
                                              "ORDER BY environment, currency, owner, kind",
                                              {who, who, env, env}));
  std::vector<AccountBalance> out;
  std::set<std::int64_t> merchant_ids;
  for (const auto& r : rows) {
    AccountBalance b{r.str(0), r.str(1), r.str(2), r.str(3), r.i64(4), std::nullopt};
    if (b.owner.starts_with(kMerchantOwner)) {
      std::int64_t id = 0;
      std::string_view digits = std::string_view(b.owner).substr(kMerchantOwner.size());
      if (std::from_chars(digits.data(), digits.data() + digits.size(), id).ec == std::errc()) merchant_ids.insert(id);
    }
    out.push_back(std::move(b));
  }
  if (merchant_ids.empty()) return out;
  // Matricules by id, one query for every merchant account listed.
  std::string sql = "SELECT id, matricule FROM merchants WHERE id IN (";
  store::Params params;
  for (std::int64_t id : merchant_ids) {
    sql += params.empty() ? "?" : ", ?";
    params.emplace_back(std::in_place_type<std::int64_t>, id);
  }
  sql += ")";
  SIKA_ASSIGN_OR_RETURN(auto merchants, conn.query(sql, params));
  std::map<std::string, std::string, std::less<>> matricules;
  for (const auto& m : merchants) matricules[std::string(kMerchantOwner) + std::to_string(m.i64(0))] = m.str(1);
  for (auto& b : out)
    if (auto it = matricules.find(b.owner); it != matricules.end()) b.matricule = it->second;
  return out;
}

Result<std::string> merchant_owner(store::Conn& conn, std::string_view matricule) {
  SIKA_ASSIGN_OR_RETURN(auto m, merchant::find_by_matricule(conn, matricule));
  if (!m) return not_found(bj::object{{"merchant", "unknown matricule " + std::string(matricule)}});
  return ledger::merchant_available(m->id, "", "").owner;
}

Result<std::vector<CurrencyBalance>> merchant_balances(store::Conn& conn, std::int64_t merchant_id,
                                                       std::string_view environment) {
  const std::string owner = ledger::merchant_available(merchant_id, environment, "").owner;
  SIKA_ASSIGN_OR_RETURN(auto rows, conn.query("SELECT currency, kind, balance FROM ledger_accounts WHERE owner = ? AND "
                                              "environment = ? ORDER BY currency",
                                              {owner, std::string(environment)}));
  std::vector<CurrencyBalance> out;
  for (const auto& r : rows) {
    if (out.empty() || out.back().currency != r.str(0)) out.push_back({r.str(0), 0, 0});
    (r.str(1) == "pending" ? out.back().pending : out.back().available) = r.i64(2);
  }
  return out;
}

Result<std::vector<LateCallback>> late_callbacks(store::Conn& conn) {
  SIKA_ASSIGN_OR_RETURN(auto rows, conn.query("SELECT t.reference, t.status, c.reported_status, c.reason, "
                                              "c.received_at, c.connector FROM pay_callbacks c "
                                              "JOIN pay_transactions t ON t.id = c.transaction_id "
                                              "WHERE c.outcome = 'late' ORDER BY c.id"));
  std::vector<LateCallback> out;
  for (const auto& r : rows) out.push_back({r.str(0), r.str(1), r.str(2), r.str(5), r.opt_str(3), r.i64(4)});
  return out;
}

Result<std::vector<DailyVolume>> daily_volume(store::Conn& conn, std::int64_t merchant_id, std::string_view environment,
                                              std::int64_t from, std::int64_t to) {
  // The day is a literal in the text: PostgreSQL groups by an expression only when the SELECT's
  // is the same one, and two parameters are never the same expression.
  constexpr std::int64_t kDay = 86400000;
  SIKA_ASSIGN_OR_RETURN(
      auto rows,
      conn.query("SELECT created_at / 86400000, currency, "
                 "SUM(CASE WHEN status = 'COMPLETED' THEN amount ELSE 0 END), COUNT(*), "
                 "SUM(CASE WHEN status = 'COMPLETED' THEN 1 ELSE 0 END), "
                 "SUM(CASE WHEN status IN ('COMPLETED', 'FAILED', 'EXPIRED', 'CANCELLED') THEN 1 ELSE 0 END) "
                 "FROM pay_transactions WHERE merchant_id = ? AND environment = ? AND operation = 'COLLECTION' "
                 "AND created_at >= ? AND created_at < ? GROUP BY created_at / 86400000, currency "
                 "ORDER BY created_at / 86400000, currency",
                 {merchant_id, std::string(environment), from, to}));
  std::vector<DailyVolume> out;
  out.reserve(rows.size());
  for (const auto& r : rows)
    out.push_back(DailyVolume{r.i64(0) * kDay, r.str(1), r.i64(2), r.i64(3), r.i64(4), r.i64(5)});
  return out;
}

}  // namespace sika::payments::queries
