// Batch normalization (training) + ReLU + max pooling without padding in one pass over the
// input, and its backward in one pass over the input gradient (ops.h BnReluMaxPoolOp). oneDNN
// runs them as three passes forward (statistics, normalize, pool) and as many backward, over
// the full-size tensor; here the full-size normalized tensor is never written.
//
// Forward, per image (images in parallel): the per-channel sums of x - K and (x - K)^2 (K_c:
// the first pixel of the batch, so that large means do not cancel in the variance; float within
// an image, double across images), and the window maxima of sign(scale_c) * x with their
// window positions. Then mean and the biased variance, and the
// pooled values normalized and ReLU'd: max commutes with a per-channel monotone function.
// Backward: the pooled gradient masked by pooled > 0 (the ReLU) gives doffset and dscale (sums
// over the pooled positions: elsewhere batch norm's output gradient is 0), then one pass over x:
// each input pixel gathers the gradient of the windows whose maximum it is (as
// pool_op.cpp's max_pool_backward_image) and applies batch norm's backward,
// dx = k (g - doffset / M - xhat dscale / M), k = scale / sigma, M = N H W.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <omp.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"

namespace dlt::cpu {
namespace {

struct Geometry {
  int64_t h, w, c, kh, kw, sh, sw, oh, ow;
};

// Channels in blocks of one vector register (16 lanes on AVX-512, 8 on AVX2, 4 otherwise) held
// in GCC vector types: the accumulators stay in registers. With plain loops over a run-time
// channel count they stayed in memory (each position's add waiting for the last store), with
// fixed-size arrays the compiler unrolled them into scalar code (2-3x slower), and 16-lane
// vectors compiled for AVX2 ran 6x slower than 8-lane ones (their compares and selects went
// scalar). The channels past the last full block take the scalar loops.
// (GCC drops vector_size on an alias template with a dependent size: one type per width.)
template <int64_t L>
struct Lanes;
template <>
struct Lanes<16> {
  typedef float F __attribute__((vector_size(64)));
  typedef int32_t I __attribute__((vector_size(64)));
};
template <>
struct Lanes<8> {
  typedef float F __attribute__((vector_size(32)));
  typedef int32_t I __attribute__((vector_size(32)));
};
template <>
struct Lanes<4> {
  typedef float F __attribute__((vector_size(16)));
  typedef int32_t I __attribute__((vector_size(16)));
};
template <int64_t L>
using VecF = typename Lanes<L>::F;
template <int64_t L>
using VecI = typename Lanes<L>::I;

// Unaligned vector loads (GNU statement expressions: no function returns a vector, which would
// change the calling convention between the per-ISA kernel sets; clang rejects that outright)
// and stores, both through memcpy, which the compiler turns into vector moves.
#define DLT_LOAD(V, p)                             \
  ({                                               \
    V dlt_v_;                                      \
    __builtin_memcpy(&dlt_v_, (p), sizeof dlt_v_); \
    dlt_v_;                                        \
  })
template <class V, class T>
__attribute__((always_inline)) inline void store(T* p, const V& v) {
  __builtin_memcpy(p, &v, sizeof v);
}

// Sums of x - k and (x - k)^2 over one image's positions, per channel, added to s1 and s2.
template <int64_t L>
__attribute__((always_inline)) inline void image_sums(const float* __restrict x, const float* __restrict k,
                                                      float* __restrict s1, float* __restrict s2, int64_t positions,
                                                      int64_t c) {
  int64_t c0 = 0;
  for (; c0 + L <= c; c0 += L) {
    const VecF<L> kv = DLT_LOAD(VecF<L>, k + c0);
    VecF<L> a1 = {}, a2 = {};
    for (int64_t p = 0; p < positions; ++p) {
      const VecF<L> d = DLT_LOAD(VecF<L>, x + p * c + c0) - kv;
      a1 += d;
      a2 += d * d;
    }
    store(s1 + c0, DLT_LOAD(VecF<L>, s1 + c0) + a1);
    store(s2 + c0, DLT_LOAD(VecF<L>, s2 + c0) + a2);
  }
  for (; c0 < c; ++c0)
    for (int64_t p = 0; p < positions; ++p) {
      const float d = x[p * c + c0] - k[c0];
      s1[c0] += d;
      s2[c0] += d * d;
    }
}

// One output's window maxima of sgn * x for channels [c0, c0 + L): the raw x of each maximum
// and its window position r * kw + q.
template <int64_t L>
__attribute__((always_inline)) inline void maxima_block(const float* __restrict x, const float* __restrict sgn,
                                                        float* __restrict xmax, int32_t* __restrict at,
                                                        const Geometry& g, int64_t oh, int64_t ow, int64_t c0) {
  const int64_t c = g.c;
  const VecF<L> sg = DLT_LOAD(VecF<L>, sgn + c0);
  VecF<L> m = DLT_LOAD(VecF<L>, x + ((oh * g.sh) * g.w + ow * g.sw) * c + c0) * sg;
  VecI<L> a = {};
  for (int64_t r = 0; r < g.kh; ++r)
    for (int64_t q = r == 0 ? 1 : 0; q < g.kw; ++q) {
      const VecF<L> sv = DLT_LOAD(VecF<L>, x + ((oh * g.sh + r) * g.w + ow * g.sw + q) * c + c0) * sg;
      const VecI<L> gt = sv > m;
      m = gt ? sv : m;
      a = gt ? static_cast<int32_t>(r * g.kw + q) : a;
    }
  const int64_t o = (oh * g.ow + ow) * c + c0;
  store(xmax + o, m * sg);  // back to x: sg is +-1
  store(at + o, a);
}

// One image's window maxima of sgn * x: the raw x of each maximum and its window position.
template <int64_t L>
__attribute__((always_inline)) inline void image_maxima(const float* __restrict x, const float* __restrict sgn,
                                                        float* __restrict xmax, int32_t* __restrict at,
                                                        const Geometry& g) {
  const int64_t c = g.c;
  for (int64_t oh = 0; oh < g.oh; ++oh)
    for (int64_t ow = 0; ow < g.ow; ++ow) {
      int64_t c0 = 0;
      for (; c0 + L <= c; c0 += L) maxima_block<L>(x, sgn, xmax, at, g, oh, ow, c0);
      for (; c0 < c; ++c0) {
        float m = -std::numeric_limits<float>::infinity();
        int32_t a = 0;
        for (int64_t r = 0; r < g.kh; ++r)
          for (int64_t q = 0; q < g.kw; ++q) {
            const float sv = sgn[c0] * x[((oh * g.sh + r) * g.w + ow * g.sw + q) * c + c0];
            if (sv > m) {
              m = sv;
              a = static_cast<int32_t>(r * g.kw + q);
            }
          }
        xmax[(oh * g.ow + ow) * c + c0] = m * sgn[c0];
        at[(oh * g.ow + ow) * c + c0] = a;
      }
    }
}

// pooled = max(0, scale * (xmax - mean) * inv_sigma + offset), over n pooled rows of c.
__attribute__((always_inline)) inline void normalize_pooled(const float* __restrict xmax, const float* __restrict mean,
                                                            const float* __restrict inv_sigma,
                                                            const float* __restrict scale,
                                                            const float* __restrict offset, float* __restrict pooled,
                                                            int64_t rows, int64_t c) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < c; ++i) {
      const float y = scale[i] * ((xmax[r * c + i] - mean[i]) * inv_sigma[i]) + offset[i];
      pooled[r * c + i] = y > 0.f ? y : 0.f;
    }
}

