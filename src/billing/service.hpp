#pragma once
// Subscriptions and the billing engine (docs/subscriptions.md). The guarantees:
//  - the customer consents by paying the first cycle through a single-use payment link
//    (links/); later cycles are collections pushed to the phone and operator that paid it
//    (payments::Service::collect, a present payer);
//  - exactly one payment row per (subscription, cycle): it is inserted, next_cycle advanced by a
//    conditional UPDATE, the next cycle's job enqueued and the cycle's collection created in one
//    write unit (the creation step of payments::Service::collect), and the table's
//    UNIQUE (subscription_id, cycle) refuses a second one whatever the nodes, restarts or job runs;
//  - exactly one collection per payment attempt: its transaction_uuid is derived from
//    (subscription, cycle, attempt), so payments' idempotency on transaction_uuid returns the
//    existing collection to any second run instead of creating one;
//  - every status change is timestamped and commits with its outbox event (webhooks);
//  - another merchant's subscription is not found (404).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "billing/model.hpp"
#include "billing/store.hpp"
#include "catalog/model.hpp"
#include "core/acting.hpp"
#include "core/periodic.hpp"
#include "core/result.hpp"
#include "links/service.hpp"
#include "notify/notifier.hpp"
#include "otp/service.hpp"
#include "payments/service.hpp"
#include "store/db.hpp"
#include "store/job_runner.hpp"
#include "web/message.hpp"

namespace sika::billing {

// The job queues of billing: one job per (subscription, cycle, epoch) that creates and asks
// for the cycle's payment, one per dunning retry of a failed cycle, and one per link sent for a
// cycle (each attempt of a cycle whose operator needs a code) that fails it at its deadline.
inline constexpr std::string_view kChargeQueue = "billing.charge";
inline constexpr std::string_view kRetryQueue = "billing.retry";
inline constexpr std::string_view kLinkDeadlineQueue = "billing.link_deadline";

struct Options {
  std::string default_time_zone = "Africa/Douala";  // when the subscribe request names none
  RetrySchedule retries{{1, 3, 5, 7}};              // dunning: days after a cycle's first failure
  std::int64_t settle_interval_ms = 1000;           // how often ended collections are looked for
  // A cycle paid by a payment link fails into dunning when its link is still unpaid this long
  // after it was sent (on the subscription's clock); the link expires then too.
  std::int64_t link_deadline_ms = 24LL * 3'600'000;
  int settle_batch = 500;
  int charge_page = 64;                                     // due cycles one job worker decides and creates together
  std::int64_t max_clock_advance_ms = 3660LL * 86'400'000;  // one call of the test clock
  std::function<std::int64_t()> clock;                      // epoch ms; now_ms() when empty
  // Wallet mandates: the codes the customer approves with, and the checkout surface's base URL
  // their page lives under ({checkout_url}/mandate/{token}). No otp: mandates cannot be approved.
  otp::Service* otp = nullptr;
  std::string checkout_url;
  // The catalog snapshot (the Sika wallet service a mandate debits through, and which operator
  // services need a code); empty: no mandate debits, every cycle is pushed.
  std::function<std::shared_ptr<const catalog::Catalog>()> catalog;
};

// What a merchant sends to ask the customer for a wallet mandate.
struct MandateRequest {
  std::optional<std::string> wallet;  // wallet_phone_number; else the payer's or the customer's phone
  std::optional<std::int64_t> cap;    // per cycle; at least the amount, which is the default
};

class Service {
 public:
  Service(store::Db& db, payments::Service& payments, links::Service& links, notify::Notifier* notifier,
          Options options);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // --- HTTP handlers (gateway, bearer scope payments) ---
  Result<web::Response> subscribe(web::Request& req);      // POST /merchand/billing/subscribe
  Result<web::Response> list(web::Request& req);           // GET /merchand/billing/subscriptions
  Result<web::Response> detail(web::Request& req);         // GET .../subscriptions/detail/{reference}?for=
  Result<web::Response> cancel(web::Request& req);         // POST .../subscriptions/cancel/{reference}
  Result<web::Response> suspend(web::Request& req);        // POST .../subscriptions/suspend/{reference}
  Result<web::Response> reactivate(web::Request& req);     // POST .../subscriptions/reactivate/{reference}
  Result<web::Response> payments(web::Request& req);       // GET .../subscriptions/payments/{reference}
  Result<web::Response> advance_clock(web::Request& req);  // POST .../subscriptions/test-clock/{reference}
  Result<web::Response> mandate(web::Request& req);        // POST .../subscriptions/mandate/{reference}
  // --- the customer's mandate page (checkout surface, fr/en, plain forms) ---
  web::Response mandate_page(web::Request& req);         // GET /mandate/{token}
  web::Response mandate_page_submit(web::Request& req);  // POST /mandate/{token} (send, approve, revoke)

