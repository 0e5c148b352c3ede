#pragma once

namespace sika::app {

// The `sika` command line: serve, migrate, admin, version. Returns the exit code.
int run_cli(int argc, char** argv);

}  // namespace sika::app
