// The attention op's own kernels (backend/attention_op.h, cuda_attention_op.cpp): moving the
// heads of a token tensor (n, seq, heads * dim) to and from head-major (n, heads, seq, dim),
// the additive bias and its gradient, the causal mask on the scores and the dropout mask on the probabilities
// (dropout_hash.h: the CPU's mask bit for bit), the talking heads' mix bias and its sums. One
// thread per value, grid-stride (the sums: a block per head).
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/cuda_launch.cuh"
#include "backend/dropout_hash.h"

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

// s[i] += bias[(b % bias_n) * plane + i % plane], b = i / plane the batch entry.
__global__ void add_bias_kernel(float* s, const float* bias, int64_t total, int64_t plane, int64_t bias_n) {
  for (int64_t i = first_index(); i < total; i += grid_stride())
    s[i] += bias[((i / plane) % bias_n) * plane + i % plane];
}

// db[f] = sum over the batch entries b = f / plane, + bias_n, ... < n of ds[b * plane + f % plane].
__global__ void bias_grad_kernel(const float* ds, float* db, int64_t count, int64_t plane, int64_t bias_n, int64_t n) {
  for (int64_t f = first_index(); f < count; f += grid_stride()) {
    float sum = 0.f;
    for (int64_t b = f / plane; b < n; b += bias_n) sum += ds[b * plane + f % plane];
    db[f] = sum;
  }
}

__global__ void dropout_mask_kernel(const float* from, float* to, int64_t total, float p, float scale, uint64_t key) {
  for (int64_t i = first_index(); i < total; i += grid_stride())
    to[i] = dropout_uniform(key, static_cast<uint64_t>(i)) >= p ? from[i] * scale : 0.f;
}

// x[i] += bias[(i / plane) % heads]: a value per head of each (n, heads, plane) block.
__global__ void head_bias_kernel(float* x, const float* bias, int64_t total, int64_t plane, int64_t heads) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) x[i] += bias[(i / plane) % heads];
}

// out[g] = sum over b < n and e < plane of x[(b * heads + g) * plane + e]: block g, in double, a
// fixed order.
__global__ void head_sum_kernel(const float* x, float* out, int64_t n, int64_t heads, int64_t plane) {
  const int64_t g = blockIdx.x;
  double sum = 0;
  for (int64_t i = threadIdx.x; i < n * plane; i += blockDim.x) sum += x[((i / plane) * heads + g) * plane + i % plane];
  sum = block_sum(sum);
  if (threadIdx.x == 0) out[g] = static_cast<float>(sum);
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

// The bias (bias_n, plane) added to the scores (n, plane), plane = heads * seq_q * seq_kv.
void attention_add_bias(float* scores, const float* bias, int64_t n, int64_t plane, int64_t bias_n,
                        cudaStream_t stream) {
  const int64_t total = n * plane;
  if (total <= 0) return;
  add_bias_kernel<<<grid_for(total), kThreads, 0, stream>>>(scores, bias, total, plane, bias_n);
  DLT_LAUNCH_CHECK();
}

// The bias's gradient (bias_n, plane) from the scores' (n, plane): written, not accumulated.
void attention_bias_grad(const float* ds, float* dbias, int64_t n, int64_t plane, int64_t bias_n, cudaStream_t stream) {
  const int64_t count = bias_n * plane;
  if (count <= 0) return;
  bias_grad_kernel<<<grid_for(count), kThreads, 0, stream>>>(ds, dbias, count, plane, bias_n, n);
  DLT_LAUNCH_CHECK();
}

// to = from * M over all the probabilities (n, heads, seq_q, seq_kv): kept with probability
// 1 - p and scaled by `scale` (from and to may be the same).
void attention_dropout(const float* from, float* to, int64_t total, float p, float scale, uint64_t key,
                       cudaStream_t stream) {
  if (total <= 0) return;
  dropout_mask_kernel<<<grid_for(total), kThreads, 0, stream>>>(from, to, total, p, scale, key);
  DLT_LAUNCH_CHECK();
}

// bias[g] added to every value of head g of x (n, heads, plane): the talking heads' mix bias.
void attention_head_bias(float* x, const float* bias, int64_t n, int64_t heads, int64_t plane, cudaStream_t stream) {
  const int64_t total = n * heads * plane;
  if (total <= 0) return;
  head_bias_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, bias, total, plane, heads);
  DLT_LAUNCH_CHECK();
}

// out (heads) = the sums of x (n, heads, plane) over n and plane: written, not accumulated.
void attention_head_sum(const float* x, float* out, int64_t n, int64_t heads, int64_t plane, cudaStream_t stream) {
  if (heads <= 0) return;
  head_sum_kernel<<<static_cast<unsigned>(heads), kThreads, 0, stream>>>(x, out, n, heads, plane);
  DLT_LAUNCH_CHECK();
}

}  // namespace dlt::cuda
