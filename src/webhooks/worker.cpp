#include "webhooks/worker.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>

#include "core/random.hpp"
#include "core/time.hpp"
#include "store/jobs.hpp"
#include "webhooks/signing.hpp"

namespace sika::webhooks {

namespace {

std::string error_text(const Error& e) {
  std::string text = e.code;
  if (e.details.is_string())
    text += ": " + std::string(e.details.as_string());
  else if (!e.details.is_null())
    text += ": " + boost::json::serialize(e.details);
  return sanitize_excerpt(text, 300);
}

}  // namespace

Worker::Worker(store::Db& db, web::HttpClient& client, const Registry& registry, WorkerOptions options)
    : db_(db), client_(client), registry_(registry), options_(std::move(options)) {
  if (options_.node_id.empty()) options_.node_id = store::make_node_id();
  if (options_.threads < 1) options_.threads = 1;
  if (options_.max_in_flight_per_endpoint < 1) options_.max_in_flight_per_endpoint = 1;
  const auto poll = std::chrono::milliseconds(std::max(1, options_.poll_interval_ms));
  fanout_ = std::make_unique<Periodic>("webhooks: fan-out", poll, [this] { return fan_out_tick(); });
  // A busy dispatcher pauses 1 ms so that a few completions accumulate and claims stay batched.
  dispatcher_ = std::make_unique<Periodic>(
      "webhooks: dispatcher", poll, [this] { return dispatch_tick(); }, std::chrono::milliseconds(1));
}

Worker::~Worker() { stop(); }

std::int64_t Worker::now() const { return options_.clock ? options_.clock() : now_ms(); }

std::string Worker::next_lease_owner() { return options_.node_id + "/" + std::to_string(++lease_seq_); }

RecordOptions Worker::record_options() const {
  RecordOptions r;
  r.schedule = options_.schedule;
  r.disable_after_ms = options_.disable_after_ms;
  r.worker = options_.node_id;
  return r;
}

AttemptResult Worker::send(const Claimed& d) const {
  AttemptResult r;
  r.delivery_row = d.delivery_row;
  r.endpoint_row = d.endpoint_row;
  r.lease_owner = d.lease_owner;
  r.attempt = d.attempt;
  r.started_at = now();
  const std::int64_t timestamp = r.started_at / 1000;
  const std::string body = delivery_body(d.event);
  auto keys = registry_.signing_keys(d.endpoint_id, d.secret_box, d.previous_secret_box, d.previous_secret_expires_at,
                                     r.started_at);
  if (keys.empty()) {
    // Only a changed server secret (pepper) causes this; retrying keeps the delivery alive
    // until the operator restores the right secret.
    r.finished_at = r.started_at;
    r.outcome = "signing_error";
    r.error = "the endpoint's signing secret cannot be opened with this server's secret key";
    return r;
  }
  web::ClientRequest req;
  req.method = "POST";
  req.url = d.url;
  req.body = body;
  req.connect_timeout_ms = options_.connect_timeout_ms;
  req.timeout_ms = options_.timeout_ms;
  req.max_response_bytes = options_.max_response_bytes;
  req.allow_private_addresses = options_.allow_private_targets;
  req.headers = {
      {"content-type", "application/json"},
      {"user-agent", options_.user_agent},
      {"webhook-id", d.event.event_id},
      {"webhook-timestamp", std::to_string(timestamp)},
      {"webhook-signature", signature_header(keys, d.event.event_id, timestamp, body)},
  };
  const auto t0 = std::chrono::steady_clock::now();
  auto res = client_.send(req);
  r.latency_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  r.finished_at = r.started_at + r.latency_ms;
  if (res) {
    r.status_code = res->status;
    r.response_excerpt = sanitize_excerpt(res->body, options_.excerpt_bytes);
    if (res->status >= 200 && res->status < 300)
      r.outcome = "succeeded";
    else if (res->status == 410)
      r.outcome = "gone";
    else
      r.outcome = "http_error";
  } else {
    const Error& e = res.error();
    if (e.is(ErrorKind::unavailable))
      r.outcome = "deferred";  // local back-pressure (host_busy), not an attempt
    else if (e.is(ErrorKind::forbidden))
      r.outcome = "blocked_address";
    else if (e.is(ErrorKind::upstream_timeout))
      r.outcome = "timeout";
    else
      r.outcome = "network_error";
    r.error = error_text(e);
  }
  return r;
}

Result<int> Worker::run_once(std::int64_t now) {
  FanoutOptions fo;
  fo.owner = options_.node_id;
  fo.batch = options_.fanout_batch;
  fo.gap_ttl_ms = options_.gap_ttl_ms;
  for (;;) {
    SIKA_ASSIGN_OR_RETURN(auto r, fan_out(db_, fo, now));
    if (!r.more) break;
  }
  ClaimOptions co;
  co.owner = next_lease_owner();
  co.limit = 100'000;
  co.per_endpoint = 100'000;
  co.lease_ms = options_.effective_lease_ms();
  SIKA_ASSIGN_OR_RETURN(auto claimed, claim(db_, co, now));
  std::vector<AttemptResult> results;
  for (const auto& d : claimed) results.push_back(send(d));
  SIKA_ASSIGN_OR_RETURN(auto rec, record(db_, results, record_options(), this->now()));
  (void)rec;
  attempts_ += static_cast<std::int64_t>(results.size());
  return static_cast<int>(results.size());
}

void Worker::start() {
  if (running_.exchange(true)) return;
  stopping_ = false;
  {
    sika::MutexLock lock(results_mu_);
    recorder_stop_ = false;
  }
  fanout_->start();
  dispatcher_->start();
  recorder_ = std::thread([this] { recorder_loop(); });
  for (int i = 0; i < options_.threads; ++i) senders_.emplace_back([this] { sender_loop(); });
  spdlog::info("webhooks: delivery worker {} started ({} senders, {} in flight per endpoint, retries {})",
               options_.node_id, options_.threads, options_.max_in_flight_per_endpoint, options_.schedule.describe());
}

void Worker::stop() {
  if (!running_) return;
  {
    sika::MutexLock lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  fanout_->stop();
  dispatcher_->stop();
  for (auto& t : senders_)
    if (t.joinable()) t.join();
  senders_.clear();
  std::vector<Claimed> unsent;
  {
    sika::MutexLock lock(mu_);
    unsent.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
    queue_.clear();
    local_.clear();
  }
  if (auto st = release(db_, unsent, now()); !st)
    spdlog::warn("webhooks: could not release {} claimed deliveries (they are due again when their lease ends): {}",
                 unsent.size(), st.error().code);
  {
    sika::MutexLock lock(results_mu_);
    recorder_stop_ = true;  // the recorder flushes and exits
  }
  results_cv_.notify_all();
  if (recorder_.joinable()) recorder_.join();
  running_ = false;
  spdlog::info("webhooks: delivery worker {} stopped", options_.node_id);
}

Result<Pace> Worker::fan_out_tick() {
  FanoutOptions fo;
  fo.owner = options_.node_id;
  fo.batch = options_.fanout_batch;
  fo.gap_ttl_ms = options_.gap_ttl_ms;
  fo.lease_ms = std::max<std::int64_t>(5'000, 10LL * options_.poll_interval_ms);
  auto r = fan_out(db_, fo, now());
  if (!r) {
    // A conflict: another node moved the cursor meanwhile, nothing to report; the rest is logged.
    if (r.error().is(ErrorKind::conflict)) return Pace::idle;
    return r.take_error();
  }
  if (r->deliveries > 0) dispatcher_->wake();
  return r->more ? Pace::busy : Pace::idle;
}

int Worker::allowance(std::int64_t endpoint, std::int64_t t) const {
  auto it = slow_until_.find(endpoint);
  return it != slow_until_.end() && it->second > t ? options_.max_in_flight_per_endpoint
                                                   : options_.effective_prefetch();
}

Result<Pace> Worker::dispatch_tick() {
  const int capacity = options_.effective_max_local();
  ClaimOptions co;
  int free_slots = 0;
  {
    sika::MutexLock lock(mu_);
    const std::int64_t t = now_ms();
    std::erase_if(slow_until_, [&](const auto& e) REQUIRES(mu_) { return e.second <= t && !local_.contains(e.first); });
    free_slots = capacity - static_cast<int>(queue_.size()) - in_flight_;
    for (const auto& [endpoint, n] : local_) {
      const int room = allowance(endpoint, t) - n;
      if (room <= 0)
        co.exclude_endpoints.push_back(endpoint);
      else
        co.endpoint_limits.emplace_back(endpoint, room);
    }
    for (const auto& [endpoint, until] : slow_until_)
      if (until > t && !local_.contains(endpoint))
        co.endpoint_limits.emplace_back(endpoint, options_.max_in_flight_per_endpoint);
  }
  if (free_slots <= 0) return Pace::idle;  // a sender wakes the dispatcher when capacity frees up
  co.owner = next_lease_owner();
  co.limit = std::min(free_slots, options_.claim_batch);
  co.per_endpoint = options_.effective_prefetch();
  co.after_endpoint = round_robin_;
  co.lease_ms = options_.effective_lease_ms();
  auto claimed = claim(db_, co, now());
  if (!claimed) {
    ++claim_errors_;
    return claimed.take_error();
  }
  if (claimed->empty()) return Pace::idle;
  claimed_ += static_cast<std::int64_t>(claimed->size());
  {
    sika::MutexLock lock(mu_);
    for (auto& d : *claimed) {
      ++local_[d.endpoint_row];
      round_robin_ = d.endpoint_row;
      queue_.push_back(std::move(d));
    }
  }
  work_cv_.notify_all();
  // Something was due: look again soon, there may be more.
  return Pace::busy;
}

void Worker::sender_loop() {
  const int cap = options_.max_in_flight_per_endpoint;
  const int capacity = options_.effective_max_local();
  for (;;) {
    Claimed d;
    {
      sika::UniqueLock lock(mu_);
      std::deque<Claimed>::iterator it;
      lock.wait(work_cv_, [&]() REQUIRES(mu_) {
        if (stopping_) return true;
        it = std::find_if(queue_.begin(), queue_.end(), [&](const Claimed& c) REQUIRES(mu_) {
          auto s = sending_.find(c.endpoint_row);
          return s == sending_.end() || s->second < cap;
        });
        return it != queue_.end();
      });
      if (stopping_) return;
      d = std::move(*it);
      queue_.erase(it);
      ++sending_[d.endpoint_row];
      ++in_flight_;
    }
    AttemptResult r = send(d);
    ++attempts_;
    if (r.outcome == "succeeded")
      ++succeeded_;
    else
      ++failed_attempts_;
    // An endpoint that hangs or cannot be reached is slow for a while: it keeps at most its
    // in-flight maximum here, and what was queued for it goes back to the database.
    const bool slow = r.outcome == "timeout" || r.outcome == "network_error" || r.outcome == "deferred" ||
                      r.latency_ms * 2 > options_.timeout_ms;
    std::vector<Claimed> give_back;
    {
      sika::MutexLock lock(results_mu_);
      results_.push_back(std::move(r));
    }
    results_cv_.notify_one();
    bool wake_dispatcher = false;
    {
      sika::MutexLock lock(mu_);
      const std::int64_t t = now_ms();
      if (slow) {
        slow_until_[d.endpoint_row] = t + options_.slow_ms;
        for (auto it = queue_.begin(); it != queue_.end();) {
          if (it->endpoint_row == d.endpoint_row) {
            give_back.push_back(std::move(*it));
            it = queue_.erase(it);
            --local_[d.endpoint_row];
          } else {
            ++it;
          }
        }
      }
      --in_flight_;
      if (--sending_[d.endpoint_row] <= 0) sending_.erase(d.endpoint_row);
      int& n = local_[d.endpoint_row];
      const int allowed = allowance(d.endpoint_row, t);
      const bool crossed = n >= allowed / 2 && n - 1 < allowed / 2;
      if (--n <= 0) local_.erase(d.endpoint_row);
      const int load = static_cast<int>(queue_.size()) + in_flight_;
      if (crossed || load <= capacity / 2) wake_dispatcher = true;
    }
    if (!give_back.empty()) {
      if (auto st = release(db_, give_back, now()); !st)
        spdlog::warn("webhooks: could not give back {} deliveries (due again when their lease ends): {}",
                     give_back.size(), error_text(st.error()));
    }
    // Another delivery of this endpoint may now be sendable.
    work_cv_.notify_one();
    if (wake_dispatcher) dispatcher_->wake();
  }
}

void Worker::recorder_loop() {
  const RecordOptions ro = record_options();
  std::int64_t backoff_ms = 100;
  for (;;) {
    std::vector<AttemptResult> batch;
    bool exiting = false;
    {
      sika::UniqueLock lock(results_mu_);
      lock.wait(results_cv_, [&]() REQUIRES(results_mu_) { return !results_.empty() || recorder_stop_; });
      exiting = recorder_stop_;
      if (results_.empty() && exiting) return;
      std::size_t n = std::min<std::size_t>(results_.size(), static_cast<std::size_t>(options_.record_batch));
      batch.assign(std::make_move_iterator(results_.begin()), std::make_move_iterator(results_.begin() + n));
      results_.erase(results_.begin(), results_.begin() + static_cast<std::ptrdiff_t>(n));
    }
    auto r = record(db_, batch, ro, now());
    if (r) {
      recorded_ += r->recorded;
      recorded_succeeded_ +=
          std::count_if(batch.begin(), batch.end(), [](const AttemptResult& a) { return a.outcome == "succeeded"; });
      backoff_ms = 100;
      for (auto row : r->disabled_endpoints) spdlog::warn("webhooks: endpoint row {} disabled", row);
      continue;
    }
    ++record_errors_;
    spdlog::warn("webhooks: recording {} attempts failed ({}); retrying", batch.size(), error_text(r.error()));
    if (exiting && backoff_ms > 3'000) {
      // At shutdown with the database gone: the leases expire and the deliveries are retried.
      spdlog::warn("webhooks: dropping {} unrecorded attempts at shutdown", batch.size());
      continue;
    }
    {
      sika::MutexLock lock(results_mu_);
      results_.insert(results_.begin(), std::make_move_iterator(batch.begin()), std::make_move_iterator(batch.end()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms = std::min<std::int64_t>(backoff_ms * 2, 5'000);
  }
}

WorkerStats Worker::stats() const {
  WorkerStats s;
  s.claimed = claimed_;
  s.attempts = attempts_;
  s.succeeded = succeeded_;
  s.failed_attempts = failed_attempts_;
  s.recorded = recorded_;
  s.recorded_succeeded = recorded_succeeded_;
  s.record_errors = record_errors_;
  s.claim_errors = claim_errors_;
  return s;
}

}  // namespace sika::webhooks
