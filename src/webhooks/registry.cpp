#include "webhooks/registry.hpp"

#include <boost/json.hpp>

#include <algorithm>

#include "core/json.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "store/outbox.hpp"
#include "webhooks/signing.hpp"

namespace sika::webhooks {

namespace bj = boost::json;

const char* const kEndpointColumns =
    "e.id, e.public_id, e.merchant_id, e.url, e.description, e.event_types, e.enabled, e.disabled_reason, "
    "e.disabled_at, e.secret_created_at, e.previous_secret_expires_at, e.failing_since, e.last_success_at, "
    "e.last_failure_at, e.created_at, e.updated_at";

Endpoint endpoint_from_row(const store::Row& r, std::size_t i) {
  Endpoint e;
  e.row = r.i64(i + 0);
  e.id = r.str(i + 1);
  e.merchant_id = r.i64(i + 2);
  e.url = r.str(i + 3);
  e.description = r.str(i + 4);
  e.event_types = split_types(r.str(i + 5));
  e.enabled = r.boolean(i + 6);
  e.disabled_reason = r.opt_str(i + 7);
  e.disabled_at = r.opt_i64(i + 8);
  e.secret_created_at = r.i64(i + 9);
  e.previous_secret_expires_at = r.opt_i64(i + 10);
  e.failing_since = r.opt_i64(i + 11);
  e.last_success_at = r.opt_i64(i + 12);
  e.last_failure_at = r.opt_i64(i + 13);
  e.created_at = r.i64(i + 14);
  e.updated_at = r.i64(i + 15);
  return e;
}

namespace {

constexpr std::size_t kMaxDescription = 256;
constexpr std::size_t kMaxEventTypes = 50;

// Adds "AND <column> = ?" for a merchant scope.
void scope_clause(const Scope& scope, std::string_view column, std::string& sql, store::Params& params) {
  if (!scope) return;
  sql += " AND ";
  sql += column;
  sql += " = ?";
  params.emplace_back(*scope);
}

Result<std::optional<Endpoint>> find_endpoint(store::Conn& c, const Scope& scope, std::string_view id) {
  std::string sql = std::string("SELECT ") + kEndpointColumns +
                    " FROM webhook_endpoints e WHERE e.public_id = ? AND e.deleted_at IS NULL";
  store::Params params{std::string(id)};
  scope_clause(scope, "e.merchant_id", sql, params);
  SIKA_ASSIGN_OR_RETURN(auto row, c.query_one(sql, params));
  if (!row) return std::optional<Endpoint>{};
  return std::optional<Endpoint>(endpoint_from_row(*row));
}

Error endpoint_not_found(std::string_view id) {
  bj::object d;
  d["endpoint_id"] = "no endpoint '" + std::string(id) + "'";
  return not_found(std::move(d));
}

Status cancel_pending(store::Conn& c, std::int64_t endpoint_row, std::string_view why, std::int64_t now) {
  auto r =
      store::transition_all(c, kDeliveryStatus, {DeliveryStatus::pending}, DeliveryStatus::cancelled,
                            {"last_error = ?, completed_at = ?, updated_at = ?, lease_owner = NULL, lease_until = NULL",
                             {std::string(why), now, now},
                             "endpoint_row = ?",
                             {endpoint_row}});
  if (!r) return r.take_error();
  return {};
}

const char* const kDeliverySelect =
    "SELECT d.id, d.public_id, ev.event_id, ev.event_type, e.public_id, e.url, d.generation, d.status, d.attempts, "
    "d.next_attempt_at, d.last_attempt_at, d.last_status_code, d.last_error, d.created_at, d.completed_at "
    "FROM webhook_deliveries d JOIN events ev ON ev.id = d.event_row "
    "JOIN webhook_endpoints e ON e.id = d.endpoint_row";

Delivery delivery_from_row(const store::Row& r) {
  Delivery d;
  d.row = r.i64(0);
  d.id = r.str(1);
  d.event_id = r.str(2);
  d.event_type = r.str(3);
  d.endpoint_id = r.str(4);
  d.url = r.str(5);
  d.generation = r.i64(6);
  d.status = r.str(7);
  d.attempts = r.i64(8);
  if (d.status == kPending) d.next_attempt_at = r.opt_i64(9);
  d.last_attempt_at = r.opt_i64(10);
  d.last_status_code = r.opt_i64(11);
  d.last_error = r.opt_str(12);
  d.created_at = r.i64(13);
  d.completed_at = r.opt_i64(14);
  return d;
}

const char* const kEventSelect =
    "SELECT ev.id, ev.event_id, ev.event_type, ev.subject, ev.sequence, ev.payload, ev.created_at FROM events ev";

Event event_from_row(const store::Row& r) {
  Event e;
  e.row = r.i64(0);
  e.event_id = r.str(1);
  e.event_type = r.str(2);
  e.subject = r.str(3);
  e.sequence = r.i64(4);
  e.payload = r.str(5);
  e.created_at = r.i64(6);
  return e;
}

}  // namespace

Result<EndpointChange> parse_endpoint_change(const bj::object& body, bool creating) {
  json::FieldErrors errors;
  EndpointChange ch;
  for (const auto& [key, value] : body) {
    if (key != "url" && key != "event_types" && key != "description" && key != "enabled")
      errors.add(key, Reason::endpoint_field);
  }
  ch.url = json::get_string(body, "url", errors, creating);
  if (ch.url && ch.url->empty()) errors.add("url", Reason::not_empty);
  ch.description = json::get_string(body, "description", errors);
  if (ch.description && ch.description->size() > kMaxDescription)
    errors.add("description", reason::with(Reason::at_most_bytes, "max", std::to_string(kMaxDescription)));
  ch.enabled = json::get_bool(body, "enabled", errors);
  if (const bj::array* types = json::get_array(body, "event_types", errors)) {
    std::vector<std::string> list;
    bool ok = true;
    if (types->empty()) {
      errors.add("event_types", Reason::event_kinds_empty);
      ok = false;
    }
    if (types->size() > kMaxEventTypes) {
      errors.add("event_types", reason::with(Reason::event_kinds_max, "max", std::to_string(kMaxEventTypes)));
      ok = false;
    }
    for (const auto& t : *types) {
      if (!ok) break;
      if (!t.is_string() || !valid_type_pattern(t.as_string())) {
        errors.add("event_types", Reason::event_kind_pattern);
        ok = false;
        break;
      }
      std::string s(t.as_string());
      if (std::find(list.begin(), list.end(), s) == list.end()) list.push_back(std::move(s));
    }
    if (ok) {
      if (std::find(list.begin(), list.end(), "*") != list.end()) list = {"*"};
      ch.event_types = std::move(list);
    }
  }
  SIKA_TRY(errors.status());
  return ch;
}

Registry::Registry(store::Db& db, RegistryOptions options, std::shared_ptr<Resolver> resolver)
    : db_(db),
      options_(std::move(options)),
      box_(options_.pepper),
      resolver_(resolver ? std::move(resolver) : std::make_shared<SystemResolver>()) {}

Result<std::string> Registry::check(const std::string& url) {
  UrlPolicy policy;
  policy.allow_private_targets = options_.allow_private_targets;
  return check_url(url, policy, *resolver_);
}

Result<EndpointWithSecret> Registry::create(std::int64_t merchant_id, const EndpointChange& change, std::int64_t now,
                                            const std::optional<std::string>& given_secret) {
  if (!change.url) return field_error("url", Reason::required);
  if (given_secret) {
    auto key = secret_key_bytes(*given_secret);
    if (!key || key->size() < 24) return field_error("secret", Reason::webhook_secret);
  }
  // DNS resolution happens here, outside the write unit (no network I/O inside one).
  SIKA_ASSIGN_OR_RETURN(std::string url, check(*change.url));
  const std::string id = new_public_id("we_");
  const std::string secret = given_secret.value_or(generate_secret());
  const std::string sealed = box_.seal(id, secret);
  const std::vector<std::string> types = change.event_types.value_or(std::vector<std::string>{"*"});
  const bool enabled = change.enabled.value_or(true);
  std::optional<Endpoint> created;
  Status st = db_.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(
        auto count, c.query_one("SELECT COUNT(*) FROM webhook_endpoints WHERE merchant_id = ? AND deleted_at IS NULL",
                                {merchant_id}));
    if (count && count->i64(0) >= options_.max_endpoints_per_merchant) {
      bj::object d;
      d["url"] = "this merchant already has " + std::to_string(options_.max_endpoints_per_merchant) +
                 " endpoints (the maximum); delete one first";
      return conflict(std::move(d));
    }
    SIKA_TRY(
        c.exec("INSERT INTO webhook_endpoints (public_id, merchant_id, url, description, event_types, enabled, "
               "disabled_reason, disabled_at, secret_box, secret_created_at, created_at, updated_at) "
               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
               {id, merchant_id, url, change.description.value_or(""), join_types(types), std::int64_t{enabled ? 1 : 0},
                enabled ? store::Value(nullptr) : store::Value(std::string("merchant")),
                enabled ? store::Value(nullptr) : store::Value(now), sealed, now, now, now}));
    SIKA_ASSIGN_OR_RETURN(auto found, find_endpoint(c, merchant_id, id));
    if (!found) return internal_error("endpoint vanished after insert");
    created = std::move(found);
    return {};
  });
  if (!st) return st.take_error();
  return EndpointWithSecret{std::move(*created), secret};
}

