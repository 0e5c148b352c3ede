#include "payments/refund_store.hpp"

#include <boost/json.hpp>

#include "core/codes.hpp"
#include "core/reason.hpp"
#include "payments/store.hpp"
#include "store/leasing.hpp"

namespace sika::payments::tables {

namespace bj = boost::json;

namespace {

Result<std::optional<Refund>> find_refund(store::Conn& conn, std::string_view condition, store::Params params) {
  SIKA_ASSIGN_OR_RETURN(auto row, conn.query_one("SELECT " + std::string(kRefundColumns) + " FROM pay_refunds WHERE " +
                                                     std::string(condition),
                                                 params));
  if (!row) return std::optional<Refund>();
  return std::optional<Refund>(refund_from_row(*row));
}

// The key's row was not visible to this unit and no refund of the transaction is in flight: the
// other request is still being written. The client may send the same request again.
constexpr store::IdempotencyKey kRefundUuid{
    "refund_uuid", "was already used for a different request", "refund_reference",
    [] { return unavailable(bj::string("concurrent request with the same refund_uuid; retry")); }};

}  // namespace

Result<store::Keyed<Refund>> insert_refund_or_replay(store::Conn& conn, const Refund& r) {
  auto insert = [&](store::Conn& c) {
    // No conflict target: the key (merchant_id, environment, refund_uuid) and the one refund in flight
    // per transaction (pay_refunds_in_flight) both leave the row unwritten.
    return c.insert_id(
        "INSERT INTO pay_refunds (reference, merchant_id, transaction_id, transaction_reference, environment, "
        "refund_uuid, request_hash, provider_reference, amount, currency, status, reason, description, metadata, "
        "channel, connector, expires_at, created_at, updated_at) VALUES "
        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        {r.reference, r.merchant_id, r.transaction_id, r.transaction_reference, r.environment, r.refund_uuid,
         r.request_hash, r.provider_reference, r.amount, r.currency, std::string(to_string(r.status)), r.reason,
         r.description, r.metadata, r.channel, r.connector, r.expires_at, r.created_at, r.updated_at});
  };
  store::Keyed<Refund> out;
  SIKA_ASSIGN_OR_RETURN(out.id, insert(conn));
  if (out.id) return out;
  SIKA_ASSIGN_OR_RETURN(out.stored, find_replay(conn, r));
  if (out.stored) return out;
  SIKA_ASSIGN_OR_RETURN(auto in_flight, find_refund(conn, "transaction_id = ? AND status IN ('PENDING', 'PROCESSING')",
                                                    {r.transaction_id}));
  if (in_flight) {
    Error e = with_problem(make_error(ErrorKind::conflict, std::string(codes::refund_in_progress.name)),
                           "transaction_reference", Reason::refund_in_flight);
    if (e.details.is_object()) e.details.as_object()["refund_reference"] = in_flight->reference;
    return e;
  }
  return kRefundUuid.in_flight();
}

Result<std::optional<Refund>> find_replay(store::Conn& conn, const Refund& r) {
  SIKA_ASSIGN_OR_RETURN(auto stored, find_refund_by_uuid(conn, r.merchant_id, r.environment, r.refund_uuid));
  if (stored) SIKA_TRY(store::same_request(kRefundUuid, r.request_hash, {stored->request_hash, stored->reference}));
  return stored;
}

Result<std::optional<Refund>> find_refund_by_uuid(store::Conn& conn, std::int64_t merchant_id,
                                                  std::string_view environment, std::string_view refund_uuid) {
  return find_refund(conn, "merchant_id = ? AND environment = ? AND refund_uuid = ?",
                     {merchant_id, std::string(environment), std::string(refund_uuid)});
}

Result<Refund> load_refund(store::Conn& conn, std::string_view reference) {
  SIKA_ASSIGN_OR_RETURN(auto r, find_refund(conn, "reference = ?", {std::string(reference)}));
  if (!r) return not_found(bj::object{{"refund_reference", "no such refund"}});
  return std::move(*r);
}

Result<std::optional<Refund>> find_refund_by_provider_reference(store::Conn& conn,
                                                                std::string_view provider_reference) {
  return find_refund(conn, "provider_reference = ?", {std::string(provider_reference)});
}

Result<bool> reserve_refundable(store::Conn& conn, std::int64_t transaction_id, std::int64_t amount) {
  SIKA_ASSIGN_OR_RETURN(std::int64_t changed,
                        conn.exec("UPDATE pay_transactions SET refunding_amount = refunding_amount + ? "
                                  "WHERE id = ? AND status = 'COMPLETED' AND operation = 'COLLECTION' "
                                  "AND refunded_amount + refunding_amount + ? <= amount",
                                  {amount, transaction_id, amount}));
  return changed == 1;
}

Status set_refund_cost(store::Conn& conn, std::int64_t refund_id, const RefundCost& cost) {
  SIKA_ASSIGN_OR_RETURN(std::int64_t changed,
                        conn.exec("UPDATE pay_refunds SET converted_currency = ?, converted_amount = ? "
                                  "WHERE id = ? AND converted_amount IS NULL",
                                  {cost.currency, cost.amount, refund_id}));
  if (changed != 1) return internal_error(bj::string("a refund's cost is recorded once, at its creation"));
  return {};
}

Result<std::optional<RefundCost>> find_refund_cost(store::Conn& conn, std::int64_t refund_id) {
  SIKA_ASSIGN_OR_RETURN(auto row, conn.query_one("SELECT converted_currency, converted_amount FROM pay_refunds "
                                                 "WHERE id = ? AND converted_amount IS NOT NULL",
                                                 {refund_id}));
  if (!row) return std::optional<RefundCost>{};
  return std::optional<RefundCost>(RefundCost{row->str(0), row->i64(1)});
}

Result<std::int64_t> completed_refund_cost(store::Conn& conn, std::int64_t transaction_id) {
  SIKA_ASSIGN_OR_RETURN(auto row, conn.query_one("SELECT COALESCE(SUM(converted_amount), 0) FROM pay_refunds "
                                                 "WHERE transaction_id = ? AND status = 'COMPLETED'",
                                                 {transaction_id}));
  return row ? row->i64(0) : std::int64_t{0};
}

Result<std::int64_t> end_reservation(store::Conn& conn, std::int64_t transaction_id, std::int64_t amount,
                                     bool completed) {
  SIKA_ASSIGN_OR_RETURN(auto row,
                        conn.query_one("UPDATE pay_transactions SET refunding_amount = refunding_amount - ?, "
                                       "refunded_amount = refunded_amount + ? "
                                       "WHERE id = ? AND refunding_amount >= ? RETURNING refunded_amount",
                                       {amount, completed ? amount : std::int64_t{0}, transaction_id, amount}));
  if (!row) return internal_error(bj::string("a refund ended without its reservation on the collection"));
  return row->i64(0);
}

Status keep_refund_accepted(store::Conn& conn, std::int64_t refund_id, std::string_view operator_state) {
  SIKA_TRY(
      conn.exec("UPDATE pay_refunds SET operator_state = ? WHERE id = ?", {std::string(operator_state), refund_id}));
  return {};
}

Status refund_check_now(store::Conn& conn, std::int64_t refund_id, std::int64_t at) {
  SIKA_TRY(
      conn.exec("UPDATE pay_refunds SET next_check_at = ? WHERE id = ? AND status IN ('PENDING', 'PROCESSING') "
                "AND check_owner IS NULL AND (next_check_at IS NULL OR next_check_at > ?)",
                {at, refund_id, at}));
  return {};
}

Result<std::vector<ClaimedRefund>> claim_refund_checks(store::Conn& conn, std::int64_t at, std::int64_t lease_until,
                                                       std::string_view owner, int limit) {
  std::vector<ClaimedRefund> out;
  if (limit <= 0) return out;
  SIKA_ASSIGN_OR_RETURN(auto picked,
                        conn.query("SELECT id FROM pay_refunds WHERE next_check_at <= ? "
                                   "AND status IN ('PENDING', 'PROCESSING') ORDER BY next_check_at LIMIT ?" +
                                       std::string(store::skip_locked(conn)),
                                   {at, std::int64_t{limit}}));
  const std::string claim =
      "UPDATE pay_refunds SET next_check_at = ?, check_owner = ?, checks = checks + 1 "
      "WHERE id = ? AND status IN ('PENDING', 'PROCESSING') AND next_check_at <= ? RETURNING " +
      std::string(kRefundColumns) + ", checks";
  for (const auto& p : picked) {
    SIKA_ASSIGN_OR_RETURN(auto row, conn.query_one(claim, {lease_until, std::string(owner), p.i64(0), at}));
    if (!row) continue;  // moved or claimed since the pick
    out.push_back({refund_from_row(*row), row->i64(row->size() - 1)});
  }
  return out;
}

Result<bool> reschedule_refund_check(store::Conn& conn, std::int64_t refund_id, std::string_view owner,
                                     std::int64_t next_at) {
  SIKA_ASSIGN_OR_RETURN(std::int64_t changed,
                        conn.exec("UPDATE pay_refunds SET next_check_at = ?, check_owner = NULL "
                                  "WHERE id = ? AND status IN ('PENDING', 'PROCESSING') AND check_owner = ?",
                                  {next_at, refund_id, std::string(owner)}));
  return changed != 0;
}

Result<bool> queue_refund(store::Conn& conn, const Refund& r, bool hold, std::int64_t at, std::int64_t check_at) {
  if (!hold) {
    SIKA_ASSIGN_OR_RETURN(auto behind, conn.query(queued_pick(conn, "pay_refunds", "pay_refunds_queued", 1, false),
                                                  {r.connector, std::int64_t{1}}));
    hold = !behind.empty();
  }
  if (hold) {
    SIKA_TRY(conn.exec("UPDATE pay_refunds SET queued_at = ?, next_check_at = NULL WHERE id = ?", {at, r.id}));
    return true;
  }
  SIKA_TRY(refund_check_now(conn, r.id, check_at));
  return false;
}

Result<std::vector<Refund>> claim_queued_refunds(store::Conn& conn, const std::vector<std::string>& connectors,
                                                 std::int64_t check_at, int limit) {
  SIKA_ASSIGN_OR_RETURN(
      auto rows, claim_queued(conn, "pay_refunds", "pay_refunds_queued", kRefundColumns, connectors, check_at, limit));
  std::vector<Refund> out;
  for (const auto& row : rows) out.push_back(refund_from_row(row));
  return out;
}

Result<std::pair<std::vector<Refund>, std::int64_t>> list_refunds(store::Conn& conn, const RefundFilter& f) {
  std::string where = " WHERE 1 = 1";
  store::Params params;
  if (f.merchant_id != 0) {
    where += " AND merchant_id = ?";
    params.emplace_back(f.merchant_id);
  }
  if (!f.environment.empty()) {
    where += " AND environment = ?";
    params.emplace_back(f.environment);
  }
  if (!f.transaction_reference.empty()) {
    where += " AND transaction_reference = ?";
    params.emplace_back(f.transaction_reference);
  }
  if (f.status) {
    where += " AND status = ?";
    params.emplace_back(std::string(to_string(*f.status)));
  }
  if (f.before) {
    where += " AND id < ?";
    params.emplace_back(*f.before);
  }
  std::pair<std::vector<Refund>, std::int64_t> out;
  SIKA_ASSIGN_OR_RETURN(auto total, conn.query_one("SELECT COUNT(*) FROM pay_refunds" + where, params));
  out.second = total ? total->i64(0) : 0;
  params.emplace_back(f.limit);
  params.emplace_back(f.offset);
  SIKA_ASSIGN_OR_RETURN(auto rows, conn.query("SELECT " + std::string(kRefundColumns) + " FROM pay_refunds" + where +
                                                  " ORDER BY id DESC LIMIT ? OFFSET ?",
                                              params));
  for (const auto& r : rows) out.first.push_back(refund_from_row(r));
  return out;
}

}  // namespace sika::payments::tables
