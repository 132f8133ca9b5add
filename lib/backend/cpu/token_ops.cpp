// The CPU's token ops (backend/token_ops.h): plain loops, parallel over rows or columns (data
// movement with one addition per value; the head normalization's norms and dot products).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/primitive_sets.h"
#include "backend/token_ops.h"

namespace dlt::cpu {
namespace {

class CpuBatchBroadcastOp final : public BatchBroadcastOp {
 public:
  explicit CpuBatchBroadcastOp(const BatchBroadcastDesc& d) : BatchBroadcastOp(d, Device::cpu()), d_(d) {}

 private:
  void do_add(const Tensor* x, const Tensor& b, Tensor& y) override {
    const float* bp = b.data();
    const float* xp = x ? x->data() : nullptr;
    float* yp = y.data();
    const int64_t len = d_.length;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < d_.rows; ++r) {
      float* out = yp + r * len;
      if (xp) {
        const float* in = xp + r * len;
        for (int64_t i = 0; i < len; ++i) out[i] = in[i] + bp[i];
      } else {
        std::memcpy(out, bp, static_cast<size_t>(len) * sizeof(float));
      }
    }
  }
  // Each value of db sums its column in row order (the same order for every thread count).
  void do_sum(const Tensor& dy, Tensor& db) override {
    const float* g = dy.data();
    float* out = db.data();
    const int64_t len = d_.length, rows = d_.rows;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < len; ++i) {
      float s = 0.f;
      for (int64_t r = 0; r < rows; ++r) s += g[r * len + i];
      out[i] = s;
    }
  }

  BatchBroadcastDesc d_;
};

class CpuSpatialTransposeOp final : public SpatialTransposeOp {
 public:
  explicit CpuSpatialTransposeOp(const SpatialTransposeDesc& d) : SpatialTransposeOp(d, Device::cpu()), d_(d) {}

 private:
  // Forward reads (h, w) and writes (w, h); back reads (w, h) and writes (h, w): pixel (i, j)
  // of the (h, w) side is pixel (j, i) of the other.
  void do_run(const Tensor& from, Tensor& to, bool back) override {
    const float* src = from.data();
    float* dst = to.data();
    const int64_t h = d_.h, w = d_.w, c = d_.c;
    const size_t bytes = static_cast<size_t>(c) * sizeof(float);
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < d_.n; ++n)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < w; ++j) {
          const int64_t hw = ((n * h + i) * w + j) * c, wh = ((n * w + j) * h + i) * c;
          if (back)
            std::memcpy(dst + hw, src + wh, bytes);
          else
            std::memcpy(dst + wh, src + hw, bytes);
        }
  }
  SpatialTransposeDesc d_;
};

class CpuRowGatherOp final : public RowGatherOp {
 public:
  explicit CpuRowGatherOp(const RowGatherDesc& d) : RowGatherOp(d, Device::cpu()), d_(d) { inverse(starts_, sources_); }

 private:
  void do_forward(const Tensor& x, Tensor& y) override {
    const float* src = x.data();
    float* dst = y.data();
    const int64_t c = d_.cols;
    const size_t bytes = static_cast<size_t>(c) * sizeof(float);
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t b = 0; b < d_.n; ++b)
      for (int64_t r = 0; r < d_.rows_out; ++r) {
        const int64_t i = d_.index[static_cast<size_t>(r)];
        float* out = dst + (b * d_.rows_out + r) * c;
        if (i >= 0)
          std::memcpy(out, src + (b * d_.rows_in + i) * c, bytes);
        else
          std::memset(out, 0, bytes);
      }
  }
  void do_backward(const Tensor& dy, Tensor& dx) override {
    const float* g = dy.data();
    float* out = dx.data();
    const int64_t c = d_.cols;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t b = 0; b < d_.n; ++b)
      for (int64_t s = 0; s < d_.rows_in; ++s) {
        float* o = out + (b * d_.rows_in + s) * c;
        std::fill(o, o + c, 0.f);
        for (int64_t k = starts_[static_cast<size_t>(s)]; k < starts_[static_cast<size_t>(s + 1)]; ++k) {
          const float* in = g + (b * d_.rows_out + sources_[static_cast<size_t>(k)]) * c;
          for (int64_t j = 0; j < c; ++j) o[j] += in[j];
        }
      }
  }

  RowGatherDesc d_;
  std::vector<int64_t> starts_, sources_;
};

// Each group's norm, dot product and the head factor's per-head sum in float, group by group
// in order (the same for every thread count).
class CpuHeadNormalizeOp final : public HeadNormalizeOp {
 public:
  explicit CpuHeadNormalizeOp(const HeadNormalizeDesc& d)
      : HeadNormalizeOp(d, Device::cpu()), d_(d), scale_(static_cast<size_t>(d.heads)) {}

