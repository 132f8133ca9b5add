// Local response normalization across channels on oneDNN (NHWC). Training forward keeps the
// workspace backward needs; inference forward has none. oneDNN sums only size-1 channels for
// an even window, so even sizes use a plain OpenMP implementation of the documented window
// [c - (size-1)/2, c - (size-1)/2 + size) (Caffe's and Torch's convention). So do windows 1
// and 7 or more: oneDNN 2.6 crashes creating size 1, and its NHWC backward of sizes 7..15 is
// wrong when C is not a multiple of 8 (e.g. 20 channels: 30-50% off the reference).
#include <cmath>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/primitive_sets.h"

namespace dlt::cpu {
namespace {

using dnnl::algorithm;
using dnnl::lrn_backward;
using dnnl::lrn_forward;
using dnnl::prop_kind;

lrn_forward::desc forward_desc(const LrnDesc& d, prop_kind prop) {
  return lrn_forward::desc(prop, algorithm::lrn_across_channels, nhwc_md(d.n, d.h, d.w, d.c), d.size, d.alpha, d.beta,
                           d.k);
}
lrn_backward::desc backward_desc(const LrnDesc& d) {
  const auto x_md = nhwc_md(d.n, d.h, d.w, d.c);
  return lrn_backward::desc(algorithm::lrn_across_channels, x_md, x_md, d.size, d.alpha, d.beta, d.k);
}

class CpuLrnOp final : public LrnOp, public ImplInfo {
 public:
  CpuLrnOp(const LrnDesc& d, DnnlContext& ctx)
      : LrnOp(d, Device::cpu()),
        d_(d),
        ctx_(ctx),
        prims_(forward_desc(d, prop_kind::forward_training), forward_desc(d, prop_kind::forward_inference),
               backward_desc(d), ctx.eng) {
    const auto& eng = ctx.eng;
    auto x_md = nhwc_md(d.n, d.h, d.w, d.c);
    x_ = unbound(x_md, eng);
    y_ = unbound(x_md, eng);
    dx_ = unbound(x_md, eng);
    train_args_ = {{DNNL_ARG_SRC, x_}, {DNNL_ARG_DST, y_}, {DNNL_ARG_SCRATCHPAD, prims_.train_pad(eng)}};
    infer_args_ = {{DNNL_ARG_SRC, x_}, {DNNL_ARG_DST, y_}, {DNNL_ARG_SCRATCHPAD, prims_.infer_pad(eng)}};
    bwd_args_ = {{DNNL_ARG_SRC, x_},
                 {DNNL_ARG_DIFF_DST, y_},
                 {DNNL_ARG_DIFF_SRC, dx_},
                 {DNNL_ARG_SCRATCHPAD, prims_.bwd_pad(eng)}};
    auto ws_md = prims_.train_pd.workspace_desc();
    if (ws_md.get_size() > 0) {
      ws_buf_ = host_buffer(ws_md.get_size());
      memory ws(ws_md, eng, ws_buf_.data());
      train_args_[DNNL_ARG_WORKSPACE] = ws;
      bwd_args_[DNNL_ARG_WORKSPACE] = ws;
    }
  }

  std::string impl_info() const override { return prims_.impl_info(); }

 protected:
  void do_forward(const Tensor& x, Tensor& y, bool training) override {
    bind(x_, x);
    bind(y_, y);
    prims_.forward(ctx_.strm, training, train_args_, infer_args_);
  }

  void do_backward(const Tensor& x, const Tensor& dy, Tensor& dx) override {
    bind(x_, x);
    bind(y_, dy);
    bind(dx_, dx);
    run(prims_.bwd, ctx_.strm, bwd_args_);
  }

 private:
  LrnDesc d_;
  DnnlContext& ctx_;
  PrimitiveTriple<lrn_forward, lrn_backward> prims_;
  memory x_, y_, dx_;  // src, dst / diff_dst, diff_src: (N, H, W, C)
  Tensor ws_buf_;      // what the last training forward left for backward
  Args train_args_, infer_args_, bwd_args_;
};

// Windows oneDNN gets wrong (even, 1, 7+): direct loops over pixels; ws_ holds the
// denominators s = k + a/n sum x^2.
class ManualLrnOp final : public LrnOp, public ImplInfo {
 public:
  explicit ManualLrnOp(const LrnDesc& d) : LrnOp(d, Device::cpu()), d_(d), ws_(Shape{d.n, d.h, d.w, d.c}) {}

 protected:
  void do_forward(const Tensor& x, Tensor& y, bool) override {
    const float* px = x.data();
    float* py = y.data();
    float* ps = ws_.data();
    const int64_t pixels = d_.n * d_.h * d_.w, c = d_.c;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < pixels; ++p) {
      denominators(px + p * c, ps + p * c);
      for (int64_t i = 0; i < c; ++i) py[p * c + i] = px[p * c + i] * std::pow(ps[p * c + i], -d_.beta);
    }
  }

  void do_backward(const Tensor& x, const Tensor& dy, Tensor& dx) override {
    const float* px = x.data();
    const float* pdy = dy.data();
    float* pdx = dx.data();
    float* ps = ws_.data();
    const int64_t pixels = d_.n * d_.h * d_.w, c = d_.c, half = (d_.size - 1) / 2;
    const float coef = -2.f * d_.alpha * d_.beta / static_cast<float>(d_.size);
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < pixels; ++p) {
      const float* xp = px + p * c;
      const float* dyp = pdy + p * c;
      float* s = ps + p * c;
      denominators(xp, s);
      for (int64_t j = 0; j < c; ++j) {
        // channels i whose window holds j: i in [j + half - size + 1, j + half]
        const int64_t lo = std::max<int64_t>(j + half - d_.size + 1, 0);
        const int64_t hi = std::min<int64_t>(j + half, c - 1);
        float acc = 0.f;
        for (int64_t i = lo; i <= hi; ++i) acc += dyp[i] * xp[i] * std::pow(s[i], -d_.beta - 1.f);
        pdx[p * c + j] = dyp[j] * std::pow(s[j], -d_.beta) + coef * xp[j] * acc;
      }
    }
  }

  std::string impl_info() const override { return "manual (window " + std::to_string(d_.size) + ")"; }

 private:
  void denominators(const float* x, float* s) const {
    const int64_t c = d_.c, half = (d_.size - 1) / 2;
    const float a = d_.alpha / static_cast<float>(d_.size);
    for (int64_t i = 0; i < c; ++i) {
      const int64_t lo = std::max<int64_t>(i - half, 0), hi = std::min<int64_t>(i - half + d_.size, c);
      float sum = 0.f;
      for (int64_t j = lo; j < hi; ++j) sum += x[j] * x[j];
      s[i] = d_.k + a * sum;
    }
  }

  LrnDesc d_;
  Tensor ws_;  // (N, H, W, C) denominators
};

}  // namespace

static std::unique_ptr<LrnOp> make_lrn_op(const LrnDesc& d, DnnlContext& ctx) {
  DLT_CHECK(d.size >= 1, "lrn: window size " << d.size << " must be at least 1");
  if (d.size % 2 == 0 || d.size == 1 || d.size > 5) return std::make_unique<ManualLrnOp>(d);
  return std::make_unique<CpuLrnOp>(d, ctx);
}

namespace {
std::unique_ptr<LrnOp> make_registered(Backend& b, const LrnDesc& d) {
  return guarded("cross-channel normalization", [&] { return make_lrn_op(d, dnnl_context(b)); });
}
}  // namespace

DLT_REGISTER_OP(LrnDesc, DeviceType::kCpu, "onednn", 0, make_registered, nullptr);

}  // namespace dlt::cpu
