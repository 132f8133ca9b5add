// The CPU's separable self-attention (backend/separable_attention_op.h): parallel over the
// images' pixel groups, each group's softmax, context and output in vectorized loops over the
// channels of its pixels.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/separable_attention_op.h"

namespace dlt::cpu {
namespace {

class CpuSeparableAttentionOp final : public SeparableAttentionOp {
 public:
  explicit CpuSeparableAttentionOp(const SeparableAttentionDesc& d)
      : SeparableAttentionOp(d, Device::cpu()),
        d_(d),
        pixels_((d.h / d.ph) * (d.w / d.pw)),
        dctx_(static_cast<size_t>(d.n * d.ph * d.pw * d.c)) {}

 private:
  // The pixel index (n, h, w) of the group's p-th pixel; group = n * ph pw + i pw + j.
  int64_t pixel(int64_t group, int64_t p) const {
    const int64_t groups = d_.ph * d_.pw, n = group / groups, g = group % groups, i = g / d_.pw, j = g % d_.pw;
    const int64_t nw = d_.w / d_.pw, a = p / nw, b = p % nw;
    return (n * d_.h + a * d_.ph + i) * d_.w + b * d_.pw + j;
  }

  void do_forward(const Tensor& x, Tensor& y, Tensor& scores, Tensor& context) override {
    const float* xp = x.data();
    float *yp = y.data(), *sp = scores.data(), *cp = context.data();
    const int64_t c = d_.c, xc = 1 + 2 * c, groups = d_.n * d_.ph * d_.pw;
#pragma omp parallel for schedule(static)
    for (int64_t g = 0; g < groups; ++g) {
      float top = -INFINITY;
      for (int64_t p = 0; p < pixels_; ++p) top = std::max(top, xp[pixel(g, p) * xc]);
      double sum = 0;
      for (int64_t p = 0; p < pixels_; ++p) {
        const int64_t at = pixel(g, p);
        sp[at] = std::exp(xp[at * xc] - top);
        sum += sp[at];
      }
      const float inv = static_cast<float>(1.0 / sum);
      float* ctx = cp + g * c;
      std::fill(ctx, ctx + c, 0.f);
      for (int64_t p = 0; p < pixels_; ++p) {
        const int64_t at = pixel(g, p);
        const float s = sp[at] *= inv;
        const float* k = xp + at * xc + 1;
#pragma omp simd
        for (int64_t i = 0; i < c; ++i) ctx[i] += s * k[i];
      }
      for (int64_t p = 0; p < pixels_; ++p) {
        const int64_t at = pixel(g, p);
        const float* v = xp + at * xc + 1 + c;
        float* out = yp + at * c;
#pragma omp simd
        for (int64_t i = 0; i < c; ++i) out[i] = std::max(v[i], 0.f) * ctx[i];
      }
    }
  }

  void do_backward(const Tensor& x, const Tensor& dy, const Tensor& scores, const Tensor& context,
                   Tensor& dx) override {
    const float *xp = x.data(), *gp = dy.data(), *sp = scores.data(), *cp = context.data();
    float* dp = dx.data();
    const int64_t c = d_.c, xc = 1 + 2 * c, groups = d_.n * d_.ph * d_.pw;
#pragma omp parallel for schedule(static)
    for (int64_t g = 0; g < groups; ++g) {
      float* dc = dctx_.data() + g * c;
      std::fill(dc, dc + c, 0.f);
      const float* ctx = cp + g * c;
      for (int64_t p = 0; p < pixels_; ++p) {  // the context's gradient and the values'
        const int64_t at = pixel(g, p);
        const float* v = xp + at * xc + 1 + c;
        const float* gy = gp + at * c;
        float* dv = dp + at * xc + 1 + c;
#pragma omp simd
        for (int64_t i = 0; i < c; ++i) {
          dc[i] += gy[i] * std::max(v[i], 0.f);
          dv[i] = v[i] > 0.f ? gy[i] * ctx[i] : 0.f;
        }
      }
      double weighted = 0;                     // sum_p s_p ds_p
      for (int64_t p = 0; p < pixels_; ++p) {  // the keys' gradient; ds_p kept in dq's place
        const int64_t at = pixel(g, p);
        const float s = sp[at];
        const float* k = xp + at * xc + 1;
        float* dk = dp + at * xc + 1;
        float ds = 0.f;
#pragma omp simd reduction(+ : ds)
        for (int64_t i = 0; i < c; ++i) {
          dk[i] = s * dc[i];
          ds += k[i] * dc[i];
        }
        dp[at * xc] = ds;
        weighted += static_cast<double>(s) * ds;
      }
      const float mean = static_cast<float>(weighted);
      for (int64_t p = 0; p < pixels_; ++p) {
        const int64_t at = pixel(g, p);
        dp[at * xc] = sp[at] * (dp[at * xc] - mean);
      }
    }
  }

  SeparableAttentionDesc d_;
  int64_t pixels_;  // per group
  std::vector<float> dctx_;  // the backward's context gradients, a row per group (made once)
};

std::unique_ptr<SeparableAttentionOp> make(Backend&, const SeparableAttentionDesc& d) {
  return std::make_unique<CpuSeparableAttentionOp>(d);
}

}  // namespace

DLT_REGISTER_OP(SeparableAttentionDesc, DeviceType::kCpu, "own", 0, make, nullptr);

}  // namespace dlt::cpu
