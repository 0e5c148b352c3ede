#include "webhooks/service.hpp"

#include <boost/json.hpp>

#include "core/json.hpp"
#include "core/time.hpp"
#include "web/envelope.hpp"

namespace sika::webhooks {

namespace bj = boost::json;

Service::Service(store::Db& db, web::HttpClient& client, Options options) : db_(db) {
  RegistryOptions ro;
  ro.pepper = options.pepper;
  ro.allow_private_targets = options.allow_private_targets;
  ro.max_endpoints_per_merchant = options.max_endpoints_per_merchant;
  ro.secret_overlap_ms = options.secret_overlap_ms;
  registry_ = std::make_unique<Registry>(db_, std::move(ro));
  options.worker.allow_private_targets = options.allow_private_targets;
  worker_ = std::make_unique<Worker>(db_, client, *registry_, std::move(options.worker));
}

Service::~Service() { stop(); }

void Service::start() { worker_->start(); }
void Service::stop() { worker_->stop(); }

}  // namespace sika::webhooks
