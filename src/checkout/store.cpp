#include "checkout/store.hpp"

#include <boost/json.hpp>

#include "core/json.hpp"
#include "store/read.hpp"

namespace sika::checkout::tables {

namespace bj = boost::json;

namespace {

constexpr std::string_view kSelect =
    "SELECT id, reference, merchant_id, environment, order_id, fingerprint, status, amount, currency, description, "
    "shop_name, success_url, failure_url, customer, line, area, fee_bearer, settlement_mode, distribution, attempt, "
    "expires_at, created_at, updated_at, fx_quotes FROM chk_sessions ";

std::string customer_text(const Customer& c) {
  return json::dump(bj::object{{"name", c.name}, {"email", c.email}, {"phone", c.phone}});
}

Customer customer_of(const std::string& text) {
  Customer c;
  auto v = json::parse(text);
  if (!v || !v->is_object()) return c;
  const auto& o = v->as_object();
  auto str = [&](std::string_view k) {
    const bj::value* f = o.if_contains(k);
    return f && f->is_string() ? std::string(f->get_string()) : std::string();
  };
  c.name = str("name");
  c.email = str("email");
  c.phone = str("phone");
  return c;
}

std::string lines_text(const std::vector<payments::SplitLine>& lines) {
  bj::array a;
  for (const auto& l : lines)
    a.push_back(bj::object{{"matricule", l.matricule}, {"rate_ppm", l.rate_ppm}, {"description", l.description}});
  return json::dump(a);
}

std::vector<payments::SplitLine> lines_of(const std::string& text) {
  std::vector<payments::SplitLine> out;
  auto v = json::parse(text);
  if (!v || !v->is_array()) return out;
  for (const auto& item : v->as_array()) {
    if (!item.is_object()) continue;
    const auto& o = item.as_object();
    payments::SplitLine l;
    l.position = static_cast<int>(out.size());
    if (const auto* m = o.if_contains("matricule"); m && m->is_string()) l.matricule = std::string(m->get_string());
    if (const auto* r = o.if_contains("rate_ppm"); r && r->is_int64()) l.rate_ppm = r->get_int64();
    if (const auto* d = o.if_contains("description"); d && d->is_string()) l.description = std::string(d->get_string());
    l.metadata = "{}";
    out.push_back(std::move(l));
  }
  return out;
}

Session from_row(const store::Row& r) {
  Session s;
  s.id = r.i64(0);
  s.reference = r.str(1);
  s.merchant_id = r.i64(2);
  s.environment = r.str(3);
  s.order_id = r.str(4);
  s.fingerprint = r.str(5);
  s.status = r.str(6);
  s.amount = r.i64(7);
  s.currency = r.str(8);
  s.description = r.str(9);
  s.shop_name = r.str(10);
  s.success_url = r.str(11);
  s.failure_url = r.str(12);
  s.customer = customer_of(r.str(13));
  s.line = r.str(14);
  s.area = r.str(15);
  s.fee_bearer = r.str(16);
  s.settlement_mode = r.str(17);
  s.distribution = lines_of(r.str(18));
  s.attempt = r.i64(19);
  s.expires_at = r.i64(20);
  s.created_at = r.i64(21);
  s.updated_at = r.i64(22);
  s.quotes = quotes_of(r.str(23));
  return s;
}

Result<std::optional<Session>> one(store::Conn& c, const std::string& where, const store::Params& params) {
  return store::read_one(c, std::string(kSelect) + where, params, from_row);
}

}  // namespace

Result<std::optional<std::int64_t>> insert(store::Conn& c, const Session& s) {
  SIKA_ASSIGN_OR_RETURN(
      auto row,
      c.query_one("INSERT INTO chk_sessions (reference, merchant_id, environment, order_id, fingerprint, status, "
                  "amount, currency, description, shop_name, success_url, failure_url, customer, line, area, "
                  "fee_bearer, settlement_mode, distribution, attempt, expires_at, created_at, updated_at, fx_quotes) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?) "
                  "ON CONFLICT DO NOTHING RETURNING id",
                  {s.reference,
                   s.merchant_id,
                   s.environment,
                   s.order_id,
                   s.fingerprint,
                   s.status,
                   s.amount,
                   s.currency,
                   s.description,
                   s.shop_name,
                   s.success_url,
                   s.failure_url,
                   customer_text(s.customer),
                   s.line,
                   s.area,
                   s.fee_bearer,
                   s.settlement_mode,
                   lines_text(s.distribution),
                   s.expires_at,
                   s.created_at,
                   s.updated_at,
                   quotes_text(s.quotes)}));
  if (!row) return std::optional<std::int64_t>{};
  return std::optional<std::int64_t>(row->i64(0));
}

Result<bool> reopen(store::Conn& c, std::int64_t id, std::int64_t attempt, const Session& s) {
  SIKA_ASSIGN_OR_RETURN(
      auto n,
      c.exec("UPDATE chk_sessions SET reference = ?, fingerprint = ?, status = 'OPEN', amount = ?, "
             "currency = ?, description = ?, shop_name = ?, success_url = ?, failure_url = ?, customer = ?, "
             "line = ?, area = ?, fee_bearer = ?, settlement_mode = ?, distribution = ?, expires_at = ?, "
             "attempt = attempt + 1, updated_at = ?, fx_quotes = ? WHERE id = ? AND attempt = ? AND status <> 'PAID'",
             {s.reference, s.fingerprint, s.amount, s.currency, s.description, s.shop_name, s.success_url,
              s.failure_url, customer_text(s.customer), s.line, s.area, s.fee_bearer, s.settlement_mode,
              lines_text(s.distribution), s.expires_at, s.updated_at, quotes_text(s.quotes), id, attempt}));
  return n == 1;
}

Result<std::optional<Session>> by_reference(store::Conn& c, std::string_view reference) {
  return one(c, "WHERE reference = ?", {std::string(reference)});
}

Result<std::vector<Session>> list(store::Conn& c, std::int64_t merchant_id, std::string_view environment,
                                  std::optional<std::int64_t> before, int limit) {
  std::string sql = std::string(kSelect) + "WHERE merchant_id = ? AND environment = ?";
  store::Params params{merchant_id, std::string(environment)};
  if (before) {
    sql += " AND id < ?";
    params.emplace_back(*before);
  }
  sql += " ORDER BY id DESC LIMIT ?";
  params.emplace_back(std::in_place_type<std::int64_t>, limit);
  return store::read_all(c, sql, params, from_row);
}

Result<std::optional<Session>> by_order(store::Conn& c, std::int64_t merchant_id, std::string_view environment,
                                        std::string_view order_id) {
  return one(c, "WHERE merchant_id = ? AND environment = ? AND order_id = ?",
             {merchant_id, std::string(environment), std::string(order_id)});
}

Result<bool> take_attempt(store::Conn& c, std::int64_t id, std::int64_t seen, std::int64_t now) {
  SIKA_ASSIGN_OR_RETURN(auto n, c.exec("UPDATE chk_sessions SET attempt = attempt + 1, updated_at = ? WHERE id = ? "
                                       "AND attempt = ? AND status = 'OPEN' AND expires_at > ?",
                                       {now, id, seen, now}));
  return n == 1;
}

Result<bool> mark_paid(store::Conn& c, std::int64_t id, std::int64_t now) {
  return store::transition(c, kSessionStatus, SessionStatus::open, SessionStatus::paid,
                           {"updated_at = ?", {now}, "id = ?", {id}});
}

Result<bool> cancel(store::Conn& c, std::int64_t id, std::int64_t seen, std::int64_t now) {
  return store::transition(c, kSessionStatus, SessionStatus::open, SessionStatus::cancelled,
                           {"updated_at = ?", {now}, "id = ? AND attempt = ?", {id, seen}});
}

Result<std::optional<std::pair<std::int64_t, std::string>>> latest_secret(store::Conn& c, std::int64_t merchant_id) {
  SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT version, salt FROM chk_secrets WHERE merchant_id = ? "
                                              "ORDER BY version DESC LIMIT 1",
                                              {merchant_id}));
  if (!row) return std::optional<std::pair<std::int64_t, std::string>>{};
  return std::optional<std::pair<std::int64_t, std::string>>(std::pair{row->i64(0), row->str(1)});
}