  // --- operations ---
  struct Created {
    Subscription subscription;
    std::vector<Payment> payments;
    std::string payment_url;  // the consent link's public page
    bool replayed = false;    // an earlier request with the same idempotency key
  };
  Result<Created> create(const Acting& merchant, NewSubscription request, json::FieldErrors errors = {});
  Result<Subscription> find(const Acting& merchant, std::string_view reference);
  Result<std::pair<std::vector<Subscription>, std::int64_t>> list_subscriptions(const Acting& merchant,
                                                                                const tables::ListFilter& filter);
  Result<std::pair<std::vector<Payment>, std::int64_t>> list_payments(const Subscription& s, std::int64_t limit,
                                                                      std::int64_t offset);
  // Applies a move (the merchant's: cancel now or at period end, suspend, reactivate; expire,
  // for operators and the demo world); 409 naming status when the status does not allow it.
  Result<Subscription> apply(const Acting& merchant, std::string_view reference, Move move, const MoveRequest& request);
  // Sandbox only: moves the subscription's clock forward by delta_ms, then bills what fell due.
  // `payer_wallet` replaces the number later cycles are asked from (to try the sandbox's
  // failure numbers after a successful consent); only once the consent payment taught one.
  Result<Subscription> advance(const Acting& merchant, std::string_view reference, std::int64_t delta_ms,
                               const std::optional<std::string>& payer_wallet = std::nullopt);

  // Asks the customer for a wallet mandate: a PENDING mandate (409 naming mandate while the
  // subscription has a PENDING or ACTIVE one; after a revocation a new one may be asked for, the
  // old one stays REVOKED) and its page sent through the notifier to the wallet's phone.
  // Returns the mandate and its page's URL (the URL carries the page's secret: it is the
  // customer's, shown to the merchant only in this answer for the sandbox).
  Result<std::pair<Mandate, std::string>> request_mandate(const Acting& merchant, std::string_view reference,
                                                          const MandateRequest& request);
  // The customer's moves on the mandate page, by the page's secret: send the code, approve
  // with it (PENDING -> ACTIVE), revoke (-> REVOKED). 404 when the secret is unknown.
  Result<Mandate> mandate_by_token(std::string_view token);
  Status send_mandate_code(std::string_view token, i18n::Locale locale);
  Result<Mandate> approve_mandate(std::string_view token, std::string_view code);
  Result<Mandate> revoke_mandate(std::string_view token);
  // Revokes the subscription's mandate (PENDING or ACTIVE) on behalf of `by` (operators: the
  // admin CLI); 409 naming mandate when there is none left to revoke.
  Result<Mandate> revoke_mandate_of(std::int64_t subscription_id, std::string_view by);
  Result<std::optional<Mandate>> mandate_of(const Subscription& s);

