// Demo world of hosted checkout: each demo merchant's checkout secret (to verify service_data)
// beside its API key in the demo JSON.
#include <boost/json.hpp>

#include "app/demo.hpp"
#include "checkout/service.hpp"

namespace sika::app {

namespace bj = boost::json;

Status seed_checkout_demo(Context& ctx, bj::object& demo) {
  if (!ctx.checkout) return {};
  auto* merchants = demo.if_contains("merchants");
  if (!merchants || !merchants->is_array()) return {};
  for (auto& entry : merchants->as_array()) {
    if (!entry.is_object()) continue;
    auto& m = entry.as_object();
    m["checkout_secret"] = ctx.checkout->merchant_secret(std::string(m.at("matricule").as_string()));
  }
  demo["checkout_button_url"] = ctx.config.surface_url(web::Surface::checkout) + "/button.js";
  return {};
}

}  // namespace sika::app
