// The link API's handlers (link surface, /api/agent/...): each reads its fields, calls one
// operation of the Service and answers with the envelope. GET takes the fields from the query
// string, POST from a JSON (or form) body.
#include <boost/json.hpp>

#include "core/reason.hpp"
#include "merchant/merchant.hpp"
#include "otp/code.hpp"
#include "otp/service.hpp"
#include "payments/model.hpp"
#include "wallets/service.hpp"
#include "web/acting.hpp"
#include "web/envelope.hpp"

namespace sika::wallets {

namespace bj = boost::json;

namespace {

// The request's fields: the query (GET) or the body (POST), as one object.
Result<bj::object> fields_of(const web::Request& req) {
  if (req.method == "GET" || req.method == "HEAD") {
    bj::object o;
    for (const auto& [k, v] : req.query) {
      if (o.contains(k)) return empty_data(bj::object{{k, "is given more than once"}});
      o[k] = v;
    }
    return o;
  }
  return web::body_object(req, /*allow_form=*/true);
}

// The fields of an operation on one link: `apikey` plus `allowed`; every other field is refused.
Result<bj::object> link_fields(const web::Request& req, std::initializer_list<std::string_view> allowed,
                               json::FieldErrors& errors) {
  SIKA_ASSIGN_OR_RETURN(bj::object o, fields_of(req));
  for (const auto& kv : o)
    if (kv.key() != "apikey" && std::find(allowed.begin(), allowed.end(), kv.key()) == allowed.end())
      errors.add(kv.key(), Reason::unknown_field);
  if (!o.contains("apikey")) errors.add("apikey", Reason::required_link_key);
  return o;
}

std::string text_of(const bj::object& o, std::string_view key, json::FieldErrors& errors) {
  const bj::value* v = o.if_contains(key);
  if (!v || v->is_null()) return {};
  if (v->is_string()) return std::string(v->as_string());
  if (v->is_int64() && v->as_int64() >= 0) return std::to_string(v->as_int64());
  errors.add(key, Reason::not_string);
  return {};
}

web::Response answer_link(const web::Request& req, const Result<Link>& link, std::int64_t at,
                          std::string_view message = "ok") {
  if (!link) return web::error(req, link.error());
  return web::ok(req, to_json(*link, at), {}, message);
}

web::Response answer_tx(const web::Request& req, const Result<payments::Transaction>& tx) {
  if (!tx) return web::error(req, tx.error());
  return web::ok(req, payments::to_record(*tx), {}, "submitted");
}

// A charge's or payout's fields; a top-up's or withdrawal's (`mobile_money`) also take
// `provider`, and a top-up `otp`.
// `otp_length`: the digits of one-time codes (an integer otp is left-padded to it).
Result<std::pair<std::string, Transfer>> transfer_of(const web::Request& req, bool mobile_money = false,
                                                     bool with_otp = false, int otp_length = 6) {
  json::FieldErrors errors;
  SIKA_ASSIGN_OR_RETURN(
      bj::object o,
      link_fields(req, {"amount", "currency", "transaction_uuid", "description", "provider", "otp"}, errors));
  for (std::string_view only : {"provider", "otp"})
    if (o.contains(only) && (only == "otp" ? !with_otp : !mobile_money)) errors.add(only, Reason::unknown_field);
  Transfer t;
  std::string apikey = text_of(o, "apikey", errors);
  if (auto a = json::get_int(o, "amount", errors, true)) {
    t.amount = *a;
    if (t.amount <= 0) errors.add("amount", Reason::positive_minor_units);
  }
  if (auto c = json::get_string(o, "currency", errors)) t.currency = *c;
  if (auto u = json::get_string(o, "transaction_uuid", errors, true)) t.transaction_uuid = *u;
  if (auto d = json::get_string(o, "description", errors)) t.description = *d;
  if (mobile_money)
    if (auto p = json::get_string(o, "provider", errors)) t.provider = *p;
  if (with_otp) t.otp = otp::read_code(o, "otp", otp_length, errors).value_or("");
  SIKA_TRY(errors.status());
  return std::pair{std::move(apikey), std::move(t)};
}

}  // namespace

Result<web::Principal> Service::authenticate_partner(web::Request& req) {
  // The address's budget first: a wrong key counts like any request, so keys cannot be guessed
  // faster than the limit; then the partner's key, before any field is read.
  if (options_.api_limiter) {
    const std::string bucket = "link-api:ip:" + req.remote_ip;
    std::optional<limits::Decision> d;
    if (req.offload_to) {
      // On an I/O thread: decided from this node's block, or again on a handler thread when the
      // decision needs a reservation in the database.
      SIKA_ASSIGN_OR_RETURN(d, options_.api_limiter->try_hit(bucket, options_.per_address));
      if (!d) return web::handler_thread_needed();  // the address's budget needs a reservation
    } else {
      SIKA_ASSIGN_OR_RETURN(d, options_.api_limiter->hit(bucket, options_.per_address));
    }
    if (!d->allowed) return limits::refusal(*d, "requests per hour per address on /api/agent");
  }
  std::string_view key = req.header("x-api-key");
  if (key.empty()) return unauthorized(bj::object{{"x-api-key", "is required (the partner's link API key)"}});
  std::optional<merchant::Merchant> m;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(m, merchant::authenticate_key(c, options_.pepper, key, merchant::KeyKind::link));
    return {};
  }));
  if (!m) return unauthorized(bj::object{{"x-api-key", "is not a valid link API key"}});
  web::Principal p;
  p.subject = "link-key:" + m->matricule;
  p.merchant = m->matricule;
  p.merchant_id = m->id;
  p.countries = m->countries;
  p.environment = m->environment;
  p.role = web::Role::owner;
  return p;
}

