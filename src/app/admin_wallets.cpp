// `sika admin wallets ...`: a wallet by its phone number (balances, partner links with their
// limits, recent movements), and ending a link for support (a partner that lost its key).
// Partners' link API keys are issued and revoked with `create-api-key --kind link` and
// `revoke-api-key`.
#include <boost/json.hpp>

#include <memory>

#include "app/admin.hpp"
#include "core/money.hpp"
#include "wallets/service.hpp"

namespace sika::app {

namespace bj = boost::json;

void add_wallets_admin(CLI::App& admin, AdminEnv& env) {
  auto* group = admin.add_subcommand("wallets", "Wallets and wallet links: show, unlink");
  group->require_subcommand(1);
  {
    auto* cmd = add_command(*group, env, "show", "A wallet: balances, partner links and recent movements");
    struct Args {
      std::string msisdn, environment = "sandbox";
      int limit = 20;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--msisdn", a->msisdn, "the wallet's number, international digits")->required();
    cmd->add_option("--environment", a->environment, "sandbox or prod")->check(CLI::IsMember({"sandbox", "prod"}));
    cmd->add_option("--limit", a->limit, "movements to show (1-100)");
    cmd->callback([&env, a] {
      Context& ctx = env.context();
      if (!ctx.wallets) fail(unavailable(bj::string("wallets are not built")));
      auto wallet = check(ctx.wallets->wallet_of(a->environment, a->msisdn));
      if (!wallet) fail(not_found(bj::object{{"msisdn", "no wallet for this number"}}));
      auto balances = check(ctx.wallets->balances(*wallet));
      auto links = check(ctx.wallets->links(*wallet));
      auto history = check(ctx.wallets->history(*wallet, std::nullopt, a->limit));
      const std::int64_t at = ctx.wallets->now();
      bj::object out = wallets::to_json(*wallet);
      bj::array b, l, h;
      std::string human = wallet->matricule + " +" + wallet->msisdn + " " + wallet->email + "\n";
      for (const auto& x : balances) {
        b.push_back(bj::object{{"currency", x.currency}, {"available", x.available}});
        human += "  balance " + money::format(x.available, x.currency) + "\n";
      }
      for (const auto& x : links) {
        l.push_back(wallets::to_json(x, at));
        human += "  link " + x.reference + " " + x.partner + " " + x.status + " max " +
                 money::format(x.limits.per_payment, x.currency) + "/payment " +
                 money::format(x.limits.per_period, x.currency) + "/" + wallets::period_text(x.limits.period_ms) + "\n";
      }
      for (const auto& x : history.items) {
        h.push_back(wallets::queries::to_json(x));
        human += "  " + std::string(bj::value_to<std::string>(wallets::queries::to_json(x).at("at"))) + " " + x.kind +
                 " " + money::format(x.amount, x.currency) + " " + x.transaction_reference.value_or(x.memo) + "\n";
      }
      out["balances"] = std::move(b);
      out["links"] = std::move(l);
      out["history"] = std::move(h);
      print_result(env, out, human);
    });
  }
  {
    auto* cmd = add_command(*group, env, "unlink", "End a wallet link on the user's behalf (the partner is told)");
    auto msisdn = std::make_shared<std::string>();
    auto reference = std::make_shared<std::string>();
    auto environment = std::make_shared<std::string>("sandbox");
    cmd->add_option("--msisdn", *msisdn, "the wallet's number")->required();
    cmd->add_option("--link", *reference, "the link reference (WLK-...)")->required();
    cmd->add_option("--environment", *environment, "sandbox or prod")->check(CLI::IsMember({"sandbox", "prod"}));
    cmd->callback([&env, msisdn, reference, environment] {
      Context& ctx = env.context();
      if (!ctx.wallets) fail(unavailable(bj::string("wallets are not built")));
      auto wallet = check(ctx.wallets->wallet_of(*environment, *msisdn));
      if (!wallet) fail(not_found(bj::object{{"msisdn", "no wallet for this number"}}));
      auto link = check(ctx.wallets->unlink_by_user(*wallet, *reference));
      print_result(env, wallets::to_json(link, ctx.wallets->now()), link.reference + " " + link.status);
    });
  }
}

}  // namespace sika::app
