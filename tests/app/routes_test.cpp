// The route table and the OpenAPI document must agree: every gateway route is documented, and
// every documented path is served.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <unistd.h>
#include <sstream>

#include "app/context.hpp"
#include "app/routes.hpp"

using namespace sika;

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

class RouteTable : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("sika_routes_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    auto cfg = app::Config::load(std::nullopt, {{"db", "sqlite://" + (dir_ / "sika.db").string()},
                                                {"secret_key", std::string(40, 'k')}});
    ASSERT_TRUE(cfg.ok());
    auto ctx = app::open_context(std::move(cfg).value(), true);
    ASSERT_TRUE(ctx.ok());
    ctx_ = std::move(ctx).value();
    ASSERT_TRUE(app::build_services(*ctx_).ok());
    app::build_routes(router_, *ctx_);
  }
  void TearDown() override {
    if (ctx_) ctx_->db->close();
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
  std::unique_ptr<app::Context> ctx_;
  web::Router router_;
};
}  // namespace

TEST_F(RouteTable, EveryGatewayRouteIsInTheOpenApiDocumentAndBack) {
  auto doc = boost::json::parse(app::openapi_document()).as_object();
  EXPECT_EQ(doc.at("info").at("version").as_string(), "3.0.0");
  const auto& paths = doc.at("paths").as_object();
  std::set<std::pair<std::string, std::string>> served;
  for (const auto& route : router_.routes()) {
    if (route.surface != web::Surface::gateway) continue;
    served.insert({route.pattern, lower(route.method)});
    auto it = paths.find(route.pattern);
    ASSERT_NE(it, paths.end()) << route.method << " " << route.pattern << " is not in docs/openapi.json";
    EXPECT_TRUE(it->value().as_object().contains(lower(route.method)))
        << route.method << " " << route.pattern << " is not in docs/openapi.json";
  }
  for (const auto& [path, item] : paths) {
    for (const auto& [method, op] : item.as_object()) {
      if (method == "parameters" || method == "summary" || method == "description") continue;
      EXPECT_TRUE(served.count({std::string(path), std::string(method)}))
          << method << " " << path << " is documented but not served";
    }
  }
}

TEST_F(RouteTable, ProtectedGatewayRoutesRefuseMissingTokens) {
  for (const auto& route : router_.routes()) {
    if (route.surface != web::Surface::gateway || route.scope.empty()) continue;
    web::Request req;
    req.method = route.method;
    std::string path = "/api" + route.pattern;
    for (std::size_t b; (b = path.find('{')) != std::string::npos;) path.replace(b, path.find('}') - b + 1, "x");
    req.path = path;
    auto res = router_.dispatch(req);
    EXPECT_EQ(res.status, 401) << route.method << " " << route.pattern;
  }
}
