#pragma once
// Who an operation acts for: the merchant and environment whose money and records it touches,
// what that merchant may do (user tier, countries), and who acts, for the audit. Operations take
// an Acting; a request's credential becomes one at the edge (web::acting), and a background job
// builds one for the system. Scopes and roles are not here: they are checked before an operation
// is called.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sika {

struct Acting {
  // Who acts: a user signed in, an API client, the platform's operator, or the system itself
  // (a scheduled job, a recovery, a settlement).
  enum class Actor { user, client, operator_, system };

  std::int64_t merchant_id = 0;         // 0: no merchant (an operator acting for the platform)
  std::string merchant;                 // the merchant's matricule ("" when none)
  std::string environment = "sandbox";  // "sandbox" or "prod"
  std::int64_t user_tier = 1;
  std::vector<std::string> countries;  // ISO alpha-3 codes the merchant may act in
  // Acts across merchants and countries (the platform's operator credential).
  bool admin = false;
  Actor actor = Actor::system;
  std::string actor_id;  // the user's subject, the client id, or the job's name

  bool grants_country(std::string_view alpha3) const {
    return admin || std::find(countries.begin(), countries.end(), alpha3) != countries.end();
  }

  // The system acting for merchant `merchant_id` (matricule `matricule`) in `environment`: a job
  // named `job` ("settlement", "billing.renewal"...).
  static Acting system(std::int64_t merchant_id, std::string matricule, std::string environment, std::string job,
                       std::int64_t user_tier = 1, std::vector<std::string> countries = {}) {
    Acting a;
    a.merchant_id = merchant_id;
    a.merchant = std::move(matricule);
    a.environment = std::move(environment);
    a.user_tier = user_tier;
    a.countries = std::move(countries);
    a.actor = Actor::system;
    a.actor_id = std::move(job);
    return a;
  }

  // The platform's operator `who` ("cli", an operator's e-mail) acting for one merchant, within
  // that merchant's objects only (not admin).
  static Acting operator_for(std::int64_t merchant_id, std::string matricule, std::string environment,
                             std::string who) {
    Acting a;
    a.merchant_id = merchant_id;
    a.merchant = std::move(matricule);
    a.environment = std::move(environment);
    a.actor = Actor::operator_;
    a.actor_id = std::move(who);
    return a;
  }
};

}  // namespace sika
