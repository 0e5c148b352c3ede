#include "limits/limiter.hpp"

#include <spdlog/spdlog.h>
#include <boost/json.hpp>

#include <algorithm>
#include <memory>

#include "core/metrics.hpp"
#include "core/time.hpp"

namespace sika::limits {

namespace {
// The hit that makes the window's count reach this blocks the bucket (never, without a block).
std::int64_t block_threshold(const Policy& p) {
  if (p.block_ms <= 0) return INT64_MAX;
  return p.limit + std::max<std::int64_t>(1, p.block_after);
}

Decision decide(const Policy& p, std::int64_t count, std::int64_t window_start, std::int64_t blocked_until,
                std::int64_t t, bool counting) {
  Decision d;
  d.count = count;
  std::int64_t window_end = window_start + p.window_ms;
  bool over = counting ? count > p.limit : count >= p.limit;
  if (blocked_until > t) {
    d.allowed = false;
    d.retry_after_ms = blocked_until - t;
  } else if (over) {
    d.allowed = false;
    d.retry_after_ms = std::max<std::int64_t>(1, window_end - t);
  }
  return d;
}
}  // namespace

void count_refusal(const Policy& policy) {
  metrics::registry()
      .counter("sika_rate_limit_refusals_total", "Hits refused by a rate limiter",
               {{"limit", std::string(policy.name)}})
      .inc();
}

Limiter::Limiter(store::Db& db, Options options) : db_(db), opts_(std::move(options)) {}

Limiter::~Limiter() { stop(); }

std::int64_t Limiter::now() const { return opts_.clock ? opts_.clock() : now_ms(); }

Result<Decision> Limiter::hit(std::string_view bucket, const Policy& p) {
  if (p.limit <= 0) return Decision{};
  const std::int64_t t = now();
  const std::int64_t stale = t - p.window_ms;  // a window that started at or before this has ended
  std::int64_t count = 0, start = t, blocked = 0;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_TRY(store::counter_isolation(c));
    // Every SET expression reads the row as it was before this hit (both dialects), so the new
    // count appears once as `hits + 1` (or 1 for a new window) in the block condition too.
    SIKA_ASSIGN_OR_RETURN(
        auto row,
        c.query_one("INSERT INTO rate_limits (bucket, window_start, hits, blocked_until, expires_at) "
                    "VALUES (?, ?, 1, 0, ?) ON CONFLICT (bucket) DO UPDATE SET "
                    "hits = CASE WHEN rate_limits.window_start <= ? THEN 1 ELSE rate_limits.hits + 1 END, "
                    "window_start = CASE WHEN rate_limits.window_start <= ? THEN ? ELSE rate_limits.window_start END, "
                    "expires_at = CASE WHEN rate_limits.window_start <= ? THEN ? ELSE rate_limits.expires_at END, "
                    "blocked_until = CASE WHEN rate_limits.blocked_until > ? THEN rate_limits.blocked_until "
                    "WHEN (CASE WHEN rate_limits.window_start <= ? THEN 1 ELSE rate_limits.hits + 1 END) >= ? "
                    "THEN ? ELSE rate_limits.blocked_until END "
                    "RETURNING hits, window_start, blocked_until",
                    {std::string(bucket), t, t + p.window_ms,  // insert
                     stale,                                    // hits
                     stale, t,                                 // window_start
                     stale, t + p.window_ms,                   // expires_at
                     t, stale, block_threshold(p), t + p.block_ms}));
    if (!row) return internal_error(boost::json::string("rate limit upsert returned no row"));
    count = row->i64(0);
    start = row->i64(1);
    blocked = row->i64(2);
    return {};
  }));
  Decision d = decide(p, count, start, blocked, t, true);
  if (!d.allowed) count_refusal(p);
  return d;
}

namespace {
// The write unit of Limiter::reserve (see there); `g` is set afresh, the unit may run again.
Status reserve_in(store::Conn& c, const std::string& bucket, const Policy& p, std::int64_t want, bool counts_refusal,
                  std::int64_t t, Grant& g) {
  g = Grant{};
  const std::int64_t stale = t - p.window_ms;
  SIKA_TRY(store::counter_isolation(c));
  // First the row as of now (a new window when the last one has ended), locked on PostgreSQL by
  // the upsert until the unit commits, so the UPDATE below applies to exactly what was read.
  SIKA_ASSIGN_OR_RETURN(
      auto row,
      c.query_one("INSERT INTO rate_limits (bucket, window_start, hits, blocked_until, expires_at) "
                  "VALUES (?, ?, 0, 0, ?) ON CONFLICT (bucket) DO UPDATE SET "
                  "hits = CASE WHEN rate_limits.window_start <= ? THEN 0 ELSE rate_limits.hits END, "
                  "window_start = CASE WHEN rate_limits.window_start <= ? THEN ? ELSE rate_limits.window_start END, "
                  "expires_at = CASE WHEN rate_limits.window_start <= ? THEN ? ELSE rate_limits.expires_at END "
                  "RETURNING hits, window_start, blocked_until",
                  {bucket, t, t + p.window_ms, stale, stale, t, stale, t + p.window_ms}));
  if (!row) return internal_error(boost::json::string("rate limit reserve returned no row"));
  g.count = row->i64(0);
  g.window_start = row->i64(1);
  g.blocked_until = row->i64(2);
  if (g.blocked_until > t) return {};
  if (g.count < p.limit) {
    g.granted = std::min(want, p.limit - g.count);
    g.count += g.granted;
  } else {
    if (!counts_refusal) return {};
    g.count += 1;  // this call is a refused hit
    if (g.count >= block_threshold(p)) g.blocked_until = t + p.block_ms;
  }
  SIKA_TRY(c.exec("UPDATE rate_limits SET hits = ?, blocked_until = ? WHERE bucket = ?",
                  {g.count, g.blocked_until, bucket}));
  return {};
}
}  // namespace

