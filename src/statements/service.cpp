#include "statements/service.hpp"

#include <boost/json.hpp>

#include "core/json.hpp"
#include "core/time_zone.hpp"
#include "merchant/merchant.hpp"
#include "statements/settlement.hpp"
#include "web/envelope.hpp"

namespace sika::statements {

namespace bj = boost::json;

Service::Service(store::Db& db, Options options)
    : db_(db), reads_(options.reads != nullptr ? *options.reads : db), options_(std::move(options)) {}

Result<Head> Service::head(std::int64_t merchant_id, const std::string& environment, const web::Request& req) {
  Head h;
  std::optional<merchant::Merchant> m;
  SIKA_TRY(reads_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(m, merchant::find_by_id(c, merchant_id));
    return {};
  }));
  if (!m) return not_found();
  h.time_zone = merchant::time_zone_of(*m);
  const auto zone = tz::find(h.time_zone);
  SIKA_ASSIGN_OR_RETURN(h.query, parse_query(req, zone ? zone->offset_minutes : 0));
  h.account = payments::ledger::merchant_available(merchant_id, environment, h.query.currency);
  SIKA_TRY(reads_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(h.frame, queries::frame(c, h.account, h.query.start_ms, h.query.end_ms));
    return {};
  }));
  return h;
}

Status Service::for_each(const Head& h, std::size_t max_rows, const std::function<Status(const Movement&)>& each) {
  if (!h.frame.account_id) return {};
  std::optional<queries::Cursor> after;
  std::int64_t balance = h.frame.opening;
  for (std::size_t listed = 0;;) {
    std::vector<EntryRow> rows;
    SIKA_TRY(reads_.read([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(rows, queries::entries(c, *h.frame.account_id, h.query.start_ms, h.query.end_ms,
                                                   h.frame.last_entry_id, after, options_.page_rows));
      return {};
    }));
    for (auto& r : rows) {
      if (listed++ == max_rows) return {};
      r.settled_at = h.frame.settled_at(r.id);
      Movement m = movement_of(r, balance);
      balance = m.balance_after;
      SIKA_TRY(each(m));
    }
    if (rows.size() < static_cast<std::size_t>(options_.page_rows)) return {};
    after = queries::Cursor{rows.back().created_at, rows.back().id};
  }
}

web::BodyProducer Service::movements_body(Head h, std::string first, std::string between, std::string last,
                                          std::function<void(const Movement&, std::string&)> row) {
  struct State {
    std::optional<queries::Cursor> after;
    std::int64_t balance = 0;
    bool started = false, any = false, done = false;
  };
  auto state = std::make_shared<State>();
  state->balance = h.frame.opening;
  return [this, h = std::move(h), state, first = std::move(first), between = std::move(between), last = std::move(last),
          row = std::move(row)](std::string& out) -> Result<bool> {
    if (!state->started) {
      state->started = true;
      out += first;
      if (!h.frame.account_id) state->done = true;
    }
    if (!state->done) {
      std::vector<EntryRow> rows;
      SIKA_TRY(reads_.read([&](store::Conn& c) -> Status {
        SIKA_ASSIGN_OR_RETURN(rows, queries::entries(c, *h.frame.account_id, h.query.start_ms, h.query.end_ms,
                                                     h.frame.last_entry_id, state->after, options_.page_rows));
        return {};
      }));
      for (auto& r : rows) {
        r.settled_at = h.frame.settled_at(r.id);
        Movement m = movement_of(r, state->balance);
        state->balance = m.balance_after;
        if (state->any) out += between;
        state->any = true;
        row(m, out);
      }
      state->done = rows.size() < static_cast<std::size_t>(options_.page_rows);
      if (!rows.empty()) state->after = queries::Cursor{rows.back().created_at, rows.back().id};
    }
    if (state->done) out += last;
    return !state->done;
  };
}

web::BodyProducer Service::csv_body(Head h) {
  const web::csv::Format f = h.query.format;
  std::string header = csv_header(f);
  return movements_body(std::move(h), std::move(header), "", "",
                        [f](const Movement& m, std::string& out) { out += csv_row(m, f); });
}

web::BodyProducer Service::json_body(const web::Request& req, Head h) {
  bj::object data;
  data["currency"] = h.query.currency;
  data["from"] = h.query.from;
  data["to"] = h.query.to;
  data["opening_balance"] = h.frame.opening;
  data["closing_balance"] = h.frame.closing;
  data["movements"] = bj::array();
  // The envelope ends with data, and data with its movements: everything before their "]" is
  // written first, then the movements, then the closing "]}}".
  std::string envelope = web::ok(req, std::move(data)).body;
  constexpr std::string_view kTail = "]}}";
  std::string first = envelope.substr(0, envelope.size() - kTail.size());
  return movements_body(std::move(h), std::move(first), ",", std::string(kTail),
                        [](const Movement& m, std::string& out) { json::dump_to(bj::value(to_json(m)), out); });
}

Result<std::optional<settlement::Batch>> Service::settle(const settlement::Settings& settings,
                                                         const std::string& period, std::int64_t now) {
  std::optional<settlement::Batch> made;
  payments::ledger::Learned learned;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    learned.clear();
    SIKA_ASSIGN_OR_RETURN(made, settlement::settle(c, settings, period, now, learned));
    return {};
  }));
  return made;
}

Result<bool> Service::mark_paid(const std::string& reference, std::int64_t now) {
  bool paid = false;
  payments::ledger::Learned learned;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    learned.clear();
    SIKA_ASSIGN_OR_RETURN(paid, settlement::mark_paid(c, reference, now, learned));
    return {};
  }));
  return paid;
}

Result<web::Response> Service::statement(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(auto principal, web::merchant_caller(req));
  SIKA_ASSIGN_OR_RETURN(Head h, head(principal->merchant_id, principal->environment, req));
  if (!h.query.csv)
    return web::Response::streamed(200, "application/json; charset=utf-8", json_body(req, std::move(h)));
  const std::string name =
      "statement-" + principal->merchant + "-" + h.query.currency + "-" + h.query.from + "-" + h.query.to + ".csv";
  web::Response res = web::Response::streamed(200, "text/csv; charset=utf-8", csv_body(std::move(h)));
  res.set("Content-Disposition", "attachment; filename=\"" + name + "\"");
  return res;
}

}  // namespace sika::statements
