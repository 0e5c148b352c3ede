#include "payments/ledger.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <set>

namespace sika::payments::ledger {

namespace bj = boost::json;

namespace {
AccountKey key(std::string owner, std::string_view env, std::string_view currency, std::string_view kind) {
  return AccountKey{std::move(owner), std::string(env), std::string(currency), std::string(kind)};
}
}  // namespace

AccountKey merchant_available(std::int64_t merchant_id, std::string_view env, std::string_view currency) {
  return key("merchant:" + std::to_string(merchant_id), env, currency, "available");
}
AccountKey merchant_pending(std::int64_t merchant_id, std::string_view env, std::string_view currency) {
  return key("merchant:" + std::to_string(merchant_id), env, currency, "pending");
}
AccountKey customer_wallet(std::string_view msisdn, std::string_view env, std::string_view currency) {
  return key("customer:" + std::string(msisdn), env, currency, "available");
}
AccountKey customer_pending(std::string_view msisdn, std::string_view env, std::string_view currency) {
  return key("customer:" + std::string(msisdn), env, currency, "pending");
}
AccountKey fee_revenue(std::string_view env, std::string_view currency) {
  return key("platform:fees", env, currency, "revenue");
}
AccountKey operator_clearing(std::string_view service_code, std::string_view env, std::string_view currency) {
  return key("operator:" + std::string(service_code), env, currency, "clearing");
}
AccountKey funding(std::string_view env, std::string_view currency) {
  return key("platform:funding", env, currency, "funding");
}
AccountKey fx_position(std::string_view env, std::string_view currency) {
  return key("platform:fx", env, currency, "position");
}

std::optional<std::int64_t> AccountCache::find(const std::string& k) const {
  sika::MutexLock lock(mu_);
  auto it = ids_.find(k);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

void AccountCache::remember(const std::vector<std::pair<std::string, std::int64_t>>& learned) {
  if (learned.empty()) return;
  sika::MutexLock lock(mu_);
  for (const auto& [k, id] : learned) ids_.emplace(k, id);
}

namespace {

Result<std::optional<std::int64_t>> find_account(store::Conn& conn, const AccountKey& k) {
  SIKA_ASSIGN_OR_RETURN(auto row, conn.query_one("SELECT id FROM ledger_accounts WHERE owner = ? AND environment = ? "
                                                 "AND currency = ? AND kind = ?",
                                                 {k.owner, k.environment, k.currency, k.kind}));
  if (!row) return std::optional<std::int64_t>{};
  return std::optional<std::int64_t>{row->i64(0)};
}

Result<std::int64_t> ensure_account(store::Conn& conn, const AccountKey& k, std::int64_t now) {
  SIKA_ASSIGN_OR_RETURN(auto found, find_account(conn, k));
  if (found) return *found;
  SIKA_TRY(
      conn.exec("INSERT INTO ledger_accounts (owner, environment, currency, kind, may_go_negative, balance, "
                "created_at) VALUES (?, ?, ?, ?, ?, 0, ?) "
                "ON CONFLICT (owner, environment, currency, kind) DO NOTHING",
                {k.owner, k.environment, k.currency, k.kind, std::int64_t{k.may_go_negative() ? 1 : 0}, now}));
  SIKA_ASSIGN_OR_RETURN(auto created, find_account(conn, k));
  if (!created) return internal_error("ledger account could not be created");
  return *created;
}

}  // namespace

Status post(store::Conn& conn, const Posting& p, std::int64_t now, const AccountCache* cache, Learned& learned,
            std::int64_t* journal_id_out) {
  std::int64_t debits = 0, credits = 0;
  if (p.legs.size() < 2) return internal_error("ledger posting needs two legs or more");
  for (const Leg& leg : p.legs) {
    if (leg.debit < 0 || leg.credit < 0 || (leg.debit == 0) == (leg.credit == 0))
      return internal_error("ledger leg must be a positive debit or a positive credit");
    if (leg.account.currency != p.currency || leg.account.environment != p.environment)
      return internal_error("ledger leg outside the journal's currency or environment");
    if (__builtin_add_overflow(debits, leg.debit, &debits) || __builtin_add_overflow(credits, leg.credit, &credits))
      return internal_error("ledger posting overflows");
  }
  if (debits != credits) return internal_error("ledger posting is unbalanced");

  // Resolve accounts, then apply balance changes in ascending account id order so that
  // concurrent units on PostgreSQL lock account rows in one global order (no deadlock).
  std::vector<std::int64_t> ids(p.legs.size());
  std::map<std::int64_t, std::pair<std::int64_t, const AccountKey*>> delta;  // id -> (credit - debit, key)
  for (std::size_t i = 0; i < p.legs.size(); ++i) {
    const AccountKey& k = p.legs[i].account;
    std::string text = k.text();
    std::int64_t id = 0;
    if (auto cached = cache ? cache->find(text) : std::nullopt) id = *cached;
    for (std::size_t j = 0; id == 0 && j < learned.size(); ++j)
      if (learned[j].first == text) id = learned[j].second;
    if (id == 0) {
      SIKA_ASSIGN_OR_RETURN(id, ensure_account(conn, k, now));
      learned.emplace_back(std::move(text), id);
    }
    ids[i] = id;
    auto& d = delta[id];
    d.first += p.legs[i].credit - p.legs[i].debit;
    d.second = &k;
  }
  for (const auto& [id, change] : delta) {
    if (change.first == 0) continue;
    SIKA_ASSIGN_OR_RETURN(std::int64_t changed, conn.exec("UPDATE ledger_accounts SET balance = balance + ? "
                                                          "WHERE id = ? AND (may_go_negative = 1 OR balance + ? >= 0)",
                                                          {change.first, id, change.first}));
    if (changed != 1) {
      bj::object details;
      details["account"] = change.second->text();
      details["needed"] = -change.first;
      return make_error(ErrorKind::conflict, "insufficient_funds", std::move(details));
    }
  }
  SIKA_ASSIGN_OR_RETURN(
      auto journal,
      conn.insert_id(
          "INSERT INTO ledger_journals (transaction_id, refund_id, kind, environment, currency, memo, "
          "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
          {store::opt(p.transaction_id), store::opt(p.refund_id), p.kind, p.environment, p.currency, p.memo, now}));
  if (!journal) return internal_error("ledger journal insert returned nothing");
  std::int64_t journal_id = *journal;
  if (journal_id_out) *journal_id_out = journal_id;
  std::string sql = "INSERT INTO ledger_entries (journal_id, account_id, debit, credit, created_at) VALUES ";
  store::Params params;
  params.reserve(p.legs.size() * 5);
  for (std::size_t i = 0; i < p.legs.size(); ++i) {
    sql += i == 0 ? "(?, ?, ?, ?, ?)" : ", (?, ?, ?, ?, ?)";
    params.insert(params.end(), {journal_id, ids[i], p.legs[i].debit, p.legs[i].credit, now});
  }
  SIKA_TRY(conn.exec(sql, params));
  return {};
}

Result<std::optional<std::int64_t>> find_balance(store::Conn& conn, const AccountKey& k) {
  SIKA_ASSIGN_OR_RETURN(auto row, conn.query_one("SELECT balance FROM ledger_accounts WHERE owner = ? AND "
                                                 "environment = ? AND currency = ? AND kind = ?",
                                                 {k.owner, k.environment, k.currency, k.kind}));
  if (!row) return std::optional<std::int64_t>();
  return std::optional<std::int64_t>(row->i64(0));
}

Result<std::int64_t> balance(store::Conn& conn, const AccountKey& k) {
  SIKA_ASSIGN_OR_RETURN(auto found, find_balance(conn, k));
  return found.value_or(0);
}

bj::object Report::to_json() const {
  bj::object o;
  o["ok"] = ok();
  o["accounts"] = accounts;
  o["journals"] = journals;
  o["entries"] = entries;
  bj::array t;
  for (const auto& x : totals)
    t.push_back(bj::object{
        {"environment", x.environment}, {"currency", x.currency}, {"debits", x.debits}, {"credits", x.credits}});
  o["totals"] = std::move(t);
  bj::array v;
  for (const auto& x : violations)
    v.push_back(bj::object{{"rule", x.rule}, {"subject", x.subject}, {"detail", x.detail}});
  o["violations"] = std::move(v);
  return o;
}

namespace {

// The journal kinds a transaction must have posted, by operation and status.
std::set<std::string> expected_journals(std::string_view operation, std::string_view status, bool converted) {
  if (operation == "COLLECTION") {
    // A REFUNDED collection was COMPLETED first; its refunds' journals are the refunds' own.
    const bool collected = status == "COMPLETED" || status == "REFUNDED";
    if (collected && converted) return {std::string(kCollection), std::string(kFxSettlement)};
    if (collected) return {std::string(kCollection)};
    return {};
  }
  if (status == "PENDING") return {std::string(kPayoutReserve)};
  if (status == "COMPLETED") return {std::string(kPayoutReserve), std::string(kPayout)};
  if (status == "FAILED" || status == "EXPIRED") return {std::string(kPayoutReserve), std::string(kPayoutRelease)};
  return {};
}

void add_violation(Report& report, std::string rule, std::string subject, std::string detail) {
  report.violations.push_back({std::move(rule), std::move(subject), std::move(detail)});
}

Status count_rows(store::Conn& c, Report& report) {
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT (SELECT COUNT(*) FROM ledger_accounts), "
                                           "(SELECT COUNT(*) FROM ledger_journals), "
                                           "(SELECT COUNT(*) FROM ledger_entries)"));
  if (!rows.empty()) {
    report.accounts = rows[0].i64(0);
    report.journals = rows[0].i64(1);
    report.entries = rows[0].i64(2);
  }
  return {};
}

// Every entry is a positive debit or a positive credit, never both, never neither.
Status check_entries_well_formed(store::Conn& c, Report& report) {
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT id, debit, credit FROM ledger_entries WHERE debit < 0 OR "
                                           "credit < 0 OR (debit = 0 AND credit = 0) OR (debit <> 0 AND credit <> 0)"));
  for (const auto& r : rows)
    add_violation(report, "entry_malformed", "entry " + r.str(0), "debit " + r.str(1) + ", credit " + r.str(2));
  return {};
}

