#pragma once
// Merchant statements (docs/statements.md): GET {base_url}/statements, JSON or CSV, streamed a
// keyset page at a time so that a month of any size is answered in flat memory; the dashboard
// shows and downloads the same statement.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "statements/model.hpp"
#include "statements/queries.hpp"
#include "statements/settlement.hpp"
#include "store/db.hpp"
#include "web/message.hpp"

namespace sika::statements {

struct Options {
  int page_rows = 2000;  // movements read per read unit while streaming
};

// A statement's head: what is known before its movements are listed.
struct Head {
  Query query;
  std::string time_zone;
  payments::ledger::AccountKey account;
  queries::Frame frame;
};

class Service {
 public:
  explicit Service(store::Db& db, Options options = {});

  // GET /statements?currency=&from=&to=&format=json|csv&separator=comma|semicolon (JWT, payments)
  Result<web::Response> statement(web::Request& req);

  // --- operations (the dashboard's too) ---
  // The head of the statement asked by `req`'s query for a merchant in an environment: the
  // merchant's zone, the query read in it, the balances at both ends (400 on a bad query).
  Result<Head> head(std::int64_t merchant_id, const std::string& environment, const web::Request& req);
  // Calls `each` with the statement's first `max_rows` movements in order, one read unit per page.
  Status for_each(const Head& head, std::size_t max_rows, const std::function<Status(const Movement&)>& each);
  // The statement's CSV body (header row, then one row per movement), produced a page per call.
  web::BodyProducer csv_body(Head head);
  // The statement's JSON envelope for `req` (data: currency, from, to, opening_balance,
  // closing_balance, movements), its movements produced a page per call.
  web::BodyProducer json_body(const web::Request& req, Head head);

  // Settlement (docs/settlement.md), one write unit each: the batch of (settings' merchant,
  // environment, currency; period) when this call made it (nullopt: the period's batch exists,
  // or there is nothing above the minimum to settle); a PENDING batch marked paid.
  Result<std::optional<settlement::Batch>> settle(const settlement::Settings& settings, const std::string& period,
                                                  std::int64_t now);
  Result<bool> mark_paid(const std::string& reference, std::int64_t now);

 private:
  // Produces the movements a page per call: `row` writes one, `between` is written between two.
  web::BodyProducer movements_body(Head head, std::string first, std::string between, std::string last,
                                   std::function<void(const Movement&, std::string&)> row);

  store::Db& db_;
  Options options_;
};

}  // namespace sika::statements
