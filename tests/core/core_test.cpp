#include <gtest/gtest.h>

#include "core/time_zone.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/crypto.hpp"
#include "core/i18n.hpp"
#include "core/json.hpp"
#include "core/metrics.hpp"
#include "core/random.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"

using namespace sika;
namespace bj = boost::json;

// Every reason has a French and an English text, and both name the same parameters: a page in
// either language shows every value the other shows.
TEST(Reasons, EveryReasonHasBothTextsWithTheSamePlaceholders) {
  ASSERT_FALSE(reason::all().empty());
  std::set<std::string_view> names;
  for (Reason r : reason::all()) {
    const std::string code = reason::code(r);
    EXPECT_TRUE(names.insert(reason::name(r)).second) << code;
    ASSERT_TRUE(i18n::known(code)) << code << " has no texts in core/i18n.cpp";
    const std::string_view fr = i18n::text(code, i18n::Locale::fr), en = i18n::text(code, i18n::Locale::en);
    EXPECT_FALSE(fr.empty()) << code;
    EXPECT_FALSE(en.empty()) << code;
    EXPECT_NE(fr, en) << code;
    auto fr_params = reason::placeholders(fr), en_params = reason::placeholders(en);
    std::sort(fr_params.begin(), fr_params.end());
    std::sort(en_params.begin(), en_params.end());
    EXPECT_EQ(fr_params, en_params) << code;
  }
  // Every "reason." text of the table belongs to a reason (none left behind by a rename).
  for (std::string_view code : i18n::all_codes())
    if (code.starts_with("reason.")) EXPECT_TRUE(names.contains(code.substr(7))) << code;
}

TEST(Reasons, TextPutsTheParametersIntoTheTemplateOfTheLocale) {
  EXPECT_EQ(reason::text(reason::at_most_chars(200), i18n::Locale::en), "must be at most 200 characters");
  EXPECT_EQ(reason::text(reason::at_most_chars(200), i18n::Locale::fr), "doit faire au plus 200 caractères");
  EXPECT_EQ(reason::text(Reason::required, i18n::Locale::fr), "est obligatoire");
  EXPECT_EQ(reason::text(reason::untyped("as sent"), i18n::Locale::fr), "as sent");
  EXPECT_EQ(reason::placeholders("{a} and {b}"), (std::vector<std::string_view>{"a", "b"}));
}

// A field problem is a reason: FieldErrors takes no free text, so none can be added by mistake.
template <typename E>
concept TakesFreeText = requires(E e) {
  e.add("amount", "is too large");
};
static_assert(!TakesFreeText<json::FieldErrors>, "FieldErrors::add takes a Problem, not a text");

TEST(Reasons, FieldErrorsKeepTheFirstProblemOfAFieldAndRenderDetailsInEnglish) {
  json::FieldErrors errors;
  errors.add("amount", Reason::too_large);
  errors.add("name", reason::at_most_chars(200));
  errors.add("amount", Reason::required);
  json::FieldErrors line;
  line.add("rate", Reason::required);
  errors.add_all("distribution[0].", line);
  Status st = errors.status();
  ASSERT_FALSE(st);
  const Error& e = st.error();
  EXPECT_TRUE(e.is(ErrorKind::invalid));
  EXPECT_EQ(e.code, "empty_data");
  EXPECT_EQ(
      json::dump(e.details),
      R"({"amount":"is too large","name":"must be at most 200 characters","distribution[0].rate":"is required"})");
  ASSERT_EQ(e.problems.size(), 3u);
  ASSERT_NE(e.problem("amount"), nullptr);
  EXPECT_EQ(e.problem("amount")->reason, Reason::too_large);
  EXPECT_EQ(e.problem("name")->param("max"), "200");
  EXPECT_EQ(e.problem("distribution[0].rate")->reason, Reason::required);
  EXPECT_TRUE(e.has(Reason::required));
  EXPECT_FALSE(e.has(Reason::not_number));
}

TEST(Reasons, AProblemOfTheWholeRequestIsAStringDetail) {
  Error e = field_error("", Reason::body_empty);
  EXPECT_EQ(json::dump(e.details), R"("request body is empty")");
  ASSERT_NE(e.problem(""), nullptr);
  EXPECT_EQ(e.problem("")->reason, Reason::body_empty);
  Error c = with_problem(conflict(), "orderId", Reason::order_paid);
  EXPECT_TRUE(c.is(ErrorKind::conflict));
  EXPECT_EQ(json::dump(c.details), R"({"orderId":"this order is already paid"})");
}

