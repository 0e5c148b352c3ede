// The webhooks component: signing (Standard Webhooks vector), sealed secrets, the retry
// schedule, the SSRF guard, and, on both backends, endpoints, fan-out, lease claiming,
// retries, 410, auto-disable, rotation, redelivery, the threaded worker and the handlers.
// PostgreSQL needs SIKA_TEST_PG_DSN (an admin DSN; each test creates and drops a database).
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include "core/json.hpp"

#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "core/random.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "merchant/merchant.hpp"
#include "store/db.hpp"
#include "store/outbox.hpp"
#include "support/test_db.hpp"
#include "web/address_policy.hpp"
#include "web/client.hpp"
#include "web/envelope.hpp"
#include "webhooks/model.hpp"
#include "webhooks/queue.hpp"
#include "webhooks/registry.hpp"
#include "webhooks/schedule.hpp"
#include "webhooks/secret_box.hpp"
#include "webhooks/service.hpp"
#include "webhooks/signing.hpp"
#include "webhooks/url_guard.hpp"
#include "webhooks/worker.hpp"

namespace sika::webhooks {
namespace {

namespace bj = boost::json;
using namespace std::chrono_literals;

constexpr std::string_view kPepper = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

// ---- pure functions -------------------------------------------------------------------------

TEST(Signing, MatchesTheStandardWebhooksVector) {
  // From the Standard Webhooks specification's test suite.
  auto key = secret_key_bytes("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  ASSERT_TRUE(key);
  EXPECT_EQ(sign(*key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, R"({"test": 2432232314})"),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

TEST(Signing, SecretsAreWhsecWith32RandomBytes) {
  std::string a = generate_secret(), b = generate_secret();
  EXPECT_TRUE(a.starts_with("whsec_"));
  EXPECT_NE(a, b);
  auto key = secret_key_bytes(a);
  ASSERT_TRUE(key);
  EXPECT_EQ(key->size(), 32u);
  EXPECT_FALSE(secret_key_bytes("sk_not_a_webhook_secret"));
  EXPECT_FALSE(secret_key_bytes("whsec_!!!"));
}

TEST(Signing, HeaderCarriesOneSignaturePerKeyAndEachVerifies) {
  std::string k1 = *secret_key_bytes(generate_secret()), k2 = *secret_key_bytes(generate_secret());
  std::string header = signature_header({k1, k2}, "evt_1", 1700000000, "{}");
  EXPECT_EQ(std::count(header.begin(), header.end(), ' '), 1);
  EXPECT_TRUE(verify(k1, "evt_1", 1700000000, "{}", header));
  EXPECT_TRUE(verify(k2, "evt_1", 1700000000, "{}", header));
  EXPECT_FALSE(verify(k1, "evt_1", 1700000001, "{}", header));
  EXPECT_FALSE(verify(k1, "evt_2", 1700000000, "{}", header));
  EXPECT_FALSE(verify(k1, "evt_1", 1700000000, "{ }", header));
  std::string k3 = *secret_key_bytes(generate_secret());
  EXPECT_FALSE(verify(k3, "evt_1", 1700000000, "{}", header));
}

TEST(SecretBoxTest, SealsBoundToEndpointAndPepper) {
  SecretBox box(kPepper);
  const std::string secret = generate_secret();
  const std::string sealed = box.seal("we_a", secret);
  EXPECT_TRUE(sealed.starts_with("v1."));
  EXPECT_EQ(sealed.find(secret.substr(6)), std::string::npos);
  EXPECT_EQ(box.open("we_a", sealed), secret);
  EXPECT_FALSE(box.open("we_b", sealed));  // copied onto another endpoint
  SecretBox other("another-pepper-another-pepper-another-pepper");
  EXPECT_FALSE(other.open("we_a", sealed));
  std::string tampered = sealed;
  tampered[10] = tampered[10] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(box.open("we_a", tampered));
  EXPECT_FALSE(box.open("we_a", "v1.short"));
  EXPECT_NE(box.seal("we_a", secret), sealed);  // random nonce
}

TEST(Schedule, DefaultRetriesForAboutThreeDays) {
  RetrySchedule s;
  EXPECT_EQ(s.max_attempts(), 11);
  EXPECT_EQ(s.describe(), "5s, 5m, 30m, 2h, 5h, 10h, 10h, 14h, 14h, 16h");
  EXPECT_EQ(s.total_ms(), ((71LL * 60 + 35) * 60 + 5) * 1000);
  EXPECT_GE(s.total_ms(), 70LL * 3600 * 1000);
  EXPECT_LE(s.total_ms(), 80LL * 3600 * 1000);
  EXPECT_EQ(*s.base_delay_ms(1), 5'000);
  EXPECT_EQ(*s.base_delay_ms(2), 300'000);
  EXPECT_EQ(*s.base_delay_ms(10), 16LL * 3600 * 1000);
  EXPECT_FALSE(s.base_delay_ms(11));  // the 11th failure is final
  EXPECT_FALSE(s.base_delay_ms(0));
  // Each delay grows (never shrinks) until the long tail.
  for (int i = 1; i < 6; ++i) EXPECT_LT(*s.base_delay_ms(i), *s.base_delay_ms(i + 1));
}

TEST(Schedule, JitterStaysWithinTwentyPercent) {
  RetrySchedule s;
  EXPECT_EQ(*s.delay_ms(2, 0), 240'000);     // -20%
  EXPECT_EQ(*s.delay_ms(2, 500), 300'000);   // centre
  EXPECT_EQ(*s.delay_ms(2, 1000), 360'000);  // +20%
  std::set<std::int64_t> seen;
  for (int i = 0; i < 200; ++i) {
    auto d = *s.delay_ms(1);
    EXPECT_GE(d, 4'000);
    EXPECT_LE(d, 6'000);
    seen.insert(d);
  }
  EXPECT_GT(seen.size(), 20u);  // really random
}

TEST(Schedule, ParsesDurationsAndRefusesGarbage) {
  auto s = RetrySchedule::parse("0, 500ms, 2s, 1m, 1h, 1d");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->delays_ms(), (std::vector<std::int64_t>{0, 500, 2000, 60'000, 3'600'000, 86'400'000}));
  EXPECT_FALSE(RetrySchedule::parse("5s,,5m").ok());
  EXPECT_FALSE(RetrySchedule::parse("5x").ok());
  EXPECT_FALSE(RetrySchedule::parse("-5s").ok());
  EXPECT_FALSE(RetrySchedule::parse("").ok());
}

TEST(Model, TypeFiltersMatchExactPrefixAndAll) {
  EXPECT_TRUE(matches({"*"}, "transaction.status_changed"));
  EXPECT_TRUE(matches({"transaction.*"}, "transaction.status_changed"));
  EXPECT_FALSE(matches({"transaction.*"}, "transactions.x"));
  EXPECT_FALSE(matches({"transaction.*"}, "transaction"));
  EXPECT_TRUE(matches({"endpoint.disabled"}, "endpoint.disabled"));
  EXPECT_FALSE(matches({"endpoint.disabled"}, "endpoint.disabledx"));
  EXPECT_TRUE(valid_type_pattern("transaction.*"));
  EXPECT_FALSE(valid_type_pattern("Transaction"));
  EXPECT_FALSE(valid_type_pattern("a..b"));
  EXPECT_FALSE(valid_type_pattern(".*"));
}

TEST(Model, ExcerptsAreBoundedValidUtf8) {
  EXPECT_EQ(sanitize_excerpt("hello", 3), "hel");
  EXPECT_EQ(sanitize_excerpt(std::string("a\0b", 3), 100),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(sanitize_excerpt("\xFF", 100), "\xEF\xBF\xBD");
  EXPECT_EQ(sanitize_excerpt("\xC3\xA9t\xC3\xA9", 3), "\xC3\xA9t");  // never cuts inside a character
  EXPECT_EQ(sanitize_excerpt("\xC3", 100), "\xEF\xBF\xBD");          // truncated sequence
}

TEST(Model, BodyCarriesEventFieldsThenPayload) {
  Event e;
  e.event_id = "evt_1";
  e.event_type = "transaction.status_changed";
  e.sequence = 3;
  e.created_at = 1700000000123;
  e.payload = R"({"transaction_reference":"TX-1","status":"COMPLETED","amount":500,"event_id":"spoofed"})";
  auto body = bj::parse(delivery_body(e)).as_object();
  EXPECT_EQ(body["event_id"], "evt_1");
  EXPECT_EQ(body["event_type"], "transaction.status_changed");
  EXPECT_EQ(body["sequence"], 3);
  EXPECT_EQ(body["created_at"], "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(body["transaction_reference"], "TX-1");
  EXPECT_EQ(body["amount"], 500);
  EXPECT_EQ(delivery_body(e), delivery_body(e));
}

// ---- SSRF guard -----------------------------------------------------------------------------

class FakeResolver : public Resolver {
 public:
  std::map<std::string, std::vector<std::string>> hosts;  // host -> textual addresses
  Result<std::vector<std::string>> resolve(const std::string& host) override {
    auto it = hosts.find(host);
    if (it == hosts.end()) return empty_data(bj::object{{"url", "host does not resolve"}});
    std::vector<std::string> out;
    for (const auto& text : it->second) {
      unsigned char buf[16];
      if (::inet_pton(AF_INET, text.c_str(), buf) == 1)
        out.emplace_back(reinterpret_cast<char*>(buf), 4);
      else if (::inet_pton(AF_INET6, text.c_str(), buf) == 1)
        out.emplace_back(reinterpret_cast<char*>(buf), 16);
    }
    return out;
  }
};

TEST(UrlGuard, ClassifiesAddresses) {
  for (const char* ip : {"127.0.0.1",
                         "10.0.0.1",
                         "172.16.5.4",
                         "192.168.1.1",
                         "169.254.169.254",
                         "100.64.0.1",
                         "0.0.0.0",
                         "224.0.0.1",
                         "255.255.255.255",
                         "198.18.0.1",
                         "192.0.2.1",
                         "::1",
                         "::",
                         "fe80::1",
                         "fc00::1",
                         "fd00:ec2::254",
                         "ff02::1",
                         "::ffff:127.0.0.1",
                         "::ffff:10.0.0.1",
                         "64:ff9b::a00:1",
                         "2002:a00:1::1",
                         "2001:db8::1",
                         "2001::1"})
    EXPECT_FALSE(web::is_public_address(ip)) << ip;
  for (const char* ip :
       {"93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "2002:808:808::1"})
    EXPECT_TRUE(web::is_public_address(ip)) << ip;
  EXPECT_FALSE(web::is_public_address("not an ip"));
}

TEST(UrlGuard, RefusesNonPublicTargetsAtRegistration) {
  FakeResolver r;
  r.hosts["internal.example.com"] = {"10.1.2.3"};
  r.hosts["mixed.example.com"] = {"93.184.216.34", "127.0.0.1"};
  r.hosts["public.example.com"] = {"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"};
  UrlPolicy strict;
  for (const char* url : {"http://169.254.169.254/latest/meta-data/",
                          "http://10.0.0.1/",
                          "https://192.168.0.10/hook",
                          "http://127.0.0.1:8080/",
                          "http://[::1]/",
                          "http://[::ffff:127.0.0.1]/",
                          "http://[fd00:ec2::254]/",
                          "http://0.0.0.0/",
                          "http://internal.example.com/hook",
                          "http://mixed.example.com/hook",
                          "http://unknown.example.com/",
                          "ftp://93.184.216.34/",
                          "https://user:pw@93.184.216.34/",
                          "https://93.184.216.34/#frag",
                          "/relative",
                          "https://93.184.216.34:0/",
                          "https://93.184.216.34:99999/",
                          "https://93.184.216.34:/",
                          "",
                          "http:///nohost",
                          "https://exa mple.com/"}) {
    auto res = check_url(url, strict, r);
    EXPECT_FALSE(res.ok()) << url;
    if (!res.ok()) {
      EXPECT_EQ(res.error().kind, sika::ErrorKind::invalid) << url;
      EXPECT_TRUE(res.error().details.as_object().contains("url")) << url;
    }
  }
  EXPECT_TRUE(check_url("https://public.example.com/hooks?x=1", strict, r).ok());
  EXPECT_TRUE(check_url("https://93.184.216.34/hook", strict, r).ok());
  EXPECT_TRUE(check_url("https://[2606:4700:4700::1111]/hook", strict, r).ok());
  EXPECT_EQ(*check_url("HTTPS://PUBLIC.example.com/Path", strict, r), "https://public.example.com/Path");
  UrlPolicy dev;
  dev.allow_private_targets = true;
  EXPECT_TRUE(check_url("http://127.0.0.1:8080/hook", dev, r).ok());
  EXPECT_FALSE(check_url("ftp://127.0.0.1/", dev, r).ok());
}

TEST(UrlGuard, EachRefusalIsATypedProblemOfTheUrlWithItsEnglishText) {
  FakeResolver r;
  r.hosts["internal.example.com"] = {"10.1.2.3"};
  UrlPolicy strict;
  strict.max_length = 40;
  const std::vector<std::tuple<std::string, Reason, std::string>> cases = {
      {"", Reason::required, "is required"},
      {"https://public.example.com/" + std::string(20, 'p'), Reason::longer_than, "is longer than 40 characters"},
      {"/relative", Reason::not_absolute_url, "is not an absolute URL"},
      {"ftp://93.184.216.34/", Reason::http_or_https, "must use http or https"},
      {"https://user:pw@93.184.216.34/", Reason::no_credentials, "must not contain credentials"},
      {"http:///nohost", Reason::names_host, "must name a host"},
      {"https://93.184.216.34:99999/", Reason::invalid_port, "has an invalid port"},
      {"https://exa%20mple.com/", Reason::invalid_host_name, "has an invalid host name"},
      {"http://internal.example.com/", Reason::not_public_target,
       "is not an allowed target (only public internet hosts are accepted)"},
      {"http://unknown.example.com/", Reason::not_public_target,
       "is not an allowed target (only public internet hosts are accepted)"}};
  for (const auto& [url, reason, text] : cases) {
    auto res = check_url(url, strict, r);
    ASSERT_FALSE(res.ok()) << url;
    EXPECT_EQ(res.error().code, "empty_data") << url;
    ASSERT_NE(res.error().problem("url"), nullptr) << url;
    EXPECT_EQ(res.error().problem("url")->reason, reason) << url;
    EXPECT_EQ(bj::serialize(res.error().details), bj::serialize(bj::object{{"url", text}})) << url;
  }
}

TEST(Registry, EndpointChangesAreRefusedWithTypedProblems) {
  auto res = parse_endpoint_change(
      bj::object{{"url", ""}, {"colour", "red"}, {"description", std::string(257, 'd')}, {"event_types", bj::array{}}},
      true);
  ASSERT_FALSE(res.ok());
  const Error& e = res.error();
  EXPECT_EQ(e.problem("url")->reason, Reason::not_empty);
  EXPECT_EQ(e.problem("colour")->reason, Reason::endpoint_field);
  EXPECT_EQ(e.details.at("colour").as_string(),
            "is not a field of an endpoint (allowed: url, event_types, description, enabled)");
  EXPECT_EQ(e.details.at("description").as_string(), "must be at most 256 bytes");
  EXPECT_EQ(e.details.at("event_types").as_string(), "must list at least one event kind (\"*\" for all)");
  bj::array many;
  for (int i = 0; i < 51; ++i) many.push_back(bj::string("transaction." + std::to_string(i)));
  auto too_many = parse_endpoint_change(bj::object{{"event_types", many}}, false);
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.error().details.at("event_types").as_string(), "must list at most 50 kinds");
  auto bad_kind = parse_endpoint_change(bj::object{{"event_types", bj::array{"a b"}}}, false);
  ASSERT_FALSE(bad_kind.ok());
  EXPECT_EQ(bad_kind.error().problem("event_types")->reason, Reason::event_kind_pattern);
  EXPECT_EQ(bad_kind.error().details.at("event_types").as_string(),
            "each item must be \"*\", an event kind such as \"transaction.status_changed\" or a prefix such as "
            "\"transaction.*\"");
}

TEST(UrlGuard, RefusalsNeverNameTheResolvedAddress) {
  // Naming the address would let anyone map internal DNS through the registration endpoint;
  // a name that resolves to a private address and one that does not resolve read the same.
  FakeResolver r;
  r.hosts["internal.example.com"] = {"10.1.2.3"};
  r.hosts["v6.example.com"] = {"fd00:ec2::254"};
  UrlPolicy strict;
  std::string first;
  for (const char* url :
       {"http://internal.example.com/hook", "http://v6.example.com/hook", "http://nowhere.example.com/"}) {
    auto res = check_url(url, strict, r);
    ASSERT_FALSE(res.ok()) << url;
    std::string text = json::dump(res.error().details);
    EXPECT_EQ(text.find("10.1.2.3"), std::string::npos) << text;
    EXPECT_EQ(text.find("fd00"), std::string::npos) << text;
    EXPECT_EQ(text.find("resolve"), std::string::npos) << text;
    if (first.empty()) first = text;
    EXPECT_EQ(text, first) << url;
  }
}

TEST(UrlGuard, RefusesEncodedControlCharactersInTheHost) {
  FakeResolver r;
  r.hosts["example.com"] = {"93.184.216.34"};
  UrlPolicy strict;
  UrlPolicy dev;
  dev.allow_private_targets = true;
  for (const char* url :
       {"https://exa%00mple.com/hook", "https://example.com%00.evil/hook", "https://example.com%0d%0aX-Injected:1/hook",
        "https://ex%0Aample.com/", "https://%20example.com/", "https://ex%2Fample.com/", "https://[::1%2500]/"}) {
    for (const UrlPolicy* p : {&strict, &dev}) {
      auto res = check_url(url, *p, r);
      EXPECT_FALSE(res.ok()) << url;
      if (!res.ok()) {
        EXPECT_TRUE(res.error().details.as_object().contains("url")) << url;
      }
    }
  }
}

TEST(UrlGuard, SystemResolverCatchesNumericSpellingsOfLoopback) {
  SystemResolver sys;
  UrlPolicy strict;
  for (const char* url :
       {"http://localhost/", "http://2130706433/", "http://0x7f.1/", "http://127.1/", "http://017700000001/"})
    EXPECT_FALSE(check_url(url, strict, sys).ok()) << url;
}

// ---- a fake outbound client -----------------------------------------------------------------

class FakeClient : public web::HttpClient {
 public:
  struct Call {
    web::ClientRequest req;
    std::int64_t at;
  };
  // Status answered per URL (default 200); -1 answers an upstream_error, -2 blocks until released.
  std::map<std::string, int> status;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Call> calls;
  bool released = false;
  std::atomic<int> hanging{0};

  Result<web::ClientResponse> send(const web::ClientRequest& req) override {
    int code = 200;
    {
      std::unique_lock lock(mu);
      calls.push_back({req, now_ms()});
      if (auto it = status.find(req.url); it != status.end()) code = it->second;
      if (code == -2) {
        ++hanging;
        cv.wait_for(lock, std::chrono::milliseconds(req.timeout_ms), [&] { return released; });
        --hanging;
        return make_error(ErrorKind::upstream_timeout, "upstream_timeout", "no answer within the timeout");
      }
    }
    if (code == -1) return make_error(ErrorKind::upstream_failed, "upstream_error", "connection refused");
    if (code == -3) return make_error(ErrorKind::unavailable, "host_busy", "per-host limit reached");
    web::ClientResponse r;
    r.status = code;
    r.body = code == 200 ? R"({"received":true})" : std::string(5000, 'x');
    return r;
  }
  void release() {
    std::lock_guard lock(mu);
    released = true;
    cv.notify_all();
  }
  std::vector<Call> calls_to(const std::string& url) {
    std::lock_guard lock(mu);
    std::vector<Call> out;
    for (auto& c : calls)
      if (c.req.url == url) out.push_back(c);
    return out;
  }
  static std::string header(const web::ClientRequest& r, std::string_view name) {
    for (const auto& [k, v] : r.headers)
      if (k == name) return v;
    return "";
  }
};

// ---- both backends ----------------------------------------------------------------------------

std::string text(const Error& e) { return e.code + " " + bj::serialize(e.details); }

class WebhooksDb : public sika::testing::DbTest {
 protected:
  void SetUp() override {
    DbTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    merchant_a_ = make_merchant("MCH-A");
    merchant_b_ = make_merchant("MCH-B");
    RegistryOptions ro;
    ro.pepper = std::string(kPepper);
    ro.allow_private_targets = true;
    registry_ = std::make_unique<Registry>(*db_, ro);
  }

  void TearDown() override {
    workers_.clear();
    registry_.reset();
    DbTest::TearDown();
  }

  std::int64_t make_merchant(const std::string& matricule) {
    std::int64_t id = 0;
    Status st = db_->write([&](store::Conn& c) -> Status {
      merchant::NewMerchant m;
      m.matricule = matricule;
      m.name = matricule;
      m.countries = {"CMR"};
      SIKA_ASSIGN_OR_RETURN(auto created, merchant::create(c, m, now_ms()));
      id = created.id;
      return {};
    });
    EXPECT_TRUE(st.ok()) << text(st.error());
    return id;
  }

  EndpointWithSecret endpoint(std::int64_t merchant, const std::string& url, std::vector<std::string> types = {"*"},
                              std::int64_t now = 0) {
    EndpointChange ch;
    ch.url = url;
    ch.event_types = std::move(types);
    auto e = registry_->create(merchant, ch, now ? now : clock_.load());
    EXPECT_TRUE(e.ok()) << text(e.error());
    return e.ok() ? *e : EndpointWithSecret{};
  }

  std::string event(std::int64_t merchant, const std::string& subject, const std::string& status,
                    const std::string& type = "transaction.status_changed", std::int64_t at = 0) {
    std::string id;
    Status st = db_->write([&](store::Conn& c) -> Status {
      bj::object p;
      p["transaction_reference"] = subject;
      p["invoice_reference"] = "INV-" + subject;
      p["provider_reference"] = "PRV-" + subject;
      p["operation"] = "COLLECTION";
      p["status"] = status;
      p["amount"] = 1500;
      p["currency"] = "XAF";
      p["updated_at"] = iso8601(at ? at : clock_.load());
      SIKA_ASSIGN_OR_RETURN(auto ev, store::append_event(c, merchant, type, subject, p, at ? at : clock_.load()));
      id = ev.event_id;
      return {};
    });
    EXPECT_TRUE(st.ok()) << text(st.error());
    return id;
  }

  Worker& worker(FakeClient& client, const std::string& schedule = "5s,5m,30m", std::int64_t disable_after_ms = 0) {
    WorkerOptions wo;
    wo.schedule = *RetrySchedule::parse(schedule);
    if (disable_after_ms) wo.disable_after_ms = disable_after_ms;
    wo.allow_private_targets = true;
    wo.clock = [this] { return clock_.load(); };
    workers_.push_back(std::make_unique<Worker>(*db_, client, *registry_, wo));
    return *workers_.back();
  }

  std::int64_t scalar(const std::string& sql, const store::Params& params = {}) {
    std::int64_t n = -1;
    Status st = db_->read([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(auto row, c.query_one(sql, params));
      n = row ? row->i64(0) : -1;
      return {};
    });
    EXPECT_TRUE(st.ok()) << sql << ": " << text(st.error());
    return n;
  }

  std::string str(const std::string& sql, const store::Params& params = {}) {
    std::string s;
    Status st = db_->read([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(auto row, c.query_one(sql, params));
      if (row) s = row->str(0);
      return {};
    });
    EXPECT_TRUE(st.ok()) << sql << ": " << text(st.error());
    return s;
  }

  std::unique_ptr<Registry> registry_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::int64_t merchant_a_ = 0, merchant_b_ = 0;
  std::atomic<std::int64_t> clock_{1'700'000'000'000};
};

TEST_P(WebhooksDb, EndpointsAreScopedToTheirMerchantAndSecretsSealed) {
  auto e = endpoint(merchant_a_, "http://127.0.0.1:9/hook", {"transaction.*"});
  EXPECT_TRUE(e.secret.starts_with("whsec_"));
  EXPECT_TRUE(e.endpoint.id.starts_with("we_"));
  EXPECT_EQ(e.endpoint.event_types, std::vector<std::string>{"transaction.*"});
  // Never stored in clear.
  std::string stored = str("SELECT secret_box FROM webhook_endpoints WHERE public_id = ?", {e.endpoint.id});
  EXPECT_EQ(stored.find(e.secret.substr(6)), std::string::npos);
  EXPECT_EQ(registry_->secret_box().open(e.endpoint.id, stored), e.secret);
  // Views never show it.
  EXPECT_FALSE(to_json(e.endpoint).contains("secret"));

  EXPECT_TRUE(registry_->get(merchant_a_, e.endpoint.id).ok());
  auto other = registry_->get(merchant_b_, e.endpoint.id);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().kind, sika::ErrorKind::not_found);
  EXPECT_EQ(registry_->update(merchant_b_, e.endpoint.id, {}, clock_).error().kind, sika::ErrorKind::not_found);
  EXPECT_EQ(registry_->rotate_secret(merchant_b_, e.endpoint.id, {}, clock_).error().kind, sika::ErrorKind::not_found);
  EXPECT_EQ(registry_->remove(merchant_b_, e.endpoint.id, clock_).error().kind, sika::ErrorKind::not_found);
  EXPECT_EQ(registry_->list(merchant_b_, 25, 0)->total, 0);
  EXPECT_EQ(registry_->list(merchant_a_, 25, 0)->total, 1);
  EXPECT_EQ(registry_->list(std::nullopt, 25, 0)->total, 1);  // the operator sees all

  ASSERT_TRUE(registry_->remove(merchant_a_, e.endpoint.id, clock_).ok());
  EXPECT_EQ(registry_->get(merchant_a_, e.endpoint.id).error().kind, sika::ErrorKind::not_found);
}

TEST_P(WebhooksDb, RegistrationRefusesPrivateTargetsUnlessAllowed) {
  RegistryOptions ro;
  ro.pepper = std::string(kPepper);
  Registry strict(*db_, ro);
  for (const char* url : {"http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/", "http://127.0.0.1:8080/",
                          "http://[::1]/", "http://localhost/hook", "http://2130706433/"}) {
    EndpointChange ch;
    ch.url = url;
    auto r = strict.create(merchant_a_, ch, clock_);
    ASSERT_FALSE(r.ok()) << url;
    EXPECT_EQ(r.error().kind, sika::ErrorKind::invalid) << url;
    EXPECT_TRUE(r.error().details.as_object().contains("url"));
  }
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM webhook_endpoints"), 0);
  // Changing the URL of an existing endpoint is checked the same way.
  auto e = endpoint(merchant_a_, "http://127.0.0.1:9/hook");
  EndpointChange ch;
  ch.url = "http://10.0.0.1/";
  EXPECT_EQ(strict.update(merchant_a_, e.endpoint.id, ch, clock_).error().kind, sika::ErrorKind::invalid);
}

TEST_P(WebhooksDb, LimitsEndpointsPerMerchant) {
  RegistryOptions ro;
  ro.pepper = std::string(kPepper);
  ro.allow_private_targets = true;
  ro.max_endpoints_per_merchant = 2;
  Registry small(*db_, ro);
  EndpointChange ch;
  ch.url = "http://127.0.0.1:9/";
  ASSERT_TRUE(small.create(merchant_a_, ch, clock_).ok());
  ASSERT_TRUE(small.create(merchant_a_, ch, clock_).ok());
  auto third = small.create(merchant_a_, ch, clock_);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().kind, sika::ErrorKind::conflict);
  EXPECT_TRUE(small.create(merchant_b_, ch, clock_).ok());
}

TEST_P(WebhooksDb, DeliversSignedEventsWithSequenceAndRecordsAttempts) {
  FakeClient client;
  auto ep = endpoint(merchant_a_, "http://127.0.0.1:9/a");
  auto other = endpoint(merchant_b_, "http://127.0.0.1:9/b");
  std::string e1 = event(merchant_a_, "TX-1", "PENDING");
  std::string e2 = event(merchant_a_, "TX-1", "COMPLETED");
  Worker& w = worker(client);
  auto n = w.run_once(clock_);
  ASSERT_TRUE(n.ok()) << text(n.error());
  EXPECT_EQ(*n, 2);
  auto calls = client.calls_to("http://127.0.0.1:9/a");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_TRUE(client.calls_to("http://127.0.0.1:9/b").empty());  // merchant B had no event
  auto key = *secret_key_bytes(ep.secret);
  std::map<std::string, std::int64_t> sequence_of;
  for (const auto& c : calls) {
    const auto& r = c.req;
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(FakeClient::header(r, "content-type"), "application/json");
    std::string id = FakeClient::header(r, "webhook-id");
    std::int64_t ts = std::stoll(FakeClient::header(r, "webhook-timestamp"));
    EXPECT_EQ(ts, clock_ / 1000);
    EXPECT_TRUE(verify(key, id, ts, r.body, FakeClient::header(r, "webhook-signature")));
    EXPECT_TRUE(r.allow_private_addresses);  // passed through from the option
    auto body = bj::parse(r.body).as_object();
    EXPECT_EQ(body["event_id"].as_string(), id);
    for (const char* f : {"transaction_reference", "invoice_reference", "provider_reference", "operation", "status",
                          "amount", "currency", "updated_at", "event_type", "created_at", "sequence"})
      EXPECT_TRUE(body.contains(f)) << f;
    sequence_of[id] = body["sequence"].as_int64();
  }
  EXPECT_EQ(sequence_of[e1], 1);
  EXPECT_EQ(sequence_of[e2], 2);
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'succeeded'"), 2);
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM webhook_attempts WHERE status_code = 200 AND outcome = 'succeeded'"), 2);
  auto list = registry_->list_deliveries(merchant_a_, {}, 25, 0);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->total, 2);
  auto detail = registry_->get_delivery(merchant_a_, list->items[0].id);
  ASSERT_TRUE(detail.ok());
  ASSERT_EQ(detail->attempts.size(), 1u);
  EXPECT_EQ(detail->attempts[0].status_code, 200);
  EXPECT_EQ(detail->attempts[0].response_excerpt, R"({"received":true})");
  EXPECT_GE(detail->attempts[0].latency_ms, 0);
  EXPECT_EQ(registry_->get_delivery(merchant_b_, list->items[0].id).error().kind, sika::ErrorKind::not_found);
  // A second pass has nothing left to do: delivered once.
  EXPECT_EQ(*w.run_once(clock_), 0);
  (void)other;
}

TEST_P(WebhooksDb, FansOutOnlyToMatchingEnabledEndpointsCreatedBeforeTheEvent) {
  FakeClient client;
  clock_ = 1'700'000'000'000;
  auto all = endpoint(merchant_a_, "http://127.0.0.1:9/all");
  auto tx = endpoint(merchant_a_, "http://127.0.0.1:9/tx", {"transaction.*"});
  auto off = endpoint(merchant_a_, "http://127.0.0.1:9/off");
  EndpointChange disable;
  disable.enabled = false;
  ASSERT_TRUE(registry_->update(merchant_a_, off.endpoint.id, disable, clock_).ok());
  event(merchant_a_, "TX-1", "COMPLETED");
  event(merchant_a_, "we_x", "gone", "endpoint.disabled");
  clock_ += 1000;
  auto late = endpoint(merchant_a_, "http://127.0.0.1:9/late");  // created after both events
  Worker& w = worker(client);
  ASSERT_TRUE(w.run_once(clock_).ok());
  EXPECT_EQ(client.calls_to("http://127.0.0.1:9/all").size(), 2u);
  EXPECT_EQ(client.calls_to("http://127.0.0.1:9/tx").size(), 1u);
  EXPECT_EQ(client.calls_to("http://127.0.0.1:9/off").size(), 0u);
  EXPECT_EQ(client.calls_to("http://127.0.0.1:9/late").size(), 0u);
  (void)all, (void)tx, (void)late;
}

TEST_P(WebhooksDb, RetriesOnTheScheduleThenFails) {
  FakeClient client;
  endpoint(merchant_a_, "http://127.0.0.1:9/down");
  client.status["http://127.0.0.1:9/down"] = 500;
  event(merchant_a_, "TX-1", "COMPLETED");
  Worker& w = worker(client, "10s,60s");
  const std::int64_t t0 = clock_;
  ASSERT_EQ(*w.run_once(clock_), 1);
  auto next = scalar("SELECT next_attempt_at FROM webhook_deliveries");
  EXPECT_GE(next, t0 + 8'000);  // 10 s +/- 20%
  EXPECT_LE(next, t0 + 12'000);
  EXPECT_EQ(str("SELECT status FROM webhook_deliveries"), "pending");
  EXPECT_EQ(str("SELECT last_error FROM webhook_deliveries"), "HTTP 500");
  // Not due yet.
  clock_ = t0 + 7'000;
  EXPECT_EQ(*w.run_once(clock_), 0);
  clock_ = t0 + 12'001;
  EXPECT_EQ(*w.run_once(clock_), 1);
  EXPECT_EQ(scalar("SELECT attempts FROM webhook_deliveries"), 2);
  clock_ = clock_ + 72'001;
  EXPECT_EQ(*w.run_once(clock_), 1);
  EXPECT_EQ(str("SELECT status FROM webhook_deliveries"), "failed");
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM webhook_attempts"), 3);
  // Response excerpts are bounded.
  EXPECT_EQ(scalar("SELECT MAX(LENGTH(response_excerpt)) FROM webhook_attempts"), 1024);
  clock_ = clock_ + 10LL * 24 * 3600 * 1000;
  EXPECT_EQ(*w.run_once(clock_), 0);  // exhausted: never again
  // Network errors and timeouts are failures too.
  client.status["http://127.0.0.1:9/down"] = -1;
  event(merchant_a_, "TX-2", "COMPLETED");
  ASSERT_EQ(*w.run_once(clock_), 1);
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM webhook_attempts WHERE outcome = 'network_error' AND status_code IS NULL"), 1);
}

TEST_P(WebhooksDb, ALocalHostLimitDefersWithoutCountingAnAttempt) {
  FakeClient client;
  endpoint(merchant_a_, "http://127.0.0.1:9/busy");
  client.status["http://127.0.0.1:9/busy"] = -3;
  event(merchant_a_, "TX-1", "COMPLETED");
  Worker& w = worker(client);
  ASSERT_EQ(*w.run_once(clock_), 1);
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM webhook_attempts"), 0);
  EXPECT_EQ(scalar("SELECT attempts FROM webhook_deliveries"), 0);
  EXPECT_EQ(str("SELECT status FROM webhook_deliveries"), "pending");
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM webhook_deliveries WHERE lease_owner IS NULL"), 1);
  EXPECT_EQ(scalar("SELECT next_attempt_at FROM webhook_deliveries"), clock_ + 1000);
  client.status["http://127.0.0.1:9/busy"] = 200;
  clock_ += 1000;
  ASSERT_EQ(*w.run_once(clock_), 1);
  EXPECT_EQ(str("SELECT status FROM webhook_deliveries"), "succeeded");
  EXPECT_EQ(scalar("SELECT attempts FROM webhook_deliveries"), 1);
}

TEST_P(WebhooksDb, GoneStopsAndDisablesTheEndpointAndTellsTheMerchant) {
  FakeClient client;
  auto gone = endpoint(merchant_a_, "http://127.0.0.1:9/gone");
  auto watcher = endpoint(merchant_a_, "http://127.0.0.1:9/watcher", {"endpoint.disabled"});
  client.status["http://127.0.0.1:9/gone"] = 410;
  event(merchant_a_, "TX-1", "COMPLETED");
  Worker& w = worker(client);
  ASSERT_EQ(*w.run_once(clock_), 1);
  EXPECT_EQ(str("SELECT status FROM webhook_deliveries"), "failed");
  auto e = registry_->get(merchant_a_, gone.endpoint.id);
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(e->enabled);
  EXPECT_EQ(e->disabled_reason, "gone");
  // The merchant is told: an endpoint.disabled event, delivered to its other endpoint.
  EXPECT_EQ(
      scalar("SELECT COUNT(*) FROM events WHERE event_type = 'endpoint.disabled' AND subject = ?", {gone.endpoint.id}),
      1);
  ASSERT_EQ(*w.run_once(clock_), 1);
  auto calls = client.calls_to("http://127.0.0.1:9/watcher");
  ASSERT_EQ(calls.size(), 1u);
  auto body = bj::parse(calls[0].req.body).as_object();
  EXPECT_EQ(body["event_type"], "endpoint.disabled");
  EXPECT_EQ(body["endpoint_id"].as_string(), gone.endpoint.id);
  EXPECT_EQ(body["reason"], "gone");
  // Later events do not go to the disabled endpoint; redelivering to it is refused.
  std::string later = event(merchant_a_, "TX-2", "COMPLETED");
  clock_ += 100'000;
  ASSERT_TRUE(w.run_once(clock_).ok());
  EXPECT_EQ(client.calls_to("http://127.0.0.1:9/gone").size(), 1u);
  EXPECT_EQ(registry_->redeliver(merchant_a_, later, gone.endpoint.id, clock_).error().kind, sika::ErrorKind::conflict);
  (void)watcher;
}

TEST_P(WebhooksDb, AnEndpointFailingForDaysIsDisabled) {
  FakeClient client;
  auto ep = endpoint(merchant_a_, "http://127.0.0.1:9/broken");
  client.status["http://127.0.0.1:9/broken"] = 503;
  const std::int64_t day = 24LL * 3600 * 1000;
  Worker& w = worker(client, "1h,1h,1h,1h,1h", 3 * day);
  event(merchant_a_, "TX-1", "COMPLETED");
  ASSERT_EQ(*w.run_once(clock_), 1);
  auto e = registry_->get(merchant_a_, ep.endpoint.id);
  EXPECT_TRUE(e->enabled);
  EXPECT_EQ(e->failing_since, clock_.load());
  // A success clears the streak.
  client.status["http://127.0.0.1:9/broken"] = 200;
  clock_ += 2 * 3600 * 1000;
  ASSERT_EQ(*w.run_once(clock_), 1);
  EXPECT_FALSE(registry_->get(merchant_a_, ep.endpoint.id)->failing_since);
  // Then failures for more than three days disable it.
  client.status["http://127.0.0.1:9/broken"] = 503;
  const std::int64_t start = clock_;
  for (int i = 0; i < 5; ++i) {
    event(merchant_a_, "TX-" + std::to_string(10 + i), "COMPLETED");
    ASSERT_TRUE(w.run_once(clock_).ok());
    clock_ += day;
  }
  e = registry_->get(merchant_a_, ep.endpoint.id);
  EXPECT_FALSE(e->enabled);
  EXPECT_EQ(e->disabled_reason, "failing");
  EXPECT_EQ(e->failing_since, start);
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM events WHERE event_type = 'endpoint.disabled'"), 1);
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'pending'"), 0);
  // Re-enabling clears the mark.
  EndpointChange enable;
  enable.enabled = true;
  auto back = registry_->update(merchant_a_, ep.endpoint.id, enable, clock_);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->enabled);
  EXPECT_FALSE(back->disabled_reason);
  EXPECT_FALSE(back->failing_since);
}

TEST_P(WebhooksDb, TwoWorkersNeverClaimTheSameDelivery) {
  // Two "nodes" (separate connection pools), two threads each, racing on one queue.
  store::Db* dbs[2] = {db_.get(), &second_node()};
  auto ep1 = endpoint(merchant_a_, "http://127.0.0.1:9/1");
  auto ep2 = endpoint(merchant_a_, "http://127.0.0.1:9/2");
  for (int i = 0; i < 300; ++i) event(merchant_a_, "TX-" + std::to_string(i), "COMPLETED");
  FanoutOptions fo;
  fo.owner = "test";
  for (;;) {
    auto r = fan_out(*db_, fo, clock_);
    ASSERT_TRUE(r.ok()) << text(r.error());
    if (!r->more) break;
  }
  ASSERT_EQ(scalar("SELECT COUNT(*) FROM webhook_deliveries"), 600);
  std::mutex mu;
  std::vector<std::int64_t> claimed;
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int idle = 0; idle < 3;) {
        ClaimOptions co;
        co.owner = "node" + std::to_string(t) + "/" + random_token(6);
        co.limit = 25;
        co.per_endpoint = 7;
        co.lease_ms = 600'000;
        auto r = claim(*dbs[t % 2], co, clock_);
        if (!r.ok()) {
          ++errors;
          ADD_FAILURE() << text(r.error());
          continue;
        }
        if (r->empty()) {
          ++idle;
          continue;
        }
        EXPECT_LE(r->size(), 25u);
        std::map<std::int64_t, int> per_endpoint;
        for (const auto& c : *r) ++per_endpoint[c.endpoint_row];
        for (const auto& [e, n] : per_endpoint) EXPECT_LE(n, 7);
        std::lock_guard lock(mu);
        for (const auto& c : *r) claimed.push_back(c.delivery_row);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  std::set<std::int64_t> unique(claimed.begin(), claimed.end());
  EXPECT_EQ(unique.size(), claimed.size()) << "a delivery was claimed twice";
  EXPECT_EQ(claimed.size(), 600u);
  (void)ep1, (void)ep2;
}

TEST_P(WebhooksDb, AnExpiredLeaseIsClaimedAgainAndTheStaleWorkerCannotOverwrite) {
  auto ep = endpoint(merchant_a_, "http://127.0.0.1:9/x");
  event(merchant_a_, "TX-1", "COMPLETED");
  FanoutOptions fo;
  fo.owner = "test";
  ASSERT_TRUE(fan_out(*db_, fo, clock_).ok());
  ClaimOptions co;
  co.owner = "dead-node/1";
  co.lease_ms = 1000;
  auto first = claim(*db_, co, clock_);
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ((*first)[0].attempt, 1);
  co.owner = "live-node/1";
  EXPECT_TRUE(claim(*db_, co, clock_ + 500)->empty());  // leased
  auto again = claim(*db_, co, clock_ + 1001);          // the lease ran out (the node died)
  ASSERT_EQ(again->size(), 1u);
  // The dead node's late result is recorded as an attempt but does not touch the delivery.
  AttemptResult late;
  late.delivery_row = (*first)[0].delivery_row;
  late.endpoint_row = (*first)[0].endpoint_row;
  late.lease_owner = "dead-node/1";
  late.attempt = 1;
  late.started_at = late.finished_at = clock_ + 1100;
  late.outcome = "succeeded";
  late.status_code = 200;
  RecordOptions ro;
  auto rec = record(*db_, {late}, ro, clock_ + 1100);
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->stale, 1);
  EXPECT_EQ(str("SELECT status FROM webhook_deliveries"), "pending");
  late.lease_owner = "live-node/1";
  rec = record(*db_, {late}, ro, clock_ + 1200);
  EXPECT_EQ(rec->stale, 0);
  EXPECT_EQ(str("SELECT status FROM webhook_deliveries"), "succeeded");
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM webhook_attempts"), 2);
  (void)ep;
}

TEST_P(WebhooksDb, FanOutPicksUpEventsCommittedOutOfIdOrder) {
  // On PostgreSQL a transaction holding a lower id can commit after a higher one.
  auto ep = endpoint(merchant_a_, "http://127.0.0.1:9/x");
  auto insert = [&](std::int64_t id) {
    Status st = db_->write([&](store::Conn& c) -> Status {
      SIKA_TRY(
          c.exec("INSERT INTO events (id, event_id, merchant_id, event_type, subject, sequence, payload, created_at) "
                 "VALUES (?, ?, ?, 'transaction.status_changed', ?, 1, '{}', ?)",
                 {id, "evt_" + std::to_string(id), merchant_a_, "S" + std::to_string(id), clock_.load()}));
      return {};
    });
    ASSERT_TRUE(st.ok()) << text(st.error());
  };
  insert(1001);
  insert(1003);
  FanoutOptions fo;
  fo.owner = "test";
  auto r = fan_out(*db_, fo, clock_);
  ASSERT_TRUE(r.ok()) << text(r.error());
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM webhook_deliveries"), 2);
  insert(1002);  // "commits late"
  ASSERT_TRUE(fan_out(*db_, fo, clock_ + 1000).ok());
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM webhook_deliveries"), 3);
  // Fan-out is idempotent.
  ASSERT_TRUE(fan_out(*db_, fo, clock_ + 2000).ok());
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM webhook_deliveries"), 3);
  // Another node cannot fan out while the lease is held.
  FanoutOptions other = fo;
  other.owner = "other";
  EXPECT_FALSE(fan_out(*db_, other, clock_ + 2000)->leased);
  (void)ep;
}

TEST_P(WebhooksDb, RotationSignsWithBothSecretsDuringTheOverlap) {
  FakeClient client;
  auto ep = endpoint(merchant_a_, "http://127.0.0.1:9/r");
  auto rotated = registry_->rotate_secret(merchant_a_, ep.endpoint.id, 3'600'000, clock_);
  ASSERT_TRUE(rotated.ok());
  EXPECT_NE(rotated->secret, ep.secret);
  EXPECT_EQ(rotated->endpoint.previous_secret_expires_at, clock_ + 3'600'000);
  event(merchant_a_, "TX-1", "COMPLETED");
  Worker& w = worker(client);
  ASSERT_EQ(*w.run_once(clock_), 1);
  auto call = client.calls_to("http://127.0.0.1:9/r").at(0).req;
  std::string sig = FakeClient::header(call, "webhook-signature");
  std::int64_t ts = std::stoll(FakeClient::header(call, "webhook-timestamp"));
  std::string id = FakeClient::header(call, "webhook-id");
  EXPECT_EQ(std::count(sig.begin(), sig.end(), ' '), 1);
  EXPECT_TRUE(verify(*secret_key_bytes(rotated->secret), id, ts, call.body, sig));
  EXPECT_TRUE(verify(*secret_key_bytes(ep.secret), id, ts, call.body, sig));
  // After the overlap only the new secret signs.
  clock_ += 3'600'001;
  event(merchant_a_, "TX-2", "COMPLETED");
  ASSERT_EQ(*w.run_once(clock_), 1);
  call = client.calls_to("http://127.0.0.1:9/r").at(1).req;
  sig = FakeClient::header(call, "webhook-signature");
  EXPECT_EQ(sig.find(' '), std::string::npos);
  ts = std::stoll(FakeClient::header(call, "webhook-timestamp"));
  id = FakeClient::header(call, "webhook-id");
  EXPECT_TRUE(verify(*secret_key_bytes(rotated->secret), id, ts, call.body, sig));
  EXPECT_FALSE(verify(*secret_key_bytes(ep.secret), id, ts, call.body, sig));
  // overlap 0 drops the old secret at once; out-of-range overlaps are refused.
  auto now_only = registry_->rotate_secret(merchant_a_, ep.endpoint.id, 0, clock_);
  EXPECT_FALSE(now_only->endpoint.previous_secret_expires_at);
  EXPECT_EQ(registry_->rotate_secret(merchant_a_, ep.endpoint.id, 30LL * 24 * 3600 * 1000, clock_).error().kind,
            sika::ErrorKind::invalid);
}

TEST_P(WebhooksDb, RedeliveryQueuesTheSameEventAgain) {
  FakeClient client;
  auto ep = endpoint(merchant_a_, "http://127.0.0.1:9/r");
  std::string id = event(merchant_a_, "TX-1", "COMPLETED");
  Worker& w = worker(client);
  ASSERT_EQ(*w.run_once(clock_), 1);
  auto again = registry_->redeliver(merchant_a_, id, std::nullopt, clock_);
  ASSERT_TRUE(again.ok()) << text(again.error());
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ((*again)[0].generation, 1);
  EXPECT_EQ((*again)[0].status, "pending");
  ASSERT_EQ(*w.run_once(clock_), 1);
  auto calls = client.calls_to("http://127.0.0.1:9/r");
  ASSERT_EQ(calls.size(), 2u);
  // Same event, same webhook-id and body: receivers deduplicate on it.
  EXPECT_EQ(FakeClient::header(calls[0].req, "webhook-id"), FakeClient::header(calls[1].req, "webhook-id"));
  EXPECT_EQ(calls[0].req.body, calls[1].req.body);
  auto two = registry_->redeliver(merchant_a_, id, ep.endpoint.id, clock_);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ((*two)[0].generation, 2);
  // Another merchant's event is not found.
  EXPECT_EQ(registry_->redeliver(merchant_b_, id, std::nullopt, clock_).error().kind, sika::ErrorKind::not_found);
  EXPECT_EQ(registry_->redeliver(merchant_a_, "evt_nope", std::nullopt, clock_).error().kind,
            sika::ErrorKind::not_found);
  DeliveryFilter f;
  f.event_id = id;
  EXPECT_EQ(registry_->list_deliveries(merchant_a_, f, 25, 0)->total, 3);
  EXPECT_EQ(registry_->list_deliveries(merchant_b_, f, 25, 0)->total, 0);
  f.status = "pending";
  EXPECT_EQ(registry_->list_deliveries(merchant_a_, f, 25, 0)->total, 1);
  f.status = "bogus";
  EXPECT_EQ(registry_->list_deliveries(merchant_a_, f, 25, 0).error().kind, sika::ErrorKind::invalid);
  EXPECT_EQ(registry_->list_events(merchant_a_, std::nullopt, 25, 0)->total, 1);
  EXPECT_EQ(registry_->list_events(merchant_b_, std::nullopt, 25, 0)->total, 0);
}

TEST_P(WebhooksDb, AHangingEndpointDoesNotDelayTheOthers) {
  FakeClient client;
  auto slow = endpoint(merchant_a_, "http://127.0.0.1:9/hang");
  auto fast = endpoint(merchant_b_, "http://127.0.0.1:9/fast");
  client.status["http://127.0.0.1:9/hang"] = -2;
  WorkerOptions wo;
  wo.threads = 8;
  wo.max_in_flight_per_endpoint = 2;
  wo.timeout_ms = 20'000;
  wo.poll_interval_ms = 20;
  wo.allow_private_targets = true;
  Worker w(*db_, client, *registry_, wo);
  for (int i = 0; i < 50; ++i)
    event(merchant_a_, "SLOW-" + std::to_string(i), "COMPLETED", "transaction.status_changed", now_ms());
  for (int i = 0; i < 200; ++i)
    event(merchant_b_, "FAST-" + std::to_string(i), "COMPLETED", "transaction.status_changed", now_ms());
  // Endpoints were created at clock_ (2023), events now: both subscribed.
  w.start();
  auto deadline = std::chrono::steady_clock::now() + 15s;
  while (std::chrono::steady_clock::now() < deadline &&
         scalar("SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'succeeded'") < 200)
    std::this_thread::sleep_for(20ms);
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'succeeded'"), 200);
  EXPECT_EQ(client.calls_to("http://127.0.0.1:9/fast").size(), 200u);
  // The hanging endpoint holds at most its in-flight cap.
  EXPECT_LE(client.hanging.load(), 2);
  EXPECT_EQ(client.calls_to("http://127.0.0.1:9/hang").size(), 2u);
  client.release();
  w.stop();
  // Every attempt made was recorded, the unsent claimed ones were given back.
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM webhook_attempts"), 202);
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM webhook_deliveries WHERE lease_owner IS NOT NULL"), 0);
  (void)slow, (void)fast;
}

TEST_P(WebhooksDb, ASlowEndpointGivesBackWhatWasQueuedForIt) {
  FakeClient client;
  auto slow = endpoint(merchant_a_, "http://127.0.0.1:9/slow");
  client.status["http://127.0.0.1:9/slow"] = -2;  // answers nothing; the request times out
  WorkerOptions wo;
  wo.threads = 4;
  wo.max_in_flight_per_endpoint = 1;
  wo.prefetch_per_endpoint = 4;
  wo.timeout_ms = 300;
  wo.poll_interval_ms = 20;
  wo.allow_private_targets = true;
  Worker w(*db_, client, *registry_, wo);
  for (int i = 0; i < 10; ++i)
    event(merchant_a_, "S-" + std::to_string(i), "COMPLETED", "transaction.status_changed", now_ms());
  w.start();
  // Before the first timeout the endpoint looks healthy: 4 held here (1 in flight, 3 queued).
  auto until = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < until &&
         scalar("SELECT COUNT(*) FROM webhook_attempts WHERE outcome = 'timeout'") < 2)
    std::this_thread::sleep_for(10ms);
  ASSERT_GE(scalar("SELECT COUNT(*) FROM webhook_attempts WHERE outcome = 'timeout'"), 2);
  // After it, at most its in-flight maximum stays leased; the rest went back to the database.
  EXPECT_LE(scalar("SELECT COUNT(*) FROM webhook_deliveries WHERE lease_owner IS NOT NULL"), 1);
  EXPECT_LE(client.hanging.load(), 1);
  w.stop();
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM webhook_deliveries WHERE lease_owner IS NOT NULL"), 0);
  (void)slow;
}

TEST_P(WebhooksDb, ThreadedWorkerDeliversEveryEventAtLeastOnce) {
  FakeClient client;
  endpoint(merchant_a_, "http://127.0.0.1:9/w");
  WorkerOptions wo;
  wo.threads = 4;
  wo.poll_interval_ms = 10;
  wo.schedule = *RetrySchedule::parse("50ms,100ms,200ms,400ms,800ms,1s,1s,1s,1s,1s,1s,1s");
  wo.allow_private_targets = true;
  Worker w(*db_, client, *registry_, wo);
  client.status["http://127.0.0.1:9/w"] = 503;  // down at first
  w.start();
  std::set<std::string> ids;
  for (int i = 0; i < 100; ++i)
    ids.insert(event(merchant_a_, "TX-" + std::to_string(i % 10), "COMPLETED", "transaction.status_changed", now_ms()));
  // Down until every event has failed at least once.
  auto down_until = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < down_until &&
         scalar("SELECT COUNT(DISTINCT delivery_row) FROM webhook_attempts WHERE status_code = 503") < 100)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'pending'"), 100);
  {
    std::lock_guard lock(client.mu);
    client.status["http://127.0.0.1:9/w"] = 200;  // back
  }
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline &&
         scalar("SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'succeeded'") < 100)
    std::this_thread::sleep_for(20ms);
  w.stop();
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'succeeded'"), 100);
  std::set<std::string> received;
  {
    std::lock_guard lock(client.mu);
    for (const auto& c : client.calls)
      if (bj::parse(c.req.body).as_object()["event_id"].is_string())
        received.insert(std::string(bj::parse(c.req.body).as_object()["event_id"].as_string()));
  }
  EXPECT_EQ(received, ids);
}

// ---- gateway handlers -------------------------------------------------------------------------

TEST_P(WebhooksDb, HandlersValidateAndScopeToTheCallersMerchant) {
  FakeClient client;
  Options o;
  o.pepper = std::string(kPepper);
  o.allow_private_targets = false;
  Service svc(*db_, client, o);
  auto req = [&](std::int64_t merchant, std::string body = "",
                 std::vector<std::pair<std::string, std::string>> path = {}) {
    web::Request r;
    r.method = "POST";
    r.body = std::move(body);
    r.headers = {{"content-type", "application/json"}};
    r.path_params = std::move(path);
    web::Principal p;
    p.merchant_id = merchant;
    p.scopes = {"payments"};
    r.principal = p;
    return r;
  };
  auto json_of = [](const web::Response& r) { return bj::parse(r.body).as_object(); };

  auto r = req(merchant_a_, R"({"url":"http://169.254.169.254/latest"})");
  auto res = web::respond(r, svc.create_endpoint(r));
  EXPECT_EQ(res.status, 400);
  EXPECT_TRUE(json_of(res)["error"].as_object()["details"].as_object().contains("url"));

  r = req(merchant_a_, R"({"url":"https://93.184.216.34/hook","secret":"whsec_mine"})");
  res = web::respond(r, svc.create_endpoint(r));
  EXPECT_EQ(res.status, 400);
  EXPECT_TRUE(json_of(res)["error"].as_object()["details"].as_object().contains("secret"));

  r = req(merchant_a_, R"({"url":"https://93.184.216.34/hook","event_types":["Bad Kind"]})");
  EXPECT_EQ(web::respond(r, svc.create_endpoint(r)).status, 400);
  r = req(merchant_a_, R"({"url":42})");
  EXPECT_EQ(web::respond(r, svc.create_endpoint(r)).status, 400);
  r = req(merchant_a_, "");
  EXPECT_EQ(web::respond(r, svc.create_endpoint(r)).status, 400);
  r = req(0, R"({"url":"https://93.184.216.34/hook"})");
  EXPECT_EQ(web::respond(r, svc.create_endpoint(r)).status, 403);

  r = req(merchant_a_, R"({"url":"https://93.184.216.34/hook","event_types":["transaction.*"],"description":"main"})");
  res = web::respond(r, svc.create_endpoint(r));
  ASSERT_EQ(res.status, 201) << res.body;
  auto created = json_of(res);
  EXPECT_EQ(created["code"], 201);
  std::string id(created["data"].as_object()["id"].as_string());
  EXPECT_TRUE(created["data"].as_object()["secret"].as_string().starts_with("whsec_"));

  r = req(merchant_a_, "", {{"endpoint_id", id}});
  res = web::respond(r, svc.get_endpoint(r));
  EXPECT_EQ(res.status, 200);
  EXPECT_FALSE(json_of(res)["data"].as_object().contains("secret"));
  r = req(merchant_b_, "", {{"endpoint_id", id}});
  EXPECT_EQ(web::respond(r, svc.get_endpoint(r)).status, 404);
  r = req(merchant_b_, R"({"enabled":false})", {{"endpoint_id", id}});
  EXPECT_EQ(web::respond(r, svc.update_endpoint(r)).status, 404);
  r = req(merchant_b_, "", {{"endpoint_id", id}});
  EXPECT_EQ(web::respond(r, svc.rotate_secret(r)).status, 404);
  EXPECT_EQ(web::respond(r, svc.delete_endpoint(r)).status, 404);

  r = req(merchant_a_, R"({"overlap_seconds":60})", {{"endpoint_id", id}});
  res = web::respond(r, svc.rotate_secret(r));
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_TRUE(json_of(res)["data"].as_object()["secret"].as_string().starts_with("whsec_"));
  r = req(merchant_a_, R"({"overlap_seconds":-1})", {{"endpoint_id", id}});
  EXPECT_EQ(web::respond(r, svc.rotate_secret(r)).status, 400);
  // A key the request does not take is a typed problem naming the one field it does, fr and en.
  r = req(merchant_a_, R"({"overlap":60})", {{"endpoint_id", id}});
  auto other = svc.rotate_secret(r);
  ASSERT_FALSE(other.ok());
  ASSERT_NE(other.error().problem("overlap"), nullptr);
  EXPECT_EQ(other.error().problem("overlap")->reason, Reason::request_field);
  EXPECT_EQ(other.error().details.at("overlap").as_string(),
            "is not a field of this request (allowed: overlap_seconds)");
  EXPECT_EQ(reason::text(*other.error().problem("overlap"), i18n::Locale::fr),
            "n'est pas un champ de cette requête (permis : overlap_seconds)");
  r = req(merchant_a_, R"({"endpoint":"x"})", {{"event_id", "evt_missing"}});
  auto other_redeliver = svc.redeliver(r);
  ASSERT_FALSE(other_redeliver.ok());
  EXPECT_EQ(other_redeliver.error().problem("endpoint")->reason, Reason::request_field);
  EXPECT_EQ(other_redeliver.error().details.at("endpoint").as_string(),
            "is not a field of this request (allowed: endpoint_id)");

  r = req(merchant_a_, R"({"enabled":false,"description":"paused"})", {{"endpoint_id", id}});
  res = web::respond(r, svc.update_endpoint(r));
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(json_of(res)["data"].as_object()["enabled"], false);
  EXPECT_EQ(json_of(res)["data"].as_object()["disabled_reason"], "merchant");

  r = req(merchant_a_);
  r.method = "GET";
  res = web::respond(r, svc.list_endpoints(r));
  ASSERT_EQ(res.status, 200);
  EXPECT_EQ(json_of(res)["meta"].as_object()["pagination"].as_object()["total"], 1);
  r.query = {{"limit", "0"}};
  EXPECT_EQ(web::respond(r, svc.list_endpoints(r)).status, 400);
  r = req(merchant_b_);
  r.method = "GET";
  EXPECT_EQ(json_of(web::respond(r, svc.list_endpoints(r)))["meta"].as_object()["pagination"].as_object()["total"], 0);

  r = req(merchant_a_, "", {{"event_id", "evt_missing"}});
  EXPECT_EQ(web::respond(r, svc.redeliver(r)).status, 404);
  r = req(merchant_a_, R"({"endpoint":"x"})", {{"event_id", "evt_missing"}});
  EXPECT_EQ(web::respond(r, svc.redeliver(r)).status, 400);
  r = req(merchant_a_, "", {{"delivery_id", "wd_missing"}});
  EXPECT_EQ(web::respond(r, svc.get_delivery(r)).status, 404);

  r = req(merchant_a_, "", {{"endpoint_id", id}});
  EXPECT_EQ(web::respond(r, svc.delete_endpoint(r)).status, 200);
  EXPECT_EQ(web::respond(r, svc.get_endpoint(r)).status, 404);
}

INSTANTIATE_TEST_SUITE_P(Backends, WebhooksDb, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace sika::webhooks
