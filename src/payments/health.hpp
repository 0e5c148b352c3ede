#pragma once
// Operator health (docs/payments.md, "Operator health"): per connector, the outcomes and latencies
// of its recent operator calls decide OPERATIONAL, DELAYED or CLOSED.
//  - Each node keeps a sliding window of its own calls per connector (the last window_calls calls
//    of the last window_ms) and decides a local state from it:
//      CLOSED   when the last closed_consecutive calls of the window all failed (failed, timeout,
//               network), or at least min_calls calls of which closed_error_ratio or more failed;
//      DELAYED  when at least min_calls calls of which delayed_error_ratio or more failed, or
//               whose p90 latency is above delayed_p90_ms;
//      OPERATIONAL otherwise (no calls in the window is no evidence: OPERATIONAL).
//    A refusal (the operator answered and said no) is an answer, not an error. A worse state is
//    taken at once; a better one only once it has held for recover_ms (hysteresis), so a
//    connector does not flap, and an operator that stays silent is tried again after
//    window_ms + recover_ms (its failures leave the window).
//  - Several nodes share one database: each publishes its window's summary per connector to
//    pay_operator_health (connector, node) every publish_ms; the state every node uses is the
//    worst of its own and of the other nodes' rows updated within stale_ms (a node that stopped
//    publishing stops counting).
//  - An operator may force a connector's state (a route closed for an announced maintenance): the
//    row (connector, node '*') overrides every computed state until it is cleared.
//  - Unjudged connectors (the sandbox) are recorded but never decide their state: they are
//    OPERATIONAL unless forced.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/periodic.hpp"
#include "core/result.hpp"
#include "core/thread_annotations.hpp"
#include "payments/operator_calls.hpp"
#include "store/db.hpp"

namespace sika::payments {

// Ordered from best to worst.
enum class Availability { operational = 0, delayed = 1, closed = 2 };
std::string_view to_string(Availability a);  // OPERATIONAL | DELAYED | CLOSED
std::optional<Availability> availability_from(std::string_view text);

struct HealthOptions {
  std::int64_t window_ms = 60'000;       // payments.health_window_seconds
  std::size_t window_calls = 200;        // at most this many recent calls per connector
  std::int64_t min_calls = 5;            // payments.health_min_calls: fewer calls decide no ratio
  double delayed_error_ratio = 0.2;      // payments.health_delayed_error_percent
  std::int64_t delayed_p90_ms = 10'000;  // payments.health_delayed_p90_ms
  double closed_error_ratio = 0.5;       // payments.health_closed_error_percent
  std::int64_t closed_consecutive = 5;   // payments.health_closed_consecutive
  std::int64_t recover_ms = 30'000;      // payments.health_recover_seconds: a better state must hold this long
  std::int64_t publish_ms = 1'000;       // how often the summary is published and the others' read
  std::int64_t stale_ms = 10'000;        // a node's row older than this is ignored
  std::set<std::string, std::less<>> unjudged = {"sandbox"};
  std::string node_id;                  // store::make_node_id() when empty
  std::function<std::int64_t()> clock;  // epoch ms; now_ms() when empty
};

// What the dashboard shows of a connector.
struct ConnectorHealth {
  std::string connector;
  Availability state = Availability::operational;  // the state every node uses
  Availability local = Availability::operational;  // this node's own window
  std::optional<Availability> forced;              // an operator's override
  std::string forced_by;
  std::int64_t calls = 0, errors = 0;   // every fresh node's window
  std::int64_t p50_ms = 0, p90_ms = 0;  // the worst of the fresh nodes'
  std::int64_t changed_at = 0;          // when `state` last changed (as this node saw it), 0 never
  std::int64_t nodes = 0;               // nodes with a fresh row
};

class Health {
 public:
  Health(store::Db& db, HealthOptions options);
  ~Health();
  Health(const Health&) = delete;
  Health& operator=(const Health&) = delete;

  // A call's outcome and latency, into this node's window (memory only: never waits on I/O).
  void observe(const OperatorCall& call);
  // The state every node uses for `connector` (OPERATIONAL when nothing is known). Cheap.
  Availability state(std::string_view connector) const;
  // Every connector known here (observed, published or forced), by name.
  std::vector<ConnectorHealth> snapshot() const;
  // Forces `connector` to `state` (nullopt clears the override) for every node; takes effect here
  // at once, on the others at their next refresh (publish_ms).
  // `also` (when set) runs in the same write unit (the dashboard's audit entry).
  Status force(std::string_view connector, std::optional<Availability> state, std::string_view by,
               const std::function<Status(store::Conn&)>& also = {});
  // Publishes this node's summaries and reads the shared rows: what the loop runs.
  Status refresh();
  // State changes as this node saw them, per (connector, state entered).
  std::map<std::pair<std::string, std::string>, std::uint64_t> transitions() const;

  void start();
  void stop();

 private:
  struct Sample {
    std::int64_t at = 0, latency_ms = 0;
    bool error = false;
  };
  struct Window {
    std::deque<Sample> samples;
    Availability local = Availability::operational;
    std::int64_t better_since = 0;  // when the computed state first was better than `local`, 0 none
    std::int64_t changed_at = 0;    // when `local` last changed
  };
  struct Summary {
    Availability state = Availability::operational;
    std::int64_t calls = 0, errors = 0, p50_ms = 0, p90_ms = 0;
  };
  struct Shared {
    Availability state = Availability::operational;   // the one used: forced, else worst of local and others
    Availability others = Availability::operational;  // the worst of the other nodes' fresh rows
    std::optional<Availability> forced;
    std::string forced_by;
    std::int64_t calls = 0, errors = 0, p50_ms = 0, p90_ms = 0, nodes = 0, changed_at = 0;
  };
  std::int64_t now() const;
  Summary summarize(Window& w, std::string_view connector, std::int64_t at) const;
  // Re-decides this node's state of `connector` at `at` (hysteresis applied).
  void decide(std::string_view connector, Window& w, std::int64_t at) REQUIRES(mu_);
  // Sets the used state of `connector`, logging and counting a change.
  void settle(const std::string& connector, Shared next, std::int64_t at) REQUIRES(mu_);

  store::Db& db_;
  HealthOptions options_;
  mutable sika::Mutex mu_;
  std::map<std::string, Window, std::less<>> windows_ GUARDED_BY(mu_);
  std::map<std::string, Shared, std::less<>> shared_ GUARDED_BY(mu_);
  std::map<std::pair<std::string, std::string>, std::uint64_t> transitions_ GUARDED_BY(mu_);
  std::unique_ptr<Periodic> loop_;
};

}  // namespace sika::payments
