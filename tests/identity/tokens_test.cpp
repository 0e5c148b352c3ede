// Access tokens on both backends: client_credentials, the token endpoint's errors, revocation
// and grant changes seen on every node, the revocation cache, authentication of bearer tokens.
// Every IdentityTest case of this binary is instantiated here, on SQLite and PostgreSQL:
//   scripts/with-postgres.sh build/tests/identity/identity_test
#include "identity/fixture.hpp"

namespace sika::identity::testing {
namespace {

TEST_P(IdentityTest, ClientCredentialsTokenCarriesWhatTheGatewayNeeds) {
  auto res = token_json({{"grant_type", "client_credentials"},
                         {"client_id", "merchant-app"},
                         {"client_secret", secret_},
                         {"scope", "payments services countries providers"}});
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(res.get("Cache-Control"), "no-store");
  auto body = json_of(res);
  EXPECT_EQ(body["token_type"].as_string(), "Bearer");
  EXPECT_EQ(body["expires_in"].as_int64(), 3600);
  EXPECT_EQ(body["scope"].as_string(), "payments services countries providers");
  // The spec's five fields by default (strict RFC 6749 §4.4.3 clients: ClientCredentialsStrictMode).
  EXPECT_TRUE(body["refresh_token"].as_string().starts_with("rt_"));
  EXPECT_TRUE(looks_like_jwt(body["id_token"].as_string()));
  std::string token(body["access_token"].as_string());

  auto parsed = parse_jwt(token);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->typ, "at+jwt");
  EXPECT_EQ(parsed->alg, "ES256");
  const auto& c = parsed->payload;
  EXPECT_EQ(c.at("iss").as_string(), kIssuer);
  EXPECT_EQ(c.at("aud").as_string(), kAudience);
  EXPECT_EQ(c.at("sub").as_string(), "merchant-app");
  EXPECT_EQ(c.at("client_id").as_string(), "merchant-app");
  EXPECT_EQ(c.at("exp").as_int64() - c.at("iat").as_int64(), 3600);
  EXPECT_FALSE(c.at("jti").as_string().empty());

  for (bool x : {true, false}) {
    auto p = auth_with(*service_, token, x);
    ASSERT_TRUE(p.ok()) << bj::serialize(p.error().details);
    EXPECT_EQ(p->client_id, "merchant-app");
    EXPECT_EQ(p->merchant, "MCH-CM-0001");
    EXPECT_EQ(p->merchant_id, merchant_id_);
    EXPECT_EQ(p->user_tier, 2);
    EXPECT_EQ(p->countries, std::vector<std::string>{"CMR"});
    EXPECT_FALSE(p->admin);
    EXPECT_EQ(p->environment, "sandbox");
    EXPECT_TRUE(p->has_scope("providers"));
    EXPECT_TRUE(p->grants_country("CMR"));
    EXPECT_FALSE(p->grants_country("CIV"));
  }

