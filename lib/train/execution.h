// Where and how a training run executes, decided in one place from the training options
// (ExecutionEnvironment, GPUDevice, NumWorkers), the launcher's world and this machine's
// GPUs: whether this process trains alone, starts local workers, or is one rank of a world;
// which communicator the ranks use; which device this process trains on (training_device,
// which the trainer receives in TrainArgs::device and does not derive again). Decides only:
// joining the world and starting processes are lib/dist's (join_world.h, local_workers.h).
#pragma once
#include <functional>
#include <map>
#include <string>

#include "backend/backend_options.h"
#include "config/options.h"
#include "dist/communicator.h"
#include "dist/launcher_env.h"
#include "tensor/device.h"

namespace dlt {

struct Execution {
  enum class Role {
    kAlone,     // trains in this process (cpu, gpu, auto)
    kLauncher,  // starts `workers` local worker processes and waits for them
    kRank,      // one rank of `world`: joins it, then trains its share
  };
  enum class Comm { kLocal, kGloo, kNccl };
  Role role = Role::kAlone;
  Comm comm = Comm::kLocal;  // kGloo: CPU ranks; kNccl: one GPU per rank
  int workers = 1;           // kLauncher: how many local workers to start
  WorldInfo world;           // kRank: the world this process joins
  int gpu_device = -1;       // kRank with kNccl: this rank's GPU (gpu_for_rank); else -1
};

// The execution of `dltrain train` for options o; worker_rank >= 0 in a local worker (the
// hidden --worker-rank). visible_gpus is asked only where GPU workers are possible (it
// starts the CUDA driver). Throws DeviceError when multi-gpu cannot run here (check_gpu_workers),
// ConfigError / UsageError for bad launcher variables (launcher_env.h).
Execution plan_execution(const TrainingOptions& o, int worker_rank, const std::map<std::string, std::string>& env,
                         const std::function<int()>& visible_gpus);

// The device an ExecutionEnvironment trains on in this process: cpu; gpu: GPUDevice; auto: a
// GPU when one is visible, else the CPU; parallel: the CPU unless it runs GPU workers;
// multi-gpu (and parallel on GPUs): GPUDevice. Throws DeviceError for a GPU this build or
// machine does not have. inference_runtime's device, and training_device's outside GPU ranks.
Device resolve_device(const TrainingOptions& options);

// The device this process trains on under the execution x (plan_execution's, for kAlone or
// kRank): a rank of a GPU world (kNccl) trains on its own GPU, x.gpu_device; anything else
// on resolve_device(options). The one place the training device is decided; DeviceError as
// resolve_device's.
Device training_device(const Execution& x, const TrainingOptions& options);

// The backend options (backend_options.h) the training options ask for: AllowTF32,
// AllowReducedPrecisionReduction, ConvolutionAlgorithm, CudnnWorkspaceMB, Deterministic, FusedConvolution, CudnnEngines,
// BatchNormEx, BatchNormKernels, FusedBatchNormPooling.
BackendOptions backend_options_for(const TrainingOptions& options);

// What a rank's communicator takes from the training options: the timeout
// (CommunicationTimeout) and the timing report (CommunicationTiming).
CommOptions comm_settings_for(const TrainingOptions& options);

}  // namespace dlt
