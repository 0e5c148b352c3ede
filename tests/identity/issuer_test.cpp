// The token issuer on both backends: every grant's tokens, client_credentials (strict mode,
// sealed refresh tokens, rotation and reuse, rechecks), revocation ownership, client
// authentication throttling, and answers from the I/O thread.
#include "identity/fixture.hpp"

namespace sika::identity::testing {
namespace {

TEST_P(IdentityTest, IssuerSignsEveryGrantsTokensAndSealsClientRefreshTokens) {
  Options o = options();
  auto ring = load_keys(*db_, kPepper, clock_.load(), false);
  ASSERT_TRUE(ring.ok());
  std::shared_ptr<const KeyRing> keys = *ring;
  TokenIssuer issuer(o, [&] { return keys; });
  std::optional<Client> client;
  ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(client, find_client(c, "merchant-app"));
                   return {};
                 })
                  .ok());
  ASSERT_TRUE(client.has_value());
  auto verify = [&](const std::string& jwt) {
    auto p = parse_jwt(jwt);
    EXPECT_TRUE(p.ok());
    const Jwk* key = p.ok() ? keys->find(p->kid) : nullptr;
    EXPECT_NE(key, nullptr);
    EXPECT_TRUE(key && key->verify(p->signing_input, p->signature));
    return p.ok() ? p->payload : bj::object{};
  };

  // client_credentials: access + sealed refresh + ID token whose subject is the client.
  Ticket t = issuer.ticket(clock_.load(), Ticket::Refresh::sealed);
  EXPECT_EQ(t.access_expires_at, (clock_.load() / 1000 + o.access_token_ttl) * 1000);
  EXPECT_FALSE(t.family_id.empty());
  auto body = issuer.issue(t, Grant{.client = &*client, .scope = "payments", .auth_time = t.now_ms, .id_token = true});
  ASSERT_TRUE(body.ok());
  auto r = bj::parse(*body).as_object();
  EXPECT_EQ(r.at("token_type").as_string(), "Bearer");
  EXPECT_EQ(r.at("expires_in").as_int64(), o.access_token_ttl);
  auto access = verify(std::string(r.at("access_token").as_string()));
  EXPECT_EQ(access.at("jti").as_string(), t.jti);
  EXPECT_EQ(access.at("sub").as_string(), "merchant-app");
  EXPECT_EQ(access.at("exp").as_int64() * 1000, t.access_expires_at);
  auto id = verify(std::string(r.at("id_token").as_string()));
  EXPECT_EQ(id.at("sub").as_string(), "merchant-app");
  EXPECT_EQ(id.at("aud").as_string(), "merchant-app");
  EXPECT_EQ(id.at("iss").as_string(), kIssuer);
  EXPECT_FALSE(id.contains("at_hash"));  // it says who the client is, not which access token it came with
  EXPECT_FALSE(id.contains("email"));
  // One such ID token per client and minute: the next issuance reuses it, a later one re-signs.
  Grant again{.client = &*client, .scope = "payments", .auth_time = t.now_ms, .id_token = true};
  auto same = bj::parse(*issuer.issue(issuer.ticket(clock_.load() + 59'000, Ticket::Refresh::none), again)).as_object();
  EXPECT_EQ(same.at("id_token").as_string(), r.at("id_token").as_string());
  EXPECT_NE(same.at("access_token").as_string(), r.at("access_token").as_string());
  auto later =
      bj::parse(*issuer.issue(issuer.ticket(clock_.load() + 60'000, Ticket::Refresh::none), again)).as_object();
  EXPECT_NE(later.at("id_token").as_string(), r.at("id_token").as_string());
  EXPECT_EQ(verify(std::string(later.at("id_token").as_string())).at("iat").as_int64(), clock_.load() / 1000 + 60);
  std::string sealed_token(r.at("refresh_token").as_string());
  auto sealed = issuer.open_sealed(sealed_token);
  ASSERT_TRUE(sealed.has_value());
  EXPECT_EQ(sealed->family_id, t.family_id);
  EXPECT_EQ(sealed->client_id, "merchant-app");
  EXPECT_EQ(sealed->scope, "payments");
  EXPECT_EQ(sealed->access_jti, t.jti);
  EXPECT_EQ(sealed->expires_at, t.now_ms + o.refresh_token_ttl * 1000LL);
  RefreshToken rec = issuer.sealed_record(*sealed, sealed_token);
  EXPECT_EQ(rec.token_hash, crypto::secret_hash(kPepper, sealed_token));
  EXPECT_EQ(rec.user_id, 0);
  EXPECT_EQ(rec.status, "active");
  // Only this server's seal opens: a changed byte, another pepper, a random token fail.
  std::string tampered = sealed_token;
  tampered[5] = tampered[5] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(issuer.open_sealed(tampered).has_value());
  Options other_opts = o;
  other_opts.pepper = "another-pepper-0123456789abcdef0123456789";
  EXPECT_FALSE(TokenIssuer(other_opts, [&] { return keys; }).open_sealed(sealed_token).has_value());
  EXPECT_FALSE(issuer.open_sealed("rt_" + random_token(32)).has_value());

  // Strict client_credentials: the access token alone.
  Ticket strict = issuer.ticket(clock_.load(), Ticket::Refresh::none);
  auto strict_body = bj::parse(*issuer.issue(strict, Grant{.client = &*client, .scope = "payments"})).as_object();
  EXPECT_FALSE(strict_body.contains("refresh_token"));
  EXPECT_FALSE(strict_body.contains("id_token"));

  // A user grant (authorization_code, refresh_token): user claims, a recorded refresh token,
  // an ID token with the user's claims and nonce, and the row that records it.
  Ticket u = issuer.ticket(clock_.load(), Ticket::Refresh::recorded);
  EXPECT_TRUE(u.refresh_token.starts_with("rt_"));
  Grant g{.client = &*client,
          .user = &user_,
          .scope = "openid email payments",
          .nonce = "n-1",
          .auth_time = clock_.load() - 5000,
          .id_token = true};
  auto ub = bj::parse(*issuer.issue(u, g)).as_object();
  EXPECT_EQ(ub.at("refresh_token").as_string(), u.refresh_token);
  auto uaccess = verify(std::string(ub.at("access_token").as_string()));
  EXPECT_EQ(uaccess.at("sub").as_string(), user_.subject);
  EXPECT_EQ(uaccess.at("tier").as_int64(), 3);
  EXPECT_EQ(uaccess.at("auth_time").as_int64(), (clock_.load() - 5000) / 1000);
  auto uid = verify(std::string(ub.at("id_token").as_string()));
  EXPECT_EQ(uid.at("sub").as_string(), user_.subject);
  EXPECT_EQ(uid.at("nonce").as_string(), "n-1");
  EXPECT_EQ(uid.at("email").as_string(), "ada@example.com");
  RefreshToken row = issuer.refresh_record(u, g, "fam-1", "openid email payments offline_access");
  EXPECT_EQ(row.token_hash, crypto::secret_hash(kPepper, u.refresh_token));
  EXPECT_EQ(row.family_id, "fam-1");
  EXPECT_EQ(row.user_id, user_.id);
  EXPECT_EQ(row.scope, "openid email payments offline_access");
  EXPECT_EQ(row.access_jti, u.jti);
  EXPECT_EQ(row.expires_at, u.now_ms + o.refresh_token_ttl * 1000LL);
}

TEST_P(IdentityTest, ClientCredentialsAnswersTheSpecsFiveFieldsWithoutWriting) {
  auto res = cc_token(*service_, "merchant-app", secret_, "payments");
  ASSERT_EQ(res.status, 200) << res.body;
  auto body = json_of(res);
  for (std::string_view f : {"token_type", "expires_in", "access_token", "refresh_token", "id_token"})
    EXPECT_TRUE(body.contains(f)) << f;
  auto id = parse_jwt(body["id_token"].as_string());
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->alg, "RS256");  // the client's registered id_token_alg
  EXPECT_EQ(id->typ, "JWT");
  EXPECT_EQ(id->payload.at("sub").as_string(), "merchant-app");
  EXPECT_EQ(id->payload.at("aud").as_string(), "merchant-app");
  EXPECT_EQ(id->payload.at("azp").as_string(), "merchant-app");
  EXPECT_TRUE(id->payload.contains("auth_time"));
  // An ID token is not an access token at the gateway.
  EXPECT_FALSE(auth_with(*service_, std::string(body["id_token"].as_string())).ok());
  // Issuing wrote nothing: the refresh token is recorded at its first use.
  EXPECT_EQ(count_rows(*db_, "SELECT COUNT(*) FROM oauth_refresh_tokens"), 0);
}

TEST_P(IdentityTest, ClientCredentialsStrictMode) {
  auto strict = create(ClientSpec{
      .client_id = "strict-app", .merchant_id = merchant_id_, .countries = {"CMR"}, .strict_client_credentials = true});
  auto res = cc_token(*service_, "strict-app", strict.client_secret);
  ASSERT_EQ(res.status, 200) << res.body;
  auto body = json_of(res);
  EXPECT_TRUE(body.contains("access_token"));
  EXPECT_EQ(body["token_type"].as_string(), "Bearer");
  EXPECT_EQ(body["expires_in"].as_int64(), 3600);
  EXPECT_FALSE(body.contains("refresh_token"));
  EXPECT_FALSE(body.contains("id_token"));
  // A strict client may not use the refresh_token grant it was never given.
  auto r = post_as(*service_, &Service::token, {{"grant_type", "refresh_token"}, {"refresh_token", "rt_x"}},
                   "strict-app", strict.client_secret);
  EXPECT_EQ(oauth_code_of(r), "unauthorized_client");

  // The setting changes with update_client (the admin CLI's update-client).
  std::optional<Client> updated;
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(
                       updated, update_client(c, "merchant-app", ClientUpdate{.strict_client_credentials = true},
                                              clock_.load()));
                   return {};
                 })
                  .ok());
  EXPECT_TRUE(updated->strict_client_credentials);
  service_->invalidate_client_cache();
  EXPECT_FALSE(json_of(cc_token(*service_, "merchant-app", secret_)).contains("refresh_token"));
  // Bad settings are refused per field.
  Status bad = db_->write([&](store::Conn& c) -> Status {
    SIKA_TRY(update_client(c, "merchant-app", ClientUpdate{.scopes = std::vector<std::string>{"root"}}, clock_.load()));
    return {};
  });
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, sika::ErrorKind::invalid);
  EXPECT_TRUE(bad.error().details.as_object().contains("scopes"));
}

