#pragma once
// Money movement: collections (PROVIDER through an operator connector, WALLET from a platform
// wallet), their lifecycle, split settlement, disbursements, account-holder verification,
// the hosted confirmation page, operator callbacks and the expiry worker. docs/payments.md
// describes the design; the guarantees are:
//  - every status change, its ledger journal and its outbox event commit in one write unit;
//  - a status moves only along the lifecycle (model.hpp) and only by a conditional UPDATE on
//    the status it was read in, so racing actors (callback, status poll, expiry worker,
//    execute) apply exactly one transition; the losers change nothing;
//  - an intent is idempotent on (merchant, environment, transaction_uuid): the same body gives
//    the same record, a different body 409;
//  - a callback after a terminal status is recorded and moves no money.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "catalog/model.hpp"
#include "core/result.hpp"
#include "payments/connector.hpp"
#include "payments/ledger.hpp"
#include "payments/model.hpp"
#include "payments/sandbox.hpp"
#include "store/db.hpp"
#include "web/client.hpp"
#include "web/message.hpp"

namespace sika::catalog { class Service; }

namespace sika::payments {

// The current catalog snapshot (never null); called on every request, so it must be cheap.
using CatalogSnapshot = std::function<std::shared_ptr<const catalog::Catalog>()>;

struct Options {
  std::string checkout_url;        // {checkout_url}: confirmation pages live at /confirm/{reference}
  std::string callback_base_url;   // {base_url}/operator/callback: the connector name is appended
  std::string secret;              // signs confirmation links and operator callbacks (server-derived)
  std::int64_t intent_ttl_ms = 15 * 60 * 1000;         // INITIATED collections expire after this
  std::int64_t pending_ttl_ms = 5 * 60 * 1000;         // PENDING (submitted) ones after this
  std::int64_t disbursement_ttl_ms = 24 * 3600 * 1000; // PENDING payouts after this
  std::int64_t expiry_interval_ms = 1000;              // how often the expiry worker scans
  int expiry_batch = 500;
  int max_otp_attempts = 3;         // wrong codes before the collection FAILS (INVALID_OTP)
  std::int64_t max_amount = 1'000'000'000'000;  // absolute cap in minor units, whatever the service says
  // Sandbox operator.
  std::string sandbox_otp = "123456";
  std::int64_t sandbox_delay_ms = 1500;
  std::int64_t sandbox_duplicate_delay_ms = 3000;
  std::int64_t sandbox_late_ms = 0;  // 0: pending_ttl_ms + 2 s (after expiry)
  int sandbox_threads = 2;
  std::int64_t sandbox_retry_ms = 500;  // callback redelivery backoff base
  std::function<std::int64_t()> clock;  // epoch ms; now_ms() when empty
};

class Service {
 public:
  Service(store::Db& db, CatalogSnapshot catalog, web::HttpClient& http, Options options);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // --- gateway (JWT-authenticated; req.principal set) ---
  // POST /collection/intent
  web::Response create_intent(web::Request& req);
  // POST /collection/execute {transaction_reference, invoice_reference?, otp?}
  web::Response execute(web::Request& req);
  // POST /collection/status {transaction_reference}
  web::Response status(web::Request& req);
  // POST /collection/cancel {transaction_reference}: INITIATED -> CANCELLED
  web::Response cancel(web::Request& req);
  // POST /disbursement/intent
  web::Response disbursement_intent(web::Request& req);
  // POST /disbursement/status {transaction_reference}
  web::Response disbursement_status(web::Request& req);
  // POST /verification/account-holder {provider, wallet}
  web::Response verify_account(web::Request& req);
  // GET /balance?currency=XAF: the merchant's available and pending balances
  web::Response balances(web::Request& req);

  // --- operator callbacks (gateway, not JWT: the connector authenticates the request) ---
  // POST /operator/callback/{connector}
  web::Response operator_callback(web::Request& req);

  // --- checkout surface (hosted confirmation page) ---
  // GET /confirm/{reference}?sig=...&lang=fr|en
  web::Response confirm_page(web::Request& req);
  // POST /confirm/{reference} (form: sig, otp?, lang?)
  web::Response confirm_submit(web::Request& req);

  // Starts / stops the expiry worker and the sandbox operator's callback delivery.
  void start();
  void stop();

  // Expires every open transaction whose time is up; returns how many this call expired.
  Result<int> expire_due();

  // Credits a customer's platform wallet from outside (operator top-up, demo funding).
  Status fund_wallet(std::string_view environment, std::string_view msisdn, std::string_view currency,
                     std::int64_t amount, std::string_view memo);
  // The balance of a ledger account.
  Result<std::int64_t> account_balance(const ledger::AccountKey& key);

  // The confirmation URL of a transaction reference.
  std::string confirmation_url(std::string_view reference) const;
  // The connector registered under `name`, or nullptr.
  Connector* connector(std::string_view name);
  SandboxOperator& sandbox() { return *sandbox_; }

 private:
  // One requested status change and what it carries.
  struct Move {
    TxStatus to = TxStatus::pending;
    std::string_view source;  // intent | execute | checkout | merchant | callback | poll | expiry | wallet | connector
    std::optional<std::string> reason;
    std::optional<std::string> operator_reference;
    std::optional<std::int64_t> submitted_at;
    std::optional<std::int64_t> expires_at;
  };
  std::int64_t now() const;
  std::shared_ptr<const catalog::Catalog> catalog() const { return catalog_(); }
  web::Response create(web::Request& req, std::string_view operation);
  web::Response show(web::Request& req, std::string_view operation);
  Result<Transaction> load(store::Conn& conn, std::string_view reference);
  Result<Transaction> load_for(const web::Principal& p, std::string_view reference, std::string_view operation);
  Result<Transaction> run_execute(Transaction tx, std::optional<std::string> otp, std::string_view source);
  Result<bool> apply(store::Conn& conn, Transaction& tx, const Move& move, ledger::Learned& learned);
  Result<Transaction> settle_from_operator(Transaction tx, const OperatorStatus& st, std::string_view source);
  Result<Transaction> refresh(Transaction tx);
  Connector* connector_for(const Transaction& tx);
  PaymentOrder order_for(const Transaction& tx, std::optional<std::string> otp = std::nullopt) const;
  Status write(const std::function<Status(store::Conn&, ledger::Learned&)>& fn);
  std::string page_signature(std::string_view reference) const;
  web::Response render_page(const web::Request& req, const Transaction& tx, i18n::Locale locale,
                            std::string_view notice, int status);
  void expiry_loop();

  store::Db& db_;
  CatalogSnapshot catalog_;
  web::HttpClient& http_;
  Options options_;
  ledger::AccountCache accounts_;
  std::unique_ptr<SandboxOperator> sandbox_;
  std::map<std::string, Connector*, std::less<>> connectors_;

  std::mutex worker_mu_;
  std::condition_variable worker_cv_;
  std::thread expiry_thread_;
  bool stopping_ = false;
};

// Adapts the catalog component's service to the snapshot function payments uses.
CatalogSnapshot catalog_snapshot(catalog::Service& catalog);

}  // namespace sika::payments
