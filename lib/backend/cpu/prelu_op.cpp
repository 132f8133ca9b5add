// The CPU's PReLU (backend/prelu_op.h): plain loops over the NHWC rows with the channels
// innermost (vectorized); the alpha gradient as per-channel sums per block of rows in double,
// added in block order (the same for any number of threads).
#include <algorithm>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/prelu_op.h"

namespace dlt::cpu {
namespace {

constexpr int64_t kBlockRows = 256;

class CpuPReluOp final : public PReluOp {
 public:
  explicit CpuPReluOp(const PReluDesc& d)
      : PReluOp(d, Device::cpu()),
        d_(d),
        blocks_((d.n * d.pixels + kBlockRows - 1) / kBlockRows),
        a_(static_cast<size_t>(d.c)),
        part_(static_cast<size_t>(blocks_ * d.c)) {}

 protected:
  void do_forward(const Tensor& x, const Tensor& alpha, Tensor& y) override {
    const float* a = alphas(alpha);
    const float* xp = x.data();
    float* yp = y.data();
    const int64_t c = d_.c;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < d_.n * d_.pixels; ++r) {
      const float* xr = xp + r * c;
      float* yr = yp + r * c;
#pragma omp simd
      for (int64_t ch = 0; ch < c; ++ch) yr[ch] = xr[ch] > 0.f ? xr[ch] : a[ch] * xr[ch];
    }
  }

  void do_backward(const Tensor& x, const Tensor& alpha, const Tensor& dy, Tensor& dx, Tensor& dalpha) override {
    const float* a = alphas(alpha);
    const float *xp = x.data(), *dyp = dy.data();
    float* dxp = dx.data();
    const int64_t c = d_.c, rows = d_.n * d_.pixels, blocks = blocks_;
    const bool want = dalpha.defined();
    double* part = part_.data();
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t r1 = (b + 1) * kBlockRows < rows ? (b + 1) * kBlockRows : rows;
      double* acc = want ? part + b * c : nullptr;
      if (acc) std::fill(acc, acc + c, 0.0);
      for (int64_t r = b * kBlockRows; r < r1; ++r) {
        const float *xr = xp + r * c, *dyr = dyp + r * c;
        float* dxr = dxp + r * c;
#pragma omp simd
        for (int64_t ch = 0; ch < c; ++ch) dxr[ch] = xr[ch] > 0.f ? dyr[ch] : a[ch] * dyr[ch];
        if (acc)
#pragma omp simd
          for (int64_t ch = 0; ch < c; ++ch) acc[ch] += xr[ch] > 0.f ? 0.0 : static_cast<double>(dyr[ch]) * xr[ch];
      }
    }
    if (!want) return;
    double all = 0;
    for (int64_t ch = 0; ch < c; ++ch) {
      double s = 0;
      for (int64_t b = 0; b < blocks; ++b) s += part[static_cast<size_t>(b * c + ch)];
      if (d_.alphas == c) dalpha.data()[ch] = static_cast<float>(s);
      all += s;
    }
    if (d_.alphas == 1) dalpha.data()[0] = static_cast<float>(all);
  }

 private:
  // The alpha of each channel (in a_).
  const float* alphas(const Tensor& alpha) {
    for (int64_t ch = 0; ch < d_.c; ++ch) a_[static_cast<size_t>(ch)] = alpha.data()[d_.alphas == 1 ? 0 : ch];
    return a_.data();
  }
  PReluDesc d_;
  int64_t blocks_ = 1;        // blocks of kBlockRows rows
  std::vector<float> a_;      // (c) the alpha of each channel
  std::vector<double> part_;  // (blocks, c) dAlpha's partial sums
};

std::unique_ptr<PReluOp> make(Backend&, const PReluDesc& d) { return std::make_unique<CpuPReluOp>(d); }

}  // namespace

DLT_REGISTER_OP(PReluDesc, DeviceType::kCpu, "own", 0, make, nullptr);

}  // namespace dlt::cpu
