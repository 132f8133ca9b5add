// Convolution on oneDNN: NHWC activations, weights format chosen by oneDNN (format_tag::any)
// for each direction, with reorders between our OHWI weights and the blocked buffers kept
// inside the op. fuse_relu adds a relu post-op to the forward (the caller does relu backward).
// bf16 (Precision: mixed): x, dy and w are reordered to bfloat16 copies the op owns; outputs
// and gradients stay float32. forward's copy of x serves backward_weights, and one copy of dy
// both backward passes. Grouped convolutions (ConvDesc::groups > 1) take this op only: their
// weights are oneDNN's 5-d (G, K/G, C/G, kh, kw) in the gohwi layout, which is our
// (K, kh, kw, C/G) with K split group-major; oneDNN picks its depthwise kernels (jit_dw) when
// groups == C. A fused clipped ReLU (ConvDesc::relu_ceiling) is a clip post-op here, a folded
// swish, GELU or hard swish (ConvDesc::inference_post_act) that post-op; the Winograd and blocked ops run without
// them and ActAfterConvOp applies the activation to their output in place, so a fused
// clippedRelu or a folded activation never changes which algorithm a convolution runs, nor its bits.
// A 1x1 convolution with ConvDesc::depthwise also makes oneDNN's 1x1 forward with a depthwise
// post-op (make_depthwise), which computes the depthwise output from tiles of its own output
// (on blocked activations, reordered from and to NHWC), and the projection after it.
#include <cmath>
#include <limits>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/layout_path.h"

namespace dlt::cpu {
namespace {

using dnnl::algorithm;
using dnnl::prop_kind;

// oneDNN's logical weight dims: (K, C, kh, kw), or (G, K/G, C/G, kh, kw) when grouped.
memory::dims weight_dims(const ConvDesc& d) {
  if (d.groups == 1) return {d.k, d.c, d.kh, d.kw};
  return {d.groups, d.k / d.groups, d.group_c(), d.kh, d.kw};
}

// y = y + r, then a ReLU when relu, in place on float32 values (oneDNN's binary add with a
// ReLU post-op): a convolution's residual sum (ConvDesc::inference_sum) where its kernel has no
// binary post-op, one pass instead of the addition's and the ReLU's.
class ResidualAdd {
 public:
  ResidualAdd(int64_t numel, bool relu, const dnnl::engine& eng) {
    const memory::desc md = vec_md(numel);
    dnnl::primitive_attr attr;
    if (relu) {
      dnnl::post_ops po;
      po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
      attr.set_post_ops(po);
    }
    add_ = dnnl::binary(
        dnnl::binary::primitive_desc(dnnl::binary::desc(dnnl::algorithm::binary_add, md, md, md), attr, eng));
    y_ = unbound(md, eng);
    r_ = unbound(md, eng);
  }
  void run(const Tensor& r, Tensor& y, dnnl::stream& strm) {
    bind(y_, y);
    bind(r_, r);
    add_.execute(strm, {{DNNL_ARG_SRC_0, y_}, {DNNL_ARG_SRC_1, r_}, {DNNL_ARG_DST, y_}});
  }

