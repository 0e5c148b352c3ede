// A merchant's pages: transactions (filters, search, keyset pages, CSV), a transaction's
// timeline with its ledger entries and webhook deliveries, payment links, developers (OAuth
// applications) and the team. Every read is scoped to the session's merchant: another
// merchant's object is not found.
#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <tuple>

#include "core/json.hpp"
#include "core/money.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "core/time_zone.hpp"
#include "dashboard/internal.hpp"
#include "dashboard/texts.hpp"
#include "identity/model.hpp"
#include "identity/service.hpp"
#include "identity/store.hpp"
#include "links/qr.hpp"
#include "links/service.hpp"
#include "links/store.hpp"
#include "payments/queries.hpp"
#include "payments/refund_store.hpp"
#include "payments/service.hpp"
#include "web/acting.hpp"
#include "web/csv.hpp"
#include "web/envelope.hpp"
#include "webhooks/registry.hpp"
#include "webhooks/service.hpp"

namespace sika::dashboard {

namespace {

// The buttons making a new API key, by kind.
struct NewKey {
  const char* kind;
  web::texts::Key<kTexts> label;
};
constexpr NewKey kNewKeys[] = {{"merchant", "new_merchant_key"}, {"link", "new_link_key"}};

}  // namespace

namespace bj = boost::json;
using web::html::escape;

namespace {

std::optional<std::int64_t> day_start(std::string_view text) {
  if (text.size() != 10) return std::nullopt;
  return parse_iso8601(std::string(text) + "T00:00:00Z");
}

// The transaction filter of a query string; problems name their parameter.
Result<payments::queries::TransactionFilter> transaction_filter(const web::Request& req, const Service::Ctx& c) {
  payments::queries::TransactionFilter f;
  f.merchant_id = c.principal.merchant_id;
  f.environment = c.principal.environment;
  json::FieldErrors errors;
  auto q = [&](std::string_view name) { return req.query_param(name).value_or(""); };
  if (auto s = q("status"); !s.empty()) {
    f.status = payments::parse_status(s);
    if (!f.status) errors.add("status", Reason::transaction_status);
  }
  f.operation = q("operation");
  if (!f.operation.empty() && f.operation != payments::kCollection && f.operation != payments::kDisbursement)
    errors.add("operation", Reason::operation);
  f.channel = q("channel");
  if (!f.channel.empty() && f.channel != "PROVIDER" && f.channel != "WALLET")
    errors.add("channel", Problem(Reason::either_of, {{"first", "PROVIDER"}, {"second", "WALLET"}}));
  f.provider = q("provider");
  if (f.provider.size() > 64) errors.add("provider", reason::with(Reason::chars_at_most, "max", "64"));
  if (auto from = q("from"); !from.empty()) {
    f.created_from = day_start(from);
    if (!f.created_from) errors.add("from", Reason::day_date);
  }
  if (auto to = q("to"); !to.empty()) {
    auto d = day_start(to);
    if (!d)
      errors.add("to", Reason::day_date);
    else
      f.created_to = *d + 86400000;  // the whole day
  }
  f.search = q("q");
  if (f.search.size() > 100) errors.add("q", reason::with(Reason::chars_at_most, "max", "100"));
  if (auto cursor = before_cursor(req))
    f.before = *cursor;
  else
    errors.add("before", Reason::page_cursor);
  f.limit = 50;
  SIKA_TRY(errors.status());
  return f;
}

// The query string of the current filters without the cursor (for the next page and the CSV).
std::string filter_query(const web::Request& req) {
  std::string out;
  for (const auto& [k, v] : req.query) {
    if (k == "before" || k == "lang" || v.empty()) continue;
    out += (out.empty() ? "" : "&") + web::percent_encode(k) + "=" + web::percent_encode(v);
  }
  return out;
}

std::string option(std::string_view value, std::string_view label, std::string_view selected) {
  return "<option value=\"" + escape(value) + "\"" + (value == selected ? " selected" : "") + ">" + escape(label) +
         "</option>";
}

// The order id a transaction carries in its metadata (hosted checkout: "order_id"), or "".
std::string order_id_of(const payments::Transaction& tx) {
  if (tx.metadata.empty()) return "";
  boost::system::error_code ec;
  bj::value v = bj::parse(tx.metadata, ec);
  if (ec || !v.is_object()) return "";
  const bj::value* id = v.as_object().if_contains("order_id");
  return id && id->is_string() ? std::string(id->as_string()) : "";
}

}  // namespace

Result<std::optional<std::int64_t>> before_cursor(const web::Request& req) {
  auto b = req.query_param("before");
  if (!b || b->empty()) return std::optional<std::int64_t>{};
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(b->data(), b->data() + b->size(), v);
  if (ec != std::errc() || end != b->data() + b->size())
    return with_problem(bad_request("invalid_request"), "before", Reason::page_cursor);
  return std::optional<std::int64_t>(v);
}

std::string next_page_link(const Service::Ctx& c, const std::string& query) {
  return "<p><a rel=\"next\" href=\"?" + escape(query) + "\">" + std::string(say(c.locale, "next_page")) + "</a></p>";
}

std::string badge(std::string_view status) {
  return "<span class=\"badge " + escape(status) + "\">" + escape(status) + "</span>";
}

// ---- transactions ------------------------------------------------------------------------------

web::Response Service::transactions(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  auto filter = transaction_filter(req, *c);
  if (!filter) return error_page(req, filter.error());
  payments::queries::TransactionPage result;
  auto read = lists_.read([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(result, payments::queries::list_transactions(conn, *filter));
    return {};
  });
  if (!read) return error_page(req, read.error());
  auto q = [&](std::string_view name) { return req.query_param(name).value_or(""); };
  std::string body = "<form class=\"card\" method=\"get\" action=\"" + escape(path("/transactions")) +
                     "\" role=\"search\"><div class=\"filters\">";
  body += "<div><label for=\"q\">" + std::string(say(c->locale, "reference_or_phone")) +
          "</label><input id=\"q\" name=\"q\" value=\"" + escape(q("q")) + "\"></div></div>";
  // The other filters fold away on a phone; open when one is set.
  const bool filtered = !(q("status") + q("operation") + q("channel") + q("provider") + q("from") + q("to")).empty();
  body += std::string("<details") + (filtered ? " open" : "") + "><summary>" +
          std::string(say(c->locale, "more_filters")) + "</summary><div class=\"filters\">";
  body += "<div><label for=\"status\">" + std::string(say(c->locale, "status")) +
          "</label><select id=\"status\" name=\"status\">" + option("", say(c->locale, "all"), q("status"));
  for (auto s : {"INITIATED", "PENDING", "COMPLETED", "FAILED", "EXPIRED", "CANCELLED", "REFUNDED"})
    body += option(s, s, q("status"));
  body += "</select></div><div><label for=\"operation\">" + std::string(say(c->locale, "operation")) +
          "</label><select id=\"operation\" name=\"operation\">" + option("", say(c->locale, "all_2"), q("operation")) +
          option("COLLECTION", "COLLECTION", q("operation")) + option("DISBURSEMENT", "DISBURSEMENT", q("operation")) +
          "</select></div><div><label for=\"channel\">" + std::string(say(c->locale, "channel")) +
          "</label><select id=\"channel\" name=\"channel\">" + option("", say(c->locale, "all"), q("channel")) +
          option("PROVIDER", "PROVIDER", q("channel")) + option("WALLET", "WALLET", q("channel")) + "</select></div>";
  body += "<div><label for=\"provider\">" + std::string(say(c->locale, "service")) +
          "</label><input id=\"provider\" name=\"provider\" value=\"" + escape(q("provider")) + "\"></div>";
  body += "<div><label for=\"from\">" + std::string(say(c->locale, "from")) +
          "</label><input id=\"from\" name=\"from\" type=\"date\" value=\"" + escape(q("from")) + "\"></div>";
  body += "<div><label for=\"to\">" + std::string(say(c->locale, "to")) +
          "</label><input id=\"to\" name=\"to\" type=\"date\" value=\"" + escape(q("to")) + "\"></div>";
  body += "</div></details><button>" + std::string(say(c->locale, "filter")) + "</button></form>";
  const std::string fq = filter_query(req);
  const std::string csv_url = path("/transactions.csv") + "?" + fq + (fq.empty() ? "" : "&");
  const std::string excel = "<a id=\"csv-excel\" href=\"" + escape(csv_url + "separator=semicolon&bom=1") + "\">" +
                            std::string(say(c->locale, "export_for_excel_csv")) + "</a>";
  const std::string plain = "<a id=\"csv\" href=\"" + escape(path("/transactions.csv") + (fq.empty() ? "" : "?" + fq)) +
                            "\">" + std::string(say(c->locale, "export_as_csv")) + "</a>";
  body += "<p>" + (c->fr() ? excel + " · " + plain : plain + " · " + excel) + "</p>";
  if (result.items.empty()) {
    body += "<p class=\"muted\">" + std::string(say(c->locale, "no_transaction")) + "</p>";
  } else {
    body += "<div class=\"scroll\"><table><thead><tr><th>" + std::string(say(c->locale, "date")) + "</th><th>" +
            std::string(say(c->locale, "reference")) + "</th><th>" + std::string(say(c->locale, "operation")) +
            "</th><th>" + std::string(say(c->locale, "status")) + "</th><th class=\"num\">" +
            std::string(say(c->locale, "amount")) + "</th><th>" + std::string(say(c->locale, "phone")) + "</th><th>" +
            std::string(say(c->locale, "service")) + "</th></tr></thead><tbody>";
    for (const auto& tx : result.items) {
      body += "<tr><td>" + when(tx.created_at, c->zone) + "</td><td><a href=\"" +
              escape(path("/transactions/" + web::percent_encode(tx.reference))) + "\">" + escape(tx.reference) +
              "</a></td><td>" + escape(tx.operation) + "</td><td>" + badge(payments::to_string(tx.status)) +
              "</td><td class=\"num\">" + escape(money::format(tx.amount, tx.currency)) + "</td><td>" +
              escape(tx.customer_wallet) + "</td><td>" + escape(tx.service_code) + "</td></tr>";
    }
    body += "</tbody></table></div>";
  }
  if (result.next) body += next_page_link(*c, fq + (fq.empty() ? "" : "&") + "before=" + std::to_string(*result.next));
  return page(req, *c, "Transactions", body);
}

web::Response Service::transactions_csv(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  auto filter = transaction_filter(req, *c);
  if (!filter) return error_page(req, filter.error());
  // Streamed: each piece is one keyset page of the read model, read in its own short read unit
  // once the previous piece is written, so an export of any size holds one page in memory and
  // never one long transaction open. Rows created during the export are not in it (the first page
  // fixes the newest id); none is listed twice.
  auto format = web::csv::format(req);
  if (!format) return error_page(req, format.error());
  filter->limit = 500;
  auto producer = [this, filter = std::move(*filter), header = true,
                   f = *format](std::string& out) mutable -> Result<bool> {
    const std::string sep(1, f.separator);
    if (header) {
      if (f.bom) out += web::csv::kBom;
      for (std::string_view name : {"transaction_reference", "created_at", "operation", "status", "channel", "service",
                                    "amount_minor", "currency", "fee_minor", "customer_wallet", "invoice_reference",
                                    "provider_reference", "order_id", "description"})
        out += (name == "transaction_reference" ? "" : sep) + std::string(name);
      out += "\r\n";
      header = false;
    }
    payments::queries::TransactionPage pg;
    SIKA_TRY(lists_.read([&](store::Conn& conn) -> Status {
      SIKA_ASSIGN_OR_RETURN(pg, payments::queries::list_transactions(conn, filter));
      return {};
    }));
    for (const auto& tx : pg.items)
      out += web::csv::cell(tx.reference, f.separator) + sep + iso8601(tx.created_at) + sep +
             web::csv::cell(tx.operation, f.separator) + sep + std::string(payments::to_string(tx.status)) + sep +
             web::csv::cell(tx.channel, f.separator) + sep + web::csv::cell(tx.service_code, f.separator) + sep +
             std::to_string(tx.amount) + sep + web::csv::cell(tx.currency, f.separator) + sep + std::to_string(tx.fee) +
             sep + web::csv::cell(tx.customer_wallet, f.separator) + sep +
             web::csv::cell(tx.invoice_reference, f.separator) + sep +
             web::csv::cell(tx.provider_reference, f.separator) + sep + web::csv::cell(order_id_of(tx), f.separator) +
             sep + web::csv::cell(tx.description, f.separator) + "\r\n";
    filter.before = pg.next;
    return pg.next.has_value();
  };
  web::Response res = web::Response::streamed(200, "text/csv; charset=utf-8", std::move(producer));
  web::html::secure_headers(res);
  res.set("Content-Disposition", "attachment; filename=\"transactions-" + c->principal.merchant + ".csv\"");
  return res;
}

namespace {
// A transaction's timeline in time order: its creation, status moves, the calls made to its
// operator, recovery's status questions and the operator's callbacks.
std::string timeline_list(const payments::queries::Timeline& t, const std::vector<payments::Refund>& refunds,
                          const Service::Ctx& c) {
  std::vector<std::pair<std::int64_t, std::string>> items;
  auto add = [&](std::int64_t at, std::string what) {
    items.emplace_back(at, "<li>" + when(at, c.zone) + " — " + what);
  };
  add(t.tx.created_at, std::string(say(c.locale, "created_lower")));
  for (const auto& s : t.steps)
    add(s.at, escape(s.from) + " → " + badge(s.to) + " <span class=\"muted\">(" + escape(s.source) +
                  (s.reason ? ": " + escape(*s.reason) : "") + ")</span>");
  for (const auto& k : t.calls)
    add(k.started_at, std::string(say(c.locale, "operator_call")) + " " + escape(k.connector) + " " +
                          escape(k.operation) + ": <code>" + escape(k.method + " " + k.path) + "</code> " +
                          (k.http_status ? std::to_string(k.http_status) + " " : "") + badge(k.outcome) + " " +
                          std::to_string(k.latency_ms) + " ms <span class=\"muted\">(" + escape(k.code.value_or("")) +
                          (k.operator_reference ? " " + escape(*k.operator_reference) : "") + ")</span>");
  for (const auto& q : t.checks)
    add(q.asked_at, std::string(say(c.locale, "status_check")) + ": " + escape(q.outcome) +
                        (q.reason ? " <span class=\"muted\">(" + escape(*q.reason) + ")</span>" : ""));
  for (const auto& cb : t.callbacks)
    add(cb.received_at, std::string(say(c.locale, "operator_callback")) + " " + escape(cb.connector) + ": " +
                            escape(cb.reported_status) + " (" + escape(cb.outcome) + ")");
  for (const auto& r : refunds) {
    const std::string what = std::string(say(c.locale, "refund_in_timeline")) + " " + escape(r.reference) + " " +
                             escape(money::format(r.amount, r.currency)) + " (" +
                             escape(say_refund_reason(c.locale, r.reason)) + ")";
    add(r.created_at, what + " " + badge("PENDING"));
    if (r.status != payments::RefundStatus::pending)
      add(r.updated_at,
          what + " → " + badge(payments::to_string(r.status)) +
              (r.failure_reason ? " <span class=\"muted\">(" + escape(*r.failure_reason) + ")</span>" : std::string()));
  }
  std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out = "<ol id=\"timeline\">";
  for (auto& [at, li] : items) out += li + "</li>";
  return out + "</ol>";
}
}  // namespace

web::Response Service::transaction(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  return transaction_view(req, *c, req.path_param("reference"), nullptr, nullptr);
}

web::Response Service::transaction_view(web::Request& req, const Ctx& ctx, const std::string& reference,
                                        const Error* refused, const web::Fields* submitted) {
  const Ctx* c = &ctx;
  payments::queries::Timeline t;
  auto read = db_.read([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(t, payments::queries::timeline(conn, reference));
    return {};
  });
  if (!read) return error_page(req, read.error());
  if (t.tx.merchant_id != c->principal.merchant_id || t.tx.environment != c->principal.environment)
    return error_page(req, not_found(bj::object{{"transaction_reference", reference}}));
  // The collection's refunds (its own merchant's, as the API lists them), newest first.
  std::vector<payments::Refund> refunds;
  if (parts_.payments && t.tx.operation == payments::kCollection) {
    payments::tables::RefundFilter rf;
    rf.transaction_reference = reference;
    rf.limit = 100;
    auto listed = parts_.payments->list_refunds(web::acting(c->principal), rf);
    if (!listed) return error_page(req, listed.error());
    refunds = std::move(listed->first);
  }
  std::vector<webhooks::Delivery> deliveries;
  if (parts_.webhooks) {
    webhooks::DeliveryFilter df;
    df.subject = reference;
    auto listed = parts_.webhooks->registry().list_deliveries(c->principal.merchant_id, df, 100, 0);
    if (!listed) return error_page(req, listed.error());
    deliveries = std::move(listed->items);
  }
  const auto& tx = t.tx;
  std::string body = "<section class=\"card\"><p>" + badge(payments::to_string(tx.status)) + " " +
                     escape(tx.operation) + "</p><p class=\"amount\">" + escape(money::format(tx.amount, tx.currency)) +
                     "</p><p>" + std::string(say(c->locale, "fee")) + " " + escape(money::format(tx.fee, tx.currency)) +
                     " · " + escape(tx.service_code) + " · " + escape(tx.customer_wallet) + "</p>";
  if (tx.failure_reason) body += "<p class=\"error\">" + escape(*tx.failure_reason) + "</p>";
  // The refund form's flash after its redirect (post/redirect/get).
  if (auto done = req.query_param("refunded"); done && !refused)
    body = "<p class=\"card\" role=\"status\" id=\"refund-flash\">" + std::string(say(c->locale, "refund_created")) +
           " " + escape(*done) + "</p>" + body;
  if (c->principal.can_change() && tx.environment == "sandbox" && tx.status == payments::TxStatus::pending &&
      tx.operation == payments::kCollection && tx.connector == "sandbox")
    body += force_form(*c, path("/transactions/" + web::percent_encode(reference) + "/force"));
  body += "</section>";
  if (tx.operation == payments::kCollection) body += refunds_card(*c, tx, refunds, refused, submitted);
  body += "<section class=\"card\" aria-labelledby=\"tl\"><h2 id=\"tl\">" + std::string(say(c->locale, "timeline")) +
          "</h2>" + timeline_list(t, refunds, *c) +
          "</section><section class=\"card\" aria-labelledby=\"le\"><h2 id=\"le\">" +
          std::string(say(c->locale, "ledger_entries")) + "</h2><div class=\"scroll\"><table><thead><tr><th>" +
          std::string(say(c->locale, "journal")) + "</th><th>" + std::string(say(c->locale, "account")) +
          "</th><th class=\"num\">" + std::string(say(c->locale, "debit")) + "</th><th class=\"num\">" +
          std::string(say(c->locale, "credit")) + "</th></tr></thead><tbody>";
  for (const auto& e : t.entries)
    body += "<tr><td>" + escape(e.journal_kind) + "</td><td>" + escape(e.owner + " " + e.kind) +
            "</td><td class=\"num\">" + (e.debit ? escape(money::format(e.debit, e.currency)) : "") +
            "</td><td class=\"num\">" + (e.credit ? escape(money::format(e.credit, e.currency)) : "") + "</td></tr>";
  body += "</tbody></table></div></section><section class=\"card\" aria-labelledby=\"wh\"><h2 id=\"wh\">" +
          std::string(say(c->locale, "webhook_deliveries")) + "</h2>";
  if (deliveries.empty())
    body += "<p class=\"muted\">" + std::string(say(c->locale, "no_delivery")) + "</p>";
  else {
    body += "<div class=\"scroll\"><table id=\"deliveries\"><thead><tr><th>" + std::string(say(c->locale, "date")) +
            "</th><th>URL</th><th>" + std::string(say(c->locale, "status")) + "</th><th>" +
            std::string(say(c->locale, "attempts")) + "</th><th></th></tr></thead><tbody>";
    for (const auto& d : deliveries) {
      body += "<tr><td>" + when(d.created_at, c->zone) + "</td><td>" + escape(d.url) + "</td><td>" + escape(d.status) +
              (d.last_status_code ? " (" + std::to_string(*d.last_status_code) + ")" : "") + "</td><td>" +
              std::to_string(d.attempts) + "</td><td>";
      if (c->principal.can_change())
        body += replay_form(*c, path("/transactions/" + web::percent_encode(reference) + "/redeliver"), d.event_id,
                            d.endpoint_id);
      body += "</td></tr>";
    }
    body += "</tbody></table></div>";
  }
  body += "</section>";
  return page(req, *c, reference, body, refused ? web::http_status(refused->kind) : 200);
}

web::Response Service::redeliver(web::Request& req) {
  auto c = member_context(req, /*changes=*/true);
  if (!c) return error_page(req, c.error());
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  const std::string reference = req.path_param("reference");
  if (auto st = replay(*c, web::field_value(*fields, "event_id"), web::field_value(*fields, "endpoint_id")); !st)
    return error_page(req, st.error());
  return see_other("/transactions/" + web::percent_encode(reference));
}

// ---- payment links -----------------------------------------------------------------------------

web::Response Service::links_page(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  if (!parts_.links) return error_page(req, unavailable(bj::string("payment links not configured")));
  links::tables::ListFilter lf;
  lf.limit = 100;
  auto listed = parts_.links->list_links(web::acting(c->principal), lf);
  if (!listed) return error_page(req, listed.error());
  std::string body;
  if (auto e = req.query_param("created"); e)
    body += "<p class=\"card\" role=\"status\">" + std::string(say(c->locale, "link_created")) + escape(*e) + "</p>";
  if (c->principal.can_change()) {
    body += "<form class=\"card\" method=\"post\" action=\"" + escape(path("/links")) + "\"><h2>" +
            std::string(say(c->locale, "new_link")) + "</h2>" + c->csrf_field() +
            "<div class=\"filters\"><div><label for=\"title\">" + std::string(say(c->locale, "title")) +
            "</label><input id=\"title\" name=\"title\" required maxlength=\"120\"></div><div><label for=\"amount\">" +
            std::string(say(c->locale, "amount_empty_the_payer_chooses")) +
            "</label><input id=\"amount\" name=\"amount\" inputmode=\"decimal\"></div><div><label for=\"currency\">" +
            std::string(say(c->locale, "currency")) +
            "</label><input id=\"currency\" name=\"currency\" required maxlength=\"3\" value=\"XAF\"></div>"
            "<div><label for=\"max_usage\">" +
            std::string(say(c->locale, "payments_allowed_empty_unlimited")) +
            "</label><input id=\"max_usage\" name=\"max_usage\" inputmode=\"numeric\"></div></div><label "
            "for=\"description\">" +
            std::string(say(c->locale, "description")) +
            "</label><input id=\"description\" name=\"description\" maxlength=\"500\"><button>" +
            std::string(say(c->locale, "create_the_link")) + "</button></form>";
  }
  const std::int64_t t = now();
  body += "<div class=\"scroll\"><table id=\"links\"><thead><tr><th>" + std::string(say(c->locale, "title")) +
          "</th><th>" + std::string(say(c->locale, "link")) + "</th><th class=\"num\">" +
          std::string(say(c->locale, "amount")) + "</th><th>" + std::string(say(c->locale, "status")) +
          "</th><th class=\"num\">" + std::string(say(c->locale, "collected")) +
          "</th><th>QR</th><th></th></tr></thead><tbody>";
  for (const auto& link : listed->first) {
    const std::string url = parts_.links->payment_url(link);
    const std::string status(link.status_at(t));
    body += "<tr><td>" + escape(link.title) + "</td><td><a href=\"" + escape(url) + "\">" + escape(link.short_code) +
            "</a></td><td class=\"num\">" +
            (link.amount ? escape(money::format(*link.amount, link.currency)) : std::string(say(c->locale, "open"))) +
            "</td><td>" + badge(status) + "</td><td class=\"num\">" +
            escape(money::format(link.total_collected, link.currency)) + "</td><td><a download href=\"" +
            escape(path("/links/" + web::percent_encode(link.reference) + "/qr.png")) + "\">PNG</a></td><td>";
    if (c->principal.can_change() && status == "ACTIVE")
      body += "<form class=\"inline\" method=\"post\" action=\"" +
              escape(path("/links/" + web::percent_encode(link.reference) + "/disable")) + "\">" + c->csrf_field() +
              "<button class=\"secondary\">" + std::string(say(c->locale, "disable")) + "</button></form>";
    body += "</td></tr>";
  }
  body += "</tbody></table></div>";
  return page(req, *c, std::string(say(c->locale, "payment_links")), body);
}

web::Response Service::link_create(web::Request& req) {
  auto c = member_context(req, /*changes=*/true);
  if (!c) return error_page(req, c.error());
  if (!parts_.links) return error_page(req, unavailable(bj::string("payment links not configured")));
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  // The form's fields become the API's body: the same rules apply (links::parse_new_link).
  bj::object body;
  json::FieldErrors errors;
  std::string currency = web::field_value(*fields, "currency");
  for (char& ch : currency) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  body["currency"] = currency;
  body["title"] = web::field_value(*fields, "title");
  if (auto d = web::field_value(*fields, "description"); !d.empty()) body["description"] = d;
  if (auto a = web::field_value(*fields, "amount"); !a.empty()) {
    auto minor = money::parse_decimal(a, currency);
    if (!minor)
      errors.add("amount", reason::with(Reason::positive_amount_in, "currency", currency));
    else
      body["amount"] = *minor;
  }
  if (auto m = web::field_value(*fields, "max_usage"); !m.empty()) {
    try {
      std::size_t used = 0;
      body["max_usage"] = std::stoll(m, &used);
      if (used != m.size()) throw std::invalid_argument("trailing");
    } catch (...) {
      errors.add("max_usage", Reason::whole_number);
    }
  }
  links::NewLink request = links::parse_new_link(body, now(), errors);
  auto link = parts_.links->create_link(web::acting(c->principal), request, std::move(errors));
  if (!link) return error_page(req, link.error());
  (void)record(*c, c->principal.merchant_id, "link.create", link->reference,
               json::dump(bj::object{{"title", link->title}, {"short_code", link->short_code}}));
  return see_other("/links?created=" + web::percent_encode(link->reference));
}

web::Response Service::link_qr(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  if (!parts_.links) return error_page(req, unavailable(bj::string("payment links not configured")));
  auto link = parts_.links->find(web::acting(c->principal), req.path_param("reference"));
  if (!link) return error_page(req, link.error());
  auto png = links::qr_png(parts_.links->payment_url(*link), 10);
  if (!png) return error_page(req, png.error());
  web::Response res = web::Response::text(200, std::move(*png), "image/png");
  web::html::secure_headers(res);
  res.set("Content-Disposition", "attachment; filename=\"" + link->short_code + ".png\"");
  return res;
}

web::Response Service::link_disable(web::Request& req) {
  auto c = member_context(req, /*changes=*/true);
  if (!c) return error_page(req, c.error());
  if (!parts_.links) return error_page(req, unavailable(bj::string("payment links not configured")));
  const std::string reference = req.path_param("reference");
  auto link = parts_.links->set_status(web::acting(c->principal), reference, links::kDisabled);
  if (!link) return error_page(req, link.error());
  (void)record(*c, c->principal.merchant_id, "link.disable", reference);
  return see_other("/links");
}

// ---- developers: OAuth applications --------------------------------------------------------------

web::Response Service::create_app(web::Request& req, const Ctx& c, std::int64_t merchant_id, std::string_view back) {
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  identity::ClientSpec spec;
  spec.name = web::field_value(*fields, "name");
  spec.confidential = true;
  spec.redirect_uris = identity::split_list(web::field_value(*fields, "redirect_uris"));
  spec.grant_types = {"client_credentials"};
  if (!spec.redirect_uris.empty()) spec.grant_types = {"client_credentials", "authorization_code", "refresh_token"};
  std::vector<std::string> scopes;
  for (const auto& [k, v] : *fields)
    if (k == "scope") scopes.push_back(v);
  if (!scopes.empty()) spec.scopes = scopes;
  spec.merchant_id = merchant_id;
  if (spec.name.empty()) return error_page(req, field_error("name", Reason::required_short));
  identity::CreatedClient created;
  auto wrote = db_.write([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto merchant, merchant::find_by_id(conn, merchant_id));
    if (!merchant) return with_problem(not_found(), "merchant", Reason::not_found_short);
    spec.environment = merchant->environment;
    spec.countries = merchant->countries;
    spec.user_tier = merchant->tier;
    if (auto problems = identity::check_client_spec(spec); !problems.empty()) return problems.status();
    SIKA_ASSIGN_OR_RETURN(created, identity::create_client(conn, opts_.pepper, spec, now()));
    AuditEntry e{0,
                 now(),
                 c.session.row.user_id,
                 c.session.row.email,
                 merchant_id,
                 "oauth_client.create",
                 created.client.client_id,
                 json::dump(bj::object{{"name", spec.name}})};
    return append_audit(conn, e);
  });
  if (!wrote) return error_page(req, wrote.error());
  std::string body =
      "<section class=\"card\" role=\"status\"><h2>" + std::string(say(c.locale, "application_created")) +
      "</h2><p>client_id: <code id=\"client-id\">" + escape(created.client.client_id) + "</code></p><p>" +
      std::string(say(c.locale, "secret_shown_once_copy_it")) + "</p><p class=\"secret\" id=\"client-secret\">" +
      escape(created.client_secret) + "</p><p><a href=\"" + escape(path(back)) + "\">" +
      std::string(say(c.locale, "continue")) + "</a></p></section>";
  return page(req, c, std::string(say(c.locale, "new_application")), body);
}

