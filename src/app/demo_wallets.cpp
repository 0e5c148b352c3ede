// Demo world of wallets: the first demo merchant is the partner of the link API (its link key is
// the demo's `link_api_key`), and the funded demo wallet 237690000100 is linked to it and has
// consented (the demo numbers get the sandbox code). Linking is idempotent per (partner, phone),
// so restarts find the same wallet and link.
#include <boost/json.hpp>

#include "app/demo.hpp"
#include "merchant/merchant.hpp"
#include "wallets/service.hpp"

namespace sika::app {

namespace bj = boost::json;

Status seed_wallets_demo(Context& ctx, bj::object& demo) {
  if (!ctx.wallets) return {};
  // Every funded sandbox wallet demo.json lists is a wallet the page signs in to.
  if (const auto* sandbox = demo.if_contains("sandbox"); sandbox && sandbox->is_object())
    if (const auto* list = sandbox->as_object().if_contains("wallets"); list && list->is_array())
      for (const auto& w : list->as_array())
        if (w.is_object() && w.as_object().contains("msisdn"))
          SIKA_TRY(ctx.wallets->wallet_of_phone("+" + std::string(w.as_object().at("msisdn").as_string()),
                                                "demo.wallet@example.com"));
  const auto* merchants = demo.if_contains("merchants");
  if (!merchants || !merchants->is_array() || merchants->as_array().empty()) return {};
  std::string matricule(merchants->as_array().front().at("matricule").as_string());
  std::optional<merchant::Merchant> m;
  SIKA_TRY(ctx.db->read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(m, merchant::find_by_matricule(c, matricule));
    return {};
  }));
  if (!m) return {};
  const Acting partner = Acting::system(m->id, m->matricule, m->environment, "demo", 1, m->countries);
  wallets::LinkRequest request;
  request.email = "demo.wallet@example.com";
  request.phone = "690000100";
  request.phone_country = "+237";
  SIKA_ASSIGN_OR_RETURN(wallets::Linked linked, ctx.wallets->link(partner, request));
  if (linked.link.status == wallets::kPending) {
    SIKA_ASSIGN_OR_RETURN(linked.link,
                          ctx.wallets->confirm(partner, linked.apikey, ctx.config.get_string("payments.sandbox_otp")));
  }
  bj::object link = wallets::to_json(linked.link, ctx.wallets->now());
  link["apikey"] = linked.apikey;
  link["msisdn"] = linked.link.wallet.msisdn;
  demo["wallet_link"] = std::move(link);
  return {};
}

}  // namespace sika::app
