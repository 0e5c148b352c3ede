// The billing engine, the scheduled work of subscriptions: the charge of each cycle (a push to
// the payer's phone, a mandate debit or a link), dunning retries, the settlement of ended
// collections and the lapse of unpaid cycle links, with the jobs and the loop that run them.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/json.hpp>
#include <map>

#include "billing/service.hpp"
#include "catalog/model.hpp"
#include "core/crypto.hpp"
#include "core/random.hpp"
#include "core/time.hpp"
#include "links/store.hpp"
#include "merchant/merchant.hpp"
#include "store/outbox.hpp"

namespace sika::billing {

namespace bj = boost::json;

namespace {

// Runs of a link deadline's job while a payment of its link is still running (the runner's
// backoff, capped at jobs.retry_max_ms, spreads them over more than a day).
constexpr int kDeadlineAttempts = 40;

bool is_transient(const Error& e) {
  return e.is(ErrorKind::retryable) || e.is(ErrorKind::unavailable) || e.is(ErrorKind::internal) ||
         e.is(ErrorKind::upstream_failed) || e.is(ErrorKind::upstream_timeout);
}

}  // namespace

Service::ChargeJob Service::charge_job(const store::Job& job) {
  auto v = json::parse(job.payload);
  auto field = [&](std::string_view key) -> std::int64_t {
    if (!v || !v->is_object()) return -1;
    const bj::value* f = v->as_object().if_contains(key);
    return f && f->is_int64() ? f->as_int64() : -1;
  };
  return {field("subscription_id"), field("cycle"), field("epoch"), field("attempts")};
}

void Service::register_jobs(store::JobRunner& runner) {
  jobs_ = &runner;
  runner.handle_pages(
      std::string(kChargeQueue), [this](const std::vector<store::Job>& jobs) { return charge_page(jobs); },
      options_.charge_page);
  runner.handle(std::string(kRetryQueue), [this](const store::Job& job, store::JobScope&) -> Status {
    const ChargeJob j = charge_job(job);
    return retry(j.subscription_id, j.cycle, j.attempts);
  });
  runner.handle(std::string(kLinkDeadlineQueue), [this](const store::Job& job, store::JobScope&) -> Status {
    const ChargeJob j = charge_job(job);
    return lapse(j.subscription_id, j.cycle, j.attempts);
  });
}

Status Service::plan_charge(store::Conn& c, std::int64_t subscription_id, std::int64_t cycle, std::int64_t epoch,
                            std::int64_t at, ChargePlan& plan) {
  plan = ChargePlan{};
  plan.cycle = cycle;
  plan.epoch = epoch;
  plan.at = at;
  SIKA_ASSIGN_OR_RETURN(plan.s, tables::by_id(c, subscription_id));
  const std::optional<Subscription>& s = plan.s;
  if (!s || s->epoch != epoch || s->status != kActive || !s->payer_wallet || s->next_cycle < cycle) {
    plan.s.reset();
    return {};
  }
  if (s->next_cycle > cycle) {
    // Created by an earlier run (or another node): make sure it was asked for.
    SIKA_ASSIGN_OR_RETURN(plan.billed, tables::payment_of(c, s->id, cycle));
    return {};
  }
  SIKA_ASSIGN_OR_RETURN(std::int64_t due, due_at(s->anchor_at, s->time_zone, s->frequency, cycle));
  if (due > s->clock(at)) return retryable(bj::object{{"cycle", "not due yet on the subscription's clock"}});
  if (s->cancel_at_period_end) {
    plan.ending = Move::cancel;
    return {};
  }
  if (s->ends_before(cycle, due)) {
    plan.ending = Move::expire;
    return {};
  }
  SIKA_ASSIGN_OR_RETURN(plan.next_due, due_at(s->anchor_at, s->time_zone, s->frequency, cycle + 1));
  Payment p;
  p.reference = random_reference("SPY-", 16);
  p.subscription_id = s->id;
  p.cycle = cycle;
  p.amount = s->amount;
  p.currency = s->currency;
  p.status = std::string(kPayPending);
  p.due_at = due;
  p.created_at = p.updated_at = at;
  plan.fresh = std::move(p);
  SIKA_ASSIGN_OR_RETURN(plan.mandate, tables::mandate_of(c, s->id));
  return {};
}

Status Service::charge(std::int64_t subscription_id, std::int64_t cycle, std::int64_t epoch) {
  ChargePlan plan;
  // A read unit decides: reads run beside the writers (SQLite WAL, PostgreSQL MVCC), and every
  // write that follows is conditional on what was read (the status, next_cycle, the cycle's
  // UNIQUE row), so a decision made on a stale read changes nothing.
  const std::int64_t at = now();
  SIKA_TRY(db_.read([&](store::Conn& c) { return plan_charge(c, subscription_id, cycle, epoch, at, plan); }));
  return carry_out(plan);
}

bool Service::pushes_plainly(const ChargePlan& plan) const {
  return plan.s && !plan.ending && !plan.billed && plan.fresh &&
         !(plan.mandate && plan.mandate->status == kMandateActive) && !payer_needs_code(*plan.s);
}

Status Service::carry_out(ChargePlan& plan) {
  if (!plan.s) return {};
  const Subscription& s = *plan.s;
  if (plan.ending) {
    // Conditional on the status read: of two runs ending it, one moves it, the other nothing.
    return db_.write([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(auto current, tables::by_id(c, s.id));
      if (!current || current->status != kActive || current->next_cycle != plan.cycle || current->epoch != plan.epoch)
        return {};
      SIKA_TRY(move(c, *current, *plan.ending,
                    *plan.ending == Move::cancel ? current->status_reason
                                                 : std::optional<std::string>("the subscription reached its end"),
                    plan.at));
      return {};
    });
  }
  if (plan.billed)
    return plan.billed->status == kPayPending || plan.billed->status == kPayProcessing ? push(s, *plan.billed)
                                                                                       : Status{};
  if (!plan.fresh) return {};
  // Under an active mandate the cycle is a debit of the customer's wallet; a mandate that cannot
  // be used (revoked meanwhile, cap below the debit) leaves the cycle to the phone.
  if (plan.mandate && plan.mandate->status == kMandateActive) {
    SIKA_ASSIGN_OR_RETURN(bool debited, debit(s, *plan.mandate, *plan.fresh, true, plan.next_due));
    if (debited) return {};
  }
  if (payer_needs_code(s)) return send_cycle_link(s, *plan.fresh, plan.next_due);
  SIKA_ASSIGN_OR_RETURN(Acting merchant, merchant_of(s));
  auto tx = payments_.collect(
      intent_for(s, *plan.fresh, 1), merchant,
      payments::Service::How::present(
          std::nullopt, "subscription",
          [&](store::Conn& c, const payments::Transaction& created) { return open(c, plan, created.reference); }));
  return opened(plan, std::move(tx));
}

// The cycle's payment row (UNIQUE per cycle), the subscription's advance to the next cycle,
// that cycle's job and the collection with its record on the payment commit in one unit.
Status Service::open(store::Conn& c, ChargePlan& plan, const std::optional<std::string>& intent_reference) {
  Payment p = *plan.fresh;
  if (intent_reference) {
    p.status = std::string(kPayProcessing);
    p.payment_intent_reference = intent_reference;
    p.attempts = 1;
  }
  SIKA_TRY(open_cycle(c, *plan.s, p, plan.next_due, plan.at));
  plan.fresh->id = p.id;
  return {};
}

Status Service::opened(ChargePlan& plan, Result<payments::Transaction> tx) {
  if (tx) {
    wake_jobs();  // the next cycle may be due already (catch-up after downtime)
    return {};
  }
  if (tx.error().is(ErrorKind::conflict)) return {};  // another run created this cycle
  if (is_transient(tx.error())) return tx.take_error();
  // Refused for good (the operator's service is gone, the amount is over its limit): the cycle
  // is opened without a collection, its attempt fails like a collection would, and dunning
  // takes over.
  const std::string reason = "COLLECTION_REFUSED: " + tx.error().code;
  SIKA_TRY(db_.write([&](store::Conn& c) { return open(c, plan, std::nullopt); }));
  wake_jobs();
  return refuse(*plan.s, *plan.fresh, reason);
}

std::vector<Status> Service::charge_page(const std::vector<store::Job>& jobs) {
  const std::int64_t at = now();
  std::vector<ChargePlan> plans(jobs.size());
  std::vector<Status> out(jobs.size());
  // One read unit decides for the whole page (each job as charge() would).
  Status read = db_.read([&](store::Conn& c) -> Status {
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const ChargeJob job = charge_job(jobs[i]);
      out[i] = plan_charge(c, job.subscription_id, job.cycle, job.epoch, at, plans[i]);
    }
    return {};
  });
  if (!read) return std::vector<Status>(jobs.size(), read);
  // The common case, a cycle pushed to the payer's phone, goes in one write unit for the page;
  // the others (ending, mandate debits, links, cycles created by an earlier run) one by one.
  std::vector<payments::Service::PresentPayer> payers;
  std::vector<std::size_t> paged;
  std::map<std::int64_t, Acting> merchants;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!out[i]) continue;
    ChargePlan& plan = plans[i];
    if (!pushes_plainly(plan)) {
      out[i] = carry_out(plan);
      continue;
    }
    auto known = merchants.find(plan.s->merchant_id);
    if (known == merchants.end()) {
      auto merchant = merchant_of(*plan.s);
      if (!merchant) {
        out[i] = merchant.error();
        continue;
      }
      known = merchants.emplace(plan.s->merchant_id, std::move(merchant).value()).first;
    }
    payers.push_back({intent_for(*plan.s, *plan.fresh, 1), known->second,
                      [this, &plan](store::Conn& c, const payments::Transaction& created) {
                        return open(c, plan, created.reference);
                      }});
    paged.push_back(i);
  }
  if (payers.empty()) return out;
  auto created = payments_.collect_page(payers, "subscription");
  for (std::size_t k = 0; k < paged.size(); ++k) out[paged[k]] = opened(plans[paged[k]], std::move(created[k]));
  return out;
}

