// The depth-to-space kernel (backend/depth_to_space_op.h): one thread per output value,
// grid-stride; forward gathers y from x, backward scatters dy back into dx through the same
// map (a permutation: every dx value is written once).
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/cuda_launch.cuh"

namespace dlt::cuda {

namespace {

// Output value i of (n, h * bh, w * bw, oc): its input index in (n, h, w, c).
__device__ inline int64_t depth_to_space_source(int64_t i, int64_t h, int64_t w, int64_t c, int64_t bh, int64_t bw,
                                                bool crd) {
  const int64_t oc = c / (bh * bw), ow = w * bw, oh = h * bh;
  const int64_t k = i % oc;
  int64_t p = i / oc;
  const int64_t x = p % ow;
  p /= ow;
  const int64_t y = p % oh, n = p / oh;
  const int64_t bi = y % bh, bj = x % bw;
  const int64_t channel = crd ? k * bh * bw + bi * bw + bj : (bi * bw + bj) * oc + k;
  return ((n * h + y / bh) * w + x / bw) * c + channel;
}

__global__ void depth_to_space_kernel(const float* from, float* to, int64_t total, int64_t h, int64_t w, int64_t c,
                                      int64_t bh, int64_t bw, bool crd, bool forward) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t s = depth_to_space_source(i, h, w, c, bh, bw, crd);
    if (forward)
      to[i] = from[s];
    else
      to[s] = from[i];
  }
}

}  // namespace

// Declared where it is called (cuda_depth_to_space_op.cpp).
void depth_to_space(const float* from, float* to, int64_t n, int64_t h, int64_t w, int64_t c, int64_t bh, int64_t bw,
                    bool crd, bool forward, cudaStream_t stream) {
  const int64_t total = n * h * w * c;
  if (total <= 0) return;
  depth_to_space_kernel<<<grid_for(total), kThreads, 0, stream>>>(from, to, total, h, w, c, bh, bw, crd, forward);
  DLT_LAUNCH_CHECK();
}

}  // namespace dlt::cuda
