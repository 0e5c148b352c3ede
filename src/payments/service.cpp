#include "payments/service.hpp"

#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "catalog/fees.hpp"
#include "core/crypto.hpp"
#include "core/money.hpp"
#include "core/json.hpp"
#include "core/random.hpp"
#include "core/time.hpp"
#include "store/outbox.hpp"
#include "web/envelope.hpp"

namespace sika::payments {

namespace bj = boost::json;

namespace {

constexpr std::string_view kEventType = "transaction.status_changed";
constexpr std::size_t kMaxDescription = 255;
constexpr std::size_t kMaxMetadataBytes = 4096;
constexpr std::size_t kMaxDistribution = 20;

// Fields a client may never send: the platform sets them.
const std::set<std::string_view, std::less<>> kPlatformFields = {
    "fee",          "status",          "transaction_reference", "invoice_reference", "provider_reference",
    "required_total", "split_reference", "split_status",        "environment",       "operation",
    "confirmation_method", "confirmation_url", "created_at",    "updated_at",        "merchant",
    "merchant_id",  "failure_reason",  "expires_at",            "id"};

void refuse_unknown(const bj::object& body, std::initializer_list<std::string_view> allowed, json::FieldErrors& errors,
                    std::string_view prefix = "") {
  for (const auto& kv : body) {
    std::string_view k = kv.key();
    if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
    std::string field = std::string(prefix) + std::string(k);
    if (prefix.empty() && kPlatformFields.contains(k))
      errors.add(field, "is set by the platform and cannot be sent");
    else
      errors.add(field, "is not a known field");
  }
}

Error field_error(std::string_view field, std::string_view problem, ErrorKind kind = ErrorKind::invalid,
                  std::string_view code = "empty_data") {
  bj::object d;
  d[field] = problem;
  return Error{kind, std::string(code), std::move(d)};
}


// Uppercase references ("TX-" + 16 characters of 23456789ABCDEFGHJKLMNPQRSTUVWXYZ, 80 bits) cut
// from one buffer of random bytes: one CSPRNG call per intent instead of one per character.
// 256 is a multiple of the 32-letter alphabet, so `byte & 31` is uniform.
struct References {
  std::string transaction, invoice, split, provider;
};
References new_references() {
  static constexpr std::string_view kAlphabet = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ";
  std::string r = random_bytes(64);
  auto cut = [&](std::string_view prefix, std::size_t from) {
    std::string out(prefix);
    for (std::size_t i = 0; i < 16; ++i) out.push_back(kAlphabet[static_cast<unsigned char>(r[from + i]) & 31]);
    return out;
  };
  References refs{cut("TX-", 0), cut("INV-", 16), cut("SPL-", 32), {}};
  std::string b = r.substr(48, 16);
  b[6] = static_cast<char>((b[6] & 0x0F) | 0x40);
  b[8] = static_cast<char>((b[8] & 0x3F) | 0x80);
  std::string hex = hex_encode(b);
  refs.provider = hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" + hex.substr(16, 4) + "-" +
                  hex.substr(20, 12);
  return refs;
}



// A rate as sent (integer or number) -> parts per million; at most 4 decimals, 0 < rate <= 100.
std::optional<std::int64_t> rate_to_ppm(const bj::value& v, std::string& problem) {
  std::string text;
  if (v.is_int64()) {
    text = std::to_string(v.get_int64());
  } else if (v.is_uint64()) {
    text = std::to_string(v.get_uint64());
  } else if (v.is_double()) {
    char buf[64];
    auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v.get_double());
    if (ec != std::errc()) {
      problem = "must be a number";
      return std::nullopt;
    }
    text.assign(buf, p);
  } else {
    problem = "must be a number";
    return std::nullopt;
  }
  auto ppm = catalog::decimal_to_scaled(text, 4, false, kRateWhole);
  if (!ppm || *ppm <= 0) {
    problem = "must be a number greater than 0 and at most 100, with at most 4 decimals";
    return std::nullopt;
  }
  return *ppm;
}

}  // namespace

Service::Service(store::Db& db, CatalogSnapshot catalog, web::HttpClient& http, Options options)
    : db_(db), catalog_(std::move(catalog)), http_(http), options_(std::move(options)) {
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
  return o;
}

Status Service::write(const std::function<Status(store::Conn&, ledger::Learned&)>& fn) {
  ledger::Learned learned;
  Status st;
  // Hot ledger rows (a merchant's balance, fee revenue) make concurrent SERIALIZABLE units on
  // PostgreSQL conflict; the store retries a unit a few times, and payments units (re-runnable by
  // construction) get a few more rounds with a randomized pause before a 503 reaches the caller.
  for (int round = 0;; ++round) {
    st = db_.write([&](store::Conn& c) -> Status {
      learned.clear();
      return fn(c, learned);
    });
    if (st || !st.error().is(ErrorKind::retryable) || round >= 3) break;
    std::this_thread::sleep_for(std::chrono::microseconds(2000 + random_uniform(8000 << round)));
  }
  if (st) accounts_.remember(learned);
  return st;
}

Result<Transaction> Service::load(store::Conn& conn, std::string_view reference) {
  SIKA_ASSIGN_OR_RETURN(auto row, conn.query_one("SELECT " + std::string(kTransactionColumns) +
                                                      " FROM pay_transactions WHERE reference = ?",
                                                  {std::string(reference)}));
  if (!row) return not_found(bj::object{{"transaction_reference", "no such transaction"}});
  return transaction_from_row(*row);
}

Result<Transaction> Service::load_for(const web::Principal& p, std::string_view reference,
                                      std::string_view operation) {
  Transaction tx;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(tx, load(c, reference));
    return {};
  }));
  // Another merchant's (or another environment's, or another operation's) transaction does not exist for this caller.
  if ((!p.admin && tx.merchant_id != p.merchant_id) || tx.environment != p.environment || tx.operation != operation)
    return not_found(bj::object{{"transaction_reference", "no such transaction"}});
  return tx;
}

Result<Transaction> Service::refresh(Transaction tx) {
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(tx, load(c, tx.reference));
    return {};
  }));
  return tx;
}

// ---- transitions ------------------------------------------------------------------------------