Status Service::open_cycle(store::Conn& c, const Subscription& s, Payment& p, std::int64_t next_due, std::int64_t at) {
  SIKA_ASSIGN_OR_RETURN(auto id, tables::insert_payment(c, p));
  // Conditional on the subscription as the run planned it (ACTIVE, its epoch, not ending at the
  // period's end): a move that committed since makes this unit a 409.
  SIKA_ASSIGN_OR_RETURN(bool advanced, tables::advance_cycle(c, s.id, p.cycle, s.epoch, next_due, at));
  if (!id || !advanced) return conflict(bj::object{{"cycle", "billed by another run"}});
  p.id = *id;
  return enqueue_charge(c, s, p.cycle + 1, s.epoch, at);
}

Result<bool> Service::debit(const Subscription& s, const Mandate& m, Payment p, bool opening, std::int64_t next_due) {
  SIKA_ASSIGN_OR_RETURN(Acting merchant, merchant_of(s));
  SIKA_ASSIGN_OR_RETURN(payments::IntentRequest intent, mandate_intent(s, m, p, p.attempts + 1));
  // Idempotent on the attempt's transaction_uuid: a second run gets the same collection.
  SIKA_ASSIGN_OR_RETURN(payments::Transaction tx, payments_.collect(intent, merchant, {}));
  const std::int64_t at = now();
  const std::int64_t paid_at = s.clock(at);  // on the subscription's clock
  if (tx.status == payments::TxStatus::initiated) {
    bool refused = false;
    auto done = payments_.execute_preauthorized(
        tx,
        [&](store::Conn& c) -> Status {
          refused = false;
          SIKA_ASSIGN_OR_RETURN(bool taken, tables::take_mandate(c, m.id, tx.required_total, at));
          if (!taken) {
            refused = true;
            return conflict(bj::object{{"mandate", "is revoked, or its cap is below the debit"}});
          }
          auto set_paid = [&](store::Conn& conn) {
            return tables::set_paid(conn, s.id, paid_at, std::nullopt, std::nullopt, at);
          };
          auto event = [&](store::Conn& conn) { return payment_event(conn, s.id, p.cycle, at); };
          Payment paid = p;
          if (opening) {
            paid.status = std::string(kPayPaid);
            paid.paid_at = paid_at;
            paid.attempts = 1;
            paid.wallet_transaction_id = tx.reference;
            SIKA_TRY(open_cycle(c, s, paid, next_due, at));
            SIKA_TRY(set_paid(c));
            SIKA_ASSIGN_OR_RETURN(store::Event e, event(c));
            SIKA_TRY(store::append_event(c, e.merchant_id, kEventPaymentSucceeded, e.subject, e.payload, e.at));
            return {};
          } else {
            // A retry: only while the subscription is ACTIVE (a suspension since stops it).
            SIKA_ASSIGN_OR_RETURN(bool active, tables::hold_active(c, s.id));
            if (!active) return conflict(bj::object{{"status", "the subscription is no longer ACTIVE"}});
            SIKA_ASSIGN_OR_RETURN(bool marked, tables::mark_paid_from_wallet(c, p.id, p.attempts, tx.reference, paid_at,
                                                                             at, {set_paid, event}));
            if (!marked) return conflict(bj::object{{"payment", "paid by another run"}});
            return {};
          }
        },
        "subscription");
    if (!done) {
      if (refused) {
        (void)payments_.cancel_collection(tx, "subscription", "MANDATE_REFUSED");
        return false;
      }
      if (done.error().is(ErrorKind::conflict)) return true;  // another run debited this attempt
      return done.take_error();
    }
    tx = std::move(done).value();
  }
  if (payments::was_paid(tx.status)) {
    if (opening) wake_jobs();  // the next cycle may be due already (catch-up after downtime)
    return true;
  }
  if (tx.status != payments::TxStatus::failed) return true;  // cancelled by a run the mandate refused
  // A short balance: the attempt's transaction is recorded on the payment, which fails into dunning.
  p.wallet_transaction_id = tx.reference;
  auto recorded = db_.write([&](store::Conn& c) -> Status {
    if (opening) return open_cycle(c, s, p, next_due, at);
    return tables::set_wallet_transaction(c, p.id, tx.reference, at);
  });
  if (!recorded) {
    if (recorded.error().is(ErrorKind::conflict)) return true;  // another run opened the cycle
    return recorded.take_error();
  }
  if (opening) wake_jobs();
  SIKA_TRY(refuse(s, p, tx.failure_reason.value_or("INSUFFICIENT_FUNDS")));
  return true;
}