// One image's masked pooled gradient g (pooled > 0) and its sums: doffset += g, dscale += g xhat.
__attribute__((always_inline)) inline void image_grad_sums(const float* __restrict pooled,
                                                           const float* __restrict dpooled,
                                                           const float* __restrict xmax, const float* __restrict mean,
                                                           const float* __restrict inv_sigma, float* __restrict g,
                                                           float* __restrict d_off, float* __restrict d_scale,
                                                           int64_t rows, int64_t c) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < c; ++i) {
      const float dp = dpooled[r * c + i];  // read unconditionally: a plain vector load
      const float v = pooled[r * c + i] > 0.f ? dp : 0.f;
      g[r * c + i] = v;
      d_off[i] += v;
      d_scale[i] += v * ((xmax[r * c + i] - mean[i]) * inv_sigma[i]);
    }
}

// One image's dx = k * gathered + b * (x - mean) + d per channel (k, b, d: coef[0..3c)).
template <int64_t L>
__attribute__((always_inline)) inline void image_dx(const float* __restrict x, const float* __restrict g,
                                                    const int32_t* __restrict at, const float* __restrict mean,
                                                    const float* __restrict coef, float* __restrict dx,
                                                    const Geometry& geo) {
  const int64_t c = geo.c;
  const float* __restrict k = coef;
  const float* __restrict b = coef + c;
  const float* __restrict d = coef + 2 * c;
  // The windows that cover input row i: o * stride <= i <= o * stride + kernel - 1.
  auto first = [](int64_t i, int64_t kernel, int64_t stride) {
    const int64_t lo = i - kernel + 1;
    return lo <= 0 ? 0 : (lo + stride - 1) / stride;
  };
  for (int64_t ih = 0; ih < geo.h; ++ih) {
    const int64_t oh0 = first(ih, geo.kh, geo.sh), oh1 = std::min(geo.oh - 1, ih / geo.sh);
    for (int64_t iw = 0; iw < geo.w; ++iw) {
      const int64_t ow0 = first(iw, geo.kw, geo.sw), ow1 = std::min(geo.ow - 1, iw / geo.sw);
      const float* __restrict xv = x + (ih * geo.w + iw) * c;
      float* __restrict out = dx + (ih * geo.w + iw) * c;
      int64_t c0 = 0;
      for (; c0 + L <= c; c0 += L) {
        const VecF<L> kv = DLT_LOAD(VecF<L>, k + c0);
        VecF<L> acc = DLT_LOAD(VecF<L>, b + c0) * (DLT_LOAD(VecF<L>, xv + c0) - DLT_LOAD(VecF<L>, mean + c0)) +
                      DLT_LOAD(VecF<L>, d + c0);
        for (int64_t oh = oh0; oh <= oh1; ++oh)
          for (int64_t ow = ow0; ow <= ow1; ++ow) {
            const auto pos = static_cast<int32_t>((ih - oh * geo.sh) * geo.kw + (iw - ow * geo.sw));
            const int64_t o = (oh * geo.ow + ow) * c + c0;
            const VecF<L> v = kv * DLT_LOAD(VecF<L>, g + o);
            const VecI<L> hit = DLT_LOAD(VecI<L>, at + o) == pos;
            acc += hit ? v : VecF<L>{};
          }
        store(out + c0, acc);
      }
      for (; c0 < c; ++c0) {
        float acc = b[c0] * (xv[c0] - mean[c0]) + d[c0];
        for (int64_t oh = oh0; oh <= oh1; ++oh)
          for (int64_t ow = ow0; ow <= ow1; ++ow) {
            const auto pos = static_cast<int32_t>((ih - oh * geo.sh) * geo.kw + (iw - ow * geo.sw));
            const int64_t o = (oh * geo.ow + ow) * c + c0;
            if (at[o] == pos) acc += k[c0] * g[o];
          }
        out[c0] = acc;
      }
    }
  }
}