TEST(I18n, EveryCodeHasBothTextsAndTableIsSorted) {
  auto codes = i18n::all_codes();
  ASSERT_FALSE(codes.empty());
  for (std::size_t i = 0; i < codes.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(codes[i - 1], codes[i]) << "message table must stay sorted";
    }
    EXPECT_TRUE(i18n::known(codes[i]));
    EXPECT_NE(i18n::text(codes[i], i18n::Locale::fr), codes[i]);
    EXPECT_NE(i18n::text(codes[i], i18n::Locale::en), codes[i]);
    EXPECT_NE(i18n::text(codes[i], i18n::Locale::fr), i18n::text(codes[i], i18n::Locale::en)) << codes[i];
  }
}

TEST(I18n, NegotiatesFromAcceptLanguage) {
  using i18n::Locale;
  EXPECT_EQ(i18n::negotiate("", Locale::fr), Locale::fr);
  EXPECT_EQ(i18n::negotiate("en-US,en;q=0.9", Locale::fr), Locale::en);
  EXPECT_EQ(i18n::negotiate("fr-CM", Locale::en), Locale::fr);
  EXPECT_EQ(i18n::negotiate("de,en;q=0.3,fr;q=0.7", Locale::en), Locale::fr);
  EXPECT_EQ(i18n::negotiate("de", Locale::en), Locale::en);
  EXPECT_EQ(i18n::negotiate("*", Locale::fr), Locale::fr);
}

TEST(Json, ParseObjectRejectsEmptyMalformedAndNonObjects) {
  EXPECT_EQ(json::parse_object("").error().code, "empty_data");
  EXPECT_EQ(json::parse_object("   ").error().code, "empty_data");
  EXPECT_EQ(json::parse_object("{").error().code, "empty_data");
  EXPECT_EQ(json::parse_object("[1]").error().kind, sika::ErrorKind::invalid);
  EXPECT_TRUE(json::parse_object(R"({"a":1})").ok());
  std::string deep(200, '[');
  EXPECT_FALSE(json::parse(deep).ok());
}

TEST(Json, ParseRefusesDuplicateKeysAtEveryDepthNamingTheMember) {
  auto top = json::parse_object(R"({"channel":"PROVIDER","channel":"WALLET"})");
  ASSERT_FALSE(top.ok());
  EXPECT_EQ(top.error().code, "empty_data");
  EXPECT_TRUE(top.error().details.as_object().contains("channel")) << json::dump(top.error().details);
  auto nested = json::parse(R"({"a":{"b":1},"lines":[{"x":1},{"y":2,"y":3}]})");
  ASSERT_FALSE(nested.ok());
  EXPECT_TRUE(nested.error().details.as_object().contains("lines[1].y")) << json::dump(nested.error().details);
  auto deep = json::parse(R"({"metadata":{"note":"a","note":"b"}})");
  ASSERT_FALSE(deep.ok());
  EXPECT_TRUE(deep.error().details.as_object().contains("metadata.note"));
  // The same key in sibling objects is not a duplicate; escapes are compared decoded.
  EXPECT_TRUE(json::parse(R"({"a":{"k":1},"b":{"k":2},"c":[{"k":1},{"k":2}]})").ok());
  EXPECT_FALSE(json::parse(R"({"k":1,"\u006b":2})").ok());
}

TEST(Json, ParseRefusesNulInStringsAndKeys) {
  auto value = json::parse_object(R"({"description":"ab\u0000cd"})");
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.error().code, "empty_data");
  EXPECT_TRUE(value.error().details.as_object().contains("description")) << json::dump(value.error().details);
  auto in_array = json::parse(R"({"refs":["ok","\u0000"]})");
  ASSERT_FALSE(in_array.ok());
  EXPECT_TRUE(in_array.error().details.as_object().contains("refs[1]"));
  EXPECT_FALSE(json::parse(R"({"a\u0000b":1})").ok());
  // A long string arrives in parts: the check still sees every part.
  std::string long_text = R"({"description":")" + std::string(100000, 'x') + R"(\u0000"})";
  EXPECT_FALSE(json::parse(long_text).ok());
  auto fine = json::parse(R"({"a":"\u00e9\n","b":[1,-2,3.5,true,null,{"c":"d"}],"e":18446744073709551615})");
  ASSERT_TRUE(fine.ok());
  EXPECT_EQ(fine->at("a").as_string(), "\xc3\xa9\n");
  EXPECT_EQ(fine->at("e").as_uint64(), 18446744073709551615ULL);
  EXPECT_FALSE(json::parse(R"({"a":1} x)").ok());
}

