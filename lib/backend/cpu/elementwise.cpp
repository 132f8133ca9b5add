// CpuBackend's element-wise work, the cross-entropy loss and the optimizer updates: plain
// OpenMP loops (memory-bound; oneDNN would add nothing), on arguments Backend has checked.
// Results do not depend on the thread count except for the rounding of the double-precision
// reductions.
#include <algorithm>
#include <cmath>
#include <cstring>

#include <omp.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/dnnl_util.h"
#include "backend/dropout_hash.h"
#include "backend/kernel_kinds.h"

namespace dlt {
namespace {

constexpr int64_t kParallelMin = 1 << 14;  // below this, threads cost more than they save

}  // namespace

static void cpu_fill(Backend&, Tensor& t, float value) {
  float* p = t.data();
  const int64_t n = t.numel();
#pragma omp parallel for if (n > kParallelMin) schedule(static)
  for (int64_t i = 0; i < n; ++i) p[i] = value;
}

static void cpu_copy(Backend&, const Tensor& src, Tensor& dst) {
  if (src.data() != dst.data()) std::memcpy(dst.data(), src.data(), src.bytes());
}

static void cpu_axpby(Backend&, float a, const Tensor& x, float b, Tensor& y) {
  const float* px = x.data();
  float* py = y.data();
  const int64_t n = y.numel();
  if (b == 0.f) {  // y may hold garbage (NaN) when b is 0: do not read it
#pragma omp parallel for if (n > kParallelMin) schedule(static)
    for (int64_t i = 0; i < n; ++i) py[i] = a * px[i];
  } else {
#pragma omp parallel for if (n > kParallelMin) schedule(static)
    for (int64_t i = 0; i < n; ++i) py[i] = a * px[i] + b * py[i];
  }
}

static void cpu_sum(Backend&, const std::vector<const Tensor*>& xs, Tensor& y) {
  const int64_t n = y.numel();
  float* py = y.data();
  const int64_t k = static_cast<int64_t>(xs.size());
#pragma omp parallel for if (n > kParallelMin) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    float s = xs[0]->data()[i];
    for (int64_t j = 1; j < k; ++j) s += xs[j]->data()[i];
    py[i] = s;
  }
}

static void cpu_scale(Backend&, Tensor& t, float s) {
  float* p = t.data();
  const int64_t n = t.numel();
#pragma omp parallel for if (n > kParallelMin) schedule(static)
  for (int64_t i = 0; i < n; ++i) p[i] *= s;
}

static void cpu_clamp(Backend&, Tensor& t, float lo, float hi) {
  float* p = t.data();
  const int64_t n = t.numel();
#pragma omp parallel for if (n > kParallelMin) schedule(static)
  for (int64_t i = 0; i < n; ++i) p[i] = std::fmin(std::fmax(p[i], lo), hi);
}

static double cpu_sum_squares(Backend&, const Tensor& t) {
  const float* p = t.data();
  const int64_t n = t.numel();
  double s = 0;
#pragma omp parallel for if (n > kParallelMin) schedule(static) reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(p[i]) * p[i];
  return s;
}

static void cpu_l2_norm_into(Backend& b, const Tensor& t, Tensor& norms, int64_t index, bool accumulate) {
  float* r = norms.data() + index;
  const double before = accumulate ? static_cast<double>(*r) : 0.0;
  *r = static_cast<float>(std::sqrt(before * before + cpu_sum_squares(b, t)));
}

static void cpu_clip_to_norm(Backend& b, Tensor& t, const Tensor& norms, int64_t index, double threshold) {
  const double norm = static_cast<double>(norms.data()[index]);
  if (norm > threshold) cpu_scale(b, t, static_cast<float>(threshold / norm));
}

