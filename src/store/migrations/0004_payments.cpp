#include "store/migrations/all.hpp"

namespace sika::store::migrations {

extern const Migration k0004Payments{4, "payments", R"SQL(
CREATE TABLE payments_placeholder (id {{pk}})
)SQL"};

}  // namespace sika::store::migrations
