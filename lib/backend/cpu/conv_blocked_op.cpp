// Convolution on blocked activations: the op reorders NHWC <-> the blocked layout oneDNN
// chooses around each primitive and keeps forward's blocked input for the weight gradient.
// Two uses, tried by make_conv_op before the NHWC op (conv_op.cpp):
// - Winograd (oneDNN's jit_wino_4x3, AVX-512 only) for 3x3 stride-1 convolutions with
//   symmetric padding 0 or 1: about 2.6x fewer cycles than direct convolution for all three
//   passes, against 3-5 ms of reorders for a 128x32x32x64 tensor. Results differ from direct
//   convolution by ~1e-6 relative (Winograd's transforms round differently).
// - Direct convolution below AVX-512 for 3x3 stride-1 layers with 64+ input and output
//   channels: oneDNN 2.6's jit:avx2 kernels run those faster on nChw8c than on NHWC, by more
//   than the reorders cost (docs/performance.md, "AVX2: what runs there"). CPUs with AVX2 and
//   FMA run those layers in dltrain's own Winograd instead (conv_winograd_op.cpp); this path
//   is for AVX2 without FMA.
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/layout_path.h"

namespace dlt::cpu {
namespace {

using dnnl::algorithm;
using dnnl::prop_kind;
using convolution_forward = dnnl::convolution_forward;
using convolution_backward_data = dnnl::convolution_backward_data;
using convolution_backward_weights = dnnl::convolution_backward_weights;

bool winograd_eligible(const ConvDesc& d) {
  // Dense convolutions only (grouped ones run in conv_op.cpp).
  if (d.groups != 1) return false;
  // oneDNN 2.6's Winograd backward-data is wrong with asymmetric padding (measured against
  // the reference in tests/backend), so only symmetric padding of 0 or 1 takes this path.
  const bool symmetric = d.pad_t == d.pad_b && d.pad_l == d.pad_r && d.pad_t == d.pad_l && d.pad_t <= 1;
  return d.kh == 3 && d.kw == 3 && d.stride_h == 1 && d.stride_w == 1 && d.dilation_h == 1 && d.dilation_w == 1 &&
         symmetric && d.c >= 32 && d.k >= 32 && d.c % 16 == 0 && d.k % 16 == 0;
}

// Measured on AVX2 only (an AVX-512 CPU runs its brgconv kernels on NHWC as fast).
bool blocked_direct_eligible(const ConvDesc& d, const CpuIsa& isa) {
  if (d.bf16 || d.groups != 1 || !isa.avx2 || isa.avx512) return false;
  return d.kh == 3 && d.kw == 3 && d.stride_h == 1 && d.stride_w == 1 && d.dilation_h == 1 && d.dilation_w == 1 &&
         d.c >= 64 && d.k >= 64;
}

class BlockedConvOp final : public ConvOp, public ImplInfo {
 public:
  // alg: convolution_winograd or convolution_direct. Throws dnnl::error when oneDNN has no
  // kernel for this algorithm, shape and machine.
  BlockedConvOp(const ConvDesc& d, algorithm alg, DnnlContext& ctx) : ConvOp(d, Device::cpu()), d_(d), ctx_(ctx) {
    const auto& eng = ctx.eng;
    const int64_t oh = d.out_h(), ow = d.out_w();
    auto x_user = nhwc_md(d.n, d.h, d.w, d.c);
    auto y_user = nhwc_md(d.n, oh, ow, d.k);
    auto x_any = memory::desc({d.n, d.c, d.h, d.w}, kF32, Tag::any);
    auto y_any = memory::desc({d.n, d.k, oh, ow}, kF32, Tag::any);
    auto w_user = memory::desc({d.k, d.c, d.kh, d.kw}, kF32, Tag::ohwi);
    auto w_any = memory::desc({d.k, d.c, d.kh, d.kw}, kF32, Tag::any);
    auto b_md = vec_md(d.k);
    memory::dims strides{d.stride_h, d.stride_w}, pl{d.pad_t, d.pad_l}, pr{d.pad_b, d.pad_r};

    convolution_forward::desc fd(prop_kind::forward_training, alg, x_any, w_any, b_md, y_any, strides, pl, pr);
    fwd_pd_ = convolution_forward::primitive_desc(fd, relu_attr(d.fuse_relu), eng);
    convolution_backward_data::desc bdd(alg, x_any, w_any, y_any, strides, pl, pr);
    bwd_d_pd_ = convolution_backward_data::primitive_desc(bdd, user_scratchpad_attr(), eng, fwd_pd_);
    convolution_backward_weights::desc bwd(alg, x_any, w_any, b_md, y_any, strides, pl, pr);
    bwd_w_pd_ = convolution_backward_weights::primitive_desc(bwd, user_scratchpad_attr(), eng, fwd_pd_);
    if (d.inference_relu && !d.fuse_relu) fwd_relu_pd_ = relu_variant(fwd_pd_, strides, {0, 0}, pl, pr, eng, alg);
    fwd_ = convolution_forward(fwd_pd_);
    if (fwd_relu_pd_) fwd_relu_ = convolution_forward(fwd_relu_pd_);
    bwd_d_ = convolution_backward_data(bwd_d_pd_);
    bwd_w_ = convolution_backward_weights(bwd_w_pd_);

    x_fwd_.init(x_user, fwd_pd_.src_desc(), eng, true);
    y_fwd_.init(y_user, fwd_pd_.dst_desc(), eng, false);
    dy_bwd_d_.init(y_user, bwd_d_pd_.diff_dst_desc(), eng, true);
    dx_bwd_d_.init(x_user, bwd_d_pd_.diff_src_desc(), eng, false);
    x_bwd_w_same_ = bwd_w_pd_.src_desc() == fwd_pd_.src_desc();
    dy_bwd_w_same_ = bwd_w_pd_.diff_dst_desc() == bwd_d_pd_.diff_dst_desc();
    if (!x_bwd_w_same_) x_bwd_w_.init(x_user, bwd_w_pd_.src_desc(), eng, true);
    if (!dy_bwd_w_same_) dy_bwd_w_.init(y_user, bwd_w_pd_.diff_dst_desc(), eng, true);
    w_fwd_.init(w_user, fwd_pd_.weights_desc(), eng, true);
    w_bwd_d_.init(w_user, bwd_d_pd_.weights_desc(), eng, true);
    dw_.init(w_user, bwd_w_pd_.diff_weights_desc(), eng, false);

    pad_.need(fwd_pd_.scratchpad_desc());
    if (fwd_relu_pd_) pad_.need(fwd_relu_pd_.scratchpad_desc());
    pad_.need(bwd_d_pd_.scratchpad_desc());
    pad_.need(bwd_w_pd_.scratchpad_desc());
    pad_.allocate();
    b_ = unbound(b_md, eng);
    db_ = unbound(b_md, eng);
    db_own_ = Tensor(Shape{d.k});
    const memory& x_w = x_bwd_w_same_ ? x_fwd_.blocked : x_bwd_w_.blocked;
    const memory& dy_w = dy_bwd_w_same_ ? dy_bwd_d_.blocked : dy_bwd_w_.blocked;
    fwd_args_ = {{DNNL_ARG_SRC, x_fwd_.blocked},
                 {DNNL_ARG_WEIGHTS, w_fwd_.blocked},
                 {DNNL_ARG_BIAS, b_},
                 {DNNL_ARG_DST, y_fwd_.blocked},
                 {DNNL_ARG_SCRATCHPAD, pad_.memory_for(fwd_pd_.scratchpad_desc(), eng)}};
    if (fwd_relu_pd_) {
      fwd_relu_args_ = fwd_args_;
      fwd_relu_args_[DNNL_ARG_SCRATCHPAD] = pad_.memory_for(fwd_relu_pd_.scratchpad_desc(), eng);
    }
    bwd_d_args_ = {{DNNL_ARG_DIFF_DST, dy_bwd_d_.blocked},
                   {DNNL_ARG_WEIGHTS, w_bwd_d_.blocked},
                   {DNNL_ARG_DIFF_SRC, dx_bwd_d_.blocked},
                   {DNNL_ARG_SCRATCHPAD, pad_.memory_for(bwd_d_pd_.scratchpad_desc(), eng)}};
    bwd_w_args_ = {{DNNL_ARG_SRC, x_w},
                   {DNNL_ARG_DIFF_DST, dy_w},
                   {DNNL_ARG_DIFF_WEIGHTS, dw_.blocked},
                   {DNNL_ARG_DIFF_BIAS, db_},
                   {DNNL_ARG_SCRATCHPAD, pad_.memory_for(bwd_w_pd_.scratchpad_desc(), eng)}};
  }

