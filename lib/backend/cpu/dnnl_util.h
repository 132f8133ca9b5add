// Small oneDNN helpers shared by the CPU ops: memory descriptors for NHWC/2-D/1-D float32
// tensors, unbound memory objects that wrap Tensor::data() per call without copies, and an
// op-owned scratchpad buffer. Only lib/backend/cpu includes this header (and oneDNN).
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>

#include "tensor/tensor.h"
#include "util/check.h"

namespace dlt::cpu {

using dnnl::memory;
using Tag = memory::format_tag;
using Args = std::unordered_map<int, memory>;
constexpr auto kF32 = memory::data_type::f32;
constexpr auto kBf16 = memory::data_type::bf16;

// oneDNN's logical dims are (N, C, H, W); the nhwc tag lays them out as our NHWC tensors.
inline memory::desc nhwc_md(int64_t n, int64_t h, int64_t w, int64_t c) {
  return memory::desc({n, c, h, w}, kF32, Tag::nhwc);
}
inline memory::desc nc_md(int64_t rows, int64_t cols) { return memory::desc({rows, cols}, kF32, Tag::nc); }
inline memory::desc vec_md(int64_t n) { return memory::desc({n}, kF32, Tag::x); }

// A memory object with no buffer yet; bind() points it at a tensor before each execute.
inline memory unbound(const memory::desc& md, const dnnl::engine& eng) { return memory(md, eng, DNNL_MEMORY_NONE); }
inline void bind(const memory& m, const Tensor& t) { m.set_data_handle(const_cast<float*>(t.data())); }
// The oneDNN convolution, transposed convolution and inner product bind a bias in forward:
// an undefined one is an error here (ops.cpp checks the size of a defined one).
inline void need_bias(const Tensor& b, const char* op) {
  DLT_CHECK(b.defined(), op << ": b is undefined; the CPU backend needs a bias (pass zeros)");
}

// A 64-byte aligned host buffer of at least `bytes` (float storage of a Tensor).
inline Tensor host_buffer(size_t bytes) {
  return Tensor(Shape{static_cast<int64_t>(std::max<size_t>(bytes, 4) + 3) / 4});
}

// One preallocated scratchpad per op: call need() with every primitive's scratchpad size,
// then allocate(), then memory_for() each primitive (all share the one buffer, as the op's
// primitives run one after another).
class Scratchpad {
 public:
  void need(const memory::desc& md) { bytes_ = std::max(bytes_, md.get_size()); }
  void allocate() { buf_ = host_buffer(bytes_); }
  memory memory_for(const memory::desc& md, const dnnl::engine& eng) const {
    return memory(md, eng, const_cast<float*>(buf_.data()));
  }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_ = 0;
  Tensor buf_;
};

// The scratchpad-in-user-mode attribute every CPU primitive is created with.
inline dnnl::primitive_attr user_scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}
// Appends a relu post-op, or with a finite ceiling min(max(x, 0), ceiling) (clip_v2, as the
// clippedRelu act op runs it: the same bits), or with post_act the activation act: a swish
// x * sigmoid(x) (eltwise_swish with alpha 1), a GELU (eltwise_gelu_erf, eltwise_gelu_tanh), as
// the act ops run them, or a hard swish x relu6(x + 3) / 6 (eltwise_hardswish: oneDNN 2.6's
// forward is that formula; its derivative, which the act op does not use, is never needed here).
inline void append_act(dnnl::post_ops& po, float ceiling, bool post_act = false, ActKind act = ActKind::kRelu) {
  if (post_act && act == ActKind::kSwish)
    po.append_eltwise(1.f, dnnl::algorithm::eltwise_swish, 1.f, 0.f);
  else if (post_act && act == ActKind::kGelu)
    po.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);
  else if (post_act && act == ActKind::kGeluTanh)
    po.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_tanh, 0.f, 0.f);
  else if (post_act && act == ActKind::kHardSwish)
    po.append_eltwise(1.f, dnnl::algorithm::eltwise_hardswish, 0.f, 0.f);
  else if (std::isfinite(ceiling))
    po.append_eltwise(1.f, dnnl::algorithm::eltwise_clip_v2, 0.f, ceiling);
  else
    po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
}
// That activation as the attribute's one post-op when fuse_relu.
inline dnnl::primitive_attr relu_attr(bool fuse_relu, float ceiling = std::numeric_limits<float>::infinity(),
                                      bool post_act = false, ActKind act = ActKind::kRelu) {
  dnnl::primitive_attr attr = user_scratchpad_attr();
  if (fuse_relu) {
    dnnl::post_ops po;
    append_act(po, ceiling, post_act, act);
    attr.set_post_ops(po);
  }
  return attr;
}

// The forward pd's problem with a relu post-op, on exactly the memory formats the forward
// chose (so the two share the weights, input and output buffers): ConvDesc::inference_relu
// (and inference_post_act: that activation's post-op instead).
inline dnnl::convolution_forward::primitive_desc relu_variant(
    const dnnl::convolution_forward::primitive_desc& fwd, const dnnl::memory::dims& strides,
    const dnnl::memory::dims& dilation, const dnnl::memory::dims& pad_l, const dnnl::memory::dims& pad_r,
    const dnnl::engine& eng, dnnl::algorithm alg = dnnl::algorithm::convolution_direct,
    float ceiling = std::numeric_limits<float>::infinity(), bool post_act = false, ActKind act = ActKind::kRelu) {
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training, alg, fwd.src_desc(), fwd.weights_desc(),
                                    fwd.bias_desc(), fwd.dst_desc(), strides, dilation, pad_l, pad_r);
  return dnnl::convolution_forward::primitive_desc(d, relu_attr(true, ceiling, post_act, act), eng);
}

// The implementation name oneDNN chose ("brg:avx512_core", "jit:avx2", "gemm:jit", "ref").
template <class PD>
std::string impl_of(const PD& pd) {
  return pd.impl_info_str();
}

}  // namespace dlt::cpu
