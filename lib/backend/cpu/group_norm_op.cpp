// The CPU's group normalization (backend/group_norm_op.h): plain loops over the NHWC tensor (no
// oneDNN 2.6 primitive normalizes groups of channels), each a pass over the pixels with the
// channels innermost (contiguous, vectorized). Sums are per channel first: blocks of pixels of
// one image in parallel, each block's per-channel partial sums in double, then added in block
// order and over a group's channels: the same result for any number of threads. The statistics
// take two passes (the mean, then the squared deviations from it); the output is x a + b and
// the input gradient dy a' + x c' + b' with a, b, a', b', c' per image and channel.
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
        per_channel_(static_cast<size_t>(d.n * d.c)) {}

 protected:
  void do_forward(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y, Tensor* mean,
                  Tensor* var) override {
    const int64_t c = d_.c, g = d_.groups, cg = d_.group_channels();
    const float* xp = x.data();
    const double count = static_cast<double>(d_.pixels * cg);
    // The means per image and group, then the variances about them.
    std::vector<double> mu = group_totals(channel_sums(xp, nullptr, nullptr, nullptr));
    for (double& m : mu) m /= count;
    std::vector<float>& m_ch = per_channel_;  // each channel's group mean
    expand(mu, m_ch);
    std::vector<double> v = group_totals(channel_sums(xp, m_ch.data(), nullptr, nullptr));
    for (double& s : v) s /= count;
    // y = x a + b per image and channel: a = rstd scale, b = offset - mean a.
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
#pragma omp simd
      for (int64_t ch = 0; ch < c; ++ch) yr[ch] = xr[ch] * ar[ch] + br[ch];
    }
    if (!mean) return;
    for (int64_t s = 0; s < d_.stats(); ++s) {
      mean->data()[s] = static_cast<float>(mu[static_cast<size_t>(s)]);
      var->data()[s] = static_cast<float>(v[static_cast<size_t>(s)]);
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
    std::vector<double> mu(static_cast<size_t>(d_.stats())), rstd(mu.size());
    for (int64_t s = 0; s < d_.stats(); ++s) {
      mu[static_cast<size_t>(s)] = mean.data()[s];
      rstd[static_cast<size_t>(s)] = 1.0 / std::sqrt(static_cast<double>(var.data()[s]) + d_.epsilon);
    }
    std::vector<float>& m_ch = per_channel_;
    expand(mu, m_ch);
    std::vector<double> e_sum;
    const std::vector<double> d_sum = channel_sums(dyp, nullptr, xp, &e_sum);  // D, and E into e_sum
    const double count = static_cast<double>(d_.pixels * cg);
    std::vector<double> sg(static_cast<size_t>(d_.stats()), 0.0), sgx(sg.size(), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t ch = 0; ch < c; ++ch) {
        const size_t s = static_cast<size_t>(i * g + ch / cg), k = static_cast<size_t>(i * c + ch);
        sg[s] += sp[ch] * d_sum[k];
        sgx[s] += sp[ch] * e_sum[k];
      }
    for (size_t s = 0; s < sgx.size(); ++s) sgx[s] *= rstd[s];
    if (dscale.defined() || doffset.defined())
      for (int64_t ch = 0; ch < c; ++ch) {
        double ds = 0, dof = 0;
        for (int64_t i = 0; i < n; ++i) {
          const size_t k = static_cast<size_t>(i * c + ch);
          ds += rstd[static_cast<size_t>(i * g + ch / cg)] * e_sum[k];
          dof += d_sum[k];
        }
        if (dscale.defined()) dscale.data()[ch] = static_cast<float>(ds);
        if (doffset.defined()) doffset.data()[ch] = static_cast<float>(dof);
      }
    // dx = dy a + x q + b per image and channel: a = rstd scale, q = -rstd^2 sgx / M,
    // b = -rstd sg / M + mean rstd^2 sgx / M.
    std::vector<float> a(static_cast<size_t>(n * c)), q(a.size()), b(a.size());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t ch = 0; ch < c; ++ch) {
        const size_t s = static_cast<size_t>(i * g + ch / cg), k = static_cast<size_t>(i * c + ch);
        const double r = rstd[s], qs = -r * r * sgx[s] / count;
        a[k] = static_cast<float>(r * sp[ch]);
        q[k] = static_cast<float>(qs);
        b[k] = static_cast<float>(-r * sg[s] / count - mu[s] * qs);
      }
    float* dxp = dx.data();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < n * d_.pixels; ++r) {
      const int64_t k = (r / d_.pixels) * c;
      const float *ar = a.data() + k, *qr = q.data() + k, *br = b.data() + k;
      const float *xr = xp + r * c, *dyr = dyp + r * c;
      float* dxr = dxp + r * c;
#pragma omp simd
      for (int64_t ch = 0; ch < c; ++ch) dxr[ch] = dyr[ch] * ar[ch] + xr[ch] * qr[ch] + br[ch];
    }
  }

 private:
  // Per image and channel (n * c, in double) the sum over the pixels of: v (center and w null);
  // (v - center[ch])^2 (center given, w null); v, and into *second the sum of v (w - center[ch])
  // (w and second given: dy, and dy (x - mean)). Partial sums per block of pixels in parallel,
  // added in block order.
  std::vector<double> channel_sums(const float* v, const float* center, const float* w,
                                   std::vector<double>* second) const {
    const int64_t c = d_.c, n = d_.n, pixels = d_.pixels;
    const int64_t parts = w ? 2 : 1;
    std::vector<double> part(static_cast<size_t>(n * blocks_ * parts * c), 0.0);
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < n * blocks_; ++t) {
      const int64_t i = t / blocks_, p0 = (t % blocks_) * kBlockPixels;
      const int64_t p1 = p0 + kBlockPixels < pixels ? p0 + kBlockPixels : pixels;
      double* acc = part.data() + t * parts * c;
      double* acc2 = acc + c;
      const float* m = center ? center + i * c : nullptr;
      for (int64_t p = p0; p < p1; ++p) {
        const float* vr = v + (i * pixels + p) * c;
        if (w) {
          const float* wr = w + (i * pixels + p) * c;
          const float* mr = per_channel_.data() + i * c;
#pragma omp simd
          for (int64_t ch = 0; ch < c; ++ch) {
            acc[ch] += vr[ch];
            acc2[ch] += static_cast<double>(vr[ch]) * (wr[ch] - mr[ch]);
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
    std::vector<double> out(static_cast<size_t>(n * c), 0.0);
    if (second) second->assign(out.size(), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t blk = 0; blk < blocks_; ++blk) {
        const double* acc = part.data() + (i * blocks_ + blk) * parts * c;
        for (int64_t ch = 0; ch < c; ++ch) {
          out[static_cast<size_t>(i * c + ch)] += acc[ch];
          if (second) (*second)[static_cast<size_t>(i * c + ch)] += acc[c + ch];
        }
      }
    return out;
  }
  // Per image and group: the sum of its channels' sums.
  std::vector<double> group_totals(const std::vector<double>& per_channel) const {
    const int64_t c = d_.c, g = d_.groups, cg = d_.group_channels();
    std::vector<double> out(static_cast<size_t>(d_.stats()), 0.0);
    for (int64_t i = 0; i < d_.n; ++i)
      for (int64_t ch = 0; ch < c; ++ch)
        out[static_cast<size_t>(i * g + ch / cg)] += per_channel[static_cast<size_t>(i * c + ch)];
    return out;
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
  std::vector<float> per_channel_;  // (n * c) each channel's group mean
};

std::unique_ptr<GroupNormOp> make(Backend&, const GroupNormDesc& d) { return std::make_unique<CpuGroupNormOp>(d); }

}  // namespace

DLT_REGISTER_OP(GroupNormDesc, DeviceType::kCpu, "own", 0, make, nullptr);

}  // namespace dlt::cpu