 private:
  dnnl::binary add_;
  memory y_, r_;
};

class CpuConvOp final : public ConvOp, public ImplInfo {
 public:
  CpuConvOp(const ConvDesc& d, DnnlContext& ctx) : ConvOp(d, Device::cpu()), d_(d), ctx_(ctx) {
    const auto& eng = ctx.eng;
    const int64_t oh = d.out_h(), ow = d.out_w();
    DLT_CHECK(oh > 0 && ow > 0, "conv: output " << oh << "x" << ow << " is empty");
    auto x_md = nhwc_md(d.n, d.h, d.w, d.c);
    auto y_md = nhwc_md(d.n, oh, ow, d.k);
    auto b_md = vec_md(d.k);
    const memory::dims w_dims = weight_dims(d);
    auto w_user_md = memory::desc(w_dims, kF32, d.groups == 1 ? Tag::ohwi : Tag::gohwi);
    auto w_any = memory::desc(w_dims, kF32, Tag::any);
    // The multiplied operands: float32, or bfloat16 copies under Precision: mixed.
    const auto lp = d.bf16 ? kBf16 : kF32;
    auto x_lp_md = memory::desc({d.n, d.c, d.h, d.w}, lp, Tag::nhwc);
    auto dy_lp_md = memory::desc({d.n, d.k, oh, ow}, lp, Tag::nhwc);
    auto w_lp_any = memory::desc(w_dims, lp, Tag::any);
    memory::dims strides{d.stride_h, d.stride_w};
    memory::dims dil{d.dilation_h - 1, d.dilation_w - 1};
    memory::dims pl{d.pad_t, d.pad_l}, pr{d.pad_b, d.pad_r};

    convolution_forward::desc fd(prop_kind::forward_training, algorithm::convolution_direct, x_lp_md, w_lp_any, b_md,
                                 y_md, strides, dil, pl, pr);
    fwd_pd_ = convolution_forward::primitive_desc(fd, relu_attr(d.fuse_relu, d.relu_ceiling), eng);
    convolution_backward_data::desc bdd(algorithm::convolution_direct, x_md, w_lp_any, dy_lp_md, strides, dil, pl, pr);
    bwd_d_pd_ = convolution_backward_data::primitive_desc(bdd, user_scratchpad_attr(), eng, fwd_pd_);
    convolution_backward_weights::desc bwd(algorithm::convolution_direct, x_lp_md, w_any, b_md, dy_lp_md, strides, dil,
                                           pl, pr);
    bwd_w_pd_ = convolution_backward_weights::primitive_desc(bwd, user_scratchpad_attr(), eng, fwd_pd_);
    if (d.inference_relu && !d.fuse_relu)
      fwd_relu_pd_ = relu_variant(fwd_pd_, strides, dil, pl, pr, eng, algorithm::convolution_direct, d.relu_ceiling,
                                  d.inference_post_act, d.inference_act);
    fwd_ = convolution_forward(fwd_pd_);
    if (fwd_relu_pd_) fwd_relu_ = convolution_forward(fwd_relu_pd_);
    bwd_d_ = convolution_backward_data(bwd_d_pd_);
    bwd_w_ = convolution_backward_weights(bwd_w_pd_);

    w_fwd_.init(w_user_md, fwd_pd_.weights_desc(), eng, true);
    w_bwd_d_.init(w_user_md, bwd_d_pd_.weights_desc(), eng, true);
    dw_.init(w_user_md, bwd_w_pd_.diff_weights_desc(), eng, false);

    pad_.need(fwd_pd_.scratchpad_desc());
    if (fwd_relu_pd_) pad_.need(fwd_relu_pd_.scratchpad_desc());
    pad_.need(bwd_d_pd_.scratchpad_desc());
    pad_.need(bwd_w_pd_.scratchpad_desc());
    make_depthwise(x_md, w_user_md, b_md, eng);
    make_scaled(eng);
    make_sum(x_lp_md, w_user_md, y_md, b_md, strides, dil, pl, pr, eng);
    pad_.allocate();

    x_lp_.init(x_md, x_lp_md, eng, true);
    dy_lp_.init(y_md, dy_lp_md, eng, true);
    x_ = x_lp_.user;
    y_ = dy_lp_.user;
    b_ = unbound(b_md, eng);
    db_ = unbound(b_md, eng);
    db_own_ = Tensor(Shape{d.k});
    fwd_args_ = {{DNNL_ARG_SRC, x_lp_.blocked},
                 {DNNL_ARG_WEIGHTS, w_fwd_.blocked},
                 {DNNL_ARG_BIAS, b_},
                 {DNNL_ARG_DST, y_},
                 {DNNL_ARG_SCRATCHPAD, pad_.memory_for(fwd_pd_.scratchpad_desc(), eng)}};
    if (fwd_relu_pd_) {
      fwd_relu_args_ = fwd_args_;
      fwd_relu_args_[DNNL_ARG_SCRATCHPAD] = pad_.memory_for(fwd_relu_pd_.scratchpad_desc(), eng);
    }
    bwd_d_args_ = {{DNNL_ARG_DIFF_DST, dy_lp_.blocked},
                   {DNNL_ARG_WEIGHTS, w_bwd_d_.blocked},
                   {DNNL_ARG_DIFF_SRC, x_},
                   {DNNL_ARG_SCRATCHPAD, pad_.memory_for(bwd_d_pd_.scratchpad_desc(), eng)}};
    bwd_w_args_ = {{DNNL_ARG_SRC, x_lp_.blocked},
                   {DNNL_ARG_DIFF_DST, dy_lp_.blocked},
                   {DNNL_ARG_DIFF_WEIGHTS, dw_.blocked},
                   {DNNL_ARG_DIFF_BIAS, db_},
                   {DNNL_ARG_SCRATCHPAD, pad_.memory_for(bwd_w_pd_.scratchpad_desc(), eng)}};
  }

