#pragma once
// Reading and changing the stored catalog. Every function runs inside the caller's read or write
// unit (store::Conn); every change bumps catalog_version in that same unit, which is how other
// nodes notice it (service.hpp).
//
// Entries are described by "records", JSON objects used alike by the admin CLI, the import file
// and the export (docs/catalog.md, "Records"), e.g.
//   {"code":"MTN_MOMO_CMR","name":"MTN Mobile Money","provider":"MTN","country":"CMR",
//    "kind":"mobile_money","needs_otp":false,"msisdn_pattern":"6\\d{8}","min_amount":100}
// Services and pricing rules name what they reference by code.
#include <boost/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "catalog/model.hpp"
#include "core/result.hpp"
#include "store/db.hpp"

namespace sika::catalog {

enum class Kind { country, provider, service, pricing_rule };
// "country", "provider", "service", "pricing_rule".
std::string_view to_string(Kind kind);

// How put() treats an existing entry with the record's code.
enum class Mode {
  create,          // refuse (409 conflict) when it exists; required fields must be given
  update,          // refuse (404 not_found) when absent; only the given fields change (null clears)
  upsert,          // create, or replace: the record is the whole truth (absent fields take defaults)
  create_missing,  // create when absent; leave an existing entry untouched
};

enum class Change { created, updated, unchanged };
std::string_view to_string(Change change);

struct Outcome {
  Change change = Change::unchanged;
  std::int64_t id = 0;
  std::string code;
};

// Reads the whole catalog as one snapshot (call inside one read unit for consistency).
Result<std::shared_ptr<const Catalog>> load_catalog(store::Conn& conn);
// The stored catalog_version.
Result<std::int64_t> read_version(store::Conn& conn);
// Increments catalog_version; part of every change's write unit.
Status bump_version(store::Conn& conn, std::int64_t now_ms);

// Validates `record` and creates/updates one entry. Bumps catalog_version iff something changed.
// Errors: 400 empty_data {field: problem} (an unknown field is a problem too); 404 not_found and
// 409 conflict per `mode`; a referenced code that does not exist is a 400 on that field.
Result<Outcome> put(store::Conn& conn, Kind kind, const boost::json::object& record, Mode mode, std::int64_t now_ms);

// Sets `active` of the entry with this code (404 when absent). Bumps catalog_version iff it changed.
Result<Outcome> set_active(store::Conn& conn, Kind kind, std::string_view code, bool active, std::int64_t now_ms);

struct ImportReport {
  struct Counts {
    std::int64_t created = 0, updated = 0, unchanged = 0;
  };
  Counts countries, providers, services, pricing_rules;
  bool changed() const;
  boost::json::object to_json() const;
};

// Applies a catalog document {"countries":[...], "providers":[...], "services":[...],
// "pricing_rules":[...]} (each key optional) in that order with `mode` (upsert or
// create_missing). All or nothing: the first invalid record fails the whole unit, its problems
// keyed by position, e.g. {"services[2].country": "unknown country"}.
Result<ImportReport> import_catalog(store::Conn& conn, const boost::json::value& document, Mode mode,
                                    std::int64_t now_ms);

// The records of a snapshot, in the import format (plus each entry's id), so that
// import(export(x)) changes nothing.
boost::json::object export_catalog(const Catalog& catalog);
boost::json::object to_record(const Catalog& catalog, const Country& country);
boost::json::object to_record(const Catalog& catalog, const Provider& provider);
boost::json::object to_record(const Catalog& catalog, const PaymentService& service);
boost::json::object to_record(const Catalog& catalog, const PricingRule& rule);

}  // namespace sika::catalog
