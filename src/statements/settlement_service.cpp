// Settlement made usable (docs/settlement.md): the owner's settings, the operator's reserve, the
// scheduled periods as leased jobs, a settlement asked now, mobile-money batches paid out through
// the payout path and finished when their payout ends, the bank file of pending bank batches.
#include <spdlog/spdlog.h>
#include <boost/json.hpp>

#include "core/codes.hpp"
#include "core/crypto.hpp"
#include "core/json.hpp"
#include "core/random.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "core/time_zone.hpp"
#include "merchant/merchant.hpp"
#include "payments/service.hpp"
#include "statements/service.hpp"
#include "store/jobs.hpp"

namespace sika::statements {

namespace bj = boost::json;

std::int64_t Service::now() const { return options_.clock ? options_.clock() : now_ms(); }

Result<settlement::Settings> Service::put_settings(settlement::Settings s, std::int64_t at) {
  SIKA_TRY(settlement::check_settings(s));
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto existing, settlement::find_settings(c, s.merchant_id, s.environment, s.currency));
    s.reserve = existing ? existing->reserve : 0;  // operators set it, never the owner's form
    return settlement::put_settings(c, s, at);
  }));
  return s;
}

Status Service::set_reserve(std::int64_t merchant_id, const std::string& env, const std::string& currency,
                            std::int64_t reserve) {
  if (reserve < 0) return field_error("amount", Reason::zero_or_more_minor);
  const std::int64_t at = now();
  bool found = false;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(found, settlement::set_reserve(c, merchant_id, env, currency, reserve, at));
    return {};
  }));
  if (!found) return with_problem(not_found(), "currency", Reason::no_settlement_settings);
  return {};
}

namespace {

// The payout's own fee comes out of the settled sum: the largest amount whose amount + fee (what
// the payout takes from the available balance) fits in `net`. Fees grow with the amount, so a few
// steps down from net - fee(net) find it; what is left (a rounding of the fee) stays available.
Result<std::int64_t> payout_amount(payments::Service& payments, payments::IntentRequest r, const Acting& p,
                                   std::int64_t net) {
  std::int64_t amount = net;
  for (int step = 0; step < 8 && amount > 0; ++step) {
    r.amount = amount;
    SIKA_ASSIGN_OR_RETURN(payments::IntentPlan plan, payments.plan(r, p));
    if (plan.required_total <= net) return amount;
    amount -= std::max<std::int64_t>(1, plan.required_total - net);
  }
  return with_problem(bad_request("nothing_to_settle"), "amount", Reason::fee_takes_settlement);
}

}  // namespace

Status Service::pay_out(const settlement::Batch& b) {
  if (!payments_) return unavailable(bj::string("payouts are not configured"));
  std::optional<settlement::Settings> s;
  std::optional<merchant::Merchant> m;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(s, settlement::find_settings(c, b.merchant_id, b.environment, b.currency));
    SIKA_ASSIGN_OR_RETURN(m, merchant::find_by_id(c, b.merchant_id));
    return {};
  }));
  if (!s || !m) return internal_error(bj::string("a settlement batch without settings or merchant"));
  const Acting p =
      Acting::system(m->id, m->matricule, m->environment, "settlement:" + m->matricule, m->tier, m->countries);
  payments::IntentRequest r;
  r.operation = std::string(payments::kDisbursement);
  r.amount = b.net;
  r.currency = b.currency;
  r.transaction_uuid =
      crypto::uuid_from_name("settlement:" + b.reference);  // one payout per batch, whatever the retries
  r.provider = s->provider;
  r.customer_wallet = s->msisdn;
  r.description = "Settlement " + b.reference;
  const std::int64_t at = now();
  // A payout the plan refuses is refused as one the creation refuses (below).
  auto tx = [&]() -> Result<payments::Transaction> {
    SIKA_ASSIGN_OR_RETURN(r.amount, payout_amount(*payments_, r, p, b.net));
    return payments_->create_disbursement(r, p, [&](store::Conn& c, const payments::Transaction& t) -> Status {
      payments::ledger::Learned learned;
      return settlement::hand_to_payout(c, b, t.reference, at, learned);
    });
  }();
  if (tx) return {};
  const Error& e = tx.error();
  if (e.is(ErrorKind::unavailable) || e.is(ErrorKind::retryable) || e.is(ErrorKind::upstream_timeout) ||
      e.is(ErrorKind::internal))
    return tx.error();                                                           // tried again by watch_payouts
  if (e.is(ErrorKind::conflict) && e.is(codes::settlement_conflict)) return {};  // handed over already
  // Refused for good (a number or service the payout path refuses, funds short of the fee): the
  // batch fails and its money goes back to the available balance in one unit.
  spdlog::warn("settlement: payout of {} refused: {}", b.reference, e.code);
  payments::ledger::Learned learned;
  return db_.write([&](store::Conn& c) -> Status {
    learned.clear();
    SIKA_ASSIGN_OR_RETURN(bool failed, settlement::fail_batch(c, b.reference, /*reverse=*/true, now(), learned));
    (void)failed;
    return {};
  });
}

