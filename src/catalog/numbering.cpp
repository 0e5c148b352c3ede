// The mobile numbering plans of the catalog's countries and the predictions made from them.
// Sources and dates: docs/catalog.md, "Numbering plans".
#include "catalog/numbering.hpp"

#include <algorithm>
#include <array>

#include "core/reason.hpp"

namespace sika::catalog::numbering {

namespace {

// Cameroon: 9-digit national numbers since 22 November 2014 (ART), mobile ones begin with 6.
constexpr Block kCameroon[] = {
    {"24", "CAMTEL"},  {"62", "CAMTEL"},   {"64", "ORANGE"},   {"650", "MTN"},    {"651", "MTN"},    {"652", "MTN"},
    {"653", "MTN"},    {"654", "MTN"},     {"655", "ORANGE"},  {"656", "ORANGE"}, {"657", "ORANGE"}, {"658", "ORANGE"},
    {"659", "ORANGE"}, {"66", "NEXTTEL"},  {"67", "MTN"},      {"680", "MTN"},    {"681", "MTN"},    {"682", "MTN"},
    {"683", "MTN"},    {"684", "NEXTTEL"}, {"685", "NEXTTEL"}, {"686", "ORANGE"}, {"687", "ORANGE"}, {"688", "ORANGE"},
    {"689", "ORANGE"}, {"69", "ORANGE"},
};

// Côte d'Ivoire: 10-digit national numbers since 31 January 2021 (ARTCI); the first two digits
// of a mobile number name its operator.
constexpr Block kIvoryCoast[] = {{"01", "MOOV"}, {"05", "MTN"}, {"07", "ORANGE"}};

// Senegal: 9-digit national numbers (ARTP); mobile ones begin with 7.
constexpr Block kSenegal[] = {
    {"70", "EXPRESSO"}, {"71", "ORANGE"}, {"72", "HAYO"},   {"75", "PROMOBILE"},
    {"76", "FREE"},     {"77", "ORANGE"}, {"78", "ORANGE"}, {"79", "ADIE"},
};

// Gabon: 8-digit national numbers (as the catalog writes them, without the trunk 0). The 6
// blocks were Libertis (Gabon Télécom) and Moov, merged as Moov Africa Gabon Télécom.
constexpr Block kGabon[] = {{"6", "MOOV"}, {"7", "AIRTEL"}};

constexpr std::array<Plan, 4> kPlans = {{
    {"CMR", 9, kCameroon},
    {"CIV", 10, kIvoryCoast},
    {"SEN", 9, kSenegal},
    {"GAB", 8, kGabon},
}};

// Operators of the plans the catalog may not carry, by code.
constexpr std::pair<std::string_view, std::string_view> kOperatorNames[] = {
    {"ADIE", "ADIE"},       {"AIRTEL", "Airtel"}, {"CAMTEL", "Camtel"},       {"EXPRESSO", "Expresso"},
    {"FREE", "Free (Yas)"}, {"HAYO", "Hayo"},     {"MOOV", "Moov Africa"},    {"MTN", "MTN"},
    {"NEXTTEL", "Nexttel"}, {"ORANGE", "Orange"}, {"PROMOBILE", "Promobile"},
};

// The catalog country whose dialling code `written` begins with, at that country's length; for a
// number written internationally, at any length (national_number then names the length).
const Country* country_of(const Catalog& catalog, const WrittenNumber& written) {
  const Country* by_code = nullptr;
  for (const Country& c : catalog.countries()) {
    std::string_view cc = c.dialling_digits();
    if (!c.active || cc.empty() || !written.digits.starts_with(cc)) continue;
    if (written.digits.size() == cc.size() + static_cast<std::size_t>(c.msisdn_length)) return &c;
    if (written.international && !by_code) by_code = &c;
  }
  return by_code;
}

// The operator of an international number of `country`; "" when unknown.
std::string_view operator_of_msisdn(const Country& country, std::string_view msisdn) {
  std::string_view cc = country.dialling_digits();
  if (!msisdn.starts_with(cc)) return {};
  return operator_of(country.code, msisdn.substr(cc.size()));
}

}  // namespace

const Plan* plan_of(std::string_view country) {
  auto it = std::find_if(kPlans.begin(), kPlans.end(), [&](const Plan& p) { return p.country == country; });
  return it == kPlans.end() ? nullptr : &*it;
}

std::string_view operator_of(std::string_view country, std::string_view national) {
  const Plan* plan = plan_of(country);
  if (!plan || national.size() != plan->national_length) return {};
  const Block* best = nullptr;
  for (const Block& b : plan->blocks)
    if (national.starts_with(b.prefix) && (!best || b.prefix.size() > best->prefix.size())) best = &b;
  return best ? best->op : std::string_view{};
}

bool holds_blocks(std::string_view country, std::string_view op) {
  const Plan* plan = plan_of(country);
  return plan && std::any_of(plan->blocks.begin(), plan->blocks.end(), [&](const Block& b) { return b.op == op; });
}

std::string operator_name(const Catalog& catalog, std::string_view op) {
  if (const Provider* p = catalog.provider(op)) return p->name;
  for (const auto& [code, name] : kOperatorNames)
    if (code == op) return std::string(name);
  return std::string(op);
}

Result<Prediction> predict(const Catalog& catalog, std::string_view input, const std::optional<std::string>& country,
                           std::string_view field) {
  SIKA_ASSIGN_OR_RETURN(WrittenNumber written, read_phone(input, field));
  const Country* c = nullptr;
  if (country) {
    c = catalog.country(*country);
    if (!c || !c->active) return field_error("country", Reason::area_unknown);
  } else {
    c = country_of(catalog, written);
    if (!c) return field_error(std::string(field), Reason::msisdn_needs_country);
  }
  SIKA_ASSIGN_OR_RETURN(std::string national, national_number(*c, written, field));
  if (!catalog.mobile_number(*c, national))
    return field_error(std::string(field), reason::with(Reason::not_mobile_of, "country", c->code));
  Prediction p;
  p.msisdn = std::string(c->dialling_digits()) + national;
  p.country = c;
  if (std::string_view op = operator_of(c->code, national); !op.empty()) p.providers.emplace_back(op);
  return p;
}

std::optional<Problem> operator_mismatch(const Catalog& catalog, const PaymentService& service,
                                         std::string_view msisdn) {
  const Country* country = catalog.country_by_id(service.country_id);
  const Provider* provider = catalog.provider_by_id(service.provider_id);
  if (!country || !provider) return std::nullopt;
  std::string_view op = operator_of_msisdn(*country, msisdn);
  if (op.empty() || op == provider->code || !holds_blocks(country->code, provider->code)) return std::nullopt;
  return Problem(Reason::other_operator_number,
                 {{"operator", operator_name(catalog, op)}, {"provider", provider->name}});
}

std::string preselect(const Catalog& catalog, std::span<const std::string> offered, std::string_view chosen,
                      std::string_view phone) {
  if (phone.empty()) return std::string(chosen);
  if (const PaymentService* s = catalog.service(chosen)) {
    auto msisdn = catalog.normalize_msisdn(*s, phone);
    if (msisdn && !operator_mismatch(catalog, *s, *msisdn)) return std::string(chosen);
  }
  for (const std::string& code : offered) {
    const PaymentService* s = catalog.service(code);
    const Country* country = s ? catalog.country_by_id(s->country_id) : nullptr;
    const Provider* provider = s ? catalog.provider_by_id(s->provider_id) : nullptr;
    if (!country || !provider) continue;
    auto msisdn = catalog.normalize_msisdn(*s, phone);
    if (msisdn && operator_of_msisdn(*country, *msisdn) == provider->code) return code;
  }
  return std::string(chosen);
}

}  // namespace sika::catalog::numbering
