// The gateway handlers of the catalog: lists answered from the in-memory snapshot, memoized per
// snapshot (docs/catalog.md).
#include "catalog/service.hpp"

#include <spdlog/spdlog.h>
#include <algorithm>
#include <charconv>

#include "catalog/numbering.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "web/envelope.hpp"

namespace sika::catalog {

namespace bj = boost::json;

// ---- handlers --------------------------------------------------------------------------------

namespace {

const web::Principal kNobody{};

const web::Principal& principal_of(const web::Request& req) { return req.principal ? *req.principal : kNobody; }

bool is_alpha3(std::string_view s) {
  return s.size() == 3 && std::all_of(s.begin(), s.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

bool is_code(std::string_view s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::string upper(std::string s) {
  for (char& c : s)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return s;
}

// Reads an optional alpha-3 query parameter (case-insensitive), recording a problem.
std::optional<std::string> alpha3_param(const web::Request& req, std::string_view name, bj::object& errors,
                                        bool required = false) {
  auto v = req.query_param(name);
  if (!v) {
    if (required) errors[name] = "is required";
    return std::nullopt;
  }
  std::string code = upper(*v);
  if (!is_alpha3(code)) {
    errors[name] = "must be an ISO 3166-1 alpha-3 country code (e.g. CMR)";
    return std::nullopt;
  }
  return code;
}

std::optional<std::string> code_param(const web::Request& req, std::string_view name, bj::object& errors) {
  auto v = req.query_param(name);
  if (!v) return std::nullopt;
  if (!is_code(*v)) {
    errors[name] = "must be a code of A-Z, 0-9 and _ (e.g. MTN_MOMO_CMR)";
    return std::nullopt;
  }
  return *v;
}

std::optional<ServiceKind> kind_param(const web::Request& req, bj::object& errors) {
  auto v = req.query_param("kind");
  if (!v) return std::nullopt;
  auto k = parse_service_kind(*v);
  if (!k) errors["kind"] = "must be mobile_money or wallet";
  return k;
}

std::optional<bool> bool_param(const web::Request& req, std::string_view name, bj::object& errors) {
  auto v = req.query_param(name);
  if (!v) return std::nullopt;
  if (*v == "true") return true;
  if (*v == "false") return false;
  errors[name] = "must be true or false";
  return std::nullopt;
}

// The memo key of a request: the route and every input the response depends on.
std::string memo_key(std::initializer_list<std::string_view> parts) {
  std::string key;
  for (std::string_view p : parts) {
    key.append(p);
    key.push_back('\x1f');
  }
  return key;
}

std::string opt_text(const std::optional<std::string>& v) { return v ? "=" + *v : "-"; }
std::string opt_text(const std::optional<std::int64_t>& v) { return v ? "=" + std::to_string(*v) : "-"; }
template <class E>
std::string opt_enum(const std::optional<E>& v) {
  return v ? "=" + std::string(to_string(*v)) : "-";
}
std::string opt_bool(const std::optional<bool>& v) { return v ? (*v ? "=1" : "=0") : "-"; }

web::Response bad(const web::Request& req, bj::object errors) { return web::error(req, empty_data(std::move(errors))); }

web::Response not_loaded(const web::Request& req) {
  return web::error(req, unavailable(bj::string("the catalog could not be loaded")));
}

template <class T>
bj::array page_of(const std::vector<const T*>& items, const web::Page& page,
                  const std::function<bj::object(const T&)>& to_json) {
  bj::array out;
  auto offset = static_cast<std::size_t>(page.offset());
  for (std::size_t i = offset; i < items.size() && i < offset + static_cast<std::size_t>(page.limit); ++i)
    out.push_back(to_json(*items[i]));
  return out;
}

// Returns true iff a non-admin may see this rule: it is active, its country is active and every
// service it names is usable.
bool rule_visible(const Catalog& cat, const PricingRule& r) {
  if (!r.active) return false;
  const Country* c = cat.country_by_id(r.country_id);
  if (!c || !c->active) return false;
  for (const auto& id : {r.incoming_service_id, r.outgoing_service_id}) {
    if (!id) continue;
    const PaymentService* s = cat.service_by_id(*id);
    if (!s || !cat.usable(*s)) return false;
  }
  return true;
}

// The filters the service and provider lists share: page, country, provider, kind, active, and the
// catalog rows the country and provider codes name. Problems go to `errors`: a malformed parameter,
// or else an unknown code, or an inactive one for a merchant ("unknown country" / "unknown provider").
struct ScopeQuery {
  web::Page page;
  std::optional<std::string> country_code;
  std::optional<std::string> provider_code;
  std::optional<ServiceKind> kind;
  std::optional<bool> active;
  const Country* country = nullptr;
  const Provider* provider = nullptr;
};
ScopeQuery scope_query(const web::Request& req, const Catalog& cat, bool admin, bj::object& errors) {
  ScopeQuery q;
  q.page = web::parse_page(req, errors, 25);
  q.country_code = alpha3_param(req, "country", errors);
  q.provider_code = code_param(req, "provider", errors);
  q.kind = kind_param(req, errors);
  q.active = bool_param(req, "active", errors);
  if (!errors.empty()) return q;
  if (q.country_code) {
    q.country = cat.country(*q.country_code);
    if (!q.country || (!q.country->active && !admin)) errors["country"] = "unknown country";
  }
  if (q.provider_code) {
    q.provider = cat.provider(*q.provider_code);
    if (!q.provider || (!q.provider->active && !admin)) errors["provider"] = "unknown provider";
  }
  return q;
}

}  // namespace

web::Response Service::Memo::answer(const web::Request& req, const std::shared_ptr<const Catalog>& snapshot,
                                    std::string key, bj::array data, const web::Page& page, std::int64_t total) {
  web::Response res = web::ok(req, std::move(data), web::pagination(page, total));
  store(snapshot, std::move(key), res);
  return res;
}

web::Response Service::list_countries(web::Request& req) {
  auto cat = snapshot();
  if (!cat->loaded()) return not_loaded(req);
  bj::object errors;
  web::Page page = web::parse_page(req, errors, 25);
  if (!errors.empty()) return bad(req, std::move(errors));
  const bool admin = principal_of(req).admin;
  std::string key = memo_key(
      {"countries", i18n::name(req.locale), admin ? "a" : "m", std::to_string(page.page), std::to_string(page.limit)});
  if (auto hit = memo_.find(cat, key)) return std::move(*hit);
  std::vector<const Country*> items;
  for (const Country& c : cat->countries())
    if (admin || c.active) items.push_back(&c);
  std::sort(items.begin(), items.end(), [](const Country* a, const Country* b) { return a->code < b->code; });
  i18n::Locale locale = req.locale;
  bj::array data = page_of<Country>(items, page, [locale](const Country& c) { return country_json(c, locale); });
  return memo_.answer(req, cat, std::move(key), std::move(data), page, static_cast<std::int64_t>(items.size()));
}

Result<web::Response> Service::list_fees(web::Request& req) {
  auto cat = snapshot();
  if (!cat->loaded()) return not_loaded(req);
  const web::Principal& who = principal_of(req);

  bj::object errors;
  web::Page page = web::parse_page(req, errors, 25);
  auto country_code = alpha3_param(req, "country", errors, true);
  auto service_code = code_param(req, "service_code", errors);
  auto incoming_code = code_param(req, "incoming_service_code", errors);
  auto outgoing_code = code_param(req, "outgoing_service_code", errors);
  std::optional<Operation> operation;
  if (auto v = req.query_param("operation")) {
    operation = parse_operation(*v);
    if (!operation) errors["operation"] = "must be COLLECTION or DISBURSEMENT";
  }
  std::int64_t tier = who.user_tier;
  if (auto v = req.query_param("user_tier")) {
    std::int64_t n = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc() || p != v->data() + v->size() || n < 1 || n > 1'000'000)
      errors["user_tier"] = "must be an integer between 1 and 1000000";
    else
      tier = n;
  }
  if (!errors.empty()) return bad(req, std::move(errors));

  if (!who.grants_country(*country_code))
    return forbidden(bj::object{{"country", "this credential does not grant " + *country_code}});

  const Country* country = cat->country(*country_code);
  if (!country || (!country->active && !who.admin)) return bad(req, bj::object{{"country", "unknown country"}});
  // A named service must exist (and be usable, for non-admins) in this country.
  auto resolve = [&](const std::optional<std::string>& code, std::string_view field) -> std::optional<std::int64_t> {
    if (!code) return std::nullopt;
    const PaymentService* s = cat->service(*code);
    if (!s || (!who.admin && !cat->usable(*s)))
      errors[field] = "unknown service";
    else if (s->country_id != country->id)
      errors[field] = "is not a service of " + country->code;
    else
      return s->id;
    return std::nullopt;
  };
  auto service_id = resolve(service_code, "service_code");
  auto incoming_id = resolve(incoming_code, "incoming_service_code");
  auto outgoing_id = resolve(outgoing_code, "outgoing_service_code");
  if (!errors.empty()) return bad(req, std::move(errors));

  std::string key = memo_key({"fees", i18n::name(req.locale), who.admin ? "a" : "m", country->code,
                              opt_text(service_id), opt_text(incoming_id), opt_text(outgoing_id), opt_enum(operation),
                              std::to_string(tier), std::to_string(page.page), std::to_string(page.limit)});
  if (auto hit = memo_.find(cat, key)) return std::move(*hit);
  std::vector<const PricingRule*> items;
  for (const PricingRule* r : cat->rules_of(country->id)) {  // ascending id
    if (!who.admin && !rule_visible(*cat, *r)) continue;
    if (r->user_tier != tier) continue;
    if (operation && r->operation != *operation) continue;
    if (service_id && r->incoming_service_id != service_id && r->outgoing_service_id != service_id) continue;
    if (incoming_id && r->incoming_service_id != incoming_id) continue;
    if (outgoing_id && r->outgoing_service_id != outgoing_id) continue;
    items.push_back(r);
  }
  const Catalog& c = *cat;
  bj::array data = page_of<PricingRule>(items, page, [&c](const PricingRule& r) { return pricing_rule_json(c, r); });
  return memo_.answer(req, cat, std::move(key), std::move(data), page, static_cast<std::int64_t>(items.size()));
}

web::Response Service::list_services(web::Request& req) {
  auto cat = snapshot();
  if (!cat->loaded()) return not_loaded(req);
  const bool admin = principal_of(req).admin;
  bj::object errors;
  const ScopeQuery q = scope_query(req, *cat, admin, errors);
  if (!errors.empty()) return bad(req, std::move(errors));
  const auto& [page, country_code, provider_code, kind, active, country, provider] = q;

  std::string key =
      memo_key({"services", i18n::name(req.locale), admin ? "a" : "m", opt_text(country_code), opt_text(provider_code),
                opt_enum(kind), opt_bool(active), std::to_string(page.page), std::to_string(page.limit)});
  if (auto hit = memo_.find(cat, key)) return std::move(*hit);
  std::vector<const PaymentService*> items;
  for (const PaymentService& s : cat->services()) {
    if (!admin && !cat->usable(s)) continue;
    if (country && s.country_id != country->id) continue;
    if (provider && s.provider_id != provider->id) continue;
    if (kind && s.kind != *kind) continue;
    if (active && s.active != *active) continue;
    items.push_back(&s);
  }
  std::sort(items.begin(), items.end(),
            [](const PaymentService* a, const PaymentService* b) { return a->code < b->code; });
  const Catalog& c = *cat;
  bj::array data = page_of<PaymentService>(items, page, [&c](const PaymentService& s) { return service_json(c, s); });
  return memo_.answer(req, cat, std::move(key), std::move(data), page, static_cast<std::int64_t>(items.size()));
}

web::Response Service::list_providers(web::Request& req) {
  auto cat = snapshot();
  if (!cat->loaded()) return not_loaded(req);
  const bool admin = principal_of(req).admin;
  bj::object errors;
  const ScopeQuery q = scope_query(req, *cat, admin, errors);
  if (!errors.empty()) return bad(req, std::move(errors));
  const auto& [page, country_code, provider_code, kind, active, country, provider] = q;
  // Each provider's operator health in the caller's environment: part of the memo's key, since it
  // changes without the catalog changing.
  const bool sandbox = principal_of(req).environment == "sandbox";
  std::unordered_map<std::int64_t, std::string> availability;
  std::string states;
  for (const Provider& p : cat->providers()) {
    std::string a = options_.availability ? options_.availability(sandbox ? "sandbox" : p.connector) : "";
    if (a.empty()) a = "OPERATIONAL";
    states += a.substr(0, 1);
    availability.emplace(p.id, std::move(a));
  }
  std::string key = memo_key({"providers", i18n::name(req.locale), admin ? "a" : "m", sandbox ? "s" : "p", states,
                              opt_text(country_code), opt_text(provider_code), opt_enum(kind), opt_bool(active),
                              std::to_string(page.page), std::to_string(page.limit)});
  if (auto hit = memo_.find(cat, key)) return std::move(*hit);

  // What each provider offers, counting only the services the caller may see.
  struct Offer {
    std::vector<std::string> countries, kinds;
    bool in_country = false, of_kind = false;
  };
  std::unordered_map<std::int64_t, Offer> offers;
  for (const PaymentService& s : cat->services()) {
    if (!admin && !cat->usable(s)) continue;
    Offer& o = offers[s.provider_id];
    const Country* sc = cat->country_by_id(s.country_id);
    if (sc && std::find(o.countries.begin(), o.countries.end(), sc->code) == o.countries.end())
      o.countries.push_back(sc->code);
    std::string k(to_string(s.kind));
    if (std::find(o.kinds.begin(), o.kinds.end(), k) == o.kinds.end()) o.kinds.push_back(k);
    if (country && s.country_id == country->id && (!kind || s.kind == *kind)) o.in_country = true;
    if (kind && s.kind == *kind) o.of_kind = true;
  }
  std::vector<const Provider*> items;
  for (const Provider& p : cat->providers()) {
    if (!admin && !p.active) continue;
    if (provider_code && p.code != *provider_code) continue;
    if (active && p.active != *active) continue;
    auto it = offers.find(p.id);
    if (country && (it == offers.end() || !it->second.in_country)) continue;
    if (kind && (it == offers.end() || !it->second.of_kind)) continue;
    items.push_back(&p);
  }
  std::sort(items.begin(), items.end(), [](const Provider* a, const Provider* b) { return a->code < b->code; });
  bj::array data = page_of<Provider>(items, page, [&offers, &availability](const Provider& p) {
    bj::array countries, kinds;
    if (auto it = offers.find(p.id); it != offers.end()) {
      std::vector<std::string> cs = it->second.countries, ks = it->second.kinds;
      std::sort(cs.begin(), cs.end());
      std::sort(ks.begin(), ks.end());
      for (auto& c : cs) countries.push_back(bj::string(c));
      for (auto& k : ks) kinds.push_back(bj::string(k));
    }
    return bj::object{{"id", p.id},
                      {"code", p.code},
                      {"name", p.name},
                      {"countries", std::move(countries)},
                      {"kinds", std::move(kinds)},
                      {"active", p.active},
                      {"availability", availability[p.id]}};
  });
  return memo_.answer(req, cat, std::move(key), std::move(data), page, static_cast<std::int64_t>(items.size()));
}

web::Response Service::predict_provider(web::Request& req) {
  auto cat = snapshot();
  if (!cat->loaded()) return not_loaded(req);
  bj::object errors;
  auto country = alpha3_param(req, "country", errors);
  if (!errors.empty()) return bad(req, std::move(errors));
  auto msisdn = req.query_param("msisdn");
  if (!msisdn) return web::error(req, field_error("msisdn", Reason::required));
  auto prediction = numbering::predict(*cat, *msisdn, country);
  if (!prediction) return web::error(req, prediction.error());
  const web::Principal& who = principal_of(req);
  const Country& c = *prediction->country;
  // The caller's usable services of the predicted operator(s) that take this number.
  bj::array providers, services;
  for (const std::string& op : prediction->providers) providers.push_back(bj::string(op));
  for (const PaymentService& s : cat->services()) {
    const Provider* p = cat->provider_by_id(s.provider_id);
    if (s.country_id != c.id || !p || !cat->usable(s) || (!who.admin && !who.grants_country(c.code))) continue;
    const auto& ops = prediction->providers;
    if (std::find(ops.begin(), ops.end(), p->code) != ops.end() && cat->normalize_msisdn(s, prediction->msisdn))
      services.push_back(bj::string(s.code));
  }
  return web::ok(req, bj::object{{"msisdn", prediction->msisdn},
                                 {"country", c.code},
                                 {"providers", std::move(providers)},
                                 {"services", std::move(services)}});
}

}  // namespace sika::catalog
