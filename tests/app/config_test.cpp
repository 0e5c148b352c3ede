#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/config.hpp"

using namespace sika;
using app::Config;

namespace {
std::string write_temp(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}
}  // namespace

TEST(Config, DefaultsAndDerivedUrls) {
  auto c = Config::load(std::nullopt, {}).value();
  EXPECT_EQ(c.get_string("listen"), "127.0.0.1:8080");
  EXPECT_EQ(c.get_string("db"), "sqlite://./data/sika.db");
  EXPECT_EQ(c.surface_url(web::Surface::gateway), "http://127.0.0.1:8080/api");
  EXPECT_EQ(c.surface_url(web::Surface::identity), "http://127.0.0.1:8080/auth");
  EXPECT_EQ(c.listen_port(), 8080);
  EXPECT_EQ(c.listen_host(), "127.0.0.1");
}

TEST(Config, FileThenEnvironmentThenFlags) {
  std::string file = write_temp("sika_cfg_test.toml",
                                "public_url = \"https://pay.example.com/\"\n"
                                "[http]\nmax_body_bytes = 2048\nio_threads = 3\n"
                                "[mount]\ngateway = \"/v3\"\n");
  ::setenv("SIKA_HTTP_IO_THREADS", "4", 1);
  auto c = Config::load(file, {{"listen", "0.0.0.0:9000"}}).value();
  ::unsetenv("SIKA_HTTP_IO_THREADS");
  EXPECT_EQ(c.get_int("http.max_body_bytes"), 2048);  // file
  EXPECT_EQ(c.get_int("http.io_threads"), 4);         // environment beats file
  EXPECT_EQ(c.get_string("listen"), "0.0.0.0:9000");  // flag
  EXPECT_EQ(c.surface_url(web::Surface::gateway), "https://pay.example.com/v3");
  auto flagged = Config::load(file, {{"http.io_threads", "5"}}).value();
  EXPECT_EQ(flagged.get_int("http.io_threads"), 5);  // flag beats file
}

TEST(Config, PerSurfaceUrlsOverridePublicUrl) {
  auto c = Config::load(std::nullopt,
                        {{"public_url", "https://pay.example.com"}, {"auth_url", "https://auth.example.com/auth/"}})
               .value();
  EXPECT_EQ(c.surface_url(web::Surface::identity), "https://auth.example.com/auth");
  EXPECT_EQ(c.surface_url(web::Surface::checkout), "https://pay.example.com/checkout");
}

TEST(Config, BadValuesNameTheKey) {
  auto expect_bad = [](std::map<std::string, std::string> flags, const std::string& key) {
    auto c = Config::load(std::nullopt, flags);
    ASSERT_FALSE(c.ok()) << key;
    std::string msg(c.error().details.as_string());
    EXPECT_EQ(msg.rfind(key + ":", 0), 0u) << msg;
  };
  expect_bad({{"listen", "8080"}}, "listen");
  expect_bad({{"listen", "h:70000"}}, "listen");
  expect_bad({{"db", "mysql://x"}}, "db");
  expect_bad({{"http.io_threads", "many"}}, "http.io_threads");
  expect_bad({{"http.io_threads", "0"}}, "http.io_threads");
  expect_bad({{"log.access", "maybe"}}, "log.access");
  expect_bad({{"default_locale", "de"}}, "default_locale");
  expect_bad({{"public_url", "ftp://x"}}, "public_url");
  expect_bad({{"secret_key", "short"}}, "secret_key");
  // Several PostgreSQL nodes must share one secret: none is generated (exit code 2 via config_failure).
  expect_bad({{"db", "postgres://sika@db.internal/sika"}, {"secret_key", ""}}, "secret_key");
  expect_bad({{"no.such.key", "1"}}, "no.such.key");
  std::string file = write_temp("sika_cfg_bad.toml", "[http]\nunknown_thing = 1\n");
  EXPECT_FALSE(Config::load(file, {}).ok());
  std::string broken = write_temp("sika_cfg_broken.toml", "listen = \n");
  EXPECT_FALSE(Config::load(broken, {}).ok());
}

TEST(Config, DocumentationListsEveryKey) {
  std::ifstream in(std::string(SIKA_SOURCE_DIR) + "/docs/configuration.md");
  std::stringstream doc;
  doc << in.rdbuf();
  EXPECT_NE(doc.str().find(app::keys_markdown()), std::string::npos)
      << "docs/configuration.md is out of date: regenerate its table with `sika config --markdown`";
}

TEST(Config, ConnectorInstancesFromTheEnvironmentAndASecretsFile) {
  std::string secrets = write_temp("sika_secrets_test.toml",
                                   "[connectors.mtn_momo.collection]\napi_key = \"from-the-file\"\n"
                                   "[connectors.mtn_civ.disbursement]\nsubscription_key = \"civ-key\"\n");
  std::filesystem::permissions(secrets, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  ::setenv("SIKA_CONNECTORS_MTN_CIV_KIND", "mtn_momo", 1);
  ::setenv("SIKA_CONNECTORS_MTN_CIV_COLLECTION_API_KEY", "civ-api-key", 1);
  auto c = Config::load(std::nullopt, {{"secrets_file", secrets}, {"connectors.mtn_momo.kind", "mtn_momo"}});
  ::unsetenv("SIKA_CONNECTORS_MTN_CIV_KIND");
  ::unsetenv("SIKA_CONNECTORS_MTN_CIV_COLLECTION_API_KEY");
  ASSERT_TRUE(c.ok()) << c.error().details;
  EXPECT_EQ(c->get_string("connectors.mtn_momo.collection.api_key"), "from-the-file");
  EXPECT_EQ(c->get_string("connectors.mtn_civ.disbursement.subscription_key"), "civ-key");
  EXPECT_EQ(c->get_string("connectors.mtn_civ.collection.api_key"), "civ-api-key")
      << "the longest key name ending the variable wins (COLLECTION_API_KEY, not API_KEY)";
  EXPECT_EQ(c->connector_names(), (std::vector<std::string>{"mtn_civ", "mtn_momo"}));

  // A secrets file holds secrets only, and only its owner may read it.
  std::string plain = write_temp("sika_secrets_plain.toml", "[http]\nio_threads = 3\n");
  std::filesystem::permissions(plain, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  auto refused = Config::load(std::nullopt, {{"secrets_file", plain}});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(std::string(refused.error().details.as_string()).find("http.io_threads: is not a secret"),
            std::string::npos);
  std::filesystem::permissions(secrets, std::filesystem::perms::group_read, std::filesystem::perm_options::add);
  auto open = Config::load(std::nullopt, {{"secrets_file", secrets}});
  ASSERT_FALSE(open.ok());
  EXPECT_NE(std::string(open.error().details.as_string()).find("readable by group or others"), std::string::npos);
  // An instance name with characters out of [a-z0-9_] is not a key.
  EXPECT_FALSE(Config::load(std::nullopt, {{"connectors.MTN-x.kind", "mtn_momo"}}).ok());
  EXPECT_FALSE(Config::load(std::nullopt, {{"connectors.mtn_civ.password", "x"}}).ok());
}
