// The token kernels (backend/token_ops.h): one thread per value (per group of values for the
// head normalization, per pair for the rotary embedding), grid-stride.
// batch_sum gives each column one thread that sums its rows in order (rows are a batch: few).
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/cuda_launch.cuh"

namespace dlt::cuda {

namespace {

__global__ void batch_broadcast_add_kernel(const float* x, const float* b, float* y, int64_t total, int64_t length) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) y[i] = (x ? x[i] : 0.f) + b[i % length];
}

__global__ void batch_sum_kernel(const float* dy, float* db, int64_t rows, int64_t length) {
  for (int64_t i = first_index(); i < length; i += grid_stride()) {
    float s = 0.f;
    for (int64_t r = 0; r < rows; ++r) s += dy[r * length + i];
    db[i] = s;
  }
}

// Value t of the (n, h, w, c) side and its place on the (n, w, h, c) side.
__global__ void spatial_transpose_kernel(const float* from, float* to, int64_t total, int64_t h, int64_t w, int64_t c,
                                         bool back) {
  for (int64_t t = first_index(); t < total; t += grid_stride()) {
    const int64_t k = t % c;
    int64_t p = t / c;
    const int64_t j = p % w;
    p /= w;
    const int64_t i = p % h, n = p / h;
    const int64_t wh = ((n * w + j) * h + i) * c + k;
    if (back)
      to[t] = from[wh];
    else
      to[wh] = from[t];
  }
}

// y[b, r, :] = x[b, index[r], :] or 0; one thread per output value.
__global__ void row_gather_kernel(const float* x, float* y, const int32_t* index, int64_t total, int64_t rows_in,
                                  int64_t rows_out, int64_t cols) {
  for (int64_t t = first_index(); t < total; t += grid_stride()) {
    const int64_t j = t % cols, row = t / cols, r = row % rows_out, b = row / rows_out;
    const int32_t i = index[r];
    y[t] = i >= 0 ? x[(b * rows_in + i) * cols + j] : 0.f;
  }
}

// dx[b, s, :] = the sum of dy[b, r, :] over the rows r of s's list, in their order; one thread
// per input value.
__global__ void row_gather_backward_kernel(const float* dy, float* dx, const int32_t* starts, const int32_t* sources,
                                           int64_t total, int64_t rows_in, int64_t rows_out, int64_t cols) {
  for (int64_t t = first_index(); t < total; t += grid_stride()) {
    const int64_t j = t % cols, row = t / cols, s = row % rows_in, b = row / rows_in;
    float sum = 0.f;
    for (int32_t k = starts[s]; k < starts[s + 1]; ++k) sum += dy[(b * rows_out + sources[k]) * cols + j];
    dx[t] = sum;
  }
}

// Head normalize: one thread per group of dim values (norms and dot products in float, in order);
// group g belongs to head g / per_head % heads. The factor: exp(min(t, max_log)), or t (linear).
__device__ float head_scale(const float* t, int64_t h, float max_log, bool linear) {
  return !t ? 1.f : linear ? t[h] : expf(fminf(t[h], max_log));
}

__device__ float group_norm(const float* x, int64_t dim) {
  float n = 0.f;
  for (int64_t i = 0; i < dim; ++i) n += x[i] * x[i];
  return fmaxf(sqrtf(n), 1e-12f);
}

__global__ void head_normalize_kernel(const float* x, const float* t, float* y, int64_t groups, int64_t heads,
                                      int64_t per_head, int64_t dim, float max_log, bool linear) {
  for (int64_t g = first_index(); g < groups; g += grid_stride()) {
    const float* in = x + g * dim;
    const float f = head_scale(t, g / per_head % heads, max_log, linear) / group_norm(in, dim);
    for (int64_t i = 0; i < dim; ++i) y[g * dim + i] = f * in[i];
  }
}

__global__ void head_normalize_backward_kernel(const float* x, const float* t, const float* dy, float* dx,
                                               int64_t groups, int64_t heads, int64_t per_head, int64_t dim,
                                               float max_log, bool linear) {
  for (int64_t g = first_index(); g < groups; g += grid_stride()) {
    const float* in = x + g * dim;
    const float* gr = dy + g * dim;
    const float n = group_norm(in, dim), f = head_scale(t, g / per_head % heads, max_log, linear) / n;
    float dot = 0.f;
    for (int64_t i = 0; i < dim; ++i) dot += in[i] * gr[i];
    dot /= n;
    for (int64_t i = 0; i < dim; ++i) dx[g * dim + i] = f * (gr[i] - in[i] / n * dot);
  }
}

// dt[h]: one block of kThreads per head; thread k sums the head's groups k, k + kThreads, ...
// (row by row, per_head groups in each), then block_sum.
__global__ void head_normalize_scale_grad_kernel(const float* x, const float* t, const float* dy, float* dt,
                                                 int64_t rows, int64_t heads, int64_t per_head, int64_t dim,
                                                 float max_log, bool linear) {
  const int64_t h = blockIdx.x;
  double sum = 0;
  for (int64_t k = threadIdx.x; k < rows * per_head; k += blockDim.x) {
    const int64_t at = ((k / per_head * heads + h) * per_head + k % per_head) * dim;
    float dot = 0.f;
    for (int64_t i = 0; i < dim; ++i) dot += dy[at + i] * x[at + i];
    sum += dot / group_norm(x + at, dim);
  }
  const double total = block_sum(sum);
  if (threadIdx.x != 0) return;
  if (linear)
    dt[h] = static_cast<float>(total);
  else
    dt[h] = t[h] >= max_log ? 0.f : head_scale(t, h, max_log, false) * static_cast<float>(total);
}

