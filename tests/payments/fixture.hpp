#pragma once
// A payments::Service on a fresh database (SQLite or PostgreSQL, by test parameter), with a
// small in-memory catalog, three merchants, and an HTTP client that delivers the sandbox
// operator's callbacks straight to the service's callback handler.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "catalog/model.hpp"
#include "core/random.hpp"
#include "core/time.hpp"
#include "merchant/merchant.hpp"
#include "notify/notifier.hpp"
#include "otp/service.hpp"
#include "payments/health.hpp"
#include "payments/ledger.hpp"
#include "payments/service.hpp"
#include "support/test_db.hpp"
#include "web/client.hpp"
#include "web/envelope.hpp"

namespace sika::payments::testing {

namespace bj = boost::json;

// Delivers requests to a handler in-process (the sandbox's callbacks).
class LoopbackClient final : public web::HttpClient {
 public:
  std::function<web::Response(web::Request&)> handler;
  std::atomic<int> calls{0};
  std::atomic<bool> refuse{false};  // answer 503 to simulate a platform outage

  Result<web::ClientResponse> send(const web::ClientRequest& r) override {
    ++calls;
    if (refuse) return web::ClientResponse{503, {}, "{}", 0, "127.0.0.1"};
    web::Request req;
    req.method = r.method;
    req.path = "/operator/callback/sandbox";
    req.target = req.path;
    req.body = r.body;
    for (const auto& [k, v] : r.headers) req.headers.emplace_back(k, v);
    req.path_params = {{"connector", "sandbox"}};
    web::Response res = handler ? handler(req) : web::Response::json(503, "{}");
    return web::ClientResponse{res.status, {}, res.body, 0, "127.0.0.1"};
  }
};

inline std::shared_ptr<const catalog::Catalog> test_catalog() {
  using catalog::Country, catalog::Provider, catalog::PaymentService, catalog::PricingRule;
  std::vector<Country> countries = {
      {.id = 1,
       .code = "CMR",
       .alpha2 = "CM",
       .name_fr = "Cameroun",
       .name_en = "Cameroon",
       .dialling_code = "+237",
       .currency = "XAF",
       .msisdn_length = 9,
       .msisdn_pattern = "6\\d{8}",
       .active = true},
      {.id = 2,
       .code = "CIV",
       .alpha2 = "CI",
       .name_fr = "Côte d'Ivoire",
       .name_en = "Côte d'Ivoire",
       .dialling_code = "+225",
       .currency = "XOF",
       .msisdn_length = 10,
       .msisdn_pattern = "0[157]\\d{8}",
       .active = true},
  };
  std::vector<Provider> providers = {
      {.id = 1, .code = "MTN", .name = "MTN", .connector = "sandbox", .active = true},
      {.id = 2, .code = "ORANGE", .name = "Orange", .connector = "sandbox", .active = true},
      {.id = 3, .code = "SIKA", .name = "Sika", .connector = "wallet", .active = true},
  };
  auto svc = [](std::int64_t id, std::string code, std::int64_t provider, std::int64_t country, std::string currency,
                catalog::ServiceKind kind, bool otp, bool active = true) {
    PaymentService s;
    s.id = id;
    s.code = std::move(code);
    s.name = s.code;
    s.provider_id = provider;
    s.country_id = country;
    s.currency = std::move(currency);
    s.kind = kind;
    s.needs_otp = otp;
    s.min_amount = kind == catalog::ServiceKind::wallet ? 1 : 100;
    s.max_amount = 1'000'000;
    s.active = active;
    return s;
  };
  using K = catalog::ServiceKind;
  std::vector<PaymentService> services = {
      svc(1, "MTN_MOMO_CMR", 1, 1, "XAF", K::mobile_money, false),
      svc(2, "ORANGE_MONEY_CMR", 2, 1, "XAF", K::mobile_money, true),
      svc(3, "SIKA_WALLET_CMR", 3, 1, "XAF", K::wallet, false),
      svc(4, "MTN_MOMO_CIV", 1, 2, "XOF", K::mobile_money, false),
      svc(5, "CLOSED_CMR", 1, 1, "XAF", K::mobile_money, false, false),
  };
  auto rule = [](std::int64_t id, std::int64_t country, catalog::Operation op, catalog::FeeType type,
                 std::int64_t units, std::optional<std::int64_t> in, std::optional<std::int64_t> out) {
    PricingRule r;
    r.id = id;
    r.code = "R" + std::to_string(id);
    r.country_id = country;
    r.operation = op;
    r.user_tier = 1;
    r.fee_type = type;
    r.fee_units = units;
    r.incoming_service_id = in;
    r.outgoing_service_id = out;
    return r;
  };
  using O = catalog::Operation;
  using F = catalog::FeeType;
  std::vector<PricingRule> rules = {
      rule(1, 1, O::collection, F::percentage, 20'000, std::nullopt, std::nullopt),  // 2 %
      rule(2, 1, O::collection, F::fixed, 0, 3, std::nullopt),                       // wallet: free
      rule(3, 1, O::disbursement, F::fixed, 150, std::nullopt, std::nullopt),
      rule(4, 1, O::disbursement, F::fixed, 0, std::nullopt, 3),
      rule(5, 2, O::collection, F::percentage, 25'000, std::nullopt, std::nullopt),
  };
  return std::make_shared<const catalog::Catalog>(1, std::move(countries), std::move(providers), std::move(services),
                                                  std::move(rules));
}

// A transaction of merchant 7 made in memory (nothing is stored): `amount` for the merchant and a
// fee of 20 on MTN_MOMO_CMR, in XAF.
inline Transaction sample_transaction(std::string_view operation, std::string_view channel, std::int64_t amount,
                                      std::string_view mode = kDirect) {
  return {.id = 42,
          .reference = "TX-SAMPLE",
          .merchant_id = 7,
          .environment = "sandbox",
          .operation = std::string(operation),
          .channel = std::string(channel),
          .service_code = "MTN_MOMO_CMR",
          .customer_wallet = "237690000010",
          .amount = amount,
          .currency = "XAF",
          .fee = 20,
          .required_total = amount + 20,
          .settlement_mode = std::string(mode),
          .split_status = std::string(mode == kSplit ? kSplitPending : kSplitNone)};
}

class PaymentsTest : public sika::testing::DbTest {
 protected:
  void SetUp() override {
    sika::testing::DbTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(
        db_->write([&](store::Conn& c) -> Status {
             std::int64_t t = now_ms();
             SIKA_ASSIGN_OR_RETURN(
                 m1_, merchant::create(c, {"MCH-CM-0001", "Boutique Akwa", "a@example.com", {"CMR"}, "sandbox"}, t));
             SIKA_ASSIGN_OR_RETURN(
                 m2_, merchant::create(c, {"MCH-CI-0001", "Maquis Plateau", "b@example.com", {"CIV"}, "sandbox"}, t));
             SIKA_ASSIGN_OR_RETURN(
                 m3_, merchant::create(c, {"MCH-CM-0002", "Partenaire", "c@example.com", {"CMR"}, "sandbox"}, t));
             SIKA_ASSIGN_OR_RETURN(
                 m4_, merchant::create(c, {"MCH-CM-0003", "Fermé", "d@example.com", {"CMR"}, "sandbox"}, t));
             SIKA_TRY(c.exec("UPDATE merchants SET active = 0 WHERE id = ?", {m4_.id}));
             return {};
           })
            .ok());
    make_service();
  }

  void TearDown() override {
    if (service_) service_->stop();
    service_.reset();
    otp_.reset();
    notifier_.reset();
    sika::testing::DbTest::TearDown();
  }

  virtual void tune(Options&) {}

  void make_service() {
    catalog_ = test_catalog();
    notifier_ = std::make_unique<notify::SandboxNotifier>(*db_);
    otp::Options oo;
    oo.pepper = "test-pepper";
    oo.sandbox_code = "123456";
    oo.resend_cooldown_ms = 0;
    oo.sends_per_destination_per_hour = 0;  // many collections per wallet in these tests
    otp_ = std::make_unique<otp::Service>(*db_, *notifier_, oo);
    Options o;
    o.otp = otp_.get();
    o.checkout_url = "http://127.0.0.1:1/checkout";
    o.callback_base_url = "http://127.0.0.1:1/api/operator/callback";
    o.secret = "test-secret-0123456789";
    o.sandbox_delay_ms = 30;
    o.sandbox_duplicate_delay_ms = 80;
    o.sandbox_late_ms = 60'000;
    o.clock = [this] {
      if (clock_throws_.load()) throw std::runtime_error("the test's clock failed");
      return now_ms() + offset_.load();
    };
    tune(o);
    service_ = std::make_unique<Service>(
        *db_, [this] { return catalog_; }, client_, o);
    client_.handler = [this](web::Request& r) { return web::respond(r, service_->operator_callback(r)); };
  }

  web::Principal principal(const merchant::Merchant& m, std::string environment = "sandbox") {
    web::Principal p;
    p.subject = "client-" + m.matricule;
    p.client_id = p.subject;
    p.scopes = {"payments"};
    p.merchant = m.matricule;
    p.merchant_id = m.id;
    p.countries = m.countries;
    p.environment = std::move(environment);
    return p;
  }

  static web::Request request(const web::Principal& p, const bj::value& body) {
    web::Request r;
    r.method = "POST";
    r.body = bj::serialize(body);
    r.headers = {{"content-type", "application/json"}};
    r.principal = p;
    r.locale = i18n::Locale::en;
    return r;
  }

  static bj::object parse(const web::Response& r) {
    auto v = bj::parse(r.body);
    return v.as_object();
  }

  // A valid collection body.
  static bj::object intent_body(std::string wallet = "237690000000", std::int64_t amount = 10'000,
                                std::string provider = "MTN_MOMO_CMR") {
    return bj::object{{"amount", amount},
                      {"currency", "XAF"},
                      {"transaction_uuid", uuid_v4()},
                      {"provider", provider},
                      {"channel", "PROVIDER"},
                      {"customer_wallet", wallet},
                      {"description", "Order 42"},
                      {"metadata", bj::object{{"order", 42}}}};
  }

  // A valid payout body: the collection body's fields without its description and metadata.
  static bj::object payout_body(std::string wallet, std::int64_t amount = 5'000) {
    auto body = intent_body(std::move(wallet), amount);
    body.erase("description");
    body.erase("metadata");
    return body;
  }

  // Posts and returns (HTTP status, envelope).
  std::pair<int, bj::object> call(Result<web::Response> (Service::*fn)(web::Request&), const web::Principal& p,
                                  const bj::value& body) {
    auto req = request(p, body);
    auto res = web::respond(req, ((*service_).*fn)(req));
    return {res.status, parse(res)};
  }

  bj::object create_ok(const web::Principal& p, const bj::object& body) {
    auto [status, env] = call(&Service::create_intent, p, body);
    EXPECT_EQ(status, 200) << bj::serialize(env);
    return status == 200 ? env.at("data").as_object() : bj::object{};
  }

  bj::object status_of(const web::Principal& p, std::string_view reference,
                       Result<web::Response> (Service::*fn)(web::Request&) = &Service::status) {
    auto [status, env] = call(fn, p, bj::object{{"transaction_reference", reference}});
    EXPECT_EQ(status, 200) << bj::serialize(env);
    return status == 200 ? env.at("data").as_object() : bj::object{};
  }

  // A collection of `amount` from `wallet`, executed and COMPLETED by the sandbox operator (the
  // service must be started): its reference in `reference`.
  void earn(const web::Principal& p, std::string wallet, std::int64_t amount, std::string& reference) {
    auto rec = create_ok(p, intent_body(std::move(wallet), amount));
    reference = std::string(rec.at("transaction_reference").as_string());
    ASSERT_EQ(call(&Service::execute, p, bj::object{{"transaction_reference", reference}}).first, 200);
    ASSERT_EQ(wait_status(p, reference, "PENDING"), "COMPLETED");
  }

  // Polls status until it leaves `from` (or the deadline passes).
  std::string wait_status(const web::Principal& p, std::string_view reference, std::string_view from,
                          Result<web::Response> (Service::*fn)(web::Request&) = &Service::status, int ms = 5000) {
    std::string s;
    for (int i = 0; i < ms / 10; ++i) {
      s = std::string(status_of(p, reference, fn).at("status").as_string());
      if (s != from) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return s;
  }

  // The one-time code sent for a WALLET collection, read from the sandbox outbox (the message
  // names the transaction reference); "" when none was sent.
  std::string wallet_code(std::string_view msisdn, std::string_view reference) {
    std::string code;
    EXPECT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(auto messages,
                                           notify::list_outbox(c, {.to = "+" + std::string(msisdn), .limit = 200}));
                     for (const auto& m : messages) {
                       if (m.body.find(reference) == std::string::npos) continue;
                       auto at = m.body.find_first_of("0123456789");
                       code = m.body.substr(at, m.body.find_first_not_of("0123456789", at) - at);
                       return {};
                     }
                     return {};
                   })
                    .ok());
    return code;
  }

  // Credits `amount` XAF to merchant `m`'s available sandbox balance, as collections would have.
  void fund_available(const merchant::Merchant& m, std::int64_t amount) {
    ledger::Posting p;
    p.kind = ledger::kWalletFunding;
    p.environment = "sandbox";
    p.currency = "XAF";
    p.memo = "test funding";
    p.legs.push_back({ledger::funding("sandbox", "XAF"), amount, 0});
    p.legs.push_back({ledger::merchant_available(m.id, "sandbox", "XAF"), 0, amount});
    ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                     ledger::Learned learned;
                     return ledger::post(c, p, now_ms(), nullptr, learned);
                   })
                    .ok());
  }

  std::int64_t balance(const ledger::AccountKey& k) {
    auto b = service_->account_balance(k);
    EXPECT_TRUE(b.ok());
    return b.ok() ? *b : -1;
  }

  std::int64_t count(const std::string& sql, const store::Params& params = {}) {
    std::int64_t n = -1;
    EXPECT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(auto row, c.query_one(sql, params));
                     n = row ? row->i64(0) : -1;
                     return {};
                   })
                    .ok());
    return n;
  }

  // The text of the first column of the first row of `sql` ("" when there is none).
  std::string text_of(const std::string& sql, const store::Params& params = {}) {
    std::string out;
    EXPECT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(auto row, c.query_one(sql, params));
                     if (row) out = row->str(0);
                     return {};
                   })
                    .ok());
    return out;
  }

  void expect_ledger_clean() {
    auto report = ledger::check(*db_);
    ASSERT_TRUE(report.ok());
    EXPECT_TRUE(report->ok()) << bj::serialize(report->to_json());
  }

  std::shared_ptr<const catalog::Catalog> catalog_;
  LoopbackClient client_;
  std::unique_ptr<notify::SandboxNotifier> notifier_;
  std::unique_ptr<otp::Service> otp_;
  std::unique_ptr<Service> service_;
  std::atomic<std::int64_t> offset_{0};
  std::atomic<bool> clock_throws_{false};  // the service's clock throws while set
  merchant::Merchant m1_, m2_, m3_, m4_;
};

