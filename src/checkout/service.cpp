// Hosted checkout operations: sessions, paying through payments, and the signed return.
#include "checkout/service.hpp"

#include <boost/json.hpp>

#include <algorithm>

#include "catalog/fees.hpp"
#include "catalog/fx.hpp"
#include "checkout/store.hpp"
#include "core/random.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "payments/store.hpp"
#include "web/envelope.hpp"

namespace sika::checkout {

namespace bj = boost::json;

namespace {

// The fields a request signature covers.
constexpr std::string_view kSignedFields[] = {"orderId",         "amount",       "currency",
                                              "settlement_mode", "distribution", "feeBearer"};
Error session_not_found() { return with_problem(not_found(), "reference", Reason::no_session); }

// The country of an area code (alpha-2 or alpha-3), or nullptr.
const catalog::Country* area_country(const catalog::Catalog& cat, std::string_view area) {
  if (area.size() == 3) return cat.country(area);
  for (const auto& c : cat.countries())
    if (c.alpha2 == area) return &c;
  return nullptr;
}

// Returns true iff `svc` is a mobile-money service in use in a country of `countries` (and of
// `area` when one is given): a method a session of this merchant may offer, whatever its currency.
bool collects_here(const catalog::Catalog& cat, const catalog::PaymentService& svc,
                   const std::vector<std::string>& countries, const catalog::Country* area) {
  if (!cat.usable(svc) || svc.kind != catalog::ServiceKind::mobile_money) return false;
  const catalog::Country* country = cat.country_by_id(svc.country_id);
  if (!country || std::find(countries.begin(), countries.end(), country->code) == countries.end()) return false;
  return !area || country->id == area->id;
}

}  // namespace

Service::Service(store::Db& db, payments::Service& payments, payments::CatalogSnapshot catalog, Options options)
    : db_(db), payments_(payments), catalog_(std::move(catalog)), options_(std::move(options)) {}

std::int64_t Service::now() const { return options_.clock ? options_.clock() : now_ms(); }

std::string Service::page_url(const Session& s) const {
  std::string base = options_.page_base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/session/" + s.reference;
}

std::string Service::merchant_secret(std::string_view matricule) const {
  return checkout::merchant_secret(options_.server_key, matricule);
}

Result<SecretVersion> Service::signing_secret(std::int64_t merchant_id, std::string_view matricule) {
  std::optional<std::pair<std::int64_t, std::string>> latest;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(latest, tables::latest_secret(c, merchant_id));
    return {};
  }));
  if (!latest) return SecretVersion{1, merchant_secret(matricule)};
  return SecretVersion{latest->first,
                       checkout::merchant_secret(options_.server_key, matricule, latest->first, latest->second)};
}

Result<bool> Service::signed_only(std::int64_t merchant_id) {
  bool on = false;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(on, tables::signed_only(c, merchant_id));
    return {};
  }));
  return on;
}

Result<SecretVersion> Service::rotate_secret(std::int64_t merchant_id, std::string_view matricule) {
  const std::string salt = random_token(32);
  std::int64_t version = 0;
  bool made = false;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto latest, tables::latest_secret(c, merchant_id));
    version = latest ? latest->first + 1 : 2;
    SIKA_ASSIGN_OR_RETURN(made, tables::insert_secret(c, merchant_id, version, salt, now()));
    return {};
  }));
  if (!made) return with_problem(conflict(), "merchant", Reason::rotation_lost);
  return SecretVersion{version, checkout::merchant_secret(options_.server_key, matricule, version, salt)};
}

web::Principal Service::principal_of(const merchant::Merchant& m) const {
  web::Principal p;
  p.subject = "checkout:" + m.matricule;
  p.merchant = m.matricule;
  p.merchant_id = m.id;
  p.countries = m.countries;
  p.environment = m.environment;
  p.user_tier = m.tier;  // priced at the merchant's tier, as its tokens are
  p.scopes = {"payments"};
  p.role = web::Role::owner;
  return p;
}

