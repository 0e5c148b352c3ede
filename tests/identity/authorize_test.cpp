// The authorization code flow on both backends: PKCE, code replay and concurrent redemption,
// redirect rules, consent, refresh-token rotation with grace and reuse detection.
#include "identity/fixture.hpp"

namespace sika::identity::testing {
namespace {

TEST_P(IdentityTest, AuthorizationCodeWithPkceEndToEnd) {
  auto page = get_authorize(authz_params());
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_NE(page.body.find("lang=\"en\""), std::string::npos);
  EXPECT_NE(page.body.find("Dashboard"), std::string::npos);
  EXPECT_FALSE(page.get("Content-Security-Policy").empty());
  std::string jar = cookies_of(page);
  EXPECT_NE(jar.find("sika_csrf="), std::string::npos);
  bool httponly = false;
  for (const auto& [k, v] : page.headers)
    if (k == "Set-Cookie")
      httponly = v.find("HttpOnly") != std::string::npos && v.find("SameSite=Lax") != std::string::npos;
  EXPECT_TRUE(httponly);

  auto fields = hidden_fields(page.body);
  fields.emplace_back("email", "ada@example.com");
  fields.emplace_back("password", "correct horse battery");
  fields.emplace_back("action", "approve");
  auto res = submit(fields, jar);
  ASSERT_EQ(res.status, 303) << res.body;
  std::string location(res.get("Location"));
  EXPECT_TRUE(location.starts_with("https://app.example/cb?code=")) << location;
  auto q = query_of(location);
  EXPECT_EQ(q["state"], "st-123");
  EXPECT_EQ(q["iss"], kIssuer);
  jar = cookies_of(res, jar);
  EXPECT_NE(jar.find("sika_session="), std::string::npos);

  auto tok = exchange(q["code"]);
  ASSERT_EQ(tok.status, 200) << tok.body;
  auto body = json_of(tok);
  EXPECT_EQ(body["scope"].as_string(), "openid profile email offline_access");
  std::string access(body["access_token"].as_string());
  std::string id_token(body["id_token"].as_string());
  EXPECT_TRUE(body["refresh_token"].as_string().starts_with("rt_"));

  auto principal = auth_with(*service_, access);
  ASSERT_TRUE(principal.ok());
  EXPECT_EQ(principal->subject, user_.subject);
  EXPECT_EQ(principal->user_tier, 3);
  EXPECT_EQ(principal->countries, std::vector<std::string>{"CIV"});
  EXPECT_TRUE(principal->merchant.empty());  // a user signing in through a client does not act as its merchant

  auto idp = parse_jwt(id_token);
  ASSERT_TRUE(idp.ok());
  EXPECT_EQ(idp->alg, "RS256");
  EXPECT_EQ(idp->payload.at("aud").as_string(), "spa");
  EXPECT_EQ(idp->payload.at("nonce").as_string(), "n-456");
  EXPECT_EQ(idp->payload.at("at_hash").as_string(), half_hash(access));
  EXPECT_EQ(idp->payload.at("email").as_string(), "ada@example.com");
  EXPECT_TRUE(idp->payload.contains("auth_time"));
  auto ring = load_keys(*db_, kPepper, clock_.load(), false);
  const Jwk* key = (*ring)->find(idp->kid);
  ASSERT_NE(key, nullptr);
  EXPECT_TRUE(key->verify(idp->signing_input, idp->signature));

  // userinfo, GET and POST
  web::Request ui = request("GET", "", "");
  ui.headers.emplace_back("authorization", "Bearer " + access);
  auto info = service_->userinfo(ui);
  ASSERT_EQ(info.status, 200) << info.body;
  EXPECT_EQ(json_of(info)["sub"].as_string(), user_.subject);
  EXPECT_EQ(json_of(info)["email"].as_string(), "ada@example.com");
  EXPECT_EQ(json_of(info)["name"].as_string(), "Ada");
  web::Request ui_post = request("POST", "access_token=" + access, "application/x-www-form-urlencoded");
  EXPECT_EQ(service_->userinfo(ui_post).status, 200);
  web::Request ui_bad = request("GET", "", "");
  ui_bad.headers.emplace_back("authorization", "Bearer nope");
  auto bad = service_->userinfo(ui_bad);
  EXPECT_EQ(bad.status, 401);
  EXPECT_NE(bad.get("WWW-Authenticate").find("invalid_token"), std::string::npos);
  // A client_credentials token is not a user token.
  web::Request ui_client = request("GET", "", "");
  ui_client.headers.emplace_back("authorization", "Bearer " + client_token());
  EXPECT_EQ(service_->userinfo(ui_client).status, 403);

  // With a session and consent, a new request skips the page.
  auto again = get_authorize(authz_params(), jar);
  ASSERT_EQ(again.status, 303) << again.body;
  EXPECT_FALSE(query_of(again.get("Location"))["code"].empty());
  // prompt=login forces the form again.
  auto params = authz_params();
  params.emplace_back("prompt", "login");
  EXPECT_EQ(get_authorize(params, jar).status, 200);
}

TEST_P(IdentityTest, CodeReplayRevokesWhatTheCodeIssued) {
  auto [res, jar] = login();
  ASSERT_EQ(res.status, 303);
  std::string code = query_of(res.get("Location"))["code"];
  auto first = exchange(code);
  ASSERT_EQ(first.status, 200);
  std::string access(json_of(first)["access_token"].as_string());
  std::string refresh_token(json_of(first)["refresh_token"].as_string());
  ASSERT_TRUE(auth_with(*service_, access).ok());

  auto second = exchange(code);
  EXPECT_EQ(second.status, 400);
  EXPECT_EQ(oauth_code_of(second), "invalid_grant");
  EXPECT_FALSE(auth_with(*service_, access).ok());
  EXPECT_EQ(oauth_code_of(refresh(refresh_token)), "invalid_grant");
}

TEST_P(IdentityTest, PkceAndCodeChecks) {
  // Wrong verifier: invalid_grant, and the code is burnt.
  auto [res, jar] = login();
  std::string code = query_of(res.get("Location"))["code"];
  EXPECT_EQ(oauth_code_of(exchange(code, std::string(43, 'a'))), "invalid_grant");
  EXPECT_EQ(oauth_code_of(exchange(code)), "invalid_grant");

  // Expired code.
  auto [res2, jar2] = login();
  code = query_of(res2.get("Location"))["code"];
  clock_ += 61 * 1000LL;
  EXPECT_EQ(oauth_code_of(exchange(code)), "invalid_grant");

  // A verifier without a challenge is refused (confidential client without PKCE).
  auto web_client = create(ClientSpec{.client_id = "web",
                                      .confidential = true,
                                      .redirect_uris = {"https://web.example/cb"},
                                      .grant_types = {"authorization_code"},
                                      .scopes = {"openid"}});
  web::Fields wp = {{"response_type", "code"},
                    {"client_id", "web"},
                    {"redirect_uri", "https://web.example/cb"},
                    {"scope", "openid"},
                    {"state", "s"}};
  auto [wr, wj] = login("correct horse battery", wp);
  ASSERT_EQ(wr.status, 303) << wr.body;
  web::Request x = request("POST",
                           form_encode({{"grant_type", "authorization_code"},
                                        {"code", query_of(wr.get("Location"))["code"]},
                                        {"redirect_uri", "https://web.example/cb"},
                                        {"code_verifier", std::string(kVerifier)}}),
                           "application/x-www-form-urlencoded");
  x.headers.emplace_back("authorization", "Basic " + base64_encode("web:" + web_client.client_secret));
  EXPECT_EQ(oauth_code_of(service_->token(x)), "invalid_grant");
  // Public client without challenge, and plain, are refused with a redirect.
  auto params = authz_params();
  params.erase(params.begin() + 6, params.end());
  auto r = get_authorize(params);
  ASSERT_EQ(r.status, 303);
  EXPECT_EQ(query_of(r.get("Location"))["error"], "invalid_request");
  EXPECT_EQ(query_of(r.get("Location"))["iss"], kIssuer);
  params.emplace_back("code_challenge", pkce_s256(kVerifier));
  params.emplace_back("code_challenge_method", "plain");
  EXPECT_EQ(query_of(get_authorize(params).get("Location"))["error"], "invalid_request");
}

TEST_P(IdentityTest, AuthorizeErrorsRedirectOnlyToRegisteredUris) {
  auto params = authz_params();
  params[2].second = "https://evil.example/cb";
  auto r = get_authorize(params);
  EXPECT_EQ(r.status, 400);
  EXPECT_TRUE(r.get("Location").empty());
  EXPECT_NE(r.body.find("<html"), std::string::npos);

  params = authz_params();
  params[1].second = "unknown-client";
  EXPECT_EQ(get_authorize(params).status, 400);

  params = authz_params();
  params[0].second = "token";
  r = get_authorize(params);
  ASSERT_EQ(r.status, 303);
  auto q = query_of(r.get("Location"));
  EXPECT_EQ(q["error"], "unsupported_response_type");
  EXPECT_EQ(q["state"], "st-123");
  EXPECT_EQ(q["iss"], kIssuer);

  params = authz_params("openid payments providers");
  EXPECT_EQ(query_of(get_authorize(params).get("Location"))["error"], "invalid_scope");

  params = authz_params();
  params.emplace_back("prompt", "none");
  EXPECT_EQ(query_of(get_authorize(params).get("Location"))["error"], "login_required");

  // Loopback redirect URIs match on any port (RFC 8252).
  params = authz_params();
  params[2].second = "http://127.0.0.1:45678/callback";
  EXPECT_EQ(get_authorize(params).status, 200);

  // Deny
  auto page = get_authorize(authz_params());
  auto fields = hidden_fields(page.body);
  fields.emplace_back("action", "deny");
  auto denied = submit(fields, cookies_of(page));
  ASSERT_EQ(denied.status, 303);
  EXPECT_EQ(query_of(denied.get("Location"))["error"], "access_denied");

  // CSRF: a form without the matching cookie is refused on a page.
  fields = hidden_fields(page.body);
  fields.emplace_back("email", "ada@example.com");
  fields.emplace_back("password", "correct horse battery");
  fields.emplace_back("action", "approve");
  auto forged = submit(fields, "sika_csrf=someone-elses-cookie-value-123");
  EXPECT_EQ(forged.status, 400);
  EXPECT_TRUE(forged.get("Location").empty());
}

TEST_P(IdentityTest, RefreshRotationGraceAndReuseDetection) {
  auto [res, jar] = login();
  auto tok = exchange(query_of(res.get("Location"))["code"]);
  ASSERT_EQ(tok.status, 200);
  std::string r0(json_of(tok)["refresh_token"].as_string());

  auto t1 = refresh(r0);
  ASSERT_EQ(t1.status, 200) << t1.body;
  std::string r1(json_of(t1)["refresh_token"].as_string());
  EXPECT_NE(r1, r0);
  EXPECT_FALSE(json_of(t1)["id_token"].as_string().empty());

  // Within the grace period the old token still works (lost response, parallel refresh).
  clock_ += 5000;
  auto t1b = refresh(r0);
  ASSERT_EQ(t1b.status, 200) << t1b.body;
  std::string access_b(json_of(t1b)["access_token"].as_string());

  // After it: reuse revokes the whole family, including tokens issued since.
  clock_ += 10000;
  auto reuse = refresh(r0);
  EXPECT_EQ(reuse.status, 400);
  EXPECT_EQ(oauth_code_of(reuse), "invalid_grant");
  EXPECT_EQ(oauth_code_of(refresh(r1)), "invalid_grant");
  EXPECT_FALSE(auth_with(*service_, access_b).ok());

  // Scope narrowing is allowed, widening is not.
  auto [res2, jar2] = login();
  auto tok2 = exchange(query_of(res2.get("Location"))["code"]);
  std::string s0(json_of(tok2)["refresh_token"].as_string());
  web::Request r = request(
      "POST",
      form_encode(
          {{"grant_type", "refresh_token"}, {"refresh_token", s0}, {"client_id", "spa"}, {"scope", "openid payments"}}),
      "application/x-www-form-urlencoded");
  EXPECT_EQ(oauth_code_of(service_->token(r)), "invalid_grant");
}

TEST_P(IdentityTest, ParallelRefreshesNeverError) {
  auto [res, jar] = login();
  auto tok = exchange(query_of(res.get("Location"))["code"]);
  std::string r0(json_of(tok)["refresh_token"].as_string());
  constexpr int kThreads = 8;
  std::latch go(kThreads);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&] {
      go.arrive_and_wait();
      auto r = refresh(r0);
      if (r.status == 200)
        ++ok;
      else
        ADD_FAILURE() << r.body;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kThreads);
}

TEST_P(IdentityTest, ConcurrentRedemptionsOfOneCodeIssueOnce) {
  // One code redeemed 8 times at once through two services: one token response, every other
  // answer invalid_grant (the code is marked used by a conditional UPDATE in the redeeming unit).
  auto [res, jar] = login();
  std::string code = query_of(res.get("Location"))["code"];
  other_ = make_service();
  constexpr int kThreads = 8;
  std::latch go(kThreads);
  std::atomic<int> issued{0}, refused{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      web::Request r = request("POST",
                               form_encode({{"grant_type", "authorization_code"},
                                            {"code", code},
                                            {"redirect_uri", "https://app.example/cb"},
                                            {"client_id", "spa"},
                                            {"code_verifier", std::string(kVerifier)}}),
                               "application/x-www-form-urlencoded");
      go.arrive_and_wait();
      auto out = (i % 2 ? *other_ : *service_).token(r);
      if (out.status == 200)
        ++issued;
      else if (out.status == 400 && oauth_code_of(out) == "invalid_grant")
        ++refused;
      else
        ADD_FAILURE() << out.status << " " << out.body;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(issued.load(), 1);
  EXPECT_EQ(refused.load(), kThreads - 1);
}

TEST_P(IdentityTest, ConsentIsCheckedWhereTheCodeIsStored) {
  // Signed in with a consent: the request is answered with a code at once. Once the consent no
  // longer covers the scopes, the same request shows the consent form: the stored consent is
  // read in the unit that stores the code.
  auto [res, jar] = login();
  ASSERT_EQ(res.status, 303);
  auto again = get_authorize(authz_params(), jar);
  EXPECT_EQ(again.status, 303) << again.body;
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_TRY(c.exec("UPDATE oauth_consents SET scope = 'openid' WHERE client_id = 'spa'"));
                   return {};
                 })
                  .ok());
  auto narrowed = get_authorize(authz_params(), jar);
  EXPECT_EQ(narrowed.status, 200);
  // Concurrent approvals of different scopes keep one consent row (its unique key), all succeed.
  constexpr int kThreads = 6;
  std::vector<web::Request> posts;
  for (int i = 0; i < kThreads; ++i) {
    auto page = get_authorize(authz_params(i % 2 ? "openid email" : "openid profile"), jar);
    auto fields = hidden_fields(page.body);
    fields.emplace_back("action", "approve");
    web::Request r = request("POST", form_encode(fields), "application/x-www-form-urlencoded");
    r.headers.emplace_back("cookie", cookies_of(page, jar));
    posts.push_back(std::move(r));
  }
  other_ = make_service();
  std::latch go(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      go.arrive_and_wait();
      auto out = (i % 2 ? *other_ : *service_).authorize_submit(posts[i]);
      EXPECT_EQ(out.status, 303) << out.body;
    });
  for (auto& t : threads) t.join();
  std::int64_t rows = 0;
  ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(auto r,
                                         c.query_one("SELECT COUNT(*) FROM oauth_consents WHERE client_id = 'spa'"));
                   rows = r->i64(0);
                   return {};
                 })
                  .ok());
  EXPECT_EQ(rows, 1);
}

}  // namespace
}  // namespace sika::identity::testing
