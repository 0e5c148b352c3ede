// payments::Service on both backends: intents, validation, idempotency, execution through the
// sandbox operator (callbacks delivered in-process), wallets, splits, payouts, verification,
// callbacks after terminal states, races, the confirmation page and the ledger check.
#include <boost/json.hpp>

#include <future>
#include <thread>

#include "fixture.hpp"
#include "store/outbox.hpp"
#include "web/acting.hpp"
#include "web/html.hpp"

namespace sika::payments::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Backends, PaymentsTest, ::testing::Values("sqlite", "postgres"));

const char* const kRecordFields[] = {"transaction_reference",
                                     "environment",
                                     "invoice_reference",
                                     "provider_reference",
                                     "status",
                                     "operation",
                                     "channel",
                                     "amount",
                                     "currency",
                                     "confirmation_method",
                                     "confirmation_url",
                                     "fee",
                                     "required_total",
                                     "settlement_mode",
                                     "split_reference",
                                     "split_status",
                                     "created_at",
                                     "updated_at"};

TEST_P(PaymentsTest, IntentReturnsTheFullRecordWithFeeFromTheFeeEngine) {
  auto p = principal(m1_);
  auto rec = create_ok(p, intent_body("+237 6 90 00 00 10", 10'000));
  for (const char* f : kRecordFields) EXPECT_TRUE(rec.contains(f)) << f;
  EXPECT_EQ(rec.at("status"), "INITIATED");
  EXPECT_EQ(rec.at("environment"), "sandbox");
  EXPECT_EQ(rec.at("operation"), "COLLECTION");
  EXPECT_EQ(rec.at("channel"), "PROVIDER");
  EXPECT_EQ(rec.at("amount").as_int64(), 10'000);
  EXPECT_EQ(rec.at("currency"), "XAF");
  EXPECT_EQ(rec.at("fee").as_int64(), 200);  // 2 %
  EXPECT_EQ(rec.at("required_total").as_int64(), 10'200);
  EXPECT_EQ(rec.at("confirmation_method"), "MSISDN");
  EXPECT_EQ(rec.at("settlement_mode"), "DIRECT");
  EXPECT_EQ(rec.at("split_status"), "NONE");
  EXPECT_EQ(rec.at("split_reference"), "");
  EXPECT_EQ(rec.at("customer_wallet"), "237690000010");
  std::string ref(rec.at("transaction_reference").as_string());
  EXPECT_TRUE(ref.starts_with("TX-"));
  EXPECT_EQ(ref.size(), 23u);
  EXPECT_EQ(ref.find_first_not_of("23456789ABCDEFGHJKLMNPQRSTUVWXYZ", 3), std::string::npos);
  // Time first, so that the reference indexes grow at their end.
  EXPECT_LE(ref.substr(3, 8), sortable_time_prefix(now_ms()));
  EXPECT_GE(ref.substr(3, 8), sortable_time_prefix(now_ms() - 60'000));
  EXPECT_TRUE(std::string(rec.at("invoice_reference").as_string()).starts_with("INV-"));
  EXPECT_TRUE(is_uuid(rec.at("provider_reference").as_string()));
  EXPECT_EQ(rec.at("provider_reference").as_string()[14], '7');
  EXPECT_NE(rec.at("provider_reference"), create_ok(p, intent_body()).at("provider_reference"));
  EXPECT_TRUE(std::string(rec.at("confirmation_url").as_string())
                  .starts_with("http://127.0.0.1:1/checkout/confirm/" + ref + "?sig="));
  EXPECT_TRUE(std::string(rec.at("updated_at").as_string()).ends_with("Z"));
  // The status route shows the same record.
  auto shown = status_of(p, ref);
  EXPECT_EQ(shown.at("invoice_reference"), rec.at("invoice_reference"));
  EXPECT_EQ(shown.at("status"), "INITIATED");
}

// The status routes answer with a message code like every other route, with its fr and en texts.
TEST_P(PaymentsTest, StatusRoutesAnswerTheTransactionStatusMessage) {
  service_->start();
  auto p = principal(m1_);
  std::string ref;
  ASSERT_NO_FATAL_FAILURE(earn(p, "237690000050", 20'000, ref));
  auto [sp, ep] = call(&Service::disbursement_intent, p, payout_body("237690000060", 1'000));
  ASSERT_EQ(sp, 200) << bj::serialize(ep);
  std::string payout(ep.at("data").at("transaction_reference").as_string());
  for (auto [fn, reference] : {std::pair{&Service::status, ref}, std::pair{&Service::disbursement_status, payout}}) {
    for (auto locale : {i18n::Locale::en, i18n::Locale::fr}) {
      auto req = request(p, bj::object{{"transaction_reference", reference}});
      req.locale = locale;
      auto res = web::respond(req, ((*service_).*fn)(req));
      ASSERT_EQ(res.status, 200) << res.body;
      auto env = parse(res);
      EXPECT_EQ(env.at("message"), "transaction_status") << res.body;
      EXPECT_EQ(env.at("meta").at("text"),
                locale == i18n::Locale::en ? "Current status of the transaction." : "Statut actuel de la transaction.")
          << res.body;
    }
  }
}

TEST_P(PaymentsTest, SameUuidSameBodyGivesTheSameRecordDifferentBodyIs409) {
  auto p = principal(m1_);
  auto body = intent_body();
  auto first = create_ok(p, body);
  // Same fields in another order: the same record.
  bj::object reordered;
  for (auto it = body.end(); it != body.begin();) {
    --it;
    reordered[it->key()] = it->value();
  }
  auto again = create_ok(p, reordered);
  EXPECT_EQ(again.at("transaction_reference"), first.at("transaction_reference"));
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions"), 1);
  // Another amount under the same UUID: 409 with the envelope.
  body["amount"] = 10'001;
  auto [status, env] = call(&Service::create_intent, p, body);
  EXPECT_EQ(status, 409);
  EXPECT_EQ(env.at("success"), false);
  EXPECT_EQ(env.at("code"), 409);
  EXPECT_EQ(env.at("message"), "conflict");
  EXPECT_TRUE(env.at("error").at("details").as_object().contains("transaction_uuid"));
  EXPECT_EQ(bj::serialize(env.at("error").at("details")),
            R"({"transaction_uuid":"was already used for a different request","transaction_reference":")" +
                std::string(first.at("transaction_reference").as_string()) + R"("})");
  // The same UUID from another merchant is another transaction.
  body["amount"] = 10'000;
  body["currency"] = "XOF";
  body["provider"] = "MTN_MOMO_CIV";
  body["customer_wallet"] = "2250700000000";
  auto other = create_ok(principal(m2_), body);
  EXPECT_NE(other.at("transaction_reference"), first.at("transaction_reference"));
}

TEST_P(PaymentsTest, ConcurrentSameUuidCreatesOneTransaction) {
  auto p = principal(m1_);
  auto body = intent_body();
  std::vector<std::thread> threads;
  std::vector<std::string> refs(8);
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      auto req = request(p, body);
      auto res = web::respond(req, service_->create_intent(req));
      if (res.status == 200) refs[i] = std::string(parse(res).at("data").at("transaction_reference").as_string());
    });
  for (auto& t : threads) t.join();
  std::set<std::string> distinct;
  for (auto& r : refs)
    if (!r.empty()) distinct.insert(r);
  EXPECT_EQ(distinct.size(), 1u);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions"), 1);
}

struct BadInput {
  const char* name;
  std::function<void(bj::object&)> mutate;
  const char* field;
  int status = 400;
};

// One share of a distribution.
bj::object share(const char* matricule, bj::value rate) {
  return {{"matricule", matricule}, {"rate", std::move(rate)}};
}

// Makes the request a SPLIT one with these distribution items.
std::function<void(bj::object&)> split(bj::array items) {
  return [items = std::move(items)](bj::object& b) {
    b["settlement_mode"] = "SPLIT";
    b["distribution"] = items;
  };
}

TEST_P(PaymentsTest, EveryValidationRuleNamesItsField) {
  auto p = principal(m1_);
  std::vector<BadInput> cases = {
      {"missing amount", [](bj::object& b) { b.erase("amount"); }, "amount"},
      {"zero amount", [](bj::object& b) { b["amount"] = 0; }, "amount"},
      {"negative amount", [](bj::object& b) { b["amount"] = -5; }, "amount"},
      {"string amount", [](bj::object& b) { b["amount"] = "100"; }, "amount"},
      {"fractional amount", [](bj::object& b) { b["amount"] = 100.5; }, "amount"},
      {"below service minimum", [](bj::object& b) { b["amount"] = 99; }, "amount"},
      {"above service maximum", [](bj::object& b) { b["amount"] = 1'000'001; }, "amount"},
      {"missing currency", [](bj::object& b) { b.erase("currency"); }, "currency"},
      {"malformed currency", [](bj::object& b) { b["currency"] = "xaf"; }, "currency"},
      {"currency of another service", [](bj::object& b) { b["currency"] = "XOF"; }, "currency"},
      {"missing uuid", [](bj::object& b) { b.erase("transaction_uuid"); }, "transaction_uuid"},
      {"malformed uuid", [](bj::object& b) { b["transaction_uuid"] = "order-42"; }, "transaction_uuid"},
      {"missing provider", [](bj::object& b) { b.erase("provider"); }, "provider"},
      {"unknown provider", [](bj::object& b) { b["provider"] = "NOPE_CMR"; }, "provider"},
      {"inactive provider", [](bj::object& b) { b["provider"] = "CLOSED_CMR"; }, "provider"},
      {"bad channel", [](bj::object& b) { b["channel"] = "CARD"; }, "channel"},
      {"PROVIDER on a wallet service", [](bj::object& b) { b["provider"] = "SIKA_WALLET_CMR"; }, "channel"},
      {"missing wallet", [](bj::object& b) { b.erase("customer_wallet"); }, "customer_wallet"},
      {"wallet of another country", [](bj::object& b) { b["customer_wallet"] = "+2250700000000"; }, "customer_wallet"},
      {"wallet off pattern", [](bj::object& b) { b["customer_wallet"] = "237290000000"; }, "customer_wallet"},
      {"wallet with letters", [](bj::object& b) { b["customer_wallet"] = "2376900000ab"; }, "customer_wallet"},
      {"long description", [](bj::object& b) { b["description"] = std::string(256, 'x'); }, "description"},
      {"metadata not an object", [](bj::object& b) { b["metadata"] = "x"; }, "metadata"},
      {"bad settlement_mode", [](bj::object& b) { b["settlement_mode"] = "HALF"; }, "settlement_mode"},
      {"SPLIT without distribution", [](bj::object& b) { b["settlement_mode"] = "SPLIT"; }, "distribution"},
      {"DIRECT with distribution",
       [](bj::object& b) {
         b["distribution"] = bj::array{bj::object{{"matricule", "MCH-CM-0002"}, {"rate", 100}}};
       },
       "distribution"},
      {"rates not summing to 100", split({share("MCH-CM-0001", 80), share("MCH-CM-0002", 10)}), "distribution"},
      {"zero rate", split({share("MCH-CM-0001", 100), share("MCH-CM-0002", 0)}), "distribution[1].rate"},
      {"rate above 100", split({share("MCH-CM-0001", 101)}), "distribution[0].rate"},
      {"rate with 5 decimals", split({share("MCH-CM-0001", 50.00001), share("MCH-CM-0002", 49.99999)}),
       "distribution[0].rate"},
      {"string rate", split({share("MCH-CM-0001", "100")}), "distribution[0].rate"},
      {"missing matricule", split({bj::object{{"rate", 100}}}), "distribution[0].matricule"},
      {"unknown matricule", split({share("MCH-XX-9999", 100)}), "distribution[0].matricule"},
      {"inactive matricule", split({share("MCH-CM-0001", 50), share("MCH-CM-0003", 50)}), "distribution[1].matricule"},
      {"duplicate matricule", split({share("MCH-CM-0002", 50), share("MCH-CM-0002", 50)}), "distribution[1].matricule"},
      {"unknown distribution field", split({bj::object{{"matricule", "MCH-CM-0002"}, {"rate", 100}, {"amount", 5}}}),
       "distribution[0].amount"},
      {"distribution item not an object", split({1}), "distribution[0]"},
      {"client-set fee", [](bj::object& b) { b["fee"] = 0; }, "fee"},
      {"client-set status", [](bj::object& b) { b["status"] = "COMPLETED"; }, "status"},
      {"client-set reference", [](bj::object& b) { b["transaction_reference"] = "TX-MINE"; }, "transaction_reference"},
      {"client-set required_total", [](bj::object& b) { b["required_total"] = 1; }, "required_total"},
      {"client-set environment", [](bj::object& b) { b["environment"] = "prod"; }, "environment"},
      {"unknown field", [](bj::object& b) { b["colour"] = "blue"; }, "colour"},
      {"country not granted",
       [](bj::object& b) {
         b["provider"] = "MTN_MOMO_CIV";
         b["currency"] = "XOF";
         b["customer_wallet"] = "2250700000000";
       },
       "provider", 403},
  };
  for (const auto& c : cases) {
    auto body = intent_body();
    c.mutate(body);
    auto [status, env] = call(&Service::create_intent, p, body);
    EXPECT_EQ(status, c.status) << c.name << ": " << bj::serialize(env);
    EXPECT_EQ(env.at("success"), false) << c.name;
    EXPECT_EQ(env.at("code").as_int64(), c.status) << c.name;
    ASSERT_TRUE(env.contains("error")) << c.name;
    const auto& details = env.at("error").at("details");
    ASSERT_TRUE(details.is_object()) << c.name << ": " << bj::serialize(env);
    EXPECT_TRUE(details.as_object().contains(c.field)) << c.name << ": " << bj::serialize(details);
  }
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions"), 0) << "no refused request left anything behind";

  // Bodies that are not JSON objects.
  auto req = request(p, bj::object{});
  req.body = "";
  EXPECT_EQ(web::respond(req, service_->create_intent(req)).status, 400);
  req.body = "[1,2]";
  EXPECT_EQ(web::respond(req, service_->create_intent(req)).status, 400);
  req.body = "{\"amount\":";
  auto res = web::respond(req, service_->create_intent(req));
  EXPECT_EQ(res.status, 400);
  EXPECT_EQ(parse(res).at("message"), "empty_data");
  // No merchant behind the credential.
  auto anonymous = p;
  anonymous.merchant_id = 0;
  auto anon = request(anonymous, intent_body());
  EXPECT_EQ(web::respond(anon, service_->create_intent(anon)).status, 403);
}

TEST_P(PaymentsTest, AnotherMerchantsOrEnvironmentsTransactionIsNotFound) {
  auto rec = create_ok(principal(m1_), intent_body());
  bj::object ref{{"transaction_reference", rec.at("transaction_reference")}};
  for (auto fn : {&Service::status, &Service::execute, &Service::cancel}) {
    auto [status, env] = call(fn, principal(m3_), ref);
    EXPECT_EQ(status, 404) << bj::serialize(env);
    EXPECT_EQ(env.at("message"), "not_found");
    auto [status2, env2] = call(fn, principal(m1_, "prod"), ref);
    EXPECT_EQ(status2, 404);
  }
  auto [s3, e3] = call(&Service::disbursement_status, principal(m1_), ref);
  EXPECT_EQ(s3, 404) << "a collection is not a disbursement";
  auto [s4, e4] = call(&Service::status, principal(m1_), bj::object{{"transaction_reference", "TX-NOPE"}});
  EXPECT_EQ(s4, 404);
  auto [s5, e5] = call(&Service::status, principal(m1_), bj::object{});
  EXPECT_EQ(s5, 400);
  EXPECT_TRUE(e5.at("error").at("details").as_object().contains("transaction_reference"));
}

TEST_P(PaymentsTest, ProviderCollectionCompletesByCallbackAndCreditsTheMerchant) {
  service_->start();
  auto p = principal(m1_);
  auto rec = create_ok(p, intent_body("237690000010", 10'000));
  std::string ref(rec.at("transaction_reference").as_string());
  auto [status, env] = call(&Service::execute, p, bj::object{{"transaction_reference", ref}});
  ASSERT_EQ(status, 200) << bj::serialize(env);
  EXPECT_EQ(env.at("data").at("status"), "PENDING");
  // Executing twice is refused: the request is already on the phone.
  auto [again, again_env] = call(&Service::execute, p, bj::object{{"transaction_reference", ref}});
  EXPECT_EQ(again, 409);
  // The callback arrives by itself (no polling needed).
  for (int i = 0; i < 500 && count("SELECT COUNT(*) FROM pay_callbacks") < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_callbacks WHERE outcome = 'applied'"), 1);
  auto done = status_of(p, ref);
  EXPECT_EQ(done.at("status"), "COMPLETED");
  EXPECT_EQ(balance(ledger::merchant_available(m1_.id, "sandbox", "XAF")), 10'000);
  EXPECT_EQ(balance(ledger::fee_revenue("sandbox", "XAF")), 200);
  EXPECT_EQ(balance(ledger::operator_clearing("MTN_MOMO_CMR", "sandbox", "XAF")), -10'200);
  // Status changes emitted events with the spec's webhook fields, in order.
  std::vector<std::string> statuses;
  ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(
                       auto rows, c.query("SELECT payload, merchant_id, event_type FROM events WHERE subject = ? "
                                          "ORDER BY sequence",
                                          {ref}));
                   for (const auto& r : rows) {
                     auto payload = bj::parse(r.str(0)).as_object();
                     for (const char* f : {"transaction_reference", "invoice_reference", "provider_reference",
                                           "operation", "status", "amount", "currency", "updated_at"})
                       EXPECT_TRUE(payload.contains(f)) << f;
                     EXPECT_EQ(r.i64(1), m1_.id);
                     statuses.emplace_back(payload.at("status").as_string());
                   }
                   return {};
                 })
                  .ok());
  EXPECT_EQ(statuses, (std::vector<std::string>{"PENDING", "COMPLETED"}));
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transitions"), 2);
  expect_ledger_clean();
}

// A collection built by code (payment links, hosted checkout) may leave the fee to the merchant:
// the customer pays the price, the merchant is credited the price less the fee.
TEST_P(PaymentsTest, AFeeBorneByTheMerchantComesOutOfThePrice) {
  service_->start();
  auto p = principal(m1_);
  IntentRequest r;
  r.amount = 10'000;
  r.currency = "XAF";
  r.transaction_uuid = uuid_v4();
  r.provider = "MTN_MOMO_CMR";
  r.customer_wallet = "237690000010";
  r.description = "merchant pays the fee";
  r.fee_bearer = std::string(kMerchantBearsFee);
  auto tx = service_->collect(r, web::acting(p), {});
  ASSERT_TRUE(tx.ok()) << bj::serialize(tx.error().details);
  EXPECT_EQ(tx->fee, 200);
  EXPECT_EQ(tx->required_total, 10'000);  // what the customer pays: the price
  EXPECT_EQ(tx->amount, 9'800);           // what the merchant is credited
  // The same uuid with the fee on the customer is another request.
  IntentRequest customer = r;
  customer.fee_bearer = std::string(kCustomerBearsFee);
  auto other = service_->collect(customer, web::acting(p), {});
  ASSERT_FALSE(other.ok());
  EXPECT_TRUE(other.error().is(ErrorKind::conflict));

  auto pushed = service_->execute_collection(*tx, std::nullopt, "test");
  ASSERT_TRUE(pushed.ok()) << bj::serialize(pushed.error().details);
  std::string ref = tx->reference;
  auto done = status_of(p, ref);
  for (int i = 0; i < 500 && done.at("status") != "COMPLETED"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    done = status_of(p, ref);
  }
  EXPECT_EQ(done.at("status"), "COMPLETED");
  EXPECT_EQ(balance(ledger::merchant_available(m1_.id, "sandbox", "XAF")), 9'800);
  EXPECT_EQ(balance(ledger::fee_revenue("sandbox", "XAF")), 200);
  EXPECT_EQ(balance(ledger::operator_clearing("MTN_MOMO_CMR", "sandbox", "XAF")), -10'000);
  expect_ledger_clean();
}

TEST_P(PaymentsTest, FailureNumbersFailWithTheirReasonAndMoveNoMoney) {
  service_->start();
  auto p = principal(m1_);
  const std::pair<const char*, const char*> cases[] = {{"237690000001", "INSUFFICIENT_FUNDS"},
                                                       {"237690000002", "REJECTED_BY_CUSTOMER"},
                                                       {"237690000003", "TIMEOUT"},
                                                       {"237690000004", "INVALID_ACCOUNT"}};
  for (auto [wallet, reason] : cases) {
    auto rec = create_ok(p, intent_body(wallet));
    std::string ref(rec.at("transaction_reference").as_string());
    auto [st, env] = call(&Service::execute, p, bj::object{{"transaction_reference", ref}});
    ASSERT_EQ(st, 200);
    EXPECT_EQ(wait_status(p, ref, "PENDING"), "FAILED") << wallet;
    EXPECT_EQ(status_of(p, ref).at("failure_reason"), reason);
  }
  EXPECT_EQ(balance(ledger::merchant_available(m1_.id, "sandbox", "XAF")), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM ledger_journals"), 0);
  expect_ledger_clean();
}

TEST_P(PaymentsTest, AForcedSandboxOutcomeMovesAPendingCollectionOnceByTheOperatorsCallback) {
  service_->start();
  auto p = principal(m1_);
  // Stuck numbers (...0005): left alone, they would stay PENDING until they expire.
  auto pending = [&] {
    auto rec = create_ok(p, intent_body("237690000005"));
    std::string ref(rec.at("transaction_reference").as_string());
    EXPECT_EQ(call(&Service::execute, p, bj::object{{"transaction_reference", ref}}).first, 200);
    auto tx = service_->find(web::acting(p), ref, kCollection);
    EXPECT_TRUE(tx.ok());
    EXPECT_EQ(tx->status, TxStatus::pending);
    return *tx;
  };
  Transaction paid = pending();
  OperatorStatus ok;
  ok.state = OperatorStatus::State::succeeded;
  ASSERT_TRUE(service_->force_sandbox_outcome(paid, ok).ok());
  EXPECT_EQ(wait_status(p, paid.reference, "PENDING"), "COMPLETED");
  // The operator answers queries with the forced outcome too.
  PaymentOrder order;
  order.provider_reference = paid.provider_reference;
  order.msisdn = paid.customer_wallet;
  auto queried = service_->sandbox().query_status(order);
  ASSERT_TRUE(queried.ok());
  EXPECT_EQ(queried->state, OperatorStatus::State::succeeded);
  // Once: an ended transaction, or a second forcing, is refused.
  auto ended = service_->find(web::acting(p), paid.reference, kCollection);
  ASSERT_TRUE(ended.ok());
  auto again = service_->force_sandbox_outcome(*ended, ok);
  ASSERT_FALSE(again.ok());
  EXPECT_TRUE(again.error().is(ErrorKind::conflict));
  auto twice = service_->sandbox().force(order, ok);
  ASSERT_FALSE(twice.ok());
  EXPECT_TRUE(twice.error().is(ErrorKind::conflict));

  Transaction refused = pending();
  OperatorStatus no;
  no.state = OperatorStatus::State::failed;
  no.reason = "REJECTED_BY_CUSTOMER";
  ASSERT_TRUE(service_->force_sandbox_outcome(refused, no).ok());
  EXPECT_EQ(wait_status(p, refused.reference, "PENDING"), "FAILED");
  EXPECT_EQ(status_of(p, refused.reference).at("failure_reason"), "REJECTED_BY_CUSTOMER");
  // A request the operator never received is 404.
  PaymentOrder unknown;
  unknown.provider_reference = "PR-NEVER-SENT";
  auto missing = service_->sandbox().force(unknown, ok);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.error().is(ErrorKind::not_found));
  EXPECT_EQ(balance(ledger::merchant_available(m1_.id, "sandbox", "XAF")), paid.amount);
  expect_ledger_clean();
}

TEST_P(PaymentsTest, StuckPendingExpiresAndALateCallbackIsRecordedWithoutMovingMoney) {
  auto p = principal(m1_);
  auto rec = create_ok(p, intent_body("237690000005"));
  std::string ref(rec.at("transaction_reference").as_string());
  ASSERT_EQ(call(&Service::execute, p, bj::object{{"transaction_reference", ref}}).first, 200);
  EXPECT_EQ(status_of(p, ref).at("status"), "PENDING");
  offset_ += 6 * 60 * 1000;  // past pending_ttl
  auto expired = service_->expire_due();
  ASSERT_TRUE(expired.ok());
  EXPECT_EQ(*expired, 1);
  EXPECT_EQ(status_of(p, ref).at("status"), "EXPIRED");
  // The operator reports success after all: recorded as late, no money.
  std::string provider_ref(rec.at("provider_reference").as_string());
  PaymentOrder order;
  order.provider_reference = provider_ref;
  order.msisdn = "237690000005";
  OperatorStatus ok;
  ok.state = OperatorStatus::State::succeeded;
  std::string body = service_->sandbox().callback_body(order, ok);
  web::Request cb;
  cb.body = body;
  cb.path_params = {{"connector", "sandbox"}};
  cb.headers = {{"x-sandbox-signature", service_->sandbox().sign(body, now_ms() + offset_)}};
  auto res = web::respond(cb, service_->operator_callback(cb));
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(parse(res).at("outcome"), "late");
  EXPECT_EQ(status_of(p, ref).at("status"), "EXPIRED");
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_callbacks WHERE outcome = 'late'"), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM ledger_journals"), 0);
  // An unsigned callback is refused outright.
  cb.headers.clear();
  EXPECT_EQ(web::respond(cb, service_->operator_callback(cb)).status, 401);
  expect_ledger_clean();
}

TEST_P(PaymentsTest, DuplicateCallbackIsRecordedOnceAppliedOnce) {
  service_->start();
  auto p = principal(m1_);
  auto rec = create_ok(p, intent_body("237690000006", 5000));
  std::string ref(rec.at("transaction_reference").as_string());
  ASSERT_EQ(call(&Service::execute, p, bj::object{{"transaction_reference", ref}}).first, 200);
  for (int i = 0; i < 500 && count("SELECT COUNT(*) FROM pay_callbacks") < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_callbacks WHERE outcome = 'applied'"), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_callbacks WHERE outcome = 'duplicate'"), 1);
  EXPECT_EQ(status_of(p, ref).at("status"), "COMPLETED");
  EXPECT_EQ(balance(ledger::merchant_available(m1_.id, "sandbox", "XAF")), 5000);
  EXPECT_EQ(count("SELECT COUNT(*) FROM ledger_journals"), 1);
  expect_ledger_clean();
}

TEST_P(PaymentsTest, IntentsExpireWhenNobodyExecutesThem) {
  auto p = principal(m1_);
  auto rec = create_ok(p, intent_body());
  std::string ref(rec.at("transaction_reference").as_string());
  offset_ += 16 * 60 * 1000;
  // The status route shows it expired even before the worker ran.
  EXPECT_EQ(status_of(p, ref).at("status"), "EXPIRED");
  EXPECT_EQ(*service_->expire_due(), 0);
  auto [st, env] = call(&Service::execute, p, bj::object{{"transaction_reference", ref}});
  EXPECT_EQ(st, 409);
}

TEST_P(PaymentsTest, OtpIsRequiredCheckedAndLimited) {
  auto p = principal(m1_);
  auto body = intent_body("237690000010", 1000, "ORANGE_MONEY_CMR");
  auto rec = create_ok(p, body);
  std::string ref(rec.at("transaction_reference").as_string());
  auto [s1, e1] = call(&Service::execute, p, bj::object{{"transaction_reference", ref}});
  EXPECT_EQ(s1, 400);
  EXPECT_TRUE(e1.at("error").at("details").as_object().contains("otp"));
  auto [s2, e2] = call(&Service::execute, p, bj::object{{"transaction_reference", ref}, {"otp", "12ab"}});
  EXPECT_EQ(s2, 400);
  for (int i = 0; i < 2; ++i) {
    auto [s, e] = call(&Service::execute, p, bj::object{{"transaction_reference", ref}, {"otp", "000000"}});
    EXPECT_EQ(s, 400);
    EXPECT_EQ(e.at("message"), "invalid_otp");
    EXPECT_EQ(status_of(p, ref).at("status"), "INITIATED");
  }
  auto [s3, e3] = call(&Service::execute, p, bj::object{{"transaction_reference", ref}, {"otp", "000000"}});
  EXPECT_EQ(s3, 400);
  EXPECT_EQ(status_of(p, ref).at("status"), "FAILED");
  EXPECT_EQ(status_of(p, ref).at("failure_reason"), "INVALID_OTP");
  // The right code, on a fresh intent, goes through (as a string or as an integer).
  auto rec2 = create_ok(p, intent_body("237690000010", 1000, "ORANGE_MONEY_CMR"));
  auto [s4, e4] = call(&Service::execute, p,
                       bj::object{{"transaction_reference", rec2.at("transaction_reference")},
                                  {"invoice_reference", rec2.at("invoice_reference")},
                                  {"otp", 123456}});
  EXPECT_EQ(s4, 200) << bj::serialize(e4);
  EXPECT_EQ(e4.at("data").at("status"), "PENDING");
  // A wrong invoice_reference is refused.
  auto rec3 = create_ok(p, intent_body());
  auto [s5, e5] =
      call(&Service::execute, p,
           bj::object{{"transaction_reference", rec3.at("transaction_reference")}, {"invoice_reference", "INV-OTHER"}});
  EXPECT_EQ(s5, 400);
  EXPECT_TRUE(e5.at("error").at("details").as_object().contains("invoice_reference"));
}

TEST_P(PaymentsTest, WalletChannelPaysInstantlyFromAFundedWalletAndFailsWhenShort) {
  auto p = principal(m1_);
  ASSERT_TRUE(service_->fund_wallet("sandbox", "237690000020", "XAF", 3000, "test top-up").ok());
  auto body = intent_body("237690000020", 2000, "SIKA_WALLET_CMR");
  body["channel"] = "WALLET";
  auto rec = create_ok(p, body);
  EXPECT_EQ(rec.at("channel"), "WALLET");
  EXPECT_EQ(rec.at("fee").as_int64(), 0);
  EXPECT_EQ(rec.at("confirmation_method"), "OTP");
  std::string ref(rec.at("transaction_reference").as_string());
  // The code comes from the OTP service through the notifier: random for an ordinary number.
  const std::string code = wallet_code("237690000020", ref);
  ASSERT_EQ(code.size(), 6u);
  auto [st, env] = call(&Service::execute, p, bj::object{{"transaction_reference", ref}, {"otp", code}});
  ASSERT_EQ(st, 200) << bj::serialize(env);
  EXPECT_EQ(env.at("data").at("status"), "COMPLETED");
  EXPECT_EQ(balance(ledger::customer_wallet("237690000020", "sandbox", "XAF")), 1000);
  EXPECT_EQ(balance(ledger::merchant_available(m1_.id, "sandbox", "XAF")), 2000);
  // Short balance: FAILED, nothing debited.
  auto body2 = intent_body("237690000020", 1500, "SIKA_WALLET_CMR");
  body2["channel"] = "WALLET";
  auto rec2 = create_ok(p, body2);
  const std::string ref2(rec2.at("transaction_reference").as_string());
  auto [st2, env2] = call(&Service::execute, p,
                          bj::object{{"transaction_reference", ref2}, {"otp", wallet_code("237690000020", ref2)}});
  ASSERT_EQ(st2, 200);
  EXPECT_EQ(env2.at("data").at("status"), "FAILED");
  EXPECT_EQ(env2.at("data").at("failure_reason"), "INSUFFICIENT_FUNDS");
  EXPECT_EQ(balance(ledger::customer_wallet("237690000020", "sandbox", "XAF")), 1000);
  // WALLET with an operator's service pays through the country's platform wallet.
  auto body3 = intent_body("237690000020", 500);
  body3["channel"] = "WALLET";
  auto rec3 = create_ok(p, body3);
  EXPECT_EQ(rec3.at("provider"), "SIKA_WALLET_CMR");
  // The wallet channel is sandbox-only until wallet codes are issued.
  auto [st4, env4] = call(&Service::create_intent, principal(m1_, "prod"), body);
  EXPECT_EQ(st4, 400);
  EXPECT_TRUE(env4.at("error").at("details").as_object().contains("channel"));
  expect_ledger_clean();
}

// WALLET codes come from the OTP service: random (CSPRNG, hashed, limited) for every number, the
// fixed sandbox code only for the sandbox's magic and demo numbers; asking without a code resends it.
TEST_P(PaymentsTest, WalletCodesAreRandomExceptForTheSandboxMagicNumbers) {
  auto p = principal(m1_);
  for (const char* w : {"237690000100", "237690000040"})
    ASSERT_TRUE(service_->fund_wallet("sandbox", w, "XAF", 10'000, "top-up").ok());
  auto wallet_intent = [&](const char* wallet) {
    auto body = intent_body(wallet, 1000, "SIKA_WALLET_CMR");
    body["channel"] = "WALLET";
    return std::string(create_ok(p, body).at("transaction_reference").as_string());
  };
  // A demo number: the fixed sandbox code, nothing sent.
  const std::string demo_ref = wallet_intent("237690000100");
  EXPECT_EQ(wallet_code("237690000100", demo_ref), "");
  auto [s0, e0] = call(&Service::execute, p, bj::object{{"transaction_reference", demo_ref}, {"otp", "123456"}});
  ASSERT_EQ(s0, 200) << bj::serialize(e0);
  EXPECT_EQ(e0.at("data").at("status"), "COMPLETED");
  const std::string ref = wallet_intent("237690000040");
  const std::string code = wallet_code("237690000040", ref);
  ASSERT_EQ(code.size(), 6u);
  if (code != "123456") {
    auto [s1, e1] = call(&Service::execute, p, bj::object{{"transaction_reference", ref}, {"otp", "123456"}});
    EXPECT_EQ(s1, 400);
    EXPECT_EQ(e1.at("message"), "invalid_otp");
  }
  // Without a code: a new one is sent (the old one no longer works) and the answer says so.
  auto [s2, e2] = call(&Service::execute, p, bj::object{{"transaction_reference", ref}});
  EXPECT_EQ(s2, 400);
  EXPECT_NE(std::string(e2.at("error").at("details").at("otp").as_string()).find("sent"), std::string::npos);
  EXPECT_EQ(count("SELECT COUNT(*) FROM notify_outbox WHERE recipient = ? AND body LIKE ?",
                  {std::string("+237690000040"), "%" + ref + "%"}),
            1 + 1);
  const std::string resent = wallet_code("237690000040", ref);
  auto [s3, e3] = call(&Service::execute, p, bj::object{{"transaction_reference", ref}, {"otp", resent}});
  ASSERT_EQ(s3, 200) << bj::serialize(e3);
  EXPECT_EQ(e3.at("data").at("status"), "COMPLETED");
  EXPECT_EQ(balance(ledger::customer_wallet("237690000040", "sandbox", "XAF")), 9000);
  EXPECT_EQ(balance(ledger::customer_wallet("237690000100", "sandbox", "XAF")), 9000);
  expect_ledger_clean();
}

// A page of present payers: one write unit creates them submitted (PENDING), each with its
// step; an item whose step refuses leaves nothing of its own while the others commit; a
// collection that needs a code is refused before anything is written; a replay returns the
// existing transaction without running its step again.
TEST_P(PaymentsTest, CollectPageCreatesEachItemAllOrNothingInOneUnit) {
  auto p = principal(m1_);
  auto request = [&](std::string provider, std::string uuid) {
    IntentRequest r;
    r.amount = 1000;
    r.currency = "XAF";
    r.transaction_uuid = std::move(uuid);
    r.provider = std::move(provider);
    r.channel = "PROVIDER";
    r.customer_wallet = "237690000060";
    return r;
  };
  int steps = 0;
  auto step = [&](store::Conn&, const Transaction&) -> Status { return ++steps, Status{}; };
  auto refusing = [&](store::Conn& c, const Transaction&) -> Status {
    ++steps;
    SIKA_TRY(c.exec("UPDATE merchants SET name = 'changed by a refused item' WHERE id = ?", {m1_.id}));
    return conflict(bj::string("refused by the step"));
  };
  const std::string first = uuid_v4(), refused = uuid_v4(), third = uuid_v4();
  const Acting acting = web::acting(p);
  std::vector<Service::PresentPayer> page{{request("MTN_MOMO_CMR", first), acting, step},
                                          {request("MTN_MOMO_CMR", refused), acting, refusing},
                                          {request("ORANGE_MONEY_CMR", uuid_v4()), acting, step},
                                          {request("MTN_MOMO_CMR", third), acting, step}};
  const std::int64_t commits = db_->stats().commits;
  auto out = service_->collect_page(page, "test");
  ASSERT_EQ(out.size(), 4u);
  ASSERT_TRUE(out[0].ok());
  EXPECT_EQ(out[0]->status, TxStatus::pending);
  ASSERT_FALSE(out[1].ok());
  EXPECT_TRUE(out[1].error().is(ErrorKind::conflict));
  ASSERT_FALSE(out[2].ok());
  ASSERT_TRUE(out[3].ok());
  EXPECT_EQ(out[3]->status, TxStatus::pending);
  EXPECT_EQ(steps, 3);
  if (GetParam() == "postgres") EXPECT_EQ(db_->stats().commits, commits + 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE transaction_uuid = ?", {refused}), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM merchants WHERE name = 'changed by a refused item'"), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE customer_wallet = '237690000060'"), 2);
  EXPECT_EQ(count("SELECT COUNT(*) FROM events WHERE subject = ?", {out[0]->reference}), 1);
  // Again: the two created are replays (their steps not run), the refused one is created now.
  page[1].step = step;
  auto again = service_->collect_page(page, "test");
  ASSERT_TRUE(again[0].ok());
  EXPECT_EQ(again[0]->reference, out[0]->reference);
  ASSERT_TRUE(again[1].ok());
  EXPECT_EQ(again[3]->reference, out[3]->reference);
  EXPECT_EQ(steps, 4);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE customer_wallet = '237690000060'"), 3);
  expect_ledger_clean();
}

// A preauthorized WALLET collection's request (a wallet link's charge) from `msisdn`'s wallet.
IntentRequest preauthorized_request(std::string msisdn, std::int64_t amount) {
  IntentRequest r;
  r.amount = amount;
  r.currency = "XAF";
  r.transaction_uuid = uuid_v4();
  r.provider = "SIKA_WALLET_CMR";
  r.channel = "WALLET";
  r.customer_wallet = std::move(msisdn);
  r.preauthorized = true;
  return r;
}

// Each payer of How has its own hook: a creation step for an absent or present payer, a check for
// a preauthorized one. A hook given to the other payers, a payout request, a preauthorized payer
// whose request is not a preauthorized WALLET one, and what collect_async does not serve (a present
// payer, an absent payer's WALLET collection) are refused (500) before anything is written.
TEST_P(PaymentsTest, CollectRefusesAMisuseOfHowBeforeWritingAnything) {
  const Acting acting = web::acting(principal(m1_));
  ASSERT_TRUE(service_->fund_wallet("sandbox", "237690000052", "XAF", 3000, "top-up").ok());
  int hooks = 0;
  const Service::CreationStep step = [&](store::Conn&, const Transaction&) -> Status { return ++hooks, Status{}; };
  const Service::ChargeCheck check = [&](store::Conn&, const Transaction&,
                                         bool) -> Result<std::optional<Service::Refusal>> {
    ++hooks;
    return std::optional<Service::Refusal>{};
  };
  IntentRequest provider;
  provider.amount = 1000;
  provider.currency = "XAF";
  provider.provider = "MTN_MOMO_CMR";
  provider.customer_wallet = "237690000062";
  IntentRequest wallet = preauthorized_request("237690000052", 1000);
  wallet.preauthorized = false;
  std::vector<std::string> uuids;
  auto fresh = [&](IntentRequest r) {
    r.transaction_uuid = uuid_v4();
    uuids.push_back(r.transaction_uuid);
    return r;
  };
  auto async = [&](IntentRequest r, Service::How how) {
    std::promise<Result<Transaction>> answer;
    service_->collect_async(std::move(r), acting, std::move(how), {},
                            [&](Result<Transaction> tx) { answer.set_value(std::move(tx)); });
    return answer.get_future().get();
  };
  IntentRequest payout = fresh(provider);
  payout.operation = std::string(kDisbursement);
  Service::How absent_with_check;
  absent_with_check.check = check;
  Service::How preauthorized_with_step = Service::How::preauthorized(check, "test");
  preauthorized_with_step.step = step;
  const std::vector<std::pair<std::string, Result<Transaction>>> misuses = {
      {"a payout", service_->collect(payout, acting, {})},
      {"an absent payer's check", service_->collect(fresh(provider), acting, absent_with_check)},
      {"a present payer's check", service_->collect(fresh(provider), acting,
                                                    [&] {
                                                      Service::How how =
                                                          Service::How::present(std::nullopt, "test", step);
                                                      how.check = check;
                                                      return how;
                                                    }())},
      {"a preauthorized payer's step",
       service_->collect(fresh(preauthorized_request("237690000052", 1000)), acting, preauthorized_with_step)},
      {"a preauthorized payer of a code-confirmed WALLET request",
       service_->collect(fresh(wallet), acting, Service::How::preauthorized(check, "test"))},
      {"a preauthorized payer of a PROVIDER request",
       service_->collect(fresh(provider), acting, Service::How::preauthorized(check, "test"))},
      {"collect_async of a present payer", async(fresh(provider), Service::How::present(std::nullopt, "test"))},
      {"collect_async of an absent payer's WALLET collection", async(fresh(wallet), {})},
  };
  for (const auto& [what, out] : misuses) {
    ASSERT_FALSE(out.ok()) << what;
    EXPECT_EQ(out.error().kind, ErrorKind::internal) << what;
  }
  EXPECT_EQ(hooks, 0);
  // An absent payer's step runs in the intent's own unit: its error leaves nothing of it.
  auto stepped = service_->collect(fresh(provider), acting, Service::How::absent([](store::Conn&, const Transaction&) {
                                     return Status(conflict(bj::string("refused by the step")));
                                   }));
  ASSERT_FALSE(stepped.ok());
  EXPECT_EQ(stepped.error().kind, ErrorKind::conflict);
  for (const auto& uuid : uuids)
    EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE transaction_uuid = ?", {uuid}), 0) << uuid;
  EXPECT_EQ(balance(ledger::customer_wallet("237690000052", "sandbox", "XAF")), 3000);

  // What collect_async serves: an absent payer's PROVIDER collection (with its step) and a
  // preauthorized charge (with its check), each in its one unit.
  auto intent = async(fresh(provider), Service::How::absent(step));
  ASSERT_TRUE(intent.ok()) << bj::serialize(intent.error().details);
  EXPECT_EQ(intent->status, TxStatus::initiated);
  auto charge = async(fresh(preauthorized_request("237690000052", 1000)), Service::How::preauthorized(check, "test"));
  ASSERT_TRUE(charge.ok()) << bj::serialize(charge.error().details);
  EXPECT_EQ(charge->status, TxStatus::completed);
  EXPECT_EQ(hooks, 2);
  EXPECT_EQ(balance(ledger::customer_wallet("237690000052", "sandbox", "XAF")), 3000 - charge->required_total);
  expect_ledger_clean();
}

// A preauthorized WALLET collection (a wallet link's charge) needs no code; the caller's step runs
// in the debit's unit only when the balance covers the payment, and its refusal moves nothing.
TEST_P(PaymentsTest, PreauthorizedWalletCollectionsRunTheCallersStepInTheDebitUnit) {
  auto p = principal(m1_);
  ASSERT_TRUE(service_->fund_wallet("sandbox", "237690000050", "XAF", 3000, "top-up").ok());
  auto request = [](std::int64_t amount) { return preauthorized_request("237690000050", amount); };
  auto tx = service_->collect(request(1000), web::acting(p), {});
  ASSERT_TRUE(tx.ok());
  EXPECT_FALSE(tx->needs_otp);
  EXPECT_EQ(tx->confirmation_method, "CONSENT");
  EXPECT_EQ(wallet_code("237690000050", tx->reference), "");  // nothing sent
  int calls = 0;
  auto refused = service_->execute_preauthorized(
      *tx, [&](store::Conn&) -> Status { return ++calls, conflict(bj::string("budget spent")); }, "test");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::conflict);
  EXPECT_EQ(status_of(p, tx->reference).at("status"), "INITIATED");
  EXPECT_EQ(balance(ledger::customer_wallet("237690000050", "sandbox", "XAF")), 3000);
  auto paid = service_->execute_preauthorized(
      *tx, [&](store::Conn&) -> Status { return ++calls, Status{}; }, "test");
  ASSERT_TRUE(paid.ok());
  EXPECT_EQ(paid->status, TxStatus::completed);
  EXPECT_EQ(balance(ledger::customer_wallet("237690000050", "sandbox", "XAF")), 2000);
  // Short balance: FAILED without the step.
  calls = 0;
  auto big = service_->collect(request(5000), web::acting(p), {});
  ASSERT_TRUE(big.ok());
  auto short_of = service_->execute_preauthorized(
      *big, [&](store::Conn&) -> Status { return ++calls, Status{}; }, "test");
  ASSERT_TRUE(short_of.ok());
  EXPECT_EQ(short_of->status, TxStatus::failed);
  EXPECT_EQ(calls, 0);
  // An ordinary WALLET collection (code needed) is refused here.
  auto body = intent_body("237690000050", 500, "SIKA_WALLET_CMR");
  body["channel"] = "WALLET";
  auto plain = service_->find(web::acting(p), std::string(create_ok(p, body).at("transaction_reference").as_string()),
                              kCollection);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(service_->execute_preauthorized(*plain, {}, "test").error().kind, ErrorKind::conflict);
  expect_ledger_clean();
}

// A preauthorized charge is ONE write unit: the collection's row, the caller's check, the debit
// with both moves, the journal and the events. An error of the check aborts all of it (even what
// the check itself wrote); a refusal leaves the collection CANCELLED; replays are the payment.
TEST_P(PaymentsTest, PreauthorizedChargesAreCreatedAndDebitedInOneUnit) {
  auto p = principal(m1_);
  ASSERT_TRUE(service_->fund_wallet("sandbox", "237690000051", "XAF", 3000, "top-up").ok());
  auto request = [](std::int64_t amount) { return preauthorized_request("237690000051", amount); };
  using Refusal = Service::Refusal;
  // The check writes, then fails: nothing of the unit remains, not even its own write.
  const IntentRequest failing = request(1000);
  auto aborted = service_->collect(
      failing, web::acting(p),
      Service::How::preauthorized(
          [&](store::Conn& c, const Transaction&, bool) -> Result<std::optional<Refusal>> {
            SIKA_TRY(c.exec("UPDATE merchants SET name = 'changed in the unit' WHERE id = ?", {m1_.id}));
            return conflict(bj::object{{"apikey", "gone"}});
          },
          "test"));
  ASSERT_FALSE(aborted.ok());
  EXPECT_EQ(aborted.error().kind, ErrorKind::conflict);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE transaction_uuid = ?", {failing.transaction_uuid}), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM merchants WHERE name = 'changed in the unit'"), 0);
  EXPECT_EQ(balance(ledger::customer_wallet("237690000051", "sandbox", "XAF")), 3000);

  // Paid: one unit, COMPLETED, the check called once with the balance covering it.
  const std::uint64_t units = db_->stats().write_units;
  const std::int64_t events = count("SELECT COUNT(*) FROM events WHERE merchant_id = ?", {m1_.id});
  int calls = 0;
  auto go = [&](store::Conn&, const Transaction& tx, bool covered) -> Result<std::optional<Refusal>> {
    ++calls;
    EXPECT_TRUE(covered);
    EXPECT_EQ(tx.status, TxStatus::initiated);
    return std::optional<Refusal>{};
  };
  const IntentRequest first = request(1000);
  auto paid = service_->collect(first, web::acting(p), Service::How::preauthorized(go, "test"));
  ASSERT_TRUE(paid.ok()) << bj::serialize(paid.error().details);
  EXPECT_EQ(paid->status, TxStatus::completed);
  EXPECT_EQ(paid->confirmation_method, "CONSENT");
  EXPECT_EQ(db_->stats().write_units - units, 1u);
  EXPECT_EQ(calls, 1);
  // The debit is the payment: INITIATED -> COMPLETED, one transition and one event, no PENDING.
  EXPECT_EQ(count("SELECT COUNT(*) FROM events WHERE merchant_id = ?", {m1_.id}) - events, 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transitions t JOIN pay_transactions x ON x.id = t.transaction_id "
                  "WHERE x.reference = ? AND t.from_status = 'INITIATED' AND t.to_status = 'COMPLETED'",
                  {paid->reference}),
            1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transitions t JOIN pay_transactions x ON x.id = t.transaction_id "
                  "WHERE x.reference = ?",
                  {paid->reference}),
            1);
  EXPECT_TRUE(paid->submitted_at.has_value());
  EXPECT_EQ(balance(ledger::customer_wallet("237690000051", "sandbox", "XAF")), 2000);
  // A replay is the same payment, checked and debited once.
  auto again = service_->collect(first, web::acting(p), Service::How::preauthorized(go, "test"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->reference, paid->reference);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(balance(ledger::customer_wallet("237690000051", "sandbox", "XAF")), 2000);
  // The same transaction_uuid for another amount: 409.
  IntentRequest other = first;
  other.amount = 1500;
  auto clash = service_->collect(other, web::acting(p), Service::How::preauthorized(go, "test"));
  ASSERT_FALSE(clash.ok());
  EXPECT_EQ(clash.error().kind, ErrorKind::conflict);

  // Refused by the check: CANCELLED with the reason in the unit, the refusal answered.
  const IntentRequest refused_request = request(500);
  auto refused = service_->collect(
      refused_request, web::acting(p),
      Service::How::preauthorized(
          [](store::Conn&, const Transaction&, bool) -> Result<std::optional<Refusal>> {
            return std::optional<Refusal>(Refusal{"LIMIT_EXCEEDED", bad_request("limit_exceeded", bj::object{})});
          },
          "test"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, "limit_exceeded");
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE transaction_uuid = ? AND status = 'CANCELLED' AND "
                  "failure_reason = 'LIMIT_EXCEEDED'",
                  {refused_request.transaction_uuid}),
            1);

  // Short: FAILED (INSUFFICIENT_FUNDS), the check told it is not covered.
  bool told = true;
  auto short_of =
      service_->collect(request(5000), web::acting(p),
                        Service::How::preauthorized(
                            [&](store::Conn&, const Transaction&, bool covered) -> Result<std::optional<Refusal>> {
                              told = covered;
                              return std::optional<Refusal>{};
                            },
                            "test"));
  ASSERT_TRUE(short_of.ok());
  EXPECT_EQ(short_of->status, TxStatus::failed);
  EXPECT_EQ(short_of->failure_reason.value_or(""), "INSUFFICIENT_FUNDS");
  EXPECT_FALSE(told);

  // Concurrent duplicates: one payment, debited once, the same answer for all.
  const IntentRequest dup = request(100);
  std::vector<std::thread> threads;
  std::vector<std::string> references(8);
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      auto t = service_->collect(dup, web::acting(p), Service::How::preauthorized(go, "test"));
      references[i] = t.ok() ? t->reference : t.error().code;
    });
  for (auto& t : threads) t.join();
  for (const auto& r : references) EXPECT_EQ(r, references.front());
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE transaction_uuid = ?", {dup.transaction_uuid}), 1);
  EXPECT_EQ(balance(ledger::customer_wallet("237690000051", "sandbox", "XAF")), 1900);
  expect_ledger_clean();
}

TEST_P(PaymentsTest, AutoUsesTheWalletWhenItCoversThePriceElseTheOperator) {
  auto p = principal(m1_);
  ASSERT_TRUE(service_->fund_wallet("sandbox", "237690000030", "XAF", 5000, "top-up").ok());
  auto body = intent_body("237690000030", 4000);
  body["channel"] = "AUTO";
  auto rec = create_ok(p, body);
  EXPECT_EQ(rec.at("channel"), "WALLET");
  EXPECT_EQ(rec.at("provider"), "SIKA_WALLET_CMR");
  auto big = intent_body("237690000030", 6000);
  big["channel"] = "AUTO";
  auto rec2 = create_ok(p, big);
  EXPECT_EQ(rec2.at("channel"), "PROVIDER");
  EXPECT_EQ(rec2.at("provider"), "MTN_MOMO_CMR");
  auto stranger = intent_body("237690000031", 100);
  stranger["channel"] = "AUTO";
  EXPECT_EQ(create_ok(p, stranger).at("channel"), "PROVIDER");
}

TEST_P(PaymentsTest, SplitCreditsEachBeneficiaryByRateWithTheRemainderRule) {
  service_->start();
  auto p = principal(m1_);
  auto body = intent_body("237690000040", 1001);
  body["settlement_mode"] = "SPLIT";
  body["distribution"] =
      bj::array{bj::object{{"matricule", "MCH-CM-0001"}, {"rate", 33.3333}, {"description", "shop"}},
                bj::object{{"matricule", "MCH-CM-0002"}, {"rate", 33.3333}, {"metadata", bj::object{{"k", 1}}}},
                bj::object{{"matricule", "MCH-CI-0001"}, {"rate", 33.3334}}};
  auto rec = create_ok(p, body);
  EXPECT_EQ(rec.at("settlement_mode"), "SPLIT");
  EXPECT_EQ(rec.at("split_status"), "PENDING");
  EXPECT_TRUE(std::string(rec.at("split_reference").as_string()).starts_with("SPL-"));
  std::string ref(rec.at("transaction_reference").as_string());
  ASSERT_EQ(call(&Service::execute, p, bj::object{{"transaction_reference", ref}}).first, 200);
  EXPECT_EQ(wait_status(p, ref, "PENDING"), "COMPLETED");
  EXPECT_EQ(status_of(p, ref).at("split_status"), "SETTLED");
  // 1001 * 33.3333 % = 333.666..., 333.666..., 333.667...: floors 333, 333, 333 (999);
  // two units left go to the largest fractions: line 3 (.6673) then line 1 (.6663, earlier).
  EXPECT_EQ(balance(ledger::merchant_available(m1_.id, "sandbox", "XAF")), 334);
  EXPECT_EQ(balance(ledger::merchant_available(m3_.id, "sandbox", "XAF")), 333);
  EXPECT_EQ(balance(ledger::merchant_available(m2_.id, "sandbox", "XAF")), 334);
  EXPECT_EQ(count("SELECT SUM(amount) FROM pay_splits"), 1001);
  expect_ledger_clean();
  // A failed split is cancelled.
  auto failing = intent_body("237690000002", 1000);
  failing["settlement_mode"] = "SPLIT";
  failing["distribution"] = bj::array{bj::object{{"matricule", "MCH-CM-0002"}, {"rate", 100}}};
  auto rec2 = create_ok(p, failing);
  std::string ref2(rec2.at("transaction_reference").as_string());
  ASSERT_EQ(call(&Service::execute, p, bj::object{{"transaction_reference", ref2}}).first, 200);
  EXPECT_EQ(wait_status(p, ref2, "PENDING"), "FAILED");
  EXPECT_EQ(status_of(p, ref2).at("split_status"), "CANCELLED");
  expect_ledger_clean();
}

TEST_P(PaymentsTest, DisbursementsReserveFundsAndReleaseThemOnFailure) {
  service_->start();
  auto p = principal(m1_);
  // Earn 20 000 XAF first.
  std::string ref;
  ASSERT_NO_FATAL_FAILURE(earn(p, "237690000050", 20'000, ref));
  auto available = [&] { return balance(ledger::merchant_available(m1_.id, "sandbox", "XAF")); };
  auto pending = [&] { return balance(ledger::merchant_pending(m1_.id, "sandbox", "XAF")); };
  ASSERT_EQ(available(), 20'000);

  auto payout = [&](std::string wallet, std::int64_t amount, std::string channel = "PROVIDER") {
    auto body = payout_body(std::move(wallet), amount);
    body["channel"] = channel;
    return body;
  };
  // More than the balance (amount + 150 fee): refused, nothing reserved.
  auto [s1, e1] = call(&Service::disbursement_intent, p, payout("237690000060", 19'900));
  EXPECT_EQ(s1, 400) << bj::serialize(e1);
  EXPECT_EQ(e1.at("message"), "insufficient_funds");
  EXPECT_EQ(available(), 20'000);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE operation = 'DISBURSEMENT'"), 0);
  // A payout that the operator fails: reserved, then released.
  auto [s2, e2] = call(&Service::disbursement_intent, p, payout("237690000004", 5000));
  ASSERT_EQ(s2, 200) << bj::serialize(e2);
  auto d2 = e2.at("data").as_object();
  EXPECT_EQ(d2.at("operation"), "DISBURSEMENT");
  EXPECT_EQ(d2.at("status"), "PENDING");
  EXPECT_EQ(d2.at("fee").as_int64(), 150);
  EXPECT_EQ(d2.at("required_total").as_int64(), 5150);
  EXPECT_EQ(available(), 20'000 - 5150);
  EXPECT_EQ(pending(), 5150);
  std::string ref2(d2.at("transaction_reference").as_string());
  EXPECT_EQ(wait_status(p, ref2, "PENDING", &Service::disbursement_status), "FAILED");
  EXPECT_EQ(available(), 20'000);
  EXPECT_EQ(pending(), 0);
  // A successful payout: pending drains to the operator and the fee.
  auto body3 = payout("237690000061", 10'000);
  auto [s3, e3] = call(&Service::disbursement_intent, p, body3);
  ASSERT_EQ(s3, 200);
  std::string ref3(e3.at("data").at("transaction_reference").as_string());
  // Idempotent: the same request does not reserve twice.
  auto [s3b, e3b] = call(&Service::disbursement_intent, p, body3);
  EXPECT_EQ(s3b, 200);
  EXPECT_EQ(e3b.at("data").at("transaction_reference").as_string(), ref3);
  EXPECT_EQ(available(), 20'000 - 10'150);
  EXPECT_EQ(wait_status(p, ref3, "PENDING", &Service::disbursement_status), "COMPLETED");
  EXPECT_EQ(available(), 9850);
  EXPECT_EQ(pending(), 0);
  EXPECT_EQ(balance(ledger::fee_revenue("sandbox", "XAF")), 400 + 150);
  // A payout to a platform wallet completes at once.
  auto [s4, e4] = call(&Service::disbursement_intent, p, payout("237690000062", 1000, "WALLET"));
  ASSERT_EQ(s4, 200) << bj::serialize(e4);
  EXPECT_EQ(e4.at("data").at("status"), "COMPLETED");
  EXPECT_EQ(balance(ledger::customer_wallet("237690000062", "sandbox", "XAF")), 1000);
  EXPECT_EQ(available(), 8850);
  // Payouts are not executed, and collection fields are refused.
  auto [s5, e5] = call(&Service::execute, p, bj::object{{"transaction_reference", ref3}});
  EXPECT_EQ(s5, 404);
  auto bad = payout("237690000061", 100);
  bad["settlement_mode"] = "SPLIT";
  auto [s6, e6] = call(&Service::disbursement_intent, p, bad);
  EXPECT_EQ(s6, 400);
  EXPECT_TRUE(e6.at("error").at("details").as_object().contains("settlement_mode"));
  expect_ledger_clean();
}

TEST_P(PaymentsTest, VerificationNamesTheHolderDeterministically) {
  auto p = principal(m1_);
  auto [s1, e1] = call(&Service::verify_account, p, bj::object{{"provider", "MTN_MOMO_CMR"}, {"wallet", "690000070"}});
  ASSERT_EQ(s1, 200) << bj::serialize(e1);
  EXPECT_EQ(e1.at("data").at("wallet"), "237690000070");
  std::string name(e1.at("data").at("account_holder_name").as_string());
  EXPECT_FALSE(name.empty());
  auto [s2, e2] =
      call(&Service::verify_account, p, bj::object{{"provider", "MTN_MOMO_CMR"}, {"wallet", "237690000070"}});
  EXPECT_EQ(e2.at("data").at("account_holder_name").as_string(), name);
  auto [s3, e3] =
      call(&Service::verify_account, p, bj::object{{"provider", "MTN_MOMO_CMR"}, {"wallet", "237690000004"}});
  EXPECT_EQ(s3, 404);
  EXPECT_EQ(e3.at("message"), "account_not_found");
  auto [s4, e4] = call(&Service::verify_account, p, bj::object{{"provider", "MTN_MOMO_CMR"}, {"wallet", "12"}});
  EXPECT_EQ(s4, 400);
  EXPECT_TRUE(e4.at("error").at("details").as_object().contains("wallet"));
  auto [s5, e5] = call(&Service::verify_account, p, bj::object{{"provider", "NOPE"}, {"wallet", "690000070"}});
  EXPECT_EQ(s5, 400);
  EXPECT_TRUE(e5.at("error").at("details").as_object().contains("provider"));
}

TEST_P(PaymentsTest, CancelOnlyFromInitiated) {
  auto p = principal(m1_);
  auto rec = create_ok(p, intent_body());
  bj::object ref{{"transaction_reference", rec.at("transaction_reference")}};
  auto [s1, e1] = call(&Service::cancel, p, ref);
  ASSERT_EQ(s1, 200);
  EXPECT_EQ(e1.at("data").at("status"), "CANCELLED");
  EXPECT_EQ(call(&Service::cancel, p, ref).first, 409);
  EXPECT_EQ(call(&Service::execute, p, ref).first, 409);
}

TEST_P(PaymentsTest, RacingCallbackPollAndExpiryApplyExactlyOneTransition) {
  // No delivery threads: the test itself plays the operator, the poller and the worker.
  auto p = principal(m1_);
  for (int round = 0; round < 10; ++round) {
    auto rec = create_ok(p, intent_body("237690000010", 1000));
    std::string ref(rec.at("transaction_reference").as_string());
    ASSERT_EQ(call(&Service::execute, p, bj::object{{"transaction_reference", ref}}).first, 200);
    const std::int64_t before = offset_;
    offset_ += 6 * 60 * 1000;  // expired, and the operator's answer is due: everyone may act
    PaymentOrder order;
    order.provider_reference = std::string(rec.at("provider_reference").as_string());
    order.msisdn = "237690000010";
    OperatorStatus ok;
    ok.state = OperatorStatus::State::succeeded;
    std::string body = service_->sandbox().callback_body(order, ok);
    std::vector<std::thread> threads;
    for (int i = 0; i < 3; ++i) {
      threads.emplace_back([&] {
        web::Request cb;
        cb.body = body;
        cb.path_params = {{"connector", "sandbox"}};
        cb.headers = {{"x-sandbox-signature", service_->sandbox().sign(body, now_ms() + offset_)}};
        EXPECT_EQ(web::respond(cb, service_->operator_callback(cb)).status, 200);
      });
      threads.emplace_back([&] { status_of(p, ref); });
      threads.emplace_back([&] { EXPECT_TRUE(service_->expire_due().ok()); });
    }
    for (auto& t : threads) t.join();
    auto final_status = std::string(status_of(p, ref).at("status").as_string());
    EXPECT_TRUE(final_status == "COMPLETED" || final_status == "EXPIRED") << final_status;
    EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transitions t JOIN pay_transactions x ON x.id = t.transaction_id "
                    "WHERE x.reference = ? AND t.from_status = 'PENDING'",
                    {ref}),
              1);
    EXPECT_EQ(count("SELECT COUNT(*) FROM events WHERE subject = ?", {ref}), 2);
    offset_ = before;
  }
  expect_ledger_clean();
}

// The confirmation page of a failed collection says why, in the page's language, from the typed
// reason code; the raw code never shows.
TEST_P(PaymentsTest, ConfirmationPageOfAFailedCollectionSaysWhyInWords) {
  service_->start();
  auto p = principal(m1_);
  auto rec = create_ok(p, intent_body("237690000005"));
  std::string ref(rec.at("transaction_reference").as_string());
  std::string url(rec.at("confirmation_url").as_string());
  std::string sig = url.substr(url.find("sig=") + 4);
  ASSERT_EQ(call(&Service::execute, p, bj::object{{"transaction_reference", ref}}).first, 200);
  auto tx = service_->find(web::acting(p), ref, kCollection);
  ASSERT_TRUE(tx.ok());
  OperatorStatus no;
  no.state = OperatorStatus::State::failed;
  no.reason = "INSUFFICIENT_FUNDS";
  ASSERT_TRUE(service_->force_sandbox_outcome(*tx, no).ok());
  ASSERT_EQ(wait_status(p, ref, "PENDING"), "FAILED");
  web::Request get;
  get.method = "GET";
  get.path_params = {{"reference", ref}};
  get.query = {{"sig", sig}, {"lang", "fr"}};
  auto fr = service_->confirm_page(get).body;
  EXPECT_NE(fr.find(web::html::escape(i18n::text("checkout_failed_insufficient_funds", i18n::Locale::fr))),
            std::string::npos)
      << fr;
  EXPECT_EQ(fr.find("(INSUFFICIENT_FUNDS)"), std::string::npos) << "no raw reason code in the page's text";
  get.query = {{"sig", sig}, {"lang", "en"}};
  auto en = service_->confirm_page(get).body;
  EXPECT_NE(en.find(web::html::escape(i18n::text("checkout_failed_insufficient_funds", i18n::Locale::en))),
            std::string::npos)
      << en;
}

TEST_P(PaymentsTest, ConfirmationPageShowsThePaymentAndPushesTheRequest) {
  auto p = principal(m1_);
  // ...0005: the sandbox operator leaves the request PENDING (no callback), so the page's answer
  // after the push is PENDING whatever the machine's load.
  auto rec = create_ok(p, intent_body("237690000005", 10'000));
  std::string ref(rec.at("transaction_reference").as_string());
  std::string url(rec.at("confirmation_url").as_string());
  std::string sig = url.substr(url.find("sig=") + 4);
  web::Request get;
  get.method = "GET";
  get.path_params = {{"reference", ref}};
  get.query = {{"sig", sig}, {"lang", "en"}};
  auto page = service_->confirm_page(get);
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("Boutique Akwa"), std::string::npos);
  EXPECT_NE(page.body.find("10&#8239;200 XAF"), std::string::npos) << "the total the customer pays";
  EXPECT_NE(page.body.find("Send the request to my phone"), std::string::npos);
  get.query = {{"sig", sig}, {"lang", "fr"}};
  EXPECT_NE(service_->confirm_page(get).body.find("Envoyer la demande"), std::string::npos);
  get.query = {{"sig", "forged"}};
  EXPECT_EQ(service_->confirm_page(get).status, 404);
  web::Request post;
  post.method = "POST";
  post.path_params = {{"reference", ref}};
  post.headers = {{"content-type", "application/x-www-form-urlencoded"}};
  post.body = "sig=" + sig + "&lang=en&action=pay";
  auto submitted = service_->confirm_submit(post);
  EXPECT_EQ(submitted.status, 200);
  EXPECT_NE(submitted.body.find("data-status=\"PENDING\""), std::string::npos);
  EXPECT_EQ(status_of(p, ref).at("status"), "PENDING");
  // Declining from the page cancels an INITIATED collection.
  auto rec2 = create_ok(p, intent_body());
  std::string ref2(rec2.at("transaction_reference").as_string());
  std::string url2(rec2.at("confirmation_url").as_string());
  post.path_params = {{"reference", ref2}};
  post.body = "sig=" + url2.substr(url2.find("sig=") + 4) + "&action=decline";
  EXPECT_NE(service_->confirm_submit(post).body.find("data-status=\"CANCELLED\""), std::string::npos);
}

TEST_P(PaymentsTest, LedgerCheckFindsTampering) {
  service_->start();
  auto p = principal(m1_);
  auto rec = create_ok(p, intent_body("237690000010", 1000));
  std::string ref(rec.at("transaction_reference").as_string());
  ASSERT_EQ(call(&Service::execute, p, bj::object{{"transaction_reference", ref}}).first, 200);
  ASSERT_EQ(wait_status(p, ref, "PENDING"), "COMPLETED");
  expect_ledger_clean();
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_TRY(c.exec("UPDATE ledger_accounts SET balance = balance + 1 WHERE kind = 'revenue'"));
                   return {};
                 })
                  .ok());
  auto report = ledger::check(*db_);
  ASSERT_TRUE(report.ok());
  ASSERT_FALSE(report->ok());
  EXPECT_EQ(report->violations[0].rule, "balance_mismatch");
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_TRY(c.exec("UPDATE ledger_accounts SET balance = balance - 1 WHERE kind = 'revenue'"));
                   SIKA_TRY(c.exec(
                       "UPDATE ledger_entries SET credit = credit + 5 WHERE id = (SELECT MIN(id) FROM ledger_entries "
                       "WHERE credit > 0)"));
                   return {};
                 })
                  .ok());
  report = ledger::check(*db_);
  ASSERT_TRUE(report.ok());
  std::set<std::string> rules;
  for (const auto& v : report->violations) rules.insert(v.rule);
  EXPECT_TRUE(rules.contains("journal_unbalanced"));
  EXPECT_TRUE(rules.contains("currency_unbalanced"));
  EXPECT_TRUE(rules.contains("balance_mismatch"));
  // A completed transaction whose journal disappeared is caught too.
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_TRY(c.exec("UPDATE pay_transactions SET status = 'FAILED' WHERE reference = ?", {ref}));
                   return {};
                 })
                  .ok());
  report = ledger::check(*db_);
  rules.clear();
  for (const auto& v : report->violations) rules.insert(v.rule);
  EXPECT_TRUE(rules.contains("transaction_journals"));
}

}  // namespace
}  // namespace sika::payments::testing
