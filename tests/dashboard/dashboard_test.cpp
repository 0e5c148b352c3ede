// The dashboard's security core on both backends: TOTP, sessions, CSRF, roles and the audit log.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <atomic>
#include <set>
#include <tuple>

#include "catalog/service.hpp"
#include "checkout/store.hpp"
#include "core/crypto.hpp"
#include "core/time.hpp"
#include "dashboard/service.hpp"
#include "dashboard/sessions.hpp"
#include "dashboard/store.hpp"
#include "dashboard/totp.hpp"
#include "identity/store.hpp"
#include "merchant/merchant.hpp"
#include "payments/queries.hpp"
#include "store/outbox.hpp"
#include "support/test_db.hpp"

namespace sika::dashboard {
namespace {

namespace bj = boost::json;

// ---- TOTP -----------------------------------------------------------------------------------

TEST(Totp, MatchesTheRfc6238AndRfc4226TestVectors) {
  const std::string key = "12345678901234567890";  // RFC 6238 appendix B, SHA-1
  struct Vector {
    std::int64_t t;
    const char* code;
  };
  for (auto [t, code] :
       {Vector{59, "94287082"}, Vector{1111111109, "07081804"}, Vector{1111111111, "14050471"},
        Vector{1234567890, "89005924"}, Vector{2000000000, "69279037"}, Vector{20000000000, "65353130"}})
    EXPECT_EQ(totp::code_at(key, t * 1000, 8), code) << t;
  // RFC 4226 appendix D: six digits.
  const char* hotp[] = {"755224", "287082", "359152", "969429", "338314",
                        "254676", "287922", "162583", "399871", "520489"};
  for (std::uint64_t i = 0; i < 10; ++i) EXPECT_EQ(totp::hotp(key, i), hotp[i]) << i;
}

TEST(Totp, Base32RoundTripsAndRefusesOtherCharacters) {
  EXPECT_EQ(totp::base32_encode("12345678901234567890"), "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ");
  EXPECT_EQ(totp::base32_decode("gezd gnbv gy3t qojq gezd gnbv gy3t qojq").value(), "12345678901234567890");
  EXPECT_FALSE(totp::base32_decode("GEZ1").has_value());
  EXPECT_FALSE(totp::base32_decode("GEZ!").has_value());
}

TEST(Totp, AcceptsOneStepOfDriftAndNoMore) {
  const std::string key = "12345678901234567890";
  const std::int64_t now = 1111111111000;
  const std::int64_t step = totp::step_of(now);
  EXPECT_EQ(totp::match(key, totp::code_at(key, now), now), step);
  EXPECT_EQ(totp::match(key, totp::code_at(key, now - 30000), now), step - 1);
  EXPECT_EQ(totp::match(key, totp::code_at(key, now + 30000), now), step + 1);
  EXPECT_FALSE(totp::match(key, totp::code_at(key, now - 60000), now).has_value());
  EXPECT_FALSE(totp::match(key, totp::code_at(key, now + 60000), now).has_value());
  EXPECT_FALSE(totp::match(key, "", now).has_value());
  EXPECT_FALSE(totp::match(key, "12345", now).has_value());
}

TEST(Totp, OtpauthUriCarriesTheSecretAndIssuer) {
  EXPECT_EQ(totp::otpauth_uri("Sika", "op@sika.example", "ABC"),
            "otpauth://totp/Sika:op%40sika.example?secret=ABC&issuer=Sika&algorithm=SHA1&digits=6&period=30");
}

// ---- sessions, CSRF, roles --------------------------------------------------------------------

class DashboardTest : public testing::DbTest {
 protected:
  void SetUp() override {
    DbTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    const std::int64_t t = now_ms();
    ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(auto a, merchant::create(c, {"MCH-A", "Shop A", "a@x.test", {"CMR"}}, t));
                     SIKA_ASSIGN_OR_RETURN(auto b, merchant::create(c, {"MCH-B", "Shop B", "b@x.test", {"CIV"}}, t));
                     merchant_a_ = a.id;
                     merchant_b_ = b.id;
                     return {};
                   })
                    .ok());
    operator_ = user("op@x.test");
    owner_a_ = user("owner-a@x.test");
    viewer_a_ = user("viewer-a@x.test");
    owner_b_ = user("owner-b@x.test");
    nobody_ = user("nobody@x.test");
    ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                     SIKA_TRY(add_operator(c, operator_, t));
                     SIKA_TRY(put_member(c, owner_a_, merchant_a_, web::Role::owner, t));
                     SIKA_TRY(put_member(c, viewer_a_, merchant_a_, web::Role::viewer, t));
                     return put_member(c, owner_b_, merchant_b_, web::Role::owner, t);
                   })
                    .ok());
    SessionOptions o;
    o.pepper = std::string(64, 'p');
    o.idle_ms = 30 * 60 * 1000;
    o.absolute_ms = 12LL * 3600 * 1000;
    o.clock = [this] { return clock_.load(); };
    sessions_ = std::make_unique<Sessions>(*db_, o);
  }

  std::int64_t user(const std::string& email) {
    identity::UserSpec spec;
    spec.email = email;
    spec.password = "password-of-" + email;
    spec.name = email;
    auto u = identity::create_user(*db_, spec, now_ms());
    EXPECT_TRUE(u.ok());
    return u.ok() ? u->id : 0;
  }

  // A request of a session (its cookie), with the CSRF token as a form field when given.
  static web::Request request(const std::string& method, const std::string& token, const std::string& csrf = "") {
    web::Request req;
    req.method = method;
    req.path = "/dashboard/x";
    req.headers = {{"cookie", "lang=fr; sika_dsh=" + token + "; other=1"}};
    if (!csrf.empty()) {
      req.headers.emplace_back("content-type", "application/x-www-form-urlencoded");
      req.body = "a=1&csrf=" + csrf;
    }
    return req;
  }

  std::atomic<std::int64_t> clock_{1'800'000'000'000};
  std::unique_ptr<Sessions> sessions_;
  std::int64_t merchant_a_ = 0, merchant_b_ = 0;
  std::int64_t operator_ = 0, owner_a_ = 0, viewer_a_ = 0, owner_b_ = 0, nobody_ = 0;
};

