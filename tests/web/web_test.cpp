#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <stdexcept>

#include "core/reason.hpp"
#include "web/acting.hpp"
#include "web/envelope.hpp"
#include "web/html.hpp"
#include "web/router.hpp"

using namespace sika;
namespace bj = boost::json;

namespace {
web::Request make(std::string method, std::string path, std::string query = "") {
  web::Request r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.query_string = query;
  r.query = web::parse_form(query).value();
  return r;
}

web::Router sample_router() {
  web::Router r;
  r.mount(web::Surface::gateway, "/api");
  r.add({web::Surface::gateway, "GET", "/pay/{shortCode}/info",
         [](web::Request& q) { return web::ok(q, bj::string(q.path_param("shortCode"))); }, web::open_access(), ""});
  r.add({web::Surface::gateway, "POST", "/pay/{shortCode}/pay", [](web::Request& q) { return web::ok(q, nullptr); },
         web::open_access(), ""});
  r.add({web::Surface::gateway, "POST", "/pay/{shortCode}/info", [](web::Request& q) { return web::ok(q, nullptr); },
         web::open_access(), ""});
  r.add({web::Surface::system, "GET", "/healthz", [](web::Request&) { return web::Response::json(200, "{}"); },
         web::open_access(), ""});
  return r;
}
}  // namespace

// A request's credential becomes the Acting an operation takes: its merchant, environment, tier and
// countries, and who acts (the API client, a signed-in user, or the operator).
TEST(Acting, ARequestsPrincipalBecomesWhoActsForWhichMerchant) {
  web::Principal client;
  client.subject = client.client_id = "app-1";
  client.merchant = "MCH-CM-0001";
  client.merchant_id = 7;
  client.user_tier = 2;
  client.countries = {"CMR"};
  client.environment = "prod";
  client.scopes = {"payments"};
  client.role = web::Role::owner;
  const Acting a = web::acting(client);
  EXPECT_EQ(a.merchant_id, 7);
  EXPECT_EQ(a.merchant, "MCH-CM-0001");
  EXPECT_EQ(a.environment, "prod");
  EXPECT_EQ(a.user_tier, 2);
  EXPECT_TRUE(a.grants_country("CMR"));
  EXPECT_FALSE(a.grants_country("CIV"));
  EXPECT_FALSE(a.admin);
  EXPECT_EQ(a.actor, Acting::Actor::client);
  EXPECT_EQ(a.actor_id, "app-1");

  web::Principal user = client;
  user.subject = "user-42";
  EXPECT_EQ(web::acting(user).actor, Acting::Actor::user);
  EXPECT_EQ(web::acting(user).actor_id, "user-42");

  web::Principal op = client;
  op.admin = true;
  const Acting o = web::acting(op);
  EXPECT_EQ(o.actor, Acting::Actor::operator_);
  EXPECT_TRUE(o.grants_country("CIV")) << "the operator acts in every country";

  const Acting job = Acting::system(7, "MCH-CM-0001", "sandbox", "settlement:MCH-CM-0001", 3, {"CMR"});
  EXPECT_EQ(job.actor, Acting::Actor::system);
  EXPECT_EQ(job.actor_id, "settlement:MCH-CM-0001");
  EXPECT_EQ(job.user_tier, 3);
  EXPECT_FALSE(job.admin);
}

// The merchant's caller check stays at the edge: a request without a merchant is refused before
// any Acting exists.
TEST(Acting, AMerchantActingNeedsAMerchantCaller) {
  web::Request req;
  EXPECT_FALSE(web::merchant_acting(req).ok());
  web::Principal p;
  p.merchant = "MCH-CM-0001";
  p.merchant_id = 7;
  p.scopes = {"payments"};
  req.principal = p;
  auto a = web::merchant_acting(req);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->merchant_id, 7);
}