Result<bool> Service::apply(store::Conn& conn, Transaction& tx, const Move& move, ledger::Learned& learned) {
  if (!legal_move(tx.status, move.to))
    return internal_error(bj::string("illegal move " + std::string(to_string(tx.status)) + " -> " +
                                     std::string(to_string(move.to))));
  const TxStatus from = tx.status;
  const std::int64_t at = now();
  Transaction next = tx;
  next.status = move.to;
  next.updated_at = std::max(at, tx.updated_at);
  if (move.reason) next.failure_reason = move.reason;
  if (move.operator_reference && !move.operator_reference->empty()) next.operator_reference = move.operator_reference;
  if (move.submitted_at) next.submitted_at = move.submitted_at;
  if (move.expires_at) next.expires_at = *move.expires_at;
  if (next.settlement_mode == kSplit) {
    if (move.to == TxStatus::completed) next.split_status = kSplitSettled;
    else if (is_terminal(move.to)) next.split_status = kSplitCancelled;
  }
  SIKA_ASSIGN_OR_RETURN(std::int64_t changed,
                        conn.exec("UPDATE pay_transactions SET status = ?, split_status = ?, failure_reason = ?, "
                                  "operator_reference = ?, submitted_at = ?, expires_at = ?, updated_at = ? "
                                  "WHERE id = ? AND status = ?",
                                  {std::string(to_string(next.status)), next.split_status, store::opt(next.failure_reason),
                                   store::opt(next.operator_reference), store::opt(next.submitted_at), next.expires_at,
                                   next.updated_at, tx.id, std::string(to_string(from))}));
  if (changed == 0) return false;  // another actor moved it first; nothing written
  SIKA_TRY(conn.exec("INSERT INTO pay_transitions (transaction_id, from_status, to_status, source, reason, at) "
                     "VALUES (?, ?, ?, ?, ?, ?)",
                     {tx.id, std::string(to_string(from)), std::string(to_string(move.to)), std::string(move.source),
                      store::opt(move.reason), next.updated_at}));

  // Money: the journal this move implies.
  ledger::Posting posting;
  posting.transaction_id = tx.id;
  posting.environment = tx.environment;
  posting.currency = tx.currency;
  const auto& env = tx.environment;
  const auto& cur = tx.currency;
  if (tx.operation == kCollection && move.to == TxStatus::completed) {
    posting.kind = ledger::kCollection;
    posting.memo = "collection " + tx.reference;
    if (tx.channel == kChannelWallet)
      posting.legs.push_back({ledger::customer_wallet(tx.customer_wallet, env, cur), tx.required_total, 0});
    else
      posting.legs.push_back({ledger::operator_clearing(tx.service_code, env, cur), tx.required_total, 0});
    if (tx.fee > 0) posting.legs.push_back({ledger::fee_revenue(env, cur), 0, tx.fee});
    if (tx.settlement_mode == kSplit) {
      SIKA_ASSIGN_OR_RETURN(auto rows, conn.query("SELECT id, merchant_id, rate_ppm FROM pay_splits "
                                                  "WHERE transaction_id = ? ORDER BY position",
                                                  {tx.id}));
      if (rows.empty()) return internal_error(bj::string("split transaction without split lines"));
      std::vector<std::int64_t> rates;
      for (const auto& r : rows) rates.push_back(r.i64(2));
      auto shares = allocate_split(tx.amount, rates);
      for (std::size_t i = 0; i < rows.size(); ++i) {
        SIKA_TRY(conn.exec("UPDATE pay_splits SET amount = ? WHERE id = ?", {shares[i], rows[i].i64(0)}));
        if (shares[i] > 0)
          posting.legs.push_back({ledger::merchant_available(rows[i].i64(1), env, cur), 0, shares[i]});
      }
    } else {
      posting.legs.push_back({ledger::merchant_available(tx.merchant_id, env, cur), 0, tx.amount});
    }
  } else if (tx.operation == kDisbursement && move.to == TxStatus::pending) {
    posting.kind = ledger::kPayoutReserve;
    posting.memo = "payout reserve " + tx.reference;
    posting.legs.push_back({ledger::merchant_available(tx.merchant_id, env, cur), tx.required_total, 0});
    posting.legs.push_back({ledger::merchant_pending(tx.merchant_id, env, cur), 0, tx.required_total});
  } else if (tx.operation == kDisbursement && move.to == TxStatus::completed) {
    posting.kind = ledger::kPayout;
    posting.memo = "payout " + tx.reference;
    posting.legs.push_back({ledger::merchant_pending(tx.merchant_id, env, cur), tx.required_total, 0});
    if (tx.channel == kChannelWallet)
      posting.legs.push_back({ledger::customer_wallet(tx.customer_wallet, env, cur), 0, tx.amount});
    else
      posting.legs.push_back({ledger::operator_clearing(tx.service_code, env, cur), 0, tx.amount});
    if (tx.fee > 0) posting.legs.push_back({ledger::fee_revenue(env, cur), 0, tx.fee});
  } else if (tx.operation == kDisbursement && from == TxStatus::pending && is_terminal(move.to)) {
    posting.kind = ledger::kPayoutRelease;
    posting.memo = "payout release " + tx.reference;
    posting.legs.push_back({ledger::merchant_pending(tx.merchant_id, env, cur), tx.required_total, 0});
    posting.legs.push_back({ledger::merchant_available(tx.merchant_id, env, cur), 0, tx.required_total});
  }
  if (!posting.legs.empty()) SIKA_TRY(ledger::post(conn, posting, next.updated_at, &accounts_, learned));

  SIKA_TRY(store::append_event(conn, tx.merchant_id, kEventType, tx.reference, event_payload(next), next.updated_at));
  tx = std::move(next);
  return true;
}

Result<Transaction> Service::settle_from_operator(Transaction tx, const OperatorStatus& st, std::string_view source) {
  if (st.state == OperatorStatus::State::pending) return tx;
  Move move;
  move.to = st.state == OperatorStatus::State::succeeded ? TxStatus::completed : TxStatus::failed;
  move.source = source;
  if (move.to == TxStatus::failed) move.reason = st.reason.empty() ? "OPERATOR_FAILURE" : st.reason;
  move.operator_reference = st.operator_reference;
  const Transaction original = tx;
  bool moved = false;
  SIKA_TRY(write([&](store::Conn& c, ledger::Learned& learned) -> Status {
    tx = original;
    SIKA_ASSIGN_OR_RETURN(moved, apply(c, tx, move, learned));
    return {};
  }));
  if (!moved) return refresh(original);
  return tx;
}

// ---- intents ----------------------------------------------------------------------------------

web::Response Service::create_intent(web::Request& req) { return create(req, kCollection); }
web::Response Service::disbursement_intent(web::Request& req) { return create(req, kDisbursement); }