namespace {
std::string app_form(const Service::Ctx& c, const std::string& action) {
  std::string f =
      "<form class=\"card\" method=\"post\" action=\"" + escape(action) + "\"><h2>" +
      std::string(say(c.locale, "new_oauth_application")) + "</h2>" + c.csrf_field() + "<label for=\"app-name\">" +
      std::string(say(c.locale, "name")) +
      "</label><input id=\"app-name\" name=\"name\" required maxlength=\"100\"><label for=\"redirect_uris\">" +
      std::string(say(c.locale, "redirect_uris_space_separated_optional")) +
      "</label><input id=\"redirect_uris\" name=\"redirect_uris\"><fieldset><legend>Scopes</legend>";
  for (auto s : identity::kApiScopes)
    f += "<label><input type=\"checkbox\" name=\"scope\" value=\"" + std::string(s) +
         "\" checked style=\"width:auto\"> " + std::string(s) + "</label>";
  f += "</fieldset><button>" + std::string(say(c.locale, "create")) + "</button></form>";
  return f;
}

std::string apps_table(const Service::Ctx& c, const std::vector<identity::Client>& apps, const std::string& rotate_base,
                       bool can_change) {
  std::string body = "<div class=\"scroll\"><table id=\"apps\"><thead><tr><th>" + std::string(say(c.locale, "name")) +
                     "</th><th>client_id</th><th>Scopes</th><th>" + std::string(say(c.locale, "redirect_uris")) +
                     "</th><th></th></tr></thead><tbody>";
  for (const auto& a : apps) {
    body += "<tr><td>" + escape(a.name) + "</td><td><code>" + escape(a.client_id) + "</code></td><td>" +
            escape(identity::join_list(a.scopes)) + "</td><td>" + escape(identity::join_list(a.redirect_uris)) +
            "</td><td>";
    if (can_change && a.confidential)
      body += "<form class=\"inline\" method=\"post\" action=\"" +
              escape(rotate_base + "/" + web::percent_encode(a.client_id) + "/rotate") + "\">" + c.csrf_field() +
              "<button class=\"secondary\">" + std::string(say(c.locale, "rotate_secret")) + "</button></form>";
    body += "</td></tr>";
  }
  return body + "</tbody></table></div>";
}
}  // namespace

