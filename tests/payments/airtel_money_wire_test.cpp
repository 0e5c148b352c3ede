// The Airtel Money wire format: our ids at Airtel, the subscriber's number without the country
// code, bodies, the envelope's verdicts, the status and response-code mapping (only an explicit TS
// or TF is final; TA and TIP stay PENDING), callbacks, and the PIN's RSA PKCS#1 v1.5 encryption.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <boost/json.hpp>

#include <memory>

#include "core/random.hpp"
#include "payments/airtel_money_wire.hpp"

using namespace sika;
using namespace sika::payments;
namespace bj = boost::json;
using airtel::Call;
using airtel::Verdict;

namespace {

PaymentOrder order(std::string msisdn = "24174123450", std::int64_t amount = 1500, std::string currency = "XAF") {
  PaymentOrder o;
  o.operation = "COLLECTION";
  o.transaction_reference = "TX-0000ABCD1234";
  o.provider_reference = "0190f0c2-0000-7000-8000-00000000a001";
  o.msisdn = std::move(msisdn);
  o.amount = amount;
  o.currency = std::move(currency);
  return o;
}

airtel::Answer answer(std::string_view body) { return airtel::read_answer(body); }

}  // namespace

TEST(AirtelWire, TransactionIdsComeFromTheOrderAndGoBack) {
  const std::string ref = "0190f0c2-0000-7000-8000-00000000a001";
  const std::string id = airtel::transaction_id(ref);
  EXPECT_EQ(id,
            "0190f0c2000070008000"
            "00000000a001");
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << "alphanumeric, as Airtel asks";
  EXPECT_EQ(airtel::transaction_id(ref), id) << "every resend of the order carries the same id";
  EXPECT_EQ(airtel::provider_reference_of(id), ref) << "a callback's id names the order";
  EXPECT_EQ(airtel::provider_reference_of("not-ours"), "not-ours");
}

TEST(AirtelWire, TheSubscriberNumberIsSentWithoutTheCountryCode) {
  const airtel::Market* ga = airtel::market("GA");
  ASSERT_NE(ga, nullptr);
  EXPECT_EQ(ga->alpha3, "GAB");
  auto n = airtel::national_msisdn("24174123450", *ga);
  ASSERT_TRUE(n) << n.error().code;
  EXPECT_EQ(*n, "74123450");
  EXPECT_FALSE(airtel::national_msisdn("23767123450", *ga)) << "another country's number";
  EXPECT_FALSE(airtel::national_msisdn("2417412345", *ga)) << "too short";
  EXPECT_FALSE(airtel::national_msisdn("+24174123450", *ga));
  EXPECT_EQ(airtel::market("XX"), nullptr);
}

TEST(AirtelWire, CollectionBodyHasTheSubscriberAndTheTransaction) {
  const PaymentOrder o = order();
  const auto body = bj::parse(airtel::collection_body(o, *airtel::market("GA"), "74123450")).as_object();
  EXPECT_EQ(body.at("reference").as_string(), "TX0000ABCD1234");
  const auto& sub = body.at("subscriber").as_object();
  EXPECT_EQ(sub.at("country").as_string(), "GA");
  EXPECT_EQ(sub.at("currency").as_string(), "XAF");
  EXPECT_EQ(sub.at("msisdn").as_string(), "74123450");
  const auto& tx = body.at("transaction").as_object();
  EXPECT_EQ(tx.at("amount").as_int64(), 1500) << "a number of major units";
  EXPECT_EQ(tx.at("country").as_string(), "GA");
  EXPECT_EQ(tx.at("currency").as_string(), "XAF");
  EXPECT_EQ(tx.at("id").as_string(), airtel::transaction_id(o.provider_reference));
  // A currency with decimals: major units.
  const auto zm =
      bj::parse(airtel::collection_body(order("260971234567", 1550, "ZMW"), *airtel::market("ZM"), "971234567"))
          .as_object();
  EXPECT_DOUBLE_EQ(zm.at("transaction").as_object().at("amount").as_double(), 15.5);
}

TEST(AirtelWire, DisbursementAndRefundBodies) {
  PaymentOrder o = order();
  o.operation = "DISBURSEMENT";
  const auto d = bj::parse(airtel::disbursement_body(o, "74123450", "ENCRYPTED")).as_object();
  EXPECT_EQ(d.at("payee").as_object().at("msisdn").as_string(), "74123450");
  EXPECT_EQ(d.at("pin").as_string(), "ENCRYPTED");
  EXPECT_EQ(d.at("transaction").as_object().at("type").as_string(), "B2C");
  EXPECT_EQ(d.at("transaction").as_object().at("id").as_string(), airtel::transaction_id(o.provider_reference));
  const auto r = bj::parse(airtel::refund_body("CI2001011234")).as_object();
  EXPECT_EQ(r.at("transaction").as_object().at("airtel_money_id").as_string(), "CI2001011234");
  const auto t = bj::parse(airtel::token_body("id", "secret")).as_object();
  EXPECT_EQ(t.at("grant_type").as_string(), "client_credentials");
}