Acting Service::acting_of(const merchant::Merchant& m) const {
  // Priced at the merchant's tier, as its tokens are.
  return Acting::system(m.id, m.matricule, m.environment, "checkout:" + m.matricule, m.tier, m.countries);
}

Result<merchant::Merchant> Service::merchant_of(std::int64_t merchant_id) {
  std::optional<merchant::Merchant> m;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(m, merchant::find_by_id(c, merchant_id));
    return {};
  }));
  if (!m || !m->active) return session_not_found();
  return std::move(*m);
}

std::vector<Method> Service::methods(const Session& s, const std::vector<std::string>& countries) const {
  std::vector<Method> out;
  auto cat = catalog_();
  if (!cat) return out;
  const catalog::Country* area = s.area.empty() ? nullptr : area_country(*cat, s.area);
  for (const auto& svc : cat->services()) {
    if (!collects_here(*cat, svc, countries, area)) continue;
    // The order's currency; another only with line=up and a quote locked for it.
    const Quote* fx = svc.currency == s.currency ? nullptr : s.quote_for(svc.currency);
    if (svc.currency != s.currency && (s.line != "up" || !fx)) continue;
    const std::int64_t price = fx ? fx->amount : s.amount;
    auto quote =
        catalog::quote_fee(*cat, catalog::Operation::collection, catalog::ServiceKey(svc.code), std::nullopt, price, 1);
    if (!quote) continue;  // no pricing rule or outside the service's bounds: not offered
    if (price < svc.min_amount || (svc.max_amount > 0 && price > svc.max_amount)) continue;
    // The merchant bears the fee: the customer pays the price, and the fee must leave something.
    const bool merchant_pays = s.fee_bearer == payments::kMerchantBearsFee;
    if (merchant_pays && quote->fee >= price) continue;
    Method m{svc.code,
             svc.name,
             svc.currency,
             price,
             quote->fee,
             merchant_pays ? price : price + quote->fee,
             fx ? std::optional<Quote>(*fx) : std::nullopt,
             svc.needs_otp,
             svc.otp_helper.empty() ? options_.otp_helper : svc.otp_helper};
    out.push_back(std::move(m));
  }
  return out;
}

// ---- sessions -------------------------------------------------------------------------------