  bool depthwise_ready() const override { return dw_ready_; }
  bool scaled_ready() const override { return sc_ready_; }

  std::string impl_info() const override {
    auto fmt = [](const LayoutPath& p) { return p.needed ? std::string("blocked") : "ohwi"; };
    const std::string groups = d_.groups == 1 ? "" : " groups=" + std::to_string(d_.groups);
    return "fwd=" + impl_of(fwd_pd_) + " bwd_d=" + impl_of(bwd_d_pd_) + " bwd_w=" + impl_of(bwd_w_pd_) +
           " w=" + fmt(w_fwd_) + "/" + fmt(w_bwd_d_) + "/" + fmt(dw_) + groups + (d_.bf16 ? " bf16" : "") +
           (dw_ready_ ? " depthwise=" + impl_of(dw_pd_) : "") +
           (dw_ready_ && d_.depthwise.project_k > 0 ? " projection=" + impl_of(pj_pd_) : "") +
           (sc_ready_ ? " scaled=" + impl_of(sc_pd_) : "") +
           (d_.inference_sum ? (sum_pd_ ? " sum=" + impl_of(sum_pd_) : std::string(" then sum")) : "");
  }

 protected:
  void do_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, bool relu) override {
    need_bias(b, "conv forward");
    bind_forward(w_fwd_, x, w, b, y);
    if (relu && !d_.fuse_relu)
      fwd_relu_.execute(ctx_.strm, fwd_relu_args_);
    else
      fwd_.execute(ctx_.strm, fwd_args_);
    ctx_.strm.wait();
  }

  void do_forward_depthwise(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& dw_w, const Tensor& dw_b,
                            const Tensor& pj_w, const Tensor& pj_b, Tensor& y) override {
    if (dw_args_.empty()) make_depthwise_buffers();
    bind(w_dw1_.user, w);
    w_dw1_.run(ctx_.strm);
    bind(dw_w_.user, dw_w);
    dw_w_.run(ctx_.strm);
    bind(dw_x_.user, x);
    dw_x_.run(ctx_.strm);
    bind(b_, b);
    bind(dw_b_, dw_b);
    bind(dw_y_.user, y);  // (the projection's destination where it writes NHWC)
    dw_fwd_.execute(ctx_.strm, dw_args_);
    if (d_.depthwise.project_k > 0) {
      bind(pj_w_.user, pj_w);
      pj_w_.run(ctx_.strm);
      bind(pj_b_, pj_b);
      pj_fwd_.execute(ctx_.strm, pj_args_);
    }
    dw_y_.run(ctx_.strm);
    ctx_.strm.wait();
  }

  // Per image n: W_n (C, K) = w^T scaled by s[n] row by row, then one batched product.
  void do_forward_scaled(const Tensor& x, const Tensor& s, const Tensor& w, const Tensor& b, Tensor& y) override {
    const int64_t n = d_.n, c = d_.c, k = d_.k;
    if (!sc_w_buf_.defined()) {
      sc_w_buf_ = host_buffer(static_cast<size_t>(n * c * k) * sizeof(float));
      sc_args_[DNNL_ARG_WEIGHTS] = memory(sc_pd_.weights_desc(), ctx_.eng, sc_w_buf_.data());
      sc_args_[DNNL_ARG_SCRATCHPAD] = pad_.memory_for(sc_pd_.scratchpad_desc(), ctx_.eng);
    }
    const float* pw = w.data();
    const float* ps = s.data();
    float* out = sc_w_buf_.data();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t ch = 0; ch < c; ++ch) {
        const float scale = ps[i * c + ch];
        float* row = out + (i * c + ch) * k;
        for (int64_t j = 0; j < k; ++j) row[j] = pw[j * c + ch] * scale;
      }
    bind(sc_args_[DNNL_ARG_SRC], x);
    bind(sc_args_[DNNL_ARG_BIAS], b);
    bind(sc_args_[DNNL_ARG_DST], y);
    sc_mm_.execute(ctx_.strm, sc_args_);
    ctx_.strm.wait();
  }

