// The MTN MoMo wire format: references, amounts, bodies, and the mapping of the operator's
// statuses and reasons (only an explicit SUCCESSFUL or FAILED is final).
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <regex>

#include "payments/mtn_momo_wire.hpp"

using namespace sika;
using namespace sika::payments;
namespace bj = boost::json;

TEST(MtnWire, ReferenceIdsAreUuidV4DerivedFromTheOrderAndTheCall) {
  const std::regex v4("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  const std::string a = mtn::reference_id(mtn::Call::request_to_pay, "0190f0c2-0000-7000-8000-000000000001");
  EXPECT_TRUE(std::regex_match(a, v4)) << a;
  EXPECT_EQ(a, mtn::reference_id(mtn::Call::request_to_pay, "0190f0c2-0000-7000-8000-000000000001"))
      << "the same order has the same reference after a timeout, a restart or on another node";
  EXPECT_NE(a, mtn::reference_id(mtn::Call::request_to_pay, "0190f0c2-0000-7000-8000-000000000002"));
  EXPECT_NE(a, mtn::reference_id(mtn::Call::refund, "0190f0c2-0000-7000-8000-000000000001"))
      << "a refund of a collection is a request of its own";
  for (int i = 0; i < 200; ++i)
    EXPECT_TRUE(std::regex_match(mtn::reference_id(mtn::Call::transfer, std::to_string(i)), v4));
}

TEST(MtnWire, AmountsAreStringsOfMajorUnits) {
  EXPECT_EQ(mtn::major_amount(1500, "XAF"), "1500");
  EXPECT_EQ(mtn::major_amount(1550, "EUR"), "15.50");
  EXPECT_EQ(mtn::major_amount(5, "GHS"), "0.05");
  EXPECT_EQ(mtn::environment_currency("mtncameroon"), "XAF");
  EXPECT_EQ(mtn::environment_currency("mtnivorycoast"), "XOF");
  EXPECT_EQ(mtn::environment_currency("sandbox"), "EUR");
  EXPECT_EQ(mtn::environment_currency("mtnatlantis"), "");
}

TEST(MtnWire, BodiesCarryWhatMtnDocuments) {
  PaymentOrder o;
  o.provider_reference = "0190f0c2-0000-7000-8000-000000000001";
  o.msisdn = "237670000100";
  o.amount = 2500;
  o.currency = "XAF";
  o.message = std::string(150, 'a') + "ééééééééééééééé";  // 165 characters, 180 bytes
  auto body = bj::parse(mtn::initiation_body(mtn::Call::request_to_pay, o)).as_object();
  EXPECT_EQ(body.at("amount"), "2500");
  EXPECT_EQ(body.at("currency"), "XAF");
  EXPECT_EQ(body.at("externalId").as_string(), o.provider_reference);
  EXPECT_EQ(body.at("payer").at("partyIdType"), "MSISDN");
  EXPECT_EQ(body.at("payer").at("partyId"), "237670000100");
  const std::string message(body.at("payerMessage").as_string());
  EXPECT_EQ(message, std::string(150, 'a') + "éééééééééé") << "cut to 160 characters, never inside one";
  auto payout = bj::parse(mtn::initiation_body(mtn::Call::transfer, o)).as_object();
  EXPECT_TRUE(payout.contains("payee"));
  EXPECT_FALSE(payout.contains("payer"));
  o.refunded_reference = "0190f0c2-0000-7000-8000-000000000009";
  auto refund = bj::parse(mtn::initiation_body(mtn::Call::refund, o)).as_object();
  EXPECT_EQ(std::string(refund.at("referenceIdToRefund").as_string()),
            mtn::reference_id(mtn::Call::request_to_pay, "0190f0c2-0000-7000-8000-000000000009"));
}

TEST(MtnWire, OnlyAnExplicitSuccessOrFailureIsFinal) {
  auto ok = mtn::parse_status(R"({"status":"SUCCESSFUL","financialTransactionId":"363440463"})");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->state, OperatorStatus::State::succeeded);
  EXPECT_EQ(ok->operator_reference, "363440463");
  auto failed = mtn::parse_status(R"({"status":"FAILED","reason":"NOT_ENOUGH_FUNDS"})");
  EXPECT_EQ(failed->state, OperatorStatus::State::failed);
  EXPECT_EQ(failed->reason, "INSUFFICIENT_FUNDS");
  auto old_shape = mtn::parse_status(R"({"status":"FAILED","reason":{"code":"APPROVAL_REJECTED","message":"x"}})");
  EXPECT_EQ(old_shape->reason, "REJECTED_BY_CUSTOMER");
  for (const char* body : {R"({"status":"PENDING"})", R"({"status":"ONGOING"})", R"({"status":"REJECTED"})",
                           R"({"status":"successful"})", R"({"status":null})", R"({})", R"({"status":1})"}) {
    auto s = mtn::parse_status(body);
    ASSERT_TRUE(s.ok()) << body;
    EXPECT_EQ(s->state, OperatorStatus::State::pending) << body;
  }
  EXPECT_FALSE(mtn::parse_status("<html>").ok()) << "an unreadable answer is an error, asked again, never FAILED";
}

