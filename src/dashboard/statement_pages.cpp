// A merchant's statements: one currency and one month of its time zone, the balances at both
// ends and the first movements on the page, all of them as CSV (comma, or semicolon with a BOM for
// Excel). Read through statements::Service, scoped to the session's merchant and environment.
#include <boost/json.hpp>

#include "core/money.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "core/time_zone.hpp"
#include "dashboard/internal.hpp"
#include "dashboard/texts.hpp"
#include "payments/queries.hpp"
#include "statements/service.hpp"

namespace sika::dashboard {

namespace bj = boost::json;
using web::html::escape;

namespace {

constexpr std::size_t kShownRows = 200;

// The first and last days (YYYY-MM-DD) of a month written YYYY-MM, or nullopt when it is not one.
std::optional<std::pair<std::string, std::string>> month_days(std::string_view month) {
  if (month.size() != 7) return std::nullopt;
  auto first = parse_iso8601(std::string(month) + "-01T00:00:00Z");
  if (!first || iso8601(*first).substr(0, 7) != month) return std::nullopt;
  // The 1st + 31 days is in the next month; its 1st - 1 day is the last day of this one.
  auto next = parse_iso8601(iso8601(*first + 31 * 86'400'000LL).substr(0, 7) + "-01T00:00:00Z");
  return std::pair{iso8601(*first).substr(0, 10), iso8601(*next - 86'400'000LL).substr(0, 10)};
}

// The statement request of the page's query: its currency and month as from/to, and for the CSV
// its separator. 400 naming `month` when it is not YYYY-MM.
Result<web::Request> statement_request(const web::Request& req, std::string_view month, bool csv) {
  auto days = month_days(month);
  if (!days) return field_error("month", Reason::month_date);
  web::Request q;
  q.method = "GET";
  q.locale = req.locale;
  q.query = {{"currency", req.query_param("currency").value_or("")}, {"from", days->first}, {"to", days->second}};
  if (csv) {
    q.query.emplace_back("format", "csv");
    q.query.emplace_back("separator", req.query_param("separator").value_or(""));
  }
  return q;
}

// The current month in `zone`, YYYY-MM.
std::string this_month(std::string_view zone) {
  auto z = tz::find(zone);
  return iso8601(now_ms() + (z ? z->offset_minutes : 0) * 60'000LL).substr(0, 7);
}

}  // namespace

web::Response Service::statement(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  if (!parts_.statements) return error_page(req, unavailable("statements are not configured"));
  std::vector<payments::queries::CurrencyBalance> balances;
  auto read = db_.read([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(
        balances, payments::queries::merchant_balances(conn, c->principal.merchant_id, c->principal.environment));
    return {};
  });
  if (!read) return error_page(req, read.error());
  const std::string title(say(c->locale, "nav_statements"));
  if (balances.empty())
    return page(req, *c, title, "<p class=\"muted\">" + std::string(say(c->locale, "no_currency_yet")) + "</p>");
  std::string currency = req.query_param("currency").value_or(balances.front().currency);
  const std::string month = req.query_param("month").value_or(this_month(c->zone));
  std::string body = "<form class=\"card\" method=\"get\" action=\"" + escape(path("/statements")) +
                     "\"><div class=\"filters\"><div><label for=\"currency\">" +
                     std::string(say(c->locale, "currency")) + "</label><select id=\"currency\" name=\"currency\">";
  for (const auto& b : balances)
    body += "<option" + std::string(b.currency == currency ? " selected" : "") + ">" + escape(b.currency) + "</option>";
  body +=
      "</select></div><div><label for=\"month\">" + std::string(say(c->locale, "month")) +
      "</label><input id=\"month\" name=\"month\" type=\"month\" pattern=\"[0-9]{4}-[0-9]{2}\" placeholder=\"YYYY-MM\" "
      "value=\"" +
      escape(month) + "\"></div></div><button>" + std::string(say(c->locale, "show")) + "</button></form>";
  auto q = statement_request(req, month, /*csv=*/false);
  if (!q) return error_page(req, q.error());
  q->query[0].second = currency;
  auto head = parts_.statements->head(c->principal.merchant_id, c->principal.environment, *q);
  if (!head) return error_page(req, head.error());
  const std::string query = "currency=" + web::percent_encode(currency) + "&month=" + web::percent_encode(month);
  const std::string excel = "<a id=\"csv-excel\" href=\"" +
                            escape(path("/statements.csv?" + query + "&separator=semicolon")) + "\">" +
                            std::string(say(c->locale, "export_for_excel_csv")) + "</a>";
  const std::string plain = "<a id=\"csv\" href=\"" + escape(path("/statements.csv?" + query)) + "\">" +
                            std::string(say(c->locale, "export_as_csv")) + "</a>";
  body += "<section class=\"card\"><h2>" + std::string(say(c->locale, "statement")) + " " + escape(currency) + " " +
          escape(head->query.from) + " — " + escape(head->query.to) + "</h2><dl><dt>" +
          std::string(say(c->locale, "opening_balance")) + "</dt><dd id=\"opening\">" +
          escape(money::format(head->frame.opening, currency)) + "</dd><dt>" +
          std::string(say(c->locale, "closing_balance")) + "</dt><dd id=\"closing\">" +
          escape(money::format(head->frame.closing, currency)) + "</dd></dl><p>" +
          (c->fr() ? excel + " · " + plain : plain + " · " + excel) + "</p><p class=\"muted\">" +
          std::string(say(c->locale, "statement_times")) + "</p></section>";
  std::string rows;
  std::size_t count = 0;
  auto listed = parts_.statements->for_each(*head, kShownRows + 1, [&](const statements::Movement& m) -> Status {
    if (++count > kShownRows) return {};
    rows += "<tr><td>" + when(m.created_at, c->zone) + "</td><td>" + escape(statements::to_string(m.type)) +
            "</td><td>" + escape(m.reference) + "</td><td class=\"num\">" + escape(money::format(m.gross, currency)) +
            "</td><td class=\"num\">" + escape(money::format(m.fee, currency)) + "</td><td class=\"num\">" +
            escape(money::format(m.net, currency)) + "</td><td class=\"num\">" +
            escape(money::format(m.balance_after, currency)) + "</td></tr>";
    return {};
  });
  if (!listed) return error_page(req, listed.error());
  if (count == 0) {
    body += "<p class=\"muted\">" + std::string(say(c->locale, "no_movement")) + "</p>";
  } else {
    body += "<div class=\"scroll\"><table id=\"movements\"><thead><tr><th>" + std::string(say(c->locale, "date")) +
            "</th><th>" + std::string(say(c->locale, "movement_type")) + "</th><th>" +
            std::string(say(c->locale, "reference")) + "</th><th class=\"num\">" +
            std::string(say(c->locale, "gross")) + "</th><th class=\"num\">" + std::string(say(c->locale, "fee")) +
            "</th><th class=\"num\">" + std::string(say(c->locale, "net")) + "</th><th class=\"num\">" +
            std::string(say(c->locale, "balance_after")) + "</th></tr></thead><tbody>" + rows +
            "</tbody></table></div>";
    if (count > kShownRows)
      body += "<p class=\"muted\">" + std::string(say(c->locale, "first_movements_only")) + "</p>";
  }
  return page(req, *c, title, body);
}

web::Response Service::statement_csv(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  if (!parts_.statements) return error_page(req, unavailable("statements are not configured"));
  auto q = statement_request(req, req.query_param("month").value_or(""), /*csv=*/true);
  if (!q) return error_page(req, q.error());
  auto head = parts_.statements->head(c->principal.merchant_id, c->principal.environment, *q);
  if (!head) return error_page(req, head.error());
  const std::string name = "statement-" + c->principal.merchant + "-" + head->query.currency + "-" +
                           req.query_param("month").value_or("") + ".csv";
  web::Response res =
      web::Response::streamed(200, "text/csv; charset=utf-8", parts_.statements->csv_body(std::move(*head)));
  web::html::secure_headers(res);
  res.set("Content-Disposition", "attachment; filename=\"" + name + "\"");
  return res;
}

}  // namespace sika::dashboard
