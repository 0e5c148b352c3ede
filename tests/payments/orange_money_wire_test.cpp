// The Orange Money wire format (order ids, bodies, the mapping of Orange's statuses: only an
// explicit final status is final) and the connector's own rules against a scripted operator:
// one token per node reused until near its expiry, the notif_token of the payment required on a
// notification, a push payment's payToken taken before the prompt is sent, an order with nothing
// kept ended only after the creation window.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <deque>
#include <mutex>

#include "core/json.hpp"
#include "payments/orange_money.hpp"
#include "payments/orange_money_wire.hpp"

using namespace sika;
using namespace sika::payments;
namespace bj = boost::json;

namespace {

constexpr std::string_view kRef = "0190f0c2-1234-7abc-8def-0123456789ab";

// An operator whose answers are scripted; it records what it was sent.
struct ScriptedOperator : web::HttpClient {
  std::mutex mu;
  std::deque<web::ClientResponse> answers;
  std::vector<web::ClientRequest> sent;
  Result<web::ClientResponse> send(const web::ClientRequest& req) override {
    std::lock_guard lock(mu);
    sent.push_back(req);
    if (req.url.ends_with("/token"))
      return web::ClientResponse{200, {}, R"({"access_token":"T1","expires_in":3600})", 0, ""};
    if (answers.empty()) return make_error(ErrorKind::upstream_timeout, "upstream_timeout");
    auto a = answers.front();
    answers.pop_front();
    return a;
  }
  int count(std::string_view suffix) {
    std::lock_guard lock(mu);
    int n = 0;
    for (const auto& r : sent) n += r.url.ends_with(suffix);
    return n;
  }
};

OrangeMoneyOptions options(orange::Flow flow, std::int64_t* clock) {
  OrangeMoneyOptions o;
  o.base_url = "http://orange.test";
  o.client_id = "id";
  o.client_secret = "secret";
  o.merchant_key = "mk";
  o.flow = flow;
  o.country = "cm";
  o.channel_msisdn = "691234567";
  o.pin = "2222";
  o.x_auth_token = "xauth";
  o.callback_url = "http://sika.test/api/operator/callback/orange_money";
  o.status_per_second = 0;
  o.retry_pause_ms = 1;
  o.timeout_ms = 1000;
  o.connect_timeout_ms = 1000;
  o.clock = [clock] { return *clock; };
  return o;
}

PaymentOrder order() {
  PaymentOrder o;
  o.operation = "COLLECTION";
  o.provider_reference = std::string(kRef);
  o.transaction_reference = "TX-1";
  o.msisdn = "237691000100";
  o.amount = 1500;
  o.currency = "XAF";
  o.return_url = "http://sika.test/checkout/confirm/TX-1?sig=abc";
  o.message = "Boutique TX-1";
  o.submitted_at = 1'000'000;
  return o;
}

web::Request callback(std::string query, std::string body) {
  web::Request r;
  r.method = "POST";
  r.target = "/operator/callback/orange_money?" + query;
  r.path = "/operator/callback/orange_money";
  r.query_string = query;
  if (auto eq = query.find('='); eq != std::string::npos)
    r.query.emplace_back(query.substr(0, eq), query.substr(eq + 1));
  r.body = std::move(body);
  return r;
}

}  // namespace

TEST(OrangeWire, OrderIdsAreAtMost30CharactersDerivedFromTheReferenceAndReversible) {
  const std::string id = orange::order_id(kRef);
  EXPECT_LE(id.size(), orange::kMaxOrderId);
  EXPECT_EQ(id, orange::order_id(kRef)) << "the same order has the same id on every node and after a restart";
  EXPECT_NE(id, orange::order_id("0190f0c2-1234-7abc-8def-0123456789ac"));
  EXPECT_EQ(orange::provider_reference_of(id), std::string(kRef));
  EXPECT_LE(orange::order_id("not-a-uuid-but-a-very-long-reference-of-many-characters").size(), 30u);
  EXPECT_FALSE(orange::provider_reference_of("SKAAAA"));
  EXPECT_FALSE(orange::provider_reference_of(orange::order_id("x")));
}

TEST(OrangeWire, WebpayBodyCarriesWhatOrangeDocuments) {
  orange::WebpayOrder w{"mk",
                        "XAF",
                        orange::order_id(kRef),
                        "http://r",
                        "http://c",
                        "http://n",
                        "fr",
                        "a reference far longer than thirty characters",
                        1500};
  auto o = json::parse_object(orange::webpay_body(w));
  ASSERT_TRUE(o);
  for (const char* k :
       {"merchant_key", "currency", "order_id", "amount", "return_url", "cancel_url", "notif_url", "lang", "reference"})
    EXPECT_TRUE(o->contains(k)) << k;
  EXPECT_EQ(o->at("amount").as_int64(), 1500);
  EXPECT_LE(o->at("reference").as_string().size(), 30u);
  EXPECT_EQ(orange::notif_url("http://s/cb", kRef, ""), "http://s/cb?ref=" + std::string(kRef));
}

