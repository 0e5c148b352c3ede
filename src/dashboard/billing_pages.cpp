// A merchant's payouts and subscriptions. Payouts are the merchant's disbursements (read model
// payments::queries; a payout's page is its transaction's page: timeline, the reserve and its
// release in the ledger). Subscriptions are billing's: the pages call billing::Service with the
// member's principal, so the rules are the API's (the moves a status allows, sandbox-only test
// clock, another merchant's subscription a 404); each change is audited.
#include <boost/json.hpp>

#include <charconv>

#include "billing/service.hpp"
#include "core/money.hpp"
#include "core/reason.hpp"
#include "dashboard/internal.hpp"
#include "dashboard/texts.hpp"
#include "payments/queries.hpp"
#include "web/acting.hpp"

namespace sika::dashboard {

namespace bj = boost::json;
using web::html::escape;

// ---- payouts -----------------------------------------------------------------------------------

web::Response Service::payouts(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  payments::queries::TransactionFilter f;
  f.merchant_id = c->principal.merchant_id;
  f.environment = c->principal.environment;
  f.operation = "DISBURSEMENT";
  auto before = before_cursor(req);
  if (!before) return error_page(req, before.error());
  f.before = *before;
  payments::queries::TransactionPage result;
  std::vector<payments::queries::CurrencyBalance> balances;
  auto read = db_.read([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(result, payments::queries::list_transactions(conn, f));
    SIKA_ASSIGN_OR_RETURN(
        balances, payments::queries::merchant_balances(conn, c->principal.merchant_id, c->principal.environment));
    return {};
  });
  if (!read) return error_page(req, read.error());
  std::string body = "<section class=\"card\"><h2>" + std::string(say(c->locale, "balances")) +
                     "</h2><table><thead><tr><th>" + std::string(say(c->locale, "currency")) +
                     "</th><th class=\"num\">" + std::string(say(c->locale, "available")) + "</th><th class=\"num\">" +
                     std::string(say(c->locale, "payouts_in_flight")) + "</th></tr></thead><tbody>";
  for (const auto& b : balances)
    body += "<tr><td>" + escape(b.currency) + "</td><td class=\"num\">" +
            escape(money::format(b.available, b.currency)) + "</td><td class=\"num\">" +
            escape(money::format(b.pending, b.currency)) + "</td></tr>";
  body += "</tbody></table></section>";
  if (result.items.empty()) {
    body += "<p class=\"muted\">" + std::string(say(c->locale, "no_payout")) + "</p>";
  } else {
    body += "<div class=\"scroll\"><table id=\"payouts\"><thead><tr><th>" + std::string(say(c->locale, "date")) +
            "</th><th>" + std::string(say(c->locale, "reference")) + "</th><th>" +
            std::string(say(c->locale, "status")) + "</th><th class=\"num\">" + std::string(say(c->locale, "amount")) +
            "</th><th>" + std::string(say(c->locale, "recipient")) + "</th><th>" +
            std::string(say(c->locale, "service")) + "</th></tr></thead><tbody>";
    for (const auto& tx : result.items)
      body += "<tr><td>" + when(tx.created_at, c->zone) + "</td><td><a href=\"" +
              escape(path("/transactions/" + web::percent_encode(tx.reference))) + "\">" + escape(tx.reference) +
              "</a></td><td>" + badge(payments::to_string(tx.status)) + "</td><td class=\"num\">" +
              escape(money::format(tx.amount, tx.currency)) + "</td><td>" + escape(tx.customer_wallet) + "</td><td>" +
              escape(tx.service_code) + "</td></tr>";
    body += "</tbody></table></div>";
  }
  if (result.next) body += next_page_link(*c, "before=" + std::to_string(*result.next));
  return page(req, *c, std::string(say(c->locale, "payouts")), body);
}

// ---- subscriptions -----------------------------------------------------------------------------

namespace {

constexpr std::int64_t kPageSize = 50;
constexpr std::int64_t kDayMs = 86'400'000;

std::string optional_when(const std::optional<std::int64_t>& at, std::string_view zone) {
  return at ? when(*at, zone) : "—";
}

}  // namespace

web::Response Service::subscriptions(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  if (!parts_.billing) return error_page(req, unavailable(bj::string("subscriptions not configured")));
  billing::tables::ListFilter f;
  f.limit = kPageSize;
  const std::string status = req.query_param("status").value_or("");
  if (!status.empty()) f.status = status;
  if (auto p = req.query_param("page"); p && !p->empty()) {
    std::int64_t n = 0;
    auto [end, ec] = std::from_chars(p->data(), p->data() + p->size(), n);
    if (ec != std::errc() || end != p->data() + p->size() || n < 1 || n > 100000)
      return error_page(req, with_problem(bad_request("invalid_request"), "page", Reason::page_number));
    f.offset = (n - 1) * kPageSize;
  }
  auto listed = parts_.billing->list_subscriptions(web::acting(c->principal), f);
  if (!listed) return error_page(req, listed.error());
  const auto& [items, total] = *listed;
  std::string body = "<form class=\"card\" method=\"get\" action=\"" + escape(path("/subscriptions")) +
                     "\"><div class=\"filters\"><div><label for=\"status\">" + std::string(say(c->locale, "status")) +
                     "</label><select id=\"status\" name=\"status\"><option value=\"\">" +
                     std::string(say(c->locale, "all")) + "</option>";
  for (auto s : {"PENDING", "ACTIVE", "PAST_DUE", "SUSPENDED", "CANCELLED", "EXPIRED"})
    body += std::string("<option value=\"") + s + "\"" + (status == s ? " selected" : "") + ">" + s + "</option>";
  body += "</select></div></div><button>" + std::string(say(c->locale, "filter")) + "</button></form>";
  body += "<p class=\"muted\">" + std::to_string(total) + " " + std::string(say(c->locale, "subscription_s")) + "</p>";
  if (!items.empty()) {
    body += "<div class=\"scroll\"><table id=\"subscriptions\"><thead><tr><th>" +
            std::string(say(c->locale, "reference")) + "</th><th>" + std::string(say(c->locale, "customer")) +
            "</th><th class=\"num\">" + std::string(say(c->locale, "amount")) + "</th><th>" +
            std::string(say(c->locale, "frequency")) + "</th><th>" + std::string(say(c->locale, "status")) +
            "</th><th>" + std::string(say(c->locale, "next_payment")) + "</th></tr></thead><tbody>";
    for (const auto& s : items)
      body += "<tr><td><a href=\"" + escape(path("/subscriptions/" + web::percent_encode(s.reference))) + "\">" +
              escape(s.reference) + "</a></td><td>" + escape(s.customer_email) + "</td><td class=\"num\">" +
              escape(money::format(s.amount, s.currency)) + "</td><td>" + escape(billing::to_string(s.frequency)) +
              "</td><td>" + badge(s.status) + "</td><td>" + optional_when(s.next_payment_at, c->zone) + "</td></tr>";
    body += "</tbody></table></div>";
  }
  if (f.offset + kPageSize < total)
    body += next_page_link(*c, (status.empty() ? "" : "status=" + web::percent_encode(status) + "&") +
                                   "page=" + std::to_string(f.offset / kPageSize + 2));
  return page(req, *c, std::string(say(c->locale, "subscriptions")), body);
}

web::Response Service::subscription(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  if (!parts_.billing) return error_page(req, unavailable(bj::string("subscriptions not configured")));
  const std::string reference = req.path_param("reference");
  auto s = parts_.billing->find(web::acting(c->principal), reference);
  if (!s) return error_page(req, s.error());
  auto paid = parts_.billing->list_payments(*s, kPageSize, 0);
  if (!paid) return error_page(req, paid.error());
  const std::string base = "/subscriptions/" + web::percent_encode(reference);
  std::string body = "<section class=\"card\"><p>" + badge(s->status) +
                     (s->status_reason ? " <span class=\"muted\">" + escape(*s->status_reason) + "</span>" : "") +
                     (s->cancel_at_period_end ? " <span class=\"muted\">" +
                                                    std::string(say(c->locale, "cancelled_at_the_period_s")) + "</span>"
                                              : "") +
                     "</p><p class=\"amount\">" + escape(money::format(s->amount, s->currency)) + " · " +
                     escape(billing::to_string(s->frequency)) + "</p><p>" + escape(s->customer_email) +
                     (s->customer_phone ? " · " + escape(*s->customer_phone) : "") + "</p><p>" +
                     std::string(say(c->locale, "next_payment")) + " " + optional_when(s->next_payment_at, c->zone) +
                     " · " + std::string(say(c->locale, "cycle")) + " " + std::to_string(s->next_cycle) + "</p>";
  if (!s->description.empty()) body += "<p>" + escape(s->description) + "</p>";
  body += "</section>";
  if (c->principal.can_change()) {
    auto button = [&](std::string_view action, std::string_view label, std::string extra = "") {
      return "<form method=\"post\" action=\"" + escape(path(base + "/" + std::string(action))) + "\">" +
             c->csrf_field() + extra + "<button id=\"" + std::string(action) + "\">" + std::string(label) +
             "</button></form>";
    };
    body += "<section class=\"card\" aria-labelledby=\"act\"><h2 id=\"act\">" + std::string(say(c->locale, "actions")) +
            "</h2>";
    if (s->status == "ACTIVE" || s->status == "PAST_DUE") body += button("suspend", say(c->locale, "suspend"));
    if (s->status == "SUSPENDED") body += button("reactivate", say(c->locale, "reactivate"));
    if (s->status != "CANCELLED" && s->status != "EXPIRED")
      body += button("cancel", say(c->locale, "cancel"),
                     "<label><input type=\"checkbox\" name=\"at_period_end\" value=\"true\"> " +
                         std::string(say(c->locale, "at_the_period_s_end")) + "</label>");
    body += "</section>";
    if (s->environment == "sandbox")
      body += "<section class=\"card\" aria-labelledby=\"clock\"><h2 id=\"clock\">" +
              std::string(say(c->locale, "test_clock")) + "</h2><p class=\"muted\">" +
              std::string(say(c->locale, "moves_this_subscription_s_clock")) + "</p><form method=\"post\" action=\"" +
              escape(path(base + "/test-clock")) + "\">" + c->csrf_field() + "<label for=\"days\">" +
              std::string(say(c->locale, "days")) +
              "</label><input id=\"days\" name=\"days\" type=\"number\" min=\"1\" max=\"366\" required><button "
              "id=\"advance\">" +
              std::string(say(c->locale, "advance")) + "</button></form></section>";
  }
  body += "<section class=\"card\" aria-labelledby=\"pay\"><h2 id=\"pay\">" + std::string(say(c->locale, "payments")) +
          "</h2><div class=\"scroll\"><table id=\"subscription-payments\"><thead><tr><th>" +
          std::string(say(c->locale, "cycle_2")) + "</th><th>" + std::string(say(c->locale, "due")) + "</th><th>" +
          std::string(say(c->locale, "status")) + "</th><th class=\"num\">" + std::string(say(c->locale, "amount")) +
          "</th><th>" + std::string(say(c->locale, "attempts")) + "</th><th>" +
          std::string(say(c->locale, "transaction")) + "</th></tr></thead><tbody>";
  for (const auto& p : paid->first) {
    body += "<tr><td>" + std::to_string(p.cycle) + "</td><td>" + when(p.due_at, c->zone) + "</td><td>" +
            badge(p.status) + "</td><td class=\"num\">" + escape(money::format(p.amount, p.currency)) + "</td><td>" +
            std::to_string(p.attempts) + "</td><td>";
    if (p.payment_intent_reference)
      body += "<a href=\"" + escape(path("/transactions/" + web::percent_encode(*p.payment_intent_reference))) + "\">" +
              escape(*p.payment_intent_reference) + "</a>";
    body += "</td></tr>";
  }
  body += "</tbody></table></div></section>";
  return page(req, *c, reference, body);
}

web::Response Service::subscription_change(web::Request& req) {
  auto c = member_context(req, /*changes=*/true);
  if (!c) return error_page(req, c.error());
  if (!parts_.billing) return error_page(req, unavailable(bj::string("subscriptions not configured")));
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  const std::string reference = req.path_param("reference");
  const std::string action = req.path.substr(req.path.rfind('/') + 1);
  Result<billing::Subscription> changed = with_problem(not_found(), "action", Reason::no_such_change);
  bj::object details;
  if (action == "test-clock") {
    const std::string days_text = web::field_value(*fields, "days");
    std::int64_t days = 0;
    auto [end, ec] = std::from_chars(days_text.data(), days_text.data() + days_text.size(), days);
    if (days_text.empty() || ec != std::errc() || end != days_text.data() + days_text.size() || days < 1 || days > 366)
      return error_page(req, with_problem(bad_request("invalid_request"), "days",
                                          Problem(Reason::whole_days_between, {{"min", "1"}, {"max", "366"}})));
    changed = parts_.billing->advance(web::acting(c->principal), reference, days * kDayMs);
    details["days"] = days;
  } else {
    const billing::Move move = action == "suspend"      ? billing::Move::suspend
                               : action == "reactivate" ? billing::Move::reactivate
                                                        : billing::Move::cancel;
    billing::MoveRequest request;
    if (std::string reason = web::field_value(*fields, "reason"); !reason.empty()) {
      if (reason.size() > 255)
        return error_page(req, with_problem(bad_request("invalid_request"), "reason",
                                            reason::with(Reason::chars_at_most, "max", "255")));
      request.reason = reason;
    }
    request.at_period_end = move == billing::Move::cancel && web::field_value(*fields, "at_period_end") == "true";
    changed = parts_.billing->apply(web::acting(c->principal), reference, move, request);
    details["at_period_end"] = request.at_period_end;
  }
  if (!changed) return error_page(req, changed.error());
  details["status"] = changed->status;
  (void)record(*c, c->principal.merchant_id,
               action == "test-clock" ? "subscription.test_clock" : "subscription." + action, reference,
               bj::serialize(details));
  return see_other("/subscriptions/" + web::percent_encode(reference));
}

}  // namespace sika::dashboard
