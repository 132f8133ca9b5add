// Group normalization on the GPU with dltrain's own kernels (cuda_group_norm_kernels.cu; cuDNN's
// legacy API has none): the statistics per image and group (training keeps them for backward,
// inference in the workspace), the normalization with the per-channel scale and offset, and the
// backward's per-group sums, dx and the per-channel parameter gradients.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_group_norm_kernels.h"
#include "backend/cuda/cuda_op_util.h"
#include "backend/group_norm_op.h"

namespace dlt::cuda {
namespace {

class CudaGroupNormOp final : public GroupNormOp {
 public:
  CudaGroupNormOp(const GroupNormDesc& d, CudaContext& ctx)
      : GroupNormOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx) {}

 protected:
  void do_forward(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y, Tensor* mean,
                  Tensor* var) override {
    float *m = nullptr, *v = nullptr;
    if (mean) {
      m = mean->data();
      v = var->data();
    } else {  // inference: the statistics in the workspace
      m = static_cast<float*>(ctx_.workspace(2 * static_cast<size_t>(d_.stats()) * sizeof(float)));
      v = m + d_.stats();
    }
    group_norm_stats(x.data(), m, v, d_.n, d_.pixels, d_.c, d_.groups, ctx_.stream);
    group_norm_apply(x.data(), m, v, scale.data(), offset.data(), y.data(), d_.n, d_.pixels, d_.c, d_.groups,
                     d_.epsilon, ctx_.stream);
  }

  void do_backward(const Tensor& x, const Tensor& dy, const Tensor& scale, const Tensor& mean, const Tensor& var,
                   Tensor& dx, Tensor& dscale, Tensor& doffset) override {
    if (dscale.defined() || doffset.defined())
      group_norm_backward_params(
          x.data(), dy.data(), mean.data(), var.data(), dscale.defined() ? dscale.data() : nullptr,
          doffset.defined() ? doffset.data() : nullptr, d_.n, d_.pixels, d_.c, d_.groups, d_.epsilon, ctx_.stream);
    auto* sums = static_cast<double*>(ctx_.workspace(2 * static_cast<size_t>(d_.stats()) * sizeof(double)));
    group_norm_backward_data(x.data(), dy.data(), scale.data(), mean.data(), var.data(), dx.data(), sums, d_.n,
                             d_.pixels, d_.c, d_.groups, d_.epsilon, ctx_.stream);
  }

 private:
  GroupNormDesc d_;
  CudaContext& ctx_;
};

std::unique_ptr<GroupNormOp> make_registered(Backend& b, const GroupNormDesc& d) {
  cuda_backend_of(b).enter();
  return std::make_unique<CudaGroupNormOp>(d, cuda_context(b));
}

}  // namespace

DLT_REGISTER_OP(GroupNormDesc, DeviceType::kCuda, "own", 0, make_registered, nullptr);

}  // namespace dlt::cuda
