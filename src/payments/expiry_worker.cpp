// The expiry worker: a thread that calls Service::expire_due every expiry_interval_ms, and
// the start/stop of the service's background work (it and the sandbox operator's deliveries).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "payments/service.hpp"

namespace sika::payments {

void Service::expiry_loop() {
  std::unique_lock lock(worker_mu_);
  while (!stopping_) {
    lock.unlock();
    auto r = expire_due();
    if (!r) spdlog::warn("payments expiry scan failed: {}", r.error().code);
    lock.lock();
    worker_cv_.wait_for(lock, std::chrono::milliseconds(std::max<std::int64_t>(10, options_.expiry_interval_ms)),
                        [this] { return stopping_; });
  }
}

void Service::start() {
  sandbox_->start();
  std::lock_guard lock(worker_mu_);
  if (expiry_thread_.joinable()) return;
  stopping_ = false;
  expiry_thread_ = std::thread([this] { expiry_loop(); });
}

void Service::stop() {
  {
    std::lock_guard lock(worker_mu_);
    stopping_ = true;
  }
  worker_cv_.notify_all();
  if (expiry_thread_.joinable()) expiry_thread_.join();
  if (sandbox_) sandbox_->stop();
}

}  // namespace sika::payments
