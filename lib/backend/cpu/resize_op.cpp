// The CPU's resize (backend/resize_op.h): plain loops over the descriptor's row and column taps,
// each output pixel's channels from two input rows and two input columns (one each for nearest,
// four each for bicubic).
// Forward is parallel over the output rows; backward adds each output gradient into its input
// pixels, parallel over images and blocks of channels (no two threads touch one value).
#include <algorithm>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/resize_op.h"

namespace dlt::cpu {
namespace {

constexpr int64_t kChannelBlock = 16;

class CpuResizeOp final : public ResizeOp {
 public:
  explicit CpuResizeOp(const ResizeDesc& d)
      : ResizeOp(d, Device::cpu()), d_(d), rows_(d.row_taps()), cols_(d.col_taps()) {
    if (d.bicubic) {
      cubic_rows_ = d.row_cubic_taps();
      cubic_cols_ = d.col_cubic_taps();
    }
  }

 private:
  void do_forward(const Tensor& x, Tensor& y) override {
    if (d_.bicubic) return cubic_forward(x, y);
    const float* in = x.data();
    float* out = y.data();
    const int64_t c = d_.c;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < d_.n; ++n)
      for (int64_t oy = 0; oy < d_.oh; ++oy) {
        const ResizeDesc::Tap& r = rows_[static_cast<size_t>(oy)];
        const float* row0 = in + (n * d_.h + r.i0) * d_.w * c;
        const float* row1 = in + (n * d_.h + r.i1) * d_.w * c;
        float* dst = out + (n * d_.oh + oy) * d_.ow * c;
        for (int64_t ox = 0; ox < d_.ow; ++ox, dst += c) {
          const ResizeDesc::Tap& q = cols_[static_cast<size_t>(ox)];
          const float* a = row0 + q.i0 * c;
          if (!d_.bilinear) {
            std::copy(a, a + c, dst);
            continue;
          }
          const float* b = row0 + q.i1 * c;
          const float* e = row1 + q.i0 * c;
          const float* f = row1 + q.i1 * c;
          const float wy = r.w1, wx = q.w1;
          for (int64_t k = 0; k < c; ++k)
            dst[k] = (1.f - wy) * ((1.f - wx) * a[k] + wx * b[k]) + wy * ((1.f - wx) * e[k] + wx * f[k]);
        }
      }
  }

  void do_backward(const Tensor& dy, Tensor& dx) override {
    if (d_.bicubic) return cubic_backward(dy, dx);
    const float* g = dy.data();
    float* out = dx.data();
    const int64_t c = d_.c, blocks = (c + kChannelBlock - 1) / kChannelBlock;
    std::fill(out, out + d_.x_numel(), 0.f);
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < d_.n; ++n)
      for (int64_t blk = 0; blk < blocks; ++blk) {
        const int64_t k0 = blk * kChannelBlock, k1 = std::min(c, k0 + kChannelBlock);
        float* img = out + n * d_.h * d_.w * c;
        for (int64_t oy = 0; oy < d_.oh; ++oy) {
          const ResizeDesc::Tap& r = rows_[static_cast<size_t>(oy)];
          const float* src = g + (n * d_.oh + oy) * d_.ow * c;
          for (int64_t ox = 0; ox < d_.ow; ++ox, src += c) {
            const ResizeDesc::Tap& q = cols_[static_cast<size_t>(ox)];
            auto add = [&](int64_t iy, int64_t ix, float wt) {
              if (wt == 0.f) return;
              float* p = img + (iy * d_.w + ix) * c;
              for (int64_t k = k0; k < k1; ++k) p[k] += wt * src[k];
            };
            const float wy = r.w1, wx = q.w1;  // 0 for nearest (ResizeDesc::taps)
            add(r.i0, q.i0, (1.f - wy) * (1.f - wx));
            add(r.i0, q.i1, (1.f - wy) * wx);
            add(r.i1, q.i0, wy * (1.f - wx));
            add(r.i1, q.i1, wy * wx);
          }
        }
      }
  }

  // Each output value: the four rows' sums of their four columns, weighted.
  void cubic_forward(const Tensor& x, Tensor& y) {
    const float* in = x.data();
    float* out = y.data();
    const int64_t c = d_.c;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < d_.n; ++n)
      for (int64_t oy = 0; oy < d_.oh; ++oy) {
        const ResizeDesc::CubicTap& r = cubic_rows_[static_cast<size_t>(oy)];
        float* dst = out + (n * d_.oh + oy) * d_.ow * c;
        for (int64_t ox = 0; ox < d_.ow; ++ox, dst += c) {
          const ResizeDesc::CubicTap& q = cubic_cols_[static_cast<size_t>(ox)];
          std::fill(dst, dst + c, 0.f);
          for (int a = 0; a < 4; ++a) {
            const float* row = in + (n * d_.h + r.i[a]) * d_.w * c;
            for (int b = 0; b < 4; ++b) {
              const float* src = row + q.i[b] * c;
              const float wt = r.w[a] * q.w[b];
              for (int64_t k = 0; k < c; ++k) dst[k] += wt * src[k];
            }
          }
        }
      }
  }

  void cubic_backward(const Tensor& dy, Tensor& dx) {
    const float* g = dy.data();
    float* out = dx.data();
    const int64_t c = d_.c, blocks = (c + kChannelBlock - 1) / kChannelBlock;
    std::fill(out, out + d_.x_numel(), 0.f);
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < d_.n; ++n)
      for (int64_t blk = 0; blk < blocks; ++blk) {
        const int64_t k0 = blk * kChannelBlock, k1 = std::min(c, k0 + kChannelBlock);
        float* img = out + n * d_.h * d_.w * c;
        for (int64_t oy = 0; oy < d_.oh; ++oy) {
          const ResizeDesc::CubicTap& r = cubic_rows_[static_cast<size_t>(oy)];
          const float* src = g + (n * d_.oh + oy) * d_.ow * c;
          for (int64_t ox = 0; ox < d_.ow; ++ox, src += c) {
            const ResizeDesc::CubicTap& q = cubic_cols_[static_cast<size_t>(ox)];
            for (int a = 0; a < 4; ++a)
              for (int b = 0; b < 4; ++b) {
                const float wt = r.w[a] * q.w[b];
                float* p = img + (r.i[a] * d_.w + q.i[b]) * c;
                for (int64_t k = k0; k < k1; ++k) p[k] += wt * src[k];
              }
          }
        }
      }
  }

  ResizeDesc d_;
  std::vector<ResizeDesc::Tap> rows_, cols_;
  std::vector<ResizeDesc::CubicTap> cubic_rows_, cubic_cols_;
};

std::unique_ptr<ResizeOp> make(Backend&, const ResizeDesc& d) { return std::make_unique<CpuResizeOp>(d); }

}  // namespace

DLT_REGISTER_OP(ResizeDesc, DeviceType::kCpu, "own", 0, make, nullptr);

}  // namespace dlt::cpu
