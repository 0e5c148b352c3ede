#include "links/store.hpp"

#include "store/read.hpp"

namespace sika::links::tables {

namespace {

// The link's columns and its figures: completed collections made through it and what they
// collected (a payment refunded later still counts: it was paid), read from the collections
// themselves so the figures cannot drift from them.
constexpr std::string_view kSelect =
    "SELECT l.id, l.reference, l.short_code, l.merchant_id, l.environment, l.user_tier, l.status, l.amount, "
    "l.min_amount, l.max_amount, l.currency, l.provider, l.channel, l.fee_bearer, l.title, l.description, "
    "l.expires_at, l.max_usage, l.held, l.metadata, l.created_at, l.updated_at, "
    "(SELECT COUNT(t.id) FROM lnk_payments p JOIN pay_transactions t ON t.merchant_id = l.merchant_id "
    "AND t.environment = l.environment AND t.transaction_uuid = p.transaction_uuid "
    "WHERE p.link_id = l.id AND t.status IN ('COMPLETED', 'REFUNDED')), "
    "(SELECT COALESCE(SUM(t.amount), 0) FROM lnk_payments p JOIN pay_transactions t ON t.merchant_id = l.merchant_id "
    "AND t.environment = l.environment AND t.transaction_uuid = p.transaction_uuid "
    "WHERE p.link_id = l.id AND t.status IN ('COMPLETED', 'REFUNDED')) "
    "FROM lnk_links l ";

// The link's columns alone (figures 0): what paying and the public page need, one indexed row
// whatever the number of payments made through the link.
constexpr std::string_view kSelectBare =
    "SELECT l.id, l.reference, l.short_code, l.merchant_id, l.environment, l.user_tier, l.status, l.amount, "
    "l.min_amount, l.max_amount, l.currency, l.provider, l.channel, l.fee_bearer, l.title, l.description, "
    "l.expires_at, l.max_usage, l.held, l.metadata, l.created_at, l.updated_at, 0, 0 FROM lnk_links l ";

Link from_row(const store::Row& r) {
  Link l;
  l.id = r.i64(0);
  l.reference = r.str(1);
  l.short_code = r.str(2);
  l.merchant_id = r.i64(3);
  l.environment = r.str(4);
  l.user_tier = r.i64(5);
  l.status = r.str(6);
  l.amount = r.opt_i64(7);
  l.min_amount = r.opt_i64(8);
  l.max_amount = r.opt_i64(9);
  l.currency = r.str(10);
  l.provider = r.opt_str(11);
  l.channel = r.str(12);
  l.fee_bearer = r.str(13);
  l.title = r.str(14);
  l.description = r.str(15);
  l.expires_at = r.opt_i64(16);
  l.max_usage = r.opt_i64(17);
  l.held = r.i64(18);
  l.metadata = r.str(19);
  l.created_at = r.i64(20);
  l.updated_at = r.i64(21);
  l.payments_completed = r.i64(22);
  l.total_collected = r.i64(23);
  return l;
}

Result<std::optional<Link>> one(store::Conn& c, std::string_view select, const std::string& where,
                                const store::Params& params) {
  return store::read_one(c, std::string(select) + where, params, from_row);
}

}  // namespace

Result<std::optional<std::int64_t>> insert_link(store::Conn& c, const Link& l) {
  SIKA_ASSIGN_OR_RETURN(
      auto row,
      c.query_one("INSERT INTO lnk_links (reference, short_code, merchant_id, environment, user_tier, status, amount, "
                  "min_amount, max_amount, currency, provider, channel, fee_bearer, title, description, expires_at, "
                  "max_usage, held, metadata, created_at, updated_at) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?) "
                  "ON CONFLICT DO NOTHING RETURNING id",
                  {l.reference,
                   l.short_code,
                   l.merchant_id,
                   l.environment,
                   l.user_tier,
                   l.status,
                   store::opt(l.amount),
                   store::opt(l.min_amount),
                   store::opt(l.max_amount),
                   l.currency,
                   store::opt(l.provider),
                   l.channel,
                   l.fee_bearer,
                   l.title,
                   l.description,
                   store::opt(l.expires_at),
                   store::opt(l.max_usage),
                   l.metadata,
                   l.created_at,
                   l.updated_at}));
  if (!row) return std::optional<std::int64_t>{};
  return std::optional<std::int64_t>(row->i64(0));
}

Result<std::optional<Link>> by_short_code(store::Conn& c, std::string_view short_code) {
  return one(c, kSelectBare, "WHERE l.short_code = ?", {std::string(short_code)});
}

Result<std::optional<Link>> by_reference(store::Conn& c, std::int64_t merchant_id, std::string_view environment,
                                         std::string_view reference) {
  return one(c, kSelect, "WHERE l.reference = ? AND l.merchant_id = ? AND l.environment = ?",
             {std::string(reference), merchant_id, std::string(environment)});
}

Result<std::pair<std::vector<Link>, std::int64_t>> list(store::Conn& c, std::int64_t merchant_id,
                                                        std::string_view environment, const ListFilter& f,
                                                        std::int64_t now) {
  std::string where = "WHERE l.merchant_id = ? AND l.environment = ?";
  store::Params params{merchant_id, std::string(environment)};
  if (f.status) {
    // EXPIRED is derived from expires_at, so each status is a condition on both columns.
    if (*f.status == kExpired) {
      where += " AND l.status = 'ACTIVE' AND l.expires_at IS NOT NULL AND l.expires_at <= ?";
      params.emplace_back(now);
    } else if (*f.status == kActive) {
      where += " AND l.status = 'ACTIVE' AND (l.expires_at IS NULL OR l.expires_at > ?)";
      params.emplace_back(now);
    } else {
      where += " AND l.status = ?";
      params.emplace_back(*f.status);
    }
  }
  if (f.from) {
    where += " AND l.created_at >= ?";
    params.emplace_back(*f.from);
  }
  if (f.to) {
    where += " AND l.created_at <= ?";
    params.emplace_back(*f.to);
  }
  SIKA_ASSIGN_OR_RETURN(auto total_row, c.query_one("SELECT COUNT(*) FROM lnk_links l " + where, params));
  std::int64_t total = total_row ? total_row->i64(0) : 0;
  params.emplace_back(f.limit);
  params.emplace_back(f.offset);
  SIKA_ASSIGN_OR_RETURN(
      auto out,
      store::read_all(c, std::string(kSelect) + where + " ORDER BY l.id DESC LIMIT ? OFFSET ?", params, from_row));
  return std::make_pair(std::move(out), total);
}

Result<bool> update(store::Conn& c, std::int64_t link_id, const LinkUpdate& u, std::int64_t now) {
  std::string sets = "updated_at = ?";
  store::Params params{now};
  if (u.title) {
    sets += ", title = ?";
    params.emplace_back(*u.title);
  }
  if (u.description) {
    sets += ", description = ?";
    params.emplace_back(*u.description);
  }
  if (u.set_expiry) {
    sets += ", expires_at = ?";
    params.push_back(store::opt(u.expires_at));
  }
  params.emplace_back(link_id);
  SIKA_ASSIGN_OR_RETURN(auto n, c.exec("UPDATE lnk_links SET " + sets + " WHERE id = ?", params));
  return n == 1;
}

Result<bool> set_status(store::Conn& c, std::int64_t link_id, std::string_view status, std::int64_t now) {
  auto to = kLinkStatus.parse(status);
  if (!to) return internal_error(boost::json::string("no link status " + std::string(status)));
  return store::transition(c, kLinkStatus, {LinkStatus::active, LinkStatus::disabled}, *to,
                           {"updated_at = ?", {now}, "id = ?", {link_id}});
}

Result<bool> close_unpaid(store::Conn& c, std::string_view reference, std::int64_t now) {
  return store::transition(
      c, kLinkStatus, {LinkStatus::active, LinkStatus::disabled}, LinkStatus::disabled,
      {"updated_at = ?",
       {now},
       "reference = ? AND NOT EXISTS ("
       "SELECT 1 FROM lnk_payments a LEFT JOIN pay_transactions t ON t.merchant_id = lnk_links.merchant_id "
       "AND t.environment = lnk_links.environment AND t.transaction_uuid = a.transaction_uuid "
       "WHERE a.link_id = lnk_links.id AND ((t.id IS NULL AND a.state = 'RESERVED') OR "
       "t.status NOT IN ('FAILED', 'EXPIRED', 'CANCELLED')))",
       {std::string(reference)}});
}

Result<std::optional<std::int64_t>> insert_attempt(store::Conn& c, std::int64_t link_id, std::string_view payer_uuid,
                                                   std::string_view transaction_uuid, std::int64_t now) {
  SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("INSERT INTO lnk_payments (link_id, payer_uuid, transaction_uuid, state, "
                                              "reserved_at) VALUES (?, ?, ?, 'RESERVED', ?) "
                                              "ON CONFLICT (link_id, payer_uuid) DO NOTHING RETURNING id",
                                              {link_id, std::string(payer_uuid), std::string(transaction_uuid), now}));
  if (!row) return std::optional<std::int64_t>{};
  return std::optional<std::int64_t>(row->i64(0));
}

