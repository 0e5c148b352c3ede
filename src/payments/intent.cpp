#include "payments/intent.hpp"
#include "core/reason.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <set>

#include "catalog/fees.hpp"
#include "catalog/numbering.hpp"
#include "core/crypto.hpp"
#include "core/money.hpp"
#include "core/random.hpp"

namespace sika::payments {

namespace bj = boost::json;

namespace {

constexpr std::size_t kMaxDescription = 255;
constexpr std::size_t kMaxMetadataBytes = 4096;
constexpr std::size_t kMaxDistribution = 20;
constexpr std::size_t kMaxMatricule = 64;

// Fields a client may never send: the platform sets them.
const std::set<std::string_view, std::less<>> kPlatformFields = {"fee",
                                                                 "status",
                                                                 "transaction_reference",
                                                                 "invoice_reference",
                                                                 "provider_reference",
                                                                 "required_total",
                                                                 "split_reference",
                                                                 "split_status",
                                                                 "environment",
                                                                 "operation",
                                                                 "confirmation_method",
                                                                 "confirmation_url",
                                                                 "created_at",
                                                                 "updated_at",
                                                                 "merchant",
                                                                 "merchant_id",
                                                                 "failure_reason",
                                                                 "expires_at",
                                                                 "id"};

}  // namespace

void refuse_reserved_metadata(const bj::object& metadata, json::FieldErrors& errors, std::string_view field) {
  for (std::string_view key : kReservedMetadataKeys)
    if (metadata.contains(key)) errors.add(std::string(field) + "." + std::string(key), Reason::reserved_metadata);
}

void refuse_unknown_fields(const bj::object& body, std::initializer_list<std::string_view> allowed,
                           json::FieldErrors& errors, std::string_view prefix) {
  for (const auto& kv : body) {
    std::string_view k = kv.key();
    if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
    std::string field = std::string(prefix) + std::string(k);
    if (prefix.empty() && kPlatformFields.contains(k))
      errors.add(field, Reason::set_by_platform);
    else
      errors.add(field, Reason::unknown_field);
  }
}

std::optional<std::int64_t> rate_to_ppm(const bj::value& v, std::optional<Reason>& problem) {
  auto text = json::number_text(v);
  if (!text) {
    problem = Reason::not_number;
    return std::nullopt;
  }
  auto ppm = catalog::decimal_to_scaled(*text, 4, false, kRateWhole);
  if (!ppm || *ppm <= 0) {
    problem = Reason::split_rate;
    return std::nullopt;
  }
  return *ppm;
}

std::string percent_text(std::int64_t ppm) {
  std::string text = std::to_string(ppm / 10'000);
  if (ppm % 10'000) {
    std::string frac = std::to_string(10'000 + ppm % 10'000).substr(1);
    while (frac.back() == '0') frac.pop_back();
    text += "." + frac;
  }
  return text;
}

namespace {

bool has_error(const json::FieldErrors& errors, std::string_view field) { return errors.has(field); }

std::string line_prefix(std::size_t i) { return "distribution[" + std::to_string(i) + "]"; }

// Reads the items of a SPLIT distribution (1 to kMaxDistribution objects).
std::vector<SplitLine> parse_distribution(const bj::array& items, json::FieldErrors& errors) {
  std::vector<SplitLine> lines;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string item = line_prefix(i);
    const std::string prefix = item + ".";
    SplitLine line;
    line.position = static_cast<int>(i);
    if (!items[i].is_object()) {
      errors.add(item, Reason::not_object);
      lines.push_back(std::move(line));
      continue;
    }
    const bj::object& o = items[i].get_object();
    refuse_unknown_fields(o, {"matricule", "rate", "description", "metadata"}, errors, prefix);
    json::FieldErrors item_errors;
    auto matricule = json::get_string(o, "matricule", item_errors, true);
    auto description = json::get_string(o, "description", item_errors);
    const bj::object* metadata = json::get_object(o, "metadata", item_errors);
    errors.add_all(prefix, item_errors);
    line.matricule = matricule.value_or("");
    line.description = description.value_or("");
    line.metadata = metadata ? bj::serialize(*metadata) : "{}";
    auto rate = o.find("rate");
    if (rate == o.end() || rate->value().is_null()) {
      errors.add(prefix + "rate", Reason::required);
    } else {
      std::optional<Reason> problem;
      if (auto ppm = rate_to_ppm(rate->value(), problem))
        line.rate_ppm = *ppm;
      else
        errors.add(prefix + "rate", *problem);
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

// The rules of the request's own fields (the catalog aside). A field that already has a
// problem in `errors` keeps it.
void check_fields(const IntentRequest& r, std::int64_t max_amount, json::FieldErrors& errors) {
  const bool collection = r.operation == kCollection;
  if (r.amount <= 0) errors.add("amount", Reason::positive_minor_units);
  if (r.amount > max_amount) errors.add("amount", reason::at_most(max_amount));
  if (!money::is_currency_code(r.currency)) errors.add("currency", Reason::currency_code);
  if (r.fee_bearer != kCustomerBearsFee && r.fee_bearer != kMerchantBearsFee)
    errors.add("feeBearer", Reason::fee_bearer);
  if (!is_uuid(r.transaction_uuid)) errors.add("transaction_uuid", Reason::uuid);
  if (r.provider.empty()) errors.add("provider", Reason::required);
  if (r.channel != kChannelProvider && r.channel != kChannelWallet && r.channel != kChannelAuto)
    errors.add("channel", Reason::channel);
  if (r.customer_wallet.empty()) errors.add("customer_wallet", Reason::required);
  if (r.description.size() > kMaxDescription) errors.add("description", reason::at_most_chars(kMaxDescription));
  if (r.metadata.size() > kMaxMetadataBytes)
    errors.add("metadata", reason::with(Reason::at_most_json_bytes, "max", std::to_string(kMaxMetadataBytes)));
  if (r.settlement_mode != kDirect && r.settlement_mode != kSplit)
    errors.add("settlement_mode", Reason::settlement_mode);
  if (!collection && r.settlement_mode == kSplit) errors.add("settlement_mode", Reason::payouts_direct);
  if (r.own_wallet && r.channel != kChannelProvider) errors.add("channel", Reason::channel_own_wallet);
  if (r.own_wallet && r.settlement_mode != kDirect) errors.add("settlement_mode", Reason::must_be_direct);
  const bool split = r.settlement_mode == kSplit;
  if (split && r.distribution.empty()) errors.add("distribution", Reason::split_needs_distribution);
  if (!split && !r.distribution.empty()) errors.add("distribution", Reason::split_only);
  if (r.distribution.size() > kMaxDistribution) errors.add("distribution", reason::at_most_items(kMaxDistribution));
  if (!split || r.distribution.empty() || r.distribution.size() > kMaxDistribution) return;

  std::int64_t total = 0;
  bool rates_ok = true;
  std::set<std::string, std::less<>> seen;
  for (std::size_t i = 0; i < r.distribution.size(); ++i) {
    const SplitLine& line = r.distribution[i];
    const std::string item = line_prefix(i);
    if (has_error(errors, item)) {  // not an object: nothing else to say about it
      rates_ok = false;
      continue;
    }
    const std::string prefix = item + ".";
    if (line.matricule.empty() || line.matricule.size() > kMaxMatricule)
      errors.add(prefix + "matricule", Reason::matricule);
    else if (!seen.insert(line.matricule).second)
      errors.add(prefix + "matricule", Reason::repeated);
    if (line.rate_ppm <= 0 || line.rate_ppm > kRateWhole || has_error(errors, prefix + "rate")) {
      errors.add(prefix + "rate", Reason::split_rate);
      rates_ok = false;
    } else {
      total += line.rate_ppm;
    }
    if (line.description.size() > kMaxDescription)
      errors.add(prefix + "description", reason::at_most_chars(kMaxDescription));
    if (line.metadata.size() > kMaxMetadataBytes) errors.add(prefix + "metadata", Reason::too_large);
  }
  if (rates_ok && total != kRateWhole)
    errors.add("distribution", reason::with(Reason::rates_sum, "total", percent_text(total)));
}

}  // namespace

const catalog::PaymentService* usable_service(const catalog::Catalog& cat, std::string_view code,
                                              std::string_view field, json::FieldErrors& errors) {
  const catalog::PaymentService* service = cat.service(code);
  if (!service)
    errors.add(field, Reason::unknown_service);
  else if (!cat.usable(*service))
    errors.add(field, Reason::not_active);
  else
    return service;
  return nullptr;
}

std::string normalize_wallet(const catalog::Catalog& cat, const catalog::PaymentService& service,
                             std::string_view input, std::string_view field, json::FieldErrors& errors) {
  auto normalized = cat.normalize_msisdn(service, input, field);
  if (normalized) return std::move(normalized).value();
  errors.add_error(normalized.error(), field);
  return "";
}

namespace {
// An amount outside a service's bounds (which it has).
Problem below_minimum(const catalog::PaymentService& s) {
  return Problem(Reason::at_least_for_service, {{"min", std::to_string(*s.min_amount)}, {"service", s.code}});
}
Problem above_maximum(const catalog::PaymentService& s) {
  return Problem(Reason::at_most_for_service, {{"max", std::to_string(*s.max_amount)}, {"service", s.code}});
}
// In prod, a number of another operator's block (docs/payments.md, "The customer's operator").
void refuse_other_operator(const catalog::Catalog& cat, const catalog::PaymentService& service,
                           const std::string& msisdn, const std::string& environment, bool enabled,
                           json::FieldErrors& errors) {
  if (!enabled || msisdn.empty() || environment != "prod") return;
  if (auto other = catalog::numbering::operator_mismatch(cat, service, msisdn))
    errors.add("customer_wallet", std::move(*other));
}
}  // namespace

Error provider_unavailable(Details details) {
  return make_error(ErrorKind::unavailable, "provider_unavailable", std::move(details));
}

IntentRequest parse_intent(const bj::object& body, std::string_view operation, json::FieldErrors& errors) {
  const bool collection = operation == kCollection;
  IntentRequest r;
  r.operation = std::string(operation);
  if (collection)
    refuse_unknown_fields(body,
                          {"amount", "currency", "transaction_uuid", "provider", "channel", "customer_wallet",
                           "description", "metadata", "distribution", "settlement_mode"},
                          errors);
  else
    refuse_unknown_fields(
        body,
        {"amount", "currency", "transaction_uuid", "provider", "channel", "customer_wallet", "description", "metadata"},
        errors);
  r.amount = json::get_int(body, "amount", errors, true).value_or(0);
  r.currency = json::get_string(body, "currency", errors, true).value_or("");
  r.transaction_uuid = json::get_string(body, "transaction_uuid", errors, true).value_or("");
  r.provider = json::get_string(body, "provider", errors, true).value_or("");
  r.channel = json::get_string(body, "channel", errors).value_or(std::string(kChannelProvider));
  r.customer_wallet = json::get_string(body, "customer_wallet", errors, true).value_or("");
  r.description = json::get_string(body, "description", errors).value_or("");
  const bj::object* metadata = json::get_object(body, "metadata", errors);
  if (metadata) refuse_reserved_metadata(*metadata, errors);
  r.metadata = metadata ? bj::serialize(*metadata) : "{}";
  if (collection) {
    r.settlement_mode = json::get_string(body, "settlement_mode", errors).value_or(std::string(kDirect));
    const bj::array* distribution = json::get_array(body, "distribution", errors);
    // Items are read only where they can matter: a SPLIT within the size limit. Otherwise only
    // their number is kept, for the rules on the distribution as a whole (check_fields).
    if (distribution && r.settlement_mode == kSplit && distribution->size() <= kMaxDistribution)
      r.distribution = parse_distribution(*distribution, errors);
    else if (distribution)
      r.distribution.resize(distribution->size());
  }
  r.fingerprint = body_fingerprint(operation, body);
  return r;
}

std::string request_fingerprint(const IntentRequest& r) {
  bj::object o;
  o["amount"] = r.amount;
  o["currency"] = r.currency;
  o["transaction_uuid"] = r.transaction_uuid;
  o["provider"] = r.provider;
  o["channel"] = r.channel;
  o["customer_wallet"] = r.customer_wallet;
  o["description"] = r.description;
  o["metadata"] = bj::parse(r.metadata.empty() ? std::string_view("{}") : std::string_view(r.metadata));
  o["settlement_mode"] = r.settlement_mode;
  if (r.preauthorized) o["preauthorized"] = true;
  if (r.own_wallet) o["own_wallet"] = true;
  if (r.fee_bearer == kMerchantBearsFee) o["fee_bearer"] = r.fee_bearer;  // CUSTOMER keeps earlier fingerprints
  if (r.conversion)
    o["conversion"] = bj::object{{"currency", r.conversion->currency},
                                 {"order_amount", r.conversion->order_amount},
                                 {"numerator", r.conversion->numerator},
                                 {"denominator", r.conversion->denominator}};
  bj::array lines;
  for (const auto& l : r.distribution)
    lines.push_back(bj::object{{"matricule", l.matricule},
                               {"rate_ppm", l.rate_ppm},
                               {"description", l.description},
                               {"metadata", l.metadata}});
  o["distribution"] = std::move(lines);
  return hex_encode(crypto::sha256(r.operation + "\n" + canonical_json(o)));
}

Result<Price> price_operation(const catalog::Catalog& cat, const catalog::PaymentService& service, bool collection,
                              std::int64_t amount, std::string_view fee_bearer, std::int64_t user_tier) {
  SIKA_ASSIGN_OR_RETURN(
      auto quote, catalog::quote_fee(
                      cat, collection ? catalog::Operation::collection : catalog::Operation::disbursement,
                      collection ? std::optional<catalog::ServiceKey>(service.code) : std::nullopt,
                      collection ? std::nullopt : std::optional<catalog::ServiceKey>(service.code), amount, user_tier));
  Price price;
  if (quote.fee < 0 || __builtin_add_overflow(amount, quote.fee, &price.required_total))
    return field_error("amount", Reason::too_large);
  price.fee = quote.fee;
  if (collection && fee_bearer == kMerchantBearsFee) {
    // The fee comes out of the price: what is left for the merchant must be positive.
    if (quote.fee >= amount)
      return field_error("amount",
                         reason::with(Reason::fee_exceeds_amount, "fee", money::format(quote.fee, service.currency)));
    price.required_total = amount;
  }
  price.credited = price.required_total - price.fee;
  return price;
}

namespace {

// The service a request names, with its provider and country (all null when it has a field problem).
struct Named {
  const catalog::PaymentService* service = nullptr;
  const catalog::Provider* provider = nullptr;
  const catalog::Country* country = nullptr;
};

// The request's service from the catalog snapshot, checked with its currency, amount limits and
// customer wallet (normalized into plan.msisdn): every problem goes into `errors`.
Named named_service(const IntentRequest& r, const PlanInputs& in, IntentPlan& plan, json::FieldErrors& errors) {
  const catalog::Catalog& cat = *in.catalog;
  Named at;
  if (!has_error(errors, "provider")) {
    at.service = usable_service(cat, r.provider, "provider", errors);
    if (at.service) {
      at.provider = cat.provider_by_id(at.service->provider_id);
      at.country = cat.country_by_id(at.service->country_id);
      if (!at.provider || !at.country) {
        errors.add("provider", Reason::not_configured);
        at.service = nullptr;
      }
    }
  }
  if (!at.service) return at;
  const catalog::PaymentService& service = *at.service;
  if (!has_error(errors, "currency") && r.currency != service.currency)
    errors.add("currency",
               Problem(Reason::service_currency, {{"currency", service.currency}, {"service", service.code}}));
  if (!has_error(errors, "amount")) {
    if (service.min_amount && r.amount < *service.min_amount) errors.add("amount", below_minimum(service));
    if (service.max_amount && r.amount > *service.max_amount) errors.add("amount", above_maximum(service));
  }
  if (!has_error(errors, "customer_wallet"))
    plan.msisdn = normalize_wallet(cat, service, r.customer_wallet, "customer_wallet", errors);
  refuse_other_operator(cat, service, plan.msisdn, in.merchant->environment, in.refuse_other_operator_numbers, errors);
  return at;
}

// The platform wallet service of the named service's country: the service itself when it is one.
const catalog::PaymentService* platform_wallet_of(const catalog::Catalog& cat, const catalog::PaymentService& service) {
  if (service.kind == catalog::ServiceKind::wallet) return &service;
  for (const auto& s : cat.services())
    if (s.kind == catalog::ServiceKind::wallet && s.country_id == service.country_id && cat.usable(s)) return &s;
  return nullptr;
}

// Whether AUTO picks the customer's sandbox platform wallet for an operator's service: it exists
// and (for a collection) covers the wallet price.
Result<bool> wallet_covers(const IntentRequest& r, const PlanInputs& in, const catalog::PaymentService& service,
                           const catalog::PaymentService& platform_wallet, const std::string& msisdn) {
  const Acting& merchant = *in.merchant;
  const bool collection = r.operation == kCollection;
  auto wallet_quote =
      catalog::quote_fee(*in.catalog, collection ? catalog::Operation::collection : catalog::Operation::disbursement,
                         collection ? std::optional<catalog::ServiceKey>(platform_wallet.code) : std::nullopt,
                         collection ? std::nullopt : std::optional<catalog::ServiceKey>(platform_wallet.code), r.amount,
                         merchant.user_tier);
  if (!wallet_quote) return false;
  SIKA_ASSIGN_OR_RETURN(auto available,
                        in.balance(ledger::customer_wallet(msisdn, merchant.environment, service.currency)));
  const std::int64_t price = r.fee_bearer == kMerchantBearsFee ? r.amount : r.amount + wallet_quote->fee;
  return collection ? available && *available >= price : available.has_value();
}

// The channel (docs/payments.md, "Channels") into plan.channel, and the service that carries the
// money: the named one, or the country's platform wallet.
Result<const catalog::PaymentService*> choose_channel(const IntentRequest& r, const PlanInputs& in, const Named& at,
                                                      IntentPlan& plan) {
  const Acting& merchant = *in.merchant;
  const catalog::PaymentService* service = at.service;
  const bool wallet_service = service->kind == catalog::ServiceKind::wallet;
  const catalog::PaymentService* platform_wallet = platform_wallet_of(*in.catalog, *service);
  const catalog::PaymentService* effective = service;
  if (r.channel == kChannelProvider) {
    if (wallet_service)
      return field_error("channel", reason::with(Reason::platform_wallet_service, "service", service->code));
    plan.channel = kChannelProvider;
  } else if (r.channel == kChannelWallet) {
    if (!platform_wallet)
      return field_error("channel", reason::with(Reason::no_platform_wallet, "country", at.country->code));
    plan.channel = kChannelWallet;
    effective = platform_wallet;
  } else if (wallet_service) {  // AUTO
    plan.channel = kChannelWallet;
  } else {
    // AUTO with an operator's service: the customer's platform wallet in this country when it
    // exists and (for a collection) covers the wallet price; the named operator otherwise.
    plan.channel = kChannelProvider;
    if (platform_wallet && merchant.environment == "sandbox" && in.balance) {
      SIKA_ASSIGN_OR_RETURN(bool covers, wallet_covers(r, in, *service, *platform_wallet, plan.msisdn));
      if (covers) {
        plan.channel = kChannelWallet;
        effective = platform_wallet;
      }
    }
  }
  if (plan.channel == kChannelWallet && merchant.environment != "sandbox")
    return field_error("channel", Reason::wallet_channel_sandbox);
  if (effective != service) {
    if (effective->min_amount && r.amount < *effective->min_amount)
      return field_error("amount", below_minimum(*effective));
    if (effective->max_amount && r.amount > *effective->max_amount)
      return field_error("amount", above_maximum(*effective));
  }
  return effective;
}

// The connector that carries the plan's channel into plan.connector: refused when no instance
// runs it, or (for a collection) when its operator is closed.
Status choose_connector(const PlanInputs& in, const Named& at, bool collection, IntentPlan& plan) {
  if (plan.channel == kChannelWallet) {
    plan.connector = "wallet";
    return {};
  }
  const std::string_view environment = in.merchant->environment;
  plan.connector = environment == "sandbox" ? std::string("sandbox")
                   : in.instance            ? in.instance(at.provider->connector, at.country->alpha2)
                                            : at.provider->connector;
  if (!in.has_connector || !in.has_connector(plan.connector))
    return with_problem(provider_unavailable(nullptr), "provider",
                        reason::with(Reason::no_connector, "service", at.provider->code));
  if (collection && in.closed && in.closed(plan.connector))
    return with_problem(provider_unavailable(nullptr), "provider",
                        reason::with(Reason::operator_closed, "service", at.service->name));
  return {};
}

// The plan's price (from the fee engine: the incoming service for a collection, the outgoing one
// for a payout) and how the customer confirms.
Status price_and_confirmation(const IntentRequest& r, const PlanInputs& in, const Named& at,
                              const catalog::PaymentService& effective, IntentPlan& plan) {
  const bool collection = r.operation == kCollection;
  SIKA_ASSIGN_OR_RETURN(
      auto price, price_operation(*in.catalog, effective, collection, r.amount, r.fee_bearer, in.merchant->user_tier));
  plan.fee = price.fee;
  plan.required_total = price.required_total;
  plan.service_code = effective.code;
  plan.country = at.country->code;
  plan.currency = at.service->currency;
  const bool consented = plan.channel == kChannelWallet && r.preauthorized;
  plan.confirmation_method = !collection                      ? "NONE"
                             : consented                      ? "CONSENT"
                             : plan.channel == kChannelWallet ? "OTP"
                                                              : "MSISDN";
  // A service's one-time code is the operator's way of approving; a customer who approves on the
  // operator's own page or app (Connector::redirects_customer) is asked for none by us.
  const bool at_operator = in.approves_at_operator && in.approves_at_operator(plan.connector);
  plan.needs_otp =
      collection && !consented && ((effective.needs_otp && !at_operator) || plan.channel == kChannelWallet);
  return {};
}

}  // namespace

Result<IntentPlan> plan_intent(const IntentRequest& r, const PlanInputs& in, json::FieldErrors errors) {
  if (!in.catalog || !in.merchant) return internal_error(bj::string("plan_intent without catalog or merchant"));
  const Acting& merchant = *in.merchant;
  const bool collection = r.operation == kCollection;
  if (r.operation != kCollection && r.operation != kDisbursement)
    return internal_error(bj::string("unknown operation " + r.operation));
  check_fields(r, in.max_amount, errors);
  IntentPlan plan;
  const Named at = named_service(r, in, plan, errors);
  SIKA_TRY(errors.status());
  if (!at.service) return internal_error(bj::string("plan_intent: no service and no field error"));
  if (!merchant.admin && !merchant.grants_country(at.country->code))
    return with_problem(forbidden(), "provider",
                        reason::with(Reason::country_not_granted, "country", at.country->code));
  SIKA_ASSIGN_OR_RETURN(const catalog::PaymentService* effective, choose_channel(r, in, at, plan));
  SIKA_TRY(choose_connector(in, at, collection, plan));
  SIKA_TRY(price_and_confirmation(r, in, at, *effective, plan));
  return plan;
}

}  // namespace sika::payments
