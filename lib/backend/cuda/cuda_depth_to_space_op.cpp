// The CUDA depth to space (backend/depth_to_space_op.h): its kernel in
// cuda_depth_to_space_kernels.cu, on the compute stream.
#include <cuda_runtime.h>

#include <memory>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/depth_to_space_op.h"

namespace dlt::cuda {

// cuda_depth_to_space_kernels.cu: forward, y[i] = x[source(i)]; else dx[source(i)] = dy[i].
void depth_to_space(const float* from, float* to, int64_t n, int64_t h, int64_t w, int64_t c, int64_t bh, int64_t bw,
                    bool crd, bool forward, cudaStream_t stream);

namespace {

class CudaDepthToSpaceOp final : public DepthToSpaceOp {
 public:
  CudaDepthToSpaceOp(const DepthToSpaceDesc& d, CudaContext& ctx)
      : DepthToSpaceOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx) {}

 private:
  void run(const Tensor& from, Tensor& to, bool forward) {
    depth_to_space(from.data(), to.data(), d_.n, d_.h, d_.w, d_.c, d_.bh, d_.bw, d_.crd, forward, ctx_.stream);
  }
  void do_forward(const Tensor& x, Tensor& y) override { run(x, y, true); }
  void do_backward(const Tensor& dy, Tensor& dx) override { run(dy, dx, false); }

  DepthToSpaceDesc d_;
  CudaContext& ctx_;
};

std::unique_ptr<DepthToSpaceOp> make(Backend& b, const DepthToSpaceDesc& d) {
  cuda_backend_of(b).enter();
  return std::make_unique<CudaDepthToSpaceOp>(d, cuda_context(b));
}

}  // namespace

DLT_REGISTER_OP(DepthToSpaceDesc, DeviceType::kCuda, "own", 0, make, nullptr);

}  // namespace dlt::cuda