Result<payments::IntentRequest> Service::mandate_intent(const Subscription& s, const Mandate& m, const Payment& p,
                                                        std::int64_t attempt) const {
  auto cat = options_.catalog ? options_.catalog() : nullptr;
  if (!cat || !cat->loaded()) return unavailable(bj::string("the catalog is not loaded"));
  // The Sika wallet service of the payer's country (XOF is the currency of several countries).
  std::int64_t country = 0;
  if (s.payer_provider)
    if (const catalog::PaymentService* paid_with = cat->service(*s.payer_provider)) country = paid_with->country_id;
  const catalog::PaymentService* wallet = nullptr;
  for (const auto& service : cat->services())
    if (service.kind == catalog::ServiceKind::wallet && service.currency == m.currency && cat->usable(service) &&
        (country == 0 || service.country_id == country)) {
      wallet = &service;
      break;
    }
  if (!wallet) return unavailable(bj::object{{"mandate", "there is no Sika wallet service in " + m.currency}});
  payments::IntentRequest intent;
  intent.amount = p.amount;
  intent.currency = p.currency;
  // Its own namespace: a phone attempt and a wallet attempt of one cycle never share a uuid.
  intent.transaction_uuid = crypto::uuid_from_name("subscription-mandate:" + s.reference + ":" +
                                                   std::to_string(p.cycle) + ":" + std::to_string(attempt));
  intent.provider = wallet->code;
  intent.channel = std::string(payments::kChannelWallet);
  intent.customer_wallet = m.wallet;
  intent.preauthorized = true;
  // The mandate's cap is what leaves the wallet: the merchant bears the fee, the wallet is
  // debited the subscription's amount exactly.
  intent.fee_bearer = std::string(payments::kMerchantBearsFee);
  intent.description = label(s);
  // Only what every run of this attempt agrees on (a new cycle's payment reference is drawn by
  // each run until one commits): a second run's request is then the same, and payments returns
  // the first run's collection instead of refusing the uuid.
  intent.metadata = bj::serialize(
      bj::object{{"subscription_reference", s.reference}, {"cycle", p.cycle}, {"mandate_reference", m.reference}});
  return intent;
}