// Two per-channel sums over the batch into t1 and t2 (c each): image(img, a, b) adds one image's
// terms to the float arrays a and b (c each, zeroed per image); the images run in parallel, each
// thread adds its images' sums in double, and the threads' totals are added in thread order (the
// same result on every run with the same thread count). The buffers are the op's, grown on first
// use: nothing is allocated per training step.
struct SumBuffers {
  std::vector<double> threads, t1, t2;  // per thread 2c; the totals
  std::vector<float> images;            // per thread 2c: one image's float sums
};

template <class PerImage>
void batch_channel_sums(int64_t n, int64_t c, SumBuffers& buf, const PerImage& image) {
  const int threads = omp_get_max_threads();
  const auto per_thread = static_cast<size_t>(2 * c), all = static_cast<size_t>(threads) * per_thread;
  if (buf.threads.size() < all) buf.threads.resize(all);
  if (buf.images.size() < all) buf.images.resize(all);
  buf.t1.assign(static_cast<size_t>(c), 0.0);
  buf.t2.assign(static_cast<size_t>(c), 0.0);
  std::fill(buf.threads.begin(), buf.threads.begin() + static_cast<std::ptrdiff_t>(all), 0.0);
#pragma omp parallel num_threads(threads)
  {
    const auto t = static_cast<size_t>(omp_get_thread_num());
    double* my = buf.threads.data() + t * per_thread;
    float* a = buf.images.data() + t * per_thread;
    float* b = a + c;
#pragma omp for schedule(static)
    for (int64_t img = 0; img < n; ++img) {
      std::fill(a, a + 2 * c, 0.f);
      image(img, a, b);
      for (int64_t i = 0; i < c; ++i) {
        my[i] += a[i];
        my[c + i] += b[i];
      }
    }
  }
  for (int t = 0; t < threads; ++t)
    for (int64_t i = 0; i < c; ++i) {
      buf.t1[static_cast<size_t>(i)] += buf.threads[static_cast<size_t>(t) * per_thread + static_cast<size_t>(i)];
      buf.t2[static_cast<size_t>(i)] += buf.threads[static_cast<size_t>(t) * per_thread + static_cast<size_t>(c + i)];
    }
}