TEST(OrangeWire, OnlyExplicitFinalStatusesAreFinal) {
  using S = OperatorStatus::State;
  auto web = [](std::string status) { return *orange::parse_webpay_status(R"({"status":")" + status + R"("})"); };
  EXPECT_EQ(web("SUCCESS").state, S::succeeded);
  EXPECT_EQ(web("FAILED").state, S::failed);
  EXPECT_EQ(web("FAILED").reason, "OPERATOR_REFUSED");
  EXPECT_EQ(web("EXPIRED").state, S::failed);
  EXPECT_EQ(web("EXPIRED").reason, "TIMEOUT");
  for (auto s : {"INITIATED", "PENDING", "SUCCESSFULL_MAYBE", ""}) EXPECT_EQ(web(s).state, S::pending) << s;
  EXPECT_EQ((*orange::parse_webpay_status(R"({"status":"SUCCESS","txnid":"MP1"})")).operator_reference, "MP1");
  EXPECT_FALSE(orange::parse_webpay_status("not json"));

  auto push = [](std::string data) { return *orange::parse_push_status(R"({"message":"ok","data":)" + data + "}"); };
  EXPECT_EQ(push(R"({"status":"SUCCESSFULL","txnid":"MP2"})").state, S::succeeded);
  EXPECT_EQ(push(R"({"status":"SUCCESSFULL","txnid":"MP2"})").operator_reference, "MP2");
  EXPECT_EQ(push(R"({"status":"FAILED","confirmtxnstatus":"60019"})").reason, "INSUFFICIENT_FUNDS");
  EXPECT_EQ(push(R"({"status":"FAILED"})").reason, "OPERATOR_REFUSED");
  EXPECT_EQ(push(R"({"status":"CANCELLED"})").reason, "REJECTED_BY_CUSTOMER");
  EXPECT_EQ(push(R"({"status":"EXPIRED"})").reason, "TIMEOUT");
  for (auto s : {"INITIATED", "PENDING", "UNKNOWN"})
    EXPECT_EQ(push(std::string(R"({"status":")") + s + R"("})").state, S::pending) << s;
}

TEST(OrangeWire, PushBodyAndNumbers) {
  orange::PushOrder p{"http://n", "691234567", "691000100", "2222", "SK1", "desc", "MP-T", 1500};
  auto o = json::parse_object(orange::push_body(p));
  ASSERT_TRUE(o);
  EXPECT_EQ(o->at("amount").as_string(), "1500");
  for (const char* k :
       {"notifUrl", "channelUserMsisdn", "amount", "subscriberMsisdn", "pin", "orderId", "description", "payToken"})
    EXPECT_TRUE(o->contains(k)) << k;
  EXPECT_EQ(orange::national_msisdn("237691000100"), "691000100");
  EXPECT_EQ(*orange::parse_pay_token(R"({"message":"ok","data":{"payToken":"MP-T"}})"), "MP-T");
  EXPECT_FALSE(orange::parse_pay_token(R"({"message":"ok","data":{}})"));
  EXPECT_TRUE(orange::definite_refusal(400));
  EXPECT_TRUE(orange::definite_refusal(403));
  for (int s : {401, 404, 408, 409, 429, 500, 503}) EXPECT_FALSE(orange::definite_refusal(s)) << s;
}

TEST(OrangeConnector, WebpayLeavesThePaymentUrlAndTokensAndSharesOneToken) {
  std::int64_t clock = 1'000'000;
  ScriptedOperator op;
  OrangeMoney om(op, options(orange::Flow::webpay, &clock));
  for (int i = 0; i < 3; ++i)
    op.answers.push_back(web::ClientResponse{
        201, {}, R"({"status":201,"pay_token":"PT","payment_url":"https://pay.test/PT","notif_token":"NT"})", 0, ""});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(om.request_collection(order()));
  EXPECT_EQ(om.tokens_fetched(), 1) << "one token serves every call until near its expiry";
  auto accepted = om.take_accepted(kRef);
  ASSERT_TRUE(accepted);
  EXPECT_EQ(accepted->customer_url, "https://pay.test/PT");
  auto st = orange::read_state(accepted->operator_state);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->pay_token, "PT");
  EXPECT_EQ(st->notif_token, "NT");
  auto body = json::parse_object(op.sent.back().body);
  EXPECT_EQ(body->at("return_url").as_string(), order().return_url);
  EXPECT_TRUE(op.sent.back().url.ends_with("/orange-money-webpay/cm/v1/webpayment"));
  clock += 3600 * 1000;  // the token has expired: a new one
  op.answers.push_back(web::ClientResponse{
      201, {}, R"({"pay_token":"PT","payment_url":"https://pay.test/PT","notif_token":"NT"})", 0, ""});
  ASSERT_TRUE(om.request_collection(order()));
  EXPECT_EQ(om.tokens_fetched(), 2);
}

TEST(OrangeConnector, ANotificationNeedsTheNotifTokenOfItsOwnPayment) {
  std::int64_t clock = 1'000'000;
  ScriptedOperator op;
  OrangeMoney om(op, options(orange::Flow::webpay, &clock));
  PaymentOrder o = order();
  o.operator_state = orange::write_state({orange::Flow::webpay, orange::order_id(kRef), "PT", "NT-of-this-payment"});
  const std::string q = "ref=" + std::string(kRef);
  auto good = callback(q, R"({"status":"SUCCESS","notif_token":"NT-of-this-payment","txnid":"MP1"})");
  auto report = om.parse_callback(good);
  ASSERT_TRUE(report);
  EXPECT_EQ(report->provider_reference, kRef);
  EXPECT_TRUE(om.authenticate_callback(good, *report, &o));
  auto forged = callback(q, R"({"status":"SUCCESS","notif_token":"NT-of-another-payment","txnid":"MP1"})");
  auto st = om.authenticate_callback(forged, *om.parse_callback(forged), &o);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind, ErrorKind::unauthenticated);
  auto none = callback(q, R"({"status":"SUCCESS","txnid":"MP1"})");
  EXPECT_FALSE(om.authenticate_callback(none, *om.parse_callback(none), &o));
  EXPECT_FALSE(om.authenticate_callback(good, *report, nullptr)) << "no such payment: refused alike";
  EXPECT_EQ(om.parse_callback(callback("", R"({"status":"SUCCESS"})")).error().kind, ErrorKind::invalid);
}

TEST(OrangeConnector, PushTakesThePayTokenFirstAndSendsThePromptOnce) {
  std::int64_t clock = 1'000'000;
  ScriptedOperator op;
  OrangeMoney om(op, options(orange::Flow::push, &clock));
  op.answers.push_back(web::ClientResponse{200, {}, R"({"message":"ok","data":{"payToken":"MP-T"}})", 0, ""});
  auto prepared = om.prepare_collection(order());
  ASSERT_TRUE(prepared);
  ASSERT_TRUE(*prepared);
  PaymentOrder o = order();
  o.operator_state = (*prepared)->operator_state;
  // mp/pay answers nothing: not sent again (the payToken's status decides), and the order is not refused.
  Status sent = om.request_collection(o);
  ASSERT_FALSE(sent);
  EXPECT_FALSE(is_refusal(sent.error()));
  EXPECT_EQ(op.count("/mp/pay"), 1);
  for (const auto& r : op.sent) {
    bool has = false;
    for (const auto& [k, v] : r.headers) has |= k == "X-AUTH-TOKEN" && v == "xauth";
    EXPECT_TRUE(has || r.url.ends_with("/token")) << r.url;
  }
  op.answers.push_back(
      web::ClientResponse{200, {}, R"({"message":"ok","data":{"status":"SUCCESSFULL","txnid":"MP9"}})", 0, ""});
  auto status = om.query_status(o);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->state, OperatorStatus::State::succeeded);
  EXPECT_TRUE(op.sent.back().url.ends_with("/mp/paymentstatus/MP-T"));
  EXPECT_TRUE(om.prompts_again(o));
  op.answers.push_back(web::ClientResponse{200, {}, R"({"message":"ok","data":{}})", 0, ""});
  EXPECT_TRUE(om.prompt_again(o));
  EXPECT_TRUE(op.sent.back().url.ends_with("/mp/push/MP-T"));
}

TEST(OrangeConnector, AnOrderWithNothingKeptEndsOnlyAfterTheCreationWindow) {
  std::int64_t clock = 1'000'000;
  ScriptedOperator op;
  OrangeMoney om(op, options(orange::Flow::webpay, &clock));
  PaymentOrder o = order();
  o.submitted_at = clock;
  auto early = om.query_status(o);
  ASSERT_FALSE(early) << "it may still be being created: asked again later";
  EXPECT_FALSE(is_refusal(early.error()));
  clock += om.creation_window_ms() + 1;
  auto late = om.query_status(o);
  ASSERT_TRUE(late);
  EXPECT_EQ(late->state, OperatorStatus::State::failed);
  EXPECT_EQ(late->reason, "OPERATOR_ERROR");
}
