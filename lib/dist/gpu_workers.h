// GPU workers: one rank per GPU, NCCL between them (docs/distributed.md). Whether an
// ExecutionEnvironment runs them, what makes them impossible in this build or on this
// machine, how many to start and which GPU each rank takes. Decisions only; no CUDA calls
// beyond cuda_device_count().
#pragma once
#include <map>
#include <string>
#include <vector>

#include "config/options.h"
#include "dist/launcher_env.h"

namespace dlt {

// Whether ExecutionEnvironment `environment` runs GPU workers over NCCL: 'multi-gpu' always;
// 'parallel' when this build has NCCL and a GPU is visible (else CPU workers, Gloo). The
// first form asks cuda_device_count().
bool uses_gpu_workers(ExecutionEnvironment environment);
bool uses_gpu_workers(ExecutionEnvironment environment, int visible_gpus);

// The entries of a CUDA_VISIBLE_DEVICES value as CUDA reads it: comma-separated indices or
// GPU-/MIG- UUIDs, cut at the first entry that is neither ("" and "NoDevFiles": none).
std::vector<std::string> parse_visible_devices(const std::string& value);

// Throws DeviceError "ExecutionEnvironment 'multi-gpu' needs ..." (one line: the reason and
// the fix) when this build lacks CUDA or NCCL or no GPU is visible. The first form uses this
// build's DLT_HAVE_CUDA / DLT_HAVE_NCCL.
void check_gpu_workers(int visible_gpus, const std::map<std::string, std::string>& env);
void check_gpu_workers(int visible_gpus, const std::map<std::string, std::string>& env, bool have_cuda, bool have_nccl);

// How many local GPU workers to start: num_workers (NumWorkers), 0 meaning one per visible
// GPU. Throws DeviceError when that is more than the visible GPUs (NCCL needs one GPU per rank).
int gpu_worker_count(int num_workers, int visible_gpus);

// The CUDA device index (among the visible GPUs) of a GPU rank: its local rank, so local
// worker i gets GPU i; 0 when a single GPU is visible (the launcher bound one GPU per task,
// e.g. srun --gpus-per-task=1). Throws DeviceError when the local rank has no GPU of its own.
// Workers are bound by this index (cudaSetDevice), not by narrowing CUDA_VISIBLE_DEVICES,
// which would keep NCCL from CUDA IPC / NVLink between the processes.
int gpu_for_rank(const WorldInfo& world, int visible_gpus);

}  // namespace dlt
