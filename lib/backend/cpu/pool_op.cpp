// Max and average pooling on oneDNN (NHWC, asymmetric padding). Average pooling counts the
// padding as zeros (pooling_avg_include_padding) or leaves it out (pooling_avg_exclude_padding).
// Two forward primitives: training (max keeps its workspace of indices for backward) and
// inference (no workspace).
//
// Max-pooling backward below avx512_core is dltrain's own, from oneDNN's workspace: oneDNN
// 2.6's AVX2 kernel is slow on overlapping windows (CIFAR-10's first pooling layer,
// 100x32x32x32, 3x3 stride 2, one thread: 3.6-4.3 ms against 0.5 ms for its AVX-512 kernel).
// Its AVX-512 kernel is kept. Measurements: docs/performance.md, "AVX2".
#include <algorithm>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/primitive_sets.h"

namespace dlt::cpu {
namespace {

// One image of max-pooling backward, NHWC, from oneDNN's workspace `ws` (u8 per output and
// channel: the window position kh * KW + kw of its maximum; the layout of dy). Each input
// pixel gathers from the outputs whose windows cover it (at most ceil(KH/SH) x ceil(KW/SW)):
// dx is written once, with no zeroing pass and no read-modify-write (a scatter form that
// zeroed dx first was slower in training, where dx is not in cache). Per output, all channels at once: a
// compare and an add the compiler vectorizes (AVX2 where the CPU has it: target_clones).
__attribute__((target_clones("avx2", "default"))) void max_pool_backward_image(const float* __restrict dy,
                                                                               const uint8_t* __restrict ws,
                                                                               float* __restrict dx,
                                                                               const PoolDesc& d) {
  const int64_t c = d.c, oh_n = d.out_h(), ow_n = d.out_w();
  // The outputs whose window covers input row i: o * stride - pad <= i <= o * stride - pad + k - 1.
  auto first = [](int64_t i, int64_t pad, int64_t k, int64_t stride) {
    const int64_t lo = i + pad - k + 1;
    return lo <= 0 ? 0 : (lo + stride - 1) / stride;
  };
  for (int64_t ih = 0; ih < d.h; ++ih) {
    const int64_t oh0 = first(ih, d.pad_t, d.kh, d.stride_h), oh1 = std::min(oh_n - 1, (ih + d.pad_t) / d.stride_h);
    for (int64_t iw = 0; iw < d.w; ++iw) {
      const int64_t ow0 = first(iw, d.pad_l, d.kw, d.stride_w), ow1 = std::min(ow_n - 1, (iw + d.pad_l) / d.stride_w);
      float* __restrict x = dx + (ih * d.w + iw) * c;
      for (int64_t i = 0; i < c; ++i) x[i] = 0.f;
      for (int64_t oh = oh0; oh <= oh1; ++oh)
        for (int64_t ow = ow0; ow <= ow1; ++ow) {
          const auto at =
              static_cast<uint8_t>((ih - oh * d.stride_h + d.pad_t) * d.kw + (iw - ow * d.stride_w + d.pad_l));
          const int64_t o = (oh * ow_n + ow) * c;
          const float* __restrict g = dy + o;
          const uint8_t* __restrict k = ws + o;
          for (int64_t i = 0; i < c; ++i) {
            const float v = g[i];  // read unconditionally: a plain vector load, not a masked one
            x[i] += k[i] == at ? v : 0.f;
          }
        }
    }
  }
}

using dnnl::algorithm;
using dnnl::pooling_backward;
using dnnl::pooling_forward;
using dnnl::prop_kind;

algorithm pool_algorithm(const PoolDesc& d) {
  if (d.kind == PoolKind::kMax) return algorithm::pooling_max;
  return d.exclude_padding ? algorithm::pooling_avg_exclude_padding : algorithm::pooling_avg_include_padding;
}
memory::desc pool_x_md(const PoolDesc& d) { return nhwc_md(d.n, d.h, d.w, d.c); }
memory::desc pool_y_md(const PoolDesc& d) { return nhwc_md(d.n, d.out_h(), d.out_w(), d.c); }
pooling_forward::desc forward_desc(const PoolDesc& d, prop_kind prop) {
  return pooling_forward::desc(prop, pool_algorithm(d), pool_x_md(d), pool_y_md(d), {d.stride_h, d.stride_w},
                               {d.kh, d.kw}, {d.pad_t, d.pad_l}, {d.pad_b, d.pad_r});
}
pooling_backward::desc backward_desc(const PoolDesc& d) {
  return pooling_backward::desc(pool_algorithm(d), pool_x_md(d), pool_y_md(d), {d.stride_h, d.stride_w}, {d.kh, d.kw},
                                {d.pad_t, d.pad_l}, {d.pad_b, d.pad_r});
}
// d, once its output is known not to be empty.
const PoolDesc& with_output(const PoolDesc& d) {
  DLT_CHECK(d.out_h() > 0 && d.out_w() > 0, "pool: output " << d.out_h() << "x" << d.out_w() << " is empty");
  return d;
}

class CpuPoolOp final : public PoolOp, public ImplInfo {
 public:
  CpuPoolOp(const PoolDesc& d, DnnlContext& ctx)
      : PoolOp(d, Device::cpu()),
        d_(with_output(d)),
        ctx_(ctx),
        prims_(forward_desc(d, prop_kind::forward_training), forward_desc(d, prop_kind::forward_inference),
               backward_desc(d), ctx.eng) {
    const auto& eng = ctx.eng;
    auto y_md = pool_y_md(d);
    x_ = unbound(pool_x_md(d), eng);
    y_ = unbound(y_md, eng);
    auto ws_md = prims_.train_pd.workspace_desc();
    has_ws_ = ws_md.get_size() > 0;
    train_args_ = {{DNNL_ARG_SRC, x_}, {DNNL_ARG_DST, y_}, {DNNL_ARG_SCRATCHPAD, prims_.train_pad(eng)}};
    infer_args_ = {{DNNL_ARG_SRC, x_}, {DNNL_ARG_DST, y_}, {DNNL_ARG_SCRATCHPAD, prims_.infer_pad(eng)}};
    bwd_args_ = {{DNNL_ARG_DIFF_DST, y_}, {DNNL_ARG_DIFF_SRC, x_}, {DNNL_ARG_SCRATCHPAD, prims_.bwd_pad(eng)}};
    if (has_ws_) {
      ws_buf_ = host_buffer(ws_md.get_size());
      memory ws(ws_md, eng, ws_buf_.data());
      train_args_[DNNL_ARG_WORKSPACE] = ws;
      bwd_args_[DNNL_ARG_WORKSPACE] = ws;
    }
    // The own backward needs the workspace as it reads it: u8 indices in dy's layout.
    own_backward_ = d.kind == PoolKind::kMax && !cpu_isa().avx512 && has_ws_ && d.kh * d.kw <= 256 &&
                    ws_md == memory::desc(y_md.dims(), memory::data_type::u8, memory::format_tag::acdb);
  }