TEST(Envelope, SuccessHasExactlyTheSpecFields) {
  auto req = make("GET", "/");
  req.locale = i18n::Locale::en;
  auto res = web::ok(req, bj::array{1, 2});
  auto v = bj::parse(res.body).as_object();
  EXPECT_EQ(v.at("code").as_int64(), 200);
  EXPECT_EQ(v.at("success").as_bool(), true);
  EXPECT_EQ(v.at("locale").as_string(), "en");
  EXPECT_EQ(v.at("message").as_string(), "ok");
  EXPECT_TRUE(v.at("meta").is_object());
  EXPECT_EQ(v.at("data").as_array().size(), 2u);
  EXPECT_EQ(res.get("content-type"), "application/json; charset=utf-8");
}

TEST(Envelope, ErrorCarriesCodeMessageAndDetails) {
  auto req = make("GET", "/");
  auto res = web::error(req, empty_data(bj::object{{"amount", "must be a positive integer"}}));
  EXPECT_EQ(res.status, 400);
  auto v = bj::parse(res.body).as_object();
  EXPECT_EQ(v.at("success").as_bool(), false);
  EXPECT_EQ(v.at("code").as_int64(), 400);
  EXPECT_EQ(v.at("message").as_string(), "empty_data");
  EXPECT_EQ(v.at("error").at("details").at("amount").as_string(), "must be a positive integer");
  EXPECT_EQ(v.at("locale").as_string(), "fr");
  EXPECT_EQ(v.at("error").at("text").as_string(), "Données absentes ou invalides.");
}

// A server-side failure's details are never sent, unless they were rendered from typed problems
// (written for the caller, as a provider CLOSED by operator health is).
TEST(Envelope, ServerSideDetailsAreSentOnlyWhenRenderedFromTypedProblems) {
  auto req = make("GET", "/");
  auto hidden = bj::parse(web::error(req, unavailable(bj::object{{"db", "connection refused"}})).body).as_object();
  EXPECT_TRUE(hidden.at("error").at("details").is_null());
  auto shown = web::error(req, with_problem(unavailable(nullptr), "provider",
                                            reason::with(Reason::operator_closed, "service", "MTN Mobile Money")));
  EXPECT_EQ(shown.status, 503);
  EXPECT_EQ(bj::parse(shown.body).at("error").at("details").at("provider").as_string(),
            "MTN Mobile Money is unavailable (operator CLOSED); try another provider or later");
}

TEST(Envelope, RateLimitedAnswers429WithRetryAfter) {
  auto req = make("GET", "/");
  auto res = web::error(req, rate_limited(bj::object{{"retry_after", 42}, {"limit", "requests per hour"}}));
  EXPECT_EQ(res.status, 429);
  EXPECT_EQ(res.get("Retry-After"), "42");
  auto v = bj::parse(res.body).as_object();
  EXPECT_EQ(v.at("message").as_string(), "rate_limited");
  EXPECT_EQ(v.at("error").at("details").at("retry_after").as_int64(), 42);
  EXPECT_EQ(web::error(req, rate_limited()).get("Retry-After"), "");
}

// A transient failure (the database away, busy or out of connections; a lost race run out of
// retries) tells the client when to try again.
TEST(Envelope, UnavailableAnswers503WithRetryAfter) {
  auto req = make("GET", "/");
  auto down = web::error(req, unavailable(std::string_view("database connection lost")));
  EXPECT_EQ(down.status, 503);
  EXPECT_EQ(down.get("Retry-After"), "1");
  auto lost = web::error(req, retryable(std::string_view("concurrent update, try again")));
  EXPECT_EQ(lost.status, 503);
  EXPECT_EQ(lost.get("Retry-After"), "1");
  EXPECT_EQ(web::error(req, internal_error(std::string_view("bug"))).get("Retry-After"), "");
}

