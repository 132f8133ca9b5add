// Channel concatenation of NHWC tensors on the GPU and its backward split: one strided-copy
// kernel per input (its channel run of every pixel), on the context's compute stream.
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_kernels.h"
#include "util/check.h"

namespace dlt::cuda {
namespace {

void expect(const Tensor& t, int64_t numel, Device device, const char* what) {
  DLT_CHECK(t.numel() == numel && t.device() == device,
            what << " has " << t.numel() << " elements on " << t.device().str() << ", expected "
                 << numel << " on " << device.str());
}

class CudaConcatOp final : public ConcatOp {
 public:
  CudaConcatOp(int64_t n, int64_t h, int64_t w, const std::vector<int64_t>& channels,
               CudaContext& ctx)
      : pixels_(n * h * w), channels_(channels), ctx_(ctx) {
    DLT_CHECK(!channels.empty(), "concat: no inputs");
    for (int64_t c : channels) {
      offsets_.push_back(total_);
      total_ += c;
    }
  }

  void forward(const std::vector<const Tensor*>& xs, Tensor& y) override {
    DLT_CHECK(xs.size() == channels_.size(),
              "concat forward: " << xs.size() << " inputs, set up for " << channels_.size());
    const Device dev = Device::cuda(ctx_.device);
    expect(y, pixels_ * total_, dev, "concat forward: y");
    for (size_t i = 0; i < xs.size(); ++i)
      expect(*xs[i], pixels_ * channels_[i], dev, "concat forward: an input");
    use_device(ctx_.device);
    for (size_t i = 0; i < xs.size(); ++i)
      copy_strided(xs[i]->data(), channels_[i], y.data() + offsets_[i], total_, pixels_,
                   channels_[i], ctx_.stream);
  }

  void backward(const Tensor& dy, const std::vector<Tensor*>& dxs) override {
    DLT_CHECK(dxs.size() == channels_.size(),
              "concat backward: " << dxs.size() << " gradients, set up for " << channels_.size());
    const Device dev = Device::cuda(ctx_.device);
    expect(dy, pixels_ * total_, dev, "concat backward: dy");
    for (size_t i = 0; i < dxs.size(); ++i)
      if (dxs[i]) expect(*dxs[i], pixels_ * channels_[i], dev, "concat backward: a gradient");
    use_device(ctx_.device);
    for (size_t i = 0; i < dxs.size(); ++i)
      if (dxs[i])
        copy_strided(dy.data() + offsets_[i], total_, dxs[i]->data(), channels_[i], pixels_,
                     channels_[i], ctx_.stream);
  }

 private:
  int64_t pixels_;                 // N * H * W
  std::vector<int64_t> channels_;  // per input
  std::vector<int64_t> offsets_;   // first channel of each input in y
  int64_t total_ = 0;
  CudaContext& ctx_;
};

}  // namespace

std::unique_ptr<ConcatOp> make_concat_op(int64_t n, int64_t h, int64_t w,
                                         const std::vector<int64_t>& channels, CudaContext& ctx) {
  return std::make_unique<CudaConcatOp>(n, h, w, channels, ctx);
}

}  // namespace dlt::cuda