web::Response Service::create(web::Request& req, std::string_view operation) {
  auto principal_r = web::merchant_caller(req);
  if (!principal_r) return web::error(req, principal_r.error());
  const web::Principal& principal = **principal_r;
  auto body_r = web::body_object(req);
  if (!body_r) return web::error(req, body_r.error());
  const bj::object& body = *body_r;
  const bool collection = operation == kCollection;

  json::FieldErrors errors;
  if (collection)
    refuse_unknown(body,
                   {"amount", "currency", "transaction_uuid", "provider", "channel", "customer_wallet", "description",
                    "metadata", "distribution", "settlement_mode"},
                   errors);
  else
    refuse_unknown(body,
                   {"amount", "currency", "transaction_uuid", "provider", "channel", "customer_wallet", "description",
                    "metadata"},
                   errors);
  auto amount = json::get_int(body, "amount", errors, true);
  auto currency = json::get_string(body, "currency", errors, true);
  auto uuid = json::get_string(body, "transaction_uuid", errors, true);
  auto provider = json::get_string(body, "provider", errors, true);
  auto channel = json::get_string(body, "channel", errors);
  auto wallet = json::get_string(body, "customer_wallet", errors, true);
  auto description = json::get_string(body, "description", errors);
  const bj::object* metadata = json::get_object(body, "metadata", errors);
  std::optional<std::string> mode;
  const bj::array* distribution = nullptr;
  if (collection) {
    mode = json::get_string(body, "settlement_mode", errors);
    distribution = json::get_array(body, "distribution", errors);
  }

  if (amount && *amount <= 0) errors.add("amount", "must be a positive integer (minor units)");
  if (amount && *amount > options_.max_amount)
    errors.add("amount", "must be at most " + std::to_string(options_.max_amount));
  if (currency && !money::is_currency_code(*currency)) errors.add("currency", "must be a 3-letter ISO 4217 code");
  if (uuid && !is_uuid(*uuid)) errors.add("transaction_uuid", "must be a UUID (8-4-4-4-12 hex digits)");
  if (channel && *channel != kChannelProvider && *channel != kChannelWallet && *channel != kChannelAuto)
    errors.add("channel", "must be PROVIDER, WALLET or AUTO");
  if (description && description->size() > kMaxDescription)
    errors.add("description", "must be at most " + std::to_string(kMaxDescription) + " characters");
  std::string metadata_text = metadata ? bj::serialize(*metadata) : "{}";
  if (metadata_text.size() > kMaxMetadataBytes)
    errors.add("metadata", "must be at most " + std::to_string(kMaxMetadataBytes) + " bytes of JSON");
  if (mode && *mode != kDirect && *mode != kSplit) errors.add("settlement_mode", "must be DIRECT or SPLIT");
  const bool split = mode && *mode == kSplit;

  std::vector<SplitLine> distribution_lines;  // validated split lines, stored with the transaction
  if (collection) {
    if (split && (!distribution || distribution->empty()))
      errors.add("distribution", "is required with settlement_mode SPLIT (a non-empty array)");
    if (!split && distribution && !distribution->empty())
      errors.add("distribution", "is only accepted with settlement_mode SPLIT");
    if (split && distribution && distribution->size() > kMaxDistribution)
      errors.add("distribution", "must have at most " + std::to_string(kMaxDistribution) + " items");
    if (split && distribution && !distribution->empty() && distribution->size() <= kMaxDistribution) {
      std::int64_t total = 0;
      bool rates_ok = true;
      std::set<std::string> seen;
      for (std::size_t i = 0; i < distribution->size(); ++i) {
        std::string prefix = "distribution[" + std::to_string(i) + "].";
        const bj::value& item = (*distribution)[i];
        if (!item.is_object()) {
          errors.add("distribution[" + std::to_string(i) + "]", "must be an object");
          rates_ok = false;
          continue;
        }
        const bj::object& o = item.get_object();
        refuse_unknown(o, {"matricule", "rate", "description", "metadata"}, errors, prefix);
        SplitLine line;
        line.position = static_cast<int>(i);
        json::FieldErrors item_errors;
        auto matricule = json::get_string(o, "matricule", item_errors, true);
        auto line_description = json::get_string(o, "description", item_errors);
        const bj::object* line_metadata = json::get_object(o, "metadata", item_errors);
        for (const auto& kv : item_errors.details()) errors.add(prefix + std::string(kv.key()), kv.value().as_string());
        if (matricule) {
          if (matricule->empty() || matricule->size() > 64) errors.add(prefix + "matricule", "must be a merchant matricule");
          else if (!seen.insert(*matricule).second) errors.add(prefix + "matricule", "appears more than once");
          line.matricule = *matricule;
        }
        auto rate_it = o.find("rate");
        if (rate_it == o.end() || rate_it->value().is_null()) {
          errors.add(prefix + "rate", "is required");
          rates_ok = false;
        } else {
          std::string problem;
          auto ppm = rate_to_ppm(rate_it->value(), problem);
          if (!ppm) {
            errors.add(prefix + "rate", problem);
            rates_ok = false;
          } else {
            line.rate_ppm = *ppm;
            total += *ppm;
          }
        }
        if (line_description && line_description->size() > kMaxDescription)
          errors.add(prefix + "description", "must be at most " + std::to_string(kMaxDescription) + " characters");
        line.description = line_description.value_or("");
        line.metadata = line_metadata ? bj::serialize(*line_metadata) : "{}";
        if (line.metadata.size() > kMaxMetadataBytes) errors.add(prefix + "metadata", "is too large");
        distribution_lines.push_back(std::move(line));
      }
      if (rates_ok && total != kRateWhole) {
        std::string sum = std::to_string(total / 10'000);
        if (total % 10'000) {
          std::string frac = std::to_string(10'000 + total % 10'000).substr(1);
          while (frac.back() == '0') frac.pop_back();
          sum += "." + frac;
        }
        errors.add("distribution", "rates must sum to 100 (they sum to " + sum + ")");
      }
    }
  }

  // The service, from the cached catalog snapshot (no database read).
  auto cat = catalog();
  const catalog::PaymentService* service = nullptr;
  const catalog::Provider* prov = nullptr;
  const catalog::Country* country = nullptr;
  if (provider) {
    service = cat ? cat->service(*provider) : nullptr;
    if (!service) {
      errors.add("provider", "is not a known service code");
    } else if (!cat->usable(*service)) {
      errors.add("provider", "is not active");
      service = nullptr;
    } else {
      prov = cat->provider_by_id(service->provider_id);
      country = cat->country_by_id(service->country_id);
      if (!prov || !country) {
        errors.add("provider", "is not configured");
        service = nullptr;
      }
    }
  }
  std::string msisdn;
  if (service) {
    if (currency && money::is_currency_code(*currency) && *currency != service->currency)
      errors.add("currency", "must be " + service->currency + ", the currency of " + service->code);
    if (amount && *amount > 0) {
      if (service->min_amount && *amount < *service->min_amount)
        errors.add("amount", "must be at least " + std::to_string(*service->min_amount) + " for " + service->code);
      if (service->max_amount && *amount > *service->max_amount)
        errors.add("amount", "must be at most " + std::to_string(*service->max_amount) + " for " + service->code);
    }
    if (wallet) {
      auto normalized = cat->normalize_msisdn(*service, *wallet, "customer_wallet");
      if (normalized)
        msisdn = *normalized;
      else if (normalized.error().details.is_object())
        for (const auto& kv : normalized.error().details.as_object())
          errors.add(kv.key(), kv.value().is_string() ? std::string_view(kv.value().as_string()) : "is invalid");
    }
  }
  if (!errors.empty()) return web::error(req, errors.status().error());

  if (!principal.admin && !principal.grants_country(country->code))
    return web::error(req, field_error("provider", "the country " + country->code +
                                                       " of this service is not granted to this credential",
                                       ErrorKind::forbidden, "access_denied"));

  // Channel and the service that carries the money (see docs/payments.md, "Channels").
  const bool wallet_service = service->kind == catalog::ServiceKind::wallet;
  const std::string requested = channel.value_or(std::string(kChannelProvider));
  const catalog::PaymentService* platform_wallet = wallet_service ? service : nullptr;
  if (!platform_wallet)
    for (const auto& s : cat->services())
      if (s.kind == catalog::ServiceKind::wallet && s.country_id == service->country_id && cat->usable(s)) {
        platform_wallet = &s;
        break;
      }
  auto quote_for = [&](const catalog::PaymentService* s) {
    return catalog::quote_fee(*cat, collection ? catalog::Operation::collection : catalog::Operation::disbursement,
                              collection ? std::optional<catalog::ServiceKey>(s->code) : std::nullopt,
                              collection ? std::nullopt : std::optional<catalog::ServiceKey>(s->code), *amount,
                              principal.user_tier);
  };
  std::string resolved;
  const catalog::PaymentService* effective = service;
  if (requested == kChannelProvider) {
    if (wallet_service)
      return web::error(req, field_error("channel", service->code + " is a platform wallet service: use WALLET or AUTO"));
    resolved = kChannelProvider;
  } else if (requested == kChannelWallet) {
    if (!platform_wallet) return web::error(req, field_error("channel", "there is no platform wallet in " + country->code));
    resolved = kChannelWallet;
    effective = platform_wallet;
  } else if (wallet_service) {  // AUTO
    resolved = kChannelWallet;
  } else {
    // AUTO with an operator's service: the customer's platform wallet in this country when it
    // exists and (for a collection) covers the wallet price; the named operator otherwise.
    resolved = kChannelProvider;
    if (platform_wallet && principal.environment == "sandbox") {
      auto wallet_quote = quote_for(platform_wallet);
      if (wallet_quote) {
        std::int64_t available = 0;
        bool exists = false;
        auto key = ledger::customer_wallet(msisdn, principal.environment, service->currency);
        auto st = db_.read([&](store::Conn& c) -> Status {
          SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT balance FROM ledger_accounts WHERE owner = ? AND "
                                                      "environment = ? AND currency = ? AND kind = ?",
                                                      {key.owner, key.environment, key.currency, key.kind}));
          exists = row.has_value();
          available = row ? row->i64(0) : 0;
          return {};
        });
        if (!st) return web::error(req, st.error());
        if (collection ? exists && available >= *amount + wallet_quote->fee : exists) {
          resolved = kChannelWallet;
          effective = platform_wallet;
        }
      }
    }
  }
  if (resolved == kChannelWallet && principal.environment != "sandbox")
    return web::error(req, field_error("channel", "the WALLET channel needs the customer's one-time code, which is "
                                                  "only issued in the sandbox for now"));
  if (effective != service) {
    if (effective->min_amount && *amount < *effective->min_amount)
      return web::error(req, field_error("amount", "must be at least " + std::to_string(*effective->min_amount) +
                                                       " for " + effective->code));
    if (effective->max_amount && *amount > *effective->max_amount)
      return web::error(req, field_error("amount", "must be at most " + std::to_string(*effective->max_amount) +
                                                       " for " + effective->code));
  }
  std::string connector_name;
  if (resolved == kChannelWallet) {
    connector_name = "wallet";
  } else {
    connector_name = principal.environment == "sandbox" ? std::string("sandbox") : prov->connector;
    if (!connector(connector_name))
      return web::error(req, field_error("provider", "no connector is available for " + prov->code, ErrorKind::unavailable,
                                         "provider_unavailable"));
  }

  // Fee from the fee engine (incoming service for a collection, outgoing for a payout).
  auto quote = quote_for(effective);
  if (!quote) return web::error(req, quote.error());
  const std::int64_t fee = quote->fee;
  std::int64_t required_total = 0;
  if (fee < 0 || __builtin_add_overflow(*amount, fee, &required_total))
    return web::error(req, field_error("amount", "is too large"));

  // The transaction as it will be stored.
  const std::int64_t at = now();
  Transaction tx;
  const References refs = new_references();
  tx.reference = refs.transaction;
  tx.merchant_id = principal.merchant_id;
  tx.merchant = principal.merchant;
  tx.environment = principal.environment;
  tx.operation = operation;
  tx.transaction_uuid = *uuid;
  tx.request_hash = hex_encode(crypto::sha256(std::string(operation) + "\n" + canonical_json(body)));
  tx.invoice_reference = refs.invoice;
  tx.provider_reference = refs.provider;
  tx.status = TxStatus::initiated;
  tx.channel = resolved;
  tx.service_code = effective->code;
  tx.country = country->code;
  tx.connector = connector_name;
  tx.customer_wallet = msisdn;
  tx.amount = *amount;
  tx.currency = service->currency;
  tx.fee = fee;
  tx.required_total = required_total;
  if (collection) {
    tx.confirmation_method = resolved == kChannelWallet ? "OTP" : "MSISDN";
    tx.confirmation_url = confirmation_url(tx.reference);
  } else {
    tx.confirmation_method = "NONE";
    tx.confirmation_url = "";
  }
  tx.settlement_mode = split ? kSplit : kDirect;
  tx.split_reference = split ? refs.split : "";
  tx.split_status = split ? kSplitPending : kSplitNone;
  tx.description = description.value_or("");
  tx.metadata = metadata_text;
  tx.needs_otp = collection && (effective->needs_otp || resolved == kChannelWallet);
  tx.expires_at = at + (collection ? options_.intent_ttl_ms : options_.disbursement_ttl_ms);
  tx.created_at = at;
  tx.updated_at = at;

  const Transaction prepared = tx;
  Transaction result;
  bool created = false;
  Status st = write([&](store::Conn& c, ledger::Learned& learned) -> Status {
    result = prepared;
    created = false;
    SIKA_ASSIGN_OR_RETURN(
        auto inserted,
        c.query_one("INSERT INTO pay_transactions (reference, merchant_id, environment, operation, transaction_uuid, "
                    "request_hash, invoice_reference, provider_reference, status, channel, service_code, country, "
                    "connector, customer_wallet, amount, currency, fee, required_total, confirmation_method, "
                    "confirmation_url, settlement_mode, split_reference, split_status, description, metadata, "
                    "needs_otp, otp_failures, expires_at, created_at, updated_at) VALUES "
                    "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?) "
                    "ON CONFLICT (merchant_id, environment, transaction_uuid) DO NOTHING RETURNING id",
                    {result.reference, result.merchant_id, result.environment, result.operation,
                     result.transaction_uuid, result.request_hash, result.invoice_reference,
                     result.provider_reference, std::string(to_string(result.status)), result.channel,
                     result.service_code, result.country, result.connector, result.customer_wallet, result.amount,
                     result.currency, result.fee, result.required_total, result.confirmation_method,
                     result.confirmation_url, result.settlement_mode, result.split_reference, result.split_status,
                     result.description, result.metadata, std::int64_t{result.needs_otp ? 1 : 0}, result.expires_at,
                     result.created_at, result.updated_at}));
    if (!inserted) {
      // The same (merchant, environment, transaction_uuid) exists: the same request gets its record back.
      SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT " + std::string(kTransactionColumns) +
                                                      " FROM pay_transactions WHERE merchant_id = ? AND "
                                                      "environment = ? AND transaction_uuid = ?",
                                                  {result.merchant_id, result.environment, result.transaction_uuid}));
      if (!row) return unavailable(bj::string("concurrent request with the same transaction_uuid; retry"));
      Transaction existing = transaction_from_row(*row);
      if (existing.request_hash != result.request_hash)
        return conflict(bj::object{{"transaction_uuid", "was already used for a different request"},
                                   {"transaction_reference", existing.reference}});
      result = std::move(existing);
      return {};
    }
    created = true;
    result.id = inserted->i64(0);
    if (!distribution_lines.empty()) {
      // Beneficiaries must exist and be active; one read inside the unit.
      std::string sql = "SELECT id, matricule, active FROM merchants WHERE matricule IN (";
      store::Params params;
      for (std::size_t i = 0; i < distribution_lines.size(); ++i) {
        sql += i ? ", ?" : "?";
        params.push_back(distribution_lines[i].matricule);
      }
      sql += ")";
      SIKA_ASSIGN_OR_RETURN(auto rows, c.query(sql, params));
      std::map<std::string, std::pair<std::int64_t, bool>> found;
      for (const auto& r : rows) found[r.str(1)] = {r.i64(0), r.boolean(2)};
      json::FieldErrors missing;
      for (const auto& line : distribution_lines) {
        auto it = found.find(line.matricule);
        std::string field = "distribution[" + std::to_string(line.position) + "].matricule";
        if (it == found.end()) missing.add(field, "is not a known merchant");
        else if (!it->second.second) missing.add(field, "is not an active merchant");
      }
      SIKA_TRY(missing.status());
      std::string insert = "INSERT INTO pay_splits (transaction_id, position, matricule, merchant_id, rate_ppm, "
                           "description, metadata) VALUES ";
      store::Params ip;
      for (std::size_t i = 0; i < distribution_lines.size(); ++i) {
        const auto& line = distribution_lines[i];
        insert += i ? ", (?, ?, ?, ?, ?, ?, ?)" : "(?, ?, ?, ?, ?, ?, ?)";
        ip.insert(ip.end(), {result.id, std::int64_t{line.position}, line.matricule, found[line.matricule].first,
                             line.rate_ppm, line.description, line.metadata});
      }
      SIKA_TRY(c.exec(insert, ip));
    }
    if (!collection) {
      // A payout reserves its funds at once and is submitted (PENDING); a WALLET payout completes here.
      Move reserve;
      reserve.to = TxStatus::pending;
      reserve.source = "intent";
      reserve.submitted_at = result.created_at;
      SIKA_ASSIGN_OR_RETURN(bool moved, apply(c, result, reserve, learned));
      if (!moved) return internal_error(bj::string("new payout could not be reserved"));
      if (result.channel == kChannelWallet) {
        Move done;
        done.to = TxStatus::completed;
        done.source = "wallet";
        SIKA_ASSIGN_OR_RETURN(bool paid, apply(c, result, done, learned));
        if (!paid) return internal_error(bj::string("new wallet payout could not complete"));
      }
    }
    return {};
  });
  if (!st) {
    Error e = st.error();
    if (e.code == "insufficient_funds") {
      e.kind = ErrorKind::invalid;
      e.details = bj::object{{"amount", "the available balance does not cover required_total " +
                                            money::format(required_total, tx.currency)}};
    }
    return web::error(req, e);
  }
  if (created && !collection && result.channel == kChannelProvider) {
    // Submitted after the reservation committed; a refusal releases the funds.
    Connector* conn = connector_for(result);
    Status sent = conn ? conn->request_payout(order_for(result)) : Status(unavailable());
    if (!sent) {
      OperatorStatus failed;
      failed.state = OperatorStatus::State::failed;
      failed.reason = sent.error().code == "account_not_found" ? "INVALID_ACCOUNT" : "OPERATOR_REFUSED";
      auto settled = settle_from_operator(result, failed, "connector");
      if (!settled) return web::error(req, settled.error());
      result = std::move(settled).value();
    }
  }
  return web::ok(req, to_record(result), {}, "submitted");
}

