// The OTP service and the sandbox notifier on both backends: codes delivered through the outbox
// and stored only hashed, one attempt per verify even under concurrency, expiry, single use,
// resend limits, and the fixed sandbox code only when asked for.
#include <boost/json.hpp>

#include <atomic>
#include <regex>
#include <thread>
#include <vector>

#include "core/crypto.hpp"
#include "notify/notifier.hpp"
#include "otp/code.hpp"
#include "otp/service.hpp"
#include "support/test_db.hpp"

namespace sika::otp {
namespace {

// The one reader of a request's `otp`: digits as a string, or an integer padded to the length.
TEST(OtpCode, ReadsStringsAsTheyAreAndPadsIntegers) {
  auto read = [](const char* json, int length, std::string* problem = nullptr) {
    json::FieldErrors errors;
    auto body = boost::json::parse(json).as_object();
    auto code = read_code(body, "otp", length, errors);
    if (problem && errors.details().contains("otp")) *problem = errors.details().at("otp").as_string();
    if (!errors.empty()) EXPECT_FALSE(code.has_value()) << json;
    return code;
  };
  EXPECT_EQ(read(R"({"otp":"076300"})", 6), "076300");
  EXPECT_EQ(read(R"({"otp":76300})", 6), "076300");  // the zero a JSON integer lost
  EXPECT_EQ(read(R"({"otp":0})", 6), "000000");
  EXPECT_EQ(read(R"({"otp":123})", 4), "0123");
  EXPECT_EQ(read(R"({"otp":12345678})", 6), "12345678");  // a longer operator code stays whole
  EXPECT_EQ(read(R"({"otp":"1234"})", 6), "1234");        // strings are never padded
  EXPECT_FALSE(read(R"({})", 6).has_value());
  EXPECT_FALSE(read(R"({"otp":null})", 6).has_value());
  for (const char* bad :
       {R"({"otp":""})", R"({"otp":"07a300"})", R"({"otp":"123"})", R"({"otp":"123456789"})", R"({"otp":" 076300"})",
        R"({"otp":-1})", R"({"otp":1.5})", R"({"otp":76300.0})", R"({"otp":true})", R"({"otp":[1]})",
        R"({"otp":{"a":1}})", R"({"otp":123456789})", R"({"otp":18446744073709551615})"}) {
    std::string problem;
    EXPECT_FALSE(read(bad, 6, &problem).has_value()) << bad;
    EXPECT_FALSE(problem.empty()) << bad;
  }
  EXPECT_EQ(code_from_text("0763"), "0763");
  EXPECT_FALSE(code_from_text("76 300").has_value());
  EXPECT_FALSE(code_from_text("").has_value());
}

constexpr std::string_view kPepper = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

class OtpTest : public sika::testing::DbTest {
 protected:
  void SetUp() override {
    DbTest::SetUp();
    if (IsSkipped()) return;
    notifier_ = std::make_unique<notify::SandboxNotifier>(*db_, [this] { return clock_.load(); });
    service_ = std::make_unique<Service>(*db_, *notifier_, options());
  }
  void TearDown() override {
    service_.reset();
    notifier_.reset();
    DbTest::TearDown();
  }

  Options options() {
    Options o;
    o.pepper = std::string(kPepper);
    o.sandbox_code = "123456";
    o.clock = [this] { return clock_.load(); };
    return o;
  }

  static IssueRequest collection(std::string reference, std::string to = "+237690000042") {
    return IssueRequest{.purpose = "collection", .subject = std::move(reference), .destination = std::move(to)};
  }

  std::vector<notify::OutboxMessage> outbox(std::optional<std::string> to = std::nullopt) {
    std::vector<notify::OutboxMessage> out;
    EXPECT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(out, notify::list_outbox(c, notify::OutboxFilter{.to = to}));
                     return {};
                   })
                    .ok());
    return out;
  }

  // The code in the newest message to `to`.
  std::string last_code(const std::string& to = "+237690000042") {
    auto messages = outbox(to);
    if (messages.empty()) return {};
    std::smatch m;
    const std::string body = messages.front().body;
    return std::regex_search(body, m, std::regex("[0-9]{6}")) ? m.str(0) : std::string{};
  }

  Verification verify(std::string_view id, std::string_view code) {
    auto v = service_->verify(id, code);
    EXPECT_TRUE(v.ok()) << (v.ok() ? "" : boost::json::serialize(v.error().details));
    return v.ok() ? *v : Verification{};
  }

  static std::string wrong(const std::string& code) { return code == "000000" ? "000001" : "000000"; }

  std::atomic<std::int64_t> clock_{1'700'000'000'000};
  std::unique_ptr<notify::SandboxNotifier> notifier_;
  std::unique_ptr<Service> service_;
};

