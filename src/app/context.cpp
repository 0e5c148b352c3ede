#include "app/context.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/crypto.hpp"
#include "core/random.hpp"

namespace sika::app {

Context::Context() = default;
Context::~Context() = default;

namespace {
// With SQLite and no configured secret, the secret lives beside the database file (mode 0600),
// so a single-node install keeps working across restarts without configuration.
Result<std::string> resolve_secret(const Config& config) {
  std::string secret = config.get_string("secret_key");
  if (!secret.empty()) return secret;
  std::string dsn = config.get_string("db");
  if (!dsn.starts_with("sqlite://"))
    return Error{2, "bad_config", boost::json::string("secret_key: required with PostgreSQL (set SIKA_SECRET_KEY)")};
  std::filesystem::path db_path = dsn.substr(9);
  std::filesystem::path file = db_path.parent_path() / "secret.key";
  std::error_code ec;
  if (!db_path.parent_path().empty()) std::filesystem::create_directories(db_path.parent_path(), ec);
  if (std::ifstream in(file); in) {
    std::stringstream ss;
    ss << in.rdbuf();
    secret = ss.str();
    while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
    if (secret.size() >= 32) return secret;
  }
  secret = random_token(48);
  {
    std::ofstream out(file, std::ios::trunc);
    if (!out) return Error{2, "bad_config", boost::json::string("secret_key: cannot write " + file.string())};
    out << secret << "\n";
  }
  ::chmod(file.c_str(), 0600);
  spdlog::warn("secret_key not configured: generated {} (keep it with the database)", file.string());
  return secret;
}
}  // namespace

Result<std::unique_ptr<Context>> open_context(Config config, bool migrate) {
  auto ctx = std::make_unique<Context>();
  auto secret = resolve_secret(config);
  if (!secret) return secret.take_error();
  ctx->pepper = hex_encode(crypto::hmac_sha256(*secret, "sika:secret-hash-pepper:v1"));
  store::DbOptions opts;
  opts.pool_size = static_cast<int>(config.get_int("db_pool_size"));
  auto db = store::open(config.get_string("db"), opts);
  if (!db) return db.take_error();
  ctx->db = std::move(db).value();
  if (migrate) {
    auto applied = store::migrate(*ctx->db);
    if (!applied) return applied.take_error();
    for (int v : *applied) spdlog::info("applied migration {}", v);
  }
  ctx->config = std::move(config);
  return ctx;
}

Status build_services(Context& ctx) {
  (void)ctx;
  return {};
}

void start_workers(Context& ctx) { (void)ctx; }

void stop_workers(Context& ctx) { (void)ctx; }

}  // namespace sika::app
