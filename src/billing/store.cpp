#include "billing/store.hpp"

#include <boost/json.hpp>

#include "core/random.hpp"
#include "store/read.hpp"

namespace sika::billing::tables {

namespace {

constexpr std::string_view kSubscription =
    "SELECT s.id, s.reference, s.uuid, s.merchant_id, m.matricule, s.environment, s.user_tier, s.idempotency_key, "
    "s.request_hash, s.customer_email, s.customer_phone, s.customer_user_id, s.amount, s.currency, s.frequency, "
    "s.time_zone, s.description, s.metadata, s.status, s.status_reason, s.anchor_at, s.next_cycle, "
    "s.next_payment_at, s.end_at, s.max_cycles, s.cancel_at_period_end, s.payer_provider, s.payer_wallet, s.epoch, "
    "s.clock_offset_ms, s.subscribed_at, s.last_payment_at, s.cancelled_at, s.suspended_at, s.reactivated_at, "
    "s.expired_at, s.created_at, s.updated_at FROM bil_subscriptions s JOIN merchants m ON m.id = s.merchant_id ";

Subscription subscription_from(const store::Row& r) {
  Subscription s;
  s.id = r.i64(0);
  s.reference = r.str(1);
  s.uuid = r.str(2);
  s.merchant_id = r.i64(3);
  s.merchant = r.str(4);
  s.environment = r.str(5);
  s.user_tier = r.i64(6);
  s.idempotency_key = r.opt_str(7);
  s.request_hash = r.str(8);
  s.customer_email = r.str(9);
  s.customer_phone = r.opt_str(10);
  s.customer_user_id = r.opt_str(11);
  s.amount = r.i64(12);
  s.currency = r.str(13);
  s.frequency = parse_frequency(r.str(14)).value_or(Frequency::monthly);
  s.time_zone = r.str(15);
  s.description = r.str(16);
  s.metadata = r.str(17);
  s.status = r.str(18);
  s.status_reason = r.opt_str(19);
  s.anchor_at = r.i64(20);
  s.next_cycle = r.i64(21);
  s.next_payment_at = r.opt_i64(22);
  s.end_at = r.opt_i64(23);
  s.max_cycles = r.opt_i64(24);
  s.cancel_at_period_end = r.boolean(25);
  s.payer_provider = r.opt_str(26);
  s.payer_wallet = r.opt_str(27);
  s.epoch = r.i64(28);
  s.clock_offset_ms = r.i64(29);
  s.subscribed_at = r.i64(30);
  s.last_payment_at = r.opt_i64(31);
  s.cancelled_at = r.opt_i64(32);
  s.suspended_at = r.opt_i64(33);
  s.reactivated_at = r.opt_i64(34);
  s.expired_at = r.opt_i64(35);
  s.created_at = r.i64(36);
  s.updated_at = r.i64(37);
  return s;
}

constexpr std::string_view kPayment =
    "SELECT id, reference, subscription_id, cycle, amount, currency, status, due_at, paid_at, attempts, failed_at, "
    "next_retry_at, payment_intent_reference, payment_link_reference, wallet_transaction_id, failure_reason, "
    "created_at, updated_at, link_deadline_at, "
    "(SELECT t.refunded_amount FROM pay_transactions t "
    "WHERE t.reference = COALESCE(bil_payments.payment_intent_reference, bil_payments.wallet_transaction_id) "
    "AND bil_payments.status = 'PAID') FROM bil_payments ";

Payment payment_from(const store::Row& r) {
  Payment p;
  p.id = r.i64(0);
  p.reference = r.str(1);
  p.subscription_id = r.i64(2);
  p.cycle = r.i64(3);
  p.amount = r.i64(4);
  p.currency = r.str(5);
  p.status = r.str(6);
  p.due_at = r.i64(7);
  p.paid_at = r.opt_i64(8);
  p.attempts = r.i64(9);
  p.failed_at = r.opt_i64(10);
  p.next_retry_at = r.opt_i64(11);
  p.payment_intent_reference = r.opt_str(12);
  p.payment_link_reference = r.opt_str(13);
  p.wallet_transaction_id = r.opt_str(14);
  p.failure_reason = r.opt_str(15);
  p.created_at = r.i64(16);
  p.updated_at = r.i64(17);
  p.link_deadline_at = r.opt_i64(18);
  p.refunded_amount = r.opt_i64(19).value_or(0);
  return p;
}

Result<std::optional<Subscription>> one(store::Conn& c, const std::string& where, const store::Params& params) {
  return store::read_one(c, std::string(kSubscription) + where, params, subscription_from);
}

Result<std::vector<Payment>> payments(store::Conn& c, const std::string& where, const store::Params& params) {
  return store::read_all(c, std::string(kPayment) + where, params, payment_from);
}

Result<bool> changed(Result<std::int64_t> n) {
  if (!n) return n.take_error();
  return *n == 1;
}

// Adds `delta` to the merchant's count of `status`, in a random shard.
Status count(store::Conn& c, std::int64_t merchant_id, std::string_view environment, std::string_view status,
             std::int64_t delta) {
  const std::int64_t shard = static_cast<std::int64_t>(random_bytes(1)[0] & 0x0F);
  SIKA_TRY(
      c.exec("INSERT INTO bil_counts (merchant_id, environment, status, shard, n) VALUES (?, ?, ?, ?, ?) "
             "ON CONFLICT (merchant_id, environment, status, shard) DO UPDATE SET n = bil_counts.n + ?",
             {merchant_id, std::string(environment), std::string(status), shard, delta, delta}));
  return {};
}

}  // namespace

const store::IdempotencyKey kIdempotencyKey{
    "idempotency_key", "was used with a different request", "", [] {
      return retryable(boost::json::object{{"idempotency_key", "a subscription with this key is being created"}});
    }};

Result<store::Keyed<Subscription>> insert_or_fetch(store::Conn& c, const Subscription& s) {
  return store::insert_or_fetch<Subscription>(
      c, kIdempotencyKey, [&](store::Conn& conn) { return insert_subscription(conn, s); },
      [&](store::Conn& conn) {
        return by_idempotency_key(conn, s.merchant_id, s.environment, s.idempotency_key.value_or(""));
      });
}

Result<std::optional<std::int64_t>> insert_subscription(store::Conn& c, const Subscription& s) {
  SIKA_ASSIGN_OR_RETURN(
      auto row,
      c.query_one("INSERT INTO bil_subscriptions (reference, uuid, merchant_id, environment, user_tier, "
                  "idempotency_key, request_hash, customer_email, customer_phone, customer_user_id, amount, currency, "
                  "frequency, time_zone, description, metadata, status, anchor_at, next_cycle, next_payment_at, "
                  "end_at, max_cycles, subscribed_at, created_at, updated_at) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                  "ON CONFLICT DO NOTHING RETURNING id",
                  {s.reference,
                   s.uuid,
                   s.merchant_id,
                   s.environment,
                   s.user_tier,
                   store::opt(s.idempotency_key),
                   s.request_hash,
                   s.customer_email,
                   store::opt(s.customer_phone),
                   store::opt(s.customer_user_id),
                   s.amount,
                   s.currency,
                   std::string(to_string(s.frequency)),
                   s.time_zone,
                   s.description,
                   s.metadata,
                   s.status,
                   s.anchor_at,
                   s.next_cycle,
                   store::opt(s.next_payment_at),
                   store::opt(s.end_at),
                   store::opt(s.max_cycles),
                   s.subscribed_at,
                   s.created_at,
                   s.updated_at}));
  if (!row) return std::optional<std::int64_t>{};
  SIKA_TRY(count(c, s.merchant_id, s.environment, s.status, 1));
  return std::optional<std::int64_t>(row->i64(0));
}

Result<std::optional<Subscription>> by_id(store::Conn& c, std::int64_t id) { return one(c, "WHERE s.id = ?", {id}); }

Result<std::optional<Subscription>> by_reference(store::Conn& c, std::int64_t merchant_id, std::string_view environment,
                                                 std::string_view reference) {
  return one(c, "WHERE s.reference = ? AND s.merchant_id = ? AND s.environment = ?",
             {std::string(reference), merchant_id, std::string(environment)});
}

Result<std::optional<Subscription>> by_reference_any(store::Conn& c, std::string_view reference) {
  return one(c, "WHERE s.reference = ?", {std::string(reference)});
}

Result<std::optional<Subscription>> by_idempotency_key(store::Conn& c, std::int64_t merchant_id,
                                                       std::string_view environment, std::string_view key) {
  return one(c, "WHERE s.merchant_id = ? AND s.environment = ? AND s.idempotency_key = ?",
             {merchant_id, std::string(environment), std::string(key)});
}

Result<std::pair<std::vector<Subscription>, std::int64_t>> list(store::Conn& c, std::int64_t merchant_id,
                                                                std::string_view environment, const ListFilter& f) {
  std::string where = "WHERE s.merchant_id = ? AND s.environment = ?";
  store::Params params{merchant_id, std::string(environment)};
  if (f.status) {
    where += " AND s.status = ?";
    params.emplace_back(*f.status);
  }
  if (f.customer_email) {
    where += " AND s.customer_email = ?";
    params.emplace_back(*f.customer_email);
  }
  // The total: counted by the customer's index range, or read from the per-status counts.
  std::optional<store::Row> total;
  if (f.customer_email) {
    SIKA_ASSIGN_OR_RETURN(total, c.query_one("SELECT COUNT(*) FROM bil_subscriptions s " + where, params));
  } else {
    store::Params cp{merchant_id, std::string(environment)};
    if (f.status) cp.emplace_back(*f.status);
    SIKA_ASSIGN_OR_RETURN(total, c.query_one(std::string("SELECT COALESCE(SUM(n), 0) FROM bil_counts WHERE "
                                                         "merchant_id = ? AND environment = ?") +
                                                 (f.status ? " AND status = ?" : ""),
                                             cp));
  }
  store::Params page = params;
  page.emplace_back(f.limit);
  page.emplace_back(f.offset);
  SIKA_ASSIGN_OR_RETURN(
      auto out, store::read_all(c, std::string(kSubscription) + where + " ORDER BY s.id DESC LIMIT ? OFFSET ?", page,
                                subscription_from));
  return std::pair{std::move(out), total ? total->i64(0) : 0};
}

Result<bool> move_status(store::Conn& c, const Subscription& s, Move move, SubStatus to,
                         const std::optional<std::string>& reason, std::int64_t stamp, std::int64_t now,
                         const store::Effects& effects) {
  std::string set = "status_reason = ?, ";
  switch (move) {
    case Move::suspend: set += "suspended_at = ?"; break;
    case Move::reactivate: set += "reactivated_at = ?, epoch = epoch + 1"; break;
    case Move::cancel: set += "cancelled_at = ?"; break;
    case Move::expire: set += "expired_at = ?"; break;
  }
  // A final status has no next payment.
  if (to == SubStatus::cancelled || to == SubStatus::expired) set += ", next_payment_at = NULL";
  set += ", updated_at = ?";
  auto from = kSubscriptionStatus.parse(s.status);
  if (!from) return internal_error(boost::json::string("subscription status " + s.status));
  store::Effects counted = effects;
  counted.then = [&](store::Conn& conn) -> Status {
    SIKA_TRY(count(conn, s.merchant_id, s.environment, s.status, -1));
    SIKA_TRY(count(conn, s.merchant_id, s.environment, kSubscriptionStatus.text(to), 1));
    return effects.then ? effects.then(conn) : Status{};
  };
  return store::transition(c, kSubscriptionStatus, *from, to,
                           {std::move(set), {store::opt(reason), stamp, now}, "id = ?", {s.id}}, counted);
}

Result<bool> cancel_at_period_end(store::Conn& c, std::int64_t id, const std::optional<std::string>& reason,
                                  std::int64_t stamp, std::int64_t now) {
  return changed(
      c.exec("UPDATE bil_subscriptions SET cancel_at_period_end = 1, status_reason = ?, cancelled_at = ?, "
             "updated_at = ? WHERE id = ? AND status = 'ACTIVE' AND cancel_at_period_end = 0",
             {store::opt(reason), stamp, now, id}));
}

Result<bool> advance_cycle(store::Conn& c, std::int64_t id, std::int64_t cycle, std::int64_t epoch,
                           std::int64_t next_due, std::int64_t now) {
  return changed(
      c.exec("UPDATE bil_subscriptions SET next_cycle = ?, next_payment_at = ?, updated_at = ? "
             "WHERE id = ? AND next_cycle = ? AND status = 'ACTIVE' AND epoch = ? AND cancel_at_period_end = 0",
             {cycle + 1, next_due, now, id, cycle, epoch}));
}

Result<bool> hold_active(store::Conn& c, std::int64_t id) {
  return changed(c.exec("UPDATE bil_subscriptions SET epoch = epoch WHERE id = ? AND status = 'ACTIVE'", {id}));
}

Status set_epoch(store::Conn& c, std::int64_t id, std::int64_t epoch, std::int64_t now) {
  SIKA_TRY(c.exec("UPDATE bil_subscriptions SET epoch = ?, updated_at = ? WHERE id = ?", {epoch, now, id}));
  return {};
}

Status set_paid(store::Conn& c, std::int64_t id, std::int64_t paid_at, const std::optional<std::string>& provider,
                const std::optional<std::string>& wallet, std::int64_t now) {
  SIKA_TRY(
      c.exec("UPDATE bil_subscriptions SET last_payment_at = ?, payer_provider = COALESCE(?, payer_provider), "
             "payer_wallet = COALESCE(?, payer_wallet), updated_at = ? WHERE id = ?",
             {paid_at, store::opt(provider), store::opt(wallet), now, id}));
  return {};
}

Status advance_clock(store::Conn& c, std::int64_t id, std::int64_t delta_ms,
                     const std::optional<std::string>& payer_wallet, std::int64_t now) {
  SIKA_TRY(
      c.exec("UPDATE bil_subscriptions SET clock_offset_ms = clock_offset_ms + ?, "
             "payer_wallet = CASE WHEN payer_wallet IS NULL THEN NULL ELSE COALESCE(?, payer_wallet) END, "
             "updated_at = ? WHERE id = ?",
             {delta_ms, store::opt(payer_wallet), now, id}));
  return {};
}

Result<std::optional<std::int64_t>> insert_payment(store::Conn& c, const Payment& p) {
  SIKA_ASSIGN_OR_RETURN(
      auto row,
      c.query_one(
          "INSERT INTO bil_payments (reference, subscription_id, cycle, amount, currency, status, due_at, paid_at, "
          "attempts, payment_intent_reference, payment_link_reference, wallet_transaction_id, created_at, updated_at) "
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id",
          {p.reference, p.subscription_id, p.cycle, p.amount, p.currency, p.status, p.due_at, store::opt(p.paid_at),
           p.attempts, store::opt(p.payment_intent_reference), store::opt(p.payment_link_reference),
           store::opt(p.wallet_transaction_id), p.created_at, p.updated_at}));
  if (!row) return std::optional<std::int64_t>{};
  return std::optional<std::int64_t>(row->i64(0));
}

Result<std::optional<Payment>> payment_of(store::Conn& c, std::int64_t subscription_id, std::int64_t cycle) {
  SIKA_ASSIGN_OR_RETURN(auto found, payments(c, "WHERE subscription_id = ? AND cycle = ?", {subscription_id, cycle}));
  if (found.empty()) return std::optional<Payment>{};
  return std::optional<Payment>(std::move(found.front()));
}

Result<std::pair<std::vector<Payment>, std::int64_t>> payments_of(store::Conn& c, std::int64_t subscription_id,
                                                                  std::int64_t limit, std::int64_t offset) {
  SIKA_ASSIGN_OR_RETURN(auto total,
                        c.query_one("SELECT COUNT(*) FROM bil_payments WHERE subscription_id = ?", {subscription_id}));
  SIKA_ASSIGN_OR_RETURN(auto page, payments(c, "WHERE subscription_id = ? ORDER BY cycle DESC LIMIT ? OFFSET ?",
                                            {subscription_id, limit, offset}));
  return std::pair{std::move(page), total ? total->i64(0) : 0};
}

Result<bool> mark_processing(store::Conn& c, std::int64_t payment_id, std::int64_t attempts,
                             std::string_view intent_reference, std::int64_t now) {
  return store::transition(c, kPaymentStatus, PayStatus::pending, PayStatus::processing,
                           {"payment_intent_reference = ?, attempts = ?, next_retry_at = NULL, updated_at = ?",
                            {std::string(intent_reference), attempts + 1, now},
                            "id = ? AND attempts = ?",
                            {payment_id, attempts}});
}

Result<bool> mark_paid(store::Conn& c, std::int64_t payment_id, PayStatus from,
                       const std::optional<std::string>& intent_reference, std::int64_t paid_at, std::int64_t now,
                       const store::Effects& effects) {
  return store::transition(c, kPaymentStatus, from, PayStatus::paid,
                           {"paid_at = ?, failure_reason = NULL, next_retry_at = NULL, "
                            "payment_intent_reference = COALESCE(?, payment_intent_reference), updated_at = ?",
                            {paid_at, store::opt(intent_reference), now},
                            "id = ?",
                            {payment_id}},
                           effects);
}

Result<bool> mark_failed(store::Conn& c, std::int64_t payment_id, PayStatus from, std::string_view reason,
                         std::int64_t failed_at, std::optional<std::int64_t> next_retry_at, std::int64_t now,
                         const store::Effects& effects) {
  return store::transition(c, kPaymentStatus, from, PayStatus::failed,
                           {"failure_reason = ?, failed_at = COALESCE(failed_at, ?), next_retry_at = ?, updated_at = ?",
                            {std::string(reason), failed_at, store::opt(next_retry_at), now},
                            "id = ?",
                            {payment_id}},
                           effects);
}

Result<bool> reopen(store::Conn& c, std::int64_t payment_id, std::int64_t attempts, std::int64_t now) {
  return store::transition(
      c, kPaymentStatus, PayStatus::failed, PayStatus::pending,
      {"next_retry_at = NULL, updated_at = ?", {now}, "id = ? AND attempts = ?", {payment_id, attempts}});
}

Result<std::int64_t> cancel_open_payments(store::Conn& c, std::int64_t subscription_id, std::int64_t now,
                                          const std::vector<std::int64_t>& keep) {
  store::Change change{"next_retry_at = NULL, updated_at = ?", {now}, "subscription_id = ?", {subscription_id}};
  for (std::int64_t id : keep) {
    change.where += " AND id <> ?";
    change.where_params.emplace_back(id);
  }
  return store::transition_all(c, kPaymentStatus, {PayStatus::pending, PayStatus::failed}, PayStatus::cancelled,
                               change);
}

Result<std::vector<Payment>> overdue_payments(store::Conn& c, std::int64_t subscription_id) {
  return payments(c,
                  "WHERE subscription_id = ? AND (status = 'FAILED' OR (status = 'PENDING' AND "
                  "payment_link_reference IS NULL)) ORDER BY cycle",
                  {subscription_id});
}

Result<std::vector<Payment>> retries_due(store::Conn& c, std::int64_t subscription_id, std::int64_t clock) {
  return payments(c,
                  "WHERE subscription_id = ? AND status = 'FAILED' AND next_retry_at IS NOT NULL "
                  "AND next_retry_at <= ? ORDER BY cycle",
                  {subscription_id, clock});
}

Status set_link_deadline(store::Conn& c, std::int64_t payment_id, std::int64_t deadline, std::int64_t now) {
  SIKA_TRY(
      c.exec("UPDATE bil_payments SET link_deadline_at = ?, updated_at = ? WHERE id = ?", {deadline, now, payment_id}));
  return {};
}

Result<bool> relink(store::Conn& c, std::int64_t payment_id, std::int64_t attempts, std::string_view link_reference,
                    std::int64_t deadline, std::int64_t now) {
  return store::transition(c, kPaymentStatus, PayStatus::failed, PayStatus::pending,
                           {"payment_link_reference = ?, link_deadline_at = ?, attempts = ?, next_retry_at = NULL, "
                            "updated_at = ?",
                            {std::string(link_reference), deadline, attempts + 1, now},
                            "id = ? AND attempts = ?",
                            {payment_id, attempts}});
}

Result<std::vector<Payment>> link_deadlines_due(store::Conn& c, std::int64_t subscription_id, std::int64_t clock) {
  return payments(c,
                  "WHERE subscription_id = ? AND status = 'PENDING' AND cycle > 0 AND link_deadline_at IS NOT NULL "
                  "AND link_deadline_at <= ? ORDER BY cycle",
                  {subscription_id, clock});
}

Result<std::vector<Payment>> open_link_payments(store::Conn& c, std::int64_t subscription_id) {
  return payments(c, "WHERE subscription_id = ? AND status = 'PENDING' AND payment_link_reference IS NOT NULL",
                  {subscription_id});
}

namespace {

constexpr std::string_view kMandate =
    "SELECT id, reference, subscription_id, wallet, cap, currency, frequency, status, debits, last_debit_at, "
    "approved_at, revoked_at, revoked_by, created_at, updated_at FROM bil_mandates ";

Result<std::optional<Mandate>> mandate_where(store::Conn& c, std::string_view where, const store::Params& params) {
  SIKA_ASSIGN_OR_RETURN(auto row, c.query_one(std::string(kMandate) + std::string(where), params));
  if (!row) return std::optional<Mandate>{};
  Mandate m;
  m.id = row->i64(0);
  m.reference = row->str(1);
  m.subscription_id = row->i64(2);
  m.wallet = row->str(3);
  m.cap = row->i64(4);
  m.currency = row->str(5);
  m.frequency = parse_frequency(row->str(6)).value_or(Frequency::monthly);
  m.status = row->str(7);
  m.debits = row->i64(8);
  m.last_debit_at = row->opt_i64(9);
  m.approved_at = row->opt_i64(10);
  m.revoked_at = row->opt_i64(11);
  m.revoked_by = row->opt_str(12);
  m.created_at = row->i64(13);
  m.updated_at = row->i64(14);
  return std::optional<Mandate>(std::move(m));
}

}  // namespace

Result<std::optional<std::int64_t>> insert_mandate(store::Conn& c, const Mandate& m, std::string_view token_hash) {
  SIKA_ASSIGN_OR_RETURN(
      auto row,
      c.query_one("INSERT INTO bil_mandates (reference, subscription_id, wallet, cap, currency, frequency, "
                  "status, token_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                  "ON CONFLICT DO NOTHING RETURNING id",
                  {m.reference, m.subscription_id, m.wallet, m.cap, m.currency, std::string(to_string(m.frequency)),
                   m.status, std::string(token_hash), m.created_at, m.updated_at}));
  if (!row) return std::optional<std::int64_t>{};
  return std::optional<std::int64_t>(row->i64(0));
}

Result<std::optional<Mandate>> mandate_of(store::Conn& c, std::int64_t subscription_id) {
  return mandate_where(c, "WHERE subscription_id = ? ORDER BY id DESC LIMIT 1", {subscription_id});
}

Result<std::optional<Mandate>> mandate_by_token(store::Conn& c, std::string_view token_hash) {
  return mandate_where(c, "WHERE token_hash = ?", {std::string(token_hash)});
}

Result<bool> approve_mandate(store::Conn& c, std::int64_t id, std::int64_t now, const store::Effects& effects) {
  return store::transition(c, kMandateStatus, MandateStatus::pending, MandateStatus::active,
                           {"approved_at = ?, updated_at = ?", {now, now}, "id = ?", {id}}, effects);
}

Result<bool> revoke_mandate(store::Conn& c, std::int64_t subscription_id, std::string_view by, std::int64_t now,
                            const store::Effects& effects) {
  // At most one mandate of a subscription is PENDING or ACTIVE (a unique index).
  return store::transition(c, kMandateStatus, {MandateStatus::pending, MandateStatus::active}, MandateStatus::revoked,
                           {"revoked_at = ?, revoked_by = ?, updated_at = ?",
                            {now, std::string(by), now},
                            "subscription_id = ?",
                            {subscription_id}},
                           effects);
}

Result<bool> revoke_mandate_id(store::Conn& c, std::int64_t id, std::string_view by, std::int64_t now,
                               const store::Effects& effects) {
  return store::transition(
      c, kMandateStatus, {MandateStatus::pending, MandateStatus::active}, MandateStatus::revoked,
      {"revoked_at = ?, revoked_by = ?, updated_at = ?", {now, std::string(by), now}, "id = ?", {id}}, effects);
}

Result<bool> take_mandate(store::Conn& c, std::int64_t id, std::int64_t amount, std::int64_t now) {
  SIKA_ASSIGN_OR_RETURN(auto n, c.exec("UPDATE bil_mandates SET debits = debits + 1, last_debit_at = ?, updated_at = ? "
                                       "WHERE id = ? AND status = 'ACTIVE' AND cap >= ?",
                                       {now, now, id, amount}));
  return n == 1;
}

Result<bool> mark_paid_from_wallet(store::Conn& c, std::int64_t payment_id, std::int64_t attempts,
                                   std::string_view wallet_tx, std::int64_t paid_at, std::int64_t now,
                                   const store::Effects& effects) {
  return store::transition(c, kPaymentStatus, PayStatus::pending, PayStatus::paid,
                           {"paid_at = ?, attempts = attempts + 1, wallet_transaction_id = ?, failure_reason = NULL, "
                            "next_retry_at = NULL, updated_at = ?",
                            {paid_at, std::string(wallet_tx), now},
                            "id = ? AND attempts = ?",
                            {payment_id, attempts}},
                           effects);
}

Status set_wallet_transaction(store::Conn& c, std::int64_t payment_id, std::string_view wallet_tx, std::int64_t now) {
  SIKA_TRY(
      c.exec("UPDATE bil_payments SET wallet_transaction_id = ?, updated_at = ? WHERE id = ? AND status = 'PENDING'",
             {std::string(wallet_tx), now, payment_id}));
  return {};
}

Result<std::vector<Ended>> ended_collections(store::Conn& c, std::int64_t limit) {
  std::vector<Ended> out;
  auto add = [&](const store::Rows& rows, std::string_view from) {
    for (const auto& r : rows)
      out.push_back(
          Ended{r.i64(0), r.i64(1), std::string(from), r.str(2), r.str(3), r.opt_str(4), r.str(5), r.str(6), r.i64(7)});
  };
  SIKA_ASSIGN_OR_RETURN(
      auto pushed,
      c.query(
          "SELECT p.id, p.subscription_id, t.reference, t.status, t.failure_reason, t.service_code, "
          "t.customer_wallet, t.updated_at FROM bil_payments p "
          "JOIN pay_transactions t ON t.reference = p.payment_intent_reference "
          "WHERE p.status = 'PROCESSING' AND t.status IN ('COMPLETED', 'REFUNDED', 'FAILED', 'EXPIRED', 'CANCELLED') "
          "ORDER BY p.id LIMIT ?",
          {limit}));
  add(pushed, kPayProcessing);
  // The consent payment: the customer paid the subscription's single-use link.
  SIKA_ASSIGN_OR_RETURN(
      auto linked, c.query("SELECT p.id, p.subscription_id, t.reference, t.status, t.failure_reason, t.service_code, "
                           "t.customer_wallet, t.updated_at FROM bil_payments p "
                           "JOIN lnk_links l ON l.reference = p.payment_link_reference "
                           "JOIN lnk_payments a ON a.link_id = l.id "
                           "JOIN pay_transactions t ON t.merchant_id = l.merchant_id AND t.environment = l.environment "
                           "AND t.transaction_uuid = a.transaction_uuid "
                           "WHERE p.status = 'PENDING' AND p.payment_link_reference IS NOT NULL AND t.status IN "
                           "('COMPLETED', 'REFUNDED') "
                           "ORDER BY p.id LIMIT ?",
                           {limit}));
  add(linked, kPayPending);
  return out;
}

}  // namespace sika::billing::tables
