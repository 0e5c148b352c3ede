// `sika admin checkout ...`: a merchant's checkout secret (to verify service_data) and its
// rotation, the domains its return URLs must belong to, and "signed checkout requests only".
#include <boost/json.hpp>

#include <algorithm>
#include <memory>

#include "app/admin.hpp"
#include "checkout/service.hpp"
#include "checkout/store.hpp"
#include "core/time.hpp"
#include "dashboard/service.hpp"
#include "merchant/merchant.hpp"

namespace sika::app {

namespace bj = boost::json;

namespace {

merchant::Merchant find_merchant(Context& ctx, const std::string& matricule) {
  std::optional<merchant::Merchant> m;
  check(ctx.db->read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(m, merchant::find_by_matricule(c, matricule));
    return {};
  }));
  if (!m) fail(not_found(bj::object{{"merchant", "no such merchant"}}));
  return *m;
}

// A registrable host name: lower-case letters, digits, '-' and '.', with a dot.
bool valid_domain(const std::string& d) {
  return !d.empty() && d.size() <= 253 && d.find('.') != std::string::npos && d.front() != '.' && d.back() != '.' &&
         std::all_of(d.begin(), d.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'; });
}

}  // namespace

void add_checkout_admin(CLI::App& admin, AdminEnv& env) {
  auto* group = admin.add_subcommand("checkout", "Hosted checkout: a merchant's checkout secret and return domains");
  group->require_subcommand(1);
  {
    auto* cmd = add_command(*group, env, "secret",
                            "Show a merchant's checkout secret of version 1 (kid 1) and the version in force");
    auto matricule = std::make_shared<std::string>();
    cmd->add_option("--merchant", *matricule, "the merchant's matricule")->required();
    cmd->callback([&env, matricule] {
      Context& ctx = env.context();
      merchant::Merchant m = find_merchant(ctx, *matricule);
      std::string secret = ctx.checkout->merchant_secret(m.matricule);
      checkout::SecretVersion in_force = check(ctx.checkout->signing_secret(m.id, m.matricule));
      print_result(
          env,
          bj::object{
              {"merchant", m.matricule}, {"kid", 1}, {"checkout_secret", secret}, {"kid_in_force", in_force.kid}},
          in_force.kid == 1 ? secret
                            : secret + "\n(kid 1; returns are signed with kid " + std::to_string(in_force.kid) +
                                  ", shown once by `rotate`)");
    });
  }
  {
    auto* cmd = add_command(*group, env, "rotate",
                            "Make a new checkout secret version for a merchant and print it (once: it is not stored)");
    auto matricule = std::make_shared<std::string>();
    cmd->add_option("--merchant", *matricule, "the merchant's matricule")->required();
    cmd->callback([&env, matricule] {
      Context& ctx = env.context();
      merchant::Merchant m = find_merchant(ctx, *matricule);
      checkout::SecretVersion made = check(ctx.checkout->rotate_secret(m.id, m.matricule));
      print_result(env, bj::object{{"merchant", m.matricule}, {"kid", made.kid}, {"checkout_secret", made.secret}},
                   "kid " + std::to_string(made.kid) + ": " + made.secret);
    });
  }
  {
    auto* cmd = add_command(*group, env, "signed-only",
                            "Show, or turn on (--on) or off (--off), a merchant's signed checkout requests only: "
                            "every checkout request must carry a valid signature (audited)");
    struct Args {
      std::string merchant;
      bool on = false, off = false;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--merchant", a->merchant, "the merchant's matricule")->required();
    auto* on = cmd->add_flag("--on", a->on, "refuse every checkout request without a valid signature");
    auto* off = cmd->add_flag("--off", a->off, "accept unsigned plain orders again (DIRECT, fee on the customer)");
    on->excludes(off);
    cmd->callback([&env, a] {
      Context& ctx = env.context();
      merchant::Merchant m = find_merchant(ctx, a->merchant);
      bool changed = false;
      if (a->on || a->off)
        changed = check(dashboard::set_checkout_signed_only(*ctx.db, m.matricule, a->on, 0, "sika admin", now_ms()));
      const bool now_on = check(ctx.checkout->signed_only(m.id));
      print_result(env, bj::object{{"merchant", m.matricule}, {"signed_only", now_on}, {"changed", changed}},
                   m.matricule + ": signed checkout requests only " + (now_on ? "on" : "off") +
                       (a->on || a->off ? (changed ? " (changed)" : " (unchanged)") : ""));
    });
  }
  {
    auto* cmd = add_command(*group, env, "domains",
                            "List, add or remove the domains a merchant's return URLs must belong to (none: any)");
    struct Args {
      std::string merchant;
      std::vector<std::string> add, remove;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--merchant", a->merchant, "the merchant's matricule")->required();
    cmd->add_option("--add", a->add, "a domain to add (its subdomains are included)");
    cmd->add_option("--remove", a->remove, "a domain to remove");
    cmd->callback([&env, a] {
      Context& ctx = env.context();
      merchant::Merchant m = find_merchant(ctx, a->merchant);
      for (const auto& d : a->add)
        if (!valid_domain(d))
          fail(empty_data(bj::object{{"add", "must be a lower-case host name such as shop.example"}}));
      std::vector<std::string> domains;
      check(ctx.db->write([&](store::Conn& c) -> Status {
        for (const auto& d : a->add) SIKA_TRY(checkout::tables::add_domain(c, m.id, d, now_ms()));
        for (const auto& d : a->remove) SIKA_TRY(checkout::tables::remove_domain(c, m.id, d));
        SIKA_ASSIGN_OR_RETURN(domains, checkout::tables::domains(c, m.id));
        return {};
      }));
      bj::array data;
      std::string human;
      for (const auto& d : domains) {
        data.push_back(bj::string(d));
        human += d + "\n";
      }
      if (human.empty()) human = "no domain: return URLs may name any host\n";
      human.pop_back();
      print_result(env, data, human);
    });
  }
}

}  // namespace sika::app