namespace {

// The currency and area of a new session against the catalog and the merchant's countries.
void check_scope(const catalog::Catalog& cat, const merchant::Merchant& m, const NewSession& n,
                 json::FieldErrors& errors) {
  // line=up: the order's currency may be one no method charges in, when a rate converts it.
  if (!errors.has("currency") && !n.currency.empty() && n.line != "up") {
    bool granted = false;
    for (const auto& c : cat.countries())
      if (c.active && c.currency == n.currency &&
          std::find(m.countries.begin(), m.countries.end(), c.code) != m.countries.end())
        granted = true;
    if (!granted) errors.add("currency", Reason::currency_not_collected);
  }
  if (!n.area.empty() && !errors.has("area")) {
    const catalog::Country* area = area_country(cat, n.area);
    if (!area || !area->active)
      errors.add("area", Reason::area_unknown);
    else if (std::find(m.countries.begin(), m.countries.end(), area->code) == m.countries.end())
      errors.add("area", Reason::area_not_collected);
    else if (area->currency != n.currency && n.line != "up" && !errors.has("currency"))
      errors.add("area", Problem(Reason::area_currency,
                                 {{"area", area->code}, {"currency", area->currency}, {"asked", n.currency}}));
  }
}

// An unsigned request may not set what decides where the money goes.
void check_unsigned(const NewSession& n, json::FieldErrors& errors) {
  if (n.settlement_mode != payments::kDirect && !errors.has("settlement_mode"))
    errors.add("settlement_mode", Reason::merchant_only);
  if (!n.distribution.empty() && !errors.has("distribution")) errors.add("distribution", Reason::merchant_only);
  if (n.fee_bearer != "CUSTOMER" && !errors.has("feeBearer")) errors.add("feeBearer", Reason::merchant_only);
}

// The rules the merchant's own settings set: return URLs on its registered domains (when it has
// any), signed requests only (when it asked for them), active split beneficiaries.
void check_merchant_rules(const NewSession& n, const std::vector<std::string>& domains,
                          const std::vector<std::string>& inactive, bool signed_only, json::FieldErrors& errors) {
  if (!domains.empty())
    for (auto [key, url] : {std::pair{"successUrl", &n.success_url}, std::pair{"failureUrl", &n.failure_url}}) {
      if (url->empty() || errors.has(key)) continue;
      const std::string host = url_host(*url);
      if (std::none_of(domains.begin(), domains.end(), [&](const std::string& d) { return host_in_domain(host, d); }))
        errors.add(key, Reason::foreign_domain);
    }
  // A merchant that signs every request may refuse unsigned ones: then nobody can post its form
  // again with another amount or order.
  if (signed_only && n.signature.empty() && !errors.has("signature"))
    errors.add("signature", Reason::signature_required);
  for (const auto& line : n.distribution)
    if (std::find(inactive.begin(), inactive.end(), line.matricule) != inactive.end())
      errors.add("distribution[" + std::to_string(line.position) + "].matricule", Reason::inactive_merchant);
}

// The refusal of an order no method can collect: in its currency (and area), converted or not.
Error no_method(const NewSession& n) {
  if (n.line == "up")
    return field_error("currency",
                       n.area.empty() ? reason::with(Reason::no_method_fx, "currency", n.currency)
                                      : Problem(Reason::no_method_fx_in, {{"currency", n.currency}, {"area", n.area}}));
  return field_error("amount", n.area.empty()
                                   ? reason::with(Reason::no_method, "currency", n.currency)
                                   : Problem(Reason::no_method_in, {{"currency", n.currency}, {"area", n.area}}));
}

// A new OPEN session for the order, not yet stored.
Session draft_session(const merchant::Merchant& m, const NewSession& n, std::int64_t now, std::int64_t ttl_ms) {
  Session s;
  s.reference = new_reference();
  s.merchant_id = m.id;
  s.environment = m.environment;
  s.order_id = n.order_id;
  s.fingerprint = fingerprint(n);
  s.status = std::string(kOpen);
  s.amount = n.amount;
  s.currency = n.currency;
  s.description = n.description;
  s.shop_name = n.shop_name;
  s.success_url = n.success_url;
  s.failure_url = n.failure_url;
  s.customer = n.customer;
  s.line = n.line;
  s.area = n.area;
  s.fee_bearer = n.fee_bearer;
  s.settlement_mode = n.settlement_mode;
  s.distribution = n.distribution;
  s.created_at = s.updated_at = now;
  s.expires_at = s.created_at + ttl_ms;
  return s;
}

}  // namespace

Result<Opened> Service::open(const merchant::Merchant& m, const NewSession& n, json::FieldErrors errors) {
  auto cat = catalog_();
  if (!cat || !cat->loaded()) return unavailable(bj::string("the catalog is not loaded"));
  SIKA_TRY(check_open(*cat, m, n, std::move(errors)));
  Session s = draft_session(m, n, now(), options_.session_ttl_ms);
  if (n.line == "up") {
    SIKA_ASSIGN_OR_RETURN(s.quotes, lock_quotes(n, m.countries));
  }
  if (methods(s, m.countries).empty()) return no_method(n);
  return store_session(m, n, std::move(s));
}