TEST_P(OtpTest, IssueSendsARandomCodeThroughTheOutboxAndStoresOnlyItsHash) {
  auto issued = service_->issue(collection("TX-A"));
  ASSERT_TRUE(issued.ok()) << boost::json::serialize(issued.error().details);
  EXPECT_TRUE(issued->challenge_id.starts_with("otp_"));
  EXPECT_EQ(issued->expires_at, clock_.load() + 300000);
  auto messages = outbox();
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].channel, notify::Channel::sms);
  EXPECT_EQ(messages[0].to, "+237690000042");
  EXPECT_EQ(messages[0].tag, "otp:collection");
  std::string code = last_code();
  ASSERT_EQ(code.size(), 6u) << messages[0].body;
  EXPECT_NE(code, "123456");  // the sandbox code only when asked for
  std::string stored;
  ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(auto r, c.query_one("SELECT code_hash FROM otp_challenges"));
                   stored = r->str(0);
                   return {};
                 })
                  .ok());
  EXPECT_EQ(stored.find(code), std::string::npos);
  EXPECT_TRUE(crypto::secret_matches(kPepper, issued->challenge_id + ":" + code, stored));

  Verification bad = verify(issued->challenge_id, wrong(code));
  EXPECT_EQ(bad.outcome, Outcome::wrong_code);
  EXPECT_EQ(bad.attempts_left, 2);
  Error e = verification_error(bad);
  EXPECT_EQ(e.kind, ErrorKind::invalid);
  EXPECT_EQ(e.code, "invalid_otp");
  EXPECT_EQ(e.details.at("attempts_left").as_int64(), 2);
  EXPECT_EQ(verify(issued->challenge_id, code).outcome, Outcome::verified);
  Verification again = verify(issued->challenge_id, code);
  EXPECT_EQ(again.outcome, Outcome::already_used);
  EXPECT_EQ(verification_error(again).kind, ErrorKind::conflict);
  EXPECT_EQ(verify("otp_nothing", code).outcome, Outcome::not_found);
  EXPECT_EQ(verification_error(verify("otp_nothing", code)).kind, ErrorKind::not_found);
}

// Each outbox row keeps the environment of the code's merchant or partner; the outbox lists one
// environment's rows for a number (GET /sandbox/messages: the sandbox's only).
TEST_P(OtpTest, OutboxRowsKeepTheirEnvironmentAndListByIt) {
  IssueRequest sandbox = collection("TX-S", "+237690000431");
  sandbox.environment = "sandbox";
  sandbox.context = "TX-S";
  IssueRequest prod = collection("TX-P", "+237690000431");
  prod.environment = "prod";
  prod.purpose = "other";
  prod.context = "TX-P";
  ASSERT_TRUE(service_->issue(sandbox).ok());
  ASSERT_TRUE(service_->issue(prod).ok());
  auto list = [&](std::optional<std::string> to, std::optional<std::string> environment) {
    std::vector<notify::OutboxMessage> out;
    EXPECT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(out, notify::list_outbox(c, notify::OutboxFilter{to, environment, 50}));
                     return {};
                   })
                    .ok());
    return out;
  };
  auto only_sandbox = list("+237690000431", "sandbox");
  ASSERT_EQ(only_sandbox.size(), 1u);
  EXPECT_EQ(only_sandbox[0].environment, "sandbox");
  EXPECT_NE(only_sandbox[0].body.find("TX-S"), std::string::npos);
  auto only_prod = list("+237690000431", "prod");
  ASSERT_EQ(only_prod.size(), 1u);
  EXPECT_NE(only_prod[0].body.find("TX-P"), std::string::npos);
  EXPECT_TRUE(list("+237690000432", "sandbox").empty());
  EXPECT_EQ(list("+237690000431", std::nullopt).size(), 2u);
}

