// CpuBackend: owns the oneDNN engine and stream. Its kernels register themselves in their
// files: the element-wise ones in elementwise.cpp, each op in its own <op>_op.cpp.
#include "backend/cpu/cpu_backend.h"

#include <omp.h>

#include <mutex>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "util/error.h"

namespace dlt {

// One CpuBackend per BackendOptions asked for, kept for the process (backend.h backend_for).
Backend& cpu_backend(const BackendOptions& options) {
  static std::mutex mu;
  static std::vector<std::unique_ptr<CpuBackend>> backends;
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& b : backends)
    if (b->options() == options) return *b;
  backends.push_back(std::make_unique<CpuBackend>(options));
  return *backends.back();
}

void cpu_set_threads(int n) {
  if (n < 1) throw UsageError("cpu threads: " + std::to_string(n) + " is not a thread count (use 1 or more)");
  omp_set_num_threads(n);
}

int cpu_threads() { return omp_get_max_threads(); }

CpuIsa cpu_isa() {
  using dnnl::cpu_isa;
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  auto has = [isa](cpu_isa a) { return (isa & static_cast<unsigned>(a)) == static_cast<unsigned>(a); };
  // Widest first: the name of the largest set the effective ISA contains.
  static const std::pair<cpu_isa, const char*> kNames[] = {{cpu_isa::avx512_core_amx, "avx512_core_amx"},
                                                           {cpu_isa::avx512_core_bf16, "avx512_core_bf16"},
                                                           {cpu_isa::avx512_core_vnni, "avx512_core_vnni"},
                                                           {cpu_isa::avx512_core, "avx512_core"},
                                                           {cpu_isa::avx512_mic_4ops, "avx512_mic_4ops"},
                                                           {cpu_isa::avx512_mic, "avx512_mic"},
                                                           {cpu_isa::avx2_vnni, "avx2_vnni"},
                                                           {cpu_isa::avx2, "avx2"},
                                                           {cpu_isa::avx, "avx"},
                                                           {cpu_isa::sse41, "sse41"}};
  CpuIsa r;
  r.name = "no SIMD";
  for (const auto& [a, name] : kNames)
    if (has(a)) {
      r.name = name;
      break;
    }
  r.avx2 = has(cpu_isa::avx2);
  r.avx512 = r.winograd = r.bf16 = has(cpu_isa::avx512_core);
  r.amx = has(cpu_isa::avx512_core_amx);
  r.winograd_avx2 = r.avx2 && !r.winograd && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return r;
}

namespace cpu {
std::string no_cpu_bf16_message() {
  return "Precision mixed: oneDNN runs this CPU at " + cpu_isa().name +
         ", which has no bfloat16 convolution or inner-product kernels (they need avx512_core, capped by "
         "DNNL_MAX_CPU_ISA if set); set Precision: single";
}
}  // namespace cpu

CpuBackend::CpuBackend(const BackendOptions& options) : Backend(Device::cpu(), options) {
  try {
    ctx_ = std::make_unique<cpu::DnnlContext>();
  } catch (const dnnl::error& e) {
    throw DeviceError(std::string("cpu backend: oneDNN could not create a CPU engine (") + e.what() +
                      "); check the libdnnl installation");
  }
}

CpuBackend::~CpuBackend() = default;

std::string CpuBackend::name() const {
  const dnnl_version_t* v = dnnl_version();
  const int threads = cpu_threads();
  return "cpu (oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
         ", " + cpu_isa().name + ", " + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)");
}

namespace cpu {
DnnlContext& dnnl_context(Backend& b) { return static_cast<CpuBackend&>(b).dnnl(); }
}  // namespace cpu

}  // namespace dlt
