// Max and average pooling on oneDNN (NHWC, asymmetric padding). Average pooling counts the
// padding as zeros (pooling_avg_include_padding). Two forward primitives: training (max keeps
// its workspace of indices for backward) and inference (no workspace).
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"

namespace dlt::cpu {
namespace {

using dnnl::algorithm;
using dnnl::pooling_backward;
using dnnl::pooling_forward;
using dnnl::prop_kind;

class CpuPoolOp final : public PoolOp, public ImplInfo {
 public:
  CpuPoolOp(const PoolDesc& d, DnnlContext& ctx) : PoolOp(d, Device::cpu()), d_(d), ctx_(ctx) {
    const auto& eng = ctx.eng;
    DLT_CHECK(d.out_h() > 0 && d.out_w() > 0, "pool: output " << d.out_h() << "x" << d.out_w() << " is empty");
    auto x_md = nhwc_md(d.n, d.h, d.w, d.c);
    auto y_md = nhwc_md(d.n, d.out_h(), d.out_w(), d.c);
    auto alg = d.kind == PoolKind::kMax ? algorithm::pooling_max : algorithm::pooling_avg_include_padding;
    memory::dims strides{d.stride_h, d.stride_w}, kernel{d.kh, d.kw};
    memory::dims pl{d.pad_t, d.pad_l}, pr{d.pad_b, d.pad_r};
    pooling_forward::desc train_d(prop_kind::forward_training, alg, x_md, y_md, strides, kernel, pl, pr);
    pooling_forward::desc infer_d(prop_kind::forward_inference, alg, x_md, y_md, strides, kernel, pl, pr);
    pooling_backward::desc bwd_d(alg, x_md, y_md, strides, kernel, pl, pr);
    train_pd_ = pooling_forward::primitive_desc(train_d, user_scratchpad_attr(), eng);
    infer_pd_ = pooling_forward::primitive_desc(infer_d, user_scratchpad_attr(), eng);
    bwd_pd_ = pooling_backward::primitive_desc(bwd_d, user_scratchpad_attr(), eng, train_pd_);
    train_ = pooling_forward(train_pd_);
    infer_ = pooling_forward(infer_pd_);
    bwd_ = pooling_backward(bwd_pd_);
    pad_.need(train_pd_.scratchpad_desc());
    pad_.need(infer_pd_.scratchpad_desc());
    pad_.need(bwd_pd_.scratchpad_desc());
    pad_.allocate();

    x_ = unbound(x_md, eng);
    y_ = unbound(y_md, eng);
    auto ws_md = train_pd_.workspace_desc();
    has_ws_ = ws_md.get_size() > 0;
    train_args_ = {{DNNL_ARG_SRC, x_},
                   {DNNL_ARG_DST, y_},
                   {DNNL_ARG_SCRATCHPAD, pad_.memory_for(train_pd_.scratchpad_desc(), eng)}};
    infer_args_ = {{DNNL_ARG_SRC, x_},
                   {DNNL_ARG_DST, y_},
                   {DNNL_ARG_SCRATCHPAD, pad_.memory_for(infer_pd_.scratchpad_desc(), eng)}};
    bwd_args_ = {{DNNL_ARG_DIFF_DST, y_},
                 {DNNL_ARG_DIFF_SRC, x_},
                 {DNNL_ARG_SCRATCHPAD, pad_.memory_for(bwd_pd_.scratchpad_desc(), eng)}};
    if (has_ws_) {
      ws_buf_ = host_buffer(ws_md.get_size());
      memory ws(ws_md, eng, ws_buf_.data());
      train_args_[DNNL_ARG_WORKSPACE] = ws;
      bwd_args_[DNNL_ARG_WORKSPACE] = ws;
    }
  }

  std::string impl_info() const override {
    return "fwd=" + impl_of(train_pd_) + " infer=" + impl_of(infer_pd_) + " bwd=" + impl_of(bwd_pd_);
  }

 protected:
  void do_forward(const Tensor& x, Tensor& y, bool training) override {
    bind(x_, x);
    bind(y_, y);
    if (training) {
      train_.execute(ctx_.strm, train_args_);
    } else {
      infer_.execute(ctx_.strm, infer_args_);
    }
    ctx_.strm.wait();
  }

  void do_backward(const Tensor& dy, Tensor& dx) override {
    bind(y_, dy);
    bind(x_, dx);
    bwd_.execute(ctx_.strm, bwd_args_);
    ctx_.strm.wait();
  }

 private:
  PoolDesc d_;
  DnnlContext& ctx_;
  pooling_forward::primitive_desc train_pd_, infer_pd_;
  pooling_backward::primitive_desc bwd_pd_;
  pooling_forward train_, infer_;
  pooling_backward bwd_;
  Scratchpad pad_;
  memory x_, y_;  // (diff_)src, (diff_)dst
  bool has_ws_ = false;
  Tensor ws_buf_;  // max-pooling indices of the last training forward
  Args train_args_, infer_args_, bwd_args_;
};

}  // namespace

std::unique_ptr<PoolOp> make_pool_op(const PoolDesc& d, DnnlContext& ctx) {
  return std::make_unique<CpuPoolOp>(d, ctx);
}

}  // namespace dlt::cpu
