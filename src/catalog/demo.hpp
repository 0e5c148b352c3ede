#pragma once
// The demo catalog (src/catalog/demo_catalog.json, embedded at build time): CMR and GAB (XAF),
// CIV and SEN (XOF), their mobile-money services and a Sika wallet service per country, and
// pricing rules for both operations and tiers 1 and 2. It is also a sample import file.
#include <string_view>

namespace sika::catalog {

// The text of demo_catalog.json, in the import format of store.hpp.
std::string_view demo_catalog_json();

}  // namespace sika::catalog
