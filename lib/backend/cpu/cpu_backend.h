// The CPU backend: heavy ops on oneDNN (NHWC activations, primitives built once per op),
// element-wise work, losses and optimizer updates as plain OpenMP loops (elementwise.cpp).
// This header does not include oneDNN; the ops live in cpu_ops.h.
#pragma once
#include <memory>
#include <string>

#include "backend/backend.h"

namespace dlt {

// The CPU backend with these options (backend_for(Device::cpu(), options); thread-safe to obtain).
Backend& cpu_backend(const BackendOptions& options = {});
// Sets the OpenMP (and so oneDNN) thread count for subsequent calls.
void cpu_set_threads(int n);
int cpu_threads();

// The instruction set oneDNN dispatches to: dnnl::get_effective_cpu_isa(), the CPU's own
// capped by the environment variable DNNL_MAX_CPU_ISA (so DNNL_MAX_CPU_ISA=AVX2 makes every
// choice below as on an AVX2 CPU). In oneDNN 2.6 Winograd and the bfloat16 convolution and
// inner-product kernels need avx512_core; with AMX, Precision mixed prefers bfloat16 direct
// convolution to float32 Winograd (conv_blocked_op.cpp). Below avx512_core, max-pooling backward
// is dltrain's own (pool_op.cpp: oneDNN 2.6's AVX2 kernel is 3.8x slower), and on AVX2 3x3
// convolutions with 64+ channels run on blocked activations (conv_blocked_op.cpp).
struct CpuIsa {
  std::string name;   // "sse41", "avx2", "avx512_core", "avx512_core_amx", ...
  bool avx2 = false;  // AVX2 or wider
  bool avx512 = false, winograd = false, bf16 = false, amx = false;
  // dltrain's own Winograd F(4x4, 3x3) (winograd.h) where oneDNN has none: AVX2 and FMA, no
  // avx512_core (DNNL_MAX_CPU_ISA=AVX2 counts as none).
  bool winograd_avx2 = false;
};
CpuIsa cpu_isa();

// Debugging aid: CPU ops report the oneDNN implementations they chose, e.g.
// "fwd=brg:avx512_core bwd_d=jit:avx512_core bwd_w=jit:avx512_core".
class ImplInfo {
 public:
  virtual ~ImplInfo() = default;
  virtual std::string impl_info() const = 0;
};
// The implementation string of any op (empty for ops that do not report one).
template <class Op>
std::string impl_info(const Op& op) {
  auto* p = dynamic_cast<const ImplInfo*>(&op);
  return p ? p->impl_info() : std::string();
}

namespace cpu {
struct DnnlContext;  // engine + stream, defined in cpu_ops.h
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options = {});
  ~CpuBackend() override;
  std::string name() const override;

  std::unique_ptr<ConvOp> make_conv(const ConvDesc& d) override;
  std::unique_ptr<DeconvOp> make_deconv(const DeconvDesc& d) override;
  std::unique_ptr<FcOp> make_fc(const FcDesc& d) override;
  std::unique_ptr<PoolOp> make_pool(const PoolDesc& d) override;
  std::unique_ptr<BatchNormOp> make_batch_norm(const BatchNormDesc& d) override;
  std::unique_ptr<BnReluMaxPoolOp> make_bn_relu_max_pool(const BnReluMaxPoolDesc& d) override;
  std::unique_ptr<LrnOp> make_lrn(const LrnDesc& d) override;
  std::unique_ptr<ActOp> make_act(const ActDesc& d) override;
  std::unique_ptr<SoftmaxOp> make_softmax(int64_t rows, int64_t channels) override;
  std::unique_ptr<ConcatOp> make_concat(int64_t n, int64_t h, int64_t w, const std::vector<int64_t>& channels) override;
  std::unique_ptr<LayerNormOp> make_layer_norm(const LayerNormDesc& d) override;

 protected:
  void do_fill(Tensor& t, float value) override;
  void do_copy(const Tensor& src, Tensor& dst) override;
  void do_axpby(float a, const Tensor& x, float b, Tensor& y) override;
  void do_sum(const std::vector<const Tensor*>& xs, Tensor& y) override;
  void do_scale(Tensor& t, float s) override;
  void do_clamp(Tensor& t, float lo, float hi) override;
  double do_sum_squares(const Tensor& t) override;
  void do_l2_norm_into(const Tensor& t, Tensor& norms, int64_t index, bool accumulate) override;
  void do_clip_to_norm(Tensor& t, const Tensor& norms, int64_t index, double threshold) override;
  void do_shift_scale(const Tensor& x, const Tensor& shift, const Tensor& mul, Tensor& y) override;
  void do_dropout_forward(const Tensor& x, Tensor& y, Tensor& mask, float p, uint64_t key, float keep_value) override;
  void do_multiply_same_size(const Tensor& x, const Tensor& m, Tensor& y) override;
  void do_multiply(const std::vector<const Tensor*>& xs, Tensor& y, const ProductDesc& d) override;  // multiply.cpp
  void do_multiply_backward(const Tensor& dy, const std::vector<const Tensor*>& xs, size_t i, Tensor& dx,
                            const ProductDesc& d) override;  // multiply.cpp
  void do_channel_moments(const Tensor& x, int64_t positions, Tensor& mean,
                          Tensor& var) override;  // channel_moments.cpp
  void do_batch_norm_dx_correction(const Tensor& x, int64_t positions, const Tensor& mean, const Tensor& var,
                                   const Tensor& scale, float epsilon, double m, const Tensor& dshift,
                                   const Tensor& dscale,
                                   Tensor& dx) override;  // channel_moments.cpp
  void do_max_pool_indices(const Tensor& x, Tensor& idx, const PoolDesc& d) override;
  void do_max_unpool(const Tensor& x, const Tensor& idx, Tensor& y, const PoolDesc& d) override;
  void do_max_unpool_backward(const Tensor& dy, const Tensor& idx, Tensor& dx, const PoolDesc& d) override;
  void do_crop2d(const Tensor& x, Tensor& y, const CropDesc& d) override;
  void do_crop2d_backward(const Tensor& dy, Tensor& dx, const CropDesc& d) override;
  // channel_ops.cpp
  void do_channel_shuffle(const Tensor& x, Tensor& y, const ChannelShuffleDesc& d) override;
  void do_channel_slice(const Tensor& x, Tensor& y, const ChannelSliceDesc& d) override;
  void do_channel_slice_backward(const Tensor& dy, Tensor& dx, const ChannelSliceDesc& d) override;
  LossTotals do_cross_entropy(const Tensor& probs, const Tensor& labels, const LossOptions& opt,
                              Tensor& dlogits) override;
  void do_optimizer_update(const UpdateRule& rule, const UpdateScalars& k, Tensor& w, const Tensor& g, Tensor& m,
                           Tensor& s) override;

 private:
  std::unique_ptr<cpu::DnnlContext> ctx_;
};

}  // namespace dlt
