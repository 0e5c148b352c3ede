// Subscriptions over real payments and links services (the sandbox operator), on both backends:
// the state machine, consent, exactly one payment and one collection per cycle under concurrent
// runs, dunning to SUSPENDED, moves with their timestamps and events.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "billing/service.hpp"
#include "billing/store.hpp"
#include "notify/notifier.hpp"
#include "payments/fixture.hpp"
#include "store/jobs.hpp"

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
    notifier_ = std::make_unique<notify::SandboxNotifier>(*db_);
    Options o;
    o.clock = [this] { return now_ms() + offset_.load(); };
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
    auto created = billing_->create(p1_, n);
    EXPECT_TRUE(created.ok()) << (created.ok() ? "" : bj::serialize(created.error().details));
    return created.ok() ? std::move(created).value() : Service::Created{};
  }

  Subscription reload(const Subscription& s) {
    auto found = billing_->find(p1_, s.reference);
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

  std::unique_ptr<links::Service> links_;
  std::unique_ptr<notify::SandboxNotifier> notifier_;
  std::unique_ptr<Service> billing_;
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
  auto re = billing_->apply(p1_, s.reference, Move::reactivate, MoveRequest{});
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
  EXPECT_EQ(billing_->apply(p2_, s.reference, Move::suspend, {}).error().kind, ErrorKind::not_found);
  auto bad_uuid = billing_->apply(p1_, s.reference, Move::cancel, MoveRequest{uuid_v4(), std::nullopt, false});
  ASSERT_FALSE(bad_uuid.ok());
  EXPECT_TRUE(bad_uuid.error().details.as_object().contains("uuid"));
  auto sus = billing_->apply(p1_, s.reference, Move::suspend, MoveRequest{std::nullopt, "paused", false});
  ASSERT_TRUE(sus.ok());
  EXPECT_EQ(sus->status, kSuspended);
  EXPECT_EQ(sus->status_reason, "paused");
  EXPECT_EQ(billing_->apply(p1_, s.reference, Move::suspend, {}).error().kind, ErrorKind::conflict);
  // Cancel at period end needs an ACTIVE subscription.
  EXPECT_EQ(billing_->apply(p1_, s.reference, Move::cancel, MoveRequest{std::nullopt, std::nullopt, true}).error().kind,
            ErrorKind::conflict);
  auto cancelled = billing_->apply(p1_, s.reference, Move::cancel, MoveRequest{s.uuid, "gone", false});
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->status, kCancelled);
  EXPECT_TRUE(cancelled->cancelled_at && cancelled->suspended_at);
  EXPECT_FALSE(cancelled->next_payment_at);
  EXPECT_EQ(payment(s, 0)->status, kPayCancelled);
  EXPECT_EQ(billing_->apply(p1_, s.reference, Move::reactivate, {}).error().kind, ErrorKind::conflict);
  EXPECT_EQ(events(s, "subscription.suspended"), 1);
  EXPECT_EQ(events(s, "subscription.cancelled"), 1);
  // Each event carries the subscription as it is after the move.
  EXPECT_EQ(count("SELECT COUNT(*) FROM events WHERE subject = ? AND payload LIKE '%\"status\":\"CANCELLED\"%'",
                  {s.reference}),
            1);
}

TEST_P(BillingTest, ACycleCountExpiresTheSubscriptionAtTheEndOfItsLastPeriod) {
  NewSubscription n;
  n.customer_email = "kofi@example.com";
  n.amount = 700;
  n.currency = "XAF";
  n.frequency = Frequency::weekly;
  n.max_cycles = 2;
  n.request_hash = "h";
  auto created = billing_->create(p1_, n);
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

TEST_P(BillingTest, ListTotalsFollowEveryInsertAndMove) {
  std::vector<Subscription> subs;
  for (int i = 0; i < 5; ++i) subs.push_back(subscribe(100 + i).subscription);
  ASSERT_TRUE(billing_->apply(p1_, subs[0].reference, Move::suspend, {}).ok());
  ASSERT_TRUE(billing_->apply(p1_, subs[1].reference, Move::cancel, {}).ok());
  ASSERT_TRUE(billing_->apply(p1_, subs[2].reference, Move::suspend, {}).ok());
  ASSERT_TRUE(billing_->apply(p1_, subs[2].reference, Move::reactivate, {}).ok());
  ASSERT_TRUE(billing_->apply(p1_, subs[3].reference, Move::expire, {}).ok());
  auto total = [&](std::optional<std::string> status, const web::Principal& p) {
    tables::ListFilter f;
    f.status = std::move(status);
    f.limit = 2;
    auto r = billing_->list_subscriptions(p, f);
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
  EXPECT_EQ(billing_->list_subscriptions(p1_, by_email)->second, 5);
}

INSTANTIATE_TEST_SUITE_P(Backends, BillingTest, ::testing::Values("sqlite", "postgres"));

}  // namespace
}  // namespace sika::billing
