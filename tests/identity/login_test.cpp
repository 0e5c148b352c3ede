// Sign-in on both backends: throttled failed logins, known and unknown e-mails answered alike,
// the device cookie under distributed guessing, concurrent wrong passwords.
#include "identity/fixture.hpp"

namespace sika::identity::testing {
namespace {

TEST_P(IdentityTest, RepeatedFailedLoginsThrottleTheAddress) {
  for (int i = 0; i < 3; ++i) {
    auto [res, jar] = login("wrong password!!");
    EXPECT_EQ(res.status, 401);
    EXPECT_TRUE(res.get("Location").empty());
  }
  auto [throttled, jar] = login();
  EXPECT_EQ(throttled.status, 429) << throttled.body;  // even the right password, from this address
  EXPECT_FALSE(throttled.get("Retry-After").empty());
  // The count lives in the database: another node sees it.
  other_ = make_service();
  std::swap(service_, other_);
  auto [still, jar2] = login();
  EXPECT_EQ(still.status, 429);
  std::swap(service_, other_);
  clock_ += 61 * 1000LL;
  auto [ok, jar3] = login();
  EXPECT_EQ(ok.status, 303) << ok.body;
}

// The page of a refused attempt, with what differs by request (the e-mail typed, the CSRF token)
// taken out.
std::string comparable_page(std::string body, const std::string& email) {
  body = std::regex_replace(body, std::regex(R"(name="csrf" value="[^"]*")"), "name=\"csrf\"");
  for (std::size_t p; (p = body.find(email)) != std::string::npos;) body.replace(p, email.size(), "EMAIL");
  return body;
}

TEST_P(IdentityTest, KnownAndUnknownEmailsAnswerAlikeUnderAttack) {
  // Wrong passwords from one address for a real account and for an e-mail nobody has: the same
  // statuses, pages and headers, attempt by attempt, and the same throttle at the same point.
  const std::string known = "ada@example.com", unknown = "nobody@example.com";
  for (int i = 0; i < 6; ++i) {
    auto k = attempt(known, "wrong password!!", "203.0.113.9");
    auto u = attempt(unknown, "wrong password!!", "203.0.113.9");
    EXPECT_EQ(k.status, u.status) << "attempt " << i;
    EXPECT_EQ(k.status, i < 3 ? 401 : 429) << "attempt " << i << ": " << k.body;
    EXPECT_EQ(k.get("Retry-After").empty(), u.get("Retry-After").empty());
    EXPECT_EQ(comparable_page(k.body, known), comparable_page(u.body, unknown)) << "attempt " << i;
    // The e-mail typed is kept in the form.
    EXPECT_NE(k.body.find("value=\"" + known + "\""), std::string::npos);
  }
  // The right password from that address is throttled too, like any attempt there...
  EXPECT_EQ(attempt(known, "correct horse battery", "203.0.113.9").status, 429);
  // ...and nothing stops the owner elsewhere.
  EXPECT_EQ(attempt(known, "correct horse battery", "198.51.100.20").status, 303);
}

TEST_P(IdentityTest, OwnerWithDeviceCookieSignsInDuringDistributedGuessing) {
  // The owner signs in once from home: the answer sets a device cookie.
  auto first = attempt("ada@example.com", "correct horse battery", "198.51.100.20");
  ASSERT_EQ(first.status, 303) << first.body;
  std::string device;
  for (const auto& [k, v] : first.headers)
    if (k == "Set-Cookie" && v.starts_with("sika_device=")) device = v.substr(0, v.find(';'));
  ASSERT_FALSE(device.empty());
  EXPECT_NE(first.get("Set-Cookie").find("HttpOnly"), std::string::npos);

  // Guesses from many addresses reach the account's ceiling.
  Options o = options();
  o.login_failures_per_account = 10;
  service_ = std::make_unique<Service>(*db_, o);
  int throttled = 0;
  for (int i = 0; i < 15; ++i) {
    auto r = attempt("ada@example.com", "guess " + std::to_string(i), "203.0.113." + std::to_string(i));
    throttled += r.status == 429;
  }
  EXPECT_EQ(throttled, 6);  // the ceiling counts every attempt: the owner's first sign-in took one
  // Without its device cookie, the owner waits like everyone (an unknown e-mail would, too)...
  EXPECT_EQ(attempt("ada@example.com", "correct horse battery", "198.51.100.21").status, 429);
  // ...with it, from any address, the owner signs in.
  auto owner = attempt("ada@example.com", "correct horse battery", "198.51.100.21", device);
  EXPECT_EQ(owner.status, 303) << owner.body;
  // The cookie is bound to its account: another e-mail over its ceiling gains nothing from it.
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(attempt("nobody@example.com", "guess " + std::to_string(i), "203.0.114." + std::to_string(i)).status,
              401);
  EXPECT_EQ(attempt("nobody@example.com", "x wrong password", "203.0.113.77", device).status, 429);
  // A stolen device cookie gives max_failed_logins guesses per window, then counts for nothing.
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(attempt("ada@example.com", "wrong " + std::to_string(i), "203.0.113.90", device).status, 401);
  EXPECT_EQ(attempt("ada@example.com", "correct horse battery", "203.0.113.90", device).status, 429);
}

TEST_P(IdentityTest, ConcurrentWrongPasswordsCompareAtMostTheLimit) {
  // 12 attempts at once for one (e-mail, address) pair, through two services on one database:
  // the count is taken before the password is compared, so 3 are compared (401), 9 throttled.
  other_ = make_service();
  constexpr int kThreads = 12;
  std::vector<web::Request> requests;
  for (int i = 0; i < kThreads; ++i) {
    Service& s = i % 2 ? *other_ : *service_;
    web::Request g = request("GET", "", "");
    g.query = authz_params();
    auto page = s.authorize(g);
    auto fields = hidden_fields(page.body);
    fields.emplace_back("email", "ada@example.com");
    fields.emplace_back("password", "wrong password " + std::to_string(i));
    fields.emplace_back("action", "approve");
    web::Request r = request("POST", form_encode(fields), "application/x-www-form-urlencoded");
    r.headers.emplace_back("cookie", cookies_of(page));
    r.remote_ip = "203.0.113.50";
    requests.push_back(std::move(r));
  }
  std::latch go(kThreads);
  std::atomic<int> refused{0}, throttled{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      go.arrive_and_wait();
      auto res = (i % 2 ? *other_ : *service_).authorize_submit(requests[i]);
      if (res.status == 401)
        ++refused;
      else if (res.status == 429)
        ++throttled;
      else
        ADD_FAILURE() << res.status << " " << res.body;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(refused.load(), 3);
  EXPECT_EQ(throttled.load(), kThreads - 3);
}

}  // namespace
}  // namespace sika::identity::testing
