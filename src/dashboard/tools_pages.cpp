// A merchant's webhooks (endpoints, secret rotation shown once, the delivery log with replay) and
// sandbox tools (the SMS / e-mail outbox of the sandbox notifier, forcing the sandbox operator's
// outcome of a PENDING collection).
#include <boost/json.hpp>

#include <algorithm>

#include "core/json.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "dashboard/internal.hpp"
#include "dashboard/texts.hpp"
#include "notify/notifier.hpp"
#include "payments/service.hpp"
#include "web/acting.hpp"
#include "webhooks/registry.hpp"
#include "webhooks/service.hpp"

namespace sika::dashboard {

namespace bj = boost::json;
using web::html::escape;

namespace {

std::string secret_shown_once(const Service::Ctx& c, const std::string& endpoint_id, const std::string& secret,
                              const std::string& back) {
  return "<section class=\"card\" role=\"status\"><p>" + escape(endpoint_id) + "</p><p>" +
         std::string(say(c.locale, "signing_secret_shown_once_copy")) +
         "</p><p class=\"secret\" id=\"endpoint-secret\">" + escape(secret) + "</p><p><a href=\"" + escape(back) +
         "\">" + std::string(say(c.locale, "continue")) + "</a></p></section>";
}

}  // namespace

// The outcomes a merchant may force: the sandbox operator's success and its failure reasons.
constexpr std::string_view kForcedOutcomes[] = {"SUCCESSFUL", "INSUFFICIENT_FUNDS", "REJECTED_BY_CUSTOMER", "TIMEOUT"};

std::string force_form(const Service::Ctx& c, const std::string& action) {
  std::string out = "<form method=\"post\" action=\"" + escape(action) + "\">" + c.csrf_field() +
                    "<label for=\"outcome\">" + std::string(say(c.locale, "operator_s_answer_sandbox")) +
                    "</label><select id=\"outcome\" name=\"outcome\">";
  for (auto o : kForcedOutcomes) out += "<option>" + std::string(o) + "</option>";
  return out + "</select><button id=\"force\">" + std::string(say(c.locale, "force")) + "</button></form>";
}

web::Response Service::force_outcome(web::Request& req) {
  auto c = member_context(req, /*changes=*/true);
  if (!c) return error_page(req, c.error());
  if (!parts_.payments) return error_page(req, unavailable(bj::string("payments not configured")));
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  const std::string reference = req.path_param("reference");
  const std::string outcome = web::field_value(*fields, "outcome");
  payments::OperatorStatus status;
  if (outcome == "SUCCESSFUL") {
    status.state = payments::OperatorStatus::State::succeeded;
  } else if (std::find(std::begin(kForcedOutcomes) + 1, std::end(kForcedOutcomes), outcome) !=
             std::end(kForcedOutcomes)) {
    status.state = payments::OperatorStatus::State::failed;
    status.reason = outcome;
  } else {
    return error_page(req, with_problem(bad_request("invalid_request"), "outcome", Reason::forced_outcome));
  }
  auto tx = parts_.payments->find(web::acting(c->principal), reference, payments::kCollection);
  if (!tx) return error_page(req, tx.error());
  if (auto forced = parts_.payments->force_sandbox_outcome(*tx, status); !forced)
    return error_page(req, forced.error());
  (void)record(*c, c->principal.merchant_id, "transaction.force_outcome", reference,
               bj::serialize(bj::object{{"outcome", outcome}}));
  return see_other("/transactions/" + web::percent_encode(reference));
}

std::string replay_form(const Service::Ctx& c, const std::string& action, std::string_view event_id,
                        std::string_view endpoint_id) {
  return "<form class=\"inline\" method=\"post\" action=\"" + escape(action) + "\">" + c.csrf_field() +
         "<input type=\"hidden\" name=\"event_id\" value=\"" + escape(event_id) +
         "\"><input type=\"hidden\" name=\"endpoint_id\" value=\"" + escape(endpoint_id) + "\"><button>" +
         std::string(say(c.locale, "replay")) + "</button></form>";
}

Status Service::replay(const Ctx& c, std::string_view event_id, std::string_view endpoint_id) {
  if (!parts_.webhooks) return unavailable(bj::string("webhooks not configured"));
  if (event_id.empty()) return field_error("event_id", Reason::required_short);
  auto done = parts_.webhooks->registry().redeliver(
      c.principal.merchant_id, event_id,
      endpoint_id.empty() ? std::nullopt : std::optional<std::string>(std::string(endpoint_id)), now());
  if (!done) return done.take_error();
  return record(c, c.principal.merchant_id, "webhook.redeliver", std::string(event_id),
                json::dump(bj::object{{"endpoint_id", std::string(endpoint_id)}}));
}

web::Response Service::webhooks_page(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  if (!parts_.webhooks) return error_page(req, unavailable(bj::string("webhooks not configured")));
  auto& registry = parts_.webhooks->registry();
  auto endpoints = registry.list(c->principal.merchant_id, 100, 0);
  if (!endpoints) return error_page(req, endpoints.error());
  webhooks::DeliveryFilter df;
  if (auto s = req.query_param("status"); s && !s->empty()) df.status = *s;
  auto deliveries = registry.list_deliveries(c->principal.merchant_id, df, 50, 0);
  if (!deliveries) return error_page(req, deliveries.error());
  const bool can = c->principal.can_change();
  std::string body = "<section class=\"card\"><h2>" + std::string(say(c->locale, "endpoints")) +
                     "</h2><div class=\"scroll\"><table id=\"endpoints\"><thead><tr><th>URL</th><th>" +
                     std::string(say(c->locale, "events")) + "</th><th>" + std::string(say(c->locale, "enabled")) +
                     "</th><th>" + std::string(say(c->locale, "secret_since")) + "</th><th></th></tr></thead><tbody>";
  for (const auto& e : endpoints->items) {
    std::string types;
    for (const auto& t : e.event_types) types += (types.empty() ? "" : " ") + t;
    body += "<tr><td>" + escape(e.url) + "</td><td>" + escape(types) + "</td><td>" +
            std::string(e.enabled ? say(c->locale, "yes") : say(c->locale, "no")) +
            (e.disabled_reason ? " (" + escape(*e.disabled_reason) + ")" : "") + "</td><td>" +
            when(e.secret_created_at, c->zone) + "</td><td>";
    if (can)
      body += "<form class=\"inline\" method=\"post\" action=\"" +
              escape(path("/webhooks/" + web::percent_encode(e.id) + "/rotate")) + "\">" + c->csrf_field() +
              "<button class=\"secondary\">" + std::string(say(c->locale, "rotate_secret")) + "</button></form>";
    body += "</td></tr>";
  }
  body += "</tbody></table></div></section>";
  if (can)
    body += "<form class=\"card\" method=\"post\" action=\"" + escape(path("/webhooks")) + "\"><h2>" +
            std::string(say(c->locale, "new_endpoint")) + "</h2>" + c->csrf_field() +
            "<label for=\"url\">URL (https)</label><input id=\"url\" name=\"url\" type=\"url\" required>"
            "<label for=\"wh-description\">" +
            std::string(say(c->locale, "description")) +
            "</label><input id=\"wh-description\" name=\"description\" maxlength=\"200\"><button>" +
            std::string(say(c->locale, "create")) + "</button></form>";
  body += "<section class=\"card\"><h2>" + std::string(say(c->locale, "delivery_log")) +
          "</h2><p><a href=\"?status=failed\">" + std::string(say(c->locale, "failures_only")) +
          "</a> · <a href=\"?\">" + std::string(say(c->locale, "all_fem")) +
          "</a></p><div class=\"scroll\"><table "
          "id=\"delivery-log\"><thead><tr><th>Date</th><th>" +
          std::string(say(c->locale, "event")) + "</th><th>URL</th><th>" + std::string(say(c->locale, "status")) +
          "</th><th>" + std::string(say(c->locale, "attempts")) + "</th><th></th></tr></thead><tbody>";
  for (const auto& d : deliveries->items) {
    body += "<tr><td>" + when(d.created_at, c->zone) + "</td><td>" + escape(d.event_type) + "</td><td>" +
            escape(d.url) + "</td><td>" + escape(d.status) +
            (d.last_status_code ? " (" + std::to_string(*d.last_status_code) + ")" : "") + "</td><td>" +
            std::to_string(d.attempts) + "</td><td>";
    if (can) body += replay_form(*c, path("/webhooks/redeliver"), d.event_id, d.endpoint_id);
    body += "</td></tr>";
  }
  body += "</tbody></table></div></section>";
  return page(req, *c, "Webhooks", body);
}

web::Response Service::webhook_create(web::Request& req) {
  auto c = member_context(req, /*changes=*/true);
  if (!c) return error_page(req, c.error());
  if (!parts_.webhooks) return error_page(req, unavailable(bj::string("webhooks not configured")));
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  // The form's fields become the API's body: the same rules (URL guard included) apply.
  bj::object body{{"url", web::field_value(*fields, "url")}};
  if (auto d = web::field_value(*fields, "description"); !d.empty()) body["description"] = d;
  auto change = webhooks::parse_endpoint_change(body, true);
  if (!change) return error_page(req, change.error());
  auto created = parts_.webhooks->registry().create(c->principal.merchant_id, *change, now());
  if (!created) return error_page(req, created.error());
  (void)record(*c, c->principal.merchant_id, "webhook_endpoint.create", created->endpoint.id,
               json::dump(bj::object{{"url", created->endpoint.url}}));
  return page(req, *c, "Webhooks", secret_shown_once(*c, created->endpoint.id, created->secret, path("/webhooks")));
}

web::Response Service::webhook_rotate(web::Request& req) {
  auto c = member_context(req, /*changes=*/true);
  if (!c) return error_page(req, c.error());
  if (!parts_.webhooks) return error_page(req, unavailable(bj::string("webhooks not configured")));
  const std::string id = req.path_param("endpoint_id");
  auto rotated = parts_.webhooks->registry().rotate_secret(c->principal.merchant_id, id, std::nullopt, now());
  if (!rotated) return error_page(req, rotated.error());
  (void)record(*c, c->principal.merchant_id, "webhook_endpoint.rotate_secret", id);
  return page(req, *c, "Webhooks", secret_shown_once(*c, id, rotated->secret, path("/webhooks")));
}

web::Response Service::webhook_redeliver(web::Request& req) {
  auto c = member_context(req, /*changes=*/true);
  if (!c) return error_page(req, c.error());
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  if (auto st = replay(*c, web::field_value(*fields, "event_id"), web::field_value(*fields, "endpoint_id")); !st)
    return error_page(req, st.error());
  return see_other("/webhooks");
}

web::Response Service::sandbox(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  if (c->principal.environment != "sandbox")
    return error_page(req, not_found(bj::string("sandbox tools are for sandbox merchants")));
  // The outbox is the platform's, not the merchant's: it is read for one recipient at a time
  // (the test number or address the developer typed), never listed whole.
  const std::string to = req.query_param("to").value_or("");
  std::vector<notify::OutboxMessage> messages;
  if (!to.empty()) {
    if (to.size() > 254) return error_page(req, field_error("to", reason::with(Reason::chars_at_most, "max", "254")));
    auto read = db_.read([&](store::Conn& conn) -> Status {
      SIKA_ASSIGN_OR_RETURN(messages, notify::list_outbox(conn, notify::OutboxFilter{to, std::nullopt, 50}));
      return {};
    });
    if (!read) return error_page(req, read.error());
  }
  std::string body = "<form class=\"card\" method=\"get\" action=\"" + escape(path("/sandbox")) + "\"><h2>" +
                     std::string(say(c->locale, "outbox_sandbox_sms_and_e")) + "</h2><label for=\"to\">" +
                     std::string(say(c->locale, "recipient_test_number_or_address")) +
                     "</label><input id=\"to\" name=\"to\" value=\"" + escape(to) + "\"><button>" +
                     std::string(say(c->locale, "show")) + "</button></form>";
  if (!to.empty()) {
    body += "<div class=\"scroll\"><table id=\"outbox\"><thead><tr><th>Date</th><th>" +
            std::string(say(c->locale, "channel")) + "</th><th>" + std::string(say(c->locale, "message")) +
            "</th></tr></thead><tbody>";
    for (const auto& m : messages)
      body += "<tr><td>" + when(m.created_at, c->zone) + "</td><td>" + escape(notify::to_string(m.channel)) +
              "</td><td>" + escape(m.subject.empty() ? m.body : m.subject + ": " + m.body) + "</td></tr>";
    body += "</tbody></table></div>";
    if (messages.empty()) body += "<p class=\"muted\">" + std::string(say(c->locale, "no_message")) + "</p>";
  }
  // Room for the test clock and forced operator outcomes when they exist.
  return page(req, *c, std::string(say(c->locale, "sandbox_tools")), body);
}

}  // namespace sika::dashboard