// An operator standing in for the sandbox ("sandbox" is the catalog's connector): it accepts every
// OTP and submission, answers every status query with a default status, refuses every callback and
// names every account holder "X". Tests override what they watch.
class SandboxStandIn : public Connector {
 public:
  std::string_view name() const override { return "sandbox"; }
  Status check_otp(const PaymentOrder&) override { return {}; }
  Status request_collection(const PaymentOrder&) override { return {}; }
  Status request_payout(const PaymentOrder&) override { return {}; }
  Result<OperatorStatus> query_status(const PaymentOrder&) override { return OperatorStatus{}; }
  Result<CallbackReport> parse_callback(const web::Request&) override { return unauthorized(nullptr); }
  Result<std::string> account_holder(std::string_view, std::string_view) override { return std::string("X"); }
};

// An operator that accepts every payout and refund and remembers each, in order.
class CountingOperator final : public SandboxStandIn {
 public:
  Status request_payout(const PaymentOrder& order) override { return take(order); }
  Status request_refund(const PaymentOrder& order) override { return take(order); }
  bool refunds(bool) const override { return true; }

  Status take(const PaymentOrder& order) {
    std::lock_guard lock(mu);
    ++sent[order.provider_reference];
    order_of_sending.push_back(order.transaction_reference);
    return {};
  }
  std::mutex mu;
  std::map<std::string, int> sent;
  std::vector<std::string> order_of_sending;
};

// Payments on node "node-a" whose operator health the test forces, sending queued payouts and
// refunds `send_batch` at a time to a CountingOperator.
class QueueTest : public PaymentsTest {
 protected:
  explicit QueueTest(int send_batch) : send_batch_(send_batch) {}
  void tune(Options& o) override {
    HealthOptions h;
    h.node_id = "node-a";
    health_ = std::make_unique<Health>(*db_, h);
    o.health = health_.get();
    o.node_id = "node-a";
    o.payout_send_batch = send_batch_;
  }
  void TearDown() override {
    PaymentsTest::TearDown();
    health_.reset();
  }

  const int send_batch_;
  std::unique_ptr<Health> health_;
  CountingOperator operator_;
};

}  // namespace sika::payments::testing