  void do_forward_sum(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& r, Tensor& y) override {
    if (!sum_pd_) {  // no jit kernel with the binary post-op: the convolution, then the sum
      do_forward(x, w, b, y, false);
      sum_after_->run(r, y, ctx_.strm);
      ctx_.strm.wait();
      return;
    }
    if (sum_args_.empty()) {
      sum_args_ = fwd_args_;
      sum_args_[DNNL_ARG_WEIGHTS] = w_sum_.blocked;
      sum_args_[DNNL_ARG_SCRATCHPAD] = pad_.memory_for(sum_pd_.scratchpad_desc(), ctx_.eng);
      sum_args_[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] = sum_r_;
    }
    bind_forward(w_sum_, x, w, b, y);
    bind(sum_r_, r);
    sum_fwd_.execute(ctx_.strm, sum_args_);
    ctx_.strm.wait();
  }

  void do_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) override {
    bind(w_bwd_d_.user, w);
    w_bwd_d_.run(ctx_.strm);
    bind(y_, dy);
    dy_reuse_.convert(dy_lp_, dy, ReuseOnce::kBackwardData, ctx_.strm);
    bind(x_, dx);
    bwd_d_.execute(ctx_.strm, bwd_d_args_);
    ctx_.strm.wait();
  }

  void do_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) override {
    bind(x_, x);
    x_reuse_.convert(x_lp_, x, ReuseOnce::kBackwardWeights, ctx_.strm);
    bind(y_, dy);
    dy_reuse_.convert(dy_lp_, dy, ReuseOnce::kBackwardWeights, ctx_.strm);
    bind(db_, db.defined() ? db : db_own_);
    bind(dw_.user, dw);
    bwd_w_.execute(ctx_.strm, bwd_w_args_);
    dw_.run(ctx_.strm);
    ctx_.strm.wait();
  }

 private:
  using convolution_forward = dnnl::convolution_forward;
  using convolution_backward_data = dnnl::convolution_backward_data;
  using convolution_backward_weights = dnnl::convolution_backward_weights;

  // ConvDesc::depthwise: the float32 1x1 forward with this op's activation, oneDNN's depthwise
  // post-op and the depthwise activation, on blocked (nChw16c / nChw8c) input and output with
  // reorders from and to our NHWC tensors: oneDNN 2.6's jit 1x1 kernel with a depthwise post-op
  // writes wrong values on NHWC (tests/net/test_inference_folding.cpp), and its chained
  // reference (ref_fused_convolution, taken for small problems) runs the two primitives apart
  // anyway. With a projection (DepthwisePostOp::project_k), a second 1x1 forward reads the
  // depthwise output in that blocked layout and only its output, of few channels, is reordered
  // to NHWC. Left unmade (dw_ready_ false; the caller runs the convolutions apart) for another
  // problem, or where oneDNN has no jit kernel for it on blocked activations (or none for the
  // projection), or its output size is not the depthwise convolution's, or the depthwise
  // convolution has stride 1 and no projection follows: the reorder of the expanded output
  // back to NHWC then moves as much as the fusion saves. MobileNetV2's pairs at batch 32
  // (`ONEDNN_VERBOSE` times inside dltrain, AMD EPYC VM (Zen 4, AVX-512), oneDNN 2.6.3, 2
  // threads): stride 1, 64 -> 384 channels on 14x14:
  // 3.1 ms apart, 3.4 ms fused with the reorders; stride 2, 16 -> 96 channels on 112x112:
  // 23.0 ms apart, 15.3 ms fused.
  void make_depthwise(const memory::desc& x_md, const memory::desc& w_user_md, const memory::desc& b_md,
                      const dnnl::engine& eng) {
    const DepthwisePostOp& p = d_.depthwise;
    if (p.kernel <= 0 || (p.stride < 2 && p.project_k == 0) || d_.bf16 || !d_.is_pointwise()) return;
    dnnl::post_ops po;
    if (d_.fuse_relu || d_.inference_relu) append_act(po, d_.relu_ceiling, d_.inference_post_act, d_.inference_act);
    po.append_dw(kF32, kF32, kF32, p.kernel, p.stride, p.pad, 0, {});
    if (p.relu || p.post_act) append_act(po, p.relu_ceiling, p.post_act, p.act);
    dnnl::primitive_attr attr = user_scratchpad_attr();
    attr.set_post_ops(po);
    convolution_forward::desc fd(
        prop_kind::forward_inference, algorithm::convolution_direct,
        memory::desc({d_.n, d_.c, d_.h, d_.w}, kF32, Tag::any), memory::desc(weight_dims(d_), kF32, Tag::any), b_md,
        memory::desc({d_.n, d_.k, d_.h, d_.w}, kF32, Tag::any), {1, 1}, {0, 0}, {0, 0}, {0, 0});
    try {
      dw_pd_ = convolution_forward::primitive_desc(fd, attr, eng);
    } catch (const dnnl::error&) {
      return;  // no fused kernel for this problem on this machine
    }
    const memory::desc y_md = dw_pd_.query_md(dnnl::query::exec_arg_md, DNNL_ARG_DST);
    const memory::desc y_user = nhwc_md(d_.n, p.out_h, p.out_w, d_.k);
    const memory::desc dw_w_md = dw_pd_.query_md(dnnl::query::exec_arg_md, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS);
    const memory::desc dw_b_md = dw_pd_.query_md(dnnl::query::exec_arg_md, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS);
    const memory::dims dw_dims{d_.k, 1, 1, p.kernel, p.kernel};  // (G, 1, 1, k, k): one filter per channel
    const bool jit_blocked = impl_of(dw_pd_).rfind("jit_1x1", 0) == 0 && dw_pd_.src_desc() != x_md && y_md != y_user;
    if (!jit_blocked || y_md.dims() != y_user.dims() || dw_w_md.dims() != dw_dims || dw_b_md != vec_md(d_.k)) return;
    if (p.project_k > 0 && !make_projection(y_md, eng)) return;
    dw_fwd_ = convolution_forward(dw_pd_);
    dw_x_md_ = x_md;
    dw_y_md_ = p.project_k > 0 ? nhwc_md(d_.n, p.out_h, p.out_w, p.project_k) : y_user;
    w_dw1_.init(w_user_md, dw_pd_.weights_desc(), eng, true);
    // Our (K, k, k, 1) depthwise weights are gohwi with one output and one input per group.
    dw_w_.init(memory::desc(dw_dims, kF32, Tag::gohwi), dw_w_md, eng, true);
    dw_b_ = unbound(dw_b_md, eng);
    pad_.need(dw_pd_.scratchpad_desc());
    dw_ready_ = true;
  }
  // DepthwisePostOp::project_k: the 1x1 forward reading the fused op's output z_md (blocked),
  // writing the layout oneDNN picks; false where its kernel is not a 1x1 one (a reference or
  // GEMM fallback would lose what the fusion saves).
  bool make_projection(const memory::desc& z_md, const dnnl::engine& eng) {
    const DepthwisePostOp& p = d_.depthwise;
    const memory::dims w_dims{p.project_k, d_.k, 1, 1};
    convolution_forward::desc pd(prop_kind::forward_inference, algorithm::convolution_direct, z_md,
                                 memory::desc(w_dims, kF32, Tag::any), vec_md(p.project_k),
                                 memory::desc({d_.n, p.project_k, p.out_h, p.out_w}, kF32, Tag::any), {1, 1}, {0, 0},
                                 {0, 0}, {0, 0});
    try {
      pj_pd_ = convolution_forward::primitive_desc(pd, user_scratchpad_attr(), eng);
    } catch (const dnnl::error&) {
      return false;
    }
    if (impl_of(pj_pd_).find("1x1") == std::string::npos || pj_pd_.src_desc() != z_md) return false;
    pj_fwd_ = convolution_forward(pj_pd_);
    pj_w_.init(memory::desc(w_dims, kF32, Tag::ohwi), pj_pd_.weights_desc(), eng, true);
    pj_b_ = unbound(vec_md(p.project_k), eng);
    pad_.need(pj_pd_.scratchpad_desc());
    return true;
  }
  // ConvDesc::scaled_input: oneDNN's matmul of x (N, H*W, C) with per-image weights (N, C, K)
  // and a shared bias into y (N, H*W, K), for a float32 1x1 convolution without activation
  // whose per-image weights (C x K) are at most a quarter of its image (H x W x C): on larger
  // ones (efficientnet_b0's 7x7 stage) making them costs more than the separate multiplication
  // they replace. A standalone oneDNN 2.6.3 program, batch 32, AMD EPYC VM (Zen 4, AVX-512), 2
  // threads: 144 -> 24 channels at 56x56,
  // multiplication 4.3 ms + convolution 7.5 ms against 7.5 ms; 1152 -> 192 at 7x7, 3.7 ms
  // against 8.1 ms.
  void make_scaled(const dnnl::engine& eng) {
    if (!d_.scaled_input || d_.bf16 || d_.fuse_relu || d_.inference_relu || !d_.is_pointwise() ||
        d_.h * d_.w < 4 * d_.k)
      return;
    const memory::dim n = d_.n, hw = d_.h * d_.w, c = d_.c, k = d_.k;
    const memory::desc x_md({n, hw, c}, kF32, Tag::abc), w_md({n, c, k}, kF32, Tag::abc);
    const memory::desc b_md({1, 1, k}, kF32, Tag::abc), y_md({n, hw, k}, kF32, Tag::abc);
    try {
      sc_pd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(x_md, w_md, b_md, y_md), user_scratchpad_attr(), eng);
    } catch (const dnnl::error&) {
      return;
    }
    sc_mm_ = dnnl::matmul(sc_pd_);
    pad_.need(sc_pd_.scratchpad_desc());
    sc_args_ = {
        {DNNL_ARG_SRC, unbound(x_md, eng)}, {DNNL_ARG_BIAS, unbound(b_md, eng)}, {DNNL_ARG_DST, unbound(y_md, eng)}};
    sc_ready_ = true;
  }
  // The blocked copies of x and y (and with a projection, of the depthwise output between the
  // two primitives), made at the first forward_depthwise: an op that only trains never holds
  // them.
  void make_depthwise_buffers() {
    const dnnl::engine& eng = ctx_.eng;
    const memory::desc z_md = dw_pd_.query_md(dnnl::query::exec_arg_md, DNNL_ARG_DST);
    const bool project = d_.depthwise.project_k > 0;
    dw_x_.init(dw_x_md_, dw_pd_.src_desc(), eng, true);
    dw_y_.init(dw_y_md_, project ? pj_pd_.dst_desc() : z_md, eng, false);
    memory z = dw_y_.blocked;
    if (project) {
      z_buf_ = host_buffer(z_md.get_size());
      z = memory(z_md, eng, z_buf_.data());
      pj_args_ = {{DNNL_ARG_SRC, z},
                  {DNNL_ARG_WEIGHTS, pj_w_.blocked},
                  {DNNL_ARG_BIAS, pj_b_},
                  {DNNL_ARG_DST, dw_y_.blocked},
                  {DNNL_ARG_SCRATCHPAD, pad_.memory_for(pj_pd_.scratchpad_desc(), eng)}};
    }
    dw_args_ = {{DNNL_ARG_SRC, dw_x_.blocked},
                {DNNL_ARG_WEIGHTS, w_dw1_.blocked},
                {DNNL_ARG_BIAS, b_},
                {DNNL_ARG_DST, z},
                {DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS, dw_w_.blocked},
                {DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, dw_b_},
                {DNNL_ARG_SCRATCHPAD, pad_.memory_for(dw_pd_.scratchpad_desc(), eng)}};
  }

  // A forward's operands: w through w_path (the layout its primitive reads), x (rounded to
  // bfloat16 under Precision: mixed, once per forward), b and y.
  void bind_forward(LayoutPath& w_path, const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
    bind(w_path.user, w);
    w_path.run(ctx_.strm);
    bind(x_, x);
    x_reuse_.convert(x_lp_, x, ReuseOnce::kForward, ctx_.strm);
    dy_reuse_.forget();
    bind(b_, b);
    bind(y_, y);
  }

  // ConvDesc::inference_sum: the forward with a binary add post-op reading r (NHWC, y's size)
  // and the ReLU after it, on the forward's input and output formats with weights in the format
  // its kernel picks. A 1x1 convolution 64 -> 256 channels on 56x56 at batch 32 (Intel Xeon,
  // AVX-512, oneDNN 2.6.3, 2 threads): 14.7 ms alone, 22.5 ms with the post-op, 27.3 ms as the
  // convolution then one binary pass with the ReLU (the addition and the ReLU apart cost one
  // pass more); below AVX-512 (DNNL_MAX_CPU_ISA=AVX2) the post-op and the pass after it measured
  // alike. Where oneDNN has only its reference kernel for the post-op, the convolution runs as
  // forward() and ResidualAdd after it.
  void make_sum(const memory::desc& x_lp_md, const memory::desc& w_user_md, const memory::desc& y_md,
                const memory::desc& b_md, const memory::dims& strides, const memory::dims& dil, const memory::dims& pl,
                const memory::dims& pr, const dnnl::engine& eng) {
    if (!d_.inference_sum) return;
    dnnl::post_ops po;
    po.append_binary(algorithm::binary_add, y_md);
    if (d_.sum_relu) po.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
    dnnl::primitive_attr attr = user_scratchpad_attr();
    attr.set_post_ops(po);
    convolution_forward::desc fd(prop_kind::forward_inference, algorithm::convolution_direct, x_lp_md,
                                 memory::desc(weight_dims(d_), d_.bf16 ? kBf16 : kF32, Tag::any), b_md, y_md, strides,
                                 dil, pl, pr);
    convolution_forward::primitive_desc pd(fd, attr, eng);
    if (impl_of(pd).rfind("ref", 0) == 0) {
      sum_after_ = std::make_unique<ResidualAdd>(d_.n * d_.out_h() * d_.out_w() * d_.k, d_.sum_relu, eng);
      return;
    }
    sum_pd_ = pd;
    sum_fwd_ = convolution_forward(sum_pd_);
    pad_.need(sum_pd_.scratchpad_desc());
    w_sum_.init(w_user_md, sum_pd_.weights_desc(), eng, true);
    sum_r_ = unbound(y_md, eng);
  }

  ConvDesc d_;
  DnnlContext& ctx_;
  convolution_forward::primitive_desc fwd_pd_;
  convolution_backward_data::primitive_desc bwd_d_pd_;
  convolution_backward_weights::primitive_desc bwd_w_pd_;
  convolution_forward::primitive_desc fwd_relu_pd_;  // ConvDesc::inference_relu (and no fuse_relu)
  convolution_forward fwd_, fwd_relu_;
  convolution_backward_data bwd_d_;
  convolution_backward_weights bwd_w_;
  LayoutPath w_fwd_, w_bwd_d_, dw_;
  Scratchpad pad_;
  LayoutPath x_lp_, dy_lp_;  // x and dy as multiplied (bfloat16 copies, or x / dy themselves)
  ReuseOnce x_reuse_, dy_reuse_;
  memory x_, y_, b_, db_;  // x_/y_ double as diff_src/diff_dst in the backward passes
  Tensor db_own_;          // (K) target for db when the caller passes none
  Args fwd_args_, fwd_relu_args_, bwd_d_args_, bwd_w_args_;
  // ConvDesc::depthwise (make_depthwise)
  bool dw_ready_ = false;
  convolution_forward::primitive_desc dw_pd_;
  convolution_forward dw_fwd_;
  LayoutPath dw_x_, dw_y_;          // x and y between NHWC and the blocked layouts (y: the projection's)
  memory::desc dw_x_md_, dw_y_md_;  // their NHWC sides
  LayoutPath w_dw1_, dw_w_;         // the 1x1 and depthwise weights as the fused primitive reads them
  memory dw_b_;
  Args dw_args_;
  // DepthwisePostOp::project_k (make_projection)
  convolution_forward::primitive_desc pj_pd_;
  convolution_forward pj_fwd_;
  LayoutPath pj_w_;
  memory pj_b_;
  Tensor z_buf_;  // the depthwise output, blocked
  Args pj_args_;
  // ConvDesc::scaled_input (make_scaled)
  bool sc_ready_ = false;
  dnnl::matmul::primitive_desc sc_pd_;
  dnnl::matmul sc_mm_;
  Tensor sc_w_buf_;  // the per-image weights, made at the first forward_scaled
  Args sc_args_;
  // ConvDesc::inference_sum (make_sum): the fused forward, or the pass after forward()
  convolution_forward::primitive_desc sum_pd_;
  convolution_forward sum_fwd_;
  LayoutPath w_sum_;
  memory sum_r_;
  Args sum_args_;
  std::unique_ptr<ResidualAdd> sum_after_;
};

