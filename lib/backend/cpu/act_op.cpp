// ReLU, leaky ReLU and ELU on oneDNN eltwise over a flat (numel) tensor. Backward uses the
// forward input x (relu: dx = dy where x > 0, else alpha * dy); dx may alias dy.
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"

namespace dlt::cpu {
namespace {

using dnnl::algorithm;
using dnnl::eltwise_backward;
using dnnl::eltwise_forward;
using dnnl::prop_kind;

class CpuActOp final : public ActOp, public ImplInfo {
 public:
  CpuActOp(const ActDesc& d, DnnlContext& ctx) : ActOp(d, Device::cpu()), d_(d), ctx_(ctx) {
    const auto& eng = ctx.eng;
    auto md = vec_md(d.numel);
    auto alg = d.kind == ActKind::kElu ? algorithm::eltwise_elu : algorithm::eltwise_relu;
    float alpha = d.kind == ActKind::kRelu ? 0.f : d.alpha;
    eltwise_forward::desc fd(prop_kind::forward_training, alg, md, alpha, 0.f);
    eltwise_backward::desc bd(alg, md, md, alpha, 0.f);
    fwd_pd_ = eltwise_forward::primitive_desc(fd, user_scratchpad_attr(), eng);
    bwd_pd_ = eltwise_backward::primitive_desc(bd, user_scratchpad_attr(), eng, fwd_pd_);
    fwd_ = eltwise_forward(fwd_pd_);
    bwd_ = eltwise_backward(bwd_pd_);
    pad_.need(fwd_pd_.scratchpad_desc());
    pad_.need(bwd_pd_.scratchpad_desc());
    pad_.allocate();
    x_ = unbound(md, eng);
    y_ = unbound(md, eng);
    dx_ = unbound(md, eng);
    fwd_args_ = {
        {DNNL_ARG_SRC, x_}, {DNNL_ARG_DST, y_}, {DNNL_ARG_SCRATCHPAD, pad_.memory_for(fwd_pd_.scratchpad_desc(), eng)}};
    bwd_args_ = {{DNNL_ARG_SRC, x_},
                 {DNNL_ARG_DIFF_DST, y_},
                 {DNNL_ARG_DIFF_SRC, dx_},
                 {DNNL_ARG_SCRATCHPAD, pad_.memory_for(bwd_pd_.scratchpad_desc(), eng)}};
  }

  std::string impl_info() const override { return "fwd=" + impl_of(fwd_pd_) + " bwd=" + impl_of(bwd_pd_); }

 protected:
  void do_forward(const Tensor& x, Tensor& y) override {
    bind(x_, x);
    bind(y_, y);
    fwd_.execute(ctx_.strm, fwd_args_);
    ctx_.strm.wait();
  }

  void do_backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    bind(x_, x);
    bind(y_, dy);
    bind(dx_, dx);
    bwd_.execute(ctx_.strm, bwd_args_);
    ctx_.strm.wait();
  }

 private:
  ActDesc d_;
  DnnlContext& ctx_;
  eltwise_forward::primitive_desc fwd_pd_;
  eltwise_backward::primitive_desc bwd_pd_;
  eltwise_forward fwd_;
  eltwise_backward bwd_;
  Scratchpad pad_;
  memory x_, y_, dx_;  // src, dst / diff_dst, diff_src: (numel)
  Args fwd_args_, bwd_args_;
};

}  // namespace

std::unique_ptr<ActOp> make_act_op(const ActDesc& d, DnnlContext& ctx) { return std::make_unique<CpuActOp>(d, ctx); }

}  // namespace dlt::cpu
