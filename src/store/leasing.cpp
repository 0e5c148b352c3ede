#include "store/leasing.hpp"

#include <algorithm>

namespace sika::store {

Status queue_isolation(Conn& conn) {
  // The isolation of a unit whose decisions are row locks and conditional writes.
  SIKA_TRY(counter_isolation(conn));
  return {};
}

std::string_view skip_locked(const Conn& conn) {
  return conn.dialect() == Dialect::postgres ? " FOR UPDATE SKIP LOCKED" : "";
}

std::string indexed_by(const Conn& conn, std::string_view index) {
  return conn.dialect() == Dialect::postgres ? std::string() : " INDEXED BY " + std::string(index);
}

std::string placeholders(std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += i ? ", ?" : "?";
  return s;
}

Result<std::vector<std::int64_t>> pick_due_per_group(Conn& conn, const GroupedPick& p) {
  std::vector<std::int64_t> ids;
  if (p.groups.empty() || p.limit <= 0) return ids;
  if (conn.dialect() == Dialect::postgres) {
    // One statement: a row per group with its quota, and a locked pick of each group's due rows.
    std::string q = "SELECT c.id FROM (VALUES ";
    Params params;
    for (std::size_t i = 0; i < p.groups.size(); ++i) {
      q += i ? ", (CAST(? AS BIGINT), CAST(? AS BIGINT))" : "(CAST(? AS BIGINT), CAST(? AS BIGINT))";
      params.emplace_back(p.groups[i].first);
      params.emplace_back(p.groups[i].second);
    }
    q += ") AS sika_pick(sika_group, sika_quota) CROSS JOIN LATERAL (SELECT z.id FROM " + std::string(p.table) +
         " z WHERE z." + std::string(p.group_column) + " = sika_pick.sika_group AND (" + std::string(p.due) +
         ") ORDER BY " + std::string(p.order_by) + " LIMIT sika_pick.sika_quota" + std::string(skip_locked(conn)) +
         ") c LIMIT ?";
    params.insert(params.end(), p.due_params.begin(), p.due_params.end());
    params.emplace_back(p.limit);
    SIKA_ASSIGN_OR_RETURN(auto rows, conn.query(q, params));
    for (const auto& r : rows) ids.push_back(r.i64(0));
    return ids;
  }
  // SQLite has no LATERAL; its write units are serialized, so one read per group is as safe.
  const std::string q = "SELECT id FROM " + std::string(p.table) + " WHERE " + std::string(p.group_column) +
                        " = ? AND (" + std::string(p.due) + ") ORDER BY " + std::string(p.order_by) + " LIMIT ?";
  for (const auto& [group, quota] : p.groups) {
    const std::int64_t room = std::min<std::int64_t>(quota, p.limit - static_cast<std::int64_t>(ids.size()));
    if (room <= 0) {
      if (static_cast<std::int64_t>(ids.size()) >= p.limit) break;
      continue;
    }
    Params params{group};
    params.insert(params.end(), p.due_params.begin(), p.due_params.end());
    params.emplace_back(room);
    SIKA_ASSIGN_OR_RETURN(auto rows, conn.query(q, params));
    for (const auto& r : rows) ids.push_back(r.i64(0));
  }
  return ids;
}

}  // namespace sika::store
