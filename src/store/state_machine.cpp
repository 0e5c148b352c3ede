#include "store/state_machine.hpp"

#include <boost/json/string.hpp>

#include "store/outbox.hpp"

namespace sika::store::detail {

namespace bj = boost::json;

Result<std::int64_t> update_status(Conn& c, std::string_view table, std::span<const std::string_view> from,
                                   std::string_view to, const Change& change) {
  std::string sql = "UPDATE ";
  sql += table;
  sql += " SET status = ?";
  if (!change.set.empty()) sql += ", " + change.set;
  sql += change.where.empty() ? " WHERE" : " WHERE " + change.where + " AND";
  sql += from.size() == 1 ? " status = ?" : " status IN (";
  Params params;
  params.reserve(1 + change.set_params.size() + change.where_params.size() + from.size());
  params.emplace_back(std::string(to));
  params.insert(params.end(), change.set_params.begin(), change.set_params.end());
  params.insert(params.end(), change.where_params.begin(), change.where_params.end());
  for (std::size_t i = 0; i < from.size(); ++i) {
    if (from.size() > 1) sql += i == 0 ? "?" : ", ?";
    params.emplace_back(std::string(from[i]));
  }
  if (from.size() > 1) sql += ")";
  return c.exec(sql, params);
}

Status follow(Conn& c, std::string_view table, std::string_view event, const Effects& effects) {
  if (effects.then) SIKA_TRY(effects.then(c));
  if (event.empty()) {
    if (effects.event) return internal_error(bj::string("a move of " + std::string(table) + " with no event got one"));
    return {};
  }
  if (!effects.event)
    return internal_error(
        bj::string("a move of " + std::string(table) + " to emit " + std::string(event) + " got no event"));
  SIKA_ASSIGN_OR_RETURN(Event e, effects.event(c));
  SIKA_TRY(append_event(c, e.merchant_id, event, e.subject, e.payload, e.at));
  return {};
}

Error illegal(std::string_view table, std::string_view from, std::string_view to) {
  return internal_error(
      bj::string("illegal move of " + std::string(table) + ": " + std::string(from) + " -> " + std::string(to)));
}

Error mixed_events(std::string_view table, std::string_view to) {
  return internal_error(
      bj::string("the moves of " + std::string(table) + " to " + std::string(to) + " do not share one event"));
}

}  // namespace sika::store::detail
