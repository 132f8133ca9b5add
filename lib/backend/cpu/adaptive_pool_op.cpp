// The CPU's adaptive average pooling (backend/adaptive_pool_op.h): the forward sums each
// output's region of NHWC rows with the channels innermost (vectorized); the backward gathers,
// for each input pixel, dy over the outputs whose regions hold it (no two threads write one
// value, so the result is the same for any number of threads). Not a convolution or GEMM: a
// few additions per value.
#include <memory>

#include "backend/adaptive_pool_op.h"
#include "backend/backend.h"

namespace dlt::cpu {
namespace {

class CpuAdaptivePoolOp final : public AdaptivePoolOp {
 public:
  explicit CpuAdaptivePoolOp(const AdaptivePoolDesc& d) : AdaptivePoolOp(d, Device::cpu()), d_(d) {}

 protected:
  void do_forward(const Tensor& x, Tensor& y) override {
    const AdaptivePoolDesc d = d_;
    const float* xp = x.data();
    float* yp = y.data();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < d.n * d.out_h * d.out_w; ++r) {
      const int64_t n = r / (d.out_h * d.out_w), i = r / d.out_w % d.out_h, j = r % d.out_w;
      const int64_t h0 = adaptive_begin(i, d.h, d.out_h), h1 = adaptive_end(i, d.h, d.out_h);
      const int64_t w0 = adaptive_begin(j, d.w, d.out_w), w1 = adaptive_end(j, d.w, d.out_w);
      float* yr = yp + r * d.c;
      for (int64_t ch = 0; ch < d.c; ++ch) yr[ch] = 0.f;
      for (int64_t hh = h0; hh < h1; ++hh)
        for (int64_t ww = w0; ww < w1; ++ww) {
          const float* xr = xp + ((n * d.h + hh) * d.w + ww) * d.c;
#pragma omp simd
          for (int64_t ch = 0; ch < d.c; ++ch) yr[ch] += xr[ch];
        }
      const float inv = 1.f / static_cast<float>((h1 - h0) * (w1 - w0));
#pragma omp simd
      for (int64_t ch = 0; ch < d.c; ++ch) yr[ch] *= inv;
    }
  }

  void do_backward(const Tensor& dy, Tensor& dx) override {
    const AdaptivePoolDesc d = d_;
    const float* dyp = dy.data();
    float* dxp = dx.data();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < d.n * d.h * d.w; ++r) {
      const int64_t n = r / (d.h * d.w), hh = r / d.w % d.h, ww = r % d.w;
      float* dxr = dxp + r * d.c;
      for (int64_t ch = 0; ch < d.c; ++ch) dxr[ch] = 0.f;
      for (int64_t i = 0; i < d.out_h; ++i) {
        const int64_t h0 = adaptive_begin(i, d.h, d.out_h), h1 = adaptive_end(i, d.h, d.out_h);
        if (hh < h0 || hh >= h1) continue;
        for (int64_t j = 0; j < d.out_w; ++j) {
          const int64_t w0 = adaptive_begin(j, d.w, d.out_w), w1 = adaptive_end(j, d.w, d.out_w);
          if (ww < w0 || ww >= w1) continue;
          const float inv = 1.f / static_cast<float>((h1 - h0) * (w1 - w0));
          const float* dyr = dyp + ((n * d.out_h + i) * d.out_w + j) * d.c;
#pragma omp simd
          for (int64_t ch = 0; ch < d.c; ++ch) dxr[ch] += dyr[ch] * inv;
        }
      }
    }
  }

 private:
  AdaptivePoolDesc d_;
};

std::unique_ptr<AdaptivePoolOp> make(Backend&, const AdaptivePoolDesc& d) {
  return std::make_unique<CpuAdaptivePoolOp>(d);
}

}  // namespace

DLT_REGISTER_OP(AdaptivePoolDesc, DeviceType::kCpu, "own", 0, make, nullptr);

}  // namespace dlt::cpu