TEST(MtnWire, ReasonsMapToStableCodes) {
  EXPECT_EQ(mtn::failure_reason("PAYER_NOT_FOUND"), "INVALID_ACCOUNT");
  EXPECT_EQ(mtn::failure_reason("PAYEE_NOT_FOUND"), "INVALID_ACCOUNT");
  EXPECT_EQ(mtn::failure_reason("NOT_ENOUGH_FUNDS"), "INSUFFICIENT_FUNDS");
  EXPECT_EQ(mtn::failure_reason("APPROVAL_REJECTED"), "REJECTED_BY_CUSTOMER");
  EXPECT_EQ(mtn::failure_reason("EXPIRED"), "TIMEOUT");
  EXPECT_EQ(mtn::failure_reason("PAYER_LIMIT_REACHED"), "LIMIT_EXCEEDED");
  EXPECT_EQ(mtn::failure_reason("TRANSACTION_CANCELED"), "OPERATOR_REFUSED");
  EXPECT_EQ(mtn::failure_reason("INTERNAL_PROCESSING_ERROR"), "OPERATOR_ERROR");
  EXPECT_EQ(mtn::failure_reason(""), "OPERATOR_ERROR");
}

TEST(MtnWire, RefusalsAreOnlyDefiniteAnswers) {
  EXPECT_TRUE(mtn::definite_refusal(400, "INVALID_REFERENCE_ID"));
  EXPECT_TRUE(mtn::definite_refusal(401, ""));
  EXPECT_TRUE(mtn::definite_refusal(500, "INVALID_CURRENCY")) << "MTN answers a wrong currency with a 500";
  EXPECT_FALSE(mtn::definite_refusal(500, "INTERNAL_PROCESSING_ERROR"));
  EXPECT_FALSE(mtn::definite_refusal(503, ""));
  EXPECT_FALSE(mtn::definite_refusal(404, ""));
  EXPECT_FALSE(mtn::definite_refusal(409, "RESOURCE_ALREADY_EXIST"));
  EXPECT_FALSE(mtn::definite_refusal(429, ""));
}

TEST(MtnWire, CallbacksNameTheOrderByItsExternalId) {
  auto r = mtn::parse_callback_body(R"({"externalId":"abc","status":"SUCCESSFUL","financialTransactionId":"9"})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->provider_reference, "abc");
  EXPECT_EQ(r->status.state, OperatorStatus::State::succeeded);
  auto missing = mtn::parse_callback_body(R"({"status":"SUCCESSFUL"})");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::invalid);
  EXPECT_FALSE(mtn::parse_callback_body("not json").ok());
}