bool Service::payer_needs_code(const Subscription& s) const {
  if (!s.payer_provider) return false;
  auto cat = options_.catalog ? options_.catalog() : nullptr;
  if (!cat || !cat->loaded()) return false;
  const catalog::PaymentService* service = cat->service(*s.payer_provider);
  return service && service->needs_otp;
}

Result<links::Link> Service::cycle_link(const Acting& merchant, const Subscription& s, const Payment& p) {
  links::NewLink ln;
  ln.amount = p.amount;
  ln.currency = p.currency;
  ln.max_usage = 1;
  ln.title = "Subscription " + s.reference + ", cycle " + std::to_string(p.cycle);
  ln.description = label(s);
  // The link's expiry is on the wall clock; the deadline's job disables it on the subscription's.
  if (p.link_deadline_at) ln.expires_at = *p.link_deadline_at - s.clock_offset_ms;
  ln.metadata =
      bj::serialize(bj::object{{"subscription_reference", s.reference}, {"cycle", p.cycle}, {"attempt", p.attempts}});
  return links_.create_link(merchant, ln);
}

Status Service::enqueue_deadline(store::Conn& c, const Subscription& s, const Payment& p, std::int64_t at) {
  store::NewJob job;
  job.queue = std::string(kLinkDeadlineQueue);
  job.key = s.reference + ":" + std::to_string(p.cycle) + ":d" + std::to_string(p.attempts);
  job.payload = bj::serialize(bj::object{{"subscription_id", s.id}, {"cycle", p.cycle}, {"attempts", p.attempts}});
  job.run_at = p.link_deadline_at.value_or(s.clock(at)) - s.clock_offset_ms;
  job.max_attempts = kDeadlineAttempts;
  SIKA_TRY(store::enqueue(c, job, at));
  return {};
}