TEST(Json, DumpWritesNumbersWithoutExponentWhereUnneeded) {
  bj::object o;
  o["three"] = 3.0;
  o["ten_thousand"] = 1e4;
  o["quarter"] = 0.25;
  o["negative"] = -2.5;
  o["tiny"] = 1e-7;
  o["int"] = std::int64_t{-42};
  o["big"] = std::uint64_t{18446744073709551615ULL};
  o["nan"] = std::nan("");
  EXPECT_EQ(json::dump(o), R"({"three":3,"ten_thousand":10000,"quarter":0.25,"negative":-2.5,"tiny":1e-07,"int":-42,)"
                           R"("big":18446744073709551615,"nan":null})");
  // Every double survives a round trip.
  for (double d : {0.1, 1.0 / 3, 123456.789, 1e21, 5e-324})
    EXPECT_EQ(bj::parse(json::dump(bj::value(d))).as_double(), d) << d;
  // Strings are escaped as JSON requires, UTF-8 passes through.
  bj::value s = bj::string("q\"\\/\b\f\n\r\t\x01\x1f\xc3\xa9");
  EXPECT_EQ(json::dump(s), R"("q\"\\/\b\f\n\r\t\u0001\u001f)"
                           "\xc3\xa9\"");
  EXPECT_EQ(bj::parse(json::dump(s)), s);
  EXPECT_EQ(json::dump(bj::parse(R"({"a":[],"b":{},"c":[null,false]})")), R"({"a":[],"b":{},"c":[null,false]})");
}

TEST(Json, TypedReadersRecordPreciseProblems) {
  auto o = json::parse_object(R"({"s":"x","i":5,"f":1.5,"b":true,"big":18446744073709551615,"n":null})").value();
  json::FieldErrors errors;
  EXPECT_EQ(json::get_string(o, "s", errors), "x");
  EXPECT_EQ(json::get_int(o, "i", errors), 5);
  EXPECT_EQ(json::get_number(o, "f", errors), 1.5);
  EXPECT_EQ(json::get_bool(o, "b", errors), true);
  EXPECT_TRUE(errors.empty());
  EXPECT_FALSE(json::get_int(o, "f", errors));
  EXPECT_FALSE(json::get_int(o, "big", errors));
  EXPECT_FALSE(json::get_string(o, "i", errors));
  EXPECT_FALSE(json::get_string(o, "n", errors, true));
  EXPECT_FALSE(json::get_string(o, "missing", errors, true));
  auto d = errors.details();
  EXPECT_EQ(d.at("f").as_string(), "must be an integer");
  EXPECT_EQ(d.at("big").as_string(), "is too large");
  EXPECT_EQ(d.at("i").as_string(), "must be a string");
  EXPECT_EQ(d.at("n").as_string(), "is required");
  EXPECT_EQ(d.at("missing").as_string(), "is required");
  EXPECT_EQ(errors.status().error().code, "empty_data");
}

TEST(Random, UuidAndTokens) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string u = uuid_v4();
    EXPECT_TRUE(is_uuid(u)) << u;
    EXPECT_EQ(u[14], '4');
    EXPECT_TRUE(seen.insert(u).second);
  }
  EXPECT_FALSE(is_uuid("not-a-uuid"));
  EXPECT_FALSE(is_uuid("123e4567-e89b-12d3-a456-42661417400g"));
  EXPECT_TRUE(is_uuid("123E4567-E89B-12D3-A456-426614174000"));
  EXPECT_EQ(random_token(32).size(), 43u);
  std::string ref = random_reference("TX", 10);
  EXPECT_EQ(ref.size(), 12u);
  EXPECT_EQ(ref.find_first_of("01IO", 2), std::string::npos);
}

