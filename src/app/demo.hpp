#pragma once
// The demo world: seeded idempotently at every `serve --demo FILE`, credentials written to FILE.
#include <boost/json.hpp>

#include <string>

#include "app/context.hpp"
#include "identity/model.hpp"
#include "web/router.hpp"

namespace sika::app {

// Seeds every component's demo data and writes the demo JSON to `file`.
Status seed_demo(Context& ctx, const web::Router& router, const std::string& file);

// A demo secret derived from the server secret: stable across restarts of the same database,
// different on every installation. Only its hash is stored.
std::string demo_secret(const Context& ctx, std::string_view label, std::size_t bytes = 32);

// Creates a demo user, or makes its password the demo one (the world is seeded at every start).
Status ensure_demo_user(Context& ctx, const identity::UserSpec& spec);
// Component seeders (app/demo_<component>.cpp), called in this order.
Status seed_merchant_demo(Context& ctx, boost::json::object& demo);
Status seed_identity_demo(Context& ctx, boost::json::object& demo);
Status seed_catalog_demo(Context& ctx, boost::json::object& demo);
Status seed_payments_demo(Context& ctx, boost::json::object& demo);
Status seed_links_demo(Context& ctx, boost::json::object& demo);
Status seed_billing_demo(Context& ctx, boost::json::object& demo);
Status seed_webhooks_demo(Context& ctx, boost::json::object& demo);
Status seed_wallets_demo(Context& ctx, boost::json::object& demo);
Status seed_dashboard_demo(Context& ctx, boost::json::object& demo);
Status seed_checkout_demo(Context& ctx, boost::json::object& demo);

}  // namespace sika::app
