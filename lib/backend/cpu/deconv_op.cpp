// Transposed convolution on oneDNN's deconvolution primitives (forward, backward data,
// backward weights): NHWC activations, weights (C, kh, kw, K) described to oneDNN by strides
// (its logical order is (K, C, kh, kw)), reordered into the layout each primitive chose and
// kept inside the op. Cropping is oneDNN's deconvolution padding. Float32 only.
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/layout_path.h"

namespace dlt::cpu {
namespace {

using dnnl::algorithm;
using dnnl::prop_kind;

class CpuDeconvOp final : public DeconvOp, public ImplInfo {
 public:
  CpuDeconvOp(const DeconvDesc& d, DnnlContext& ctx) : DeconvOp(d, Device::cpu()), d_(d), ctx_(ctx) {
    const auto& eng = ctx.eng;
    const int64_t oh = d.out_h(), ow = d.out_w();
    DLT_CHECK(oh > 0 && ow > 0, "transposed conv: output " << oh << "x" << ow << " is empty");
    auto x_md = nhwc_md(d.n, d.h, d.w, d.c);
    auto y_md = nhwc_md(d.n, oh, ow, d.k);
    auto b_md = vec_md(d.k);
    // Ours: (C, kh, kw, K) row-major. oneDNN's logical dims: (K, C, kh, kw).
    auto w_user_md = memory::desc({d.k, d.c, d.kh, d.kw}, kF32, memory::dims{1, d.kh * d.kw * d.k, d.kw * d.k, d.k});
    auto w_any = memory::desc({d.k, d.c, d.kh, d.kw}, kF32, Tag::any);
    memory::dims strides{d.stride_h, d.stride_w};
    memory::dims pl{d.crop_t, d.crop_l}, pr{d.crop_b, d.crop_r};

    deconvolution_forward::desc fd(prop_kind::forward_training, algorithm::deconvolution_direct, x_md, w_any, b_md,
                                   y_md, strides, pl, pr);
    fwd_pd_ = deconvolution_forward::primitive_desc(fd, user_scratchpad_attr(), eng);
    deconvolution_backward_data::desc bdd(algorithm::deconvolution_direct, x_md, w_any, y_md, strides, pl, pr);
    bwd_d_pd_ = deconvolution_backward_data::primitive_desc(bdd, user_scratchpad_attr(), eng, fwd_pd_);
    deconvolution_backward_weights::desc bwd(algorithm::deconvolution_direct, x_md, w_any, b_md, y_md, strides, pl, pr);
    bwd_w_pd_ = deconvolution_backward_weights::primitive_desc(bwd, user_scratchpad_attr(), eng, fwd_pd_);
    fwd_ = deconvolution_forward(fwd_pd_);
    bwd_d_ = deconvolution_backward_data(bwd_d_pd_);
    bwd_w_ = deconvolution_backward_weights(bwd_w_pd_);

    w_fwd_.init(w_user_md, fwd_pd_.weights_desc(), eng, true);
    w_bwd_d_.init(w_user_md, bwd_d_pd_.weights_desc(), eng, true);
    dw_.init(w_user_md, bwd_w_pd_.diff_weights_desc(), eng, false);

    pad_.need(fwd_pd_.scratchpad_desc());
    pad_.need(bwd_d_pd_.scratchpad_desc());
    pad_.need(bwd_w_pd_.scratchpad_desc());
    pad_.allocate();

    x_ = unbound(x_md, eng);
    y_ = unbound(y_md, eng);
    b_ = unbound(b_md, eng);
    db_ = unbound(b_md, eng);
    db_own_ = Tensor(Shape{d.k});
    fwd_args_ = {{DNNL_ARG_SRC, x_},
                 {DNNL_ARG_WEIGHTS, w_fwd_.blocked},
                 {DNNL_ARG_BIAS, b_},
                 {DNNL_ARG_DST, y_},
                 {DNNL_ARG_SCRATCHPAD, pad_.memory_for(fwd_pd_.scratchpad_desc(), eng)}};
    bwd_d_args_ = {{DNNL_ARG_DIFF_DST, y_},
                   {DNNL_ARG_WEIGHTS, w_bwd_d_.blocked},
                   {DNNL_ARG_DIFF_SRC, x_},
                   {DNNL_ARG_SCRATCHPAD, pad_.memory_for(bwd_d_pd_.scratchpad_desc(), eng)}};
    bwd_w_args_ = {{DNNL_ARG_SRC, x_},
                   {DNNL_ARG_DIFF_DST, y_},
                   {DNNL_ARG_DIFF_WEIGHTS, dw_.blocked},
                   {DNNL_ARG_DIFF_BIAS, db_},
                   {DNNL_ARG_SCRATCHPAD, pad_.memory_for(bwd_w_pd_.scratchpad_desc(), eng)}};
  }

  std::string impl_info() const override {
    return "fwd=" + impl_of(fwd_pd_) + " bwd_d=" + impl_of(bwd_d_pd_) + " bwd_w=" + impl_of(bwd_w_pd_);
  }

 protected:
  void do_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) override {
    need_bias(b, "transposed conv forward");
    bind(w_fwd_.user, w);
    w_fwd_.run(ctx_.strm);
    bind(x_, x);
    bind(b_, b);
    bind(y_, y);
    fwd_.execute(ctx_.strm, fwd_args_);
    ctx_.strm.wait();
  }

  void do_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) override {
    bind(w_bwd_d_.user, w);
    w_bwd_d_.run(ctx_.strm);
    bind(y_, dy);
    bind(x_, dx);
    bwd_d_.execute(ctx_.strm, bwd_d_args_);
    ctx_.strm.wait();
  }

  void do_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) override {
    bind(x_, x);
    bind(y_, dy);
    bind(db_, db.defined() ? db : db_own_);
    bind(dw_.user, dw);
    bwd_w_.execute(ctx_.strm, bwd_w_args_);
    dw_.run(ctx_.strm);
    ctx_.strm.wait();
  }

 private:
  using deconvolution_forward = dnnl::deconvolution_forward;
  using deconvolution_backward_data = dnnl::deconvolution_backward_data;
  using deconvolution_backward_weights = dnnl::deconvolution_backward_weights;

  DeconvDesc d_;
  DnnlContext& ctx_;
  deconvolution_forward::primitive_desc fwd_pd_;
  deconvolution_backward_data::primitive_desc bwd_d_pd_;
  deconvolution_backward_weights::primitive_desc bwd_w_pd_;
  deconvolution_forward fwd_;
  deconvolution_backward_data bwd_d_;
  deconvolution_backward_weights bwd_w_;
  LayoutPath w_fwd_, w_bwd_d_, dw_;
  Scratchpad pad_;
  memory x_, y_, b_, db_;  // x_/y_ double as diff_src/diff_dst in the backward passes
  Tensor db_own_;          // (K) target for db when the caller passes none
  Args fwd_args_, bwd_d_args_, bwd_w_args_;
};

}  // namespace

static std::unique_ptr<DeconvOp> make_deconv_op(const DeconvDesc& d, DnnlContext& ctx) {
  return std::make_unique<CpuDeconvOp>(d, ctx);
}

namespace {
std::unique_ptr<DeconvOp> make_registered(Backend& b, const DeconvDesc& d) {
  return guarded("transposed convolution", [&] { return make_deconv_op(d, dnnl_context(b)); });
}
}  // namespace

DLT_REGISTER_OP(DeconvDesc, DeviceType::kCpu, "onednn", 0, make_registered, nullptr);

}  // namespace dlt::cpu
