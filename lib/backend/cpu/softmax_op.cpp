// Softmax over the channel (last) dimension on oneDNN: NHWC data seen as (N*H*W, C) rows.
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"

namespace dlt::cpu {
namespace {

using dnnl::prop_kind;
using dnnl::softmax_backward;
using dnnl::softmax_forward;

class CpuSoftmaxOp final : public SoftmaxOp, public ImplInfo {
 public:
  CpuSoftmaxOp(int64_t rows, int64_t channels, DnnlContext& ctx)
      : SoftmaxOp(SoftmaxDesc{rows, channels}, Device::cpu()), ctx_(ctx) {
    const auto& eng = ctx.eng;
    auto md = nc_md(rows, channels);
    softmax_forward::desc fd(prop_kind::forward_training, md, 1);
    softmax_backward::desc bd(md, md, 1);
    fwd_pd_ = softmax_forward::primitive_desc(fd, user_scratchpad_attr(), eng);
    bwd_pd_ = softmax_backward::primitive_desc(bd, user_scratchpad_attr(), eng, fwd_pd_);
    fwd_ = softmax_forward(fwd_pd_);
    bwd_ = softmax_backward(bwd_pd_);
    pad_.need(fwd_pd_.scratchpad_desc());
    pad_.need(bwd_pd_.scratchpad_desc());
    pad_.allocate();
    x_ = unbound(md, eng);
    y_ = unbound(md, eng);
    dy_ = unbound(md, eng);
    fwd_args_ = {
        {DNNL_ARG_SRC, x_}, {DNNL_ARG_DST, y_}, {DNNL_ARG_SCRATCHPAD, pad_.memory_for(fwd_pd_.scratchpad_desc(), eng)}};
    bwd_args_ = {{DNNL_ARG_DST, y_},
                 {DNNL_ARG_DIFF_DST, dy_},
                 {DNNL_ARG_DIFF_SRC, x_},
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

  void do_backward(const Tensor& y, const Tensor& dy, Tensor& dx) override {
    bind(y_, y);
    bind(dy_, dy);
    bind(x_, dx);
    bwd_.execute(ctx_.strm, bwd_args_);
    ctx_.strm.wait();
  }

 private:
  DnnlContext& ctx_;
  softmax_forward::primitive_desc fwd_pd_;
  softmax_backward::primitive_desc bwd_pd_;
  softmax_forward fwd_;
  softmax_backward bwd_;
  Scratchpad pad_;
  memory x_, y_, dy_;  // (rows, C): src / diff_src, dst, diff_dst
  Args fwd_args_, bwd_args_;
};

}  // namespace

static std::unique_ptr<SoftmaxOp> make_softmax_op(int64_t rows, int64_t channels, DnnlContext& ctx) {
  return std::make_unique<CpuSoftmaxOp>(rows, channels, ctx);
}

namespace {
std::unique_ptr<SoftmaxOp> make_registered(Backend& b, const SoftmaxDesc& d) {
  return guarded("softmax", [&] { return make_softmax_op(d.rows, d.channels, dnnl_context(b)); });
}
}  // namespace

DLT_REGISTER_OP(SoftmaxDesc, DeviceType::kCpu, "onednn", 0, make_registered, nullptr);

}  // namespace dlt::cpu
