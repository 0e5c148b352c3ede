// The identity service: JWT signing, PKCE, key storage, and the OAuth/OIDC handlers called
// with plain web::Request values on both storage backends. PostgreSQL needs SIKA_TEST_PG_DSN:
//   scripts/with-postgres.sh build/tests/identity/identity_test
#include <gtest/gtest.h>

#include <libpq-fe.h>
#include "core/json.hpp"

#include <boost/json.hpp>

#include <atomic>
#include <filesystem>
#include <latch>
#include <regex>
#include <thread>

#include "core/crypto.hpp"
#include "core/random.hpp"
#include "core/time.hpp"
#include "identity/internal.hpp"
#include "identity/issuer.hpp"
#include "identity/jwt.hpp"
#include "identity/keys.hpp"
#include "identity/model.hpp"
#include "identity/pages.hpp"
#include "identity/service.hpp"
#include "identity/store.hpp"
#include "merchant/merchant.hpp"
#include "store/db.hpp"
#include "support/test_db.hpp"
#include "web/router.hpp"

namespace sika::identity {
namespace {

namespace bj = boost::json;

// ---------------------------------------------------------------------------------------------
// pure units

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

// ---------------------------------------------------------------------------------------------
// service tests on both backends

std::string with_database(const std::string& dsn, const std::string& name) {
  std::size_t host = dsn.find("://");
  std::size_t slash = dsn.find('/', host + 3);
  std::size_t query = dsn.find('?', host + 3);
  std::string tail = query == std::string::npos ? "" : dsn.substr(query);
  std::string head = slash == std::string::npos || (query != std::string::npos && slash > query)
                         ? dsn.substr(0, query == std::string::npos ? dsn.size() : query)
                         : dsn.substr(0, slash);
  return head + "/" + name + tail;
}

void admin_exec(const std::string& dsn, const std::string& sql) {
  PGconn* c = PQconnectdb(dsn.c_str());
  ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
  PGresult* r = PQexec(c, sql.c_str());
  PQclear(r);
  PQfinish(c);
}

std::map<std::string, std::string> query_of(std::string_view location) {
  std::map<std::string, std::string> out;
  auto q = location.find('?');
  if (q == std::string_view::npos) return out;
  auto fields = web::parse_form(location.substr(q + 1));
  if (fields.ok())
    for (auto& [k, v] : *fields) out[k] = v;
  return out;
}

std::string html_unescape(std::string s) {
  const std::pair<std::string, std::string> ents[] = {
      {"&quot;", "\""}, {"&#39;", "'"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}};
  for (const auto& [from, to] : ents)
    for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
      s.replace(p, from.size(), to);
  return s;
}

web::Fields hidden_fields(const std::string& html) {
  web::Fields out;
  std::regex re("<input type=\"hidden\" name=\"([^\"]+)\" value=\"([^\"]*)\">");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator(); ++it)
    out.emplace_back(html_unescape((*it)[1]), html_unescape((*it)[2]));
  return out;
}

std::string form_encode(const web::Fields& f) {
  std::string out;
  for (const auto& [k, v] : f) {
    if (!out.empty()) out += "&";
    out += web::percent_encode(k) + "=" + web::percent_encode(v);
  }
  return out;
}

// "name=value" of the Set-Cookie headers of a response, as one Cookie header.
std::string cookies_of(const web::Response& res, std::string jar = {}) {
  for (const auto& [k, v] : res.headers) {
    if (k != "Set-Cookie") continue;
    std::string nv = v.substr(0, v.find(';'));
    std::string name = nv.substr(0, nv.find('='));
    // replace an existing cookie of the same name
    std::string rebuilt;
    std::size_t pos = 0;
    while (pos < jar.size()) {
      std::size_t end = jar.find("; ", pos);
      if (end == std::string::npos) end = jar.size();
      std::string item = jar.substr(pos, end - pos);
      if (item.substr(0, item.find('=')) != name) rebuilt += (rebuilt.empty() ? "" : "; ") + item;
      pos = end + 2;
    }
    jar = rebuilt + (rebuilt.empty() ? "" : "; ") + nv;
  }
  return jar;
}

bj::object json_of(const web::Response& res) {
  auto v = bj::parse(res.body);
  return v.is_object() ? v.as_object() : bj::object{};
}

std::string oauth_code_of(const web::Response& res) {
  auto d = json_of(res);
  if (!d.contains("error")) return {};
  return std::string(d.at("error").at("details").at("error").as_string());
}

class IdentityTest : public ::testing::TestWithParam<std::string> {
 protected:
  static constexpr std::string_view kIssuer = "http://127.0.0.1:9/auth";
  static constexpr std::string_view kAudience = "http://127.0.0.1:9/api";
  static constexpr std::string_view kPepper = "identity-test-pepper-0123456789abcdef";

