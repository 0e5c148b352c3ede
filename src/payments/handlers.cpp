// The gateway handlers of payments: each reads its body, calls one operation of the Service
// and answers with the envelope. The operations are in service.cpp, the confirmation page in
// page.cpp.
#include <boost/json.hpp>

#include <algorithm>

#include "core/money.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "notify/notifier.hpp"
#include "otp/code.hpp"
#include "otp/service.hpp"
#include "payments/intent.hpp"
#include "payments/queries.hpp"
#include "payments/service.hpp"
#include "payments/store.hpp"
#include "web/acting.hpp"
#include "web/envelope.hpp"

namespace sika::payments {

namespace bj = boost::json;

namespace {

web::Response answer(const web::Request& req, const Result<Transaction>& tx, std::string_view message = {}) {
  if (!tx) return web::error(req, tx.error());
  return web::ok(req, to_record(*tx), {}, message);
}

}  // namespace

// ---- intents ----------------------------------------------------------------------------------

Result<web::Response> Service::create_intent(web::Request& req) { return create_handler(req, kCollection); }
Result<web::Response> Service::disbursement_intent(web::Request& req) { return create_handler(req, kDisbursement); }

Result<web::Response> Service::create_handler(web::Request& req, std::string_view operation) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  SIKA_ASSIGN_OR_RETURN(auto body, web::body_object(req));
  json::FieldErrors errors;
  IntentRequest request = parse_intent(body, operation, errors);
  // A PROVIDER collection needs nothing after its commit: it is answered from the write's
  // completion without holding a thread. The others (a WALLET code to send, a payout to submit)
  // may block.
  web::Reply reply;
  if (operation == kCollection && request.channel == kChannelProvider) reply = web::answer_later(req);
  if (!reply)
    return web::run_blocking(req, [this, request = std::move(request), merchant = acting,
                                   errors = std::move(errors)](web::Request& r) mutable {
      return answer(r,
                    request.operation == kCollection ? collect(request, merchant, How{}, std::move(errors))
                                                     : create(request, merchant, std::move(errors)),
                    "submitted");
    });
  collect_async(std::move(request), acting, How{}, std::move(errors),
                [reply = std::move(reply), locale = req.locale](Result<Transaction> tx) {
                  web::reply_with(reply, locale, "collection intent",
                                  [&](const web::Request& r) { return answer(r, tx, "submitted"); });
                });
  return web::Response::later();
}

// ---- execution, cancel, status ----------------------------------------------------------------

int Service::otp_code_length() const { return options_.otp ? options_.otp->options().code_length : 6; }

Result<web::Response> Service::execute(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  SIKA_ASSIGN_OR_RETURN(auto body, web::body_object(req));
  json::FieldErrors errors;
  refuse_unknown_fields(body, {"transaction_reference", "invoice_reference", "otp"}, errors);
  auto reference = json::get_string(body, "transaction_reference", errors, true);
  auto invoice = json::get_string(body, "invoice_reference", errors);
  std::optional<std::string> otp = otp::read_code(body, "otp", otp_code_length(), errors);
  SIKA_TRY(errors.status());
  SIKA_ASSIGN_OR_RETURN(auto tx, find(acting, *reference, kCollection));
  if (invoice && *invoice != tx.invoice_reference)
    return empty_data(bj::object{{"invoice_reference", "does not match the transaction"}});
  return answer(req, execute_collection(std::move(tx), std::move(otp), "execute"), "submitted");
}

Result<web::Response> Service::cancel(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(auto tx, referenced(req, kCollection));
  return answer(req, cancel_collection(tx, "merchant", "CANCELLED_BY_MERCHANT"));
}

// The transaction a body of exactly {transaction_reference} names, as the caller may see it.
Result<Transaction> Service::referenced(const web::Request& req, std::string_view operation) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  SIKA_ASSIGN_OR_RETURN(auto body, web::body_object(req));
  json::FieldErrors errors;
  refuse_unknown_fields(body, {"transaction_reference"}, errors);
  auto reference = json::get_string(body, "transaction_reference", errors, true);
  SIKA_TRY(errors.status());
  return find(acting, *reference, operation);
}

