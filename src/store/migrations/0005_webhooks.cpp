#include "store/migrations/all.hpp"

namespace sika::store::migrations {

extern const Migration k0005Webhooks{5, "webhooks", R"SQL(
CREATE TABLE webhooks_placeholder (id {{pk}})
)SQL"};

}  // namespace sika::store::migrations
