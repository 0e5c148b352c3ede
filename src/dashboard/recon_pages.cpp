// Operator reconciliation pages (docs/reconciliation.md, docs/dashboard.md "Reconciliation"):
// GET /operator/recon (the imported statements and the daily closings, with the form to enter an
// operator's closing balance), GET /operator/recon/{run} (a run's report and its items, filtered
// by kind and state, each open item with its decision form), POST /operator/recon/items/{item}
// (accept the operator's figure or mark it under investigation; audited in the decision's write
// unit) and POST /operator/recon/closing (audited). Operators only; plain forms, no script.
#include <boost/json.hpp>

#include <charconv>
#include <functional>

#include "core/json.hpp"
#include "core/money.hpp"
#include "core/reason.hpp"
#include "dashboard/internal.hpp"
#include "dashboard/store.hpp"
#include "dashboard/texts.hpp"
#include "payments/recon.hpp"

namespace sika::dashboard {

namespace bj = boost::json;
using web::html::escape;
namespace recon = payments::recon;

namespace {

std::optional<std::int64_t> whole_number(std::string_view text) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || v <= 0) return std::nullopt;
  return v;
}

std::string count_of(const std::map<std::string, std::int64_t>& m, std::string_view k) {
  auto it = m.find(std::string(k));
  return std::to_string(it == m.end() ? 0 : it->second);
}

std::string amount(const std::optional<std::int64_t>& v, const std::string& currency) {
  return v && !currency.empty() ? money::format(*v, currency, true) : "—";
}

std::string closings_table(const Service::Ctx& c, const std::vector<recon::Closing>& rows) {
  if (rows.empty()) return "<p class=\"muted\">" + std::string(say(c.locale, "recon_no_closing")) + "</p>";
  std::string out = "<div class=\"scroll\"><table id=\"recon-closings\"><thead><tr><th scope=\"col\">" +
                    std::string(say(c.locale, "day")) + "</th><th scope=\"col\">" +
                    std::string(say(c.locale, "connector")) + "</th><th scope=\"col\" class=\"num\">" +
                    std::string(say(c.locale, "recon_operator_balance")) + "</th><th scope=\"col\" class=\"num\">" +
                    std::string(say(c.locale, "recon_sika_holds")) + "</th><th scope=\"col\" class=\"num\">" +
                    std::string(say(c.locale, "recon_open_items")) + "</th><th scope=\"col\" class=\"num\">" +
                    std::string(say(c.locale, "recon_operator_fees")) + "</th><th scope=\"col\" class=\"num\">" +
                    std::string(say(c.locale, "recon_unexplained")) + "</th></tr></thead><tbody>";
  for (const auto& k : rows)
    out += "<tr><td>" + escape(k.day) + "</td><td>" + escape(k.connector) + "</td><td class=\"num\">" +
           money::format(k.operator_balance, k.currency, true) + "</td><td class=\"num\">" +
           money::format(-k.sika_clearing, k.currency, true) + "</td><td class=\"num\">" +
           money::format(k.open_items, k.currency, true) + " (" + std::to_string(k.open_count) +
           ")</td><td class=\"num\">" + money::format(k.operator_fees, k.currency, true) + "</td><td class=\"num\"" +
           (k.unexplained != 0 ? " data-unexplained=\"yes\"" : "") + "><strong>" +
           money::format(k.unexplained, k.currency, true) + "</strong></td></tr>";
  return out + "</tbody></table></div>";
}

