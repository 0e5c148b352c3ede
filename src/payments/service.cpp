// Payments operations: creating intents, executing, cancelling and refreshing collections,
// settling operator answers, expiring, wallet funding. The HTTP handlers that call them are in
// handlers.cpp and page.cpp; the SQL in store.cpp; the status moves in transitions.cpp.
#include "payments/service.hpp"

#include <spdlog/spdlog.h>
#include <boost/json.hpp>

#include <algorithm>

#include "catalog/fx.hpp"
#include "core/crypto.hpp"
#include "core/money.hpp"
#include "core/random.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "limits/limiter.hpp"
#include "merchant/merchant.hpp"
#include "otp/code.hpp"
#include "otp/service.hpp"
#include "payments/refund_store.hpp"
#include "payments/store.hpp"
#include "store/jobs.hpp"

namespace sika::payments {

namespace bj = boost::json;

namespace {

// Uppercase references: a prefix and 20 characters of 23456789ABCDEFGHJKLMNPQRSTUVWXYZ, the
// first 8 of them the creation time and 12 random (60 bits within a millisecond:
// sortable_reference), and a version-7 UUID at the operator.
// Time-ordered, a new transaction's unique indexes take it at their end: with random keys each
// of them dirtied a page of its own per row, which every group commit wrote to the WAL and every
// checkpoint copied again.
struct References {
  std::string transaction, invoice, split, provider;
};
References new_references() {
  return {sortable_reference("TX-"), sortable_reference("INV-"), sortable_reference("SPL-"), uuid_v7()};
}

Error reference_conflict(std::string problem) { return conflict(bj::object{{"transaction_reference", problem}}); }

// True when a submission was refused (the order fails); false when it was accepted or its outcome
// is unknown: the order then stays PENDING, its provider_reference and next_check_at as stored,
// and recovery's query settles it.
bool refused_at_submission(const Transaction& tx, const Status& sent) {
  if (sent) return false;
  if (is_refusal(sent.error())) return true;
  spdlog::warn("payments: submission of {} to {} has no known outcome ({}); PENDING until the operator answers",
               tx.reference, tx.connector, sent.error().code);
  return false;
}

// The answer to a code submission that compared nothing because concurrent submissions of this
// collection hold (or used) its code attempts: they decide it, and this one changes nothing. `now`
// is the collection as it is: FAILED by their wrong codes (invalid_otp), still being decided
// (409), or moved on otherwise (409 naming its status).
Error code_decided_concurrently(const Transaction& now) {
  if (now.status == TxStatus::failed && now.failure_reason == "INVALID_OTP") {
    bj::object d;
    d["otp"] = "too many attempts, the transaction has FAILED";
    d["attempts_left"] = 0;
    return bad_request("invalid_otp", std::move(d));
  }
  if (now.status == TxStatus::initiated)
    return reference_conflict("has a code being checked by a concurrent request; ask its status");
  return reference_conflict("is " + std::string(to_string(now.status)) +
                            ": only an INITIATED collection can be executed");
}

}  // namespace

Service::Service(store::Db& db, CatalogSnapshot catalog, web::HttpClient& http, Options options)
    : db_(db),
      catalog_(std::move(catalog)),
      http_(http),
      options_(std::move(options)),
      gate_(options_.operator_request_threads) {
  SandboxOptions so;
  std::string base = options_.callback_base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  so.callback_url = base + "/sandbox";
  so.secret = hex_encode(crypto::hmac_sha256(options_.secret, "payments:operator-callback:sandbox"));
  so.otp = options_.sandbox_otp;
  so.delay_ms = options_.sandbox_delay_ms;
  so.duplicate_delay_ms = options_.sandbox_duplicate_delay_ms;
  so.late_ms = options_.sandbox_late_ms > 0 ? options_.sandbox_late_ms : options_.pending_ttl_ms + 2000;
  so.delivery_threads = options_.sandbox_threads;
  so.retry_base_ms = options_.sandbox_retry_ms;
  so.clock = options_.clock;
  so.query_delay_ms = options_.sandbox_query_delay_ms;
  so.db = &db_;
  if (options_.node_id.empty()) options_.node_id = store::make_node_id();
  sandbox_ = std::make_unique<SandboxOperator>(http_, std::move(so));
  connectors_.emplace("sandbox", sandbox_.get());
}

Service::~Service() { stop(); }

std::int64_t Service::now() const { return options_.clock ? options_.clock() : now_ms(); }

Connector* Service::connector(std::string_view name) {
  auto it = connectors_.find(name);
  return it == connectors_.end() ? nullptr : it->second;
}

Connector* Service::connector_for(const Transaction& tx) { return connector(tx.connector); }

std::string Service::instance_of(std::string_view connector_name, std::string_view alpha2) {
  std::string local = std::string(connector_name) + "_";
  for (char c : alpha2) local.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return connector(local) ? local : std::string(connector_name);
}

std::string Service::page_signature(std::string_view reference) const {
  std::string mac = crypto::hmac_sha256(options_.secret, "payments:confirm:" + std::string(reference));
  return base64url_encode(mac.substr(0, 16));
}

std::string Service::confirmation_url(std::string_view reference) const {
  std::string base = options_.checkout_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/confirm/" + std::string(reference) + "?sig=" + page_signature(reference);
}

PaymentOrder Service::order_for(const Transaction& tx, std::optional<std::string> otp) const {
  PaymentOrder o;
  o.operation = tx.operation;
  o.transaction_reference = tx.reference;
  o.provider_reference = tx.provider_reference;
  o.service_code = tx.service_code;
  o.msisdn = tx.customer_wallet;
  o.amount = tx.operation == kCollection ? tx.required_total : tx.amount;
  o.currency = tx.currency;
  o.environment = tx.environment;
  o.otp = std::move(otp);
  o.submitted_at = tx.submitted_at.value_or(0);
  o.operator_state = tx.operator_state;
  if (tx.operation == kCollection) o.return_url = confirmation_url(tx.reference);
  o.message = tx.description.empty() ? tx.reference : tx.description + " " + tx.reference;
  return o;
}

Status Service::force_sandbox_outcome(const Transaction& tx, const OperatorStatus& status) {
  if (tx.environment != "sandbox")
    return forbidden(bj::object{{"transaction_reference", "outcomes are forced in the sandbox only"}});
  if (tx.status != TxStatus::pending || tx.connector != sandbox_->name())
    return conflict(bj::object{{"status", "only a PENDING transaction at the sandbox operator"}});
  return sandbox_->force(order_for(tx), status);
}

// Serialization failures on PostgreSQL are retried by the store (docs/storage.md, "Retries");
// a unit that still fails reaches the caller as it is.
Status Service::write(const std::function<Status(store::Conn&, ledger::Learned&)>& fn) {
  ledger::Learned learned;
  Status st = db_.write([&](store::Conn& c) -> Status {
    learned.clear();
    return fn(c, learned);
  });
  if (st) accounts_.remember(learned);
  return st;
}

Result<bool> Service::apply(store::Conn& conn, Transaction& tx, const Move& move, ledger::Learned& learned) {
  const std::int64_t at = now();
  if (move.to == TxStatus::pending && tx.channel == kChannelProvider && !move.check_at) {
    // Submitted to an operator: recovery asks it if no answer has come by then.
    Move submitted = move;
    submitted.check_at = at + recovery_delay_ms(0);
    return transition(conn, tx, submitted, at, &accounts_, learned);
  }
  return transition(conn, tx, move, at, &accounts_, learned);
}

Result<Service::Moved> Service::move(const Transaction& tx, const Move& m) {
  Moved out;
  SIKA_TRY(write([&](store::Conn& c, ledger::Learned& learned) -> Status {
    out.tx = tx;
    SIKA_ASSIGN_OR_RETURN(out.moved, apply(c, out.tx, m, learned));
    return {};
  }));
  if (!out.moved) {
    SIKA_ASSIGN_OR_RETURN(out.tx, refresh(tx));
  }
  return out;
}

Result<Transaction> Service::refresh(const Transaction& tx) {
  Transaction fresh;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(fresh, tables::load(c, tx.reference));
    return {};
  }));
  return fresh;
}

