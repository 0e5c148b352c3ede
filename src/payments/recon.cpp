#include "payments/recon.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <limits>

#include "core/crypto.hpp"
#include "core/random.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "payments/ledger.hpp"

namespace sika::payments::recon {

namespace bj = boost::json;

namespace {

constexpr std::int64_t kDayMs = 24LL * 3600 * 1000;
// Lines per multi-row INSERT (11 parameters each): on PostgreSQL the server describes a prepared
// statement's parameters in one message of 6 + 4 per parameter bytes, which libpq refuses over
// 30,000 bytes ("lost synchronization with server"): 500 rows (5,500 parameters, 22,006 bytes)
// stay well under it.
constexpr int kRowsPerStatement = 500;

// Sika's side of a payment in "held" terms: what the operator holds for us because of it.
constexpr std::string_view kSikaHeld =
    "CASE WHEN t.status = 'COMPLETED' THEN (CASE WHEN t.operation = 'COLLECTION' THEN t.required_total "
    "ELSE -t.amount END) ELSE 0 END";
// The amount the operator moves for a payment: what the customer pays for a collection, what is
// paid to the customer otherwise.
constexpr std::string_view kSikaAmount = "CASE WHEN t.operation = 'COLLECTION' THEN t.required_total ELSE t.amount END";
constexpr std::string_view kSikaState =
    "CASE t.status WHEN 'COMPLETED' THEN 'succeeded' WHEN 'FAILED' THEN 'failed' WHEN 'EXPIRED' THEN 'failed' "
    "ELSE 'pending' END";

constexpr std::string_view kItemColumns =
    "i.id, i.run_id, i.transaction_id, i.journal_id, i.occurred_at, i.decided_at, i.reference, "
    "COALESCE(t.reference, ''), i.kind, i.state, COALESCE(i.sika_currency, ''), COALESCE(i.sika_status, ''), "
    "COALESCE(i.operator_currency, ''), COALESCE(i.operator_status, ''), i.sika_amount, i.operator_amount, "
    "i.sika_held, i.operator_held, COALESCE(i.decided_by, ''), COALESCE(i.decision_reason, ''), "
    "COALESCE(i.operator_live_status, ''), i.live_checked_at";

Item item_from_row(const store::Row& r) {
  Item i;
  i.id = r.i64(0);
  i.run_id = r.i64(1);
  i.transaction_id = r.opt_i64(2);
  i.journal_id = r.opt_i64(3);
  i.occurred_at = r.opt_i64(4);
  i.decided_at = r.opt_i64(5);
  i.reference = r.str(6);
  i.transaction_reference = r.str(7);
  i.kind = r.str(8);
  i.state = r.str(9);
  i.sika_currency = r.str(10);
  i.sika_status = r.str(11);
  i.operator_currency = r.str(12);
  i.operator_status = r.str(13);
  i.sika_amount = r.opt_i64(14);
  i.operator_amount = r.opt_i64(15);
  i.sika_held = r.i64(16);
  i.operator_held = r.i64(17);
  i.decided_by = r.str(18);
  i.decision_reason = r.str(19);
  i.operator_live_status = r.str(20);
  i.live_checked_at = r.opt_i64(21);
  return i;
}

constexpr std::string_view kRunColumns =
    "id, connector, environment, format, file_name, file_hash, status, imported_by, COALESCE(service_code, ''), "
    "period_start, period_end, line_count, created_at, finished_at, closing_balance, closing_currency";

Summary summary_from_row(const store::Row& r) {
  Summary s;
  s.run_id = r.i64(0);
  s.connector = r.str(1);
  s.environment = r.str(2);
  s.format = r.str(3);
  s.file_name = r.str(4);
  s.file_hash = r.str(5);
  s.status = r.str(6);
  s.imported_by = r.str(7);
  s.service_code = r.str(8);
  s.period_start = r.i64(9);
  s.period_end = r.i64(10);
  s.lines = r.i64(11);
  s.created_at = r.i64(12);
  s.finished_at = r.opt_i64(13);
  return s;
}

constexpr std::string_view kClosingColumns =
    "connector, day, currency, run_id, sika_clearing, operator_balance, open_items, open_count, operator_fees, "
    "unexplained, entered_by, computed_at";

Closing closing_from_row(const store::Row& r) {
  Closing c;
  c.connector = r.str(0);
  c.day = r.str(1);
  c.currency = r.str(2);
  c.run_id = r.opt_i64(3);
  c.sika_clearing = r.i64(4);
  c.operator_balance = r.i64(5);
  c.open_items = r.i64(6);
  c.open_count = r.i64(7);
  c.operator_fees = r.i64(8);
  c.unexplained = r.i64(9);
  c.entered_by = r.str(10);
  c.computed_at = r.i64(11);
  return c;
}

std::string environment_of(std::string_view connector) {
  return connector == "sandbox" ? std::string("sandbox") : std::string("prod");
}

ledger::AccountKey adjustment_account(std::string_view env, std::string_view currency) {
  return ledger::AccountKey{"platform:recon", std::string(env), std::string(currency), "adjustment"};
}

}  // namespace

std::string day_of(std::int64_t epoch_ms) { return iso8601(epoch_ms).substr(0, 10); }

std::optional<std::int64_t> day_start(std::string_view day) {
  if (day.size() != 10) return std::nullopt;
  auto t = parse_iso8601(std::string(day) + "T00:00:00Z");
  if (!t || day_of(*t) != day) return std::nullopt;
  return t;
}

namespace {

// The format of an import, once its connector names one ([a-z0-9_], at most 64): 400 naming the
// field otherwise.
Result<const Format*> import_format(const ImportRequest& req) {
  if (req.connector.empty() || req.connector.size() > 64 ||
      !std::all_of(req.connector.begin(), req.connector.end(),
                   [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }))
    return field_error("connector", Reason::connector_name_chars);
  const Format* format = format_named(req.format.empty() ? "normalised" : req.format);
  if (!format) {
    std::string known;
    for (const auto& f : formats()) known += (known.empty() ? "" : ", ") + std::string(f.kind);
    return field_error("format", reason::with(Reason::one_of, "values", known));
  }
  return format;
}

// In the unit whose heartbeat just held the run `importing`: the run becomes `done`, its lease
// cleared (the one move of kRunStatus).
Status finish_run(store::Conn& c, std::int64_t run_id, std::int64_t at) {
  store::Change change;
  change.set = "finished_at = ?, lease_owner = NULL, lease_until = NULL";
  change.set_params = {at};
  change.where_params = {run_id};
  SIKA_ASSIGN_OR_RETURN(bool moved, store::transition(c, kRunStatus, RunStatus::importing, RunStatus::done, change));
  if (!moved) return internal_error(bj::string("a held reconciliation run could not become done"));
  return {};
}

// Removes an unfinished run, so that the same file can be imported again (nothing of it was
// decided). When this fails too, the run stays `importing` (docs/reconciliation.md).
void undo_run(store::Db& db, std::int64_t run_id) {
  Status undone = db.write([&](store::Conn& c) -> Status {
    SIKA_TRY(c.exec("DELETE FROM recon_items WHERE run_id = ?", {run_id}));
    SIKA_TRY(c.exec("DELETE FROM recon_lines WHERE run_id = ?", {run_id}));
    SIKA_TRY(c.exec("DELETE FROM recon_runs WHERE id = ? AND status = 'importing'", {run_id}));
    return {};
  });
  (void)undone;
}

}  // namespace

Reconciler::Reconciler(store::Db& db, std::function<std::int64_t()> clock, Options options)
    : db_(db), clock_(std::move(clock)), options_(options) {
  if (options_.batch < 100) options_.batch = 100;
}

Result<Summary> Reconciler::import(const ImportRequest& req) {
  SIKA_ASSIGN_OR_RETURN(const Format* format, import_format(req));
  const std::string hash = hex_encode(crypto::sha256(req.text));
  // The same file again is the same run, whatever its name.
  std::optional<std::int64_t> existing;
  std::string existing_status;
  bool lease_alive = false;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT id, status, lease_until FROM recon_runs WHERE connector = ? "
                                                "AND file_hash = ?",
                                                {req.connector, hash}));
    existing.reset();
    if (row)
      existing = row->i64(0), existing_status = row->str(1), lease_alive = row->opt_i64(2).value_or(0) >= clock_();
    return {};
  }));
  if (existing && kRunStatus.parse(existing_status) == RunStatus::done) {
    SIKA_ASSIGN_OR_RETURN(auto s, report(*existing));
    s.replayed = true;
    return s;
  }
  if (existing && lease_alive) return with_problem(conflict(), "file", Reason::file_importing);
  // An interrupted import (its process died: the lease was not renewed): its run is removed and
  // the file imported afresh.
  if (existing) SIKA_TRY(clean_up_interrupted(*existing));
  SIKA_ASSIGN_OR_RETURN(Statement statement, parse(req.text, *format));
  const std::int64_t at = clock_();
  const std::int64_t period_start = statement.period_start.value_or(at);
  const std::int64_t period_end = statement.period_end.value_or(at);
  std::optional<std::int64_t> run_id;
  const std::string owner = random_token(16);
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    std::string service = req.service_code;
    if (service.empty()) {
      SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT service_code FROM pay_transactions WHERE connector = ? "
                                                  "ORDER BY id DESC LIMIT 1",
                                                  {req.connector}));
      if (row) service = row->str(0);
    }
    SIKA_ASSIGN_OR_RETURN(
        run_id,
        c.insert_id("INSERT INTO recon_runs (connector, environment, format, file_hash, file_name, service_code, "
                    "period_start, period_end, line_count, closing_balance, closing_currency, status, imported_by, "
                    "created_at, lease_owner, lease_until) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'importing', ?, ?, "
                    "?, ?) ON CONFLICT (connector, file_hash) DO NOTHING",
                    {req.connector, environment_of(req.connector), std::string(format->kind), hash, req.file_name,
                     service.empty() ? store::Value(nullptr) : store::Value(service), period_start, period_end,
                     static_cast<std::int64_t>(statement.lines.size()), store::opt(statement.closing_balance),
                     statement.closing_balance ? store::Value(statement.closing_currency) : store::Value(nullptr),
                     req.actor, at, owner, clock_() + options_.lease_ms}));
    return {};
  }));
  if (!run_id) return with_problem(conflict(), "file", Reason::file_importing);
  Status built = [&]() -> Status {
    SIKA_TRY(insert_lines(*run_id, owner, statement));
    SIKA_TRY(match_lines(*run_id, owner, req.connector));
    SIKA_TRY(find_missing(*run_id, owner, req.connector, period_start, period_end));
    SIKA_TRY(refresh(req.connector, run_id));
    return db_.write([&](store::Conn& c) -> Status {
      SIKA_TRY(heartbeat(c, *run_id, owner));
      return finish_run(c, *run_id, clock_());
    });
  }();
  if (!built) {
    undo_run(db_, *run_id);
    return built.error();
  }
  if (statement.closing_balance) {
    SIKA_ASSIGN_OR_RETURN(auto closed, close_day(req.connector, day_of(period_end - 1), statement.closing_currency,
                                                 *statement.closing_balance, req.actor, run_id));
    (void)closed;
  }
  return summary(*run_id);
}

