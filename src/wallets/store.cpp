#include "wallets/store.hpp"

#include <limits>

#include "store/read.hpp"

namespace sika::wallets::tables {

namespace {
constexpr std::string_view kWalletColumns =
    "w.id, w.matricule, w.environment, w.msisdn, w.country, w.currency, w.email, w.created_at";
Wallet wallet_from(const store::Row& r, std::size_t i) {
  return Wallet{r.i64(i),     r.str(i + 1), r.str(i + 2), r.str(i + 3),
                r.str(i + 4), r.str(i + 5), r.str(i + 6), r.i64(i + 7)};
}

const std::string kLinkSelect =
    "SELECT l.id, l.reference, l.partner_id, m.matricule, m.name, l.status, l.currency, l.per_payment_limit, "
    "l.period_limit, l.period_ms, l.period_start, l.period_spent, l.confirmed_at, l.unlinked_at, l.unlinked_by, "
    "l.created_at, l.updated_at, " +
    std::string(kWalletColumns) +
    " FROM wlt_links l JOIN wlt_wallets w ON w.id = l.wallet_id JOIN merchants m ON m.id = l.partner_id ";

Link link_from(const store::Row& r) {
  Link l;
  l.id = r.i64(0);
  l.reference = r.str(1);
  l.partner_id = r.i64(2);
  l.partner = r.str(3);
  l.partner_name = r.str(4);
  l.status = r.str(5);
  l.currency = r.str(6);
  l.limits = Limits{r.i64(7), r.i64(8), r.i64(9)};
  l.period_start = r.i64(10);
  l.period_spent = r.i64(11);
  l.confirmed_at = r.opt_i64(12);
  l.unlinked_at = r.opt_i64(13);
  l.unlinked_by = r.opt_str(14).value_or("");
  l.created_at = r.i64(15);
  l.updated_at = r.i64(16);
  l.wallet = wallet_from(r, 17);
  return l;
}

Result<std::optional<Link>> one_link(store::Conn& c, std::string_view where, const store::Params& params) {
  return store::read_one(c, kLinkSelect + "WHERE " + std::string(where), params, link_from);
}
}  // namespace

Result<std::optional<Wallet>> find_wallet(store::Conn& c, std::string_view environment, std::string_view msisdn) {
  SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT " + std::string(kWalletColumns) +
                                                  " FROM wlt_wallets w WHERE w.environment = ? AND w.msisdn = ?",
                                              {std::string(environment), std::string(msisdn)}));
  if (!row) return std::optional<Wallet>{};
  return std::optional<Wallet>(wallet_from(*row, 0));
}

Result<std::optional<Wallet>> wallet_by_id(store::Conn& c, std::int64_t id) {
  SIKA_ASSIGN_OR_RETURN(
      auto row, c.query_one("SELECT " + std::string(kWalletColumns) + " FROM wlt_wallets w WHERE w.id = ?", {id}));
  if (!row) return std::optional<Wallet>{};
  return std::optional<Wallet>(wallet_from(*row, 0));
}

Result<Wallet> find_or_create_wallet(store::Conn& c, const Wallet& w) {
  SIKA_TRY(
      c.exec("INSERT INTO wlt_wallets (matricule, environment, msisdn, country, currency, email, created_at) "
             "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (environment, msisdn) DO NOTHING",
             {w.matricule, w.environment, w.msisdn, w.country, w.currency, w.email, w.created_at}));
  SIKA_ASSIGN_OR_RETURN(auto found, find_wallet(c, w.environment, w.msisdn));
  if (!found) return unavailable(std::string_view("the wallet was created concurrently; retry"));
  return std::move(*found);
}

Result<std::optional<Link>> link_of(store::Conn& c, std::int64_t partner_id, std::int64_t wallet_id) {
  return one_link(c, "l.partner_id = ? AND l.wallet_id = ?", {partner_id, wallet_id});
}

Result<std::optional<Link>> link_by_key_hash(store::Conn& c, std::string_view key_hash) {
  return one_link(c, "l.key_hash = ?", {std::string(key_hash)});
}

Result<std::optional<Link>> link_by_reference(store::Conn& c, std::string_view reference) {
  return one_link(c, "l.reference = ?", {std::string(reference)});
}

Result<std::vector<Link>> links_of_wallet(store::Conn& c, std::int64_t wallet_id) {
  return store::read_all(c, kLinkSelect + "WHERE l.wallet_id = ? ORDER BY l.id DESC", {wallet_id}, link_from);
}

Result<std::vector<Link>> links_of_partner(store::Conn& c, std::int64_t partner_id, std::string_view environment,
                                           std::optional<std::int64_t> before, int limit) {
  return store::read_all(
      c, kLinkSelect + "WHERE l.partner_id = ? AND w.environment = ? AND l.id < ? ORDER BY l.id DESC LIMIT ?",
      {partner_id, std::string(environment), before.value_or(std::numeric_limits<std::int64_t>::max()),
       std::int64_t{limit}},
      link_from);
}