Status Service::send_cycle_link(const Subscription& s, Payment p, std::int64_t next_due) {
  SIKA_ASSIGN_OR_RETURN(Acting merchant, merchant_of(s));
  const std::int64_t at = now();
  p.attempts = 1;  // the link is the cycle's first attempt
  p.link_deadline_at = s.clock(at) + options_.link_deadline_ms;
  SIKA_ASSIGN_OR_RETURN(links::Link link, cycle_link(merchant, s, p));
  p.payment_link_reference = link.reference;
  auto opened = db_.write([&](store::Conn& c) -> Status {
    SIKA_TRY(open_cycle(c, s, p, next_due, at));
    SIKA_TRY(tables::set_link_deadline(c, p.id, *p.link_deadline_at, at));
    return enqueue_deadline(c, s, p, at);
  });
  if (!opened) {
    (void)links_.set_status(merchant, link.reference, links::kDisabled);  // the link nobody will use
    if (opened.error().is(ErrorKind::conflict)) return {};                // another run opened the cycle
    return opened.take_error();
  }
  wake_jobs();
  remind(s, p, "billing:link",
         "The payment of " + amount_text(s) + " for " + label(s) +
             " is due. Your operator asks for a code: please pay it at " + links_.payment_url(link) + " before " +
             iso8601(*p.link_deadline_at).substr(0, 10) + ".");
  return {};
}

Status Service::send_new_link(const Subscription& s, const Payment& failed) {
  SIKA_ASSIGN_OR_RETURN(Acting merchant, merchant_of(s));
  const std::int64_t at = now();
  Payment p = failed;
  p.status = std::string(kPayPending);
  p.attempts = failed.attempts + 1;
  p.link_deadline_at = s.clock(at) + options_.link_deadline_ms;
  SIKA_ASSIGN_OR_RETURN(links::Link link, cycle_link(merchant, s, p));
  p.payment_link_reference = link.reference;
  // The attempt is counted, its link recorded and its deadline's job enqueued in one unit,
  // conditional on the attempt count: of two runs of this retry one sends a link, the other
  // disables the one it made.
  bool sent = false;
  auto recorded = db_.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(bool active, tables::hold_active(c, s.id));
    if (!active) return {};  // suspended or ended since the retry read it
    SIKA_ASSIGN_OR_RETURN(sent, tables::relink(c, p.id, failed.attempts, link.reference, *p.link_deadline_at, at));
    if (!sent) return {};
    return enqueue_deadline(c, s, p, at);
  });
  if (!recorded || !sent) {
    (void)links_.set_status(merchant, link.reference, links::kDisabled);
    return recorded;
  }
  wake_jobs();
  remind(s, p, "billing:retry",
         "Reminder: the payment of " + amount_text(s) + " for " + label(s) + " is still due. Please pay it at " +
             links_.payment_url(link) + " before " + iso8601(*p.link_deadline_at).substr(0, 10) + ".");
  return {};
}

payments::IntentRequest Service::intent_for(const Subscription& s, const Payment& p, std::int64_t attempt) const {
  payments::IntentRequest intent;
  intent.amount = p.amount;
  intent.currency = p.currency;
  intent.transaction_uuid = crypto::uuid_from_name("subscription:" + s.reference + ":" + std::to_string(p.cycle) + ":" +
                                                   std::to_string(attempt));
  intent.provider = s.payer_provider.value_or("");
  intent.channel = std::string(payments::kChannelProvider);
  intent.customer_wallet = s.payer_wallet.value_or("");
  intent.description = label(s);
  intent.metadata = bj::serialize(bj::object{
      {"subscription_reference", s.reference}, {"subscription_payment_reference", p.reference}, {"cycle", p.cycle}});
  return intent;
}

