// The CUDA token data movement (backend/token_ops.h): its kernels in cuda_token_kernels.cu, on
// the compute stream.
#include <cuda_runtime.h>

#include <memory>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/token_ops.h"

namespace dlt::cuda {

// cuda_token_kernels.cu.
void batch_broadcast_add(const float* x, const float* b, float* y, int64_t rows, int64_t length, cudaStream_t stream);
void batch_sum(const float* dy, float* db, int64_t rows, int64_t length, cudaStream_t stream);
void spatial_transpose(const float* from, float* to, int64_t n, int64_t h, int64_t w, int64_t c, bool back,
                       cudaStream_t stream);

namespace {

class CudaBatchBroadcastOp final : public BatchBroadcastOp {
 public:
  CudaBatchBroadcastOp(const BatchBroadcastDesc& d, CudaContext& ctx)
      : BatchBroadcastOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx) {}

 private:
  void do_add(const Tensor* x, const Tensor& b, Tensor& y) override {
    batch_broadcast_add(x ? x->data() : nullptr, b.data(), y.data(), d_.rows, d_.length, ctx_.stream);
  }
  void do_sum(const Tensor& dy, Tensor& db) override {
    batch_sum(dy.data(), db.data(), d_.rows, d_.length, ctx_.stream);
  }

  BatchBroadcastDesc d_;
  CudaContext& ctx_;
};

class CudaSpatialTransposeOp final : public SpatialTransposeOp {
 public:
  CudaSpatialTransposeOp(const SpatialTransposeDesc& d, CudaContext& ctx)
      : SpatialTransposeOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx) {}

 private:
  void do_run(const Tensor& from, Tensor& to, bool back) override {
    spatial_transpose(from.data(), to.data(), d_.n, d_.h, d_.w, d_.c, back, ctx_.stream);
  }

  SpatialTransposeDesc d_;
  CudaContext& ctx_;
};

std::unique_ptr<BatchBroadcastOp> make_broadcast(Backend& b, const BatchBroadcastDesc& d) {
  cuda_backend_of(b).enter();
  return std::make_unique<CudaBatchBroadcastOp>(d, cuda_context(b));
}
std::unique_ptr<SpatialTransposeOp> make_transpose(Backend& b, const SpatialTransposeDesc& d) {
  cuda_backend_of(b).enter();
  return std::make_unique<CudaSpatialTransposeOp>(d, cuda_context(b));
}

}  // namespace

DLT_REGISTER_OP(BatchBroadcastDesc, DeviceType::kCuda, "own", 0, make_broadcast, nullptr);
DLT_REGISTER_OP(SpatialTransposeDesc, DeviceType::kCuda, "own", 0, make_transpose, nullptr);

}  // namespace dlt::cuda