TEST(Envelope, PaginationParamsAndMeta) {
  bj::object errors;
  auto p = web::parse_page(make("GET", "/", "page=3&limit=10"), errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(p.offset(), 20);
  auto meta = web::pagination(p, 45).at("pagination").as_object();
  EXPECT_EQ(meta.at("pages").as_int64(), 5);
  EXPECT_TRUE(meta.at("has_next").as_bool());
  EXPECT_TRUE(meta.at("has_previous").as_bool());
  web::parse_page(make("GET", "/", "page=0&limit=101"), errors);
  EXPECT_TRUE(errors.contains("page"));
  EXPECT_TRUE(errors.contains("limit"));
  errors.clear();
  web::parse_page(make("GET", "/", "page=abc&limit=1x"), errors);
  EXPECT_EQ(errors.size(), 2u);
  auto empty = web::pagination(web::Page{}, 0).at("pagination").as_object();
  EXPECT_EQ(empty.at("pages").as_int64(), 0);
  EXPECT_FALSE(empty.at("has_next").as_bool());
}

TEST(Envelope, ChoiceParamTakesOneOfItsValuesAndNamesThemAll) {
  bj::object errors;
  EXPECT_EQ(web::choice_param(make("GET", "/", "status=DISABLED"), "status", {"ACTIVE", "DISABLED", "EXPIRED"}, errors),
            "DISABLED");
  EXPECT_EQ(web::choice_param(make("GET", "/", ""), "status", {"ACTIVE", "DISABLED"}, errors), std::nullopt);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(web::choice_param(make("GET", "/", "status=active"), "status", {"ACTIVE", "DISABLED", "EXPIRED"}, errors),
            std::nullopt);
  EXPECT_EQ(errors.at("status"), "must be ACTIVE, DISABLED or EXPIRED");
  errors.clear();
  web::choice_param(make("GET", "/", "for=x"), "for", {"merchant", "desc"}, errors);
  EXPECT_EQ(errors.at("for"), "must be merchant or desc");
}

TEST(Envelope, BodyObjectChecksContentType) {
  auto req = make("POST", "/");
  req.headers = {{"content-type", "text/plain"}};
  req.body = "{}";
  EXPECT_EQ(web::body_object(req).error().kind, sika::ErrorKind::unsupported_media_type);
  req.headers = {{"content-type", "application/x-www-form-urlencoded"}};
  req.body = "a=1&b=x+y";
  auto form = web::body_object(req, true);
  ASSERT_TRUE(form.ok());
  EXPECT_EQ(form->at("b").as_string(), "x y");
  req.headers = {{"content-type", "application/json; charset=utf-8"}};
  req.body = "";
  EXPECT_EQ(web::body_object(req).error().code, "empty_data");
}

TEST(Message, FormAndQueryRefuseNulNamingTheField) {
  auto encoded = web::parse_form("a=1&client_id=ab%00cd");
  ASSERT_FALSE(encoded.ok());
  EXPECT_EQ(encoded.error().kind, ErrorKind::invalid);
  EXPECT_EQ(encoded.error().details.as_object().at("client_id"), "must not contain NUL characters");
  auto raw = web::parse_form(std::string_view("reference=x\0y", 13));
  ASSERT_FALSE(raw.ok());
  EXPECT_TRUE(raw.error().details.as_object().contains("reference"));
  auto in_key = web::parse_form("a%00b=1");
  ASSERT_FALSE(in_key.ok());
  EXPECT_TRUE(in_key.error().details.as_object().contains("a%00b"));
  EXPECT_TRUE(web::parse_form("a=%C3%A9&b=").ok());

  auto req = make("POST", "/");
  req.headers = {{"content-type", "application/x-www-form-urlencoded"}};
  req.body = "description=x%00";
  auto form = web::body_object(req, true);
  ASSERT_FALSE(form.ok());
  EXPECT_EQ(form.error().code, "empty_data");
  EXPECT_TRUE(form.error().details.as_object().contains("description"));
  req.headers = {{"content-type", "application/json"}};
  req.body = R"({"description":"x\u0000"})";
  EXPECT_TRUE(web::body_object(req).error().details.as_object().contains("description"));
}

TEST(Message, PercentDecoding) {
  EXPECT_EQ(web::percent_decode("a%20b+c", true), "a b c");
  EXPECT_EQ(web::percent_decode("a+c", false), "a+c");
  EXPECT_FALSE(web::percent_decode("%zz", false));
  EXPECT_FALSE(web::percent_decode("%4", false));
  EXPECT_FALSE(web::percent_decode("%", false));
  EXPECT_FALSE(web::percent_decode("%00", false));
  EXPECT_FALSE(web::parse_form("a=%G1").ok());
  EXPECT_FALSE(web::percent_decode(std::string_view("a\0b", 3), false));
  EXPECT_EQ(web::percent_encode("a b/é"), "a%20b%2F%C3%A9");
  EXPECT_TRUE(web::valid_port("1"));
  EXPECT_TRUE(web::valid_port("65535"));
  for (const char* bad : {"", "0", "00000", "65536", "99999", "123456", "8o", "-1", "+80"})
    EXPECT_FALSE(web::valid_port(bad)) << bad;
}

TEST(Message, ParsesRequestTargets) {
  web::Request req;
  ASSERT_TRUE(web::parse_target("/api/a%20b?x=1&y=caf%C3%A9+noir", req).ok());
  EXPECT_EQ(req.path, "/api/a b");
  EXPECT_EQ(req.query_string, "x=1&y=caf%C3%A9+noir");
  ASSERT_EQ(req.query.size(), 2u);
  EXPECT_EQ(req.query[1].second, "café noir");

  web::Request absolute;
  ASSERT_TRUE(web::parse_target("http://sika.example:8080/healthz?v", absolute).ok());
  EXPECT_EQ(absolute.path, "/healthz");
  web::Request bare;
  ASSERT_TRUE(web::parse_target("https://sika.example", bare).ok());
  EXPECT_EQ(bare.path, "/");

  auto details = [](std::string_view target) {
    web::Request r;
    Status st = web::parse_target(target, r);
    return st.ok() ? std::string("ok") : bj::serialize(st.error().details);
  };
  EXPECT_EQ(details("*"), R"({"target":"must be an absolute path"})");
  EXPECT_EQ(details("?a=1"), R"({"target":"must be an absolute path"})");
  EXPECT_EQ(details("/a%zz"), R"({"path":"malformed percent-encoding"})");
  EXPECT_EQ(details("/a%00"), R"({"path":"malformed percent-encoding"})");
  EXPECT_EQ(details("/a?b=%G1"), R"({"query":{"b":"malformed percent-encoding"}})");  // names the parameter
  // The raw path stays for the access log when it cannot be decoded.
  web::Request bad;
  EXPECT_FALSE(web::parse_target("/x%zz?q", bad).ok());
  EXPECT_EQ(bad.path, "/x%zz");
}

TEST(Router, MatchesParamsAndMounts) {
  auto router = sample_router();
  auto req = make("GET", "/api/pay/ABCD1234/info");
  auto res = router.dispatch(req);
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(bj::parse(res.body).at("data").as_string(), "ABCD1234");
  auto h = make("GET", "/healthz");
  EXPECT_EQ(router.dispatch(h).status, 200);
  auto unmounted = make("GET", "/pay/ABCD1234/info");
  EXPECT_EQ(router.dispatch(unmounted).status, 404);
}

TEST(Router, NotFoundAndMethodNotAllowedUseTheEnvelope) {
  auto router = sample_router();
  auto req = make("GET", "/api/nowhere");
  auto res = router.dispatch(req);
  EXPECT_EQ(res.status, 404);
  EXPECT_EQ(bj::parse(res.body).at("message").as_string(), "not_found");
  auto del = make("DELETE", "/api/pay/X/info");
  res = router.dispatch(del);
  EXPECT_EQ(res.status, 405);
  EXPECT_EQ(res.get("Allow"), "GET, HEAD, POST, OPTIONS");
  EXPECT_EQ(bj::parse(res.body).at("message").as_string(), "method_not_allowed");
}

TEST(Router, HeadRunsGetAndOptionsAnswersAllowAndCors) {
  auto router = sample_router();
  auto head = make("HEAD", "/api/pay/X/info");
  EXPECT_EQ(router.dispatch(head).status, 200);
  auto opt = make("OPTIONS", "/api/pay/X/pay");
  auto res = router.dispatch(opt);
  EXPECT_EQ(res.status, 204);
  EXPECT_EQ(res.get("Allow"), "POST, OPTIONS");
  EXPECT_TRUE(res.get("Access-Control-Allow-Origin").empty());

  router.cors(web::Surface::gateway, {true, {"https://shop.example"}});
  auto pre = make("OPTIONS", "/api/pay/X/pay");
  pre.headers = {{"origin", "https://shop.example"}, {"access-control-request-method", "POST"}};
  res = router.dispatch(pre);
  EXPECT_EQ(res.get("Access-Control-Allow-Origin"), "https://shop.example");
  EXPECT_EQ(res.get("Access-Control-Allow-Methods"), "POST, OPTIONS");
  auto other = make("OPTIONS", "/api/pay/X/pay");
  other.headers = {{"origin", "https://evil.example"}, {"access-control-request-method", "POST"}};
  EXPECT_TRUE(router.dispatch(other).get("Access-Control-Allow-Origin").empty());
}

// A handler that answers later (through its request's reply) gets the same CORS headers as one
// answering now, whether or not its route is declared answers_later.
TEST(Router, ALaterAnswerGetsTheCorsHeaders) {
  web::Router r;
  r.mount(web::Surface::gateway, "/api");
  r.cors(web::Surface::gateway, {true, {"https://shop.example"}});
  web::Reply kept;
  r.add({web::Surface::gateway, "POST", "/later",
         [&kept](web::Request& q) {
           kept = web::answer_later(q);
           return web::Response::later();
         },
         web::open_access(), ""});
  auto req = make("POST", "/api/later");
  req.headers = {{"origin", "https://shop.example"}};
  web::Response sent;
  req.reply_to = [&sent](web::Response res, int) { sent = std::move(res); };
  EXPECT_TRUE(r.dispatch(req).deferred);
  ASSERT_TRUE(kept);
  kept(web::Response::json(200, "{}"));
  EXPECT_EQ(sent.get("Access-Control-Allow-Origin"), "https://shop.example");
}

// A later answer is sent once whatever its maker does: what it writes, in the request's locale, or
// a 500 envelope when it throws.
TEST(Envelope, ReplyWithSendsTheAnswerOrA500) {
  std::vector<web::Response> sent;
  web::Reply reply = [&sent](web::Response res) { sent.push_back(std::move(res)); };
  web::reply_with(reply, i18n::Locale::en, "test", [](const web::Request& r) {
    return web::ok(r, bj::object{{"locale", r.locale == i18n::Locale::en ? "en" : "fr"}});
  });
  web::reply_with(reply, i18n::Locale::fr, "test",
                  [](const web::Request&) -> web::Response { throw std::runtime_error("boom"); });
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].status, 200);
  EXPECT_EQ(bj::parse(sent[0].body).at("data").at("locale"), "en");
  EXPECT_EQ(sent[1].status, 500);
  EXPECT_EQ(bj::parse(sent[1].body).at("locale"), "fr");
}

