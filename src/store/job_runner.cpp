#include "store/job_runner.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <exception>
#include <limits>

#include "core/random.hpp"
#include "core/time.hpp"

namespace sika::store {

namespace {

std::string error_text(const Error& e) {
  if (e.details.is_null()) return e.code;
  return e.code + ": " +
         (e.details.is_string() ? std::string(e.details.as_string()) : boost::json::serialize(e.details));
}

}  // namespace

Status JobScope::commit(const std::function<Status(Conn&)>& fn) {
  if (committed_) return conflict(boost::json::object{{"job", job_.id}, {"commit", "already committed"}});
  const std::int64_t at = clock_();
  SIKA_TRY(db_.write([&](Conn& c) -> Status {
    // The lease first: a unit that lost it stops before doing any of the effect's work.
    SIKA_TRY(complete(c, job_.lease, at));
    return fn(c);
  }));
  committed_ = true;
  return {};
}

JobRunner::JobRunner(Db& db, JobRunnerOptions options) : db_(db), options_(std::move(options)) {
  if (options_.node_id.empty()) options_.node_id = make_node_id();
  options_.workers = std::max(1, options_.workers);
  options_.batch = std::max(1, options_.batch);
  options_.lease_ms = std::max<std::int64_t>(options_.lease_ms, 1'000);
  options_.poll_interval_ms = std::max<std::int64_t>(options_.poll_interval_ms, 1);
  if (!options_.clock) options_.clock = [] { return now_ms(); };
}

JobRunner::~JobRunner() { stop(); }

std::int64_t JobRunner::now() const { return options_.clock(); }

std::string JobRunner::next_owner() { return options_.node_id + "/" + std::to_string(++owner_seq_); }

void JobRunner::handle(std::string queue, JobHandler handler) {
  handlers_[std::move(queue)] = Handler{std::move(handler), {}, options_.batch};
}

void JobRunner::handle_pages(std::string queue, PageHandler handler, int page_size) {
  handlers_[std::move(queue)] = Handler{{}, std::move(handler), std::max(1, page_size)};
}

std::vector<std::string> JobRunner::queues() const {
  std::vector<std::string> out;
  for (const auto& [queue, handler] : handlers_) out.push_back(queue);
  return out;
}

std::int64_t JobRunner::retry_delay_ms(int failed_attempt) const {
  std::int64_t delay = options_.retry_base_ms;
  for (int i = 1; i < failed_attempt && delay < options_.retry_max_ms; ++i) delay *= 2;
  delay = std::min(delay, options_.retry_max_ms);
  const std::int64_t spread = delay * options_.jitter_percent / 100;
  if (spread <= 0) return delay;
  return delay - spread +
         static_cast<std::int64_t>(random_uniform(static_cast<std::uint32_t>(
             std::min<std::int64_t>(2 * spread + 1, std::numeric_limits<std::uint32_t>::max()))));
}

void JobRunner::start() {
  if (handlers_.empty() || !workers_.empty()) return;
  stopping_ = false;
  const auto poll = std::chrono::milliseconds(options_.poll_interval_ms);
  for (int i = 0; i < options_.workers; ++i) {
    workers_.push_back(
        std::make_unique<Periodic>("jobs: worker " + std::to_string(i + 1), poll, [this] { return work(); }));
  }
  heartbeat_ = std::make_unique<Periodic>("jobs: heartbeat", std::chrono::milliseconds(options_.lease_ms / 3),
                                          [this] { return beat(); });
  reaper_ = std::make_unique<Periodic>("jobs: reaper", std::chrono::milliseconds(options_.lease_ms / 2),
                                       [this] { return reap_dead(); });
  heartbeat_->start();
  reaper_->start();
  for (auto& w : workers_) w->start();
  spdlog::info("jobs: runner {} started ({} workers, {} queues, lease {} ms)", options_.node_id, options_.workers,
               handlers_.size(), options_.lease_ms);
}

void JobRunner::wake() {
  for (auto& w : workers_) w->wake();
}

void JobRunner::stop() {
  if (workers_.empty()) return;
  stopping_ = true;
  for (auto& w : workers_) w->stop();  // jobs in progress finish; unstarted ones are released
  workers_.clear();
  heartbeat_->stop();
  reaper_->stop();
  spdlog::info("jobs: runner {} stopped", options_.node_id);
}

Result<Pace> JobRunner::work() {
  if (handlers_.empty()) return Pace::idle;
  // Each tick starts at another queue, so one busy queue does not starve the others.
  const std::size_t first = next_queue_++ % handlers_.size();
  auto it = handlers_.begin();
  std::advance(it, static_cast<std::ptrdiff_t>(first));
  bool busy = false;
  for (std::size_t i = 0; i < handlers_.size(); ++i, ++it) {
    if (it == handlers_.end()) it = handlers_.begin();
    if (stopping_) break;
    SIKA_ASSIGN_OR_RETURN(int n, claim_and_run(it->first, it->second.claim, [this] { return !stopping_.load(); }));
    if (n >= it->second.claim) busy = true;
  }
  return busy ? Pace::busy : Pace::idle;
}

Result<int> JobRunner::claim_and_run(const std::string& queue, int n, const std::function<bool()>& keep_going) {
  SIKA_ASSIGN_OR_RETURN(auto jobs, claim(db_, queue, next_owner(), n, options_.lease_ms, now()));
  if (jobs.empty()) return 0;
  claimed_ += static_cast<std::int64_t>(jobs.size());
  {
    sika::MutexLock lock(held_mu_);
    for (const auto& j : jobs) held_[j.id] = j.lease;
  }
  const Handler& handler = handlers_.at(queue);
  auto forget = [this](const Job& job) {
    sika::MutexLock lock(held_mu_);
    held_.erase(job.id);
  };
  if (handler.page && keep_going()) {
    run_page(jobs, handler.page);
    for (const auto& job : jobs) forget(job);
    return static_cast<int>(jobs.size());
  }
  for (const auto& job : jobs) {
    if (keep_going()) {
      run(job, handler.one);
    } else if (auto st = release(db_, job.lease, now()); st) {
      ++released_;
    } else {
      spdlog::warn("jobs: could not give back job {} ({}); it runs again when its lease expires", job.id,
                   error_text(st.error()));
    }
    forget(job);
  }
  return static_cast<int>(jobs.size());
}

void JobRunner::run(const Job& job, const JobHandler& handler) {
  JobScope scope(db_, job, options_.clock);
  Status st;
  try {
    st = handler(job, scope);
  } catch (const std::exception& e) {
    st = internal_error(std::string("handler threw: ") + e.what());
  } catch (...) {
    st = internal_error("handler threw");
  }
  if (st && !scope.committed()) st = complete(db_, job.lease, now());
  if (st || scope.committed()) {
    ++completed_;
    return;
  }
  record_failure(job, st.error());
}

void JobRunner::run_page(const std::vector<Job>& jobs, const PageHandler& handler) {
  std::vector<Status> outcomes;
  try {
    outcomes = handler(jobs);
  } catch (const std::exception& e) {
    outcomes.assign(jobs.size(), internal_error(std::string("handler threw: ") + e.what()));
  } catch (...) {
    outcomes.assign(jobs.size(), internal_error("handler threw"));
  }
  if (outcomes.size() != jobs.size()) outcomes.assign(jobs.size(), internal_error("page handler lost count"));
  std::vector<const Job*> done;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (outcomes[i])
      done.push_back(&jobs[i]);
    else
      record_failure(jobs[i], outcomes[i].error());
  }
  if (done.empty()) return;
  // The page's completions in one unit; when one lease was lost meanwhile (the unit is then a
  // 409 and nothing of it remains), each is completed on its own so the others still count.
  const std::int64_t at = now();
  Status together = db_.write([&](Conn& c) -> Status {
    for (const Job* job : done) SIKA_TRY(complete(c, job->lease, at));
    return {};
  });
  if (together) {
    completed_ += static_cast<std::int64_t>(done.size());
    return;
  }
  for (const Job* job : done) {
    if (Status st = complete(db_, job->lease, at); st)
      ++completed_;
    else
      record_failure(*job, st.error());
  }
}

void JobRunner::record_failure(const Job& job, const Error& error) {
  ++failed_;
  const std::string why = error_text(error);
  const std::int64_t at = now();
  auto failed = fail(db_, job.lease, at + retry_delay_ms(job.attempt), why, at);
  if (!failed) {
    if (failed.error().is(ErrorKind::conflict)) {
      ++lost_;
      spdlog::warn("jobs: {} job {} ({}) was taken over by another node; its result here is dropped", job.queue, job.id,
                   job.key);
    } else {
      spdlog::warn("jobs: could not record the failure of {} job {}: {}", job.queue, job.id,
                   error_text(failed.error()));
    }
    return;
  }
  spdlog::warn("jobs: {} job {} ({}) attempt {}/{} failed: {}", job.queue, job.id, job.key, job.attempt,
               job.max_attempts, why);
}

Result<Pace> JobRunner::beat() {
  std::vector<JobLease> leases;
  {
    sika::MutexLock lock(held_mu_);
    for (const auto& [id, lease] : held_) leases.push_back(lease);
  }
  if (leases.empty()) return Pace::idle;
  SIKA_ASSIGN_OR_RETURN(auto held, heartbeat(db_, leases, options_.lease_ms, now()));
  if (held.size() < leases.size())
    spdlog::warn("jobs: {} of {} leases of {} were lost before their jobs finished", leases.size() - held.size(),
                 leases.size(), options_.node_id);
  return Pace::idle;
}

Result<Pace> JobRunner::reap_dead() {
  SIKA_ASSIGN_OR_RETURN(auto r, reap(db_, now()));
  if (r.requeued + r.dead > 0) {
    reaped_ += r.requeued + r.dead;
    spdlog::warn("jobs: {} jobs of stopped nodes made claimable again, {} dead", r.requeued, r.dead);
    if (r.requeued > 0) wake();
  }
  return Pace::idle;
}

Result<int> JobRunner::run_once() {
  SIKA_ASSIGN_OR_RETURN(auto r, reap(db_, now()));
  reaped_ += r.requeued + r.dead;
  int total = 0;
  for (const auto& [queue, handler] : handlers_) {
    for (;;) {
      SIKA_ASSIGN_OR_RETURN(int n, claim_and_run(queue, handler.claim, [] { return true; }));
      total += n;
      if (n < handler.claim) break;
    }
  }
  return total;
}

JobRunnerStats JobRunner::stats() const {
  return {claimed_.load(), completed_.load(), failed_.load(), lost_.load(), released_.load(), reaped_.load()};
}

}  // namespace sika::store
