// dltrain train CONFIG.yaml [--set section.path=value]... [--output-dir DIR] [--resume FILE]
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
#include "dist/gpu_workers.h"
#include "dist/join_world.h"
#include "dist/launcher_env.h"
#include "dist/local_workers.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/log.h"

namespace dlt::app {

namespace {

// This process becomes the launcher of NumWorkers local workers (default 2 on CPU, one per
// visible GPU for GPU workers), each with an equal share of the cores unless the threads are
// set explicitly.
int launch_local_workers(const Config& c, int threads_flag, bool gpu_workers) {
  LocalLaunch l;
  l.args = self_command_line();
  const int num_workers = static_cast<int>(c.training.num_workers);
  if (gpu_workers)
    l.workers = gpu_worker_count(num_workers, cuda_device_count());
  else
    l.workers = num_workers > 0 ? num_workers : 2;
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (threads_flag <= 0 && c.training.threads <= 0)
    l.threads_per_worker = std::max(1, static_cast<int>(cores) / l.workers);
  return run_local_workers(l);
}

// A local worker reports its error to the launcher (one line for the whole run) instead of
// printing it; the exit codes are main's.
int report_worker_error(const std::string& file) {
  std::string message;
  int code = 1;
  try {
    throw;
  } catch (const ConfigError& e) {
    message = e.what(), code = 2;
  } catch (const UsageError& e) {
    message = e.what(), code = 2;
  } catch (const DeviceError& e) {
    message = e.what(), code = 3;
  } catch (const CommError& e) {
    message = e.what(), code = 3;
  } catch (const std::exception& e) {
    message = e.what();
  }
  std::ofstream(file) << message << "\n";
  return code;
}

}  // namespace

Runner add_train(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Train a network from a YAML config (like MATLAB's trainNetwork)");
  struct Args {
    std::string config;
    std::vector<std::string> sets;
    std::string output_dir = "runs/latest";
    std::string resume;
    int threads = 0;
    bool quiet = false;
    int worker_rank = -1;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("config", a->config, "The config file (.yaml)")->required();
  cmd->add_option("--set", a->sets, "Override an option: section.path=value (e.g. training.MaxEpochs=1)");
  cmd->add_option("--output-dir,-o", a->output_dir, "Where model.bin, summary.json, log.csv, config.yaml and progress.png go")
      ->capture_default_str();
  cmd->add_option("--resume", a->resume, "Continue from a checkpoint file (CheckpointPath/latest.bin)");
  cmd->add_option("--threads", a->threads, "CPU threads (default: all cores; same as training.Threads)");
  cmd->add_flag("--quiet,-q", a->quiet, "No progress table (same as training.Verbose=false)");
  cmd->add_option("--worker-rank", a->worker_rank)->group("");  // hidden: set by the local launcher
  return [a]() {
    std::vector<std::string> sets = a->sets;
    if (a->threads > 0) sets.push_back("training.Threads=" + std::to_string(a->threads));
    if (a->quiet) sets.push_back("training.Verbose=false");
    Config c = load_config(a->config, sets);
    TrainArgs args;
    args.output_dir = a->output_dir;
    args.resume = a->resume;
    args.config_text = dump_config(c);
    const std::string environment = c.training.execution_environment;
    std::string error_file;
    if (environment == "parallel" || environment == "multi-gpu" || a->worker_rank >= 0) {
      auto env = environment_map();
      if (environment == "multi-gpu") check_gpu_workers(cuda_device_count(), env);  // one clear DeviceError
      const bool gpu_workers = uses_gpu_workers(environment);
      WorldInfo w = a->worker_rank >= 0 ? local_worker_world(a->worker_rank, env) : parse_launcher_env(env);
      // multi-gpu in a one-task allocation (sbatch without srun) starts its own workers too.
      bool own_workers = w.source == "none" || (environment == "multi-gpu" && w.source != "local" && w.size == 1);
      if (own_workers) return launch_local_workers(c, a->threads, gpu_workers);
      spdlog::drop("dltrain");
      log::init(w.rank, w.size, false);
      error_file = worker_error_file(w.rank);
      try {
        if (gpu_workers) {
          // The trainer's resolve_device takes this rank's GPU from GPUDevice.
          c.training.gpu_device = gpu_for_rank(w, cuda_device_count());
          args.comm = join_gpu_world(w, c.training.gpu_device, a->output_dir, env);
        } else {
          args.comm = join_world(w, a->output_dir, env);
        }
      } catch (...) {
        if (error_file.empty()) throw;
        return report_worker_error(error_file);
      }
    }
    TrainResult r;
    try {
      r = train_network(c, args);
    } catch (...) {
      if (error_file.empty()) throw;
      return report_worker_error(error_file);
    }
    if (args.comm && args.comm->rank() != 0) return 0;
    if (std::isnan(r.validation_accuracy))
      std::printf("%s: model %s\n", r.status.c_str(), r.model_path.c_str());
    else
      std::printf("%s: model %s, validation accuracy %.2f%%\n", r.status.c_str(), r.model_path.c_str(),
                  r.validation_accuracy);
    return 0;
  };
}

}  // namespace dlt::app