Result<web::Response> Service::status(web::Request& req) { return show_handler(req, kCollection); }
Result<web::Response> Service::disbursement_status(web::Request& req) { return show_handler(req, kDisbursement); }

Result<web::Response> Service::show_handler(web::Request& req, std::string_view operation) {
  SIKA_ASSIGN_OR_RETURN(auto tx, referenced(req, operation));
  return answer(req, current(std::move(tx), "poll"), "transaction_status");
}

// ---- callbacks --------------------------------------------------------------------------------

Result<web::Response> Service::operator_callback(web::Request& req) {
  std::string name = req.path_param("connector");
  if (name.empty()) name = "sandbox";
  Connector* conn = connector(name);
  if (!conn) return not_found(bj::object{{"connector", "no such connector"}});
  SIKA_ASSIGN_OR_RETURN(auto report, conn->parse_callback(req));
  // A per-payment secret the operator echoes (Orange's notif_token) is checked against its order.
  SIKA_TRY(authenticate_callback(*conn, req, report));
  // An unsigned callback is a hint: the operator's own answer decides (verify_callback).
  std::optional<OperatorStatus> verified;
  if (!conn->signs_callbacks()) verified = verify_callback(*conn, report);
  SIKA_ASSIGN_OR_RETURN(auto outcome, record_callback(*conn, report, req.body, verified));
  bj::object o;
  o["received"] = true;
  o["outcome"] = outcome;
  return web::Response::json(200, bj::serialize(o));
}

// ---- verification and balances ----------------------------------------------------------------

Result<web::Response> Service::verify_account(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  SIKA_ASSIGN_OR_RETURN(auto body, web::body_object(req));
  json::FieldErrors errors;
  refuse_unknown_fields(body, {"provider", "wallet"}, errors);
  auto provider = json::get_string(body, "provider", errors, true);
  auto wallet = json::get_string(body, "wallet", errors, true);
  SIKA_ASSIGN_OR_RETURN(auto holder,
                        account_holder(acting, provider.value_or(""), wallet.value_or(""), std::move(errors)));
  bj::object data;
  data["provider"] = holder.service_code;
  data["wallet"] = holder.msisdn;
  data["account_holder_name"] = holder.name;
  data["verified"] = true;
  return web::ok(req, std::move(data));
}

Result<web::Response> Service::balances(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  std::vector<queries::CurrencyBalance> rows;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(rows, queries::merchant_balances(c, acting.merchant_id, acting.environment));
    return {};
  }));
  bj::array data;
  for (const auto& b : rows)
    data.push_back(bj::object{{"currency", b.currency}, {"available", b.available}, {"pending", b.pending}});
  return web::ok(req, std::move(data));
}

// ---- fee quote (shop plugins, hosted checkout) -------------------------------------------------

