#pragma once
// Money movement: collections (PROVIDER through an operator connector, WALLET from a platform
// wallet), their lifecycle, split settlement, disbursements, account-holder verification,
// the hosted confirmation page, operator callbacks and the expiry worker. docs/payments.md
// describes the design ("Code map": intent.hpp plans, transitions.hpp moves, store.hpp and
// queries.hpp read and write); the guarantees are:
//  - every status change, its ledger journal and its outbox event commit in one write unit
//    (transition(), the only code that changes a status);
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
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "catalog/model.hpp"
#include "core/acting.hpp"
#include "core/json.hpp"
#include "core/periodic.hpp"
#include "core/result.hpp"
#include "payments/connector.hpp"
#include "payments/health.hpp"
#include "payments/intent.hpp"
#include "payments/ledger.hpp"
#include "payments/model.hpp"
#include "payments/operator_calls.hpp"
#include "payments/operator_gate.hpp"
#include "payments/refund.hpp"
#include "payments/refund_transitions.hpp"
#include "payments/sandbox.hpp"
#include "payments/transitions.hpp"
#include "store/db.hpp"
#include "web/client.hpp"
#include "web/message.hpp"

namespace sika::catalog {
class Service;
}
namespace sika::otp {
class Service;
}
namespace sika::limits {
class Limiter;
}

