#include "app/admin.hpp"

#include <iostream>

#include "catalog/service.hpp"
#include "core/json.hpp"
#include "core/time.hpp"
#include "dashboard/service.hpp"
#include "merchant/merchant.hpp"

namespace sika::app {

CLI::App* add_command(CLI::App& admin, AdminEnv& env, const std::string& name, const std::string& description) {
  CLI::App* cmd = admin.add_subcommand(name, description);
  cmd->add_flag("--json", env.json, "print the result as JSON");
  return cmd;
}

void print_result(const AdminEnv& env, const boost::json::value& data, const std::string& human) {
  if (env.json)
    std::cout << json::dump(data) << std::endl;
  else
    std::cout << human << std::endl;
}

void fail(const Error& e) {
  std::string details = e.details.is_string() ? std::string(e.details.as_string()) : boost::json::serialize(e.details);
  std::cerr << "error: " << e.code << (details.empty() || details == "null" ? "" : ": " + details) << std::endl;
  throw CLI::RuntimeError(1);
}

namespace {
boost::json::object merchant_json(const merchant::Merchant& m) {
  boost::json::array countries;
  for (const auto& c : m.countries) countries.push_back(boost::json::string(c));
  return {{"id", m.id},         {"matricule", m.matricule},   {"name", m.name},
          {"email", m.email},   {"countries", countries},     {"environment", m.environment},
          {"active", m.active}, {"created_at", m.created_at}, {"tier", m.tier}};
}
}  // namespace

void add_merchant_admin(CLI::App& admin, AdminEnv& env) {
  {
    auto* cmd = add_command(admin, env, "create-merchant", "Create a merchant");
    auto spec = std::make_shared<merchant::NewMerchant>();
    cmd->add_option("--name", spec->name, "display name")->required();
    cmd->add_option("--matricule", spec->matricule, "public merchant code (generated when absent)");
    cmd->add_option("--email", spec->email, "contact e-mail");
    cmd->add_option("--country", spec->countries, "ISO alpha-3 country it operates in (repeatable)")->required();
    cmd->add_option("--environment", spec->environment, "sandbox or prod")->check(CLI::IsMember({"sandbox", "prod"}));
    cmd->callback([&env, spec] {
      Context& ctx = env.context();
      std::optional<merchant::Merchant> created;
      check(ctx.db->write([&](store::Conn& c) -> Status {
        auto m = merchant::create(c, *spec, now_ms());
        if (!m) return m.take_error();
        created = std::move(m).value();
        return {};
      }));
      print_result(env, merchant_json(*created), "created merchant " + created->matricule);
    });
  }
  {
    auto* cmd = add_command(admin, env, "set-merchant-grants",
                            "Set a merchant's countries and tier (its applications and staff follow; tokens issued "
                            "before are refused; audited)");
    auto matricule = std::make_shared<std::string>();
    auto countries = std::make_shared<std::vector<std::string>>();
    auto tier = std::make_shared<std::int64_t>(1);
    cmd->add_option("--merchant", *matricule, "merchant matricule")->required();
    cmd->add_option("--country", *countries, "ISO alpha-3 country of the catalog (repeatable: the whole new list)")
        ->required();
    cmd->add_option("--tier", *tier, "pricing tier (0 to 100)")->required();
    cmd->callback([&env, matricule, countries, tier] {
      Context& ctx = env.context();
      auto changed = check(dashboard::change_merchant_grants(*ctx.db, *ctx.catalog->snapshot(), *matricule, *countries,
                                                             *tier, 0, "sika admin", now_ms()));
      print_result(env, merchant_json(changed),
                   "merchant " + changed.matricule + ": countries " + merchant::join_countries(changed.countries) +
                       ", tier " + std::to_string(changed.tier));
    });
  }
  {
    auto* cmd = add_command(admin, env, "list-merchants", "List merchants");
    cmd->callback([&env] {
      Context& ctx = env.context();
      std::vector<merchant::Merchant> all;
      check(ctx.db->read([&](store::Conn& c) -> Status {
        auto l = merchant::list(c);
        if (!l) return l.take_error();
        all = std::move(l).value();
        return {};
      }));
      boost::json::array out;
      std::string human;
      for (const auto& m : all) {
        out.push_back(merchant_json(m));
        human +=
            m.matricule + "\t" + m.name + "\t" + merchant::join_countries(m.countries) + "\t" + m.environment + "\n";
      }
      print_result(env, out, human);
    });
  }
  {
    auto* cmd = add_command(admin, env, "create-api-key", "Issue an API key to a merchant (shown once)");
    auto matricule = std::make_shared<std::string>();
    auto kind = std::make_shared<std::string>("merchant");
    cmd->add_option("--merchant", *matricule, "merchant matricule")->required();
    cmd->add_option("--kind", *kind, "merchant (checkout, plugins) or link (wallet link API)")
        ->check(CLI::IsMember({"merchant", "link"}));
    cmd->callback([&env, matricule, kind] {
      Context& ctx = env.context();
      merchant::IssuedKey issued;
      check(ctx.db->write([&](store::Conn& c) -> Status {
        auto m = merchant::find_by_matricule(c, *matricule);
        if (!m) return m.take_error();
        if (!*m) return not_found("no merchant " + *matricule);
        auto k = merchant::issue_key(c, ctx.pepper, (*m)->id,
                                     *kind == "link" ? merchant::KeyKind::link : merchant::KeyKind::merchant,
                                     (*m)->environment, now_ms());
        if (!k) return k.take_error();
        issued = std::move(k).value();
        return {};
      }));
      print_result(env, {{"id", issued.id}, {"merchant", *matricule}, {"kind", *kind}, {"api_key", issued.key}},
                   "api key (shown once): " + issued.key);
    });
  }
  {
    auto* cmd = add_command(admin, env, "revoke-api-key", "Revoke an API key by id");
    auto id = std::make_shared<std::int64_t>(0);
    cmd->add_option("--id", *id, "key id")->required();
    cmd->callback([&env, id] {
      Context& ctx = env.context();
      check(ctx.db->write([&](store::Conn& c) { return merchant::revoke_key(c, *id, now_ms()); }));
      print_result(env, {{"id", *id}, {"revoked", true}}, "revoked");
    });
  }
}

merchant::Merchant merchant_named(Context& ctx, const std::string& matricule) {
  std::optional<merchant::Merchant> m;
  check(ctx.db->read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(m, merchant::find_by_matricule(c, matricule));
    return {};
  }));
  if (!m) fail(not_found(boost::json::object{{"merchant", "no such merchant"}}));
  return *m;
}

void add_admin_commands(CLI::App& admin, AdminEnv& env) {
  add_merchant_admin(admin, env);
  add_identity_admin(admin, env);
  add_webhooks_admin(admin, env);
  add_payments_admin(admin, env);
  add_recon_admin(admin, env);
  add_settlement_admin(admin, env);
  add_refunds_admin(admin, env);
  add_health_admin(admin, env);
  add_links_admin(admin, env);
  add_wallets_admin(admin, env);
  add_billing_admin(admin, env);
  add_catalog_admin(admin, env);
  add_notify_admin(admin, env);
  add_jobs_admin(admin, env);
  add_checkout_admin(admin, env);
  add_fx_admin(admin, env);
  // Components: add_<component>_admin(admin, env);
}

}  // namespace sika::app