Status Reconciler::heartbeat(store::Conn& c, std::int64_t run_id, const std::string& owner) {
  SIKA_ASSIGN_OR_RETURN(std::int64_t held,
                        c.exec("UPDATE recon_runs SET lease_until = ? WHERE id = ? AND lease_owner = ? AND "
                               "status = 'importing'",
                               {clock_() + options_.lease_ms, run_id, owner}));
  if (held != 1) return with_problem(conflict(), "file", Reason::import_lease_lost);
  return {};
}

Status Reconciler::clean_up_interrupted(std::int64_t run_id) {
  return db_.write([&](store::Conn& c) -> Status {
    // The claim: only while the run is still importing and its lease has ended (an importer that
    // heartbeats meanwhile keeps it; of two imports cleaning up at once, one changes the row).
    SIKA_ASSIGN_OR_RETURN(std::int64_t taken,
                          c.exec("UPDATE recon_runs SET lease_owner = NULL, lease_until = NULL WHERE id = ? AND "
                                 "status = 'importing' AND (lease_until IS NULL OR lease_until < ?)",
                                 {run_id, clock_()}));
    if (taken != 1) return with_problem(conflict(), "file", Reason::file_importing);
    SIKA_TRY(c.exec("DELETE FROM recon_items WHERE run_id = ?", {run_id}));
    SIKA_TRY(c.exec("DELETE FROM recon_lines WHERE run_id = ?", {run_id}));
    SIKA_TRY(c.exec("DELETE FROM recon_runs WHERE id = ?", {run_id}));
    return {};
  });
}