Result<std::optional<settlement::Batch>> Service::settle_and_pay(std::int64_t merchant_id, const std::string& env,
                                                                 const std::string& currency,
                                                                 const std::string& period) {
  std::optional<settlement::Settings> s;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(s, settlement::find_settings(c, merchant_id, env, currency));
    return {};
  }));
  if (!s) return with_problem(not_found(), "currency", Reason::no_settlement_settings);
  SIKA_ASSIGN_OR_RETURN(auto made, settle(*s, period, now()));
  if (made && made->destination == "MOBILE_MONEY") {
    if (auto paid = pay_out(*made); !paid)
      spdlog::warn("settlement: payout of {} not created yet: {}", made->reference, paid.error().code);
    SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(made, settlement::find_batch(c, made->reference));
      return {};
    }));
  }
  return made;
}

Result<settlement::Batch> Service::settle_now(std::int64_t merchant_id, const std::string& env,
                                              const std::string& currency) {
  SIKA_ASSIGN_OR_RETURN(auto made, settle_and_pay(merchant_id, env, currency, random_reference("R", 16)));
  if (!made)
    return with_problem(make_error(ErrorKind::conflict, "nothing_to_settle"), "amount", Reason::nothing_above_reserve);
  return std::move(*made);
}

Result<int> Service::schedule_due() {
  struct Due {
    std::int64_t merchant_id;
    std::string env, currency, period;
  };
  std::vector<Due> due;
  const std::int64_t at = now();
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT merchant_id, environment, currency, schedule, weekday FROM "
                                             "stl_settings WHERE schedule IN ('DAILY', 'WEEKLY') ORDER BY merchant_id",
                                             {}));
    for (const auto& r : rows) {
      SIKA_ASSIGN_OR_RETURN(auto m, merchant::find_by_id(c, r.i64(0)));
      if (!m || !m->active) continue;
      auto zone = tz::find(merchant::time_zone_of(*m));
      settlement::Settings s;
      s.schedule = r.str(3);
      s.weekday = static_cast<int>(r.i64(4));
      auto period = settlement::due_period(s, at, zone ? zone->offset_minutes : 0);
      if (period) due.push_back({r.i64(0), r.str(1), r.str(2), *period});
    }
    return {};
  }));
  int fresh = 0;
  for (const auto& d : due) {
    store::NewJob job;
    job.queue = std::string(kSettleQueue);
    job.key = std::to_string(d.merchant_id) + ":" + d.env + ":" + d.currency + ":" + d.period;
    job.payload = json::dump(bj::object{
        {"merchant_id", d.merchant_id}, {"environment", d.env}, {"currency", d.currency}, {"period", d.period}});
    SIKA_ASSIGN_OR_RETURN(bool made, store::enqueue(db_, job, at));
    if (made) ++fresh;
  }
  if (fresh > 0 && jobs_) jobs_->wake();
  return fresh;
}

