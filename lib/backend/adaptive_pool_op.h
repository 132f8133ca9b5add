// Adaptive average pooling (MATLAB's adaptiveAveragePooling2dLayer, PyTorch's AdaptiveAvgPool2d)
// of NHWC tensors x (n, h, w, c) to y (n, out_h, out_w, c): output row i averages the input rows
// from floor(i h / out_h) to ceil((i + 1) h / out_h) - 1 (PyTorch's regions, which overlap when
// out_h does not divide h), columns alike. backward writes dx (not accumulated): each input value
// gets dy / (its region's size) from every output whose region holds it. An op of the registry
// (op_registry.h): each backend registers its kernel in its own file.
#pragma once
#include <cstdint>

#include "tensor/tensor.h"
#include "util/check.h"

namespace dlt {

class AdaptivePoolOp;

struct AdaptivePoolDesc {
  using Op = AdaptivePoolOp;
  static constexpr const char* kOp = "adaptive_average_pool";
  int64_t n = 1, h = 1, w = 1, c = 1, out_h = 1, out_w = 1;
  int64_t in_numel() const { return n * h * w * c; }
  int64_t out_numel() const { return n * out_h * out_w * c; }
};

// The first and one past the last input index of output i's region, of `in` inputs pooled to
// `out` outputs.
inline int64_t adaptive_begin(int64_t i, int64_t in, int64_t out) { return i * in / out; }
inline int64_t adaptive_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

class AdaptivePoolOp {
 public:
  virtual ~AdaptivePoolOp() = default;
  void forward(const Tensor& x, Tensor& y) {
    check(x, desc_.in_numel(), "x");
    check(y, desc_.out_numel(), "y");
    do_forward(x, y);
  }
  void backward(const Tensor& dy, Tensor& dx) {
    check(dy, desc_.out_numel(), "dy");
    check(dx, desc_.in_numel(), "dx");
    do_backward(dy, dx);
  }
  const AdaptivePoolDesc& desc() const { return desc_; }

 protected:
  AdaptivePoolOp(const AdaptivePoolDesc& d, Device device) : desc_(d), device_(device) {
    DLT_CHECK(d.n >= 1 && d.h >= 1 && d.w >= 1 && d.c >= 1 && d.out_h >= 1 && d.out_w >= 1,
              "adaptive_average_pool: sizes must be positive (n " << d.n << ", " << d.h << "x" << d.w << "x" << d.c
                                                                  << " to " << d.out_h << "x" << d.out_w << ")");
  }
  virtual void do_forward(const Tensor& x, Tensor& y) = 0;
  virtual void do_backward(const Tensor& dy, Tensor& dx) = 0;

 private:
  void check(const Tensor& t, int64_t numel, const char* what) const {
    DLT_CHECK(t.defined() && t.device() == device_ && t.numel() == numel,
              "adaptive_average_pool: " << what << " must be " << numel << " values on " << device_.str() << " (got "
                                        << (t.defined() ? t.numel() : 0) << ")");
  }
  AdaptivePoolDesc desc_;
  Device device_;
};

}  // namespace dlt
