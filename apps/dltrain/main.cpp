// dltrain: the command-line front end. Wires CLI11 subcommands (one cmd_<name>.cpp each) and
// prints a failure with its exit code (exit_codes.h: 0 success, 1 runtime failure, 2 usage or
// config error, 3 device or communication failure).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "backend/cuda_plugin.h"
#include "build_config.h"
#include "commands.h"
#include "exit_codes.h"
#include "util/log.h"
#include "util/strings.h"

int main(int argc, char** argv) {
#if defined(__GLIBC__)
  // glibc raises its mmap threshold to the size of every large block freed; blocks below it
  // then come from the heap. A checkpoint's buffers grow with the training history, so each
  // one no longer fit the hole the last one left and the heap crept: 183 B of RSS per
  // iteration with a checkpoint every 12 iterations, against the history's 64 B
  // (docs/reliability.md, "Long run"). Fixed at 256 KiB, large blocks are mapped and given
  // back whole. dltrain allocates nothing that large per iteration (strace: 208 mmap calls in
  // a 100-iteration CIFAR-10 epoch, as many as without the setting).
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
  CLI::App app{
      "dltrain: train image classifiers and semantic-segmentation networks from a YAML config with MATLAB's "
      "layer and option names, on CPUs or GPUs; then classify, predict or segment images, time networks, and move "
      "models in and out as ONNX"};
  app.footer(
      "Start with: dltrain make-dataset shapes data/shapes, then dltrain train CONFIG (README.md, docs/).\n"
      "Exit codes: 0 success, 1 runtime failure, 2 usage or config error, 3 device or communication failure.");
  app.require_subcommand(1);
  // The version, then where the CUDA backend is (not loaded: --version maps no CUDA library).
  app.set_version_flag("--version",
                       [] { return std::string("dltrain ") + DLT_VERSION + "\n" + dlt::cuda_plugin_summary(); });
  dlt::app::register_commands(app);
  // A mistyped subcommand ("dltrain trian c.yaml") is named with a did-you-mean; CLI11 would
  // only say that a subcommand is required. The top level has flags only, so the first word not
  // starting with '-' is the subcommand.
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word[0] == '-') continue;
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), word) != names.end()) break;
    std::string fix = "the subcommands are " + dlt::join(names, ", ");
    std::string best;  // the closest name, within did_you_mean's distance
    for (const std::string& name : names)
      if (!dlt::did_you_mean(word, {name}).empty() &&
          (best.empty() || dlt::edit_distance(word, name) < dlt::edit_distance(word, best)))
        best = name;
    if (!best.empty()) fix = "did you mean '" + best + "'?";
    const size_t dot = word.rfind('.');
    if (best.empty() && dot != std::string::npos && (word.substr(dot) == ".yaml" || word.substr(dot) == ".yml"))
      fix = "to train from this config: dltrain train " + word;
    std::fprintf(stderr, "dltrain: error: unknown subcommand '%s'; %s (see dltrain --help)\n", word.c_str(),
                 fix.c_str());
    return 2;
  }
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
  } catch (...) {
    const dlt::app::Failure f = dlt::app::current_failure();
    std::fprintf(stderr, "dltrain: %s: %s\n", f.kind.c_str(), f.message.c_str());
    return f.exit_code;
  }
}