// A convolution op without the fused clip or swish (Winograd, blocked), then that activation
// in place: the separate layers' computation in one op. The caller applies the clip's backward
// (from y); a swish is folded in inference only. For a fused clip (fuse_relu) every forward
// clips; for a folded activation (inference_relu) the forwards that ask for it.
class ActAfterConvOp final : public ConvOp, public ImplInfo {
 public:
  ActAfterConvOp(const ConvDesc& d, std::unique_ptr<ConvOp> conv, DnnlContext& ctx)
      : ConvOp(d, Device::cpu()),
        conv_(std::move(conv)),
        act_(make_act_op(
            ActDesc{d.n * d.out_h() * d.out_w() * d.k, d.inference_post_act ? d.inference_act : ActKind::kClippedRelu,
                    d.inference_post_act ? 0.f : d.relu_ceiling},
            ctx)),
        what_(std::string(" then ") + (d.inference_post_act ? act_name(d.inference_act) : "clip")) {}

  std::string impl_info() const override {
    const auto* inner = dynamic_cast<const ImplInfo*>(conv_.get());
    return (inner ? inner->impl_info() : std::string("?")) + what_;
  }

 protected:
  void do_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, bool relu) override {
    conv_->forward(x, w, b, y);
    if (relu) act_->forward(y, y);
  }
  void do_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) override { conv_->backward_data(dy, w, dx); }
  void do_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) override {
    conv_->backward_weights(x, dy, dw, db);
  }

 private:
  std::unique_ptr<ConvOp> conv_;
  std::unique_ptr<ActOp> act_;
  std::string what_;
};