// Every journal has two entries or more and its debits equal its credits.
Status check_journals_balanced(store::Conn& c, Report& report) {
  SIKA_ASSIGN_OR_RETURN(
      auto rows, c.query("SELECT j.id, j.kind, COUNT(e.id), COALESCE(SUM(e.debit), 0), COALESCE(SUM(e.credit), 0) "
                         "FROM ledger_journals j LEFT JOIN ledger_entries e ON e.journal_id = j.id "
                         "GROUP BY j.id, j.kind "
                         "HAVING COUNT(e.id) < 2 OR COALESCE(SUM(e.debit), 0) <> COALESCE(SUM(e.credit), 0)"));
  for (const auto& r : rows)
    add_violation(report, "journal_unbalanced", "journal " + r.str(0) + " (" + r.str(1) + ")",
                  r.str(2) + " entries, debits " + r.str(3) + ", credits " + r.str(4));
  return {};
}

// Every entry's account is in the currency and environment of its journal.
Status check_entry_currency(store::Conn& c, Report& report) {
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT e.id, j.id FROM ledger_entries e "
                                           "JOIN ledger_journals j ON j.id = e.journal_id "
                                           "JOIN ledger_accounts a ON a.id = e.account_id "
                                           "WHERE a.currency <> j.currency OR a.environment <> j.environment"));
  for (const auto& r : rows)
    add_violation(report, "entry_currency", "entry " + r.str(0),
                  "its account is not in the currency/environment of journal " + r.str(1));
  return {};
}