Result<web::Response> Service::link_new(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(auto fields, fields_of(req));
  json::FieldErrors errors;
  LinkRequest r = parse_link_request(fields, errors);
  SIKA_TRY(errors.status());
  r.locale = req.locale;
  SIKA_ASSIGN_OR_RETURN(auto linked, link(web::acting(*req.principal), r));
  const std::int64_t at = now();
  bj::object consent{{"status", linked.link.status == kPending ? "required" : "given"},
                     {"sent", linked.consent_sent},
                     {"sent_to", masked_phone(linked.link.wallet.msisdn)}};
  if (!linked.consent_note.empty()) {
    consent["note"] = linked.consent_note;
    consent["retry_after"] = linked.retry_after;
  }
  bj::object data{{"matricule", linked.link.wallet.matricule},
                  {"apikey", linked.apikey},
                  {"link", to_json(linked.link, at)},
                  {"consent", std::move(consent)}};
  return web::ok(req, std::move(data), {}, "link success");
}

Result<web::Response> Service::link_status(web::Request& req) {
  json::FieldErrors errors;
  SIKA_ASSIGN_OR_RETURN(auto o, link_fields(req, {}, errors));
  std::string apikey = text_of(o, "apikey", errors);
  SIKA_TRY(errors.status());
  return answer_link(req, find(web::acting(*req.principal), apikey), now());
}

Result<web::Response> Service::link_confirm(web::Request& req) {
  json::FieldErrors errors;
  SIKA_ASSIGN_OR_RETURN(auto o, link_fields(req, {"otp"}, errors));
  std::string apikey = text_of(o, "apikey", errors);
  std::string code = otp::read_code(o, "otp", otp_.options().code_length, errors).value_or("");
  if (code.empty() && !errors.has("otp")) errors.add("otp", Reason::required_user_code);
  SIKA_TRY(errors.status());
  return answer_link(req, confirm(web::acting(*req.principal), apikey, code), now());
}

Result<web::Response> Service::link_unlink(web::Request& req) {
  json::FieldErrors errors;
  SIKA_ASSIGN_OR_RETURN(auto o, link_fields(req, {}, errors));
  std::string apikey = text_of(o, "apikey", errors);
  SIKA_TRY(errors.status());
  return answer_link(req, unlink_by_partner(web::acting(*req.principal), apikey), now());
}

// Answered from the write's completion: nothing holds a thread while the charge's unit commits.
Result<web::Response> Service::link_charge(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(auto t, transfer_of(req));
  web::Reply reply = web::answer_later(req);
  if (!reply) return answer_tx(req, charge(web::acting(*req.principal), t.first, t.second));
  charge_async(web::acting(*req.principal), t.first, t.second,
               [reply = std::move(reply), locale = req.locale](Result<payments::Transaction> tx) {
                 web::reply_with(reply, locale, "link charge", [&](const web::Request& r) { return answer_tx(r, tx); });
               });
  return web::Response::later();
}

Result<web::Response> Service::link_payout(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(auto t, transfer_of(req));
  return answer_tx(req, payout(web::acting(*req.principal), t.first, t.second));
}

Result<web::Response> Service::link_topup(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(auto t, transfer_of(req, /*mobile_money=*/true, /*with_otp=*/true, otp_.options().code_length));
  return answer_tx(req, topup_by_partner(web::acting(*req.principal), t.first, t.second));
}

Result<web::Response> Service::link_withdraw(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(auto t, transfer_of(req, /*mobile_money=*/true));
  return answer_tx(req, withdraw_by_partner(web::acting(*req.principal), t.first, t.second));
}

Result<web::Response> Service::link_init(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(auto t, transfer_of(req));
  SIKA_ASSIGN_OR_RETURN(auto tx, init(web::acting(*req.principal), t.first, t.second));
  // The record, plus whether it waits for the user's code (link/approve).
  bj::object record = payments::to_record(tx);
  record["needs_otp"] = tx.status == payments::TxStatus::initiated && tx.needs_otp;
  return web::ok(req, std::move(record), {}, "submitted");
}

Result<web::Response> Service::link_approve(web::Request& req) {
  json::FieldErrors errors;
  SIKA_ASSIGN_OR_RETURN(auto o, link_fields(req, {"transaction_reference", "otp"}, errors));
  std::string apikey = text_of(o, "apikey", errors);
  std::string reference = text_of(o, "transaction_reference", errors);
  std::string code = otp::read_code(o, "otp", otp_.options().code_length, errors).value_or("");
  if (reference.empty() && !errors.has("transaction_reference"))
    errors.add("transaction_reference", Reason::required_link_reference);
  if (code.empty() && !errors.has("otp")) errors.add("otp", Reason::required_user_code);
  SIKA_TRY(errors.status());
  return answer_tx(req, approve(web::acting(*req.principal), apikey, reference, code));
}

Result<web::Response> Service::link_fiat_distribution(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(auto body, web::body_object(req, /*allow_form=*/false));
  json::FieldErrors errors;
  DistributionRequest r = parse_distribution_request(body, errors);
  SIKA_TRY(errors.status());
  SIKA_ASSIGN_OR_RETURN(auto d, distribute(web::acting(*req.principal), r));
  return web::ok(req, to_json(d), {}, "distributed");
}

}  // namespace sika::wallets