Status Reconciler::insert_lines(std::int64_t run_id, const std::string& owner, const Statement& s) {
  const std::size_t batch = static_cast<std::size_t>(options_.batch);
  for (std::size_t from = 0; from < s.lines.size(); from += batch) {
    const std::size_t to = std::min(s.lines.size(), from + batch);
    SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
      SIKA_TRY(heartbeat(c, run_id, owner));
      for (std::size_t a = from; a < to; a += kRowsPerStatement) {
        const std::size_t b = std::min(to, a + kRowsPerStatement);
        std::string sql =
            "INSERT INTO recon_lines (run_id, line_no, operator_reference, our_reference, type, amount, currency, "
            "status, operator_status, occurred_at, fee) VALUES ";
        store::Params p;
        p.reserve((b - a) * 11);
        for (std::size_t i = a; i < b; ++i) {
          const StatementLine& l = s.lines[i];
          sql += i == a ? "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)" : ", (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
          p.insert(p.end(), {run_id, l.line_no, l.operator_reference,
                             l.our_reference.empty() ? store::Value(nullptr) : store::Value(l.our_reference), l.type,
                             l.amount, l.currency, l.status, l.operator_status, l.occurred_at, l.fee});
        }
        SIKA_TRY(c.exec(sql, p));
      }
      return {};
    }));
  }
  return {};
}