// Fills report.totals (by environment, then currency) and flags each one whose debits differ from its credits.
Status check_currency_totals(store::Conn& c, Report& report) {
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT a.environment, a.currency, COALESCE(SUM(e.debit), 0), "
                                           "COALESCE(SUM(e.credit), 0) FROM ledger_entries e "
                                           "JOIN ledger_accounts a ON a.id = e.account_id "
                                           "GROUP BY a.environment, a.currency ORDER BY a.environment, a.currency"));
  for (const auto& r : rows) {
    Report::Total t{r.str(0), r.str(1), r.i64(2), r.i64(3)};
    if (t.debits != t.credits)
      add_violation(report, "currency_unbalanced", t.environment + "/" + t.currency,
                    "debits " + std::to_string(t.debits) + " != credits " + std::to_string(t.credits));
    report.totals.push_back(std::move(t));
  }
  return {};
}

// Every account's balance is the sum of its entries, is not negative unless its kind allows it,
// and its may_go_negative flag matches its kind.
Status check_account_balances(store::Conn& c, Report& report) {
  SIKA_ASSIGN_OR_RETURN(
      auto rows, c.query("SELECT a.id, a.owner, a.environment, a.currency, a.kind, a.balance, "
                         "COALESCE(SUM(e.credit), 0) - COALESCE(SUM(e.debit), 0), a.may_go_negative "
                         "FROM ledger_accounts a LEFT JOIN ledger_entries e ON e.account_id = a.id "
                         "GROUP BY a.id, a.owner, a.environment, a.currency, a.kind, a.balance, a.may_go_negative"));
  for (const auto& r : rows) {
    std::string subject = r.str(1) + "/" + r.str(2) + "/" + r.str(3) + "/" + r.str(4);
    if (r.i64(5) != r.i64(6))
      add_violation(report, "balance_mismatch", subject, "balance " + r.str(5) + " != sum of entries " + r.str(6));
    if (!r.boolean(7) && r.i64(5) < 0) add_violation(report, "negative_balance", subject, "balance " + r.str(5));
    bool kind_may_go_negative = AccountKey{"", "", "", r.str(4)}.may_go_negative();
    if (r.boolean(7) != kind_may_go_negative)
      add_violation(report, "account_flags", subject, "may_go_negative does not match its kind");
  }
  return {};
}