  // --- the billing engine ---
  // Registers the job handlers; call before the runner starts.
  void register_jobs(store::JobRunner& runner);
  // Creates the payment of `cycle` and asks for it (the charge job's work); nothing when the
  // subscription has moved on, is not ACTIVE, or `epoch` is not its current one.
  Status charge(std::int64_t subscription_id, std::int64_t cycle, std::int64_t epoch);
  // charge() for a page of charge jobs: one read unit decides for all, and the cycles pushed to
  // the payer's phone (the common case) are created in one write unit
  // (payments::Service::collect_page), each cycle all or nothing inside it; the others run as
  // charge() does. One Status per job, in order.
  std::vector<Status> charge_page(const std::vector<store::Job>& jobs);
  // Asks again for a FAILED cycle whose attempts are `attempts`, after a reminder (a cycle paid
  // by a link: a new link for the same cycle, in the reminder).
  Status retry(std::int64_t subscription_id, std::int64_t cycle, std::int64_t attempts);
  // The deadline of attempt `attempts` of a cycle paid by a link: unless the link was paid, the
  // link is disabled and the cycle FAILED into dunning in one unit (its event, the next retry's
  // job or the suspension). Nothing when the attempt is no longer PENDING; 503 retryable while a
  // payment of the link may still complete (the job runs again later).
  Status lapse(std::int64_t subscription_id, std::int64_t cycle, std::int64_t attempts);
  // Applies the outcome of ended collections to their payments (paid, failed + dunning);
  // returns how many payments this call changed.
  Result<int> settle_due();
  // Starts / stops the settlement loop.
  void start();
  void stop();

  std::int64_t now() const;

