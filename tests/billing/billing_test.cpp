// Subscriptions over real payments and links services (the sandbox operator), on both backends:
// the state machine, consent, exactly one payment and one collection per cycle under concurrent
// runs, dunning to SUSPENDED, moves with their timestamps and events.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <atomic>
#include <regex>
#include <thread>
#include <tuple>
#include <vector>

#include "billing/service.hpp"
#include "billing/store.hpp"
#include "core/reason.hpp"
#include "notify/notifier.hpp"
#include "payments/fixture.hpp"
#include "store/jobs.hpp"
#include "web/acting.hpp"

namespace sika::billing {
namespace {

namespace bj = boost::json;
constexpr std::int64_t kDay = 86'400'000;

TEST(BillingModel, TheStateMachineAllowsOnlyItsMoves) {
  const std::string_view all[] = {kActive, kSuspended, kCancelled, kExpired};
  for (auto from : all) {
    for (Move m : {Move::suspend, Move::reactivate, Move::cancel, Move::expire}) {
      auto to = next_status(from, m);
      const bool live = from == kActive || from == kSuspended;
      switch (m) {
        case Move::suspend: EXPECT_EQ(to, from == kActive ? std::optional(kSuspended) : std::nullopt) << from; break;
        case Move::reactivate: EXPECT_EQ(to, from == kSuspended ? std::optional(kActive) : std::nullopt) << from; break;
        case Move::cancel: EXPECT_EQ(to, live ? std::optional(kCancelled) : std::nullopt) << from; break;
        case Move::expire: EXPECT_EQ(to, live ? std::optional(kExpired) : std::nullopt) << from; break;
      }
    }
  }
  EXPECT_EQ(event_type(Move::cancel), "subscription.cancelled");
  EXPECT_EQ(event_type(Move::reactivate), "subscription.reactivated");
}

TEST(BillingModel, RetrySchedulesAreIncreasingDayCounts) {
  auto s = RetrySchedule::parse("1, 3,5,7");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->days, (std::vector<std::int64_t>{1, 3, 5, 7}));
  EXPECT_TRUE(RetrySchedule::parse("")->days.empty());
  for (const char* bad : {"3,1", "1,1", "0", "61", "x", "1,,2", "-1", "1.5"})
    EXPECT_FALSE(RetrySchedule::parse(bad)) << bad;
}

TEST(BillingModel, SubscribeBodiesAreCheckedFieldByField) {
  json::FieldErrors errors;
  auto n = parse_subscribe(bj::object{{"customer_email", "a@b.example"},
                                      {"amount", 1500},
                                      {"currency", "XAF"},
                                      {"frequency", "QUARTERLY"},
                                      {"idempotency_key", "k1"}},
                           "", 0, errors);
  EXPECT_TRUE(errors.empty()) << bj::serialize(errors.details());
  EXPECT_EQ(n.frequency, Frequency::quarterly);
  EXPECT_EQ(n.idempotency_key, "k1");
  // The idempotency key is not part of the request's fingerprint; the fields are.
  json::FieldErrors e2;
  auto same = parse_subscribe(
      bj::object{{"currency", "XAF"}, {"frequency", "QUARTERLY"}, {"amount", 1500}, {"customer_email", "a@b.example"}},
      "k2", 0, e2);
  EXPECT_EQ(same.request_hash, n.request_hash);
  EXPECT_EQ(same.idempotency_key, "k2");
  json::FieldErrors e3;
  parse_subscribe(bj::object{{"customer_email", "a@b.example"}, {"idempotency_key", "k1"}}, "k2", 0, e3);
  EXPECT_TRUE(e3.details().contains("idempotency_key"));
  EXPECT_TRUE(e3.details().contains("amount"));
}

TEST(BillingModel, EachRefusalOfASubscribeBodyIsATypedProblemWithItsEnglishText) {
  json::FieldErrors errors;
  parse_subscribe(bj::object{{"customer_email", "nope"},
                             {"customer_phone_number", "12"},
                             {"amount", 0},
                             {"currency", "xaf1"},
                             {"frequency", "HOURLY"},
                             {"description", std::string(501, 'd')},
                             {"time_zone", "Mars/Olympus"},
                             {"end_at", "tomorrow"},
                             {"max_cycles", 0},
                             {"idempotency_key", "k1"}},
                  "k2", 0, errors);
  const std::vector<std::tuple<std::string, Reason, std::string>> expected = {
      {"customer_email", Reason::email, "must be an e-mail address"},
      {"customer_phone_number", Reason::international_number,
       "must be an international number of 8 to 15 digits, e.g. 237690000000"},
      {"amount", Reason::positive_minor_units, "must be a positive integer (minor units)"},
      {"currency", Reason::currency_iso, "must be an ISO 4217 code, e.g. XAF"},
      {"frequency", Reason::frequency, "must be DAILY, WEEKLY, MONTHLY, QUARTERLY or YEARLY"},
      {"description", Reason::at_most_chars, "must be at most 500 characters"},
      {"time_zone", Reason::time_zone, "must be a zone of the IANA database, e.g. Africa/Douala"},
      {"end_at", Reason::date_time_example, "must be an ISO 8601 date-time, e.g. 2027-12-31T23:59:59Z"},
      {"max_cycles", Reason::integer_one_to, "must be an integer from 1 to 10000"},
      {"idempotency_key", Reason::idempotency_header, "differs from the X-Idempotency-Key header"}};
  ASSERT_EQ(errors.problems().size(), expected.size()) << bj::serialize(errors.details());
  for (const auto& [field, reason, text] : expected) {
    EXPECT_EQ(errors.details().at(field).as_string(), text) << field;
    bool found = false;
    for (const auto& p : errors.problems()) found = found || (p.field == field && p.problem.reason == reason);
    EXPECT_TRUE(found) << field;
  }
  json::FieldErrors long_key;
  parse_subscribe(bj::object{}, std::string(256, 'k'), 0, long_key);
  EXPECT_EQ(long_key.details().at("idempotency_key").as_string(), "must be 1 to 255 characters");
  json::FieldErrors move;
  parse_move(bj::object{{"uuid", "x"}, {"reason", std::string(501, 'r')}}, false, move);
  EXPECT_EQ(move.details().at("uuid").as_string(), "must be a UUID");
  EXPECT_EQ(move.details().at("reason").as_string(), "must be at most 500 characters");
}

// The sandbox notifier, with a hook run once before the next message of a tag is sent (a move
// that commits between a billing run's read and its write).
class HookedNotifier final : public notify::Notifier {
 public:
  explicit HookedNotifier(store::Db& db) : inner_(db) {}
  Status send(const notify::Message& message) override {
    if (hook && message.tag == hook_tag) std::exchange(hook, nullptr)();
    return inner_.send(message);
  }
  std::string hook_tag;
  std::function<void()> hook;

 private:
  notify::SandboxNotifier inner_;
};

class BillingTest : public payments::testing::PaymentsTest {
 protected:
  void SetUp() override {
    PaymentsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    links::Options lo;
    lo.page_base_url = "https://pay.example.test/checkout";
    lo.clock = [this] { return now_ms() + offset_.load(); };
    links_ = std::make_unique<links::Service>(
        *db_, *service_, [this] { return catalog_; }, lo);
    notifier_ = std::make_unique<HookedNotifier>(*db_);
    Options o;
    o.clock = [this] { return now_ms() + offset_.load(); };
    o.otp = otp_.get();
    o.checkout_url = "https://pay.example.test/checkout";
    // A run reads the catalog after it decided and before it writes: `between_` runs there once.
    o.catalog = [this] {
      if (between_) std::exchange(between_, nullptr)();
      return catalog_;
    };
    billing_ = std::make_unique<Service>(*db_, *service_, *links_, notifier_.get(), o);
    p1_ = principal(m1_);
    p2_ = principal(m2_);
    service_->start();  // the sandbox operator's callbacks
  }
  void TearDown() override {
    billing_.reset();
    links_.reset();
    PaymentsTest::TearDown();
  }

