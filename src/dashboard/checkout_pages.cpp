// A merchant's hosted checkout: its sessions (list, keyset pages; a session's page), its
// checkout secret, the key its site verifies signed return data with and signs requests with, and
// its "signed checkout requests only" setting (docs/checkout.md). Read through checkout::Service;
// a session of another merchant is a 404. The secret is derived, not stored: it is shown on
// request to members who may change things, and each showing is audited. The setting is changed
// by owners only, audited in the unit of the change.
#include <boost/json.hpp>

#include "checkout/service.hpp"
#include "checkout/store.hpp"
#include "core/json.hpp"
#include "core/money.hpp"
#include "core/reason.hpp"
#include "dashboard/internal.hpp"
#include "dashboard/store.hpp"
#include "dashboard/texts.hpp"
#include "merchant/merchant.hpp"
#include "payments/store.hpp"
#include "web/acting.hpp"

namespace sika::dashboard {

namespace bj = boost::json;
using web::html::escape;

namespace {
constexpr int kSessionsPerPage = 50;
}  // namespace

web::Response Service::checkout_sessions(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  if (!parts_.checkout) return error_page(req, unavailable(bj::string("hosted checkout not configured")));
  auto before = before_cursor(req);
  if (!before) return error_page(req, before.error());
  auto sessions = parts_.checkout->list_sessions(web::acting(c->principal), *before, kSessionsPerPage + 1);
  if (!sessions) return error_page(req, sessions.error());
  const bool more = static_cast<int>(sessions->size()) > kSessionsPerPage;
  if (more) sessions->pop_back();
  std::string body = "<section class=\"card\" aria-labelledby=\"cks\"><h2 id=\"cks\">" +
                     std::string(say(c->locale, "checkout_secret")) + "</h2><p>" +
                     std::string(say(c->locale, "your_site_verifies_the_signature")) + "</p>";
  if (c->principal.can_change())
    body += "<form method=\"post\" action=\"" + escape(path("/checkout/secret")) + "\">" + c->csrf_field() +
            "<button id=\"show-secret\">" + std::string(say(c->locale, "show_the_secret")) + "</button></form>";
  body += "</section>";
  auto signed_only = parts_.checkout->signed_only(c->principal.merchant_id);
  if (!signed_only) return error_page(req, signed_only.error());
  body += "<section class=\"card\" aria-labelledby=\"cko\"><h2 id=\"cko\">" +
          std::string(say(c->locale, "signed_requests_only")) + "</h2><p>" +
          std::string(say(c->locale, "on_every_form_or_call")) + "</p><p id=\"signed-only\"><strong>" +
          std::string(*signed_only ? say(c->locale, "status_on") : say(c->locale, "status_off")) + "</strong></p>";
  if (c->principal.role == web::Role::owner)
    body += "<form method=\"post\" action=\"" + escape(path("/checkout/signed-only")) + "\">" + c->csrf_field() +
            "<input type=\"hidden\" name=\"signed_only\" value=\"" + (*signed_only ? "off" : "on") +
            "\"><button id=\"toggle-signed-only\"" + (*signed_only ? " class=\"secondary\"" : "") + ">" +
            std::string(*signed_only ? say(c->locale, "accept_unsigned_requests_too")
                                     : say(c->locale, "accept_only_signed_requests")) +
            "</button></form>";
  else
    body += "<p class=\"muted\">" + std::string(say(c->locale, "only_owners_change_this_setting")) + "</p>";
  body += "</section>";
  if (sessions->empty()) {
    body += "<p class=\"muted\">" + std::string(say(c->locale, "no_session")) + "</p>";
  } else {
    body += "<div class=\"scroll\"><table id=\"checkout-sessions\"><thead><tr><th>" +
            std::string(say(c->locale, "date")) + "</th><th>" + std::string(say(c->locale, "order")) + "</th><th>" +
            std::string(say(c->locale, "status")) + "</th><th class=\"num\">" + std::string(say(c->locale, "amount")) +
            "</th><th>" + std::string(say(c->locale, "attempts")) + "</th></tr></thead><tbody>";
    const std::int64_t at = now();
    for (const auto& s : *sessions)
      body += "<tr><td>" + when(s.created_at, c->zone) + "</td><td><a href=\"" +
              escape(path("/checkout/" + web::percent_encode(s.reference))) + "\">" + escape(s.order_id) +
              "</a></td><td>" + badge(s.status_at(at)) + "</td><td class=\"num\">" +
              escape(money::format(s.amount, s.currency)) + "</td><td>" + std::to_string(s.attempt) + "</td></tr>";
    body += "</tbody></table></div>";
  }
  if (more) body += next_page_link(*c, "before=" + std::to_string(sessions->back().id));
  return page(req, *c, std::string(say(c->locale, "hosted_checkout")), body);
}

web::Response Service::checkout_session(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  if (!parts_.checkout) return error_page(req, unavailable(bj::string("hosted checkout not configured")));
  const std::string reference = req.path_param("reference");
  auto s = parts_.checkout->session(reference);
  if (s && (s->merchant_id != c->principal.merchant_id || s->environment != c->principal.environment))
    s = with_problem(not_found(), "reference", Reason::no_such_session);
  if (!s) return error_page(req, s.error());
  auto row = [](std::string_view label, const std::string& value) {
    return "<tr><th scope=\"row\">" + escape(label) + "</th><td>" + escape(value) + "</td></tr>";
  };
  std::string body =
      "<section class=\"card\"><p>" + badge(s->status_at(now())) + "</p><p class=\"amount\">" +
      escape(money::format(s->amount, s->currency)) + "</p><table id=\"checkout-session\"><tbody>" +
      row(say(c->locale, "order"), s->order_id) + row(say(c->locale, "shop"), s->shop_name) +
      row(say(c->locale, "description"), s->description) +
      row(say(c->locale, "customer"), s->customer.name + (s->customer.email.empty() ? "" : " · " + s->customer.email) +
                                          (s->customer.phone.empty() ? "" : " · " + s->customer.phone)) +
      row(say(c->locale, "fee_borne_by"), s->fee_bearer) + row(say(c->locale, "settlement"), s->settlement_mode) +
      row(say(c->locale, "payment_attempts"), std::to_string(s->attempt)) +
      row(say(c->locale, "created"), when(s->created_at, c->zone)) +
      row(say(c->locale, "expires"), when(s->expires_at, c->zone)) +
      row(say(c->locale, "return_success"), s->success_url) + row(say(c->locale, "return_failure"), s->failure_url) +
      "</tbody></table>";
  body += "</section>";
  // Each attempt is a collection whose idempotency key derives from the session (collection_uuid).
  std::vector<payments::Transaction> attempts;
  auto read = db_.read([&](store::Conn& conn) -> Status {
    for (std::int64_t n = 1; n <= s->attempt; ++n) {
      SIKA_ASSIGN_OR_RETURN(auto tx, payments::tables::find_by_uuid(conn, s->merchant_id, s->environment,
                                                                    checkout::collection_uuid(s->reference, n)));
      if (tx) attempts.push_back(std::move(*tx));
    }
    return {};
  });
  if (!read) return error_page(req, read.error());
  body += "<section class=\"card\" aria-labelledby=\"att\"><h2 id=\"att\">" + std::string(say(c->locale, "payments")) +
          "</h2>";
  if (attempts.empty()) body += "<p class=\"muted\">" + std::string(say(c->locale, "no_payment")) + "</p>";
  for (const auto& tx : attempts)
    body += "<p><a href=\"" + escape(path("/transactions/" + web::percent_encode(tx.reference))) + "\">" +
            escape(tx.reference) + "</a> " + badge(payments::to_string(tx.status)) + " " + escape(tx.service_code) +
            " · " + escape(tx.customer_wallet) + "</p>";
  body += "</section>";
  return page(req, *c, s->order_id, body);
}

web::Response Service::checkout_secret(web::Request& req) {
  auto c = member_context(req, /*changes=*/true);
  if (!c) return error_page(req, c.error());
  if (!parts_.checkout) return error_page(req, unavailable(bj::string("hosted checkout not configured")));
  if (auto fields = form_of(req); !fields) return error_page(req, fields.error());
  if (auto st = record(*c, c->principal.merchant_id, "checkout.secret_show", c->principal.merchant); !st)
    return error_page(req, st.error());
  std::string body = "<section class=\"card\" role=\"status\"><p>" + std::string(say(c->locale, "checkout_secret_of")) +
                     " " + escape(c->principal.merchant) + "</p><p class=\"secret\" id=\"checkout-secret\">" +
                     escape(parts_.checkout->merchant_secret(c->principal.merchant)) + "</p><p><a href=\"" +
                     escape(path("/checkout")) + "\">" + std::string(say(c->locale, "continue")) + "</a></p></section>";
  web::Response res = page(req, *c, std::string(say(c->locale, "hosted_checkout")), body);
  res.set("Cache-Control", "no-store");
  return res;
}

Result<bool> set_checkout_signed_only(store::Db& db, std::string_view matricule, bool on, std::int64_t user_id,
                                      const std::string& actor, std::int64_t now) {
  bool changed = false;
  SIKA_TRY(db.write([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto m, merchant::find_by_matricule(conn, matricule));
    if (!m) return with_problem(not_found(), "merchant", Reason::no_such_merchant);
    SIKA_ASSIGN_OR_RETURN(changed, checkout::tables::set_signed_only(conn, m->id, on, actor, now));
    if (!changed) return {};  // already so: nothing to audit
    return append_audit(conn, AuditEntry{0, now, user_id, actor, m->id, "checkout.signed_only", m->matricule,
                                         json::dump(bj::object{{"signed_only", on}})});
  }));
  return changed;
}

web::Response Service::checkout_signed_only(web::Request& req) {
  auto c = member_context(req, /*changes=*/true);
  if (!c) return error_page(req, c.error());
  if (c->principal.role != web::Role::owner) return error_page(req, not_allowed(Reason::owners_change_checkout));
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  const std::string value = web::field_value(*fields, "signed_only");
  if (value != "on" && value != "off")
    return error_page(req,
                      field_error("signed_only", Problem(Reason::either_of, {{"first", "on"}, {"second", "off"}})));
  auto changed = set_checkout_signed_only(db_, c->principal.merchant, value == "on", c->session.row.user_id,
                                          c->session.row.email, now());
  if (!changed) return error_page(req, changed.error());
  return see_other("/checkout");
}

}  // namespace sika::dashboard