TEST_P(DashboardTest, SignInGivesOperatorsTheTotpEnrolmentAndMembersTheirMerchant) {
  auto op = sessions_->open(operator_);
  ASSERT_TRUE(op.ok());
  EXPECT_EQ(op->second_factor, SecondFactor::enrol);
  // Pages stay closed until the second factor is done.
  auto pending = sessions_->authenticate(request("GET", op->token));
  ASSERT_FALSE(pending.ok());
  EXPECT_TRUE(pending.error().is(ErrorKind::unauthenticated));
  auto found = sessions_->find(op->token);
  ASSERT_TRUE(found.ok());
  ASSERT_TRUE(sessions_->complete_second_factor(found->row.id).ok());
  auto s = sessions_->authenticate(request("GET", op->token));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->role, web::Role::operator_);
  EXPECT_TRUE(Sessions::principal(*s).can_change());

  auto member = sessions_->open(owner_a_);
  ASSERT_TRUE(member.ok());
  EXPECT_EQ(member->second_factor, SecondFactor::done);  // no TOTP enrolled: optional for members
  auto m = sessions_->authenticate(request("GET", member->token));
  ASSERT_TRUE(m.ok());
  auto p = Sessions::principal(*m);
  EXPECT_EQ(p.role, web::Role::owner);
  EXPECT_EQ(p.merchant, "MCH-A");
  EXPECT_EQ(p.merchant_id, merchant_a_);
  EXPECT_EQ(p.environment, "sandbox");

  auto refused = sessions_->open(nobody_);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.error().is(ErrorKind::forbidden));
}

TEST_P(DashboardTest, OnlyTheKeyedHashOfTheCookieIsStored) {
  auto opened = sessions_->open(owner_a_);
  ASSERT_TRUE(opened.ok());
  EXPECT_GE(opened->token.size(), 43u);  // 256 bits
  std::vector<std::string> stored;
  ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT token_hash FROM dsh_sessions"));
                   stored.clear();
                   for (const auto& r : rows) stored.push_back(r.str(0));
                   return {};
                 })
                  .ok());
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_NE(stored[0], opened->token);
  EXPECT_EQ(stored[0].find(opened->token), std::string::npos);
  EXPECT_TRUE(crypto::secret_matches(std::string(64, 'p'), opened->token, stored[0]));
  // A token that is not the cookie (e.g. the stored hash itself) opens nothing.
  EXPECT_FALSE(sessions_->find(stored[0]).ok());
  EXPECT_FALSE(sessions_->find("").ok());
}

TEST_P(DashboardTest, IdleAndAbsoluteTimeoutsEndSessions) {
  auto opened = sessions_->open(owner_a_);
  ASSERT_TRUE(opened.ok());
  const std::string token = opened->token;
  const std::int64_t start = clock_.load();
  // Activity every 20 minutes keeps the session past the 30-minute idle timeout...
  for (int i = 1; i <= 30; ++i) {
    clock_ = start + i * 20LL * 60 * 1000;
    if (clock_.load() - start >= 12LL * 3600 * 1000) break;
    ASSERT_TRUE(sessions_->find(token).ok()) << "at minute " << i * 20;
  }
  // ...but not past the 12-hour absolute timeout, however active.
  clock_ = start + 12LL * 3600 * 1000;
  auto expired = sessions_->find(token);
  ASSERT_FALSE(expired.ok());
  EXPECT_EQ(expired.error().details.at("session"), "expired");

  auto idle = sessions_->open(owner_a_);
  ASSERT_TRUE(idle.ok());
  const std::int64_t t = clock_.load();
  clock_ = t + 29LL * 60 * 1000;
  ASSERT_TRUE(sessions_->find(idle->token).ok());
  clock_ = t + 29LL * 60 * 1000 + 30LL * 60 * 1000;  // 30 minutes after the last request
  auto gone = sessions_->find(idle->token);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().details.at("session"), "idle");
}

TEST_P(DashboardTest, LogoutEndsTheSessionAndPurgeDeletesEndedOnes) {
  auto opened = sessions_->open(owner_a_);
  ASSERT_TRUE(opened.ok());
  ASSERT_TRUE(sessions_->find(opened->token).ok());
  ASSERT_TRUE(sessions_->end(opened->token).ok());
  auto ended = sessions_->find(opened->token);
  ASSERT_FALSE(ended.ok());
  EXPECT_EQ(ended.error().details.at("session"), "ended");
  auto purged = sessions_->purge();
  ASSERT_TRUE(purged.ok());
  EXPECT_EQ(*purged, 1);
}

TEST_P(DashboardTest, EveryChangeNeedsTheSessionsCsrfToken) {
  auto a = sessions_->open(owner_a_);
  auto b = sessions_->open(owner_b_);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(sessions_->authenticate(request("GET", a->token)).ok());  // reads need none
  auto none = sessions_->authenticate(request("POST", a->token));
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(none.error().is(ErrorKind::forbidden));
  EXPECT_EQ(none.error().details.at("error"), "csrf_failed");
  // Another session's token is refused.
  EXPECT_FALSE(sessions_->authenticate(request("POST", a->token, sessions_->csrf_for(b->token))).ok());
  EXPECT_FALSE(sessions_->authenticate(request("POST", a->token, "x" + sessions_->csrf_for(a->token))).ok());
  EXPECT_TRUE(sessions_->authenticate(request("POST", a->token, sessions_->csrf_for(a->token))).ok());
  // The header works as well as the form field (any method but GET/HEAD).
  auto del = request("DELETE", a->token);
  del.headers.emplace_back("x-csrf-token", sessions_->csrf_for(a->token));
  EXPECT_TRUE(sessions_->authenticate(del).ok());
}

TEST_P(DashboardTest, RolesAreReadAtEveryRequest) {
  auto v = sessions_->open(viewer_a_);
  ASSERT_TRUE(v.ok());
  auto s = sessions_->find(v->token);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->role, web::Role::viewer);
  EXPECT_FALSE(Sessions::principal(*s).can_change());
  // Promoted: the open session is a developer at once.
  ASSERT_TRUE(db_->write([&](store::Conn& c) {
                   return put_member(c, viewer_a_, merchant_a_, web::Role::developer, clock_.load());
                 })
                  .ok());
  s = sessions_->find(v->token);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->role, web::Role::developer);
  EXPECT_TRUE(Sessions::principal(*s).can_change());
  // Writes a change that must find what it changes.
  auto change = [&](auto write) {
    ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(bool found, write(c));
                     EXPECT_TRUE(found);
                     return {};
                   })
                    .ok());
  };
  // A disabled merchant closes its members' sessions.
  change([&](store::Conn& c) { return merchant::set_active(c, merchant_a_, false); });
  EXPECT_FALSE(sessions_->find(v->token).ok());
  change([&](store::Conn& c) { return merchant::set_active(c, merchant_a_, true); });
  EXPECT_TRUE(sessions_->find(v->token).ok());
  // Removed: the session ends at its next request.
  change([&](store::Conn& c) { return remove_member(c, viewer_a_, merchant_a_); });
  auto gone = sessions_->find(v->token);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().details.at("session"), "no role");
  // Operators are no member's role.
  bool refused = false;
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   auto st = put_member(c, viewer_a_, merchant_a_, web::Role::operator_, clock_.load());
                   refused = !st.ok() && st.error().is(ErrorKind::invalid);
                   return {};
                 })
                  .ok());
  EXPECT_TRUE(refused);
}