std::string closing_form(const Service::Ctx& c, const std::string& action) {
  return "<form method=\"post\" action=\"" + escape(action) + "\" id=\"recon-closing-form\">" + c.csrf_field() +
         "<h3>" + std::string(say(c.locale, "recon_enter_closing")) + "</h3><label for=\"closing-connector\">" +
         std::string(say(c.locale, "connector")) +
         "</label><input id=\"closing-connector\" name=\"connector\" required pattern=\"[a-z0-9_]+\" "
         "autocomplete=\"off\"><label for=\"closing-day\">" +
         std::string(say(c.locale, "day")) +
         "</label><input id=\"closing-day\" name=\"day\" type=\"date\" required><label for=\"closing-currency\">" +
         std::string(say(c.locale, "currency")) +
         "</label><input id=\"closing-currency\" name=\"currency\" required pattern=\"[A-Z]{3}\" maxlength=\"3\" "
         "autocomplete=\"off\"><label for=\"closing-balance\">" +
         std::string(say(c.locale, "recon_operator_balance")) +
         "</label><input id=\"closing-balance\" name=\"balance\" required inputmode=\"decimal\" "
         "autocomplete=\"off\"><button id=\"closing-apply\">" +
         std::string(say(c.locale, "recon_compute_closing")) + "</button></form>";
}

std::string decision_form(const Service::Ctx& c, const std::string& action, const recon::Item& i) {
  const std::string id = std::to_string(i.id);
  std::string out = "<form method=\"post\" action=\"" + escape(action) + "\" class=\"decide\">" + c.csrf_field() +
                    "<label for=\"reason-" + id + "\">" + std::string(say(c.locale, "recon_reason")) +
                    "</label><input id=\"reason-" + id +
                    "\" name=\"reason\" required maxlength=\"500\" autocomplete=\"off\">";
  const bool waits = (i.kind == "mismatch_status" && i.sika_status == "PENDING") || i.kind == "timing";
  if (!waits)
    out += "<button name=\"decision\" value=\"accept\" id=\"accept-" + id + "\">" +
           std::string(say(c.locale, "recon_accept")) + "</button>";
  if (i.state == "open")
    out += "<button name=\"decision\" value=\"investigate\" class=\"secondary\" id=\"investigate-" + id + "\">" +
           std::string(say(c.locale, "recon_investigate")) + "</button>";
  return out + "</form>";
}

// The items' filter: a plain GET form.
std::string filter_form(const Service::Ctx& c, const std::string& here, const recon::ItemFilter& f) {
  std::string body;
  body += "<form method=\"get\" action=\"" + escape(here) +
          "\" class=\"filters\" id=\"recon-filter\">"
          "<label for=\"f-kind\">" +
          std::string(say(c.locale, "recon_kind")) +
          "</label><select id=\"f-kind\" "
          "name=\"kind\"><option value=\"\">" +
          std::string(say(c.locale, "recon_any")) + "</option>";
  for (auto k : recon::kKinds)
    body += "<option value=\"" + std::string(k) + "\"" + (f.kind == k ? " selected" : "") + ">" +
            escape(say_kind(c.locale, k)) + "</option>";
  body += "</select><label for=\"f-state\">" + std::string(say(c.locale, "state")) +
          "</label><select id=\"f-state\" name=\"state\"><option value=\"\">" +
          std::string(say(c.locale, "recon_any")) + "</option>";
  for (auto k : recon::kStates)
    body += "<option value=\"" + std::string(k) + "\"" + (f.state == k ? " selected" : "") + ">" +
            escape(say_state(c.locale, k)) + "</option>";
  body += "</select><button class=\"secondary\">" + std::string(say(c.locale, "recon_filter")) + "</button></form>";
  return body;
}

// The operator's live answer about a status mismatch (its status API, asked by the recovery
// engine), shown as evidence next to the statement's figure; "" until it answered.
std::string live_answer(const Service::Ctx& c, const recon::Item& i) {
  if (i.operator_live_status.empty()) return "";
  const std::string_view said = i.operator_live_status == "succeeded" ? say(c.locale, "recon_live_succeeded")
                                : i.operator_live_status == "failed"  ? say(c.locale, "recon_live_failed")
                                                                      : say(c.locale, "recon_live_pending");
  return "<br><span class=\"muted live\" data-live=\"" + escape(i.operator_live_status) + "\">" +
         std::string(say(c.locale, "recon_live_answer")) + (c.fr() ? "&nbsp;: " : ": ") + escape(said) +
         (i.live_checked_at ? " (" + when(*i.live_checked_at, c.zone) + ")" : "") + "</span>";
}