  std::string impl_info() const override {
    return "fwd=" + impl_of(prims_.train_pd) + " infer=" + impl_of(prims_.infer_pd) +
           " bwd=" + (own_backward_ ? std::string("dltrain") : impl_of(prims_.bwd_pd));
  }

 protected:
  void do_forward(const Tensor& x, Tensor& y, bool training) override {
    bind(x_, x);
    bind(y_, y);
    prims_.forward(ctx_.strm, training, train_args_, infer_args_);
  }

  void do_backward(const Tensor& dy, Tensor& dx) override {
    if (own_backward_) {
      const float* g = dy.data();
      const auto* ws = reinterpret_cast<const uint8_t*>(ws_buf_.data());
      float* x = dx.data();
      const size_t in = size_t(d_.h * d_.w * d_.c), out = size_t(d_.out_h() * d_.out_w() * d_.c);
#pragma omp parallel for schedule(static)
      for (int64_t n = 0; n < d_.n; ++n) max_pool_backward_image(g + n * out, ws + n * out, x + n * in, d_);
      return;
    }
    bind(y_, dy);
    bind(x_, dx);
    run(prims_.bwd, ctx_.strm, bwd_args_);
  }

 private:
  PoolDesc d_;
  DnnlContext& ctx_;
  PrimitiveTriple<pooling_forward, pooling_backward> prims_;
  memory x_, y_;  // (diff_)src, (diff_)dst
  bool has_ws_ = false;
  bool own_backward_ = false;  // max pooling below avx512_core: max_pool_backward_image
  Tensor ws_buf_;              // max-pooling indices of the last training forward
  Args train_args_, infer_args_, bwd_args_;
};

}  // namespace

static std::unique_ptr<PoolOp> make_pool_op(const PoolDesc& d, DnnlContext& ctx) {
  return std::make_unique<CpuPoolOp>(d, ctx);
}

namespace {
std::unique_ptr<PoolOp> make_registered(Backend& b, const PoolDesc& d) {
  return guarded("pooling", [&] { return make_pool_op(d, dnnl_context(b)); });
}
}  // namespace

DLT_REGISTER_OP(PoolDesc, DeviceType::kCpu, "onednn", 0, make_registered, nullptr);

}  // namespace dlt::cpu