// ---- execution --------------------------------------------------------------------------------

Result<Transaction> Service::run_execute(Transaction tx, std::optional<std::string> otp, std::string_view source) {
  if (tx.operation != kCollection)
    return conflict(bj::object{{"transaction_reference", "is a disbursement; payouts are submitted at intent"}});
  const std::int64_t at = now();
  if (tx.status == TxStatus::initiated && tx.expires_at <= at) {
    Move m;
    m.to = TxStatus::expired;
    m.source = source;
    m.reason = "EXPIRED";
    const Transaction original = tx;
    SIKA_TRY(write([&](store::Conn& c, ledger::Learned& learned) -> Status {
      tx = original;
      SIKA_ASSIGN_OR_RETURN(bool moved, apply(c, tx, m, learned));
      (void)moved;
      return {};
    }));
    return conflict(bj::object{{"transaction_reference", "has expired"}});
  }
  if (tx.status != TxStatus::initiated)
    return conflict(bj::object{{"transaction_reference", "is " + std::string(to_string(tx.status)) +
                                                             ": only an INITIATED collection can be executed"}});
  if (tx.needs_otp) {
    if (!otp || otp->empty()) return field_error("otp", "is required by this service");
    bool digits = otp->size() >= 4 && otp->size() <= 8 &&
                  std::all_of(otp->begin(), otp->end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) return field_error("otp", "must be 4 to 8 digits");
  }
  PaymentOrder order = order_for(tx, tx.needs_otp ? otp : std::nullopt);
  Connector* conn = tx.channel == kChannelWallet ? sandbox_.get() : connector_for(tx);
  if (!conn) return make_error(ErrorKind::unavailable, "provider_unavailable", bj::object{{"provider", "no connector for " + tx.service_code}});
  if (tx.needs_otp) {
    // The wallet channel's code is issued by the platform; in the sandbox it is the sandbox code.
    Status checked = conn->check_otp(order);
    if (!checked) {
      const Transaction original = tx;
      std::int64_t failures = 0;
      bool failed_now = false;
      SIKA_TRY(write([&](store::Conn& c, ledger::Learned& learned) -> Status {
        tx = original;
        failed_now = false;
        SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("UPDATE pay_transactions SET otp_failures = otp_failures + 1 "
                                                    "WHERE id = ? AND status = 'INITIATED' RETURNING otp_failures",
                                                    {tx.id}));
        if (!row) return {};
        failures = row->i64(0);
        if (failures >= options_.max_otp_attempts) {
          Move m;
          m.to = TxStatus::failed;
          m.source = source;
          m.reason = "INVALID_OTP";
          SIKA_ASSIGN_OR_RETURN(failed_now, apply(c, tx, m, learned));
        }
        return {};
      }));
      bj::object d;
      d["otp"] = failed_now ? "is incorrect; too many attempts, the transaction has FAILED" : "is incorrect";
      d["attempts_left"] = std::max<std::int64_t>(0, options_.max_otp_attempts - failures);
      return bad_request("invalid_otp", std::move(d));
    }
  }

  const Transaction original = tx;
  if (tx.channel == kChannelWallet) {
    // Instant: INITIATED -> PENDING -> COMPLETED with the wallet debit, in one unit.
    Status st = write([&](store::Conn& c, ledger::Learned& learned) -> Status {
      tx = original;
      Move submit;
      submit.to = TxStatus::pending;
      submit.source = source;
      submit.submitted_at = at;
      SIKA_ASSIGN_OR_RETURN(bool moved, apply(c, tx, submit, learned));
      if (!moved) return conflict(bj::object{{"transaction_reference", "was executed concurrently"}});
      Move done;
      done.to = TxStatus::completed;
      done.source = "wallet";
      SIKA_ASSIGN_OR_RETURN(bool paid, apply(c, tx, done, learned));
      if (!paid) return internal_error(bj::string("wallet payment could not complete"));
      return {};
    });
    if (st) return tx;
    if (st.error().code != "insufficient_funds") return st.take_error();
    // The balance is short: nothing was debited; the collection fails.
    Status failed = write([&](store::Conn& c, ledger::Learned& learned) -> Status {
      tx = original;
      Move m;
      m.to = TxStatus::failed;
      m.source = source;
      m.reason = "INSUFFICIENT_FUNDS";
      SIKA_ASSIGN_OR_RETURN(bool moved, apply(c, tx, m, learned));
      if (!moved) return conflict(bj::object{{"transaction_reference", "was executed concurrently"}});
      return {};
    });
    if (!failed) return failed.take_error();
    return tx;
  }

  // PROVIDER: claim the transaction (PENDING) first, then submit; a refusal fails it.
  Status claimed = write([&](store::Conn& c, ledger::Learned& learned) -> Status {
    tx = original;
    Move submit;
    submit.to = TxStatus::pending;
    submit.source = source;
    submit.submitted_at = at;
    submit.expires_at = at + options_.pending_ttl_ms;
    SIKA_ASSIGN_OR_RETURN(bool moved, apply(c, tx, submit, learned));
    if (!moved) return conflict(bj::object{{"transaction_reference", "was executed concurrently"}});
    return {};
  });
  if (!claimed) return claimed.take_error();
  order.submitted_at = at;
  Status sent = conn->request_collection(order);
  if (!sent) {
    OperatorStatus failed;
    failed.state = OperatorStatus::State::failed;
    failed.reason = "OPERATOR_REFUSED";
    return settle_from_operator(tx, failed, "connector");
  }
  return tx;
}