TEST_P(OtpTest, ThirtyConcurrentWrongCodesGetExactlyMaxAttemptsAnswers) {
  auto issued = service_->issue(collection("TX-RACE"));
  ASSERT_TRUE(issued.ok());
  const std::string code = last_code();
  store::Db& other = second_node();
  notify::SandboxNotifier other_notifier(other);
  Service second(other, other_notifier, options());
  constexpr int kThreads = 30;
  std::atomic<int> wrong_answers{0}, too_many{0}, other_answers{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      Service& s = i % 2 == 0 ? *service_ : second;
      auto v = s.verify(issued->challenge_id, wrong(code));
      if (!v)
        ++other_answers;
      else if (v->outcome == Outcome::wrong_code)
        ++wrong_answers;
      else if (v->outcome == Outcome::too_many_attempts)
        ++too_many;
      else
        ++other_answers;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong_answers.load(), 3);
  EXPECT_EQ(too_many.load(), kThreads - 3);
  EXPECT_EQ(other_answers.load(), 0);
  // Even the right code is refused now, and a resend cannot revive the challenge.
  EXPECT_EQ(verify(issued->challenge_id, code).outcome, Outcome::too_many_attempts);
  clock_ += 60000;
  auto resend = service_->issue(collection("TX-RACE"));
  ASSERT_FALSE(resend.ok());
  EXPECT_EQ(resend.error().kind, ErrorKind::conflict);
}

TEST_P(OtpTest, ConcurrentRightCodesSucceedOnce) {
  auto issued = service_->issue(collection("TX-ONCE"));
  ASSERT_TRUE(issued.ok());
  const std::string code = last_code();
  std::atomic<int> verified{0}, used{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      auto v = service_->verify("collection", "TX-ONCE", code);
      if (v && v->outcome == Outcome::verified)
        ++verified;
      else if (v && v->outcome == Outcome::already_used)
        ++used;
      else
        ++other;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(verified.load(), 1);
  EXPECT_EQ(used.load(), 7);
  EXPECT_EQ(other.load(), 0);
}

TEST_P(OtpTest, CodesExpire) {
  auto issued = service_->issue(collection("TX-EXP"));
  ASSERT_TRUE(issued.ok());
  const std::string code = last_code();
  clock_ += 300000;
  Verification v = verify(issued->challenge_id, code);
  EXPECT_EQ(v.outcome, Outcome::expired);
  EXPECT_EQ(verification_error(v).code, "invalid_otp");
  // After expiry, issuing again starts a fresh challenge with a new id and new attempts.
  auto fresh = service_->issue(collection("TX-EXP"));
  ASSERT_TRUE(fresh.ok());
  EXPECT_NE(fresh->challenge_id, issued->challenge_id);
  EXPECT_EQ(fresh->sends, 1);
  EXPECT_EQ(verify(issued->challenge_id, last_code()).outcome, Outcome::not_found);
  EXPECT_EQ(verify(fresh->challenge_id, last_code()).outcome, Outcome::verified);
}

TEST_P(OtpTest, ResendsHonourCooldownMaxSendsAndKeepAttempts) {
  auto issued = service_->issue(collection("TX-RS"));
  ASSERT_TRUE(issued.ok());
  const std::string first = last_code();
  EXPECT_EQ(verify(issued->challenge_id, wrong(first)).outcome, Outcome::wrong_code);

  auto early = service_->issue(collection("TX-RS"));
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.error().kind, ErrorKind::rate_limited);
  EXPECT_EQ(early.error().code, "rate_limited");
  EXPECT_EQ(early.error().details.at("retry_after").as_int64(), 30);

  clock_ += 30000;
  auto resent = service_->issue(collection("TX-RS"));
  ASSERT_TRUE(resent.ok()) << boost::json::serialize(resent.error().details);
  EXPECT_EQ(resent->challenge_id, issued->challenge_id);
  EXPECT_EQ(resent->sends, 2);
  const std::string second = last_code();
  EXPECT_EQ(outbox().size(), 2u);
  if (second != first) {
    Verification old = verify(issued->challenge_id, first);  // the old code no longer works
    EXPECT_EQ(old.outcome, Outcome::wrong_code);
    EXPECT_EQ(old.attempts_left, 1);  // attempts were kept across the resend
  }
  for (int sends = 3; sends <= 5; ++sends) {
    clock_ += 30000;
    auto r = service_->issue(collection("TX-RS"));
    ASSERT_TRUE(r.ok()) << sends;
    EXPECT_EQ(r->sends, sends);
  }
  clock_ += 30000;
  auto sixth = service_->issue(collection("TX-RS"));
  ASSERT_FALSE(sixth.ok());
  EXPECT_EQ(sixth.error().kind, ErrorKind::rate_limited);
  EXPECT_EQ(verify(issued->challenge_id, last_code()).outcome, Outcome::verified);

  // Another destination for a live challenge is refused.
  ASSERT_TRUE(service_->issue(collection("TX-DEST")).ok());
  clock_ += 30000;
  auto moved = service_->issue(collection("TX-DEST", "+237690000099"));
  ASSERT_FALSE(moved.ok());
  EXPECT_EQ(moved.error().kind, ErrorKind::conflict);
}

