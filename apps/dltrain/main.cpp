// dltrain: the command-line front end. Wires CLI11 subcommands (one cmd_<name>.cpp each) and
// maps library exceptions to exit codes: 0 success, 1 runtime failure, 2 usage or config
// error, 3 device or communication failure.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "build_config.h"
#include "commands.h"
#include "util/error.h"
#include "util/log.h"

int main(int argc, char** argv) {
  CLI::App app{"dltrain: train image classifiers from YAML files"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("dltrain ") + DLT_VERSION);
  dlt::app::register_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "dltrain: error: %s (see dltrain --help)\n", e.what());
    return 2;
  }
  dlt::log::init(0, 1, false);
  try {
    return dlt::app::run_selected(app);
  } catch (const dlt::ConfigError& e) {
    std::fprintf(stderr, "dltrain: error: %s\n", e.what());
    return 2;
  } catch (const dlt::UsageError& e) {
    std::fprintf(stderr, "dltrain: error: %s\n", e.what());
    return 2;
  } catch (const dlt::DeviceError& e) {
    std::fprintf(stderr, "dltrain: device error: %s\n", e.what());
    return 3;
  } catch (const dlt::CommError& e) {
    std::fprintf(stderr, "dltrain: communication error: %s\n", e.what());
    return 3;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "dltrain: error: out of memory (try a smaller MiniBatchSize)\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dltrain: error: %s\n", e.what());
    return 1;
  }
}