 private:
  // What a charge job decided in its read unit.
  struct ChargePlan {
    std::optional<Subscription> s;  // unset: nothing to do
    std::optional<Payment> billed;  // the cycle's payment when an earlier run created it
    std::optional<Payment> fresh;   // the cycle's payment to create now
    std::optional<Mandate> mandate;
    std::optional<Move> ending;  // the period's end: cancel (at period end) or expire instead
    std::int64_t cycle = 0;
    std::int64_t epoch = 0;
    std::int64_t at = 0;
    std::int64_t next_due = 0;
  };
  // The fields of a billing job's payload (-1 when missing).
  struct ChargeJob {
    std::int64_t subscription_id;
    std::int64_t cycle;
    std::int64_t epoch;
    std::int64_t attempts;
  };
  static ChargeJob charge_job(const store::Job& job);
  Status plan_charge(store::Conn& c, std::int64_t subscription_id, std::int64_t cycle, std::int64_t epoch,
                     std::int64_t at, ChargePlan& plan);
  // True when the plan is a new cycle pushed to the payer's phone (no mandate, no code).
  bool pushes_plainly(const ChargePlan& plan) const;
  // Acts on a plan (ending, pushing a cycle created before, a mandate debit, a link, a push).
  Status carry_out(ChargePlan& plan);
  // Opens the planned cycle in the caller's unit, with its collection's reference when it has one.
  Status open(store::Conn& c, ChargePlan& plan, const std::optional<std::string>& intent_reference);
  // What the creation of the planned cycle's collection leaves: a refusal for good opens the
  // cycle without one and fails its attempt into dunning; a transient error is returned.
  Status opened(ChargePlan& plan, Result<payments::Transaction> tx);
  Result<Acting> merchant_of(const Subscription& s);
  // The answer to a request whose idempotency key `found` holds: the stored subscription and its
  // latest payments when it was the same request (same hash), a 409 naming idempotency_key otherwise.
  Result<Created> replayed(const Subscription& found, std::string_view request_hash);
  // Creates and pushes the collection of a PENDING payment (or pushes one left INITIATED).
  Status push(const Subscription& s, const Payment& p);
  // The collection of attempt `attempt` of a payment: its transaction_uuid is derived from
  // (subscription, cycle, attempt), so every run asking for that attempt gets the same one.
  payments::IntentRequest intent_for(const Subscription& s, const Payment& p, std::int64_t attempt) const;
  // Debits attempt p.attempts + 1 of `p` from the mandate's wallet (WALLET collection, no code):
  // the debit, its ledger entries, the payment's row (inserted PAID with the advance to the next
  // cycle and its job when `opening`, else PENDING -> PAID) and the event commit in one unit. A
  // short balance opens / leaves the payment PENDING with the failed transaction and fails it
  // into dunning. False when the mandate could not be used (revoked, cap below the debit):
  // the caller asks the phone instead.
  Result<bool> debit(const Subscription& s, const Mandate& m, Payment p, bool opening, std::int64_t next_due);
  Result<payments::IntentRequest> mandate_intent(const Subscription& s, const Mandate& m, const Payment& p,
                                                 std::int64_t attempt) const;
  // Whether the payer's operator service needs a code the customer types (no push possible).
  bool payer_needs_code(const Subscription& s) const;
  // Opens cycle `p` as a single-use payment link sent to the customer (operators that need a code).
  Status send_cycle_link(const Subscription& s, Payment p, std::int64_t next_due);
  // Sends a new link for the FAILED link-paid cycle `failed` (its next attempt), in a reminder.
  Status send_new_link(const Subscription& s, const Payment& failed);
  // The single-use link of attempt `p` of a cycle, expiring at the attempt's deadline.
  Result<links::Link> cycle_link(const Acting& merchant, const Subscription& s, const Payment& p);
  // Inside a unit: the job failing attempt `p` of a link-paid cycle at its deadline.
  Status enqueue_deadline(store::Conn& c, const Subscription& s, const Payment& p, std::int64_t at);
  enum class Lapse { failed, moot, running };
  Result<Lapse> lapse_link(std::int64_t subscription_id, std::int64_t cycle, std::int64_t attempts);
  // Inside a unit: fails payment `p` (status `from`) into dunning: FAILED with `reason`, its event,
  // and the next retry's job, or the suspension once the schedule is spent. Returns the payment
  // when a retry follows (the customer is told when), nullopt otherwise or when `p` had moved.
  Result<std::optional<Payment>> fail_into_dunning(store::Conn& c, const Subscription& s, const Payment& p,
                                                   std::string_view from, const std::string& reason, std::int64_t at);
  void remind_failed(const Subscription& s, const Payment& p);
  // Inside a unit: a mandate event (`type`) of the subscription with its newest mandate.
  // The event of a mandate's move: the subscription's summary and its mandate, read after the move.
  static store::Effects mandate_effects(std::int64_t subscription_id, std::int64_t at);
  // The event of a cycle's payment: the subscription's summary and the payment, read after the move.
  static Result<store::Event> payment_event(store::Conn& c, std::int64_t subscription_id, std::int64_t cycle,
                                            std::int64_t at);
  // What a subscription's end does to its payments in the move's unit: open links closed (but one
  // being paid), PENDING and FAILED cycles CANCELLED, the mandate REVOKED.
  static Status end_payments(store::Conn& c, const Subscription& s, std::int64_t at);
  // Inside a unit: the payment row of a new cycle, the advance to the next and that cycle's job;
  // 409 when another run opened it first.
  Status open_cycle(store::Conn& c, const Subscription& s, Payment& p, std::int64_t next_due, std::int64_t at);
  // Records an attempt that could not even be created as failed (dunning takes over).
  Status refuse(const Subscription& s, const Payment& p, const std::string& reason);
  // Inside a unit: applies a move, its side effects and its event; false when lost or illegal.
  Result<bool> move(store::Conn& c, const Subscription& s, Move move, const std::optional<std::string>& reason,
                    std::int64_t now);
  Status enqueue_charge(store::Conn& c, const Subscription& s, std::int64_t cycle, std::int64_t epoch,
                        std::int64_t now);
  Status settle(const tables::Ended& ended);
  void remind(const Subscription& s, const Payment& p, std::string_view tag, const std::string& text);
  void wake_jobs();
  Result<web::Response> move_handler(web::Request& req, Move move);

  store::Db& db_;
  payments::Service& payments_;
  links::Service& links_;
  notify::Notifier* notifier_;
  Options options_;
  store::JobRunner* jobs_ = nullptr;
  std::unique_ptr<Periodic> settler_;
};

}  // namespace sika::billing