TEST_P(IdentityTest, ClientCredentialsRefreshRotatesAndDetectsReuse) {
  auto first = json_of(cc_token(*service_, "merchant-app", secret_, "payments countries"));
  std::string r0(first["refresh_token"].as_string());
  std::string a0(first["access_token"].as_string());
  auto refresh_cc = [&](const std::string& token, const std::string& scope = "") {
    web::Fields f{{"grant_type", "refresh_token"}, {"refresh_token", token}};
    if (!scope.empty()) f.emplace_back("scope", scope);
    return post_as(*service_, &Service::token, f, "merchant-app", secret_);
  };

  auto t1 = refresh_cc(r0);
  ASSERT_EQ(t1.status, 200) << t1.body;
  auto b1 = json_of(t1);
  std::string r1(b1["refresh_token"].as_string());
  EXPECT_NE(r1, r0);
  EXPECT_EQ(b1["scope"].as_string(), "payments countries");
  auto id = parse_jwt(b1["id_token"].as_string());
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->payload.at("sub").as_string(), "merchant-app");
  auto p1 = auth_with(*service_, std::string(b1["access_token"].as_string()));
  ASSERT_TRUE(p1.ok());
  EXPECT_EQ(p1->merchant, "MCH-CM-0001");
  EXPECT_EQ(count_rows(*db_, "SELECT COUNT(*) FROM oauth_refresh_tokens"), 2);

  // Within the grace period the first token works again; the next one narrows the scope.
  clock_ += 5000;
  ASSERT_EQ(refresh_cc(r0).status, 200);
  auto t2 = refresh_cc(r1, "payments");
  ASSERT_EQ(t2.status, 200) << t2.body;
  EXPECT_EQ(json_of(t2)["scope"].as_string(), "payments");
  std::string a2(json_of(t2)["access_token"].as_string());
  std::string r2(json_of(t2)["refresh_token"].as_string());
  EXPECT_EQ(oauth_code_of(refresh_cc(r2, "payments providers")), "invalid_grant");  // never widened

  // After it: reuse revokes the family and the access tokens it issued, the first one included.
  clock_ += 10000;
  auto reuse = refresh_cc(r0);
  EXPECT_EQ(reuse.status, 400);
  EXPECT_EQ(oauth_code_of(reuse), "invalid_grant");
  EXPECT_EQ(oauth_code_of(refresh_cc(r2)), "invalid_grant");
  EXPECT_FALSE(auth_with(*service_, a0).ok());
  EXPECT_FALSE(auth_with(*service_, a2).ok());

  // Another client cannot refresh it, even with its own valid credentials.
  auto other = create(ClientSpec{.client_id = "other-app"});
  std::string mine(json_of(cc_token(*service_, "merchant-app", secret_))["refresh_token"].as_string());
  auto stolen = post_as(*service_, &Service::token, {{"grant_type", "refresh_token"}, {"refresh_token", mine}},
                        "other-app", other.client_secret);
  EXPECT_EQ(oauth_code_of(stolen), "invalid_grant");
  EXPECT_EQ(refresh_cc(mine).status, 200);
}

