// Refunds on the dashboard (docs/refunds.md, docs/dashboard.md): the refunds card of a collection's
// page with the refund form (owners), the form's POST through payments::Service::refund (the API's
// operation, audited in its write unit), and the merchant's refunds list.
#include <boost/json.hpp>

#include "core/json.hpp"
#include "core/money.hpp"
#include "core/random.hpp"
#include "core/reason.hpp"
#include "dashboard/internal.hpp"
#include "dashboard/store.hpp"
#include "dashboard/texts.hpp"
#include "payments/refund_store.hpp"
#include "payments/service.hpp"
#include "web/acting.hpp"

namespace sika::dashboard {

namespace bj = boost::json;
using web::html::escape;

namespace {

constexpr std::int64_t kRefundsPerPage = 50;
// The code of core/result.hpp's conflict(): from Service::refund, only its refund_uuid reused for
// another request (its other refusals have codes of their own).
constexpr Code kKeyReused{"conflict"};

std::string option(std::string_view value, std::string_view label, std::string_view selected) {
  return "<option value=\"" + escape(value) + "\"" + (value == selected ? " selected" : "") + ">" + escape(label) +
         "</option>";
}

// The label of a refund form's field in the page's language (the field's name when it has none).
std::string field_label(i18n::Locale l, std::string_view field) {
  if (field == "amount") return std::string(say(l, "amount"));
  if (field == "reason") return std::string(say(l, "refund_reason"));
  if (field == "description") return std::string(say(l, "description"));
  if (field == "transaction_reference") return std::string(say(l, "transaction"));
  if (field == "refund_uuid") return std::string(say(l, "refund_form_key"));
  return std::string(field);
}

// A refusal of the refund form: the text of its code, then each field's problem, in the page's
// language (from the error's typed reasons; never from its English details).
std::string refusal_html(const Service::Ctx& c, const Error& e) {
  std::string out = "<div role=\"alert\" id=\"refund-error\"><p class=\"error\">" +
                    std::string(say(c.locale, "refund_refused")) + " " + escape(i18n::text(e.code, c.locale)) + "</p>";
  if (!e.problems.empty()) {
    out += "<ul>";
    for (const auto& p : e.problems)
      out += "<li><strong>" + escape(field_label(c.locale, p.field)) +
             "</strong> : " + escape(reason::text(p.problem, c.locale)) + "</li>";
    out += "</ul>";
  } else if (e.is(kKeyReused)) {
    // The operation's only plain conflict: the form's refund_uuid made another refund.
    out += "<ul><li><strong>" + escape(field_label(c.locale, "refund_uuid")) +
           "</strong> : " + std::string(say(c.locale, "refund_form_used")) + "</li></ul>";
  }
  return out + "</div>";
}

// The amount of the form, in the currency's major units ("1500", "10.50"; a decimal comma too),
// as minor units: nullopt when empty (everything left), an error naming amount when it is not a
// positive amount with the currency's decimals. No floating point: money::parse_decimal.
Result<std::optional<std::int64_t>> form_amount(std::string text, std::string_view currency) {
  while (!text.empty() && text.front() == ' ') text.erase(text.begin());
  while (!text.empty() && text.back() == ' ') text.pop_back();
  if (text.empty()) return std::optional<std::int64_t>{};
  if (auto comma = text.find(','); comma != std::string::npos && text.find('.') == std::string::npos) text[comma] = '.';
  auto minor = money::parse_decimal(text, currency);
  if (!minor || *minor <= 0)
    return field_error("amount", Problem(Reason::decimals_in, {{"max", std::to_string(money::exponent(currency))},
                                                               {"currency", std::string(currency)}}));
  return std::optional<std::int64_t>(*minor);
}

// The refund form's key: the one submitted when it is a UUID (a page rendered again after a
// refusal keeps it, so sending it again is still the same refund), else a new one; a new one too
// when the submitted key already made another refund (409 conflict).
std::string form_key(const web::Fields* submitted, const Error* refused) {
  if (submitted && !(refused && refused->is(kKeyReused))) {
    std::string key = web::field_value(*submitted, "refund_uuid");
    if (is_uuid(key)) return key;
  }
  return uuid_v4();
}

}  // namespace

std::string Service::refunds_card(const Ctx& c, const payments::Transaction& tx,
                                  const std::vector<payments::Refund>& refunds, const Error* refused,
                                  const web::Fields* submitted) {
  const std::int64_t left = tx.amount - tx.refunded_amount - tx.refunding_amount;
  std::string body = "<section class=\"card\" aria-labelledby=\"rf\" id=\"refunds-card\"><h2 id=\"rf\">" +
                     std::string(say(c.locale, "nav_refunds")) + "</h2><p id=\"refunded-amount\">" +
                     std::string(say(c.locale, "refund_refunded")) + " " +
                     escape(money::format(tx.refunded_amount, tx.currency)) + "</p>";
  if (refunds.empty()) {
    body += "<p class=\"muted\">" + std::string(say(c.locale, "no_refund")) + "</p>";
  } else {
    body += "<div class=\"scroll\"><table id=\"refunds\"><thead><tr><th>" + std::string(say(c.locale, "reference")) +
            "</th><th class=\"num\">" + std::string(say(c.locale, "amount")) + "</th><th>" +
            std::string(say(c.locale, "status")) + "</th><th>" + std::string(say(c.locale, "refund_reason")) +
            "</th><th>" + std::string(say(c.locale, "created")) + "</th><th>" +
            std::string(say(c.locale, "refund_updated")) + "</th><th>" + std::string(say(c.locale, "refund_failure")) +
            "</th></tr></thead><tbody>";
    for (const auto& r : refunds)
      body += "<tr><td>" + escape(r.reference) + "</td><td class=\"num\">" +
              escape(money::format(r.amount, r.currency)) + "</td><td>" + badge(payments::to_string(r.status)) +
              "</td><td>" + escape(say_refund_reason(c.locale, r.reason)) + "</td><td>" + when(r.created_at, c.zone) +
              "</td><td>" + when(r.updated_at, c.zone) + "</td><td>" + escape(r.failure_reason.value_or("")) +
              "</td></tr>";
    body += "</tbody></table></div>";
  }
  // Owners refund a COMPLETED collection while something is left (a refund in flight is refused by
  // the operation: 409 refund_in_progress, shown here).
  const bool owner = c.principal.role == web::Role::owner;
  if (owner && tx.status == payments::TxStatus::completed && left > 0) {
    auto v = [&](std::string_view k) { return submitted ? web::field_value(*submitted, k) : std::string(); };
    const std::string chosen = v("reason").empty() ? std::string("REQUESTED_BY_CUSTOMER") : v("reason");
    body += "<form method=\"post\" id=\"refund-form\" action=\"" +
            escape(path("/transactions/" + web::percent_encode(tx.reference) + "/refund")) + "\"><h3>" +
            std::string(say(c.locale, "refund_title")) + "</h3>" + c.csrf_field() +
            "<input type=\"hidden\" name=\"refund_uuid\" value=\"" + escape(form_key(submitted, refused)) + "\"><p>" +
            std::string(say(c.locale, "refund_still_refundable")) + " <strong id=\"refundable\">" +
            escape(money::format(left, tx.currency)) + "</strong></p>";
    if (refused) body += refusal_html(c, *refused);
    body += "<label for=\"refund-amount\">" + std::string(say(c.locale, "refund_amount_empty_all")) +
            escape(money::format(left, tx.currency)) +
            ")</label><input id=\"refund-amount\" name=\"amount\" inputmode=\"decimal\" autocomplete=\"off\" value=\"" +
            escape(v("amount")) + "\"><label for=\"refund-reason\">" + std::string(say(c.locale, "refund_reason")) +
            "</label><select id=\"refund-reason\" name=\"reason\">";
    for (std::string_view r : payments::kRefundReasons) body += option(r, say_refund_reason(c.locale, r), chosen);
    body += "</select><label for=\"refund-description\">" + std::string(say(c.locale, "refund_description")) +
            "</label><input id=\"refund-description\" name=\"description\" maxlength=\"255\" value=\"" +
            escape(v("description")) + "\"><button id=\"refund-submit\">" +
            std::string(say(c.locale, "refund_submit")) + "</button></form>";
  } else if (refused) {
    body += refusal_html(c, *refused);
  }
  return body + "</section>";
}

web::Response Service::refund_submit(web::Request& req) {
  auto c = member_context(req, /*changes=*/true);
  if (!c) return error_page(req, c.error());
  if (c->principal.role != web::Role::owner) return error_page(req, not_allowed(Reason::owners_refund));
  if (!parts_.payments) return error_page(req, unavailable(bj::string("payments not configured")));
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  const std::string reference = req.path_param("reference");
  auto f = [&](std::string_view k) { return web::field_value(*fields, k); };
  // The collection as this merchant may see it (another merchant's: 404, as through the API); its
  // currency says how the amount is written.
  auto tx = parts_.payments->find(web::acting(c->principal), reference, payments::kCollection);
  if (!tx) return error_page(req, tx.error());
  auto refused = [&](const Error& e) {
    if (e.server_side()) return error_page(req, e);
    return transaction_view(req, *c, reference, &e, &*fields);
  };
  auto amount = form_amount(f("amount"), tx->currency);
  if (!amount) return refused(amount.error());
  // The form becomes the API's body: the same rules apply (payments::parse_refund), and the same
  // form sent twice is the same request of the same refund_uuid.
  bj::object body{{"transaction_reference", reference}, {"refund_uuid", f("refund_uuid")}, {"reason", f("reason")}};
  if (*amount) body["amount"] = **amount;
  if (!f("description").empty()) body["description"] = f("description");
  json::FieldErrors errors;
  payments::RefundRequest request = payments::parse_refund(body, errors);
  if (auto st = errors.status(); !st) return refused(st.error());
  // The audit entry commits in the refund's own write unit, once, when the refund is created.
  auto audit = [&](store::Conn& conn, const payments::Refund& r) -> Status {
    return append_audit(conn, AuditEntry{0, now(), c->session.row.user_id, c->session.row.email,
                                         c->principal.merchant_id, "refund.created", r.reference,
                                         json::dump(bj::object{{"transaction_reference", r.transaction_reference},
                                                               {"amount", r.amount},
                                                               {"currency", r.currency},
                                                               {"reason", r.reason}})});
  };
  auto made = parts_.payments->refund(request, web::acting(c->principal), audit);
  if (!made) return refused(made.error());
  return see_other("/transactions/" + web::percent_encode(reference) +
                   "?refunded=" + web::percent_encode(made->reference));
}

web::Response Service::refunds(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  if (!parts_.payments) return error_page(req, unavailable(bj::string("payments not configured")));
  auto q = [&](std::string_view name) { return req.query_param(name).value_or(""); };
  payments::tables::RefundFilter filter;
  filter.limit = kRefundsPerPage;
  filter.transaction_reference = q("transaction_reference");
  json::FieldErrors errors;
  if (!q("status").empty()) {
    filter.status = payments::parse_refund_status(q("status"));
    if (!filter.status)
      errors.add("status", reason::with(Reason::one_of, "values", "PENDING, PROCESSING, COMPLETED, FAILED"));
  }
  if (filter.transaction_reference.size() > 100)
    errors.add("transaction_reference", reason::with(Reason::chars_at_most, "max", "100"));
  if (auto cursor = before_cursor(req))
    filter.before = *cursor;
  else
    errors.add("before", Reason::page_cursor);
  if (auto st = errors.status(); !st) return error_page(req, st.error());
  auto listed = parts_.payments->list_refunds(web::acting(c->principal), filter);
  if (!listed) return error_page(req, listed.error());
  const auto& items = listed->first;

  std::string body = "<form class=\"card\" method=\"get\" action=\"" + escape(path("/refunds")) +
                     "\" role=\"search\"><div class=\"filters\"><div><label for=\"status\">" +
                     std::string(say(c->locale, "status")) + "</label><select id=\"status\" name=\"status\">" +
                     option("", say(c->locale, "all"), q("status"));
  for (auto s : {"PENDING", "PROCESSING", "COMPLETED", "FAILED"}) body += option(s, s, q("status"));
  body += "</select></div><div><label for=\"transaction_reference\">" +
          std::string(say(c->locale, "refund_transaction_filter")) +
          "</label><input id=\"transaction_reference\" name=\"transaction_reference\" value=\"" +
          escape(filter.transaction_reference) + "\"></div></div><button>" + std::string(say(c->locale, "filter")) +
          "</button></form><p class=\"muted\">" + std::string(say(c->locale, "refund_who")) + "</p>";
  if (items.empty()) {
    body += "<p class=\"muted\" id=\"no-refund\">" + std::string(say(c->locale, "no_refund")) + "</p>";
  } else {
    body += "<div class=\"scroll\"><table id=\"refunds\"><thead><tr><th>" + std::string(say(c->locale, "date")) +
            "</th><th>" + std::string(say(c->locale, "reference")) + "</th><th>" +
            std::string(say(c->locale, "transaction")) + "</th><th class=\"num\">" +
            std::string(say(c->locale, "amount")) + "</th><th>" + std::string(say(c->locale, "status")) + "</th><th>" +
            std::string(say(c->locale, "refund_reason")) + "</th></tr></thead><tbody>";
    for (const auto& r : items)
      body += "<tr><td>" + when(r.created_at, c->zone) + "</td><td>" + escape(r.reference) + "</td><td><a href=\"" +
              escape(path("/transactions/" + web::percent_encode(r.transaction_reference))) + "\">" +
              escape(r.transaction_reference) + "</a></td><td class=\"num\">" +
              escape(money::format(r.amount, r.currency)) + "</td><td>" + badge(payments::to_string(r.status)) +
              (r.failure_reason ? " <span class=\"muted\">(" + escape(*r.failure_reason) + ")</span>" : std::string()) +
              "</td><td>" + escape(say_refund_reason(c->locale, r.reason)) + "</td></tr>";
    body += "</tbody></table></div>";
  }
  if (static_cast<std::int64_t>(items.size()) == kRefundsPerPage) {
    std::string query;
    if (filter.status) query += "status=" + std::string(payments::to_string(*filter.status)) + "&";
    if (!filter.transaction_reference.empty())
      query += "transaction_reference=" + web::percent_encode(filter.transaction_reference) + "&";
    body += next_page_link(*c, query + "before=" + std::to_string(items.back().id));
  }
  return page(req, *c, std::string(say(c->locale, "nav_refunds")), body);
}

}  // namespace sika::dashboard
