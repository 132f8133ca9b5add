// The CUDA separable self-attention (backend/separable_attention_op.h): its kernels in
// cuda_separable_attention_kernels.cu, on the compute stream.
#include <cuda_runtime.h>

#include <memory>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/separable_attention_op.h"

namespace dlt::cuda {

// cuda_separable_attention_kernels.cu.
void separable_attention_forward(const float* x, float* y, float* scores, float* context, int64_t n, int64_t h,
                                 int64_t w, int64_t c, int64_t ph, int64_t pw, cudaStream_t stream);
void separable_attention_backward(const float* x, const float* dy, const float* scores, const float* context, float* dx,
                                  int64_t n, int64_t h, int64_t w, int64_t c, int64_t ph, int64_t pw,
                                  cudaStream_t stream);

namespace {

// The backward keeps a group's context gradient (c floats) in shared memory.
constexpr int64_t kMaxChannels = 12288;

class CudaSeparableAttentionOp final : public SeparableAttentionOp {
 public:
  CudaSeparableAttentionOp(const SeparableAttentionDesc& d, CudaContext& ctx)
      : SeparableAttentionOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx) {}

 private:
  void do_forward(const Tensor& x, Tensor& y, Tensor& scores, Tensor& context) override {
    separable_attention_forward(x.data(), y.data(), scores.data(), context.data(), d_.n, d_.h, d_.w, d_.c, d_.ph, d_.pw,
                                ctx_.stream);
  }
  void do_backward(const Tensor& x, const Tensor& dy, const Tensor& scores, const Tensor& context,
                   Tensor& dx) override {
    separable_attention_backward(x.data(), dy.data(), scores.data(), context.data(), dx.data(), d_.n, d_.h, d_.w, d_.c,
                                 d_.ph, d_.pw, ctx_.stream);
  }

  SeparableAttentionDesc d_;
  CudaContext& ctx_;
};

bool accepts(const Backend&, const SeparableAttentionDesc& d) { return d.c <= kMaxChannels; }

std::unique_ptr<SeparableAttentionOp> make(Backend& b, const SeparableAttentionDesc& d) {
  cuda_backend_of(b).enter();
  return std::make_unique<CudaSeparableAttentionOp>(d, cuda_context(b));
}

}  // namespace

DLT_REGISTER_OP(SeparableAttentionDesc, DeviceType::kCuda, "own", 0, make, accepts);

}  // namespace dlt::cuda
