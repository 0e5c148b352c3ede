// Merchant operations on subscriptions: create (the consent link first), find, list, the
// moves (cancel, suspend, reactivate, expire) and the sandbox's test clock. The billing engine
// (charge, retry, settle, lapse) is in engine.cpp, the HTTP handlers in handlers.cpp, wallet
// mandates in mandate.cpp.
#include <spdlog/spdlog.h>

#include <boost/json.hpp>

#include "billing/service.hpp"
#include "core/random.hpp"
#include "core/time.hpp"
#include "links/store.hpp"
#include "store/outbox.hpp"

namespace sika::billing {

namespace bj = boost::json;

namespace {

// The test clock bills at most this many cycles and retries per call (ten years of a daily plan
// would otherwise hold the request for a long time); the rest follows through the jobs.
constexpr int kMaxCatchUp = 400;

Error subscription_not_found() { return not_found(bj::object{{"reference", "no such subscription"}}); }

// The subscription holding a merchant's idempotency key, if any.
Result<std::optional<Subscription>> by_key(store::Db& db, const Acting& merchant, std::string_view key) {
  std::optional<Subscription> found;
  SIKA_TRY(db.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(found, tables::by_idempotency_key(c, merchant.merchant_id, merchant.environment, key));
    return {};
  }));
  return found;
}

// A new ACTIVE subscription of `merchant` as `n` asks, anchored at `at` in `zone`, cycle 1 next.
Result<Subscription> draft(const Acting& merchant, const NewSubscription& n, const std::string& zone, std::int64_t at) {
  Subscription s;
  s.reference = random_reference("SUB-", 16);
  s.uuid = uuid_v4();
  s.merchant_id = merchant.merchant_id;
  s.merchant = merchant.merchant;
  s.environment = merchant.environment;
  s.user_tier = merchant.user_tier;
  s.idempotency_key = n.idempotency_key;
  s.request_hash = n.request_hash;
  s.customer_email = n.customer_email;
  s.customer_phone = n.customer_phone;
  s.amount = n.amount;
  s.currency = n.currency;
  s.frequency = n.frequency;
  s.time_zone = zone;
  s.description = n.description;
  s.metadata = n.metadata;
  s.status = std::string(kActive);
  s.end_at = n.end_at;
  s.max_cycles = n.max_cycles;
  s.anchor_at = s.subscribed_at = s.created_at = s.updated_at = at;
  s.next_cycle = 1;
  SIKA_ASSIGN_OR_RETURN(std::int64_t next_due, due_at(s.anchor_at, zone, s.frequency, 1));
  s.next_payment_at = next_due;
  return s;
}

// The single-use payment link of the first cycle: the customer's consent.
links::NewLink consent_link(const Subscription& s, const NewSubscription& n) {
  links::NewLink ln;
  ln.amount = n.amount;
  ln.currency = n.currency;
  ln.max_usage = 1;
  ln.title = "Subscription " + s.reference;
  ln.description = n.description.empty()
                       ? std::string("First payment of a ") + std::string(to_string(n.frequency)) + " subscription"
                       : n.description;
  ln.metadata = bj::serialize(bj::object{{"subscription_reference", s.reference}});
  return ln;
}

// The consent payment (cycle 0), PENDING until the customer pays `link`.
Payment first_payment(const Subscription& s, const links::Link& link) {
  Payment first;
  first.reference = random_reference("SPY-", 16);
  first.cycle = 0;
  first.amount = s.amount;
  first.currency = s.currency;
  first.status = std::string(kPayPending);
  first.due_at = s.anchor_at;
  first.payment_link_reference = link.reference;
  first.created_at = first.updated_at = s.created_at;
  return first;
}

// Inserts the subscription, its consent payment and its created event in one unit; the
// subscription that already holds the idempotency key instead (nothing written) when another
// request committed it first.
Result<std::optional<Subscription>> insert_created(store::Db& db, Subscription& s, Payment& first) {
  std::optional<Subscription> existing;
  SIKA_TRY(db.write([&](store::Conn& c) -> Status {
    existing.reset();
    SIKA_ASSIGN_OR_RETURN(auto keyed, tables::insert_or_fetch(c, s));
    if (!keyed.id) {
      // The same idempotency key committed first on another request.
      existing = std::move(keyed.stored);
      return {};
    }
    s.id = *keyed.id;
    first.subscription_id = *keyed.id;
    SIKA_ASSIGN_OR_RETURN(auto pid, tables::insert_payment(c, first));
    first.id = pid.value_or(0);
    SIKA_TRY(store::append_event(c, s.merchant_id, kEventCreated, s.reference, event_payload(s, &first), s.created_at));
    return {};
  }));
  return existing;
}

}  // namespace