Result<Grant> Limiter::reserve(std::string_view bucket, const Policy& p, std::int64_t want) {
  if (p.limit <= 0) return internal_error(boost::json::string("rate limit reserve needs a limited policy"));
  const std::string key(bucket);
  const std::int64_t t = now();
  Grant g;
  SIKA_TRY(
      db_.write([&](store::Conn& c) { return reserve_in(c, key, p, std::max<std::int64_t>(1, want), true, t, g); }));
  return g;
}

void Limiter::top_up(std::string bucket, const Policy& p, std::int64_t want, std::function<void(Result<Grant>)> done) {
  if (p.limit <= 0) {
    done(internal_error(boost::json::string("rate limit reserve needs a limited policy")));
    return;
  }
  auto g = std::make_shared<Grant>();
  const std::int64_t t = now();
  db_.write_async([g, bucket = std::move(bucket), p, want = std::max<std::int64_t>(1, want),
                   t](store::Conn& c) { return reserve_in(c, bucket, p, want, false, t, *g); },
                  [g, done = std::move(done)](Status st) {
                    if (!st) return done(st.take_error());
                    done(*g);
                  });
}

Status Limiter::give_back(std::string_view bucket, const Policy& p, std::int64_t window_start, std::int64_t unused) {
  if (unused <= 0 || p.limit <= 0) return {};
  return db_.write([&](store::Conn& c) -> Status {
    SIKA_TRY(store::counter_isolation(c));
    // The hits granted are min(hits, limit): past the limit, the count holds refusals only.
    SIKA_TRY(c.exec(
        "UPDATE rate_limits SET hits = CASE WHEN hits > ? THEN ? WHEN hits > ? THEN hits - ? ELSE 0 END "
        "WHERE bucket = ? AND window_start = ?",
        {p.limit, std::max<std::int64_t>(0, p.limit - unused), unused, unused, std::string(bucket), window_start}));
    return {};
  });
}

Result<Decision> Limiter::peek(std::string_view bucket, const Policy& p) {
  if (p.limit <= 0) return Decision{};
  const std::int64_t t = now();
  std::optional<store::Row> row;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(row, c.query_one("SELECT hits, window_start, blocked_until FROM rate_limits WHERE bucket = ?",
                                           {std::string(bucket)}));
    return {};
  }));
  if (!row) return Decision{};
  std::int64_t start = row->i64(1);
  std::int64_t count = start + p.window_ms <= t ? 0 : row->i64(0);
  return decide(p, count, start, row->i64(2), t, false);
}

Status Limiter::reset(std::string_view bucket) {
  return db_.write([&](store::Conn& c) -> Status {
    SIKA_TRY(c.exec("DELETE FROM rate_limits WHERE bucket = ?", {std::string(bucket)}));
    return {};
  });
}

Result<std::int64_t> Limiter::evict_expired(int batch) {
  batch = std::max(1, batch);
  std::int64_t total = 0;
  for (;;) {
    const std::int64_t t = now();
    std::int64_t deleted = 0;
    SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(deleted, c.exec("DELETE FROM rate_limits WHERE bucket IN (SELECT bucket FROM rate_limits "
                                            "WHERE expires_at <= ? AND blocked_until <= ? LIMIT ?)",
                                            {t, t, std::int64_t{batch}}));
      return {};
    }));
    total += deleted;
    if (deleted < batch) return total;
  }
}

void Limiter::start() {
  sika::MutexLock lock(mu_);
  if (sweeper_.joinable()) return;
  stopping_ = false;
  sweeper_ = std::thread([this] {
    sika::UniqueLock lock(mu_);
    while (!stopping_) {
      lock.wait_for(cv_, std::chrono::milliseconds(std::max<std::int64_t>(1, opts_.sweep_interval_ms)));
      if (stopping_) break;
      lock.unlock();
      auto evicted = evict_expired(opts_.sweep_batch);
      if (!evicted) spdlog::warn("rate limit sweep: {}", boost::json::serialize(evicted.error().details));
      lock.lock();
    }
  });
}

void Limiter::stop() {
  std::thread t;
  {
    sika::MutexLock lock(mu_);
    stopping_ = true;
    t.swap(sweeper_);
  }
  cv_.notify_all();
  if (t.joinable()) t.join();
}

Error refusal(const Decision& d, std::string_view what) {
  boost::json::object details;
  details["retry_after"] = std::max<std::int64_t>(1, (d.retry_after_ms + 999) / 1000);
  details["limit"] = what;
  return rate_limited(std::move(details));
}

}  // namespace sika::limits
