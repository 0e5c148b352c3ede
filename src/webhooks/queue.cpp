#include "webhooks/queue.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "store/leasing.hpp"
#include "webhooks/registry.hpp"

namespace sika::webhooks {

namespace {

using store::placeholders;

constexpr std::size_t kMaxGaps = 10'000;
constexpr std::int64_t kMaxGapRun = 1'000;  // a larger jump in ids is not tracked id by id

// Gaps are "id:first_seen_ms" pairs separated by ';'.
std::map<std::int64_t, std::int64_t> parse_gaps(std::string_view text) {
  std::map<std::int64_t, std::int64_t> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(';', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(pos, end - pos);
    std::size_t colon = item.find(':');
    std::int64_t id = 0, seen = 0;
    if (colon != std::string_view::npos && std::from_chars(item.data(), item.data() + colon, id).ec == std::errc() &&
        std::from_chars(item.data() + colon + 1, item.data() + item.size(), seen).ec == std::errc())
      out[id] = seen;
    pos = end + 1;
  }
  return out;
}

std::string format_gaps(const std::map<std::int64_t, std::int64_t>& gaps) {
  std::string out;
  for (const auto& [id, seen] : gaps) {
    if (!out.empty()) out.push_back(';');
    out += std::to_string(id) + ":" + std::to_string(seen);
  }
  return out;
}

struct EventRef {
  std::int64_t row;
  std::int64_t merchant_id;
  std::string type;
  std::int64_t created_at;
};

struct EndpointRef {
  std::int64_t row;
  std::vector<std::string> types;
  std::int64_t created_at;
};

// Inserts one row per item, `chunk` rows per statement: head, then `tuple` per item (bind
// appends that item's `width` values), then tail. Returns how many rows were inserted.
template <class Item, class Bind>
Result<std::int64_t> insert_chunked(store::Conn& c, std::string_view head, std::string_view tuple,
                                    std::string_view tail, const std::vector<Item>& items, std::size_t chunk,
                                    std::size_t width, Bind bind) {
  std::int64_t total = 0;
  for (std::size_t i = 0; i < items.size(); i += chunk) {
    std::size_t n = std::min(chunk, items.size() - i);
    std::string sql(head);
    store::Params params;
    params.reserve(n * width);
    for (std::size_t k = 0; k < n; ++k) {
      if (k) sql += ", ";
      sql += tuple;
      bind(items[i + k], params);
    }
    sql += tail;
    SIKA_ASSIGN_OR_RETURN(auto inserted, c.exec(sql, params));
    total += inserted;
  }
  return total;
}

}  // namespace

namespace {

// What the fan-out read: the cursor (last event, gaps, version) and the events to deliver.
struct FanoutRead {
  std::int64_t last = 0, version = 0;
  std::map<std::int64_t, std::int64_t> gaps;
  std::vector<EventRef> events;
  std::size_t fresh_rows = 0;
};

constexpr const char* kEventCols = "SELECT id, merchant_id, event_type, created_at FROM events WHERE ";

// Appends the events that filled gaps since (500 ids per query) and forgets those gaps.
Status read_gap_events(store::Conn& c, FanoutRead& f) {
  if (f.gaps.empty()) return {};
  std::vector<std::int64_t> ids;
  for (const auto& [id, seen] : f.gaps) ids.push_back(id);
  for (std::size_t i = 0; i < ids.size(); i += 500) {
    std::size_t n = std::min<std::size_t>(500, ids.size() - i);
    store::Params params(ids.begin() + static_cast<std::ptrdiff_t>(i),
                         ids.begin() + static_cast<std::ptrdiff_t>(i + n));
    SIKA_ASSIGN_OR_RETURN(auto rows, c.query(std::string(kEventCols) + "id IN (" + placeholders(n) + ")", params));
    for (const auto& r : rows) {
      f.events.push_back({r.i64(0), r.is_null(1) ? 0 : r.i64(1), r.str(2), r.i64(3)});
      f.gaps.erase(r.i64(0));
    }
  }
  return {};
}

// Reads the cursor, the events of its gaps, then up to o.batch events past it (in id order),
// noting skipped ids as gaps (first seen at now).
Status read_fanout(store::Conn& c, const FanoutOptions& o, std::int64_t now, FanoutRead& f) {
  f.events.clear();
  SIKA_ASSIGN_OR_RETURN(auto state,
                        c.query_one("SELECT last_event, gaps, version FROM webhook_fanout WHERE name = 'events'"));
  if (!state) return internal_error("webhook_fanout row missing");
  f.last = state->i64(0);
  f.gaps = parse_gaps(state->str(1));
  f.version = state->i64(2);
  SIKA_TRY(read_gap_events(c, f));
  SIKA_ASSIGN_OR_RETURN(
      auto rows, c.query(std::string(kEventCols) + "id > ? ORDER BY id LIMIT ?", {f.last, std::int64_t{o.batch}}));
  std::int64_t expected = f.last + 1;
  for (const auto& r : rows) {
    const std::int64_t id = r.i64(0);
    // Ids skipped here may belong to transactions not yet committed: look again next time.
    if (id > expected && id - expected <= kMaxGapRun)
      for (std::int64_t g = expected; g < id && f.gaps.size() < kMaxGaps; ++g) f.gaps.emplace(g, now);
    expected = id + 1;
    f.events.push_back({id, r.is_null(1) ? 0 : r.i64(1), r.str(2), r.i64(3)});
  }
  f.fresh_rows = rows.size();
  if (!rows.empty()) f.last = std::max(f.last, rows.back().i64(0));
  return {};
}

// Takes the fan-out lease (false when another owner holds it), then moves the cursor; a conflict
// when the cursor moved since it was read.
Result<bool> lease_and_move_cursor(store::Conn& c, const FanoutOptions& o, std::int64_t now, const FanoutRead& f,
                                   const std::string& gaps_text) {
  SIKA_ASSIGN_OR_RETURN(auto leased,
                        c.exec("UPDATE webhook_fanout SET lease_owner = ?, lease_until = ? WHERE name = 'events' AND "
                               "(lease_owner IS NULL OR lease_owner = ? OR lease_until IS NULL OR lease_until < ?)",
                               {o.owner, now + o.lease_ms, o.owner, now}));
  if (leased == 0) return false;
  SIKA_ASSIGN_OR_RETURN(auto moved, c.exec("UPDATE webhook_fanout SET last_event = ?, gaps = ?, version = version + 1, "
                                           "updated_at = ? WHERE name = 'events' AND version = ?",
                                           {f.last, gaps_text, now, f.version}));
  if (moved != 1) return conflict("the fan-out cursor moved concurrently");
  return true;
}

struct NewDelivery {
  std::int64_t event_row, endpoint_row, merchant_id;
};

// The deliveries the events make, in event order: one per enabled endpoint of the event's merchant
// that existed when the event was made and subscribes to its type.
Result<std::vector<NewDelivery>> match_endpoints(store::Conn& c, const std::vector<EventRef>& events,
                                                 const std::set<std::int64_t>& merchants) {
  std::map<std::int64_t, std::vector<EndpointRef>> endpoints;
  store::Params params(merchants.begin(), merchants.end());
  SIKA_ASSIGN_OR_RETURN(auto eps, c.query("SELECT id, merchant_id, event_types, created_at FROM webhook_endpoints "
                                          "WHERE enabled = 1 AND deleted_at IS NULL AND merchant_id IN (" +
                                              placeholders(merchants.size()) + ")",
                                          params));
  for (const auto& r : eps) endpoints[r.i64(1)].push_back({r.i64(0), split_types(r.str(2)), r.i64(3)});
  std::vector<NewDelivery> fresh;
  for (const auto& e : events) {
    auto it = endpoints.find(e.merchant_id);
    if (it == endpoints.end()) continue;
    for (const auto& ep : it->second)
      if (ep.created_at <= e.created_at && matches(ep.types, e.type)) fresh.push_back({e.row, ep.row, e.merchant_id});
  }
  return fresh;
}

// Inserts the deliveries 200 rows per statement; one already there (same event, endpoint and
// generation) is kept. Returns how many were inserted.
Result<int> insert_deliveries(store::Conn& c, const std::vector<NewDelivery>& fresh, std::int64_t now) {
  SIKA_ASSIGN_OR_RETURN(
      auto inserted,
      insert_chunked(c,
                     "INSERT INTO webhook_deliveries (public_id, event_row, endpoint_row, merchant_id, generation, "
                     "status, attempts, next_attempt_at, created_at, updated_at) VALUES ",
                     "(?, ?, ?, ?, 0, 'pending', 0, ?, ?, ?)",
                     " ON CONFLICT (event_row, endpoint_row, generation) DO NOTHING", fresh, 200, 7,
                     [&](const NewDelivery& d, store::Params& values) {
                       values.insert(values.end(),
                                     {new_public_id("wd_"), d.event_row, d.endpoint_row, d.merchant_id, now, now, now});
                     }));
  return static_cast<int>(inserted);
}

}  // namespace

Result<FanoutResult> fan_out(store::Db& db, const FanoutOptions& o, std::int64_t now) {
  // Events are immutable once committed, so they are read in a read transaction (on PostgreSQL
  // a REPEATABLE READ snapshot that takes no predicate locks, so the fan-out never makes a
  // payment's SERIALIZABLE unit fail); the write unit then checks that the cursor has not moved.
  FanoutRead f;
  Status rs = db.read([&](store::Conn& c) -> Status { return read_fanout(c, o, now, f); });
  if (!rs) return rs.take_error();
  std::erase_if(f.gaps, [&](const auto& g) { return g.second + o.gap_ttl_ms < now; });

  FanoutResult result;
  result.events = static_cast<int>(f.fresh_rows);
  result.more = static_cast<int>(f.fresh_rows) >= o.batch;
  const std::string gaps_text = format_gaps(f.gaps);
  std::set<std::int64_t> merchants;
  for (const auto& e : f.events)
    if (e.merchant_id != 0) merchants.insert(e.merchant_id);

  Status st = db.write([&](store::Conn& c) -> Status {
    result.leased = true;
    result.deliveries = 0;
    SIKA_TRY(store::queue_isolation(c));
    SIKA_ASSIGN_OR_RETURN(result.leased, lease_and_move_cursor(c, o, now, f, gaps_text));
    if (!result.leased || merchants.empty()) return {};
    SIKA_ASSIGN_OR_RETURN(auto fresh, match_endpoints(c, f.events, merchants));
    SIKA_ASSIGN_OR_RETURN(result.deliveries, insert_deliveries(c, fresh, now));
    return {};
  });
  if (!st) return st.take_error();
  return result;
}

namespace {

// Endpoints with due work (at most o.limit, none of o.exclude_endpoints), round-robin from
// o.after_endpoint so that no endpoint starves.
Result<store::Rows> due_endpoints(store::Conn& c, const ClaimOptions& o, std::int64_t now) {
  std::string sql =
      "SELECT e.id FROM webhook_endpoints e WHERE e.enabled = 1 AND e.deleted_at IS NULL AND EXISTS (SELECT 1 FROM "
      "webhook_deliveries z WHERE z.endpoint_row = e.id AND z.status = 'pending' AND z.next_attempt_at <= ?)";
  store::Params params{now};
  if (!o.exclude_endpoints.empty()) {
    sql += " AND e.id NOT IN (" + placeholders(o.exclude_endpoints.size()) + ")";
    params.insert(params.end(), o.exclude_endpoints.begin(), o.exclude_endpoints.end());
  }
  sql += " ORDER BY CASE WHEN e.id > ? THEN 0 ELSE 1 END, e.id LIMIT ?";
  params.emplace_back(o.after_endpoint);
  params.emplace_back(std::int64_t{o.limit});
  return c.query(sql, params);
}

// The due deliveries of those endpoints, up to each endpoint's limit; rows another node is
// claiming right now are skipped, not waited for.
Result<std::vector<std::int64_t>> pick_due(store::Conn& c, const ClaimOptions& o, const store::Rows& due,
                                           std::int64_t now) {
  auto limit_of = [&](std::int64_t endpoint) -> std::int64_t {
    for (const auto& [e, n] : o.endpoint_limits)
      if (e == endpoint) return n;
    return o.per_endpoint;
  };
  store::GroupedPick pick;
  pick.table = "webhook_deliveries";
  pick.group_column = "endpoint_row";
  pick.due = "status = 'pending' AND next_attempt_at <= ?";
  pick.due_params = {now};
  pick.order_by = "next_attempt_at";
  pick.limit = o.limit;
  for (const auto& e : due) pick.groups.emplace_back(e.i64(0), limit_of(e.i64(0)));
  return store::pick_due_per_group(c, pick);
}

// Leases the deliveries still pending and due; returns the ids it leased.
Result<store::Rows> lease_deliveries(store::Conn& c, const ClaimOptions& o, const std::vector<std::int64_t>& ids,
                                     std::int64_t now, std::int64_t lease_until) {
  store::Params up{o.owner, lease_until, lease_until, now};
  up.insert(up.end(), ids.begin(), ids.end());
  up.emplace_back(now);
  // A claimed delivery's due time is its lease expiry: if the worker dies, it is due again then.
  return c.query(
      "UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ?, next_attempt_at = ?, "
      "updated_at = ? WHERE id IN (" +
          placeholders(ids.size()) + ") AND status = 'pending' AND next_attempt_at <= ? RETURNING id",
      up);
}

// A row of read_claimed's query, leased by o.owner until lease_until.
Claimed claimed_from_row(const store::Row& r, const ClaimOptions& o, std::int64_t lease_until) {
  Claimed cl;
  cl.delivery_row = r.i64(0);
  cl.delivery_id = r.str(1);
  cl.attempt = static_cast<int>(r.i64(2)) + 1;
  cl.lease_owner = o.owner;
  cl.lease_until = lease_until;
  cl.endpoint_row = r.i64(3);
  cl.merchant_id = r.i64(4);
  cl.endpoint_id = r.str(5);
  cl.url = r.str(6);
  cl.secret_box = r.str(7);
  cl.previous_secret_box = r.opt_str(8);
  cl.previous_secret_expires_at = r.opt_i64(9);
  cl.event.row = r.i64(10);
  cl.event.event_id = r.str(11);
  cl.event.event_type = r.str(12);
  cl.event.subject = r.str(13);
  cl.event.sequence = r.i64(14);
  cl.event.payload = r.str(15);
  cl.event.created_at = r.i64(16);
  return cl;
}

// Appends the leased deliveries with their endpoint and event, by endpoint then delivery id.
Status read_claimed(store::Conn& c, const ClaimOptions& o, const store::Rows& claimed, std::int64_t lease_until,
                    std::vector<Claimed>& out) {
  store::Params sel;
  for (const auto& r : claimed) sel.emplace_back(r.i64(0));
  SIKA_ASSIGN_OR_RETURN(
      auto rows,
      c.query("SELECT d.id, d.public_id, d.attempts, d.endpoint_row, d.merchant_id, e.public_id, e.url, e.secret_box, "
              "e.previous_secret_box, e.previous_secret_expires_at, ev.id, ev.event_id, ev.event_type, ev.subject, "
              "ev.sequence, ev.payload, ev.created_at FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = "
              "d.endpoint_row JOIN events ev ON ev.id = d.event_row WHERE d.id IN (" +
                  placeholders(sel.size()) + ") ORDER BY d.endpoint_row, d.id",
              sel));
  for (const auto& r : rows) out.push_back(claimed_from_row(r, o, lease_until));
  return {};
}

}  // namespace

Result<std::vector<Claimed>> claim(store::Db& db, const ClaimOptions& o, std::int64_t now) {
  std::vector<Claimed> out;
  Status st = db.write([&](store::Conn& c) -> Status {
    out.clear();
    SIKA_TRY(store::queue_isolation(c));
    SIKA_ASSIGN_OR_RETURN(auto due, due_endpoints(c, o, now));
    if (due.empty()) return {};
    SIKA_ASSIGN_OR_RETURN(auto ids, pick_due(c, o, due, now));
    if (ids.empty()) return {};
    const std::int64_t lease_until = now + o.lease_ms;
    SIKA_ASSIGN_OR_RETURN(auto claimed, lease_deliveries(c, o, ids, now, lease_until));
    if (claimed.empty()) return {};
    return read_claimed(c, o, claimed, lease_until, out);
  });
  if (!st) return st.take_error();
  return out;
}

namespace {

// What a batch of attempts says of one endpoint.
struct Health {
  bool success = false;
  bool gone = false;
  std::int64_t first_failure = 0;
};

// Puts each deferred attempt's delivery back to pending a second after it finished (in the
// results' order), and lists the attempts that were made.
Result<std::vector<const AttemptResult*>> release_deferred(store::Conn& c, const std::vector<AttemptResult>& results,
                                                           std::int64_t now) {
  std::vector<const AttemptResult*> made;
  made.reserve(results.size());
  for (const auto& r : results) {
    if (r.outcome != "deferred") {
      made.push_back(&r);
      continue;
    }
    SIKA_TRY(
        c.exec("UPDATE webhook_deliveries SET lease_owner = NULL, lease_until = NULL, next_attempt_at = ?, "
               "updated_at = ? WHERE id = ? AND lease_owner = ? AND status = 'pending'",
               {r.finished_at + 1000, now, r.delivery_row, r.lease_owner}));
  }
  return made;
}

// Inserts one webhook_attempts row per attempt made, 100 rows per statement.
Status insert_attempts(store::Conn& c, const std::vector<const AttemptResult*>& made, const std::string& worker) {
  auto inserted = insert_chunked(
      c,
      "INSERT INTO webhook_attempts (delivery_row, attempt, started_at, latency_ms, status_code, outcome, error, "
      "response_excerpt, worker) VALUES ",
      "(?, ?, ?, ?, ?, ?, ?, ?, ?)", "", made, 100, 9, [&](const AttemptResult* a, store::Params& params) {
        const auto& r = *a;
        params.insert(params.end(), {r.delivery_row, std::int64_t{r.attempt}, r.started_at, r.latency_ms,
                                     r.status_code ? store::Value(std::int64_t{*r.status_code}) : store::Value(nullptr),
                                     r.outcome, store::opt(r.error), store::opt(r.response_excerpt), worker});
      });
  if (!inserted) return inserted.take_error();
  return {};
}

// Moves a made attempt's delivery out of pending when it is done, or schedules its next attempt
// after `delay` (none: it failed for good); notes the outcome in its endpoint's health.
Status settle_delivery(store::Conn& c, const AttemptResult& r, std::optional<std::int64_t> delay, std::int64_t now,
                       Health& h, RecordResult& out) {
  std::string status(kPending);
  std::optional<std::int64_t> next;
  bool done = false;
  if (r.outcome == "succeeded") {
    status = kSucceeded, done = true;
    h.success = true;
  } else if (r.outcome == "gone") {
    status = kFailed, done = true;
    h.gone = true;
  } else {
    if (h.first_failure == 0 || r.finished_at < h.first_failure) h.first_failure = r.finished_at;
    if (delay)
      next = r.finished_at + *delay;
    else
      status = kFailed, done = true;
  }
  std::optional<std::string> last_error = r.error;
  if (!last_error && r.status_code && r.outcome != "succeeded") last_error = "HTTP " + std::to_string(*r.status_code);
  if (r.outcome == "gone") last_error = "410 Gone: the endpoint asked to stop";
  const auto to = kDeliveryStatus.parse(status);
  if (!to) return internal_error(boost::json::string("no delivery status " + std::string(status)));
  SIKA_ASSIGN_OR_RETURN(
      bool changed,
      store::transition(c, kDeliveryStatus, DeliveryStatus::pending, *to,
                        {"attempts = ?, next_attempt_at = ?, lease_owner = NULL, lease_until = NULL, "
                         "last_attempt_at = ?, last_status_code = ?, last_error = ?, updated_at = ?, completed_at = ?",
                         {std::int64_t{r.attempt}, next.value_or(r.finished_at), r.started_at,
                          r.status_code ? store::Value(std::int64_t{*r.status_code}) : store::Value(nullptr),
                          done && r.outcome == "succeeded" ? store::Value(nullptr) : store::opt(last_error), now,
                          done ? store::Value(now) : store::Value(nullptr)},
                         "id = ? AND lease_owner = ?",
                         {r.delivery_row, r.lease_owner}}));
  if (!changed) ++out.stale;
  ++out.recorded;
  return {};
}

// Records one endpoint's health: a success clears its failing state; a failure starts it, and
// disables the endpoint once it has been failing for o.disable_after_ms; a 410 disables it.
Status record_health(store::Conn& c, std::int64_t row, const Health& h, const RecordOptions& o, std::int64_t now,
                     RecordResult& out) {
  if (h.success) {
    // Written at most once a minute per endpoint while healthy: fewer writes on a hot row.
    SIKA_TRY(
        c.exec("UPDATE webhook_endpoints SET failing_since = NULL, last_success_at = ? WHERE id = ? AND "
               "(failing_since IS NOT NULL OR last_success_at IS NULL OR last_success_at < ?)",
               {now, row, now - 60'000}));
  } else if (h.first_failure != 0) {
    SIKA_TRY(
        c.exec("UPDATE webhook_endpoints SET last_failure_at = ?, failing_since = COALESCE(failing_since, ?) "
               "WHERE id = ?",
               {now, h.first_failure, row}));
    SIKA_ASSIGN_OR_RETURN(auto e,
                          c.query_one("SELECT failing_since, enabled FROM webhook_endpoints WHERE id = ?", {row}));
    if (e && e->boolean(1) && !e->is_null(0) && now - e->i64(0) >= o.disable_after_ms) {
      SIKA_ASSIGN_OR_RETURN(bool disabled, disable_endpoint(c, row, "failing", now));
      if (disabled) out.disabled_endpoints.push_back(row);
    }
  }
  if (h.gone) {
    SIKA_ASSIGN_OR_RETURN(bool disabled, disable_endpoint(c, row, "gone", now));
    if (disabled) out.disabled_endpoints.push_back(row);
  }
  return {};
}

}  // namespace

Result<RecordResult> record(store::Db& db, const std::vector<AttemptResult>& results, const RecordOptions& o,
                            std::int64_t now) {
  RecordResult out;
  if (results.empty()) return out;
  // Jitter is drawn once, outside the unit, so a retried unit schedules the same times.
  std::vector<std::optional<std::int64_t>> delays;
  delays.reserve(results.size());
  for (const auto& r : results) delays.push_back(o.schedule.delay_ms(r.attempt));

  Status st = db.write([&](store::Conn& c) -> Status {
    out = RecordResult{};
    SIKA_TRY(store::queue_isolation(c));
    SIKA_ASSIGN_OR_RETURN(auto made, release_deferred(c, results, now));
    SIKA_TRY(insert_attempts(c, made, o.worker));
    std::map<std::int64_t, Health> health;
    for (std::size_t i = 0; i < results.size(); ++i) {
      if (results[i].outcome == "deferred") continue;
      SIKA_TRY(settle_delivery(c, results[i], delays[i], now, health[results[i].endpoint_row], out));
    }
    for (const auto& [row, h] : health) SIKA_TRY(record_health(c, row, h, o, now, out));
    return {};
  });
  if (!st) return st.take_error();
  return out;
}

Status release(store::Db& db, const std::vector<Claimed>& claimed, std::int64_t now) {
  if (claimed.empty()) return {};
  return db.write([&](store::Conn& c) -> Status {
    SIKA_TRY(store::queue_isolation(c));
    for (const auto& cl : claimed)
      SIKA_TRY(
          c.exec("UPDATE webhook_deliveries SET lease_owner = NULL, lease_until = NULL, next_attempt_at = ?, "
                 "updated_at = ? WHERE id = ? AND lease_owner = ? AND status = 'pending'",
                 {now, now, cl.delivery_row, cl.lease_owner}));
    return {};
  });
}

}  // namespace sika::webhooks