static void cpu_shift_scale(Backend&, const Tensor& x, const Tensor& shift, const Tensor& mul, Tensor& y) {
  const int64_t n = x.numel(), ns = shift.numel(), nm = mul.defined() ? mul.numel() : 1;
  const float* px = x.data();
  const float* ps = shift.data();
  const float* pm = mul.defined() ? mul.data() : nullptr;
  float* py = y.data();
  if (!pm) {  // rows of ns (a mean image per image): a loop the compiler vectorizes
    const int64_t rows = n / ns;
#pragma omp parallel for if (n > kParallelMin) schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float* __restrict a = px + r * ns;
      float* __restrict b = py + r * ns;
      for (int64_t j = 0; j < ns; ++j) b[j] = a[j] - ps[j];
    }
    return;
  }
  // Per-channel values: each thread's contiguous range, with the positions in shift and mul
  // counted along instead of an integer division per element.
#pragma omp parallel if (n > kParallelMin)
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t lo = n * t / threads, hi = n * (t + 1) / threads;
    int64_t j = lo % ns, k = lo % nm;
    for (int64_t i = lo; i < hi; ++i) {
      py[i] = (px[i] - ps[j]) * pm[k];
      if (++j == ns) j = 0;
      if (++k == nm) k = 0;
    }
  }
}

static void cpu_dropout_forward(Backend&, const Tensor& x, Tensor& y, Tensor& mask, float p, uint64_t key,
                                float keep_value) {
  const int64_t n = x.numel();
  const float* px = x.data();
  float* py = y.data();
  float* pm = mask.data();
#pragma omp parallel for if (n > kParallelMin) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float m = dropout_uniform(key, static_cast<uint64_t>(i)) >= p ? keep_value : 0.f;
    pm[i] = m;
    py[i] = px[i] * m;
  }
}

static void cpu_multiply_same_size(Backend&, const Tensor& x, const Tensor& m, Tensor& y) {
  const float* px = x.data();
  const float* pm = m.data();
  float* py = y.data();
  const int64_t n = x.numel();
#pragma omp parallel for if (n > kParallelMin) schedule(static)
  for (int64_t i = 0; i < n; ++i) py[i] = px[i] * pm[i];
}

// Max unpooling (backend.h). One plane position per (n, output position, channel); the
// window loops are the definition, not a GEMM.
static void cpu_max_pool_indices(Backend&, const Tensor& x, Tensor& idx, const PoolDesc& d) {
  const int64_t oh = d.out_h(), ow = d.out_w(), c = d.c;
  const float* px = x.data();
  int32_t* pi = idx.data_i32();
#pragma omp parallel for collapse(2)
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t ch = 0; ch < c; ++ch) {
          int64_t best = -1;
          float bv = 0.f;
          for (int64_t a = 0; a < d.kh; ++a) {
            const int64_t h = i * d.stride_h - d.pad_t + a;
            if (h < 0 || h >= d.h) continue;
            for (int64_t b = 0; b < d.kw; ++b) {
              const int64_t w = j * d.stride_w - d.pad_l + b;
              if (w < 0 || w >= d.w) continue;
              const float v = px[((n * d.h + h) * d.w + w) * c + ch];
              if (best < 0 || v > bv) best = h * d.w + w, bv = v;
            }
          }
          pi[((n * oh + i) * ow + j) * c + ch] = static_cast<int32_t>(best < 0 ? 0 : best);
        }
}

static void cpu_max_unpool(Backend&, const Tensor& x, const Tensor& idx, Tensor& y, const PoolDesc& d) {
  const int64_t plane_in = d.out_h() * d.out_w(), plane_out = d.h * d.w, c = d.c;
  const float* px = x.data();
  const int32_t* pi = idx.data_i32();
  float* py = y.data();
  std::fill(py, py + y.numel(), 0.f);
#pragma omp parallel for
  for (int64_t n = 0; n < d.n; ++n)  // a sample's outputs are its own: no two threads add to one
    for (int64_t p = 0; p < plane_in; ++p)
      for (int64_t ch = 0; ch < c; ++ch) {
        const int64_t k = (n * plane_in + p) * c + ch;
        py[(n * plane_out + pi[k]) * c + ch] += px[k];
      }
}