TEST_P(DashboardTest, ATotpCodeWorksOnce) {
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(bool put, put_pending_totp(c, operator_, "sealed-1", 1));
                   EXPECT_TRUE(put);
                   SIKA_ASSIGN_OR_RETURN(put, put_pending_totp(c, operator_, "sealed-2", 2));  // replaces a pending one
                   EXPECT_TRUE(put);
                   SIKA_ASSIGN_OR_RETURN(bool used, use_totp_step(c, operator_, 100, 3));
                   EXPECT_TRUE(used);
                   SIKA_ASSIGN_OR_RETURN(used, use_totp_step(c, operator_, 100, 4));  // the same code again
                   EXPECT_FALSE(used);
                   SIKA_ASSIGN_OR_RETURN(used, use_totp_step(c, operator_, 99, 4));  // an older one
                   EXPECT_FALSE(used);
                   SIKA_ASSIGN_OR_RETURN(used, use_totp_step(c, operator_, 101, 5));
                   EXPECT_TRUE(used);
                   SIKA_ASSIGN_OR_RETURN(put, put_pending_totp(c, operator_, "sealed-3", 6));  // confirmed: kept
                   EXPECT_FALSE(put);
                   SIKA_ASSIGN_OR_RETURN(auto row, find_totp(c, operator_));
                   EXPECT_TRUE(row && row->confirmed);
                   EXPECT_EQ(row->secret_sealed, "sealed-2");
                   return {};
                 })
                  .ok());
  // Enrolled members now owe the code at sign-in too.
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(bool put, put_pending_totp(c, owner_a_, "s", 1));
                   EXPECT_TRUE(put);
                   SIKA_ASSIGN_OR_RETURN(bool used, use_totp_step(c, owner_a_, 5, 1));
                   EXPECT_TRUE(used);
                   return {};
                 })
                  .ok());
  auto member = sessions_->open(owner_a_);
  ASSERT_TRUE(member.ok());
  EXPECT_EQ(member->second_factor, SecondFactor::verify);
  auto op = sessions_->open(operator_);
  ASSERT_TRUE(op.ok());
  EXPECT_EQ(op->second_factor, SecondFactor::verify);
}

// ---- pages: roles, scoping, audit ------------------------------------------------------------

class DashboardPagesTest : public DashboardTest {
 protected:
  void SetUp() override {
    DashboardTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    serve_with(Components{});
  }

  // (Re)builds the service on these components.
  void serve_with(const Components& parts) {
    Options o;
    o.dashboard_url = "https://dash.example.test/dashboard";
    o.pepper = kPepper;
    o.clock = [this] { return clock_.load(); };
    service_ = std::make_unique<Service>(*db_, parts, o);
  }
  static inline const std::string kPepper = std::string(64, 'p');

  std::string signed_in(std::int64_t user_id) {
    auto opened = service_->sessions().open(user_id);
    EXPECT_TRUE(opened.ok());
    if (opened->second_factor != SecondFactor::done) {
      auto s = service_->sessions().find(opened->token);
      EXPECT_TRUE(service_->sessions().complete_second_factor(s->row.id).ok());
    }
    return opened->token;
  }

  web::Response call(web::Response (Service::*fn)(web::Request&), const std::string& token, const std::string& method,
                     const std::string& form = "", web::Fields params = {}) {
    web::Request req = request(method, token);
    if (method != "GET") {
      req.headers.emplace_back("content-type", "application/x-www-form-urlencoded");
      req.body = form + (form.empty() ? "" : "&") + "csrf=" + service_->sessions().csrf_for(token);
    }
    req.path_params = std::move(params);
    auto p = service_->authenticate(req);
    if (!p) return web::Response::text(p.error().is(ErrorKind::forbidden) ? 403 : 401, "");
    req.principal = *p;
    return ((*service_).*fn)(req);
  }

  std::unique_ptr<Service> service_;
};

TEST_P(DashboardPagesTest, AViewerChangesNothing) {
  const std::string viewer = signed_in(viewer_a_);
  auto team = call(&Service::team_put, viewer, "POST", "email=owner-b%40x.test&role=viewer");
  EXPECT_EQ(team.status, 403);
  auto app = call(&Service::app_create, viewer, "POST", "name=Mine");
  EXPECT_EQ(app.status, 403);
  EXPECT_EQ(call(&Service::audit, viewer, "GET").status, 403);  // owners and operators only
  // Nothing was written.
  std::vector<Member> members;
  ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(members, list_members(c, merchant_a_));
                   return {};
                 })
                  .ok());
  EXPECT_EQ(members.size(), 2u);
  // Reading is fine.
  EXPECT_EQ(call(&Service::team, viewer, "GET").status, 200);
}

TEST_P(DashboardPagesTest, OwnersCreateApplicationsWhoseSecretIsShownOnceAndAudited) {
  const std::string owner = signed_in(owner_a_);
  auto res = call(&Service::app_create, owner, "POST", "name=Shop+backend&scope=payments");
  ASSERT_EQ(res.status, 200) << res.body;
  auto at = res.body.find("id=\"client-secret\">");
  ASSERT_NE(at, std::string::npos);
  std::string secret = res.body.substr(at + 19, res.body.find('<', at + 19) - at - 19);
  EXPECT_GE(secret.size(), 32u);
  std::vector<identity::Client> clients;
  std::vector<AuditEntry> audit_a, audit_b;
  ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(clients, identity::list_clients(c));
                   SIKA_ASSIGN_OR_RETURN(audit_a, list_audit(c, merchant_a_, std::nullopt, 10));
                   SIKA_ASSIGN_OR_RETURN(audit_b, list_audit(c, merchant_b_, std::nullopt, 10));
                   return {};
                 })
                  .ok());
  ASSERT_EQ(clients.size(), 1u);
  EXPECT_EQ(clients[0].merchant_id, merchant_a_);
  EXPECT_EQ(clients[0].scopes, std::vector<std::string>{"payments"});
  EXPECT_NE(clients[0].secret_hash, secret);  // only its hash is stored
  // The developers page lists it without its secret.
  auto page = call(&Service::developers, owner, "GET");
  EXPECT_NE(page.body.find(clients[0].client_id), std::string::npos);
  EXPECT_EQ(page.body.find(secret), std::string::npos);
  ASSERT_EQ(audit_a.size(), 1u);
  EXPECT_EQ(audit_a[0].action, "oauth_client.create");
  EXPECT_EQ(audit_a[0].actor, "owner-a@x.test");
  EXPECT_TRUE(audit_b.empty());

  // Merchant B neither sees it nor rotates its secret (404).
  const std::string other = signed_in(owner_b_);
  EXPECT_EQ(call(&Service::developers, other, "GET").body.find(clients[0].client_id), std::string::npos);
  auto rotate = call(&Service::app_rotate, other, "POST", "", {{"client_id", clients[0].client_id}});
  EXPECT_EQ(rotate.status, 404);
  auto own = call(&Service::app_rotate, owner, "POST", "", {{"client_id", clients[0].client_id}});
  EXPECT_EQ(own.status, 200);
  EXPECT_EQ(own.body.find(secret), std::string::npos);  // a new one
  // B's audit log does not show A's entries; A's owner reads its own.
  auto log_b = call(&Service::audit, other, "GET");
  EXPECT_EQ(log_b.status, 200);
  EXPECT_EQ(log_b.body.find("oauth_client"), std::string::npos);
  EXPECT_NE(call(&Service::audit, owner, "GET").body.find("oauth_client.rotate_secret"), std::string::npos);
}

