// Convolution in dltrain's own Winograd F(4x4, 3x3) (winograd.h), all three passes on the
// NHWC tensors, for 3x3 stride-1 layers with 64+ input and output channels on CPUs with AVX2
// and FMA but without avx512_core, where oneDNN 2.6 has no Winograd (its jit_wino_4x3 is
// AVX-512 only; conv_blocked_op.cpp runs that one). make_conv_op tries this op first.
// Results differ from direct convolution by ~1e-5 relative (the transforms round
// differently); the agreement tests bound it.
#include <memory>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/winograd.h"

namespace dlt::cpu {
namespace {

// Dense convolutions (groups 1) where it was measured faster than oneDNN's direct kernels
// (docs/performance.md, AVX2), and where the 4x4 output tiles save at least 2.25x of direct
// convolution's multiplies (36 per tile against 9 per output pixel): outputs of 3x3, 6x6 and
// larger, not 1x1, 2x2 or 5x5.
bool eligible(const ConvDesc& d, const CpuIsa& isa) {
  const int64_t oh = d.out_h(), ow = d.out_w(), tiles = ((oh + 3) / 4) * ((ow + 3) / 4);
  return isa.winograd_avx2 && !d.bf16 && d.groups == 1 && d.kh == 3 && d.kw == 3 && d.stride_h == 1 &&
         d.stride_w == 1 && d.dilation_h == 1 && d.dilation_w == 1 && d.c >= 64 && d.k >= 64 && oh * ow >= 9 * tiles;
}

class WinogradConvOp final : public ConvOp, public ImplInfo {
 public:
  explicit WinogradConvOp(const ConvDesc& d)
      : ConvOp(d, Device::cpu()),
        d_(d),
        fwd_({d.n, d.h, d.w, d.c, d.k, d.out_h(), d.out_w(), d.pad_t, d.pad_l}),
        // The data gradient is a 3x3 convolution of dy with the rotated filters, padded 2 - pad.
        bwd_d_({d.n, d.out_h(), d.out_w(), d.k, d.c, d.h, d.w, 2 - d.pad_t, 2 - d.pad_l}) {}

  std::string impl_info() const override {
    return "fwd=dlt_winograd_4x3:avx2 bwd_d=dlt_winograd_4x3:avx2 bwd_w=dlt_winograd_4x3:avx2";
  }

 protected:
  void do_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, bool relu) override {
    fwd_.forward(x.data(), w.data(), false, b.defined() ? b.data() : nullptr, relu || d_.fuse_relu, y.data());
  }

  void do_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) override {
    bwd_d_.forward(dy.data(), w.data(), true, nullptr, false, dx.data());
  }

  void do_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) override {
    fwd_.backward_weights(x.data(), dy.data(), dw.data(), db.defined() ? db.data() : nullptr);
  }

 private:
  ConvDesc d_;
  WinogradConv fwd_, bwd_d_;
};

}  // namespace

std::unique_ptr<ConvOp> make_winograd_conv_op(const ConvDesc& d) {
  if (!eligible(d, cpu_isa())) return nullptr;
  return std::make_unique<WinogradConvOp>(d);
}

}  // namespace dlt::cpu