  Service::Created subscribe(std::int64_t amount = 5000, Frequency f = Frequency::monthly) {
    NewSubscription n;
    n.customer_email = "ama@example.com";
    n.customer_phone = "237690000000";
    n.amount = amount;
    n.currency = "XAF";
    n.frequency = f;
    n.request_hash = uuid_v4();
    auto created = billing_->create(web::acting(p1_), n);
    EXPECT_TRUE(created.ok()) << (created.ok() ? "" : bj::serialize(created.error().details));
    return created.ok() ? std::move(created).value() : Service::Created{};
  }

  // A weekly subscription of 700 XAF for kofi@example.com, without a phone.
  static NewSubscription weekly_700() {
    NewSubscription n;
    n.customer_email = "kofi@example.com";
    n.amount = 700;
    n.currency = "XAF";
    n.frequency = Frequency::weekly;
    return n;
  }

  Subscription reload(const Subscription& s) {
    auto found = billing_->find(web::acting(p1_), s.reference);
    EXPECT_TRUE(found.ok());
    return found.ok() ? *found : s;
  }

  std::optional<Payment> payment(const Subscription& s, std::int64_t cycle) {
    std::optional<Payment> p;
    EXPECT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(p, tables::payment_of(c, s.id, cycle));
                     return {};
                   })
                    .ok());
    return p;
  }

  // Settles until the payment of `cycle` leaves `from` (the sandbox calls back after 30 ms).
  std::string settle_until(const Subscription& s, std::int64_t cycle, std::string_view from) {
    std::string status;
    for (int i = 0; i < 500; ++i) {
      EXPECT_TRUE(billing_->settle_due().ok());
      auto p = payment(s, cycle);
      status = p ? p->status : "";
      if (status != from) return status;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return status;
  }

  // Pays the consent link from `phone` and waits until cycle 0 is PAID.
  void consent(const Service::Created& created, std::string phone = "237690000000") {
    links::PayRequest pay;
    pay.customer_phone = phone;
    pay.transaction_uuid = uuid_v4();
    pay.provider = "MTN_MOMO_CMR";
    auto code = created.payment_url.substr(created.payment_url.rfind('/') + 1);
    auto tx = links_->pay_link(code, pay);
    ASSERT_TRUE(tx.ok()) << bj::serialize(tx.error().details);
    ASSERT_EQ(settle_until(created.subscription, 0, kPayPending), kPayPaid);
  }

  void move_clock(const Subscription& s, std::int64_t days, std::optional<std::string> wallet = std::nullopt) {
    ASSERT_TRUE(
        db_->write([&](store::Conn& c) { return tables::advance_clock(c, s.id, days * kDay, wallet, now_ms()); }).ok());
  }

  std::int64_t events(const Subscription& s, std::string_view type) {
    return count("SELECT COUNT(*) FROM events WHERE subject = ? AND event_type = ?", {s.reference, std::string(type)});
  }

  // The newest message of `tag`, or "".
  std::string last_message(const std::string& tag) {
    return text_of("SELECT body FROM notify_outbox WHERE tag = ? ORDER BY id DESC", {tag});
  }

  // Asks for a mandate on `s` and approves it with the code sent to the wallet; returns the page's token.
  std::string approved_mandate(const Subscription& s, const MandateRequest& r = {}) {
    auto made = billing_->request_mandate(web::acting(p1_), s.reference, r);
    EXPECT_TRUE(made.ok()) << (made.ok() ? "" : bj::serialize(made.error().details));
    if (!made.ok()) return {};
    const std::string token = made->second.substr(made->second.rfind('/') + 1);
    EXPECT_TRUE(billing_->send_mandate_code(token, i18n::Locale::en).ok());
    std::smatch code;
    const std::string sms = last_message("otp:billing_mandate");
    EXPECT_TRUE(std::regex_search(sms, code, std::regex("[0-9]{6}"))) << sms;
    auto approved = billing_->approve_mandate(token, code.str(0));
    EXPECT_TRUE(approved.ok()) << (approved.ok() ? "" : bj::serialize(approved.error().details));
    return token;
  }

  std::unique_ptr<links::Service> links_;
  std::unique_ptr<HookedNotifier> notifier_;
  std::unique_ptr<Service> billing_;
  std::function<void()> between_;
  web::Principal p1_, p2_;
};

TEST_P(BillingTest, ConsentTeachesThePayerAndEachCycleIsChargedOnceUnderConcurrentRuns) {
  auto created = subscribe();
  const Subscription& s = created.subscription;
  EXPECT_EQ(events(s, kEventCreated), 1);
  auto first = payment(s, 0);
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->payment_link_reference.has_value());
  // Before consent nothing is charged, however often the job runs.
  ASSERT_TRUE(billing_->charge(s.id, 1, 0).ok());
  EXPECT_FALSE(payment(s, 1));
  consent(created);
  Subscription paid = reload(s);
  EXPECT_EQ(paid.payer_wallet, "237690000000");
  EXPECT_EQ(paid.payer_provider, "MTN_MOMO_CMR");
  EXPECT_TRUE(paid.last_payment_at.has_value());
  EXPECT_EQ(events(s, kEventPaymentSucceeded), 1);
  // The consent enqueued cycle 1's job, due one month after the start.
  auto job = store::find_job(*db_, kChargeQueue, s.reference + ":1:e0");
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->run_at, *due_at(s.anchor_at, s.time_zone, Frequency::monthly, 1));

  // Not due yet: the charge refuses to run early (the job is retried later).
  EXPECT_FALSE(billing_->charge(s.id, 1, 0).ok());
  move_clock(s, 32);
  // Eight concurrent runs of cycle 1 (nodes, a restart replaying the job): one payment, one collection.
  std::vector<std::thread> runs;
  std::atomic<int> failures{0};
  for (int i = 0; i < 8; ++i)
    runs.emplace_back([&] {
      if (!billing_->charge(s.id, 1, 0).ok()) ++failures;
    });
  for (auto& t : runs) t.join();
  EXPECT_EQ(count("SELECT COUNT(*) FROM bil_payments WHERE subscription_id = ? AND cycle = 1", {s.id}), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE metadata LIKE ?",
                  {"%\"subscription_reference\":\"" + s.reference + "\"%"}),
            1);
  EXPECT_EQ(settle_until(s, 1, kPayProcessing), kPayPaid);
  Subscription after = reload(s);
  EXPECT_EQ(after.next_cycle, 2);
  EXPECT_EQ(after.next_payment_at, *due_at(s.anchor_at, s.time_zone, Frequency::monthly, 2));
  EXPECT_EQ(events(s, kEventPaymentSucceeded), 2);
  // Settling again changes nothing and emits nothing.
  ASSERT_TRUE(billing_->settle_due().ok());
  EXPECT_EQ(events(s, kEventPaymentSucceeded), 2);
  // A run of an old epoch or of a cycle already billed does nothing more.
  ASSERT_TRUE(billing_->charge(s.id, 1, 0).ok());
  ASSERT_TRUE(billing_->charge(s.id, 2, 7).ok());
  EXPECT_EQ(count("SELECT COUNT(*) FROM bil_payments WHERE subscription_id = ?", {s.id}), 2);
}

