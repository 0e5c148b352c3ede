// Demo world of the webhooks component. Always: where the endpoints API is and what it sends.
// With webhooks.demo_url set: a notification endpoint of the first demo merchant at that URL,
// whose signing secret derives from the server secret (stable across restarts, so the demo
// file is right at every start); its secret is written to the demo file like the other demo
// credentials.
#include <boost/json.hpp>

#include "app/demo.hpp"
#include "core/crypto.hpp"
#include "core/random.hpp"
#include "core/time.hpp"
#include "merchant/merchant.hpp"
#include "webhooks/service.hpp"

namespace sika::app {

namespace bj = boost::json;

Status seed_webhooks_demo(Context& ctx, bj::object& demo) {
  bj::object info;
  info["endpoints_url"] = ctx.config.surface_url(web::Surface::gateway) + "/webhook/endpoints";
  info["deliveries_url"] = ctx.config.surface_url(web::Surface::gateway) + "/webhook/deliveries";
  info["retry_schedule"] = ctx.config.get_string("webhooks.retry_schedule");
  info["allow_private_targets"] = ctx.config.get_bool("webhooks.allow_private_targets");
  info["demo_endpoint"] = nullptr;
  const std::string url = ctx.config.get_string("webhooks.demo_url");
  auto* merchants = demo.if_contains("merchants");
  if (!url.empty() && ctx.webhooks && merchants && merchants->is_array() && !merchants->as_array().empty()) {
    const std::string matricule(merchants->as_array()[0].as_object().at("matricule").as_string());
    const std::string secret =
        "whsec_" + base64_encode(crypto::hmac_sha256(ctx.pepper, "sika:demo:webhook-secret:" + matricule));
    std::optional<merchant::Merchant> m;
    std::optional<std::pair<std::string, std::string>> existing;  // public id, sealed secret
    SIKA_TRY(ctx.db->read([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(m, merchant::find_by_matricule(c, matricule));
      if (!m) return {};
      SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT public_id, secret_box FROM webhook_endpoints WHERE "
                                                  "merchant_id = ? AND url = ? AND deleted_at IS NULL ORDER BY id",
                                                  {m->id, url}));
      if (row) existing = std::make_pair(row->str(0), row->str(1));
      return {};
    }));
    if (!m) return internal_error("demo merchant " + matricule + " missing");
    webhooks::Registry& registry = ctx.webhooks->registry();
    bj::object endpoint;
    if (!existing) {
      webhooks::EndpointChange ch;
      ch.url = url;
      ch.description = "demo endpoint (webhooks.demo_url)";
      auto created = registry.create(m->id, ch, now_ms(), secret);
      if (!created) return created.take_error();
      endpoint["id"] = created->endpoint.id;
    } else {
      endpoint["id"] = existing->first;
    }
    endpoint["merchant"] = matricule;
    endpoint["url"] = url;
    // A rotated demo secret is no longer the derived one: it is not shown again.
    bool same = existing ? registry.secret_box().open(existing->first, existing->second) == secret : true;
    endpoint["secret"] = same ? bj::value(secret) : bj::value(nullptr);
    info["demo_endpoint"] = std::move(endpoint);
  }
  demo["webhooks"] = std::move(info);
  return {};
}

}  // namespace sika::app