  void SetUp() override {
    if (GetParam() == "postgres") {
      SIKA_TEST_PG_DSN_OR_END(admin_dsn_);
      database_ = "sika_identity_test_" + hex_encode(random_bytes(6));
      admin_exec(admin_dsn_, "CREATE DATABASE " + database_);
      dsn_ = with_database(admin_dsn_, database_);
    } else {
      dir_ = std::filesystem::temp_directory_path() / ("sika-identity-test-" + hex_encode(random_bytes(6)));
      std::filesystem::create_directories(dir_);
      dsn_ = "sqlite://" + (dir_ / "sika.db").string();
    }
    auto db = store::open(dsn_);
    ASSERT_TRUE(db.ok()) << bj::serialize(db.error().details);
    db_ = std::move(db).value();
    auto m = store::migrate(*db_);
    ASSERT_TRUE(m.ok()) << bj::serialize(m.error().details);
    clock_ = now_ms();
    Status st = db_->write([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(auto row,
                            c.query_one("INSERT INTO merchants (matricule, name, email, countries, environment, "
                                        "active, created_at) VALUES ('MCH-CM-0001', 'Shop', 'a@b.c', 'CMR', "
                                        "'sandbox', 1, ?) RETURNING id",
                                        {clock_.load()}));
      merchant_id_ = row->i64(0);
      return {};
    });
    ASSERT_TRUE(st.ok());
    service_ = make_service();
    auto created = create(ClientSpec{.client_id = "merchant-app",
                                     .name = "Merchant app",
                                     .confidential = true,
                                     .merchant_id = merchant_id_,
                                     .countries = {"CMR"},
                                     .user_tier = 2});
    secret_ = created.client_secret;
    auto pub = create(ClientSpec{.client_id = "spa",
                                 .name = "Dashboard",
                                 .confidential = false,
                                 .redirect_uris = {"https://app.example/cb", "http://127.0.0.1/callback"},
                                 .scopes = {"openid", "profile", "email", "offline_access", "payments"}});
    (void)pub;
    auto user = create_user(*db_,
                            UserSpec{.email = "Ada@Example.com",
                                     .password = "correct horse battery",
                                     .name = "Ada",
                                     .user_tier = 3,
                                     .countries = {"CIV"}},
                            clock_.load());
    ASSERT_TRUE(user.ok()) << bj::serialize(user.error().details);
    user_ = *user;
  }

  void TearDown() override {
    if (service_) service_->stop();
    service_.reset();
    other_.reset();
    if (db_) db_->close();
    db_.reset();
    if (!database_.empty()) admin_exec(admin_dsn_, "DROP DATABASE IF EXISTS " + database_ + " WITH (FORCE)");
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  Options options() {
    Options o;
    o.issuer = std::string(kIssuer);
    o.audience = std::string(kAudience);
    o.pepper = std::string(kPepper);
    o.max_failed_logins = 3;
    o.lockout_seconds = 60;
    o.clock = [this] { return clock_.load(); };
    return o;
  }

  std::unique_ptr<Service> make_service() { return std::make_unique<Service>(*db_, options()); }

  CreatedClient create(const ClientSpec& spec) {
    std::optional<CreatedClient> out;
    Status st = db_->write([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(auto cc, create_client(c, kPepper, spec, clock_.load()));
      out = std::move(cc);
      return {};
    });
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : bj::serialize(st.error().details));
    return out ? *out : CreatedClient{};
  }

  static web::Request request(std::string method, std::string body = {},
                              std::string content_type = "application/json") {
    web::Request r;
    r.method = std::move(method);
    r.body = std::move(body);
    if (!content_type.empty()) r.headers.emplace_back("content-type", content_type);
    r.remote_ip = "198.51.100.7";
    return r;
  }

  web::Response token_json(const bj::object& body) {
    auto r = request("POST", bj::serialize(body));
    return service_->token(r);
  }

  std::string client_token(const std::string& scope = "payments countries") {
    auto res = token_json({{"grant_type", "client_credentials"},
                           {"client_id", "merchant-app"},
                           {"client_secret", secret_},
                           {"scope", scope}});
    EXPECT_EQ(res.status, 200) << res.body;
    return std::string(json_of(res)["access_token"].as_string());
  }

  Result<web::Principal> auth_with(Service& s, const std::string& token, bool x_header = true) {
    web::Request r = request("GET", "", "");
    if (x_header)
      r.headers.emplace_back("x-sp-auth-token", "Bearer " + token);
    else
      r.headers.emplace_back("authorization", "Bearer " + token);
    return s.authenticate(r);
  }

  web::Response revoke(const std::string& token, const std::string& client = "merchant-app",
                       const std::string& secret = "") {
    bj::object b{{"token", token}, {"client_id", client}};
    if (client == "merchant-app") b["client_secret"] = secret.empty() ? secret_ : secret;
    auto r = request("POST", bj::serialize(b));
    return service_->revoke(r);
  }

  static constexpr std::string_view kVerifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";