Service::Service(store::Db& db, payments::Service& payments, links::Service& links, notify::Notifier* notifier,
                 Options options)
    : db_(db), payments_(payments), links_(links), notifier_(notifier), options_(std::move(options)) {}

Service::~Service() { stop(); }

std::int64_t Service::now() const { return options_.clock ? options_.clock() : now_ms(); }

void Service::wake_jobs() {
  if (jobs_) jobs_->wake();
}

Result<Acting> Service::merchant_of(const Subscription& s) {
  SIKA_ASSIGN_OR_RETURN(
      auto p, payments::acting_merchant(db_, s.merchant_id, s.environment, s.user_tier, "subscription:" + s.reference));
  if (!p) return unavailable(bj::object{{"merchant", "the subscription's merchant is not active"}});
  return std::move(*p);
}

Result<Service::Created> Service::replayed(const Subscription& found, std::string_view request_hash) {
  SIKA_TRY(store::same_request(tables::kIdempotencyKey, request_hash, {found.request_hash, found.reference}));
  Created out;
  out.subscription = found;
  out.replayed = true;
  SIKA_ASSIGN_OR_RETURN(auto page, list_payments(found, kLatestPayments, 0));
  out.payments = std::move(page.first);
  return out;
}

Result<Service::Created> Service::create(const Acting& merchant, NewSubscription n, json::FieldErrors errors) {
  if (merchant.merchant_id == 0) return forbidden(bj::string("this credential is not bound to a merchant"));
  SIKA_TRY(errors.status());
  if (n.idempotency_key) {
    SIKA_ASSIGN_OR_RETURN(auto found, by_key(db_, merchant, *n.idempotency_key));
    if (found) return replayed(*found, n.request_hash);
  }
  SIKA_ASSIGN_OR_RETURN(Subscription s, draft(merchant, n, n.time_zone.value_or(options_.default_time_zone), now()));
  // The consent: a single-use link for the first cycle. Creating it also checks that the
  // currency is one this merchant may collect in (400 naming currency otherwise).
  SIKA_ASSIGN_OR_RETURN(links::Link link, links_.create_link(merchant, consent_link(s, n)));
  Payment first = first_payment(s, link);
  SIKA_ASSIGN_OR_RETURN(auto existing, insert_created(db_, s, first));
  if (existing) {
    (void)links_.set_status(merchant, link.reference, links::kDisabled);  // the link nobody will use
    return replayed(*existing, n.request_hash);
  }
  Created out;
  out.subscription = s;
  out.payments = {first};
  out.payment_url = links_.payment_url(link);
  remind(s, first, "billing:consent",
         "Please approve your subscription (" + label(s) + ", " + amount_text(s) + " " +
             std::string(to_string(s.frequency)) + "): pay the first " + amount_text(s) + " at " + out.payment_url);
  return out;
}

Result<Subscription> Service::find(const Acting& merchant, std::string_view reference) {
  std::optional<Subscription> found;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(found, tables::by_reference(c, merchant.merchant_id, merchant.environment, reference));
    return {};
  }));
  if (!found) return subscription_not_found();
  return std::move(*found);
}

Result<std::pair<std::vector<Subscription>, std::int64_t>> Service::list_subscriptions(
    const Acting& merchant, const tables::ListFilter& filter) {
  std::pair<std::vector<Subscription>, std::int64_t> out;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(out, tables::list(c, merchant.merchant_id, merchant.environment, filter));
    return {};
  }));
  return out;
}

Result<std::pair<std::vector<Payment>, std::int64_t>> Service::list_payments(const Subscription& s, std::int64_t limit,
                                                                             std::int64_t offset) {
  std::pair<std::vector<Payment>, std::int64_t> out;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(out, tables::payments_of(c, s.id, limit, offset));
    return {};
  }));
  return out;
}

