#include "app/demo.hpp"

#include <cctype>
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

// The demo merchant `dm` in `environment` (created at the first start) and its API key.
Result<boost::json::object> ensure_demo_merchant(Context& ctx, store::Conn& c, const DemoMerchant& dm,
                                                 std::string_view environment, std::int64_t now) {
  SIKA_ASSIGN_OR_RETURN(auto found, merchant::find_by_matricule(c, dm.matricule));
  merchant::Merchant m;
  if (found) {
    m = *found;
  } else {
    SIKA_ASSIGN_OR_RETURN(
        m, merchant::create(c, {dm.matricule, dm.name, dm.email, {dm.country}, std::string(environment)}, now));
  }
  std::string api_key = merchant::key_prefix(merchant::KeyKind::merchant, m.environment) +
                        demo_secret(ctx, std::string("api_key:") + dm.matricule);
  SIKA_TRY(merchant::register_key(c, ctx.pepper, m.id, merchant::KeyKind::merchant, m.environment, api_key, now));
  boost::json::array countries;
  for (const auto& cc : m.countries) countries.push_back(boost::json::string(cc));
  return boost::json::object{
      {"matricule", m.matricule}, {"name", m.name}, {"api_key", api_key}, {"countries", countries}};
}

// A live merchant per configured connector instance: a prod merchant of the instance's country whose
// payments at that operator go through it (docs/operators.md, "Trying the live path"). Its
// matricule names the instance: MCH-LIVE-MTN-MOMO for connectors.mtn_momo.
Result<boost::json::object> ensure_live_merchant(Context& ctx, store::Conn& c, const Context::ConnectorInstance& ci,
                                                 std::int64_t now) {
  std::string upper;
  for (char ch : ci.name)
    upper.push_back(ch == '_' ? '-' : static_cast<char>(std::toupper(static_cast<unsigned char>(ch))));
  const std::string matricule = "MCH-LIVE-" + upper;
  const std::string name = "Boutique Akwa (" + ci.name + ", live)";
  const std::string email = "live-" + ci.name + "@akwa-douala.example";
  const DemoMerchant dm{matricule.c_str(), name.c_str(), email.c_str(), ci.country.c_str()};
  SIKA_ASSIGN_OR_RETURN(auto entry, ensure_demo_merchant(ctx, c, dm, "prod", now));
  entry["connector"] = ci.name;
  return entry;
}

Status seed_merchant_demo(Context& ctx, boost::json::object& demo) {
  boost::json::array merchants, live;
  std::string link_key;
  SIKA_TRY(ctx.db->write([&](store::Conn& c) -> Status {
    merchants.clear();
    live.clear();
    std::int64_t now = now_ms();
    for (const auto& dm : kMerchants) {
      SIKA_ASSIGN_OR_RETURN(auto entry, ensure_demo_merchant(ctx, c, dm, "sandbox", now));
      merchants.push_back(std::move(entry));
      if (link_key.empty()) {
        SIKA_ASSIGN_OR_RETURN(auto m, merchant::find_by_matricule(c, dm.matricule));
        link_key = merchant::key_prefix(merchant::KeyKind::link, m->environment) +
                   demo_secret(ctx, std::string("link_key:") + dm.matricule);
        SIKA_TRY(merchant::register_key(c, ctx.pepper, m->id, merchant::KeyKind::link, m->environment, link_key, now));
      }
    }
    for (const auto& ci : ctx.connectors) {
      if (ci.country.empty()) continue;  // an account of a country the demo catalog does not have
      SIKA_ASSIGN_OR_RETURN(auto entry, ensure_live_merchant(ctx, c, ci, now));
      live.push_back(std::move(entry));
    }
    return {};
  }));
  demo["merchants"] = std::move(merchants);
  if (!live.empty()) demo["live_merchants"] = std::move(live);
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