web::Response Service::developers(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  std::vector<identity::Client> apps;
  std::vector<merchant::KeyInfo> keys;
  auto read = db_.read([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto all, identity::list_clients(conn));
    apps.clear();
    for (auto& a : all)
      if (a.merchant_id == c->principal.merchant_id) apps.push_back(std::move(a));
    SIKA_ASSIGN_OR_RETURN(keys, merchant::list_keys(conn, c->principal.merchant_id));
    return {};
  });
  if (!read) return error_page(req, read.error());
  std::string body = "<section class=\"card\"><h2>" + std::string(say(c->locale, "oauth_applications")) + "</h2>" +
                     apps_table(*c, apps, path("/developers/apps"), c->principal.can_change()) + "</section>";
  if (c->principal.can_change()) body += app_form(*c, path("/developers/apps"));
  body += "<section class=\"card\"><h2>" + std::string(say(c->locale, "api_keys")) + "</h2><p class=\"muted\">" +
          std::string(say(c->locale, "merchant_keys_hosted_checkout_plugins")) +
          "</p><div class=\"scroll\"><table id=\"keys\"><thead><tr><th>" + std::string(say(c->locale, "key")) +
          "</th><th>" + std::string(say(c->locale, "kind")) + "</th><th>" + std::string(say(c->locale, "created_2")) +
          "</th><th>" + std::string(say(c->locale, "revoked")) + "</th><th></th></tr></thead><tbody>";
  for (const auto& k : keys) {
    body += "<tr><td><code>" + escape(k.display_prefix) + "…</code></td><td>" +
            std::string(k.kind == merchant::KeyKind::link ? "link" : "merchant") + "</td><td>" +
            when(k.created_at, c->zone) + "</td><td>" + (k.revoked_at ? when(*k.revoked_at, c->zone) : std::string()) +
            "</td><td>";
    if (c->principal.can_change() && !k.revoked_at)
      body += "<form class=\"inline\" method=\"post\" action=\"" +
              escape(path("/developers/keys/" + std::to_string(k.id) + "/revoke")) + "\">" + c->csrf_field() +
              "<button class=\"secondary\">" + std::string(say(c->locale, "revoke")) + "</button></form>";
    body += "</td></tr>";
  }
  body += "</tbody></table></div>";
  if (c->principal.can_change())
    for (const auto& [kind, label] : kNewKeys)
      body += "<form class=\"inline\" method=\"post\" action=\"" + escape(path("/developers/keys")) + "\">" +
              c->csrf_field() + "<input type=\"hidden\" name=\"kind\" value=\"" + kind + "\"><button>" +
              std::string(label.in(c->locale)) + "</button></form> ";
  body += "</section>";
  return page(req, *c, std::string(say(c->locale, "developers")), body);
}

