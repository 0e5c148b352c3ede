// fiat-distribution: the request's rules, its public shape and its SQL. The operation itself
// (Service::distribute) is in service.cpp.
#include "wallets/distribution.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <set>

#include "core/crypto.hpp"
#include "core/random.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "payments/intent.hpp"
#include "payments/model.hpp"

namespace sika::wallets {

namespace bj = boost::json;

namespace {
constexpr std::int64_t kMaxLineAmount = 1'000'000'000'000;
}  // namespace

DistributionRequest parse_distribution_request(const bj::object& body, json::FieldErrors& errors) {
  DistributionRequest r;
  payments::refuse_unknown_fields(body, {"transaction_uuid", "currency", "amount", "description", "distribution"},
                                  errors);
  if (auto u = json::get_string(body, "transaction_uuid", errors, true)) {
    r.transaction_uuid = *u;
    if (!is_uuid(r.transaction_uuid)) errors.add("transaction_uuid", Reason::uuid_plain);
  }
  if (auto c = json::get_string(body, "currency", errors)) r.currency = *c;
  if (auto d = json::get_string(body, "description", errors)) {
    r.description = *d;
    if (r.description.size() > 255) errors.add("description", reason::at_most_chars(255));
  }
  r.amount = json::get_int(body, "amount", errors);
  if (r.amount && (*r.amount <= 0 || *r.amount > kMaxLineAmount)) errors.add("amount", Reason::positive_minor_units);
  const bj::array* items = json::get_array(body, "distribution", errors, true);
  if (items && (items->empty() || items->size() > kMaxDistributionLines))
    errors.add("distribution", reason::with(Reason::items_between, "max", std::to_string(kMaxDistributionLines)));
  if (!items || items->empty() || items->size() > kMaxDistributionLines) {
    r.fingerprint = hex_encode(crypto::sha256(payments::canonical_json(body)));
    return r;
  }
  std::size_t with_rate = 0, with_amount = 0;
  std::int64_t rates = 0;
  std::set<std::string, std::less<>> keys;
  for (std::size_t i = 0; i < items->size(); ++i) {
    const std::string item = "distribution[" + std::to_string(i) + "]";
    DistributionRequest::Line line;
    if (!(*items)[i].is_object()) {
      errors.add(item, Reason::not_object);
      r.lines.push_back(std::move(line));
      continue;
    }
    const bj::object& o = (*items)[i].get_object();
    payments::refuse_unknown_fields(o, {"apikey", "amount", "rate"}, errors, item + ".");
    json::FieldErrors line_errors;
    if (auto k = json::get_string(o, "apikey", line_errors, true)) line.apikey = *k;
    line.amount = json::get_int(o, "amount", line_errors);
    errors.add_all(item + ".", line_errors);
    if (!line.apikey.empty() && !keys.insert(line.apikey).second) errors.add(item + ".apikey", Reason::repeated);
    if (const bj::value* rate = o.if_contains("rate"); rate && !rate->is_null()) {
      std::optional<Reason> problem;
      if (auto ppm = payments::rate_to_ppm(*rate, problem); ppm && *ppm <= payments::kRateWhole) {
        line.rate_ppm = *ppm;
        rates += *ppm;
      } else {
        errors.add(item + ".rate", problem.value_or(Reason::split_rate));
      }
    }
    if (line.amount && (*line.amount <= 0 || *line.amount > kMaxLineAmount))
      errors.add(item + ".amount", Reason::positive_minor_units);
    if (o.contains("amount") == o.contains("rate")) errors.add(item, Reason::amount_or_rate);
    with_rate += o.contains("rate") ? 1 : 0;
    with_amount += o.contains("amount") ? 1 : 0;
    r.lines.push_back(std::move(line));
  }
  if (with_rate > 0 && with_amount > 0) errors.add("distribution", Reason::one_kind_of_line);
  if (with_rate > 0 && !r.amount && !errors.has("amount")) errors.add("amount", Reason::amount_with_rates);
  const auto valid_rates = std::count_if(r.lines.begin(), r.lines.end(), [](const auto& l) { return l.rate_ppm; });
  if (static_cast<std::size_t>(valid_rates) == items->size() && rates != payments::kRateWhole)
    errors.add("distribution", reason::with(Reason::rates_sum, "total", payments::percent_text(rates)));
  const auto valid_amounts =
      std::count_if(r.lines.begin(), r.lines.end(), [](const auto& l) { return l.amount && *l.amount > 0; });
  if (static_cast<std::size_t>(valid_amounts) == items->size() && r.amount) {
    std::int64_t sum = 0;  // at most 100 lines of at most 10^12: no overflow
    for (const auto& l : r.lines) sum += *l.amount;
    if (sum != *r.amount) errors.add("amount", reason::with(Reason::sum_of_lines, "sum", std::to_string(sum)));
  }
  r.fingerprint = hex_encode(crypto::sha256(payments::canonical_json(body)));
  return r;
}

bj::object to_json(const Distribution& d) {
  bj::array lines;
  for (const auto& l : d.lines)
    lines.push_back(bj::object{{"position", l.position},
                               {"link_reference", l.link_reference},
                               {"matricule", l.matricule},
                               {"amount", l.amount}});
  return bj::object{{"reference", d.reference},  {"transaction_uuid", d.transaction_uuid},
                    {"status", "COMPLETED"},     {"currency", d.currency},
                    {"amount", d.amount},        {"description", d.description},
                    {"lines", std::move(lines)}, {"created_at", iso8601(d.created_at)}};
}

namespace tables {

namespace {

constexpr store::IdempotencyKey kDistributionUuid{
    "transaction_uuid", "was already used for a different distribution", "reference",
    [] { return unavailable(bj::string("concurrent distribution with the same transaction_uuid; retry")); }};

store::Stored describe(const StoredDistribution& stored) { return {stored.second, stored.first.reference}; }

}  // namespace

Result<std::optional<StoredDistribution>> find_distribution(store::Conn& c, std::int64_t partner_id,
                                                            std::string_view environment,
                                                            std::string_view transaction_uuid) {
  SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT id, reference, transaction_uuid, currency, amount, description, "
                                              "created_at, request_hash FROM wlt_distributions WHERE partner_id = ? "
                                              "AND environment = ? AND transaction_uuid = ?",
                                              {partner_id, std::string(environment), std::string(transaction_uuid)}));
  if (!row) return std::optional<StoredDistribution>{};
  Distribution d;
  d.id = row->i64(0);
  d.reference = row->str(1);
  d.transaction_uuid = row->str(2);
  d.currency = row->str(3);
  d.amount = row->i64(4);
  d.description = row->str(5);
  d.created_at = row->i64(6);
  std::string hash = row->str(7);
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT dl.position, l.reference, w.matricule, dl.amount "
                                           "FROM wlt_distribution_lines dl JOIN wlt_links l ON l.id = dl.link_id "
                                           "JOIN wlt_wallets w ON w.id = l.wallet_id WHERE dl.distribution_id = ? "
                                           "ORDER BY dl.position",
                                           {d.id}));
  for (const auto& r : rows) d.lines.push_back({static_cast<int>(r.i64(0)), r.str(1), r.str(2), r.i64(3)});
  return std::optional<StoredDistribution>(StoredDistribution{std::move(d), std::move(hash)});
}

