#include "merchant/merchant.hpp"

#include "core/crypto.hpp"
#include "core/random.hpp"
#include "core/time_zone.hpp"

#include <algorithm>

namespace sika::merchant {

Result<bool> set_active(store::Conn& c, std::int64_t id, bool active) {
  auto n = c.exec("UPDATE merchants SET active = ?, grants_version = grants_version + 1 WHERE id = ?",
                  {std::int64_t{active ? 1 : 0}, id});
  if (!n) return n.take_error();
  return *n > 0;
}

Result<bool> set_grants(store::Conn& c, std::int64_t id, const std::vector<std::string>& countries, std::int64_t tier) {
  auto n = c.exec("UPDATE merchants SET countries = ?, tier = ?, grants_version = grants_version + 1 WHERE id = ?",
                  {join_countries(countries), tier, id});
  if (!n) return n.take_error();
  return *n > 0;
}

std::string time_zone_of(const Merchant& m) {
  if (!m.time_zone.empty() && tz::find(m.time_zone)) return m.time_zone;
  return std::string(m.countries.empty() ? std::string_view("UTC") : tz::of_country(m.countries.front()));
}

Result<bool> set_time_zone(store::Conn& c, std::int64_t id, std::string_view zone) {
  auto n = c.exec("UPDATE merchants SET time_zone = ? WHERE id = ?", {std::string(zone), id});
  if (!n) return n.take_error();
  return *n > 0;
}

namespace {
constexpr std::string_view kColumns =
    "id, matricule, name, email, countries, environment, active, created_at, tier, grants_version, time_zone";

Merchant from_row(const store::Row& r) {
  Merchant m;
  m.id = r.i64(0);
  m.matricule = r.str(1);
  m.name = r.str(2);
  m.email = r.str(3);
  m.countries = split_countries(r.str(4));
  m.environment = r.str(5);
  m.active = r.boolean(6);
  m.created_at = r.i64(7);
  m.tier = r.i64(8);
  m.grants_version = r.i64(9);
  m.time_zone = r.str(10);
  return m;
}

Result<std::optional<Merchant>> find_one(store::Conn& c, std::string_view where, const store::Params& params) {
  auto row = c.query_one("SELECT " + std::string(kColumns) + " FROM merchants WHERE " + std::string(where), params);
  if (!row) return row.take_error();
  if (!*row) return std::optional<Merchant>{};
  return std::optional<Merchant>{from_row(**row)};
}
}  // namespace

std::string join_countries(const std::vector<std::string>& countries) {
  std::string out;
  for (const auto& c : countries) out += (out.empty() ? "" : ",") + c;
  return out;
}

std::vector<std::string> split_countries(std::string_view csv) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < csv.size()) {
    std::size_t end = csv.find(',', pos);
    if (end == std::string_view::npos) end = csv.size();
    if (end > pos) out.emplace_back(csv.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

Result<Merchant> create(store::Conn& c, const NewMerchant& m, std::int64_t now) {
  std::string matricule = m.matricule.empty() ? random_reference("MCH", 8) : m.matricule;
  auto row = c.query_one(
      "INSERT INTO merchants (matricule, name, email, countries, environment, active, created_at) "
      "VALUES (?, ?, ?, ?, ?, 1, ?) RETURNING " +
          std::string(kColumns),
      {matricule, m.name, m.email, join_countries(m.countries), m.environment, now});
  if (!row) return row.take_error();
  return from_row(**row);
}

Result<std::optional<Merchant>> find_by_matricule(store::Conn& c, std::string_view matricule) {
  return find_one(c, "matricule = ?", {std::string(matricule)});
}

Result<std::optional<Merchant>> find_by_id(store::Conn& c, std::int64_t id) { return find_one(c, "id = ?", {id}); }

Result<std::vector<Merchant>> list(store::Conn& c) {
  auto rows = c.query("SELECT " + std::string(kColumns) + " FROM merchants ORDER BY id");
  if (!rows) return rows.take_error();
  std::vector<Merchant> out;
  for (const auto& r : *rows) out.push_back(from_row(r));
  return out;
}

namespace {
std::string_view kind_name(KeyKind kind) { return kind == KeyKind::link ? "link" : "merchant"; }
}  // namespace

std::string key_prefix(KeyKind kind, std::string_view environment) {
  return std::string(kind == KeyKind::link ? "lk_" : "sk_") + (environment == "prod" ? "live_" : "test_");
}

Result<std::int64_t> register_key(store::Conn& c, std::string_view pepper, std::int64_t merchant_id, KeyKind kind,
                                  std::string_view environment, std::string_view key, std::int64_t now) {
  std::string hash = crypto::secret_hash(pepper, key);
  auto existing = c.query_one("SELECT id FROM api_keys WHERE secret_hash = ?", {hash});
  if (!existing) return existing.take_error();
  if (*existing) return (*existing)->i64(0);
  auto row = c.query_one(
      "INSERT INTO api_keys (merchant_id, kind, display_prefix, secret_hash, environment, created_at) "
      "VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
      {merchant_id, std::string(kind_name(kind)), std::string(key.substr(0, std::min<std::size_t>(key.size(), 14))),
       hash, std::string(environment), now});
  if (!row) return row.take_error();
  return (*row)->i64(0);
}

Result<IssuedKey> issue_key(store::Conn& c, std::string_view pepper, std::int64_t merchant_id, KeyKind kind,
                            std::string_view environment, std::int64_t now) {
  std::string key = key_prefix(kind, environment) + random_token(32);
  auto id = register_key(c, pepper, merchant_id, kind, environment, key, now);
  if (!id) return id.take_error();
  return IssuedKey{*id, key};
}

Result<std::optional<Merchant>> authenticate_key(store::Conn& c, std::string_view pepper, std::string_view key,
                                                 KeyKind kind) {
  if (key.size() < 16 || key.size() > 128) return std::optional<Merchant>{};
  // The keyed hash is the lookup key: the index compares hashes, never the secret itself.
  return find_one(c,
                  "active = 1 AND id = (SELECT merchant_id FROM api_keys WHERE secret_hash = ? AND kind = ? "
                  "AND revoked_at IS NULL)",
                  {crypto::secret_hash(pepper, key), std::string(kind_name(kind))});
}

Status revoke_key(store::Conn& c, std::int64_t key_id, std::int64_t now) {
  auto n = c.exec("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", {now, key_id});
  if (!n) return n.take_error();
  if (*n == 0) return not_found("api key not found or already revoked");
  return {};
}

Result<std::vector<KeyInfo>> list_keys(store::Conn& c, std::int64_t merchant_id) {
  auto rows = c.query(
      "SELECT id, kind, display_prefix, environment, created_at, revoked_at FROM api_keys WHERE merchant_id = ? "
      "ORDER BY id DESC",
      {merchant_id});
  if (!rows) return rows.take_error();
  std::vector<KeyInfo> out;
  out.reserve(rows->size());
  for (const auto& r : *rows)
    out.push_back(KeyInfo{r.i64(0), r.str(1) == "link" ? KeyKind::link : KeyKind::merchant, r.str(2), r.str(3),
                          r.i64(4), r.opt_i64(5)});
  return out;
}

}  // namespace sika::merchant
