// Batch normalization on oneDNN (NHWC, per-channel scale/offset, biased batch variance).
// fuse_relu uses oneDNN's fuse_norm_relu: forward writes relu(bn(x)) and keeps a workspace
// mask that backward uses to apply the relu backward itself. global_stats (synchronized batch
// norm) adds use_global_stats to the training forward and the backward: the given mean / var
// are inputs and backward treats them as constants (dx = scale / sigma * dy).
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/primitive_sets.h"

namespace dlt::cpu {
namespace {

using dnnl::batch_normalization_backward;
using dnnl::batch_normalization_forward;
using dnnl::normalization_flags;

using BatchNormPrimitives = NormalizationPrimitives<batch_normalization_forward, batch_normalization_backward>;

normalization_flags inference_flags(const BatchNormDesc& d) {
  auto flags = normalization_flags::use_scale | normalization_flags::use_shift;
  if (d.fuse_relu) flags |= normalization_flags::fuse_norm_relu;
  return flags;
}
// Training forward and backward: global_stats adds use_global_stats.
normalization_flags training_flags(const BatchNormDesc& d) {
  return d.global_stats ? inference_flags(d) | normalization_flags::use_global_stats : inference_flags(d);
}

class CpuBatchNormOp final : public BatchNormOp, public ImplInfo {
 public:
  CpuBatchNormOp(const BatchNormDesc& d, DnnlContext& ctx)
      : BatchNormOp(d, Device::cpu()),
        d_(d),
        ctx_(ctx),
        norm_(nhwc_md(d.n, d.h, d.w, d.c), vec_md(d.c), d.epsilon, training_flags(d),
              inference_flags(d) | normalization_flags::use_global_stats, ctx.eng) {
    const auto& eng = ctx.eng;
    auto ws_md = norm_.prims.train_pd.workspace_desc();
    if (ws_md.get_size() > 0) {
      ws_buf_ = host_buffer(ws_md.get_size());
      memory ws(ws_md, eng, ws_buf_.data());
      norm_.train_args[DNNL_ARG_WORKSPACE] = ws;
      norm_.bwd_args[DNNL_ARG_WORKSPACE] = ws;
    }
    auto infer_ws_md = norm_.prims.infer_pd.workspace_desc();
    if (infer_ws_md.get_size() > 0) {
      infer_ws_buf_ = host_buffer(infer_ws_md.get_size());
      norm_.infer_args[DNNL_ARG_WORKSPACE] = memory(infer_ws_md, eng, infer_ws_buf_.data());
    }
    dscale_own_ = Tensor(Shape{d.c});
    dshift_own_ = Tensor(Shape{d.c});
  }

  std::string impl_info() const override { return norm_.prims.impl_info(); }

 protected:
  void do_forward_training(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y, Tensor& mean,
                           Tensor& var) override {
    norm_.forward_training(ctx_.strm, x, scale, offset, y, mean, var);
  }

  void do_forward_inference(const Tensor& x, const Tensor& scale, const Tensor& offset, const Tensor& mean,
                            const Tensor& var, Tensor& y) override {
    norm_.forward_inference(ctx_.strm, x, scale, offset, mean, var, y);
  }

  void do_backward(const Tensor& x, const Tensor& dy, const Tensor& scale, const Tensor& mean, const Tensor& var,
                   Tensor& dx, Tensor& dscale, Tensor& doffset) override {
    norm_.backward(ctx_.strm, x, dy, scale, mean, var, dx, dscale.defined() ? dscale : dscale_own_,
                   doffset.defined() ? doffset : dshift_own_);
  }

 private:
  BatchNormDesc d_;
  DnnlContext& ctx_;
  BatchNormPrimitives norm_;        // x (N, H, W, C); scale, shift, mean, var (C)
  Tensor ws_buf_, infer_ws_buf_;    // relu masks of fuse_norm_relu
  Tensor dscale_own_, dshift_own_;  // (C) targets when the caller passes none
};

}  // namespace

static std::unique_ptr<BatchNormOp> make_batch_norm_op(const BatchNormDesc& d, DnnlContext& ctx) {
  return std::make_unique<CpuBatchNormOp>(d, ctx);
}

namespace {
std::unique_ptr<BatchNormOp> make_registered(Backend& b, const BatchNormDesc& d) {
  return guarded("batch normalization", [&] { return make_batch_norm_op(d, dnnl_context(b)); });
}
}  // namespace

DLT_REGISTER_OP(BatchNormDesc, DeviceType::kCpu, "onednn", 0, make_registered, nullptr);

}  // namespace dlt::cpu