// One unit per range of line ids (read by the primary key: `+l.run_id` keeps the planner off the
// (run_id, operator_reference) index, which would read the whole run for every range): each line
// finds its payment by the operator's reference, else by ours; the item's kind is decided in SQL. A status mismatch of
// a PENDING payment makes recovery ask the operator now.
Status Reconciler::match_lines(std::int64_t run_id, const std::string& owner, const std::string& connector) {
  std::int64_t lo = 0, hi = -1;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT MIN(id), MAX(id) FROM recon_lines WHERE run_id = ?", {run_id}));
    if (row && !row->is_null(0)) lo = row->i64(0), hi = row->i64(1);
    return {};
  }));
  const std::string kind =
      "CASE WHEN t.id IS NULL THEN 'missing_in_sika' "
      "WHEN t.currency <> l.currency THEN 'mismatch_currency' "
      "WHEN (" +
      std::string(kSikaState) +
      ") <> l.status THEN 'mismatch_status' "
      "WHEN l.status = 'succeeded' AND (" +
      std::string(kSikaAmount) +
      ") <> l.amount THEN 'mismatch_amount' "
      "ELSE 'matched' END";
  const std::string sql =
      "INSERT INTO recon_items (run_id, line_id, transaction_id, reference, kind, state, sika_currency, sika_amount, "
      "sika_status, sika_held, operator_currency, operator_amount, operator_status, operator_held, occurred_at, "
      "created_at) SELECT m.run_id, m.line_id, m.tx_id, m.reference, m.kind, "
      "CASE WHEN m.kind = 'matched' THEN 'resolved' ELSE 'open' END, m.sika_currency, m.sika_amount, m.sika_status, "
      "m.sika_held, m.operator_currency, m.operator_amount, m.operator_status, m.operator_held, m.occurred_at, ? "
      "FROM (SELECT l.run_id AS run_id, l.id AS line_id, t.id AS tx_id, l.operator_reference AS reference, " +
      kind + " AS kind, t.currency AS sika_currency, " + "CASE WHEN t.id IS NULL THEN NULL ELSE " +
      std::string(kSikaAmount) + " END AS sika_amount, " + "t.status AS sika_status, COALESCE(" +
      std::string(kSikaHeld) + ", 0) AS sika_held, " +
      "l.currency AS operator_currency, l.amount AS operator_amount, l.status AS operator_status, "
      "CASE WHEN l.status <> 'succeeded' THEN 0 WHEN l.type = 'collection' THEN l.amount ELSE -l.amount END "
      "AS operator_held, l.occurred_at AS occurred_at "
      "FROM recon_lines l LEFT JOIN pay_transactions t ON t.id = COALESCE("
      "(SELECT x.id FROM pay_transactions x WHERE x.connector = ? AND x.operator_reference = l.operator_reference "
      "LIMIT 1), "
      "(SELECT y.id FROM pay_transactions y WHERE y.provider_reference = l.our_reference AND y.connector = ?)) "
      "WHERE l.id >= ? AND l.id < ? AND +l.run_id = ?) m";
  const std::int64_t step = options_.batch;
  for (std::int64_t from = lo; from <= hi; from += step) {
    SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
      SIKA_TRY(heartbeat(c, run_id, owner));
      const std::int64_t at = clock_();
      SIKA_TRY(c.exec(sql, {at, connector, connector, from, from + step, run_id}));
      SIKA_TRY(
          c.exec("UPDATE pay_transactions SET next_check_at = ? WHERE status = 'PENDING' AND next_check_at > ? "
                 "AND id IN (SELECT transaction_id FROM recon_items WHERE run_id = ? AND kind = 'mismatch_status' "
                 "AND line_id >= ? AND line_id < ?)",
                 {at, at, run_id, from, from + step}));
      // A status mismatch of a payment final here: the recovery engine asks the operator's status
      // API about it again now (Service::ask_about_final_mismatches), without moving money.
      SIKA_TRY(
          c.exec("UPDATE recon_items SET live_check_at = ? WHERE run_id = ? AND kind = 'mismatch_status' "
                 "AND line_id >= ? AND line_id < ? AND transaction_id IN (SELECT id FROM pay_transactions "
                 "WHERE status IN ('COMPLETED', 'FAILED', 'EXPIRED'))",
                 {at, run_id, from, from + step}));
      return {};
    }));
  }
  return {};
}