Status Service::check_open(const catalog::Catalog& cat, const merchant::Merchant& m, const NewSession& n,
                           json::FieldErrors errors) {
  check_scope(cat, m, n, errors);
  // What decides where the money goes comes from the merchant only: a request that sets it must
  // be signed with the merchant's checkout secret (the form is in the customer's browser, and its
  // apiKey is public). A signature, when sent, must match whatever the request sets.
  if (!n.signature.empty()) {
    const bool readable = std::none_of(std::begin(kSignedFields), std::end(kSignedFields),
                                       [&](std::string_view f) { return errors.has(f); });
    if (readable) {
      SIKA_ASSIGN_OR_RETURN(SecretVersion key, signing_secret(m.id, m.matricule));
      if (!verify(key.secret, request_canonical(n), n.signature)) errors.add("signature", Reason::signature_mismatch);
    }
  } else {
    check_unsigned(n, errors);
  }
  // Return URLs: on one of the merchant's registered domains, when it registered any; the
  // split beneficiaries: active merchants.
  std::vector<std::string> domains;
  std::vector<std::string> inactive;
  bool signed_only = false;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(signed_only, tables::signed_only(c, m.id));
    SIKA_ASSIGN_OR_RETURN(domains, tables::domains(c, m.id));
    inactive.clear();
    for (const auto& line : n.distribution) {
      SIKA_ASSIGN_OR_RETURN(auto found, merchant::find_by_matricule(c, line.matricule));
      if (!found || !found->active || found->environment != m.environment) inactive.push_back(line.matricule);
    }
    return {};
  }));
  check_merchant_rules(n, domains, inactive, signed_only, errors);
  return errors.status();
}

Result<Opened> Service::store_session(const merchant::Merchant& m, const NewSession& n, Session s) {
  // Two rounds: an insert that loses a race for the order finds the winner's session.
  for (int round = 0; round < 3; ++round) {
    std::optional<Session> existing;
    std::optional<std::int64_t> id;
    SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
      id.reset();
      SIKA_ASSIGN_OR_RETURN(existing, tables::by_order(c, m.id, m.environment, n.order_id));
      if (existing) return {};
      SIKA_ASSIGN_OR_RETURN(id, tables::insert(c, s));
      return {};
    }));
    if (id) {
      s.id = *id;
      return Opened{s, true};
    }
    if (!existing) continue;
    // The same order again: its open session (with the same fields), unless it was paid.
    SIKA_ASSIGN_OR_RETURN(auto tx, current(*existing));
    if (tx && payments::was_paid(tx->status))
      return with_problem(make_error(ErrorKind::conflict, "order_paid"), "orderId", Reason::order_paid);
    if (existing->status_at(now()) == kOpen) {
      if (existing->fingerprint != s.fingerprint)
        return with_problem(conflict(), "orderId", Reason::order_other_fields);
      return Opened{std::move(*existing), false};
    }
    if (tx && !payments::is_terminal(tx->status)) return with_problem(conflict(), "orderId", Reason::order_in_progress);
    // Expired or cancelled without a payment: the order gets a new session on the same row.
    // The row is reopened only while the collection of its attempt is absent or ended without
    // completing, checked in the reopening unit: the check and the move commit together.
    bool reopened = false;
    SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
      reopened = false;
      if (existing->attempt > 0) {
        SIKA_ASSIGN_OR_RETURN(auto last,
                              payments::tables::find_by_uuid(c, existing->merchant_id, existing->environment,
                                                             collection_uuid(existing->reference, existing->attempt)));
        if (last && payments::was_paid(last->status))
          return with_problem(make_error(ErrorKind::conflict, "order_paid"), "orderId", Reason::order_paid);
        if (last && !payments::is_terminal(last->status))
          return with_problem(conflict(), "orderId", Reason::order_in_progress);
      }
      SIKA_ASSIGN_OR_RETURN(reopened, tables::reopen(c, existing->id, existing->attempt, s));
      return {};
    }));
    if (reopened) {
      s.id = existing->id;
      s.attempt = existing->attempt + 1;
      return Opened{s, true};
    }
  }
  return with_problem(retryable(), "orderId", Reason::order_busy);
}

