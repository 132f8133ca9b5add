// Layer normalization on the GPU with dltrain's own kernels (cuda_layer_norm_kernels.cu; cuDNN's
// legacy API has no layer normalization): forward (training writes each row's mean and
// variance), backward data through the row statistics, and the scale / offset gradients as a
// deterministic per-channel sum.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_layer_norm_kernels.h"
#include "backend/cuda/cuda_op_util.h"

namespace dlt::cuda {
namespace {

class CudaLayerNormOp final : public LayerNormOp {
 public:
  CudaLayerNormOp(const LayerNormDesc& d, CudaContext& ctx)
      : LayerNormOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx) {}

 protected:
  void do_forward_training(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y, Tensor& mean,
                           Tensor& var) override {
    layer_norm_forward(x.data(), scale.data(), offset.data(), y.data(), mean.data(), var.data(), d_.rows, d_.length,
                       d_.c, d_.epsilon, ctx_.stream);
  }

  void do_forward_inference(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y) override {
    layer_norm_forward(x.data(), scale.data(), offset.data(), y.data(), nullptr, nullptr, d_.rows, d_.length, d_.c,
                       d_.epsilon, ctx_.stream);
  }

  void do_backward(const Tensor& x, const Tensor& dy, const Tensor& scale, const Tensor& mean, const Tensor& var,
                   Tensor& dx, Tensor& dscale, Tensor& doffset) override {
    if (dscale.defined() || doffset.defined()) {
      auto* partials =
          static_cast<double*>(ctx_.workspace(layer_norm_param_scratch(d_.rows, d_.length, d_.c) * sizeof(double)));
      layer_norm_backward_params(
          x.data(), dy.data(), mean.data(), var.data(), dscale.defined() ? dscale.data() : nullptr,
          doffset.defined() ? doffset.data() : nullptr, partials, d_.rows, d_.length, d_.c, d_.epsilon, ctx_.stream);
    }
    layer_norm_backward_data(x.data(), dy.data(), scale.data(), mean.data(), var.data(), dx.data(), d_.rows, d_.length,
                             d_.c, d_.epsilon, ctx_.stream);
  }

 private:
  LayerNormDesc d_;
  CudaContext& ctx_;
};

}  // namespace

static std::unique_ptr<LayerNormOp> make_layer_norm_op(const LayerNormDesc& d, CudaContext& ctx) {
  return std::make_unique<CudaLayerNormOp>(d, ctx);
}

namespace {
std::unique_ptr<LayerNormOp> make_registered(Backend& b, const LayerNormDesc& d) {
  cuda_backend_of(b).enter();
  return make_layer_norm_op(d, cuda_context(b));
}
}  // namespace

DLT_REGISTER_OP(LayerNormDesc, DeviceType::kCuda, "own", 0, make_registered, nullptr);

}  // namespace dlt::cuda