Result<Listing<Endpoint>> Registry::list(Scope scope, std::int64_t limit, std::int64_t offset) {
  Listing<Endpoint> out;
  Status st = db_.read([&](store::Conn& c) -> Status {
    std::string where = " WHERE e.deleted_at IS NULL";
    store::Params params;
    scope_clause(scope, "e.merchant_id", where, params);
    SIKA_ASSIGN_OR_RETURN(auto total, c.query_one("SELECT COUNT(*) FROM webhook_endpoints e" + where, params));
    out.total = total ? total->i64(0) : 0;
    params.emplace_back(limit);
    params.emplace_back(offset);
    SIKA_ASSIGN_OR_RETURN(auto rows, c.query(std::string("SELECT ") + kEndpointColumns + " FROM webhook_endpoints e" +
                                                 where + " ORDER BY e.id LIMIT ? OFFSET ?",
                                             params));
    for (const auto& r : rows) out.items.push_back(endpoint_from_row(r));
    return {};
  });
  if (!st) return st.take_error();
  return out;
}

Result<Endpoint> Registry::get(Scope scope, std::string_view endpoint_id) {
  std::optional<Endpoint> found;
  Status st = db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(found, find_endpoint(c, scope, endpoint_id));
    return {};
  });
  if (!st) return st.take_error();
  if (!found) return endpoint_not_found(endpoint_id);
  return std::move(*found);
}