namespace sika::payments {

namespace tables {
struct StatusCheckRow;
struct RefundFilter;
}  // namespace tables

// The current catalog snapshot (never null); called on every request, so it must be cheap.
using CatalogSnapshot = std::function<std::shared_ptr<const catalog::Catalog>()>;

struct Options {
  std::string checkout_url;                     // {checkout_url}: confirmation pages live at /confirm/{reference}
  std::string callback_base_url;                // {base_url}/operator/callback: the connector name is appended
  std::string secret;                           // signs confirmation links and operator callbacks (server-derived)
  std::int64_t intent_ttl_ms = 15 * 60 * 1000;  // INITIATED collections expire after this
  std::int64_t pending_ttl_ms = 5 * 60 * 1000;  // PENDING (submitted) ones after this
  std::int64_t disbursement_ttl_ms = 24 * 3600 * 1000;  // PENDING payouts after this
  std::int64_t expiry_interval_ms = 1000;               // how often the expiry worker scans
  int expiry_batch = 500;
  int max_otp_attempts = 3;                     // wrong codes before the collection FAILS (INVALID_OTP)
  bool refuse_other_operator_numbers = true;    // prod: a number of another operator's block is refused
  std::int64_t max_amount = 1'000'000'000'000;  // absolute cap in minor units, whatever the service says
  // Issues and checks the WALLET channel's one-time codes (sent through the notifier); without
  // it a WALLET collection that needs a code cannot be executed (503).
  otp::Service* otp = nullptr;
  // Sandbox operator.
  std::string sandbox_otp = "123456";
  std::int64_t sandbox_delay_ms = 1500;
  std::int64_t sandbox_duplicate_delay_ms = 3000;
  std::int64_t sandbox_late_ms = 0;  // 0: pending_ttl_ms + 2 s (after expiry)
  int sandbox_threads = 2;
  std::int64_t sandbox_retry_ms = 500;      // callback redelivery backoff base
  std::int64_t sandbox_query_delay_ms = 0;  // how long the sandbox operator takes to answer a status query
  // Recovery of pending payments (recovery.cpp; docs/payments.md, "Recovery of pending payments"):
  // a PENDING transaction at an operator is first asked about recovery_delays_ms[0] after it was
  // submitted, then after each answer that is not final the next delay (the last one repeating),
  // until its operator gives a final answer or its expiry applies.
  std::vector<std::int64_t> recovery_delays_ms = {5'000, 15'000, 60'000, 300'000, 900'000};
  std::int64_t recovery_interval_ms = 1000;  // how often each node looks for due questions
  std::int64_t recovery_lease_ms = 60'000;   // a claimed question is this node's alone for this long
  int recovery_batch = 50;                   // questions claimed at once
  std::string node_id;                       // claim owner prefix; store::make_node_id() when empty
  std::function<std::int64_t()> clock;       // epoch ms; now_ms() when empty
  // Operator calls and health (docs/payments.md, "Operator health"): where connectors report their
  // calls (call_sink()), and the health that refuses collections of a CLOSED connector and holds
  // payouts (queued, funds reserved) while their connector is not OPERATIONAL. Null: none.
  OperatorCallSink* calls = nullptr;
  Health* health = nullptr;
  // The rate limit shared by every node (prompt_again); null: prompts are never sent again.
  limits::Limiter* limiter = nullptr;
  std::int64_t prompt_again_interval_ms = 30'000;
  std::int64_t payout_send_interval_ms = 1000;  // how often queued payouts are looked for
  int payout_send_batch = 20;                   // queued payouts sent at once per node
  // Request threads that may wait on operators at once (OperatorGate); 0: no limit.
  int operator_request_threads = 0;
};

class Service {
 public:
  Service(store::Db& db, CatalogSnapshot catalog, web::HttpClient& http, Options options);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // --- HTTP handlers (handlers.cpp, page.cpp): parse, call one operation below, answer ---
  // Gateway (JWT-authenticated; req.principal set).
  // POST /collection/intent
  Result<web::Response> create_intent(web::Request& req);
  // POST /collection/execute {transaction_reference, invoice_reference?, otp?}
  Result<web::Response> execute(web::Request& req);
  // POST /collection/status {transaction_reference}
  Result<web::Response> status(web::Request& req);
  // POST /collection/cancel {transaction_reference}: INITIATED -> CANCELLED
  Result<web::Response> cancel(web::Request& req);
  // POST /disbursement/intent
  Result<web::Response> disbursement_intent(web::Request& req);
  // POST /disbursement/status {transaction_reference}
  Result<web::Response> disbursement_status(web::Request& req);
  // POST /verification/account-holder {provider, wallet}
  Result<web::Response> verify_account(web::Request& req);
  // GET /balance?currency=XAF: the merchant's available and pending balances
  Result<web::Response> balances(web::Request& req);
  // POST /transactions/fees/quote {provider, amount, currency, feeBearer?}: what a collection
  // would cost, from the same price as the payment (price_operation); moves nothing.
  Result<web::Response> fee_quote(web::Request& req);
  // POST /collection/refund, POST /collection/refund/status {refund_reference}, GET /refunds
  // (refund_handlers.cpp; docs/refunds.md).
  Result<web::Response> create_refund(web::Request& req);
  Result<web::Response> refund_status(web::Request& req);
  Result<web::Response> refunds(web::Request& req);
  // GET /sandbox/messages?phone=&limit=: the outbox messages of the sandbox sent to a number,
  // newest first; sandbox merchants only (others: 404).
  Result<web::Response> sandbox_messages(web::Request& req);
  // Operator callbacks (gateway, not JWT: the connector authenticates the request).
  // POST /operator/callback/{connector}
  Result<web::Response> operator_callback(web::Request& req);
  // Checkout surface (hosted confirmation page).
  // GET /confirm/{reference}?sig=...&lang=fr|en
  web::Response confirm_page(web::Request& req);
  // POST /confirm/{reference} (form: sig, otp?, lang?)
  web::Response confirm_submit(web::Request& req);

  // Digits of the platform's one-time codes (otp.code_length): an `otp` sent as a JSON integer is
  // left-padded with zeros to it (otp/code.hpp).
  int otp_code_length() const;

  // --- operations, for the handlers and for other components' flows (payment links,
  // hosted checkout, subscriptions) that create and drive collections themselves ---

