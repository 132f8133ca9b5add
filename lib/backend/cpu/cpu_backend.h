// The CPU backend: heavy ops on oneDNN (NHWC activations, primitives built once per op),
// element-wise work, losses and optimizer updates as plain OpenMP loops (elementwise.cpp), each
// registered as a DeviceType::kCpu kernel in its file (op_registry.h). This header does not
// include oneDNN; what the op files share is in cpu_ops.h.
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

  // The oneDNN engine and stream its op kernels use (cpu::dnnl_context).
  cpu::DnnlContext& dnnl() const { return *ctx_; }

 private:
  std::unique_ptr<cpu::DnnlContext> ctx_;
};

}  // namespace dlt