web::Response Service::app_create(web::Request& req) {
  auto c = member_context(req, /*changes=*/true);
  if (!c) return error_page(req, c.error());
  return create_app(req, *c, c->principal.merchant_id, "/developers");
}

web::Response Service::app_rotate(web::Request& req) {
  auto c = member_context(req, /*changes=*/true);
  if (!c) return error_page(req, c.error());
  const std::string client_id = req.path_param("client_id");
  std::string secret;
  auto wrote = db_.write([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto client, identity::find_client(conn, client_id));
    if (!client || client->merchant_id != c->principal.merchant_id)
      return not_found(bj::object{{"client_id", client_id}});
    SIKA_ASSIGN_OR_RETURN(secret, identity::rotate_client_secret(conn, opts_.pepper, client_id, now()));
    AuditEntry e{0,
                 now(),
                 c->session.row.user_id,
                 c->session.row.email,
                 c->principal.merchant_id,
                 "oauth_client.rotate_secret",
                 client_id,
                 "{}"};
    return append_audit(conn, e);
  });
  if (!wrote) return error_page(req, wrote.error());
  std::string body = "<section class=\"card\" role=\"status\"><p>client_id: <code>" + escape(client_id) +
                     "</code></p><p>" + std::string(say(c->locale, "new_secret_shown_once")) +
                     "</p><p class=\"secret\" id=\"client-secret\">" + escape(secret) + "</p><p><a href=\"" +
                     escape(path("/developers")) + "\">" + std::string(say(c->locale, "continue")) +
                     "</a></p></section>";
  return page(req, *c, std::string(say(c->locale, "new_secret")), body);
}

