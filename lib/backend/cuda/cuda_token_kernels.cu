// The token data-movement kernels (backend/token_ops.h): one thread per value, grid-stride.
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

}  // namespace

// Declared where they are called (cuda_token_ops.cpp).
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
