#pragma once
// Configuration: defaults < TOML file < SIKA_* environment < command-line flags.
// Every key is declared once in the registry (config.cpp), which `sika serve --help` prints.
// Components never read Config: app/context.cpp turns it into each component's Options.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "web/router.hpp"

namespace sika::app {

// secret: a string never printed, logged or shown (only from the environment, a secrets file or
// --set in tests).
enum class KeyKind { string, integer, boolean, url, dsn, listen, locale, path, secret };

struct KeySpec {
  std::string_view name;           // dotted, e.g. "identity.access_token_ttl"
  std::string_view default_value;  // "" = unset
  KeyKind kind;
  std::string_view description;
};

const std::vector<KeySpec>& config_keys();
// SIKA_IDENTITY_ACCESS_TOKEN_TTL for "identity.access_token_ttl".
std::string env_name(std::string_view key);
// The key list formatted for --help.
std::string describe_keys();
// The key list as a Markdown table (docs/configuration.md embeds it; a test keeps them equal).
std::string keys_markdown();

class Config {
 public:
  // Loads and validates. Errors name the key and the problem in one line (Error.details is a string).
  static Result<Config> load(const std::optional<std::string>& file, const std::map<std::string, std::string>& flags);

  std::string get_string(std::string_view key) const;
  // The connector instances configured: every <name> of a non-empty connectors.<name>.kind.
  std::vector<std::string> connector_names() const;
  std::int64_t get_int(std::string_view key) const;
  bool get_bool(std::string_view key) const;

  // Public base URL of a surface, without a trailing slash (e.g. "http://127.0.0.1:8080/api").
  std::string surface_url(web::Surface s) const;
  std::string mount(web::Surface s) const;
  // Overrides one value after loading (serve records the bound port when listen used port 0).
  void set(std::string_view key, std::string value) { values_[std::string(key)] = std::move(value); }
  std::string listen_host() const;
  unsigned short listen_port() const;

 private:
  std::map<std::string, std::string, std::less<>> values_;
};

}  // namespace sika::app