TEST(Router, OnlyDeclaredParameterlessGetRoutesAreNonBlocking) {
  web::Router r;
  r.mount(web::Surface::gateway, "/api");
  r.add({web::Surface::system, "GET", "/healthz", [](web::Request&) { return web::Response{}; }, web::open_access(), "",
         true});
  // A route the server could not find by its exact path is refused, not silently left blocking.
  EXPECT_THROW(r.add({web::Surface::gateway, "GET", "/x/{id}", [](web::Request&) { return web::Response{}; },
                      web::open_access(), "", true}),
               std::invalid_argument);
  r.add({web::Surface::gateway, "GET", "/slow", [](web::Request&) { return web::Response{}; }, web::open_access(), ""});
  EXPECT_TRUE(r.is_non_blocking(make("GET", "/healthz")));
  EXPECT_TRUE(r.is_non_blocking(make("HEAD", "/healthz")));
  EXPECT_FALSE(r.is_non_blocking(make("POST", "/healthz")));
  EXPECT_FALSE(r.is_non_blocking(make("GET", "/api/x/1")));
  EXPECT_FALSE(r.is_non_blocking(make("GET", "/api/slow")));
}

// Router::add refuses a route asking for what the server cannot honour: answers_later and
// non_blocking are found by an exact-path lookup of one method, so a route with path parameters or
// another method would silently run blocking.
TEST(Router, RefusesAnswersLaterOrNonBlockingItCannotHonour) {
  auto handler = [](web::Request&) { return web::Response{}; };
  auto route = [&](std::string method, std::string pattern, bool non_blocking, bool answers_later) {
    web::Route r{web::Surface::gateway, std::move(method), std::move(pattern), handler, web::open_access(), "",
                 non_blocking};
    r.answers_later = answers_later;
    return r;
  };
  web::Router r;
  r.mount(web::Surface::gateway, "/api");
  EXPECT_THROW(r.add(route("POST", "/later/{id}", false, true)), std::invalid_argument);
  EXPECT_THROW(r.add(route("GET", "/later", false, true)), std::invalid_argument);
  EXPECT_THROW(r.add(route("PUT", "/later", false, true)), std::invalid_argument);
  EXPECT_THROW(r.add(route("POST", "/fast", true, false)), std::invalid_argument);
  EXPECT_THROW(r.add(route("GET", "/fast/{id}", true, false)), std::invalid_argument);
  EXPECT_TRUE(r.routes().empty());
  r.add(route("POST", "/later", false, true));
  r.add(route("GET", "/fast", true, false));
  EXPECT_TRUE(r.answers_later(make("POST", "/api/later")));
  EXPECT_TRUE(r.is_non_blocking(make("GET", "/api/fast")));
  EXPECT_EQ(r.routes().size(), 2u);
}