Result<Transaction> Service::find(const Acting& p, std::string_view reference, std::string_view operation) {
  Transaction tx;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(tx, tables::load(c, reference));
    return {};
  }));
  // Another merchant's (or another environment's, or another operation's) transaction does not exist for this caller.
  if ((!p.admin && tx.merchant_id != p.merchant_id) || tx.environment != p.environment || tx.operation != operation)
    return not_found(bj::object{{"transaction_reference", "no such transaction"}});
  return tx;
}

Result<Transaction> Service::settle_from_operator(const Transaction& tx, const OperatorStatus& st,
                                                  std::string_view source) {
  if (st.state == OperatorStatus::State::pending) return tx;
  SIKA_ASSIGN_OR_RETURN(Moved done, move(tx, move_for(st, source)));
  return std::move(done.tx);
}

Error Service::operator_busy() {
  return with_problem(provider_unavailable(nullptr), "provider", Reason::operator_busy);
}

// ---- intents ----------------------------------------------------------------------------------

Result<Transaction> Service::create_disbursement(const IntentRequest& request, const Acting& merchant,
                                                 const CreationStep& step) {
  if (request.operation != kDisbursement) return internal_error(bj::string("create_disbursement of a collection"));
  return create(request, merchant, {}, &step);
}

// The transaction a planned request becomes: fresh references, INITIATED, its expiry.
Transaction Service::draft(const IntentRequest& request, const IntentPlan& plan, const Acting& merchant) const {
  const bool collection = request.operation == kCollection;
  const bool split = request.settlement_mode == kSplit;
  const std::int64_t at = now();
  const References refs = new_references();
  Transaction tx;
  tx.reference = refs.transaction;
  tx.merchant_id = merchant.merchant_id;
  tx.merchant = merchant.merchant;
  tx.environment = merchant.environment;
  tx.operation = request.operation;
  tx.transaction_uuid = request.transaction_uuid;
  tx.request_hash = request.fingerprint.empty() ? request_fingerprint(request) : request.fingerprint;
  tx.invoice_reference = refs.invoice;
  tx.provider_reference = refs.provider;
  tx.status = TxStatus::initiated;
  tx.channel = plan.channel;
  tx.service_code = plan.service_code;
  tx.country = plan.country;
  tx.connector = plan.connector;
  tx.customer_wallet = plan.msisdn;
  // What the merchant is credited: the price, or the price less the fee the merchant bears (the
  // customer then pays required_total = the price). required_total = amount + fee either way.
  tx.amount = request.operation == kCollection ? plan.required_total - plan.fee : request.amount;
  tx.currency = plan.currency;
  tx.fee = plan.fee;
  tx.required_total = plan.required_total;
  tx.confirmation_method = plan.confirmation_method;
  tx.confirmation_url = collection ? confirmation_url(tx.reference) : "";
  tx.settlement_mode = split ? kSplit : request.own_wallet ? kOwnWallet : kDirect;
  tx.split_reference = split ? refs.split : "";
  tx.split_status = split ? kSplitPending : kSplitNone;
  tx.description = request.description;
  tx.metadata = request.metadata.empty() ? "{}" : request.metadata;
  tx.needs_otp = plan.needs_otp;
  tx.expires_at = at + (collection ? options_.intent_ttl_ms : options_.disbursement_ttl_ms);
  tx.created_at = at;
  tx.updated_at = at;
  return tx;
}

Result<IntentPlan> Service::plan_for(const IntentRequest& request, const Acting& merchant, json::FieldErrors errors) {
  if (merchant.merchant_id == 0) return forbidden(bj::string("this credential is not bound to a merchant"));
  auto cat = catalog();
  if (!cat) return unavailable(bj::string("the catalog is not loaded"));
  PlanInputs inputs;
  inputs.catalog = cat.get();
  inputs.merchant = &merchant;
  inputs.max_amount = options_.max_amount;
  inputs.balance = [this](const ledger::AccountKey& key) -> Result<std::optional<std::int64_t>> {
    std::optional<std::int64_t> balance;
    SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(balance, ledger::find_balance(c, key));
      return {};
    }));
    return balance;
  };
  // The simulated operator never moves real money: a prod intent needs its provider's own connector,
  // one that carries the currency.
  inputs.has_connector = [this, prod = merchant.environment != "sandbox",
                          currency = request.currency](std::string_view name) {
    Connector* conn = connector(name);
    return conn && !(prod && conn == sandbox_.get()) && conn->serves(currency);
  };
  inputs.refuse_other_operator_numbers = options_.refuse_other_operator_numbers;
  inputs.approves_at_operator = [this](std::string_view name) {
    Connector* conn = connector(name);
    return conn && conn->redirects_customer();
  };
  inputs.instance = [this](std::string_view name, std::string_view alpha2) { return instance_of(name, alpha2); };
  inputs.closed = [this](std::string_view name) {
    return options_.health && options_.health->state(name) == Availability::closed;
  };
  return plan_intent(request, inputs, std::move(errors));
}

namespace {

// The conversion of a collection as it is stored: the merchant(s) are credited what the
// collection's amount (the customer's payment less the fee the merchant bears) is worth in the
// order's currency at the rate, rounded down, never beyond the order's amount.
Result<Conversion> settled(Conversion conversion, const Transaction& prepared) {
  if (prepared.operation != kCollection || conversion.currency == prepared.currency)
    return internal_error(bj::string("a conversion belongs to a collection in another currency"));
  auto worth = catalog::fx::convert_back_down(merchant_share(prepared), conversion.currency, prepared.currency,
                                              catalog::fx::Ratio{conversion.numerator, conversion.denominator});
  if (!worth) return empty_data(bj::object{{"amount", "is too large to convert"}});
  conversion.amount = std::min(conversion.order_amount, *worth);
  if (conversion.amount <= 0)
    return empty_data(bj::object{{"amount", "is too small to convert: the merchant would be credited nothing"}});
  return conversion;
}

}  // namespace

