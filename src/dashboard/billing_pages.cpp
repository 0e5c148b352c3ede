// A merchant's payouts and subscriptions. Payouts are the merchant's disbursements (read model
// payments::queries; a payout's page is its transaction's page: timeline, the reserve and its
// release in the ledger). Subscriptions are billing's: the pages call billing::Service with the
// member's principal, so the rules are the API's (the moves a status allows, sandbox-only test
// clock, another merchant's subscription a 404); each change is audited.
#include <boost/json.hpp>

#include <charconv>

#include "billing/service.hpp"
#include "core/money.hpp"
#include "dashboard/internal.hpp"
#include "payments/queries.hpp"

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
  std::string body = "<section class=\"card\"><h2>" + std::string(c->t("Soldes", "Balances")) +
                     "</h2><table><thead><tr><th>" + std::string(c->t("Devise", "Currency")) +
                     "</th><th class=\"num\">" + std::string(c->t("Disponible", "Available")) +
                     "</th><th class=\"num\">" + std::string(c->t("Versements en cours", "Payouts in flight")) +
                     "</th></tr></thead><tbody>";
  for (const auto& b : balances)
    body += "<tr><td>" + escape(b.currency) + "</td><td class=\"num\">" +
            escape(money::format(b.available, b.currency)) + "</td><td class=\"num\">" +
            escape(money::format(b.pending, b.currency)) + "</td></tr>";
  body += "</tbody></table></section>";
  if (result.items.empty()) {
    body += "<p class=\"muted\">" + std::string(c->t("Aucun versement.", "No payout.")) + "</p>";
  } else {
    body += "<div class=\"scroll\"><table id=\"payouts\"><thead><tr><th>" + std::string(c->t("Date", "Date")) +
            "</th><th>" + std::string(c->t("Référence", "Reference")) + "</th><th>" +
            std::string(c->t("Statut", "Status")) + "</th><th class=\"num\">" + std::string(c->t("Montant", "Amount")) +
            "</th><th>" + std::string(c->t("Bénéficiaire", "Recipient")) + "</th><th>" +
            std::string(c->t("Service", "Service")) + "</th></tr></thead><tbody>";
    for (const auto& tx : result.items)
      body += "<tr><td>" + when(tx.created_at, c->zone) + "</td><td><a href=\"" +
              escape(path("/transactions/" + web::percent_encode(tx.reference))) + "\">" + escape(tx.reference) +
              "</a></td><td>" + badge(payments::to_string(tx.status)) + "</td><td class=\"num\">" +
              escape(money::format(tx.amount, tx.currency)) + "</td><td>" + escape(tx.customer_wallet) + "</td><td>" +
              escape(tx.service_code) + "</td></tr>";
    body += "</tbody></table></div>";
  }
  if (result.next) body += next_page_link(*c, "before=" + std::to_string(*result.next));
  return page(req, *c, std::string(c->t("Versements", "Payouts")), body);
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
      return error_page(req, bad_request("invalid_request", bj::object{{"page", "must be a page number from 1"}}));
    f.offset = (n - 1) * kPageSize;
  }
  auto listed = parts_.billing->list_subscriptions(c->principal, f);
  if (!listed) return error_page(req, listed.error());
  const auto& [items, total] = *listed;
  std::string body = "<form class=\"card\" method=\"get\" action=\"" + escape(path("/subscriptions")) +
                     "\"><div class=\"filters\"><div><label for=\"status\">" + std::string(c->t("Statut", "Status")) +
                     "</label><select id=\"status\" name=\"status\"><option value=\"\">" +
                     std::string(c->t("Tous", "All")) + "</option>";
  for (auto s : {"PENDING", "ACTIVE", "PAST_DUE", "SUSPENDED", "CANCELLED", "EXPIRED"})
    body += std::string("<option value=\"") + s + "\"" + (status == s ? " selected" : "") + ">" + s + "</option>";
  body += "</select></div></div><button>" + std::string(c->t("Filtrer", "Filter")) + "</button></form>";
  body += "<p class=\"muted\">" + std::to_string(total) + " " + std::string(c->t("abonnement(s)", "subscription(s)")) +
          "</p>";
  if (!items.empty()) {
    body += "<div class=\"scroll\"><table id=\"subscriptions\"><thead><tr><th>" +
            std::string(c->t("Référence", "Reference")) + "</th><th>" + std::string(c->t("Client", "Customer")) +
            "</th><th class=\"num\">" + std::string(c->t("Montant", "Amount")) + "</th><th>" +
            std::string(c->t("Fréquence", "Frequency")) + "</th><th>" + std::string(c->t("Statut", "Status")) +
            "</th><th>" + std::string(c->t("Prochain paiement", "Next payment")) + "</th></tr></thead><tbody>";
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
  return page(req, *c, std::string(c->t("Abonnements", "Subscriptions")), body);
}

