// A layer's ONNX form, written in the layer's own file: what a layer needs to add its nodes to
// an ONNX graph (OnnxGraph, export) and to read itself back from an ONNX node (OnnxNodeReader,
// import). Plain C++: lib/onnx implements both with protobuf; a build without libonnx-dev
// never calls them. ONNX is NCHW with OIHW conv weights and CHW-order flattening; dltrain is
// NHWC with OHWI weights and HWC-order flattening: the permutations are below.
#pragma once
#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "layers/spec.h"
#include "tensor/shape.h"

namespace dlt {

class Tensor;

// A value in the ONNX graph. Export: name is the ONNX value's name. Import: name is the
// dltrain layer that produces it. shape is per image (H, W, C); flat: the ONNX value is
// (N, C*H*W); pad: a zero Pad node's [top, left, bottom, right] not yet absorbed by a
// following Conv / pooling node (import only). indices (import only): a MaxPool's Indices
// output; name is then the maxPooling2d layer and shape that layer's INPUT shape, and only
// MaxUnpool reads it (OnnxNodeReader::indices_input). channels_last (import only): the ONNX
// value is the NCHW tensor permuted to (N, H, W, C) by Transpose(0, 2, 3, 1), which holds the
// same bytes as dltrain's layout; shape stays (H, W, C). tokens: the ONNX value is a token
// sequence (N, S, C), dltrain's SCB; shape is (S, 1, C).
struct OnnxValue {
  std::string name;
  Shape shape;
  bool flat = false;
  std::array<int64_t, 4> pad{};
  bool indices = false;
  bool channels_last = false;
  bool tokens = false;
};

// One attribute of a node: an integer, a float, a list of integers or a string.
struct OnnxAttr {
  OnnxAttr(std::string n, int64_t v) : name(std::move(n)), kind(kInt), i(v) {}
  OnnxAttr(std::string n, std::string v) : name(std::move(n)), kind(kString), s(std::move(v)) {}
  OnnxAttr(std::string n, float v) : name(std::move(n)), kind(kFloat), f(v) {}
  OnnxAttr(std::string n, std::vector<int64_t> v) : name(std::move(n)), kind(kInts), ints(std::move(v)) {}
  std::string name;
  enum Kind { kInt, kFloat, kInts, kString } kind;
  int64_t i = 0;
  float f = 0.f;
  std::vector<int64_t> ints;
  std::string s;
};

// A rotary embedding's form for OnnxGraph::attention: the pairs' layout (half: (i, i + d / 2),
// else (2i, 2i + 1)), the tokens before `prefix` not rotated, cos and sin (S - prefix, d / 2), or
// (heads, S - prefix, d / 2) with a table per head.
struct OnnxRotary {
  bool half = false;
  int64_t prefix = 0;
  int64_t heads = 1;  // tables: 1, or one per head
  std::vector<float> cos, sin;
};

// Export: the graph being written (lib/onnx/onnx_export.cpp).

class OnnxGraph {
 public:
  virtual ~OnnxGraph() = default;
  // The graph input "input" (N, dims...) with a symbolic batch.
  virtual void add_input(const std::string& name, const std::vector<int64_t>& dims) = 0;
  // A float initializer (returns its name).
  virtual std::string add_floats(const std::string& name, const std::vector<int64_t>& dims,
                                 const std::vector<float>& values) = 0;
  virtual std::string add_ints(const std::string& name, const std::vector<int64_t>& dims,
                               const std::vector<int64_t>& values) = 0;
  virtual void add_node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs,
                        const std::string& output, const std::vector<OnnxAttr>& attrs = {}) = 0;
  // A node with several outputs (MaxPool's values and indices).
  virtual void add_node_outputs(const std::string& op, const std::string& name, const std::vector<std::string>& inputs,
                                const std::vector<std::string>& outputs, const std::vector<OnnxAttr>& attrs = {}) = 0;
  // The file being written, for errors ("m.onnx").
  virtual const std::string& path() const = 0;