Result<Transaction> Service::drafted(const IntentRequest& request, const Acting& merchant, json::FieldErrors errors) {
  SIKA_ASSIGN_OR_RETURN(IntentPlan plan, plan_for(request, merchant, std::move(errors)));
  Transaction prepared = draft(request, plan, merchant);
  // A conversion that cannot be settled is refused before anything is written.
  if (request.conversion) {
    auto checked = settled(*request.conversion, prepared);
    if (!checked) return checked.take_error();
  }
  return prepared;
}

Status Service::create_unit(store::Conn& c, const IntentRequest& request, const Transaction& prepared,
                            const CreationStep* step, std::optional<std::string_view> submit_as, Created& out) {
  Transaction& tx = out.tx;
  ledger::Learned& learned = out.learned;
  bool& created = out.created;
  const bool collection = request.operation == kCollection;
  const bool split = request.settlement_mode == kSplit;
  learned.clear();
  tx = prepared;
  created = false;
  out.submitted = false;
  out.queued = false;
  out.refused.reset();
  SIKA_ASSIGN_OR_RETURN(auto keyed, tables::insert_or_replay(c, tx));
  if (!keyed.id) {
    // The same (merchant, environment, transaction_uuid) exists: the same request gets its record back.
    tx = std::move(*keyed.stored);
    return {};
  }
  created = true;
  tx.id = *keyed.id;
  if (request.conversion) {
    SIKA_ASSIGN_OR_RETURN(Conversion conversion, settled(*request.conversion, prepared));
    SIKA_TRY(tables::insert_conversion(c, tx.id, conversion));
  }
  if (split) {
    // Beneficiaries must exist and be active; one read inside the unit.
    SIKA_ASSIGN_OR_RETURN(auto found, tables::find_beneficiaries(c, request.distribution));
    json::FieldErrors missing;
    std::vector<std::int64_t> ids;
    for (const auto& line : request.distribution) {
      auto it = found.find(line.matricule);
      std::string field = "distribution[" + std::to_string(line.position) + "].matricule";
      if (it == found.end())
        missing.add(field, Reason::not_known_merchant);
      else if (!it->second.active)
        missing.add(field, Reason::inactive_merchant);
      else
        ids.push_back(it->second.id);
    }
    SIKA_TRY(missing.status());
    SIKA_TRY(tables::insert_splits(c, tx.id, request.distribution, ids));
  }
  if (step && *step) SIKA_TRY((*step)(c, tx));
  if (submit_as) {
    Move m = move_to(TxStatus::pending, *submit_as);
    m.submitted_at = tx.created_at;
    m.expires_at = tx.created_at + options_.pending_ttl_ms;
    SIKA_ASSIGN_OR_RETURN(bool moved, apply(c, tx, m, learned));
    if (!moved) return internal_error(bj::string("new collection could not be submitted"));
    out.submitted = true;
  }
  if (collection) return {};
  // A payout reserves its funds at once and is submitted (PENDING); a WALLET payout completes here.
  // Paid from the merchant's balance, or (a withdrawal) from the customer's own wallet.
  const bool from_wallet = tx.settlement_mode == kOwnWallet;
  SIKA_ASSIGN_OR_RETURN(
      std::int64_t available,
      ledger::balance(c, from_wallet ? ledger::customer_wallet(tx.customer_wallet, tx.environment, tx.currency)
                                     : ledger::merchant_available(tx.merchant_id, tx.environment, tx.currency)));
  if (available < tx.required_total)
    return bad_request("insufficient_funds",
                       bj::object{{"amount", std::string(from_wallet ? "the wallet's" : "the available") +
                                                 " balance does not cover required_total " +
                                                 money::format(tx.required_total, tx.currency)}});
  Move reserve = move_to(TxStatus::pending, "intent");
  reserve.submitted_at = tx.created_at;
  SIKA_ASSIGN_OR_RETURN(bool reserved, apply(c, tx, reserve, learned));
  if (!reserved) return internal_error(bj::string("new payout could not be reserved"));
  if (tx.channel == kChannelProvider) {
    // Held while its operator is not OPERATIONAL, and behind the payouts held before it.
    SIKA_ASSIGN_OR_RETURN(out.queued, tables::queue_payout(c, tx, out.hold || holds_payouts(tx.connector), now()));
  }
  if (tx.channel == kChannelWallet) {
    SIKA_ASSIGN_OR_RETURN(bool paid, apply(c, tx, move_to(TxStatus::completed, "wallet"), learned));
    if (!paid) return internal_error(bj::string("new wallet payout could not complete"));
  }
  return {};
}

Result<Transaction> Service::create(const IntentRequest& request, const Acting& merchant, json::FieldErrors errors,
                                    const CreationStep* step) {
  if (request.operation != kDisbursement) return internal_error(bj::string("create of a collection: collect makes it"));
  SIKA_ASSIGN_OR_RETURN(Transaction prepared, drafted(request, merchant, std::move(errors)));
  Created out;
  // Without a place among the request threads allowed to wait on operators, the payout is queued
  // (sent by the queued-payout sender) instead of sent before the answer.
  std::optional<OperatorGate::Ticket> ticket;
  if (prepared.channel == kChannelProvider) {
    ticket.emplace(gate_.enter());
    out.hold = !*ticket;
  }
  SIKA_TRY(
      db_.write([&](store::Conn& c) -> Status { return create_unit(c, request, prepared, step, std::nullopt, out); }));
  accounts_.remember(out.learned);
  Transaction tx = std::move(out.tx);
  if (out.created && tx.channel == kChannelProvider) {
    if (!out.queued) return submit_payout(std::move(tx));
    if (sender_) sender_->wake();
  }
  return tx;
}

// ---- making a collection: who the payer is now ------------------------------------------------

Result<Transaction> Service::prepare(const IntentRequest& request, const Acting& merchant, const How& how,
                                     json::FieldErrors errors, bool async) {
  const bool preauthorized = how.payer == Payer::preauthorized;
  if (request.operation != kCollection) return internal_error(bj::string("collect of a payout request"));
  if (preauthorized && (!request.preauthorized || request.channel != kChannelWallet))
    return internal_error(bj::string("a preauthorized payer's request is a preauthorized WALLET one"));
  if (preauthorized && how.step)
    return internal_error(bj::string("a preauthorized charge runs its check, not a creation step"));
  if (!preauthorized && how.check) return internal_error(bj::string("only a preauthorized charge runs a check"));
  if (async && how.payer == Payer::present)
    return internal_error(bj::string("collect_async of a present payer: its operator is asked after the commit"));
  SIKA_ASSIGN_OR_RETURN(Transaction prepared, drafted(request, merchant, std::move(errors)));
  if (async && how.payer == Payer::absent && prepared.channel != kChannelProvider)
    return internal_error(bj::string("collect_async of a WALLET collection: its code is sent after the commit"));
  return prepared;
}

