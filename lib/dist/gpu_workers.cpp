// GPU worker decisions (gpu_workers.h): NCCL and CUDA availability, CUDA_VISIBLE_DEVICES,
// worker counts and the GPU of each rank.
#include "dist/gpu_workers.h"

#include "backend/backend.h"
#include "backend/cuda_plugin.h"
#include "build_config.h"
#include "util/error.h"

namespace dlt {

using Env = std::map<std::string, std::string>;

bool uses_gpu_workers(ExecutionEnvironment environment, int visible_gpus) {
  if (environment == ExecutionEnvironment::kMultiGpu) return true;
  return environment == ExecutionEnvironment::kParallel && DLT_HAVE_NCCL && visible_gpus > 0;
}

bool uses_gpu_workers(ExecutionEnvironment environment) {
  const bool ask = environment == ExecutionEnvironment::kParallel && DLT_HAVE_NCCL;  // starts the CUDA driver
  return uses_gpu_workers(environment, ask ? cuda_device_count() : 0);
}

std::vector<std::string> parse_visible_devices(const std::string& value) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    std::string e = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    e.erase(0, e.find_first_not_of(' '));
    e.erase(e.find_last_not_of(' ') + 1);
    bool index = !e.empty() && e.find_first_not_of("0123456789") == std::string::npos;
    bool uuid = e.rfind("GPU-", 0) == 0 || e.rfind("MIG-", 0) == 0;
    if (!index && !uuid) break;  // CUDA ignores this entry and every one after it
    out.push_back(e);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

void check_gpu_workers(int visible_gpus, const Env& env, bool have_cuda, bool have_nccl) {
  const std::string head = "ExecutionEnvironment 'multi-gpu' needs ";
  if (!have_cuda)
    throw DeviceError(head +
                      "CUDA GPUs, but this dltrain was built without CUDA (rebuild with the CUDA "
                      "toolkit, cuDNN and NCCL; use 'parallel' for CPU workers)");
  if (!have_nccl)
    throw DeviceError(head +
                      "NCCL, but this dltrain was built without it (install NCCL and rebuild; "
                      "'gpu' trains on one GPU)");
  if (visible_gpus <= 0) {
    auto cvd = env.find("CUDA_VISIBLE_DEVICES");
    std::string why = cvd != env.end() && parse_visible_devices(cvd->second).empty()
                          ? "CUDA_VISIBLE_DEVICES='" + cvd->second + "' hides them all"
                          : "check nvidia-smi and the driver";
    throw DeviceError(head + "CUDA GPUs, but none is visible (" + why + "; use 'parallel' for CPU workers)");
  }
}

void check_gpu_workers(int visible_gpus, const Env& env) {
  if (DLT_HAVE_CUDA && DLT_HAVE_NCCL && visible_gpus <= 0 && !cuda_plugin())  // e.g. cuDNN not installed
    throw DeviceError("ExecutionEnvironment 'multi-gpu' needs CUDA GPUs, but " + cuda_plugin_error() +
                      "; use 'parallel' for CPU workers");
  check_gpu_workers(visible_gpus, env, DLT_HAVE_CUDA != 0, DLT_HAVE_NCCL != 0);
}

int gpu_worker_count(int num_workers, int visible_gpus) {
  if (num_workers <= 0) return visible_gpus;
  if (num_workers > visible_gpus)
    throw DeviceError("NumWorkers is " + std::to_string(num_workers) + " but only " + std::to_string(visible_gpus) +
                      " GPU(s) are visible; NCCL needs one GPU per worker (set NumWorkers to at most " +
                      std::to_string(visible_gpus) + ", or 0 for one per GPU)");
  return num_workers;
}

int gpu_for_rank(const WorldInfo& w, int visible_gpus) {
  if (visible_gpus == 1) return 0;
  if (w.local_rank < visible_gpus) return w.local_rank;
  throw DeviceError("rank " + std::to_string(w.rank) + " of " + std::to_string(w.size) + " is local rank " +
                    std::to_string(w.local_rank) + " on its node, which has only " + std::to_string(visible_gpus) +
                    " GPU(s) visible; NCCL needs one GPU per rank (start at most " + std::to_string(visible_gpus) +
                    " tasks per node, or bind one GPU per task: srun --gpus-per-task=1)");
}

}  // namespace dlt