// One transaction's journal kinds, gathered from its rows of check_transaction_journals' query.
struct PostedJournals {
  std::int64_t id = -1;
  std::string reference, operation, status;
  bool converted = false;
  std::set<std::string> seen;
};

// Flags a transaction (if any) whose posted journal kinds are not those its status implies.
void finish_transaction(Report& report, const PostedJournals& t) {
  if (t.id < 0) return;
  auto expected = expected_journals(t.operation, t.status, t.converted);
  if (t.seen != expected) {
    std::string have, want;
    for (const auto& k : t.seen) have += (have.empty() ? "" : ",") + k;
    for (const auto& k : expected) want += (want.empty() ? "" : ",") + k;
    add_violation(report, "transaction_journals", t.reference,
                  t.operation + " " + t.status + " posted {" + have + "}, expected {" + want + "}");
  }
}

// Every transaction posted exactly the journals its status implies, each moving
// required_total (a converted collection's FX_SETTLEMENT: the amount its conversion credits).
Status check_transaction_journals(store::Conn& c, Report& report) {
  SIKA_ASSIGN_OR_RETURN(auto rows,
                        c.query("SELECT t.id, t.reference, t.operation, t.status, t.required_total, j.kind, "
                                "COALESCE(SUM(e.debit), 0), x.amount FROM pay_transactions t "
                                "LEFT JOIN pay_conversions x ON x.transaction_id = t.id "
                                "LEFT JOIN ledger_journals j ON j.transaction_id = t.id "
                                "LEFT JOIN ledger_entries e ON e.journal_id = j.id "
                                "GROUP BY t.id, t.reference, t.operation, t.status, t.required_total, j.kind, x.amount "
                                "ORDER BY t.id"));
  PostedJournals t;
  for (const auto& r : rows) {
    if (r.i64(0) != t.id) {
      finish_transaction(report, t);
      t.id = r.i64(0);
      t.reference = r.str(1);
      t.operation = r.str(2);
      t.status = r.str(3);
      t.converted = !r.is_null(7);
      t.seen.clear();
    }
    if (r.is_null(5)) continue;
    t.seen.insert(r.str(5));
    if (r.str(5) == kFxSettlement) {
      if (r.is_null(7) || r.i64(6) != r.i64(7))
        add_violation(report, "journal_amount", t.reference + " " + r.str(5),
                      "moves " + r.str(6) + ", its conversion credits " + (r.is_null(7) ? "nothing" : r.str(7)));
    } else if (r.i64(6) != r.i64(4)) {
      add_violation(report, "journal_amount", t.reference + " " + r.str(5),
                    "moves " + r.str(6) + ", required_total is " + r.str(4));
    }
  }
  finish_transaction(report, t);
  return {};
}