Result<Endpoint> Registry::update(Scope scope, std::string_view endpoint_id, const EndpointChange& change,
                                  std::int64_t now) {
  std::optional<std::string> url;
  if (change.url) {
    SIKA_ASSIGN_OR_RETURN(url, check(*change.url));
  }
  std::optional<Endpoint> updated;
  Status st = db_.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto found, find_endpoint(c, scope, endpoint_id));
    if (!found) return endpoint_not_found(endpoint_id);
    const Endpoint& e = *found;
    SIKA_TRY(
        c.exec("UPDATE webhook_endpoints SET url = ?, description = ?, event_types = ?, updated_at = ? WHERE id = ?",
               {url.value_or(e.url), change.description.value_or(e.description),
                join_types(change.event_types.value_or(e.event_types)), now, e.row}));
    if (change.enabled && *change.enabled && !e.enabled) {
      SIKA_TRY(c.exec(
          "UPDATE webhook_endpoints SET enabled = 1, disabled_reason = NULL, disabled_at = NULL, failing_since = NULL "
          "WHERE id = ?",
          {e.row}));
    } else if (change.enabled && !*change.enabled && e.enabled) {
      SIKA_TRY(disable_endpoint(c, e.row, scope ? "merchant" : "operator", now));
    }
    SIKA_ASSIGN_OR_RETURN(updated, find_endpoint(c, scope, endpoint_id));
    return {};
  });
  if (!st) return st.take_error();
  if (!updated) return endpoint_not_found(endpoint_id);
  return std::move(*updated);
}

