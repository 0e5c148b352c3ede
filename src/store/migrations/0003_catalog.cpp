#include "store/migrations/all.hpp"

namespace sika::store::migrations {

extern const Migration k0003Catalog{3, "catalog", R"SQL(
CREATE TABLE catalog_placeholder (id {{pk}})
)SQL"};

}  // namespace sika::store::migrations