Result<std::optional<std::int64_t>> insert_distribution(store::Conn& c, std::int64_t partner_id,
                                                        std::string_view environment, const Distribution& d,
                                                        std::string_view request_hash) {
  SIKA_ASSIGN_OR_RETURN(
      auto row,
      c.query_one("INSERT INTO wlt_distributions (reference, partner_id, environment, transaction_uuid, "
                  "request_hash, currency, amount, description, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                  "ON CONFLICT (partner_id, environment, transaction_uuid) DO NOTHING RETURNING id",
                  {d.reference, partner_id, std::string(environment), d.transaction_uuid, std::string(request_hash),
                   d.currency, d.amount, d.description, d.created_at}));
  if (!row) return std::optional<std::int64_t>{};
  return std::optional<std::int64_t>(row->i64(0));
}

Result<std::optional<Distribution>> replay_distribution(store::Conn& c, std::int64_t partner_id,
                                                        std::string_view environment, std::string_view transaction_uuid,
                                                        std::string_view request_hash) {
  SIKA_ASSIGN_OR_RETURN(auto found, find_distribution(c, partner_id, environment, transaction_uuid));
  if (!found) return std::optional<Distribution>{};
  SIKA_TRY(store::same_request(kDistributionUuid, request_hash, describe(*found)));
  return std::optional<Distribution>(std::move(found->first));
}

Result<store::Keyed<StoredDistribution>> insert_or_replay_distribution(store::Conn& c, std::int64_t partner_id,
                                                                       std::string_view environment,
                                                                       const Distribution& d,
                                                                       std::string_view request_hash) {
  return store::insert_or_replay<StoredDistribution>(
      c, kDistributionUuid, request_hash,
      [&](store::Conn& conn) { return insert_distribution(conn, partner_id, environment, d, request_hash); },
      [&](store::Conn& conn) { return find_distribution(conn, partner_id, environment, d.transaction_uuid); },
      describe);
}

Status insert_distribution_line(store::Conn& c, std::int64_t distribution_id, int position, std::int64_t link_id,
                                std::int64_t amount) {
  SIKA_TRY(
      c.exec("INSERT INTO wlt_distribution_lines (distribution_id, position, link_id, amount) "
             "VALUES (?, ?, ?, ?)",
             {distribution_id, std::int64_t{position}, link_id, amount}));
  return {};
}

}  // namespace tables

}  // namespace sika::wallets