Result<std::vector<Quote>> Service::lock_quotes(const NewSession& n, const std::vector<std::string>& countries) {
  std::vector<Quote> quotes;
  auto cat = catalog_();
  if (!cat) return quotes;
  const catalog::Country* area = n.area.empty() ? nullptr : area_country(*cat, n.area);
  std::vector<std::string> currencies;
  for (const auto& svc : cat->services()) {
    if (svc.currency == n.currency || !collects_here(*cat, svc, countries, area)) continue;
    if (std::find(currencies.begin(), currencies.end(), svc.currency) == currencies.end())
      currencies.push_back(svc.currency);
  }
  if (currencies.empty()) return quotes;
  const std::int64_t at = now();
  std::vector<catalog::fx::Rate> rates;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    rates.clear();
    for (const auto& cur : currencies) {
      SIKA_ASSIGN_OR_RETURN(auto rate, catalog::fx::in_force(c, n.currency, cur, at));
      if (rate) rates.push_back(std::move(*rate));
    }
    return {};
  }));
  for (const auto& r : rates) {
    auto amount = catalog::fx::convert_up(n.amount, n.currency, r.quote, r.rate);
    if (!amount || *amount <= 0) continue;
    quotes.push_back(Quote{r.quote, r.rate.numerator, r.rate.denominator, *amount, at});
  }
  return quotes;
}

Result<std::vector<Session>> Service::list_sessions(const Acting& merchant, std::optional<std::int64_t> before,
                                                    int limit) {
  std::vector<Session> out;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(out, tables::list(c, merchant.merchant_id, merchant.environment, before, limit));
    return {};
  }));
  return out;
}

Result<Session> Service::session(std::string_view reference) {
  if (!valid_reference(reference)) return session_not_found();
  std::optional<Session> found;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(found, tables::by_reference(c, reference));
    return {};
  }));
  if (!found) return session_not_found();
  return std::move(*found);
}

Result<std::optional<payments::Transaction>> Service::current(const Session& s) {
  if (s.attempt == 0) return std::optional<payments::Transaction>{};
  std::optional<payments::Transaction> tx;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(
        tx, payments::tables::find_by_uuid(c, s.merchant_id, s.environment, collection_uuid(s.reference, s.attempt)));
    return {};
  }));
  if (!tx) return tx;
  SIKA_ASSIGN_OR_RETURN(payments::Transaction now_tx, payments_.current(std::move(*tx), "checkout"));
  if (payments::was_paid(now_tx.status) && s.status == kOpen) {
    const std::int64_t at = now();
    SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
      SIKA_TRY(tables::mark_paid(c, s.id, at));
      return {};
    }));
  }
  return std::optional<payments::Transaction>(std::move(now_tx));
}

// ---- paying ---------------------------------------------------------------------------------

