#pragma once
// Where a request's credential becomes the Acting an operation takes (core/acting.hpp). Scopes and
// roles stay with the credential: the router and handlers check them before any operation runs.
#include "core/acting.hpp"
#include "core/result.hpp"
#include "web/message.hpp"

namespace sika::web {

// The Acting of `p`: its merchant, environment, tier and granted countries, acted by the
// platform's operator (an admin credential or the operator role), a signed-in user (a user
// token: its subject is not the client), or the API client.
inline Acting acting(const Principal& p) {
  Acting a;
  a.merchant_id = p.merchant_id;
  a.merchant = p.merchant;
  a.environment = p.environment;
  a.user_tier = p.user_tier;
  a.countries = p.countries;
  a.admin = p.admin;
  if (p.admin || p.role == Role::operator_) {
    a.actor = Acting::Actor::operator_;
    a.actor_id = p.subject;
  } else if (!p.client_id.empty() && p.subject != p.client_id) {
    a.actor = Acting::Actor::user;
    a.actor_id = p.subject;
  } else {
    a.actor = Acting::Actor::client;
    a.actor_id = p.client_id.empty() ? p.subject : p.client_id;
  }
  return a;
}

// The Acting of a request whose caller must act for a merchant (web::merchant_caller's refusals).
inline Result<Acting> merchant_acting(const Request& req) {
  SIKA_ASSIGN_OR_RETURN(const Principal* p, merchant_caller(req));
  return acting(*p);
}

}  // namespace sika::web