  // Runs inside the write unit that creates a new collection (or payout), after its row is
  // written and before the unit commits (a payment link takes one of its uses here); an error
  // aborts the creation and nothing of the unit remains. It may run more than once (a retried
  // unit) and is not called for a replay of an existing transaction_uuid.
  using CreationStep = std::function<Status(store::Conn&, const Transaction&)>;
  // What a preauthorized charge's check decides inside the charge's unit: go on (nullopt), or
  // refuse: the new collection is then CANCELLED with `reason` in that same unit and `error` is
  // the answer. An error returned by the check aborts the unit instead: nothing of it remains.
  struct Refusal {
    std::string reason;
    Error error;
  };
  // Runs once per run of the unit, after the collection's row is written and before anything
  // moves; `covered` says whether the wallet's balance covers required_total. When it does not,
  // the check must take nothing: the collection then FAILS (INSUFFICIENT_FUNDS) unless refused.
  using ChargeCheck = std::function<Result<std::optional<Refusal>>(store::Conn&, const Transaction&, bool covered)>;

  // How a collection is made (docs/payments.md, "Making a collection"): who the payer is now.
  //  - absent: an intent (INITIATED), `step` in its creating unit; the merchant (or the caller's
  //    own flow) executes it later with execute_collection / execute_preauthorized. A WALLET one
  //    that needs a code has it sent to the customer once the unit committed.
  //  - present: the payer is on our page and the collection is pushed at once (payment links,
  //    hosted checkout, subscription cycles, wallet top-ups). A PROVIDER collection whose service
  //    needs no code is created already submitted (PENDING) in the very unit that creates it,
  //    `step` inside, then the operator is asked: one write unit where absent + execute_collection
  //    take two. Otherwise it is created (with `step`), then executed with `otp`.
  //  - preauthorized: a `preauthorized` WALLET collection (the customer consented beforehand)
  //    created and debited in ONE write unit: its row, `check` (a consent's budget, a link's use),
  //    the debit with both status moves, their journal and outbox events, all or nothing.
  // `source` names who moves it (history rows). `step` belongs to absent and present payers,
  // `check` to a preauthorized one: given to another payer either is a misuse, refused (500
  // internal) before anything is written, as is a payout request.
  enum class Payer { absent, present, preauthorized };
  struct How {
    Payer payer = Payer::absent;
    std::optional<std::string> otp;  // present: the code the payer typed, if any
    std::string source;              // owned: collect_async's unit runs after the caller returned
    CreationStep step;
    ChargeCheck check;
    // The payers spelled at the call (How{} is an absent payer without a step).
    static How absent(CreationStep step) {
      How how;
      how.step = std::move(step);
      return how;
    }
    static How present(std::optional<std::string> otp, std::string source, CreationStep step = {}) {
      How how;
      how.payer = Payer::present;
      how.otp = std::move(otp);
      how.source = std::move(source);
      how.step = std::move(step);
      return how;
    }
    static How preauthorized(ChargeCheck check, std::string source) {
      How how;
      how.payer = Payer::preauthorized;
      how.source = std::move(source);
      how.check = std::move(check);
      return how;
    }
  };
  // Makes a collection for `merchant` (its merchant_id, environment, user tier and granted
  // countries) as `how` says. Idempotent on (merchant, environment, transaction_uuid): the same
  // request gets the existing transaction back (409 conflict when the request differs), `step`
  // and `check` not run again; an absent payer's replay is the record as stored, a present
  // payer's is the transaction as it is now (executed with `otp` when it still waits for a code),
  // a preauthorized one's (a concurrent one too) is the transaction as it is, an INITIATED one
  // debited in the unit. Errors as plan_intent (intent.hpp), the step, the check and
  // execute_collection; field problems are added to `errors` (the gateway's parse).
  Result<Transaction> collect(const IntentRequest& request, const Acting& merchant, const How& how,
                              json::FieldErrors errors = {});
  // collect without blocking on the write: the same plan, draft and unit, and `done` gets the
  // outcome on the database's completer thread when writes are asynchronous (Db::write_async), so
  // it must not block. It serves what needs nothing blocking after the commit: an absent payer's
  // PROVIDER collection (POST /collection/intent) and a preauthorized charge; a present payer
  // (the operator is asked after the commit) or an absent payer's WALLET collection (its code is
  // sent after the commit) is a misuse, answered 500 internal with nothing written.
  void collect_async(IntentRequest request, const Acting& merchant, How how, json::FieldErrors errors,
                     std::function<void(Result<Transaction>)> done);
  // A page of present payers at once (a billing run): every collection is created already
  // submitted (PENDING), with its step, in ONE write unit for the page, each item all or nothing
  // inside it (a refused item leaves nothing and the others commit); then each new one is asked
  // of its operator. Only PROVIDER collections whose service needs no code (others are refused,
  // 500, before anything is written). One result per item, in order; a replay of an item's
  // transaction_uuid returns that transaction as it is now, its step not run.
  // On PostgreSQL the unit runs at READ COMMITTED (store::counter_isolation): a step's decisions
  // must be UNIQUE constraints or conditional writes, never a value it read.
  struct PresentPayer {
    IntentRequest request;
    Acting merchant;
    CreationStep step;
  };
  std::vector<Result<Transaction>> collect_page(const std::vector<PresentPayer>& payers, std::string_view source);
  // The second step of an absent payer's collection. Executes an INITIATED collection: PROVIDER
  // claims it (PENDING) then submits it to the operator (a refusal FAILS it); WALLET debits the
  // customer's wallet at once (COMPLETED, or FAILED INSUFFICIENT_FUNDS). `otp` is required when
  // tx.needs_otp; wrong codes are 400 invalid_otp and the last allowed one FAILS it. An expired or
  // non-INITIATED one is 409.
  Result<Transaction> execute_collection(Transaction tx, std::optional<std::string> otp, std::string_view source);
  // Executes an INITIATED `preauthorized` WALLET collection (no code). `authorize` runs inside
  // the debit's write unit once the balance is known to cover required_total, before anything
  // moves (e.g. taking a consent's budget); its error aborts the unit (nothing moves, the
  // collection stays INITIATED) and is returned. A short balance FAILS the collection
  // (INSUFFICIENT_FUNDS) without calling it. 409 when the collection is not such a one.
  using WalletAuthorization = std::function<Status(store::Conn&)>;
  Result<Transaction> execute_preauthorized(Transaction tx, const WalletAuthorization& authorize,
                                            std::string_view source);
  // The plan collect would make of `request` for `merchant` now (channel, service, fee,
  // required_total), writing nothing: what a page shows before the payer pays, and how a
  // caller learns the channel AUTO resolves to.
  Result<IntentPlan> plan(const IntentRequest& request, const Acting& merchant) {
    return plan_for(request, merchant, {});
  }

