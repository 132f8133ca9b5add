// Max and average pooling on oneDNN (NHWC, asymmetric padding). Average pooling counts the
// padding as zeros (pooling_avg_include_padding). Two forward primitives: training (max keeps
// its workspace of indices for backward) and inference (no workspace).
//
// Max-pooling backward below avx512_core is dltrain's own, from oneDNN's workspace: oneDNN
// 2.6's AVX2 kernel is slow on overlapping windows (CIFAR-10's first pooling layer,
// 100x32x32x32, 3x3 stride 2, one thread: 3.6-4.3 ms against 0.5 ms for its AVX-512 kernel).
// Its AVX-512 kernel is kept. Measurements: docs/performance.md, "AVX2".
#include <algorithm>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"

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
    // The own backward needs the workspace as it reads it: u8 indices in dy's layout.
    own_backward_ = d.kind == PoolKind::kMax && !cpu_isa().avx512 && has_ws_ && d.kh * d.kw <= 256 &&
                    ws_md == memory::desc(y_md.dims(), memory::data_type::u8, memory::format_tag::acdb);
  }

  std::string impl_info() const override {
    return "fwd=" + impl_of(train_pd_) + " infer=" + impl_of(infer_pd_) +
           " bwd=" + (own_backward_ ? std::string("dltrain") : impl_of(bwd_pd_));
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