web::Response Service::execute(web::Request& req) {
  auto principal = web::merchant_caller(req);
  if (!principal) return web::error(req, principal.error());
  auto body = web::body_object(req);
  if (!body) return web::error(req, body.error());
  json::FieldErrors errors;
  refuse_unknown(*body, {"transaction_reference", "invoice_reference", "otp"}, errors);
  auto reference = json::get_string(*body, "transaction_reference", errors, true);
  auto invoice = json::get_string(*body, "invoice_reference", errors);
  std::optional<std::string> otp;
  if (auto it = body->find("otp"); it != body->end() && !it->value().is_null()) {
    // The spec types a pay-link otp as an integer; accept both forms here.
    if (it->value().is_string()) otp = std::string(it->value().as_string());
    else if (it->value().is_int64() && it->value().as_int64() >= 0) otp = std::to_string(it->value().as_int64());
    else errors.add("otp", "must be a string of digits");
  }
  if (!errors.empty()) return web::error(req, errors.status().error());
  auto tx = load_for(**principal, *reference, kCollection);
  if (!tx) return web::error(req, tx.error());
  if (invoice && *invoice != tx->invoice_reference)
    return web::error(req, field_error("invoice_reference", "does not match the transaction"));
  auto done = run_execute(std::move(tx).value(), std::move(otp), "execute");
  if (!done) return web::error(req, done.error());
  return web::ok(req, to_record(*done), {}, "submitted");
}

