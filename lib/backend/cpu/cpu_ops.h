// Internal to the CPU backend: the oneDNN engine/stream context and what the op kernels share
// (one .cpp per op, each registering its kernel: op_registry.h). Each op builds its primitives, memory descriptors,
// workspaces and scratchpad in its constructor; forward/backward only bind pointers and run.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/dnnl_util.h"
#include "backend/op_registry.h"
#include "backend/ops.h"
#include "util/error.h"

namespace dlt::cpu {

struct DnnlContext {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
};

// The error when oneDNN has no bfloat16 kernel at the ISA it uses (Precision: mixed).
std::string no_cpu_bf16_message();

// The CPU backend's oneDNN engine and stream (b is the CPU backend: its kernels are registered
// for DeviceType::kCpu only).
DnnlContext& dnnl_context(Backend& b);

// oneDNN rejects some configurations at primitive creation; say which op and what to change.
template <class F>
auto guarded(const char* op, F make) {
  try {
    return make();
  } catch (const dnnl::error& e) {
    throw ShapeError(std::string(op) + ": oneDNN cannot create this operation (" + e.what() +
                     "); check its filter size, stride and padding against the input size");
  }
}

// Convolution on blocked activations (conv_blocked_op.cpp): Winograd F(4x4, 3x3) for 3x3 stride-1 convolutions with
// 32+ channels and symmetric padding 0 or 1 on AVX-512; direct convolution for 3x3 stride-1 layers with 64+ input and
// output channels below AVX-512. Null when neither applies. The convolution kernel (conv_op.cpp) tries it first.
std::unique_ptr<ConvOp> make_blocked_conv_op(const ConvDesc& d, DnnlContext& ctx);
// dltrain's own Winograd F(4x4, 3x3) (conv_winograd_op.cpp, winograd.h) for 3x3 stride-1 convolutions with 64+ input
// and output channels on CPUs with AVX2 and FMA but no avx512_core; null elsewhere. The convolution kernel tries it
// first.
std::unique_ptr<ConvOp> make_winograd_conv_op(const ConvDesc& d);
// The oneDNN activation op (act_op.cpp), which the swish-applying convolution runs after its primitive.
std::unique_ptr<ActOp> make_act_op(const ActDesc& d, DnnlContext& ctx);

}  // namespace dlt::cpu
