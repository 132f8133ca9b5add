// The resize kernels (backend/resize_op.h): one thread per output value, grid-stride, reading
// the descriptor's row and column taps from a device table (i0, i1, w1 per output row, then per
// output column, as floats; bicubic: i0..i3, w0..w3). The backward adds each output gradient into its input pixels with
// atomicAdd (dx zeroed first): where taps overlap, the order of the additions varies.
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/cuda_launch.cuh"

namespace dlt::cuda {

namespace {

struct Taps {
  int64_t y0, y1, x0, x1;
  float wy, wx;
};

// Output value i of (n, oh, ow, c): its image, channel and the taps of its row and column.
__device__ inline Taps taps_of(int64_t i, const float* table, int64_t oh, int64_t ow, int64_t c, int64_t& n,
                               int64_t& k) {
  k = i % c;
  int64_t p = i / c;
  const int64_t ox = p % ow;
  p /= ow;
  const int64_t oy = p % oh;
  n = p / oh;
  const float* r = table + 3 * oy;
  const float* q = table + 3 * (oh + ox);
  return {static_cast<int64_t>(r[0]), static_cast<int64_t>(r[1]), static_cast<int64_t>(q[0]),
          static_cast<int64_t>(q[1]), r[2], q[2]};
}

__global__ void resize_forward_kernel(const float* x, float* y, const float* table, int64_t total, int64_t h,
                                      int64_t w, int64_t c, int64_t oh, int64_t ow) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    int64_t n, k;
    const Taps t = taps_of(i, table, oh, ow, c, n, k);
    const float* img = x + n * h * w * c + k;
    const float a = img[(t.y0 * w + t.x0) * c], b = img[(t.y0 * w + t.x1) * c];
    const float e = img[(t.y1 * w + t.x0) * c], f = img[(t.y1 * w + t.x1) * c];
    y[i] = (1.f - t.wy) * ((1.f - t.wx) * a + t.wx * b) + t.wy * ((1.f - t.wx) * e + t.wx * f);
  }
}

__global__ void resize_backward_kernel(const float* dy, float* dx, const float* table, int64_t total, int64_t h,
                                       int64_t w, int64_t c, int64_t oh, int64_t ow) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    int64_t n, k;
    const Taps t = taps_of(i, table, oh, ow, c, n, k);
    float* img = dx + n * h * w * c + k;
    const float g = dy[i];
    const float w00 = (1.f - t.wy) * (1.f - t.wx), w01 = (1.f - t.wy) * t.wx, w10 = t.wy * (1.f - t.wx),
                w11 = t.wy * t.wx;
    if (w00 != 0.f) atomicAdd(img + (t.y0 * w + t.x0) * c, w00 * g);
    if (w01 != 0.f) atomicAdd(img + (t.y0 * w + t.x1) * c, w01 * g);
    if (w10 != 0.f) atomicAdd(img + (t.y1 * w + t.x0) * c, w10 * g);
    if (w11 != 0.f) atomicAdd(img + (t.y1 * w + t.x1) * c, w11 * g);
  }
}

// Bicubic: the table holds (i0..i3, w0..w3) per output row, then per output column. Output
// value i of (n, oh, ow, c): its row's and column's entries (r, q), its image and channel.
__device__ inline void cubic_taps_of(int64_t i, const float* table, int64_t oh, int64_t ow, int64_t c,
                                     const float*& r, const float*& q, int64_t& n, int64_t& k) {
  k = i % c;
  int64_t p = i / c;
  const int64_t ox = p % ow;
  p /= ow;
  r = table + 8 * (p % oh);
  q = table + 8 * (oh + ox);
  n = p / oh;
}

__global__ void resize_cubic_forward_kernel(const float* x, float* y, const float* table, int64_t total, int64_t h,
                                            int64_t w, int64_t c, int64_t oh, int64_t ow) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const float *r, *q;
    int64_t n, k;
    cubic_taps_of(i, table, oh, ow, c, r, q, n, k);
    const float* img = x + n * h * w * c + k;
    float acc = 0.f;
    for (int a = 0; a < 4; ++a) {
      const float* row = img + static_cast<int64_t>(r[a]) * w * c;
      for (int b = 0; b < 4; ++b) acc += r[4 + a] * q[4 + b] * row[static_cast<int64_t>(q[b]) * c];
    }
    y[i] = acc;
  }
}

__global__ void resize_cubic_backward_kernel(const float* dy, float* dx, const float* table, int64_t total, int64_t h,
                                             int64_t w, int64_t c, int64_t oh, int64_t ow) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const float *r, *q;
    int64_t n, k;
    cubic_taps_of(i, table, oh, ow, c, r, q, n, k);
    float* img = dx + n * h * w * c + k;
    const float g = dy[i];
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b) {
        const float wt = r[4 + a] * q[4 + b];
        if (wt != 0.f)
          atomicAdd(img + (static_cast<int64_t>(r[a]) * w + static_cast<int64_t>(q[b])) * c, wt * g);
      }
  }
}

}  // namespace

// Declared where they are called (cuda_resize_op.cpp). cubic: the bicubic table and kernels.
void resize_forward(const float* x, float* y, const float* table, int64_t n, int64_t h, int64_t w, int64_t c,
                    int64_t oh, int64_t ow, bool cubic, cudaStream_t stream) {
  const int64_t total = n * oh * ow * c;
  if (total <= 0) return;
  auto* kernel = cubic ? resize_cubic_forward_kernel : resize_forward_kernel;
  kernel<<<grid_for(total), kThreads, 0, stream>>>(x, y, table, total, h, w, c, oh, ow);
  DLT_LAUNCH_CHECK();
}

void resize_backward(const float* dy, float* dx, const float* table, int64_t n, int64_t h, int64_t w, int64_t c,
                     int64_t oh, int64_t ow, bool cubic, cudaStream_t stream) {
  DLT_CUDA(cudaMemsetAsync(dx, 0, static_cast<size_t>(n * h * w * c) * sizeof(float), stream));
  const int64_t total = n * oh * ow * c;
  if (total <= 0) return;
  auto* kernel = cubic ? resize_cubic_backward_kernel : resize_backward_kernel;
  kernel<<<grid_for(total), kThreads, 0, stream>>>(dy, dx, table, total, h, w, c, oh, ow);
  DLT_LAUNCH_CHECK();
}

}  // namespace dlt::cuda
