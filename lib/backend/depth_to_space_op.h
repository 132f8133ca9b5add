// Depth to space (MATLAB's depthToSpace2dLayer, ONNX DepthToSpace, PyTorch's pixel_shuffle in
// CRD mode): each input pixel's channels become a bh x bw block of output pixels. On NHWC
// tensors, x (N, H, W, C) and y (N, H * bh, W * bw, C / (bh * bw)):
//   y[n, h * bh + i, w * bw + j, k] = x[n, h, w, source(i, j, k)],
//   DCR (depth, column, row; the default): source = (i * bw + j) * C' + k,
//   CRD (column, row, depth):              source = k * bh * bw + i * bw + j,   C' = C / (bh * bw).
// The backward is the inverse permutation. An op of the registry (op_registry.h): each backend
// registers its kernel in its own file.
#pragma once
#include <cstdint>

#include "tensor/tensor.h"
#include "util/check.h"

namespace dlt {

class DepthToSpaceOp;

struct DepthToSpaceDesc {
  using Op = DepthToSpaceOp;
  static constexpr const char* kOp = "depth_to_space";
  int64_t n = 1, h = 1, w = 1, c = 1;  // input
  int64_t bh = 1, bw = 1;              // block
  bool crd = false;                    // CRD ordering (else DCR)
  int64_t out_c() const { return c / (bh * bw); }
  int64_t numel() const { return n * h * w * c; }
  // The input channel output channel k of block position (i, j) reads.
  int64_t source(int64_t i, int64_t j, int64_t k) const {
    return crd ? k * bh * bw + i * bw + j : (i * bw + j) * out_c() + k;
  }
};

// x, y, dy, dx of the descriptor's numel (the same for input and output), on the op's device.
class DepthToSpaceOp {
 public:
  virtual ~DepthToSpaceOp() = default;
  void forward(const Tensor& x, Tensor& y) {
    check(x, "x");
    check(y, "y");
    do_forward(x, y);
  }
  void backward(const Tensor& dy, Tensor& dx) {
    check(dy, "dy");
    check(dx, "dx");
    do_backward(dy, dx);
  }

 protected:
  DepthToSpaceOp(const DepthToSpaceDesc& d, Device device) : desc_(d), device_(device) {
    DLT_CHECK(d.bh >= 1 && d.bw >= 1 && d.c % (d.bh * d.bw) == 0,
              "depth to space: block " << d.bh << "x" << d.bw << " does not divide " << d.c << " channels");
  }
  virtual void do_forward(const Tensor& x, Tensor& y) = 0;
  virtual void do_backward(const Tensor& dy, Tensor& dx) = 0;

 private:
  void check(const Tensor& t, const char* what) const {
    DLT_CHECK(t.defined() && t.device() == device_ && t.numel() == desc_.numel(),
              "depth to space: " << what << " must be " << desc_.numel() << " values on " << device_.str());
  }
  DepthToSpaceDesc desc_;
  Device device_;
};

}  // namespace dlt
