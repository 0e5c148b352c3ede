#include "store/migrations/all.hpp"

namespace sika::store::migrations {

extern const Migration k0002Identity{2, "identity", R"SQL(
CREATE TABLE identity_placeholder (id {{pk}})
)SQL"};

}  // namespace sika::store::migrations
