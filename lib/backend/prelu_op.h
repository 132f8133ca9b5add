// PReLU (MATLAB's preluLayer, PyTorch's PReLU, ONNX's PRelu) on NHWC tensors x (n, pixels, c):
//   y = x where x > 0, alpha x elsewhere,
// with alpha one learnable value shared by every channel (alphas 1) or one per channel
// (alphas c). backward writes dx = dy where x > 0, alpha dy elsewhere, and dalpha (when
// defined) = the sum of dy x over the values with x <= 0 (of its channel, or of all). An op of
// the registry (op_registry.h): each backend registers its kernel in its own file.
#pragma once
#include <cstdint>

#include "tensor/tensor.h"
#include "util/check.h"

namespace dlt {

class PReluOp;

struct PReluDesc {
  using Op = PReluOp;
  static constexpr const char* kOp = "prelu";
  int64_t n = 1, pixels = 1, c = 1;
  int64_t alphas = 1;  // 1 (shared) or c
  int64_t numel() const { return n * pixels * c; }
};

class PReluOp {
 public:
  virtual ~PReluOp() = default;
  void forward(const Tensor& x, const Tensor& alpha, Tensor& y) {
    check(x, desc_.numel(), "x");
    check(alpha, desc_.alphas, "alpha");
    check(y, desc_.numel(), "y");
    do_forward(x, alpha, y);
  }
  // dx and dalpha written (not accumulated); dalpha may be undefined (a frozen alpha).
  void backward(const Tensor& x, const Tensor& alpha, const Tensor& dy, Tensor& dx, Tensor& dalpha) {
    check(x, desc_.numel(), "x");
    check(alpha, desc_.alphas, "alpha");
    check(dy, desc_.numel(), "dy");
    check(dx, desc_.numel(), "dx");
    if (dalpha.defined()) check(dalpha, desc_.alphas, "dalpha");
    do_backward(x, alpha, dy, dx, dalpha);
  }
  const PReluDesc& desc() const { return desc_; }

 protected:
  PReluOp(const PReluDesc& d, Device device) : desc_(d), device_(device) {
    DLT_CHECK(d.n >= 1 && d.pixels >= 1 && d.c >= 1 && (d.alphas == 1 || d.alphas == d.c),
              "prelu: " << d.alphas << " alphas for " << d.c << " channels (n " << d.n << ", pixels " << d.pixels
                        << "): one shared or one per channel");
  }
  virtual void do_forward(const Tensor& x, const Tensor& alpha, Tensor& y) = 0;
  virtual void do_backward(const Tensor& x, const Tensor& alpha, const Tensor& dy, Tensor& dx, Tensor& dalpha) = 0;

 private:
  void check(const Tensor& t, int64_t numel, const char* what) const {
    DLT_CHECK(t.defined() && t.device() == device_ && t.numel() == numel,
              "prelu: " << what << " must be " << numel << " values on " << device_.str() << " (got "
                        << (t.defined() ? t.numel() : 0) << ")");
  }
  PReluDesc desc_;
  Device device_;
};

}  // namespace dlt