// A convolution op without a binary post-op (Winograd, blocked), then ResidualAdd: a residual
// sum (ConvDesc::inference_sum) in one pass after the convolution, which keeps its algorithm and
// its bits.
class SumAfterConvOp final : public ConvOp, public ImplInfo {
 public:
  SumAfterConvOp(const ConvDesc& d, std::unique_ptr<ConvOp> conv, DnnlContext& ctx)
      : ConvOp(d, Device::cpu()),
        conv_(std::move(conv)),
        add_(d.n * d.out_h() * d.out_w() * d.k, d.sum_relu, ctx.eng),
        ctx_(ctx) {}

  std::string impl_info() const override {
    const auto* inner = dynamic_cast<const ImplInfo*>(conv_.get());
    return (inner ? inner->impl_info() : std::string("?")) + " then sum";
  }

 protected:
  void do_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, bool) override {
    conv_->forward(x, w, b, y);
  }
  void do_forward_sum(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& r, Tensor& y) override {
    conv_->forward(x, w, b, y);
    add_.run(r, y, ctx_.strm);
    ctx_.strm.wait();
  }
  void do_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) override { conv_->backward_data(dy, w, dx); }
  void do_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) override {
    conv_->backward_weights(x, dy, dw, db);
  }

 private:
  std::unique_ptr<ConvOp> conv_;
  ResidualAdd add_;
  DnnlContext& ctx_;
};

}  // namespace