  // Form body with HTTP Basic; scope omitted gives the client's API scopes.
  web::Request r = request("POST", "grant_type=client_credentials", "application/x-www-form-urlencoded");
  r.headers.emplace_back("authorization", "Basic " + base64_encode("merchant-app:" + secret_));
  auto res2 = service_->token(r);
  ASSERT_EQ(res2.status, 200) << res2.body;
  EXPECT_EQ(json_of(res2)["scope"].as_string(), "payments services countries providers");
}

TEST_P(IdentityTest, TokenEndpointErrorsUseTheEnvelopeWithOAuthCodes) {
  auto empty = request("POST", "");
  auto res = service_->token(empty);
  EXPECT_EQ(res.status, 400);
  EXPECT_EQ(json_of(res)["message"].as_string(), "empty_data");
  EXPECT_EQ(json_of(res)["success"].as_bool(), false);
  EXPECT_EQ(res.get("Cache-Control"), "no-store");
  auto garbage = request("POST", "{not json");
  EXPECT_EQ(service_->token(garbage).status, 400);
  EXPECT_EQ(json_of(service_->token(garbage))["message"].as_string(), "empty_data");

  res = token_json({{"grant_type", "client_credentials"}, {"client_id", "merchant-app"}, {"client_secret", "wrong"}});
  EXPECT_EQ(res.status, 401);
  EXPECT_EQ(json_of(res)["message"].as_string(), "invalid_client");
  EXPECT_EQ(oauth_code_of(res), "invalid_client");
  EXPECT_TRUE(res.get("WWW-Authenticate").empty());

  web::Request basic = request("POST", "grant_type=client_credentials", "application/x-www-form-urlencoded");
  basic.headers.emplace_back("authorization", "Basic " + base64_encode("merchant-app:nope"));
  res = service_->token(basic);
  EXPECT_EQ(res.status, 401);
  EXPECT_TRUE(res.get("WWW-Authenticate").starts_with("Basic"));

  res = token_json({{"grant_type", "client_credentials"}, {"client_id", "nobody"}, {"client_secret", "x"}});
  EXPECT_EQ(res.status, 401);
  res = token_json({{"grant_type", "password"}, {"client_id", "merchant-app"}, {"client_secret", secret_}});
  EXPECT_EQ(res.status, 400);
  EXPECT_EQ(oauth_code_of(res), "unsupported_grant_type");
  res = token_json({{"client_id", "merchant-app"}});
  EXPECT_EQ(oauth_code_of(res), "invalid_request");
  res = token_json({{"grant_type", "client_credentials"},
                    {"client_id", "merchant-app"},
                    {"client_secret", secret_},
                    {"scope", "payments wallet"}});
  EXPECT_EQ(oauth_code_of(res), "invalid_scope");
  res = token_json({{"grant_type", "client_credentials"},
                    {"client_id", "merchant-app"},
                    {"client_secret", secret_},
                    {"scope", "openid"}});
  EXPECT_EQ(oauth_code_of(res), "invalid_scope");
  res = token_json({{"grant_type", "client_credentials"}, {"client_id", "spa"}});
  EXPECT_EQ(res.status, 401);  // public clients cannot use client_credentials
  res = token_json({{"grant_type", "client_credentials"}, {"client_id", "merchant-app"}, {"client_secret", 5}});
  EXPECT_EQ(oauth_code_of(res), "invalid_request");
  auto xml = request("POST", "<a/>", "text/xml");
  EXPECT_EQ(json_of(service_->token(xml))["message"].as_string(), "empty_data");
}

TEST_P(IdentityTest, RevokedAccessTokenIsRefusedAtOnceOnEveryNode) {
  other_ = make_service();  // a second node on the same database
  std::string token = client_token();
  ASSERT_TRUE(auth_with(*service_, token).ok());
  ASSERT_TRUE(auth_with(*other_, token).ok());  // both caches now hold it

  // Another client cannot revoke it: refused (RFC 7009 §2.1); unknown tokens answer 200.
  auto second = create(ClientSpec{.client_id = "second-app", .countries = {"CIV"}});
  bj::object b{{"token", token}, {"client_id", "second-app"}, {"client_secret", second.client_secret}};
  auto r = request("POST", bj::serialize(b));
  auto refused = service_->revoke(r);
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(oauth_code_of(refused), "unauthorized_client");
  EXPECT_TRUE(auth_with(*other_, token).ok());
  EXPECT_EQ(revoke("not-a-token").status, 200);
  auto bad = revoke(token, "merchant-app", "wrong-secret");
  EXPECT_EQ(bad.status, 401);
  auto empty = request("POST", "");
  EXPECT_EQ(json_of(service_->revoke(empty))["message"].as_string(), "empty_data");

  auto res = revoke(token);
  EXPECT_EQ(res.status, 200) << res.body;
  for (Service* s : {service_.get(), other_.get()}) {
    auto p = auth_with(*s, token);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().kind, sika::ErrorKind::unauthenticated);
    EXPECT_EQ(p.error().code, "invalid_token");
  }
  EXPECT_EQ(revoke(token).status, 200);  // idempotent
  // Other tokens of the same client still work.
  EXPECT_TRUE(auth_with(*other_, client_token()).ok());
}