web::Response Service::key_issue(web::Request& req) {
  auto c = member_context(req, /*changes=*/true);
  if (!c) return error_page(req, c.error());
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  const std::string kind_text = web::field_value(*fields, "kind");
  if (kind_text != "merchant" && kind_text != "link")
    return error_page(req,
                      field_error("kind", Problem(Reason::either_of, {{"first", "merchant"}, {"second", "link"}})));
  const auto kind = kind_text == "link" ? merchant::KeyKind::link : merchant::KeyKind::merchant;
  merchant::IssuedKey issued;
  auto wrote = db_.write([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(issued, merchant::issue_key(conn, opts_.pepper, c->principal.merchant_id, kind,
                                                      c->principal.environment, now()));
    AuditEntry e{0,
                 now(),
                 c->session.row.user_id,
                 c->session.row.email,
                 c->principal.merchant_id,
                 "api_key.issue",
                 std::to_string(issued.id),
                 json::dump(bj::object{{"kind", kind_text}})};
    return append_audit(conn, e);
  });
  if (!wrote) return error_page(req, wrote.error());
  std::string body = "<section class=\"card\" role=\"status\"><p>" +
                     std::string(say(c->locale, "key_shown_once_copy_it")) + "</p><p class=\"secret\" id=\"api-key\">" +
                     escape(issued.key) + "</p><p><a href=\"" + escape(path("/developers")) + "\">" +
                     std::string(say(c->locale, "continue")) + "</a></p></section>";
  return page(req, *c, std::string(say(c->locale, "new_key")), body);
}

