// Settlement (docs/settlement.md) on the dashboard: the merchant's settings (owners change them,
// audited), a settlement asked now, its batches; the operator's pending bank batches, their
// pain.001 file, marking them paid (audited) and a merchant's refund reserve (audited).
#include <boost/json.hpp>

#include "core/json.hpp"
#include "core/money.hpp"
#include "core/reason.hpp"
#include "dashboard/internal.hpp"
#include "dashboard/store.hpp"
#include "dashboard/texts.hpp"
#include "merchant/merchant.hpp"
#include "statements/service.hpp"

namespace sika::dashboard {

namespace bj = boost::json;
using web::html::escape;
namespace stl = statements::settlement;

namespace {

std::int64_t whole(const std::string& text, bool& ok) {
  ok = !text.empty() && text.size() <= 15 && text.find_first_not_of("0123456789") == std::string::npos;
  return ok ? std::stoll(text) : 0;
}

std::string option(std::string_view value, std::string_view label, std::string_view current) {
  return "<option value=\"" + escape(value) + "\"" + (value == current ? " selected" : "") + ">" + escape(label) +
         "</option>";
}

std::string field(std::string_view id, std::string_view label, std::string_view value, std::string_view extra = "") {
  return "<div><label for=\"" + std::string(id) + "\">" + escape(label) + "</label><input id=\"" + std::string(id) +
         "\" name=\"" + std::string(id) + "\" value=\"" + escape(value) + "\"" + std::string(extra) + "></div>";
}

}  // namespace

web::Response Service::settlement(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  const std::string currency = req.query_param("currency").value_or("XAF");
  std::optional<stl::Settings> s;
  std::vector<stl::Batch> batches;
  auto read = db_.read([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(s, stl::find_settings(conn, c->principal.merchant_id, c->principal.environment, currency));
    SIKA_ASSIGN_OR_RETURN(batches, stl::list_batches(conn, c->principal.merchant_id, c->principal.environment, 50));
    return {};
  });
  if (!read) return error_page(req, read.error());
  const stl::Settings v = s.value_or(stl::Settings{});
  const bool owner = c->principal.role == web::Role::owner;
  const std::string dis = owner ? "" : " disabled";
  std::string body =
      "<form class=\"card\" method=\"post\" action=\"" + escape(path("/settlement")) + "\">" + c->csrf_field() +
      "<h2>" + std::string(say(c->locale, "settlement_settings")) + "</h2><div class=\"filters\">" +
      field("currency", say(c->locale, "currency"), currency, " maxlength=\"3\" required" + dis) +
      "<div><label for=\"destination\">" + std::string(say(c->locale, "settlement_destination")) +
      "</label><select id=\"destination\" name=\"destination\"" + dis + ">" +
      option("MOBILE_MONEY", say(c->locale, "settlement_mobile_money"), v.destination) +
      option("BANK", say(c->locale, "settlement_bank"), v.destination) + "</select></div>" +
      field("provider", say(c->locale, "settlement_provider"), v.provider, dis) +
      field("msisdn", say(c->locale, "settlement_msisdn"), v.msisdn, " inputmode=\"tel\"" + dis) +
      field("iban", "IBAN", v.iban, dis) + field("bic", "BIC", v.bic, dis) +
      field("holder", say(c->locale, "settlement_holder"), v.holder, dis) + "<div><label for=\"schedule\">" +
      std::string(say(c->locale, "settlement_schedule")) + "</label><select id=\"schedule\" name=\"schedule\"" + dis +
      ">" + option("DAILY", say(c->locale, "settlement_daily"), v.schedule) +
      option("WEEKLY", say(c->locale, "settlement_weekly"), v.schedule) +
      option("ON_REQUEST", say(c->locale, "settlement_on_request"), v.schedule) + "</select></div>" +
      "<div><label for=\"weekday\">" + std::string(say(c->locale, "settlement_weekday")) +
      "</label><select id=\"weekday\" name=\"weekday\"" + dis + ">";
  static constexpr web::texts::Key<kTexts> kDays[] = {"weekday_1", "weekday_2", "weekday_3", "weekday_4",
                                                      "weekday_5", "weekday_6", "weekday_7"};
  for (int d = 1; d <= 7; ++d)
    body += option(std::to_string(d), say(c->locale, kDays[d - 1]), std::to_string(v.weekday));
  body += "</select></div>" +
          field("minimum", say(c->locale, "settlement_minimum"), std::to_string(v.minimum),
                " inputmode=\"numeric\" pattern=\"[0-9]*\"" + dis) +
          "</div><p class=\"muted\">" + std::string(say(c->locale, "settlement_reserve")) + " " +
          escape(money::format(v.reserve, currency)) + "</p>" +
          (owner ? "<button>" + std::string(say(c->locale, "save")) + "</button>" : std::string()) + "</form>";
  if (owner && s)
    body += "<form class=\"card\" method=\"post\" action=\"" + escape(path("/settlement/now")) + "\">" +
            c->csrf_field() + "<input type=\"hidden\" name=\"currency\" value=\"" + escape(currency) +
            "\"><button id=\"settle-now\">" + std::string(say(c->locale, "settlement_now")) + "</button></form>";
  if (batches.empty()) {
    body += "<p class=\"muted\">" + std::string(say(c->locale, "settlement_no_batch")) + "</p>";
  } else {
    body += "<div class=\"scroll\"><table id=\"batches\"><thead><tr><th>" + std::string(say(c->locale, "reference")) +
            "</th><th>" + std::string(say(c->locale, "settlement_period")) + "</th><th class=\"num\">" +
            std::string(say(c->locale, "gross")) + "</th><th class=\"num\">" + std::string(say(c->locale, "fee")) +
            "</th><th class=\"num\">" + std::string(say(c->locale, "net")) + "</th><th>" +
            std::string(say(c->locale, "status")) + "</th><th>" + std::string(say(c->locale, "settlement_paid_at")) +
            "</th></tr></thead><tbody>";
    for (const auto& b : batches)
      body += "<tr><td>" + escape(b.reference) + "</td><td>" + escape(b.period) + "</td><td class=\"num\">" +
              escape(money::format(b.gross, b.currency)) + "</td><td class=\"num\">" +
              escape(money::format(b.fees, b.currency)) + "</td><td class=\"num\">" +
              escape(money::format(b.net, b.currency)) + "</td><td>" + badge(b.status) + "</td><td>" +
              (b.paid_at ? when(*b.paid_at, c->zone) : std::string("—")) + "</td></tr>";
    body += "</tbody></table></div>";
  }
  return page(req, *c, std::string(say(c->locale, "nav_settlement")), body);
}

web::Response Service::settlement_submit(web::Request& req) {
  auto c = member_context(req, /*changes=*/true);
  if (!c) return error_page(req, c.error());
  if (c->principal.role != web::Role::owner) return error_page(req, not_allowed(Reason::owners_change_settlement));
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  auto f = [&](std::string_view k) { return web::field_value(*fields, k); };
  stl::Settings s;
  s.merchant_id = c->principal.merchant_id;
  s.environment = c->principal.environment;
  s.currency = f("currency");
  s.destination = f("destination");
  s.provider = f("provider");
  s.msisdn = f("msisdn");
  s.iban = f("iban");
  s.bic = f("bic");
  s.holder = f("holder");
  s.schedule = f("schedule");
  bool ok = true;
  s.weekday = static_cast<int>(whole(f("weekday").empty() ? "1" : f("weekday"), ok));
  if (!ok) return error_page(req, field_error("weekday", Reason::weekday));
  s.minimum = whole(f("minimum").empty() ? "0" : f("minimum"), ok);
  if (!ok) return error_page(req, field_error("minimum", Reason::whole_minor_units));
  if (auto checked = stl::check_settings(s); !checked) return error_page(req, checked.error());
  const std::int64_t at = now();
  auto wrote = db_.write([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto existing, stl::find_settings(conn, s.merchant_id, s.environment, s.currency));
    s.reserve = existing ? existing->reserve : 0;  // operators set it
    SIKA_TRY(stl::put_settings(conn, s, at));
    bj::object detail{{"currency", s.currency},
                      {"destination", s.destination},
                      {"schedule", s.schedule},
                      {"weekday", s.weekday},
                      {"minimum", s.minimum}};
    return append_audit(conn, AuditEntry{0, at, c->session.row.user_id, c->session.row.email, s.merchant_id,
                                         "settlement.settings", c->principal.merchant, json::dump(detail)});
  });
  if (!wrote) return error_page(req, wrote.error());
  return see_other("/settlement?currency=" + web::percent_encode(s.currency));
}

