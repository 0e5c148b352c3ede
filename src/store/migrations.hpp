#pragma once
// Versioned schema migrations. SQL is shared by both dialects; these tokens are
// replaced before running:
//   {{pk}}    an auto-increment 64-bit primary key column type
//   {{blob}}  binary column type (BLOB / BYTEA)
// Each component owns one migration file under migrations/; versions never change once released.
#include <string_view>
#include <vector>

namespace sika::store {

struct Migration {
  int version;
  std::string_view name;
  std::string_view sql;  // several statements separated by ";\n"
};

// All migrations in ascending version order.
const std::vector<Migration>& all_migrations();

}  // namespace sika::store
