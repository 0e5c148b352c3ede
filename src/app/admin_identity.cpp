// `sika admin` commands of the identity service: OAuth clients, users, signing keys.
#include <boost/json.hpp>

#include <iostream>
#include <memory>

#include "app/admin.hpp"
#include "core/time.hpp"
#include "identity/keys.hpp"
#include "identity/model.hpp"
#include "identity/service.hpp"
#include "identity/store.hpp"
#include "merchant/merchant.hpp"

namespace sika::app {

namespace bj = boost::json;

namespace {

bj::array string_array(const std::vector<std::string>& v) {
  bj::array a;
  for (const auto& s : v) a.push_back(bj::string(s));
  return a;
}

bj::object client_json(const identity::Client& c) {
  bj::object o;
  o["client_id"] = c.client_id;
  o["name"] = c.name;
  o["type"] = c.confidential ? "confidential" : "public";
  o["redirect_uris"] = string_array(c.redirect_uris);
  o["grant_types"] = string_array(c.grant_types);
  o["scopes"] = string_array(c.scopes);
  o["merchant"] = c.merchant.empty() ? bj::value(nullptr) : bj::value(c.merchant);
  o["environment"] = c.environment;
  o["countries"] = string_array(c.countries);
  o["user_tier"] = c.user_tier;
  o["admin"] = c.admin;
  o["id_token_alg"] = c.id_token_alg;
  o["strict_client_credentials"] = c.strict_client_credentials;
  o["active"] = c.active;
  o["created_at"] = c.created_at;
  return o;
}

bj::object user_json(const identity::User& u) {
  bj::object o;
  o["subject"] = u.subject;
  o["email"] = u.email;
  o["phone"] = u.phone;
  o["name"] = u.name;
  o["user_tier"] = u.user_tier;
  o["countries"] = string_array(u.countries);
  o["admin"] = u.admin;
  o["merchant"] = u.merchant.empty() ? bj::value(nullptr) : bj::value(u.merchant);
  o["active"] = u.active;
  o["created_at"] = u.created_at;
  return o;
}

// Resolves --merchant MATRICULE to its id (fails when unknown).
std::optional<std::int64_t> merchant_id_of(Context& ctx, const std::string& matricule) {
  if (matricule.empty()) return std::nullopt;
  std::optional<merchant::Merchant> m;
  check(ctx.db->read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(m, merchant::find_by_matricule(c, matricule));
    return {};
  }));
  if (!m) fail(not_found(bj::object{{"merchant", "unknown matricule " + matricule}}));
  return m->id;
}

std::int64_t publish_seconds(const Config& config) {
  std::int64_t ttl = std::max(config.get_int("identity.access_token_ttl"), config.get_int("identity.id_token_ttl"));
  return ttl + config.get_int("identity.key_reload_seconds") + 300;
}

}  // namespace