Result<web::Response> Service::fee_quote(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(const Acting acting, web::merchant_acting(req));
  SIKA_ASSIGN_OR_RETURN(auto body, web::body_object(req));
  json::FieldErrors errors;
  refuse_unknown_fields(body, {"provider", "amount", "currency", "feeBearer"}, errors);
  auto provider = json::get_string(body, "provider", errors, true);
  auto amount = json::get_int(body, "amount", errors, true);
  auto currency = json::get_string(body, "currency", errors, true);
  auto bearer = json::get_string(body, "feeBearer", errors);
  const std::string fee_bearer = bearer.value_or(std::string(kCustomerBearsFee));
  if (amount && *amount <= 0) errors.add("amount", Reason::positive_minor_units);
  if (amount && *amount > options_.max_amount) errors.add("amount", reason::at_most(options_.max_amount));
  if (currency && !money::is_currency_code(*currency)) errors.add("currency", Reason::currency_code);
  if (fee_bearer != kCustomerBearsFee && fee_bearer != kMerchantBearsFee) errors.add("feeBearer", Reason::fee_bearer);
  if (provider && provider->empty()) errors.add("provider", Reason::required);
  auto cat = catalog();
  const catalog::PaymentService* service = nullptr;
  if (provider && !provider->empty()) service = usable_service(*cat, *provider, "provider", errors);
  if (service && currency && money::is_currency_code(*currency) && *currency != service->currency)
    errors.add("currency",
               Problem(Reason::service_currency, {{"currency", service->currency}, {"service", service->code}}));
  if (service && amount && *amount > 0) {
    if (service->min_amount && *amount < *service->min_amount)
      errors.add("amount", Problem(Reason::at_least_for_service,
                                   {{"min", std::to_string(*service->min_amount)}, {"service", service->code}}));
    if (service->max_amount && *amount > *service->max_amount)
      errors.add("amount", Problem(Reason::at_most_for_service,
                                   {{"max", std::to_string(*service->max_amount)}, {"service", service->code}}));
  }
  SIKA_TRY(errors.status());
  const catalog::Country* country = cat->country_by_id(service->country_id);
  if (!country) return empty_data(bj::object{{"provider", "is not configured"}});
  if (!acting.admin && !acting.grants_country(country->code))
    return forbidden(bj::object{
        {"provider", "the country " + country->code + " of this service is not granted to this credential"}});
  // What the collection itself would refuse for this credential's environment, refused alike.
  if (service->kind == catalog::ServiceKind::wallet) {
    if (acting.environment != "sandbox")
      return empty_data(
          bj::object{{"provider", service->code + " is a platform wallet service: its collections need the customer's "
                                                  "one-time code, which only the sandbox delivers"}});
  } else {
    const catalog::Provider* prov = cat->provider_by_id(service->provider_id);
    if (!prov) return empty_data(bj::object{{"provider", "is not configured"}});
    const std::string connector_name = acting.environment == "sandbox" ? std::string("sandbox") : prov->connector;
    if (!connector(connector_name))
      return provider_unavailable(bj::object{{"provider", "no connector is available for " + prov->code}});
  }
  SIKA_ASSIGN_OR_RETURN(auto price,
                        price_operation(*cat, *service, /*collection=*/true, *amount, fee_bearer, acting.user_tier));
  bj::object data;
  data["provider"] = service->code;
  data["baseAmount"] = *amount;
  data["feeAmount"] = price.fee;
  data["payableAmount"] = price.required_total;
  data["merchantNetAmount"] = price.credited;
  data["currency"] = service->currency;
  data["feeBearer"] = fee_bearer;
  return web::ok(req, std::move(data));
}

// ---- sandbox tools -----------------------------------------------------------------------------

Result<web::Response> Service::sandbox_messages(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(auto principal_r, web::merchant_caller(req));
  // Prod merchants are told nothing: for them the route does not exist.
  if (principal_r->environment != "sandbox") return not_found(bj::string("no route for " + req.path));
  json::FieldErrors errors;
  std::string digits;
  auto phone = req.query_param("phone");
  if (!phone || phone->empty()) {
    errors.add("phone", Reason::required_international_phone);
  } else {
    std::string_view p = *phone;
    if (!p.empty() && p.front() == '+') p.remove_prefix(1);
    bool ok = p.size() >= 6 && p.size() <= 15;
    for (char ch : p) ok = ok && ch >= '0' && ch <= '9';
    if (ok)
      digits = std::string(p);
    else
      errors.add("phone", Reason::phone_6_to_15);
  }
  std::int64_t limit = 20;
  if (auto l = req.query_param("limit")) {
    std::int64_t v = 0;
    bool ok = !l->empty() && l->size() <= 3;
    for (char ch : *l) {
      ok = ok && ch >= '0' && ch <= '9';
      if (ok) v = v * 10 + (ch - '0');
    }
    if (ok && v >= 1 && v <= 50)
      limit = v;
    else
      errors.add("limit", reason::with(Reason::integer_one_to, "max", "50"));
  }
  SIKA_TRY(errors.status());
  std::vector<notify::OutboxMessage> messages;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(messages,
                          notify::list_outbox(c, notify::OutboxFilter{"+" + digits, std::string("sandbox"), limit}));
    return {};
  }));
  bj::array data;
  for (const auto& m : messages)
    data.push_back(bj::object{{"message_id", m.message_id},
                              {"channel", notify::to_string(m.channel)},
                              {"to", m.to},
                              {"body", m.body},
                              {"tag", m.tag},
                              {"created_at", iso8601(m.created_at)}});
  return web::ok(req, std::move(data));
}

}  // namespace sika::payments