Status Service::collect_unit(store::Conn& c, const IntentRequest& request, const Transaction& prepared, const How& how,
                             Created& out) {
  if (how.payer == Payer::preauthorized) return preauthorized_unit(c, request, prepared, how.check, how.source, out);
  // A payer who is present: submitted in the creating unit when nothing else is needed first.
  const bool submit = how.payer == Payer::present && prepared.channel == kChannelProvider && !prepared.needs_otp;
  return create_unit(c, request, prepared, &how.step,
                     submit ? std::optional<std::string_view>(how.source) : std::nullopt, out);
}

Result<Transaction> Service::collected(Created out, const How& how) {
  accounts_.remember(out.learned);
  if (out.refused) return std::move(*out.refused);
  Transaction tx = std::move(out.tx);
  if (how.payer == Payer::preauthorized) return tx;
  if (out.created && tx.channel == kChannelWallet && tx.needs_otp && !fixed_sandbox_code(tx)) {
    // The intent stands even when the code could not be sent: executing it without a code sends
    // it again (and answers why it could not).
    if (Status sent = send_wallet_code(tx); !sent)
      spdlog::warn("wallet code for {} not sent: {}", tx.reference, sent.error().code);
  }
  if (how.payer == Payer::absent) return tx;
  if (out.submitted) return ask_operator(std::move(tx));
  // A replay without a code is the transaction as it is now; a new one, or a replay that brings
  // the code it waits for, is executed.
  if (tx.status != TxStatus::initiated || (!out.created && !how.otp)) return current(std::move(tx), how.source);
  return execute_collection(std::move(tx), how.otp, how.source);
}

Result<Transaction> Service::collect(const IntentRequest& request, const Acting& merchant, const How& how,
                                     json::FieldErrors errors) {
  SIKA_ASSIGN_OR_RETURN(Transaction prepared, prepare(request, merchant, how, std::move(errors), false));
  // A present payer's operator is asked before the answer: a place first, before anything is written.
  std::optional<OperatorGate::Ticket> ticket;
  if (how.payer == Payer::present && prepared.channel == kChannelProvider) {
    ticket.emplace(gate_.enter());
    if (!*ticket) return operator_busy();
  }
  Created out;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status { return collect_unit(c, request, prepared, how, out); }));
  return collected(std::move(out), how);
}

void Service::collect_async(IntentRequest request, const Acting& merchant, How how, json::FieldErrors errors,
                            std::function<void(Result<Transaction>)> done) {
  auto prepared = prepare(request, merchant, how, std::move(errors), true);
  if (!prepared) return done(prepared.take_error());
  // The unit may run more than once (a retried batch): it reads the request, the draft and `how`
  // and rewrites `out` each time.
  struct State {
    IntentRequest request;
    How how;
    Transaction prepared;
    Created out;
  };
  auto state = std::make_shared<State>(State{std::move(request), std::move(how), std::move(prepared).value(), {}});
  db_.write_async(
      [this, state](store::Conn& c) -> Status {
        return collect_unit(c, state->request, state->prepared, state->how, state->out);
      },
      [this, state, done = std::move(done)](Status st) {
        if (!st) return done(st.error());
        // Nothing here blocks: an absent payer's PROVIDER collection or a preauthorized charge.
        done(collected(std::move(state->out), state->how));
      });
}

std::vector<Result<Transaction>> Service::collect_page(const std::vector<PresentPayer>& payers,
                                                       std::string_view source) {
  struct Item {
    std::size_t index;
    Transaction prepared;
    Created out;
    Status status;
  };
  How present;
  present.payer = Payer::present;
  present.source = std::string(source);
  std::vector<std::optional<Error>> refused(payers.size());
  std::vector<Item> items;
  items.reserve(payers.size());
  for (std::size_t i = 0; i < payers.size(); ++i) {
    const PresentPayer& payer = payers[i];
    auto prepared = drafted(payer.request, payer.merchant, {});
    if (!prepared) {
      refused[i] = prepared.error();
    } else if (payer.request.operation != kCollection || prepared->channel != kChannelProvider || prepared->needs_otp) {
      refused[i] = internal_error(bj::string("collect_page takes PROVIDER collections without a code"));
    } else {
      items.push_back(Item{i, std::move(prepared).value(), {}, {}});
    }
  }
  Status unit = items.empty() ? Status{} : db_.write([&](store::Conn& c) -> Status {
    // Every decision of a creating unit is a UNIQUE constraint (transaction_uuid, the caller's
    // rows) or a conditional UPDATE, so READ COMMITTED keeps it exact; under SERIALIZABLE a page
    // of unrelated collections from several nodes aborts on shared index pages again and again.
    SIKA_TRY(store::counter_isolation(c));
    for (Item& item : items) {
      const PresentPayer& payer = payers[item.index];
      item.status =
          c.nested([&] { return create_unit(c, payer.request, item.prepared, &payer.step, source, item.out); });
      // The store's trouble is the unit's: the whole page is run again or fails, never half of it.
      if (!item.status &&
          (item.status.error().is(ErrorKind::retryable) || item.status.error().is(ErrorKind::unavailable) ||
           item.status.error().is(ErrorKind::internal)))
        return item.status;
    }
    return {};
  });
  std::vector<Result<Transaction>> results;
  results.reserve(payers.size());
  for (std::size_t i = 0; i < payers.size(); ++i)
    results.emplace_back(refused[i] ? *refused[i] : internal_error(bj::string("not created")));
  for (Item& item : items) {
    Result<Transaction>& result = results[item.index];
    if (!unit) {
      result = unit.error();
    } else if (!item.status) {
      result = item.status.error();
    } else {
      // Created already submitted: the operator is asked; a replay is the transaction as it is now.
      result = collected(std::move(item.out), present);
    }
  }
  return results;
}

// The purpose of the WALLET channel's one-time codes (one challenge per transaction reference).
constexpr std::string_view kWalletCodePurpose = "wallet_collection";

// The sandbox's magic and demo numbers are simulated customers: their WALLET code is the fixed
// sandbox code, compared directly (and limited by the transaction's attempt count), and nothing
// is sent to them, so load and crash tests on the demo wallets are not held by the per-number
// send limits. Every other number gets a code from the OTP service.
bool Service::fixed_sandbox_code(const Transaction& tx) const {
  return tx.environment == "sandbox" && sandbox_fixed_code(tx.customer_wallet);
}