TEST_P(IdentityTest, ParallelFirstUsesOfASealedRefreshTokenRecordItOnce) {
  // A client_credentials refresh token has no row until its first use. Eight first uses at once,
  // through two services: all succeed (the grace period), and the token gets one row (the
  // conditional insert on its hash), plus one successor per refresh.
  auto first = json_of(cc_token(*service_, "merchant-app", secret_, "payments countries"));
  std::string r0(first["refresh_token"].as_string());
  other_ = make_service();
  constexpr int kThreads = 8;
  std::latch go(kThreads);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      go.arrive_and_wait();
      auto r = post_as(i % 2 ? *other_ : *service_, &Service::token,
                       web::Fields{{"grant_type", "refresh_token"}, {"refresh_token", r0}}, "merchant-app", secret_);
      if (r.status == 200)
        ++ok;
      else
        ADD_FAILURE() << r.status << " " << r.body;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kThreads);
  EXPECT_EQ(count_rows(*db_, "SELECT COUNT(*) FROM oauth_refresh_tokens"), 1 + kThreads);
}

TEST_P(IdentityTest, ClientCredentialsRefreshRechecksTheClient) {
  auto token_now = [&] {
    return std::string(
        json_of(cc_token(*service_, "merchant-app", secret_, "payments countries"))["refresh_token"].as_string());
  };
  auto refresh_cc = [&](const std::string& token) {
    return post_as(*service_, &Service::token, {{"grant_type", "refresh_token"}, {"refresh_token", token}},
                   "merchant-app", secret_);
  };
  std::string narrowed = token_now();
  std::string stricted = token_now();
  std::string disabled = token_now();

  // Scopes taken from the client since: refused (the cached record is not trusted for this).
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_TRY(update_client(c, "merchant-app",
                                          ClientUpdate{.scopes = std::vector<std::string>{"payments", "services"}},
                                          clock_.load()));
                   return {};
                 })
                  .ok());
  auto r = refresh_cc(narrowed);
  EXPECT_EQ(oauth_code_of(r), "invalid_grant");
  EXPECT_NE(json_of(r)["error"].at("details").at("error_description").as_string().find("countries"), std::string::npos);

  // Switched to strict: the families end.
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_TRY(update_client(c, "merchant-app",
                                          ClientUpdate{.scopes = std::vector<std::string>{"payments", "countries"},
                                                       .strict_client_credentials = true},
                                          clock_.load()));
                   return {};
                 })
                  .ok());
  EXPECT_EQ(oauth_code_of(refresh_cc(stricted)), "invalid_grant");
  ASSERT_TRUE(
      db_->write([&](store::Conn& c) -> Status {
           SIKA_TRY(update_client(c, "merchant-app", ClientUpdate{.strict_client_credentials = false}, clock_.load()));
           return {};
         })
          .ok());
  EXPECT_EQ(oauth_code_of(refresh_cc(stricted)), "invalid_grant");  // revoked, stays revoked

  // Disabled: refused at once, though this process still has the record cached.
  ASSERT_TRUE(
      db_->write([&](store::Conn& c) { return set_client_active(c, "merchant-app", false, clock_.load()); }).ok());
  EXPECT_EQ(oauth_code_of(refresh_cc(disabled)), "invalid_grant");
}