  std::string impl_info() const override {
    return "fwd=" + impl_of(fwd_pd_) + " bwd_d=" + impl_of(bwd_d_pd_) + " bwd_w=" + impl_of(bwd_w_pd_) + " act=blocked";
  }

 protected:
  void do_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, bool relu) override {
    need_bias(b, "conv forward");
    bind(w_fwd_.user, w);
    w_fwd_.run(ctx_.strm);
    bind(x_fwd_.user, x);
    x_fwd_.run(ctx_.strm);
    blocked_x_of_ = x.data();
    blocked_dy_of_ = nullptr;
    bind(b_, b);
    if (relu && !d_.fuse_relu)
      fwd_relu_.execute(ctx_.strm, fwd_relu_args_);
    else
      fwd_.execute(ctx_.strm, fwd_args_);
    bind(y_fwd_.user, y);
    y_fwd_.run(ctx_.strm);
    ctx_.strm.wait();
  }

  void do_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) override {
    if (x_bwd_w_same_) {
      if (blocked_x_of_ != x.data()) {  // backward without the matching forward: reorder now
        bind(x_fwd_.user, x);
        x_fwd_.run(ctx_.strm);
        blocked_x_of_ = x.data();
      }
    } else {
      bind(x_bwd_w_.user, x);
      x_bwd_w_.run(ctx_.strm);
    }
    if (dy_bwd_w_same_) {
      bind(dy_bwd_d_.user, dy);
      dy_bwd_d_.run(ctx_.strm);
      blocked_dy_of_ = dy.data();  // backward_data reuses it
    } else {
      bind(dy_bwd_w_.user, dy);
      dy_bwd_w_.run(ctx_.strm);
    }
    bind(db_, db.defined() ? db : db_own_);
    bind(dw_.user, dw);
    bwd_w_.execute(ctx_.strm, bwd_w_args_);
    dw_.run(ctx_.strm);
    ctx_.strm.wait();
  }