// A handler's error is answered by the router with the error envelope, in the request's locale,
// with the route's CORS headers; its response is answered as it is.
TEST(Router, AnswersAHandlersErrorWithTheEnvelope) {
  web::Router r;
  r.mount(web::Surface::gateway, "/api");
  r.cors(web::Surface::gateway, {true, {"*"}});
  r.add({web::Surface::gateway, "POST", "/things",
         [](web::Request& q) -> Result<web::Response> {
           if (q.body.empty()) return empty_data(bj::object{{"name", "is required"}});
           return web::ok(q, bj::string(q.body));
         },
         web::open_access(), ""});
  auto req = make("POST", "/api/things");
  req.locale = i18n::Locale::en;
  req.headers = {{"origin", "https://shop.example"}};
  web::Response res = r.dispatch(req);
  EXPECT_EQ(res.status, 400);
  EXPECT_EQ(res.body, web::error(req, empty_data(bj::object{{"name", "is required"}})).body);
  EXPECT_EQ(res.get("Access-Control-Allow-Origin"), "*");
  auto good = make("POST", "/api/things");
  good.body = "x";
  res = r.dispatch(good);
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(bj::parse(res.body).at("data").as_string(), "x");
}

namespace {
struct Greeter {
  std::string name;
  web::Response hello(web::Request& q) { return web::ok(q, bj::string("hello " + name)); }
  Result<web::Response> refuse(web::Request&) { return forbidden(bj::string(name)); }
};
}  // namespace