web::Response Service::cancel(web::Request& req) {
  auto principal = web::merchant_caller(req);
  if (!principal) return web::error(req, principal.error());
  auto body = web::body_object(req);
  if (!body) return web::error(req, body.error());
  json::FieldErrors errors;
  refuse_unknown(*body, {"transaction_reference"}, errors);
  auto reference = json::get_string(*body, "transaction_reference", errors, true);
  if (!errors.empty()) return web::error(req, errors.status().error());
  auto tx = load_for(**principal, *reference, kCollection);
  if (!tx) return web::error(req, tx.error());
  if (tx->status != TxStatus::initiated)
    return web::error(req, conflict(bj::object{{"transaction_reference",
                                                "is " + std::string(to_string(tx->status)) +
                                                    ": only an INITIATED collection can be cancelled"}}));
  const Transaction original = *tx;
  Transaction result;
  bool moved = false;
  Status st = write([&](store::Conn& c, ledger::Learned& learned) -> Status {
    result = original;
    Move m;
    m.to = TxStatus::cancelled;
    m.source = "merchant";
    m.reason = "CANCELLED_BY_MERCHANT";
    SIKA_ASSIGN_OR_RETURN(moved, apply(c, result, m, learned));
    return {};
  });
  if (!st) return web::error(req, st.error());
  if (!moved) return web::error(req, conflict(bj::object{{"transaction_reference", "changed status concurrently"}}));
  return web::ok(req, to_record(result));
}