TEST(AirtelWire, SubmissionVerdictsReadTheEnvelope) {
  const char* in_process =
      R"({"data":{"transaction":{"id":"x","status":"Success."}},"status":{"code":"200","message":"SUCCESS",
         "result_code":"ESB000010","response_code":"DP00800001006","success":true}})";
  EXPECT_EQ(airtel::submission_verdict(Call::collection, 200, answer(in_process)), Verdict::accepted);
  const char* duplicate = R"({"status":{"code":"400","result_code":"ESB000041","success":false,
      "message":"External Transaction ID already exists."}})";
  EXPECT_EQ(airtel::submission_verdict(Call::collection, 400, answer(duplicate)), Verdict::duplicate);
  const char* bad_msisdn = R"({"status":{"code":"400","result_code":"ESB000036","success":false}})";
  EXPECT_EQ(airtel::submission_verdict(Call::collection, 400, answer(bad_msisdn)), Verdict::refused);
  const char* barred = R"({"status":{"code":"200","response_code":"DP00800001010","success":false}})";
  EXPECT_EQ(airtel::submission_verdict(Call::collection, 200, answer(barred)), Verdict::invalid_account);
  EXPECT_EQ(airtel::submission_verdict(Call::collection, 500, answer("{}")), Verdict::unknown);
  EXPECT_EQ(airtel::submission_verdict(Call::collection, 502, answer("<html>")), Verdict::unknown);
  EXPECT_EQ(airtel::submission_verdict(Call::collection, 429, answer("{}")), Verdict::unknown);
  const char* went_wrong = R"({"status":{"code":"500","result_code":"ESB000001","success":false}})";
  EXPECT_EQ(airtel::submission_verdict(Call::collection, 200, answer(went_wrong)), Verdict::unknown);
  // Disbursements: success, processing and ambiguous are taken; a duplicate id is held; an
  // invalid number is an account that does not exist; other DP009 codes are refusals.
  auto disb = [](std::string_view code, bool success) {
    return answer(std::string(R"({"status":{"code":"200","response_code":")") + std::string(code) + R"(","success":)" +
                  (success ? "true" : "false") + "}}");
  };
  EXPECT_EQ(airtel::submission_verdict(Call::disbursement, 200, disb("DP00900001001", true)), Verdict::accepted);
  EXPECT_EQ(airtel::submission_verdict(Call::disbursement, 200, disb("DP00900001000", false)), Verdict::accepted);
  EXPECT_EQ(airtel::submission_verdict(Call::disbursement, 200, disb("DP00900001006", false)), Verdict::accepted);
  EXPECT_EQ(airtel::submission_verdict(Call::disbursement, 200, disb("DP00900001017", false)), Verdict::duplicate);
  EXPECT_EQ(airtel::submission_verdict(Call::disbursement, 200, disb("DP00900001012", false)),
            Verdict::invalid_account);
  EXPECT_EQ(airtel::submission_verdict(Call::disbursement, 200, disb("DP00900001007", false)), Verdict::refused);
  const char* wrong_pin = R"({"status":{"code":"400","result_code":"ROUTER115","success":false}})";
  EXPECT_EQ(airtel::submission_verdict(Call::disbursement, 400, answer(wrong_pin)), Verdict::refused);
}

TEST(AirtelWire, OnlyTsAndTfAreFinal) {
  auto ts = airtel::status_of(Call::collection, "TS", "DP00800001001", "MP210603.1234.A00001");
  EXPECT_EQ(ts.state, OperatorStatus::State::succeeded);
  EXPECT_EQ(ts.operator_reference, "MP210603.1234.A00001") << "the airtel_money_id, kept for refunds";
  auto tf = airtel::status_of(Call::collection, "TF", "DP00800001007", "");
  EXPECT_EQ(tf.state, OperatorStatus::State::failed);
  EXPECT_EQ(tf.reason, "INSUFFICIENT_FUNDS");
  for (const char* s : {"TA", "TIP", "", "SUCCESS", "FAILED", "TE"})
    EXPECT_EQ(airtel::status_of(Call::collection, s, "DP00800001000", "").state, OperatorStatus::State::pending) << s;
  const auto a = answer(R"({"data":{"transaction":{"airtel_money_id":"C3648","id":"abc","message":"ok",
      "status":"TS"}},"status":{"code":"200","response_code":"DP00800001001","result_code":"ESB000010",
      "success":true}})");
  EXPECT_EQ(a.status, "TS");
  EXPECT_EQ(a.airtel_money_id, "C3648");
  EXPECT_FALSE(airtel::unknown_transaction(200, a));
  EXPECT_TRUE(airtel::unknown_transaction(
      200, answer(R"({"status":{"code":"200","result_code":"ESB000045","success":false}})")));
  EXPECT_TRUE(airtel::unknown_transaction(404, answer("{}")));
}

