#pragma once
#include "app/context.hpp"
#include "web/router.hpp"

namespace sika::app {

// Adds every route of every surface to `router` (mounts and CORS from the configuration).
void build_routes(web::Router& router, Context& ctx);

// The gateway's OpenAPI 3 document (docs/openapi.json, embedded at build time).
std::string_view openapi_document();
// docs/openapi-link.json, the link API's own document (served at {link_url}/openapi.json).
std::string_view openapi_link_document();
// docs/openapi-identity.json: the identity service's document (served at {auth_url}/openapi.json).
std::string_view openapi_identity_document();
// docs/openapi-checkout.json: the hosted checkout's document (served at {checkout_url}/openapi.json).
std::string_view openapi_checkout_document();

}  // namespace sika::app
