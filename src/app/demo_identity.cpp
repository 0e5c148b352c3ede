// Demo world of the identity service: one confidential client per demo merchant, an operator,
// a user and a public (PKCE) client. Secrets derive from the server secret, so they are the
// same at every start on the same database; only their hashes are stored.
#include <boost/json.hpp>

#include <cctype>

#include "app/demo.hpp"
#include "core/crypto.hpp"
#include "core/time.hpp"
#include "identity/model.hpp"
#include "identity/store.hpp"
#include "merchant/merchant.hpp"

namespace sika::app {

namespace bj = boost::json;

Status ensure_demo_user(Context& ctx, const identity::UserSpec& spec) {
  std::optional<identity::User> found;
  SIKA_TRY(ctx.db->read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(found, identity::find_user_by_email(c, spec.email));
    return {};
  }));
  if (!found) {
    auto created = identity::create_user(*ctx.db, spec, now_ms());
    if (!created && !created.error().is(ErrorKind::conflict)) return created.take_error();
    return {};
  }
  if (!crypto::password_verify(spec.password, found->password_hash))
    return identity::set_user_password(*ctx.db, spec.email, spec.password, now_ms());
  return {};
}

namespace {

// One confidential client_credentials client per demo merchant ("demo-" + its lowercased
// matricule); its id and secret are added to the merchant's demo entry.
Status seed_clients_of(Context& ctx, bj::array& merchants, std::int64_t now);

Status seed_merchant_clients(Context& ctx, bj::object& demo, std::int64_t now) {
  for (const char* list : {"merchants", "live_merchants"})
    if (auto* merchants = demo.if_contains(list); merchants && merchants->is_array())
      SIKA_TRY(seed_clients_of(ctx, merchants->as_array(), now));
  return {};
}

Status seed_clients_of(Context& ctx, bj::array& merchants, std::int64_t now) {
  for (auto& entry : merchants) {
    auto& m = entry.as_object();
    std::string matricule(m.at("matricule").as_string());
    std::string client_id = "demo-";
    for (char ch : matricule) client_id.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
    std::string secret = "cs_" + demo_secret(ctx, "client:" + client_id);
    SIKA_TRY(ctx.db->write([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(auto merchant, merchant::find_by_matricule(c, matricule));
      if (!merchant) return internal_error("demo merchant " + matricule + " missing");
      SIKA_ASSIGN_OR_RETURN(auto existing, identity::find_client(c, client_id));
      if (existing) return identity::set_client_secret(c, ctx.pepper, client_id, secret, now);
      identity::ClientSpec spec;
      spec.client_id = client_id;
      spec.name = merchant->name;
      spec.confidential = true;
      spec.secret = secret;
      spec.grant_types = {"client_credentials"};
      spec.scopes = {"payments", "services", "countries", "providers"};
      spec.merchant_id = merchant->id;
      spec.environment = merchant->environment;
      spec.countries = merchant->countries;
      SIKA_TRY(identity::create_client(c, ctx.pepper, spec, now));
      return {};
    }));
    m["client_id"] = client_id;
    m["client_secret"] = secret;
  }
  return {};
}

// The operator and the user, added to the demo file with their passwords.
Status seed_demo_users(Context& ctx, bj::object& demo) {
  identity::UserSpec op;
  op.email = "operator@sika.example";
  op.password = "op-" + demo_secret(ctx, "user:operator", 12);
  op.name = "Sika Operator";
  op.admin = true;
  op.user_tier = 3;
  op.countries = {"CMR", "CIV"};
  SIKA_TRY(ensure_demo_user(ctx, op));
  demo["operator"] = bj::object{{"email", op.email}, {"password", op.password}};

  identity::UserSpec user;
  user.email = "user@sika.example";
  user.password = "us-" + demo_secret(ctx, "user:user", 12);
  user.name = "Awa Demo";
  user.phone = "+237650000001";
  user.user_tier = 1;
  user.countries = {"CMR"};
  SIKA_TRY(ensure_demo_user(ctx, user));
  demo["user"] = bj::object{{"email", user.email}, {"password", user.password}};
  return {};
}

// The public client: authorization code + PKCE, for the dashboard and local apps.
Status seed_public_client(Context& ctx, bj::object& demo, std::int64_t now) {
  std::string dashboard = ctx.config.surface_url(web::Surface::dashboard);
  std::string redirect = dashboard + "/callback";
  std::vector<std::string> uris = {redirect, "http://127.0.0.1/callback",
                                   ctx.config.surface_url(web::Surface::checkout) + "/wallet/callback"};
  SIKA_TRY(ctx.db->write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto existing, identity::find_client(c, "demo-public"));
    if (existing) {
      // The public URL may change between starts: keep the redirect URIs in step.
      SIKA_TRY(c.exec("UPDATE oauth_clients SET redirect_uris = ?, updated_at = ? WHERE client_id = ?",
                      {identity::join_list(uris), now, std::string("demo-public")}));
      return {};
    }
    identity::ClientSpec spec;
    spec.client_id = "demo-public";
    spec.name = "Sika Dashboard (demo)";
    spec.confidential = false;
    spec.redirect_uris = uris;
    spec.grant_types = {"authorization_code", "refresh_token"};
    spec.scopes = {"openid",   "profile",  "email",     "phone",    "offline_access",
                   "payments", "services", "countries", "providers"};
    spec.environment = "sandbox";
    SIKA_TRY(identity::create_client(c, ctx.pepper, spec, now));
    return {};
  }));
  demo["public_client"] = bj::object{{"client_id", "demo-public"}, {"redirect_uri", redirect}};
  return {};
}

}  // namespace

Status seed_identity_demo(Context& ctx, bj::object& demo) {
  const std::int64_t now = now_ms();
  SIKA_TRY(seed_merchant_clients(ctx, demo, now));
  SIKA_TRY(seed_demo_users(ctx, demo));
  return seed_public_client(ctx, demo, now);
}

}  // namespace sika::app