web::Response Service::subscription(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  if (!parts_.billing) return error_page(req, unavailable(bj::string("subscriptions not configured")));
  const std::string reference = req.path_param("reference");
  auto s = parts_.billing->find(c->principal, reference);
  if (!s) return error_page(req, s.error());
  auto paid = parts_.billing->list_payments(*s, kPageSize, 0);
  if (!paid) return error_page(req, paid.error());
  const std::string base = "/subscriptions/" + web::percent_encode(reference);
  std::string body =
      "<section class=\"card\"><p>" + badge(s->status) +
      (s->status_reason ? " <span class=\"muted\">" + escape(*s->status_reason) + "</span>" : "") +
      (s->cancel_at_period_end
           ? " <span class=\"muted\">" +
                 std::string(c->t("annulé à la fin de la période", "cancelled at the period's end")) + "</span>"
           : "") +
      "</p><p class=\"amount\">" + escape(money::format(s->amount, s->currency)) + " · " +
      escape(billing::to_string(s->frequency)) + "</p><p>" + escape(s->customer_email) +
      (s->customer_phone ? " · " + escape(*s->customer_phone) : "") + "</p><p>" +
      std::string(c->t("Prochain paiement", "Next payment")) + " " + optional_when(s->next_payment_at, c->zone) +
      " · " + std::string(c->t("cycle", "cycle")) + " " + std::to_string(s->next_cycle) + "</p>";
  if (!s->description.empty()) body += "<p>" + escape(s->description) + "</p>";
  body += "</section>";
  if (c->principal.can_change()) {
    auto button = [&](std::string_view action, std::string_view label, std::string extra = "") {
      return "<form method=\"post\" action=\"" + escape(path(base + "/" + std::string(action))) + "\">" +
             c->csrf_field() + extra + "<button id=\"" + std::string(action) + "\">" + std::string(label) +
             "</button></form>";
    };
    body += "<section class=\"card\" aria-labelledby=\"act\"><h2 id=\"act\">" +
            std::string(c->t("Actions", "Actions")) + "</h2>";
    if (s->status == "ACTIVE" || s->status == "PAST_DUE") body += button("suspend", c->t("Suspendre", "Suspend"));
    if (s->status == "SUSPENDED") body += button("reactivate", c->t("Réactiver", "Reactivate"));
    if (s->status != "CANCELLED" && s->status != "EXPIRED")
      body += button("cancel", c->t("Annuler", "Cancel"),
                     "<label><input type=\"checkbox\" name=\"at_period_end\" value=\"true\"> " +
                         std::string(c->t("à la fin de la période", "at the period's end")) + "</label>");
    body += "</section>";
    if (s->environment == "sandbox")
      body += "<section class=\"card\" aria-labelledby=\"clock\"><h2 id=\"clock\">" +
              std::string(c->t("Horloge de test", "Test clock")) + "</h2><p class=\"muted\">" +
              std::string(c->t("Avance l'horloge de cet abonnement et facture ce qui tombe à échéance (bac à sable).",
                               "Moves this subscription's clock forward and bills what falls due (sandbox).")) +
              "</p><form method=\"post\" action=\"" + escape(path(base + "/test-clock")) + "\">" + c->csrf_field() +
              "<label for=\"days\">" + std::string(c->t("Jours", "Days")) +
              "</label><input id=\"days\" name=\"days\" type=\"number\" min=\"1\" max=\"366\" required><button "
              "id=\"advance\">" +
              std::string(c->t("Avancer", "Advance")) + "</button></form></section>";
  }
  body += "<section class=\"card\" aria-labelledby=\"pay\"><h2 id=\"pay\">" +
          std::string(c->t("Paiements", "Payments")) +
          "</h2><div class=\"scroll\"><table id=\"subscription-payments\"><thead><tr><th>" +
          std::string(c->t("Cycle", "Cycle")) + "</th><th>" + std::string(c->t("Échéance", "Due")) + "</th><th>" +
          std::string(c->t("Statut", "Status")) + "</th><th class=\"num\">" + std::string(c->t("Montant", "Amount")) +
          "</th><th>" + std::string(c->t("Essais", "Attempts")) + "</th><th>" +
          std::string(c->t("Transaction", "Transaction")) + "</th></tr></thead><tbody>";
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
  Result<billing::Subscription> changed = not_found(bj::object{{"action", "no such change"}});
  bj::object details;
  if (action == "test-clock") {
    const std::string days_text = field(*fields, "days");
    std::int64_t days = 0;
    auto [end, ec] = std::from_chars(days_text.data(), days_text.data() + days_text.size(), days);
    if (days_text.empty() || ec != std::errc() || end != days_text.data() + days_text.size() || days < 1 || days > 366)
      return error_page(req,
                        bad_request("invalid_request", bj::object{{"days", "a whole number of days from 1 to 366"}}));
    changed = parts_.billing->advance(c->principal, reference, days * kDayMs);
    details["days"] = days;
  } else {
    const billing::Move move = action == "suspend"      ? billing::Move::suspend
                               : action == "reactivate" ? billing::Move::reactivate
                                                        : billing::Move::cancel;
    billing::MoveRequest request;
    if (std::string reason = field(*fields, "reason"); !reason.empty()) {
      if (reason.size() > 255)
        return error_page(req, bad_request("invalid_request", bj::object{{"reason", "at most 255 characters"}}));
      request.reason = reason;
    }
    request.at_period_end = move == billing::Move::cancel && field(*fields, "at_period_end") == "true";
    changed = parts_.billing->apply(c->principal, reference, move, request);
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
