#pragma once
// The one shape of a background loop: a thread that runs a tick, waits an interval (or less,
// when woken), and runs it again until stopped. Every background loop of `serve` is one of these,
// so they all stop the same way and none of them dies on an error.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "core/result.hpp"
#include "core/thread_annotations.hpp"

namespace sika {

// What a tick found: `idle` waits the full interval; `busy` (work was left behind) runs again
// after `busy_pause`.
enum class Pace { idle, busy };

class Periodic {
 public:
  using Tick = std::function<Result<Pace>()>;

  // `name` appears in the log. Nothing runs before start().
  Periodic(std::string name, std::chrono::milliseconds interval, Tick tick,
           std::chrono::milliseconds busy_pause = std::chrono::milliseconds(0));
  // Stops the thread.
  ~Periodic();
  Periodic(const Periodic&) = delete;
  Periodic& operator=(const Periodic&) = delete;

  // Starts the thread, whose first tick runs at once; no-op when running.
  void start();
  // Ends the current wait early: the next tick starts now (or right after the current one).
  void wake();
  // Asks the loop to end, waits for the tick in progress to finish, joins. No-op when stopped.
  // From inside a tick it only asks (the loop ends when the tick returns).
  void stop();
  // True from start() until stop() is asked; a tick may check it to end a long pass early.
  bool running() const;

  // Ticks that returned an error or threw (each is logged, at most one line per 10 s).
  std::uint64_t errors() const;

 private:
  void loop();
  void log_failure(const std::string& what);

  const std::string name_;
  const std::chrono::milliseconds interval_;
  const std::chrono::milliseconds busy_pause_;
  Tick tick_;

  mutable sika::Mutex mu_;
  std::condition_variable cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool woken_ GUARDED_BY(mu_) = false;
  bool running_ GUARDED_BY(mu_) = false;
  std::uint64_t errors_ GUARDED_BY(mu_) = 0;
  std::uint64_t unlogged_ GUARDED_BY(mu_) = 0;
  std::chrono::steady_clock::time_point last_log_ GUARDED_BY(mu_){};
  std::thread thread_ GUARDED_BY(mu_);
};

}  // namespace sika