TEST_P(DashboardPagesTest, OwnersManageTheirTeamOnly) {
  const std::string owner = signed_in(owner_a_);
  auto add = call(&Service::team_put, owner, "POST", "email=nobody%40x.test&role=developer");
  EXPECT_EQ(add.status, 303);
  auto bad = call(&Service::team_put, owner, "POST", "email=nobody%40x.test&role=operator");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("role"), std::string::npos);
  auto self = call(&Service::team_put, owner, "POST", "email=owner-a%40x.test&role=viewer");
  EXPECT_EQ(self.status, 400);
  std::vector<Member> a, b;
  ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(a, list_members(c, merchant_a_));
                   SIKA_ASSIGN_OR_RETURN(b, list_members(c, merchant_b_));
                   return {};
                 })
                  .ok());
  EXPECT_EQ(a.size(), 3u);
  EXPECT_EQ(b.size(), 1u);
  // Operators' pages are not merchant pages: members get 404 there through the router, and
  // operators get 404 on members' pages.
  const std::string op = signed_in(operator_);
  EXPECT_EQ(call(&Service::team, op, "GET").status, 404);
}

// "Signed checkout requests only" is the owners' to change: a developer or a viewer gets 403, a
// request without the session's CSRF token is refused, a change is audited in its own unit (none
// when nothing changed), and the other merchant keeps its own setting.
TEST_P(DashboardPagesTest, OwnersTurnSignedCheckoutRequestsOnlyOnAndEachChangeIsAudited) {
  const std::int64_t developer = user("dev-a@x.test");
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   return put_member(c, developer, merchant_a_, web::Role::developer, now_ms());
                 })
                  .ok());
  auto setting = [&](std::int64_t merchant) {
    bool on = false;
    EXPECT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(on, checkout::tables::signed_only(c, merchant));
                     return {};
                   })
                    .ok());
    return on;
  };
  auto audit_of = [&](std::int64_t merchant) {
    std::vector<AuditEntry> entries;
    EXPECT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(entries, list_audit(c, merchant, std::nullopt, 20));
                     return {};
                   })
                    .ok());
    return entries;
  };
  EXPECT_FALSE(setting(merchant_a_));  // off for a merchant that never chose
  EXPECT_EQ(call(&Service::checkout_signed_only, signed_in(viewer_a_), "POST", "signed_only=on").status, 403);
  EXPECT_EQ(call(&Service::checkout_signed_only, signed_in(developer), "POST", "signed_only=on").status, 403);
  // Without the CSRF token the session is refused before the handler.
  const std::string owner = signed_in(owner_a_);
  web::Request forged = request("POST", owner);
  forged.headers.emplace_back("content-type", "application/x-www-form-urlencoded");
  forged.body = "signed_only=on";
  EXPECT_FALSE(service_->authenticate(forged).ok());
  EXPECT_FALSE(setting(merchant_a_));
  EXPECT_TRUE(audit_of(merchant_a_).empty());
  auto bad = call(&Service::checkout_signed_only, owner, "POST", "signed_only=yes");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("signed_only"), std::string::npos);

  auto on = call(&Service::checkout_signed_only, owner, "POST", "signed_only=on");
  EXPECT_EQ(on.status, 303) << on.body;
  EXPECT_TRUE(setting(merchant_a_));
  EXPECT_FALSE(setting(merchant_b_));
  EXPECT_EQ(call(&Service::checkout_signed_only, owner, "POST", "signed_only=on").status, 303);  // already on
  auto entries = audit_of(merchant_a_);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].action, "checkout.signed_only");
  EXPECT_EQ(entries[0].object, "MCH-A");
  EXPECT_EQ(entries[0].actor, "owner-a@x.test");
  EXPECT_EQ(bj::parse(entries[0].details).at("signed_only").as_bool(), true);
  EXPECT_EQ(call(&Service::checkout_signed_only, owner, "POST", "signed_only=off").status, 303);
  EXPECT_FALSE(setting(merchant_a_));
  entries = audit_of(merchant_a_);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(bj::parse(entries[0].details).at("signed_only").as_bool(), false);
  EXPECT_TRUE(audit_of(merchant_b_).empty());
  // The operators' command goes through the same function: audited as "sika admin".
  auto changed = set_checkout_signed_only(*db_, "MCH-B", true, 0, "sika admin", now_ms());
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_TRUE(setting(merchant_b_));
  EXPECT_EQ(audit_of(merchant_b_).at(0).actor, "sika admin");
  auto missing = set_checkout_signed_only(*db_, "MCH-NONE", true, 0, "sika admin", now_ms());
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.error().is(ErrorKind::not_found));
}

TEST_P(DashboardPagesTest, ApiKeysAreShownOnceAndRevokedByTheirMerchantOnly) {
  const std::string owner = signed_in(owner_a_);
  auto issued = call(&Service::key_issue, owner, "POST", "kind=merchant");
  ASSERT_EQ(issued.status, 200) << issued.body;
  const std::string marker = "id=\"api-key\">";
  const auto at = issued.body.find(marker);
  ASSERT_NE(at, std::string::npos);
  const auto from = at + marker.size();
  const std::string key = issued.body.substr(from, issued.body.find('<', from) - from);
  EXPECT_TRUE(key.starts_with("sk_test_")) << key;
  std::vector<merchant::KeyInfo> keys;
  std::optional<merchant::Merchant> owner_of_key;
  auto read = [&] {
    ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(keys, merchant::list_keys(c, merchant_a_));
                     SIKA_ASSIGN_OR_RETURN(owner_of_key, merchant::authenticate_key(c, std::string(64, 'p'), key,
                                                                                    merchant::KeyKind::merchant));
                     return {};
                   })
                    .ok());
  };
  read();
  ASSERT_EQ(keys.size(), 1u);
  ASSERT_TRUE(owner_of_key.has_value());
  EXPECT_EQ(owner_of_key->id, merchant_a_);
  // The developers page shows its prefix, never the key.
  auto page = call(&Service::developers, owner, "GET");
  EXPECT_NE(page.body.find(keys[0].display_prefix), std::string::npos);
  EXPECT_EQ(page.body.find(key), std::string::npos);
  // A viewer issues nothing; merchant B does not revoke A's key.
  EXPECT_EQ(call(&Service::key_issue, signed_in(viewer_a_), "POST", "kind=link").status, 403);
  EXPECT_EQ(call(&Service::key_issue, owner, "POST", "kind=other").status, 400);
  const std::string id = std::to_string(keys[0].id);
  EXPECT_EQ(call(&Service::key_revoke, signed_in(owner_b_), "POST", "", {{"key_id", id}}).status, 404);
  read();
  EXPECT_TRUE(owner_of_key.has_value());
  EXPECT_EQ(call(&Service::key_revoke, owner, "POST", "", {{"key_id", id}}).status, 303);
  read();
  EXPECT_FALSE(owner_of_key.has_value());
  EXPECT_TRUE(keys[0].revoked_at.has_value());
}