// web::bind makes a route's handler of a service's method, whether it answers a Response or a Result.
TEST(Router, BindCallsTheServicesMethod) {
  Greeter greeter{"ada"};
  web::Handler hello = web::bind(&greeter, &Greeter::hello);
  web::Handler refuse = web::bind(&greeter, &Greeter::refuse);
  auto req = make("GET", "/");
  auto said = hello(req);
  ASSERT_TRUE(said);
  EXPECT_EQ(bj::parse(said->body).at("data").as_string(), "hello ada");
  auto refused = refuse(req);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(refused.error().is(ErrorKind::forbidden));
  EXPECT_EQ(refused.error().details.as_string(), "ada");
  EXPECT_EQ(web::respond(req, refuse(req)).status, 403);
}

namespace {
// A request as the server hands it to an I/O thread: replies and offloaded jobs are kept, and the
// pool takes jobs while `pool_open`.
struct IoThread {
  std::vector<web::Response> replies;
  std::vector<std::function<void()>> jobs;
  bool pool_open = true;
  void attach(web::Request& req) {
    req.reply_to = [this](web::Response res, int) { replies.push_back(std::move(res)); };
    req.offload_to = [this](std::function<void()> job) {
      if (!pool_open) return false;
      jobs.push_back(std::move(job));
      return true;
    };
  }
  void run_jobs() {
    auto pending = std::move(jobs);
    jobs.clear();
    for (auto& job : pending) job();
  }
};
}  // namespace

