// The attention op's own kernels (backend/attention_op.h, cuda_attention_op.cpp): moving the
// heads of a token tensor (n, seq, heads * dim) to and from head-major (n, heads, seq, dim),
// and the causal mask on the scores. One thread per value, grid-stride.
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/cuda_launch.cuh"

namespace dlt::cuda {

namespace {

// Head-major index i = ((b * heads + h) * seq + t) * dim + c; its token index.
__device__ inline int64_t token_index(int64_t i, int64_t seq, int64_t heads, int64_t dim) {
  const int64_t c = i % dim;
  int64_t p = i / dim;
  const int64_t t = p % seq;
  p /= seq;
  const int64_t h = p % heads, b = p / heads;
  return ((b * seq + t) * heads + h) * dim + c;
}

__global__ void heads_kernel(const float* from, float* to, int64_t total, int64_t seq, int64_t heads, int64_t dim,
                             bool split) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t t = token_index(i, seq, heads, dim);
    if (split)
      to[i] = from[t];
    else
      to[t] = from[i];
  }
}

__global__ void causal_mask_kernel(float* s, int64_t total, int64_t seq_q, int64_t seq_kv) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t j = i % seq_kv, q = (i / seq_kv) % seq_q;
    if (j > q) s[i] = -INFINITY;
  }
}

}  // namespace

// Declared where they are called (cuda_attention_op.cpp). split: token -> head-major, else back.
void attention_heads(const float* from, float* to, int64_t n, int64_t seq, int64_t heads, int64_t dim, bool split,
                     cudaStream_t stream) {
  const int64_t total = n * seq * heads * dim;
  if (total <= 0) return;
  heads_kernel<<<grid_for(total), kThreads, 0, stream>>>(from, to, total, seq, heads, dim, split);
  DLT_LAUNCH_CHECK();
}

// -inf at key j > query i of every (rows / seq_q, seq_q, seq_kv) block of scores.
void attention_causal_mask(float* scores, int64_t rows, int64_t seq_q, int64_t seq_kv, cudaStream_t stream) {
  const int64_t total = rows * seq_kv;
  if (total <= 0) return;
  causal_mask_kernel<<<grid_for(total), kThreads, 0, stream>>>(scores, total, seq_q, seq_kv);
  DLT_LAUNCH_CHECK();
}

}  // namespace dlt::cuda