Status Service::refuse(const Subscription& s, const Payment& p, const std::string& reason) {
  tables::Ended refused;
  refused.payment_id = p.id;
  refused.subscription_id = s.id;
  refused.from = std::string(kPayPending);
  refused.transaction_status = "FAILED";
  refused.failure_reason = reason;
  refused.ended_at = now();
  return settle(refused);
}

Status Service::push(const Subscription& s, const Payment& p) {
  if (!s.payer_wallet || !s.payer_provider || p.payment_link_reference) return {};
  if (p.status == kPayPending) {
    SIKA_ASSIGN_OR_RETURN(auto mandate, mandate_of(s));
    if (mandate && mandate->status == kMandateActive) {
      SIKA_ASSIGN_OR_RETURN(bool debited, debit(s, *mandate, p, false, 0));
      if (debited) return {};
    }
  }
  SIKA_ASSIGN_OR_RETURN(Acting merchant, merchant_of(s));
  if (p.status == kPayProcessing) {
    // Asked for already; a collection left INITIATED (its operator needs a code) is pushed
    // again: execute moves INITIATED once, whoever asks.
    if (!p.payment_intent_reference) return {};
    auto tx = payments_.find(merchant, *p.payment_intent_reference, payments::kCollection);
    if (tx && tx->status == payments::TxStatus::initiated)
      (void)payments_.execute_collection(std::move(tx).value(), std::nullopt, "subscription");
    return {};
  }
  if (p.status != kPayPending) return {};
  // A new attempt: the collection and its record on the payment (PENDING -> PROCESSING,
  // conditional on the attempt count) commit in one unit, then the operator is asked.
  const std::int64_t at = now();
  auto tx = payments_.collect(
      intent_for(s, p, p.attempts + 1), merchant,
      payments::Service::How::present(
          std::nullopt, "subscription", [&](store::Conn& c, const payments::Transaction& created) -> Status {
            // Only while the subscription is ACTIVE: a suspension since the retry's read stops it.
            SIKA_ASSIGN_OR_RETURN(bool active, tables::hold_active(c, s.id));
            if (!active) return conflict(bj::object{{"status", "the subscription is no longer ACTIVE"}});
            SIKA_ASSIGN_OR_RETURN(bool recorded, tables::mark_processing(c, p.id, p.attempts, created.reference, at));
            if (!recorded) return conflict(bj::object{{"payment", "asked for by another run"}});
            return {};
          }));
  if (tx || tx.error().is(ErrorKind::conflict)) return {};
  if (is_transient(tx.error())) return tx.take_error();
  return refuse(s, p, "COLLECTION_REFUSED: " + tx.error().code);
}

Status Service::retry(std::int64_t subscription_id, std::int64_t cycle, std::int64_t attempts) {
  const std::int64_t at = now();
  std::optional<Subscription> s;
  std::optional<Payment> p;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    p.reset();
    SIKA_ASSIGN_OR_RETURN(s, tables::by_id(c, subscription_id));
    if (!s || s->status != kActive) return {};
    SIKA_ASSIGN_OR_RETURN(auto found, tables::payment_of(c, s->id, cycle));
    if (!found || found->attempts != attempts) return {};
    if (found->status == kPayFailed && found->by_link()) {
      p = std::move(found);  // a new link, counted as the next attempt by its own unit
      return {};
    }
    if (found->status == kPayFailed) {
      SIKA_ASSIGN_OR_RETURN(bool reopened, tables::reopen(c, found->id, attempts, at));
      if (!reopened) return {};
      found->status = std::string(kPayPending);
    }
    if (found->status == kPayPending) p = std::move(found);
    return {};
  }));
  if (!s || !p) return {};
  if (p->by_link() && p->status == kPayFailed) return send_new_link(*s, *p);
  remind(*s, *p, "billing:retry",
         "Reminder: the payment of " + amount_text(*s) + " for " + label(*s) +
             " did not go through. We are asking again now: please approve the request on your phone.");
  return push(*s, *p);
}

Result<int> Service::settle_due() {
  std::vector<tables::Ended> ended;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(ended, tables::ended_collections(c, options_.settle_batch));
    return {};
  }));
  int n = 0;
  for (const auto& e : ended) {
    if (auto st = settle(e); !st) return st.take_error();
    ++n;
  }
  return n;
}

