// The operators' health section of GET /operator/health and its override form (docs/dashboard.md,
// "Operators' health"): each connector's state as every node uses it, its error ratio and
// latencies over the fresh nodes' windows, when it last changed, and the override an operator
// sets during an operator's announced maintenance (audited).
#include <boost/json.hpp>

#include <algorithm>

#include "core/json.hpp"
#include "core/reason.hpp"
#include "dashboard/internal.hpp"
#include "dashboard/store.hpp"
#include "dashboard/texts.hpp"
#include "payments/health.hpp"
#include "payments/service.hpp"

namespace sika::dashboard {

namespace bj = boost::json;
using web::html::escape;

namespace {

// The override form: a connector and what to do (force CLOSED, force DELAYED, or clear).
std::string override_form(const Service::Ctx& c, const std::string& action,
                          const std::vector<payments::ConnectorHealth>& rows) {
  std::string out = "<form method=\"post\" action=\"" + escape(action) + "\" id=\"override\">" + c.csrf_field() +
                    "<h3>" + std::string(say(c.locale, "override")) + "</h3><label for=\"override-connector\">" +
                    std::string(say(c.locale, "connector")) +
                    "</label><select id=\"override-connector\" name=\"connector\">";
  for (const auto& h : rows) out += "<option>" + escape(h.connector) + "</option>";
  out += "</select><label for=\"override-state\">" + std::string(say(c.locale, "state")) +
         "</label><select id=\"override-state\" name=\"state\"><option value=\"CLOSED\">" +
         std::string(say(c.locale, "force_closed")) + "</option><option value=\"DELAYED\">" +
         std::string(say(c.locale, "force_delayed")) + "</option><option value=\"\">" +
         std::string(say(c.locale, "clear_override")) + "</option></select><button id=\"override-apply\">" +
         std::string(say(c.locale, "apply_override")) + "</button>";
  return out + "</form>";
}

}  // namespace

std::string Service::operators_health(const Ctx& c) const {
  std::string body = "<section class=\"card\" aria-labelledby=\"oh\"><h2 id=\"oh\">" +
                     std::string(say(c.locale, "operators_health")) + "</h2><p class=\"muted\">" +
                     std::string(say(c.locale, "health_help")) + "</p>";
  payments::Health* health = parts_.payments ? parts_.payments->health() : nullptr;
  if (!health) return body + "<p class=\"muted\">" + std::string(say(c.locale, "no_operator_call")) + "</p></section>";
  std::vector<payments::ConnectorHealth> rows = health->snapshot();
  // Every registered connector has a row, observed or not.
  for (const std::string& name : parts_.payments->connector_names())
    if (std::none_of(rows.begin(), rows.end(), [&](const auto& h) { return h.connector == name; }))
      rows.push_back(payments::ConnectorHealth{.connector = name});
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.connector < b.connector; });
  body += "<div class=\"scroll\"><table id=\"operator-health\"><thead><tr><th scope=\"col\">" +
          std::string(say(c.locale, "connector")) + "</th><th scope=\"col\">" + std::string(say(c.locale, "state")) +
          "</th><th scope=\"col\" class=\"num\">" + std::string(say(c.locale, "calls")) +
          "</th><th scope=\"col\" class=\"num\">" + std::string(say(c.locale, "error_ratio")) +
          "</th><th scope=\"col\" class=\"num\">p50</th><th scope=\"col\" class=\"num\">p90</th><th scope=\"col\">" +
          std::string(say(c.locale, "last_change")) + "</th></tr></thead><tbody>";
  const std::string action = path("/operator/health/override");
  for (const auto& h : rows) {
    const std::int64_t permille = h.calls > 0 ? h.errors * 1000 / h.calls : 0;
    body += "<tr><td>" + escape(h.connector) + "</td><td data-state=\"" + std::string(payments::to_string(h.state)) +
            "\"><span>" + badge(payments::to_string(h.state)) +
            (h.forced ? "<br><span class=\"muted\">(" + std::string(say(c.locale, "forced_by")) + " " +
                            escape(h.forced_by) + ")</span>"
                      : "") +
            "</span></td><td class=\"num\">" + std::to_string(h.calls) + "</td><td class=\"num\">" +
            std::to_string(permille / 10) + "." + std::to_string(permille % 10) + " %</td><td class=\"num\">" +
            std::to_string(h.p50_ms) + " ms</td><td class=\"num\">" + std::to_string(h.p90_ms) + " ms</td><td>" +
            (h.changed_at ? when(h.changed_at, c.zone) : "—") + "</td></tr>";
  }
  return body + "</tbody></table></div>" + override_form(c, action, rows) + "</section>";
}

web::Response Service::health_override(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  payments::Health* health = parts_.payments ? parts_.payments->health() : nullptr;
  if (!health) return error_page(req, unavailable(bj::string("operator health is not configured")));
  const std::string connector = web::field_value(*fields, "connector");
  const std::string state_text = web::field_value(*fields, "state");
  if (!parts_.payments->connector(connector))
    return error_page(req, with_problem(not_found(), "connector", Reason::unregistered_connector));
  std::optional<payments::Availability> state;
  if (!state_text.empty()) {
    state = payments::availability_from(state_text);
    if (!state || *state == payments::Availability::operational)
      return error_page(req, field_error("state", Reason::health_state));
  }
  const std::string action = state ? "operator_health.force" : "operator_health.clear";
  bj::object details{{"state", state ? bj::value(bj::string(payments::to_string(*state))) : bj::value(nullptr)}};
  Status done = health->force(connector, state, c->session.row.email, [&](store::Conn& conn) -> Status {
    return append_audit(conn, AuditEntry{0, now(), c->session.row.user_id, c->session.row.email, std::nullopt, action,
                                         connector, json::dump(details)});
  });
  if (!done) return error_page(req, done.error());
  return see_other("/operator/health");
}

}  // namespace sika::dashboard