 private:
  // Each head's factor (1 without t) into scale_.
  const std::vector<float>& scales(const Tensor* t) {
    for (int64_t h = 0; h < d_.heads; ++h) {
      const float v = t ? t->data()[h] : 0.f;
      scale_[static_cast<size_t>(h)] = !t          ? 1.f
                                       : d_.linear ? v
                                                   : std::exp(std::min(v, static_cast<float>(d_.max_log_scale)));
    }
    return scale_;
  }
  static float norm(const float* x, int64_t dim) {
    float n = 0.f;
    for (int64_t i = 0; i < dim; ++i) n += x[i] * x[i];
    return std::max(std::sqrt(n), HeadNormalizeDesc::kEps);
  }
  int64_t groups() const { return d_.rows * d_.heads * d_.per_head; }
  int64_t head_of(int64_t g) const { return g / d_.per_head % d_.heads; }
  void do_forward(const Tensor& x, const Tensor* t, Tensor& y) override {
    const std::vector<float>& s = scales(t);
    const float* xp = x.data();
    float* yp = y.data();
    const int64_t dim = d_.dim, n = groups();
#pragma omp parallel for schedule(static)
    for (int64_t g = 0; g < n; ++g) {
      const float* in = xp + g * dim;
      float* out = yp + g * dim;
      const float f = s[static_cast<size_t>(head_of(g))] / norm(in, dim);
      for (int64_t i = 0; i < dim; ++i) out[i] = f * in[i];
    }
  }
  void do_backward(const Tensor& x, const Tensor* t, const Tensor& dy, Tensor& dx, Tensor* dt) override {
    const std::vector<float>& s = scales(t);
    const float* xp = x.data();
    const float* gp = dy.data();
    float* out = dx.data();
    const int64_t dim = d_.dim, heads = d_.heads, per = d_.per_head, n = groups();
    // dt first: dx may overwrite x or dy. d(factor)/dt: the factor (exp), 1 (linear), 0 (clamped).
    if (dt) {
#pragma omp parallel for schedule(static)
      for (int64_t h = 0; h < heads; ++h) {
        float sum = 0.f;
        for (int64_t r = 0; r < d_.rows; ++r)
          for (int64_t p = 0; p < per; ++p) {
            const int64_t at = ((r * heads + h) * per + p) * dim;
            float dot = 0.f;
            for (int64_t i = 0; i < dim; ++i) dot += gp[at + i] * xp[at + i];
            sum += dot / norm(xp + at, dim);
          }
        const bool clamped = !d_.linear && t->data()[h] >= static_cast<float>(d_.max_log_scale);
        dt->data()[h] = clamped ? 0.f : d_.linear ? sum : s[static_cast<size_t>(h)] * sum;
      }
    }
    // u = x / n, du = s dy: dx = (du - u (u . du)) / n.
#pragma omp parallel for schedule(static)
    for (int64_t g = 0; g < n; ++g) {
      const int64_t at = g * dim;
      const float* in = xp + at;
      const float* gr = gp + at;
      const float nm = norm(in, dim), f = s[static_cast<size_t>(head_of(g))] / nm;
      float dot = 0.f;  // u . dy
      for (int64_t i = 0; i < dim; ++i) dot += in[i] * gr[i];
      dot /= nm;
      for (int64_t i = 0; i < dim; ++i) out[at + i] = f * (gr[i] - in[i] / nm * dot);
    }
  }

  HeadNormalizeDesc d_;
  std::vector<float> scale_;
};

// Pair by pair in float; each token's groups in turn (parallel over the tokens), each group's
// pairs as one simd loop: an iteration reads and writes only its own pair, so y may be x.
template <bool Half>
void rotate_group(const float* x, float* y, const float* c, const float* s, int64_t pairs, float sign) {
  if constexpr (Half) {
#pragma omp simd
    for (int64_t i = 0; i < pairs; ++i) {
      const float a = x[i], b = x[i + pairs], si = sign * s[i];
      y[i] = a * c[i] - b * si;
      y[i + pairs] = b * c[i] + a * si;
    }
  } else {
#pragma omp simd
    for (int64_t i = 0; i < pairs; ++i) {
      const float a = x[2 * i], b = x[2 * i + 1], si = sign * s[i];
      y[2 * i] = a * c[i] - b * si;
      y[2 * i + 1] = b * c[i] + a * si;
    }
  }
}

class CpuRotaryOp final : public RotaryOp {
 public:
  explicit CpuRotaryOp(const RotaryDesc& d) : RotaryOp(d, Device::cpu()), d_(d) {}