Status Service::settle(const tables::Ended& e) {
  const std::int64_t at = now();
  // A collection refunded (in full) before this settles it was paid all the same.
  const bool paid = e.transaction_status == "COMPLETED" || e.transaction_status == "REFUNDED";
  std::optional<Subscription> s;
  std::optional<Payment> reminder;
  bool resumed = false;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    reminder.reset();
    resumed = false;
    SIKA_ASSIGN_OR_RETURN(s, tables::by_id(c, e.subscription_id));
    if (!s) return {};
    SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT cycle FROM bil_payments WHERE id = ?", {e.payment_id}));
    if (rows.empty()) return {};
    SIKA_ASSIGN_OR_RETURN(auto p, tables::payment_of(c, s->id, rows.front().i64(0)));
    if (!p || p->status != e.from) return {};
    // A link payment (the consent, or a cycle of an operator that needs a code) records the
    // collection that paid it; only the consent teaches the payer.
    const bool linked = p->payment_link_reference.has_value();
    const bool consent = linked && p->cycle == 0;
    if (paid) {
      // Paid when the collection ended, on the subscription's clock.
      const std::int64_t paid_at = s->clock(e.ended_at);
      store::Effects effects;
      // The consent payment teaches the phone and operator the later cycles are asked from.
      effects.then = [&](store::Conn& conn) {
        return tables::set_paid(conn, s->id, paid_at,
                                consent ? std::optional<std::string>(e.service_code) : std::nullopt,
                                consent ? std::optional<std::string>(e.customer_wallet) : std::nullopt, at);
      };
      effects.event = [&](store::Conn& conn) -> Result<store::Event> {
        SIKA_ASSIGN_OR_RETURN(s, tables::by_id(conn, e.subscription_id));
        return payment_event(conn, e.subscription_id, p->cycle, at);
      };
      SIKA_ASSIGN_OR_RETURN(
          bool marked, tables::mark_paid(c, p->id, *kPaymentStatus.parse(e.from),
                                         linked ? std::optional<std::string>(e.transaction_reference) : std::nullopt,
                                         paid_at, at, effects));
      if (!marked) return {};
      if (consent && s->status == kActive) {
        SIKA_TRY(enqueue_charge(c, *s, s->next_cycle, s->epoch, at));
        resumed = true;
      }
      return {};
    }
    // Failed: dunning asks again after the next delay of the schedule, or suspends.
    if (e.from == kPayPending) {
      // Refused before a collection existed: it counts as an attempt, so the next one gets a
      // fresh collection key and the next delay of the schedule.
      SIKA_TRY(c.exec("UPDATE bil_payments SET attempts = attempts + 1 WHERE id = ? AND status = 'PENDING'", {p->id}));
      SIKA_ASSIGN_OR_RETURN(p, tables::payment_of(c, s->id, p->cycle));
    }
    SIKA_ASSIGN_OR_RETURN(reminder,
                          fail_into_dunning(c, *s, *p, e.from, e.failure_reason.value_or(e.transaction_status), at));
    return {};
  }));
  if (resumed) wake_jobs();
  if (s && reminder) remind_failed(*s, *reminder);
  return {};
}

Result<std::optional<Payment>> Service::fail_into_dunning(store::Conn& c, const Subscription& s, const Payment& failing,
                                                          std::string_view from, const std::string& reason,
                                                          std::int64_t at) {
  // The delays of the schedule count from the cycle's first failure on the subscription's clock.
  const std::int64_t clock = s.clock(at);
  const std::int64_t first_failure = failing.failed_at.value_or(clock);
  const std::size_t retry_index = static_cast<std::size_t>(std::max<std::int64_t>(failing.attempts, 1) - 1);
  std::optional<std::int64_t> next_retry;
  if (s.status == kActive && retry_index < options_.retries.days.size())
    next_retry = first_failure + options_.retries.days[retry_index] * kDayMs;
  std::optional<Payment> p;
  store::Effects effects;
  effects.event = [&](store::Conn& conn) -> Result<store::Event> {
    SIKA_ASSIGN_OR_RETURN(p, tables::payment_of(conn, s.id, failing.cycle));
    if (!p) return internal_error(bj::string("subscription payment vanished inside its unit"));
    return store::Event{s.merchant_id, s.reference, event_payload(s, &*p), at};
  };
  SIKA_ASSIGN_OR_RETURN(bool marked, tables::mark_failed(c, failing.id, *kPaymentStatus.parse(from), reason, clock,
                                                         next_retry, at, effects));
  if (!marked) return std::optional<Payment>{};
  if (next_retry) {
    store::NewJob job;
    job.queue = std::string(kRetryQueue);
    job.key = s.reference + ":" + std::to_string(p->cycle) + ":a" + std::to_string(p->attempts);
    job.payload = bj::serialize(bj::object{{"subscription_id", s.id}, {"cycle", p->cycle}, {"attempts", p->attempts}});
    job.run_at = *next_retry - s.clock_offset_ms;
    SIKA_TRY(store::enqueue(c, job, at));
    return p;
  }
  if (s.status == kActive) {
    const std::string why = "cycle " + std::to_string(p->cycle) + " unpaid after " + std::to_string(p->attempts) +
                            " attempt" + (p->attempts == 1 ? "" : "s") + ": " + reason;
    SIKA_TRY(move(c, s, Move::suspend, why, at));
  }
  return std::optional<Payment>{};
}

