// dltrain train CONFIG.yaml [--set section.path=value]... [--output-dir DIR] [--resume FILE]
#include <cmath>
#include <cstdio>
#include <memory>

#include "commands.h"
#include "config/config.h"
#include "train/trainer.h"
#include "util/log.h"

namespace dlt::app {

Runner add_train(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Train a network from a YAML config (like MATLAB's trainNetwork)");
  struct Args {
    std::string config;
    std::vector<std::string> sets;
    std::string output_dir = "runs/latest";
    std::string resume;
    int threads = 0;
    bool quiet = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("config", a->config, "The config file (.yaml)")->required();
  cmd->add_option("--set", a->sets, "Override an option: section.path=value (e.g. training.MaxEpochs=1)");
  cmd->add_option("--output-dir,-o", a->output_dir, "Where model.bin, summary.json, log.csv, config.yaml and progress.png go")
      ->capture_default_str();
  cmd->add_option("--resume", a->resume, "Continue from a checkpoint file (CheckpointPath/latest.bin)");
  cmd->add_option("--threads", a->threads, "CPU threads (default: all cores; same as training.Threads)");
  cmd->add_flag("--quiet,-q", a->quiet, "No progress table (same as training.Verbose=false)");
  return [a]() {
    std::vector<std::string> sets = a->sets;
    if (a->threads > 0) sets.push_back("training.Threads=" + std::to_string(a->threads));
    if (a->quiet) sets.push_back("training.Verbose=false");
    Config c = load_config(a->config, sets);
    TrainArgs args;
    args.output_dir = a->output_dir;
    args.resume = a->resume;
    args.config_text = dump_config(c);
    TrainResult r = train_network(c, args);
    if (std::isnan(r.validation_accuracy))
      std::printf("%s: model %s\n", r.status.c_str(), r.model_path.c_str());
    else
      std::printf("%s: model %s, validation accuracy %.2f%%\n", r.status.c_str(), r.model_path.c_str(),
                  r.validation_accuracy);
    return 0;
  };
}

}  // namespace dlt::app
