// The CPU's depth to space (backend/depth_to_space_op.h): per-row data movement in plain loops,
// parallel over the input's rows (no arithmetic: each output value is one input value).
#include <memory>

#include "backend/backend.h"
#include "backend/depth_to_space_op.h"

namespace dlt::cpu {
namespace {

class CpuDepthToSpaceOp final : public DepthToSpaceOp {
 public:
  explicit CpuDepthToSpaceOp(const DepthToSpaceDesc& d) : DepthToSpaceOp(d, Device::cpu()), d_(d) {}

 private:
  // For each input pixel (n, h, w) and block position (i, j): the C' output channels of output
  // pixel (n, h * bh + i, w * bw + j), from the input channels source(i, j, k). to_output:
  // forward (gather into y), else backward (scatter back into dx).
  void move(const float* from, float* to, bool to_output) const {
    const int64_t oc = d_.out_c(), ow = d_.w * d_.bw;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < d_.n; ++n)
      for (int64_t h = 0; h < d_.h; ++h)
        for (int64_t i = 0; i < d_.bh; ++i)
          for (int64_t w = 0; w < d_.w; ++w)
            for (int64_t j = 0; j < d_.bw; ++j) {
              const int64_t in_pixel = ((n * d_.h + h) * d_.w + w) * d_.c;
              const int64_t out_pixel = ((n * d_.h * d_.bh + h * d_.bh + i) * ow + w * d_.bw + j) * oc;
              for (int64_t k = 0; k < oc; ++k) {
                const int64_t src = in_pixel + d_.source(i, j, k), dst = out_pixel + k;
                if (to_output)
                  to[dst] = from[src];
                else
                  to[src] = from[dst];
              }
            }
  }
  void do_forward(const Tensor& x, Tensor& y) override { move(x.data(), y.data(), true); }
  void do_backward(const Tensor& dy, Tensor& dx) override { move(dy.data(), dx.data(), false); }

  DepthToSpaceDesc d_;
};

std::unique_ptr<DepthToSpaceOp> make(Backend&, const DepthToSpaceDesc& d) {
  return std::make_unique<CpuDepthToSpaceOp>(d);
}

}  // namespace

DLT_REGISTER_OP(DepthToSpaceDesc, DeviceType::kCpu, "own", 0, make, nullptr);

}  // namespace dlt::cpu