  // Creates a payout: its funds reserved (PENDING, then submitted to the operator) or paid at
  // once (WALLET, COMPLETED); 400 insufficient_funds naming amount, with nothing stored, when
  // the merchant's available balance does not cover required_total.
  // `step` (when set) runs in the creating unit of a new payout before its funds are reserved
  // (a wallet link takes its consent's budget there).
  Result<Transaction> create_disbursement(const IntentRequest& request, const Acting& merchant,
                                          const CreationStep& step = {});
  // The transaction of `reference` as `merchant` may see it: another merchant's, another
  // environment's or another operation's is 404 naming transaction_reference.
  Result<Transaction> find(const Acting& merchant, std::string_view reference, std::string_view operation);
  // --- refunds (refunds.cpp; docs/refunds.md) ---
  // Refunds (part of) a COMPLETED collection of `merchant`: in ONE write unit the refund's row
  // (idempotent on refund_uuid; one in flight per collection, by the database), the amount reserved
  // on the collection by a conditional UPDATE, and the merchant's funds reserved (REFUND_RESERVE);
  // a WALLET collection's refund completes in that unit (the wallet credited). Otherwise the refund is
  // then asked of the operator (its refund API, or a payout to the payer's number). Errors: 404
  // another merchant's collection; 409 not_refundable, refund_in_progress, insufficient_funds, or
  // naming refund_uuid (reused for another body); 400 naming amount beyond what is refundable.
  // `on_created`, when given, runs inside that write unit once the refund is created (never for a
  // replay of its refund_uuid): what it writes commits with the refund or not at all (the
  // dashboard's audit entry); its error refuses the whole unit.
  using RefundCreated = std::function<Status(store::Conn&, const Refund&)>;
  Result<Refund> refund(const RefundRequest& request, const Acting& merchant, const RefundCreated& on_created = {});
  // The refund of `reference` as `merchant` may see it (another merchant's: 404 naming refund_reference).
  Result<Refund> find_refund(const Acting& merchant, std::string_view reference);
  // One page of `merchant`'s refunds, newest first, and how many match in all (the filter's
  // merchant_id and environment are the principal's).
  Result<std::pair<std::vector<Refund>, std::int64_t>> list_refunds(const Acting& merchant,
                                                                    tables::RefundFilter filter);
  // Recovery of refunds in flight: as recover_due for transactions (same claim pattern, back-off and
  // rules); returns how many questions it asked.
  Result<int> recover_refunds_due();
  // Reconciliation (docs/reconciliation.md): the open status mismatches whose payment is final
  // here are asked about again through the connector's status API, each claimed by one node at a
  // time (a conditional UPDATE of recon_items.live_check_at to the lease's end). The live answer
  // is recorded on the item; one that agrees with Sika resolves it (the statement was stale), one
  // that confirms the statement leaves it open for an operator's decision. Never a transition:
  // money leaves a final state only by the operator's audited adjustment. Returns how many it asked.
  Result<int> ask_about_final_mismatches();

