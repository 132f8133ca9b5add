// Element-wise activations over a flat (numel) tensor (ops.h's ActKind). oneDNN eltwise for
// relu, leaky relu, elu, clipped relu (clip_v2: the gradient passes strictly inside (0, c), as
// PyTorch's), sigmoid (logistic), tanh, swish (alpha 1: SiLU), gelu (gelu_erf, gelu_tanh).
// Plain loops for hard sigmoid (oneDNN 2.6 has none) and hard swish (oneDNN 2.6's derivative
// at x = -3 and 3 is 0 and 1; PyTorch's, (2x + 3) / 6 on the closed interval, is -0.5 and 1.5).
// Backward uses the forward input x; dx may alias dy.
#include <algorithm>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/primitive_sets.h"

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
  CpuActOp(const ActDesc& d, const Eltwise& e, DnnlContext& ctx)
      : ActOp(d, Device::cpu()),
        ctx_(ctx),
        prims_({prop_kind::forward_training, e.alg, vec_md(d.numel), e.alpha, e.beta},
               {e.alg, vec_md(d.numel), vec_md(d.numel), e.alpha, e.beta}, vec_md(d.numel), ctx.eng) {
    dx_ = unbound(vec_md(d.numel), ctx.eng);
    // Backward reads the forward input x and dy (in dst's memory), writes dx.
    prims_.bwd_args = {{DNNL_ARG_SRC, prims_.src},
                       {DNNL_ARG_DIFF_DST, prims_.dst},
                       {DNNL_ARG_DIFF_SRC, dx_},
                       {DNNL_ARG_SCRATCHPAD, prims_.bwd_pad(ctx.eng)}};
  }

  std::string impl_info() const override { return prims_.impl_info(); }

 protected:
  void do_forward(const Tensor& x, Tensor& y) override { prims_.forward(ctx_.strm, x, y); }

  void do_backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    bind(prims_.src, x);
    bind(prims_.dst, dy);
    bind(dx_, dx);
    prims_.backward(ctx_.strm);
  }

 private:
  DnnlContext& ctx_;
  PrimitivePair<eltwise_forward, eltwise_backward> prims_;  // src x, dst y / dy: (numel)
  memory dx_;                                               // (numel)
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
        // every value computed before the choice: the loop vectorizes (selects, no branches)
        const float v = a * px[i] + b, ag = a * pdy[i];
        pdx[i] = (v > 0.f) & (v < 1.f) ? ag : 0.f;
      }
    } else {
#pragma omp parallel for simd if (n > kParallelMin) schedule(static)
      for (int64_t i = 0; i < n; ++i) {
        const float v = px[i], g = pdy[i], middle = g * (v / 3.f + 0.5f);
        pdx[i] = v < -3.f ? 0.f : v <= 3.f ? middle : g;
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