Result<bool> Service::move(store::Conn& c, const Subscription& s, Move m, const std::optional<std::string>& reason,
                           std::int64_t at) {
  auto text = next_status(s.status, m);
  if (!text) return false;
  const SubStatus to = *kSubscriptionStatus.parse(*text);
  store::Effects effects;
  if (to == SubStatus::cancelled || to == SubStatus::expired)
    effects.then = [&](store::Conn& conn) { return end_payments(conn, s, at); };
  effects.event = [&](store::Conn& conn) -> Result<store::Event> {
    SIKA_ASSIGN_OR_RETURN(auto after, tables::by_id(conn, s.id));
    if (!after) return internal_error(bj::string("subscription vanished inside its unit"));
    return store::Event{s.merchant_id, s.reference, event_payload(*after, nullptr), at};
  };
  // The move's timestamp is on the subscription's clock (the sandbox test clock), like its payments.
  return tables::move_status(c, s, m, to, reason, s.clock(at), at, effects);
}

Result<store::Event> Service::payment_event(store::Conn& c, std::int64_t subscription_id, std::int64_t cycle,
                                            std::int64_t at) {
  SIKA_ASSIGN_OR_RETURN(auto s, tables::by_id(c, subscription_id));
  if (!s) return internal_error(bj::string("subscription payment vanished inside its unit"));
  SIKA_ASSIGN_OR_RETURN(auto p, tables::payment_of(c, subscription_id, cycle));
  if (!p) return internal_error(bj::string("subscription payment vanished inside its unit"));
  return store::Event{s->merchant_id, s->reference, event_payload(*s, &*p), at};
}

Status Service::end_payments(store::Conn& c, const Subscription& s, std::int64_t at) {
  // The links still waiting for a payment can no longer be paid; one being paid right now
  // keeps its link open and settles as it ends (the cycle stays PENDING for it).
  SIKA_ASSIGN_OR_RETURN(auto linked, tables::open_link_payments(c, s.id));
  std::vector<std::int64_t> paying;
  for (const auto& p : linked) {
    SIKA_ASSIGN_OR_RETURN(bool closed, links::tables::close_unpaid(c, *p.payment_link_reference, at));
    if (!closed) paying.push_back(p.id);
  }
  SIKA_TRY(tables::cancel_open_payments(c, s.id, at, paying));
  // Nothing is debited from the wallet after the subscription ends.
  SIKA_TRY(tables::revoke_mandate(c, s.id, "merchant", at, mandate_effects(s.id, at)));
  return {};
}

Status Service::enqueue_charge(store::Conn& c, const Subscription& s, std::int64_t cycle, std::int64_t epoch,
                               std::int64_t at) {
  SIKA_ASSIGN_OR_RETURN(std::int64_t due, due_at(s.anchor_at, s.time_zone, s.frequency, cycle));
  store::NewJob job;
  job.queue = std::string(kChargeQueue);
  job.key = s.reference + ":" + std::to_string(cycle) + ":e" + std::to_string(epoch);
  job.payload = bj::serialize(bj::object{{"subscription_id", s.id}, {"cycle", cycle}, {"epoch", epoch}});
  job.run_at = due - s.clock_offset_ms;  // the subscription's clock may run ahead (sandbox test clock)
  SIKA_TRY(store::enqueue(c, job, at));
  return {};
}

