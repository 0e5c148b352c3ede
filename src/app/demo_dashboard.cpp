// Demo world of the dashboard: the demo operator signs in as an operator (TOTP enrolment at the
// first sign-in), and the first two demo merchants each get an owner; the first also a viewer.
// Passwords derive from the server secret, like every demo credential.
#include <boost/json.hpp>

#include <cctype>

#include "app/demo.hpp"
#include "core/time.hpp"
#include "dashboard/store.hpp"
#include "identity/store.hpp"
#include "merchant/merchant.hpp"

namespace sika::app {

namespace bj = boost::json;

namespace {

Result<std::int64_t> user_id(Context& ctx, const std::string& email) {
  std::int64_t id = 0;
  SIKA_TRY(ctx.db->read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto user, identity::find_user_by_email(c, email));
    if (!user) return internal_error(bj::string("demo user " + email + " missing"));
    id = user->id;
    return {};
  }));
  return id;
}

// Creates the member's user and gives it `role` in the merchant; returns its sign-in.
Result<bj::object> demo_member(Context& ctx, const std::string& email, const std::string& name,
                               const std::string& matricule, web::Role role) {
  identity::UserSpec spec;
  spec.email = email;
  spec.password = "dm-" + demo_secret(ctx, "user:" + email, 12);
  spec.name = name;
  SIKA_TRY(ensure_demo_user(ctx, spec));
  SIKA_ASSIGN_OR_RETURN(std::int64_t id, user_id(ctx, email));
  SIKA_TRY(ctx.db->write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto merchant, merchant::find_by_matricule(c, matricule));
    if (!merchant) return internal_error(bj::string("demo merchant " + matricule + " missing"));
    return dashboard::put_member(c, id, merchant->id, role, now_ms());
  }));
  return bj::object{{"email", email},
                    {"password", spec.password},
                    {"merchant", matricule},
                    {"role", std::string(web::role_name(role))}};
}

}  // namespace

Status seed_dashboard_demo(Context& ctx, bj::object& demo) {
  bj::object out;
  out["url"] = ctx.config.surface_url(web::Surface::dashboard);
  if (const auto* op = demo.if_contains("operator"); op && op->is_object()) {
    std::string email(op->as_object().at("email").as_string());
    SIKA_ASSIGN_OR_RETURN(std::int64_t id, user_id(ctx, email));
    SIKA_TRY(ctx.db->write([&](store::Conn& c) { return dashboard::add_operator(c, id, now_ms()); }));
    out["operator"] = bj::object{{"email", email},
                                 {"password", op->as_object().at("password")},
                                 {"second_factor", "TOTP, enrolled at the first sign-in"}};
  }
  const auto* merchants = demo.if_contains("merchants");
  if (merchants && merchants->is_array() && !merchants->as_array().empty()) {
    const auto& list = merchants->as_array();
    std::string first(list[0].as_object().at("matricule").as_string());
    SIKA_ASSIGN_OR_RETURN(out["merchant"],
                          demo_member(ctx, "owner@sika.example", "Demo Owner", first, web::Role::owner));
    SIKA_ASSIGN_OR_RETURN(out["viewer"],
                          demo_member(ctx, "viewer@sika.example", "Demo Viewer", first, web::Role::viewer));
    if (list.size() > 1) {
      std::string second(list[1].as_object().at("matricule").as_string());
      SIKA_ASSIGN_OR_RETURN(out["other_merchant"],
                            demo_member(ctx, "owner2@sika.example", "Demo Owner 2", second, web::Role::owner));
    }
  }
  // Each live merchant's owner (its sign-in is added to its live_merchants entry as "dashboard").
  if (auto* live = demo.if_contains("live_merchants"); live && live->is_array()) {
    for (auto& entry : live->as_array()) {
      auto& m = entry.as_object();
      const std::string matricule(m.at("matricule").as_string());
      std::string local;
      for (char ch : matricule) local.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
      SIKA_ASSIGN_OR_RETURN(m["dashboard"],
                            demo_member(ctx, local + "@sika.example", "Live Owner", matricule, web::Role::owner));
    }
  }
  demo["dashboard"] = std::move(out);
  return {};
}

}  // namespace sika::app