// Sends (or resends) the one-time code of a WALLET collection to the customer's phone.
Status Service::send_wallet_code(const Transaction& tx) {
  if (!options_.otp) return unavailable(bj::string("wallet one-time codes are not configured"));
  otp::IssueRequest r;
  r.purpose = std::string(kWalletCodePurpose);
  r.subject = tx.reference;
  r.destination = "+" + tx.customer_wallet;
  r.context = money::format(tx.required_total, tx.currency) + ", " + tx.merchant + ", " + tx.reference;
  r.environment = tx.environment;
  auto issued = options_.otp->issue(r);
  if (!issued) return issued.take_error();
  return {};
}

// Submits a payout whose funds are reserved (committed); a refusal fails it and releases them, an
// unknown outcome leaves it PENDING with its funds reserved until the operator answers.
Result<Transaction> Service::submit_payout(Transaction tx) {
  Connector* conn = connector_for(tx);
  Status sent = conn ? conn->request_payout(order_for(tx)) : Status(provider_unavailable(nullptr));
  if (conn && sent) return keep_accepted(std::move(tx), *conn);
  if (conn && !refused_at_submission(tx, sent)) return tx;  // unknown: the funds stay reserved
  OperatorStatus refused;
  refused.state = OperatorStatus::State::failed;
  refused.reason = sent.error().is(ErrorKind::not_found) ? "INVALID_ACCOUNT" : "OPERATOR_REFUSED";
  return settle_from_operator(tx, refused, "connector");
}

// ---- execution --------------------------------------------------------------------------------

// Ok when `tx` may be executed now: INITIATED and not overdue (an overdue one is expired on the
// spot); 409 otherwise.
Status Service::executable(const Transaction& tx, std::string_view source) {
  if (tx.status == TxStatus::initiated && tx.expires_at <= now()) {
    SIKA_TRY(move(tx, move_to(TxStatus::expired, source, "EXPIRED")));
    return reference_conflict("has expired");
  }
  if (tx.status != TxStatus::initiated)
    return reference_conflict("is " + std::string(to_string(tx.status)) +
                              ": only an INITIATED collection can be executed");
  return {};
}

Result<Transaction> Service::execute_collection(Transaction tx, std::optional<std::string> otp,
                                                std::string_view source) {
  if (tx.operation != kCollection) return reference_conflict("is a disbursement; payouts are submitted at intent");
  SIKA_TRY(executable(tx, source));
  if (tx.needs_otp) {
    if ((!otp || otp->empty()) && tx.channel == kChannelWallet && !fixed_sandbox_code(tx)) {
      // Asking without the code sends it (again) to the customer, within the resend limits; a
      // code sent moments ago (the intent's own) is the one to type.
      Status sent = send_wallet_code(tx);
      if (!sent && !sent.error().is(ErrorKind::rate_limited)) return sent.take_error();
      return field_error("otp", sent ? Reason::otp_sent_customer : Reason::otp_already_sent_customer);
    }
    if (!otp || otp->empty()) return field_error("otp", Reason::otp_by_service);
    std::optional<Reason> problem;
    if (!otp::code_from_text(*otp, &problem)) return field_error("otp", *problem);
  }
  PaymentOrder order = order_for(tx, tx.needs_otp ? otp : std::nullopt);
  if (tx.needs_otp) {
    // The attempt is taken before the code is compared, so concurrent guesses cannot compare
    // more than max_otp_attempts codes.
    SIKA_ASSIGN_OR_RETURN(std::int64_t attempt, take_otp_attempt(tx, source));
    Status checked = check_otp(tx, order);
    // The code was verified by a concurrent submission (the same right code twice): that one
    // executes the collection; this one must not count as a wrong code.
    if (!checked && checked.error().is(ErrorKind::conflict)) {
      SIKA_ASSIGN_OR_RETURN(Transaction now_tx, refresh(tx));
      return code_decided_concurrently(now_tx);
    }
    if (!checked) return wrong_otp(tx, attempt, source);
  }
  if (tx.channel == kChannelWallet) return execute_wallet(tx, source);
  Connector* conn = connector_for(tx);
  if (!conn) return provider_unavailable(bj::object{{"provider", "no connector for " + tx.service_code}});
  return execute_provider(tx, std::move(order), *conn, source);
}

// The one-time code check. A WALLET code is issued by the platform's OTP service (the code of
// this transaction's challenge), except the sandbox's fixed code for its magic and demo numbers;
// an operator's code is checked by its connector when it can tell.
Status Service::check_otp(const Transaction& tx, const PaymentOrder& order) {
  if (tx.channel == kChannelWallet && fixed_sandbox_code(tx)) return sandbox_->check_otp(order);
  if (tx.channel == kChannelWallet) {
    if (!options_.otp) return unavailable(bj::string("wallet one-time codes are not configured"));
    SIKA_ASSIGN_OR_RETURN(otp::Verification v,
                          options_.otp->verify(kWalletCodePurpose, tx.reference, order.otp.value_or("")));
    if (v.ok()) return {};
    if (v.outcome == otp::Outcome::already_used)
      return with_problem(conflict(), "otp", Reason::otp_verified_concurrently);
    return with_problem(bad_request("invalid_otp"), "otp", Reason::incorrect);
  }
  Connector* conn = connector_for(tx);
  if (!conn) return provider_unavailable(bj::object{{"provider", "no connector for " + tx.service_code}});
  return conn->check_otp(order);
}

// Takes one code attempt of `tx` (its own write unit, committed before the code is compared).
// When none is left, every attempt is held by a submission that compared (or is comparing) a code,
// and those decide: a right code executes the collection, a wrong one on the last attempt FAILS it
// (wrong_otp). So this submission changes nothing, whatever it brings: it is answered from the
// collection's state read in the same unit (code_decided_concurrently). It never FAILS a
// collection another submission is completing with the right code.
Result<std::int64_t> Service::take_otp_attempt(Transaction& tx, std::string_view) {
  std::optional<std::int64_t> taken;
  Transaction now_tx;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(taken, tables::take_otp_attempt(c, tx.id, options_.max_otp_attempts));
    if (taken) return {};
    SIKA_ASSIGN_OR_RETURN(now_tx, tables::load(c, tx.reference));
    return {};
  }));
  if (taken) return *taken;
  return code_decided_concurrently(now_tx);
}

// Answers a wrong code whose attempt was `attempt`; the last allowed one FAILS the collection
// (INVALID_OTP).
Error Service::wrong_otp(Transaction& tx, std::int64_t attempt, std::string_view source) {
  bool failed_now = false;
  if (attempt >= options_.max_otp_attempts) {
    const Transaction original = tx;
    Status st = write([&](store::Conn& c, ledger::Learned& learned) -> Status {
      tx = original;
      SIKA_ASSIGN_OR_RETURN(failed_now, apply(c, tx, move_to(TxStatus::failed, source, "INVALID_OTP"), learned));
      return {};
    });
    if (!st) return st.take_error();
  }
  bj::object d;
  d["otp"] = failed_now ? "is incorrect; too many attempts, the transaction has FAILED" : "is incorrect";
  d["attempts_left"] = std::max<std::int64_t>(0, options_.max_otp_attempts - attempt);
  return bad_request("invalid_otp", std::move(d));
}

