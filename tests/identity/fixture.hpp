#pragma once
// The identity service on a fresh database (SQLite or PostgreSQL, by test parameter): one
// merchant, its clients and user, a clock the tests move, and helpers to drive the OAuth/OIDC
// handlers with plain web::Request values. IdentityTest's cases are spread over the files of
// tests/identity/ by topic and instantiated on both backends once (tokens_test.cpp).
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

namespace sika::identity::testing {

namespace bj = boost::json;

using ::sika::testing::admin_exec;
using ::sika::testing::with_database;

inline std::map<std::string, std::string> query_of(std::string_view location) {
  std::map<std::string, std::string> out;
  auto q = location.find('?');
  if (q == std::string_view::npos) return out;
  auto fields = web::parse_form(location.substr(q + 1));
  if (fields.ok())
    for (auto& [k, v] : *fields) out[k] = v;
  return out;
}

inline std::string html_unescape(std::string s) {
  const std::pair<std::string, std::string> ents[] = {
      {"&quot;", "\""}, {"&#39;", "'"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}};
  for (const auto& [from, to] : ents)
    for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
      s.replace(p, from.size(), to);
  return s;
}

inline web::Fields hidden_fields(const std::string& html) {
  web::Fields out;
  std::regex re("<input type=\"hidden\" name=\"([^\"]+)\" value=\"([^\"]*)\">");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator(); ++it)
    out.emplace_back(html_unescape((*it)[1]), html_unescape((*it)[2]));
  return out;
}

inline std::string form_encode(const web::Fields& f) {
  std::string out;
  for (const auto& [k, v] : f) {
    if (!out.empty()) out += "&";
    out += web::percent_encode(k) + "=" + web::percent_encode(v);
  }
  return out;
}

// "name=value" of the Set-Cookie headers of a response, as one Cookie header.
inline std::string cookies_of(const web::Response& res, std::string jar = {}) {
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

inline bj::object json_of(const web::Response& res) {
  auto v = bj::parse(res.body);
  return v.is_object() ? v.as_object() : bj::object{};
}

inline std::string oauth_code_of(const web::Response& res) {
  auto d = json_of(res);
  if (!d.contains("error")) return {};
  return std::string(d.at("error").at("details").at("error").as_string());
}

inline std::int64_t count_rows(store::Db& db, const std::string& sql) {
  std::int64_t n = -1;
  EXPECT_TRUE(db.read([&](store::Conn& c) -> Status {
                  SIKA_ASSIGN_OR_RETURN(auto row, c.query_one(sql));
                  n = row ? row->i64(0) : -1;
                  return {};
                }).ok());
  return n;
}

inline web::Response cc_token(Service& s, const std::string& client, const std::string& secret,
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

inline web::Response post_as(Service& s, web::Response (Service::*endpoint)(web::Request&), const web::Fields& form,
                             const std::string& client, const std::string& secret) {
  web::Request r;
  r.method = "POST";
  r.body = form_encode(form);
  r.headers.emplace_back("content-type", "application/x-www-form-urlencoded");
  r.headers.emplace_back("authorization", "Basic " + base64_encode(client + ":" + secret));
  r.remote_ip = "198.51.100.8";
  return (s.*endpoint)(r);
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

}  // namespace sika::identity::testing