  // node(): one node named after the value it writes (`name`, returned); ints(): a 1-D int64
  // initializer of the values (its name).
  std::string node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs,
                   const std::vector<OnnxAttr>& attrs = {}) {
    add_node(op, name, inputs, name, attrs);
    return name;
  }
  std::string ints(const std::string& name, const std::vector<int64_t>& values) {
    return add_ints(name, {static_cast<int64_t>(values.size())}, values);
  }
  // Helpers on top of the above. flat(): a Flatten to (N, C*H*W) unless already flat (one
  // Flatten per value, however many layers read it flat). image(): a flat (N, C) value reshaped to (N, C, 1, 1); a flat
  // image larger than 1x1 has no ONNX form here (ModelError naming the layer).
  OnnxValue flat(const OnnxValue& in);
  OnnxValue image(const std::string& layer, const OnnxValue& in);
  // tokens_linear(): each token of (N, S, C) value `x` times weights (k, c) (dltrain's fullyConnected
  // layout), plus bias: MatMul by the transposed weights and Add; returns the output's name
  // (`out`).
  std::string tokens_linear(const std::string& out, const std::string& x, const std::vector<float>& weights, int64_t k,
                            int64_t c, const std::vector<float>& bias);
  // attention(): scaled dot-product attention of token sequences q (N, Sq, H * dk), k (N, Skv,
  // H * dk) and v (N, Skv, H * dv): each reshaped into H heads (K transposed), MatMul, Mul by
  // scale, the causal mask added (the lowest float above the diagonal of (Sq, Skv)), Softmax,
  // MatMul by V, the heads side by side again (N, Sq, H * dv) as `out` (selfAttention's and the
  // attention layer's form). bias (not null): H * Sq * Skv values added to the scaled scores
  // before the mask (selfAttention's ScoreBias). mix (not null): the talking heads' mixes packed
  // as the attention op's reference has them (scores' weights (H, H), bias (H), probabilities'
  // weights, bias): the scores transposed to (N, Sq, Skv, H), MatMul by the transposed weights,
  // Add of the bias, transposed back (PyTorch's Linear over the heads, CaiT's form), before the
  // mask; the probabilities likewise after the Softmax. rotary (not null; seq_q = seq_kv): the
  // heads of q and k (N, S, H, dk) rotated before their transposes, x * C + (x R) * S with R the
  // (dk, dk) signed permutation of the pairs (MatMul) and C, S (S - prefix, 1 or H, dk) the tables spread to
  // both channels of each pair; the prefix tokens Sliced off first and joined in front again
  // (Concat). Returns `out`.
  std::string attention(const std::string& out, const std::string& q, const std::string& k, const std::string& v,
                        int64_t heads, int64_t seq_q, int64_t seq_kv, int64_t key_dim, int64_t value_dim, float scale,
                        bool causal, const std::vector<float>* bias = nullptr, const std::vector<float>* mix = nullptr,
                        const OnnxRotary* rotary = nullptr);
  // channel_attention(): attention across the channels of token sequences q, k and v (N, S, H * d):
  // q and v reshaped into H heads and transposed to (N, H, d, S), k to (N, H, S, d), MatMul (Q^T K),
  // Mul by scale, Softmax, MatMul by V^T, the result (N, H, d, S) transposed to (N, S, H, d) and
  // reshaped to (N, S, H * d) as `out` (the channelAttention layer's form). temperature (not
  // null: H values): XCiT's form instead: q and k both (N, H, d, S), each divided by its L2 norm
  // over the tokens (ReduceL2, Clip at 1e-12, Div), k then transposed, the scaled scores times
  // the (H, 1, 1) temperature. Returns `out`.
  std::string channel_attention(const std::string& out, const std::string& q, const std::string& k,
                                const std::string& v, int64_t heads, int64_t seq, int64_t dim, float scale,
                                const std::vector<float>* temperature = nullptr);
  // pixel_tokens(): value `in` as a token sequence (N, S, C): tokens as they are; an image
  // (N, C, H, W) as its pixels in row order, (N, H*W, C): Transpose (0, 2, 3, 1) and Reshape,
  // PVT's form; a flat (N, C) value (a vector, or a 1x1 image) as one token: Unsqueeze of axis
  // 1 (CaiT's and XCiT's class token query); written once per value however many layers read it.
  // tokens_image(): tokens (N, H*W, C) back into the (N, C, H, W) image of `shape` (H, W, C),
  // named `out`: Reshape (N, H, W, C) and Transpose (0, 3, 1, 2).
  std::string pixel_tokens(const std::string& layer, const OnnxValue& in);
  // batch_expand(): constant `value` (1, dims...) repeated for each of the N images of value
  // `like`: Expand by (N, dims...), N sliced from Shape(like); named `out`.
  void batch_expand(const std::string& out, const std::string& value, const std::string& like,
                    const std::vector<int64_t>& dims);
  OnnxValue tokens_image(const std::string& out, const std::string& tokens, const Shape& shape);

 private:
  // The rotary embedding of heads x (N, S, H, dim) (attention's form); returns the rotated value.
  std::string rotate(const std::string& p, const std::string& x, const OnnxRotary& r, int64_t seq, int64_t dim);
  std::set<std::string> flattened_;     // the values flat() has written a Flatten of
  std::set<std::string> pixel_tokens_;  // the images pixel_tokens() has made tokens of
};