// Instant: INITIATED -> PENDING -> COMPLETED with the wallet debit in one unit, or FAILED
// (INSUFFICIENT_FUNDS, nothing debited) when the wallet does not cover required_total.
Result<Transaction> Service::execute_preauthorized(Transaction tx, const WalletAuthorization& authorize,
                                                   std::string_view source) {
  if (tx.operation != kCollection || tx.channel != kChannelWallet || tx.needs_otp)
    return reference_conflict("is not a WALLET collection the customer authorised beforehand");
  SIKA_TRY(executable(tx, source));
  return execute_wallet(tx, source, authorize);
}

Result<Transaction> Service::execute_wallet(const Transaction& original, std::string_view source,
                                            const WalletAuthorization& authorize) {
  const std::int64_t at = now();
  // The authorization runs once the balance is known to cover the payment; it never refuses.
  const ChargeCheck check = [&](store::Conn& c, const Transaction&, bool covered) -> Result<std::optional<Refusal>> {
    if (covered && authorize) SIKA_TRY(authorize(c));
    return std::optional<Refusal>{};
  };
  Transaction tx;
  SIKA_TRY(write([&](store::Conn& c, ledger::Learned& learned) -> Status {
    tx = original;
    SIKA_TRY(debit_wallet(c, tx, check, source, at, learned));
    return {};
  }));
  return tx;
}

Result<std::optional<Service::Refusal>> Service::debit_wallet(store::Conn& c, Transaction& tx, const ChargeCheck& check,
                                                              std::string_view source, std::int64_t at,
                                                              ledger::Learned& learned) {
  SIKA_ASSIGN_OR_RETURN(std::int64_t available,
                        ledger::balance(c, ledger::customer_wallet(tx.customer_wallet, tx.environment, tx.currency)));
  const bool covered = available >= tx.required_total;
  std::optional<Refusal> refused;
  if (check) {
    SIKA_ASSIGN_OR_RETURN(refused, check(c, tx, covered));
  }
  if (refused || !covered) {
    Move end = refused ? move_to(TxStatus::cancelled, source, refused->reason)
                       : move_to(TxStatus::failed, source, "INSUFFICIENT_FUNDS");
    SIKA_ASSIGN_OR_RETURN(bool ended, apply(c, tx, end, learned));
    if (!ended) return reference_conflict("was executed concurrently");
    return refused;
  }
  // The debit is the payment: nothing waits on an operator, so there is no PENDING in between.
  Move paid = move_to(TxStatus::completed, source);
  paid.submitted_at = at;
  SIKA_ASSIGN_OR_RETURN(bool moved, apply(c, tx, paid, learned));
  if (!moved) return reference_conflict("was executed concurrently");
  return refused;
}

// ---- preauthorized charges: created and debited in one unit ------------------------------------

Status Service::preauthorized_unit(store::Conn& c, const IntentRequest& request, const Transaction& prepared,
                                   const ChargeCheck& check, std::string_view source, Created& out) {
  SIKA_TRY(create_unit(c, request, prepared, nullptr, std::nullopt, out));
  Transaction& tx = out.tx;
  // A replay of a payment already made (or refused) is that payment, as it is.
  if (tx.status != TxStatus::initiated || tx.channel != kChannelWallet || tx.needs_otp) return {};
  if (tx.expires_at <= prepared.created_at) {
    SIKA_ASSIGN_OR_RETURN(bool expired, apply(c, tx, move_to(TxStatus::expired, source, "EXPIRED"), out.learned));
    (void)expired;  // the unit holds the row: nobody moved it meanwhile
    out.refused = reference_conflict("has expired");
    return {};
  }
  SIKA_ASSIGN_OR_RETURN(auto refusal, debit_wallet(c, tx, check, source, prepared.created_at, out.learned));
  if (refusal) out.refused = std::move(refusal->error);
  return {};
}

// PROVIDER: claims the transaction (PENDING, committed) first, then submits it; a refusal
// fails it. A crash between the two leaves it PENDING until it expires, never submitted twice.
Result<Transaction> Service::execute_provider(const Transaction& tx, PaymentOrder order, Connector& conn,
                                              std::string_view source) {
  // A place among the request threads allowed to wait on operators, before anything is written.
  const OperatorGate::Ticket ticket = gate_.enter();
  if (!ticket) return operator_busy();
  const std::int64_t at = now();
  Move submit = move_to(TxStatus::pending, source);
  submit.submitted_at = at;
  submit.expires_at = at + options_.pending_ttl_ms;
  SIKA_ASSIGN_OR_RETURN(Moved claimed, move(tx, submit));
  if (!claimed.moved) return reference_conflict("was executed concurrently");
  order.submitted_at = at;
  return send_collection(std::move(claimed.tx), std::move(order), &conn);
}

Result<Transaction> Service::ask_operator(Transaction tx) {
  // The same request to the operator as execute_collection makes, now that PENDING is stored.
  Connector* conn = connector_for(tx);
  PaymentOrder order = order_for(tx, std::nullopt);
  order.submitted_at = tx.created_at;
  return send_collection(std::move(tx), std::move(order), conn);
}

// Keeps what the operator's acceptance left (a redirect URL, the connector's own data) on the
// transaction, in a unit of its own; a failure to keep it is logged and the order stays as it is
// (recovery asks the operator; the customer is shown the confirmation page without the link).
Transaction Service::keep_accepted(Transaction tx, Connector& conn) {
  std::optional<Accepted> accepted = conn.take_accepted(tx.provider_reference);
  if (!accepted) return tx;
  Status st = db_.write([&](store::Conn& c) -> Status {
    return tables::keep_accepted(c, tx.id, accepted->customer_url, accepted->operator_state);
  });
  if (!st) {
    spdlog::warn("payments: what {} left for {} was not kept: {}", conn.name(), tx.reference, st.error().code);
    return tx;
  }
  tx.customer_url = std::move(accepted->customer_url);
  tx.operator_state = std::move(accepted->operator_state);
  return tx;
}

// What the operator must hold before the collection is sent (Connector::prepare_collection) is kept
// on the transaction first, so that a crash or a lost answer after the send still leaves the id
// recovery asks about. When it cannot be kept nothing is sent (the order stays PENDING, and its
// connector's status query ends it).
Status Service::prepare_collection(Transaction& tx, PaymentOrder& order, Connector& conn) {
  SIKA_ASSIGN_OR_RETURN(std::optional<Accepted> prepared, conn.prepare_collection(order));
  if (!prepared) return {};
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    return tables::keep_accepted(c, tx.id, prepared->customer_url, prepared->operator_state);
  }));
  tx.customer_url = prepared->customer_url;
  tx.operator_state = prepared->operator_state;
  order.operator_state = std::move(prepared->operator_state);
  return {};
}