// Stores a transaction of a merchant directly (the pages only read them), in the caller's unit.
Status insert_transaction(store::Conn& c, std::int64_t merchant_id, const std::string& reference,
                          std::string_view operation, std::string_view status, std::int64_t amount, std::int64_t at) {
  SIKA_TRY(
      c.exec("INSERT INTO pay_transactions (reference, merchant_id, environment, operation, "
             "transaction_uuid, request_hash, invoice_reference, provider_reference, status, channel, "
             "service_code, country, connector, customer_wallet, amount, currency, fee, required_total, "
             "confirmation_method, confirmation_url, settlement_mode, split_reference, split_status, "
             "description, metadata, needs_otp, expires_at, created_at, updated_at) VALUES (?, ?, "
             "'sandbox', ?, ?, 'h', '', ?, ?, 'PROVIDER', 'MTN_MOMO_CMR', 'CMR', 'sandbox', "
             "'237690000000', ?, 'XAF', 0, ?, 'PUSH', '', 'DIRECT', '', '', '', '{}', 0, ?, ?, ?)",
             {reference, merchant_id, std::string(operation), "u-" + reference, "P-" + reference, std::string(status),
              amount, amount, at + 86400000, at, at}));
  return {};
}

// `count` completed transactions in one unit, references prefix + number, created one second
// apart from `at`.
void insert_transactions(store::Db& db, std::int64_t merchant_id, const std::string& prefix, int count,
                         std::string_view operation, std::int64_t at) {
  ASSERT_TRUE(db.write([&](store::Conn& c) -> Status {
                  for (int i = 0; i < count; ++i)
                    SIKA_TRY(insert_transaction(c, merchant_id, prefix + std::to_string(i), operation, "COMPLETED",
                                                1000, at + i * 1000));
                  return {};
                }).ok());
}

TEST_P(DashboardPagesTest, HomeShowsBalancesAndTheChartOfTheLastDays) {
  // Collections on two days (one completed, one failed) and one outside the 14 days.
  const std::int64_t day = 86400000;
  const std::int64_t today = clock_.load() / day * day;
  int n = 0;
  auto tx = [&](std::int64_t at, const char* status, std::int64_t amount) {
    ++n;
    ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                     return insert_transaction(c, merchant_a_, "TX-H" + std::to_string(n), "COLLECTION", status, amount,
                                               at);
                   })
                    .ok());
  };
  tx(today + 1000, "COMPLETED", 12500);
  tx(today + 2000, "FAILED", 700);
  tx(today - 3 * day, "COMPLETED", 3000);
  tx(today - 30 * day, "COMPLETED", 99900);
  std::vector<payments::queries::DailyVolume> days;
  ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(
                       days, payments::queries::daily_volume(c, merchant_a_, "sandbox", today - 13 * day, today + day));
                   return {};
                 })
                  .ok());
  ASSERT_EQ(days.size(), 2u);
  EXPECT_EQ(days[0].day, today - 3 * day);
  EXPECT_EQ(days[0].completed_amount, 3000);
  EXPECT_EQ(days[1].day, today);
  EXPECT_EQ(days[1].completed_amount, 12500);
  EXPECT_EQ(days[1].count, 2);
  EXPECT_EQ(days[1].completed, 1);
  EXPECT_EQ(days[1].ended, 2);
  auto home = call(&Service::home, signed_in(owner_a_), "GET");
  ASSERT_EQ(home.status, 200) << home.body;
  EXPECT_NE(home.body.find("<svg"), std::string::npos);
  EXPECT_NE(home.body.find("50 %"), std::string::npos);  // today's success rate
}

TEST_P(DashboardPagesTest, TheCsvExportIsStreamedPageByPageWithEveryRowOnce) {
  const std::int64_t at = clock_.load() - 3'600'000;
  insert_transactions(*db_, merchant_a_, "TX-A", 1203, "COLLECTION", at);
  insert_transactions(*db_, merchant_b_, "TX-B", 2, "COLLECTION", at);
  auto res = call(&Service::transactions_csv, signed_in(owner_a_), "GET");
  ASSERT_EQ(res.status, 200) << res.body;
  ASSERT_TRUE(res.stream) << "the export is streamed, not built in memory";
  EXPECT_TRUE(res.body.empty());
  EXPECT_EQ(res.get("content-type"), "text/csv; charset=utf-8");
  // One piece per keyset page of 500 rows (the header rides with the first).
  std::string csv;
  int pieces = 0;
  for (bool more = true; more; ++pieces) {
    std::string piece;
    auto next = res.stream(piece);
    ASSERT_TRUE(next.ok());
    more = *next;
    EXPECT_LE(std::count(piece.begin(), piece.end(), '\n'), 501) << "a piece holds one page";
    csv += piece;
    ASSERT_LT(pieces, 10);
  }
  EXPECT_EQ(pieces, 3);
  std::set<std::string> refs;
  std::size_t lines = 0;
  for (std::size_t at_line = 0; at_line < csv.size();) {
    std::size_t end = csv.find("\r\n", at_line);
    ASSERT_NE(end, std::string::npos);
    std::string line = csv.substr(at_line, end - at_line);
    if (lines++ == 0) {
      EXPECT_TRUE(line.starts_with("transaction_reference,created_at,")) << line;
    } else {
      EXPECT_TRUE(refs.insert(line.substr(0, line.find(','))).second) << "listed twice: " << line;
      EXPECT_FALSE(line.starts_with("TX-B")) << "another merchant's row: " << line;
    }
    at_line = end + 2;
  }
  EXPECT_EQ(refs.size(), 1203u);
  // The same answer, collected whole (as an HTTP/1.0 client gets it).
  auto again = call(&Service::transactions_csv, signed_in(owner_a_), "GET");
  ASSERT_TRUE(web::collect_stream(again).ok());
  EXPECT_FALSE(again.stream);
  EXPECT_EQ(again.body, csv);
}