Status Registry::remove(Scope scope, std::string_view endpoint_id, std::int64_t now) {
  return db_.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto found, find_endpoint(c, scope, endpoint_id));
    if (!found) return endpoint_not_found(endpoint_id);
    SIKA_TRY(c.exec("UPDATE webhook_endpoints SET deleted_at = ?, enabled = 0, updated_at = ? WHERE id = ?",
                    {now, now, found->row}));
    return cancel_pending(c, found->row, "endpoint deleted", now);
  });
}

Result<EndpointWithSecret> Registry::rotate_secret(Scope scope, std::string_view endpoint_id,
                                                   std::optional<std::int64_t> overlap_ms, std::int64_t now) {
  const std::int64_t overlap = overlap_ms.value_or(options_.secret_overlap_ms);
  if (overlap < 0 || overlap > options_.max_secret_overlap_ms)
    return field_error(
        "overlap_seconds",
        Problem(Reason::between, {{"min", "0"}, {"max", std::to_string(options_.max_secret_overlap_ms / 1000)}}));
  const std::string secret = generate_secret();
  const std::string sealed = box_.seal(endpoint_id, secret);
  std::optional<Endpoint> updated;
  Status st = db_.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto found, find_endpoint(c, scope, endpoint_id));
    if (!found) return endpoint_not_found(endpoint_id);
    // The outgoing secret becomes the previous one; a secret rotated out earlier is dropped.
    SIKA_TRY(c.exec(
        "UPDATE webhook_endpoints SET previous_secret_box = CASE WHEN ? > 0 THEN secret_box ELSE NULL END, "
        "previous_secret_expires_at = CASE WHEN ? > 0 THEN ? ELSE NULL END, secret_box = ?, secret_created_at = ?, "
        "updated_at = ? WHERE id = ?",
        {overlap, overlap, now + overlap, sealed, now, now, found->row}));
    SIKA_ASSIGN_OR_RETURN(updated, find_endpoint(c, scope, endpoint_id));
    return {};
  });
  if (!st) return st.take_error();
  return EndpointWithSecret{std::move(*updated), secret};
}

Result<Listing<Delivery>> Registry::list_deliveries(Scope scope, const DeliveryFilter& filter, std::int64_t limit,
                                                    std::int64_t offset) {
  if (filter.status && *filter.status != kPending && *filter.status != kSucceeded && *filter.status != kFailed &&
      *filter.status != kCancelled)
    return field_error("status", Reason::delivery_status);
  Listing<Delivery> out;
  Status st = db_.read([&](store::Conn& c) -> Status {
    std::string where = " WHERE 1 = 1";
    store::Params params;
    scope_clause(scope, "d.merchant_id", where, params);
    if (filter.endpoint_id) where += " AND e.public_id = ?", params.emplace_back(*filter.endpoint_id);
    if (filter.event_id) where += " AND ev.event_id = ?", params.emplace_back(*filter.event_id);
    if (filter.status) where += " AND d.status = ?", params.emplace_back(*filter.status);
    if (filter.subject) where += " AND ev.subject = ?", params.emplace_back(*filter.subject);
    SIKA_ASSIGN_OR_RETURN(auto total, c.query_one("SELECT COUNT(*) FROM webhook_deliveries d JOIN events ev ON "
                                                  "ev.id = d.event_row JOIN webhook_endpoints e ON e.id = "
                                                  "d.endpoint_row" +
                                                      where,
                                                  params));
    out.total = total ? total->i64(0) : 0;
    params.emplace_back(limit);
    params.emplace_back(offset);
    SIKA_ASSIGN_OR_RETURN(
        auto rows, c.query(std::string(kDeliverySelect) + where + " ORDER BY d.id DESC LIMIT ? OFFSET ?", params));
    for (const auto& r : rows) out.items.push_back(delivery_from_row(r));
    return {};
  });
  if (!st) return st.take_error();
  return out;
}