// A run's items with the decision form of each open one (`action_of` gives an item's form action).
std::string items_table(const Service::Ctx& c, const std::vector<recon::Item>& items, const recon::ItemFilter& f,
                        const std::function<std::string(std::int64_t)>& action_of) {
  std::string body;
  if (items.empty()) {
    body += "<p class=\"muted\" id=\"recon-no-item\">" + std::string(say(c.locale, "recon_no_item")) + "</p>";
  } else {
    body += "<div class=\"scroll\"><table id=\"recon-items\"><thead><tr><th scope=\"col\">" +
            std::string(say(c.locale, "recon_reference")) + "</th><th scope=\"col\">" +
            std::string(say(c.locale, "recon_kind")) + "</th><th scope=\"col\">" + std::string(say(c.locale, "state")) +
            "</th><th scope=\"col\" class=\"num\">Sika</th><th scope=\"col\" "
            "class=\"num\">" +
            std::string(say(c.locale, "recon_operator")) + "</th><th scope=\"col\">" +
            std::string(say(c.locale, "recon_decision")) + "</th></tr></thead><tbody>";
    for (const auto& i : items) {
      std::string decision;
      if (i.state == "open" || i.state == "under_investigation") {
        if (i.kind == "mismatch_status" && i.sika_status == "PENDING")
          decision = "<p class=\"muted\">" + std::string(say(c.locale, "recon_waits_recovery")) + "</p>";
        decision += decision_form(c, action_of(i.id), i);
      }
      if (!i.decided_by.empty())
        decision += "<span class=\"muted\">" + escape(i.decided_by) +
                    (i.decided_at ? ", " + when(*i.decided_at, c.zone) : "") +
                    (i.decision_reason.empty() ? "" : ": " + escape(i.decision_reason)) + "</span>";
      body += "<tr id=\"item-" + std::to_string(i.id) + "\" data-kind=\"" + escape(i.kind) + "\" data-state=\"" +
              escape(i.state) + "\"><td>" + escape(i.reference) +
              (i.transaction_reference.empty()
                   ? ""
                   : "<br><span class=\"muted\">" + escape(i.transaction_reference) + "</span>") +
              "</td><td>" + escape(say_kind(c.locale, i.kind)) + "</td><td><span class=\"badge\">" +
              escape(say_state(c.locale, i.state)) + "</span>" + "</td><td class=\"num\">" +
              amount(i.sika_amount, i.sika_currency) + " " + escape(i.sika_status) + "</td><td class=\"num\">" +
              amount(i.operator_amount, i.operator_currency) + " " + escape(i.operator_status) + live_answer(c, i) +
              "</td><td class=\"wrap\">" + decision + "</td></tr>";
    }
    body += "</tbody></table></div>";
    if (static_cast<int>(items.size()) == f.limit)
      body += next_page_link(c, "kind=" + f.kind + "&state=" + f.state + "&after=" + std::to_string(items.back().id));
  }
  return body;
}

}  // namespace