  // Moves an INITIATED collection to CANCELLED; 409 when it is in another status.
  Result<Transaction> cancel_collection(const Transaction& tx, std::string_view source, std::string_view reason);
  // The transaction as it is now: expired on the spot when overdue, and a PENDING PROVIDER
  // one asks its operator and applies a final answer (`source` names who asked).
  Result<Transaction> current(Transaction tx, std::string_view source);

  // The holder of a wallet at an operator's service, as its connector knows it (404
  // account_not_found when there is none). Field problems in 400 empty_data, together with
  // those already in `errors`; a country not granted is 403 access_denied naming provider.
  struct AccountHolder {
    std::string service_code;
    std::string msisdn;  // normalized, international digits
    std::string name;
  };
  Result<AccountHolder> account_holder(const Acting& merchant, std::string_view provider, std::string_view wallet,
                                       json::FieldErrors errors = {});

  // Records an authenticated operator callback and applies a final answer to a PENDING
  // transaction of that connector; returns the outcome (docs/payments.md, "Callbacks").
  // `verified`: the operator's answer to a status query made on receipt of an unsigned callback
  // (Connector::signs_callbacks false); such a callback moves money only by that answer, and one
  // that could not be verified marks its transaction to be asked at once by recovery.
  Result<std::string> record_callback(Connector& conn, const CallbackReport& report, std::string_view body,
                                      const std::optional<OperatorStatus>& verified = std::nullopt);
  // The operator's own answer about the transaction an unsigned callback names, when that
  // transaction is PENDING at `conn`; nullopt when there is nothing to verify or no answer came.
  std::optional<OperatorStatus> verify_callback(Connector& conn, const CallbackReport& report);
  // Connector::authenticate_callback with the transaction the report names at `conn` (none: null).
  Status authenticate_callback(Connector& conn, const web::Request& req, const CallbackReport& report);
  // Sends the prompt of a PENDING collection to the customer's phone again (Connector::prompt_again),
  // at most once per prompt_again_interval_ms per transaction on every node (the shared limiter):
  // 429 rate_limited before that, 409 when the collection is not PENDING, 503 when its connector
  // has no such call.
  Status prompt_again(const Transaction& tx);

  // Starts / stops the expiry worker and the sandbox operator's callback delivery.
  void start();
  void stop();

  // Expires every open transaction whose time is up; returns how many this call expired.
  Result<int> expire_due();

