#pragma once
#include <optional>
#include <string>

#include "app/config.hpp"

namespace sika::app {

struct ServeOptions {
  bool migrate = true;
  std::optional<std::string> demo_file;  // seed the demo world and write its credentials here
};

// Runs every surface until SIGTERM/SIGINT; returns the process exit code.
int serve(Config config, const ServeOptions& options);
// Applies pending migrations; returns the process exit code.
int migrate_command(Config config);

}  // namespace sika::app
