// The gateway handlers of payments: each reads its body, calls one operation of the Service
// and answers with the envelope. The operations are in service.cpp, the confirmation page in
// page.cpp.
#include <boost/json.hpp>

#include <algorithm>

#include "otp/code.hpp"
#include "otp/service.hpp"
#include "payments/queries.hpp"
#include "payments/service.hpp"
#include "payments/store.hpp"
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

web::Response Service::create_intent(web::Request& req) { return create_handler(req, kCollection); }
web::Response Service::disbursement_intent(web::Request& req) { return create_handler(req, kDisbursement); }

web::Response Service::create_handler(web::Request& req, std::string_view operation) {
  auto principal = web::merchant_caller(req);
  if (!principal) return web::error(req, principal.error());
  auto body = web::body_object(req);
  if (!body) return web::error(req, body.error());
  json::FieldErrors errors;
  IntentRequest request = parse_intent(*body, operation, errors);
  // A PROVIDER collection needs nothing after its commit: it is answered from the write's
  // completion without holding a thread. The others (a WALLET code to send, a payout to submit)
  // may block.
  web::Reply reply;
  if (operation == kCollection && request.channel == kChannelProvider) reply = web::answer_later(req);
  if (!reply)
    return web::run_blocking(req, [this, request = std::move(request), merchant = **principal,
                                   errors = std::move(errors)](web::Request& r) mutable {
      return answer(r, create(request, merchant, std::move(errors)), "submitted");
    });
  create_collection_async(std::move(request), **principal, std::move(errors),
                          [reply = std::move(reply), locale = req.locale](Result<Transaction> tx) {
                            web::reply_with(reply, locale, "collection intent",
                                            [&](const web::Request& r) { return answer(r, tx, "submitted"); });
                          });
  return web::Response::later();
}

// ---- execution, cancel, status ----------------------------------------------------------------

int Service::otp_code_length() const { return options_.otp ? options_.otp->options().code_length : 6; }

web::Response Service::execute(web::Request& req) {
  auto principal = web::merchant_caller(req);
  if (!principal) return web::error(req, principal.error());
  auto body = web::body_object(req);
  if (!body) return web::error(req, body.error());
  json::FieldErrors errors;
  refuse_unknown_fields(*body, {"transaction_reference", "invoice_reference", "otp"}, errors);
  auto reference = json::get_string(*body, "transaction_reference", errors, true);
  auto invoice = json::get_string(*body, "invoice_reference", errors);
  std::optional<std::string> otp = otp::read_code(*body, "otp", otp_code_length(), errors);
  if (!errors.empty()) return web::error(req, errors.status().error());
  auto tx = find(**principal, *reference, kCollection);
  if (!tx) return web::error(req, tx.error());
  if (invoice && *invoice != tx->invoice_reference)
    return web::error(req, empty_data(bj::object{{"invoice_reference", "does not match the transaction"}}));
  return answer(req, execute_collection(std::move(tx).value(), std::move(otp), "execute"), "submitted");
}

web::Response Service::cancel(web::Request& req) {
  auto tx = referenced(req, kCollection);
  if (!tx) return web::error(req, tx.error());
  return answer(req, cancel_collection(*tx, "merchant", "CANCELLED_BY_MERCHANT"));
}

// The transaction a body of exactly {transaction_reference} names, as the caller may see it.
Result<Transaction> Service::referenced(const web::Request& req, std::string_view operation) {
  SIKA_ASSIGN_OR_RETURN(const web::Principal* principal, web::merchant_caller(req));
  SIKA_ASSIGN_OR_RETURN(auto body, web::body_object(req));
  json::FieldErrors errors;
  refuse_unknown_fields(body, {"transaction_reference"}, errors);
  auto reference = json::get_string(body, "transaction_reference", errors, true);
  SIKA_TRY(errors.status());
  return find(*principal, *reference, operation);
}

web::Response Service::status(web::Request& req) { return show_handler(req, kCollection); }
web::Response Service::disbursement_status(web::Request& req) { return show_handler(req, kDisbursement); }

web::Response Service::show_handler(web::Request& req, std::string_view operation) {
  auto tx = referenced(req, operation);
  if (!tx) return web::error(req, tx.error());
  return answer(req, current(std::move(tx).value(), "poll"), "transaction_status");
}

// ---- callbacks --------------------------------------------------------------------------------

web::Response Service::operator_callback(web::Request& req) {
  std::string name = req.path_param("connector");
  if (name.empty()) name = "sandbox";
  Connector* conn = connector(name);
  if (!conn) return web::error(req, not_found(bj::object{{"connector", "no such connector"}}));
  auto report = conn->parse_callback(req);
  if (!report) return web::error(req, report.error());
  auto outcome = record_callback(*conn, *report, req.body);
  if (!outcome) return web::error(req, outcome.error());
  bj::object o;
  o["received"] = true;
  o["outcome"] = *outcome;
  return web::Response::json(200, bj::serialize(o));
}

// ---- verification and balances ----------------------------------------------------------------

web::Response Service::verify_account(web::Request& req) {
  auto principal_r = web::merchant_caller(req);
  if (!principal_r) return web::error(req, principal_r.error());
  const web::Principal& principal = **principal_r;
  auto body = web::body_object(req);
  if (!body) return web::error(req, body.error());
  json::FieldErrors errors;
  refuse_unknown_fields(*body, {"provider", "wallet"}, errors);
  auto provider = json::get_string(*body, "provider", errors, true);
  auto wallet = json::get_string(*body, "wallet", errors, true);
  auto holder = account_holder(principal, provider.value_or(""), wallet.value_or(""), std::move(errors));
  if (!holder) return web::error(req, holder.error());
  bj::object data;
  data["provider"] = holder->service_code;
  data["wallet"] = holder->msisdn;
  data["account_holder_name"] = holder->name;
  data["verified"] = true;
  return web::ok(req, std::move(data));
}

web::Response Service::balances(web::Request& req) {
  auto principal = web::merchant_caller(req);
  if (!principal) return web::error(req, principal.error());
  std::vector<queries::CurrencyBalance> rows;
  auto st = db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(rows, queries::merchant_balances(c, (*principal)->merchant_id, (*principal)->environment));
    return {};
  });
  if (!st) return web::error(req, st.error());
  bj::array data;
  for (const auto& b : rows)
    data.push_back(bj::object{{"currency", b.currency}, {"available", b.available}, {"pending", b.pending}});
  return web::ok(req, std::move(data));
}

}  // namespace sika::payments
