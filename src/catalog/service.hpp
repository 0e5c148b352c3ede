#pragma once
// The catalog service: keeps the current catalog snapshot in memory and answers the gateway's
// catalog routes from it (no database access per request).
//
// Freshness: a change made through this Service (put/set_active/import) is visible on this node
// as soon as the call returns. Every change bumps catalog_version in its own write unit; every
// node polls that counter every `refresh_ms` and reloads when it moved, so a change made anywhere
// (another node, `sika admin catalog ...`) is visible everywhere within refresh_ms plus one reload
// (a few ms), while the database is reachable. When it is not, nodes keep serving the last
// snapshot they loaded.
#include <boost/json.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "catalog/fees.hpp"
#include "catalog/model.hpp"
#include "catalog/store.hpp"
#include "core/periodic.hpp"
#include "core/thread_annotations.hpp"
#include "store/db.hpp"
#include "web/message.hpp"

namespace sika::web {
struct Page;
}

namespace sika::catalog {

struct Options {
  std::int64_t refresh_ms = 2000;  // catalog.refresh_ms: poll period of catalog_version
  // Operator health of a connector (OPERATIONAL | DELAYED | CLOSED), given by the application
  // (payments decides it): each provider of GET /provider/list carries its connector's as
  // `availability` (the sandbox connector's in the sandbox). Empty: OPERATIONAL.
  std::function<std::string(std::string_view connector)> availability;
};

class Service {
 public:
  // Loads the catalog once (a failure is retried by snapshot() and the poller).
  Service(store::Db& db, Options options);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // GET /country/list: page, limit. Non-admins see active countries only.
  web::Response list_countries(web::Request& req);
  // GET /pricing-rule/fees: country (required), service_code, incoming_service_code,
  // outgoing_service_code, operation, user_tier, page, limit.
  Result<web::Response> list_fees(web::Request& req);
  // GET /service/list: country, provider, kind, active, page, limit.
  web::Response list_services(web::Request& req);
  // GET /provider/list: country, provider, kind, active, page, limit.
  web::Response list_providers(web::Request& req);
  // GET /provider/predict: msisdn (required), country. The operator(s) the number's block is
  // assigned to (numbering.hpp) and the caller's usable services of them that take it.
  web::Response predict_provider(web::Request& req);

  // The current snapshot; never null. Loads it first if it was never loaded (then
  // snapshot()->loaded() tells whether that worked).
  std::shared_ptr<const Catalog> snapshot();

  // Reloads from the database when catalog_version differs from the snapshot's.
  Status refresh();

  // Starts / stops the catalog_version poller. stop() is idempotent; the destructor calls it.
  void start();
  void stop();

  // Changes applied in one write unit each, then visible on this node at once.
  Result<Outcome> put(Kind kind, const boost::json::object& record, Mode mode);
  Result<Outcome> set_active(Kind kind, std::string_view code, bool active);
  Result<ImportReport> import(const boost::json::value& document, Mode mode);

 private:
  // Successful list responses of the current snapshot, keyed by route and effective parameters:
  // such a body is a pure function of (snapshot, locale, admin, parameters), so repeated reads
  // cost a lookup. Emptied whenever the snapshot changes; bounded in size.
  class Memo {
   public:
    std::optional<web::Response> find(const std::shared_ptr<const Catalog>& snapshot, const std::string& key);
    void store(const std::shared_ptr<const Catalog>& snapshot, std::string key, const web::Response& response);
    // The list page `data` (of `total` items in all) as the success envelope, stored under `key`.
    web::Response answer(const web::Request& req, const std::shared_ptr<const Catalog>& snapshot, std::string key,
                         boost::json::array data, const web::Page& page, std::int64_t total);

   private:
    static constexpr std::size_t kMaxEntries = 2048;
    sika::Mutex mu_;
    std::shared_ptr<const Catalog> snapshot_ GUARDED_BY(mu_);
    std::unordered_map<std::string, web::Response> entries_ GUARDED_BY(mu_);
  };

  store::Db& db_;
  Options options_;
  std::atomic<std::shared_ptr<const Catalog>> current_;
  sika::Mutex reload_mu_;  // one refresh() at a time: its load-compare-store of current_ (read lock-free)
  Memo memo_;

  std::unique_ptr<Periodic> poller_;
  bool failing_ = false;  // poller only: the last refresh failed
};

// The spec's service reference {id, code, country, currency}, or null when id is empty/unknown.
boost::json::value service_reference(const Catalog& catalog, std::optional<std::int64_t> service_id);
// The spec's pricing rule (every field, plus `active`).
boost::json::object pricing_rule_json(const Catalog& catalog, const PricingRule& rule);
// The spec's country {id, code, name, active} plus alpha2, dialling_code and currency.
boost::json::object country_json(const Country& country, i18n::Locale locale);
boost::json::object service_json(const Catalog& catalog, const PaymentService& service);

}  // namespace sika::catalog
