// Demo world of hosted checkout: each demo merchant's checkout secret (to verify service_data)
// beside its API key in the demo JSON, and the FX rates line=up sessions convert with.
#include <boost/json.hpp>

#include "app/demo.hpp"
#include "catalog/fx.hpp"
#include "checkout/service.hpp"
#include "core/time.hpp"

namespace sika::app {

namespace bj = boost::json;

namespace {

// The demo rates: the fixed parities of the CFA francs to the euro (both francs are 655.957 per
// euro, so XAF and XOF convert 1:1), and an illustrative dollar rate. A pair that already has a
// rate in force is left as the operator set it.
Status seed_fx_rates(store::Db& db, bj::object& demo) {
  struct Pair {
    const char *base, *quote, *rate;
  };
  static constexpr Pair kRates[] = {{"EUR", "XAF", "655.957"}, {"EUR", "XOF", "655.957"}, {"XAF", "XOF", "1"},
                                    {"XOF", "XAF", "1"},       {"USD", "XOF", "600"},     {"USD", "XAF", "600"}};
  const std::int64_t at = now_ms();
  bj::array shown;
  for (const auto& p : kRates) {
    std::optional<catalog::fx::Rate> existing;
    SIKA_TRY(db.read([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(existing, catalog::fx::in_force(c, p.base, p.quote, at));
      return {};
    }));
    if (!existing) {
      SIKA_ASSIGN_OR_RETURN(auto set, catalog::fx::set_rate(db, {p.base, p.quote, p.rate, std::nullopt, "demo"}, at));
      existing = std::move(set);
    }
    shown.push_back(bj::object{
        {"base", existing->base}, {"quote", existing->quote}, {"rate", catalog::fx::ratio_text(existing->rate)}});
  }
  demo["fx_rates"] = std::move(shown);
  return {};
}

}  // namespace

Status seed_checkout_demo(Context& ctx, bj::object& demo) {
  if (!ctx.checkout) return {};
  SIKA_TRY(seed_fx_rates(*ctx.db, demo));
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
