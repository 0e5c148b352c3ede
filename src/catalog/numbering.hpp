#pragma once
// Mobile numbering plans: which operator each block of a country's mobile numbers is assigned to,
// so the platform can suggest the operator of a customer's number and refuse a number that
// cannot belong to the operator chosen. The plans are data compiled in (numbering.cpp);
// docs/catalog.md, "Numbering plans", names the source and date of each. A country without a
// plan, a number of another length than its plan's, or a prefix in no block predicts nothing and
// refuses nothing. An operator without blocks (Wave, a wallet) runs on any number: a number is
// never "another operator's" for it.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/model.hpp"
#include "core/result.hpp"

namespace sika::catalog::numbering {

// A block of national mobile numbers: those that begin with `prefix`, assigned to `op` (a
// provider code of the catalog, e.g. "MTN", or the code of an operator the catalog does not carry,
// e.g. "NEXTTEL").
struct Block {
  std::string_view prefix;
  std::string_view op;
};

// One country's mobile numbering plan.
struct Plan {
  std::string_view country;  // ISO 3166-1 alpha-3, e.g. "CMR"
  std::size_t national_length = 0;
  std::span<const Block> blocks;  // the longest matching prefix wins
};

// The plan of `country` (alpha-3), or nullptr.
const Plan* plan_of(std::string_view country);

// The operator the national number is assigned to in `country`: the operator of its longest
// matching block; "" when the country has no plan, the number has another length, or no block
// holds it.
std::string_view operator_of(std::string_view country, std::string_view national);

// True iff `op` holds blocks in the plan of `country`.
bool holds_blocks(std::string_view country, std::string_view op);

// The name of an operator code for people: the catalog's provider name when it carries it,
// else the plan's name for it ("Nexttel"), else the code.
std::string operator_name(const Catalog& catalog, std::string_view op);

// A customer's number and its operator.
struct Prediction {
  std::string msisdn;                  // international digits without '+', e.g. "237690000001"
  const Country* country = nullptr;    // of the catalog snapshot predicted from
  std::vector<std::string> providers;  // the operator codes the number belongs to; empty: unknown
};

// Reads `input` (any form Catalog::normalize_msisdn accepts) as a mobile number of `country`
// (alpha-3) when given, else of the catalog country whose dialling code it begins with (it must
// then be written internationally, with or without '+'), and predicts its operator.
// Error: 400 empty_data naming `field` (or "country" for an unknown country).
Result<Prediction> predict(const Catalog& catalog, std::string_view input,
                           const std::optional<std::string>& country = std::nullopt, std::string_view field = "msisdn");

// Why `msisdn` (international digits, as normalize_msisdn gives them) cannot be paid through
// `service`: its block is assigned to another operator than the service's provider, and that
// provider holds blocks of its own in the country. nullopt when it can (or nothing is known).
std::optional<Problem> operator_mismatch(const Catalog& catalog, const PaymentService& service,
                                         std::string_view msisdn);

// The service a payment form preselects among `offered` (service codes) for the phone number
// `phone` as typed (any written form): `chosen` when the number may belong to its provider, else
// the first offered service of the number's operator; `chosen` when nothing is known.
std::string preselect(const Catalog& catalog, std::span<const std::string> offered, std::string_view chosen,
                      std::string_view phone);

}  // namespace sika::catalog::numbering
