// Channel concatenation of NHWC tensors on the GPU and its backward split: one strided-copy
// kernel per input (its channel run of every pixel), on the context's compute stream.
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_kernels.h"
#include "util/check.h"

namespace dlt::cuda {
namespace {

class CudaConcatOp final : public ConcatOp {
 public:
  CudaConcatOp(int64_t n, int64_t h, int64_t w, const std::vector<int64_t>& channels, CudaContext& ctx)
      : ConcatOp(ConcatDesc{n, h, w, channels}, Device::cuda(ctx.device)),
        pixels_(n * h * w),
        channels_(channels),
        ctx_(ctx) {
    for (int64_t c : channels) {
      offsets_.push_back(total_);
      total_ += c;
    }
  }

 protected:
  void do_forward(const std::vector<const Tensor*>& xs, Tensor& y) override {
    use_device(ctx_.device);
    for (size_t i = 0; i < xs.size(); ++i)
      copy_strided(xs[i]->data(), channels_[i], y.data() + offsets_[i], total_, pixels_, channels_[i], ctx_.stream);
  }

  void do_backward(const Tensor& dy, const std::vector<Tensor*>& dxs) override {
    use_device(ctx_.device);
    for (size_t i = 0; i < dxs.size(); ++i)
      if (dxs[i])
        copy_strided(dy.data() + offsets_[i], total_, dxs[i]->data(), channels_[i], pixels_, channels_[i], ctx_.stream);
  }

 private:
  int64_t pixels_;                 // N * H * W
  std::vector<int64_t> channels_;  // per input
  std::vector<int64_t> offsets_;   // first channel of each input in y
  int64_t total_ = 0;
  CudaContext& ctx_;
};

}  // namespace

static std::unique_ptr<ConcatOp> make_concat_op(int64_t n, int64_t h, int64_t w, const std::vector<int64_t>& channels,
                                                CudaContext& ctx) {
  return std::make_unique<CudaConcatOp>(n, h, w, channels, ctx);
}

namespace {
std::unique_ptr<ConcatOp> make_registered(Backend& b, const ConcatDesc& d) {
  cuda_backend_of(b).enter();
  return make_concat_op(d.n, d.h, d.w, d.channels, cuda_context(b));
}
}  // namespace

DLT_REGISTER_OP(ConcatDesc, DeviceType::kCuda, "own", 0, make_registered, nullptr);

}  // namespace dlt::cuda
