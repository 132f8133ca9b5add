// Layer normalization on oneDNN's layer_normalization primitive (forward training, forward
// inference, backward with use_scale | use_shift) over the (rows, length) matrix of the NHWC
// tensor. channel-only (length = C) hands oneDNN the (C) scale and offset as they are;
// spatial-channel (length = H*W*C) repeats them over the pixels into (length) vectors before
// each call and sums oneDNN's (length) scale and shift gradients back to (C), in double.
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"

namespace dlt::cpu {
namespace {

using dnnl::layer_normalization_backward;
using dnnl::layer_normalization_forward;
using dnnl::normalization_flags;
using dnnl::prop_kind;

class CpuLayerNormOp final : public LayerNormOp, public ImplInfo {
 public:
  CpuLayerNormOp(const LayerNormDesc& d, DnnlContext& ctx) : LayerNormOp(d, Device::cpu()), d_(d), ctx_(ctx) {
    const auto& eng = ctx.eng;
    const memory::desc x_md = nc_md(d.rows, d.length), s_md = vec_md(d.length);
    const auto flags = normalization_flags::use_scale | normalization_flags::use_shift;
    layer_normalization_forward::desc train_d(prop_kind::forward_training, x_md, d.epsilon, flags);
    layer_normalization_forward::desc infer_d(prop_kind::forward_inference, x_md, d.epsilon, flags);
    layer_normalization_backward::desc bwd_d(prop_kind::backward, x_md, x_md, d.epsilon, flags);
    train_pd_ = layer_normalization_forward::primitive_desc(train_d, user_scratchpad_attr(), eng);
    infer_pd_ = layer_normalization_forward::primitive_desc(infer_d, user_scratchpad_attr(), eng);
    bwd_pd_ = layer_normalization_backward::primitive_desc(bwd_d, user_scratchpad_attr(), eng, train_pd_);
    train_ = layer_normalization_forward(train_pd_);
    infer_ = layer_normalization_forward(infer_pd_);
    bwd_ = layer_normalization_backward(bwd_pd_);
    pad_.need(train_pd_.scratchpad_desc());
    pad_.need(infer_pd_.scratchpad_desc());
    pad_.need(bwd_pd_.scratchpad_desc());
    pad_.allocate();

    const memory::desc stat_md = train_pd_.mean_desc();
    x_ = unbound(x_md, eng);
    y_ = unbound(x_md, eng);
    dx_ = unbound(x_md, eng);
    scale_ = unbound(s_md, eng);
    shift_ = unbound(s_md, eng);
    dscale_ = unbound(s_md, eng);
    dshift_ = unbound(s_md, eng);
    mean_ = unbound(stat_md, eng);
    var_ = unbound(stat_md, eng);
    tiled_ = d.length != d.c;
    const Shape len{d.length};
    if (tiled_) {
      scale_t_ = Tensor(len);
      shift_t_ = Tensor(len);
    }
    dscale_t_ = Tensor(len);
    dshift_t_ = Tensor(len);
    shift_unused_ = Tensor::zeros(len);
    infer_mean_ = Tensor(Shape{d.rows});
    infer_var_ = Tensor(Shape{d.rows});
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
                   {DNNL_ARG_MEAN, memory(stat_md, eng, infer_mean_.data())},
                   {DNNL_ARG_VARIANCE, memory(stat_md, eng, infer_var_.data())},
                   {DNNL_ARG_SCRATCHPAD, pad_.memory_for(infer_pd_.scratchpad_desc(), eng)}};
    bwd_args_ = {{DNNL_ARG_SRC, x_},
                 {DNNL_ARG_DIFF_DST, y_},
                 {DNNL_ARG_SCALE, scale_},
                 {DNNL_ARG_SHIFT, memory(s_md, eng, shift_unused_.data())},
                 {DNNL_ARG_MEAN, mean_},
                 {DNNL_ARG_VARIANCE, var_},
                 {DNNL_ARG_DIFF_SRC, dx_},
                 {DNNL_ARG_DIFF_SCALE, dscale_},
                 {DNNL_ARG_DIFF_SHIFT, dshift_},
                 {DNNL_ARG_SCRATCHPAD, pad_.memory_for(bwd_pd_.scratchpad_desc(), eng)}};
  }

  std::string impl_info() const override {
    return "fwd=" + impl_of(train_pd_) + " infer=" + impl_of(infer_pd_) + " bwd=" + impl_of(bwd_pd_);
  }

