// The Wave wire format: amounts, numbers, bodies, idempotency keys, the mapping of sessions,
// payouts and reasons (only an explicit final state of Wave is final), the webhook signature
// (constant-time HMAC of t + body, five minutes of freshness) and events.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "payments/wave_wire.hpp"

using namespace sika;
using namespace sika::payments;
namespace bj = boost::json;

namespace {

PaymentOrder order() {
  PaymentOrder o;
  o.operation = "COLLECTION";
  o.transaction_reference = "TX-20260101-0001";
  o.provider_reference = "0190f0c2-0000-7000-8000-000000000001";
  o.msisdn = "2250701020304";
  o.amount = 1500;
  o.currency = "XOF";
  o.return_url = "https://pay.example/confirm/TX-20260101-0001?sig=abc";
  return o;
}

}  // namespace

TEST(WaveWire, AmountsAreStringsOfMajorUnitsAndNumbersE164) {
  EXPECT_EQ(wave::amount_text(1500, "XOF"), "1500");
  EXPECT_EQ(wave::amount_text(1550, "EUR"), "15.50");
  EXPECT_EQ(wave::e164("2250701020304"), "+2250701020304");
  EXPECT_EQ(wave::e164("+221770000000"), "+221770000000");
}

TEST(WaveWire, IdempotencyKeysAreDerivedFromTheOrderAndTheCall) {
  const std::string a = wave::idempotency_key("payout", "ref-1");
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(a, wave::idempotency_key("payout", "ref-1")) << "a resend is the same request at Wave";
  EXPECT_NE(a, wave::idempotency_key("payout", "ref-2"));
  EXPECT_NE(a, wave::idempotency_key("checkout", "ref-1"));
}

TEST(WaveWire, BodiesCarryWhatWaveDocuments) {
  auto c = bj::parse(wave::checkout_body(order())).as_object();
  EXPECT_EQ(c["amount"], "1500");
  EXPECT_EQ(c["currency"], "XOF");
  EXPECT_EQ(c["client_reference"], "0190f0c2-0000-7000-8000-000000000001");
  EXPECT_EQ(c["restrict_payer_mobile"], "+2250701020304");
  EXPECT_EQ(c["success_url"], "https://pay.example/confirm/TX-20260101-0001?sig=abc");
  EXPECT_EQ(c["error_url"], c["success_url"]);
  PaymentOrder p = order();
  p.operation = "DISBURSEMENT";
  p.amount = 5000;
  auto b = bj::parse(wave::payout_body(p)).as_object();
  EXPECT_EQ(b["receive_amount"], "5000");
  EXPECT_EQ(b["currency"], "XOF");
  EXPECT_EQ(b["mobile"], "+2250701020304");
  EXPECT_EQ(b["client_reference"].as_string(), p.provider_reference);
  EXPECT_FALSE(b.contains("amount"));
}

TEST(WaveWire, OnlyACompleteSucceededSessionSucceedsAndOnlyAnExpiredOneFails) {
  auto s = wave::parse_session(R"({"id":"cos-1","checkout_status":"complete","payment_status":"succeeded",
      "transaction_id":"T1","client_reference":"r","wave_launch_url":"https://pay.wave.com/c/cos-1"})");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->wave_launch_url, "https://pay.wave.com/c/cos-1");
  auto st = wave::session_status(*s);
  EXPECT_EQ(st.state, OperatorStatus::State::succeeded);
  EXPECT_EQ(st.operator_reference, "T1");
  s->checkout_status = "open";
  s->payment_status = "cancelled";
  EXPECT_EQ(wave::session_status(*s).state, OperatorStatus::State::pending) << "a failed attempt leaves it open";
  s->payment_status = "processing";
  EXPECT_EQ(wave::session_status(*s).state, OperatorStatus::State::pending);
  s->checkout_status = "complete";
  EXPECT_EQ(wave::session_status(*s).state, OperatorStatus::State::pending) << "complete but not succeeded";
  s->checkout_status = "expired";
  EXPECT_EQ(wave::session_status(*s).state, OperatorStatus::State::failed);
  EXPECT_EQ(wave::session_status(*s).reason, "TIMEOUT");
  s->error_code = "insufficient-funds";
  EXPECT_EQ(wave::session_status(*s).reason, "INSUFFICIENT_FUNDS");
  s->checkout_status = "something-new";
  EXPECT_EQ(wave::session_status(*s).state, OperatorStatus::State::pending);
  EXPECT_FALSE(wave::parse_session("not json"));
  EXPECT_FALSE(wave::parse_session("{}")) << "no id";
}

TEST(WaveWire, SearchPicksTheSucceededSessionOfOurReference) {
  auto r = wave::pick_from_search(R"({"result":[
      {"id":"cos-a","checkout_status":"expired","payment_status":"cancelled","client_reference":"r"},
      {"id":"cos-b","checkout_status":"complete","payment_status":"succeeded","client_reference":"r"},
      {"id":"cos-c","checkout_status":"complete","payment_status":"succeeded","client_reference":"other"}]})",
                                  "r");
  ASSERT_TRUE(r && *r);
  EXPECT_EQ((*r)->id, "cos-b");
  auto none = wave::pick_from_search(R"({"result":[]})", "r");
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  EXPECT_FALSE(wave::pick_from_search("[]", "r"));
}