  // Recovery of pending payments (recovery.cpp): claims the PENDING transactions whose next
  // question is due (each held by one claim at a time, whatever the number of nodes), asks each
  // its connector's query_status, and applies a final answer through transition() (ledger and
  // outbox in the same unit); any other answer (pending, an error, no connector) schedules the
  // next question by the back-off of recovery_delays_ms. Returns how many questions it asked.
  Result<int> recover_due();
  Transaction keep_accepted(Transaction tx, Connector& conn);
  // How the customer approves a collection on its confirmation page (page.cpp).
  struct Way {
    bool redirect = false, in_app = false, prompt = false, has_url = false;
    std::string operator_name;
  };
  Way way_of(const Transaction& tx);
  std::optional<OperatorStatus> ask_recovery_question(const Transaction& tx, tables::StatusCheckRow& check);
  // Questions asked by this process, by outcome.
  struct RecoveryStats {
    std::uint64_t succeeded = 0, failed = 0, pending = 0, unknown = 0;
  };
  RecoveryStats recovery_stats() const;
  // The bound on request threads waiting on operators (its places held, limit, refusals).
  const OperatorGate& operator_gate() const { return gate_; }
  // Transactions waiting for recovery (every node: PENDING at an operator and asked at least once
  // or due to be) and the submission time of the oldest of them.
  struct RecoveryBacklog {
    std::int64_t waiting = 0;
    std::optional<std::int64_t> oldest_since;
  };
  Result<RecoveryBacklog> recovery_backlog();
  // The delay before the question that follows the `checks`-th one (0: the first question).
  std::int64_t recovery_delay_ms(std::int64_t checks) const;
  // Registers a connector under its name (before start()); its transactions are submitted,
  // queried and recovered through it.
  void register_connector(Connector& connector);
  // Where connectors report their operator calls (Options::calls; null when none).
  OperatorCallSink* call_sink() const { return options_.calls; }
  // Operator health (Options::health; null when none).
  Health* health() const { return options_.health; }
  // The names of the registered connectors, in order.
  std::vector<std::string> connector_names() const;

  // Queued payouts (payout_queue.cpp): claims the oldest payouts held while their connector was
  // not OPERATIONAL whose connector is OPERATIONAL now (each claimed by one conditional UPDATE, so
  // exactly one node sends it) and submits them in order. Returns how many it sent.
  Result<int> send_queued();

  // Credits a customer's platform wallet from outside (operator top-up, demo funding).
  Status fund_wallet(std::string_view environment, std::string_view msisdn, std::string_view currency,
                     std::int64_t amount, std::string_view memo);
  // The balance of a ledger account.
  Result<std::int64_t> account_balance(const ledger::AccountKey& key);

  // The confirmation URL of a transaction reference.
  std::string confirmation_url(std::string_view reference) const;
  // The connector registered under `name`, or nullptr.
  Connector* connector(std::string_view name);
  // The instance of a provider's connector in a country (ISO alpha-2): "<name>_<cc>" when one is
  // registered (e.g. orange_money_ci for Côte d'Ivoire), else `name` (docs/operators.md).
  std::string instance_of(std::string_view connector_name, std::string_view alpha2);
  SandboxOperator& sandbox() { return *sandbox_; }
  // Sandbox only: the sandbox operator decides a PENDING sandbox transaction's outcome now
  // (SandboxOperator::force) and reports it by its signed callback, which moves the transaction as
  // any callback does. 409 naming status when it is not PENDING at the sandbox operator, 403 for a
  // prod transaction.
  Status force_sandbox_outcome(const Transaction& tx, const OperatorStatus& status);