// A cycle whose collection is refunded in full before the engine settles it: it settles PAID (the
// collection was paid), once, whatever the number of concurrent settlements; the subscription neither
// retries nor suspends, and the payment shows what was refunded.
TEST_P(BillingTest, ACycleRefundedBeforeItIsSettledIsPaidOnceAndNeverRetried) {
  auto created = subscribe();
  const Subscription& s = created.subscription;
  consent(created);
  move_clock(s, 32);
  ASSERT_TRUE(billing_->charge(s.id, 1, 0).ok());
  auto charged = payment(s, 1);
  ASSERT_TRUE(charged && charged->payment_intent_reference);
  ASSERT_EQ(charged->status, kPayProcessing);
  const std::string tx_ref = *charged->payment_intent_reference;
  auto with_status = [&](std::string_view status) {
    return count("SELECT COUNT(*) FROM pay_transactions WHERE reference = ? AND status = ?",
                 {tx_ref, std::string(status)});
  };
  for (int i = 0; i < 500 && with_status("COMPLETED") == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(with_status("COMPLETED"), 1);
  payments::RefundRequest r;
  r.transaction_reference = tx_ref;
  r.refund_uuid = uuid_v4();
  r.reason = "REQUESTED_BY_CUSTOMER";
  auto made = service_->refund(r, web::acting(p1_));
  ASSERT_TRUE(made.ok()) << made.error().code << " " << bj::serialize(made.error().details);
  for (int i = 0; i < 500 && with_status("REFUNDED") == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(with_status("REFUNDED"), 1);
  ASSERT_EQ(payment(s, 1)->status, kPayProcessing) << "nothing settled it yet";

  std::vector<std::thread> runs;
  for (int i = 0; i < 8; ++i) runs.emplace_back([&] { EXPECT_TRUE(billing_->settle_due().ok()); });
  for (auto& t : runs) t.join();
  auto settled = payment(s, 1);
  ASSERT_TRUE(settled);
  EXPECT_EQ(settled->status, kPayPaid);
  EXPECT_EQ(settled->refunded_amount, charged->amount);
  EXPECT_FALSE(settled->next_retry_at.has_value());
  EXPECT_FALSE(settled->failure_reason.has_value());
  EXPECT_EQ(events(s, kEventPaymentSucceeded), 2);
  Subscription after = reload(s);
  EXPECT_EQ(after.status, kActive);
  EXPECT_EQ(after.next_cycle, 2);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE metadata LIKE ?",
                  {"%\"subscription_reference\":\"" + s.reference + "\"%"}),
            1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM jobs WHERE queue = ? AND job_key LIKE ?",
                  {std::string(kRetryQueue), s.reference + ":1:%"}),
            0);
  expect_ledger_clean();
}

TEST_P(BillingTest, DunningRetriesOnScheduleRemindsThenSuspendsWithTheReason) {
  auto created = subscribe();
  const Subscription& s = created.subscription;
  consent(created);
  move_clock(s, 32, "237690000001");  // the sandbox refuses this number: INSUFFICIENT_FUNDS
  ASSERT_TRUE(billing_->charge(s.id, 1, 0).ok());
  ASSERT_EQ(settle_until(s, 1, kPayProcessing), kPayFailed);
  auto failed = payment(s, 1);
  ASSERT_TRUE(failed && failed->failed_at && failed->next_retry_at);
  EXPECT_EQ(failed->failure_reason, "INSUFFICIENT_FUNDS");
  EXPECT_EQ(*failed->next_retry_at - *failed->failed_at, 1 * kDay);
  EXPECT_EQ(reload(s).status, kActive);
  auto job = store::find_job(*db_, kRetryQueue, s.reference + ":1:a1");
  ASSERT_TRUE(job.ok() && job->has_value());

  // Each retry reminds the customer, pushes a new collection and fails again, on the schedule
  // 1, 3, 5, 7 days after the first failure.
  const std::int64_t schedule[] = {3, 5, 7};
  for (std::int64_t attempt = 1; attempt <= 4; ++attempt) {
    ASSERT_TRUE(billing_->retry(s.id, 1, attempt).ok());
    ASSERT_EQ(settle_until(s, 1, kPayProcessing), kPayFailed) << attempt;
    auto p = payment(s, 1);
    EXPECT_EQ(p->attempts, attempt + 1);
    if (attempt < 4) EXPECT_EQ(*p->next_retry_at - *p->failed_at, schedule[attempt - 1] * kDay);
    // A stale retry (an attempt already made) changes nothing.
    ASSERT_TRUE(billing_->retry(s.id, 1, attempt).ok());
    EXPECT_EQ(payment(s, 1)->attempts, attempt + 1);
  }
  Subscription suspended = reload(s);
  EXPECT_EQ(suspended.status, kSuspended);
  EXPECT_TRUE(suspended.suspended_at.has_value());
  ASSERT_TRUE(suspended.status_reason.has_value());
  EXPECT_EQ(*suspended.status_reason, "cycle 1 unpaid after 5 attempts: INSUFFICIENT_FUNDS");
  EXPECT_EQ(events(s, kEventPaymentFailed), 5);
  EXPECT_EQ(events(s, "subscription.suspended"), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM notify_outbox WHERE tag = 'billing:retry'"), 4);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE metadata LIKE ?",
                  {"%\"subscription_reference\":\"" + s.reference + "\"%"}),
            5);

  // Reactivation asks for the overdue cycle again at once, from the payer now on file.
  move_clock(s, 0, "237690000000");
  auto re = billing_->apply(web::acting(p1_), s.reference, Move::reactivate, MoveRequest{});
  ASSERT_TRUE(re.ok()) << bj::serialize(re.error().details);
  EXPECT_EQ(re->status, kActive);
  EXPECT_EQ(re->epoch, 1);
  EXPECT_EQ(settle_until(s, 1, kPayProcessing), kPayPaid);
  EXPECT_EQ(events(s, "subscription.reactivated"), 1);
  auto resumed = store::find_job(*db_, kChargeQueue, s.reference + ":2:e1");
  EXPECT_TRUE(resumed.ok() && resumed->has_value());
}

TEST_P(BillingTest, MovesAreTimestampedEmitTheirEventAndRefuseWhatTheStatusForbids) {
  auto created = subscribe(100, Frequency::daily);
  const Subscription& s = created.subscription;
  EXPECT_EQ(billing_->apply(web::acting(p2_), s.reference, Move::suspend, {}).error().kind, ErrorKind::not_found);
  auto bad_uuid =
      billing_->apply(web::acting(p1_), s.reference, Move::cancel, MoveRequest{uuid_v4(), std::nullopt, false});
  ASSERT_FALSE(bad_uuid.ok());
  EXPECT_TRUE(bad_uuid.error().details.as_object().contains("uuid"));
  auto sus = billing_->apply(web::acting(p1_), s.reference, Move::suspend, MoveRequest{std::nullopt, "paused", false});
  ASSERT_TRUE(sus.ok());
  EXPECT_EQ(sus->status, kSuspended);
  EXPECT_EQ(sus->status_reason, "paused");
  EXPECT_EQ(billing_->apply(web::acting(p1_), s.reference, Move::suspend, {}).error().kind, ErrorKind::conflict);
  // Cancel at period end needs an ACTIVE subscription.
  EXPECT_EQ(billing_->apply(web::acting(p1_), s.reference, Move::cancel, MoveRequest{std::nullopt, std::nullopt, true})
                .error()
                .kind,
            ErrorKind::conflict);
  auto cancelled = billing_->apply(web::acting(p1_), s.reference, Move::cancel, MoveRequest{s.uuid, "gone", false});
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->status, kCancelled);
  EXPECT_TRUE(cancelled->cancelled_at && cancelled->suspended_at);
  EXPECT_FALSE(cancelled->next_payment_at);
  EXPECT_EQ(payment(s, 0)->status, kPayCancelled);
  EXPECT_EQ(billing_->apply(web::acting(p1_), s.reference, Move::reactivate, {}).error().kind, ErrorKind::conflict);
  EXPECT_EQ(events(s, "subscription.suspended"), 1);
  EXPECT_EQ(events(s, "subscription.cancelled"), 1);
  // Each event carries the subscription as it is after the move.
  EXPECT_EQ(count("SELECT COUNT(*) FROM events WHERE subject = ? AND payload LIKE '%\"status\":\"CANCELLED\"%'",
                  {s.reference}),
            1);
}

TEST_P(BillingTest, ACycleCountExpiresTheSubscriptionAtTheEndOfItsLastPeriod) {
  NewSubscription n = weekly_700();
  n.max_cycles = 2;
  n.request_hash = "h";
  auto created = billing_->create(web::acting(p1_), n);
  ASSERT_TRUE(created.ok());
  const Subscription& s = created->subscription;
  consent(*created);
  move_clock(s, 7);
  ASSERT_TRUE(billing_->charge(s.id, 1, 0).ok());
  EXPECT_EQ(settle_until(s, 1, kPayProcessing), kPayPaid);
  move_clock(s, 7);
  ASSERT_TRUE(billing_->charge(s.id, 2, 0).ok());
  Subscription expired = reload(s);
  EXPECT_EQ(expired.status, kExpired);
  EXPECT_TRUE(expired.expired_at.has_value());
  EXPECT_FALSE(payment(s, 2));
  EXPECT_EQ(events(s, "subscription.expired"), 1);
}