// One thread per pair of channels (in place allowed: a thread reads its pair before writing it).
__global__ void rotary_kernel(const float* x, const float* cos_t, const float* sin_t, float* y, int64_t total,
                              int64_t seq, int64_t heads, int64_t dim, int64_t prefix, bool half, bool per_head,
                              float sign) {
  const int64_t pairs = dim / 2;
  for (int64_t p = first_index(); p < total; p += grid_stride()) {
    const int64_t i = p % pairs, g = p / pairs;  // g: the group (token, head)
    const int64_t t = g / heads % seq - prefix;
    const int64_t ia = g * dim + (half ? i : 2 * i), ib = ia + (half ? pairs : 1);
    const float a = x[ia], b = x[ib];
    if (t < 0) {
      y[ia] = a;
      y[ib] = b;
      continue;
    }
    const int64_t row = (per_head ? g % heads * (seq - prefix) : 0) + t;
    const float c = cos_t[row * pairs + i], s = sign * sin_t[row * pairs + i];
    y[ia] = a * c - b * s;
    y[ib] = b * c + a * s;
  }
}

}  // namespace

// Declared where they are called (cuda_token_ops.cpp).
void rotary(const float* x, const float* cos_t, const float* sin_t, float* y, int64_t n, int64_t seq, int64_t heads,
            int64_t dim, int64_t prefix, bool half, bool per_head, bool back, cudaStream_t stream) {
  const int64_t total = n * seq * heads * (dim / 2);
  if (total <= 0) return;
  rotary_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, cos_t, sin_t, y, total, seq, heads, dim, prefix, half,
                                                          per_head, back ? -1.f : 1.f);
  DLT_LAUNCH_CHECK();
}

void head_normalize(const float* x, const float* t, float* y, int64_t rows, int64_t heads, int64_t per_head,
                    int64_t dim, float max_log, bool linear, cudaStream_t stream) {
  const int64_t groups = rows * heads * per_head;
  if (groups <= 0) return;
  head_normalize_kernel<<<grid_for(groups), kThreads, 0, stream>>>(x, t, y, groups, heads, per_head, dim, max_log,
                                                                   linear);
  DLT_LAUNCH_CHECK();
}

void head_normalize_backward(const float* x, const float* t, const float* dy, float* dx, float* dt, int64_t rows,
                             int64_t heads, int64_t per_head, int64_t dim, float max_log, bool linear,
                             cudaStream_t stream) {
  const int64_t groups = rows * heads * per_head;
  if (groups <= 0) return;
  // dt first: dx may overwrite x or dy.
  if (dt) {
    head_normalize_scale_grad_kernel<<<static_cast<unsigned>(heads), kThreads, 0, stream>>>(
        x, t, dy, dt, rows, heads, per_head, dim, max_log, linear);
    DLT_LAUNCH_CHECK();
  }
  head_normalize_backward_kernel<<<grid_for(groups), kThreads, 0, stream>>>(x, t, dy, dx, groups, heads, per_head, dim,
                                                                            max_log, linear);
  DLT_LAUNCH_CHECK();
}

void row_gather(const float* x, float* y, const int32_t* index, int64_t n, int64_t rows_in, int64_t rows_out,
                int64_t cols, cudaStream_t stream) {
  const int64_t total = n * rows_out * cols;
  if (total <= 0) return;
  row_gather_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, y, index, total, rows_in, rows_out, cols);
  DLT_LAUNCH_CHECK();
}

void row_gather_backward(const float* dy, float* dx, const int32_t* starts, const int32_t* sources, int64_t n,
                         int64_t rows_in, int64_t rows_out, int64_t cols, cudaStream_t stream) {
  const int64_t total = n * rows_in * cols;
  if (total <= 0) return;
  row_gather_backward_kernel<<<grid_for(total), kThreads, 0, stream>>>(dy, dx, starts, sources, total, rows_in,
                                                                       rows_out, cols);
  DLT_LAUNCH_CHECK();
}

void batch_broadcast_add(const float* x, const float* b, float* y, int64_t rows, int64_t length, cudaStream_t stream) {
  const int64_t total = rows * length;
  if (total <= 0) return;
  batch_broadcast_add_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, b, y, total, length);
  DLT_LAUNCH_CHECK();
}

void batch_sum(const float* dy, float* db, int64_t rows, int64_t length, cudaStream_t stream) {
  if (length <= 0) return;
  batch_sum_kernel<<<grid_for(length), kThreads, 0, stream>>>(dy, db, rows, length);
  DLT_LAUNCH_CHECK();
}

void spatial_transpose(const float* from, float* to, int64_t n, int64_t h, int64_t w, int64_t c, bool back,
                       cudaStream_t stream) {
  const int64_t total = n * h * w * c;
  if (total <= 0) return;
  spatial_transpose_kernel<<<grid_for(total), kThreads, 0, stream>>>(from, to, total, h, w, c, back);
  DLT_LAUNCH_CHECK();
}

}  // namespace dlt::cuda