// Time-ordered ids: the time part sorts as the time does, the rest is random, and the format
// is prefix + 20 characters of the alphabet without 0/O/1/I.
TEST(Random, SortableReferencesAndVersion7UuidsSortByTime) {
  const std::vector<std::int64_t> times = {
      0, 1, 31, 32, 1023, 1024, 1'700'000'000'000, 1'795'000'000'000, (std::int64_t{1} << 40) - 1};
  for (std::size_t i = 1; i < times.size(); ++i)
    EXPECT_LT(sortable_time_prefix(times[i - 1]), sortable_time_prefix(times[i])) << times[i];
  EXPECT_EQ(sortable_time_prefix(0), "22222222");
  EXPECT_EQ(sortable_time_prefix(std::int64_t{1} << 40), "22222222");  // wraps after 2^40 ms

  std::set<std::string> seen;
  std::string previous;
  for (int i = 0; i < 200; ++i) {
    const std::int64_t before = now_ms();
    std::string ref = sortable_reference("TX-");
    const std::int64_t after = now_ms();
    ASSERT_EQ(ref.size(), 23u);
    EXPECT_EQ(ref.substr(0, 3), "TX-");
    EXPECT_EQ(ref.find_first_not_of("23456789ABCDEFGHJKLMNPQRSTUVWXYZ", 3), std::string::npos) << ref;
    EXPECT_GE(ref.substr(3, 8), sortable_time_prefix(before));
    EXPECT_LE(ref.substr(3, 8), sortable_time_prefix(after));
    EXPECT_GE(ref.substr(3, 8), previous.empty() ? "" : previous.substr(3, 8));
    EXPECT_TRUE(seen.insert(ref).second);
    previous = ref;

    std::string u = uuid_v7();
    EXPECT_TRUE(is_uuid(u)) << u;
    EXPECT_EQ(u[14], '7');
    EXPECT_NE(std::string("89ab").find(u[19]), std::string::npos) << u;
    const std::int64_t ms = std::stoll(u.substr(0, 8) + u.substr(9, 4), nullptr, 16);
    EXPECT_GE(ms, before);
    EXPECT_LE(ms, now_ms());
    EXPECT_TRUE(seen.insert(u).second);
  }
}

// Small requests come from per-thread blocks: threads, block boundaries and a forked child
// never see the same bytes twice.
TEST(Random, BlocksAreNeverSharedAcrossThreadsOrForks) {
  std::mutex mu;
  std::set<std::string> seen;
  bool duplicate = false;
  auto draw = [&] {
    std::vector<std::string> mine;
    for (int i = 0; i < 2000; ++i) mine.push_back(random_bytes(1 + i % 40));  // crosses block boundaries
    std::lock_guard lock(mu);
    for (auto& b : mine)
      if (b.size() >= 8 && !seen.insert(b).second) duplicate = true;
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(draw);
  for (auto& th : threads) th.join();
  EXPECT_FALSE(duplicate);

  std::string parent_next;
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  (void)random_bytes(16);  // the parent's block is partly used
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string b = random_bytes(32);
    (void)!::write(pipe_fds[1], b.data(), b.size());
    ::_exit(0);
  }
  parent_next = random_bytes(32);
  std::string child_bytes(32, '\0');
  ASSERT_EQ(::read(pipe_fds[0], child_bytes.data(), child_bytes.size()), 32);
  ::waitpid(child, nullptr, 0);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  EXPECT_NE(child_bytes, parent_next);
}

TEST(Random, NameBasedUuidsAreTheSha256OfTheNameInTheVersion5Layout) {
  const std::string u = crypto::uuid_from_name("payment-link:PLK-1:abc");
  EXPECT_TRUE(is_uuid(u)) << u;
  EXPECT_EQ(u, crypto::uuid_from_name("payment-link:PLK-1:abc"));
  EXPECT_NE(u, crypto::uuid_from_name("payment-link:PLK-1:abd"));
  EXPECT_EQ(u[14], '5');
  EXPECT_TRUE(u[19] == '8' || u[19] == '9' || u[19] == 'a' || u[19] == 'b') << u;
  // The first 16 bytes of SHA-256, version and variant bits set: what stored collection uuids hold.
  std::string b = crypto::sha256("payment-link:PLK-1:abc").substr(0, 16);
  b[6] = static_cast<char>((b[6] & 0x0F) | 0x50);
  b[8] = static_cast<char>((b[8] & 0x3F) | 0x80);
  std::string h = hex_encode(b);
  EXPECT_EQ(u, h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" +
                   h.substr(20, 12));
}

