// The CPU's group normalization (backend/group_norm_op.h): plain loops over the NHWC tensor (no
// oneDNN 2.6 primitive normalizes groups of channels), each a pass over the pixels with the
// channels innermost (contiguous, vectorized). Sums are per channel first: blocks of pixels of
// one image in parallel, each block's per-channel partial sums in double, then added in block
// order and over a group's channels: the same result for any number of threads. The statistics
// take two passes (the mean, then the squared deviations from it); the output is x a + b and
// the input gradient dy a' + x c' + b' with a, b, a', b', c' per image and channel.
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
      : GroupNormOp(d, Device::cpu()),
        d_(d),
        blocks_((d.pixels + kBlockPixels - 1) / kBlockPixels),
        part_(static_cast<size_t>(d.n * blocks_ * 2 * d.c)),
        sum_(static_cast<size_t>(d.n * d.c)),
        sum2_(sum_.size()),
        mu_(static_cast<size_t>(d.stats())),
        v_(mu_.size()),
        sg_(mu_.size()),
        sgx_(mu_.size()),
        m_ch_(sum_.size()),
        a_(sum_.size()),
        b_(sum_.size()),
        q_(sum_.size()) {}

 protected:
  void do_forward(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y, Tensor* mean,
                  Tensor* var) override {
    const int64_t c = d_.c, g = d_.groups, cg = d_.group_channels();
    const float* xp = x.data();
    const double count = static_cast<double>(d_.pixels * cg);
    // The means per image and group, then the variances about them.
    channel_sums(xp, nullptr, nullptr);
    group_totals(sum_, mu_);
    for (double& m : mu_) m /= count;
    expand(mu_, m_ch_);
    channel_sums(xp, m_ch_.data(), nullptr);
    group_totals(sum_, v_);
    for (double& s : v_) s /= count;
    // y = x a + b per image and channel: a = rstd scale, b = offset - mean a.
    for (int64_t i = 0; i < d_.n; ++i)
      for (int64_t ch = 0; ch < c; ++ch) {
        const size_t s = static_cast<size_t>(i * g + ch / cg), k = static_cast<size_t>(i * c + ch);
        const double rstd = 1.0 / std::sqrt(v_[s] + static_cast<double>(d_.epsilon));
        a_[k] = static_cast<float>(rstd * scale.data()[ch]);
        b_[k] = static_cast<float>(offset.data()[ch] - mu_[s] * rstd * scale.data()[ch]);
      }
    float* yp = y.data();
    const float *ap = a_.data(), *bp = b_.data();
    const int64_t rows = d_.n * d_.pixels;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float* ar = ap + (r / d_.pixels) * c;
      const float* br = bp + (r / d_.pixels) * c;
      const float* xr = xp + r * c;
      float* yr = yp + r * c;
#pragma omp simd
      for (int64_t ch = 0; ch < c; ++ch) yr[ch] = xr[ch] * ar[ch] + br[ch];
    }
    if (!mean) return;
    for (int64_t s = 0; s < d_.stats(); ++s) {
      mean->data()[s] = static_cast<float>(mu_[static_cast<size_t>(s)]);
      var->data()[s] = static_cast<float>(v_[static_cast<size_t>(s)]);
    }
  }

  // Per channel ch of image i: D = the sum of dy, E = the sum of dy (x - mean); per group
  // sg = the sum of scale D and sgx = rstd times the sum of scale E (the sums of g = dy scale
  // and of g xhat), so that dx = rstd (dy scale - sg / M - xhat sgx / M) with M the group's
  // values; dscale = the sum over images of rstd E, doffset of D.
  void do_backward(const Tensor& x, const Tensor& dy, const Tensor& scale, const Tensor& mean, const Tensor& var,
                   Tensor& dx, Tensor& dscale, Tensor& doffset) override {
    const int64_t c = d_.c, g = d_.groups, cg = d_.group_channels(), n = d_.n;
    const float *xp = x.data(), *dyp = dy.data(), *sp = scale.data();
    std::vector<double>& rstd = v_;
    for (int64_t s = 0; s < d_.stats(); ++s) {
      mu_[static_cast<size_t>(s)] = mean.data()[s];
      rstd[static_cast<size_t>(s)] = 1.0 / std::sqrt(static_cast<double>(var.data()[s]) + d_.epsilon);
    }
    expand(mu_, m_ch_);
    channel_sums(dyp, m_ch_.data(), xp);  // D into sum_, E into sum2_
    const double count = static_cast<double>(d_.pixels * cg);
    std::fill(sg_.begin(), sg_.end(), 0.0);
    std::fill(sgx_.begin(), sgx_.end(), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t ch = 0; ch < c; ++ch) {
        const size_t s = static_cast<size_t>(i * g + ch / cg), k = static_cast<size_t>(i * c + ch);
        sg_[s] += sp[ch] * sum_[k];
        sgx_[s] += sp[ch] * sum2_[k];
      }
    for (size_t s = 0; s < sgx_.size(); ++s) sgx_[s] *= rstd[s];
    if (dscale.defined() || doffset.defined())
      for (int64_t ch = 0; ch < c; ++ch) {
        double ds = 0, dof = 0;
        for (int64_t i = 0; i < n; ++i) {
          const size_t k = static_cast<size_t>(i * c + ch);
          ds += rstd[static_cast<size_t>(i * g + ch / cg)] * sum2_[k];
          dof += sum_[k];
        }
        if (dscale.defined()) dscale.data()[ch] = static_cast<float>(ds);
        if (doffset.defined()) doffset.data()[ch] = static_cast<float>(dof);
      }
    // dx = dy a + x q + b per image and channel: a = rstd scale, q = -rstd^2 sgx / M,
    // b = -rstd sg / M + mean rstd^2 sgx / M.
    for (int64_t i = 0; i < n; ++i)
      for (int64_t ch = 0; ch < c; ++ch) {
        const size_t s = static_cast<size_t>(i * g + ch / cg), k = static_cast<size_t>(i * c + ch);
        const double r = rstd[s], qs = -r * r * sgx_[s] / count;
        a_[k] = static_cast<float>(r * sp[ch]);
        q_[k] = static_cast<float>(qs);
        b_[k] = static_cast<float>(-r * sg_[s] / count - mu_[s] * qs);
      }
    float* dxp = dx.data();
    const float *ap = a_.data(), *qp = q_.data(), *bp = b_.data();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < n * d_.pixels; ++r) {
      const int64_t k = (r / d_.pixels) * c;
      const float *ar = ap + k, *qr = qp + k, *br = bp + k;
      const float *xr = xp + r * c, *dyr = dyp + r * c;
      float* dxr = dxp + r * c;
#pragma omp simd
      for (int64_t ch = 0; ch < c; ++ch) dxr[ch] = dyr[ch] * ar[ch] + xr[ch] * qr[ch] + br[ch];
    }
  }

 private:
  // Into sum_ (n * c, per image and channel, in double) the sum over the pixels of: v (center
  // null); (v - center)^2 (w null); or v, and into sum2_ the sum of v (w - center) (w given:
  // dy, and dy (x - mean)). center: a value per image and channel. Partial sums per block of
  // pixels in parallel, added in block order.
  void channel_sums(const float* v, const float* center, const float* w) {
    const int64_t c = d_.c, n = d_.n, pixels = d_.pixels;
    double* part = part_.data();
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < n * blocks_; ++t) {
      const int64_t i = t / blocks_, p0 = (t % blocks_) * kBlockPixels;
      const int64_t p1 = p0 + kBlockPixels < pixels ? p0 + kBlockPixels : pixels;
      double* acc = part + t * 2 * c;
      double* acc2 = acc + c;
      std::fill(acc, acc + 2 * c, 0.0);
      const float* m = center ? center + i * c : nullptr;
      for (int64_t p = p0; p < p1; ++p) {
        const float* vr = v + (i * pixels + p) * c;
        if (w) {
          const float* wr = w + (i * pixels + p) * c;
#pragma omp simd
          for (int64_t ch = 0; ch < c; ++ch) {
            acc[ch] += vr[ch];
            acc2[ch] += static_cast<double>(vr[ch]) * (wr[ch] - m[ch]);
          }
        } else if (m) {
#pragma omp simd
          for (int64_t ch = 0; ch < c; ++ch) {
            const double dv = static_cast<double>(vr[ch]) - m[ch];
            acc[ch] += dv * dv;
          }
        } else {
#pragma omp simd
          for (int64_t ch = 0; ch < c; ++ch) acc[ch] += vr[ch];
        }
      }
    }
    std::fill(sum_.begin(), sum_.end(), 0.0);
    std::fill(sum2_.begin(), sum2_.end(), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t blk = 0; blk < blocks_; ++blk) {
        const double* acc = part + (i * blocks_ + blk) * 2 * c;
        for (int64_t ch = 0; ch < c; ++ch) {
          sum_[static_cast<size_t>(i * c + ch)] += acc[ch];
          sum2_[static_cast<size_t>(i * c + ch)] += acc[c + ch];
        }
      }
  }
  // out (per image and group) = the sum of its channels' values in per_channel.
  void group_totals(const std::vector<double>& per_channel, std::vector<double>& out) const {
    const int64_t c = d_.c, g = d_.groups, cg = d_.group_channels();
    std::fill(out.begin(), out.end(), 0.0);
    for (int64_t i = 0; i < d_.n; ++i)
      for (int64_t ch = 0; ch < c; ++ch)
        out[static_cast<size_t>(i * g + ch / cg)] += per_channel[static_cast<size_t>(i * c + ch)];
  }
  // out[i * c + ch] = v[i * groups + ch / cg] (a value per image and group, per channel).
  void expand(const std::vector<double>& v, std::vector<float>& out) const {
    const int64_t c = d_.c, g = d_.groups, cg = d_.group_channels();
    for (int64_t i = 0; i < d_.n; ++i)
      for (int64_t ch = 0; ch < c; ++ch)
        out[static_cast<size_t>(i * c + ch)] = static_cast<float>(v[static_cast<size_t>(i * g + ch / cg)]);
  }

  GroupNormDesc d_;
  int64_t blocks_ = 1;              // blocks of kBlockPixels pixels per image
  std::vector<double> part_;        // (n * blocks, 2, c) the blocks' partial sums
  std::vector<double> sum_, sum2_;  // (n * c) channel_sums' results
  std::vector<double> mu_, v_;      // (n * groups) means; variances (forward) or rstd (backward)
  std::vector<double> sg_, sgx_;    // (n * groups) backward's group sums
  std::vector<float> m_ch_;         // (n * c) each channel's group mean
  std::vector<float> a_, b_, q_;    // (n * c) the output's (and dx's) coefficients
};

std::unique_ptr<GroupNormOp> make(Backend&, const GroupNormDesc& d) { return std::make_unique<CpuGroupNormOp>(d); }

}  // namespace

DLT_REGISTER_OP(GroupNormDesc, DeviceType::kCpu, "own", 0, make, nullptr);

}  // namespace dlt::cpu