  void do_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) override {
    if (blocked_dy_of_ != dy.data()) {
      bind(dy_bwd_d_.user, dy);
      dy_bwd_d_.run(ctx_.strm);
    }
    blocked_dy_of_ = nullptr;
    bind(w_bwd_d_.user, w);
    w_bwd_d_.run(ctx_.strm);
    bwd_d_.execute(ctx_.strm, bwd_d_args_);
    bind(dx_bwd_d_.user, dx);
    dx_bwd_d_.run(ctx_.strm);
    ctx_.strm.wait();
  }

 private:
  ConvDesc d_;
  DnnlContext& ctx_;
  convolution_forward::primitive_desc fwd_pd_;
  convolution_backward_data::primitive_desc bwd_d_pd_;
  convolution_backward_weights::primitive_desc bwd_w_pd_;
  convolution_forward::primitive_desc fwd_relu_pd_;  // ConvDesc::inference_relu (and no fuse_relu)
  convolution_forward fwd_, fwd_relu_;
  convolution_backward_data bwd_d_;
  convolution_backward_weights bwd_w_;
  LayoutPath x_fwd_, y_fwd_, dy_bwd_d_, dx_bwd_d_, x_bwd_w_, dy_bwd_w_;  // NHWC <-> blocked
  LayoutPath w_fwd_, w_bwd_d_, dw_;                                      // OHWI <-> blocked
  bool x_bwd_w_same_ = true, dy_bwd_w_same_ = true;
  const float* blocked_x_of_ = nullptr;   // the x whose blocked copy x_fwd_ holds
  const float* blocked_dy_of_ = nullptr;  // the dy whose blocked copy dy_bwd_d_ holds
  Scratchpad pad_;
  memory b_, db_;
  Tensor db_own_;
  Args fwd_args_, fwd_relu_args_, bwd_d_args_, bwd_w_args_;
};

}  // namespace

std::unique_ptr<ConvOp> make_blocked_conv_op(const ConvDesc& d, DnnlContext& ctx) {
  // Precision mixed keeps float32 Winograd where it beats bfloat16 direct convolution: on CPUs
  // without AMX, 3x3 stride-1 layers run faster in float32 Winograd (4x fewer multiplies) than
  // in bfloat16 (measured on resnet18-cifar, docs/performance.md), and are more exact.
  const CpuIsa isa = cpu_isa();
  ConvDesc f32 = d;
  f32.bf16 = false;
  if (winograd_eligible(f32) && isa.winograd && (!d.bf16 || !isa.amx)) {
    try {
      auto op = std::make_unique<BlockedConvOp>(f32, algorithm::convolution_winograd, ctx);
      if (op->impl_info().find("wino") != std::string::npos) return op;
    } catch (const dnnl::error&) {
      // No Winograd kernel for this shape: direct convolution instead.
    }
  }
  if (blocked_direct_eligible(d, isa)) {
    try {
      auto op = std::make_unique<BlockedConvOp>(f32, algorithm::convolution_direct, ctx);
      if (op->impl_info().find("ref") == std::string::npos) return op;  // it pays with oneDNN's jit kernels only
    } catch (const dnnl::error&) {
      // No kernel for blocked activations: the NHWC op instead.
    }
  }
  return nullptr;
}

}  // namespace dlt::cpu