Result<bool> insert_secret(store::Conn& c, std::int64_t merchant_id, std::int64_t version, std::string_view salt,
                           std::int64_t now) {
  SIKA_ASSIGN_OR_RETURN(auto n, c.exec("INSERT INTO chk_secrets (merchant_id, version, salt, created_at) "
                                       "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                                       {merchant_id, version, std::string(salt), now}));
  return n == 1;
}

Result<std::vector<std::string>> domains(store::Conn& c, std::int64_t merchant_id) {
  SIKA_ASSIGN_OR_RETURN(auto rows,
                        c.query("SELECT domain FROM chk_domains WHERE merchant_id = ? ORDER BY domain", {merchant_id}));
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.str(0));
  return out;
}

Status add_domain(store::Conn& c, std::int64_t merchant_id, std::string_view domain, std::int64_t now) {
  SIKA_TRY(c.exec("INSERT INTO chk_domains (merchant_id, domain, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                  {merchant_id, std::string(domain), now}));
  return {};
}

Result<bool> remove_domain(store::Conn& c, std::int64_t merchant_id, std::string_view domain) {
  SIKA_ASSIGN_OR_RETURN(auto n, c.exec("DELETE FROM chk_domains WHERE merchant_id = ? AND domain = ?",
                                       {merchant_id, std::string(domain)}));
  return n == 1;
}

Result<bool> signed_only(store::Conn& c, std::int64_t merchant_id) {
  SIKA_ASSIGN_OR_RETURN(auto row,
                        c.query_one("SELECT signed_only FROM chk_settings WHERE merchant_id = ?", {merchant_id}));
  return row && row->boolean(0);
}

Result<bool> set_signed_only(store::Conn& c, std::int64_t merchant_id, bool on, std::string_view by, std::int64_t now) {
  const std::int64_t value = on ? 1 : 0;
  SIKA_ASSIGN_OR_RETURN(auto n, c.exec("UPDATE chk_settings SET signed_only = ?, updated_at = ?, updated_by = ? "
                                       "WHERE merchant_id = ? AND signed_only <> ?",
                                       {value, now, std::string(by), merchant_id, value}));
  if (n == 1) return true;
  // No row yet (off): a row that turns it on is a change, one that keeps it off is not.
  SIKA_ASSIGN_OR_RETURN(auto made, c.exec("INSERT INTO chk_settings (merchant_id, signed_only, updated_at, updated_by) "
                                          "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                                          {merchant_id, value, now, std::string(by)}));
  return made == 1 && on;
}

}  // namespace sika::checkout::tables