// An idempotency key: the same request again is the stored subscription (its consent link made
// for nothing is disabled), another request under the key a 409 naming only idempotency_key; and
// racing creations under one key make one subscription.
TEST_P(BillingTest, AnIdempotencyKeyReplaysTheSameRequestAndRefusesAnother) {
  NewSubscription n = weekly_700();
  n.idempotency_key = "key-1";
  n.request_hash = "h1";
  auto created = billing_->create(web::acting(p1_), n);
  ASSERT_TRUE(created.ok()) << bj::serialize(created.error().details);
  EXPECT_FALSE(created->replayed);
  auto again = billing_->create(web::acting(p1_), n);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->replayed);
  EXPECT_EQ(again->subscription.reference, created->subscription.reference);
  ASSERT_EQ(again->payments.size(), 1u);
  n.request_hash = "h2";
  auto other = billing_->create(web::acting(p1_), n);
  ASSERT_FALSE(other.ok());
  EXPECT_TRUE(other.error().is(ErrorKind::conflict));
  EXPECT_EQ(bj::serialize(other.error().details), R"({"idempotency_key":"was used with a different request"})");

  n.idempotency_key = "key-race";
  n.request_hash = "h3";
  std::vector<std::thread> threads;
  std::atomic<int> fresh{0}, replays{0};
  for (int i = 0; i < 6; ++i)
    threads.emplace_back([&] {
      auto r = billing_->create(web::acting(p1_), n);
      if (!r.ok())
        ADD_FAILURE() << bj::serialize(r.error().details);
      else
        ++(r->replayed ? replays : fresh);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(fresh.load(), 1);
  EXPECT_EQ(replays.load(), 5);
  EXPECT_EQ(count("SELECT COUNT(*) FROM bil_subscriptions WHERE idempotency_key = ?", {std::string("key-race")}), 1);
}

// A page of due cycles is decided in one read and its plain cycles created in one unit; each
// kind still goes its own way (a mandate debit, an end at the period's end), a job repeated in
// the page or a page run again charges nothing twice, and the plain cycles settle as usual.
TEST_P(BillingTest, APageOfDueCyclesChargesEachOnceWhateverItsKind) {
  std::vector<Service::Created> subs;
  for (int i = 0; i < 4; ++i) {
    subs.push_back(subscribe(5000 + i));
    consent(subs.back());
  }
  const Subscription& plain = subs[0].subscription;
  const Subscription& mandated = subs[1].subscription;
  const Subscription& ending = subs[2].subscription;
  const Subscription& other = subs[3].subscription;
  approved_mandate(mandated, MandateRequest{"237690000042", 6000});
  ASSERT_TRUE(service_->fund_wallet("sandbox", "237690000042", "XAF", 9000, "top-up").ok());
  MoveRequest at_end;
  at_end.at_period_end = true;
  ASSERT_TRUE(billing_->apply(web::acting(p1_), ending.reference, Move::cancel, at_end).ok());
  for (const auto& c : subs) move_clock(c.subscription, 32);
  std::vector<store::Job> page;
  for (const Subscription* s : {&plain, &mandated, &ending, &other, &plain}) {
    store::Job j;
    j.queue = std::string(kChargeQueue);
    j.payload = "{\"subscription_id\":" + std::to_string(s->id) + ",\"cycle\":1,\"epoch\":0}";
    page.push_back(j);
  }
  for (int run = 0; run < 2; ++run) {
    auto out = billing_->charge_page(page);
    ASSERT_EQ(out.size(), page.size());
    for (const auto& st : out) EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().code);
  }
  for (const Subscription* s : {&plain, &other}) {
    auto p = payment(*s, 1);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->status, kPayProcessing);
    ASSERT_TRUE(p->payment_intent_reference.has_value());
    // Submitted to the operator: PENDING, or already COMPLETED when the sandbox (30 ms here)
    // answered before this read on a busy machine; never INITIATED, FAILED or a second one.
    EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE reference = ? AND status IN ('PENDING', 'COMPLETED')",
                    {*p->payment_intent_reference}),
              1);
    EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE metadata LIKE ?",
                    {"%\"subscription_reference\":\"" + s->reference + "\"%"}),
              1);
    EXPECT_EQ(reload(*s).next_cycle, 2);
    EXPECT_TRUE(store::find_job(*db_, kChargeQueue, s->reference + ":2:e0")->has_value());
  }
  auto debited = payment(mandated, 1);
  ASSERT_TRUE(debited);
  EXPECT_EQ(debited->status, kPayPaid);
  EXPECT_TRUE(debited->wallet_transaction_id.has_value());
  EXPECT_EQ(balance(payments::ledger::customer_wallet("237690000042", "sandbox", "XAF")), 9000 - 5001);
  EXPECT_EQ(reload(ending).status, kCancelled);
  EXPECT_FALSE(payment(ending, 1));
  EXPECT_EQ(count("SELECT COUNT(*) FROM bil_payments WHERE cycle = 1"), 3);
  EXPECT_EQ(settle_until(plain, 1, kPayProcessing), kPayPaid);
  EXPECT_EQ(settle_until(other, 1, kPayProcessing), kPayPaid);
  expect_ledger_clean();
}

TEST_P(BillingTest, ListTotalsFollowEveryInsertAndMove) {
  std::vector<Subscription> subs;
  for (int i = 0; i < 5; ++i) subs.push_back(subscribe(100 + i).subscription);
  ASSERT_TRUE(billing_->apply(web::acting(p1_), subs[0].reference, Move::suspend, {}).ok());
  ASSERT_TRUE(billing_->apply(web::acting(p1_), subs[1].reference, Move::cancel, {}).ok());
  ASSERT_TRUE(billing_->apply(web::acting(p1_), subs[2].reference, Move::suspend, {}).ok());
  ASSERT_TRUE(billing_->apply(web::acting(p1_), subs[2].reference, Move::reactivate, {}).ok());
  ASSERT_TRUE(billing_->apply(web::acting(p1_), subs[3].reference, Move::expire, {}).ok());
  auto total = [&](std::optional<std::string> status, const web::Principal& p) {
    tables::ListFilter f;
    f.status = std::move(status);
    f.limit = 2;
    auto r = billing_->list_subscriptions(web::acting(p), f);
    EXPECT_TRUE(r.ok());
    if (r.ok()) EXPECT_LE(r->first.size(), 2u);
    return r.ok() ? r->second : -1;
  };
  EXPECT_EQ(total(std::nullopt, p1_), 5);
  EXPECT_EQ(total(std::string(kActive), p1_), 2);
  EXPECT_EQ(total(std::string(kSuspended), p1_), 1);
  EXPECT_EQ(total(std::string(kCancelled), p1_), 1);
  EXPECT_EQ(total(std::string(kExpired), p1_), 1);
  EXPECT_EQ(total(std::nullopt, p2_), 0);
  // The counts agree with the rows themselves.
  for (auto st : {kActive, kSuspended, kCancelled, kExpired})
    EXPECT_EQ(total(std::string(st), p1_),
              count("SELECT COUNT(*) FROM bil_subscriptions WHERE merchant_id = ? AND status = ?",
                    {m1_.id, std::string(st)}));
  tables::ListFilter by_email;
  by_email.customer_email = "ama@example.com";
  EXPECT_EQ(billing_->list_subscriptions(web::acting(p1_), by_email)->second, 5);
}