// Settled split lines add up to the amount of their transaction (of its conversion when
// the merchants are credited in another currency).
Status check_split_totals(store::Conn& c, Report& report) {
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT t.reference, COALESCE(x.amount, t.amount), t.split_status, "
                                           "COUNT(s.id), COALESCE(SUM(s.amount), 0), COUNT(s.amount) "
                                           "FROM pay_transactions t JOIN pay_splits s ON s.transaction_id = t.id "
                                           "LEFT JOIN pay_conversions x ON x.transaction_id = t.id "
                                           "GROUP BY t.id, t.reference, t.amount, x.amount, t.split_status"));
  for (const auto& r : rows) {
    bool settled = r.str(2) == "SETTLED";
    if (settled && (r.i64(4) != r.i64(1) || r.i64(5) != r.i64(3)))
      add_violation(report, "split_total", r.str(0), "split lines total " + r.str(4) + ", amount is " + r.str(1));
    if (!settled && r.i64(5) != 0) add_violation(report, "split_total", r.str(0), "unsettled split has amounts");
  }
  return {};
}

// The journal kinds a refund must have posted, by status. A refund of a converted collection posts
// its REFUND_RESERVE/REFUND/REFUND_RELEASE in the order's currency only when it costs something
// there, and at COMPLETED a REFUND_FX in the collection's currency.
std::set<std::string> expected_refund_journals(std::string_view status, bool converted, bool costs) {
  std::set<std::string> kinds;
  if (costs) {
    if (status == "PENDING" || status == "PROCESSING") kinds = {std::string(kRefundReserve)};
    if (status == "COMPLETED") kinds = {std::string(kRefundReserve), std::string(kRefund)};
    if (status == "FAILED") kinds = {std::string(kRefundReserve), std::string(kRefundRelease)};
  }
  if (converted && status == "COMPLETED") kinds.insert(std::string(kRefundFx));
  return kinds;
}

// Every refund posted exactly the journals its status implies, each moving its amount (in the
// order's currency, its converted_amount; REFUND_FX its amount).
Status check_refund_journals(store::Conn& c, Report& report) {
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT r.id, r.reference, r.status, r.amount, j.kind, "
                                           "COALESCE(SUM(e.debit), 0), r.converted_amount FROM pay_refunds r "
                                           "LEFT JOIN ledger_journals j ON j.refund_id = r.id "
                                           "LEFT JOIN ledger_entries e ON e.journal_id = j.id "
                                           "GROUP BY r.id, r.reference, r.status, r.amount, j.kind, "
                                           "r.converted_amount ORDER BY r.id"));
  std::int64_t id = -1;
  std::string reference, status;
  bool converted = false;
  std::int64_t cost = 0;
  std::set<std::string> seen;
  auto finish = [&] {
    if (id < 0) return;
    auto expected = expected_refund_journals(status, converted, cost > 0);
    if (seen == expected) return;
    std::string have, want;
    for (const auto& k : seen) have += (have.empty() ? "" : ",") + k;
    for (const auto& k : expected) want += (want.empty() ? "" : ",") + k;
    add_violation(report, "refund_journals", reference, status + " posted {" + have + "}, expected {" + want + "}");
  };
  for (const auto& r : rows) {
    if (r.i64(0) != id) {
      finish();
      id = r.i64(0);
      reference = r.str(1);
      status = r.str(2);
      converted = !r.is_null(6);
      cost = converted ? r.i64(6) : r.i64(3);
      seen.clear();
    }
    if (r.is_null(4)) continue;
    seen.insert(r.str(4));
    const bool in_collection_currency = !converted || r.str(4) == kRefundFx;
    const std::int64_t moves = in_collection_currency ? r.i64(3) : cost;
    if (r.i64(5) != moves)
      add_violation(report, "journal_amount", reference + " " + r.str(4),
                    "moves " + r.str(5) + ", the refund's " + (in_collection_currency ? "amount" : "converted amount") +
                        " is " + std::to_string(moves));
  }
  finish();
  return {};
}