static void cpu_max_unpool_backward(Backend&, const Tensor& dy, const Tensor& idx, Tensor& dx, const PoolDesc& d) {
  const int64_t plane_in = d.out_h() * d.out_w(), plane_out = d.h * d.w, c = d.c;
  const float* pdy = dy.data();
  const int32_t* pi = idx.data_i32();
  float* pdx = dx.data();
#pragma omp parallel for
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t p = 0; p < plane_in; ++p)
      for (int64_t ch = 0; ch < c; ++ch) {
        const int64_t k = (n * plane_in + p) * c + ch;
        pdx[k] = pdy[(n * plane_out + pi[k]) * c + ch];
      }
}

// Cropping (backend.h): one row copy of out_w * c values per (n, output row).
static void cpu_crop2d(Backend&, const Tensor& x, Tensor& y, const CropDesc& d) {
  const int64_t row = d.out_w * d.c;
  const float* px = x.data();
  float* py = y.data();
#pragma omp parallel for collapse(2)
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t i = 0; i < d.out_h; ++i)
      std::memcpy(py + (n * d.out_h + i) * row, px + ((n * d.h + d.top + i) * d.w + d.left) * d.c, sizeof(float) * row);
}

static void cpu_crop2d_backward(Backend&, const Tensor& dy, Tensor& dx, const CropDesc& d) {
  const int64_t row = d.out_w * d.c;
  const float* pdy = dy.data();
  float* pdx = dx.data();
  std::fill(pdx, pdx + dx.numel(), 0.f);
#pragma omp parallel for collapse(2)
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t i = 0; i < d.out_h; ++i)
      std::memcpy(pdx + ((n * d.h + d.top + i) * d.w + d.left) * d.c, pdy + (n * d.out_h + i) * row,
                  sizeof(float) * row);
}

static LossTotals cpu_cross_entropy(Backend&, const Tensor& probs, const Tensor& labels, const LossOptions& opt,
                                    Tensor& dlogits) {
  const int64_t n = labels.numel();
  const int64_t c = probs.numel() / n;
  const float* p = probs.data();
  const int32_t* lab = labels.data_i32();
  const float* cw = opt.class_weights.defined() ? opt.class_weights.data() : nullptr;
  float* d = dlogits.defined() ? dlogits.data() : nullptr;
  LossTotals t;
  t.classes = static_cast<uint64_t>(c);
  // Pass 1: the labels' validity and the weight sum W, the gradient's denominator.
  for (int64_t i = 0; i < n; ++i) {
    const int32_t l = lab[i];
    if (l == -1 && opt.undefined_labels) continue;
    if (l < 0 || l >= c) {
      t.first_bad = static_cast<uint64_t>(i);
      return t;
    }
    t.weight_sum += cw ? static_cast<double>(cw[l]) : 1.0;
    ++t.counted;
  }
  const float inv_w = t.weight_sum > 0 ? 1.f / static_cast<float>(t.weight_sum) : 0.f;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t l = lab[i];
    if (l < 0) {  // undefined: no loss, no gradient
      if (d) std::fill(d + i * c, d + (i + 1) * c, 0.f);
      continue;
    }
    const float* row = p + i * c;
    const float w = cw ? cw[l] : 1.f;
    t.loss_sum -= static_cast<double>(w) * std::log(std::max(static_cast<double>(row[l]), 1e-37));
    int64_t best = 0;
    for (int64_t j = 1; j < c; ++j)
      if (row[j] > row[best]) best = j;
    t.correct += best == l;
    if (d) {
      const float scale = cw ? w * inv_w : inv_w;
      for (int64_t j = 0; j < c; ++j) d[i * c + j] = row[j] * scale;
      d[i * c + l] -= scale;
    }
  }
  return t;
}

