// dltrain train CONFIG.yaml [--set section.path=value]... [--output-dir DIR] [--resume FILE] [--overwrite]
// A new run refuses an output folder holding an earlier run's outputs unless --overwrite
// (train/output_folder.h); the check runs once, in the process that starts the run.
// With ExecutionEnvironment parallel or multi-gpu this process either joins a cluster
// launcher's world (srun, mpirun, torchrun) or starts local workers and watches them (CPU
// workers over Gloo, or one per GPU over NCCL; docs/distributed.md); the hidden
// --worker-rank marks such a worker.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>

#include "backend/backend.h"
#include "commands.h"
#include "config/config.h"
#include "dist/communicator.h"
#include "dist/join_world.h"
#include "dist/launcher_env.h"
#include "dist/local_workers.h"
#include "exit_codes.h"
#include "onnx/transfer.h"
#include "train/class_weights.h"
#include "train/execution.h"
#include "train/output_folder.h"
#include "train/trainer.h"
#include "util/log.h"

namespace dlt::app {

namespace {

// This process becomes the launcher of the local workers plan_execution chose, each with an
// equal share of the cores unless the threads are set explicitly.
int launch_local_workers(const Config& c, int threads_flag, int workers) {
  LocalLaunch l;
  l.args = self_command_line();
  l.workers = workers;
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (threads_flag <= 0 && c.training.threads <= 0)
    l.threads_per_worker = std::max(1, static_cast<int>(cores) / l.workers);
  return run_local_workers(l);
}

// A local worker reports its error to the launcher (one line for the whole run) instead of
// printing it; the exit codes are main's.
int report_worker_error(const std::string& file) {
  const Failure f = current_failure();
  std::ofstream(file) << f.message << "\n";
  return f.exit_code;
}

}  // namespace

Runner add_train(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "train",
      "Train a classifier or a segmentation network from a YAML config (like MATLAB's trainNetwork); "
      "writes the model, a per-iteration log and a progress plot");
  struct Args {
    std::string config;
    std::vector<std::string> sets;
    std::string output_dir = "runs/latest";
    std::string resume;
    int threads = 0;
    bool quiet = false, overwrite = false;
    int worker_rank = -1;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("config", a->config, "The config file (.yaml)")->required();
  cmd->add_option("--set", a->sets, "Override an option: section.path=value (e.g. training.MaxEpochs=1)");
  cmd->add_option("--output-dir,-o", a->output_dir,
                  "Where model.bin, summary.json, log.csv, config.yaml and progress.png go")
      ->capture_default_str();
  cmd->add_option("--resume", a->resume, "Continue from a checkpoint file (CheckpointPath/latest.bin)");
  cmd->add_flag("--overwrite", a->overwrite,
                "Remove an earlier run's outputs from the output folder first (default: refuse such a folder)");
  cmd->add_option("--threads", a->threads, "CPU threads (default: all cores; same as training.Threads)");
  cmd->add_flag("--quiet,-q", a->quiet, "No progress table (same as training.Verbose=false)");
  cmd->add_option("--worker-rank", a->worker_rank)->group("");  // hidden: set by the local launcher
  return [a]() {
    std::vector<std::string> sets = a->sets;
    if (a->threads > 0) sets.push_back("training.Threads=" + std::to_string(a->threads));
    if (a->quiet) sets.push_back("training.Verbose=false");
    Config c = load_config(a->config, sets);
    apply_transfer(c);        // base: loads the base model
    prepare_pixel_labels(c);  // countEachLabel; ClassWeights: median-frequency -> numbers, before config.yaml
    TrainArgs args;
    args.output_dir = a->output_dir;
    args.resume = a->resume;
    args.config_text = dump_config(c);
    const auto env = environment_map();
    // A local worker reports every error to its launcher (one line for the whole run).
    const std::string error_file = a->worker_rank >= 0 ? worker_error_file(a->worker_rank) : std::string();
    TrainResult r;
    try {
      const Execution x = plan_execution(c.training, a->worker_rank, env, [] { return cuda_device_count(); });
      // Once per run, before anything is written: this process alone, the local launcher (its
      // workers, rank 0 included, never judge the folder), or a cluster's rank 0.
      const bool starts_run = a->worker_rank < 0 && (x.role != Execution::Role::kRank || x.world.rank == 0);
      if (a->resume.empty() && starts_run) claim_output_folder(a->output_dir, c.training, a->overwrite);
      if (x.role == Execution::Role::kLauncher) return launch_local_workers(c, a->threads, x.workers);
      if (x.role == Execution::Role::kRank) {
        spdlog::drop("dltrain");
        log::init(x.world.rank, x.world.size, false);
        const CommOptions settings = comm_settings_for(c.training);
        if (x.comm == Execution::Comm::kNccl)
          args.comm = join_gpu_world(x.world, x.gpu_device, a->output_dir, env, settings);
        else
          args.comm = join_world(x.world, a->output_dir, env, settings);
      }
      args.device = training_device(x, c.training);
      r = train_network(c, args);
    } catch (...) {
      if (error_file.empty()) throw;
      return report_worker_error(error_file);
    }
    if (args.comm && args.comm->rank() != 0) return 0;
    if (!std::isnan(r.validation_mean_iou))
      std::printf("%s: model %s, validation pixel accuracy %.2f%%, mean IoU %.4f\n", r.status.c_str(),
                  r.model_path.c_str(), r.validation_accuracy, r.validation_mean_iou);
    else if (std::isnan(r.validation_accuracy))
      std::printf("%s: model %s\n", r.status.c_str(), r.model_path.c_str());
    else if (r.headline == "rmse")
      std::printf("%s: model %s, validation RMSE %.4g\n", r.status.c_str(), r.model_path.c_str(),
                  r.validation_accuracy);
    else if (r.headline == "f1")
      std::printf("%s: model %s, validation F1 %.4f\n", r.status.c_str(), r.model_path.c_str(), r.validation_accuracy);
    else
      std::printf("%s: model %s, validation accuracy %.2f%%\n", r.status.c_str(), r.model_path.c_str(),
                  r.validation_accuracy);
    return r.signal > 0 ? 128 + r.signal : 0;  // stopped by SIGINT or SIGTERM: 130, 143, as a shell reports it
  };
}

}  // namespace dlt::app