// run_blocking: on a handler thread (no offload_to) the handler runs here and its answer is the
// return value; on an I/O thread it runs as a job, without offload_to, and answers once through
// reply_to; a full pool answers 503 now; a throwing handler is answered 500.
TEST(RunBlocking, RunsHereOrOnAHandlerThreadAndAnswersOnce) {
  int runs = 0;
  bool saw_offload = true;
  auto handler = [&](web::Request& q) {
    ++runs;
    saw_offload = static_cast<bool>(q.offload_to);
    return web::ok(q, bj::string(q.body));
  };
  auto here = make("POST", "/x");
  here.body = "here";
  web::Response direct = web::run_blocking(here, handler);
  EXPECT_EQ(runs, 1);
  EXPECT_FALSE(saw_offload);
  EXPECT_EQ(bj::parse(direct.body).at("data").as_string(), "here");

  IoThread io;
  auto req = make("POST", "/x");
  req.body = "later";
  io.attach(req);
  web::Response now = web::run_blocking(req, handler);
  EXPECT_TRUE(now.deferred);
  EXPECT_EQ(runs, 1);  // not yet: queued
  ASSERT_EQ(io.jobs.size(), 1u);
  io.run_jobs();
  EXPECT_EQ(runs, 2);
  EXPECT_FALSE(saw_offload);  // on the handler thread it must not ask again
  ASSERT_EQ(io.replies.size(), 1u);
  EXPECT_EQ(bj::parse(io.replies[0].body).at("data").as_string(), "later");

  // A handler that takes the reply itself on the handler thread is not answered twice.
  io.replies.clear();
  auto deferring = make("POST", "/x");
  io.attach(deferring);
  web::Reply kept;
  EXPECT_TRUE(web::run_blocking(deferring, [&](web::Request& q) {
                kept = web::answer_later(q);
                return web::Response::later();
              }).deferred);
  io.run_jobs();
  EXPECT_TRUE(io.replies.empty());
  ASSERT_TRUE(kept);
  kept(web::Response::json(201, "{}"));
  ASSERT_EQ(io.replies.size(), 1u);
  EXPECT_EQ(io.replies[0].status, 201);

  // A throwing handler: 500 envelope in the request's locale, once.
  io.replies.clear();
  auto throwing = make("POST", "/x");
  throwing.locale = i18n::Locale::en;
  io.attach(throwing);
  EXPECT_TRUE(
      web::run_blocking(throwing, [](web::Request&) -> web::Response { throw std::runtime_error("boom"); }).deferred);
  io.run_jobs();
  ASSERT_EQ(io.replies.size(), 1u);
  EXPECT_EQ(io.replies[0].status, 500);
  EXPECT_EQ(bj::parse(io.replies[0].body).at("message").as_string(), "internal_error");
  EXPECT_EQ(bj::parse(io.replies[0].body).at("locale").as_string(), "en");

  // A full pool: 503 with Retry-After now, the handler never runs, nothing answered later.
  io.replies.clear();
  io.pool_open = false;
  auto busy = make("POST", "/x");
  io.attach(busy);
  web::Response refused = web::run_blocking(busy, handler);
  EXPECT_FALSE(refused.deferred);
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.get("Retry-After"), "1");
  EXPECT_EQ(bj::parse(refused.body).at("message").as_string(), "service_unavailable");
  EXPECT_EQ(runs, 2);
  EXPECT_TRUE(io.replies.empty());
}