TEST_P(BillingTest, AnApprovedMandateDebitsTheWalletOncePerCycleAndAShortBalanceFailsIntoDunning) {
  auto created = subscribe(5000);
  const Subscription& s = created.subscription;
  consent(created);
  // Asked for, the mandate waits for the customer; a second request is refused, naming mandate.
  auto made = billing_->request_mandate(web::acting(p1_), s.reference, MandateRequest{"237690000042", 6000});
  ASSERT_TRUE(made.ok()) << bj::serialize(made.error().details);
  EXPECT_EQ(made->first.status, kMandatePending);
  EXPECT_EQ(made->first.cap, 6000);
  EXPECT_NE(last_message("billing:mandate").find(made->second), std::string::npos);
  auto again = billing_->request_mandate(web::acting(p1_), s.reference, {});
  ASSERT_FALSE(again.ok());
  EXPECT_TRUE(again.error().is(ErrorKind::conflict));
  EXPECT_TRUE(again.error().details.as_object().contains("mandate"));
  // Another merchant does not see the subscription; a cap under the amount names cap.
  EXPECT_TRUE(billing_->request_mandate(web::acting(p2_), s.reference, {}).error().is(ErrorKind::not_found));
  const std::string token = made->second.substr(made->second.rfind('/') + 1);
  EXPECT_TRUE(billing_->mandate_by_token(token + "x").error().is(ErrorKind::not_found));
  // A wrong code does not approve it; the code sent to the wallet's phone does.
  ASSERT_TRUE(billing_->send_mandate_code(token, i18n::Locale::fr).ok());
  std::smatch code;
  const std::string sms = last_message("otp:billing_mandate");
  ASSERT_TRUE(std::regex_search(sms, code, std::regex("[0-9]{6}")));
  auto wrong = billing_->approve_mandate(token, code.str(0) == "000000" ? "000001" : "000000");
  ASSERT_FALSE(wrong.ok());
  EXPECT_TRUE(wrong.error().is(ErrorKind::invalid));
  EXPECT_EQ(billing_->mandate_by_token(token)->status, kMandatePending);
  auto approved = billing_->approve_mandate(token, code.str(0));
  ASSERT_TRUE(approved.ok()) << bj::serialize(approved.error().details);
  EXPECT_EQ(approved->status, kMandateActive);
  EXPECT_TRUE(approved->approved_at.has_value());

  // Cycle 1: eight concurrent runs debit the wallet once, with no prompt and no phone push.
  ASSERT_TRUE(service_->fund_wallet("sandbox", "237690000042", "XAF", 7000, "top-up").ok());
  move_clock(s, 32);
  std::vector<std::thread> runs;
  for (int i = 0; i < 8; ++i)
    runs.emplace_back([&] {
      auto st = billing_->charge(s.id, 1, 0);
      EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().code + " " + bj::serialize(st.error().details));
    });
  for (auto& t : runs) t.join();
  auto p1 = payment(s, 1);
  ASSERT_TRUE(p1);
  EXPECT_EQ(p1->status, kPayPaid);
  EXPECT_EQ(p1->attempts, 1);
  ASSERT_TRUE(p1->wallet_transaction_id.has_value());
  EXPECT_FALSE(p1->payment_intent_reference.has_value());
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE merchant_id = ?", {m1_.id}),
            2);  // the consent's collection and the one debit
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE reference = ? AND status = 'COMPLETED' AND "
                  "channel = 'WALLET' AND required_total = 5000",
                  {*p1->wallet_transaction_id}),
            1);
  EXPECT_EQ(balance(payments::ledger::customer_wallet("237690000042", "sandbox", "XAF")), 2000);
  EXPECT_EQ(events(s, kEventPaymentSucceeded), 2);
  Subscription after = reload(s);
  EXPECT_EQ(after.next_cycle, 2);
  EXPECT_TRUE(store::find_job(*db_, kChargeQueue, s.reference + ":2:e0")->has_value());
  EXPECT_EQ(billing_->mandate_by_token(token)->debits, 1);
  expect_ledger_clean();

  // Cycle 2: 2 000 XAF left for 5 000: the debit fails (nothing moves) and dunning takes over.
  move_clock(s, 31);
  ASSERT_TRUE(billing_->charge(s.id, 2, 0).ok());
  auto p2 = payment(s, 2);
  ASSERT_TRUE(p2);
  EXPECT_EQ(p2->status, kPayFailed);
  EXPECT_EQ(p2->failure_reason, "INSUFFICIENT_FUNDS");
  EXPECT_EQ(p2->attempts, 1);
  ASSERT_TRUE(p2->wallet_transaction_id.has_value());
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE reference = ? AND status = 'FAILED'",
                  {*p2->wallet_transaction_id}),
            1);
  EXPECT_EQ(balance(payments::ledger::customer_wallet("237690000042", "sandbox", "XAF")), 2000);
  EXPECT_TRUE(store::find_job(*db_, kRetryQueue, s.reference + ":2:a1")->has_value());
  EXPECT_EQ(reload(s).next_cycle, 3);
  // Topped up, the retry debits the wallet again under the mandate.
  ASSERT_TRUE(service_->fund_wallet("sandbox", "237690000042", "XAF", 5000, "top-up").ok());
  ASSERT_TRUE(billing_->retry(s.id, 2, 1).ok());
  p2 = payment(s, 2);
  EXPECT_EQ(p2->status, kPayPaid);
  EXPECT_EQ(p2->attempts, 2);
  EXPECT_FALSE(p2->failure_reason.has_value());
  EXPECT_EQ(balance(payments::ledger::customer_wallet("237690000042", "sandbox", "XAF")), 2000);
  EXPECT_EQ(billing_->mandate_by_token(token)->debits, 2);
  expect_ledger_clean();
}

TEST_P(BillingTest, ARevokedMandateStopsDebitsAndTheCycleGoesToThePhone) {
  auto created = subscribe(5000);
  const Subscription& s = created.subscription;
  consent(created);
  const std::string token = approved_mandate(s, MandateRequest{"237690000042", std::nullopt});
  ASSERT_TRUE(service_->fund_wallet("sandbox", "237690000042", "XAF", 50'000, "top-up").ok());
  auto revoked = billing_->revoke_mandate(token);
  ASSERT_TRUE(revoked.ok());
  EXPECT_EQ(revoked->status, kMandateRevoked);
  EXPECT_EQ(revoked->revoked_by, "customer");
  EXPECT_TRUE(billing_->revoke_mandate(token).error().is(ErrorKind::conflict));
  move_clock(s, 32);
  ASSERT_TRUE(billing_->charge(s.id, 1, 0).ok());
  auto p1 = payment(s, 1);
  ASSERT_TRUE(p1);
  EXPECT_FALSE(p1->wallet_transaction_id.has_value());
  ASSERT_TRUE(p1->payment_intent_reference.has_value());
  EXPECT_EQ(settle_until(s, 1, kPayProcessing), kPayPaid);
  EXPECT_EQ(balance(payments::ledger::customer_wallet("237690000042", "sandbox", "XAF")), 50'000);
}

TEST_P(BillingTest, TheMerchantsCancelRevokesTheMandate) {
  auto created = subscribe(5000);
  const Subscription& s = created.subscription;
  consent(created);
  const std::string token = approved_mandate(s);
  ASSERT_TRUE(billing_->apply(web::acting(p1_), s.reference, Move::cancel, {}).ok());
  auto m = billing_->mandate_by_token(token);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->status, kMandateRevoked);
  EXPECT_EQ(m->revoked_by, "merchant");
  EXPECT_TRUE(m->revoked_at.has_value());
}

TEST_P(BillingTest, ACycleOfAnOperatorThatNeedsACodeIsAPaymentLinkSentToTheCustomer) {
  auto created = subscribe(5000);
  const Subscription& s = created.subscription;
  consent(created);
  // The payer's operator asks its customers for a code: nothing can be pushed to the phone.
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_TRY(
                       c.exec("UPDATE bil_subscriptions SET payer_provider = 'ORANGE_MONEY_CMR' WHERE id = ?", {s.id}));
                   return {};
                 })
                  .ok());
  move_clock(s, 32);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(billing_->charge(s.id, 1, 0).ok());
  auto p1 = payment(s, 1);
  ASSERT_TRUE(p1);
  EXPECT_EQ(p1->status, kPayPending);
  ASSERT_TRUE(p1->payment_link_reference.has_value());
  EXPECT_FALSE(p1->payment_intent_reference.has_value());
  EXPECT_EQ(reload(s).next_cycle, 2);
  EXPECT_EQ(count("SELECT COUNT(*) FROM notify_outbox WHERE tag = 'billing:link'"), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE merchant_id = ?", {m1_.id}), 1);  // the consent's
  // The link: single use, the cycle's amount, its page in the message.
  EXPECT_EQ(count("SELECT COUNT(*) FROM lnk_links WHERE reference = ? AND amount = 5000 AND max_usage = 1",
                  {*p1->payment_link_reference}),
            1);
  const std::string sms = last_message("billing:link");
  std::smatch url;
  ASSERT_TRUE(std::regex_search(sms, url, std::regex("https://pay\\.example\\.test/checkout/\\S+"))) << sms;
  // Paid through its page, the cycle is PAID with the collection that paid it.
  links::PayRequest pay;
  pay.customer_phone = "237690000000";
  pay.transaction_uuid = uuid_v4();
  pay.provider = "MTN_MOMO_CMR";
  auto tx = links_->pay_link(url.str(0).substr(url.str(0).rfind('/') + 1), pay);
  ASSERT_TRUE(tx.ok()) << bj::serialize(tx.error().details);
  ASSERT_EQ(settle_until(s, 1, kPayPending), kPayPaid);
  p1 = payment(s, 1);
  EXPECT_EQ(p1->payment_intent_reference, tx->reference);
  EXPECT_EQ(events(s, kEventPaymentSucceeded), 2);
  // The consent's payer stays the one on file.
  EXPECT_EQ(reload(s).payer_provider, "ORANGE_MONEY_CMR");
}