Result<DeliveryDetail> Registry::get_delivery(Scope scope, std::string_view delivery_id) {
  std::optional<DeliveryDetail> out;
  Status st = db_.read([&](store::Conn& c) -> Status {
    std::string sql = std::string(kDeliverySelect) + " WHERE d.public_id = ?";
    store::Params params{std::string(delivery_id)};
    scope_clause(scope, "d.merchant_id", sql, params);
    SIKA_ASSIGN_OR_RETURN(auto row, c.query_one(sql, params));
    if (!row) return {};
    DeliveryDetail detail;
    detail.delivery = delivery_from_row(*row);
    SIKA_ASSIGN_OR_RETURN(auto attempts,
                          c.query("SELECT attempt, started_at, latency_ms, status_code, outcome, error, "
                                  "response_excerpt FROM webhook_attempts WHERE delivery_row = ? ORDER BY id",
                                  {detail.delivery.row}));
    for (const auto& a : attempts) {
      Attempt at;
      at.attempt = a.i64(0);
      at.started_at = a.i64(1);
      at.latency_ms = a.i64(2);
      at.status_code = a.opt_i64(3);
      at.outcome = a.str(4);
      at.error = a.opt_str(5);
      at.response_excerpt = a.opt_str(6);
      detail.attempts.push_back(std::move(at));
    }
    SIKA_ASSIGN_OR_RETURN(auto ev, c.query_one(std::string(kEventSelect) + " JOIN webhook_deliveries d ON d.event_row "
                                                                           "= ev.id WHERE d.id = ?",
                                               {detail.delivery.row}));
    if (ev) detail.event = event_from_row(*ev);
    out = std::move(detail);
    return {};
  });
  if (!st) return st.take_error();
  if (!out) {
    bj::object d;
    d["delivery_id"] = "no delivery '" + std::string(delivery_id) + "'";
    return not_found(std::move(d));
  }
  return std::move(*out);
}

Result<Listing<Event>> Registry::list_events(Scope scope, const std::optional<std::string>& event_type,
                                             std::int64_t limit, std::int64_t offset) {
  Listing<Event> out;
  Status st = db_.read([&](store::Conn& c) -> Status {
    std::string where = " WHERE ev.merchant_id IS NOT NULL";
    store::Params params;
    scope_clause(scope, "ev.merchant_id", where, params);
    if (event_type) where += " AND ev.event_type = ?", params.emplace_back(*event_type);
    SIKA_ASSIGN_OR_RETURN(auto total, c.query_one("SELECT COUNT(*) FROM events ev" + where, params));
    out.total = total ? total->i64(0) : 0;
    params.emplace_back(limit);
    params.emplace_back(offset);
    SIKA_ASSIGN_OR_RETURN(auto rows,
                          c.query(std::string(kEventSelect) + where + " ORDER BY ev.id DESC LIMIT ? OFFSET ?", params));
    for (const auto& r : rows) out.items.push_back(event_from_row(r));
    return {};
  });
  if (!st) return st.take_error();
  return out;
}