TEST(AirtelWire, ResponseCodesBecomeOurFailureReasons) {
  EXPECT_EQ(airtel::failure_reason(Call::collection, "DP00800001002"), "REJECTED_BY_CUSTOMER");
  EXPECT_EQ(airtel::failure_reason(Call::collection, "DP00800001003"), "LIMIT_EXCEEDED");
  EXPECT_EQ(airtel::failure_reason(Call::collection, "DP00800001005"), "TIMEOUT");
  EXPECT_EQ(airtel::failure_reason(Call::collection, "DP00800001007"), "INSUFFICIENT_FUNDS");
  EXPECT_EQ(airtel::failure_reason(Call::collection, "DP00800001008"), "OPERATOR_REFUSED");
  EXPECT_EQ(airtel::failure_reason(Call::collection, "DP00800001010"), "INVALID_ACCOUNT");
  EXPECT_EQ(airtel::failure_reason(Call::collection, "DP00800001024"), "TIMEOUT");
  EXPECT_EQ(airtel::failure_reason(Call::collection, "DP00800001029"), "TIMEOUT");
  EXPECT_EQ(airtel::failure_reason(Call::collection, ""), "OPERATOR_ERROR");
  EXPECT_EQ(airtel::failure_reason(Call::disbursement, "DP00900001007"), "INSUFFICIENT_FUNDS");
  EXPECT_EQ(airtel::failure_reason(Call::disbursement, "DP00900001012"), "INVALID_ACCOUNT");
  EXPECT_EQ(airtel::failure_reason(Call::disbursement, "DP00900001003"), "LIMIT_EXCEEDED");
  EXPECT_EQ(airtel::failure_reason(Call::disbursement, "DP00900001013"), "OPERATOR_REFUSED");
  EXPECT_EQ(airtel::failure_reason(Call::disbursement, "DP00900001005"), "OPERATOR_ERROR");
  EXPECT_EQ(airtel::failure_reason(Call::disbursement, "DP00800001007"), "OPERATOR_ERROR")
      << "a collection's code is not a disbursement's";
}

TEST(AirtelWire, CallbacksNameTheOrderAndClaimAStatus) {
  const std::string id = airtel::transaction_id("0190f0c2-0000-7000-8000-00000000a001");
  auto r = airtel::parse_callback_body(R"({"transaction":{"id":")" + id +
                                       R"(","message":"Paid","status_code":"TS","airtel_money_id":"MP1"}})");
  ASSERT_TRUE(r) << r.error().code;
  EXPECT_EQ(r->provider_reference, "0190f0c2-0000-7000-8000-00000000a001");
  EXPECT_EQ(r->status.state, OperatorStatus::State::succeeded);
  auto f = airtel::parse_callback_body(R"({"transaction":{"id":")" + id + R"(","status_code":"TF"}})");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status.state, OperatorStatus::State::failed);
  auto bad = airtel::parse_callback_body(R"({"transaction":{"status_code":"TS"}})");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, "empty_data");
  EXPECT_FALSE(airtel::parse_callback_body(R"({"status":"TS"})"));
  EXPECT_FALSE(airtel::parse_callback_body("not json"));
}

TEST(AirtelWire, ThePinIsEncryptedWithRsaPkcs1AndDecryptsWithThePrivateKey) {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_RSA_gen(2048), &EVP_PKEY_free);
  ASSERT_TRUE(key);
  unsigned char* der = nullptr;
  const int len = i2d_PUBKEY(key.get(), &der);
  ASSERT_GT(len, 0);
  const std::string public_key = base64_encode(std::string_view(reinterpret_cast<char*>(der), len));
  OPENSSL_free(der);

  auto first = airtel::encrypt_pin("1234", public_key);
  ASSERT_TRUE(first) << first.error().code;
  auto second = airtel::encrypt_pin("1234", public_key);
  ASSERT_TRUE(second);
  EXPECT_NE(*first, *second) << "PKCS#1 v1.5 padding is random";
  for (const std::string& b64 : {*first, *second}) {
    std::string cipher;
    ASSERT_TRUE(base64_decode(b64, cipher));
    EXPECT_EQ(cipher.size(), 256u);
    std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(EVP_PKEY_CTX_new(key.get(), nullptr),
                                                                    &EVP_PKEY_CTX_free);
    ASSERT_GT(EVP_PKEY_decrypt_init(ctx.get()), 0);
    ASSERT_GT(EVP_PKEY_CTX_set_rsa_padding(ctx.get(), RSA_PKCS1_PADDING), 0);
    std::string plain(256, '\0');
    std::size_t n = plain.size();
    ASSERT_GT(EVP_PKEY_decrypt(ctx.get(), reinterpret_cast<unsigned char*>(plain.data()), &n,
                               reinterpret_cast<const unsigned char*>(cipher.data()), cipher.size()),
              0);
    plain.resize(n);
    EXPECT_EQ(plain, "1234");
  }
  EXPECT_FALSE(airtel::encrypt_pin("1234", "not base64!"));
  EXPECT_FALSE(airtel::encrypt_pin("1234", base64_encode("not a key")));
  EXPECT_FALSE(airtel::encrypt_pin("1234", ""));
}
