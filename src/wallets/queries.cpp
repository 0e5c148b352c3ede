#include "wallets/queries.hpp"

#include <boost/json.hpp>

#include <algorithm>

#include "core/time.hpp"
#include "payments/model.hpp"

namespace sika::wallets::queries {

namespace bj = boost::json;

namespace {
std::string owner_of(const Wallet& w) { return "customer:" + w.msisdn; }
}  // namespace

Result<std::vector<Balance>> balances(store::Conn& c, const Wallet& w) {
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT currency, balance FROM ledger_accounts WHERE owner = ? AND "
                                           "environment = ? AND kind = 'available' ORDER BY currency",
                                           {owner_of(w), w.environment}));
  std::vector<Balance> out;
  out.push_back({w.currency, 0});
  for (const auto& r : rows) {
    if (r.str(0) == w.currency)
      out.front().available = r.i64(1);
    else
      out.push_back({r.str(0), r.i64(1)});
  }
  return out;
}

Result<History> history(store::Conn& c, const Wallet& w, std::optional<std::int64_t> before, int limit) {
  limit = std::clamp(limit, 1, 100);
  std::string sql =
      "SELECT e.id, j.kind, j.currency, e.credit - e.debit, j.memo, t.reference, m.matricule, m.name, t.description, "
      "e.created_at FROM ledger_accounts a JOIN ledger_entries e ON e.account_id = a.id "
      "JOIN ledger_journals j ON j.id = e.journal_id LEFT JOIN pay_transactions t ON t.id = j.transaction_id "
      "LEFT JOIN merchants m ON m.id = t.merchant_id WHERE a.owner = ? AND a.environment = ? AND a.kind = 'available'";
  store::Params params{owner_of(w), w.environment};
  if (before) {
    sql += " AND e.id < ?";
    params.emplace_back(*before);
  }
  sql += " ORDER BY e.id DESC LIMIT ?";
  params.emplace_back(std::int64_t{limit + 1});
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query(sql, params));
  History h;
  for (const auto& r : rows) {
    if (static_cast<int>(h.items.size()) == limit) {
      h.next = h.items.back().entry_id;
      break;
    }
    h.items.push_back(Movement{r.i64(0), r.str(1), r.str(2), r.i64(3), r.str(4), r.opt_str(5), r.opt_str(6),
                               r.opt_str(7), r.opt_str(8), r.i64(9)});
  }
  return h;
}

bj::object to_json(const Movement& m) {
  auto opt = [](const std::optional<std::string>& s) { return s ? bj::value(*s) : bj::value(nullptr); };
  return bj::object{{"kind", m.kind},
                    {"amount", m.amount},
                    {"currency", m.currency},
                    {"memo", m.memo},
                    {"transaction_reference", opt(m.transaction_reference)},
                    {"merchant", opt(m.merchant)},
                    {"merchant_name", opt(m.merchant_name)},
                    {"description", opt(m.description)},
                    {"at", iso8601(m.at)}};
}

Result<std::vector<PendingPayment>> pending_payments(store::Conn& c, const Wallet& w, std::int64_t at,
                                                     std::string_view reference) {
  // Only payments of this wallet's own links, by the link's partner: the metadata is exactly the
  // one link/init writes (json::dump of {"wallet_link": reference}, as link/approve compares it),
  // and no merchant or payer can send that key (payments::kReservedMetadataKeys).
  std::string sql =
      "SELECT t.reference, l.reference, m.name, t.currency, t.description, t.amount, t.fee, t.expires_at "
      "FROM pay_transactions t JOIN wlt_links l ON l.wallet_id = ? AND l.partner_id = t.merchant_id AND "
      "t.metadata = '{\"wallet_link\":\"' || l.reference || '\"}' JOIN merchants m ON m.id = t.merchant_id "
      "WHERE t.customer_wallet = ? AND t.environment = ? AND t.operation = ? AND t.channel = ? AND t.status = ? "
      "AND t.needs_otp = 1 AND t.expires_at > ?";
  store::Params params{w.id,
                       w.msisdn,
                       w.environment,
                       std::string(payments::kCollection),
                       std::string(payments::kChannelWallet),
                       std::string(payments::to_string(payments::TxStatus::initiated)),
                       at};
  if (!reference.empty()) {
    sql += " AND t.reference = ?";
    params.emplace_back(std::string(reference));
  }
  sql += " ORDER BY t.id DESC LIMIT 20";
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query(sql, params));
  std::vector<PendingPayment> out;
  for (const auto& r : rows)
    out.push_back(PendingPayment{r.str(0), r.str(1), r.str(2), r.str(3), r.str(4), r.i64(5), r.i64(6), r.i64(7)});
  return out;
}

}  // namespace sika::wallets::queries
