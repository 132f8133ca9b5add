// Adaptive average pooling on the GPU with dltrain's own kernels (cuda_adaptive_pool_kernels.cu).
#include "backend/adaptive_pool_op.h"
#include "backend/cuda/cuda_adaptive_pool_kernels.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_op_util.h"

namespace dlt::cuda {
namespace {

class CudaAdaptivePoolOp final : public AdaptivePoolOp {
 public:
  CudaAdaptivePoolOp(const AdaptivePoolDesc& d, CudaContext& ctx)
      : AdaptivePoolOp(d, Device::cuda(ctx.device)), d_{d.n, d.h, d.w, d.c, d.out_h, d.out_w}, ctx_(ctx) {}

 protected:
  void do_forward(const Tensor& x, Tensor& y) override { adaptive_pool_forward(x.data(), y.data(), d_, ctx_.stream); }
  void do_backward(const Tensor& dy, Tensor& dx) override {
    adaptive_pool_backward(dy.data(), dx.data(), d_, ctx_.stream);
  }

 private:
  AdaptivePoolSizes d_;
  CudaContext& ctx_;
};

std::unique_ptr<AdaptivePoolOp> make_registered(Backend& b, const AdaptivePoolDesc& d) {
  cuda_backend_of(b).enter();
  return std::make_unique<CudaAdaptivePoolOp>(d, cuda_context(b));
}

}  // namespace

DLT_REGISTER_OP(AdaptivePoolDesc, DeviceType::kCuda, "own", 0, make_registered, nullptr);

}  // namespace dlt::cuda