Result<std::optional<Attempt>> find_attempt(store::Conn& c, std::int64_t link_id, std::string_view payer_uuid) {
  SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT id, transaction_uuid, state FROM lnk_payments "
                                              "WHERE link_id = ? AND payer_uuid = ?",
                                              {link_id, std::string(payer_uuid)}));
  if (!row) return std::optional<Attempt>{};
  return std::optional<Attempt>(Attempt{row->i64(0), row->str(1), row->str(2)});
}

Result<bool> take_use(store::Conn& c, std::int64_t link_id, std::int64_t now) {
  SIKA_ASSIGN_OR_RETURN(auto n, c.exec("UPDATE lnk_links SET held = held + 1 WHERE id = ? AND status = 'ACTIVE' "
                                       "AND (expires_at IS NULL OR expires_at > ?) "
                                       "AND (max_usage IS NULL OR held < max_usage)",
                                       {link_id, now}));
  return n == 1;
}

Result<bool> release_attempt(store::Conn& c, std::int64_t link_id, std::int64_t attempt_id) {
  SIKA_ASSIGN_OR_RETURN(
      auto n, c.exec("UPDATE lnk_payments SET state = 'RELEASED' WHERE id = ? AND state = 'RESERVED'", {attempt_id}));
  if (n != 1) return false;
  SIKA_TRY(c.exec("UPDATE lnk_links SET held = held - 1 WHERE id = ?", {link_id}));
  return true;
}

Result<std::int64_t> release_ended(store::Conn& c, const Link& link, std::int64_t stale_before) {
  SIKA_ASSIGN_OR_RETURN(
      auto n,
      c.exec(
          "UPDATE lnk_payments SET state = 'RELEASED' WHERE link_id = ? AND state = 'RESERVED' AND ("
          "EXISTS (SELECT 1 FROM pay_transactions t WHERE t.merchant_id = ? AND t.environment = ? "
          "AND t.transaction_uuid = lnk_payments.transaction_uuid AND t.status IN ('FAILED', 'EXPIRED', 'CANCELLED')) "
          "OR (reserved_at < ? AND NOT EXISTS (SELECT 1 FROM pay_transactions t WHERE t.merchant_id = ? "
          "AND t.environment = ? AND t.transaction_uuid = lnk_payments.transaction_uuid)))",
          {link.id, link.merchant_id, link.environment, stale_before, link.merchant_id, link.environment}));
  if (n > 0) SIKA_TRY(c.exec("UPDATE lnk_links SET held = held - ? WHERE id = ?", {n, link.id}));
  return n;
}

}  // namespace sika::links::tables