// Link cycles: the payer's operator needs a code (ORANGE_MONEY_CMR in the test catalog).
class LinkDunningTest : public BillingTest {
 protected:
  // A subscription whose consent was paid, and whose later cycles are links.
  Subscription linked_subscription() {
    auto created = subscribe(5000);
    consent(created);
    const Subscription& s = created.subscription;
    EXPECT_TRUE(
        db_->write([&](store::Conn& c) -> Status {
             SIKA_TRY(c.exec("UPDATE bil_subscriptions SET payer_provider = 'ORANGE_MONEY_CMR' WHERE id = ?", {s.id}));
             return {};
           })
            .ok());
    return reload(s);
  }
  // Opens cycle 1 of `s` (due within 32 days on its clock) as a link; returns its payment.
  Payment open_link_cycle(const Subscription& s) {
    move_clock(s, 32);
    EXPECT_TRUE(billing_->charge(s.id, 1, 0).ok());
    auto p = payment(s, 1);
    EXPECT_TRUE(p && p->payment_link_reference);
    return p && p->payment_link_reference ? *p : Payment{};
  }
  std::string code_of(const std::string& link_reference) {
    return text_of("SELECT short_code FROM lnk_links WHERE reference = ?", {link_reference});
  }
  Result<payments::Transaction> pay(const std::string& link_reference) {
    links::PayRequest pay;
    pay.customer_phone = "237690000000";
    pay.transaction_uuid = uuid_v4();
    pay.provider = "MTN_MOMO_CMR";
    return links_->pay_link(code_of(link_reference), pay);
  }
  std::string link_status(const std::string& link_reference) {
    return text_of("SELECT status FROM lnk_links WHERE reference = ?", {link_reference});
  }
};

TEST_P(LinkDunningTest, AnUnpaidLinkFailsAtItsDeadlineAndTheRetrySendsANewLinkForTheSameCycle) {
  const Subscription s = linked_subscription();
  std::optional<Payment> p1 = open_link_cycle(s);
  ASSERT_TRUE(p1->payment_link_reference && p1->link_deadline_at);
  EXPECT_EQ(p1->status, kPayPending);
  EXPECT_EQ(p1->attempts, 1);
  const std::string first_link = *p1->payment_link_reference;
  EXPECT_TRUE(store::find_job(*db_, kLinkDeadlineQueue, s.reference + ":1:d1")->has_value());
  // Before its deadline the job changes nothing and asks to run again later.
  auto early = billing_->lapse(s.id, 1, 1);
  ASSERT_FALSE(early.ok());
  EXPECT_TRUE(early.error().is(ErrorKind::retryable));
  EXPECT_EQ(payment(s, 1)->status, kPayPending);

  // Past the deadline: FAILED into dunning, the link disabled in the same unit, the customer told.
  move_clock(s, 2);
  ASSERT_TRUE(billing_->lapse(s.id, 1, 1).ok());
  p1 = payment(s, 1);
  EXPECT_EQ(p1->status, kPayFailed);
  ASSERT_TRUE(p1->failure_reason.has_value());
  EXPECT_EQ(p1->failure_reason->rfind("LINK_UNPAID", 0), 0u) << *p1->failure_reason;
  ASSERT_TRUE(p1->next_retry_at && p1->failed_at);
  EXPECT_EQ(*p1->next_retry_at - *p1->failed_at, 1 * kDay);
  EXPECT_EQ(link_status(first_link), "DISABLED");
  EXPECT_EQ(events(s, kEventPaymentFailed), 1);
  EXPECT_TRUE(store::find_job(*db_, kRetryQueue, s.reference + ":1:a1")->has_value());
  EXPECT_NE(last_message("billing:failed").find("new link"), std::string::npos);
  EXPECT_EQ(reload(s).status, kActive);
  // A late payment of the failed cycle's link is refused before anything is asked of the phone.
  const std::int64_t collections = count("SELECT COUNT(*) FROM pay_transactions WHERE merchant_id = ?", {m1_.id});
  auto late = pay(first_link);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code, "link_disabled");
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE merchant_id = ?", {m1_.id}), collections);
  // The deadline again (another node, a restart) is a no-op.
  ASSERT_TRUE(billing_->lapse(s.id, 1, 1).ok());
  EXPECT_EQ(events(s, kEventPaymentFailed), 1);

  // The retry, run by four workers at once: one new link for the same cycle row, one reminder.
  std::vector<std::thread> runs;
  for (int i = 0; i < 4; ++i)
    runs.emplace_back([&] {
      auto st = billing_->retry(s.id, 1, 1);
      EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().code);
    });
  for (auto& t : runs) t.join();
  auto p2 = payment(s, 1);
  EXPECT_EQ(p2->id, p1->id);
  EXPECT_EQ(p2->status, kPayPending);
  EXPECT_EQ(p2->attempts, 2);
  ASSERT_TRUE(p2->payment_link_reference.has_value());
  EXPECT_NE(*p2->payment_link_reference, first_link);
  EXPECT_FALSE(p2->next_retry_at.has_value());
  EXPECT_EQ(count("SELECT COUNT(*) FROM bil_payments WHERE subscription_id = ? AND cycle = 1", {s.id}), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM notify_outbox WHERE tag = 'billing:retry'"), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM lnk_links WHERE title = ? AND status = 'ACTIVE'",
                  {"Subscription " + s.reference + ", cycle 1"}),
            1);
  EXPECT_NE(last_message("billing:retry").find(code_of(*p2->payment_link_reference)), std::string::npos);
  EXPECT_TRUE(store::find_job(*db_, kLinkDeadlineQueue, s.reference + ":1:d2")->has_value());

  // Paid through the new link: PAID, the subscription ACTIVE, and the old attempt's deadline moot.
  auto tx = pay(*p2->payment_link_reference);
  ASSERT_TRUE(tx.ok()) << bj::serialize(tx.error().details);
  ASSERT_EQ(settle_until(s, 1, kPayPending), kPayPaid);
  EXPECT_EQ(payment(s, 1)->payment_intent_reference, tx->reference);
  EXPECT_EQ(reload(s).status, kActive);
  EXPECT_EQ(events(s, kEventPaymentSucceeded), 2);
  move_clock(s, 2);
  ASSERT_TRUE(billing_->lapse(s.id, 1, 2).ok());
  EXPECT_EQ(payment(s, 1)->status, kPayPaid);
  expect_ledger_clean();
}

TEST_P(LinkDunningTest, APaymentOfTheLinkThatCommitsBeforeTheDeadlineWins) {
  const Subscription s = linked_subscription();
  std::optional<Payment> p1 = open_link_cycle(s);
  ASSERT_TRUE(p1->payment_link_reference);
  move_clock(s, 2);  // the deadline passed on the subscription's clock; its job has not run yet
  auto tx = pay(*p1->payment_link_reference);
  ASSERT_TRUE(tx.ok()) << bj::serialize(tx.error().details);
  // The payment holds the link: the deadline neither fails the cycle nor disables the link.
  auto st = billing_->lapse(s.id, 1, 1);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(st.error().is(ErrorKind::retryable));
  EXPECT_EQ(payment(s, 1)->status, kPayPending);
  EXPECT_EQ(link_status(*p1->payment_link_reference), "ACTIVE");
  ASSERT_EQ(settle_until(s, 1, kPayPending), kPayPaid);
  ASSERT_TRUE(billing_->lapse(s.id, 1, 1).ok());  // run again, it finds the cycle paid
  EXPECT_EQ(payment(s, 1)->status, kPayPaid);
  EXPECT_EQ(events(s, kEventPaymentFailed), 0);
}