// ---- status -----------------------------------------------------------------------------------

web::Response Service::status(web::Request& req) { return show(req, kCollection); }
web::Response Service::disbursement_status(web::Request& req) { return show(req, kDisbursement); }

web::Response Service::show(web::Request& req, std::string_view operation) {
  auto principal = web::merchant_caller(req);
  if (!principal) return web::error(req, principal.error());
  auto body = web::body_object(req);
  if (!body) return web::error(req, body.error());
  json::FieldErrors errors;
  refuse_unknown(*body, {"transaction_reference"}, errors);
  auto reference = json::get_string(*body, "transaction_reference", errors, true);
  if (!errors.empty()) return web::error(req, errors.status().error());
  auto loaded = load_for(**principal, *reference, operation);
  if (!loaded) return web::error(req, loaded.error());
  Transaction tx = std::move(loaded).value();
  const std::int64_t at = now();
  if (!is_terminal(tx.status) && tx.expires_at <= at) {
    // Overdue: the record reflects it at once, whether or not the worker has run yet.
    Move m;
    m.to = TxStatus::expired;
    m.source = "poll";
    m.reason = "EXPIRED";
    const Transaction original = tx;
    bool moved = false;
    Status st = write([&](store::Conn& c, ledger::Learned& learned) -> Status {
      tx = original;
      SIKA_ASSIGN_OR_RETURN(moved, apply(c, tx, m, learned));
      return {};
    });
    if (!st) return web::error(req, st.error());
    if (!moved) {
      auto fresh = refresh(original);
      if (!fresh) return web::error(req, fresh.error());
      tx = std::move(fresh).value();
    }
  } else if (tx.status == TxStatus::pending && tx.channel == kChannelProvider) {
    // Ask the operator: its answer is applied by the same conditional move as a callback.
    if (Connector* conn = connector_for(tx)) {
      auto st = conn->query_status(order_for(tx));
      if (st && st->state != OperatorStatus::State::pending) {
        auto settled = settle_from_operator(tx, *st, "poll");
        if (!settled) return web::error(req, settled.error());
        tx = std::move(settled).value();
      }
    }
  }
  return web::ok(req, to_record(tx));
}

// ---- callbacks --------------------------------------------------------------------------------

web::Response Service::operator_callback(web::Request& req) {
  std::string name = req.path_param("connector");
  if (name.empty()) name = "sandbox";
  Connector* conn = connector(name);
  if (!conn) return web::error(req, not_found(bj::object{{"connector", "no such connector"}}));
  auto report_r = conn->parse_callback(req);
  if (!report_r) return web::error(req, report_r.error());
  const CallbackReport report = std::move(report_r).value();
  std::string outcome;
  std::string reported = report.status.state == OperatorStatus::State::succeeded ? "SUCCESSFUL"
                         : report.status.state == OperatorStatus::State::failed  ? "FAILED"
                                                                                 : "PENDING";
  Status st = write([&](store::Conn& c, ledger::Learned& learned) -> Status {
    outcome.clear();
    SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT " + std::string(kTransactionColumns) +
                                                    " FROM pay_transactions WHERE provider_reference = ?",
                                                {report.provider_reference}));
    std::optional<std::int64_t> tx_id;
    if (!row) {
      outcome = "unknown_transaction";
    } else {
      Transaction tx = transaction_from_row(*row);
      tx_id = tx.id;
      if (tx.connector != conn->name()) {
        outcome = "wrong_connector";
      } else if (report.status.state == OperatorStatus::State::pending) {
        outcome = "progress";
      } else if (tx.status == TxStatus::pending) {
        Move m;
        m.to = report.status.state == OperatorStatus::State::succeeded ? TxStatus::completed : TxStatus::failed;
        m.source = "callback";
        if (m.to == TxStatus::failed)
          m.reason = report.status.reason.empty() ? "OPERATOR_FAILURE" : report.status.reason;
        m.operator_reference = report.status.operator_reference;
        SIKA_ASSIGN_OR_RETURN(bool moved, apply(c, tx, m, learned));
        outcome = moved ? "applied" : "lost_race";
      } else if (tx.status == TxStatus::initiated) {
        outcome = "premature";
      } else {
        bool same = (tx.status == TxStatus::completed && report.status.state == OperatorStatus::State::succeeded) ||
                    (tx.status == TxStatus::failed && report.status.state == OperatorStatus::State::failed);
        // After a terminal status: recorded, never applied, never moves money.
        outcome = same ? "duplicate" : "late";
      }
    }
    SIKA_TRY(c.exec("INSERT INTO pay_callbacks (connector, provider_reference, transaction_id, reported_status, "
                    "reason, outcome, body, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    {std::string(conn->name()), report.provider_reference, store::opt(tx_id), reported,
                     report.status.reason.empty() ? store::Value(nullptr) : store::Value(report.status.reason), outcome,
                     req.body.substr(0, 8192), now()}));
    return {};
  });
  if (!st) return web::error(req, st.error());
  if (outcome == "late" || outcome == "unknown_transaction" || outcome == "wrong_connector")
    spdlog::warn("operator callback {} for {}: {}", reported, report.provider_reference, outcome);
  bj::object o;
  o["received"] = true;
  o["outcome"] = outcome;
  return web::Response::json(200, bj::serialize(o));
}

