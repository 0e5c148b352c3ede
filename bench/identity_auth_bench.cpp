// identity_auth_bench: what JWT verification adds to a cheap authenticated GET. Serves, through
// the real HTTP server (sika_http) and router, the same handlers twice - once bare, once behind
// identity::Service::authenticate + a scope check, exactly as app/routes.cpp's gw() wraps
// gateway routes - on a SQLite database in DIR:
//   GET /api/plain        fixed small JSON          GET /api/authed       the same, authenticated
//   GET /api/plain-db     5 countries from SQLite   GET /api/authed-db    the same, authenticated
// Prints "TOKEN <jwt>" (a client_credentials token) then "READY", and serves until SIGINT/SIGTERM.
//
// Usage: identity_auth_bench PORT DIR [TOKEN_CACHE_SECONDS]   (default 0: denylist lookup per request)
#include <signal.h>

#include <boost/json.hpp>

#include <cstdio>
#include <iostream>
#include <string>

#include "core/time.hpp"
#include "http/server.hpp"
#include "identity/model.hpp"
#include "identity/service.hpp"
#include "identity/store.hpp"
#include "merchant/merchant.hpp"
#include "store/db.hpp"
#include "web/envelope.hpp"
#include "web/router.hpp"

using namespace sika;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: identity_auth_bench PORT DIR\n";
    return 2;
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto port = static_cast<unsigned short>(std::stoi(argv[1]));
  std::string base = "http://127.0.0.1:" + std::to_string(port);
  auto db = store::open("sqlite://" + std::string(argv[2]) + "/bench.db");
  if (!db) {
    std::cerr << "open: " << boost::json::serialize(db.error().details) << "\n";
    return 1;
  }
  if (auto m = store::migrate(**db); !m) {
    std::cerr << "migrate: " << boost::json::serialize(m.error().details) << "\n";
    return 1;
  }
  const std::string pepper = "identity-auth-bench-pepper-0123456789abcdef";
  std::string secret;
  Status st = (*db)->write([&](store::Conn& c) -> Status {
    SIKA_TRY(c.exec(
        "CREATE TABLE IF NOT EXISTS bench_countries (id INTEGER PRIMARY KEY, code TEXT, name TEXT, active INTEGER)"));
    SIKA_TRY(c.exec("DELETE FROM bench_countries"));
    SIKA_TRY(
        c.exec("INSERT INTO bench_countries VALUES (1,'CMR','Cameroun',1),(2,'CIV','Côte d''Ivoire',1),"
               "(3,'SEN','Sénégal',1),(4,'GAB','Gabon',1),(5,'TCD','Tchad',0)"));
    // A merchant's client, as the gateway's callers are: its tokens' check reads the merchant's
    // grants version with the denylist (identity::access_token_revoked).
    SIKA_ASSIGN_OR_RETURN(auto shop, merchant::find_by_matricule(c, "MCH-BENCH"));
    if (!shop) {
      SIKA_ASSIGN_OR_RETURN(auto created, merchant::create(c, {"MCH-BENCH", "Bench shop", "", {"CMR"}}, now_ms()));
      shop = created;
    }
    identity::ClientSpec spec;
    spec.client_id = "bench-client";
    spec.countries = {"CMR"};
    spec.merchant_id = shop->id;
    SIKA_ASSIGN_OR_RETURN(auto created, identity::create_client(c, pepper, spec, now_ms()));
    secret = created.client_secret;
    return {};
  });
  if (!st) {
    std::cerr << "seed: " << boost::json::serialize(st.error().details) << "\n";
    return 1;
  }
  identity::Options o;
  o.issuer = base + "/auth";
  o.audience = base + "/api";
  o.pepper = pepper;
  o.token_cache_seconds = argc > 3 ? std::stoi(argv[3]) : 0;
  identity::Service identity(**db, o);

  web::Request tr;
  tr.method = "POST";
  tr.headers.emplace_back("content-type", "application/json");
  tr.body = R"({"grant_type":"client_credentials","client_id":"bench-client","client_secret":")" + secret + R"("})";
  web::Response tok = identity.token(tr);
  if (tok.status != 200) {
    std::cerr << "token: " << tok.body << "\n";
    return 1;
  }
  std::cout << "TOKEN " << boost::json::parse(tok.body).at("access_token").as_string().c_str() << std::endl;

  store::Db& store = **db;
  web::Handler plain = [](web::Request& req) {
    return web::ok(req, boost::json::array{boost::json::object{{"id", 1}, {"code", "CMR"}, {"name", "Cameroun"}}});
  };
  web::Handler plain_db = [&store](web::Request& req) {
    boost::json::array out;
    Status s = store.read([&](store::Conn& c) -> Status {
      out.clear();
      SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT id, code, name, active FROM bench_countries ORDER BY id LIMIT ?",
                                               {std::int64_t{25}}));
      for (const auto& r : rows)
        out.push_back(
            boost::json::object{{"id", r.i64(0)}, {"code", r.str(1)}, {"name", r.str(2)}, {"active", r.boolean(3)}});
      return {};
    });
    if (!s) return web::error(req, s.error());
    return web::ok(req, std::move(out));
  };
  web::Router router;
  router.mount(web::Surface::gateway, "/api");
  router.authenticate_with(web::Auth::bearer,
                           [&identity](web::Request& req, const web::Access&) { return identity.authenticate(req); });
  router.add({web::Surface::gateway, "GET", "/plain", plain, web::open_access(), ""});
  router.add({web::Surface::gateway, "GET", "/authed", plain, web::bearer("countries"), ""});
  router.add({web::Surface::gateway, "GET", "/plain-db", plain_db, web::open_access(), ""});
  router.add({web::Surface::gateway, "GET", "/authed-db", plain_db, web::bearer("countries"), ""});

  http::ServerOptions so;
  so.port = port;
  so.io_threads = 2;
  so.handler_threads = 48;
  http::Server server(so, [&router](web::Request& req) { return router.dispatch(req); });
  if (auto s = server.start(); !s) {
    std::cerr << "listen: " << boost::json::serialize(s.error().details) << "\n";
    return 1;
  }
  std::cout << "READY" << std::endl;
  int sig = 0;
  sigwait(&signals, &sig);
  server.stop();
  server.wait();
  (*db)->close();
  return 0;
}
