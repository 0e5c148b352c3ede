// The expiry worker: a Periodic loop (core/periodic.hpp) that calls Service::expire_due every
// expiry_interval_ms; the recovery loop, one that calls Service::recover_due every
// recovery_interval_ms (its first pass at start: what was PENDING before a restart is asked at
// once); and the start/stop of the service's background work (both and the sandbox operator's
// deliveries).
#include <algorithm>
#include <chrono>

#include "payments/service.hpp"

namespace sika::payments {

void Service::start() {
  sandbox_->start();
  if (!expiry_)
    expiry_ = std::make_unique<Periodic>(
        "payments: expiry", std::chrono::milliseconds(std::max<std::int64_t>(10, options_.expiry_interval_ms)),
        [this]() -> Result<Pace> {
          SIKA_ASSIGN_OR_RETURN(int expired, expire_due());
          // A full batch may have left more behind.
          return expired >= options_.expiry_batch ? Pace::busy : Pace::idle;
        });
  expiry_->start();
  if (!recovery_)
    recovery_ = std::make_unique<Periodic>(
        "payments: recovery", std::chrono::milliseconds(std::max<std::int64_t>(10, options_.recovery_interval_ms)),
        [this]() -> Result<Pace> {
          SIKA_ASSIGN_OR_RETURN(int asked, recover_due());
          return asked >= options_.recovery_batch ? Pace::busy : Pace::idle;
        });
  recovery_->start();
  if (!sender_)
    sender_ = std::make_unique<Periodic>(
        "payments: queued payouts",
        std::chrono::milliseconds(std::max<std::int64_t>(10, options_.payout_send_interval_ms)),
        [this]() -> Result<Pace> {
          SIKA_ASSIGN_OR_RETURN(int sent, send_queued());
          return sent >= options_.payout_send_batch ? Pace::busy : Pace::idle;
        });
  sender_->start();
}

void Service::stop() {
  if (sender_) sender_->stop();
  if (recovery_) recovery_->stop();
  if (expiry_) expiry_->stop();
  if (sandbox_) sandbox_->stop();
}

}  // namespace sika::payments
