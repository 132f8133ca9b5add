// Fully connected layer on oneDNN inner product: src (N, H*W*C) is a reshape of the NHWC
// input, weights (K, H*W*C) "oi" as stored by the layer, so nothing is reordered per call.
// fuse_relu adds a relu post-op to the forward (the caller applies relu backward to dy).
// bf16 (Precision: mixed): x, dy and w are reordered to bfloat16 copies the op owns; y, dx,
// dw and db stay float32. forward's copies of x and w serve backward_weights and
// backward_data, and one copy of dy both backward passes.
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/layout_path.h"

namespace dlt::cpu {
namespace {

using dnnl::inner_product_backward_data;
using dnnl::inner_product_backward_weights;
using dnnl::inner_product_forward;
using dnnl::prop_kind;

class CpuFcOp final : public FcOp, public ImplInfo {
 public:
  CpuFcOp(const FcDesc& d, DnnlContext& ctx) : FcOp(d, Device::cpu()), d_(d), ctx_(ctx) {
    const auto& eng = ctx.eng;
    auto x_md = nc_md(d.n, d.in);
    auto y_md = nc_md(d.n, d.out);
    auto w_md = memory::desc({d.out, d.in}, kF32, Tag::oi);
    auto b_md = vec_md(d.out);
    const auto lp = d.bf16 ? kBf16 : kF32;  // the multiplied operands' type
    auto x_lp_md = memory::desc({d.n, d.in}, lp, Tag::nc);
    auto dy_lp_md = memory::desc({d.n, d.out}, lp, Tag::nc);
    auto w_lp_md = memory::desc({d.out, d.in}, lp, Tag::oi);
    inner_product_forward::desc fd(prop_kind::forward_training, x_lp_md, w_lp_md, b_md, y_md);
    fwd_pd_ = inner_product_forward::primitive_desc(fd, relu_attr(d.fuse_relu), eng);
    inner_product_backward_data::desc bdd(x_md, w_lp_md, dy_lp_md);
    bwd_d_pd_ = inner_product_backward_data::primitive_desc(bdd, user_scratchpad_attr(), eng, fwd_pd_);
    inner_product_backward_weights::desc bwd(x_lp_md, w_md, b_md, dy_lp_md);
    bwd_w_pd_ = inner_product_backward_weights::primitive_desc(bwd, user_scratchpad_attr(), eng, fwd_pd_);
    fwd_ = inner_product_forward(fwd_pd_);
    bwd_d_ = inner_product_backward_data(bwd_d_pd_);
    bwd_w_ = inner_product_backward_weights(bwd_w_pd_);
    pad_.need(fwd_pd_.scratchpad_desc());
    pad_.need(bwd_d_pd_.scratchpad_desc());
    pad_.need(bwd_w_pd_.scratchpad_desc());
    pad_.allocate();

    x_lp_.init(x_md, x_lp_md, eng, true);
    dy_lp_.init(y_md, dy_lp_md, eng, true);
    w_lp_.init(w_md, w_lp_md, eng, true);
    x_ = x_lp_.user;
    y_ = dy_lp_.user;
    w_ = w_lp_.user;
    b_ = unbound(b_md, eng);
    db_own_ = Tensor(Shape{d.out});
    fwd_args_ = {{DNNL_ARG_SRC, x_lp_.blocked},
                 {DNNL_ARG_WEIGHTS, w_lp_.blocked},
                 {DNNL_ARG_BIAS, b_},
                 {DNNL_ARG_DST, y_},
                 {DNNL_ARG_SCRATCHPAD, pad_.memory_for(fwd_pd_.scratchpad_desc(), eng)}};
    bwd_d_args_ = {{DNNL_ARG_DIFF_DST, dy_lp_.blocked},
                   {DNNL_ARG_WEIGHTS, w_lp_.blocked},
                   {DNNL_ARG_DIFF_SRC, x_},
                   {DNNL_ARG_SCRATCHPAD, pad_.memory_for(bwd_d_pd_.scratchpad_desc(), eng)}};
    bwd_w_args_ = {{DNNL_ARG_SRC, x_lp_.blocked},
                   {DNNL_ARG_DIFF_DST, dy_lp_.blocked},
                   {DNNL_ARG_DIFF_WEIGHTS, w_},
                   {DNNL_ARG_DIFF_BIAS, b_},
                   {DNNL_ARG_SCRATCHPAD, pad_.memory_for(bwd_w_pd_.scratchpad_desc(), eng)}};
  }

