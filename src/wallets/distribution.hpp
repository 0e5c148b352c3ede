#pragma once
// fiat-distribution: a partner moves money from its merchant balance to several of its linked
// wallets in one call (docs/wallet-link.md). The guarantees:
//  - all lines or none: one write unit holds the distribution, its lines and ONE balanced ledger
//    journal (WALLET_DISTRIBUTION: the partner's available balance debited by the total, each
//    wallet's customer:<msisdn> account credited its line), and the partner's webhook event;
//  - the lines sum exactly to the total: amounts must add up to `amount` when both are given,
//    and rates (percentages summing to 100) are allocated with payments::allocate_split's
//    largest-remainder rule;
//  - idempotent per (partner, environment, transaction_uuid): a replay of the same body returns
//    the stored distribution, another body is 409 naming transaction_uuid.
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"
#include "core/result.hpp"
#include "store/db.hpp"
#include "store/idempotency.hpp"

namespace sika::wallets {

inline constexpr std::string_view kDistributionJournal = "WALLET_DISTRIBUTION";
inline constexpr std::size_t kMaxDistributionLines = 100;

struct DistributionRequest {
  std::string transaction_uuid;
  std::string currency;                // optional: the links' currency
  std::optional<std::int64_t> amount;  // the total: required with rates, else the sum of the lines
  std::string description;
  struct Line {
    std::string apikey;                    // a link's key
    std::optional<std::int64_t> amount;    // minor units, or
    std::optional<std::int64_t> rate_ppm;  // a share of `amount` (parts per million)
  };
  std::vector<Line> lines;
  std::string fingerprint;  // SHA-256 (hex) of the body's canonical JSON
};
// Reads {transaction_uuid, currency?, amount?, description?, distribution: [{apikey, amount} |
// {apikey, rate}]}; every problem by field name (`distribution[2].rate`). Either every line has
// an amount or every line a rate; rates need `amount` and must sum to 100.
DistributionRequest parse_distribution_request(const boost::json::object& body, json::FieldErrors& errors);

struct Distribution {
  std::int64_t id = 0;
  std::string reference;  // "WDS-" + 16 characters
  std::string transaction_uuid;
  std::string currency;
  std::int64_t amount = 0;
  std::string description;
  std::int64_t created_at = 0;
  struct Line {
    int position = 0;
    std::string link_reference;
    std::string matricule;  // the wallet's
    std::int64_t amount = 0;
  };
  std::vector<Line> lines;
};
boost::json::object to_json(const Distribution& d);

namespace tables {
// A stored distribution and the hash of the request that created it.
using StoredDistribution = std::pair<Distribution, std::string>;
// The distribution a request of hash `request_hash` stored under the partner's transaction_uuid,
// nullopt when the uuid is free; a 409 naming transaction_uuid and the stored distribution's
// reference when another request holds it.
Result<std::optional<Distribution>> replay_distribution(store::Conn& c, std::int64_t partner_id,
                                                        std::string_view environment, std::string_view transaction_uuid,
                                                        std::string_view request_hash);
// Inserts `d` under its key (partner, environment, transaction_uuid) (store/idempotency.hpp): the
// new id, or the stored distribution of the same request; the 409 above for another request.
Result<store::Keyed<StoredDistribution>> insert_or_replay_distribution(store::Conn& c, std::int64_t partner_id,
                                                                       std::string_view environment,
                                                                       const Distribution& d,
                                                                       std::string_view request_hash);
// The partner's distribution of a transaction_uuid with its request hash, nullopt when none.
Result<std::optional<StoredDistribution>> find_distribution(store::Conn& c, std::int64_t partner_id,
                                                            std::string_view environment,
                                                            std::string_view transaction_uuid);
// A new distribution row; nullopt when (partner, environment, transaction_uuid) already has one.
Result<std::optional<std::int64_t>> insert_distribution(store::Conn& c, std::int64_t partner_id,
                                                        std::string_view environment, const Distribution& d,
                                                        std::string_view request_hash);
Status insert_distribution_line(store::Conn& c, std::int64_t distribution_id, int position, std::int64_t link_id,
                                std::int64_t amount);
}  // namespace tables

}  // namespace sika::wallets
