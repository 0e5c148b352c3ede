#pragma once
// The transactional outbox: events are rows written by the state change's own write unit.
// The webhook worker delivers them.
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "store/db.hpp"

namespace sika::store {

struct AppendedEvent {
  std::string event_id;   // "evt_..." unique
  std::int64_t sequence;  // 1, 2, ... per subject
};

// Appends an event inside the caller's write unit. `subject` orders events (e.g. a
// transaction_reference); sequence is the next number for that subject.
Result<AppendedEvent> append_event(Conn& conn, std::optional<std::int64_t> merchant_id, std::string_view event_type,
                                   std::string_view subject, const boost::json::object& payload, std::int64_t now_ms);

}  // namespace sika::store
