#include "catalog/model.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cstdlib>

#include "core/reason.hpp"

namespace sika::catalog {

std::string_view to_string(Operation op) { return op == Operation::collection ? "COLLECTION" : "DISBURSEMENT"; }

std::optional<Operation> parse_operation(std::string_view text) {
  if (text == "COLLECTION") return Operation::collection;
  if (text == "DISBURSEMENT") return Operation::disbursement;
  return std::nullopt;
}

std::string_view to_string(FeeType type) { return type == FeeType::fixed ? "FIXED" : "PERCENTAGE"; }

std::optional<FeeType> parse_fee_type(std::string_view text) {
  if (text == "FIXED") return FeeType::fixed;
  if (text == "PERCENTAGE") return FeeType::percentage;
  return std::nullopt;
}

std::string_view to_string(ServiceKind kind) { return kind == ServiceKind::mobile_money ? "mobile_money" : "wallet"; }

std::optional<ServiceKind> parse_service_kind(std::string_view text) {
  if (text == "mobile_money") return ServiceKind::mobile_money;
  if (text == "wallet") return ServiceKind::wallet;
  return std::nullopt;
}

std::string_view Country::dialling_digits() const {
  std::string_view d = dialling_code;
  if (!d.empty() && d.front() == '+') d.remove_prefix(1);
  return d;
}

std::string Country::example_msisdn() const {
  std::string national;
  char next = '1';
  auto digit = [&] {
    national.push_back(next);
    next = next == '9' ? '0' : static_cast<char>(next + 1);
  };
  const std::string_view p = msisdn_pattern;
  for (std::size_t i = 0; i < p.size();) {
    std::string one;  // what one step of the pattern writes
    bool any_digit = false;
    if (p[i] >= '0' && p[i] <= '9') {
      one = p.substr(i, 1);
      ++i;
    } else if (p[i] == '[') {
      const std::size_t end = p.find(']', i);
      if (end == std::string_view::npos || end == i + 1) break;
      one = p.substr(i + 1, 1);
      i = end + 1;
    } else if (p.substr(i, 2) == "\\d") {
      any_digit = true;
      i += 2;
    } else {
      break;  // an alternation or a group: the rest is filled with digits
    }
    std::size_t times = 1;
    if (i < p.size() && p[i] == '{') {
      const std::size_t end = p.find_first_of(",}", i);
      if (end == std::string_view::npos) break;
      times = static_cast<std::size_t>(std::atoi(std::string(p.substr(i + 1, end - i - 1)).c_str()));
      i = p.find('}', i) + 1;
      if (i == 0) break;
    }
    for (std::size_t k = 0; k < times; ++k)
      if (any_digit)
        digit();
      else
        national.append(one);
  }
  const auto length = static_cast<std::size_t>(msisdn_length > 0 ? msisdn_length : 9);
  while (national.size() < length) digit();
  national.resize(length);
  return dialling_code + " " + national;
}

const Country* Catalog::country_for(std::string_view currency, const std::vector<std::string>& countries) const {
  const Country* first = nullptr;
  for (const auto& code : countries)
    if (const Country* c = country(code)) {
      if (c->currency == currency) return c;
      if (!first) first = c;
    }
  return first;
}

double PricingRule::fee_value() const {
  if (fee_type == FeeType::fixed) return static_cast<double>(fee_units);
  // ppm -> percent: the nearest double to fee_units / 10^4, which prints back as the decimal
  // the operator typed (at most 4 decimals).
  return static_cast<double>(fee_units) / 10'000.0;
}

std::shared_ptr<const std::regex> compile_pattern(std::string_view pattern) {
  if (pattern.empty()) return nullptr;
  try {
    return std::make_shared<const std::regex>(std::string(pattern), std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error&) {
    return nullptr;
  }
}

Catalog::Catalog(std::int64_t version, std::vector<Country> countries, std::vector<Provider> providers,
                 std::vector<PaymentService> services, std::vector<PricingRule> rules)
    : version_(version),
      countries_(std::move(countries)),
      providers_(std::move(providers)),
      services_(std::move(services)),
      rules_(std::move(rules)) {
  auto by_id = [](const auto& a, const auto& b) { return a.id < b.id; };
  std::sort(countries_.begin(), countries_.end(), by_id);
  std::sort(providers_.begin(), providers_.end(), by_id);
  std::sort(services_.begin(), services_.end(), by_id);
  std::sort(rules_.begin(), rules_.end(), by_id);
  for (std::size_t i = 0; i < countries_.size(); ++i) {
    country_by_code_[countries_[i].code] = i;
    country_by_id_[countries_[i].id] = i;
    country_patterns_.push_back(compile_pattern(countries_[i].msisdn_pattern));
  }
  for (std::size_t i = 0; i < providers_.size(); ++i) {
    provider_by_code_[providers_[i].code] = i;
    provider_by_id_[providers_[i].id] = i;
  }
  for (std::size_t i = 0; i < services_.size(); ++i) {
    service_by_code_[services_[i].code] = i;
    service_by_id_[services_[i].id] = i;
    service_patterns_.push_back(compile_pattern(services_[i].msisdn_pattern));
  }
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    rule_by_code_[rules_[i].code] = i;
    rule_by_id_[rules_[i].id] = i;
    rules_by_country_[rules_[i].country_id].push_back(&rules_[i]);
  }
}

namespace {
template <class T, class Map, class Key>
const T* find_in(const std::vector<T>& rows, const Map& index, const Key& key) {
  auto it = index.find(key);
  return it == index.end() ? nullptr : &rows[it->second];
}
}  // namespace

const Country* Catalog::country(std::string_view alpha3) const {
  return find_in(countries_, country_by_code_, std::string(alpha3));
}
const Country* Catalog::country_by_id(std::int64_t id) const { return find_in(countries_, country_by_id_, id); }
const Provider* Catalog::provider(std::string_view code) const {
  return find_in(providers_, provider_by_code_, std::string(code));
}
const Provider* Catalog::provider_by_id(std::int64_t id) const { return find_in(providers_, provider_by_id_, id); }
const PaymentService* Catalog::service(std::string_view code) const {
  return find_in(services_, service_by_code_, std::string(code));
}
const PaymentService* Catalog::service_by_id(std::int64_t id) const { return find_in(services_, service_by_id_, id); }
const PricingRule* Catalog::rule(std::string_view code) const {
  return find_in(rules_, rule_by_code_, std::string(code));
}
const PricingRule* Catalog::rule_by_id(std::int64_t id) const { return find_in(rules_, rule_by_id_, id); }

const std::vector<const PricingRule*>& Catalog::rules_of(std::int64_t country_id) const {
  static const std::vector<const PricingRule*> kNone;
  auto it = rules_by_country_.find(country_id);
  return it == rules_by_country_.end() ? kNone : it->second;
}

bool Catalog::usable(const PaymentService& s) const {
  const Provider* p = provider_by_id(s.provider_id);
  const Country* c = country_by_id(s.country_id);
  return s.active && p && p->active && c && c->active;
}

Result<WrittenNumber> read_phone(std::string_view input, std::string_view field) {
  auto problem = [&](Problem p) { return field_error(std::string(field), std::move(p)); };
  WrittenNumber w;
  for (char c : input) {
    if (c >= '0' && c <= '9') {
      w.digits.push_back(c);
    } else if (c == '+' && w.digits.empty() && !w.international) {
      w.international = true;
    } else if (c == ' ' || c == '-' || c == '.' || c == '(' || c == ')') {
      continue;
    } else {
      return problem(Reason::phone_characters);
    }
    if (w.digits.size() > 20) return problem(Reason::too_long);
  }
  if (w.digits.empty()) return problem(Reason::not_empty);
  if (!w.international && w.digits.starts_with("00")) {
    w.digits.erase(0, 2);
    w.international = true;
  }
  return w;
}

Result<std::string> national_number(const Country& country, const WrittenNumber& w, std::string_view field) {
  auto problem = [&](Problem p) { return field_error(std::string(field), std::move(p)); };
  std::string_view cc = country.dialling_digits();
  const auto national_length = static_cast<std::size_t>(country.msisdn_length);
  const std::string& digits = w.digits;
  if (digits.size() == cc.size() + national_length && digits.starts_with(cc)) return digits.substr(cc.size());
  if (!w.international && digits.size() == national_length) return digits;
  if (!w.international && digits.size() == national_length + 1 && digits.front() == '0')
    return digits.substr(1);  // written with the national trunk prefix, e.g. Gabon's "077 28 01 50"
  if (w.international && !digits.starts_with(cc))
    return problem(
        Problem(Reason::number_of_country, {{"country", country.code}, {"dialling_code", country.dialling_code}}));
  return problem(Problem(Reason::digits_after,
                         {{"digits", std::to_string(national_length)}, {"dialling_code", country.dialling_code}}));
}

bool Catalog::mobile_number(const Country& country, std::string_view national) const {
  auto cit = country_by_id_.find(country.id);
  const std::regex* pattern = nullptr;
  if (cit != country_by_id_.end() && &countries_[cit->second] == &country)
    pattern = country_patterns_[cit->second].get();
  std::shared_ptr<const std::regex> compiled;
  if (!pattern && !country.msisdn_pattern.empty()) pattern = (compiled = compile_pattern(country.msisdn_pattern)).get();
  return !pattern || std::regex_match(national.begin(), national.end(), *pattern);
}

Result<std::string> Catalog::normalize_msisdn(const PaymentService& service, std::string_view input,
                                              std::string_view field) const {
  const Country* country = country_by_id(service.country_id);
  if (!country) return field_error(std::string(field), Reason::service_no_country);
  SIKA_ASSIGN_OR_RETURN(WrittenNumber written, read_phone(input, field));
  SIKA_ASSIGN_OR_RETURN(std::string national, national_number(*country, written, field));
  auto sit = service_by_id_.find(service.id);
  std::shared_ptr<const std::regex> pattern;
  if (sit != service_by_id_.end() && &services_[sit->second] == &service) pattern = service_patterns_[sit->second];
  if (!pattern && !service.msisdn_pattern.empty()) pattern = compile_pattern(service.msisdn_pattern);
  const bool matches = pattern ? std::regex_match(national, *pattern) : mobile_number(*country, national);
  if (!matches) return field_error(std::string(field), reason::with(Reason::not_a_number_of, "service", service.name));
  return std::string(country->dialling_digits()) + national;
}

}  // namespace sika::catalog
