#include "app/demo.hpp"

#include <filesystem>
#include <fstream>

#include "core/crypto.hpp"
#include "core/random.hpp"
#include "core/time.hpp"
#include "merchant/merchant.hpp"

namespace sika::app {

std::string demo_secret(const Context& ctx, std::string_view label, std::size_t bytes) {
  std::string mac = crypto::hmac_sha256(ctx.pepper, "sika:demo:" + std::string(label));
  return base64url_encode(std::string_view(mac).substr(0, std::min<std::size_t>(bytes, mac.size())));
}

namespace {
struct DemoMerchant {
  const char* matricule;
  const char* name;
  const char* email;
  const char* country;
};
// The first two are the ones the demo JSON lists; the third receives split shares in CMR.
constexpr DemoMerchant kMerchants[] = {
    {"MCH-CM-0001", "Boutique Akwa Douala", "contact@akwa-douala.example", "CMR"},
    {"MCH-CI-0001", "Marché du Plateau Abidjan", "contact@plateau-abidjan.example", "CIV"},
    {"MCH-CM-0002", "Livraisons Yaoundé", "contact@livraisons-yaounde.example", "CMR"},
};
}  // namespace

Status seed_merchant_demo(Context& ctx, boost::json::object& demo) {
  boost::json::array merchants;
  std::string link_key;
  SIKA_TRY(ctx.db->write([&](store::Conn& c) -> Status {
    merchants.clear();
    std::int64_t now = now_ms();
    for (const auto& dm : kMerchants) {
      auto found = merchant::find_by_matricule(c, dm.matricule);
      if (!found) return found.take_error();
      merchant::Merchant m;
      if (*found) {
        m = **found;
      } else {
        auto created = merchant::create(c, {dm.matricule, dm.name, dm.email, {dm.country}, "sandbox"}, now);
        if (!created) return created.take_error();
        m = std::move(created).value();
      }
      std::string api_key = merchant::key_prefix(merchant::KeyKind::merchant, m.environment) +
                            demo_secret(ctx, std::string("api_key:") + dm.matricule);
      SIKA_TRY(merchant::register_key(c, ctx.pepper, m.id, merchant::KeyKind::merchant, m.environment, api_key, now));
      boost::json::array countries;
      for (const auto& cc : m.countries) countries.push_back(boost::json::string(cc));
      merchants.push_back(boost::json::object{
          {"matricule", m.matricule}, {"name", m.name}, {"api_key", api_key}, {"countries", countries}});
      if (link_key.empty()) {
        link_key = merchant::key_prefix(merchant::KeyKind::link, m.environment) +
                   demo_secret(ctx, std::string("link_key:") + dm.matricule);
        SIKA_TRY(merchant::register_key(c, ctx.pepper, m.id, merchant::KeyKind::link, m.environment, link_key, now));
      }
    }
    return {};
  }));
  demo["merchants"] = std::move(merchants);
  demo["link_api_key"] = link_key;
  return {};
}

Status seed_demo(Context& ctx, const web::Router& router, const std::string& file) {
  using web::Surface;
  boost::json::object demo;
  // Only the surfaces that answer are listed (a surface without routes is not promised).
  for (auto [surface, key] : {std::pair{Surface::gateway, "base_url"}, std::pair{Surface::identity, "auth_url"},
                              std::pair{Surface::checkout, "checkout_url"}, std::pair{Surface::link, "link_url"},
                              std::pair{Surface::dashboard, "dashboard_url"}}) {
    if (router.serves(surface)) demo[key] = ctx.config.surface_url(surface);
  }
  demo["openapi_url"] = ctx.config.surface_url(Surface::gateway) + "/openapi.json";
  SIKA_TRY(seed_merchant_demo(ctx, demo));
  SIKA_TRY(seed_identity_demo(ctx, demo));
  SIKA_TRY(seed_catalog_demo(ctx, demo));
  SIKA_TRY(seed_payments_demo(ctx, demo));
  SIKA_TRY(seed_links_demo(ctx, demo));
  SIKA_TRY(seed_billing_demo(ctx, demo));
  SIKA_TRY(seed_webhooks_demo(ctx, demo));
  SIKA_TRY(seed_wallets_demo(ctx, demo));
  if (router.serves(Surface::dashboard)) SIKA_TRY(seed_dashboard_demo(ctx, demo));
  if (router.serves(Surface::checkout)) SIKA_TRY(seed_checkout_demo(ctx, demo));
  if (!router.serves(Surface::link)) demo.erase("link_api_key"), demo.erase("wallet_link");

  std::filesystem::path path(file);
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return internal_error("cannot write " + tmp.string());
    out << boost::json::serialize(demo) << "\n";
  }
  std::filesystem::rename(tmp, path, ec);  // atomic: readers never see a half-written file
  if (ec) return internal_error("cannot write " + file + ": " + ec.message());
  return {};
}

}  // namespace sika::app