TEST_P(IdentityTest, RevokingAnotherClientsTokenIsRefusedAndTheTokenKeepsWorking) {
  auto other = create(ClientSpec{.client_id = "other-app"});
  auto issued = json_of(cc_token(*service_, "merchant-app", secret_));
  std::string access(issued["access_token"].as_string());
  std::string sealed(issued["refresh_token"].as_string());
  auto revoke_as = [&](const std::string& client, const std::string& secret, const std::string& token) {
    return post_as(*service_, &Service::revoke, {{"token", token}}, client, secret);
  };
  auto expect_refused = [&](const web::Response& res) {
    EXPECT_EQ(res.status, 400) << res.body;
    auto b = json_of(res);
    EXPECT_FALSE(b["success"].as_bool());
    EXPECT_EQ(b["message"].as_string(), "unauthorized_client");
    EXPECT_EQ(oauth_code_of(res), "unauthorized_client");
    EXPECT_EQ(res.get("Cache-Control"), "no-store");
  };

  // An access token (RFC 7009 §2.1).
  expect_refused(revoke_as("other-app", other.client_secret, access));
  EXPECT_TRUE(auth_with(*service_, access).ok());
  EXPECT_EQ(count_rows(*db_, "SELECT COUNT(*) FROM oauth_revoked_tokens"), 0);
  // A client_credentials refresh token, before and after its first use.
  expect_refused(revoke_as("other-app", other.client_secret, sealed));
  auto refreshed = post_as(*service_, &Service::token, {{"grant_type", "refresh_token"}, {"refresh_token", sealed}},
                           "merchant-app", secret_);
  ASSERT_EQ(refreshed.status, 200) << refreshed.body;
  std::string recorded(json_of(refreshed)["refresh_token"].as_string());
  expect_refused(revoke_as("other-app", other.client_secret, recorded));
  EXPECT_EQ(post_as(*service_, &Service::token, {{"grant_type", "refresh_token"}, {"refresh_token", recorded}},
                    "merchant-app", secret_)
                .status,
            200);
  // A user's refresh token, by a client other than the one it was issued to.
  auto [res, jar] = login();
  auto tok = exchange(query_of(res.get("Location"))["code"]);
  std::string user_refresh(json_of(tok)["refresh_token"].as_string());
  expect_refused(revoke_as("merchant-app", secret_, user_refresh));
  EXPECT_EQ(refresh(user_refresh).status, 200);

  // Its own client revokes it; unknown tokens still answer 200 (RFC 7009 §2.2).
  EXPECT_EQ(revoke_as("merchant-app", secret_, access).status, 200);
  EXPECT_FALSE(auth_with(*service_, access).ok());
  EXPECT_EQ(revoke_as("other-app", other.client_secret, "rt_" + random_token(32)).status, 200);
  EXPECT_EQ(revoke_as("other-app", other.client_secret, "no-such-token").status, 200);
}