Result<Transaction> Service::send_collection(Transaction tx, PaymentOrder order, Connector* conn) {
  Status sent = conn ? prepare_collection(tx, order, *conn) : Status(provider_unavailable(nullptr));
  if (conn && sent) sent = conn->request_collection(order);
  if (conn && sent) return keep_accepted(std::move(tx), *conn);
  if (conn && !refused_at_submission(tx, sent)) return tx;
  OperatorStatus refused;
  refused.state = OperatorStatus::State::failed;
  refused.reason = "OPERATOR_REFUSED";
  return settle_from_operator(tx, refused, "connector");
}

Result<Transaction> Service::cancel_collection(const Transaction& tx, std::string_view source,
                                               std::string_view reason) {
  if (tx.status != TxStatus::initiated)
    return reference_conflict("is " + std::string(to_string(tx.status)) +
                              ": only an INITIATED collection can be cancelled");
  SIKA_ASSIGN_OR_RETURN(Moved done, move(tx, move_to(TxStatus::cancelled, source, std::string(reason))));
  if (!done.moved) return reference_conflict("changed status concurrently");
  return std::move(done.tx);
}

// Overdue: the record reflects it at once, whether or not the worker has run yet.
bool Service::expires_by_time(const Transaction& tx) {
  if (tx.status != TxStatus::pending) return true;
  Connector* conn = connector_for(tx);
  return !conn || conn->expires_pending();
}

std::vector<std::string> Service::operator_ended_connectors() const {
  std::vector<std::string> out;
  for (const auto& [name, conn] : connectors_)
    if (!conn->expires_pending()) out.push_back(name);
  return out;
}

Result<Transaction> Service::expire_if_overdue(const Transaction& tx, std::string_view source) {
  if (is_terminal(tx.status) || tx.expires_at > now() || !expires_by_time(tx)) return tx;
  SIKA_ASSIGN_OR_RETURN(Moved done, move(tx, move_to(TxStatus::expired, source, "EXPIRED")));
  return std::move(done.tx);
}

Result<Transaction> Service::current(Transaction tx, std::string_view source) {
  if (!is_terminal(tx.status) && tx.expires_at <= now() && expires_by_time(tx)) return expire_if_overdue(tx, source);
  if (tx.status == TxStatus::pending && tx.channel == kChannelProvider) {
    // Ask the operator: its answer is applied by the same conditional move as a callback.
    if (Connector* conn = connector_for(tx); conn && conn->query_on_read()) {
      auto st = conn->query_status(order_for(tx));
      if (st && st->state != OperatorStatus::State::pending) return settle_from_operator(tx, *st, source);
    }
  }
  return tx;
}

// ---- wallets and balances ---------------------------------------------------------------------

Status Service::fund_wallet(std::string_view environment, std::string_view msisdn, std::string_view currency,
                            std::int64_t amount, std::string_view memo) {
  if (amount <= 0) return empty_data(bj::object{{"amount", "must be a positive integer"}});
  ledger::Posting p;
  p.kind = ledger::kWalletFunding;
  p.environment = environment;
  p.currency = currency;
  p.memo = memo;
  p.legs.push_back({ledger::funding(environment, currency), amount, 0});
  p.legs.push_back({ledger::customer_wallet(msisdn, environment, currency), 0, amount});
  const std::int64_t at = now();
  return write(
      [&](store::Conn& c, ledger::Learned& learned) -> Status { return ledger::post(c, p, at, &accounts_, learned); });
}

Result<std::int64_t> Service::account_balance(const ledger::AccountKey& key) {
  std::int64_t b = 0;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(b, ledger::balance(c, key));
    return {};
  }));
  return b;
}

// ---- expiry -----------------------------------------------------------------------------------

Result<int> Service::expire_due() {
  const std::int64_t at = now();
  std::vector<std::string> due;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(due, tables::due_for_expiry(c, at, options_.expiry_batch, operator_ended_connectors()));
    return {};
  }));
  int expired = 0;
  for (const auto& reference : due) {
    bool moved = false;
    Status st = write([&](store::Conn& c, ledger::Learned& learned) -> Status {
      moved = false;
      SIKA_ASSIGN_OR_RETURN(Transaction tx, tables::load(c, reference));
      if (is_terminal(tx.status) || tx.expires_at > at || !expires_by_time(tx)) return {};
      SIKA_ASSIGN_OR_RETURN(moved, apply(c, tx, move_to(TxStatus::expired, "expiry", "EXPIRED"), learned));
      return {};
    });
    if (!st) {
      spdlog::warn("payments expiry of {} failed: {}", reference, st.error().code);
      continue;
    }
    if (moved) ++expired;
  }
  return expired;
}

// ---- callbacks and verification ---------------------------------------------------------------

std::optional<OperatorStatus> Service::verify_callback(Connector& conn, const CallbackReport& report) {
  // Without a place among the request threads allowed to wait on operators, the callback is
  // recorded unverified and recovery asks the operator at once, from its own thread.
  const OperatorGate::Ticket ticket = gate_.enter();
  if (!ticket) return std::nullopt;
  std::optional<Transaction> tx;
  Status read = db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(tx, tables::find_by_provider_reference(c, report.provider_reference));
    return {};
  });
  if (read && !tx) {
    // A refund's callback: the operator's answer about the refund in flight it names.
    std::optional<Refund> refund;
    std::optional<Transaction> refunded;
    Status found = db_.read([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(refund, tables::find_refund_by_provider_reference(c, report.provider_reference));
      if (refund) {
        SIKA_ASSIGN_OR_RETURN(refunded, tables::load(c, refund->transaction_reference));
      }
      return {};
    });
    if (!found || !refund || !refunded || is_final(refund->status) || refund->connector != conn.name())
      return std::nullopt;
    auto answer = conn.query_status(refund_order(*refund, *refunded));
    if (!answer) return std::nullopt;
    return std::move(*answer);
  }
  if (!read || !tx || tx->status != TxStatus::pending || tx->connector != conn.name()) return std::nullopt;
  auto answer = conn.query_status(order_for(*tx));
  if (!answer) return std::nullopt;
  return std::move(*answer);
}

