// Device-side helpers shared by the backend's .cu files: launch geometry for grid-stride loops
// (int64 indices), the launch check, and block reductions in double with a fixed order.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/cuda_common.h"

namespace dlt::cuda {

constexpr int kThreads = 256;           // threads per block of every 1-D kernel
constexpr int64_t kMaxBlocks = 4096;    // grid-stride loops cover the rest

inline unsigned grid_for(int64_t work, int64_t per_block = kThreads) {
  int64_t blocks = (work + per_block - 1) / per_block;
  if (blocks < 1) blocks = 1;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  return static_cast<unsigned>(blocks);
}

// Cheap (no synchronization): reports bad launch configurations at once.
#define DLT_LAUNCH_CHECK() DLT_CUDA(cudaGetLastError())

__device__ inline int64_t first_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// Sum of v over a block of kThreads threads, valid in thread 0. Every thread must call it.
__device__ inline double block_sum(double v) {
  __shared__ double warp_sums[kThreads / 32];
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  double total = 0;
  if (threadIdx.x == 0)
    for (int i = 0; i < kThreads / 32; ++i) total += warp_sums[i];
  __syncthreads();  // warp_sums may be reused by a following call
  return total;
}

}  // namespace dlt::cuda