TEST_P(IdentityTest, RevokingAnUnusedClientRefreshTokenEndsItsFamily) {
  auto issued = json_of(cc_token(*service_, "merchant-app", secret_));
  std::string access(issued["access_token"].as_string());
  std::string sealed(issued["refresh_token"].as_string());
  auto introspect = [&](const std::string& token) {
    return json_of(post_as(*service_, &Service::introspect, {{"token", token}}, "merchant-app", secret_));
  };
  auto before = introspect(sealed);
  EXPECT_TRUE(before["active"].as_bool());
  EXPECT_EQ(before["token_type"].as_string(), "refresh_token");
  EXPECT_EQ(before["client_id"].as_string(), "merchant-app");
  ASSERT_EQ(revoke(sealed).status, 200);
  EXPECT_FALSE(introspect(sealed)["active"].as_bool());
  EXPECT_FALSE(auth_with(*service_, access).ok());  // the access token issued with it
  auto again = post_as(*service_, &Service::token, {{"grant_type", "refresh_token"}, {"refresh_token", sealed}},
                       "merchant-app", secret_);
  EXPECT_EQ(oauth_code_of(again), "invalid_grant");
}

// The plan's scenario: bad token requests from one client behind the shared reverse proxy used to
// make every client's correct credentials answer 429 for a minute. Failures are now counted per
// client address (from X-Forwarded-For, the proxy being trusted) and per client_id, in the
// database, so the flood throttles its own address only, and a client's right secret is never
// refused because of failures made from other addresses.
TEST_P(IdentityTest, FailedClientAuthThrottlesTheAddressNotEveryClientBehindTheProxy) {
  web::Router router;
  auto proxies = web::TrustedProxies::parse("10.0.0.1");
  ASSERT_TRUE(proxies.ok());
  router.trust_proxies(*proxies);
  router.add({web::Surface::identity, "POST", "/oauth/v2/token", [this](web::Request& r) { return service_->token(r); },
              web::client_auth()});
  auto via_proxy = [&](const std::string& client_address, const std::string& client_id, const std::string& secret) {
    web::Request r = request(
        "POST", bj::serialize(bj::object{
                    {"grant_type", "client_credentials"}, {"client_id", client_id}, {"client_secret", secret}}));
    r.path = "/oauth/v2/token";
    r.remote_ip = "10.0.0.1";
    r.headers.emplace_back("x-forwarded-for", client_address);
    return router.dispatch(r);
  };
  for (int i = 1; i <= 30; ++i)
    ASSERT_EQ(via_proxy("203.0.113.9", "nobody-" + std::to_string(i), "guess").status, 401) << i;
  web::Response throttled = via_proxy("203.0.113.9", "nobody-31", "guess");
  EXPECT_EQ(throttled.status, 429);
  EXPECT_EQ(json_of(throttled)["message"], "rate_limited");
  std::int64_t retry = 0;
  std::string header(throttled.get("Retry-After"));
  ASSERT_FALSE(header.empty());
  retry = std::stoll(header);
  EXPECT_GE(retry, 1);
  EXPECT_LE(retry, 60);

  // Another client address behind the same proxy is not affected.
  EXPECT_EQ(via_proxy("198.51.100.20", "merchant-app", secret_).status, 200);
  // The flooding address is throttled, right secret or not, on this node...
  EXPECT_EQ(via_proxy("203.0.113.9", "merchant-app", secret_).status, 429);
  // ...and its failures count on every node.
  Options o = options();
  Service other(*db_, o);
  web::Request direct = request(
      "POST", bj::serialize(bj::object{
                  {"grant_type", "client_credentials"}, {"client_id", "merchant-app"}, {"client_secret", "wrong"}}));
  direct.remote_ip = "203.0.113.9";
  EXPECT_EQ(other.token(direct).status, 429);

  // Guessing one client's secret from many addresses: past failed_client_auth_per_client its
  // failures answer 429, but its right secret still works from anywhere.
  for (int i = 1; i <= 20; ++i)
    ASSERT_EQ(via_proxy("192.0.2." + std::to_string(i), "merchant-app", "wrong").status, 401) << i;
  EXPECT_EQ(via_proxy("192.0.2.21", "merchant-app", "wrong").status, 429);
  EXPECT_EQ(via_proxy("192.0.2.22", "merchant-app", secret_).status, 200);
  EXPECT_EQ(via_proxy("192.0.2.1", "merchant-app", secret_).status, 200);

  // The throttle ends with its window.
  clock_ += 60000;
  EXPECT_EQ(via_proxy("203.0.113.9", "merchant-app", secret_).status, 200);
  EXPECT_EQ(via_proxy("203.0.113.9", "merchant-app", "wrong").status, 401);
}

