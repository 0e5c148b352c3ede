// The demo catalog: src/catalog/demo_catalog.json, imported in create_missing mode at every start
// (an operator's later change to a demo entry is kept), and summarized in the demo JSON.
#include <boost/json.hpp>

#include <map>

#include "app/demo.hpp"
#include "catalog/demo.hpp"
#include "catalog/service.hpp"
#include "core/json.hpp"

namespace sika::app {

namespace bj = boost::json;

Status seed_catalog_demo(Context& ctx, bj::object& demo) {
  if (!ctx.catalog) return internal_error(bj::string("the catalog service is not built"));
  SIKA_ASSIGN_OR_RETURN(bj::value document, json::parse(catalog::demo_catalog_json()));
  SIKA_TRY(ctx.catalog->import(document, catalog::Mode::create_missing));

  // "catalog": {"countries": ["CIV", ...], "services": {"CMR": ["MTN_MOMO_CMR", ...], ...}}
  auto cat = ctx.catalog->snapshot();
  std::map<std::string, bj::array> by_country;
  for (const auto& s : cat->services()) {
    const catalog::Country* c = cat->country_by_id(s.country_id);
    if (c && cat->usable(s)) by_country[c->code].push_back(bj::string(s.code));
  }
  bj::array countries;
  bj::object services;
  for (auto& [code, list] : by_country) {
    countries.push_back(bj::string(code));
    services[code] = std::move(list);
  }
  demo["catalog"] = bj::object{{"countries", std::move(countries)}, {"services", std::move(services)}};
  return {};
}

}  // namespace sika::app
