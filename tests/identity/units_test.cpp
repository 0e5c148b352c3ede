// Identity units without a database: JWT signing and parsing, PKCE, sealed keys, the client and
// grant model, and the pages' texts.
#include "identity/fixture.hpp"

namespace sika::identity::testing {
namespace {

TEST(Jwt, SignsAndVerifiesBothAlgorithms) {
  for (Alg alg : {Alg::ES256, Alg::RS256}) {
    auto key = Jwk::generate(alg, "k1");
    ASSERT_TRUE(key.ok());
    std::string token = (*key)->sign((*key)->access_header(), R"({"sub":"a","n":1})");
    ASSERT_FALSE(token.empty());
    auto parsed = parse_jwt(token);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(parsed->alg, alg_name(alg));
    EXPECT_EQ(parsed->typ, "at+jwt");
    EXPECT_EQ(parsed->kid, "k1");
    EXPECT_EQ(parsed->payload.at("sub").as_string(), "a");
    EXPECT_TRUE((*key)->verify(parsed->signing_input, parsed->signature));
    if (alg == Alg::ES256) {
      EXPECT_EQ(parsed->signature.size(), 64u);  // raw r||s, not DER
    }

    // Tampered payload, and another key of the same algorithm, fail.
    std::string tampered = token;
    std::size_t dot = tampered.find('.');
    tampered[dot + 2] = tampered[dot + 2] == 'A' ? 'B' : 'A';
    auto tp = parse_jwt(tampered);
    if (tp.ok()) {
      EXPECT_FALSE((*key)->verify(tp->signing_input, tp->signature));
    }
    auto other = Jwk::generate(alg, "k2");
    EXPECT_FALSE((*other)->verify(parsed->signing_input, parsed->signature));

    // The PEM round trip gives the same key.
    auto reloaded = Jwk::from_private_pem(alg, "k1", (*key)->private_pem());
    ASSERT_TRUE(reloaded.ok());
    EXPECT_TRUE((*reloaded)->verify(parsed->signing_input, parsed->signature));
    EXPECT_EQ(bj::serialize((*reloaded)->public_jwk()), bj::serialize((*key)->public_jwk()));
    auto jwk = (*key)->public_jwk();
    EXPECT_EQ(jwk.at("kid").as_string(), "k1");
    EXPECT_EQ(jwk.at("use").as_string(), "sig");
    if (alg == Alg::ES256) {
      EXPECT_EQ(jwk.at("crv").as_string(), "P-256");
      EXPECT_EQ(jwk.at("x").as_string().size(), 43u);
    } else {
      EXPECT_EQ(jwk.at("e").as_string(), "AQAB");
    }
    // A key of the wrong type is refused.
    EXPECT_FALSE(Jwk::from_private_pem(alg == Alg::ES256 ? Alg::RS256 : Alg::ES256, "x", (*key)->private_pem()).ok());
  }
}

TEST(Jwt, RefusesMalformedTokens) {
  EXPECT_FALSE(parse_jwt("").ok());
  EXPECT_FALSE(parse_jwt("a.b").ok());
  EXPECT_FALSE(parse_jwt("a.b.c.d").ok());
  EXPECT_FALSE(parse_jwt("e30.e30.!!").ok());
  EXPECT_FALSE(parse_jwt(base64url_encode("[]") + "." + base64url_encode("{}") + ".").ok());
  EXPECT_TRUE(parse_jwt(base64url_encode("{}") + "." + base64url_encode("{}") + ".").ok());
  EXPECT_FALSE(parse_jwt(base64url_encode(R"({"crit":["x"]})") + "." + base64url_encode("{}") + ".").ok());
  EXPECT_FALSE(parse_alg("none").has_value());
  EXPECT_FALSE(parse_alg("HS256").has_value());
}

TEST(Jwt, WriterEscapesAndHalfHash) {
  std::string out;
  JsonWriter w(out);
  w.begin();
  w.str("a", "q\"\\\n\x01é");
  w.num("n", -5);
  w.boolean("b", true);
  w.str_array("l", {"x", "y"});
  w.end();
  auto v = bj::parse(out);
  EXPECT_EQ(v.at("a").as_string(), "q\"\\\n\x01é");
  EXPECT_EQ(v.at("n").as_int64(), -5);
  EXPECT_EQ(v.at("l").as_array().size(), 2u);
  // Every character that needs escaping, at every offset of the 8-byte scan, and UTF-8 bytes.
  for (const std::string& special :
       std::vector<std::string>{"\"", "\\", "\n", std::string(1, '\0'), "\x1f", "\x7f", "é"}) {
    for (std::size_t at = 0; at <= 20; ++at) {
      std::string text = std::string(at, 'a') + special + std::string(20 - at, 'b');
      std::string json;
      JsonWriter jw(json);
      jw.begin();
      jw.str("k", text);
      jw.end();
      EXPECT_EQ(bj::parse(json).at("k").as_string(), text) << at;
    }
  }
  // OIDC Core: at_hash is the left half of SHA-256, base64url (16 bytes -> 22 chars).
  EXPECT_EQ(half_hash("abc").size(), 22u);
  EXPECT_EQ(half_hash("abc"), base64url_encode(crypto::sha256("abc").substr(0, 16)));
}

TEST(Pkce, MatchesRfc7636AppendixB) {
  EXPECT_EQ(pkce_s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
  EXPECT_TRUE(valid_pkce_verifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"));
  EXPECT_FALSE(valid_pkce_verifier("short"));
  EXPECT_FALSE(valid_pkce_verifier(std::string(129, 'a')));
  EXPECT_FALSE(valid_pkce_verifier(std::string(42, 'a') + "+"));
  EXPECT_TRUE(valid_pkce_verifier(std::string(43, '~')));
}

TEST(Keys, SealedPrivateKeysOpenOnlyWithTheSameSecret) {
  std::string sealed = seal_private_key("pepper-one", "PEM DATA");
  EXPECT_TRUE(sealed.starts_with("v1:"));
  EXPECT_EQ(sealed.find("PEM DATA"), std::string::npos);
  auto opened = open_private_key("pepper-one", sealed);
  ASSERT_TRUE(opened.ok());
  EXPECT_EQ(*opened, "PEM DATA");
  EXPECT_FALSE(open_private_key("pepper-two", sealed).ok());
  EXPECT_FALSE(open_private_key("pepper-one", "v1:garbage").ok());
}

TEST(Model, ListsAndRedirectUriMatching) {
  EXPECT_EQ(split_list("  a b,c  a "), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(join_list({"a", "b"}), "a b");
  Client c;
  c.redirect_uris = {"https://app.example/cb", "http://127.0.0.1/callback"};
  EXPECT_TRUE(c.redirect_uri_registered("https://app.example/cb"));
  EXPECT_FALSE(c.redirect_uri_registered("https://app.example/cb/"));
  EXPECT_FALSE(c.redirect_uri_registered("https://app.example/cb?x=1"));
  EXPECT_FALSE(c.redirect_uri_registered("https://evil.example/cb"));
  // RFC 8252 §7.3: any port on a registered loopback URI.
  EXPECT_TRUE(c.redirect_uri_registered("http://127.0.0.1:53123/callback"));
  EXPECT_FALSE(c.redirect_uri_registered("http://127.0.0.1:53123/other"));
  EXPECT_FALSE(c.redirect_uri_registered("http://127.0.0.1:53123/callback#frag"));
}

TEST(Model, MerchantGrantsNeedEnabledCountriesOfTheCatalogAndATierInRange) {
  auto enabled = [](std::string_view code) { return code == "CMR" || code == "CIV"; };
  EXPECT_TRUE(check_merchant_grants({"CMR", "CIV"}, 0, enabled).empty());
  EXPECT_TRUE(check_merchant_grants({"CIV"}, 100, enabled).empty());
  auto problem = [&](const std::vector<std::string>& countries, std::int64_t tier, std::string_view field) {
    auto errors = check_merchant_grants(countries, tier, enabled);
    auto it = errors.details().find(field);
    return it == errors.details().end() ? std::string() : std::string(it->value().as_string());
  };
  EXPECT_EQ(problem({}, 1, "countries"), "at least one ISO alpha-3 code");
  EXPECT_EQ(problem({"cmr"}, 1, "countries"), "must be ISO alpha-3 codes in upper case, e.g. CMR,CIV");
  EXPECT_EQ(problem({"CMR", "SEN"}, 1, "countries"), "SEN is not an enabled country of the catalog");
  EXPECT_EQ(problem({"CMR", "CMR"}, 1, "countries"), "CMR is given twice");
  EXPECT_EQ(problem({"CMR"}, 101, "tier"), "must be an integer between 0 and 100");
  EXPECT_EQ(problem({"CMR"}, -1, "tier"), "must be an integer between 0 and 100");
  EXPECT_EQ(problem({"CMR"}, -1, "countries"), "");
}

TEST(Pages, EveryTextExistsInBothLanguagesAndIsEscaped) {
  for (std::string_view key :
       {"title",        "allow",          "deny",           "bad_credentials", "locked",
        "csrf",         "err_client",     "err_client_id",  "err_redirect",    "err_redirect_required",
        "err_retry",    "scope_payments", "scope_services", "scope_countries", "scope_providers",
        "scope_openid", "scope_profile",  "scope_email",    "scope_phone",     "scope_offline_access",
        "signup_title", "signed_out"}) {
    EXPECT_NE(pages::text(i18n::Locale::fr, key), key);
    EXPECT_NE(pages::text(i18n::Locale::en, key), key);
    EXPECT_NE(pages::text(i18n::Locale::fr, key), pages::text(i18n::Locale::en, key));
  }
  pages::LoginView v;
  v.client_name = "<script>x</script>";
  v.hidden = {{"state", "\"><b>"}};
  std::string html = pages::login(v);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_EQ(html.find("\"><b>"), std::string::npos);
  EXPECT_NE(html.find("lang=\"fr\""), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);  // no external asset
}

}  // namespace
}  // namespace sika::identity::testing