web::Response Service::key_revoke(web::Request& req) {
  auto c = member_context(req, /*changes=*/true);
  if (!c) return error_page(req, c.error());
  const std::string id_text = req.path_param("key_id");
  std::int64_t id = 0;
  try {
    std::size_t used = 0;
    id = std::stoll(id_text, &used);
    if (used != id_text.size()) throw std::invalid_argument("trailing");
  } catch (...) {
    return error_page(req, not_found(bj::object{{"key_id", id_text}}));
  }
  auto wrote = db_.write([&](store::Conn& conn) -> Status {
    // Only this merchant's key: another merchant's is not found.
    SIKA_ASSIGN_OR_RETURN(auto keys, merchant::list_keys(conn, c->principal.merchant_id));
    if (std::none_of(keys.begin(), keys.end(), [&](const auto& k) { return k.id == id; }))
      return not_found(bj::object{{"key_id", id_text}});
    SIKA_TRY(merchant::revoke_key(conn, id, now()));
    AuditEntry e{
        0,       now(), c->session.row.user_id, c->session.row.email, c->principal.merchant_id, "api_key.revoke",
        id_text, "{}"};
    return append_audit(conn, e);
  });
  if (!wrote) return error_page(req, wrote.error());
  return see_other("/developers");
}

// ---- team ------------------------------------------------------------------------------------------

