// Batch normalization on oneDNN (NHWC, per-channel scale/offset, biased batch variance).
// fuse_relu uses oneDNN's fuse_norm_relu: forward writes relu(bn(x)) and keeps a workspace
// mask that backward uses to apply the relu backward itself. global_stats (synchronized batch
// norm) adds use_global_stats to the training forward and the backward: the given mean / var
// are inputs and backward treats them as constants (dx = scale / sigma * dy).
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"

namespace dlt::cpu {
namespace {

using dnnl::batch_normalization_backward;
using dnnl::batch_normalization_forward;
using dnnl::normalization_flags;
using dnnl::prop_kind;

class CpuBatchNormOp final : public BatchNormOp, public ImplInfo {
 public:
  CpuBatchNormOp(const BatchNormDesc& d, DnnlContext& ctx) : BatchNormOp(d, Device::cpu()), d_(d), ctx_(ctx) {
    const auto& eng = ctx.eng;
    auto x_md = nhwc_md(d.n, d.h, d.w, d.c);
    auto c_md = vec_md(d.c);
    auto flags = normalization_flags::use_scale | normalization_flags::use_shift;
    if (d.fuse_relu) flags |= normalization_flags::fuse_norm_relu;
    auto train_flags = d.global_stats ? flags | normalization_flags::use_global_stats : flags;
    batch_normalization_forward::desc train_d(prop_kind::forward_training, x_md, d.epsilon, train_flags);
    batch_normalization_forward::desc infer_d(prop_kind::forward_inference, x_md, d.epsilon,
                                              flags | normalization_flags::use_global_stats);
    batch_normalization_backward::desc bwd_d(prop_kind::backward, x_md, x_md, d.epsilon, train_flags);
    train_pd_ = batch_normalization_forward::primitive_desc(train_d, user_scratchpad_attr(), eng);
    infer_pd_ = batch_normalization_forward::primitive_desc(infer_d, user_scratchpad_attr(), eng);
    bwd_pd_ = batch_normalization_backward::primitive_desc(bwd_d, user_scratchpad_attr(), eng, train_pd_);
    train_ = batch_normalization_forward(train_pd_);
    infer_ = batch_normalization_forward(infer_pd_);
    bwd_ = batch_normalization_backward(bwd_pd_);
    pad_.need(train_pd_.scratchpad_desc());
    pad_.need(infer_pd_.scratchpad_desc());
    pad_.need(bwd_pd_.scratchpad_desc());
    pad_.allocate();

    shift_unused_ = Tensor::zeros(Shape{d.c});
    x_ = unbound(x_md, eng);
    y_ = unbound(x_md, eng);
    dx_ = unbound(x_md, eng);
    scale_ = unbound(c_md, eng);
    shift_ = unbound(c_md, eng);
    mean_ = unbound(c_md, eng);
    var_ = unbound(c_md, eng);
    dscale_ = unbound(c_md, eng);
    dshift_ = unbound(c_md, eng);
    train_args_ = {{DNNL_ARG_SRC, x_},
                   {DNNL_ARG_SCALE, scale_},
                   {DNNL_ARG_SHIFT, shift_},
                   {DNNL_ARG_DST, y_},
                   {DNNL_ARG_MEAN, mean_},
                   {DNNL_ARG_VARIANCE, var_},
                   {DNNL_ARG_SCRATCHPAD, pad_.memory_for(train_pd_.scratchpad_desc(), eng)}};
    infer_args_ = {{DNNL_ARG_SRC, x_},
                   {DNNL_ARG_SCALE, scale_},
                   {DNNL_ARG_SHIFT, shift_},
                   {DNNL_ARG_DST, y_},
                   {DNNL_ARG_MEAN, mean_},
                   {DNNL_ARG_VARIANCE, var_},
                   {DNNL_ARG_SCRATCHPAD, pad_.memory_for(infer_pd_.scratchpad_desc(), eng)}};
    bwd_args_ = {{DNNL_ARG_SRC, x_},
                 {DNNL_ARG_DIFF_DST, y_},
                 {DNNL_ARG_SCALE, scale_},
                 {DNNL_ARG_SHIFT, memory(c_md, eng, shift_unused_.data())},
                 {DNNL_ARG_MEAN, mean_},
                 {DNNL_ARG_VARIANCE, var_},
                 {DNNL_ARG_DIFF_SRC, dx_},
                 {DNNL_ARG_DIFF_SCALE, dscale_},
                 {DNNL_ARG_DIFF_SHIFT, dshift_},
                 {DNNL_ARG_SCRATCHPAD, pad_.memory_for(bwd_pd_.scratchpad_desc(), eng)}};
    auto ws_md = train_pd_.workspace_desc();
    if (ws_md.get_size() > 0) {
      ws_buf_ = host_buffer(ws_md.get_size());
      memory ws(ws_md, eng, ws_buf_.data());
      train_args_[DNNL_ARG_WORKSPACE] = ws;
      bwd_args_[DNNL_ARG_WORKSPACE] = ws;
    }
    auto infer_ws_md = infer_pd_.workspace_desc();
    if (infer_ws_md.get_size() > 0) {
      infer_ws_buf_ = host_buffer(infer_ws_md.get_size());
      infer_args_[DNNL_ARG_WORKSPACE] = memory(infer_ws_md, eng, infer_ws_buf_.data());
    }
    dscale_own_ = Tensor(Shape{d.c});
    dshift_own_ = Tensor(Shape{d.c});
  }