// RFC 4180 as spreadsheets read it: `sep` between fields, "" inside quotes, line breaks inside
// quoted fields, rows ended by CRLF.
std::vector<std::vector<std::string>> parse_csv(std::string_view text, char sep) {
  std::vector<std::vector<std::string>> rows(1);
  std::string cell;
  bool quoted = false, row_has_content = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quoted) {
      if (ch == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        cell += ch;
      }
    } else if (ch == '"') {
      quoted = true;
      row_has_content = true;
    } else if (ch == sep) {
      rows.back().push_back(std::move(cell));
      cell.clear();
      row_has_content = true;
    } else if (ch == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      rows.back().push_back(std::move(cell));
      cell.clear();
      rows.emplace_back();
      row_has_content = false;
      ++i;
    } else {
      cell += ch;
      row_has_content = true;
    }
  }
  if (row_has_content) rows.back().push_back(std::move(cell));
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

TEST_P(DashboardPagesTest, TheCsvExportOpensInFrenchExcelWithTheOrderAndItsDescription) {
  const std::int64_t at = clock_.load() - 3'600'000;
  const std::string description = "Panier; 2 × \"thé\", menthe\nligne 2";
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_TRY(insert_transaction(c, merchant_a_, "TX-CSV", "COLLECTION", "COMPLETED", 1500, at));
                   SIKA_TRY(c.exec("UPDATE pay_transactions SET description = ?, metadata = ? WHERE reference = ?",
                                   {description, std::string(R"({"order_id":"ORD-7;8"})"), std::string("TX-CSV")}));
                   return {};
                 })
                  .ok());
  auto export_with = [&](const std::string& query) {
    web::Request req = request("GET", signed_in(owner_a_));
    for (std::size_t pos = 0; pos < query.size();) {
      std::size_t amp = query.find('&', pos);
      if (amp == std::string::npos) amp = query.size();
      const std::string pair = query.substr(pos, amp - pos);
      const std::size_t eq = pair.find('=');
      req.query.emplace_back(pair.substr(0, eq), pair.substr(eq + 1));
      pos = amp + 1;
    }
    auto p = service_->authenticate(req);
    EXPECT_TRUE(p.ok());
    if (p) req.principal = *p;
    web::Response res = service_->transactions_csv(req);
    if (res.stream) EXPECT_TRUE(web::collect_stream(res).ok());
    return res;
  };
  for (const auto& [query, sep, bom] : {std::tuple<std::string, char, bool>{"separator=semicolon&bom=1", ';', true},
                                        {"separator=comma", ',', false},
                                        {"", ',', false}}) {
    SCOPED_TRACE(query);
    auto res = export_with(query);
    ASSERT_EQ(res.status, 200) << res.body;
    std::string_view body = res.body;
    EXPECT_EQ(body.starts_with("\xEF\xBB\xBF"), bom);
    if (bom) body.remove_prefix(3);
    auto rows = parse_csv(body, sep);
    ASSERT_EQ(rows.size(), 2u) << res.body;
    const auto& header = rows[0];
    ASSERT_GE(header.size(), 14u);
    auto column = [&](std::string_view name) {
      auto it = std::find(header.begin(), header.end(), name);
      EXPECT_NE(it, header.end()) << name;
      return static_cast<std::size_t>(it - header.begin());
    };
    ASSERT_EQ(rows[1].size(), header.size()) << "every row has the header's columns";
    EXPECT_EQ(rows[1][column("transaction_reference")], "TX-CSV");
    EXPECT_EQ(rows[1][column("description")], description);
    EXPECT_EQ(rows[1][column("order_id")], "ORD-7;8");
    EXPECT_EQ(rows[1][column("amount_minor")], "1500");
  }
  auto refused = export_with("separator=tab");
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.body.find("separator"), std::string::npos);
}

TEST_P(DashboardPagesTest, PayoutsListTheMerchantsDisbursementsOnly) {
  const std::int64_t at = clock_.load() - 3'600'000;
  insert_transactions(*db_, merchant_a_, "TX-PAYOUT-A", 2, "DISBURSEMENT", at);
  insert_transactions(*db_, merchant_a_, "TX-IN-A", 1, "COLLECTION", at);
  insert_transactions(*db_, merchant_b_, "TX-PAYOUT-B", 1, "DISBURSEMENT", at);
  auto res = call(&Service::payouts, signed_in(viewer_a_), "GET");
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_NE(res.body.find("TX-PAYOUT-A0"), std::string::npos);
  EXPECT_NE(res.body.find("TX-PAYOUT-A1"), std::string::npos);
  EXPECT_EQ(res.body.find("TX-IN-A0"), std::string::npos) << "a collection is not a payout";
  EXPECT_EQ(res.body.find("TX-PAYOUT-B"), std::string::npos) << "another merchant's payout";
  EXPECT_EQ(call(&Service::payouts, signed_in(operator_), "GET").status, 404) << "merchant pages are for members";
}

TEST_P(DashboardPagesTest, ViewersForceNoOutcomeAndMoveNoSubscription) {
  const std::string viewer = signed_in(viewer_a_);
  EXPECT_EQ(call(&Service::force_outcome, viewer, "POST", "outcome=SUCCESSFUL", {{"reference", "TX-1"}}).status, 403);
  EXPECT_EQ(call(&Service::subscription_change, viewer, "POST", "days=3", {{"reference", "SUB-1"}}).status, 403);
  std::vector<AuditEntry> entries;
  ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(entries, list_audit(c, merchant_a_, std::nullopt, 10));
                   return {};
                 })
                  .ok());
  EXPECT_TRUE(entries.empty());
}

// Refunds move money: owners only. A viewer and a developer are refused (403) before anything is
// read or written; nothing is audited.
TEST_P(DashboardPagesTest, OnlyOwnersRefundViewersAndDevelopersAreRefused) {
  const std::string form = "amount=100&reason=OTHER&refund_uuid=0190d5a4-3c1e-7b2a-9f3e-2d4c5b6a7e8f";
  EXPECT_EQ(call(&Service::refund_submit, signed_in(viewer_a_), "POST", form, {{"reference", "TX-1"}}).status, 403);
  ASSERT_TRUE(db_->write([&](store::Conn& c) {
                   return put_member(c, viewer_a_, merchant_a_, web::Role::developer, clock_.load());
                 })
                  .ok());
  EXPECT_EQ(call(&Service::refund_submit, signed_in(viewer_a_), "POST", form, {{"reference", "TX-1"}}).status, 403);
  EXPECT_EQ(call(&Service::refund_submit, signed_in(operator_), "POST", form, {{"reference", "TX-1"}}).status, 404)
      << "merchant pages are for members";
  std::vector<AuditEntry> entries;
  ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(entries, list_audit(c, merchant_a_, std::nullopt, 10));
                   return {};
                 })
                  .ok());
  for (const auto& e : entries) EXPECT_NE(e.action, "refund.created");
}