Result<payments::Transaction> Service::pay(std::string_view reference, const PayForm& form) {
  SIKA_ASSIGN_OR_RETURN(Session s, session(reference));
  SIKA_ASSIGN_OR_RETURN(merchant::Merchant m, merchant_of(s.merchant_id));
  SIKA_ASSIGN_OR_RETURN(auto tx, current(s));
  if (tx && payments::was_paid(tx->status))
    return with_problem(make_error(ErrorKind::conflict, "order_paid"), "reference", Reason::order_paid);
  // The current collection waits for a code: this submission brings it.
  if (tx && tx->status == payments::TxStatus::initiated && form.otp && form.seen_attempt == s.attempt)
    return payments_.execute_collection(*tx, form.otp, "checkout");
  if (tx && !payments::is_terminal(tx->status))
    return with_problem(conflict(), "reference", Reason::session_in_progress);
  if (s.status_at(now()) == kExpired)
    return with_problem(bad_request("session_expired"), "reference", Reason::session_expired);
  if (s.status == kCancelled) return with_problem(conflict(), "reference", Reason::session_cancelled);

  json::FieldErrors errors;
  const std::vector<Method> offered = methods(s, m.countries);
  auto method = std::find_if(offered.begin(), offered.end(), [&](const Method& x) { return x.code == form.provider; });
  if (form.provider.empty())
    errors.add("provider", Reason::choose_method);
  else if (method == offered.end())
    errors.add("provider", Reason::not_a_method);
  if (form.phone.empty()) errors.add("customer_phone", Reason::required);
  SIKA_TRY(errors.status());
  if (method->needs_otp && !form.otp) {
    Error e = with_problem(bad_request("otp_required"), "otp", Reason::otp_by_operator);
    e.details.as_object()["otp_helper"] = method->otp_helper;  // not a problem: the operator's hint
    return e;
  }

  // The attempt is taken in the unit that creates its collection (payments' creation step): the
  // conditional UPDATE on the attempt the page showed, the check that this attempt's collection
  // ended without completing (or never existed), and the new collection's row commit together or
  // not at all. A submission that loses sees the attempt moved on, or the winner's collection in
  // flight, and nothing of it remains.
  const std::int64_t attempt = form.seen_attempt + 1;
  const std::int64_t at = now();
  std::string created;  // the reference of the collection this submission created
  const payments::Service::CreationStep take = [&](store::Conn& c, const payments::Transaction& tx) -> Status {
    created.clear();
    SIKA_ASSIGN_OR_RETURN(bool taken, tables::take_attempt(c, s.id, form.seen_attempt, at));
    if (!taken) return with_problem(conflict(), "reference", Reason::page_out_of_date);
    if (form.seen_attempt > 0) {
      SIKA_ASSIGN_OR_RETURN(auto previous,
                            payments::tables::find_by_uuid(c, s.merchant_id, s.environment,
                                                           collection_uuid(s.reference, form.seen_attempt)));
      if (previous && payments::was_paid(previous->status))
        return with_problem(make_error(ErrorKind::conflict, "order_paid"), "reference", Reason::order_paid);
      if (previous && !payments::is_terminal(previous->status))
        return with_problem(conflict(), "reference", Reason::session_in_progress);
    }
    created = tx.reference;
    return {};
  };

  payments::IntentRequest intent;
  intent.amount = method->price;
  intent.currency = method->currency;
  if (method->quote)
    intent.conversion = payments::Conversion{
        s.currency, s.amount, 0, method->quote->numerator, method->quote->denominator, method->quote->quoted_at};
  intent.transaction_uuid = collection_uuid(s.reference, attempt);
  intent.provider = form.provider;
  intent.customer_wallet = form.phone;
  intent.description = s.description;
  bj::object meta{{"checkout_reference", s.reference}, {"order_id", s.order_id}, {"shop_name", s.shop_name}};
  if (!s.customer.name.empty()) meta["customer_name"] = s.customer.name;
  if (!s.customer.email.empty()) meta["customer_email"] = s.customer.email;
  intent.metadata = json::dump(meta);
  intent.settlement_mode = s.settlement_mode;
  intent.fee_bearer = s.fee_bearer;
  if (s.settlement_mode == payments::kSplit) intent.distribution = settlement_lines(s.distribution, m.matricule);
  SIKA_ASSIGN_OR_RETURN(
      payments::Transaction tx_now,
      payments_.collect(intent, acting_of(m), payments::Service::How::present(form.otp, "checkout", take)));
  // Another submission of the same page created this attempt's collection: this one made nothing.
  if (tx_now.reference != created) return with_problem(conflict(), "reference", Reason::page_out_of_date);
  return tx_now;
}

// ---- the return -----------------------------------------------------------------------------

