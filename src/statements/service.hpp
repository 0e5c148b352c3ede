#pragma once
// Merchant statements (docs/statements.md): GET {base_url}/statements, JSON or CSV, streamed a
// keyset page at a time so that a month of any size is answered in flat memory; the dashboard
// shows and downloads the same statement.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/periodic.hpp"
#include "core/result.hpp"
#include "statements/model.hpp"
#include "statements/queries.hpp"
#include "statements/settlement.hpp"
#include "store/db.hpp"
#include "store/job_runner.hpp"
#include "web/message.hpp"

namespace sika::payments {
class Service;
}

namespace sika::statements {

struct Options {
  int page_rows = 2000;  // movements read per read unit while streaming
  // Settlement (docs/settlement.md): how often each node looks for due periods (enqueued as
  // leased jobs) and for mobile-money batches whose payout ended; the platform's bank account
  // that pays bank batches (the debtor of pain.001 files).
  std::int64_t settlement_interval_ms = 60'000;
  std::int64_t payout_watch_interval_ms = 1'000;
  std::int64_t payout_retry_after_ms = 60'000;  // a batch still without payout after this is paid out again
  std::string debtor_name = "Sika", debtor_iban, debtor_bic;
  std::function<std::int64_t()> clock;  // epoch ms; now_ms() when empty
  // Where statements are read (a read replica, database.read_url); null: the database itself.
  store::Db* reads = nullptr;
};

// The queue of scheduled settlements: one job per (merchant, environment, currency, period).
inline constexpr std::string_view kSettleQueue = "settlement.settle";

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

  // --- settlement made usable (settlement_service.cpp) ---
  // Pays mobile-money batches out through `payments` (create_disbursement); set before start().
  void attach_payments(payments::Service* payments) { payments_ = payments; }
  // Registers the settle job's handler; start() then schedules due periods on every node.
  void register_jobs(store::JobRunner& runner);
  void start();
  void stop();
  // The owner's settings (checked: 400 empty_data naming each field) stored; the reserve kept.
  Result<settlement::Settings> put_settings(settlement::Settings s, std::int64_t now);
  // An operator sets the reserve of (merchant, environment, currency): 404 naming currency when
  // the merchant has no settings in it; 400 naming amount below zero.
  Status set_reserve(std::int64_t merchant_id, const std::string& env, const std::string& currency,
                     std::int64_t reserve);
  // Settles (merchant, environment, currency) for `period` (settle) and, for a mobile-money
  // destination, creates its payout. nullopt: nothing to settle, or the period's batch exists.
  Result<std::optional<settlement::Batch>> settle_and_pay(std::int64_t merchant_id, const std::string& env,
                                                          const std::string& currency, const std::string& period);
  // A settlement asked by the merchant now (period `R` + a random id): 404 naming currency without
  // settings, 409 nothing_to_settle when nothing above the minimum is available.
  Result<settlement::Batch> settle_now(std::int64_t merchant_id, const std::string& env, const std::string& currency);
  // Enqueues the settle job of every DAILY or WEEKLY setting's due period (idempotent on the
  // job's key: any number of nodes enqueue it once). Returns how many were new.
  Result<int> schedule_due();
  // Finishes the mobile-money batches whose payout ended (PAID, or FAILED) and pays out again
  // those left without payout. Returns how many it handled.
  Result<int> watch_payouts();
  // The pain.001 file of the environment's PENDING bank batches ("" body when there are none).
  Result<std::pair<std::string, std::size_t>> bank_file(const std::string& env);

 private:
  // Produces the movements a page per call: `row` writes one, `between` is written between two.
  web::BodyProducer movements_body(Head head, std::string first, std::string between, std::string last,
                                   std::function<void(const Movement&, std::string&)> row);

  std::int64_t now() const;
  // Creates the payout of a PENDING mobile-money batch; a refusal fails the batch (money back).
  Status pay_out(const settlement::Batch& b);

  store::Db& db_;
  store::Db& reads_;  // statements' reads (options.reads, else db_)
  Options options_;
  payments::Service* payments_ = nullptr;
  std::unique_ptr<Periodic> scheduler_, watcher_;
  store::JobRunner* jobs_ = nullptr;
};

}  // namespace sika::statements
