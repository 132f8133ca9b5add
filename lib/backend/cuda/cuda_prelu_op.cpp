// PReLU on the GPU with dltrain's own kernels (cuda_prelu_kernels.cu): the element-wise forward
// and input gradient, the alpha gradient as per-channel sums in the workspace.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_op_util.h"
#include "backend/cuda/cuda_prelu_kernels.h"
#include "backend/prelu_op.h"

namespace dlt::cuda {
namespace {

class CudaPReluOp final : public PReluOp {
 public:
  CudaPReluOp(const PReluDesc& d, CudaContext& ctx) : PReluOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx) {}

 protected:
  void do_forward(const Tensor& x, const Tensor& alpha, Tensor& y) override {
    prelu_forward(x.data(), alpha.data(), y.data(), d_.n * d_.pixels, d_.c, d_.alphas, ctx_.stream);
  }
  void do_backward(const Tensor& x, const Tensor& alpha, const Tensor& dy, Tensor& dx, Tensor& dalpha) override {
    double* sums =
        dalpha.defined() ? static_cast<double*>(ctx_.workspace(static_cast<size_t>(d_.c) * sizeof(double))) : nullptr;
    prelu_backward(x.data(), alpha.data(), dy.data(), dx.data(), dalpha.defined() ? dalpha.data() : nullptr, sums,
                   d_.n * d_.pixels, d_.c, d_.alphas, ctx_.stream);
  }

 private:
  PReluDesc d_;
  CudaContext& ctx_;
};

std::unique_ptr<PReluOp> make_registered(Backend& b, const PReluDesc& d) {
  cuda_backend_of(b).enter();
  return std::make_unique<CudaPReluOp>(d, cuda_context(b));
}

}  // namespace

DLT_REGISTER_OP(PReluDesc, DeviceType::kCuda, "own", 0, make_registered, nullptr);

}  // namespace dlt::cuda
