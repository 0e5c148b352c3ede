// `sika admin operator-health`: every connector's operator health as the nodes use it, and an
// operator's override (docs/payments.md, "Operator health"), as the dashboard's Health page gives.
#include <boost/json.hpp>

#include <memory>

#include "app/admin.hpp"
#include "payments/health.hpp"

namespace sika::app {

namespace bj = boost::json;

void add_health_admin(CLI::App& admin, AdminEnv& env) {
  auto* cmd = add_command(admin, env, "operator-health",
                          "Show each connector's operator health; --force CLOSED|DELAYED or --clear a connector's "
                          "override (every node follows within payments.health_publish_ms)");
  auto connector = std::make_shared<std::string>();
  auto force = std::make_shared<std::string>();
  auto clear = std::make_shared<bool>(false);
  cmd->add_option("--connector", *connector, "the connector to force or clear (e.g. sandbox, mtn_momo)");
  cmd->add_option("--force", *force, "CLOSED or DELAYED")->check(CLI::IsMember({"CLOSED", "DELAYED"}));
  cmd->add_flag("--clear", *clear, "clear the connector's override")->excludes("--force");
  cmd->callback([&env, connector, force, clear] {
    Context& ctx = env.context();
    if (!ctx.health) check(Status(unavailable(bj::string("operator health is not configured"))));
    if (!force->empty() || *clear) {
      if (connector->empty()) check(Status(empty_data(bj::object{{"connector", "is required"}})));
      check(ctx.health->force(*connector, *clear ? std::nullopt : payments::availability_from(*force), "sika admin"));
    }
    check(ctx.health->refresh());
    bj::array rows;
    std::string human;
    for (const auto& h : ctx.health->snapshot()) {
      rows.push_back(bj::object{{"connector", h.connector},
                                {"state", payments::to_string(h.state)},
                                {"forced", h.forced ? bj::value(bj::string(payments::to_string(*h.forced))) : nullptr},
                                {"calls", h.calls},
                                {"errors", h.errors},
                                {"p50_ms", h.p50_ms},
                                {"p90_ms", h.p90_ms},
                                {"nodes", h.nodes}});
      human += h.connector + ": " + std::string(payments::to_string(h.state)) + (h.forced ? " (forced)" : "") + ", " +
               std::to_string(h.calls) + " calls, " + std::to_string(h.errors) + " errors\n";
    }
    if (human.empty()) human = "no connector known\n";
    human.pop_back();
    print_result(env, rows, human);
  });
}

}  // namespace sika::app
