#pragma once
// All SQL of billing (tables bil_subscriptions and bil_payments, migration 15). Every function
// runs inside the caller's read or write unit.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "billing/model.hpp"
#include "core/result.hpp"
#include "store/db.hpp"
#include "store/idempotency.hpp"

namespace sika::billing::tables {

// Inserts a subscription; nullopt when its (merchant, environment, idempotency_key) exists.
Result<std::optional<std::int64_t>> insert_subscription(store::Conn& c, const Subscription& s);
// A subscription's idempotency key, (merchant, environment, idempotency_key): a replay with
// another request is a 409 naming idempotency_key.
extern const store::IdempotencyKey kIdempotencyKey;
// Inserts `s` (insert_subscription): its new id, or the subscription that already holds its
// idempotency key, whatever its request (the caller compares with store::same_request).
Result<store::Keyed<Subscription>> insert_or_fetch(store::Conn& c, const Subscription& s);
Result<std::optional<Subscription>> by_id(store::Conn& c, std::int64_t id);
// Within one merchant's environment (another merchant's subscription is not found).
Result<std::optional<Subscription>> by_reference(store::Conn& c, std::int64_t merchant_id, std::string_view environment,
                                                 std::string_view reference);
// Whoever owns it (operators: the admin CLI).
Result<std::optional<Subscription>> by_reference_any(store::Conn& c, std::string_view reference);
Result<std::optional<Subscription>> by_idempotency_key(store::Conn& c, std::int64_t merchant_id,
                                                       std::string_view environment, std::string_view key);

struct ListFilter {
  std::optional<std::string> status;
  std::optional<std::string> customer_email;
  std::int64_t limit = 25, offset = 0;
};
// A merchant's subscriptions newest first, and how many match in all.
Result<std::pair<std::vector<Subscription>, std::int64_t>> list(store::Conn& c, std::int64_t merchant_id,
                                                                std::string_view environment, const ListFilter& f);

// Moves the status from `from` to `to`, stamping the move's timestamp column with `stamp` (the
// subscription's clock) and the reason; false when the status was no longer `from` (another
// actor moved it first).
// `s` is the subscription as read in the unit (its status is the move's `from`); `effects` run
// after the per-status counts, and give the move's event (kSubscriptionStatus).
Result<bool> move_status(store::Conn& c, const Subscription& s, Move move, SubStatus to,
                         const std::optional<std::string>& reason, std::int64_t stamp, std::int64_t now,
                         const store::Effects& effects);
// Marks an ACTIVE subscription to end at its period's end (cancelled_at = `stamp`, the request's
// time on the subscription's clock).
Result<bool> cancel_at_period_end(store::Conn& c, std::int64_t id, const std::optional<std::string>& reason,
                                  std::int64_t stamp, std::int64_t now);
// Moves next_cycle from `cycle` to cycle + 1 with its due time; false unless the subscription is
// still ACTIVE, of `epoch`, not set to end at its period's end and at `cycle` (a cancel, a
// suspension, a reactivation or another run that committed after the caller's read wins).
Result<bool> advance_cycle(store::Conn& c, std::int64_t id, std::int64_t cycle, std::int64_t epoch,
                           std::int64_t next_due, std::int64_t now);
// Holds the subscription ACTIVE for the rest of the caller's unit (a conditional UPDATE of its
// row: a concurrent move waits for the unit, or the unit sees the move); false when it is not.
Result<bool> hold_active(store::Conn& c, std::int64_t id);
Status set_epoch(store::Conn& c, std::int64_t id, std::int64_t epoch, std::int64_t now);
// last_payment_at = `paid_at` (the subscription's clock); the payer when given.
Status set_paid(store::Conn& c, std::int64_t id, std::int64_t paid_at, const std::optional<std::string>& provider,
                const std::optional<std::string>& wallet, std::int64_t now);
// Adds `delta_ms` to the test clock; a payer wallet, when given, replaces the learnt one.
Status advance_clock(store::Conn& c, std::int64_t id, std::int64_t delta_ms,
                     const std::optional<std::string>& payer_wallet, std::int64_t now);

// --- payments ---

// Inserts the payment of (subscription, cycle) (with its collection, link or wallet transaction
// when it has one); nullopt when that cycle already has one.
Result<std::optional<std::int64_t>> insert_payment(store::Conn& c, const Payment& p);
Result<std::optional<Payment>> payment_of(store::Conn& c, std::int64_t subscription_id, std::int64_t cycle);
// The payments of a subscription, newest cycle first, and how many it has.
Result<std::pair<std::vector<Payment>, std::int64_t>> payments_of(store::Conn& c, std::int64_t subscription_id,
                                                                  std::int64_t limit, std::int64_t offset);
// PENDING (attempts = `attempts`) -> PROCESSING with the collection that asks for it.
Result<bool> mark_processing(store::Conn& c, std::int64_t payment_id, std::int64_t attempts,
                             std::string_view intent_reference, std::int64_t now);
// PENDING or PROCESSING -> PAID; the collection's reference is recorded when given.
// `effects` give its kEventPaymentSucceeded.
Result<bool> mark_paid(store::Conn& c, std::int64_t payment_id, PayStatus from,
                       const std::optional<std::string>& intent_reference, std::int64_t paid_at, std::int64_t now,
                       const store::Effects& effects);
// `from` -> FAILED with the reason; failed_at keeps the first failure; next_retry_at as given.
// `effects` give its kEventPaymentFailed.
Result<bool> mark_failed(store::Conn& c, std::int64_t payment_id, PayStatus from, std::string_view reason,
                         std::int64_t failed_at, std::optional<std::int64_t> next_retry_at, std::int64_t now,
                         const store::Effects& effects);
// FAILED (attempts = `attempts`) -> PENDING, to be asked again.
Result<bool> reopen(store::Conn& c, std::int64_t payment_id, std::int64_t attempts, std::int64_t now);
// Every PENDING or FAILED payment of the subscription but those in `keep` -> CANCELLED (the
// subscription ended).
Result<std::int64_t> cancel_open_payments(store::Conn& c, std::int64_t subscription_id, std::int64_t now,
                                          const std::vector<std::int64_t>& keep = {});
// FAILED payments of a subscription, and PENDING ones asked by phone or wallet whose attempt was
// never made (a suspension that came first): what reactivation collects first.
Result<std::vector<Payment>> overdue_payments(store::Conn& c, std::int64_t subscription_id);
// FAILED payments whose retry is due at `clock` on the subscription's clock.
Result<std::vector<Payment>> retries_due(store::Conn& c, std::int64_t subscription_id, std::int64_t clock);
// Sets when the link of a link-paid cycle lapses unpaid (the subscription's clock).
Status set_link_deadline(store::Conn& c, std::int64_t payment_id, std::int64_t deadline, std::int64_t now);
// FAILED (attempts = `attempts`) -> PENDING with a new link and its deadline, counting the
// attempt; false when another run sent it first (or the payment moved on).
Result<bool> relink(store::Conn& c, std::int64_t payment_id, std::int64_t attempts, std::string_view link_reference,
                    std::int64_t deadline, std::int64_t now);
// PENDING link-paid cycles whose link's deadline is at or before `clock`.
Result<std::vector<Payment>> link_deadlines_due(store::Conn& c, std::int64_t subscription_id, std::int64_t clock);
// PENDING payments waiting for their link (the consent, link-paid cycles).
Result<std::vector<Payment>> open_link_payments(store::Conn& c, std::int64_t subscription_id);

// --- wallet mandates (migrations 21 and 24) ---

// Inserts a PENDING mandate; nullopt when the subscription has a PENDING or ACTIVE one already.
Result<std::optional<std::int64_t>> insert_mandate(store::Conn& c, const Mandate& m, std::string_view token_hash);
// The subscription's newest mandate (the live one when there is one: a new mandate can only be
// asked for once the previous one is REVOKED).
Result<std::optional<Mandate>> mandate_of(store::Conn& c, std::int64_t subscription_id);
// The mandate whose page secret hashes to `token_hash`.
Result<std::optional<Mandate>> mandate_by_token(store::Conn& c, std::string_view token_hash);
// PENDING -> ACTIVE; false when it was not PENDING.
// `effects` give its kEventMandateApproved.
Result<bool> approve_mandate(store::Conn& c, std::int64_t id, std::int64_t now, const store::Effects& effects);
// The subscription's PENDING or ACTIVE mandate -> REVOKED by `by` (customer, merchant); false when
// it has none.
// `effects` give its kEventMandateRevoked.
Result<bool> revoke_mandate(store::Conn& c, std::int64_t subscription_id, std::string_view by, std::int64_t now,
                            const store::Effects& effects);
// The mandate `id` -> REVOKED by `by` when PENDING or ACTIVE; false otherwise.
Result<bool> revoke_mandate_id(store::Conn& c, std::int64_t id, std::string_view by, std::int64_t now,
                               const store::Effects& effects);
// Takes the ACTIVE mandate for one debit of `amount`: counts it, conditional on the status and
// on the cap covering it; false (nothing changed) otherwise.
Result<bool> take_mandate(store::Conn& c, std::int64_t id, std::int64_t amount, std::int64_t now);
// PENDING (attempts = `attempts`) -> PAID by the wallet transaction `wallet_tx`, counting the attempt.
Result<bool> mark_paid_from_wallet(store::Conn& c, std::int64_t payment_id, std::int64_t attempts,
                                   std::string_view wallet_tx, std::int64_t paid_at, std::int64_t now,
                                   const store::Effects& effects);
// Records the wallet transaction of a PENDING payment's attempt (a debit that failed).
Status set_wallet_transaction(store::Conn& c, std::int64_t payment_id, std::string_view wallet_tx, std::int64_t now);

// What the settlement scan found: a payment whose collection ended.
struct Ended {
  std::int64_t payment_id = 0;
  std::int64_t subscription_id = 0;
  std::string from;  // the payment's status (PROCESSING, or PENDING for the consent link)
  std::string transaction_reference;
  std::string transaction_status;
  std::optional<std::string> failure_reason;
  std::string service_code;
  std::string customer_wallet;
  std::int64_t ended_at = 0;
};
// Up to `limit` PROCESSING payments whose collection reached a final status, and PENDING
// consent payments whose link was paid.
Result<std::vector<Ended>> ended_collections(store::Conn& c, std::int64_t limit);

}  // namespace sika::billing::tables
