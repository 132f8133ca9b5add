// The CUDA backend's element-wise kernels, dropout, strided channel copies (concatenation) and
// fused optimizer updates: grid-stride loops over int64 indices. Products and sums use the
// _rn intrinsics, which the compiler never fuses into FMAs, so each result is the one the
// CPU backend's plain float expression gives. Reductions are in cuda_reduce.cu.
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_launch.cuh"
#include "backend/dropout_hash.h"

namespace dlt::cuda {

namespace {

__device__ inline float fmul(float a, float b) { return __fmul_rn(a, b); }
__device__ inline float fadd(float a, float b) { return __fadd_rn(a, b); }
__device__ inline float fsub(float a, float b) { return __fsub_rn(a, b); }

__global__ void fill_kernel(float* p, int64_t n, float value) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) p[i] = value;
}

__global__ void axpby_kernel(float a, const float* x, float b, float* y, int64_t n) {
  if (b == 0.f) {  // y may hold garbage (NaN): do not read it
    for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] = fmul(a, x[i]);
  } else {
    for (int64_t i = first_index(); i < n; i += grid_stride())
      y[i] = fadd(fmul(a, x[i]), fmul(b, y[i]));
  }
}

struct SumInputs {
  const float* x[kSumChunk];
  int k;
};

// accumulate: y += x[0] + ... (a later chunk); otherwise y = x[0] + ...
__global__ void sum_kernel(SumInputs in, bool accumulate, float* y, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    float s = accumulate ? y[i] : in.x[0][i];
    for (int j = accumulate ? 0 : 1; j < in.k; ++j) s = fadd(s, in.x[j][i]);
    y[i] = s;
  }
}

__global__ void scale_kernel(float* p, int64_t n, float s) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) p[i] = fmul(p[i], s);
}

__global__ void clamp_kernel(float* p, int64_t n, float lo, float hi) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) p[i] = fminf(fmaxf(p[i], lo), hi);
}

__global__ void mul_kernel(const float* x, const float* m, float* y, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] = fmul(x[i], m[i]);
}

__global__ void shift_scale_kernel(const float* x, const float* shift, int64_t ns,
                                   const float* mul, int64_t nm, float* y, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float d = fsub(x[i], shift[i % ns]);
    y[i] = mul ? fmul(d, mul[i % nm]) : d;
  }
}

__global__ void dropout_kernel(const float* x, float* y, float* mask, int64_t n, uint64_t key,
                               float p, float keep_value) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    // The CPU backend's hash (dropout_hash.h): masks agree bit for bit.
    const float u =
        fmul(static_cast<float>(dropout_hash(key, static_cast<uint64_t>(i)) >> 40), 0x1p-24f);
    const float m = u >= p ? keep_value : 0.f;
    mask[i] = m;
    y[i] = fmul(x[i], m);
  }
}

__global__ void copy_strided_kernel(const float* src, int64_t src_pitch, float* dst,
                                    int64_t dst_pitch, int64_t rows, int64_t width) {
  const int64_t n = rows * width;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t r = i / width, j = i - r * width;
    dst[r * dst_pitch + j] = src[r * src_pitch + j];
  }
}

// A per-step scalar: by value (captured as it was), or read from device memory (what a
// replayed CUDA graph needs: the caller refreshes the value before each launch).
__device__ inline float load(Scalar s) { return s.at ? *s.at : s.value; }

// v = momentum * v - lr * (g + l2 * w); w += v
__global__ void sgdm_kernel(float* w, const float* g, float* v, int64_t n, Scalar lr_in,
                            float momentum, float l2) {
  const float lr = load(lr_in);
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float vi = fsub(fmul(momentum, v[i]), fmul(lr, fadd(g[i], fmul(l2, w[i]))));
    v[i] = vi;
    w[i] = fadd(w[i], vi);
  }
}

// g' = g + l2 w; m = b1 m + (1-b1) g'; s = b2 s + (1-b2) g' g'; w -= lr (m c1) / (sqrt(s c2) + eps)
__global__ void adam_kernel(float* w, const float* g, float* m, float* s, int64_t n, Scalar lr_in,
                            float b1, float b2, float eps, Scalar c1_in, Scalar c2_in, float l2) {
  const float lr = load(lr_in), c1 = load(c1_in), c2 = load(c2_in);
  const float one_b1 = fsub(1.f, b1), one_b2 = fsub(1.f, b2);
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float wi = w[i];
    const float gi = fadd(g[i], fmul(l2, wi));
    const float mi = fadd(fmul(b1, m[i]), fmul(one_b1, gi));
    const float si = fadd(fmul(b2, s[i]), fmul(fmul(one_b2, gi), gi));
    m[i] = mi;
    s[i] = si;
    w[i] = fsub(wi, __fdiv_rn(fmul(lr, fmul(mi, c1)), fadd(__fsqrt_rn(fmul(si, c2)), eps)));
  }
}