Result<std::optional<std::int64_t>> insert_link(store::Conn& c, const Link& l, std::string_view key_hash,
                                                std::string_view nonce) {
  SIKA_ASSIGN_OR_RETURN(
      auto row,
      c.query_one(
          "INSERT INTO wlt_links (reference, partner_id, wallet_id, status, key_hash, key_nonce, currency, "
          "per_payment_limit, period_limit, period_ms, created_at, updated_at) "
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (partner_id, wallet_id) DO NOTHING "
          "RETURNING id",
          {l.reference, l.partner_id, l.wallet.id, std::string(kPending), std::string(key_hash), std::string(nonce),
           l.currency, l.limits.per_payment, l.limits.per_period, l.limits.period_ms, l.created_at, l.updated_at}));
  if (!row) return std::optional<std::int64_t>{};
  return std::optional<std::int64_t>(row->i64(0));
}

Result<bool> relink(store::Conn& c, std::int64_t id, const Limits& limits, std::string_view key_hash,
                    std::string_view nonce, std::int64_t now) {
  return store::transition(
      c, kLinkStatus, LinkStatus::unlinked, LinkStatus::pending,
      {"key_hash = ?, key_nonce = ?, per_payment_limit = ?, period_limit = ?, period_ms = ?, "
       "period_start = 0, period_spent = 0, confirmed_at = NULL, unlinked_at = NULL, "
       "unlinked_by = NULL, updated_at = ?",
       {std::string(key_hash), std::string(nonce), limits.per_payment, limits.per_period, limits.period_ms, now},
       "id = ?",
       {id}});
}

Result<bool> set_pending_limits(store::Conn& c, std::int64_t id, const Limits& limits, std::int64_t now) {
  SIKA_ASSIGN_OR_RETURN(
      auto n, c.exec("UPDATE wlt_links SET per_payment_limit = ?, period_limit = ?, period_ms = ?, "
                     "updated_at = ? WHERE id = ? AND status = ?",
                     {limits.per_payment, limits.per_period, limits.period_ms, now, id, std::string(kPending)}));
  return n == 1;
}

Result<std::string> key_nonce(store::Conn& c, std::int64_t id) {
  SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT key_nonce FROM wlt_links WHERE id = ?", {id}));
  if (!row) return not_found(boost::json::object{{"apikey", "no such link"}});
  return row->str(0);
}

Result<bool> activate(store::Conn& c, std::int64_t id, const Limits& limits, std::int64_t now,
                      const store::Effects& effects) {
  return store::transition(c, kLinkStatus, LinkStatus::pending, LinkStatus::active,
                           {"confirmed_at = ?, updated_at = ?",
                            {now, now},
                            "id = ? AND per_payment_limit = ? AND period_limit = ? AND period_ms = ?",
                            {id, limits.per_payment, limits.per_period, limits.period_ms}},
                           effects);
}

Result<bool> unlink(store::Conn& c, std::int64_t id, std::string_view by, std::int64_t now,
                    const store::Effects& effects) {
  return store::transition(
      c, kLinkStatus, {LinkStatus::pending, LinkStatus::active}, LinkStatus::unlinked,
      {"unlinked_at = ?, unlinked_by = ?, updated_at = ?", {now, std::string(by), now}, "id = ?", {id}}, effects);
}

Result<std::optional<std::int64_t>> take_budget(store::Conn& c, std::int64_t id, std::string_view key_hash,
                                                std::int64_t amount, std::int64_t now) {
  // Every SET expression reads the row as it was before the update (both backends), so the
  // window test is the same in the three places.
  SIKA_ASSIGN_OR_RETURN(
      auto row,
      c.query_one("UPDATE wlt_links SET "
                  "period_spent = CASE WHEN period_start + period_ms <= ? THEN ? ELSE period_spent + ? END, "
                  "period_start = CASE WHEN period_start + period_ms <= ? THEN ? ELSE period_start END, "
                  "updated_at = ? "
                  "WHERE id = ? AND key_hash = ? AND status = ? AND ? <= per_payment_limit AND "
                  "(CASE WHEN period_start + period_ms <= ? THEN ? ELSE period_spent + ? END) <= period_limit "
                  "RETURNING period_start",
                  {now, amount, amount, now, now, now, id, std::string(key_hash), std::string(kActive), amount, now,
                   amount, amount}));
  if (!row) return std::optional<std::int64_t>{};
  return std::optional<std::int64_t>(row->i64(0));
}

Status insert_session(store::Conn& c, std::string_view token_hash, std::int64_t wallet_id, std::int64_t expires_at,
                      std::int64_t now) {
  SIKA_TRY(c.exec("INSERT INTO wlt_sessions (token_hash, wallet_id, expires_at, created_at) VALUES (?, ?, ?, ?)",
                  {std::string(token_hash), wallet_id, expires_at, now}));
  return {};
}

Result<std::optional<std::int64_t>> session_wallet(store::Conn& c, std::string_view token_hash, std::int64_t now) {
  SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT wallet_id FROM wlt_sessions WHERE token_hash = ? AND "
                                              "expires_at > ?",
                                              {std::string(token_hash), now}));
  if (!row) return std::optional<std::int64_t>{};
  return std::optional<std::int64_t>(row->i64(0));
}

Status delete_session(store::Conn& c, std::string_view token_hash) {
  SIKA_TRY(c.exec("DELETE FROM wlt_sessions WHERE token_hash = ?", {std::string(token_hash)}));
  return {};
}

}  // namespace sika::wallets::tables