// The connector's payments of the period that no statement line matched: COMPLETED (money moved
// in Sika's books) or PENDING. Older than the grace period: missing_at_operator; younger: timing.
// Pages of `batch` payments in (submitted_at, id) order, one unit each.
Status Reconciler::find_missing(std::int64_t run_id, const std::string& owner, const std::string& connector,
                                std::int64_t from, std::int64_t to) {
  std::int64_t after_at = from - 1, after_id = 0;
  const std::string sql =
      "INSERT INTO recon_items (run_id, transaction_id, reference, kind, state, sika_currency, sika_amount, "
      "sika_status, sika_held, operator_held, occurred_at, created_at) "
      "SELECT ?, t.id, COALESCE(t.operator_reference, t.provider_reference), "
      "CASE WHEN t.submitted_at < ? THEN 'missing_at_operator' ELSE 'timing' END, 'open', t.currency, " +
      std::string(kSikaAmount) + ", t.status, " + std::string(kSikaHeld) +
      ", 0, t.submitted_at, ? FROM pay_transactions t "
      "WHERE t.connector = ? AND t.submitted_at < ? AND (t.submitted_at, t.id) > (?, ?) "
      "AND (t.submitted_at, t.id) <= (?, ?) "
      "AND t.status IN ('COMPLETED', 'PENDING') "
      "AND NOT EXISTS (SELECT 1 FROM recon_items i WHERE i.transaction_id = t.id)";
  for (;;) {
    std::optional<std::pair<std::int64_t, std::int64_t>> last;
    SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
      last.reset();
      SIKA_ASSIGN_OR_RETURN(
          auto row,
          c.query_one("SELECT submitted_at, id FROM pay_transactions WHERE connector = ? AND submitted_at < ? "
                      "AND (submitted_at, id) > (?, ?) ORDER BY submitted_at, id LIMIT 1 OFFSET ?",
                      {connector, to, after_at, after_id, std::int64_t{options_.batch - 1}}));
      if (row) last = std::make_pair(row->i64(0), row->i64(1));
      return {};
    }));
    // The last page ends at the period's end.
    const std::int64_t until_at = last ? last->first : to, until_id = last ? last->second : 0;
    SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
      SIKA_TRY(heartbeat(c, run_id, owner));
      const std::int64_t at = clock_();
      SIKA_TRY(c.exec(sql, {run_id, at - options_.grace_ms, at, connector, to, after_at, after_id, until_at,
                            last ? until_id : std::numeric_limits<std::int64_t>::max()}));
      return {};
    }));
    if (!last) break;
    after_at = last->first;
    after_id = last->second;
  }
  return {};
}

// What has settled since: an item waiting for a later statement that a line has now matched
// (resolved), a timing item past the grace period (missing_at_operator), a status mismatch whose
// payment the operator's answer has since moved to the line's status (resolved by recovery).
Status Reconciler::refresh(const std::string& connector, std::optional<std::int64_t> run_id) {
  return db_.write([&](store::Conn& c) -> Status {
    const std::int64_t at = clock_();
    SIKA_TRY(
        c.exec("UPDATE recon_items SET state = 'resolved', decided_by = 'matcher', decided_at = ?, "
               "decision_reason = 'in a later statement' "
               "WHERE state = 'open' AND kind IN ('timing', 'missing_at_operator') "
               "AND run_id IN (SELECT id FROM recon_runs WHERE connector = ?) "
               "AND EXISTS (SELECT 1 FROM recon_items j WHERE j.transaction_id = recon_items.transaction_id "
               "AND j.line_id IS NOT NULL)",
               {at, connector}));
    SIKA_TRY(
        c.exec("UPDATE recon_items SET kind = 'missing_at_operator' WHERE state = 'open' AND kind = 'timing' "
               "AND occurred_at < ? AND run_id IN (SELECT id FROM recon_runs WHERE connector = ?)",
               {at - options_.grace_ms, connector}));
    SIKA_TRY(c.exec(
        "UPDATE recon_items SET state = 'resolved', decided_by = 'recovery', decided_at = ?, "
        "decision_reason = 'the operator answered', sika_status = (SELECT t.status FROM pay_transactions t WHERE "
        "t.id = recon_items.transaction_id), sika_held = (SELECT " +
            std::string(kSikaHeld) +
            " FROM pay_transactions t WHERE t.id = recon_items.transaction_id) "
            "WHERE state = 'open' AND kind = 'mismatch_status' AND run_id IN (SELECT id FROM recon_runs WHERE "
            "connector = ?) AND operator_status = (SELECT " +
            std::string(kSikaState) + " FROM pay_transactions t WHERE t.id = recon_items.transaction_id)",
        {at, connector}));
    (void)run_id;
    return {};
  });
}