static void cpu_optimizer_update(Backend&, const UpdateRule& r, const UpdateScalars& k, Tensor& w, const Tensor& g,
                                 Tensor& m, Tensor& s) {
  auto get = [](const ScalarArg& a) { return a.at ? *a.at : a.value; };
  const float lr = get(k.lr), l2 = r.l2;
  float* pw = w.data();
  const float* pg = g.data();
  const int64_t n = w.numel();
  switch (r.solver) {
    case Solver::kSgdm: {
      const float momentum = r.momentum;
      float* pv = m.data();
#pragma omp parallel for if (n > kParallelMin) schedule(static)
      for (int64_t i = 0; i < n; ++i) {
        pv[i] = momentum * pv[i] - lr * (pg[i] + l2 * pw[i]);
        pw[i] += pv[i];
      }
      return;
    }
    case Solver::kAdam:
    case Solver::kAdamW: {  // adamw decays w by lr * wd first (keep); adam's keep is exactly 1
      const float b1 = r.b1, b2 = r.b2, eps = r.eps, c1 = get(k.c1), c2 = get(k.c2);
      const float keep = r.solver == Solver::kAdamW ? 1.f - lr * r.wd : 1.f;
      float* pm = m.data();
      float* ps = s.data();
#pragma omp parallel for if (n > kParallelMin) schedule(static)
      for (int64_t i = 0; i < n; ++i) {
        const float wi = pw[i];
        const float gi = pg[i] + l2 * wi;
        pm[i] = b1 * pm[i] + (1.f - b1) * gi;
        ps[i] = b2 * ps[i] + (1.f - b2) * gi * gi;
        pw[i] = wi * keep - lr * (pm[i] * c1) / (std::sqrt(ps[i] * c2) + eps);
      }
      return;
    }
    case Solver::kRmsprop: {
      const float b2 = r.b2, eps = r.eps;
      float* ps = s.data();
#pragma omp parallel for if (n > kParallelMin) schedule(static)
      for (int64_t i = 0; i < n; ++i) {
        const float gi = pg[i] + l2 * pw[i];
        ps[i] = b2 * ps[i] + (1.f - b2) * gi * gi;
        pw[i] -= lr * gi / (std::sqrt(ps[i]) + eps);
      }
      return;
    }
  }
}

DLT_REGISTER_KERNEL(FillKernel, DeviceType::kCpu, cpu_fill);
DLT_REGISTER_KERNEL(CopyKernel, DeviceType::kCpu, cpu_copy);
DLT_REGISTER_KERNEL(AxpbyKernel, DeviceType::kCpu, cpu_axpby);
DLT_REGISTER_KERNEL(SumKernel, DeviceType::kCpu, cpu_sum);
DLT_REGISTER_KERNEL(ScaleKernel, DeviceType::kCpu, cpu_scale);
DLT_REGISTER_KERNEL(ClampKernel, DeviceType::kCpu, cpu_clamp);
DLT_REGISTER_KERNEL(SumSquaresKernel, DeviceType::kCpu, cpu_sum_squares);
DLT_REGISTER_KERNEL(L2NormIntoKernel, DeviceType::kCpu, cpu_l2_norm_into);
DLT_REGISTER_KERNEL(ClipToNormKernel, DeviceType::kCpu, cpu_clip_to_norm);
DLT_REGISTER_KERNEL(ShiftScaleKernel, DeviceType::kCpu, cpu_shift_scale);
DLT_REGISTER_KERNEL(DropoutKernel, DeviceType::kCpu, cpu_dropout_forward);
DLT_REGISTER_KERNEL(MultiplySameSizeKernel, DeviceType::kCpu, cpu_multiply_same_size);
DLT_REGISTER_KERNEL(MaxPoolIndicesKernel, DeviceType::kCpu, cpu_max_pool_indices);
DLT_REGISTER_KERNEL(MaxUnpoolKernel, DeviceType::kCpu, cpu_max_unpool);
DLT_REGISTER_KERNEL(MaxUnpoolBackwardKernel, DeviceType::kCpu, cpu_max_unpool_backward);
DLT_REGISTER_KERNEL(Crop2dKernel, DeviceType::kCpu, cpu_crop2d);
DLT_REGISTER_KERNEL(Crop2dBackwardKernel, DeviceType::kCpu, cpu_crop2d_backward);
DLT_REGISTER_KERNEL(CrossEntropyKernel, DeviceType::kCpu, cpu_cross_entropy);
DLT_REGISTER_KERNEL(OptimizerUpdateKernel, DeviceType::kCpu, cpu_optimizer_update);

}  // namespace dlt
