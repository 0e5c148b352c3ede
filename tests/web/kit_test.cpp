// The page kit of web/: cookies, the CSRF scheme, the texts tables.
#include <gtest/gtest.h>

#include "web/cookie.hpp"
#include "web/csrf.hpp"
#include "web/texts.hpp"

using namespace sika;

namespace {
web::Request with_cookies(std::initializer_list<std::string> headers) {
  web::Request r;
  for (const auto& h : headers) r.headers.emplace_back("cookie", h);
  return r;
}
}  // namespace

TEST(Cookie, ReadsTheNamedCookieAmongOthers) {
  auto r = with_cookies({"a=1; sika_csrf=tok; sika_csrf_x=no"});
  EXPECT_EQ(web::cookie(r, "sika_csrf"), "tok");
  EXPECT_EQ(web::cookie(r, "a"), "1");
  EXPECT_EQ(web::cookie(r, "sika"), "");  // a prefix of a name is not the name
  EXPECT_EQ(web::cookie(r, "missing"), "");
}

TEST(Cookie, ReadsEveryCookieHeaderAndTrimsSpaces) {
  auto r = with_cookies({"a=1", "  b=2 ;c=3"});
  EXPECT_EQ(web::cookie(r, "b"), "2");
  EXPECT_EQ(web::cookie(r, "c"), "3");
  EXPECT_EQ(web::cookie(web::Request{}, "a"), "");
}

TEST(Cookie, WritesEveryAttributeInOnePlace) {
  EXPECT_EQ(web::set_cookie_value({.name = "s", .value = "v", .path = "/w", .max_age = 60}),
            "s=v; Path=/w; Max-Age=60; HttpOnly; SameSite=Lax");
  EXPECT_EQ(
      web::set_cookie_value(
          {.name = "s", .value = "", .path = "/", .max_age = 0, .same_site = web::SameSite::strict, .secure = true}),
      "s=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict; Secure");
  EXPECT_EQ(web::set_cookie_value({.name = "s", .value = "v"}), "s=v; Path=/; HttpOnly; SameSite=Lax");
  web::Response res;
  web::set_cookie(res, {.name = "a", .value = "1"});
  web::set_cookie(res, {.name = "b", .value = "2"});
  ASSERT_EQ(res.headers.size(), 2u);
  EXPECT_EQ(res.headers[1].first, "Set-Cookie");
}

TEST(Csrf, IssuedTokenChecksOnlyForItsBindingAndPurpose) {
  web::Csrf a("pepper", "purpose-a"), b("pepper", "purpose-b");
  const std::string t = a.issue("session-1");
  EXPECT_EQ(t.size(), 43u);  // base64url of 32 bytes, no padding
  EXPECT_EQ(t, a.issue("session-1"));
  EXPECT_TRUE(a.check("session-1", t));
  EXPECT_FALSE(a.check("session-2", t));
  EXPECT_FALSE(b.check("session-1", t));
  EXPECT_FALSE(a.check("session-1", t.substr(0, 42)));
  EXPECT_FALSE(a.check("session-1", ""));
  EXPECT_FALSE(a.check("", a.issue("")));
  EXPECT_NE(web::Csrf("other", "purpose-a").issue("session-1"), t);
}

TEST(Csrf, PresentedTokenFromHeaderOrForm) {
  web::Request r;
  r.headers.emplace_back("content-type", "application/x-www-form-urlencoded");
  r.body = "x=1&csrf=abc";
  EXPECT_EQ(web::Csrf::presented(r), "abc");
  r.headers.emplace_back("x-csrf-token", "hdr");
  EXPECT_EQ(web::Csrf::presented(r), "hdr");
  web::Request json;
  json.headers.emplace_back("content-type", "application/json");
  json.body = "csrf=abc";
  EXPECT_EQ(web::Csrf::presented(json), "");
  EXPECT_EQ(web::Csrf::field_html("a\"b"), "<input type=\"hidden\" name=\"csrf\" value=\"a&quot;b\">");
}

namespace {
constexpr web::texts::Entry kSampleData[] = {{"pay", "Payer", "Pay"}, {"back", "Retour", "Back"}};
constexpr auto kSample = web::texts::table(kSampleData);
using SampleKey = web::texts::Key<kSample>;
std::string_view say(i18n::Locale l, SampleKey k) { return k.in(l); }
}  // namespace

TEST(Texts, KeysPickTheLanguage) {
  EXPECT_EQ(say(i18n::Locale::fr, "pay"), "Payer");
  EXPECT_EQ(say(i18n::Locale::en, "back"), "Back");
  EXPECT_EQ(kSample.lookup("back", i18n::Locale::fr), "Retour");
  EXPECT_EQ(kSample.lookup("nope", i18n::Locale::fr), "nope");
}

TEST(Texts, IncompleteTablesAreFound) {
  constexpr web::texts::Entry missing_en[] = {{"a", "A", ""}};
  constexpr web::texts::Entry missing_fr[] = {{"a", "", "A"}};
  constexpr web::texts::Entry twice[] = {{"a", "A", "A"}, {"a", "B", "B"}};
  constexpr web::texts::Entry no_key[] = {{"", "A", "A"}};
  EXPECT_EQ(web::texts::first_incomplete(missing_en), "a");
  EXPECT_EQ(web::texts::first_incomplete(missing_fr), "a");
  EXPECT_EQ(web::texts::first_incomplete(twice), "a");
  EXPECT_EQ(web::texts::first_incomplete(no_key), "(empty key)");
  EXPECT_EQ(web::texts::first_incomplete(kSampleData), "");
}
