// The CPU's group normalization (backend/group_norm_op.h): plain loops over the NHWC tensor (no
// oneDNN 2.6 primitive normalizes groups of channels). The sums run over blocks of pixels of one
// image in parallel, each block's per-group (and, in backward, per-channel) partial sums in
// double, added in block order: the same result for any number of threads. The statistics take
// two passes (the mean, then the squared deviations); the output is x a + b per image and
// channel (a = rstd scale, b = offset - mean a).
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/group_norm_op.h"

namespace dlt::cpu {
namespace {

constexpr int64_t kBlockPixels = 256;

class CpuGroupNormOp final : public GroupNormOp {
 public:
  explicit CpuGroupNormOp(const GroupNormDesc& d)
      : GroupNormOp(d, Device::cpu()), d_(d), blocks_((d.pixels + kBlockPixels - 1) / kBlockPixels) {}

 protected:
  void do_forward(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y, Tensor* mean,
                  Tensor* var) override {
    const int64_t c = d_.c, g = d_.groups, cg = d_.group_channels();
    const float* xp = x.data();
    // The means, then the variances about them, per image and group.
    std::vector<double> mu(static_cast<size_t>(d_.stats())), v(mu.size());
    group_sums(mu,
               [&](int64_t i, int64_t p, int64_t ch) { return static_cast<double>(xp[(i * d_.pixels + p) * c + ch]); });
    const double count = static_cast<double>(d_.pixels * cg);
    for (double& m : mu) m /= count;
    group_sums(v, [&](int64_t i, int64_t p, int64_t ch) {
      const double dev = xp[(i * d_.pixels + p) * c + ch] - mu[static_cast<size_t>(i * g + ch / cg)];
      return dev * dev;
    });
    for (double& s : v) s /= count;
    // y = x a + b with a and b per image and channel.
    std::vector<float> a(static_cast<size_t>(d_.n * c)), b(a.size());
    for (int64_t i = 0; i < d_.n; ++i)
      for (int64_t ch = 0; ch < c; ++ch) {
        const size_t s = static_cast<size_t>(i * g + ch / cg), k = static_cast<size_t>(i * c + ch);
        const double rstd = 1.0 / std::sqrt(v[s] + static_cast<double>(d_.epsilon));
        a[k] = static_cast<float>(rstd * scale.data()[ch]);
        b[k] = static_cast<float>(offset.data()[ch] - mu[s] * rstd * scale.data()[ch]);
      }
    float* yp = y.data();
    const int64_t rows = d_.n * d_.pixels;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float* ar = a.data() + (r / d_.pixels) * c;
      const float* br = b.data() + (r / d_.pixels) * c;
      const float* xr = xp + r * c;
      float* yr = yp + r * c;
      for (int64_t ch = 0; ch < c; ++ch) yr[ch] = xr[ch] * ar[ch] + br[ch];
    }
    if (!mean) return;
    for (int64_t s = 0; s < d_.stats(); ++s) {
      mean->data()[s] = static_cast<float>(mu[static_cast<size_t>(s)]);
      var->data()[s] = static_cast<float>(v[static_cast<size_t>(s)]);
    }
  }