// An error page names each refused field with its typed reason in the reader's language: the
// French page shows French texts, the English page (its language cookie) the texts of error.details.
TEST_P(DashboardPagesTest, ErrorPagesShowTheFieldsReasonsInTheReadersLanguage) {
  const std::string owner = signed_in(owner_a_);
  auto role = call(&Service::team_put, owner, "POST", "email=nobody%40x.test&role=operator");
  EXPECT_EQ(role.status, 400);
  EXPECT_NE(role.body.find("<strong>role</strong>&nbsp;: doit être owner, developer, viewer ou none"),
            std::string::npos)
      << role.body;
  EXPECT_EQ(role.body.find("must be owner"), std::string::npos);
  auto self = call(&Service::team_put, owner, "POST", "email=owner-a%40x.test&role=viewer");
  EXPECT_EQ(self.status, 400);
  EXPECT_NE(self.body.find("un propriétaire ne change pas son propre rôle"), std::string::npos) << self.body;
  auto stranger = call(&Service::team_put, owner, "POST", "email=nobody%40y.test&role=viewer");
  EXPECT_EQ(stranger.status, 404);
  EXPECT_NE(stranger.body.find("aucun utilisateur avec cette adresse e-mail"), std::string::npos) << stranger.body;
  auto zone = call(&Service::settings_submit, owner, "POST", "time_zone=Mars%2FOlympus");
  EXPECT_EQ(zone.status, 400);
  EXPECT_NE(zone.body.find("doit être un fuseau de la liste (docs/dashboard.md)"), std::string::npos) << zone.body;
  auto unnamed = call(&Service::app_create, owner, "POST", "name=");
  EXPECT_EQ(unnamed.status, 400);
  EXPECT_NE(unnamed.body.find("<strong>name</strong>&nbsp;: obligatoire"), std::string::npos) << unnamed.body;

  // A change the reader's role does not allow.
  auto viewer = call(&Service::team_put, signed_in(viewer_a_), "POST", "email=nobody%40x.test&role=viewer");
  EXPECT_EQ(viewer.status, 403);
  EXPECT_NE(viewer.body.find("<strong>role</strong>&nbsp;: seuls les propriétaires modifient l&#39;équipe"),
            std::string::npos)
      << viewer.body;

  // A second-factor form without the session's CSRF token.
  auto opened = service_->sessions().open(operator_);
  ASSERT_TRUE(opened.ok());
  web::Request totp = request("POST", opened->token, "not-the-token");
  auto refused = service_->totp_submit(totp);
  EXPECT_EQ(refused.status, 403);
  EXPECT_NE(refused.body.find("<strong>csrf</strong>&nbsp;: jeton manquant ou erroné"), std::string::npos)
      << refused.body;

  // In English, the same texts as error.details.
  web::Request en = request("POST", owner);
  en.headers = {{"cookie", "sika_dsh_lang=en; sika_dsh=" + owner},
                {"content-type", "application/x-www-form-urlencoded"}};
  en.body = "email=nobody%40x.test&role=operator&csrf=" + service_->sessions().csrf_for(owner);
  auto p = service_->authenticate(en);
  ASSERT_TRUE(p.ok());
  en.principal = *p;
  auto english = service_->team_put(en);
  EXPECT_EQ(english.status, 400);
  EXPECT_NE(english.body.find("<strong>role</strong>: must be owner, developer, viewer or none"), std::string::npos)
      << english.body;
}

TEST_P(DashboardPagesTest, HealthShowsTheOutboxLag) {
  const std::string op = signed_in(operator_);
  auto quiet = call(&Service::health, op, "GET");
  ASSERT_EQ(quiet.status, 200) << quiet.body;
  EXPECT_NE(quiet.body.find("id=\"outbox-lag\">0 "), std::string::npos) << quiet.body;
  EXPECT_NE(quiet.body.find("id=\"webhook-failure-rate\">Aucun essai"), std::string::npos);
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   for (const char* subject : {"TX-1", "TX-2"})
                     SIKA_TRY(store::append_event(c, merchant_a_, "payment.completed", subject, bj::object{},
                                                  clock_.load() - 90'000));
                   return {};
                 })
                  .ok());
  auto lagging = call(&Service::health, op, "GET");
  ASSERT_EQ(lagging.status, 200);
  EXPECT_NE(lagging.body.find("id=\"outbox-lag\">2 événement(s) en attente, le plus ancien depuis 90 s"),
            std::string::npos)
      << lagging.body;
}

TEST_P(DashboardPagesTest, OperatorsEditTheCatalogThroughItsServiceAndEachChangeIsAudited) {
  catalog::Service catalog(*db_, catalog::Options{});
  Components parts;
  parts.catalog = &catalog;
  serve_with(parts);
  const std::string op = signed_in(operator_);
  const std::string country =
      R"({"code":"CMR","alpha2":"CM","name_fr":"Cameroun","name_en":"Cameroon","dialling_code":"+237",)"
      R"("currency":"XAF","msisdn_length":9,"msisdn_pattern":"6\\d{8}"})";
  auto created =
      call(&Service::catalog_put, op, "POST", "kind=country&mode=create&record=" + web::percent_encode(country));
  ASSERT_EQ(created.status, 303) << created.body;
  ASSERT_EQ(catalog.snapshot()->countries().size(), 1u);
  EXPECT_TRUE(catalog.snapshot()->countries()[0].active);
  // The catalog's own rules: creating it again is 409, a bad record names its field.
  EXPECT_EQ(
      call(&Service::catalog_put, op, "POST", "kind=country&mode=create&record=" + web::percent_encode(country)).status,
      409);
  auto bad = call(&Service::catalog_put, op, "POST", "kind=country&mode=create&record=%7B%7D");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(call(&Service::catalog_put, op, "POST", "kind=planet&mode=create&record=%7B%7D").status, 400);
  EXPECT_EQ(call(&Service::catalog_put, op, "POST", "kind=country&mode=create&record=nope").status, 400);
  auto off = call(&Service::catalog_active, op, "POST", "", {{"kind", "country"}, {"code", "CMR"}});
  ASSERT_EQ(off.status, 303) << off.body;  // the path (…/x) does not end in /enable: disable
  EXPECT_FALSE(catalog.snapshot()->countries()[0].active);
  std::vector<AuditEntry> entries;
  ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(entries, list_audit(c, std::nullopt, std::nullopt, 10));
                   return {};
                 })
                  .ok());
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].action, "catalog.disable");
  EXPECT_EQ(entries[0].object, "country:CMR");
  EXPECT_EQ(entries[1].action, "catalog.create");
  EXPECT_EQ(entries[1].object, "country:CMR");
  // The page shows it with the button to turn it back on.
  auto page = call(&Service::catalog_page, op, "GET");
  ASSERT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("/operator/catalog/country/CMR/enable"), std::string::npos);
}

