#pragma once
// The catalog: countries, providers, services (the payment methods a customer pays with or is
// paid to) and pricing rules. A `Catalog` is an immutable snapshot of all of it, indexed for the
// lookups every payment makes; the catalog::Service in service.hpp keeps the current one in memory.
#include <cstdint>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/i18n.hpp"
#include "core/result.hpp"

namespace sika::catalog {

enum class Operation { collection, disbursement };
enum class FeeType { fixed, percentage };
enum class ServiceKind { mobile_money, wallet };

// "COLLECTION", "DISBURSEMENT".
std::string_view to_string(Operation op);
// Parses the exact upper-case spelling; nullopt otherwise.
std::optional<Operation> parse_operation(std::string_view text);
// "FIXED", "PERCENTAGE".
std::string_view to_string(FeeType type);
std::optional<FeeType> parse_fee_type(std::string_view text);
// "mobile_money", "wallet".
std::string_view to_string(ServiceKind kind);
std::optional<ServiceKind> parse_service_kind(std::string_view text);

struct Country {
  std::int64_t id = 0;
  std::string code;    // ISO 3166-1 alpha-3, e.g. "CMR"
  std::string alpha2;  // ISO 3166-1 alpha-2, e.g. "CM"
  std::string name_fr;
  std::string name_en;
  std::string dialling_code;       // "+237"
  std::string currency;            // ISO 4217 code of every service in the country, e.g. "XAF"
  std::int64_t msisdn_length = 0;  // digits of a national (significant) mobile number
  std::string msisdn_pattern;      // ECMAScript regex matched against the whole national number
  bool active = true;

  // Returns the name in `locale`.
  const std::string& name(i18n::Locale locale) const { return locale == i18n::Locale::fr ? name_fr : name_en; }
  // Returns the dialling code without its '+', e.g. "237".
  std::string_view dialling_digits() const;
  // An example mobile number for forms, "+237 612345678": the dialling code and a national
  // number of msisdn_length digits that follows msisdn_pattern (its first choice at each
  // class, 1 2 3 … for each \d).
  std::string example_msisdn() const;
  bool operator==(const Country&) const = default;
};

struct Provider {
  std::int64_t id = 0;
  std::string code;       // e.g. "MTN"
  std::string name;       // e.g. "MTN"
  std::string connector;  // the payments connector that talks to it, e.g. "sandbox", "wallet"
  bool active = true;
  bool operator==(const Provider&) const = default;
};

// A payment service: one way to pay or be paid in one country (an operator's mobile money, a
// wallet), e.g. "MTN_MOMO_CMR". ("Service" alone names the catalog component's class.)
struct PaymentService {
  std::int64_t id = 0;
  std::string code;  // e.g. "MTN_MOMO_CMR"
  std::string name;  // e.g. "MTN Mobile Money"
  std::int64_t provider_id = 0;
  std::int64_t country_id = 0;
  std::string currency;  // always the country's currency
  ServiceKind kind = ServiceKind::mobile_money;
  bool needs_otp = false;                  // the customer confirms with a one-time code
  std::string otp_helper;                  // how the payer gets that code ("#144*82#"); shown as written
  std::string msisdn_pattern;              // regex on the national number; "" = the country's pattern
  std::optional<std::int64_t> min_amount;  // minor units, inclusive; nullopt = no bound
  std::optional<std::int64_t> max_amount;  // minor units, inclusive; nullopt = no bound
  bool active = true;
  bool operator==(const PaymentService&) const = default;
};

struct PricingRule {
  std::int64_t id = 0;
  std::string code;  // operator's key, unique, e.g. "CMR_MTN_COLLECTION_T1"
  std::int64_t country_id = 0;
  Operation operation = Operation::collection;
  std::int64_t user_tier = 1;
  std::optional<std::int64_t> min_amount;  // inclusive; nullopt = no lower bound
  std::optional<std::int64_t> max_amount;  // inclusive; nullopt = no upper bound
  FeeType fee_type = FeeType::fixed;
  // The fee as an exact integer: minor units for FIXED, parts per million of the amount for
  // PERCENTAGE (1 % = 10 000 ppm). fee_value() is derived from it, never the reverse.
  std::int64_t fee_units = 0;
  std::optional<double> reward_value;
  std::optional<double> sponsor_reward_value;
  std::optional<std::int64_t> incoming_service_id;  // nullopt = any incoming service of the country
  std::optional<std::int64_t> outgoing_service_id;  // nullopt = any outgoing service of the country
  bool active = true;