  std::string impl_info() const override {
    return "fwd=" + impl_of(train_pd_) + " infer=" + impl_of(infer_pd_) + " bwd=" + impl_of(bwd_pd_);
  }

 protected:
  void do_forward_training(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y, Tensor& mean,
                           Tensor& var) override {
    bind(x_, x);
    bind(y_, y);
    bind(scale_, scale);
    bind(shift_, offset);
    bind(mean_, mean);
    bind(var_, var);
    train_.execute(ctx_.strm, train_args_);
    ctx_.strm.wait();
  }

  void do_forward_inference(const Tensor& x, const Tensor& scale, const Tensor& offset, const Tensor& mean,
                            const Tensor& var, Tensor& y) override {
    bind(x_, x);
    bind(y_, y);
    bind(scale_, scale);
    bind(shift_, offset);
    bind(mean_, mean);
    bind(var_, var);
    infer_.execute(ctx_.strm, infer_args_);
    ctx_.strm.wait();
  }

  void do_backward(const Tensor& x, const Tensor& dy, const Tensor& scale, const Tensor& mean, const Tensor& var,
                   Tensor& dx, Tensor& dscale, Tensor& doffset) override {
    bind(x_, x);
    bind(y_, dy);
    bind(dx_, dx);
    bind(scale_, scale);
    bind(mean_, mean);
    bind(var_, var);
    bind(dscale_, dscale.defined() ? dscale : dscale_own_);
    bind(dshift_, doffset.defined() ? doffset : dshift_own_);
    bwd_.execute(ctx_.strm, bwd_args_);
    ctx_.strm.wait();
  }

 private:
  BatchNormDesc d_;
  DnnlContext& ctx_;
  batch_normalization_forward::primitive_desc train_pd_, infer_pd_;
  batch_normalization_backward::primitive_desc bwd_pd_;
  batch_normalization_forward train_, infer_;
  batch_normalization_backward bwd_;
  Scratchpad pad_;
  memory x_, y_, dx_;                                    // (N, H, W, C)
  memory scale_, shift_, mean_, var_, dscale_, dshift_;  // (C)
  Tensor ws_buf_, infer_ws_buf_;                         // relu masks of fuse_norm_relu
  Tensor dscale_own_, dshift_own_;                       // (C) targets when the caller passes none
  Tensor shift_unused_;                                  // (C) zeros: oneDNN's backward asks for a shift it ignores
  Args train_args_, infer_args_, bwd_args_;
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
