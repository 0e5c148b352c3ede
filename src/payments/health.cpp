// Operator health: each node's window of its own calls, the shared rows of every node, and the
// operators' overrides (health.hpp; docs/payments.md, "Operator health").
#include "payments/health.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "core/time.hpp"
#include "store/jobs.hpp"

namespace sika::payments {

namespace {
// The node of an operator's override row.
constexpr std::string_view kForcedNode = "*";

bool is_error(OperatorCall::Outcome o) {
  return o == OperatorCall::Outcome::failed || o == OperatorCall::Outcome::timeout ||
         o == OperatorCall::Outcome::network;
}

// The nearest-rank percentile `p` (0..1) of sorted values; 0 when there are none.
std::int64_t percentile(const std::vector<std::int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}
}  // namespace

std::string_view to_string(Availability a) {
  switch (a) {
    case Availability::operational: return "OPERATIONAL";
    case Availability::delayed: return "DELAYED";
    case Availability::closed: return "CLOSED";
  }
  return "OPERATIONAL";
}

std::optional<Availability> availability_from(std::string_view text) {
  for (Availability a : {Availability::operational, Availability::delayed, Availability::closed})
    if (to_string(a) == text) return a;
  return std::nullopt;
}

Health::Health(store::Db& db, HealthOptions options) : db_(db), options_(std::move(options)) {
  if (options_.node_id.empty()) options_.node_id = store::make_node_id();
  options_.window_calls = std::max<std::size_t>(1, options_.window_calls);
  loop_ = std::make_unique<Periodic>("operator health",
                                     std::chrono::milliseconds(std::max<std::int64_t>(10, options_.publish_ms)),
                                     [this]() -> Result<Pace> {
                                       SIKA_TRY(refresh());
                                       return Pace::idle;
                                     });
}

Health::~Health() { stop(); }

void Health::start() { loop_->start(); }
void Health::stop() { loop_->stop(); }

std::int64_t Health::now() const { return options_.clock ? options_.clock() : now_ms(); }

Health::Summary Health::summarize(Window& w, std::string_view connector, std::int64_t at) const {
  while (!w.samples.empty() && w.samples.front().at < at - options_.window_ms) w.samples.pop_front();
  Summary s;
  std::vector<std::int64_t> latencies;
  latencies.reserve(w.samples.size());
  std::int64_t trailing = 0;  // the failures that end the window, one after the other
  for (const Sample& x : w.samples) {
    ++s.calls;
    latencies.push_back(x.latency_ms);
    if (x.error) {
      ++s.errors;
      ++trailing;
    } else {
      trailing = 0;
    }
  }
  std::sort(latencies.begin(), latencies.end());
  s.p50_ms = percentile(latencies, 0.5);
  s.p90_ms = percentile(latencies, 0.9);
  if (options_.unjudged.contains(connector)) return s;
  const bool enough = s.calls >= std::max<std::int64_t>(1, options_.min_calls);
  const double ratio = s.calls > 0 ? static_cast<double>(s.errors) / static_cast<double>(s.calls) : 0.0;
  if (trailing >= std::max<std::int64_t>(1, options_.closed_consecutive) ||
      (enough && ratio >= options_.closed_error_ratio))
    s.state = Availability::closed;
  else if (enough && (ratio >= options_.delayed_error_ratio || s.p90_ms > options_.delayed_p90_ms))
    s.state = Availability::delayed;
  return s;
}

void Health::decide(std::string_view connector, Window& w, std::int64_t at) {
  const Availability computed = summarize(w, connector, at).state;
  if (computed == w.local) {
    w.better_since = 0;
    return;
  }
  if (computed < w.local) {
    // Better: only once it has held for recover_ms.
    if (w.better_since == 0) w.better_since = at;
    if (at - w.better_since < options_.recover_ms) return;
  }
  spdlog::info("operator health: {} on node {} is {} (was {})", connector, options_.node_id, to_string(computed),
               to_string(w.local));
  w.local = computed;
  w.better_since = 0;
  w.changed_at = at;
}

void Health::settle(const std::string& connector, Shared next, std::int64_t at) {
  auto wit = windows_.find(connector);
  const Availability local = wit == windows_.end() ? Availability::operational : wit->second.local;
  next.state = next.forced ? *next.forced : std::max(local, next.others);
  auto [it, fresh] = shared_.try_emplace(connector);
  Shared& cur = it->second;
  next.changed_at = cur.changed_at;
  if (!fresh ? cur.state != next.state : next.state != Availability::operational) {
    spdlog::warn("operator health: {} is {} (was {}{})", connector, to_string(next.state), to_string(cur.state),
                 next.forced ? ", forced by " + next.forced_by : std::string());
    ++transitions_[{connector, std::string(to_string(next.state))}];
    next.changed_at = at;
  }
  cur = std::move(next);
}

void Health::observe(const OperatorCall& call) {
  const std::int64_t at = now();
  sika::MutexLock lock(mu_);
  Window& w = windows_[call.connector];
  w.samples.push_back(Sample{at, std::max<std::int64_t>(0, call.latency_ms), is_error(call.outcome)});
  while (w.samples.size() > options_.window_calls) w.samples.pop_front();
  decide(call.connector, w, at);
  auto it = shared_.find(call.connector);
  settle(call.connector, it == shared_.end() ? Shared{} : it->second, at);
}

Availability Health::state(std::string_view connector) const {
  sika::MutexLock lock(mu_);
  auto it = shared_.find(connector);
  return it == shared_.end() ? Availability::operational : it->second.state;
}

std::vector<ConnectorHealth> Health::snapshot() const {
  sika::MutexLock lock(mu_);
  std::vector<ConnectorHealth> out;
  for (const auto& [name, s] : shared_) {
    ConnectorHealth h;
    h.connector = name;
    h.state = s.state;
    auto w = windows_.find(name);
    h.local = w == windows_.end() ? Availability::operational : w->second.local;
    h.forced = s.forced;
    h.forced_by = s.forced_by;
    h.calls = s.calls;
    h.errors = s.errors;
    h.p50_ms = s.p50_ms;
    h.p90_ms = s.p90_ms;
    h.changed_at = s.changed_at;
    h.nodes = s.nodes;
    out.push_back(std::move(h));
  }
  return out;
}

std::map<std::pair<std::string, std::string>, std::uint64_t> Health::transitions() const {
  sika::MutexLock lock(mu_);
  return transitions_;
}

Status Health::force(std::string_view connector, std::optional<Availability> state, std::string_view by,
                     const std::function<Status(store::Conn&)>& also) {
  const std::int64_t at = now();
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    if (also) SIKA_TRY(also(c));
    if (!state) {
      SIKA_TRY(c.exec("DELETE FROM pay_operator_health WHERE connector = ? AND node = ?",
                      {std::string(connector), std::string(kForcedNode)}));
      return {};
    }
    SIKA_TRY(c.exec(
        "INSERT INTO pay_operator_health (connector, node, state, calls, errors, p50_ms, p90_ms, "
        "changed_at, updated_at, updated_by) VALUES (?, ?, ?, 0, 0, 0, 0, ?, ?, ?) "
        "ON CONFLICT (connector, node) DO UPDATE SET state = excluded.state, "
        "changed_at = excluded.changed_at, updated_at = excluded.updated_at, "
        "updated_by = excluded.updated_by",
        {std::string(connector), std::string(kForcedNode), std::string(to_string(*state)), at, at, std::string(by)}));
    return {};
  }));
  spdlog::warn("operator health: {} {} by {}", connector,
               state ? "forced " + std::string(to_string(*state)) : std::string("override cleared"), by);
  sika::MutexLock lock(mu_);
  auto it = shared_.find(connector);
  Shared next = it == shared_.end() ? Shared{} : it->second;
  next.forced = state;
  next.forced_by = state ? std::string(by) : std::string();
  settle(std::string(connector), std::move(next), at);
  return {};
}

