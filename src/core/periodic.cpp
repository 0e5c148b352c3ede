#include "core/periodic.hpp"

#include <spdlog/spdlog.h>

#include <boost/json/serialize.hpp>
#include <exception>

namespace sika {

namespace {
constexpr auto kLogEvery = std::chrono::seconds(10);

std::string describe(const Error& e) {
  if (e.details.is_null()) return e.code;
  return e.code + ": " +
         (e.details.is_string() ? std::string(e.details.as_string()) : boost::json::serialize(e.details));
}
}  // namespace

Periodic::Periodic(std::string name, std::chrono::milliseconds interval, Tick tick,
                   std::chrono::milliseconds busy_pause)
    : name_(std::move(name)),
      interval_(std::max(interval, std::chrono::milliseconds(1))),
      busy_pause_(std::max(busy_pause, std::chrono::milliseconds(0))),
      tick_(std::move(tick)) {}

Periodic::~Periodic() { stop(); }

void Periodic::start() {
  sika::MutexLock lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  woken_ = false;
  running_ = true;
  thread_ = std::thread([this] { loop(); });
}

void Periodic::wake() {
  {
    sika::MutexLock lock(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

void Periodic::stop() {
  std::thread t;
  {
    sika::MutexLock lock(mu_);
    if (!thread_.joinable()) return;
    stopping_ = true;
    running_ = false;
    t = std::move(thread_);
  }
  if (t.get_id() == std::this_thread::get_id()) {
    t.detach();  // asked from a tick: the loop ends when the tick returns
    return;
  }
  cv_.notify_all();
  t.join();
}

bool Periodic::running() const {
  sika::MutexLock lock(mu_);
  return running_;
}

std::uint64_t Periodic::errors() const {
  sika::MutexLock lock(mu_);
  return errors_;
}

void Periodic::log_failure(const std::string& what) {
  std::uint64_t suppressed = 0;
  {
    sika::MutexLock lock(mu_);
    ++errors_;
    const auto now = std::chrono::steady_clock::now();
    if (last_log_ != std::chrono::steady_clock::time_point{} && now - last_log_ < kLogEvery) {
      ++unlogged_;
      return;
    }
    last_log_ = now;
    suppressed = unlogged_;
    unlogged_ = 0;
  }
  if (suppressed > 0)
    spdlog::warn("{}: {} (and {} earlier failures not logged)", name_, what, suppressed);
  else
    spdlog::warn("{}: {}", name_, what);
}

void Periodic::loop() {
  for (;;) {
    {
      sika::MutexLock lock(mu_);
      if (stopping_) return;
      woken_ = false;  // a wake during the tick below starts the next one at once
    }
    Pace pace = Pace::idle;
    try {
      auto r = tick_();
      if (r)
        pace = *r;
      else
        log_failure(describe(r.error()));
    } catch (const std::exception& e) {
      log_failure(std::string("tick threw: ") + e.what());
    } catch (...) {
      log_failure("tick threw a non-standard exception");
    }
    sika::UniqueLock lock(mu_);
    const auto wait = pace == Pace::busy ? busy_pause_ : interval_;
    if (wait.count() > 0) lock.wait_for(cv_, wait, [this]() REQUIRES(mu_) { return stopping_ || woken_; });
  }
}

}  // namespace sika