// g' = g + l2 w; s = b2 s + (1-b2) g' g'; w -= lr g' / (sqrt(s) + eps)
__global__ void rmsprop_kernel(float* w, const float* g, float* s, int64_t n, Scalar lr_in, float b2,
                               float eps, float l2) {
  const float lr = load(lr_in);
  const float one_b2 = fsub(1.f, b2);
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float wi = w[i];
    const float gi = fadd(g[i], fmul(l2, wi));
    const float si = fadd(fmul(b2, s[i]), fmul(fmul(one_b2, gi), gi));
    s[i] = si;
    w[i] = fsub(wi, __fdiv_rn(fmul(lr, gi), fadd(__fsqrt_rn(si), eps)));
  }
}

}  // namespace

void fill_value(float* p, int64_t n, float value, cudaStream_t stream) {
  if (n <= 0) return;
  fill_kernel<<<grid_for(n), kThreads, 0, stream>>>(p, n, value);
  DLT_LAUNCH_CHECK();
}

void axpby(float a, const float* x, float b, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  axpby_kernel<<<grid_for(n), kThreads, 0, stream>>>(a, x, b, y, n);
  DLT_LAUNCH_CHECK();
}

void sum(const float* const* xs, int k, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0 || k <= 0) return;
  for (int first = 0; first < k; first += kSumChunk) {
    SumInputs in{};
    in.k = k - first < kSumChunk ? k - first : kSumChunk;
    for (int j = 0; j < in.k; ++j) in.x[j] = xs[first + j];
    sum_kernel<<<grid_for(n), kThreads, 0, stream>>>(in, first > 0, y, n);
    DLT_LAUNCH_CHECK();
  }
}

void scale(float* p, int64_t n, float s, cudaStream_t stream) {
  if (n <= 0) return;
  scale_kernel<<<grid_for(n), kThreads, 0, stream>>>(p, n, s);
  DLT_LAUNCH_CHECK();
}

void clamp(float* p, int64_t n, float lo, float hi, cudaStream_t stream) {
  if (n <= 0) return;
  clamp_kernel<<<grid_for(n), kThreads, 0, stream>>>(p, n, lo, hi);
  DLT_LAUNCH_CHECK();
}

void mul(const float* x, const float* m, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  mul_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, m, y, n);
  DLT_LAUNCH_CHECK();
}

void shift_scale(const float* x, const float* shift, int64_t ns, const float* mul, int64_t nm,
                 float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  shift_scale_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, shift, ns, mul, nm > 0 ? nm : 1, y,
                                                           n);
  DLT_LAUNCH_CHECK();
}

void dropout_forward(const float* x, float* y, float* mask, int64_t n, uint64_t key, float p,
                     float keep_value, cudaStream_t stream) {
  if (n <= 0) return;
  dropout_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, y, mask, n, key, p, keep_value);
  DLT_LAUNCH_CHECK();
}

void copy_strided(const float* src, int64_t src_pitch, float* dst, int64_t dst_pitch,
                  int64_t rows, int64_t width, cudaStream_t stream) {
  if (rows <= 0 || width <= 0) return;
  copy_strided_kernel<<<grid_for(rows * width), kThreads, 0, stream>>>(src, src_pitch, dst,
                                                                       dst_pitch, rows, width);
  DLT_LAUNCH_CHECK();
}

void sgdm_update(float* w, const float* g, float* v, int64_t n, Scalar lr, float momentum,
                 float l2, cudaStream_t stream) {
  if (n <= 0) return;
  sgdm_kernel<<<grid_for(n), kThreads, 0, stream>>>(w, g, v, n, lr, momentum, l2);
  DLT_LAUNCH_CHECK();
}

void adam_update(float* w, const float* g, float* m, float* s, int64_t n, Scalar lr, float b1,
                 float b2, float eps, Scalar c1, Scalar c2, float l2, cudaStream_t stream) {
  if (n <= 0) return;
  adam_kernel<<<grid_for(n), kThreads, 0, stream>>>(w, g, m, s, n, lr, b1, b2, eps, c1, c2, l2);
  DLT_LAUNCH_CHECK();
}

void rmsprop_update(float* w, const float* g, float* s, int64_t n, Scalar lr, float b2, float eps,
                    float l2, cudaStream_t stream) {
  if (n <= 0) return;
  rmsprop_kernel<<<grid_for(n), kThreads, 0, stream>>>(w, g, s, n, lr, b2, eps, l2);
  DLT_LAUNCH_CHECK();
}

}  // namespace dlt::cuda