  void do_backward(const Tensor& x, const Tensor& dy, const Tensor& scale, const Tensor& mean, const Tensor& var,
                   Tensor& dx, Tensor& dscale, Tensor& doffset) override {
    const int64_t c = d_.c, g = d_.groups, cg = d_.group_channels(), n = d_.n, pixels = d_.pixels;
    const float *xp = x.data(), *dyp = dy.data(), *sp = scale.data();
    std::vector<double> rstd(static_cast<size_t>(d_.stats()));
    for (int64_t s = 0; s < d_.stats(); ++s) rstd[static_cast<size_t>(s)] = 1.0 / std::sqrt(var.data()[s] + d_.epsilon);
    auto xhat = [&](int64_t i, int64_t p, int64_t ch) {
      const size_t s = static_cast<size_t>(i * g + ch / cg);
      return (xp[(i * pixels + p) * c + ch] - mean.data()[s]) * rstd[s];
    };
    // Per image and group: the sums of g = dy scale and of g xhat.
    std::vector<double> sg(static_cast<size_t>(d_.stats())), sgx(sg.size());
    group_sums(sg, [&](int64_t i, int64_t p, int64_t ch) {
      return static_cast<double>(dyp[(i * pixels + p) * c + ch]) * sp[ch];
    });
    group_sums(sgx, [&](int64_t i, int64_t p, int64_t ch) {
      return static_cast<double>(dyp[(i * pixels + p) * c + ch]) * sp[ch] * xhat(i, p, ch);
    });
    if (dscale.defined() || doffset.defined()) channel_sums(dyp, xhat, dscale, doffset);
    const double count = static_cast<double>(pixels * cg);
    float* dxp = dx.data();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < n * pixels; ++r) {
      const int64_t i = r / pixels, p = r % pixels;
      for (int64_t ch = 0; ch < c; ++ch) {
        const size_t s = static_cast<size_t>(i * g + ch / cg);
        const double gv = static_cast<double>(dyp[r * c + ch]) * sp[ch];
        dxp[r * c + ch] = static_cast<float>(rstd[s] * (gv - sg[s] / count - xhat(i, p, ch) * sgx[s] / count));
      }
    }
  }

 private:
  // out[i * groups + group] = the sum of f(i, p, ch) over the group's pixels and channels:
  // partial sums per block of pixels in parallel, then added in block order.
  template <class F>
  void group_sums(std::vector<double>& out, F f) const {
    const int64_t c = d_.c, g = d_.groups, cg = d_.group_channels();
    std::vector<double> part(static_cast<size_t>(d_.n * blocks_ * g), 0.0);
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < d_.n * blocks_; ++t) {
      const int64_t i = t / blocks_, p0 = (t % blocks_) * kBlockPixels, p1 = std::min(p0 + kBlockPixels, d_.pixels);
      double* acc = part.data() + t * g;
      for (int64_t p = p0; p < p1; ++p)
        for (int64_t ch = 0; ch < c; ++ch) acc[ch / cg] += f(i, p, ch);
    }
    for (int64_t i = 0; i < d_.n; ++i)
      for (int64_t k = 0; k < g; ++k) {
        double s = 0;
        for (int64_t b = 0; b < blocks_; ++b) s += part[static_cast<size_t>((i * blocks_ + b) * g + k)];
        out[static_cast<size_t>(i * g + k)] = s;
      }
  }
  // dscale[ch] = the sum of dy xhat, doffset[ch] = the sum of dy, over images and pixels.
  template <class XHat>
  void channel_sums(const float* dyp, XHat xhat, Tensor& dscale, Tensor& doffset) const {
    const int64_t c = d_.c;
    std::vector<double> part(static_cast<size_t>(d_.n * blocks_ * 2 * c), 0.0);
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < d_.n * blocks_; ++t) {
      const int64_t i = t / blocks_, p0 = (t % blocks_) * kBlockPixels, p1 = std::min(p0 + kBlockPixels, d_.pixels);
      double* ds = part.data() + t * 2 * c;
      double* dof = ds + c;
      for (int64_t p = p0; p < p1; ++p)
        for (int64_t ch = 0; ch < c; ++ch) {
          const double d = dyp[(i * d_.pixels + p) * c + ch];
          ds[ch] += d * xhat(i, p, ch);
          dof[ch] += d;
        }
    }
    for (int64_t ch = 0; ch < c; ++ch) {
      double s = 0, o = 0;
      for (int64_t t = 0; t < d_.n * blocks_; ++t) {
        s += part[static_cast<size_t>(t * 2 * c + ch)];
        o += part[static_cast<size_t>(t * 2 * c + c + ch)];
      }
      if (dscale.defined()) dscale.data()[ch] = static_cast<float>(s);
      if (doffset.defined()) doffset.data()[ch] = static_cast<float>(o);
    }
  }

  GroupNormDesc d_;
  int64_t blocks_ = 1;  // blocks of kBlockPixels pixels per image
};

std::unique_ptr<GroupNormOp> make(Backend&, const GroupNormDesc& d) { return std::make_unique<CpuGroupNormOp>(d); }

}  // namespace

DLT_REGISTER_OP(GroupNormDesc, DeviceType::kCpu, "own", 0, make, nullptr);

}  // namespace dlt::cpu