web::Response Service::team(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  std::vector<Member> members;
  auto read = db_.read([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(members, list_members(conn, c->principal.merchant_id));
    return {};
  });
  if (!read) return error_page(req, read.error());
  const bool owner = c->principal.role == web::Role::owner;
  std::string body = "<div class=\"scroll\"><table id=\"members\"><thead><tr><th>E-mail</th><th>" +
                     std::string(say(c->locale, "name")) + "</th><th>" + std::string(say(c->locale, "role")) +
                     "</th></tr></thead><tbody>";
  for (const auto& m : members)
    body += "<tr><td>" + escape(m.email) + "</td><td>" + escape(m.name) + "</td><td>" + escape(web::role_name(m.role)) +
            "</td></tr>";
  body += "</tbody></table></div>";
  if (owner) {
    body += "<form class=\"card\" method=\"post\" action=\"" + escape(path("/team")) + "\"><h2>" +
            std::string(say(c->locale, "add_or_change_a_member")) + "</h2>" + c->csrf_field() +
            "<label for=\"email\">E-mail</label><input id=\"email\" name=\"email\" type=\"email\" required>"
            "<label for=\"role\">" +
            std::string(say(c->locale, "role")) + "</label><select id=\"role\" name=\"role\">" +
            option("viewer", "viewer", "") + option("developer", "developer", "") + option("owner", "owner", "") +
            option("none", say(c->locale, "remove"), "") + "</select><button>" + std::string(say(c->locale, "save")) +
            "</button></form>";
  }
  return page(req, *c, std::string(say(c->locale, "team")), body);
}