TEST_P(OtpTest, ConcurrentResendsSendOnce) {
  // Eight resends of one live challenge at once, on two nodes, once the cool-down is over: the
  // resend is conditional on the send count it read, so exactly one sends a new code; the others
  // are refused (cool-down, or the concurrent-send conflict) and the count moves by one.
  auto issued = service_->issue(collection("TX-RESEND"));
  ASSERT_TRUE(issued.ok());
  clock_ += 30000;
  store::Db& other = second_node();
  notify::SandboxNotifier other_notifier(other);
  Service second(other, other_notifier, options());
  constexpr int kThreads = 8;
  std::atomic<int> sent{0}, refused{0}, unexpected{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      auto r = (i % 2 == 0 ? *service_ : second).issue(collection("TX-RESEND"));
      if (r.ok())
        ++sent;
      else if (r.error().kind == ErrorKind::rate_limited || r.error().kind == ErrorKind::conflict)
        ++refused;
      else
        ++unexpected;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(sent.load(), 1);
  EXPECT_EQ(refused.load(), kThreads - 1);
  EXPECT_EQ(unexpected.load(), 0);
  EXPECT_EQ(outbox().size(), 2u);
  EXPECT_EQ(verify(issued->challenge_id, last_code()).outcome, Outcome::verified);
}

TEST_P(OtpTest, SendsPerDestinationAreLimitedAcrossChallenges) {
  Options o = options();
  o.sends_per_destination_per_hour = 2;
  Service limited(*db_, *notifier_, o);
  ASSERT_TRUE(limited.issue(collection("TX-1")).ok());
  ASSERT_TRUE(limited.issue(collection("TX-2")).ok());
  auto third = limited.issue(collection("TX-3"));
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().kind, ErrorKind::rate_limited);
  EXPECT_EQ(outbox().size(), 2u);
  ASSERT_TRUE(limited.issue(collection("TX-4", "+237690000077")).ok());  // another number is not affected
  clock_ += 3600000;
  EXPECT_TRUE(limited.issue(collection("TX-3")).ok());
}

TEST_P(OtpTest, SandboxCodeOnlyWhenAskedForAndEmailChannel) {
  IssueRequest r = collection("TX-SBX", "+237690000001");
  r.sandbox_code = true;
  auto issued = service_->issue(r);
  ASSERT_TRUE(issued.ok());
  EXPECT_NE(outbox("+237690000001").front().body.find("123456"), std::string::npos);
  EXPECT_EQ(verify(issued->challenge_id, "123456").outcome, Outcome::verified);

  IssueRequest mail{.purpose = "login",
                    .subject = "user-1",
                    .destination = "ada@example.com",
                    .channel = notify::Channel::email,
                    .locale = i18n::Locale::en};
  ASSERT_TRUE(service_->issue(mail).ok());
  auto m = outbox("ada@example.com");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].channel, notify::Channel::email);
  EXPECT_EQ(m[0].subject, "Your Sika code");
  EXPECT_NE(m[0].body.find("your code is"), std::string::npos);

  IssueRequest missing = collection("");
  auto refused = service_->issue(missing);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::invalid);
  EXPECT_TRUE(refused.error().details.as_object().contains("subject"));
}

INSTANTIATE_TEST_SUITE_P(Backends, OtpTest, ::testing::Values("sqlite", "postgres"));

}  // namespace
}  // namespace sika::otp