web::Response Service::settlement_now(web::Request& req) {
  auto c = member_context(req, /*changes=*/true);
  if (!c) return error_page(req, c.error());
  if (c->principal.role != web::Role::owner) return error_page(req, not_allowed(Reason::owners_ask_settlement));
  if (!parts_.statements) return error_page(req, unavailable("settlement is not configured"));
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  const std::string currency = web::field_value(*fields, "currency");
  auto made = parts_.statements->settle_now(c->principal.merchant_id, c->principal.environment, currency);
  if (!made) return error_page(req, made.error());
  (void)db_.write([&](store::Conn& conn) {
    return append_audit(conn, AuditEntry{0, now(), c->session.row.user_id, c->session.row.email,
                                         c->principal.merchant_id, "settlement.requested", made->reference,
                                         json::dump(bj::object{{"currency", currency}, {"net", made->net}})});
  });
  return see_other("/settlement?currency=" + web::percent_encode(currency));
}

web::Response Service::operator_settlement(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  const std::string env = req.query_param("environment").value_or("prod");
  std::vector<stl::BankTransfer> pending;
  auto read = db_.read([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(pending, stl::pending_bank_transfers(conn, env));
    return {};
  });
  if (!read) return error_page(req, read.error());
  std::string body = "<form class=\"card\" method=\"get\" action=\"" + escape(path("/operator/settlement")) +
                     "\"><div class=\"filters\"><div><label for=\"environment\">" +
                     std::string(say(c->locale, "environment")) +
                     "</label><select id=\"environment\" name=\"environment\">" + option("prod", "prod", env) +
                     option("sandbox", "sandbox", env) + "</select></div></div><button>" +
                     std::string(say(c->locale, "show")) + "</button></form>";
  if (pending.empty()) {
    body += "<p class=\"muted\">" + std::string(say(c->locale, "settlement_no_pending_bank")) + "</p>";
  } else {
    body += "<p><a id=\"pain001\" href=\"" +
            escape(path("/operator/settlement/pain001.xml?environment=" + web::percent_encode(env))) + "\">" +
            std::string(say(c->locale, "settlement_download_file")) +
            "</a></p><div class=\"scroll\"><table id=\"bank-batches\"><thead><tr><th>" +
            std::string(say(c->locale, "reference")) + "</th><th>" + std::string(say(c->locale, "settlement_period")) +
            "</th><th>" + std::string(say(c->locale, "settlement_holder")) + "</th><th>IBAN</th><th class=\"num\">" +
            std::string(say(c->locale, "net")) + "</th><th>" + std::string(say(c->locale, "actions")) +
            "</th></tr></thead><tbody>";
    for (const auto& t : pending)
      body += "<tr><td>" + escape(t.batch.reference) + "</td><td>" + escape(t.batch.period) + "</td><td>" +
              escape(t.holder) + "</td><td>" + escape(t.iban) + "</td><td class=\"num\">" +
              escape(money::format(t.batch.net, t.batch.currency)) + "</td><td><form method=\"post\" action=\"" +
              escape(path("/operator/settlement/" + web::percent_encode(t.batch.reference) + "/paid")) + "\">" +
              c->csrf_field() + "<button>" + std::string(say(c->locale, "settlement_mark_paid")) +
              "</button></form></td></tr>";
    body += "</tbody></table></div>";
  }
  body += "<form class=\"card\" method=\"post\" action=\"" + escape(path("/operator/settlement/reserve")) + "\">" +
          c->csrf_field() + "<h2>" + std::string(say(c->locale, "settlement_reserve")) +
          "</h2><div class=\"filters\">" + field("merchant", say(c->locale, "merchant"), "", " required") +
          field("currency", say(c->locale, "currency"), "XAF", " maxlength=\"3\" required") +
          field("amount", say(c->locale, "amount"), "0", " inputmode=\"numeric\" pattern=\"[0-9]*\" required") +
          "</div><button>" + std::string(say(c->locale, "save")) + "</button></form>";
  return page(req, *c, std::string(say(c->locale, "nav_settlement")), body);
}