void Service::register_jobs(store::JobRunner& runner) {
  jobs_ = &runner;
  runner.handle(std::string(kSettleQueue), [this](const store::Job& job, store::JobScope&) -> Status {
    auto v = json::parse(job.payload);
    if (!v || !v->is_object()) return internal_error(bj::string("a settle job without its payload"));
    const bj::object& o = v->as_object();
    const bj::value* mid = o.if_contains("merchant_id");
    auto str = [&](std::string_view k) {
      const bj::value* f = o.if_contains(k);
      return f && f->is_string() ? std::string(f->as_string()) : std::string();
    };
    if (!mid || !mid->is_int64()) return internal_error(bj::string("a settle job without its merchant"));
    // settle() is once per period by the batch's UNIQUE key: a job run twice makes one batch.
    auto made = settle_and_pay(mid->as_int64(), str("environment"), str("currency"), str("period"));
    if (!made && made.error().is(ErrorKind::not_found)) return {};  // settings removed since
    if (!made) return made.take_error();
    return {};
  });
}

Result<int> Service::watch_payouts() {
  std::vector<settlement::OpenPayout> open;
  const std::int64_t at = now();
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(open, settlement::open_payouts(c, at - options_.payout_retry_after_ms, 50));
    return {};
  }));
  int n = 0;
  for (const auto& o : open) {
    ++n;
    if (!o.batch.payout_reference) {
      if (auto st = pay_out(o.batch); !st)
        spdlog::warn("settlement: payout of {} not created yet: {}", o.batch.reference, st.error().code);
      continue;
    }
    payments::ledger::Learned learned;
    SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
      learned.clear();
      // Conditional on the batch still PENDING: a second node finishing it changes nothing.
      if (o.payout_status == "COMPLETED") {
        SIKA_ASSIGN_OR_RETURN(bool paid, settlement::paid_by_payout(c, o.batch.reference, at));
        (void)paid;
        return {};
      }
      SIKA_ASSIGN_OR_RETURN(bool failed, settlement::fail_batch(c, o.batch.reference, /*reverse=*/false, at, learned));
      (void)failed;
      return {};
    }));
  }
  return n;
}

Result<std::pair<std::string, std::size_t>> Service::bank_file(const std::string& env) {
  std::vector<settlement::BankTransfer> transfers;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(transfers, settlement::pending_bank_transfers(c, env));
    return {};
  }));
  const std::int64_t at = now();
  settlement::Debtor debtor{options_.debtor_name, options_.debtor_iban, options_.debtor_bic};
  const std::size_t count = transfers.size();
  return std::pair{settlement::pain001(debtor, transfers, random_reference("SKM-", 16), at), count};
}

void Service::start() {
  if (!scheduler_)
    scheduler_ = std::make_unique<Periodic>(
        "settlement: schedule", std::chrono::milliseconds(std::max<std::int64_t>(10, options_.settlement_interval_ms)),
        [this]() -> Result<Pace> {
          SIKA_ASSIGN_OR_RETURN(int n, schedule_due());
          (void)n;
          return Pace::idle;
        });
  if (!watcher_)
    watcher_ = std::make_unique<Periodic>(
        "settlement: payouts", std::chrono::milliseconds(std::max<std::int64_t>(10, options_.payout_watch_interval_ms)),
        [this]() -> Result<Pace> {
          SIKA_ASSIGN_OR_RETURN(int n, watch_payouts());
          return n >= 50 ? Pace::busy : Pace::idle;
        });
  scheduler_->start();
  watcher_->start();
}

void Service::stop() {
  if (scheduler_) scheduler_->stop();
  if (watcher_) watcher_->stop();
}

}  // namespace sika::statements
