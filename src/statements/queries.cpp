#include "statements/queries.hpp"

#include <algorithm>

#include "statements/settlement.hpp"

namespace sika::statements::queries {

Result<Frame> frame(store::Conn& c, const payments::ledger::AccountKey& k, std::int64_t start_ms, std::int64_t end_ms) {
  Frame f;
  SIKA_ASSIGN_OR_RETURN(auto account, c.query_one("SELECT id, balance FROM ledger_accounts WHERE owner = ? AND "
                                                  "environment = ? AND currency = ? AND kind = ?",
                                                  {k.owner, k.environment, k.currency, k.kind}));
  if (!account) return f;
  f.account_id = account->i64(0);
  const std::int64_t balance = account->i64(1);
  // What moved from each instant on: a range of ledger_entries_account_time.
  SIKA_ASSIGN_OR_RETURN(
      auto moved, c.query_one("SELECT COALESCE(SUM(CASE WHEN created_at >= ? THEN credit - debit ELSE 0 END), 0), "
                              "COALESCE(SUM(credit - debit), 0), COALESCE(MAX(id), 0) FROM ledger_entries "
                              "WHERE account_id = ? AND created_at >= ?",
                              {end_ms, *f.account_id, start_ms}));
  SIKA_ASSIGN_OR_RETURN(auto newest, c.query_one("SELECT COALESCE(MAX(id), 0) FROM ledger_entries WHERE account_id = ?",
                                                 {*f.account_id}));
  f.closing = balance - (moved ? moved->i64(0) : 0);
  f.opening = balance - (moved ? moved->i64(1) : 0);
  f.last_entry_id = newest ? newest->i64(0) : 0;
  SIKA_ASSIGN_OR_RETURN(auto batches, settlement::paid_batches(c, *f.account_id, f.last_entry_id));
  for (const auto& b : batches) f.settled.push_back({b.after_entry_id, b.last_entry_id, b.paid_at.value_or(0)});
  return f;
}

std::optional<std::int64_t> Frame::settled_at(std::int64_t id) const {
  auto it = std::lower_bound(settled.begin(), settled.end(), id,
                             [](const Settled& s, std::int64_t v) { return s.last_entry_id < v; });
  if (it == settled.end() || it->after_entry_id >= id) return std::nullopt;
  return it->paid_at;
}

Result<std::vector<EntryRow>> entries(store::Conn& c, std::int64_t account_id, std::int64_t start_ms,
                                      std::int64_t end_ms, std::int64_t last_entry_id,
                                      const std::optional<Cursor>& after, int limit) {
  std::string sql =
      "SELECT e.id, e.created_at, e.debit, e.credit, j.kind, j.memo, t.reference, t.transaction_uuid, "
      "t.metadata, t.operator_reference, t.settlement_mode, t.fee, rf.reference FROM ledger_entries e "
      "JOIN ledger_journals j ON j.id = e.journal_id LEFT JOIN pay_transactions t ON t.id = j.transaction_id "
      "LEFT JOIN pay_refunds rf ON rf.id = j.refund_id "
      "WHERE e.account_id = ? AND e.id <= ? AND ";
  store::Params params{account_id, last_entry_id};
  if (after) {
    // A row-value comparison: both backends read it as a range of the index (an OR would not).
    sql += "(e.created_at, e.id) > (?, ?) AND e.created_at < ? ";
    params.insert(params.end(), {after->created_at, after->id, end_ms});
  } else {
    sql += "e.created_at >= ? AND e.created_at < ? ";
    params.insert(params.end(), {start_ms, end_ms});
  }
  sql += "ORDER BY e.created_at, e.id LIMIT ?";
  params.emplace_back(std::int64_t{limit});
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query(sql, params));
  std::vector<EntryRow> out;
  out.reserve(rows.size());
  for (const auto& r : rows) {
    EntryRow e;
    e.id = r.i64(0);
    e.created_at = r.i64(1);
    e.debit = r.i64(2);
    e.credit = r.i64(3);
    e.journal_kind = r.str(4);
    e.memo = r.str(5);
    e.reference = r.opt_str(6);
    e.transaction_uuid = r.opt_str(7);
    e.metadata = r.opt_str(8);
    e.operator_reference = r.opt_str(9);
    e.settlement_mode = r.opt_str(10);
    e.tx_fee = r.opt_i64(11).value_or(0);
    e.refund_reference = r.opt_str(12);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace sika::statements::queries