TEST_P(DashboardPagesTest, OperatorsChangeAMerchantsCountriesAndTierWithFieldErrorsAndAnAuditEntry) {
  catalog::Service catalog(*db_, catalog::Options{});
  for (const char* record :
       {R"({"code":"CMR","alpha2":"CM","name_fr":"Cameroun","name_en":"Cameroon","dialling_code":"+237",)"
        R"("currency":"XAF","msisdn_length":9,"msisdn_pattern":"6\\d{8}"})",
        R"({"code":"CIV","alpha2":"CI","name_fr":"Côte d'Ivoire","name_en":"Ivory Coast","dialling_code":"+225",)"
        R"("currency":"XOF","msisdn_length":10,"msisdn_pattern":"0\\d{9}"})",
        R"({"code":"SEN","alpha2":"SN","name_fr":"Sénégal","name_en":"Senegal","dialling_code":"+221",)"
        R"("currency":"XOF","msisdn_length":9,"msisdn_pattern":"7\\d{8}"})"}) {
    auto parsed = json::parse_object(record);
    ASSERT_TRUE(parsed.ok());
    ASSERT_TRUE(catalog.put(catalog::Kind::country, *parsed, catalog::Mode::create).ok()) << record;
  }
  ASSERT_TRUE(catalog.set_active(catalog::Kind::country, "SEN", false).ok());
  Components parts;
  parts.catalog = &catalog;
  serve_with(parts);
  identity::ClientSpec app{.name = "Shop A backend", .merchant_id = merchant_a_, .countries = {"CMR"}};
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(auto created, identity::create_client(c, kPepper, app, now_ms()));
                   app.client_id = created.client.client_id;
                   return {};
                 })
                  .ok());
  const std::string op = signed_in(operator_);
  const web::Fields which{{"matricule", "MCH-A"}};
  auto state = [&] {
    std::optional<merchant::Merchant> m;
    std::optional<identity::Client> client;
    std::vector<AuditEntry> entries;
    EXPECT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(m, merchant::find_by_id(c, merchant_a_));
                     SIKA_ASSIGN_OR_RETURN(client, identity::find_client(c, app.client_id));
                     SIKA_ASSIGN_OR_RETURN(entries, list_audit(c, merchant_a_, std::nullopt, 10));
                     return {};
                   })
                    .ok());
    return std::tuple{*m, *client, entries};
  };

  // The page shows the form with the merchant's values.
  auto page = call(&Service::merchant_page, op, "GET", "", which);
  ASSERT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("action=\"/dashboard/operator/merchants/MCH-A/grants\""), std::string::npos);
  EXPECT_NE(page.body.find("id=\"grants-countries\" name=\"countries\" required autocomplete=\"off\" value=\"CMR\""),
            std::string::npos);
  EXPECT_NE(page.body.find("id=\"grants-tier\""), std::string::npos);

  // Refusals: 400, each problem next to its field, what was typed kept, nothing written.
  auto bad = call(&Service::merchant_grants, op, "POST", "countries=CMR%2C+XYZ1&tier=101", which);
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("aria-describedby=\"grants-countries-error\""), std::string::npos);
  EXPECT_NE(bad.body.find("id=\"grants-countries-error\">must be ISO alpha-3 codes in upper case"), std::string::npos);
  EXPECT_NE(bad.body.find("id=\"grants-tier-error\">must be an integer between 0 and 100"), std::string::npos);
  EXPECT_NE(bad.body.find("value=\"CMR, XYZ1\""), std::string::npos);
  auto disabled = call(&Service::merchant_grants, op, "POST", "countries=CMR%2CSEN&tier=1", which);
  EXPECT_EQ(disabled.status, 400);
  EXPECT_NE(disabled.body.find("SEN is not an enabled country of the catalog"), std::string::npos);
  EXPECT_EQ(disabled.body.find("grants-tier-error"), std::string::npos);
  EXPECT_EQ(call(&Service::merchant_grants, op, "POST", "countries=CIV&tier=two", which).status, 400);
  EXPECT_EQ(call(&Service::merchant_grants, op, "POST", "countries=CIV&tier=1", {{"matricule", "MCH-NONE"}}).status,
            404);
  {
    auto [m, client, entries] = state();
    EXPECT_EQ(m.countries, std::vector<std::string>{"CMR"});
    EXPECT_EQ(m.tier, 1);
    EXPECT_EQ(m.grants_version, 0);
    EXPECT_TRUE(entries.empty());
  }

  // CMR out, CIV in, tier 2: the merchant and its application follow, audited in the same unit.
  auto done = call(&Service::merchant_grants, op, "POST", "countries=CIV&tier=2", which);
  ASSERT_EQ(done.status, 303) << done.body;
  auto [m, client, entries] = state();
  EXPECT_EQ(m.countries, std::vector<std::string>{"CIV"});
  EXPECT_EQ(m.tier, 2);
  EXPECT_EQ(m.grants_version, 1);
  EXPECT_EQ(client.countries, std::vector<std::string>{"CIV"});
  EXPECT_EQ(client.user_tier, 2);
  EXPECT_EQ(client.merchant_grants_version, 1);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].action, "merchant.grants");
  EXPECT_EQ(entries[0].object, "MCH-A");
  EXPECT_EQ(entries[0].actor, "op@x.test");
  auto details = json::parse_object(entries[0].details);
  ASSERT_TRUE(details.ok());
  EXPECT_EQ((*details)["countries"].as_string(), "CIV");
  EXPECT_EQ((*details)["countries_before"].as_string(), "CMR");
  EXPECT_EQ((*details)["tier"].as_int64(), 2);
  EXPECT_EQ((*details)["tier_before"].as_int64(), 1);
  // Saving the same values again changes nothing: its tokens keep working, nothing is audited.
  ASSERT_EQ(call(&Service::merchant_grants, op, "POST", "countries=CIV&tier=2", which).status, 303);
  {
    auto [same, same_client, same_entries] = state();
    EXPECT_EQ(same.grants_version, 1);
    EXPECT_EQ(same_entries.size(), 1u);
  }
  // A new application takes the merchant's countries and tier.
  auto created = call(&Service::merchant_app_create, op, "POST", "name=Second", which);
  ASSERT_EQ(created.status, 200) << created.body;
  std::vector<identity::Client> clients;
  ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(clients, identity::list_clients(c));
                   return {};
                 })
                  .ok());
  ASSERT_EQ(clients.size(), 2u);
  EXPECT_EQ(clients[1].countries, std::vector<std::string>{"CIV"});
  EXPECT_EQ(clients[1].user_tier, 2);
  // Merchant B is untouched.
  std::optional<merchant::Merchant> b;
  ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(b, merchant::find_by_id(c, merchant_b_));
                   return {};
                 })
                  .ok());
  EXPECT_EQ(b->countries, std::vector<std::string>{"CIV"});
  EXPECT_EQ(b->tier, 1);
  EXPECT_EQ(b->grants_version, 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, DashboardTest, ::testing::Values("sqlite", "postgres"));
INSTANTIATE_TEST_SUITE_P(Backends, DashboardPagesTest, ::testing::Values("sqlite", "postgres"));

}  // namespace
}  // namespace sika::dashboard