TEST(WaveWire, PayoutsAreFinalOnlyWhenSucceededOrFailed) {
  auto p = wave::parse_payout(R"({"id":"pt-1","status":"succeeded","transaction_id":"T9","client_reference":"r"})");
  ASSERT_TRUE(p);
  EXPECT_EQ(wave::payout_status(*p).state, OperatorStatus::State::succeeded);
  p->status = "processing";
  EXPECT_EQ(wave::payout_status(*p).state, OperatorStatus::State::pending);
  p->status = "reversed";
  EXPECT_EQ(wave::payout_status(*p).state, OperatorStatus::State::pending) << "never a second final answer";
  p->status = "failed";
  p->error_code = "recipient-limit-exceeded";
  EXPECT_EQ(wave::payout_status(*p).state, OperatorStatus::State::failed);
  EXPECT_EQ(wave::payout_status(*p).reason, "LIMIT_EXCEEDED");
  auto f = wave::parse_payout(R"({"id":"pt-2","status":"failed","payout_error":{"error_code":"insufficient-funds"}})");
  ASSERT_TRUE(f);
  EXPECT_EQ(wave::payout_status(*f).reason, "INSUFFICIENT_FUNDS");
}

TEST(WaveWire, ReasonsMapToOurStableCodes) {
  EXPECT_EQ(wave::failure_reason("insufficient-funds"), "INSUFFICIENT_FUNDS");
  EXPECT_EQ(wave::failure_reason("kyb-limit-exceeded"), "LIMIT_EXCEEDED");
  EXPECT_EQ(wave::failure_reason("blocked-account"), "OPERATOR_REFUSED");
  EXPECT_EQ(wave::failure_reason("payer-mobile-mismatch"), "OPERATOR_REFUSED");
  EXPECT_EQ(wave::failure_reason("recipient-not-found"), "INVALID_ACCOUNT");
  EXPECT_EQ(wave::failure_reason(""), "OPERATOR_ERROR");
  EXPECT_EQ(wave::failure_reason("internal-server-error"), "OPERATOR_ERROR");
  EXPECT_TRUE(wave::definite_refusal(400));
  EXPECT_TRUE(wave::definite_refusal(401));
  EXPECT_FALSE(wave::definite_refusal(404));
  EXPECT_FALSE(wave::definite_refusal(409));
  EXPECT_FALSE(wave::definite_refusal(429));
  EXPECT_FALSE(wave::definite_refusal(500));
  EXPECT_EQ(wave::error_code(R"({"code":"request-validation-error","message":"x"})"), "request-validation-error");
}

TEST(WaveWire, SignaturesAreCheckedInFullAndForFreshness) {
  using S = wave::Signature;
  const std::string secret = "wave_sn_WHS_test";
  const std::string body = R"({"id":"AE_1","type":"checkout.session.completed","data":{}})";
  const std::int64_t t = 1'700'000'000;
  const std::string header = wave::signature_header(secret, t, body);
  EXPECT_EQ(header.substr(0, 13), "t=1700000000,");
  EXPECT_EQ(header.size(), 13u + 3u + 64u);
  EXPECT_EQ(wave::verify_signature(header, body, secret, t), S::valid);
  EXPECT_EQ(wave::verify_signature(header, body, secret, t + 299), S::valid);
  EXPECT_EQ(wave::verify_signature(header, body, secret, t + 301), S::stale);
  EXPECT_EQ(wave::verify_signature(header, body, secret, t - 301), S::stale) << "from the future";
  EXPECT_EQ(wave::verify_signature(header, body + " ", secret, t), S::mismatch) << "the raw body is signed";
  EXPECT_EQ(wave::verify_signature(header, body, "another secret", t), S::mismatch);
  EXPECT_EQ(wave::verify_signature("", body, secret, t), S::missing);
  EXPECT_EQ(wave::verify_signature("v1=abc", body, secret, t), S::malformed);
  EXPECT_EQ(wave::verify_signature("t=abc,v1=00", body, secret, t), S::malformed);
  EXPECT_EQ(wave::verify_signature("t=1700000000", body, secret, t), S::malformed);
  // A replayed signature with a fresh timestamp does not match: t is signed with the body.
  const std::string v1 = header.substr(header.find("v1="));
  EXPECT_EQ(wave::verify_signature("t=1700000100," + v1, body, secret, t + 100), S::mismatch);
  // While a secret is rotated Wave sends one v1 per secret: any one matching is enough.
  EXPECT_EQ(wave::verify_signature("t=1700000000,v1=" + std::string(64, '0') + "," + v1, body, secret, t), S::valid);
  EXPECT_EQ(wave::verify_signature(" t=1700000000 , " + v1, body, secret, t), S::valid);
}

TEST(WaveWire, EventsNameTheOrderByClientReference) {
  auto e = wave::parse_event(R"({"id":"AE_1","type":"checkout.session.completed","data":{"id":"cos-1",
      "checkout_status":"complete","payment_status":"succeeded","transaction_id":"T1","client_reference":"r1"}})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->id, "AE_1");
  EXPECT_EQ(e->client_reference, "r1");
  EXPECT_EQ(e->object_id, "cos-1");
  EXPECT_EQ(e->status.state, OperatorStatus::State::succeeded);
  auto f = wave::parse_event(R"({"id":"AE_2","type":"checkout.session.payment_failed","data":{"id":"cos-2",
      "checkout_status":"open","payment_status":"cancelled","client_reference":"r2",
      "last_payment_error":{"code":"insufficient-funds","message":"x"}}})");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status.state, OperatorStatus::State::pending) << "the session is still open";
  EXPECT_EQ(f->status.reason, "INSUFFICIENT_FUNDS");
  auto bad = wave::parse_event(R"({"id":"AE_3","type":"checkout.session.completed","data":{"id":"cos-3"}})");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, "empty_data");
  EXPECT_FALSE(wave::parse_event(R"({"type":"checkout.session.completed","data":{}})"));
  EXPECT_FALSE(wave::parse_event("[]"));
  auto other = wave::parse_event(R"({"id":"AE_4","type":"merchant.payment_received","data":{"id":"x"}})");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status.state, OperatorStatus::State::pending) << "an event we do not act on moves nothing";
}