web::Response Service::operator_pain001(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  if (!parts_.statements) return error_page(req, unavailable("settlement is not configured"));
  const std::string env = req.query_param("environment").value_or("prod");
  auto file = parts_.statements->bank_file(env);
  if (!file) return error_page(req, file.error());
  web::Response res;
  res.status = 200;
  res.body = std::move(file->first);
  res.set("Content-Type", "application/xml; charset=utf-8");
  web::html::secure_headers(res);
  res.set("Content-Disposition", "attachment; filename=\"pain001-" + env + ".xml\"");
  return res;
}

web::Response Service::operator_settlement_paid(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  const std::string reference = req.path_param("reference");
  const std::int64_t at = now();
  bool paid = false;
  payments::ledger::Learned learned;
  auto wrote = db_.write([&](store::Conn& conn) -> Status {
    learned.clear();
    SIKA_ASSIGN_OR_RETURN(auto b, stl::find_batch(conn, reference));
    if (!b || b->destination != "BANK") return with_problem(not_found(), "reference", Reason::no_such_bank_batch);
    SIKA_ASSIGN_OR_RETURN(paid, stl::mark_paid(conn, reference, at, learned));
    if (!paid) return with_problem(conflict(), "status", Reason::batch_not_pending);
    return append_audit(conn, AuditEntry{0, at, c->session.row.user_id, c->session.row.email, b->merchant_id,
                                         "settlement.paid", reference, json::dump(bj::object{{"net", b->net}})});
  });
  if (!wrote) return error_page(req, wrote.error());
  return see_other("/operator/settlement?environment=prod");
}

