#include "payments/store.hpp"

#include <boost/json.hpp>

#include "store/leasing.hpp"

namespace sika::payments::tables {

namespace bj = boost::json;

namespace {

std::string select_where(std::string_view condition) {
  return "SELECT " + std::string(kTransactionColumns) + " FROM pay_transactions WHERE " + std::string(condition);
}

Result<std::optional<Transaction>> find_one(store::Conn& conn, std::string_view condition, store::Params params) {
  SIKA_ASSIGN_OR_RETURN(auto row, conn.query_one(select_where(condition), params));
  if (!row) return std::optional<Transaction>();
  return std::optional<Transaction>(transaction_from_row(*row));
}

std::string status_text(TxStatus s) { return std::string(to_string(s)); }

constexpr store::IdempotencyKey kTransactionUuid{
    "transaction_uuid", "was already used for a different request", "transaction_reference",
    [] { return unavailable(bj::string("concurrent request with the same transaction_uuid; retry")); }};

}  // namespace

Result<std::optional<std::int64_t>> insert_transaction(store::Conn& conn, const Transaction& t) {
  return conn.insert_id(
      "INSERT INTO pay_transactions (reference, merchant_id, environment, operation, transaction_uuid, "
      "request_hash, invoice_reference, provider_reference, status, channel, service_code, country, "
      "connector, customer_wallet, amount, currency, fee, required_total, confirmation_method, "
      "confirmation_url, settlement_mode, split_reference, split_status, description, metadata, "
      "needs_otp, otp_failures, expires_at, created_at, updated_at) VALUES "
      "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
      "ON CONFLICT (merchant_id, environment, transaction_uuid) DO NOTHING",
      {t.reference,
       t.merchant_id,
       t.environment,
       t.operation,
       t.transaction_uuid,
       t.request_hash,
       t.invoice_reference,
       t.provider_reference,
       status_text(t.status),
       t.channel,
       t.service_code,
       t.country,
       t.connector,
       t.customer_wallet,
       t.amount,
       t.currency,
       t.fee,
       t.required_total,
       t.confirmation_method,
       t.confirmation_url,
       t.settlement_mode,
       t.split_reference,
       t.split_status,
       t.description,
       t.metadata,
       std::int64_t{t.needs_otp ? 1 : 0},
       t.otp_failures,
       t.expires_at,
       t.created_at,
       t.updated_at});
}

Result<store::Keyed<Transaction>> insert_or_replay(store::Conn& conn, const Transaction& tx) {
  return store::insert_or_replay<Transaction>(
      conn, kTransactionUuid, tx.request_hash, [&](store::Conn& c) { return insert_transaction(c, tx); },
      [&](store::Conn& c) { return find_by_uuid(c, tx.merchant_id, tx.environment, tx.transaction_uuid); },
      [](const Transaction& t) {
        return store::Stored{t.request_hash, t.reference};
      });
}

Result<Transaction> load(store::Conn& conn, std::string_view reference) {
  SIKA_ASSIGN_OR_RETURN(auto tx, find_one(conn, "reference = ?", {std::string(reference)}));
  if (!tx) return not_found(bj::object{{"transaction_reference", "no such transaction"}});
  return std::move(*tx);
}

Result<std::optional<Transaction>> find_by_provider_reference(store::Conn& conn, std::string_view provider_reference) {
  return find_one(conn, "provider_reference = ?", {std::string(provider_reference)});
}

Result<std::optional<Transaction>> find_by_uuid(store::Conn& conn, std::int64_t merchant_id,
                                                std::string_view environment, std::string_view transaction_uuid) {
  return find_one(conn, "merchant_id = ? AND environment = ? AND transaction_uuid = ?",
                  {merchant_id, std::string(environment), std::string(transaction_uuid)});
}

Status insert_transition(store::Conn& conn, std::int64_t transaction_id, TxStatus from, TxStatus to,
                         std::string_view source, const std::optional<std::string>& reason, std::int64_t at) {
  SIKA_TRY(
      conn.exec("INSERT INTO pay_transitions (transaction_id, from_status, to_status, source, reason, at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                {transaction_id, status_text(from), status_text(to), std::string(source), store::opt(reason), at}));
  return {};
}

Result<std::optional<std::int64_t>> take_otp_attempt(store::Conn& conn, std::int64_t transaction_id,
                                                     std::int64_t max_attempts) {
  SIKA_ASSIGN_OR_RETURN(auto row, conn.query_one("UPDATE pay_transactions SET otp_failures = otp_failures + 1 "
                                                 "WHERE id = ? AND status = 'INITIATED' AND otp_failures < ? "
                                                 "RETURNING otp_failures",
                                                 {transaction_id, max_attempts}));
  if (!row) return std::optional<std::int64_t>();
  return std::optional<std::int64_t>(row->i64(0));
}

Result<std::map<std::string, Beneficiary, std::less<>>> find_beneficiaries(store::Conn& conn,
                                                                           const std::vector<SplitLine>& lines) {
  std::map<std::string, Beneficiary, std::less<>> found;
  if (lines.empty()) return found;
  std::string sql = "SELECT id, matricule, active FROM merchants WHERE matricule IN (";
  store::Params params;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    sql += i ? ", ?" : "?";
    params.push_back(lines[i].matricule);
  }
  sql += ")";
  SIKA_ASSIGN_OR_RETURN(auto rows, conn.query(sql, params));
  for (const auto& r : rows) found[r.str(1)] = {r.i64(0), r.boolean(2)};
  return found;
}

Status insert_splits(store::Conn& conn, std::int64_t transaction_id, const std::vector<SplitLine>& lines,
                     const std::vector<std::int64_t>& merchant_ids) {
  if (lines.empty()) return {};
  if (merchant_ids.size() != lines.size()) return internal_error(bj::string("split lines without their merchants"));
  std::string sql =
      "INSERT INTO pay_splits (transaction_id, position, matricule, merchant_id, rate_ppm, "
      "description, metadata) VALUES ";
  store::Params params;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& line = lines[i];
    sql += i ? ", (?, ?, ?, ?, ?, ?, ?)" : "(?, ?, ?, ?, ?, ?, ?)";
    params.insert(params.end(), {transaction_id, std::int64_t{line.position}, line.matricule, merchant_ids[i],
                                 line.rate_ppm, line.description, line.metadata});
  }
  SIKA_TRY(conn.exec(sql, params));
  return {};
}

Result<std::vector<StoredSplit>> split_lines(store::Conn& conn, std::int64_t transaction_id) {
  SIKA_ASSIGN_OR_RETURN(auto rows, conn.query("SELECT id, merchant_id, rate_ppm FROM pay_splits "
                                              "WHERE transaction_id = ? ORDER BY position",
                                              {transaction_id}));
  std::vector<StoredSplit> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back({r.i64(0), r.i64(1), r.i64(2)});
  return out;
}

Status set_split_amount(store::Conn& conn, std::int64_t split_id, std::int64_t amount) {
  SIKA_TRY(conn.exec("UPDATE pay_splits SET amount = ? WHERE id = ?", {amount, split_id}));
  return {};
}

Status insert_conversion(store::Conn& conn, std::int64_t transaction_id, const Conversion& x) {
  SIKA_TRY(
      conn.exec("INSERT INTO pay_conversions (transaction_id, currency, order_amount, amount, numerator, "
                "denominator, quoted_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                {transaction_id, x.currency, x.order_amount, x.amount, x.numerator, x.denominator, x.quoted_at}));
  return {};
}

Result<std::optional<Conversion>> find_conversion(store::Conn& conn, std::int64_t transaction_id) {
  SIKA_ASSIGN_OR_RETURN(auto row, conn.query_one("SELECT currency, order_amount, amount, numerator, denominator, "
                                                 "quoted_at FROM pay_conversions WHERE transaction_id = ?",
                                                 {transaction_id}));
  if (!row) return std::optional<Conversion>{};
  return std::optional<Conversion>(
      Conversion{row->str(0), row->i64(1), row->i64(2), row->i64(3), row->i64(4), row->i64(5)});
}

Status insert_callback(store::Conn& conn, const CallbackRow& c) {
  SIKA_TRY(
      conn.exec("INSERT INTO pay_callbacks (connector, provider_reference, transaction_id, reported_status, "
                "reason, outcome, body, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                {c.connector, c.provider_reference, store::opt(c.transaction_id), c.reported_status,
                 c.reason.empty() ? store::Value(nullptr) : store::Value(c.reason), c.outcome, c.body.substr(0, 8192),
                 c.received_at}));
  return {};
}

Result<std::vector<std::string>> due_for_expiry(store::Conn& conn, std::int64_t at, int limit,
                                                const std::vector<std::string>& operator_ended) {
  std::string sql =
      "SELECT reference FROM pay_transactions WHERE status IN ('INITIATED', 'PENDING') AND expires_at <= ?";
  store::Params args{at};
  if (!operator_ended.empty()) {
    // A PENDING order at these operators ends by the operator's answer only (recovery asks it).
    sql += " AND (status = 'INITIATED' OR connector NOT IN (";
    for (std::size_t i = 0; i < operator_ended.size(); ++i) {
      sql += i ? ", ?" : "?";
      args.emplace_back(operator_ended[i]);
    }
    sql += "))";
  }
  sql += " ORDER BY expires_at LIMIT ?";
  args.emplace_back(std::int64_t{limit});
  SIKA_ASSIGN_OR_RETURN(auto rows, conn.query(sql, args));
  std::vector<std::string> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back(r.str(0));
  return out;
}

Result<std::vector<ClaimedCheck>> claim_checks(store::Conn& conn, std::int64_t at, std::int64_t lease_until,
                                               std::string_view owner, int limit) {
  std::vector<ClaimedCheck> out;
  if (limit <= 0) return out;
  SIKA_ASSIGN_OR_RETURN(auto picked,
                        conn.query("SELECT id FROM pay_transactions WHERE next_check_at <= ? AND status = 'PENDING' "
                                   "ORDER BY next_check_at LIMIT ?" +
                                       std::string(store::skip_locked(conn)),
                                   {at, std::int64_t{limit}}));
  const std::string claim =
      "UPDATE pay_transactions SET next_check_at = ?, check_owner = ?, checks = checks + 1 "
      "WHERE id = ? AND status = 'PENDING' AND next_check_at <= ? RETURNING " +
      std::string(kTransactionColumns) + ", checks";
  for (const auto& p : picked) {
    SIKA_ASSIGN_OR_RETURN(auto row, conn.query_one(claim, {lease_until, std::string(owner), p.i64(0), at}));
    if (!row) continue;  // moved or claimed since the pick
    ClaimedCheck c;
    c.tx = transaction_from_row(*row);
    c.checks = row->i64(row->size() - 1);
    out.push_back(std::move(c));
  }
  return out;
}

Result<bool> reschedule_check(store::Conn& conn, std::int64_t transaction_id, std::string_view owner,
                              std::int64_t next_at) {
  SIKA_ASSIGN_OR_RETURN(std::int64_t changed,
                        conn.exec("UPDATE pay_transactions SET next_check_at = ?, check_owner = NULL "
                                  "WHERE id = ? AND status = 'PENDING' AND check_owner = ?",
                                  {next_at, transaction_id, std::string(owner)}));
  return changed != 0;
}

Status keep_accepted(store::Conn& conn, std::int64_t transaction_id, std::string_view customer_url,
                     std::string_view operator_state) {
  SIKA_TRY(conn.exec("UPDATE pay_transactions SET customer_url = ?, operator_state = ? WHERE id = ?",
                     {std::string(customer_url), std::string(operator_state), transaction_id}));
  return {};
}

Status check_now(store::Conn& conn, std::int64_t transaction_id, std::int64_t at) {
  SIKA_TRY(
      conn.exec("UPDATE pay_transactions SET next_check_at = ? WHERE id = ? AND status = 'PENDING' AND "
                "next_check_at > ?",
                {at, transaction_id, at}));
  return {};
}

Status insert_status_check(store::Conn& conn, const StatusCheckRow& r) {
  SIKA_TRY(
      conn.exec("INSERT INTO pay_status_checks (transaction_id, node, asked_at, answered_at, outcome, reason) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                {r.transaction_id, r.node, r.asked_at, r.answered_at, r.outcome, store::opt(r.reason)}));
  return {};
}

Result<RecoveryBacklog> recovery_backlog(store::Conn& conn, std::int64_t at) {
  // Only the rows of the partial index pay_transactions_recovery (PENDING at an operator) are read.
  SIKA_ASSIGN_OR_RETURN(auto row, conn.query_one("SELECT COUNT(*), MIN(COALESCE(submitted_at, created_at)) "
                                                 "FROM pay_transactions WHERE next_check_at IS NOT NULL "
                                                 "AND (checks > 0 OR next_check_at <= ?)",
                                                 {at}));
  RecoveryBacklog b;
  if (row) {
    b.waiting = row->i64(0);
    b.oldest_since = row->opt_i64(1);
  }
  return b;
}

Result<bool> queue_payout(store::Conn& conn, const Transaction& tx, bool hold, std::int64_t at) {
  if (!hold) {
    SIKA_ASSIGN_OR_RETURN(auto ahead,
                          conn.query(queued_pick(conn, "pay_transactions", "pay_transactions_queued", 1, false),
                                     {tx.connector, std::int64_t{2}}));
    std::erase_if(ahead, [&](const store::Row& r) { return r.i64(0) == tx.id; });
    if (ahead.empty()) return false;
  }
  SIKA_ASSIGN_OR_RETURN(std::int64_t changed,
                        conn.exec("UPDATE pay_transactions SET queued_at = ?, next_check_at = NULL "
                                  "WHERE id = ? AND status = 'PENDING'",
                                  {at, tx.id}));
  return changed != 0;
}

std::string queued_pick(const store::Conn& conn, std::string_view table, std::string_view index, std::size_t connectors,
                        bool lock) {
  std::string in;
  for (std::size_t i = 0; i < connectors; ++i) in += i == 0 ? "?" : ", ?";
  return "SELECT id FROM " + std::string(table) + store::indexed_by(conn, index) +
         " WHERE queued_at IS NOT NULL AND status = 'PENDING' AND connector IN (" + in +
         ") ORDER BY queued_at, id LIMIT ?" + std::string(lock ? store::skip_locked(conn) : "");
}

Result<store::Rows> claim_queued(store::Conn& conn, std::string_view table, std::string_view index,
                                 std::string_view columns, const std::vector<std::string>& connectors,
                                 std::int64_t check_at, int limit) {
  store::Rows out;
  if (limit <= 0 || connectors.empty()) return out;
  store::Params params(connectors.begin(), connectors.end());
  params.emplace_back(std::int64_t{limit});
  const std::string from(table);
  SIKA_ASSIGN_OR_RETURN(auto picked, conn.query(queued_pick(conn, table, index, connectors.size(), true), params));
  const std::string claim = "UPDATE " + from +
                            " SET queued_at = NULL, next_check_at = ? "
                            "WHERE id = ? AND status = 'PENDING' AND queued_at IS NOT NULL RETURNING " +
                            std::string(columns);
  for (const auto& p : picked) {
    SIKA_ASSIGN_OR_RETURN(auto row, conn.query_one(claim, {check_at, p.i64(0)}));
    if (row) out.push_back(std::move(*row));  // else: sent or ended since the pick
  }
  return out;
}

Result<std::vector<Transaction>> claim_queued_payouts(store::Conn& conn, const std::vector<std::string>& connectors,
                                                      std::int64_t check_at, int limit) {
  SIKA_ASSIGN_OR_RETURN(auto rows, claim_queued(conn, "pay_transactions", "pay_transactions_queued",
                                                kTransactionColumns, connectors, check_at, limit));
  std::vector<Transaction> out;
  for (const auto& row : rows) out.push_back(transaction_from_row(row));
  return out;
}

}  // namespace sika::payments::tables
