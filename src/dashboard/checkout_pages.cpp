// A merchant's hosted checkout: its sessions (list, keyset pages; a session's page) and its
// checkout secret, the key its site verifies signed return data with (docs/checkout.md). Read
// through checkout::Service; a session of another merchant is a 404. The secret is derived, not
// stored: it is shown on request to members who may change things, and each showing is audited.
#include <boost/json.hpp>

#include "checkout/service.hpp"
#include "core/money.hpp"
#include "dashboard/internal.hpp"
#include "payments/store.hpp"

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
  auto sessions = parts_.checkout->list_sessions(c->principal, *before, kSessionsPerPage + 1);
  if (!sessions) return error_page(req, sessions.error());
  const bool more = static_cast<int>(sessions->size()) > kSessionsPerPage;
  if (more) sessions->pop_back();
  std::string body = "<section class=\"card\" aria-labelledby=\"cks\"><h2 id=\"cks\">" +
                     std::string(c->t("Secret de checkout", "Checkout secret")) + "</h2><p>" +
                     std::string(c->t("Votre site vérifie avec ce secret la signature des données de retour "
                                      "(service_data). Il est dérivé par la plateforme et ne change pas.",
                                      "Your site verifies the signature of the return data (service_data) with this "
                                      "secret. The platform derives it; it does not change.")) +
                     "</p>";
  if (c->principal.can_change())
    body += "<form method=\"post\" action=\"" + escape(path("/checkout/secret")) + "\">" + c->csrf_field() +
            "<button id=\"show-secret\">" + std::string(c->t("Afficher le secret", "Show the secret")) +
            "</button></form>";
  body += "</section>";
  if (sessions->empty()) {
    body += "<p class=\"muted\">" + std::string(c->t("Aucune session.", "No session.")) + "</p>";
  } else {
    body += "<div class=\"scroll\"><table id=\"checkout-sessions\"><thead><tr><th>" +
            std::string(c->t("Date", "Date")) + "</th><th>" + std::string(c->t("Commande", "Order")) + "</th><th>" +
            std::string(c->t("Statut", "Status")) + "</th><th class=\"num\">" + std::string(c->t("Montant", "Amount")) +
            "</th><th>" + std::string(c->t("Essais", "Attempts")) + "</th></tr></thead><tbody>";
    const std::int64_t at = now();
    for (const auto& s : *sessions)
      body += "<tr><td>" + when(s.created_at, c->zone) + "</td><td><a href=\"" +
              escape(path("/checkout/" + web::percent_encode(s.reference))) + "\">" + escape(s.order_id) +
              "</a></td><td>" + badge(s.status_at(at)) + "</td><td class=\"num\">" +
              escape(money::format(s.amount, s.currency)) + "</td><td>" + std::to_string(s.attempt) + "</td></tr>";
    body += "</tbody></table></div>";
  }
  if (more) body += next_page_link(*c, "before=" + std::to_string(sessions->back().id));
  return page(req, *c, std::string(c->t("Checkout hébergé", "Hosted checkout")), body);
}

web::Response Service::checkout_session(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  if (!parts_.checkout) return error_page(req, unavailable(bj::string("hosted checkout not configured")));
  const std::string reference = req.path_param("reference");
  auto s = parts_.checkout->session(reference);
  if (s && (s->merchant_id != c->principal.merchant_id || s->environment != c->principal.environment))
    s = not_found(bj::object{{"reference", "no such session"}});
  if (!s) return error_page(req, s.error());
  auto row = [](std::string_view label, const std::string& value) {
    return "<tr><th scope=\"row\">" + escape(label) + "</th><td>" + escape(value) + "</td></tr>";
  };
  std::string body =
      "<section class=\"card\"><p>" + badge(s->status_at(now())) + "</p><p class=\"amount\">" +
      escape(money::format(s->amount, s->currency)) + "</p><table id=\"checkout-session\"><tbody>" +
      row(c->t("Commande", "Order"), s->order_id) + row(c->t("Boutique", "Shop"), s->shop_name) +
      row(c->t("Description", "Description"), s->description) +
      row(c->t("Client", "Customer"), s->customer.name + (s->customer.email.empty() ? "" : " · " + s->customer.email) +
                                          (s->customer.phone.empty() ? "" : " · " + s->customer.phone)) +
      row(c->t("Frais à la charge de", "Fee borne by"), s->fee_bearer) +
      row(c->t("Règlement", "Settlement"), s->settlement_mode) +
      row(c->t("Essais de paiement", "Payment attempts"), std::to_string(s->attempt)) +
      row(c->t("Créée", "Created"), when(s->created_at, c->zone)) +
      row(c->t("Expire", "Expires"), when(s->expires_at, c->zone)) +
      row(c->t("Retour (succès)", "Return (success)"), s->success_url) +
      row(c->t("Retour (échec)", "Return (failure)"), s->failure_url) + "</tbody></table>";
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
  body += "<section class=\"card\" aria-labelledby=\"att\"><h2 id=\"att\">" +
          std::string(c->t("Paiements", "Payments")) + "</h2>";
  if (attempts.empty()) body += "<p class=\"muted\">" + std::string(c->t("Aucun paiement.", "No payment.")) + "</p>";
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
  std::string body =
      "<section class=\"card\" role=\"status\"><p>" + std::string(c->t("Secret de checkout de", "Checkout secret of")) +
      " " + escape(c->principal.merchant) + "</p><p class=\"secret\" id=\"checkout-secret\">" +
      escape(parts_.checkout->merchant_secret(c->principal.merchant)) + "</p><p><a href=\"" +
      escape(path("/checkout")) + "\">" + std::string(c->t("Continuer", "Continue")) + "</a></p></section>";
  web::Response res = page(req, *c, std::string(c->t("Checkout hébergé", "Hosted checkout")), body);
  res.set("Cache-Control", "no-store");
  return res;
}

}  // namespace sika::dashboard
