// Resizing an image (MATLAB's resize2dLayer, ONNX Resize, PyTorch's interpolate) on NHWC
// tensors, x (N, H, W, C) to y (N, OH, OW, C), each output pixel from the input pixels its
// source coordinate falls between, per dimension (height with scale_h, width with scale_w):
//   half_pixel: s = (o + 0.5) / scale - 0.5;  else (asymmetric): s = o / scale;
//   align_corners (over half_pixel): s = o (H - 1) / (OH - 1), 0 for one output pixel (the
//            corners' centres meet: PyTorch's align_corners=True, ONNX's align_corners);
//   nearest: the input pixel round(s) (halves up: MATLAB's "round", ONNX's round_prefer_ceil)
//            or floor(s) (MATLAB's and ONNX's "floor"), clamped to [0, H - 1];
//   bilinear: s clamped to [0, H - 1], the pixels i0 = floor(s) and i1 = min(i0 + 1, H - 1)
//            weighted 1 - (s - i0) and s - i0 (PyTorch's align_corners=False, ONNX's linear);
//   bicubic: the pixels i0 - 1 .. i0 + 2 around i0 = floor(s) (s not clamped), each clamped to
//            [0, H - 1], weighted by Keys' cubic convolution with a = -0.75 at their distance
//            from s (PyTorch's bicubic with align_corners=False, ONNX's cubic with
//            cubic_coeff_a -0.75 and exclude_outside 0); cubic_taps() lists them.
// Bilinear and bicubic weights multiply across the two dimensions. The scale is the one given (ONNX's scales,
// MATLAB's Scale), which for a size given instead is OH / H. taps() lists each output row's (or
// column's) two input rows and the second one's weight; both backends read these tables. The
// backward adds each output gradient into its input pixels with the same weights. An op of the
// registry (op_registry.h): each backend registers its kernel in its own file.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "tensor/tensor.h"
#include "util/check.h"

namespace dlt {

class ResizeOp;

struct ResizeDesc {
  using Op = ResizeOp;
  static constexpr const char* kOp = "resize";
  int64_t n = 1, h = 1, w = 1, c = 1;  // input
  int64_t oh = 1, ow = 1;              // output
  double scale_h = 1, scale_w = 1;     // output / input
  bool bilinear = false;               // else nearest (unless bicubic)
  bool bicubic = false;                // else nearest or bilinear
  bool half_pixel = true;              // else asymmetric
  bool align_corners = false;          // over half_pixel and asymmetric
  bool floor = false;                  // nearest: floor(s), else round(s) (halves up)
  int64_t x_numel() const { return n * h * w * c; }
  int64_t y_numel() const { return n * oh * ow * c; }
  // Output pixel o's source coordinate in a dimension of `in` pixels resized to `out` by scale.
  double source(int64_t o, int64_t in, int64_t out, double scale) const {
    if (align_corners)
      return out > 1 ? static_cast<double>(o) * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
    return half_pixel ? (static_cast<double>(o) + 0.5) / scale - 0.5 : static_cast<double>(o) / scale;
  }

  // One output row (or column): input rows i0 and i1, i1's weight (0 for nearest).
  struct Tap {
    int64_t i0 = 0, i1 = 0;
    float w1 = 0.f;
  };
  std::vector<Tap> taps(int64_t in, int64_t out, double scale) const {
    std::vector<Tap> t(static_cast<size_t>(out));
    for (int64_t o = 0; o < out; ++o) {
      const double s = source(o, in, out, scale);
      Tap& p = t[static_cast<size_t>(o)];
      if (!bilinear) {
        const double r = floor ? std::floor(s) : std::floor(s + 0.5);
        p.i0 = p.i1 = std::clamp<int64_t>(static_cast<int64_t>(r), 0, in - 1);
        continue;
      }
      const double sc = std::clamp(s, 0.0, static_cast<double>(in - 1));
      p.i0 = static_cast<int64_t>(std::floor(sc));
      p.i1 = std::min(p.i0 + 1, in - 1);
      p.w1 = static_cast<float>(sc - static_cast<double>(p.i0));
    }
    return t;
  }
  std::vector<Tap> row_taps() const { return taps(h, oh, scale_h); }
  std::vector<Tap> col_taps() const { return taps(w, ow, scale_w); }

  // Bicubic: one output row's (or column's) four input rows and their weights.
  struct CubicTap {
    int64_t i[4] = {0, 0, 0, 0};
    float w[4] = {0.f, 0.f, 0.f, 0.f};
  };
  static constexpr double kCubicA = -0.75;
  std::vector<CubicTap> cubic_taps(int64_t in, int64_t out, double scale) const {
    std::vector<CubicTap> t(static_cast<size_t>(out));
    auto near = [](double x) { return ((kCubicA + 2) * x - (kCubicA + 3)) * x * x + 1; };  // |x| <= 1
    auto far = [](double x) { return ((kCubicA * x - 5 * kCubicA) * x + 8 * kCubicA) * x - 4 * kCubicA; };
    for (int64_t o = 0; o < out; ++o) {
      const double s = source(o, in, out, scale);
      const double f = std::floor(s), d = s - f;
      const double w[4] = {far(d + 1), near(d), near(1 - d), far(2 - d)};
      CubicTap& p = t[static_cast<size_t>(o)];
      for (int k = 0; k < 4; ++k) {
        p.i[k] = std::clamp<int64_t>(static_cast<int64_t>(f) - 1 + k, 0, in - 1);
        p.w[k] = static_cast<float>(w[k]);
      }
    }
    return t;
  }
  std::vector<CubicTap> row_cubic_taps() const { return cubic_taps(h, oh, scale_h); }
  std::vector<CubicTap> col_cubic_taps() const { return cubic_taps(w, ow, scale_w); }
};

// x, y, dy, dx of the descriptor's sizes, on the op's device. backward writes dx (not accumulated).
class ResizeOp {
 public:
  virtual ~ResizeOp() = default;
  void forward(const Tensor& x, Tensor& y) {
    check(x, desc_.x_numel(), "x");
    check(y, desc_.y_numel(), "y");
    do_forward(x, y);
  }
  void backward(const Tensor& dy, Tensor& dx) {
    check(dy, desc_.y_numel(), "dy");
    check(dx, desc_.x_numel(), "dx");
    do_backward(dy, dx);
  }
  const ResizeDesc& desc() const { return desc_; }

 protected:
  ResizeOp(const ResizeDesc& d, Device device) : desc_(d), device_(device) {
    DLT_CHECK(d.n >= 1 && d.h >= 1 && d.w >= 1 && d.c >= 1 && d.oh >= 1 && d.ow >= 1,
              "resize: every size must be at least 1 (" << d.n << "x" << d.h << "x" << d.w << "x" << d.c << " to "
                                                        << d.oh << "x" << d.ow << ")");
    DLT_CHECK(std::isfinite(d.scale_h) && std::isfinite(d.scale_w) && d.scale_h > 0 && d.scale_w > 0,
              "resize: scales " << d.scale_h << " and " << d.scale_w << " must be positive");
  }
  virtual void do_forward(const Tensor& x, Tensor& y) = 0;
  virtual void do_backward(const Tensor& dy, Tensor& dx) = 0;

 private:
  void check(const Tensor& t, int64_t numel, const char* what) const {
    DLT_CHECK(t.defined() && t.device() == device_ && t.numel() == numel,
              "resize: " << what << " must be " << numel << " values on " << device_.str());
  }
  ResizeDesc desc_;
  Device device_;
};

}  // namespace dlt