 protected:
  void do_forward_training(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y, Tensor& mean,
                           Tensor& var) override {
    bind_affine(scale, offset);
    bind(x_, x);
    bind(y_, y);
    bind(mean_, mean);
    bind(var_, var);
    train_.execute(ctx_.strm, train_args_);
    ctx_.strm.wait();
  }

  void do_forward_inference(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y) override {
    bind_affine(scale, offset);
    bind(x_, x);
    bind(y_, y);
    infer_.execute(ctx_.strm, infer_args_);
    ctx_.strm.wait();
  }

  void do_backward(const Tensor& x, const Tensor& dy, const Tensor& scale, const Tensor& mean, const Tensor& var,
                   Tensor& dx, Tensor& dscale, Tensor& doffset) override {
    if (tiled_) {
      tile(scale, scale_t_);
      bind(scale_, scale_t_);
    } else {
      bind(scale_, scale);
    }
    bind(x_, x);
    bind(y_, dy);
    bind(dx_, dx);
    bind(mean_, mean);
    bind(var_, var);
    // oneDNN writes (length) gradients: the caller's when they are (C) and wanted, else ours.
    bind(dscale_, !tiled_ && dscale.defined() ? dscale : dscale_t_);
    bind(dshift_, !tiled_ && doffset.defined() ? doffset : dshift_t_);
    bwd_.execute(ctx_.strm, bwd_args_);
    ctx_.strm.wait();
    if (!tiled_) return;
    if (dscale.defined()) sum_pixels(dscale_t_, dscale);
    if (doffset.defined()) sum_pixels(dshift_t_, doffset);
  }

 private:
  void bind_affine(const Tensor& scale, const Tensor& offset) {
    if (!tiled_) {
      bind(scale_, scale);
      bind(shift_, offset);
      return;
    }
    tile(scale, scale_t_);
    tile(offset, shift_t_);
    bind(scale_, scale_t_);
    bind(shift_, shift_t_);
  }
  // out (length) = v (C) repeated over the pixels.
  void tile(const Tensor& v, Tensor& out) const {
    const float* src = v.data();
    float* dst = out.data();
    for (int64_t j = 0; j < d_.length; ++j) dst[j] = src[j % d_.c];
  }
  // out (C) = the sum of g (length) over the pixels, in pixel order.
  void sum_pixels(const Tensor& g, Tensor& out) const {
    std::vector<double> acc(static_cast<size_t>(d_.c), 0.0);
    const float* src = g.data();
    for (int64_t j = 0; j < d_.length; ++j) acc[static_cast<size_t>(j % d_.c)] += src[j];
    for (int64_t ch = 0; ch < d_.c; ++ch) out.data()[ch] = static_cast<float>(acc[static_cast<size_t>(ch)]);
  }

  LayerNormDesc d_;
  DnnlContext& ctx_;
  bool tiled_ = false;  // spatial-channel: length > C
  layer_normalization_forward::primitive_desc train_pd_, infer_pd_;
  layer_normalization_backward::primitive_desc bwd_pd_;
  layer_normalization_forward train_, infer_;
  layer_normalization_backward bwd_;
  Scratchpad pad_;
  memory x_, y_, dx_;                       // (rows, length)
  memory scale_, shift_, dscale_, dshift_;  // (length)
  memory mean_, var_;                       // (rows)
  Tensor scale_t_, shift_t_;                // (length) scale and offset repeated over the pixels (tiled_)
  Tensor dscale_t_, dshift_t_;              // (length) oneDNN's gradients before the sum over pixels
  Tensor shift_unused_;                     // (length) zeros: backward asks for a shift it does not read
  Tensor infer_mean_, infer_var_;           // (rows) inference's own statistics
  Args train_args_, infer_args_, bwd_args_;
};

}  // namespace

static std::unique_ptr<LayerNormOp> make_layer_norm_op(const LayerNormDesc& d, DnnlContext& ctx) {
  return std::make_unique<CpuLayerNormOp>(d, ctx);
}

namespace {
std::unique_ptr<LayerNormOp> make_registered(Backend& b, const LayerNormDesc& d) {
  return guarded("layer normalization", [&] { return make_layer_norm_op(d, dnnl_context(b)); });
}
}  // namespace

DLT_REGISTER_OP(LayerNormDesc, DeviceType::kCpu, "onednn", 0, make_registered, nullptr);

}  // namespace dlt::cpu