 private:
  void do_run(const Tensor& x, const Tensor& cos, const Tensor& sin, Tensor& y, bool back) override {
    const float* xp = x.data();
    const float* cp = cos.data();
    const float* sp = sin.data();
    float* yp = y.data();
    const int64_t dim = d_.dim, pairs = dim / 2, width = d_.heads * dim, tokens = d_.n * d_.seq;
    const float sign = back ? -1.f : 1.f;  // the backward rotates by -s
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < tokens; ++r) {
      const int64_t t = r % d_.seq - d_.prefix;
      const float* in = xp + r * width;
      float* out = yp + r * width;
      if (t < 0) {
        if (out != in) std::memcpy(out, in, static_cast<size_t>(width) * sizeof(float));
        continue;
      }
      for (int64_t h = 0; h < d_.heads; ++h) {
        const int64_t at = ((d_.table_heads == 1 ? 0 : h) * (d_.seq - d_.prefix) + t) * pairs;
        if (d_.half)
          rotate_group<true>(in + h * dim, out + h * dim, cp + at, sp + at, pairs, sign);
        else
          rotate_group<false>(in + h * dim, out + h * dim, cp + at, sp + at, pairs, sign);
      }
    }
  }

  RotaryDesc d_;
};

std::unique_ptr<BatchBroadcastOp> make_broadcast(Backend&, const BatchBroadcastDesc& d) {
  return std::make_unique<CpuBatchBroadcastOp>(d);
}
// One value per pixel (channelAttention's (S, C) <-> (C, S)): a oneDNN reorder between the plane
// and its transpose (strided descriptors; its jit kernel moves whole vectors, which the copy loop
// above, a call per pixel, cannot for a single float).
class CpuPlaneTransposeOp final : public SpatialTransposeOp {
 public:
  CpuPlaneTransposeOp(const SpatialTransposeDesc& d, DnnlContext& ctx)
      : SpatialTransposeOp(d, Device::cpu()), ctx_(ctx), fwd_(make(false)), back_(make(true)) {}

 private:
  struct Reorder {
    memory src, dst;
    dnnl::reorder prim;
  };
  // (n, h, w) read row-major into its transpose (n, w, h), or back.
  Reorder make(bool back) const {
    const int64_t n = desc().n, h = desc().h, w = desc().w;
    const memory::desc rows({n, h, w}, kF32, memory::dims{h * w, w, 1});
    const memory::desc cols({n, h, w}, kF32, memory::dims{h * w, 1, h});
    Reorder r{unbound(back ? cols : rows, ctx_.eng), unbound(back ? rows : cols, ctx_.eng), {}};
    r.prim = dnnl::reorder(r.src, r.dst);
    return r;
  }
  void do_run(const Tensor& from, Tensor& to, bool back) override {
    Reorder& r = back ? back_ : fwd_;
    bind(r.src, from);
    bind(r.dst, to);
    run(r.prim, ctx_.strm, {{DNNL_ARG_FROM, r.src}, {DNNL_ARG_TO, r.dst}});
  }

  DnnlContext& ctx_;
  Reorder fwd_, back_;
};

std::unique_ptr<SpatialTransposeOp> make_transpose(Backend& b, const SpatialTransposeDesc& d) {
  if (d.c == 1)
    return guarded("spatial transpose", [&]() -> std::unique_ptr<SpatialTransposeOp> {
      return std::make_unique<CpuPlaneTransposeOp>(d, dnnl_context(b));
    });
  return std::make_unique<CpuSpatialTransposeOp>(d);
}
std::unique_ptr<RowGatherOp> make_gather(Backend&, const RowGatherDesc& d) {
  return std::make_unique<CpuRowGatherOp>(d);
}
std::unique_ptr<HeadNormalizeOp> make_head_normalize(Backend&, const HeadNormalizeDesc& d) {
  return std::make_unique<CpuHeadNormalizeOp>(d);
}
std::unique_ptr<RotaryOp> make_rotary(Backend&, const RotaryDesc& d) { return std::make_unique<CpuRotaryOp>(d); }

}  // namespace

DLT_REGISTER_OP(BatchBroadcastDesc, DeviceType::kCpu, "own", 0, make_broadcast, nullptr);
DLT_REGISTER_OP(RowGatherDesc, DeviceType::kCpu, "own", 0, make_gather, nullptr);
DLT_REGISTER_OP(SpatialTransposeDesc, DeviceType::kCpu, "own", 0, make_transpose, nullptr);
DLT_REGISTER_OP(HeadNormalizeDesc, DeviceType::kCpu, "own", 0, make_head_normalize, nullptr);
DLT_REGISTER_OP(RotaryDesc, DeviceType::kCpu, "own", 0, make_rotary, nullptr);

}  // namespace dlt::cpu