  web::Fields authz_params(std::string scope = "openid profile email offline_access") {
    return {{"response_type", "code"},
            {"client_id", "spa"},
            {"redirect_uri", "https://app.example/cb"},
            {"scope", std::move(scope)},
            {"state", "st-123"},
            {"nonce", "n-456"},
            {"code_challenge", pkce_s256(kVerifier)},
            {"code_challenge_method", "S256"}};
  }

  web::Response get_authorize(const web::Fields& params, const std::string& cookies = "") {
    web::Request r = request("GET", "", "");
    r.query = params;
    if (!cookies.empty()) r.headers.emplace_back("cookie", cookies);
    r.headers.emplace_back("accept-language", "en-GB,en;q=0.9");
    return service_->authorize(r);
  }

  web::Response submit(const web::Fields& fields, const std::string& cookies) {
    web::Request r = request("POST", form_encode(fields), "application/x-www-form-urlencoded");
    r.headers.emplace_back("cookie", cookies);
    return service_->authorize_submit(r);
  }

  // Drives the login form; returns the redirect response and the cookie jar.
  std::pair<web::Response, std::string> login(const std::string& password = "correct horse battery",
                                              web::Fields params = {}) {
    if (params.empty()) params = authz_params();
    auto page = get_authorize(params);
    EXPECT_EQ(page.status, 200) << page.body;
    std::string jar = cookies_of(page);
    auto fields = hidden_fields(page.body);
    fields.emplace_back("email", "ada@example.com");
    fields.emplace_back("password", password);
    fields.emplace_back("action", "approve");
    auto res = submit(fields, jar);
    return {res, cookies_of(res, jar)};
  }

  // One sign-in attempt through the form: `email`/`password` from `address`, with `jar` (cookies,
  // e.g. a device cookie) added to the page's own.
  web::Response attempt(const std::string& email, const std::string& password, const std::string& address,
                        const std::string& jar = "") {
    auto page = get_authorize(authz_params());
    EXPECT_EQ(page.status, 200) << page.body;
    std::string cookies = cookies_of(page, jar);
    auto fields = hidden_fields(page.body);
    fields.emplace_back("email", email);
    fields.emplace_back("password", password);
    fields.emplace_back("action", "approve");
    web::Request r = request("POST", form_encode(fields), "application/x-www-form-urlencoded");
    r.headers.emplace_back("cookie", cookies);
    r.remote_ip = address;
    return service_->authorize_submit(r);
  }

  web::Response exchange(const std::string& code, std::string verifier = std::string(kVerifier)) {
    web::Request r = request("POST",
                             form_encode({{"grant_type", "authorization_code"},
                                          {"code", code},
                                          {"redirect_uri", "https://app.example/cb"},
                                          {"client_id", "spa"},
                                          {"code_verifier", verifier}}),
                             "application/x-www-form-urlencoded");
    return service_->token(r);
  }

  web::Response refresh(const std::string& token) {
    web::Request r =
        request("POST", form_encode({{"grant_type", "refresh_token"}, {"refresh_token", token}, {"client_id", "spa"}}),
                "application/x-www-form-urlencoded");
    return service_->token(r);
  }

  std::string admin_dsn_, database_, dsn_;
  std::filesystem::path dir_;
  std::unique_ptr<store::Db> db_;
  std::atomic<std::int64_t> clock_{0};
  std::int64_t merchant_id_ = 0;
  std::unique_ptr<Service> service_;
  std::unique_ptr<Service> other_;
  std::string secret_;
  User user_;
};

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

// ---------------------------------------------------------------------------------------------
// the token issuer, client_credentials refresh tokens and ID tokens, revocation ownership

std::int64_t count_rows(store::Db& db, const std::string& sql) {
  std::int64_t n = -1;
  EXPECT_TRUE(db.read([&](store::Conn& c) -> Status {
                  SIKA_ASSIGN_OR_RETURN(auto row, c.query_one(sql));
                  n = row ? row->i64(0) : -1;
                  return {};
                }).ok());
  return n;
}

web::Response cc_token(Service& s, const std::string& client, const std::string& secret,
                       const std::string& scope = "") {
  bj::object b{{"grant_type", "client_credentials"}, {"client_id", client}, {"client_secret", secret}};
  if (!scope.empty()) b["scope"] = scope;
  web::Request r;
  r.method = "POST";
  r.body = bj::serialize(b);
  r.headers.emplace_back("content-type", "application/json");
  r.remote_ip = "198.51.100.8";
  return s.token(r);
}

web::Response post_as(Service& s, web::Response (Service::*endpoint)(web::Request&), const web::Fields& form,
                      const std::string& client, const std::string& secret) {
  web::Request r;
  r.method = "POST";
  r.body = form_encode(form);
  r.headers.emplace_back("content-type", "application/x-www-form-urlencoded");
  r.headers.emplace_back("authorization", "Basic " + base64_encode(client + ":" + secret));
  r.remote_ip = "198.51.100.8";
  return (s.*endpoint)(r);
}

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

INSTANTIATE_TEST_SUITE_P(Backends, IdentityTest, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace sika::identity