Status Health::refresh() {
  const std::int64_t at = now();
  struct Published {
    std::string connector;
    Summary summary;
    Availability local;
    std::int64_t changed_at;
  };
  std::vector<Published> mine;
  {
    sika::MutexLock lock(mu_);
    for (auto& [name, w] : windows_) {
      decide(name, w, at);
      Summary s = summarize(w, name, at);
      mine.push_back(Published{name, s, w.local, w.changed_at});
    }
  }
  if (!mine.empty())
    SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
      for (const Published& p : mine)
        SIKA_TRY(
            c.exec("INSERT INTO pay_operator_health (connector, node, state, calls, errors, p50_ms, p90_ms, "
                   "changed_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                   "ON CONFLICT (connector, node) DO UPDATE SET state = excluded.state, "
                   "calls = excluded.calls, errors = excluded.errors, p50_ms = excluded.p50_ms, "
                   "p90_ms = excluded.p90_ms, changed_at = excluded.changed_at, updated_at = excluded.updated_at",
                   {p.connector, options_.node_id, std::string(to_string(p.local)), p.summary.calls, p.summary.errors,
                    p.summary.p50_ms, p.summary.p90_ms, p.changed_at, at}));
      return {};
    }));
  store::Rows rows;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(rows, c.query("SELECT connector, node, state, calls, errors, p50_ms, p90_ms, updated_by "
                                        "FROM pay_operator_health WHERE node = ? OR updated_at >= ?",
                                        {std::string(kForcedNode), at - options_.stale_ms}));
    return {};
  }));
  std::map<std::string, Shared, std::less<>> next;
  for (const store::Row& r : rows) {
    Shared& s = next[r.str(0)];
    const std::string node = r.str(1);
    const Availability state = availability_from(r.str(2)).value_or(Availability::operational);
    if (node == kForcedNode) {
      s.forced = state;
      s.forced_by = r.str(7);
      continue;
    }
    if (node != options_.node_id) s.others = std::max(s.others, state);
    ++s.nodes;
    s.calls += r.i64(3);
    s.errors += r.i64(4);
    s.p50_ms = std::max(s.p50_ms, r.i64(5));
    s.p90_ms = std::max(s.p90_ms, r.i64(6));
  }
  sika::MutexLock lock(mu_);
  for (const auto& [name, w] : windows_) next.try_emplace(name);
  for (const auto& [name, s] : shared_) next.try_emplace(name);
  for (auto& [name, s] : next) settle(name, std::move(s), at);
  return {};
}

}  // namespace sika::payments
