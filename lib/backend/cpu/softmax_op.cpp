// Softmax over the channel (last) dimension on oneDNN: NHWC data seen as (N*H*W, C) rows.
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/primitive_sets.h"

namespace dlt::cpu {
namespace {

using dnnl::prop_kind;
using dnnl::softmax_backward;
using dnnl::softmax_forward;

class CpuSoftmaxOp final : public SoftmaxOp, public ImplInfo {
 public:
  CpuSoftmaxOp(int64_t rows, int64_t channels, DnnlContext& ctx)
      : SoftmaxOp(SoftmaxDesc{rows, channels}, Device::cpu()),
        ctx_(ctx),
        prims_({prop_kind::forward_training, nc_md(rows, channels), 1},
               {nc_md(rows, channels), nc_md(rows, channels), 1}, nc_md(rows, channels), ctx.eng) {
    dy_ = unbound(nc_md(rows, channels), ctx.eng);
    // Backward reads y (in dst's memory) and dy, writes dx (in src's memory).
    prims_.bwd_args = {{DNNL_ARG_DST, prims_.dst},
                       {DNNL_ARG_DIFF_DST, dy_},
                       {DNNL_ARG_DIFF_SRC, prims_.src},
                       {DNNL_ARG_SCRATCHPAD, prims_.bwd_pad(ctx.eng)}};
  }

  std::string impl_info() const override { return prims_.impl_info(); }

 protected:
  void do_forward(const Tensor& x, Tensor& y) override { prims_.forward(ctx_.strm, x, y); }

  void do_backward(const Tensor& y, const Tensor& dy, Tensor& dx) override {
    bind(prims_.dst, y);
    bind(dy_, dy);
    bind(prims_.src, dx);
    prims_.backward(ctx_.strm);
  }

 private:
  DnnlContext& ctx_;
  PrimitivePair<softmax_forward, softmax_backward> prims_;  // src x / dx, dst y: (rows, C)
  memory dy_;                                               // (rows, C)
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