// The per-image kernels, compiled once per instruction set (the bodies above are inlined into
// each). The op picks a set by dltrain's oneDNN ISA (cpu_isa()), not by the CPU alone, so that
// DNNL_MAX_CPU_ISA=AVX2 runs the AVX2 set on an AVX-512 machine as it does oneDNN's kernels.
struct Kernels {
  void (*forward)(const float* x, const float* shift, const float* sgn, float* s1, float* s2, float* xmax, int32_t* at,
                  const Geometry& g);
  void (*normalize)(const float* xmax, const float* mean, const float* inv_sigma, const float* scale,
                    const float* offset, float* pooled, int64_t rows, int64_t c);
  void (*grad_sums)(const float* pooled, const float* dpooled, const float* xmax, const float* mean,
                    const float* inv_sigma, float* g, float* d_off, float* d_scale, int64_t rows, int64_t c);
  void (*dx)(const float* x, const float* g, const int32_t* at, const float* mean, const float* coef, float* dx,
             const Geometry& geo);
};

#define DLT_BN_POOL_KERNELS(NAME, TARGET, L)                                                                          \
  TARGET void NAME##_forward(const float* x, const float* shift, const float* sgn, float* s1, float* s2, float* xmax, \
                             int32_t* at, const Geometry& g) {                                                        \
    image_sums<L>(x, shift, s1, s2, g.h * g.w, g.c);                                                                  \
    image_maxima<L>(x, sgn, xmax, at, g);                                                                             \
  }                                                                                                                   \
  TARGET void NAME##_normalize(const float* xmax, const float* mean, const float* inv_sigma, const float* scale,      \
                               const float* offset, float* pooled, int64_t rows, int64_t c) {                         \
    normalize_pooled(xmax, mean, inv_sigma, scale, offset, pooled, rows, c);                                          \
  }                                                                                                                   \
  TARGET void NAME##_grad_sums(const float* pooled, const float* dpooled, const float* xmax, const float* mean,       \
                               const float* inv_sigma, float* g, float* d_off, float* d_scale, int64_t rows,          \
                               int64_t c) {                                                                           \
    image_grad_sums(pooled, dpooled, xmax, mean, inv_sigma, g, d_off, d_scale, rows, c);                              \
  }                                                                                                                   \
  TARGET void NAME##_dx(const float* x, const float* g, const int32_t* at, const float* mean, const float* coef,      \
                        float* dx, const Geometry& geo) {                                                             \
    image_dx<L>(x, g, at, mean, coef, dx, geo);                                                                       \
  }                                                                                                                   \
  constexpr Kernels NAME{NAME##_forward, NAME##_normalize, NAME##_grad_sums, NAME##_dx};

DLT_BN_POOL_KERNELS(kAvx512, [[gnu::target("avx512f")]], 16)
DLT_BN_POOL_KERNELS(kAvx2, [[gnu::target("avx2")]], 8)
DLT_BN_POOL_KERNELS(kBaseline, , 4)
#undef DLT_BN_POOL_KERNELS

const Kernels& kernels_for(const CpuIsa& isa) { return isa.avx512 ? kAvx512 : isa.avx2 ? kAvx2 : kBaseline; }

class CpuBnReluMaxPoolOp final : public BnReluMaxPoolOp {
 public:
  explicit CpuBnReluMaxPoolOp(const BnReluMaxPoolDesc& d) : BnReluMaxPoolOp(d, Device::cpu()), d_(d) {
    DLT_CHECK(d.kh * d.kw <= 256 && d.out_h() > 0 && d.out_w() > 0,
              "bn_relu_max_pool: window " << d.kh << "x" << d.kw << " over " << d.bn.h << "x" << d.bn.w);
    geo_ = {d.bn.h, d.bn.w, d.bn.c, d.kh, d.kw, d.stride_h, d.stride_w, d.out_h(), d.out_w()};
    const auto pooled = static_cast<size_t>(d.bn.n * geo_.oh * geo_.ow * geo_.c);
    xmax_.resize(pooled);
    at_.resize(pooled);
    g_.resize(pooled);
    const auto c = static_cast<size_t>(geo_.c);
    mean_.resize(c);
    inv_sigma_.resize(c);
    shift_.resize(c);
    sgn_.resize(c);
    coef_.resize(3 * c);
  }

 protected:
  void do_forward_training(const Tensor& xt, const Tensor& scale, const Tensor& offset, Tensor& pooled, Tensor& mean,
                           Tensor& var) override {
    const int64_t n = d_.bn.n, c = geo_.c, in = geo_.h * geo_.w * c, out = geo_.oh * geo_.ow * c;
    const float* x = xt.data();
    const float* gamma = scale.data();
    float* shift = shift_.data();
    float* sgn = sgn_.data();
    std::copy(x, x + c, shift);
    for (int64_t i = 0; i < c; ++i) sgn[i] = gamma[i] < 0.f ? -1.f : 1.f;
    batch_channel_sums(n, c, sums_, [&](int64_t img, float* a, float* b) {
      k_.forward(x + img * in, shift, sgn, a, b, xmax_.data() + img * out, at_.data() + img * out, geo_);
    });
    const std::vector<double>& s1 = sums_.t1;
    const std::vector<double>& s2 = sums_.t2;
    const double m = static_cast<double>(n * geo_.h * geo_.w);
    float* mu = mean.data();
    float* v = var.data();
    for (int64_t i = 0; i < c; ++i) {
      const double d = s1[static_cast<size_t>(i)] / m;
      mu[i] = static_cast<float>(shift[i] + d);
      v[i] = static_cast<float>(std::max(0.0, s2[static_cast<size_t>(i)] / m - d * d));
      mean_[static_cast<size_t>(i)] = mu[i];
      inv_sigma_[static_cast<size_t>(i)] = 1.f / std::sqrt(v[i] + d_.bn.epsilon);
    }
    float* y = pooled.data();
#pragma omp parallel for schedule(static)
    for (int64_t img = 0; img < n; ++img)
      k_.normalize(xmax_.data() + img * out, mean_.data(), inv_sigma_.data(), gamma, offset.data(), y + img * out,
                   geo_.oh * geo_.ow, c);
  }

  void do_backward(const Tensor& xt, const Tensor& pooled, const Tensor& dpooled, const Tensor& scale, Tensor& dx,
                   Tensor& dscale, Tensor& doffset) override {
    const int64_t n = d_.bn.n, c = geo_.c, in = geo_.h * geo_.w * c, out = geo_.oh * geo_.ow * c;
    batch_channel_sums(n, c, sums_, [&](int64_t img, float* a, float* b) {
      k_.grad_sums(pooled.data() + img * out, dpooled.data() + img * out, xmax_.data() + img * out, mean_.data(),
                   inv_sigma_.data(), g_.data() + img * out, a, b, geo_.oh * geo_.ow, c);
    });
    const double m = static_cast<double>(n * geo_.h * geo_.w);
    const float* gamma = scale.data();
    for (int64_t i = 0; i < c; ++i) {
      const double d_off = sums_.t1[static_cast<size_t>(i)], d_scale = sums_.t2[static_cast<size_t>(i)];
      doffset.data()[i] = static_cast<float>(d_off);
      dscale.data()[i] = static_cast<float>(d_scale);
      const double is = inv_sigma_[static_cast<size_t>(i)];
      const double k = static_cast<double>(gamma[i]) * is;
      coef_[static_cast<size_t>(i)] = static_cast<float>(k);
      coef_[static_cast<size_t>(c + i)] = static_cast<float>(-k * is * d_scale / m);
      coef_[static_cast<size_t>(2 * c + i)] = static_cast<float>(-k * d_off / m);
    }
    if (!dx.defined()) return;
    const float* x = xt.data();
    float* out_dx = dx.data();
#pragma omp parallel for schedule(static)
    for (int64_t img = 0; img < n; ++img)
      k_.dx(x + img * in, g_.data() + img * out, at_.data() + img * out, mean_.data(), coef_.data(), out_dx + img * in,
            geo_);
  }

 private:
  BnReluMaxPoolDesc d_;
  const Kernels& k_ = kernels_for(cpu_isa());
  Geometry geo_{};
  std::vector<float> xmax_;  // raw x of each window's maximum (pooled layout)
  std::vector<int32_t> at_;  // its position in the window, r * kw + q
  std::vector<float> g_;     // backward: the pooled gradient after the ReLU mask
  std::vector<float> mean_, inv_sigma_, coef_;
  std::vector<float> shift_, sgn_;  // forward: K per channel (the batch's first pixel), sign(scale)
  SumBuffers sums_;
};

}  // namespace

static std::unique_ptr<BnReluMaxPoolOp> make_bn_relu_max_pool_op(const BnReluMaxPoolDesc& d) {
  return std::make_unique<CpuBnReluMaxPoolOp>(d);
}

namespace {
std::unique_ptr<BnReluMaxPoolOp> make_registered(Backend&, const BnReluMaxPoolDesc& d) {
  return make_bn_relu_max_pool_op(d);
}
// FusedBatchNormPooling: false turns the fused op off (the layers then run one by one).
bool accepts_registered(const Backend& b, const BnReluMaxPoolDesc&) { return b.options().fused_bn_pool; }
}  // namespace

DLT_REGISTER_OP(BnReluMaxPoolDesc, DeviceType::kCpu, "own", 0, make_registered, accepts_registered);

}  // namespace dlt::cpu
