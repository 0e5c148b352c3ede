#include "app/cli.hpp"

int main(int argc, char** argv) { return sika::app::run_cli(argc, argv); }