TEST_P(IdentityTest, AMerchantsNewGrantsReachNewTokensAndRefuseTheOldOnesOnEveryNode) {
  other_ = make_service();  // a second node on the same database
  auto staff = create_user(*db_,
                           UserSpec{.email = "staff@shop.test",
                                    .password = "correct horse battery",
                                    .user_tier = 2,
                                    .countries = {"CMR", "SEN"},
                                    .merchant_id = merchant_id_},
                           clock_.load());
  ASSERT_TRUE(staff.ok());
  const std::string before = client_token();
  auto old_claims = auth_with(*service_, before);
  ASSERT_TRUE(old_claims.ok());
  EXPECT_TRUE(old_claims->grants_country("CMR"));
  EXPECT_EQ(old_claims->grants_version, 0);
  // The second node's token endpoint caches the client record as it is now.
  auto other_token = [&] {
    auto r = request("POST", bj::serialize(bj::object{{"grant_type", "client_credentials"},
                                                      {"client_id", "merchant-app"},
                                                      {"client_secret", secret_},
                                                      {"scope", "payments"}}));
    auto res = other_->token(r);
    EXPECT_EQ(res.status, 200) << res.body;
    return std::string(json_of(res)["access_token"].as_string());
  };
  ASSERT_TRUE(auth_with(*other_, other_token()).ok());

  // CMR removed, CIV added, tier 3: the merchant, its client and its staff follow in one unit.
  std::optional<merchant::Merchant> was;
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(was, set_merchant_grants(c, merchant_id_, {"CIV"}, 3, clock_.load()));
                   return {};
                 })
                  .ok());
  EXPECT_EQ(was->countries, std::vector<std::string>{"CMR"});
  EXPECT_EQ(was->tier, 1);
  std::optional<Client> client;
  std::optional<User> user;
  std::optional<merchant::Merchant> now;
  ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(client, find_client(c, "merchant-app"));
                   SIKA_ASSIGN_OR_RETURN(user, find_user_by_id(c, staff->id));
                   SIKA_ASSIGN_OR_RETURN(now, merchant::find_by_id(c, merchant_id_));
                   return {};
                 })
                  .ok());
  EXPECT_EQ(now->countries, std::vector<std::string>{"CIV"});
  EXPECT_EQ(now->tier, 3);
  EXPECT_EQ(client->countries, std::vector<std::string>{"CIV"});
  EXPECT_EQ(client->user_tier, 3);
  EXPECT_EQ(user->countries, (std::vector<std::string>{"SEN", "CIV"}));  // SEN was its own: kept
  EXPECT_EQ(user->user_tier, 3);
  // An unknown merchant is 404 and changes nothing.
  auto missing = db_->write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto m, set_merchant_grants(c, merchant_id_ + 100, {"CIV"}, 1, clock_.load()));
    (void)m;
    return {};
  });
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::not_found);

  // The token issued before is refused on both nodes (its claims are stale), at once.
  for (Service* s : {service_.get(), other_.get()}) {
    auto p = auth_with(*s, before);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().code, "invalid_token");
  }
  // So is one the second node issues from its cached, older record.
  EXPECT_FALSE(auth_with(*service_, other_token()).ok());
  // A token issued from the new record carries the change (the changing node drops its cache).
  service_->invalidate_client_cache();
  const std::string after = client_token();
  auto p = auth_with(*other_, after);
  ASSERT_TRUE(p.ok()) << bj::serialize(p.error().details);
  EXPECT_EQ(p->countries, std::vector<std::string>{"CIV"});
  EXPECT_EQ(p->user_tier, 3);
  EXPECT_FALSE(p->grants_country("CMR"));
  EXPECT_TRUE(p->grants_country("CIV"));
  EXPECT_EQ(p->grants_version, now->grants_version);
  // Disabling the merchant refuses its tokens too, not only new ones.
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(bool found, merchant::set_active(c, merchant_id_, false));
                   EXPECT_TRUE(found);
                   return {};
                 })
                  .ok());
  EXPECT_FALSE(auth_with(*service_, after).ok());
  EXPECT_FALSE(auth_with(*other_, after).ok());
}

TEST_P(IdentityTest, BoundedRevocationCacheIsImmediateLocallyAndBoundedElsewhere) {
  Options o = options();
  o.token_cache_seconds = 2;
  service_ = std::make_unique<Service>(*db_, o);
  other_ = std::make_unique<Service>(*db_, o);
  std::string token = client_token();
  ASSERT_TRUE(auth_with(*service_, token).ok());
  ASSERT_TRUE(auth_with(*other_, token).ok());
  ASSERT_EQ(revoke(token).status, 200);
  EXPECT_FALSE(auth_with(*service_, token).ok());  // the node that revoked: at once
  EXPECT_TRUE(auth_with(*other_, token).ok());     // another node: within the bound
  clock_ += 2000;
  EXPECT_FALSE(auth_with(*other_, token).ok());
}

TEST_P(IdentityTest, AuthenticateRefusesMissingExpiredAndForeignTokens) {
  web::Request none = request("GET", "", "");
  auto p = service_->authenticate(none);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().kind, sika::ErrorKind::unauthenticated);
  EXPECT_EQ(p.error().code, "unauthorized");
  EXPECT_FALSE(auth_with(*service_, "abc.def.ghi").ok());

  std::string token = client_token();
  // Signed by a key the service does not know.
  auto foreign = Jwk::generate(Alg::ES256, "foreign");
  auto parsed = parse_jwt(token);
  std::string payload = bj::serialize(parsed->payload);
  EXPECT_FALSE(auth_with(*service_, (*foreign)->sign((*foreign)->access_header(), payload)).ok());
  // alg none
  std::string none_token = base64url_encode(R"({"alg":"none","typ":"at+jwt"})") + "." + base64url_encode(payload) + ".";
  EXPECT_FALSE(auth_with(*service_, none_token).ok());

  ASSERT_TRUE(auth_with(*service_, token).ok());
  clock_ += 3601 * 1000LL;
  auto expired = auth_with(*service_, token);
  ASSERT_FALSE(expired.ok());
  EXPECT_EQ(expired.error().code, "invalid_token");
}

TEST_P(IdentityTest, IdTokensAreNotAcceptedAsAccessTokens) {
  auto [res, jar] = login();
  ASSERT_EQ(res.status, 303) << res.body;
  auto q = query_of(res.get("Location"));
  auto tok = exchange(q["code"]);
  ASSERT_EQ(tok.status, 200) << tok.body;
  std::string id_token(json_of(tok)["id_token"].as_string());
  EXPECT_FALSE(auth_with(*service_, id_token).ok());  // typ JWT, aud = client
}

INSTANTIATE_TEST_SUITE_P(Backends, IdentityTest, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace sika::identity::testing
