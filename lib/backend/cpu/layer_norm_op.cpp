// Layer normalization on oneDNN's layer_normalization primitive (forward training, forward
// inference, backward with use_scale | use_shift) over the (rows, length) matrix of the NHWC
// tensor. channel-only (length = C) hands oneDNN the (C) scale and offset as they are;
// spatial-channel (length = H*W*C) repeats them over the pixels into (length) vectors before
// each call and sums oneDNN's (length) scale and shift gradients back to (C), in double.
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/primitive_sets.h"

namespace dlt::cpu {
namespace {

using dnnl::layer_normalization_backward;
using dnnl::layer_normalization_forward;
using dnnl::normalization_flags;

using LayerNormPrimitives = NormalizationPrimitives<layer_normalization_forward, layer_normalization_backward>;

const normalization_flags kAffine = normalization_flags::use_scale | normalization_flags::use_shift;

class CpuLayerNormOp final : public LayerNormOp, public ImplInfo {
 public:
  CpuLayerNormOp(const LayerNormDesc& d, DnnlContext& ctx)
      : LayerNormOp(d, Device::cpu()),
        d_(d),
        ctx_(ctx),
        tiled_(d.length != d.c),
        norm_(nc_md(d.rows, d.length), vec_md(d.length), d.epsilon, kAffine, kAffine, ctx.eng) {
    const Shape len{d.length};
    if (tiled_) {
      scale_t_ = Tensor(len);
      shift_t_ = Tensor(len);
    }
    dscale_t_ = Tensor(len);
    dshift_t_ = Tensor(len);
    infer_mean_ = Tensor(Shape{d.rows});
    infer_var_ = Tensor(Shape{d.rows});
  }

  std::string impl_info() const override { return norm_.prims.impl_info(); }

 protected:
  void do_forward_training(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y, Tensor& mean,
                           Tensor& var) override {
    norm_.forward_training(ctx_.strm, x, affine(scale, scale_t_), affine(offset, shift_t_), y, mean, var);
  }

  void do_forward_inference(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y) override {
    norm_.forward_inference(ctx_.strm, x, affine(scale, scale_t_), affine(offset, shift_t_), infer_mean_, infer_var_,
                            y);
  }

  void do_backward(const Tensor& x, const Tensor& dy, const Tensor& scale, const Tensor& mean, const Tensor& var,
                   Tensor& dx, Tensor& dscale, Tensor& doffset) override {
    // oneDNN writes (length) gradients: the caller's when they are (C) and wanted, else ours.
    norm_.backward(ctx_.strm, x, dy, affine(scale, scale_t_), mean, var, dx,
                   !tiled_ && dscale.defined() ? dscale : dscale_t_,
                   !tiled_ && doffset.defined() ? doffset : dshift_t_);
    if (!tiled_) return;
    if (dscale.defined()) sum_pixels(dscale_t_, dscale);
    if (doffset.defined()) sum_pixels(dshift_t_, doffset);
  }

 private:
  // The (length) vector oneDNN reads for v (C): v itself, or (tiled_) v repeated into tiled.
  const Tensor& affine(const Tensor& v, Tensor& tiled) const {
    if (!tiled_) return v;
    tile(v, tiled);
    return tiled;
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
  bool tiled_ = false;             // spatial-channel: length > C
  LayerNormPrimitives norm_;       // x (rows, length); scale, shift (length); mean, var (rows)
  Tensor scale_t_, shift_t_;       // (length) scale and offset repeated over the pixels (tiled_)
  Tensor dscale_t_, dshift_t_;     // (length) oneDNN's gradients before the sum over pixels
  Tensor infer_mean_, infer_var_;  // (rows) inference's own statistics
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