web::Response Service::team_put(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  if (c->principal.role != web::Role::owner) return error_page(req, not_allowed(Reason::owners_change_team));
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  auto st = put_membership(*c, c->principal.merchant_id, web::field_value(*fields, "email"),
                           web::field_value(*fields, "role"));
  if (!st) return error_page(req, st.error());
  return see_other("/team");
}

Status Service::put_membership(const Ctx& c, std::int64_t merchant_id, std::string_view email,
                               std::string_view role_text) {
  const bool remove = role_text == "none";
  const web::Role role = parse_role(role_text);
  if (!remove && role != web::Role::owner && role != web::Role::developer && role != web::Role::viewer)
    return field_error("role", Reason::member_role_or_none);
  return db_.write([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto user, identity::find_user_by_email(conn, identity::normalize_email(email)));
    if (!user) return with_problem(not_found(), "email", Reason::no_user_email);
    if (user->id == c.session.row.user_id && !c.is_operator()) return field_error("email", Reason::own_role);
    if (remove) {
      SIKA_ASSIGN_OR_RETURN(bool removed, remove_member(conn, user->id, merchant_id));
      if (!removed) return with_problem(not_found(), "email", Reason::not_member);
    } else {
      SIKA_TRY(put_member(conn, user->id, merchant_id, role, now()));
    }
    AuditEntry e{0,
                 now(),
                 c.session.row.user_id,
                 c.session.row.email,
                 merchant_id,
                 remove ? "member.remove" : "member.put",
                 user->email,
                 json::dump(bj::object{{"role", std::string(role_text)}})};
    return append_audit(conn, e);
  });
}

// ---- settings -----------------------------------------------------------------------------------

web::Response Service::settings(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  const bool owner = c->principal.role == web::Role::owner;
  const std::string current = c->session.merchant ? c->session.merchant->time_zone : "";
  const std::string shown = c->zone;
  std::string body = "<div class=\"card\"><h2>" + std::string(say(c->locale, "time_zone")) + "</h2><p>" +
                     std::string(say(c->locale, "the_dashboard_s_and_your")) + "</p><p id=\"time-zone\"><strong>" +
                     escape(shown) + "</strong> (" +
                     escape(tz::offset_label(tz::find(shown) ? tz::find(shown)->offset_minutes : 0)) + ")" +
                     (current.empty() ? std::string(say(c->locale, "your_first_country_s")) : std::string()) + "</p>";
  if (owner) {
    body += "<form method=\"post\" action=\"" + escape(path("/settings")) + "\">" + c->csrf_field() +
            "<label for=\"zone\">" + std::string(say(c->locale, "change_the_zone")) +
            "</label><select id=\"zone\" name=\"time_zone\">" +
            option("", say(c->locale, "my_first_country_s"), current);
    for (const tz::Zone& z : tz::all())
      body += option(z.name, std::string(z.name) + " (" + tz::offset_label(z.offset_minutes) + ")", current);
    body += "</select><button>" + std::string(say(c->locale, "save")) + "</button></form>";
  }
  body += "</div>";
  return page(req, *c, std::string(say(c->locale, "settings")), body);
}

web::Response Service::settings_submit(web::Request& req) {
  auto c = member_context(req, /*changes=*/true);
  if (!c) return error_page(req, c.error());
  if (c->principal.role != web::Role::owner) return error_page(req, not_allowed(Reason::owners_change_settings));
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  const std::string zone = web::field_value(*fields, "time_zone");
  if (!zone.empty() && !tz::find(zone)) return error_page(req, field_error("time_zone", Reason::time_zone_listed));
  auto st = db_.write([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(bool set, merchant::set_time_zone(conn, c->principal.merchant_id, zone));
    if (!set) return not_found(bj::string("no such merchant"));
    AuditEntry e{0,
                 now(),
                 c->session.row.user_id,
                 c->session.row.email,
                 c->principal.merchant_id,
                 "merchant.time_zone",
                 zone.empty() ? std::string("default") : zone,
                 "{}"};
    return append_audit(conn, e);
  });
  if (!st) return error_page(req, st.error());
  return see_other("/settings");
}

}  // namespace sika::dashboard