// An authenticator that cannot decide on an I/O thread returns handler_thread_needed(): the router
// runs the whole request again on a handler thread (authenticator and handler, without
// offload_to), answered once through reply_to with the route's CORS headers; with a full pool,
// 503 now. On a handler thread the same answer is a bug: 500, never a loop.
TEST(Router, AnAuthenticatorThatMustBlockRunsTheRequestOnAHandlerThread) {
  int authentications = 0, handled = 0;
  web::Router r;
  r.mount(web::Surface::gateway, "/api");
  r.cors(web::Surface::gateway, {true, {"*"}});
  r.authenticate_with(web::Auth::link_api_key, [&](web::Request& q, const web::Access&) -> Result<web::Principal> {
    ++authentications;
    if (q.offload_to) return web::handler_thread_needed();
    web::Principal p;
    p.merchant_id = 7;
    return p;
  });
  web::Route charge{web::Surface::gateway,
                    "POST",
                    "/charge",
                    [&](web::Request& q) -> Result<web::Response> {
                      ++handled;
                      EXPECT_FALSE(q.offload_to);
                      return web::ok(q, q.principal ? q.principal->merchant_id : 0);
                    },
                    web::link_api_key(),
                    ""};
  charge.answers_later = true;
  r.add(std::move(charge));

  IoThread io;
  auto req = make("POST", "/api/charge");
  req.headers = {{"origin", "https://shop.example"}};
  io.attach(req);
  EXPECT_TRUE(r.dispatch(req).deferred);
  EXPECT_EQ(authentications, 1);
  EXPECT_EQ(handled, 0);
  io.run_jobs();
  EXPECT_EQ(authentications, 2);
  EXPECT_EQ(handled, 1);
  ASSERT_EQ(io.replies.size(), 1u);
  EXPECT_EQ(io.replies[0].status, 200);
  EXPECT_EQ(bj::parse(io.replies[0].body).at("data").as_int64(), 7);
  EXPECT_EQ(io.replies[0].get("Access-Control-Allow-Origin"), "*");

  io.replies.clear();
  io.pool_open = false;
  auto busy = make("POST", "/api/charge");
  io.attach(busy);
  web::Response refused = r.dispatch(busy);
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.get("Retry-After"), "1");
  EXPECT_EQ(handled, 1);
  EXPECT_TRUE(io.replies.empty());

  // On a handler thread an authenticator never asks (see web/message.hpp); if one does, 500.
  web::Router wrong;
  wrong.authenticate_with(web::Auth::link_api_key, [](web::Request&, const web::Access&) -> Result<web::Principal> {
    return web::handler_thread_needed();
  });
  wrong.add({web::Surface::system, "POST", "/charge", [](web::Request& q) { return web::ok(q, nullptr); },
             web::link_api_key(), ""});
  auto direct = make("POST", "/charge");
  EXPECT_EQ(wrong.dispatch(direct).status, 500);
}

// The pages that wait for a payment: no meta refresh, a Refresh link, the live region and the
// state header; every page says noindex.
TEST(HtmlPages, LivePagesPollInsteadOfAMetaRefreshAndEveryPageSaysNoindex) {
  web::html::Page page;
  page.locale = i18n::Locale::fr;
  page.title = "Payer";
  page.live_state = "PENDING";
  page.body_html = web::html::live_html({.state = "PENDING",
                                         .page_url = "chk_1?lang=fr",
                                         .script_src = "../live.js",
                                         .message_html = "<p>En attente</p>"},
                                        page.locale);
  web::Response res = web::html::page_response(200, page, web::html::live_policy({}));
  EXPECT_EQ(res.body.find("http-equiv"), std::string::npos);
  EXPECT_NE(res.body.find("<meta name=\"robots\" content=\"noindex, nofollow\">"), std::string::npos);
  EXPECT_NE(res.body.find("id=\"sika-refresh\" href=\"chk_1?lang=fr\">Actualiser la page</a>"), std::string::npos);
  EXPECT_NE(res.body.find("aria-live=\"polite\""), std::string::npos);
  EXPECT_NE(res.body.find("<script src=\"../live.js\" defer></script>"), std::string::npos);
  EXPECT_EQ(res.get("x-sika-state"), "PENDING");
  EXPECT_EQ(res.get("x-robots-tag"), "noindex, nofollow");
  const std::string csp(res.get("content-security-policy"));
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos);
  EXPECT_NE(csp.find("connect-src 'self'"), std::string::npos);
  EXPECT_EQ(csp.find("unsafe-eval"), std::string::npos);
  web::Response script = web::html::live_script();
  EXPECT_EQ(script.get("content-type"), "text/javascript; charset=utf-8");
  EXPECT_NE(script.body.find("X-Sika-State"), std::string::npos);
  EXPECT_EQ(web::html::state_words("PENDING", i18n::Locale::fr), "en attente de validation");
  EXPECT_EQ(web::html::state_words("COMPLETED", i18n::Locale::en), "completed");
  EXPECT_EQ(web::html::state_words("SOME_THING", i18n::Locale::en), "some thing");
}