web::Response Service::operator_settlement_reserve(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  if (!parts_.statements) return error_page(req, unavailable("settlement is not configured"));
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  bool ok = true;
  const std::int64_t amount = whole(web::field_value(*fields, "amount"), ok);
  if (!ok) return error_page(req, field_error("amount", Reason::whole_minor_units));
  const std::string currency = web::field_value(*fields, "currency");
  std::optional<merchant::Merchant> m;
  auto read = db_.read([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(m, merchant::find_by_matricule(conn, web::field_value(*fields, "merchant")));
    return {};
  });
  if (!read) return error_page(req, read.error());
  if (!m) return error_page(req, with_problem(not_found(), "merchant", Reason::no_such_merchant));
  const std::int64_t at = now();
  auto wrote = db_.write([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(bool found, stl::set_reserve(conn, m->id, m->environment, currency, amount, at));
    if (!found) return with_problem(not_found(), "currency", Reason::no_settlement_settings);
    return append_audit(
        conn, AuditEntry{0, at, c->session.row.user_id, c->session.row.email, m->id, "settlement.reserve", m->matricule,
                         json::dump(bj::object{{"currency", currency}, {"reserve", amount}})});
  });
  if (!wrote) return error_page(req, wrote.error());
  return see_other("/operator/settlement");
}

}  // namespace sika::dashboard
