// CpuBackend's element-wise work, the cross-entropy loss and the optimizer updates: plain
// OpenMP loops (memory-bound; oneDNN would add nothing). Results do not depend on the thread
// count except for the rounding of the double-precision reductions.
#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/dnnl_util.h"
#include "util/rng.h"

namespace dlt {
namespace {

constexpr int64_t kParallelMin = 1 << 14;  // below this, threads cost more than they save

void same_numel(const Tensor& a, const Tensor& b, const char* op) {
  DLT_CHECK(a.numel() == b.numel(),
            op << ": tensors of " << a.numel() << " and " << b.numel() << " elements");
}

// A counter-based hash of (key, index): the dropout mask does not depend on thread count.
inline uint64_t hash_index(uint64_t key, uint64_t i) {
  uint64_t z = key + (i + 1) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

void CpuBackend::fill(Tensor& t, float value) {
  float* p = t.data();
  const int64_t n = t.numel();
#pragma omp parallel for if (n > kParallelMin) schedule(static)
  for (int64_t i = 0; i < n; ++i) p[i] = value;
}

void CpuBackend::copy(const Tensor& src, Tensor& dst) {
  same_numel(src, dst, "copy");
  if (src.data() != dst.data()) std::memcpy(dst.data(), src.data(), src.bytes());
}

void CpuBackend::axpby(float a, const Tensor& x, float b, Tensor& y) {
  same_numel(x, y, "axpby");
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

void CpuBackend::sum(const std::vector<const Tensor*>& xs, Tensor& y) {
  DLT_CHECK(!xs.empty(), "sum: no inputs");
  for (const Tensor* x : xs) same_numel(*x, y, "sum");
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

void CpuBackend::scale(Tensor& t, float s) {
  float* p = t.data();
  const int64_t n = t.numel();
#pragma omp parallel for if (n > kParallelMin) schedule(static)
  for (int64_t i = 0; i < n; ++i) p[i] *= s;
}

void CpuBackend::clamp(Tensor& t, float lo, float hi) {
  float* p = t.data();
  const int64_t n = t.numel();
#pragma omp parallel for if (n > kParallelMin) schedule(static)
  for (int64_t i = 0; i < n; ++i) p[i] = std::fmin(std::fmax(p[i], lo), hi);
}

double CpuBackend::sum_squares(const Tensor& t) {
  const float* p = t.data();
  const int64_t n = t.numel();
  double s = 0;
#pragma omp parallel for if (n > kParallelMin) schedule(static) reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(p[i]) * p[i];
  return s;
}

void CpuBackend::l2_norm_into(const Tensor& t, Tensor& norms, int64_t index, bool accumulate) {
  DLT_CHECK(index >= 0 && index < norms.numel(),
            "l2_norm_into: slot " << index << " of " << norms.numel() << " norms");
  float* r = norms.data() + index;
  const double before = accumulate ? static_cast<double>(*r) : 0.0;
  *r = static_cast<float>(std::sqrt(before * before + sum_squares(t)));
}

void CpuBackend::clip_to_norm(Tensor& t, const Tensor& norms, int64_t index, double threshold) {
  DLT_CHECK(index >= 0 && index < norms.numel(),
            "clip_to_norm: slot " << index << " of " << norms.numel() << " norms");
  const double norm = static_cast<double>(norms.data()[index]);
  if (norm > threshold) scale(t, static_cast<float>(threshold / norm));
}

void CpuBackend::shift_scale(const Tensor& x, const Tensor& shift, const Tensor& mul, Tensor& y) {
  same_numel(x, y, "shift_scale");
  const int64_t n = x.numel(), ns = shift.numel(), nm = mul.defined() ? mul.numel() : 1;
  DLT_CHECK(ns > 0 && nm > 0 && n % ns == 0 && n % nm == 0,
            "shift_scale: " << ns << " shifts / " << nm << " multipliers do not tile " << n
                            << " elements");
  const float* px = x.data();
  const float* ps = shift.data();
  const float* pm = mul.defined() ? mul.data() : nullptr;
  float* py = y.data();
  if (!pm) {
#pragma omp parallel for if (n > kParallelMin) schedule(static)
    for (int64_t i = 0; i < n; ++i) py[i] = px[i] - ps[i % ns];
  } else {
#pragma omp parallel for if (n > kParallelMin) schedule(static)
    for (int64_t i = 0; i < n; ++i) py[i] = (px[i] - ps[i % ns]) * pm[i % nm];
  }
}

void CpuBackend::dropout_forward(const Tensor& x, Tensor& y, Tensor& mask, float p, uint64_t seed,
                                 uint64_t stream) {
  same_numel(x, y, "dropout");
  same_numel(x, mask, "dropout mask");
  const int64_t n = x.numel();
  const uint64_t key = Rng::derive(seed, {stream}).next_u64();
  // keep when a 24-bit uniform u >= p; kept values are scaled by 1 / (1 - p)
  const float keep_value = p < 1.f ? 1.f / (1.f - p) : 0.f;
  const float* px = x.data();
  float* py = y.data();
  float* pm = mask.data();
#pragma omp parallel for if (n > kParallelMin) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float u = static_cast<float>(hash_index(key, static_cast<uint64_t>(i)) >> 40) * 0x1p-24f;
    const float m = u >= p ? keep_value : 0.f;
    pm[i] = m;
    py[i] = px[i] * m;
  }
}

void CpuBackend::mul(const Tensor& x, const Tensor& m, Tensor& y) {
  same_numel(x, m, "mul");
  same_numel(x, y, "mul");
  const float* px = x.data();
  const float* pm = m.data();
  float* py = y.data();
  const int64_t n = x.numel();
#pragma omp parallel for if (n > kParallelMin) schedule(static)
  for (int64_t i = 0; i < n; ++i) py[i] = px[i] * pm[i];
}

double CpuBackend::cross_entropy(const Tensor& probs, const Tensor& labels, Tensor& dlogits,
                                 int64_t* correct) {
  const int64_t n = labels.numel();
  DLT_CHECK(n > 0 && probs.numel() % n == 0,
            "cross_entropy: " << probs.numel() << " probabilities for " << n << " labels");
  const int64_t c = probs.numel() / n;
  if (dlogits.defined()) same_numel(probs, dlogits, "cross_entropy dlogits");
  const float* p = probs.data();
  const int32_t* lab = labels.data_i32();
  float* d = dlogits.defined() ? dlogits.data() : nullptr;
  const float inv_n = 1.f / static_cast<float>(n);
  double loss = 0;
  int64_t right = 0, bad = -1;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t l = lab[i];
    if (l < 0 || l >= c) {
      bad = i;
      break;
    }
    const float* row = p + i * c;
    loss -= std::log(std::max(static_cast<double>(row[l]), 1e-37));
    int64_t best = 0;
    for (int64_t j = 1; j < c; ++j)
      if (row[j] > row[best]) best = j;
    right += best == l;
    if (d) {
      for (int64_t j = 0; j < c; ++j) d[i * c + j] = row[j] * inv_n;
      d[i * c + l] -= inv_n;
    }
  }
  if (bad >= 0)
    throw DataError("cross_entropy: label " + std::to_string(lab[bad]) + " of sample " +
                    std::to_string(bad) + " is outside 0.." + std::to_string(c - 1) +
                    " (the network has " + std::to_string(c) + " classes; check the labels)");
  if (correct) *correct = right;
  return loss / static_cast<double>(n);
}

void CpuBackend::sgdm_update(Tensor& w, const Tensor& g, Tensor& v, float lr, float momentum,
                             float l2) {
  same_numel(w, g, "sgdm_update");
  same_numel(w, v, "sgdm_update");
  float* pw = w.data();
  const float* pg = g.data();
  float* pv = v.data();
  const int64_t n = w.numel();
#pragma omp parallel for if (n > kParallelMin) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    pv[i] = momentum * pv[i] - lr * (pg[i] + l2 * pw[i]);
    pw[i] += pv[i];
  }
}

namespace {
void adam_loop(Tensor& w, const Tensor& g, Tensor& m, Tensor& s, float lr, float b1, float b2,
               float eps, float c1, float c2, float l2) {
  same_numel(w, g, "adam_update");
  same_numel(w, m, "adam_update");
  same_numel(w, s, "adam_update");
  float* pw = w.data();
  const float* pg = g.data();
  float* pm = m.data();
  float* ps = s.data();
  const int64_t n = w.numel();
#pragma omp parallel for if (n > kParallelMin) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float gi = pg[i] + l2 * pw[i];
    pm[i] = b1 * pm[i] + (1.f - b1) * gi;
    ps[i] = b2 * ps[i] + (1.f - b2) * gi * gi;
    pw[i] -= lr * (pm[i] * c1) / (std::sqrt(ps[i] * c2) + eps);
  }
}

// The value at index i of a step-scalars tensor (on the CPU).
float scalar_at(const Backend::StepScalars& k, int64_t i, const char* op) {
  DLT_CHECK(k.values && k.values->device().is_cpu() && i >= 0 && i < k.values->numel(),
            op << ": step scalar " << i << " is not in a CPU tensor of that many floats");
  return k.values->data()[i];
}
}  // namespace

void CpuBackend::adam_update(Tensor& w, const Tensor& g, Tensor& m, Tensor& s, float lr, float b1,
                             float b2, float eps, int64_t t, float l2) {
  DLT_CHECK(t >= 1, "adam_update: step " << t << " must start at 1");
  adam_loop(w, g, m, s, lr, b1, b2, eps, adam_correction(b1, t), adam_correction(b2, t), l2);
}

void CpuBackend::rmsprop_update(Tensor& w, const Tensor& g, Tensor& s, float lr, float b2,
                                float eps, float l2) {
  same_numel(w, g, "rmsprop_update");
  same_numel(w, s, "rmsprop_update");
  float* pw = w.data();
  const float* pg = g.data();
  float* ps = s.data();
  const int64_t n = w.numel();
#pragma omp parallel for if (n > kParallelMin) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float gi = pg[i] + l2 * pw[i];
    ps[i] = b2 * ps[i] + (1.f - b2) * gi * gi;
    pw[i] -= lr * gi / (std::sqrt(ps[i]) + eps);
  }
}

void CpuBackend::sgdm_update_from(Tensor& w, const Tensor& g, Tensor& v, const StepScalars& k,
                                  float momentum, float l2) {
  sgdm_update(w, g, v, scalar_at(k, k.lr, "sgdm_update"), momentum, l2);
}

void CpuBackend::adam_update_from(Tensor& w, const Tensor& g, Tensor& m, Tensor& s,
                                  const StepScalars& k, float b1, float b2, float eps, float l2) {
  adam_loop(w, g, m, s, scalar_at(k, k.lr, "adam_update"), b1, b2, eps,
            scalar_at(k, k.c1, "adam_update"), scalar_at(k, k.c2, "adam_update"), l2);
}

void CpuBackend::rmsprop_update_from(Tensor& w, const Tensor& g, Tensor& s, const StepScalars& k,
                                     float b2, float eps, float l2) {
  rmsprop_update(w, g, s, scalar_at(k, k.lr, "rmsprop_update"), b2, eps, l2);
}

}  // namespace dlt