TEST_P(LinkDunningTest, TheDeadlineAndALatePaymentRacingCommitOneOutcomeNeverAPaidFailedCycle) {
  for (int round = 0; round < 6; ++round) {
    const Subscription s = linked_subscription();
    const std::string link = open_link_cycle(s).payment_link_reference.value_or("");
    ASSERT_FALSE(link.empty());
    move_clock(s, 2);
    std::optional<Result<payments::Transaction>> paid;
    std::optional<Status> lapsed;
    std::thread payer([&] { paid = pay(link); });
    std::thread deadline([&] { lapsed = billing_->lapse(s.id, 1, 1); });
    payer.join();
    deadline.join();
    const std::string like = "%\"payment_link_reference\":\"" + link + "\"%";
    if (payment(s, 1)->status == kPayFailed) {
      // The deadline won: the link is disabled and nothing was asked of the payer's phone.
      EXPECT_TRUE(lapsed->ok());
      EXPECT_FALSE(paid->ok());
      EXPECT_EQ(link_status(link), "DISABLED");
      EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE metadata LIKE ?", {like}), 0) << round;
    } else {
      // The payment won: the deadline waits for it and the cycle is paid once.
      ASSERT_TRUE(paid->ok()) << bj::serialize(paid->error().details);
      ASSERT_FALSE(lapsed->ok());
      EXPECT_TRUE(lapsed->error().is(ErrorKind::retryable));
      ASSERT_EQ(settle_until(s, 1, kPayPending), kPayPaid) << round;
      ASSERT_TRUE(billing_->lapse(s.id, 1, 1).ok());
      EXPECT_EQ(payment(s, 1)->status, kPayPaid);
      EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE metadata LIKE ? AND status = 'COMPLETED'", {like}),
                1);
    }
  }
  expect_ledger_clean();
}

TEST_P(LinkDunningTest, TheTestClockDrivesALinkCycleThroughDunningToSuspensionAndReactivationSendsANewLink) {
  const Subscription s = linked_subscription();
  for (int day = 0; day < 45 && reload(s).status == kActive; ++day) {
    auto advanced = billing_->advance(web::acting(p1_), s.reference, kDay);
    ASSERT_TRUE(advanced.ok()) << bj::serialize(advanced.error().details);
  }
  Subscription suspended = reload(s);
  ASSERT_EQ(suspended.status, kSuspended);
  ASSERT_TRUE(suspended.status_reason.has_value());
  EXPECT_EQ(suspended.status_reason->rfind("cycle 1 unpaid after 5 attempts: LINK_UNPAID", 0), 0u)
      << *suspended.status_reason;
  auto p1 = payment(s, 1);
  EXPECT_EQ(p1->status, kPayFailed);
  EXPECT_EQ(p1->attempts, 5);
  EXPECT_EQ(events(s, kEventPaymentFailed), 5);
  EXPECT_EQ(events(s, "subscription.suspended"), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM notify_outbox WHERE tag = 'billing:retry'"), 4);
  // Five links for the one cycle, none payable any more; no collection was asked of the phone.
  const std::string title = "Subscription " + s.reference + ", cycle 1";
  EXPECT_EQ(count("SELECT COUNT(*) FROM lnk_links WHERE title = ?", {title}), 5);
  EXPECT_EQ(count("SELECT COUNT(*) FROM lnk_links WHERE title = ? AND status = 'DISABLED'", {title}), 5);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE merchant_id = ?", {m1_.id}), 1);  // the consent's

  // Reactivation collects the overdue cycle first: a sixth link for it, paid, and billing resumes.
  auto re = billing_->apply(web::acting(p1_), s.reference, Move::reactivate, MoveRequest{});
  ASSERT_TRUE(re.ok()) << bj::serialize(re.error().details);
  auto p6 = payment(s, 1);
  EXPECT_EQ(p6->status, kPayPending);
  EXPECT_EQ(p6->attempts, 6);
  auto tx = pay(*p6->payment_link_reference);
  ASSERT_TRUE(tx.ok()) << bj::serialize(tx.error().details);
  ASSERT_EQ(settle_until(s, 1, kPayPending), kPayPaid);
  EXPECT_EQ(reload(s).status, kActive);
}

TEST_P(LinkDunningTest, EndingTheSubscriptionDisablesTheLinkOfItsOpenCycle) {
  const Subscription s = linked_subscription();
  std::optional<Payment> p1 = open_link_cycle(s);
  ASSERT_TRUE(p1->payment_link_reference);
  ASSERT_TRUE(billing_->apply(web::acting(p1_), s.reference, Move::cancel, {}).ok());
  EXPECT_EQ(payment(s, 1)->status, kPayCancelled);
  EXPECT_EQ(link_status(*p1->payment_link_reference), "DISABLED");
  EXPECT_FALSE(pay(*p1->payment_link_reference).ok());
}

TEST_P(BillingTest, ANewMandateAfterARevokedOneAndEveryMandateMoveIsAnEvent) {
  auto created = subscribe(5000);
  const Subscription& s = created.subscription;
  consent(created);
  const std::string first = approved_mandate(s, MandateRequest{"237690000042", std::nullopt});
  EXPECT_EQ(events(s, kEventMandateApproved), 1);
  // While it is ACTIVE a second one is refused, naming mandate.
  auto refused = billing_->request_mandate(web::acting(p1_), s.reference, {});
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.error().details.as_object().contains("mandate"));
  ASSERT_TRUE(billing_->revoke_mandate(first).ok());
  EXPECT_EQ(events(s, kEventMandateRevoked), 1);
  // The event carries the mandate as the merchant reads it.
  auto payload = count("SELECT COUNT(*) FROM events WHERE subject = ? AND event_type = ? AND payload LIKE ?",
                       {s.reference, std::string(kEventMandateRevoked), std::string("%\"status\":\"REVOKED\"%")});
  EXPECT_EQ(payload, 1);

  // Revoked, it can be replaced through the same page flow; the old row stays for history.
  const std::string second = approved_mandate(s, MandateRequest{"237690000043", std::nullopt});
  ASSERT_FALSE(second.empty());
  EXPECT_NE(second, first);
  EXPECT_EQ(events(s, kEventMandateApproved), 2);
  auto old_one = billing_->mandate_by_token(first);
  auto new_one = billing_->mandate_by_token(second);
  ASSERT_TRUE(old_one.ok() && new_one.ok());
  EXPECT_EQ(old_one->status, kMandateRevoked);
  EXPECT_EQ(new_one->status, kMandateActive);
  EXPECT_NE(old_one->reference, new_one->reference);
  EXPECT_EQ(count("SELECT COUNT(*) FROM bil_mandates WHERE subscription_id = ?", {s.id}), 2);
  auto current = billing_->mandate_of(s);
  ASSERT_TRUE(current.ok() && current->has_value());
  EXPECT_EQ((*current)->reference, new_one->reference);
  // The old page's secret cannot revoke the new mandate.
  EXPECT_TRUE(billing_->revoke_mandate(first).error().is(ErrorKind::conflict));
  EXPECT_EQ(billing_->mandate_by_token(second)->status, kMandateActive);
  // The new mandate debits the next cycle.
  ASSERT_TRUE(service_->fund_wallet("sandbox", "237690000043", "XAF", 5000, "top-up").ok());
  move_clock(s, 32);
  ASSERT_TRUE(billing_->charge(s.id, 1, 0).ok());
  EXPECT_EQ(payment(s, 1)->status, kPayPaid);
  EXPECT_EQ(billing_->mandate_by_token(second)->debits, 1);
  // The merchant's cancel revokes it, with its event in the same unit.
  ASSERT_TRUE(billing_->apply(web::acting(p1_), s.reference, Move::cancel, {}).ok());
  EXPECT_EQ(billing_->mandate_by_token(second)->revoked_by, "merchant");
  EXPECT_EQ(events(s, kEventMandateRevoked), 2);
}