Result<Summary> Reconciler::summary(std::int64_t run_id) {
  Summary s;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(
        auto row, c.query_one("SELECT " + std::string(kRunColumns) + " FROM recon_runs WHERE id = ?", {run_id}));
    if (!row) return with_problem(not_found(), "run", Reason::no_such_run);
    s = summary_from_row(*row);
    SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT kind, state, COUNT(*) FROM recon_items WHERE run_id = ? "
                                             "GROUP BY kind, state",
                                             {run_id}));
    for (const auto& r : rows) {
      s.kinds[r.str(0)] += r.i64(2);
      s.states[r.str(1)] += r.i64(2);
    }
    SIKA_ASSIGN_OR_RETURN(auto closing,
                          c.query_one("SELECT " + std::string(kClosingColumns) +
                                          " FROM recon_closings WHERE run_id = ? ORDER BY id DESC LIMIT 1",
                                      {run_id}));
    if (closing) s.closing = closing_from_row(*closing);
    return {};
  }));
  return s;
}

Result<Summary> Reconciler::report(std::int64_t run_id) {
  std::string connector;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT connector FROM recon_runs WHERE id = ?", {run_id}));
    if (!row) return with_problem(not_found(), "run", Reason::no_such_run);
    connector = row->str(0);
    return {};
  }));
  SIKA_TRY(refresh(connector, run_id));
  return summary(run_id);
}

Result<std::vector<Summary>> Reconciler::runs(int limit, std::optional<std::int64_t> before_id) {
  std::vector<Summary> out;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    out.clear();
    SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT " + std::string(kRunColumns) +
                                                 " FROM recon_runs WHERE id < ? "
                                                 "ORDER BY id DESC LIMIT ?",
                                             {before_id.value_or(std::numeric_limits<std::int64_t>::max()),
                                              std::int64_t{std::clamp(limit, 1, 200)}}));
    for (const auto& r : rows) out.push_back(summary_from_row(r));
    // Only the items still to decide (the partial index recon_items_open): a run's whole report is
    // report()'s, one run at a time.
    for (auto& s : out) {
      SIKA_ASSIGN_OR_RETURN(auto counts, c.query("SELECT kind, state, COUNT(*) FROM recon_items WHERE state IN "
                                                 "('open', 'under_investigation') AND run_id = ? GROUP BY kind, state",
                                                 {s.run_id}));
      for (const auto& r : counts) {
        s.kinds[r.str(0)] += r.i64(2);
        s.states[r.str(1)] += r.i64(2);
      }
    }
    return {};
  }));
  return out;
}

Result<std::vector<Item>> Reconciler::items(std::int64_t run_id, const ItemFilter& f) {
  std::vector<Item> out;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    out.clear();
    std::string sql = "SELECT " + std::string(kItemColumns) +
                      " FROM recon_items i LEFT JOIN pay_transactions t ON t.id = i.transaction_id "
                      "WHERE i.run_id = ? AND i.id > ?";
    store::Params p{run_id, f.after_id.value_or(0)};
    if (!f.kind.empty()) sql += " AND i.kind = ?", p.emplace_back(f.kind);
    if (!f.state.empty()) sql += " AND i.state = ?", p.emplace_back(f.state);
    sql += " ORDER BY i.id LIMIT ?";
    p.emplace_back(std::int64_t{std::clamp(f.limit, 1, 500)});
    SIKA_ASSIGN_OR_RETURN(auto rows, c.query(sql, p));
    for (const auto& r : rows) out.push_back(item_from_row(r));
    return {};
  }));
  return out;
}

