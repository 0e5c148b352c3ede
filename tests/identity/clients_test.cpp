// Keys and clients on both backends: key rotation, introspection, client secrets and
// validation, logout redirects, discovery.
#include "identity/fixture.hpp"

namespace sika::identity::testing {
namespace {

TEST_P(IdentityTest, KeyRotationKeepsOldTokensValid) {
  std::string before = client_token();
  auto kid_before = parse_jwt(before)->kid;
  auto rotated = rotate_keys(*db_, kPepper, service_->key_publish_seconds(), clock_.load());
  ASSERT_TRUE(rotated.ok());
  EXPECT_EQ(rotated->size(), 4u);
  ASSERT_TRUE(service_->reload_keys().ok());
  std::string after = client_token();
  EXPECT_NE(parse_jwt(after)->kid, kid_before);
  EXPECT_TRUE(auth_with(*service_, before).ok());
  EXPECT_TRUE(auth_with(*service_, after).ok());
  web::Request r = request("GET", "", "");
  auto jwks = bj::parse(service_->jwks(r).body);
  EXPECT_EQ(jwks.at("keys").as_array().size(), 4u);

  // A node that has not reloaded yet learns the new kid on first sight.
  other_ = make_service();
  EXPECT_TRUE(auth_with(*other_, after).ok());

  // Once the publication window is over, maintenance drops the retired keys.
  clock_ += (service_->key_publish_seconds() + 1) * 1000LL;
  ASSERT_TRUE(service_->run_maintenance().ok());
  EXPECT_EQ(bj::parse(service_->jwks(r).body).at("keys").as_array().size(), 2u);
}

TEST_P(IdentityTest, IntrospectionFollowsRevocationAndOwnership) {
  std::string token = client_token();
  auto introspect = [&](const std::string& client, const std::string& secret, const std::string& t) {
    web::Request r = request("POST", form_encode({{"token", t}}), "application/x-www-form-urlencoded");
    r.headers.emplace_back("authorization", "Basic " + base64_encode(client + ":" + secret));
    return service_->introspect(r);
  };
  auto res = introspect("merchant-app", secret_, token);
  ASSERT_EQ(res.status, 200) << res.body;
  auto body = json_of(res);
  EXPECT_TRUE(body["active"].as_bool());
  EXPECT_EQ(body["client_id"].as_string(), "merchant-app");
  EXPECT_EQ(body["merchant"].as_string(), "MCH-CM-0001");
  auto other = create(ClientSpec{.client_id = "other-app"});
  EXPECT_FALSE(json_of(introspect("other-app", other.client_secret, token))["active"].as_bool());
  auto admin = create(ClientSpec{.client_id = "ops", .admin = true});
  EXPECT_TRUE(json_of(introspect("ops", admin.client_secret, token))["active"].as_bool());
  EXPECT_EQ(introspect("merchant-app", "bad", token).status, 401);
  ASSERT_EQ(revoke(token).status, 200);
  EXPECT_FALSE(json_of(introspect("merchant-app", secret_, token))["active"].as_bool());
  EXPECT_FALSE(json_of(introspect("merchant-app", secret_, "garbage"))["active"].as_bool());
}

TEST_P(IdentityTest, SecretRotationAndDisabledClients) {
  std::string old_secret = secret_;
  std::string fresh;
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(fresh, rotate_client_secret(c, kPepper, "merchant-app", clock_.load()));
                   return {};
                 })
                  .ok());
  EXPECT_GE(fresh.size(), 43u);
  service_->invalidate_client_cache();
  secret_ = fresh;
  client_token();
  auto res =
      token_json({{"grant_type", "client_credentials"}, {"client_id", "merchant-app"}, {"client_secret", old_secret}});
  EXPECT_EQ(res.status, 401);

  // Another node keeps its cached record at most client_cache_seconds.
  ASSERT_TRUE(
      db_->write([&](store::Conn& c) { return set_client_active(c, "merchant-app", false, clock_.load()); }).ok());
  clock_ += 6000;
  res = token_json({{"grant_type", "client_credentials"}, {"client_id", "merchant-app"}, {"client_secret", fresh}});
  EXPECT_EQ(res.status, 401);
}