// The times of a sandbox subscription's payments and moves are on its own clock: a cycle paid
// after the test clock moved a month is paid a month later, not on the wall clock's day.
TEST_P(BillingTest, PaymentsAndCancellationsAreStampedOnTheSubscriptionsClock) {
  // Whether `t` is the subscription's clock between `before` and now (wall times).
  auto on_clock = [&](const Subscription& s, std::int64_t before, std::optional<std::int64_t> t) {
    const Subscription now_s = reload(s);
    const std::int64_t wall = now_ms() + offset_.load();
    return t && *t >= now_s.clock(before) && *t <= now_s.clock(wall);
  };
  auto created = subscribe(5000);
  const Subscription& s = created.subscription;
  consent(created);
  move_clock(s, 32);
  std::int64_t before = now_ms() + offset_.load();
  ASSERT_TRUE(billing_->charge(s.id, 1, 0).ok());
  ASSERT_EQ(settle_until(s, 1, kPayProcessing), kPayPaid);
  auto p1 = payment(s, 1);
  ASSERT_TRUE(p1);
  EXPECT_TRUE(on_clock(s, before, p1->paid_at)) << *p1->paid_at - now_ms();
  EXPECT_EQ(reload(s).last_payment_at, p1->paid_at);
  EXPECT_GE(*p1->paid_at, p1->due_at);  // never paid before it was due

  // A mandate debit is stamped on the same clock.
  approved_mandate(s, MandateRequest{"237690000042", std::nullopt});
  ASSERT_TRUE(service_->fund_wallet("sandbox", "237690000042", "XAF", 50'000, "top-up").ok());
  move_clock(s, 31);
  before = now_ms() + offset_.load();
  ASSERT_TRUE(billing_->charge(s.id, 2, 0).ok());
  auto p2 = payment(s, 2);
  ASSERT_TRUE(p2);
  ASSERT_EQ(p2->status, kPayPaid);
  EXPECT_TRUE(on_clock(s, before, p2->paid_at));
  EXPECT_EQ(reload(s).last_payment_at, p2->paid_at);
  EXPECT_GE(*p2->paid_at, p2->due_at);

  // Cancel at period end: cancelled_at records the request on the subscription's clock; the
  // move at the period's end stamps the end, on that clock too.
  before = now_ms() + offset_.load();
  auto marked = billing_->apply(web::acting(p1_), s.reference, Move::cancel, MoveRequest{std::nullopt, "moving", true});
  ASSERT_TRUE(marked.ok());
  EXPECT_EQ(marked->status, kActive);
  EXPECT_TRUE(marked->cancel_at_period_end);
  EXPECT_TRUE(on_clock(s, before, marked->cancelled_at));
  move_clock(s, 31);
  before = now_ms() + offset_.load();
  ASSERT_TRUE(billing_->charge(s.id, 3, 0).ok());
  Subscription ended = reload(s);
  EXPECT_EQ(ended.status, kCancelled);
  EXPECT_TRUE(on_clock(s, before, ended.cancelled_at));
  EXPECT_FALSE(payment(s, 3));

  // Cancel now, after the clock moved.
  auto other = subscribe(5000);
  consent(other);
  move_clock(other.subscription, 40);
  before = now_ms() + offset_.load();
  auto cancelled = billing_->apply(web::acting(p1_), other.subscription.reference, Move::cancel, {});
  ASSERT_TRUE(cancelled.ok());
  EXPECT_TRUE(on_clock(other.subscription, before, cancelled->cancelled_at));
  expect_ledger_clean();
}

// A move that commits after a charge run read the subscription ACTIVE and before it opened the
// cycle stops that cycle: no payment row, no collection, no next payment.
TEST_P(BillingTest, AMoveCommittedBetweenTheChargesReadAndItsWriteStopsTheCycle) {
  struct Case {
    Move move;
    bool at_period_end;
    std::string_view status;
  };
  for (const Case& k : {Case{Move::cancel, false, kCancelled}, Case{Move::suspend, false, kSuspended},
                        Case{Move::cancel, true, kActive}}) {
    auto created = subscribe(5000);
    const Subscription& s = created.subscription;
    consent(created);
    move_clock(s, 32);
    between_ = [&] {
      auto moved =
          billing_->apply(web::acting(p1_), s.reference, k.move, MoveRequest{std::nullopt, "race", k.at_period_end});
      EXPECT_TRUE(moved.ok());
    };
    (void)billing_->charge(s.id, 1, 0);
    EXPECT_FALSE(between_) << "the run did not reach its write";
    Subscription after = reload(s);
    EXPECT_EQ(after.status, k.status);
    EXPECT_FALSE(payment(s, 1)) << after.status;
    EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE metadata LIKE ?",
                    {"%\"subscription_reference\":\"" + s.reference + "\"%"}),
              0)
        << after.status;  // no cycle collection (the consent's is the link's)
    if (k.status == kCancelled) {
      EXPECT_FALSE(after.next_payment_at);
    }
    if (k.at_period_end) {
      // The next run ends it at its period's end instead of charging.
      ASSERT_TRUE(billing_->charge(s.id, 1, 0).ok());
      EXPECT_EQ(reload(s).status, kCancelled);
      EXPECT_FALSE(payment(s, 1));
    }
  }
  // A page of jobs decides the same way.
  auto created = subscribe(5000);
  const Subscription& s = created.subscription;
  consent(created);
  move_clock(s, 32);
  between_ = [&] { EXPECT_TRUE(billing_->apply(web::acting(p1_), s.reference, Move::cancel, {}).ok()); };
  store::Job job;
  job.payload = bj::serialize(bj::object{{"subscription_id", s.id}, {"cycle", 1}, {"epoch", 0}});
  (void)billing_->charge_page({job});
  EXPECT_FALSE(payment(s, 1));
  EXPECT_EQ(reload(s).status, kCancelled);
  expect_ledger_clean();
}

// A suspension that commits after a retry reopened a failed cycle and before it asked the
// customer again stops that retry; reactivation asks for the cycle.
TEST_P(BillingTest, ASuspendCommittedBetweenARetrysReadAndItsPushStopsTheRetry) {
  auto created = subscribe(5000);
  const Subscription& s = created.subscription;
  consent(created);
  move_clock(s, 32, "237690000001");  // INSUFFICIENT_FUNDS
  ASSERT_TRUE(billing_->charge(s.id, 1, 0).ok());
  ASSERT_EQ(settle_until(s, 1, kPayProcessing), kPayFailed);
  const std::string tag = "billing:retry";
  notifier_->hook_tag = tag;
  notifier_->hook = [&] { EXPECT_TRUE(billing_->apply(web::acting(p1_), s.reference, Move::suspend, {}).ok()); };
  ASSERT_TRUE(billing_->retry(s.id, 1, 1).ok());
  EXPECT_FALSE(notifier_->hook) << "the retry did not remind";
  EXPECT_EQ(reload(s).status, kSuspended);
  auto p = payment(s, 1);
  ASSERT_TRUE(p);
  EXPECT_NE(p->status, kPayProcessing);
  EXPECT_EQ(p->attempts, 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE metadata LIKE ?",
                  {"%\"subscription_reference\":\"" + s.reference + "\"%"}),
            1);  // the first attempt's only
  // Reactivated (from a payer who pays), the cycle is asked for again at once.
  move_clock(s, 0, "237690000000");
  auto re = billing_->apply(web::acting(p1_), s.reference, Move::reactivate, {});
  ASSERT_TRUE(re.ok());
  EXPECT_EQ(settle_until(s, 1, kPayProcessing), kPayPaid);
  EXPECT_EQ(payment(s, 1)->attempts, 2);
  expect_ledger_clean();
}

INSTANTIATE_TEST_SUITE_P(Backends, BillingTest, ::testing::Values("sqlite", "postgres"));
INSTANTIATE_TEST_SUITE_P(Backends, LinkDunningTest, ::testing::Values("sqlite", "postgres"));

}  // namespace
}  // namespace sika::billing