web::Response Service::recon_runs(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  if (!parts_.recon) return error_page(req, unavailable(bj::string("reconciliation is not configured")));
  auto runs = parts_.recon->runs(50);
  if (!runs) return error_page(req, runs.error());
  std::string body = "<section class=\"card\" aria-labelledby=\"rr\"><h2 id=\"rr\">" +
                     std::string(say(c->locale, "recon_runs")) + "</h2><p class=\"muted\">" +
                     std::string(say(c->locale, "recon_help")) + "</p>";
  if (runs->empty()) {
    body += "<p class=\"muted\" id=\"recon-no-run\">" + std::string(say(c->locale, "recon_no_run")) + "</p>";
  } else {
    body += "<div class=\"scroll\"><table id=\"recon-runs\"><thead><tr><th scope=\"col\">#</th><th scope=\"col\">" +
            std::string(say(c->locale, "connector")) + "</th><th scope=\"col\">" +
            std::string(say(c->locale, "recon_period")) + "</th><th scope=\"col\" class=\"num\">" +
            std::string(say(c->locale, "recon_lines")) + "</th><th scope=\"col\" class=\"num\">" +
            std::string(say(c->locale, "recon_to_decide")) + "</th></tr></thead><tbody>";
    for (const auto& s : *runs) {
      const std::string href = path("/operator/recon/" + std::to_string(s.run_id));
      body += "<tr><td><a href=\"" + escape(href) + "\">" + std::to_string(s.run_id) + "</a></td><td>" +
              escape(s.connector) + " <span class=\"muted\">" + escape(s.format) + "</span></td><td>" +
              when(s.period_start, c->zone) + " – " + when(s.period_end, c->zone) + "</td><td class=\"num\">" +
              std::to_string(s.lines) + "</td><td class=\"num\">" +
              std::to_string(std::stoll(count_of(s.states, "open")) +
                             std::stoll(count_of(s.states, "under_investigation"))) +
              "</td></tr>";
    }
    body += "</tbody></table></div>";
  }
  body += "</section><section class=\"card\" aria-labelledby=\"rc\"><h2 id=\"rc\">" +
          std::string(say(c->locale, "recon_closings")) + "</h2><p class=\"muted\">" +
          std::string(say(c->locale, "recon_closing_help")) + "</p>";
  auto closings = parts_.recon->closings("", 60);
  if (!closings) return error_page(req, closings.error());
  body += closings_table(*c, *closings) + closing_form(*c, path("/operator/recon/closing")) + "</section>";
  return page(req, *c, std::string(say(c->locale, "recon_title")), body);
}

web::Response Service::recon_run(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  if (!parts_.recon) return error_page(req, unavailable(bj::string("reconciliation is not configured")));
  auto run_id = whole_number(req.path_param("run"));
  if (!run_id) return error_page(req, with_problem(not_found(), "run", Reason::no_such_run));
  auto s = parts_.recon->report(*run_id);
  if (!s) return error_page(req, s.error());
  recon::ItemFilter f;
  f.kind = req.query_param("kind").value_or("");
  f.state = req.query_param("state").value_or("");
  auto known = [](std::string_view v, const auto& list) {
    return v.empty() || std::find(std::begin(list), std::end(list), v) != std::end(list);
  };
  if (!known(f.kind, recon::kKinds)) return error_page(req, field_error("kind", Reason::recon_item_kind));
  if (!known(f.state, recon::kStates)) return error_page(req, field_error("state", Reason::recon_item_state));
  if (auto after = req.query_param("after"); after && !after->empty()) {
    f.after_id = whole_number(*after);
    if (!f.after_id) return error_page(req, field_error("after", Reason::whole_number));
  }
  f.limit = 100;
  auto items = parts_.recon->items(*run_id, f);
  if (!items) return error_page(req, items.error());

  std::string body = "<p><a href=\"" + escape(path("/operator/recon")) + "\">← " +
                     std::string(say(c->locale, "recon_runs")) + "</a></p><section class=\"card\"><dl class=\"kv\">" +
                     "<dt>" + std::string(say(c->locale, "connector")) + "</dt><dd>" + escape(s->connector) + " (" +
                     escape(s->format) + ")</dd><dt>" + std::string(say(c->locale, "recon_file")) + "</dt><dd>" +
                     escape(s->file_name) + "</dd><dt>" + std::string(say(c->locale, "recon_period")) + "</dt><dd>" +
                     when(s->period_start, c->zone) + " – " + when(s->period_end, c->zone) + "</dd><dt>" +
                     std::string(say(c->locale, "recon_lines")) + "</dt><dd>" + std::to_string(s->lines) +
                     "</dd></dl><div class=\"scroll\"><table id=\"recon-kinds\"><thead><tr><th scope=\"col\">" +
                     std::string(say(c->locale, "recon_kind")) + "</th><th scope=\"col\" class=\"num\">" +
                     std::string(say(c->locale, "recon_items")) + "</th></tr></thead><tbody>";
  for (auto k : recon::kKinds) {
    const std::string href = path("/operator/recon/" + std::to_string(*run_id)) + "?kind=" + std::string(k);
    body += "<tr><td><a href=\"" + escape(href) + "\">" + escape(say_kind(c->locale, k)) +
            "</a></td><td class=\"num\">" + count_of(s->kinds, k) + "</td></tr>";
  }
  body += "</tbody></table></div>";
  if (s->closing)
    body += "<h3>" + std::string(say(c->locale, "recon_closings")) + "</h3>" + closings_table(*c, {*s->closing});
  body += "</section>";
  body += filter_form(*c, path("/operator/recon/" + std::to_string(*run_id)), f);
  body += items_table(*c, *items, f,
                      [this](std::int64_t id) { return path("/operator/recon/items/" + std::to_string(id)); });
  return page(req, *c, std::string(say(c->locale, "recon_run")) + " " + std::to_string(*run_id), body);
}