// Import: one ONNX node being read (lib/onnx/onnx_import.cpp). A layer type's from_onnx
// function reads the node's inputs and attributes and adds its layer, parameters and states.
class OnnxNodeReader {
 public:
  virtual ~OnnxNodeReader() = default;
  virtual const std::string& op() const = 0;
  virtual int opset() const = 0;
  virtual int num_inputs() const = 0;
  // Input i is given (present and not the empty name).
  virtual bool has_input(int i) const = 0;
  virtual bool is_constant(int i) const = 0;
  // The value of input i, made earlier in the graph. A pending zero Pad is an error unless
  // absorb_pad (the caller adds value.pad to its own padding); so is a MaxPool's Indices, and
  // a channels-last value unless allow_channels_last (the caller reads (N, H, W, C) data).
  virtual OnnxValue input(int i, bool absorb_pad = false, bool allow_channels_last = false) = 0;
  // Input i, which must be a MaxPool's Indices output (OnnxValue::indices).
  virtual OnnxValue indices_input(int i) = 0;
  // The node's outputs, and whether output i is named (an optional output may be left out).
  virtual int num_outputs() const = 0;
  virtual bool has_output(int i) const = 0;
  // A constant input (initializer or Constant node) as floats / its dimensions; role names
  // it in errors ("weight", "bias").
  virtual std::vector<float> floats(int i, const std::string& role) = 0;
  virtual std::vector<int64_t> dims(int i, const std::string& role) = 0;
  // A constant integer input (INT64 / INT32: axes, shapes) as int64.
  virtual std::vector<int64_t> ints(int i, const std::string& role) = 0;
  // The axes a reduction or (un)squeeze node names: input `i` from opset `input_from` on, the
  // attribute "axes" before; `def` when neither is given.
  std::vector<int64_t> axes(int i, int input_from, std::vector<int64_t> def);
  // A filter layer's optional bias input i (Conv, ConvTranspose): its k values, zeros when the
  // input is absent; fails when it has another count.
  std::vector<float> bias_or_zeros(int i, int64_t k);
  virtual int64_t attr_int(const std::string& name, int64_t def) const = 0;
  virtual float attr_float(const std::string& name, float def) const = 0;
  virtual std::string attr_string(const std::string& name, const std::string& def) const = 0;
  virtual std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> def) const = 0;
  // Throws ModelError: "<file>: node '<name>' (<op>): <why>".
  [[noreturn]] virtual void fail(const std::string& why) const = 0;

  // Adds a layer named after the node, reading `inputs` (layer names); returns its spec.
  virtual LayerSpec& add_layer(const std::string& type, const std::vector<std::string>& inputs) = 0;
  virtual void add_param(const std::string& layer, const std::string& name, const Shape& shape,
                         std::vector<float> values) = 0;
  virtual void add_state(const std::string& layer, const std::string& name, const Shape& shape,
                         std::vector<float> values) = 0;
  // The node's (first) output is this value.
  virtual void set_output(const OnnxValue& v) = 0;
  // Output i (> 0) is this value.
  virtual void set_output_at(int i, const OnnxValue& v) = 0;

  // Helpers: a pending image input check, and ONNX pads / auto_pad as dltrain's
  // [top, left, bottom, right] for an effective kernel (eh, ew) and strides (sh, sw).
  void need_image(const OnnxValue& v) const;
  std::array<int64_t, 4> pads(const Shape& in, int64_t eh, int64_t ew, int64_t sh, int64_t sw) const;
};

// The largest kernel size, stride or dilation an imported node may have: larger ones are a
// corrupt file (and would overflow the output size arithmetic).
inline constexpr int64_t kOnnxMaxWindow = int64_t(1) << 20;

// How a layer type reads itself from ONNX: the operators it takes and the function that does.
using OnnxImportFn = void (*)(OnnxNodeReader&);

// MatMul of a channels-last value (N, H, W, C) with a constant (C, K) weight: a 1x1
// convolution2d (ConvNeXt's Linear layers inside its blocks), its output channels-last too.
// fullyConnected's from_onnx hands such nodes to it (conv_layer.cpp).
void pointwise_conv_from_onnx(OnnxNodeReader& r, const OnnxValue& in);

// MatMul of an image (N, C, H, W) by a constant (W, Wo), or of a constant (Ho, H) by an image,
// holding adaptive average pooling's weights (adaptive_pool_op.h): an adaptiveAveragePooling2d
// of that one dimension (dltrain's own export of it). False, having added nothing, for any other
// MatMul; fullyConnected's from_onnx asks it first (adaptive_pool_layer.cpp).
bool adaptive_pool_from_onnx(OnnxNodeReader& r);

// Layout permutations. (K, C, kh, kw) <-> (K, kh, kw, C):
std::vector<float> oihw_to_ohwi(const std::vector<float>& w, int64_t k, int64_t c, int64_t kh, int64_t kw);
std::vector<float> ohwi_to_oihw(const std::vector<float>& w, int64_t k, int64_t c, int64_t kh, int64_t kw);
// FC weights (K, H*W*C): columns in CHW order <-> HWC order.
std::vector<float> chw_cols_to_hwc(const std::vector<float>& w, int64_t k, int64_t h, int64_t wd, int64_t c);
std::vector<float> hwc_cols_to_chw(const std::vector<float>& w, int64_t k, int64_t h, int64_t wd, int64_t c);
// (H, W, C) image <-> (C, H, W).
std::vector<float> hwc_to_chw(const std::vector<float>& x, int64_t h, int64_t w, int64_t c);
std::vector<float> chw_to_hwc(const std::vector<float>& x, int64_t h, int64_t w, int64_t c);
// A tensor's values on the host, as a vector.
std::vector<float> host_values(const Tensor& t);
// A number as the shortest text that reads back to the same float ("0.01").
std::string onnx_number(float v);

}  // namespace dlt