Status Service::prompt_again(const Transaction& tx) {
  Connector* conn = tx.channel == kChannelProvider ? connector_for(tx) : nullptr;
  const PaymentOrder order = order_for(tx);
  if (tx.status != TxStatus::pending)
    return conflict(bj::object{{"status", "only a PENDING collection's prompt can be sent again"}});
  if (!conn || !conn->prompts_again(order) || !options_.limiter)
    return unavailable(bj::object{{"provider", "this payment's prompt cannot be sent again"}});
  // One hit per transaction and window, counted by one statement on every node.
  limits::Policy policy;
  policy.limit = 1;
  policy.window_ms = options_.prompt_again_interval_ms;
  policy.name = "payments_prompt_again";
  SIKA_ASSIGN_OR_RETURN(auto decision, options_.limiter->hit("prompt-again:" + tx.reference, policy));
  if (!decision.allowed)
    return rate_limited(bj::object{{"transaction_reference", "the prompt was sent again a moment ago"},
                                   {"retry_after", (decision.retry_after_ms + 999) / 1000}});
  const OperatorGate::Ticket ticket = gate_.enter();
  if (!ticket) return operator_busy();
  return conn->prompt_again(order);
}

Status Service::authenticate_callback(Connector& conn, const web::Request& req, const CallbackReport& report) {
  std::optional<Transaction> tx;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(tx, tables::find_by_provider_reference(c, report.provider_reference));
    return {};
  }));
  if (!tx) {
    // A refund's callback is checked against the refund's own order.
    std::optional<Refund> refund;
    std::optional<Transaction> refunded;
    SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(refund, tables::find_refund_by_provider_reference(c, report.provider_reference));
      if (refund) {
        SIKA_ASSIGN_OR_RETURN(refunded, tables::load(c, refund->transaction_reference));
      }
      return {};
    }));
    if (!refund || !refunded || refund->connector != conn.name())
      return conn.authenticate_callback(req, report, nullptr);
    const PaymentOrder order = refund_order(*refund, *refunded);
    return conn.authenticate_callback(req, report, &order);
  }
  if (tx->connector != conn.name()) return conn.authenticate_callback(req, report, nullptr);
  const PaymentOrder order = order_for(*tx);
  return conn.authenticate_callback(req, report, &order);
}

Result<std::string> Service::record_callback(Connector& conn, const CallbackReport& report, std::string_view body,
                                             const std::optional<OperatorStatus>& verified) {
  // What moves money: the callback itself when the operator signs it, else the operator's answer.
  const bool trusted = conn.signs_callbacks() || verified.has_value();
  const OperatorStatus& truth = verified ? *verified : report.status;
  const auto state = truth.state;
  tables::CallbackRow row;
  row.connector = std::string(conn.name());
  row.provider_reference = report.provider_reference;
  row.reported_status = report.status.state == OperatorStatus::State::succeeded ? "SUCCESSFUL"
                        : report.status.state == OperatorStatus::State::failed  ? "FAILED"
                                                                                : "PENDING";
  row.reason = report.status.reason;
  row.body = std::string(body);
  row.received_at = now();
  SIKA_TRY(write([&](store::Conn& c, ledger::Learned& learned) -> Status {
    row.transaction_id.reset();
    SIKA_ASSIGN_OR_RETURN(auto found, tables::find_by_provider_reference(c, report.provider_reference));
    if (!found) {
      SIKA_ASSIGN_OR_RETURN(auto refund, tables::find_refund_by_provider_reference(c, report.provider_reference));
      if (refund) {
        // A refund's callback: it moves the refund (recorded under the refunded collection).
        row.transaction_id = refund->transaction_id;
        SIKA_ASSIGN_OR_RETURN(std::string outcome, refund_callback(c, *refund, conn, trusted, truth, learned));
        row.outcome = "refund_" + outcome;
      } else {
        row.outcome = "unknown_transaction";
      }
    } else {
      Transaction& tx = *found;
      row.transaction_id = tx.id;
      if (tx.connector != conn.name()) {
        row.outcome = "wrong_connector";
      } else if (!trusted && tx.status == TxStatus::pending) {
        // Unverified: recovery asks the operator at once.
        row.outcome = "unverified";
        SIKA_TRY(tables::check_now(c, tx.id, now()));
      } else if (state == OperatorStatus::State::pending) {
        row.outcome = verified && report.status.state != state ? "contradicted" : "progress";
      } else if (tx.status == TxStatus::pending) {
        SIKA_ASSIGN_OR_RETURN(bool moved, apply(c, tx, move_for(truth, "callback"), learned));
        row.outcome = moved ? "applied" : "lost_race";
      } else if (tx.status == TxStatus::initiated) {
        row.outcome = "premature";
      } else {
        bool same = (tx.status == TxStatus::completed && state == OperatorStatus::State::succeeded) ||
                    (tx.status == TxStatus::failed && state == OperatorStatus::State::failed);
        // After a terminal status: recorded, never applied, never moves money.
        row.outcome = same ? "duplicate" : "late";
      }
    }
    return tables::insert_callback(c, row);
  }));
  if (row.outcome == "late" || row.outcome == "unknown_transaction" || row.outcome == "wrong_connector" ||
      row.outcome == "refund_late" || row.outcome == "refund_wrong_connector")
    spdlog::warn("operator callback {} for {}: {}", row.reported_status, report.provider_reference, row.outcome);
  return row.outcome;
}

Result<Service::AccountHolder> Service::account_holder(const Acting& merchant, std::string_view provider,
                                                       std::string_view wallet, json::FieldErrors errors) {
  auto cat = catalog();
  const catalog::PaymentService* service = nullptr;
  if (!cat) return unavailable(bj::string("the catalog is not loaded"));
  if (!errors.has("provider")) service = usable_service(*cat, provider, "provider", errors);
  AccountHolder out;
  if (service && !errors.has("wallet")) out.msisdn = normalize_wallet(*cat, *service, wallet, "wallet", errors);
  SIKA_TRY(errors.status());
  const catalog::Country* country = cat->country_by_id(service->country_id);
  if (country && !merchant.admin && !merchant.grants_country(country->code))
    return forbidden(bj::object{
        {"provider", "the country " + country->code + " of this service is not granted to this credential"}});
  const catalog::Provider* prov = cat->provider_by_id(service->provider_id);
  std::string name = merchant.environment == "sandbox" || !prov ? std::string("sandbox")
                     : country                                  ? instance_of(prov->connector, country->alpha2)
                                                                : prov->connector;
  Connector* conn = connector(name);
  if (!conn) return provider_unavailable(bj::object{{"provider", "no connector is available for this service"}});
  const OperatorGate::Ticket ticket = gate_.enter();
  if (!ticket) return operator_busy();
  SIKA_ASSIGN_OR_RETURN(out.name, conn->account_holder(service->code, out.msisdn));
  out.service_code = service->code;
  return out;
}

Result<std::optional<Acting>> acting_merchant(store::Db& db, std::int64_t merchant_id, std::string_view environment,
                                              std::int64_t user_tier, std::string job) {
  std::optional<merchant::Merchant> m;
  SIKA_TRY(db.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(m, merchant::find_by_id(c, merchant_id));
    return {};
  }));
  if (!m || !m->active) return std::optional<Acting>{};
  return std::optional<Acting>(
      Acting::system(m->id, m->matricule, std::string(environment), std::move(job), user_tier, m->countries));
}

}  // namespace sika::payments