  std::string impl_info() const override {
    return "fwd=" + impl_of(fwd_pd_) + " bwd_d=" + impl_of(bwd_d_pd_) + " bwd_w=" + impl_of(bwd_w_pd_) +
           (d_.bf16 ? " bf16" : "");
  }

 protected:
  void do_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) override {
    need_bias(b, "fc forward");
    bind(x_, x);
    x_reuse_.convert(x_lp_, x, ReuseOnce::kForward, ctx_.strm);
    bind(w_, w);
    w_reuse_.convert(w_lp_, w, ReuseOnce::kForward, ctx_.strm);
    dy_reuse_.forget();
    bind(b_, b);
    bind(y_, y);
    fwd_.execute(ctx_.strm, fwd_args_);
    ctx_.strm.wait();
  }

  void do_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) override {
    bind(y_, dy);
    dy_reuse_.convert(dy_lp_, dy, ReuseOnce::kBackwardData, ctx_.strm);
    bind(w_, w);
    w_reuse_.convert(w_lp_, w, ReuseOnce::kBackwardData, ctx_.strm);
    bind(x_, dx);
    bwd_d_.execute(ctx_.strm, bwd_d_args_);
    ctx_.strm.wait();
  }

  void do_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) override {
    bind(x_, x);
    x_reuse_.convert(x_lp_, x, ReuseOnce::kBackwardWeights, ctx_.strm);
    bind(y_, dy);
    dy_reuse_.convert(dy_lp_, dy, ReuseOnce::kBackwardWeights, ctx_.strm);
    bind(w_, dw);
    bind(b_, db.defined() ? db : db_own_);
    bwd_w_.execute(ctx_.strm, bwd_w_args_);
    ctx_.strm.wait();
  }

 private:
  FcDesc d_;
  DnnlContext& ctx_;
  inner_product_forward::primitive_desc fwd_pd_;
  inner_product_backward_data::primitive_desc bwd_d_pd_;
  inner_product_backward_weights::primitive_desc bwd_w_pd_;
  inner_product_forward fwd_;
  inner_product_backward_data bwd_d_;
  inner_product_backward_weights bwd_w_;
  Scratchpad pad_;
  LayoutPath x_lp_, dy_lp_, w_lp_;  // the multiplied operands (bfloat16 copies under bf16)
  ReuseOnce x_reuse_, dy_reuse_, w_reuse_;
  memory x_, y_, w_, b_;  // (diff_)src, (diff_)dst, (diff_)weights, (diff_)bias (float32)
  Tensor db_own_;         // (K) target for db when the caller passes none
  Args fwd_args_, bwd_d_args_, bwd_w_args_;
};

}  // namespace

static std::unique_ptr<FcOp> make_fc_op(const FcDesc& d, DnnlContext& ctx) {
  try {
    return std::make_unique<CpuFcOp>(d, ctx);
  } catch (const dnnl::error&) {
    if (d.bf16) throw DeviceError(no_cpu_bf16_message());
    throw;
  }
}

namespace {
std::unique_ptr<FcOp> make_registered(Backend& b, const FcDesc& d) {
  return guarded("fully connected", [&] { return make_fc_op(d, dnnl_context(b)); });
}
}  // namespace

DLT_REGISTER_OP(FcDesc, DeviceType::kCpu, "onednn", 0, make_registered, nullptr);

}  // namespace dlt::cpu