// ---- verification and balances ----------------------------------------------------------------

web::Response Service::verify_account(web::Request& req) {
  auto principal_r = web::merchant_caller(req);
  if (!principal_r) return web::error(req, principal_r.error());
  auto body = web::body_object(req);
  if (!body) return web::error(req, body.error());
  json::FieldErrors errors;
  refuse_unknown(*body, {"provider", "wallet"}, errors);
  auto provider = json::get_string(*body, "provider", errors, true);
  auto wallet = json::get_string(*body, "wallet", errors, true);
  auto cat = catalog();
  const catalog::PaymentService* service = nullptr;
  if (provider) {
    service = cat ? cat->service(*provider) : nullptr;
    if (!service) errors.add("provider", "is not a known service code");
    else if (!cat->usable(*service)) {
      errors.add("provider", "is not active");
      service = nullptr;
    }
  }
  std::string msisdn;
  if (service && wallet) {
    auto normalized = cat->normalize_msisdn(*service, *wallet, "wallet");
    if (normalized) msisdn = *normalized;
    else if (normalized.error().details.is_object())
      for (const auto& kv : normalized.error().details.as_object())
        errors.add(kv.key(), kv.value().is_string() ? std::string_view(kv.value().as_string()) : "is invalid");
  }
  if (!errors.empty()) return web::error(req, errors.status().error());
  const catalog::Country* country = cat->country_by_id(service->country_id);
  if (country && !(*principal_r)->admin && !(*principal_r)->grants_country(country->code))
    return web::error(req, field_error("provider", "the country " + country->code +
                                                       " of this service is not granted to this credential",
                                       ErrorKind::forbidden, "access_denied"));
  const catalog::Provider* prov = cat->provider_by_id(service->provider_id);
  std::string name = (*principal_r)->environment == "sandbox" || !prov ? std::string("sandbox") : prov->connector;
  Connector* conn = connector(name);
  if (!conn)
    return web::error(req, field_error("provider", "no connector is available for this service", ErrorKind::unavailable,
                                       "provider_unavailable"));
  auto holder = conn->account_holder(service->code, msisdn);
  if (!holder) return web::error(req, holder.error());
  bj::object data;
  data["provider"] = service->code;
  data["wallet"] = msisdn;
  data["account_holder_name"] = *holder;
  data["verified"] = true;
  return web::ok(req, std::move(data));
}

web::Response Service::balances(web::Request& req) {
  auto principal = web::merchant_caller(req);
  if (!principal) return web::error(req, principal.error());
  std::string owner = "merchant:" + std::to_string((*principal)->merchant_id);
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> by_currency;
  auto st = db_.read([&](store::Conn& c) -> Status {
    by_currency.clear();
    SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT currency, kind, balance FROM ledger_accounts WHERE owner = ? AND "
                                             "environment = ? ORDER BY currency",
                                             {owner, (*principal)->environment}));
    for (const auto& r : rows) {
      auto& b = by_currency[r.str(0)];
      (r.str(1) == "pending" ? b.second : b.first) = r.i64(2);
    }
    return {};
  });
  if (!st) return web::error(req, st.error());
  bj::array data;
  for (const auto& [currency, b] : by_currency)
    data.push_back(bj::object{{"currency", currency}, {"available", b.first}, {"pending", b.second}});
  return web::ok(req, std::move(data));
}

Status Service::fund_wallet(std::string_view environment, std::string_view msisdn, std::string_view currency,
                            std::int64_t amount, std::string_view memo) {
  if (amount <= 0) return field_error("amount", "must be a positive integer");
  ledger::Posting p;
  p.kind = ledger::kWalletFunding;
  p.environment = environment;
  p.currency = currency;
  p.memo = memo;
  p.legs.push_back({ledger::funding(environment, currency), amount, 0});
  p.legs.push_back({ledger::customer_wallet(msisdn, environment, currency), 0, amount});
  const std::int64_t at = now();
  return write([&](store::Conn& c, ledger::Learned& learned) -> Status {
    return ledger::post(c, p, at, &accounts_, learned);
  });
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
    due.clear();
    SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT reference FROM pay_transactions WHERE status IN ('INITIATED', "
                                             "'PENDING') AND expires_at <= ? ORDER BY expires_at LIMIT ?",
                                             {at, std::int64_t{options_.expiry_batch}}));
    for (const auto& r : rows) due.push_back(r.str(0));
    return {};
  }));
  int expired = 0;
  for (const auto& reference : due) {
    bool moved = false;
    Status st = write([&](store::Conn& c, ledger::Learned& learned) -> Status {
      moved = false;
      SIKA_ASSIGN_OR_RETURN(Transaction tx, load(c, reference));
      if (is_terminal(tx.status) || tx.expires_at > at) return {};
      Move m;
      m.to = TxStatus::expired;
      m.source = "expiry";
      m.reason = "EXPIRED";
      SIKA_ASSIGN_OR_RETURN(moved, apply(c, tx, m, learned));
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

void Service::expiry_loop() {
  std::unique_lock lock(worker_mu_);
  while (!stopping_) {
    lock.unlock();
    auto r = expire_due();
    if (!r) spdlog::warn("payments expiry scan failed: {}", r.error().code);
    lock.lock();
    worker_cv_.wait_for(lock, std::chrono::milliseconds(std::max<std::int64_t>(10, options_.expiry_interval_ms)),
                        [this] { return stopping_; });
  }
}

void Service::start() {
  sandbox_->start();
  std::lock_guard lock(worker_mu_);
  if (expiry_thread_.joinable()) return;
  stopping_ = false;
  expiry_thread_ = std::thread([this] { expiry_loop(); });
}

void Service::stop() {
  {
    std::lock_guard lock(worker_mu_);
    stopping_ = true;
  }
  worker_cv_.notify_all();
  if (expiry_thread_.joinable()) expiry_thread_.join();
  if (sandbox_) sandbox_->stop();
}

}  // namespace sika::payments