Result<std::optional<std::string>> Service::signed_return(const Session& s, const merchant::Merchant& m,
                                                          const std::optional<payments::Transaction>& tx,
                                                          std::string_view status) {
  ReturnData d;
  d.reference = s.order_id;
  d.status = std::string(status);
  d.amount = s.amount;
  d.currency = s.currency;
  d.checkout_reference = s.reference;
  d.issued_at = now() / 1000;
  if (tx) {
    d.transaction_reference = tx->reference;
    d.invoice_reference = tx->invoice_reference;
    d.provider_reference = tx->provider_reference;
    d.channel = tx->channel;
    // `amount` and `currency` stay the order's: with the fee on the merchant the transaction's
    // amount is what the merchant is credited, with a conversion it is in the customer's
    // currency, and the merchant compares the return with its order. What the customer was
    // charged is named only when it was charged.
    const bool charged = payments::was_paid(tx->status) && tx->currency != s.currency;
    if (const Quote* q = charged ? s.quote_for(tx->currency) : nullptr) {
      d.charged_amount = tx->required_total;
      d.charged_currency = tx->currency;
      d.rate = catalog::fx::ratio_text({q->numerator, q->denominator});
    }
  }
  d.settlement_mode = s.settlement_mode;
  if (s.settlement_mode == payments::kSplit) d.distribution = settlement_lines(s.distribution, m.matricule);
  d.fee_bearer = s.fee_bearer;
  if (tx && payments::was_paid(tx->status)) {
    d.fee = tx->fee;
    d.credited_amount = tx->amount;
    d.refunded_amount = tx->refunded_amount;
    d.refund_state = tx->status == payments::TxStatus::refunded ? "FULL" : tx->refunded_amount > 0 ? "PARTIAL" : "NONE";
    if (tx->currency != s.currency) {
      // Converted: what the collection's amount was worth in the order's currency, as settled.
      std::optional<payments::Conversion> conversion;
      SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
        SIKA_ASSIGN_OR_RETURN(conversion, payments::tables::find_conversion(c, tx->id));
        return {};
      }));
      if (!conversion) return internal_error(bj::string("a converted collection without its conversion"));
      d.credited_amount = conversion->amount;
    }
  }
  SIKA_ASSIGN_OR_RETURN(SecretVersion key, signing_secret(m.id, m.matricule));
  d.kid = key.kid;
  const std::string data = service_data(d);
  const bool success = status == "COMPLETED";
  return std::optional<std::string>(return_url(success ? s.success_url : s.failure_url, data, sign(key.secret, data)));
}

Result<std::optional<std::string>> Service::return_to(std::string_view reference, bool give_up) {
  SIKA_ASSIGN_OR_RETURN(Session s, session(reference));
  SIKA_ASSIGN_OR_RETURN(merchant::Merchant m, merchant_of(s.merchant_id));
  SIKA_ASSIGN_OR_RETURN(auto tx, current(s));
  if (tx && payments::was_paid(tx->status)) return signed_return(s, m, tx, "COMPLETED");
  // A collection still waiting for a code is cancelled with the session; one already pushed to
  // the customer's phone must end first.
  if (tx && tx->status == payments::TxStatus::pending) return std::optional<std::string>{};
  if (give_up && tx && tx->status == payments::TxStatus::initiated) {
    auto cancelled = payments_.cancel_collection(*tx, "checkout", "cancelled by the customer");
    if (!cancelled) return cancelled.take_error();
    if (payments::was_paid(cancelled->status)) return signed_return(s, m, *cancelled, "COMPLETED");
    tx = std::move(cancelled).value();
  }
  const std::string_view state = s.status_at(now());
  if (state == kExpired) return signed_return(s, m, tx, "EXPIRED");
  if (state == kCancelled) return signed_return(s, m, tx, "CANCELLED");
  if (!give_up) return std::optional<std::string>{};
  bool cancelled = false;
  const std::int64_t at = now();
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(cancelled, tables::cancel(c, s.id, s.attempt, at));
    return {};
  }));
  if (!cancelled) return with_problem(conflict(), "reference", Reason::session_moved_on);
  return signed_return(s, m, tx, "CANCELLED");
}

}  // namespace sika::checkout
