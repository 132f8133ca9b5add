// Internal to the CPU backend: the oneDNN engine/stream context and the factories of the
// oneDNN-backed ops (one .cpp per op). Each op builds its primitives, memory descriptors,
// workspaces and scratchpad in its constructor; forward/backward only bind pointers and run.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/dnnl_util.h"
#include "backend/ops.h"
#include "util/error.h"

namespace dlt::cpu {

struct DnnlContext {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
};

// The error when oneDNN has no bfloat16 kernel at the ISA it uses (Precision: mixed).
std::string no_cpu_bf16_message();

// direct_only (ConvolutionAlgorithm: direct): oneDNN's NHWC direct convolution, never the
// Winograd or blocked ops below.
std::unique_ptr<ConvOp> make_conv_op(const ConvDesc& d, DnnlContext& ctx, bool direct_only);
// Convolution on blocked activations (conv_blocked_op.cpp): Winograd F(4x4, 3x3) for 3x3 stride-1 convolutions with
// 32+ channels and symmetric padding 0 or 1 on AVX-512; direct convolution for 3x3 stride-1 layers with 64+ input and
// output channels below AVX-512. Null when neither applies. make_conv_op tries it first.
std::unique_ptr<ConvOp> make_blocked_conv_op(const ConvDesc& d, DnnlContext& ctx);
// dltrain's own Winograd F(4x4, 3x3) (conv_winograd_op.cpp, winograd.h) for 3x3 stride-1 convolutions with 64+ input
// and output channels on CPUs with AVX2 and FMA but no avx512_core; null elsewhere. make_conv_op tries it first.
std::unique_ptr<ConvOp> make_winograd_conv_op(const ConvDesc& d);
std::unique_ptr<DeconvOp> make_deconv_op(const DeconvDesc& d, DnnlContext& ctx);
std::unique_ptr<FcOp> make_fc_op(const FcDesc& d, DnnlContext& ctx);
std::unique_ptr<PoolOp> make_pool_op(const PoolDesc& d, DnnlContext& ctx);
std::unique_ptr<BatchNormOp> make_batch_norm_op(const BatchNormDesc& d, DnnlContext& ctx);
std::unique_ptr<BnReluMaxPoolOp> make_bn_relu_max_pool_op(const BnReluMaxPoolDesc& d);
std::unique_ptr<LrnOp> make_lrn_op(const LrnDesc& d, DnnlContext& ctx);
std::unique_ptr<ActOp> make_act_op(const ActDesc& d, DnnlContext& ctx);
std::unique_ptr<SoftmaxOp> make_softmax_op(int64_t rows, int64_t channels, DnnlContext& ctx);
std::unique_ptr<ConcatOp> make_concat_op(int64_t n, int64_t h, int64_t w, const std::vector<int64_t>& channels);
std::unique_ptr<LayerNormOp> make_layer_norm_op(const LayerNormDesc& d, DnnlContext& ctx);

}  // namespace dlt::cpu
