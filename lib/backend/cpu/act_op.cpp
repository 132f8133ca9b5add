// Element-wise activations over a flat (numel) tensor (ops.h's ActKind). oneDNN eltwise for
// relu, leaky relu, elu, clipped relu (clip_v2: the gradient passes strictly inside (0, c), as
// PyTorch's), sigmoid (logistic), tanh, swish (alpha 1: SiLU), gelu (gelu_erf, gelu_tanh).
// Plain loops for hard sigmoid (oneDNN 2.6 has none) and hard swish (oneDNN 2.6's derivative
// at x = -3 and 3 is 0 and 1; PyTorch's, (2x + 3) / 6 on the closed interval, is -0.5 and 1.5).
// Backward uses the forward input x; dx may alias dy.
#include <algorithm>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"

namespace dlt::cpu {
namespace {

using dnnl::algorithm;
using dnnl::eltwise_backward;
using dnnl::eltwise_forward;
using dnnl::prop_kind;

constexpr int64_t kParallelMin = 1 << 14;  // below this, threads cost more than they save

struct Eltwise {
  algorithm alg;
  float alpha = 0.f, beta = 0.f;  // oneDNN's meaning per algorithm
};

// oneDNN's algorithm and parameters for the kind; false for the kinds computed by loops.
bool dnnl_eltwise(const ActDesc& d, Eltwise& e) {
  switch (d.kind) {
    case ActKind::kRelu:
      e = {algorithm::eltwise_relu, 0.f, 0.f};
      return true;
    case ActKind::kLeakyRelu:
      e = {algorithm::eltwise_relu, d.alpha, 0.f};
      return true;
    case ActKind::kElu:
      e = {algorithm::eltwise_elu, d.alpha, 0.f};
      return true;
    case ActKind::kClippedRelu:
      e = {algorithm::eltwise_clip_v2, 0.f, d.alpha};
      return true;
    case ActKind::kSigmoid:
      e = {algorithm::eltwise_logistic, 0.f, 0.f};
      return true;
    case ActKind::kTanh:
      e = {algorithm::eltwise_tanh, 0.f, 0.f};
      return true;
    case ActKind::kSwish:
      e = {algorithm::eltwise_swish, 1.f, 0.f};
      return true;
    case ActKind::kGelu:
      e = {algorithm::eltwise_gelu_erf, 0.f, 0.f};
      return true;
    case ActKind::kGeluTanh:
      e = {algorithm::eltwise_gelu_tanh, 0.f, 0.f};
      return true;
    case ActKind::kHardSigmoid:
    case ActKind::kHardSwish:
      return false;
  }
  return false;
}

class CpuActOp final : public ActOp, public ImplInfo {
 public:
  CpuActOp(const ActDesc& d, const Eltwise& e, DnnlContext& ctx) : ActOp(d, Device::cpu()), ctx_(ctx) {
    const auto& eng = ctx.eng;
    auto md = vec_md(d.numel);
    eltwise_forward::desc fd(prop_kind::forward_training, e.alg, md, e.alpha, e.beta);
    eltwise_backward::desc bd(e.alg, md, md, e.alpha, e.beta);
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
  DnnlContext& ctx_;
  eltwise_forward::primitive_desc fwd_pd_;
  eltwise_backward::primitive_desc bwd_pd_;
  eltwise_forward fwd_;
  eltwise_backward bwd_;
  Scratchpad pad_;
  memory x_, y_, dx_;  // src, dst / diff_dst, diff_src: (numel)
  Args fwd_args_, bwd_args_;
};

// Hard sigmoid and hard swish, PyTorch's formulas in float (ops.h).
class CpuHardActOp final : public ActOp, public ImplInfo {
 public:
  explicit CpuHardActOp(const ActDesc& d) : ActOp(d, Device::cpu()), d_(d) {}
  std::string impl_info() const override { return "loops"; }

 protected:
  void do_forward(const Tensor& x, Tensor& y) override {
    const float* px = x.data();
    float* py = y.data();
    const int64_t n = d_.numel;
    const float a = d_.alpha, b = d_.beta;
    if (d_.kind == ActKind::kHardSigmoid) {
#pragma omp parallel for simd if (n > kParallelMin) schedule(static)
      for (int64_t i = 0; i < n; ++i) py[i] = std::min(std::max(a * px[i] + b, 0.f), 1.f);
    } else {
#pragma omp parallel for simd if (n > kParallelMin) schedule(static)
      for (int64_t i = 0; i < n; ++i) py[i] = px[i] * std::min(std::max(px[i] + 3.f, 0.f), 6.f) / 6.f;
    }
  }

  void do_backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    const float* px = x.data();
    const float* pdy = dy.data();
    float* pdx = dx.data();
    const int64_t n = d_.numel;
    const float a = d_.alpha, b = d_.beta;
    if (d_.kind == ActKind::kHardSigmoid) {
#pragma omp parallel for simd if (n > kParallelMin) schedule(static)
      for (int64_t i = 0; i < n; ++i) {
        const float v = a * px[i] + b;
        pdx[i] = v > 0.f && v < 1.f ? a * pdy[i] : 0.f;
      }
    } else {
#pragma omp parallel for simd if (n > kParallelMin) schedule(static)
      for (int64_t i = 0; i < n; ++i) {
        const float v = px[i];
        pdx[i] = v < -3.f ? 0.f : v <= 3.f ? pdy[i] * (v / 3.f + 0.5f) : pdy[i];
      }
    }
  }

 private:
  ActDesc d_;
};

}  // namespace

std::unique_ptr<ActOp> make_act_op(const ActDesc& d, DnnlContext& ctx) {
  Eltwise e{};
  if (dnnl_eltwise(d, e)) return std::make_unique<CpuActOp>(d, e, ctx);
  return std::make_unique<CpuHardActOp>(d);
}

namespace {
std::unique_ptr<ActOp> make_registered(Backend& b, const ActDesc& d) {
  return guarded("activation", [&] { return make_act_op(d, dnnl_context(b)); });
}
}  // namespace

DLT_REGISTER_OP(ActDesc, DeviceType::kCpu, "onednn", 0, make_registered, nullptr);

}  // namespace dlt::cpu