TEST_P(IdentityTest, ClientValidation) {
  std::optional<Error> err;
  auto attempt = [&](const ClientSpec& spec) {
    err.reset();
    (void)db_->write([&](store::Conn& c) -> Status {
      auto r = create_client(c, kPepper, spec, clock_.load());
      if (!r) err = r.error();
      return {};
    });
    return err.has_value();
  };
  EXPECT_TRUE(attempt(ClientSpec{.client_id = "merchant-app"}));  // duplicate
  EXPECT_EQ(err->kind, sika::ErrorKind::conflict);
  EXPECT_TRUE(attempt(ClientSpec{.scopes = {"root"}}));
  EXPECT_TRUE(attempt(ClientSpec{.confidential = false}));  // needs redirect URIs
  EXPECT_TRUE(attempt(ClientSpec{.confidential = false, .redirect_uris = {"https://x.example/cb#f"}}));
  EXPECT_TRUE(attempt(ClientSpec{.redirect_uris = {"http://x.example/cb"}, .environment = "prod"}));
  EXPECT_TRUE(attempt(ClientSpec{.countries = {"cm"}}));
  EXPECT_TRUE(attempt(ClientSpec{.merchant_id = 999999}));
  EXPECT_FALSE(attempt(ClientSpec{.confidential = false, .redirect_uris = {"com.example.app:/cb"}}));
  for (const char* uri :
       {"https://x.example:0/cb", "https://x.example:99999/cb", "https://x.example:/cb", "http://127.0.0.1:65536/cb"}) {
    EXPECT_TRUE(attempt(ClientSpec{.confidential = false, .redirect_uris = {uri}})) << uri;
    if (err) EXPECT_NE(json::dump(err->details).find("invalid port"), std::string::npos) << json::dump(err->details);
  }
  EXPECT_FALSE(attempt(ClientSpec{.confidential = false, .redirect_uris = {"https://x.example:8443/cb"}}));
}

TEST_P(IdentityTest, LogoutFollowsOnlyPathsInsideTheIdentityMount) {
  auto logout_to = [&](std::string_view return_to) {
    web::Request r = request("GET", "", "");
    r.query.emplace_back("return_to", std::string(return_to));
    return service_->logout(r);
  };
  auto kept = logout_to("/auth/oauth/v2/authorize?client_id=x");
  EXPECT_EQ(kept.status, 303);
  EXPECT_EQ(kept.get("location"), "/auth/oauth/v2/authorize?client_id=x");
  for (const char* evil :
       {"/auth/../evil", "/auth/%2e%2e/evil", "/auth/.%2E/evil", "/auth/./../x", "/auth/..", "/auth/%2fevil",
        "//evil.example/", "/auth//evil.example", "https://evil.example/auth/", "/authx", "/auth/\\evil"}) {
    auto res = logout_to(evil);
    EXPECT_EQ(res.status, 200) << evil;
    EXPECT_TRUE(res.get("location").empty()) << evil;
  }
}

TEST_P(IdentityTest, DiscoveryAdvertisesEndpointsAndAlgorithms) {
  web::Request r = request("GET", "", "");
  auto d = json_of(service_->discovery(r));
  EXPECT_EQ(d["issuer"].as_string(), kIssuer);
  EXPECT_EQ(d["token_endpoint"].as_string(), std::string(kIssuer) + "/oauth/v2/token");
  EXPECT_EQ(d["jwks_uri"].as_string(), std::string(kIssuer) + "/.well-known/jwks.json");
  EXPECT_EQ(d["code_challenge_methods_supported"].as_array().size(), 1u);
  EXPECT_TRUE(d["authorization_response_iss_parameter_supported"].as_bool());
  EXPECT_EQ(d["id_token_signing_alg_values_supported"].as_array().size(), 2u);
  auto jwks = bj::parse(service_->jwks(r).body);
  EXPECT_EQ(jwks.at("keys").as_array().size(), 2u);
  for (const auto& k : jwks.at("keys").as_array()) EXPECT_FALSE(k.as_object().contains("d"));
}

}  // namespace
}  // namespace sika::identity::testing