  // The spec's `fee_value`: minor units (FIXED) or a percentage (PERCENTAGE), as a number.
  double fee_value() const;
  // Returns true iff amount lies within [min_amount, max_amount] (both inclusive).
  bool covers(std::int64_t amount) const {
    return (!min_amount || amount >= *min_amount) && (!max_amount || amount <= *max_amount);
  }
  bool operator==(const PricingRule&) const = default;
};

// An immutable, indexed snapshot of the whole catalog at one catalog_version.
class Catalog {
 public:
  // An empty catalog that was never loaded (version() == -1).
  Catalog() = default;
  // Indexes the rows; every vector is sorted by id. Rows must reference existing ids.
  Catalog(std::int64_t version, std::vector<Country> countries, std::vector<Provider> providers,
          std::vector<PaymentService> services, std::vector<PricingRule> rules);

  // The catalog_version this snapshot was read at; -1 when never loaded.
  std::int64_t version() const { return version_; }
  bool loaded() const { return version_ >= 0; }

  const std::vector<Country>& countries() const { return countries_; }  // by id
  const std::vector<Provider>& providers() const { return providers_; }
  const std::vector<PaymentService>& services() const { return services_; }
  const std::vector<PricingRule>& rules() const { return rules_; }

  // Lookups return nullptr when absent; they never filter on `active`.
  const Country* country(std::string_view alpha3) const;
  const Country* country_by_id(std::int64_t id) const;
  const Provider* provider(std::string_view code) const;
  const Provider* provider_by_id(std::int64_t id) const;
  const PaymentService* service(std::string_view code) const;
  const PaymentService* service_by_id(std::int64_t id) const;
  const PricingRule* rule(std::string_view code) const;
  const PricingRule* rule_by_id(std::int64_t id) const;
  // Pricing rules of a country, by id.
  const std::vector<const PricingRule*>& rules_of(std::int64_t country_id) const;

  // The first of `countries` (alpha-3) whose currency is `currency`, else the first of
  // `countries` the catalog knows, else nullptr: the country a page in `currency` speaks to.
  const Country* country_for(std::string_view currency, const std::vector<std::string>& countries) const;

  // Returns true iff the service, its provider and its country are all active.
  bool usable(const PaymentService& s) const;

  // Normalizes a customer's mobile number for `service` to its international digits without
  // '+' (e.g. "237690000001"). Accepts "+237 6 90 00 00 01", "00237690000001", "237690000001",
  // the national "690000001" and a national number with a trunk '0' ("077280150" in Gabon);
  // spaces, dots, dashes and parentheses are ignored. The national
  // number must have the country's length and fully match the service's pattern (or the
  // country's when the service has none). Error: 400 empty_data {field: problem}.
  Result<std::string> normalize_msisdn(const PaymentService& service, std::string_view input,
                                       std::string_view field = "msisdn") const;
  // Returns true iff the national number fully matches the country's msisdn_pattern (or the
  // country has none): a mobile number of the country.
  bool mobile_number(const Country& country, std::string_view national) const;

 private:
  std::int64_t version_ = -1;
  std::vector<Country> countries_;
  std::vector<Provider> providers_;
  std::vector<PaymentService> services_;
  std::vector<PricingRule> rules_;
  std::unordered_map<std::string, std::size_t> country_by_code_, provider_by_code_, service_by_code_, rule_by_code_;
  std::unordered_map<std::int64_t, std::size_t> country_by_id_, provider_by_id_, service_by_id_, rule_by_id_;
  std::unordered_map<std::int64_t, std::vector<const PricingRule*>> rules_by_country_;
  // Compiled MSISDN patterns, parallel to countries_ and services_ (nullptr: none / invalid).
  std::vector<std::shared_ptr<const std::regex>> country_patterns_, service_patterns_;
};

// A phone number as written by a customer: its digits, and whether it was written
// internationally ('+' or "00" first, both removed from `digits`).
struct WrittenNumber {
  std::string digits;
  bool international = false;
};
// Reads a written phone number; spaces, dots, dashes and parentheses are ignored.
// Error: 400 empty_data {field: problem} (characters, empty, longer than 20 digits).
Result<WrittenNumber> read_phone(std::string_view input, std::string_view field);
// The national number of `written` in `country`: the international form with the country's
// dialling code, or (not written internationally) the national number, with or without a trunk
// '0'; it has the country's msisdn_length. Error: 400 empty_data {field: problem}.
Result<std::string> national_number(const Country& country, const WrittenNumber& written, std::string_view field);

// Compiles an MSISDN pattern (ECMAScript). nullptr when the pattern is invalid.
std::shared_ptr<const std::regex> compile_pattern(std::string_view pattern);

}  // namespace sika::catalog