Result<std::vector<Delivery>> Registry::redeliver(Scope scope, std::string_view event_id,
                                                  const std::optional<std::string>& endpoint_id, std::int64_t now) {
  std::vector<Delivery> out;
  Status st = db_.write([&](store::Conn& c) -> Status {
    out.clear();
    std::string sql =
        "SELECT ev.id, ev.event_type, ev.merchant_id FROM events ev WHERE ev.event_id = ? AND ev.merchant_id IS NOT "
        "NULL";
    store::Params params{std::string(event_id)};
    scope_clause(scope, "ev.merchant_id", sql, params);
    SIKA_ASSIGN_OR_RETURN(auto ev, c.query_one(sql, params));
    if (!ev) {
      bj::object d;
      d["event_id"] = "no event '" + std::string(event_id) + "'";
      return not_found(std::move(d));
    }
    const std::int64_t event_row = ev->i64(0);
    const std::string type = ev->str(1);
    const std::int64_t merchant_id = ev->i64(2);
    std::vector<std::int64_t> targets;
    if (endpoint_id) {
      SIKA_ASSIGN_OR_RETURN(auto e, find_endpoint(c, merchant_id, *endpoint_id));
      if (!e) return endpoint_not_found(*endpoint_id);
      if (!e->enabled) {
        bj::object d;
        d["endpoint_id"] = "is disabled; enable it before asking for a redelivery";
        return conflict(std::move(d));
      }
      targets.push_back(e->row);
    } else {
      SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT id, event_types FROM webhook_endpoints WHERE merchant_id = ? "
                                               "AND enabled = 1 AND deleted_at IS NULL ORDER BY id",
                                               {merchant_id}));
      for (const auto& r : rows)
        if (matches(split_types(r.str(1)), type)) targets.push_back(r.i64(0));
      if (targets.empty()) {
        bj::object d;
        d["event_id"] = "no enabled endpoint subscribes to '" + type + "'";
        return conflict(std::move(d));
      }
    }
    for (std::int64_t target : targets) {
      const std::string id = new_public_id("wd_");
      SIKA_TRY(c.exec(
          "INSERT INTO webhook_deliveries (public_id, event_row, endpoint_row, merchant_id, generation, status, "
          "attempts, next_attempt_at, created_at, updated_at) SELECT ?, ?, ?, ?, COALESCE(MAX(generation), 0) + 1, "
          "'pending', 0, ?, ?, ? FROM webhook_deliveries WHERE event_row = ? AND endpoint_row = ?",
          {id, event_row, target, merchant_id, now, now, now, event_row, target}));
      SIKA_ASSIGN_OR_RETURN(auto row, c.query_one(std::string(kDeliverySelect) + " WHERE d.public_id = ?", {id}));
      if (row) out.push_back(delivery_from_row(*row));
    }
    return {};
  });
  if (!st) return st.take_error();
  return out;
}

std::vector<std::string> Registry::signing_keys(std::string_view endpoint_id, std::string_view secret_box,
                                                const std::optional<std::string>& previous_box,
                                                std::optional<std::int64_t> previous_expires_at,
                                                std::int64_t now) const {
  std::vector<std::string> keys;
  if (auto s = box_.open(endpoint_id, secret_box))
    if (auto k = secret_key_bytes(*s)) keys.push_back(std::move(*k));
  if (previous_box && previous_expires_at && *previous_expires_at > now)
    if (auto s = box_.open(endpoint_id, *previous_box))
      if (auto k = secret_key_bytes(*s)) keys.push_back(std::move(*k));
  return keys;
}

Result<bool> disable_endpoint(store::Conn& c, std::int64_t endpoint_row, std::string_view reason, std::int64_t now) {
  SIKA_ASSIGN_OR_RETURN(auto changed, c.exec("UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ?, "
                                             "disabled_at = ?, updated_at = ? WHERE id = ? AND enabled = 1",
                                             {std::string(reason), now, now, endpoint_row}));
  if (changed == 0) return false;
  SIKA_TRY(cancel_pending(c, endpoint_row, "endpoint disabled (" + std::string(reason) + ")", now));
  if (reason == "gone" || reason == "failing") {
    SIKA_ASSIGN_OR_RETURN(
        auto row, c.query_one(std::string("SELECT ") + kEndpointColumns + " FROM webhook_endpoints e WHERE e.id = ?",
                              {endpoint_row}));
    if (!row) return true;
    Endpoint e = endpoint_from_row(*row);
    bj::object payload;
    payload["endpoint_id"] = e.id;
    payload["url"] = e.url;
    payload["reason"] = std::string(reason);
    payload["disabled_at"] = iso8601(now);
    payload["failing_since"] = e.failing_since ? bj::value(iso8601(*e.failing_since)) : bj::value(nullptr);
    SIKA_TRY(store::append_event(c, e.merchant_id, "endpoint.disabled", e.id, payload, now));
  }
  return true;
}

}  // namespace sika::webhooks