// On an I/O thread (offload_to set, as the server does for this answers_later route), a cached
// client's client_credentials token is answered at once; reading a client, counting a failed
// authentication and every other grant go to a handler thread, with the same answers.
TEST_P(IdentityTest, ClientCredentialsOfACachedClientAreAnsweredOnTheIoThread) {
  std::vector<std::function<void()>> offloaded;
  std::vector<web::Response> replies;
  auto on_io_thread = [&](const std::string& secret, const std::string& grant = "client_credentials") {
    web::Request r = request(
        "POST",
        bj::serialize(bj::object{{"grant_type", grant}, {"client_id", "merchant-app"}, {"client_secret", secret}}));
    r.remote_ip = "198.51.100.7";
    r.offload_to = [&](std::function<void()> job) {
      offloaded.push_back(std::move(job));
      return true;
    };
    r.reply_to = [&](web::Response res, int) { replies.push_back(std::move(res)); };
    return service_->token(r);
  };
  auto run_offloaded = [&] {
    ASSERT_EQ(offloaded.size(), 1u);
    auto job = std::move(offloaded.front());
    offloaded.clear();
    job();
  };

  // Not cached yet: read on a handler thread, answered there.
  web::Response first = on_io_thread(secret_);
  EXPECT_TRUE(first.deferred);
  run_offloaded();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].status, 200);
  EXPECT_TRUE(json_of(replies[0]).contains("access_token"));

  // Cached now: answered on the I/O thread, nothing offloaded.
  web::Response second = on_io_thread(secret_);
  EXPECT_FALSE(second.deferred);
  EXPECT_EQ(second.status, 200);
  EXPECT_TRUE(offloaded.empty());
  auto token = json_of(second);
  EXPECT_TRUE(token.contains("access_token"));
  EXPECT_TRUE(token.contains("refresh_token"));
  EXPECT_TRUE(token.contains("id_token"));

  // A wrong secret is counted on a handler thread: 401 there, and past the client's limit 429;
  // its right secret still works, on the I/O thread.
  replies.clear();
  for (int i = 1; i <= 20; ++i) {
    web::Response wrong = on_io_thread("wrong");
    ASSERT_TRUE(wrong.deferred) << i;
    run_offloaded();
    ASSERT_EQ(replies.back().status, 401) << i;
  }
  web::Response wrong = on_io_thread("wrong");
  ASSERT_TRUE(wrong.deferred);
  run_offloaded();
  EXPECT_EQ(replies.back().status, 429);
  web::Response right = on_io_thread(secret_);
  EXPECT_FALSE(right.deferred);
  EXPECT_EQ(right.status, 200);

  // Another grant always goes to a handler thread, and gets there the answer it gets directly.
  replies.clear();
  web::Response refresh = on_io_thread(secret_, "refresh_token");
  EXPECT_TRUE(refresh.deferred);
  run_offloaded();
  ASSERT_EQ(replies.size(), 1u);
  web::Request direct =
      request("POST", bj::serialize(bj::object{
                          {"grant_type", "refresh_token"}, {"client_id", "merchant-app"}, {"client_secret", secret_}}));
  direct.remote_ip = "198.51.100.7";
  web::Response expected = service_->token(direct);
  EXPECT_EQ(replies[0].status, expected.status);
  EXPECT_EQ(replies[0].body, expected.body);
  EXPECT_EQ(replies[0].status, 400);
}

}  // namespace
}  // namespace sika::identity::testing
