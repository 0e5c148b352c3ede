// `sika admin links ...`: payment links of a merchant, one link by its short code, and
// disabling or enabling a link (for support: a leaked or abused code).
#include <boost/json.hpp>

#include <memory>

#include "app/admin.hpp"
#include "links/service.hpp"
#include "merchant/merchant.hpp"

namespace sika::app {

namespace bj = boost::json;

namespace {

// The operator at the command line, acting for the merchant.
Acting cli_acting(std::int64_t merchant_id, std::string environment) {
  return Acting::operator_for(merchant_id, "", std::move(environment), "cli");
}

std::string line(const links::Link& l, const links::Service& svc) {
  return l.reference + " " + l.short_code + " " + std::string(l.status_at(svc.now())) + " " +
         (l.amount ? std::to_string(*l.amount) : std::string("open")) + " " + l.currency + " completed " +
         std::to_string(l.payments_completed) + " collected " + std::to_string(l.total_collected) + " " +
         svc.payment_url(l);
}

}  // namespace

void add_links_admin(CLI::App& admin, AdminEnv& env) {
  auto* group = admin.add_subcommand("links", "Payment links: list, show, disable, enable");
  group->require_subcommand(1);
  {
    auto* cmd = add_command(*group, env, "list", "List a merchant's payment links, newest first");
    struct Args {
      std::string merchant, status;
      std::int64_t limit = 100;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--merchant", a->merchant, "the merchant's matricule")->required();
    cmd->add_option("--status", a->status, "ACTIVE, DISABLED or EXPIRED");
    cmd->add_option("--limit", a->limit, "at most this many (1 to 100)")->check(CLI::Range(1, 100));
    cmd->callback([&env, a] {
      Context& ctx = env.context();
      const merchant::Merchant m = merchant_named(ctx, a->merchant);
      links::tables::ListFilter f;
      if (!a->status.empty()) f.status = a->status;
      f.limit = a->limit;
      auto found = check(ctx.links->list_links(cli_acting(m.id, m.environment), f));
      bj::array data;
      std::string human;
      for (const auto& l : found.first) {
        data.push_back(links::to_json(l, ctx.links->payment_url(l), ctx.links->now()));
        human += line(l, *ctx.links) + "\n";
      }
      if (human.empty()) human = "no payment link\n";
      human.pop_back();
      print_result(env, data, human);
    });
  }
  auto by_code = [&env](CLI::App& parent, const std::string& name, const std::string& description,
                        std::string_view new_status) {
    auto* cmd = add_command(parent, env, name, description);
    auto code = std::make_shared<std::string>();
    cmd->add_option("short_code", *code, "the link's short code")->required();
    cmd->callback([&env, code, new_status] {
      Context& ctx = env.context();
      auto found = check(ctx.links->by_code(*code));
      const Acting owner = cli_acting(found.merchant_id, found.environment);
      // find() and set_status() read the link with its figures.
      auto link = new_status.empty() ? check(ctx.links->find(owner, found.reference))
                                     : check(ctx.links->set_status(owner, found.reference, new_status));
      print_result(env, links::to_json(link, ctx.links->payment_url(link), ctx.links->now()), line(link, *ctx.links));
    });
  };
  by_code(*group, "show", "Show a payment link and its figures", "");
  by_code(*group, "disable", "Disable a payment link (its payments are refused)", links::kDisabled);
  by_code(*group, "enable", "Enable a disabled payment link", links::kActive);
}

}  // namespace sika::app
