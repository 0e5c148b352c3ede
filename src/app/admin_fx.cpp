// `sika admin fx ...`: the operator's currency conversion rates (catalog::fx), read by hosted
// checkout sessions with line=up when they open.
#include <boost/json.hpp>

#include <memory>

#include "app/admin.hpp"
#include "catalog/fx.hpp"
#include "core/time.hpp"

namespace sika::app {

namespace bj = boost::json;

namespace {

bj::object rate_json(const catalog::fx::Rate& r) {
  return bj::object{{"base", r.base},
                    {"quote", r.quote},
                    {"rate", catalog::fx::ratio_text(r.rate)},
                    {"numerator", r.rate.numerator},
                    {"denominator", r.rate.denominator},
                    {"valid_from", iso8601(r.valid_from)},
                    {"set_by", r.set_by}};
}

std::string rate_line(const catalog::fx::Rate& r) {
  return r.base + " -> " + r.quote + "  " + catalog::fx::ratio_text(r.rate) + "  from " + iso8601(r.valid_from) +
         "  by " + r.set_by;
}

}  // namespace

void add_fx_admin(CLI::App& admin, AdminEnv& env) {
  auto* group = admin.add_subcommand("fx", "Currency conversion rates (hosted checkout with line=up)");
  group->require_subcommand(1);
  {
    auto* cmd = add_command(*group, env, "set", "Set the rate of a currency pair (a new row; earlier ones stay)");
    auto r = std::make_shared<catalog::fx::NewRate>();
    auto from = std::make_shared<std::string>();
    cmd->add_option("--base", r->base, "the currency converted from (e.g. EUR)")->required();
    cmd->add_option("--quote", r->quote, "the currency converted to (e.g. XAF)")->required();
    cmd->add_option("--rate", r->rate, "units of quote per unit of base: 655.957 or 1000/655957")->required();
    cmd->add_option("--by", r->set_by, "who sets it")->required();
    cmd->add_option("--valid-from", *from, "when it takes effect (ISO 8601, UTC; default now)");
    cmd->callback([&env, r, from] {
      Context& ctx = env.context();
      catalog::fx::NewRate request = *r;
      if (!from->empty()) {
        auto at = parse_iso8601(*from);
        if (!at) fail(empty_data(bj::object{{"valid_from", "must be an ISO 8601 time such as 2026-01-01T00:00:00Z"}}));
        request.valid_from = *at;
      }
      catalog::fx::Rate set = check(catalog::fx::set_rate(*ctx.db, request, now_ms()));
      print_result(env, rate_json(set), rate_line(set));
    });
  }
  {
    auto* cmd = add_command(*group, env, "list", "The rate of each pair in force now (--history: every row)");
    auto history = std::make_shared<bool>(false);
    cmd->add_flag("--history", *history, "every row, the newest first");
    cmd->callback([&env, history] {
      Context& ctx = env.context();
      std::vector<catalog::fx::Rate> rates;
      if (*history) {
        check(ctx.db->read([&](store::Conn& c) -> Status {
          SIKA_ASSIGN_OR_RETURN(rates, catalog::fx::history(c, "", "", 1000));
          return {};
        }));
      } else {
        rates = check(catalog::fx::list_rates(*ctx.db, now_ms()));
      }
      bj::array data;
      std::string human;
      for (const auto& r : rates) {
        data.push_back(rate_json(r));
        human += rate_line(r) + "\n";
      }
      if (human.empty()) human = "no rate\n";
      human.pop_back();
      print_result(env, data, human);
    });
  }
}

}  // namespace sika::app