 private:
  // A move applied in its own unit: the transaction as it now is, and whether this move did it
  // (false: another actor moved it first, and `tx` is re-read).
  struct Moved {
    Transaction tx;
    bool moved = false;
  };
  std::int64_t now() const;
  std::shared_ptr<const catalog::Catalog> catalog() const { return catalog_(); }
  // A payout: prepared (drafted()), created in its unit with `step`, then submitted or queued.
  // The gateway's blocking intent handler calls it with the parse's field problems in `errors`.
  Result<Transaction> create(const IntentRequest& request, const Acting& merchant, json::FieldErrors errors,
                             const CreationStep* step = nullptr);
  // The plan of a request for `merchant` (plan_intent with this service's catalog and limits).
  Result<IntentPlan> plan_for(const IntentRequest& request, const Acting& merchant, json::FieldErrors errors);
  // The transaction a request becomes, before its unit: planned for `merchant`, drafted (draft()),
  // and a conversion that cannot be settled refused. Writes nothing.
  Result<Transaction> drafted(const IntentRequest& request, const Acting& merchant, json::FieldErrors errors);
  // What collect and collect_async do before their unit (the one preparation of both): a misuse
  // of `how` refused (500 internal: before planning when the request shows it, after when its
  // plan does), then drafted(). `async`: for collect_async, which serves fewer payers.
  Result<Transaction> prepare(const IntentRequest& request, const Acting& merchant, const How& how,
                              json::FieldErrors errors, bool async);
  // What a creating write unit leaves: the transaction (new, or the existing one of the same
  // transaction_uuid), whether this unit created it, and the ledger accounts it learned.
  struct Created {
    Transaction tx;
    bool created = false;
    bool submitted = false;        // a new collection created already PENDING (a present payer)
    bool queued = false;           // a new payout held (queued_at) rather than sent
    bool hold = false;             // in: queue a new payout whatever its operator's health (OperatorGate)
    std::optional<Error> refused;  // a preauthorized charge refused by its check, or an expired replay
    ledger::Learned learned;
  };
  // The creating write unit of `prepared` (draft()): `step` runs in it for a new row, and with
  // `submit_as` set a new collection is moved to PENDING by that source in the same unit. It may
  // run more than once and rewrites `out` each time.
  Status create_unit(store::Conn& c, const IntentRequest& request, const Transaction& prepared,
                     const CreationStep* step, std::optional<std::string_view> submit_as, Created& out);
  // The one unit body of collect and collect_async: create_unit (a present payer's PROVIDER
  // collection without code submitted in it), or preauthorized_unit for a preauthorized payer.
  Status collect_unit(store::Conn& c, const IntentRequest& request, const Transaction& prepared, const How& how,
                      Created& out);
  // What follows a committed collect_unit, as `how` says: a refusal answered; an absent payer's
  // new WALLET collection gets its code sent; a present payer's collection is asked of its
  // operator or executed. Blocks only for those two (which collect_async does not serve).
  Result<Transaction> collected(Created out, const How& how);
  Transaction draft(const IntentRequest& request, const IntentPlan& plan, const Acting& merchant) const;
  Result<Transaction> submit_payout(Transaction tx);
  // Refunds: the operator order of a refund, its submission after its creating unit committed, a
  // move applied in its own unit, and what an operator callback about a refund does.
  PaymentOrder refund_order(const Refund& refund, const Transaction& tx) const;
  Result<Refund> submit_refund(Refund refund, const Transaction& tx);
  Result<Refund> move_refund(const Refund& refund, const RefundMove& move);
  Result<std::string> refund_callback(store::Conn& c, Refund& refund, Connector& conn, bool trusted,
                                      const OperatorStatus& truth, ledger::Learned& learned);
  std::optional<OperatorStatus> ask_refund_question(const Refund& refund, std::string& outcome,
                                                    std::optional<std::string>& reason);
  // True when a new payout of `connector` must be queued: the connector is not OPERATIONAL.
  bool holds_payouts(std::string_view connector) const;
  // The unit of a preauthorized payer's collection: creates (or finds) the collection of
  // `prepared` and debits it; a refusal or an expired replay is left in out.refused. Rewrites
  // `out` on each run.
  Status preauthorized_unit(store::Conn& c, const IntentRequest& request, const Transaction& prepared,
                            const ChargeCheck& check, std::string_view source, Created& out);
  // Inside a unit: debits the INITIATED WALLET collection `tx` (PENDING then COMPLETED, with the
  // journal) after `check`, or FAILS it (INSUFFICIENT_FUNDS), or CANCELS it as `check` refuses.
  Result<std::optional<Refusal>> debit_wallet(store::Conn& c, Transaction& tx, const ChargeCheck& check,
                                              std::string_view source, std::int64_t at, ledger::Learned& learned);
  Result<Transaction> execute_wallet(const Transaction& tx, std::string_view source,
                                     const WalletAuthorization& authorize = {});
  Result<Transaction> execute_provider(const Transaction& tx, PaymentOrder order, Connector& conn,
                                       std::string_view source);
  // Asks the operator to collect a PENDING transaction; a refusal (or no connector) FAILS it
  // with OPERATOR_REFUSED.
  Result<Transaction> send_collection(Transaction tx, PaymentOrder order, Connector* conn);
  Status prepare_collection(Transaction& tx, PaymentOrder& order, Connector& conn);
  // Asks the operator for a collection created already submitted (PENDING) in its creating unit.
  Result<Transaction> ask_operator(Transaction tx);
  Status executable(const Transaction& tx, std::string_view source);
  Status check_otp(const Transaction& tx, const PaymentOrder& order);
  Status send_wallet_code(const Transaction& tx);
  bool fixed_sandbox_code(const Transaction& tx) const;
  Result<std::int64_t> take_otp_attempt(Transaction& tx, std::string_view source);
  Error wrong_otp(Transaction& tx, std::int64_t attempt, std::string_view source);
  // 503 provider_unavailable naming provider (operator_busy): every request thread allowed to wait
  // on operators is waiting (OperatorGate), and nothing was written.
  static Error operator_busy();
  Result<Moved> move(const Transaction& tx, const Move& move);
  Result<Transaction> expire_if_overdue(const Transaction& tx, std::string_view source);
  // False for a PENDING order at an operator whose answer alone ends it (Connector::expires_pending).
  bool expires_by_time(const Transaction& tx);
  std::vector<std::string> operator_ended_connectors() const;
  Result<Transaction> settle_from_operator(const Transaction& tx, const OperatorStatus& st, std::string_view source);
  Result<Transaction> refresh(const Transaction& tx);
  Connector* connector_for(const Transaction& tx);
  PaymentOrder order_for(const Transaction& tx, std::optional<std::string> otp = std::nullopt) const;
  Status write(const std::function<Status(store::Conn&, ledger::Learned&)>& fn);
  Result<bool> apply(store::Conn& conn, Transaction& tx, const Move& move, ledger::Learned& learned);
  std::string page_signature(std::string_view reference) const;
  std::optional<Transaction> page_transaction(std::string_view reference, const std::optional<std::string>& sig);
  web::Response render_page(const Transaction& tx, i18n::Locale locale, std::string_view notice, int status);
  Result<web::Response> create_handler(web::Request& req, std::string_view operation);
  Result<web::Response> show_handler(web::Request& req, std::string_view operation);
  Result<Transaction> referenced(const web::Request& req, std::string_view operation);

  store::Db& db_;
  CatalogSnapshot catalog_;
  web::HttpClient& http_;
  Options options_;
  ledger::AccountCache accounts_;
  std::unique_ptr<SandboxOperator> sandbox_;
  std::map<std::string, Connector*, std::less<>> connectors_;

  std::unique_ptr<Periodic> expiry_;
  std::unique_ptr<Periodic> recovery_;
  std::unique_ptr<Periodic> sender_;
  OperatorGate gate_;
  std::atomic<std::uint64_t> recovery_seq_{0};
  std::atomic<std::uint64_t> checks_succeeded_{0}, checks_failed_{0}, checks_pending_{0}, checks_unknown_{0};
};

// Who a component's own flow (a payment link's payer, a subscription's cycle) collects for: the
// system acting for the merchant (its id, matricule and granted countries) with the given tier,
// environment and job name; nullopt when the merchant does not exist or is not active.
Result<std::optional<Acting>> acting_merchant(store::Db& db, std::int64_t merchant_id, std::string_view environment,
                                              std::int64_t user_tier, std::string job);

// Adapts the catalog component's service to the snapshot function payments uses.
CatalogSnapshot catalog_snapshot(catalog::Service& catalog);

}  // namespace sika::payments