void Service::remind_failed(const Subscription& s, const Payment& p) {
  if (!p.next_retry_at) return;
  const std::string when = iso8601(*p.next_retry_at).substr(0, 10);
  if (p.by_link())
    remind(s, p, "billing:failed",
           "The payment of " + amount_text(s) + " for " + label(s) +
               " was not made: its link was not paid in time. We will send you a new link on " + when + ".");
  else
    remind(s, p, "billing:failed",
           "The payment of " + amount_text(s) + " for " + label(s) + " failed (" + p.failure_reason.value_or("FAILED") +
               "). We will ask again on " + when + ".");
}

Status Service::lapse(std::int64_t subscription_id, std::int64_t cycle, std::int64_t attempts) {
  SIKA_ASSIGN_OR_RETURN(Lapse outcome, lapse_link(subscription_id, cycle, attempts));
  if (outcome == Lapse::running)
    return retryable(bj::object{{"payment_link_reference", "a payment of the cycle's link may still complete"}});
  return {};
}

Result<Service::Lapse> Service::lapse_link(std::int64_t subscription_id, std::int64_t cycle, std::int64_t attempts) {
  const std::int64_t at = now();
  std::optional<Subscription> s;
  std::optional<Payment> reminder;
  Lapse outcome = Lapse::moot;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    outcome = Lapse::moot;
    reminder.reset();
    SIKA_ASSIGN_OR_RETURN(s, tables::by_id(c, subscription_id));
    if (!s) return {};
    SIKA_ASSIGN_OR_RETURN(auto p, tables::payment_of(c, s->id, cycle));
    if (!p || p->status != kPayPending || p->attempts != attempts || !p->by_link() || !p->link_deadline_at) return {};
    if (*p->link_deadline_at > s->clock(at))
      return retryable(bj::object{{"cycle", "its link's deadline has not passed on the subscription's clock"}});
    // The link is disabled in this unit unless a payment of it completed or is running: a payer
    // who commits first wins (the cycle then settles PAID), else nobody can pay it any more.
    SIKA_ASSIGN_OR_RETURN(bool closed, links::tables::close_unpaid(c, *p->payment_link_reference, at));
    if (!closed) {
      outcome = Lapse::running;
      return {};
    }
    if (s->status == kCancelled || s->status == kExpired) {
      // Kept open at the end for a payment that was running, which did not complete.
      SIKA_TRY(tables::cancel_open_payments(c, s->id, at));
      return {};
    }
    SIKA_ASSIGN_OR_RETURN(
        reminder,
        fail_into_dunning(c, *s, *p, kPayPending,
                          "LINK_UNPAID: the payment link was not paid by " + iso8601(*p->link_deadline_at), at));
    outcome = Lapse::failed;
    return {};
  }));
  if (s && reminder) remind_failed(*s, *reminder);
  if (outcome == Lapse::failed) wake_jobs();
  return outcome;
}

void Service::remind(const Subscription& s, const Payment& p, std::string_view tag, const std::string& text) {
  if (!notifier_) return;
  Status st = s.customer_phone
                  ? notifier_->send_sms(*s.customer_phone, text, std::string(tag))
                  : notifier_->send_email(s.customer_email, "Your subscription " + s.reference, text, std::string(tag));
  if (!st) spdlog::warn("billing: notification of {} ({}) not sent: {}", p.reference, tag, st.error().code);
}

void Service::start() {
  if (!settler_)
    settler_ = std::make_unique<Periodic>(
        "billing: settle", std::chrono::milliseconds(std::max<std::int64_t>(10, options_.settle_interval_ms)),
        [this]() -> Result<Pace> {
          SIKA_ASSIGN_OR_RETURN(int n, settle_due());
          return n >= options_.settle_batch ? Pace::busy : Pace::idle;
        });
  settler_->start();
}

void Service::stop() {
  if (settler_) settler_->stop();
}

}  // namespace sika::billing
