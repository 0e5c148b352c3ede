#pragma once
// Reading query results into a component's own types with its row reader (`T from(const Row&)`).
#include <optional>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "store/db.hpp"

namespace sika::store {

// The row `sql` selects, read by `from`; nullopt when it selects none.
template <class T>
Result<std::optional<T>> read_one(Conn& conn, std::string_view sql, const Params& params, T (*from)(const Row&)) {
  SIKA_ASSIGN_OR_RETURN(std::optional<Row> row, conn.query_one(sql, params));
  if (!row) return std::optional<T>();
  return std::optional<T>(from(*row));
}

// Every row `sql` selects, in its order, each read by `from`.
template <class T>
Result<std::vector<T>> read_all(Conn& conn, std::string_view sql, const Params& params, T (*from)(const Row&)) {
  SIKA_ASSIGN_OR_RETURN(Rows rows, conn.query(sql, params));
  std::vector<T> out;
  out.reserve(rows.size());
  for (const Row& r : rows) out.push_back(from(r));
  return out;
}

}  // namespace sika::store