Result<Item> Reconciler::item(std::int64_t item_id) {
  std::optional<Item> out;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT " + std::string(kItemColumns) +
                                                    " FROM recon_items i LEFT JOIN pay_transactions t ON "
                                                    "t.id = i.transaction_id WHERE i.id = ?",
                                                {item_id}));
    out.reset();
    if (row) out = item_from_row(*row);
    return {};
  }));
  if (!out) return with_problem(not_found(), "item", Reason::no_such_item);
  return *out;
}

Result<Item> Reconciler::decide(std::int64_t item_id, Decision decision, std::string_view actor,
                                std::string_view reason, const std::function<Status(store::Conn&)>& audit) {
  if (reason.size() > 500) return field_error("reason", reason::with(Reason::over_chars, "max", "500"));
  if (decision == Decision::accept || decision == Decision::investigate) {
    // Both decisions need a reason: it is what an auditor reads later.
    bool blank = std::all_of(reason.begin(), reason.end(), [](char ch) { return ch == ' ' || ch == '\t'; });
    if (blank) return field_error("reason", Reason::required);
  }
  ledger::Learned learned;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    learned.clear();
    const std::int64_t at = clock_();
    SIKA_ASSIGN_OR_RETURN(
        auto row,
        c.query_one("SELECT i.kind, i.state, i.sika_currency, i.sika_held, i.operator_currency, i.operator_held, "
                    "COALESCE(t.service_code, r.service_code), r.environment, t.status, r.status "
                    "FROM recon_items i JOIN recon_runs r ON r.id = i.run_id "
                    "LEFT JOIN pay_transactions t ON t.id = i.transaction_id WHERE i.id = ?",
                    {item_id}));
    if (!row) return with_problem(not_found(), "item", Reason::no_such_item);
    const std::string kind = row->str(0);
    // An unfinished import's items may still be removed with their run (an interrupted import).
    if (row->str(9) != "done") return with_problem(conflict(), "item", Reason::statement_importing);
    if (kind == "mismatch_status" && row->str(8) == "PENDING")
      return with_problem(conflict(), "item", Reason::awaits_operator);
    if (kind == "timing" && decision == Decision::accept) return with_problem(conflict(), "item", Reason::grace_period);
    // The decision and its state change: one conditional UPDATE, so two decisions racing cannot
    // both pass (the loser changes nothing and gets 409).
    const char* from = decision == Decision::accept ? "('open', 'under_investigation')" : "('open')";
    const char* to = decision == Decision::accept ? "adjusted" : "under_investigation";
    SIKA_ASSIGN_OR_RETURN(std::int64_t changed,
                          c.exec(std::string("UPDATE recon_items SET state = ?, decided_by = ?, decided_at = ?, "
                                             "decision_reason = ? WHERE id = ? AND kind <> 'matched' AND state IN ") +
                                     from,
                                 {std::string(to), std::string(actor), at, std::string(reason), item_id}));
    if (changed != 1) return with_problem(conflict(), "item", Reason::already_decided);
    if (decision == Decision::accept) {
      // The deltas, per currency, that make Sika's clearing say what the statement says.
      std::map<std::string, std::int64_t> delta;
      if (!row->is_null(4) && row->i64(5) != 0) delta[row->str(4)] += row->i64(5);
      if (!row->is_null(2) && row->i64(3) != 0) delta[row->str(2)] -= row->i64(3);
      const std::string service = row->str(6);
      const std::string env = row->str(7);
      std::optional<std::int64_t> journal;
      for (const auto& [currency, d] : delta) {
        if (d == 0) continue;
        if (service.empty()) return with_problem(conflict(), "item", Reason::no_clearing_account);
        ledger::Posting p;
        p.kind = std::string(kJournalKind);
        p.environment = env;
        p.currency = currency;
        p.memo = "reconciliation item " + std::to_string(item_id);
        const std::int64_t abs = d < 0 ? -d : d;
        // The operator holds more than Sika said: the clearing account goes down (it holds our money).
        p.legs.push_back({ledger::operator_clearing(service, env, currency), d > 0 ? abs : 0, d > 0 ? 0 : abs});
        p.legs.push_back({adjustment_account(env, currency), d > 0 ? 0 : abs, d > 0 ? abs : 0});
        std::int64_t id = 0;
        SIKA_TRY(ledger::post(c, p, at, nullptr, learned, &id));
        journal = id;
      }
      if (journal) SIKA_TRY(c.exec("UPDATE recon_items SET journal_id = ? WHERE id = ?", {*journal, item_id}));
    }
    if (audit) SIKA_TRY(audit(c));
    return {};
  }));
  return item(item_id);
}

