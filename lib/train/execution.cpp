// The one place that decides how a run executes (execution.h).
#include "train/execution.h"

#include "backend/backend.h"
#include "build_config.h"
#include "dist/gpu_workers.h"
#include "util/error.h"

namespace dlt {

namespace {

Device checked_gpu(int gpu_device) {
  const int visible = cuda_device_count();
  if (gpu_device >= visible)
    throw DeviceError("GPUDevice " + std::to_string(gpu_device) + " does not exist (" + std::to_string(visible) +
                      " GPU(s) visible)");
  return Device::cuda(gpu_device);
}

}  // namespace

Execution plan_execution(const TrainingOptions& o, int worker_rank, const std::map<std::string, std::string>& env,
                         const std::function<int()>& visible_gpus) {
  Execution x;
  using EE = ExecutionEnvironment;
  const EE e = o.execution_environment;
  if (e != EE::kParallel && e != EE::kMultiGpu && worker_rank < 0) return x;
  const int gpus = e == EE::kMultiGpu || (e == EE::kParallel && DLT_HAVE_NCCL) ? visible_gpus() : 0;
  if (e == EE::kMultiGpu) check_gpu_workers(gpus, env);  // one clear DeviceError
  const bool gpu_workers = uses_gpu_workers(e, gpus);
  x.comm = gpu_workers ? Execution::Comm::kNccl : Execution::Comm::kGloo;
  x.world = worker_rank >= 0 ? local_worker_world(worker_rank, env) : parse_launcher_env(env);
  // multi-gpu in a one-task allocation (sbatch without srun) starts its own workers too.
  const bool own_workers =
      x.world.source == "none" || (e == EE::kMultiGpu && x.world.source != "local" && x.world.size == 1);
  if (own_workers) {
    // NumWorkers; 0: one per visible GPU for GPU workers, 2 CPU workers.
    const int n = static_cast<int>(o.num_workers);
    x.role = Execution::Role::kLauncher;
    x.workers = gpu_workers ? gpu_worker_count(n, gpus) : (n > 0 ? n : 2);
    return x;
  }
  x.role = Execution::Role::kRank;
  if (gpu_workers) x.gpu_device = gpu_for_rank(x.world, gpus);
  return x;
}

Device resolve_device(const TrainingOptions& o) {
  using EE = ExecutionEnvironment;
  const EE e = o.execution_environment;
  if (e == EE::kCpu) return Device::cpu();
  if (e == EE::kAuto) return cuda_device_count() > 0 ? Device::cuda(o.gpu_device) : Device::cpu();
  if (e == EE::kGpu) {
    if (cuda_device_count() == 0) backend_for(Device::cuda(o.gpu_device));  // throws "built without CUDA"
    return checked_gpu(o.gpu_device);
  }
  // parallel and multi-gpu: a rank's device.
  if (!uses_gpu_workers(e)) return Device::cpu();  // CPU workers over Gloo
  check_gpu_workers(cuda_device_count(), environment_map());
  return checked_gpu(o.gpu_device);
}

Device training_device(const Execution& x, const TrainingOptions& o) {
  if (x.role == Execution::Role::kRank && x.comm == Execution::Comm::kNccl) {
    check_gpu_workers(cuda_device_count(), environment_map());
    return checked_gpu(x.gpu_device);
  }
  return resolve_device(o);
}

BackendOptions backend_options_for(const TrainingOptions& o) {
  BackendOptions b;
  b.allow_tf32 = o.allow_tf32;
  b.allow_reduced_precision_reduction = o.allow_reduced_precision_reduction;
  b.cudnn_runtime_compiled = o.cudnn_runtime_compiled;
  b.cuda_fused_clipped_relu = o.cuda_fused_clipped_relu;
  b.direct_convolution = o.convolution_algorithm == ConvolutionAlgorithm::kDirect;
  b.cudnn_workspace_mb = o.cudnn_workspace_mb;
  b.deterministic = o.deterministic;
  b.fused_convolution = o.fused_convolution;
  b.cudnn_engines = o.cudnn_engines;
  b.batch_norm_ex = o.batch_norm_ex;
  b.batch_norm_kernels = o.batch_norm_kernels;
  b.fused_bn_pool = o.fused_batch_norm_pooling;
  return b;
}

CommOptions comm_settings_for(const TrainingOptions& o) {
  CommOptions c;
  c.timeout = comm_timeout(o.communication_timeout);
  c.report_timing = o.communication_timing;
  return c;
}

}  // namespace dlt