TEST(Json, NumberTextIsTheNumberAsSent) {
  EXPECT_EQ(json::number_text(boost::json::value(5000)), "5000");
  EXPECT_EQ(json::number_text(boost::json::value(10.5)), "10.5");
  EXPECT_EQ(json::number_text(boost::json::value(0.35)), "0.35");
  EXPECT_FALSE(json::number_text(boost::json::value("5000")));
  EXPECT_FALSE(json::number_text(boost::json::value(true)));
}

TEST(Random, Base64RoundTrips) {
  std::string bytes = random_bytes(100);
  std::string out;
  ASSERT_TRUE(base64url_decode(base64url_encode(bytes), out));
  EXPECT_EQ(out, bytes);
  ASSERT_TRUE(base64_decode(base64_encode(bytes), out));
  EXPECT_EQ(out, bytes);
  EXPECT_FALSE(base64url_decode("***", out));
  EXPECT_EQ(base64_encode("hello"), "aGVsbG8=");
  EXPECT_EQ(hex_encode("\x01\xab"), "01ab");
}

TEST(Time, Iso8601RoundTrip) {
  EXPECT_EQ(iso8601(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(iso8601(1795311512123), "2026-11-22T01:38:32.123Z");
  EXPECT_EQ(iso8601(-1), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(iso8601(1709208000007), "2024-02-29T12:00:00.007Z");
  EXPECT_EQ(iso8601(253402300799999), "9999-12-31T23:59:59.999Z");
  EXPECT_EQ(iso8601(253402300800000), "10000-01-01T00:00:00.000Z");
  // Every written instant reads back as itself, across four centuries of days and times.
  for (std::int64_t ms = -2208988800000; ms < 4102444800000; ms += std::int64_t{86399993} * 37)
    EXPECT_EQ(parse_iso8601(iso8601(ms)), ms) << iso8601(ms);
  EXPECT_EQ(parse_iso8601("2026-11-22T01:38:32.123Z"), 1795311512123);
  EXPECT_EQ(parse_iso8601("2026-11-22T02:38:32.123+01:00"), 1795311512123);
  EXPECT_EQ(parse_iso8601("2026-11-22T01:38:32Z"), 1795311512000);
  EXPECT_FALSE(parse_iso8601("2026-13-22T01:38:32Z"));
  EXPECT_FALSE(parse_iso8601("2026-11-22T01:38:32"));
  EXPECT_FALSE(parse_iso8601("yesterday"));
  for (std::int64_t t : {0LL, 1LL, 951782400000LL, 4102444799999LL}) EXPECT_EQ(parse_iso8601(iso8601(t)), t);
}

TEST(Crypto, KeyedSecretHashes) {
  std::string pepper(64, 'p');
  std::string h = crypto::secret_hash(pepper, "s3cret");
  EXPECT_EQ(h.size(), 64u);
  EXPECT_EQ(h, crypto::secret_hash(pepper, "s3cret"));
  EXPECT_NE(h, crypto::secret_hash(std::string(64, 'q'), "s3cret"));
  EXPECT_TRUE(crypto::secret_matches(pepper, "s3cret", h));
  EXPECT_FALSE(crypto::secret_matches(pepper, "s3cret!", h));
}

TEST(Crypto, HmacSha256KnownVector) {
  // RFC 4231 test case 2.
  EXPECT_EQ(hex_encode(crypto::hmac_sha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // RFC 4231 test case 6: a key longer than SHA-256's block is hashed first.
  EXPECT_EQ(hex_encode(crypto::hmac_sha256(std::string(131, '\xaa'),
                                           "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  // RFC 4231 test case 1: 20-byte key.
  EXPECT_EQ(hex_encode(crypto::hmac_sha256(std::string(20, '\x0b'), "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

TEST(Crypto, Argon2idPasswords) {
  std::string h = crypto::password_hash("correct horse");
  EXPECT_TRUE(h.starts_with("$argon2id$"));
  EXPECT_TRUE(crypto::password_verify("correct horse", h));
  EXPECT_FALSE(crypto::password_verify("wrong horse", h));
  EXPECT_FALSE(crypto::password_verify("correct horse", "garbage"));
}

TEST(Metrics, RendersCountersGaugesAndHistogramsInPrometheusText) {
  metrics::Registry r;
  auto& ok = r.counter("sika_test_requests_total", "Requests", {{"route", "/api/x"}, {"status", "200"}});
  ok.inc();
  ok.inc(2);
  EXPECT_EQ(&ok, &r.counter("sika_test_requests_total", "Requests", {{"route", "/api/x"}, {"status", "200"}}));
  r.counter("sika_test_requests_total", "Requests", {{"route", "/a\"b\\"}, {"status", "404"}}).inc();
  r.gauge("sika_test_depth", "Queue depth").set(2.5);
  auto& h = r.histogram("sika_test_seconds", "Latency", {0.1, 1}, {{"route", "/x"}});
  h.observe(0.05);
  h.observe(0.1);
  h.observe(0.5);
  h.observe(7);
  int scrapes = 0;
  r.on_scrape([&] { r.gauge("sika_test_scrapes", "Scrapes").set(++scrapes); });
  std::string text = r.render();
  EXPECT_NE(text.find("# HELP sika_test_requests_total Requests\n# TYPE sika_test_requests_total counter\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("sika_test_requests_total{route=\"/api/x\",status=\"200\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("sika_test_requests_total{route=\"/a\\\"b\\\\\",status=\"404\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE sika_test_depth gauge\nsika_test_depth 2.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("sika_test_seconds_bucket{route=\"/x\",le=\"0.1\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("sika_test_seconds_bucket{route=\"/x\",le=\"1\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("sika_test_seconds_bucket{route=\"/x\",le=\"+Inf\"} 4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("sika_test_seconds_sum{route=\"/x\"} 7.65\n"), std::string::npos) << text;
  EXPECT_NE(text.find("sika_test_seconds_count{route=\"/x\"} 4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("sika_test_scrapes 1\n"), std::string::npos) << text;
  EXPECT_THROW(r.gauge("sika_test_requests_total", "again as a gauge"), std::logic_error);
  EXPECT_THROW(r.counter("bad name", "x"), std::logic_error);
}

TEST(Metrics, ConcurrentUpdatesAreNotLost) {
  metrics::Registry r;
  auto& c = r.counter("sika_test_total", "x");
  auto& h = r.histogram("sika_test_hist", "x", metrics::latency_buckets());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.inc();
        h.observe(0.001);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.value(), 40000u);
  std::uint64_t total = 0;
  for (auto n : h.counts()) total += n;
  EXPECT_EQ(total, 40000u);
}

// Times as people read them, in a zone of the list (fixed offsets, no daylight saving time).
TEST(TimeZone, DatesAndTimesInTheZoneAndTheLanguage) {
  const std::int64_t at = *sika::parse_iso8601("2026-11-30T23:35:10Z");
  EXPECT_EQ(sika::tz::date_time(at, sika::i18n::Locale::fr, "Africa/Douala"), "1er décembre 2026 à 00:35 (UTC+1)");
  EXPECT_EQ(sika::tz::date_time(at, sika::i18n::Locale::en, "Africa/Abidjan"), "30 November 2026, 23:35 (UTC)");
  EXPECT_EQ(sika::tz::time_of_day(at, "Africa/Nairobi"), "02:35 UTC+3");
  EXPECT_EQ(sika::tz::short_date_time(at, sika::i18n::Locale::en, "Africa/Douala"), "2026-12-01 00:35");
  EXPECT_EQ(sika::tz::short_date_time(at, sika::i18n::Locale::fr, "Africa/Douala"), "01/12/2026 00:35");
  EXPECT_EQ(sika::tz::date_time(at, sika::i18n::Locale::en, "Mars/Olympus"), "30 November 2026, 23:35 (UTC)")
      << "an unknown zone formats in UTC";
  EXPECT_EQ(sika::tz::of_country("CMR"), "Africa/Douala");
  EXPECT_EQ(sika::tz::of_country("CIV"), "Africa/Abidjan");
  EXPECT_EQ(sika::tz::of_country("ZZZ"), "UTC");
  for (const auto& z : sika::tz::all()) EXPECT_TRUE(sika::tz::find(z.name)) << z.name;
  EXPECT_EQ(sika::tz::offset_label(-210), "UTC-3:30");
}