// A collection's refunded_amount is the sum of its COMPLETED refunds and its refunding_amount that of
// its refunds in flight; together never beyond its amount; REFUNDED exactly when refunded in full.
Status check_refund_totals(store::Conn& c, Report& report) {
  SIKA_ASSIGN_OR_RETURN(
      auto rows,
      c.query("SELECT t.reference, t.status, t.amount, t.refunded_amount, t.refunding_amount, "
              "COALESCE(SUM(CASE WHEN r.status = 'COMPLETED' THEN r.amount ELSE 0 END), 0), "
              "COALESCE(SUM(CASE WHEN r.status IN ('PENDING', 'PROCESSING') THEN r.amount ELSE 0 END), 0) "
              "FROM pay_transactions t LEFT JOIN pay_refunds r ON r.transaction_id = t.id "
              "WHERE t.refunded_amount <> 0 OR t.refunding_amount <> 0 OR r.id IS NOT NULL OR t.status = 'REFUNDED' "
              "GROUP BY t.id, t.reference, t.status, t.amount, t.refunded_amount, t.refunding_amount"));
  for (const auto& r : rows) {
    const std::string subject = r.str(0);
    if (r.i64(3) != r.i64(5))
      add_violation(report, "refunded_amount", subject,
                    "refunded_amount " + r.str(3) + " != completed refunds " + r.str(5));
    if (r.i64(4) != r.i64(6))
      add_violation(report, "refunding_amount", subject,
                    "refunding_amount " + r.str(4) + " != refunds in flight " + r.str(6));
    if (r.i64(3) + r.i64(4) > r.i64(2))
      add_violation(report, "refund_beyond_amount", subject,
                    "refunded " + r.str(3) + " + in flight " + r.str(4) + " > amount " + r.str(2));
    if ((r.str(1) == "REFUNDED") != (r.i64(3) == r.i64(2)))
      add_violation(report, "refunded_status", subject,
                    r.str(1) + " with refunded_amount " + r.str(3) + " of " + r.str(2));
  }
  return {};
}

// A converted collection's refunds each recorded their cost in the order's currency; the COMPLETED
// and in-flight ones never cost more than the collection credited, and a REFUNDED one cost exactly that.
Status check_refund_costs(store::Conn& c, Report& report) {
  SIKA_ASSIGN_OR_RETURN(
      auto rows,
      c.query("SELECT t.reference, t.status, x.amount, "
              "COALESCE(SUM(CASE WHEN r.status = 'COMPLETED' THEN r.converted_amount ELSE 0 END), 0), "
              "COALESCE(SUM(CASE WHEN r.status IN ('PENDING', 'PROCESSING') THEN r.converted_amount ELSE 0 END), 0), "
              "COUNT(r.id) - COUNT(r.converted_amount) "
              "FROM pay_transactions t JOIN pay_conversions x ON x.transaction_id = t.id "
              "JOIN pay_refunds r ON r.transaction_id = t.id "
              "GROUP BY t.id, t.reference, t.status, x.amount"));
  for (const auto& r : rows) {
    const std::string subject = r.str(0);
    if (r.i64(5) != 0) add_violation(report, "refund_cost", subject, r.str(5) + " refunds without their cost");
    if (r.i64(3) + r.i64(4) > r.i64(2))
      add_violation(report, "refund_beyond_converted", subject,
                    "refunds cost " + r.str(3) + " + in flight " + r.str(4) + " > credited " + r.str(2));
    if (r.str(1) == "REFUNDED" && r.i64(3) != r.i64(2))
      add_violation(report, "refund_beyond_converted", subject,
                    "REFUNDED, its refunds cost " + r.str(3) + " of the " + r.str(2) + " credited");
  }
  return {};
}

// Runs every check in a fixed order, so that violations are always listed in that order.
Status run_checks(store::Conn& c, Report& report) {
  SIKA_TRY(count_rows(c, report));
  SIKA_TRY(check_entries_well_formed(c, report));
  SIKA_TRY(check_journals_balanced(c, report));
  SIKA_TRY(check_entry_currency(c, report));
  SIKA_TRY(check_currency_totals(c, report));
  SIKA_TRY(check_account_balances(c, report));
  SIKA_TRY(check_transaction_journals(c, report));
  SIKA_TRY(check_split_totals(c, report));
  SIKA_TRY(check_refund_journals(c, report));
  SIKA_TRY(check_refund_totals(c, report));
  SIKA_TRY(check_refund_costs(c, report));
  return {};
}

}  // namespace

Result<Report> check(store::Db& db) {
  Report report;
  SIKA_TRY(db.read([&](store::Conn& c) -> Status {
    report = Report{};
    return run_checks(c, report);
  }));
  return report;
}

}  // namespace sika::payments::ledger