static std::unique_ptr<ConvOp> make_conv_op(const ConvDesc& d, DnnlContext& ctx, bool direct_only) {
  DLT_CHECK(!d.inference_post_act || d.inference_relu, "conv: inference_post_act without inference_relu");
  if (!direct_only && d.inference_sum) {  // (no activation of its own: ConvOp's constructor checks)
    ConvDesc plain = d;
    plain.inference_sum = plain.sum_relu = false;
    std::unique_ptr<ConvOp> op = make_winograd_conv_op(plain);
    if (!op) op = make_blocked_conv_op(plain, ctx);
    if (op) return std::make_unique<SumAfterConvOp>(d, std::move(op), ctx);
  }
  if (!direct_only && (((d.fuse_relu || d.inference_relu) && std::isfinite(d.relu_ceiling)) || d.inference_post_act)) {
    ConvDesc plain = d;
    plain.fuse_relu = false;
    plain.inference_relu = false;
    plain.inference_post_act = false;
    plain.relu_ceiling = std::numeric_limits<float>::infinity();
    std::unique_ptr<ConvOp> op = make_winograd_conv_op(plain);
    if (!op) op = make_blocked_conv_op(plain, ctx);
    if (op) return std::make_unique<ActAfterConvOp>(d, std::move(op), ctx);
  }
  // (A folded activation never reaches these two: they know none, and took the plain problem above.)
  if (!direct_only && !d.inference_post_act && !d.inference_sum) {
    if (auto winograd = make_winograd_conv_op(d)) return winograd;
    if (auto blocked = make_blocked_conv_op(d, ctx)) return blocked;
  }
  if (!d.bf16) return std::make_unique<CpuConvOp>(d, ctx);
  try {
    return std::make_unique<CpuConvOp>(d, ctx);
  } catch (const dnnl::error&) {
    throw DeviceError(no_cpu_bf16_message());
  }
}

namespace {
std::unique_ptr<ConvOp> make_registered(Backend& b, const ConvDesc& d) {
  return guarded("convolution", [&] { return make_conv_op(d, dnnl_context(b), b.options().direct_convolution); });
}
}  // namespace

DLT_REGISTER_OP(ConvDesc, DeviceType::kCpu, "onednn", 0, make_registered, nullptr);

}  // namespace dlt::cpu