void add_identity_admin(CLI::App& admin, AdminEnv& env) {
  {
    auto* cmd = add_command(admin, env, "create-client", "Create an OAuth client (the secret is shown once)");
    struct Args {
      identity::ClientSpec spec;
      std::string type = "confidential";
      std::string merchant;
      std::string scopes;
      std::string grants;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--name", a->spec.name, "display name shown on the consent page")->required();
    cmd->add_option("--client-id", a->spec.client_id, "client_id (generated when absent)");
    cmd->add_option("--type", a->type, "confidential or public")->check(CLI::IsMember({"confidential", "public"}));
    cmd->add_option("--redirect-uri", a->spec.redirect_uris, "exact redirect URI (repeatable)");
    cmd->add_option("--scopes", a->scopes, "space-separated scopes (default: payments services countries providers)");
    cmd->add_option("--grants", a->grants,
                    "space-separated grant types (default: client_credentials for confidential clients, "
                    "authorization_code refresh_token for public ones)");
    cmd->add_option("--merchant", a->merchant, "matricule of the owning merchant");
    cmd->add_option("--environment", a->spec.environment, "sandbox or prod")->check(CLI::IsMember({"sandbox", "prod"}));
    cmd->add_option("--country", a->spec.countries, "ISO alpha-3 country the client may act in (repeatable)");
    cmd->add_option("--tier", a->spec.user_tier, "user tier carried by its tokens");
    cmd->add_flag("--admin", a->spec.admin, "tokens carry the admin flag (all countries)");
    cmd->add_option("--id-token-alg", a->spec.id_token_alg, "RS256 or ES256")->check(CLI::IsMember({"RS256", "ES256"}));
    cmd->add_flag("--strict-client-credentials", a->spec.strict_client_credentials,
                  "client_credentials answers the access token alone (RFC 6749 4.4.3), not the refresh and ID "
                  "tokens too");
    cmd->callback([&env, a] {
      Context& ctx = env.context();
      identity::ClientSpec spec = a->spec;
      spec.confidential = a->type == "confidential";
      spec.scopes = identity::split_list(a->scopes);
      spec.grant_types = identity::split_list(a->grants);
      spec.merchant_id = merchant_id_of(ctx, a->merchant);
      if (spec.merchant_id && spec.countries.empty()) {
        // A merchant's client defaults to the merchant's countries.
        check(ctx.db->read([&](store::Conn& c) -> Status {
          SIKA_ASSIGN_OR_RETURN(auto m, merchant::find_by_id(c, *spec.merchant_id));
          if (m) spec.countries = m->countries;
          return {};
        }));
      }
      std::optional<identity::CreatedClient> created;
      check(ctx.db->write([&](store::Conn& c) -> Status {
        SIKA_ASSIGN_OR_RETURN(created, identity::create_client(c, ctx.pepper, spec, now_ms()));
        return {};
      }));
      bj::object o = client_json(created->client);
      if (!created->client_secret.empty()) o["client_secret"] = created->client_secret;
      std::string human = "created client " + created->client.client_id;
      if (!created->client_secret.empty())
        human += "\nclient_secret: " + created->client_secret + "\n(shown once; only its hash is stored)";
      print_result(env, o, human);
    });
  }
  {
    auto* cmd =
        add_command(admin, env, "update-client", "Change an OAuth client's scopes or client_credentials answer");
    struct Args {
      std::string client_id;
      std::string scopes;
      std::string strict;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("client_id", a->client_id, "the client")->required();
    cmd->add_option("--scopes", a->scopes, "space-separated scopes (replaces the list)");
    cmd->add_option("--strict-client-credentials", a->strict,
                    "true: client_credentials answers the access token alone (RFC 6749 4.4.3); false: also a "
                    "refresh and an ID token")
        ->check(CLI::IsMember({"true", "false"}));
    cmd->callback([&env, a] {
      Context& ctx = env.context();
      identity::ClientUpdate update;
      if (!a->scopes.empty()) update.scopes = identity::split_list(a->scopes);
      if (!a->strict.empty()) update.strict_client_credentials = a->strict == "true";
      std::optional<identity::Client> updated;
      check(ctx.db->write([&](store::Conn& c) -> Status {
        SIKA_ASSIGN_OR_RETURN(updated, identity::update_client(c, a->client_id, update, now_ms()));
        return {};
      }));
      std::int64_t bound = ctx.config.get_int("identity.client_cache_seconds");
      print_result(env, client_json(*updated),
                   "updated client " + updated->client_id + " (running servers apply it within " +
                       std::to_string(bound) + " s)");
    });
  }
  {
    auto* cmd = add_command(admin, env, "rotate-client-secret", "Replace a confidential client's secret");
    auto client_id = std::make_shared<std::string>();
    cmd->add_option("client_id", *client_id, "the client")->required();
    cmd->callback([&env, client_id] {
      Context& ctx = env.context();
      std::string secret;
      check(ctx.db->write([&](store::Conn& c) -> Status {
        SIKA_ASSIGN_OR_RETURN(secret, identity::rotate_client_secret(c, ctx.pepper, *client_id, now_ms()));
        return {};
      }));
      std::int64_t bound = ctx.config.get_int("identity.client_cache_seconds");
      print_result(env,
                   bj::object{{"client_id", *client_id}, {"client_secret", secret}, {"old_secret_valid_for_s", bound}},
                   "client_secret: " + secret + "\n(shown once; running servers refuse the old one within " +
                       std::to_string(bound) + " s)");
    });
  }
  {
    auto* cmd = add_command(admin, env, "set-client-active", "Enable or disable an OAuth client");
    auto client_id = std::make_shared<std::string>();
    auto active = std::make_shared<std::string>();
    cmd->add_option("client_id", *client_id, "the client")->required();
    cmd->add_option("active", *active, "true or false")->required()->check(CLI::IsMember({"true", "false"}));
    cmd->callback([&env, client_id, active] {
      Context& ctx = env.context();
      check(ctx.db->write(
          [&](store::Conn& c) { return identity::set_client_active(c, *client_id, *active == "true", now_ms()); }));
      print_result(env, bj::object{{"client_id", *client_id}, {"active", *active == "true"}},
                   "client " + *client_id + (*active == "true" ? " enabled" : " disabled"));
    });
  }
  {
    auto* cmd = add_command(admin, env, "list-clients", "List OAuth clients");
    cmd->callback([&env] {
      Context& ctx = env.context();
      std::vector<identity::Client> clients;
      check(ctx.db->read([&](store::Conn& c) -> Status {
        SIKA_ASSIGN_OR_RETURN(clients, identity::list_clients(c));
        return {};
      }));
      bj::array out;
      std::string human;
      for (const auto& c : clients) {
        out.push_back(client_json(c));
        human += c.client_id + "  " + (c.confidential ? "confidential" : "public") + "  " + c.environment + "  [" +
                 identity::join_list(c.scopes) + "]" + (c.merchant.empty() ? "" : "  merchant " + c.merchant) +
                 (c.active ? "" : "  DISABLED") + "\n";
      }
      print_result(env, out, human.empty() ? "no clients" : human.substr(0, human.size() - 1));
    });
  }
  {
    auto* cmd =
        add_command(admin, env, "create-user", "Create a user (password from --password or SIKA_USER_PASSWORD)");
    struct Args {
      identity::UserSpec spec;
      std::string merchant;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--email", a->spec.email, "e-mail address (the login)")->required();
    cmd->add_option("--password", a->spec.password, "password (at least 10 characters)");
    cmd->add_option("--name", a->spec.name, "full name");
    cmd->add_option("--phone", a->spec.phone, "phone number, digits with optional +");
    cmd->add_option("--tier", a->spec.user_tier, "user tier");
    cmd->add_option("--country", a->spec.countries, "ISO alpha-3 country (repeatable)");
    cmd->add_flag("--admin", a->spec.admin, "operator (admin flag in tokens)");
    cmd->add_option("--merchant", a->merchant, "matricule of the merchant this user works for");
    cmd->callback([&env, a] {
      Context& ctx = env.context();
      identity::UserSpec spec = a->spec;
      if (spec.password.empty())
        if (const char* p = std::getenv("SIKA_USER_PASSWORD")) spec.password = p;
      spec.merchant_id = merchant_id_of(ctx, a->merchant);
      auto user = check(identity::create_user(*ctx.db, spec, now_ms()));
      print_result(env, user_json(user), "created user " + user.email + " (sub " + user.subject + ")");
    });
  }
  {
    auto* cmd = add_command(admin, env, "set-user-password", "Replace a user's password and lift its lockout");
    auto email = std::make_shared<std::string>();
    auto password = std::make_shared<std::string>();
    cmd->add_option("--email", *email, "the user")->required();
    cmd->add_option("--password", *password, "new password (or SIKA_USER_PASSWORD)");
    cmd->callback([&env, email, password] {
      Context& ctx = env.context();
      std::string pw = *password;
      if (pw.empty())
        if (const char* p = std::getenv("SIKA_USER_PASSWORD")) pw = p;
      check(identity::set_user_password(*ctx.db, *email, pw, now_ms()));
      print_result(env, bj::object{{"email", identity::normalize_email(*email)}, {"updated", true}},
                   "password updated");
    });
  }
  {
    auto* cmd = add_command(admin, env, "list-users", "List users");
    cmd->callback([&env] {
      Context& ctx = env.context();
      std::vector<identity::User> users;
      check(ctx.db->read([&](store::Conn& c) -> Status {
        SIKA_ASSIGN_OR_RETURN(users, identity::list_users(c));
        return {};
      }));
      bj::array out;
      std::string human;
      for (const auto& u : users) {
        out.push_back(user_json(u));
        human += u.email + "  tier " + std::to_string(u.user_tier) + (u.admin ? "  admin" : "") +
                 (u.merchant.empty() ? "" : "  merchant " + u.merchant) + "\n";
      }
      print_result(env, out, human.empty() ? "no users" : human.substr(0, human.size() - 1));
    });
  }
  {
    auto* cmd = add_command(admin, env, "rotate-keys",
                            "Create new ES256 and RS256 signing keys; the old ones stay in the JWKS until the "
                            "tokens they signed have expired");
    cmd->callback([&env] {
      Context& ctx = env.context();
      auto keys = check(identity::rotate_keys(*ctx.db, ctx.pepper, publish_seconds(ctx.config), now_ms()));
      bj::array out;
      std::string human;
      for (const auto& k : keys) {
        out.push_back(
            bj::object{{"kid", k.kid},
                       {"alg", k.alg},
                       {"status", k.status},
                       {"created_at", k.created_at},
                       {"publish_until", k.publish_until == 0 ? bj::value(nullptr) : bj::value(k.publish_until)}});
        human += k.kid + "  " + k.alg + "  " + k.status + "\n";
      }
      print_result(env, out,
                   human + "running servers switch to the new keys within " +
                       std::to_string(ctx.config.get_int("identity.key_reload_seconds")) + " s");
    });
  }
  {
    auto* cmd = add_command(admin, env, "list-keys", "List signing keys");
    cmd->callback([&env] {
      Context& ctx = env.context();
      std::vector<identity::KeyInfo> keys;
      check(ctx.db->read([&](store::Conn& c) -> Status {
        SIKA_ASSIGN_OR_RETURN(keys, identity::list_keys(c));
        return {};
      }));
      bj::array out;
      std::string human;
      for (const auto& k : keys) {
        out.push_back(bj::object{{"kid", k.kid}, {"alg", k.alg}, {"status", k.status}, {"created_at", k.created_at}});
        human += k.kid + "  " + k.alg + "  " + k.status + "\n";
      }
      print_result(env, out, human.empty() ? "no keys" : human.substr(0, human.size() - 1));
    });
  }
}

}  // namespace sika::app