Result<Subscription> Service::apply(const Acting& merchant, std::string_view reference, Move m,
                                    const MoveRequest& request) {
  SIKA_ASSIGN_OR_RETURN(Subscription s, find(merchant, reference));
  if (request.uuid && *request.uuid != s.uuid)
    return empty_data(bj::object{{"uuid", "is not the uuid of this subscription"}});
  const std::int64_t at = now();
  std::vector<Payment> overdue, relink;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    overdue.clear();
    relink.clear();
    SIKA_ASSIGN_OR_RETURN(auto current, tables::by_id(c, s.id));
    if (!current) return subscription_not_found();
    if (m == Move::cancel && request.at_period_end) {
      SIKA_ASSIGN_OR_RETURN(bool marked, tables::cancel_at_period_end(c, s.id, request.reason, current->clock(at), at));
      if (!marked)
        return conflict(
            bj::object{{"status", current->cancel_at_period_end
                                      ? std::string("the subscription is already set to end at its period's end")
                                      : "a " + current->status + " subscription cannot be cancelled at period end"}});
      return {};
    }
    SIKA_ASSIGN_OR_RETURN(bool moved, move(c, *current, m, request.reason, at));
    if (!moved)
      return conflict(bj::object{{"status", "a " + current->status + " subscription cannot be " +
                                                (m == Move::cancel    ? std::string("cancelled")
                                                 : m == Move::suspend ? std::string("suspended")
                                                 : m == Move::expire  ? std::string("expired")
                                                                      : std::string("reactivated"))}});
    if (m != Move::reactivate) return {};
    // Reactivation collects what is overdue first: its failed cycles are asked for again at
    // once, then billing resumes with the next cycle (due now when it fell due meanwhile).
    SIKA_ASSIGN_OR_RETURN(auto failed, tables::overdue_payments(c, s.id));
    for (auto& p : failed) {
      if (p.status == kPayPending) {
        overdue.push_back(p);  // a retry a suspension stopped before it asked
        continue;
      }
      if (p.by_link()) {
        relink.push_back(p);  // a new link for the cycle, sent once the move committed
        continue;
      }
      SIKA_ASSIGN_OR_RETURN(bool reopened, tables::reopen(c, p.id, p.attempts, at));
      if (reopened) {
        p.status = std::string(kPayPending);
        overdue.push_back(p);
      }
    }
    if (current->payer_wallet) SIKA_TRY(enqueue_charge(c, *current, current->next_cycle, current->epoch + 1, at));
    return {};
  }));
  SIKA_ASSIGN_OR_RETURN(Subscription after, find(merchant, reference));
  for (const auto& p : overdue) {
    if (auto st = push(after, p); !st)
      spdlog::warn("billing: overdue {} of {}: {}", p.reference, after.reference, st.error().code);
  }
  for (const auto& p : relink) {
    if (auto st = send_new_link(after, p); !st)
      spdlog::warn("billing: overdue {} of {}: {}", p.reference, after.reference, st.error().code);
  }
  wake_jobs();
  return after;
}

Result<Subscription> Service::advance(const Acting& merchant, std::string_view reference, std::int64_t delta_ms,
                                      const std::optional<std::string>& payer_wallet) {
  SIKA_ASSIGN_OR_RETURN(Subscription s, find(merchant, reference));
  if (s.environment != "sandbox")
    return forbidden(bj::object{{"reference", "the test clock is for sandbox subscriptions only"}});
  if (payer_wallet && !s.payer_wallet)
    return conflict(bj::object{{"payer_phone_number", "the consent payment has not taught a payer yet"}});
  SIKA_TRY(db_.write(
      [&](store::Conn& c) -> Status { return tables::advance_clock(c, s.id, delta_ms, payer_wallet, now()); }));
  // Bill what fell due on the subscription's new clock, in order: the retries of failed
  // cycles, then the cycles themselves (each one once, by the same code the jobs run).
  for (int round = 0; round < kMaxCatchUp; ++round) {
    SIKA_ASSIGN_OR_RETURN(s, find(merchant, reference));
    if (s.status != kActive) break;
    const std::int64_t clock = s.clock(now());
    std::vector<Payment> retries, lapsing;
    SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(lapsing, tables::link_deadlines_due(c, s.id, clock));
      SIKA_ASSIGN_OR_RETURN(retries, tables::retries_due(c, s.id, clock));
      return {};
    }));
    bool lapsed = false;
    for (const auto& p : lapsing) {
      SIKA_ASSIGN_OR_RETURN(Lapse outcome, lapse_link(s.id, p.cycle, p.attempts));
      lapsed = lapsed || outcome == Lapse::failed;
    }
    for (const auto& p : retries) SIKA_TRY(retry(s.id, p.cycle, p.attempts));
    bool charged = false;
    if (s.payer_wallet && s.next_payment_at && *s.next_payment_at <= clock) {
      SIKA_TRY(charge(s.id, s.next_cycle, s.epoch));
      charged = true;
    }
    if (retries.empty() && !charged && !lapsed) break;
  }
  wake_jobs();
  return find(merchant, reference);
}

}  // namespace sika::billing
