#include "catalog/service.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

#include "core/time.hpp"
#include "web/envelope.hpp"

namespace sika::catalog {

namespace bj = boost::json;

// ---- JSON shapes -----------------------------------------------------------------------------

bj::value service_reference(const Catalog& catalog, std::optional<std::int64_t> service_id) {
  if (!service_id) return nullptr;
  const PaymentService* s = catalog.service_by_id(*service_id);
  if (!s) return nullptr;
  const Country* c = catalog.country_by_id(s->country_id);
  return bj::object{{"id", s->id}, {"code", s->code}, {"country", c ? c->code : ""}, {"currency", s->currency}};
}

bj::object pricing_rule_json(const Catalog& catalog, const PricingRule& r) {
  auto opt_int = [](const std::optional<std::int64_t>& v) { return v ? bj::value(*v) : bj::value(nullptr); };
  auto opt_num = [](const std::optional<double>& v) { return v ? bj::value(*v) : bj::value(nullptr); };
  return bj::object{{"id", r.id},
                    {"min_amount", opt_int(r.min_amount)},
                    {"max_amount", opt_int(r.max_amount)},
                    {"operation", to_string(r.operation)},
                    {"user_tier", r.user_tier},
                    {"fee_value", r.fee_value()},
                    {"fee_type", to_string(r.fee_type)},
                    {"reward_value", opt_num(r.reward_value)},
                    {"sponsor_reward_value", opt_num(r.sponsor_reward_value)},
                    {"incoming_service", service_reference(catalog, r.incoming_service_id)},
                    {"outgoing_service", service_reference(catalog, r.outgoing_service_id)},
                    {"active", r.active}};
}

bj::object country_json(const Country& c, i18n::Locale locale) {
  return bj::object{{"id", c.id},
                    {"code", c.code},
                    {"name", c.name(locale)},
                    {"active", c.active},
                    {"alpha2", c.alpha2},
                    {"dialling_code", c.dialling_code},
                    {"currency", c.currency}};
}

bj::object service_json(const Catalog& catalog, const PaymentService& s) {
  const Provider* p = catalog.provider_by_id(s.provider_id);
  const Country* c = catalog.country_by_id(s.country_id);
  auto opt_int = [](const std::optional<std::int64_t>& v) { return v ? bj::value(*v) : bj::value(nullptr); };
  bj::object msisdn{{"dialling_code", c ? c->dialling_code : ""},
                    {"national_length", c ? c->msisdn_length : 0},
                    {"pattern", !s.msisdn_pattern.empty() ? s.msisdn_pattern : (c ? c->msisdn_pattern : "")}};
  return bj::object{
      {"id", s.id},
      {"code", s.code},
      {"name", s.name},
      {"kind", to_string(s.kind)},
      {"country", c ? c->code : ""},
      {"currency", s.currency},
      {"provider", p ? bj::value(bj::object{{"id", p->id}, {"code", p->code}, {"name", p->name}}) : bj::value(nullptr)},
      {"needs_otp", s.needs_otp},
      {"is_need_otp", s.needs_otp},
      {"otp_helper", s.needs_otp && !s.otp_helper.empty() ? bj::value(s.otp_helper) : bj::value(nullptr)},
      {"min_amount", opt_int(s.min_amount)},
      {"max_amount", opt_int(s.max_amount)},
      {"msisdn", std::move(msisdn)},
      {"active", s.active}};
}

// ---- snapshot and refresh --------------------------------------------------------------------

Service::Service(store::Db& db, Options options) : db_(db), options_(options) {
  if (options_.refresh_ms < 10) options_.refresh_ms = 10;
  current_.store(std::make_shared<const Catalog>());
  if (auto st = refresh(); !st) spdlog::warn("catalog: initial load failed: {}", bj::serialize(st.error().details));
}

Service::~Service() { stop(); }

std::shared_ptr<const Catalog> Service::snapshot() {
  std::shared_ptr<const Catalog> cat = current_.load();
  if (!cat->loaded()) {
    (void)refresh();
    cat = current_.load();
  }
  return cat;
}

Status Service::refresh() {
  sika::MutexLock lock(reload_mu_);
  std::shared_ptr<const Catalog> current = current_.load();
  std::shared_ptr<const Catalog> next;
  SIKA_TRY(db_.read([&](store::Conn& conn) -> Status {
    next.reset();
    SIKA_ASSIGN_OR_RETURN(std::int64_t version, read_version(conn));
    if (current->loaded() && version == current->version()) return {};
    SIKA_ASSIGN_OR_RETURN(next, load_catalog(conn));
    return {};
  }));
  if (next) {
    current_.store(next);
    spdlog::debug("catalog: version {} loaded ({} countries, {} services, {} pricing rules)", next->version(),
                  next->countries().size(), next->services().size(), next->rules().size());
  }
  return {};
}

void Service::start() {
  if (!poller_)
    poller_ = std::make_unique<Periodic>(
        "catalog: refresh", std::chrono::milliseconds(options_.refresh_ms), [this]() -> Result<Pace> {
          Status st = refresh();
          if (!st && !failing_) spdlog::warn("catalog: refresh failed, serving the last snapshot: {}", st.error().code);
          if (st && failing_) spdlog::info("catalog: refresh works again");
          failing_ = !st;
          return Pace::idle;
        });
  poller_->start();
}

void Service::stop() {
  if (poller_) poller_->stop();
}

Result<Outcome> Service::put(Kind kind, const bj::object& record, Mode mode) {
  Outcome outcome;
  SIKA_TRY(db_.write([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(outcome, catalog::put(conn, kind, record, mode, now_ms()));
    return {};
  }));
  (void)refresh();
  return outcome;
}

Result<Outcome> Service::set_active(Kind kind, std::string_view code, bool active) {
  Outcome outcome;
  SIKA_TRY(db_.write([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(outcome, catalog::set_active(conn, kind, code, active, now_ms()));
    return {};
  }));
  (void)refresh();
  return outcome;
}

Result<ImportReport> Service::import(const bj::value& document, Mode mode) {
  ImportReport report;
  SIKA_TRY(db_.write([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(report, import_catalog(conn, document, mode, now_ms()));
    return {};
  }));
  (void)refresh();
  return report;
}

std::optional<web::Response> Service::Memo::find(const std::shared_ptr<const Catalog>& snapshot,
                                                 const std::string& key) {
  sika::MutexLock lock(mu_);
  if (snapshot_ != snapshot) return std::nullopt;
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void Service::Memo::store(const std::shared_ptr<const Catalog>& snapshot, std::string key,
                          const web::Response& response) {
  sika::MutexLock lock(mu_);
  if (snapshot_ != snapshot) {
    // A response of an older snapshot is never stored over a newer one's entries.
    if (snapshot_ && snapshot->version() < snapshot_->version()) return;
    entries_.clear();
    snapshot_ = snapshot;
  }
  if (entries_.size() >= kMaxEntries) entries_.clear();
  entries_.emplace(std::move(key), response);
}

}  // namespace sika::catalog
