#include "store/outbox.hpp"

#include "core/json.hpp"

#include "core/random.hpp"

namespace sika::store {

Result<AppendedEvent> append_event(Conn& conn, std::optional<std::int64_t> merchant_id, std::string_view event_type,
                                   std::string_view subject, const boost::json::object& payload, std::int64_t now_ms) {
  // Inside the caller's write unit, so the number and the insert are one atomic step (SQLite's
  // single writer; PostgreSQL's SERIALIZABLE unit, run again if two units raced).
  SIKA_ASSIGN_OR_RETURN(auto next, conn.query_one("SELECT COALESCE(MAX(sequence), 0) + 1 FROM events WHERE subject = ?",
                                                  {std::string(subject)}));
  // Time first (as references are), so that the event_id index grows at its end.
  AppendedEvent event{"evt_" + sortable_time_prefix(now_ms) + random_token(12), next ? next->i64(0) : 1};
  SIKA_TRY(
      conn.exec("INSERT INTO events (event_id, merchant_id, event_type, subject, sequence, payload, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                {event.event_id, opt(merchant_id), std::string(event_type), std::string(subject), event.sequence,
                 json::dump(payload), now_ms}));
  return event;
}

}  // namespace sika::store