Result<Closing> Reconciler::close_day(std::string_view connector, std::string_view day, std::string_view currency,
                                      std::int64_t operator_balance, std::string_view actor,
                                      std::optional<std::int64_t> run_id,
                                      const std::function<Status(store::Conn&)>& audit) {
  auto start = day_start(day);
  if (!start) return field_error("day", Reason::day_date);
  if (currency.size() != 3) return field_error("currency", Reason::currency_iso_plain);
  const std::int64_t end = *start + kDayMs;
  Closing out;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    Closing k;
    k.connector = std::string(connector);
    k.day = std::string(day);
    k.currency = std::string(currency);
    k.run_id = run_id;
    k.operator_balance = operator_balance;
    k.entered_by = std::string(actor);
    k.computed_at = clock_();
    const std::string env = environment_of(connector);
    // Sika's clearing of every service the connector carried, from the entries up to the day's end.
    SIKA_ASSIGN_OR_RETURN(
        auto clearing,
        c.query_one("SELECT COALESCE(SUM(e.credit - e.debit), 0) FROM ledger_entries e JOIN ledger_accounts a ON "
                    "a.id = e.account_id WHERE a.kind = 'clearing' AND a.environment = ? AND a.currency = ? "
                    "AND e.created_at < ? AND a.owner IN (SELECT DISTINCT 'operator:' || service_code FROM "
                    "pay_transactions WHERE connector = ? UNION SELECT 'operator:' || service_code FROM recon_runs "
                    "WHERE connector = ? AND service_code IS NOT NULL)",
                    {env, k.currency, end, k.connector, k.connector}));
    k.sika_clearing = clearing ? clearing->i64(0) : 0;
    SIKA_ASSIGN_OR_RETURN(
        auto open,
        c.query_one("SELECT COALESCE(SUM(CASE WHEN i.operator_currency = ? THEN i.operator_held ELSE 0 END - "
                    "CASE WHEN i.sika_currency = ? THEN i.sika_held ELSE 0 END), 0), COUNT(*) FROM recon_items i "
                    "JOIN recon_runs r ON r.id = i.run_id WHERE r.connector = ? "
                    "AND i.state IN ('open', 'under_investigation') AND (i.occurred_at IS NULL OR i.occurred_at < ?)",
                    {k.currency, k.currency, k.connector, end}));
    k.open_items = open ? open->i64(0) : 0;
    k.open_count = open ? open->i64(1) : 0;
    // Fees of the lines up to the day's end, each line counted once across statements.
    SIKA_ASSIGN_OR_RETURN(auto fees, c.query_one("SELECT COALESCE(SUM(f.fee), 0) FROM (SELECT l.operator_reference, "
                                                 "MAX(l.fee) AS fee FROM recon_lines l JOIN recon_runs r ON "
                                                 "r.id = l.run_id WHERE r.connector = ? AND l.currency = ? AND "
                                                 "l.occurred_at < ? GROUP BY l.operator_reference) f",
                                                 {k.connector, k.currency, end}));
    k.operator_fees = fees ? fees->i64(0) : 0;
    k.unexplained = k.operator_balance + k.sika_clearing - k.open_items + k.operator_fees;
    SIKA_TRY(c.exec("DELETE FROM recon_closings WHERE connector = ? AND day = ? AND currency = ?",
                    {k.connector, k.day, k.currency}));
    SIKA_TRY(c.exec(
        "INSERT INTO recon_closings (" + std::string(kClosingColumns) + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        {k.connector, k.day, k.currency, store::opt(k.run_id), k.sika_clearing, k.operator_balance, k.open_items,
         k.open_count, k.operator_fees, k.unexplained, k.entered_by, k.computed_at}));
    if (audit) SIKA_TRY(audit(c));
    out = k;
    return {};
  }));
  return out;
}

Result<std::vector<Closing>> Reconciler::closings(std::string_view connector, int limit) {
  std::vector<Closing> out;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    out.clear();
    std::string sql = "SELECT " + std::string(kClosingColumns) + " FROM recon_closings";
    store::Params p;
    if (!connector.empty()) sql += " WHERE connector = ?", p.emplace_back(std::string(connector));
    sql += " ORDER BY day DESC, connector, currency LIMIT ?";
    p.emplace_back(std::int64_t{std::clamp(limit, 1, 200)});
    SIKA_ASSIGN_OR_RETURN(auto rows, c.query(sql, p));
    for (const auto& r : rows) out.push_back(closing_from_row(r));
    return {};
  }));
  return out;
}

}  // namespace sika::payments::recon