web::Response Service::recon_decide(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  if (!parts_.recon) return error_page(req, unavailable(bj::string("reconciliation is not configured")));
  auto item_id = whole_number(req.path_param("item"));
  if (!item_id) return error_page(req, with_problem(not_found(), "item", Reason::no_such_item));
  const std::string decision = web::field_value(*fields, "decision");
  const std::string reason = web::field_value(*fields, "reason");
  if (decision != "accept" && decision != "investigate")
    return error_page(
        req, field_error("decision", Problem(Reason::either_of, {{"first", "accept"}, {"second", "investigate"}})));
  const bool accept = decision == "accept";
  auto done = parts_.recon->decide(
      *item_id, accept ? recon::Decision::accept : recon::Decision::investigate, c->session.row.email, reason,
      [&](store::Conn& conn) -> Status {
        bj::object details{{"decision", decision}, {"reason", reason}};
        return append_audit(conn, AuditEntry{0, now(), c->session.row.user_id, c->session.row.email, std::nullopt,
                                             accept ? "recon.accept" : "recon.investigate",
                                             "recon item " + std::to_string(*item_id), json::dump(details)});
      });
  if (!done) return error_page(req, done.error());
  return see_other("/operator/recon/" + std::to_string(done->run_id) + "#item-" + std::to_string(done->id));
}

web::Response Service::recon_closing(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  if (!parts_.recon) return error_page(req, unavailable(bj::string("reconciliation is not configured")));
  const std::string connector = web::field_value(*fields, "connector");
  const std::string day = web::field_value(*fields, "day");
  const std::string currency = web::field_value(*fields, "currency");
  const std::string balance_text = web::field_value(*fields, "balance");
  std::string_view balance = balance_text;
  const bool negative = !balance.empty() && balance[0] == '-';
  if (negative) balance.remove_prefix(1);
  if (!money::is_currency_code(currency)) return error_page(req, field_error("currency", Reason::currency_iso_plain));
  auto value = money::parse_decimal(balance, currency);
  if (!value) return error_page(req, field_error("balance", Reason::not_exact_amount));
  auto k = parts_.recon->close_day(
      connector, day, currency, negative ? -*value : *value, c->session.row.email, std::nullopt,
      [&](store::Conn& conn) -> Status {
        bj::object details{{"day", day}, {"currency", currency}, {"balance", balance_text}};
        return append_audit(conn, AuditEntry{0, now(), c->session.row.user_id, c->session.row.email, std::nullopt,
                                             "recon.closing", connector, json::dump(details)});
      });
  if (!k) return error_page(req, k.error());
  return see_other("/operator/recon");
}

}  // namespace sika::dashboard
