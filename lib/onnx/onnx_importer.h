// The importer's state and graph-structure handlers, shared by lib/onnx/onnx_import.cpp (the
// walk, the input, layers through NodeReader, the end of the graph) and onnx_import_layout.cpp
// (shape folding, layout forms, Mul routing). Internal to lib/onnx.
#pragma once
#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "layers/layer.h"
#include "onnx/onnx.h"
#include "onnx/onnx_import_const.h"
#include "onnx/onnx_import_external.h"
#include "onnx/onnx_import_fold.h"
#include "onnx/onnx_proto_util.h"
#include "tensor/shape.h"
#include "util/error.h"

namespace dlt::onnx_detail {

using namespace onnxu;

using Value = OnnxValue;  // name: the layer producing it

inline constexpr int64_t kMaxInputValues = int64_t{1} << 31;  // per image (H * W * C)

inline bool padded(const Value& v) { return v.pad[0] || v.pad[1] || v.pad[2] || v.pad[3]; }

// The operators import reads: the layer types' (registry order), then the graph's own.
std::string supported_ops();

// Columns [col, col + count) of a MatMul weight w (c, cols) and of its bias b as an attention's
// (count, c) weights and count biases, times f (onnx_import_attention.cpp).
void projection_rows(const std::vector<float>& w, const std::vector<float>& b, int64_t c, int64_t cols, int64_t col,
                     int64_t count, float f, std::vector<float>& weights, std::vector<float>& bias, int64_t heads = 1,
                     int64_t step = 0);

class Importer {
 public:
  friend class NodeReader;
  // folder: the real path of the model's folder, whose files external data may name ("": the
  // model came from memory).
  Importer(const std::string& path, const std::string& folder, const onnx::ModelProto& model,
           const OnnxImportOptions& opt)
      : path_(path), g_(model.graph()), opt_(opt), external_(path, folder) {
    for (const auto& op : model.opset_import())
      if (op.domain().empty() || op.domain() == "ai.onnx") opset_ = op.version();
  }

  ModelData run() {
    for (const auto& t : g_.initializer()) {
      const onnx::TensorProto* p = &t;
      if (t.data_location() == onnx::TensorProto::EXTERNAL) {
        owned_.push_back(external_.load(t, path_ + ": initializer"));
        p = owned_.back().get();
      }
      check_tensor(*p, path_ + ": initializer");
      consts_[t.name()] = p;
    }
    add_input();
    // Each value assigned once (ONNX's rule), checked before any node is read: the look-ahead
    // (consumers_of, feeds_heads) follows a value from reader to reader and would not end where a
    // node defines its own input again.
    std::set<std::string> defined;
    for (const auto& t : g_.initializer()) defined.insert(t.name());
    for (const auto& in : g_.input()) defined.insert(in.name());
    for (const auto& n : g_.node())
      for (const auto& out : n.output())
        if (!out.empty() && !defined.insert(out).second)
          fail(n, "output '" + out + "' is already defined earlier in the graph (each ONNX value is assigned once)");
    for (const auto& n : g_.node()) node(n);
    finish();
    return std::move(m_);
  }

 private:
  // ---- errors and lookups
  [[noreturn]] void fail(const onnx::NodeProto& n, const std::string& what) const {
    throw ModelError(path_ + ": node '" + node_name(n) + "' (" + n.op_type() + "): " + what);
  }
  std::string node_name(const onnx::NodeProto& n) const {
    return n.name().empty() ? (n.output_size() ? n.output(0) : n.op_type()) : n.name();
  }
  const onnx::TensorProto* constant(const std::string& name) const {
    auto it = consts_.find(name);
    return it == consts_.end() ? nullptr : it->second;
  }
  const onnx::TensorProto& need_const(const onnx::NodeProto& n, int i, const std::string& role) const {
    if (n.input_size() <= i || n.input(i).empty()) fail(n, "has no " + role + " input");
    const auto* t = constant(n.input(i));
    if (!t)
      fail(n,
           role + " '" + n.input(i) + "' is computed, not a constant initializer (dltrain imports fixed weights only)");
    return *t;
  }
  Value& value(const onnx::NodeProto& n, int i, bool pad_ok = false, bool indices = false, bool cl_ok = false) {
    if (n.input_size() <= i) fail(n, "has too few inputs");
    auto it = values_.find(n.input(i));
    if (it == values_.end() && views_.count(n.input(i))) {
      if (const std::optional<Value> im = view_image(n, views_.at(n.input(i)))) {
        values_[n.input(i)] = *im;  // an attention's output as the NCHW image of its pixels
        return values_.at(n.input(i));
      }
      const Value t = tokens_of(n, views_.at(n.input(i)));
      values_[n.input(i)] = t;
      // the pixels of a flattened channels-last image (PVT's attention): that image's partition
      if (t.channels_last) partitions_[n.input(i)] = Partition{false, t.shape[0], t.shape[1], true};
      it = values_.find(n.input(i));
    }
    if (it == values_.end() && swap_error_.count(n.input(i))) throw ModelError(swap_error_.at(n.input(i)));
    if (it == values_.end() && image_views_.count(n.input(i)) && subsample(n, n.input(i)))
      it = values_.find(n.input(i));
    if (it == values_.end() && image_views_.count(n.input(i)))
      fail(n, "input '" + n.input(i) +
                  "' is a padded, rolled or sliced channels-last image, which dltrain reads only as Swin's window "
                  "attention (Pad, roll, window partition) or patch merging (four strided Slices and a Concat of "
                  "their channels)");
    if (it == values_.end() && unfolds_.count(n.input(i)))
      fail(n, "input '" + n.input(i) +
                  "' is an image on its way into or out of MobileViT's unfold, which dltrain reads only as its "
                  "Reshape (C H/ph, ph, W/pw, pw), Transpose (0, 2, 1, 3), Reshape (1, C, N, P), Transpose (0, 3, 2, "
                  "1), Reshape (P, N, C) and the fold back in reverse");
    if (it == values_.end() && splits_.count(n.input(i)))
      fail(n, "input '" + n.input(i) +
                  "' is a 6-D split of an image, which dltrain reads only as MaxViT's window partition (Reshape to "
                  "(1, C, H/p, p, W/p, p), Transpose (0, 2, 4, 3, 5, 1), Reshape to (1, windows, p*p, C)) or its "
                  "reverse");
    if (it == values_.end() && patch_steps_.count(n.input(i)))
      fail(n,
           "input '" + n.input(i) +
               "' is a 6-D split of MobileViT v2's patches, which dltrain reads only as its unfold (Reshape (1, C, "
               "H/ph, ph, W/pw, pw), Transpose (0, 1, 3, 5, 2, 4), Reshape (1, C, P, N)) or its fold (Reshape (1, C, "
               "ph, pw, H/ph, W/pw), Transpose (0, 1, 4, 2, 5, 3), Reshape (1, C, H, W))");
    if (it == values_.end() && separable_.count(n.input(i)))
      fail(n, "input '" + n.input(i) +
                  "' is part of MobileViT v2's separable self-attention, which dltrain reads only as timm's "
                  "LinearSelfAttention: Split into [1, C, C] along axis 1, Softmax of the query over the patches, Mul "
                  "of the keys by it, ReduceSum over the patches (keepdims), Relu of the values, Mul by the sum");
    if (it == values_.end() && linear_.count(n.input(i)))
      fail(n, "input '" + n.input(i) +
                  "' is part of EfficientViT's ReLU linear attention, which dltrain reads only as timm's LiteMLA: "
                  "Relu of the queries and keys, Pad of the values with ones, MatMul (keys^T, values), MatMul "
                  "(queries, that), Slice of its first d columns and its last, Add of eps to the last, Div");
    if (it == values_.end() && win_.count(n.input(i)))
      fail(n, "input '" + n.input(i) +
                  "' is inside a window attention (from its window partition to the reverse), which dltrain reads "
                  "only in torchvision's form (shifted_window_attention)");
    if (it != values_.end() && channel_perm_.count(n.input(i)) && !perm_ok_)
      fail(n, "input '" + n.input(i) +
                  "' holds a patch merging's channels in torchvision's order, which dltrain reads only through a "
                  "LayerNormalization into a MatMul");
    if (it == values_.end() && whole_.count(n.input(i)))
      fail(n, "input '" + n.input(i) +
                  "' is the whole batch flattened to 1-D (Reshape to [-1]), which dltrain reads only as the dynamo "
                  "exporter's as_strided: a Gather of the same order right after it");
    if (it == values_.end() && stacks_.count(n.input(i)))
      fail(n, "input '" + n.input(i) +
                  "' is a stack of (N, K) values along a new axis 0, which dltrain reads only as the mean (or sum) "
                  "over that axis (ReduceMean / ReduceSum of axis 0, keepdims 0: CrossViT's heads)");
    if (it == values_.end() && shuffles_.count(n.input(i)))
      fail(n, "input '" + n.input(i) +
                  "' is a 5-D reshape of an image, which dltrain reads only as ShuffleNet's channel shuffle "
                  "(Reshape to (N, G, C/G, H, W), Transpose (0, 2, 1, 3, 4), Reshape to (N, C, H, W))");
    if (it == values_.end() && rotary_terms_.count(n.input(i)))
      fail(n, "input '" + n.input(i) +
                  "' is an attention operand times a table of one value per token and channel, which dltrain reads "
                  "only as a term of a rotary embedding: x * cos + rot(x) * sin, the two products added");
    if (it == values_.end() && transposed_tokens_.count(n.input(i)))
      fail(n, "input '" + n.input(i) +
                  "' is a token sequence transposed to (1, C, S) after a 1-D pooling, which dltrain reads only in "
                  "BatchNormalization and the Transpose (0, 2, 1) back to (1, S, C)");
    if (it == values_.end())
      fail(n, "input '" + n.input(i) +
                  "' is neither the graph input nor an earlier supported node's output (a graph must list its "
                  "nodes in topological order, without cycles)");
    if (padded(it->second) && !pad_ok)
      fail(n, "its input comes from a Pad node; dltrain folds zero padding only into Conv and AveragePool");
    if (it->second.indices && !indices)
      fail(n, "input '" + n.input(i) + "' is a MaxPool's Indices output, which dltrain reads only in MaxUnpool");
    if (!it->second.indices && indices) fail(n, "input '" + n.input(i) + "' is not a MaxPool's Indices output");
    if (it->second.channels_last && !cl_ok)
      fail(n, "input '" + n.input(i) +
                  "' is channels-last (a Transpose (0, 2, 3, 1) of an image); this operator reads it only as "
                  "(N, C, H, W): transpose it back with (0, 3, 1, 2) first");
    return it->second;
  }
  // Output i's name, refused when it is missing or names a value already defined (ONNX assigns
  // each value once; an Identity writing its own input would otherwise loop or shadow).
  const std::string& define(const onnx::NodeProto& n, int i = 0) {
    if (n.output_size() <= i || n.output(i).empty()) fail(n, "has no output " + std::to_string(i));
    const std::string& name = n.output(i);
    if (values_.count(name) || consts_.count(name) || shuffles_.count(name) || whole_.count(name) ||
        views_.count(name) || flat_images_.count(name) || swapped_images_.count(name) || image_views_.count(name) ||
        win_.count(name) || splits_.count(name) || stacks_.count(name) || patch_steps_.count(name) ||
        separable_.count(name) || linear_.count(name) || transposed_tokens_.count(name) || global_q_.count(name))
      fail(n, "output '" + name + "' is already defined earlier in the graph (each ONNX value is assigned once)");
    return name;
  }
  void set_out(const onnx::NodeProto& n, const Value& v, int i = 0) { values_[define(n, i)] = v; }
  void set_const(const onnx::NodeProto& n, const onnx::TensorProto* t) { consts_[define(n)] = t; }
  // A folded integer constant as node n's output.
  void set_ints(const onnx::NodeProto& n, const IntConst& c);

  // ---- building the spec
  std::string unique_name(const onnx::NodeProto& n) {
    std::string s = node_name(n);
    for (char& ch : s)
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-' && ch != '.') ch = '_';
    while (!s.empty() && (s[0] == '_' || s[0] == '.')) s.erase(0, 1);
    if (s.empty()) s = n.op_type();
    // The next free suffix per base name: a graph of many same-named nodes stays linear.
    std::string name = s;
    int64_t& k = next_suffix_[s];
    if (k == 0) k = 2;
    for (; taken_.count(name); ++k) name = s + "_" + std::to_string(k);
    taken_.insert(name);
    return name;
  }
  LayerSpec& add_layer(const std::string& type, const std::string& name, const std::vector<std::string>& inputs) {
    LayerSpec s;
    s.name = name;
    s.type = type;
    bool previous = inputs.size() == 1 && !m_.network.layers.empty() && m_.network.layers.back().name == inputs[0];
    if (!previous) s.inputs = inputs;
    m_.network.layers.push_back(std::move(s));
    return m_.network.layers.back();
  }
  static void set_list(LayerSpec& s, const std::string& key, const std::vector<int64_t>& v) {
    SpecValue sv;
    sv.is_list = true;
    for (int64_t x : v) sv.items.push_back(std::to_string(x));
    s.options[key] = sv;
  }
  void add_param(const std::string& layer, const std::string& name, const Shape& shape, std::vector<float> data) {
    m_.params.push_back(NamedTensor{layer, name, shape, std::move(data)});
  }
  void add_state(const std::string& layer, const std::string& name, const Shape& shape, std::vector<float> data) {
    m_.states.push_back(NamedTensor{layer, name, shape, std::move(data)});
  }

  // ---- the graph input (N, C, H, W)
  void add_input() {
    const onnx::ValueInfoProto* in = nullptr;
    for (const auto& v : g_.input())
      if (!consts_.count(v.name())) {
        if (in)
          throw ModelError(path_ + ": the graph has several inputs ('" + in->name() + "', '" + v.name() +
                           "'); dltrain imports single-image-input classifiers");
        in = &v;
      }
    if (!in) throw ModelError(path_ + ": the graph has no input");
    std::vector<int64_t> d;
    for (const auto& dim : in->type().tensor_type().shape().dim())
      d.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    int64_t h = -1, w = -1, c = -1;
    if (d.size() == 4) c = d[1], h = d[2], w = d[3];
    if (!d.empty() && d[0] > 0) exported_batch_ = d[0];
    if (opt_.input_size.size() == 3) h = opt_.input_size[0], w = opt_.input_size[1], c = opt_.input_size[2];
    if (d.size() != 4 && opt_.input_size.empty())
      throw ModelError(path_ + ": the graph input '" + in->name() + "' has " + std::to_string(d.size()) +
                       " dimensions, expected (N, C, H, W) (give --input-size HxWxC)");
    if (h <= 0 || w <= 0 || c <= 0)
      throw ModelError(path_ + ": the graph input '" + in->name() + "' has symbolic sizes (give --input-size HxWxC)");
    if (h > kMaxInputValues / w || h * w > kMaxInputValues / c)
      throw ModelError(path_ + ": the graph input '" + in->name() + "' is " + std::to_string(h) + "x" +
                       std::to_string(w) + "x" + std::to_string(c) + " per image, more than the " +
                       std::to_string(kMaxInputValues) + " values dltrain reads");
    input_name_ = "input";
    taken_.insert(input_name_);
    LayerSpec& s = add_layer("imageInput", input_name_, {});
    set_list(s, "InputSize", {h, w, c});
    s.set("Normalization", "none");
    values_[in->name()] = Value{input_name_, Shape{h, w, c}, false};
  }

  // ---- operators
  // MaxViT's partitioned tokens (onnx_import_window.cpp) pass through the per-token operators
  // below as the image they hold: the outputs carry the inputs' partition.
  // A node that closes a window attention (reads its projection) sees the partition after.
  // A value made from a view over a flattened image's pixels (the attention's output projection
  // scaled by XCiT's LayerScale) is that flattened image again.
  void node(const onnx::NodeProto& n) {
    flat_operands(n);
    std::optional<Partition> part;
    if (const Partition* p = partition_of_inputs(n)) part = *p;
    // MobileViT v2's unfolded patches through a per-pixel operator: its outputs are patches too.
    const std::optional<PatchGrid> grid = patch_grid_of_inputs(n);
    node_inner(n);
    if (grid)
      for (int i = 0; i < n.output_size(); ++i)
        if (values_.count(n.output(i))) patch_grids_.emplace(n.output(i), *grid);
    if (!part)
      if (const Partition* p = partition_of_inputs(n)) part = *p;
    if (!part) part = flat_view_partition(n);
    if (part && !(part->flat && n.op_type() == "Reshape")) tag_outputs(n, *part);  // a flat image's Reshape: the image
  }
  void node_inner(const onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    if (!n.domain().empty() && n.domain() != "ai.onnx")
      fail(n, "operator domain '" + n.domain() + "' is not supported (supported: " + supported_ops() + ")");
    if (op == "Constant") return constant_node(n);
    if (op == "Identity") return identity(n);
    if (patch_node(n)) return;
    if (pool1d_node(n)) return;
    if (linear_node(n)) return;
    if (stack_node(n)) return;
    if (!all_constant(n) && window_node(n)) return;
    if (token_node(n)) return;
    if (op == "Shape") return shape(n);
    if (op == "Gather" && n.input_size() > 0 && whole_.count(n.input(0))) return restride(n);
    if (is_fold_op(op) && all_constant(n) && shape_arithmetic(n)) return fold_node(n);
    if (is_tensor_fold_op(op) && all_constant(n)) return tensor_fold_node(n);
    if (is_fold_op(op) && all_constant(n)) return fold_node(n);  // its refusal names what it folds
    if (op == "Cast") return cast(n);
    if (op == "Flatten" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze") return reshape(n);
    if (op == "Transpose") return transpose(n);
    if (op == "Pad") return pad(n);
    if (op == "Mul") return mul(n);
    if (op == "Div" && n.input_size() == 2 && constant(n.input(1)) && values_.count(n.input(0)) &&
        !(values_.at(n.input(0)).name == input_name_ && m_.network.layers.size() == 1))
      return channel_scale(n, 0, true);  // x / c: a scale by 1 / c (DeiT's mean of its two heads)
    if (op == "Sub" && n.input_size() == 2 && values_.count(n.input(0)) && values_.count(n.input(1)))
      return subtract(n);  // two computed values (FastViT's RepMixer): a - b as a + (-1) b
    if (op == "Sub" || op == "Div") return input_normalization(n);
    if (op == "Pow" && n.input_size() == 2 && values_.count(n.input(0)) && constant(n.input(1))) return square(n);
    if (op == "Add" && matmul_bias(n)) return;
    if (op == "Add" && n.input_size() == 2 && (constant(n.input(0)) != nullptr) != (constant(n.input(1)) != nullptr)) {
      const int ci = constant(n.input(0)) ? 0 : 1;  // x + 0 (timm's MobileOne without its identity branch)
      const std::vector<float> k = floats_of(*constant(n.input(ci)), path_ + ": node '" + node_name(n) + "'");
      if (!k.empty() && std::all_of(k.begin(), k.end(), [](float v) { return v == 0.f; }))
        return set_out(n, value(n, 1 - ci, false, false, true));
      // One value or one per channel added to an image (timm's StarReLU bias), not at the input.
      const auto x = values_.find(n.input(1 - ci));
      if (x != values_.end() && !x->second.tokens && x->second.name != input_name_)
        return channel_scale(n, 1 - ci, false, true);
    }
    if (const LayerType* t = layer_type_for_onnx(op)) return read_layer(*t, n);
    fail(n, "operator '" + op + "' is not supported by dltrain import (supported: " + supported_ops() + ")");
  }

  void constant_node(const onnx::NodeProto& n);
  // Identity of a constant is that constant (TorchScript aliases shared initializers so);
  // of a value, that value.
  void identity(const onnx::NodeProto& n) {
    if (n.input_size() < 1 || n.input(0).empty()) fail(n, "has no input");
    if (const auto* t = constant(n.input(0))) return set_const(n, t);
    set_out(n, value(n, 0, true, false, true));
  }
  // Shape folding (onnx_import_layout.cpp).
  void shape(const onnx::NodeProto& n);
  bool all_constant(const onnx::NodeProto& n) const;
  void fold_node(const onnx::NodeProto& n);
  // Whether every input of n is an integer scalar or list: shape arithmetic for fold_node, which
  // knows the batch size (and refuses lists longer than a shape); else a constant node goes to
  // tensor_fold_node (onnx_import_const.h: tensors of any rank and type).
  bool shape_arithmetic(const onnx::NodeProto& n) const;
  void tensor_fold_node(const onnx::NodeProto& n);
  void cast(const onnx::NodeProto& n);
  // Layout forms (onnx_import_layout.cpp).
  void reshape(const onnx::NodeProto& n);
  void reshape_to(const onnx::NodeProto& n, const Value& v, const std::vector<int64_t>& target);
  void transpose(const onnx::NodeProto& n);
  void restride(const onnx::NodeProto& n);
  void mul(const onnx::NodeProto& n);
  // reciprocal: Div(value, constant), the scale 1 / constant. offset: Add(value, constant), each
  // channel plus its value (timm's StarReLU bias).
  void channel_scale(const onnx::NodeProto& n, int value_input, bool reciprocal = false, bool offset = false);
  // torch.stack of flat (N, K) values along a new axis 0 and the mean over it (CrossViT's heads).
  bool stack_node(const onnx::NodeProto& n);
  void fold_token_scale(const onnx::NodeProto& n, int vi, const Value& v, const std::vector<float>& s);
  void subtract(const onnx::NodeProto& n);
  void square(const onnx::NodeProto& n);
  // A 1x1 channel-wise groupedConvolution2d scaling each channel of `input` (bias 0, or the
  // offsets given): its name.
  std::string scale_channels(const onnx::NodeProto& n, const std::string& name, const std::string& input,
                             std::vector<float> scales, std::vector<float> offsets = {});

  // ---- token sequences and attention (onnx_import_tokens.cpp). The reshapes and transposes
  // between a token sequence and the heads of an attention are read as strided views of a
  // source (per image: the graph is exported with one image); the attention's projections stay
  // pending until the chain from the scores through softmax to the output projection is whole,
  // which then becomes one selfAttention layer. A pending projection read by anything else
  // becomes a fullyConnected layer (OperationDimension channel).
 public:
  struct Source {
    enum Kind { kTokens, kProjection, kScores, kProbs, kHeads } kind = kTokens;
    Value tokens;                // kTokens: the value; kProjection: its input
    int64_t rows = 0, cols = 0;  // the source per image, a row-major matrix
    std::vector<float> weight;   // kProjection: (C, K) as MatMul reads it
    std::vector<float> bias;     // kProjection: K values
    std::string node;            // kProjection: the MatMul node's name (its layer's, if made)
    int materialized = -1;       // kProjection / kHeads made a layer: the kTokens source of its output
    // kScores / kProbs / kHeads: the operands (a projection or a token sequence, first column),
    // the heads, the channels per head and the scale applied to the scores; rows the queries,
    // cols the keys (kScores, kProbs) or the heads' values side by side (kHeads).
    int q = -1, k = -1, v = -1;
    int64_t q_col = 0, k_col = 0, v_col = 0, heads = 1, key_dim = 0, value_dim = 0;
    // the columns between one head's first and the next's in each operand (0: the head's width,
    // heads side by side; larger: LeViT's heads, each its Q, K and V side by side)
    int64_t q_step = 0, k_step = 0, v_step = 0;
    // multi-query attention (MobileNetV4's): K or V one head of key_dim / value_dim channels that
    // every query head reads (broadcast over the heads)
    bool k_shared = false, v_shared = false;
    double scale = 1;
    bool causal = false;  // a mask hides the later keys
    // A constant added to the scores (BEiT's relative position bias), (heads, rows, cols), divided
    // by the scores' scale at its Add: the bias the softmax sees is scale times these.
    std::vector<float> score_bias;
    // Attention across channels (XCiT's, DaViT's: Q^T K, softmax, times V^T): rows and cols the
    // channels of a head (kScores, kProbs), key_dim = value_dim = those channels; kHeads: rows
    // the tokens (the output (tokens, heads * d) as O^T's view reads it)
    bool channel = false;
    // Across channels, XCiT's form: Q and K each divided by its L2 norm over the tokens (unit),
    // the scores of each head times its temperature (heads values; empty: none)
    bool unit = false;
    std::vector<float> temperature;
    // Talking heads (CaiT's): the scores' (0) and the probabilities' (1) mixes across the heads,
    // (heads, heads) as PyTorch's Linear weight (output head, input head), and their biases
    // (heads; the probabilities' may be (heads, rows, cols): ConViT's positional attention);
    // empty: none. The scores' mix takes the scale of the scores it read (scale).
    std::vector<float> mix[2], mix_bias[2];
    // A rotary embedding of Q and K (rotaries_; -1: none).
    int rotary = -1;
  };
  // A rotary embedding read off an attention operand (EVA-02's x * cos + rot(x) * sin): the
  // pairs' layout, a head's channels, the source row of the first rotated token and the column
  // of the first head, cos and sin (tokens, dim / 2).
  struct Rotary {
    bool half = false;
    int64_t dim = 0, first_row = 0, col = 0;
    int64_t tables = 1;  // 1, or one per head: cos and sin (heads, tokens, dim / 2)
    std::vector<float> cos, sin;
  };
  // Element (i0, i1, ...) of the ONNX value is source[offset + sum(i_j * strides[j])], times scale.
  // unit_stride (not 0): divided by the L2 norm of the vector along the source stride unit_stride
  // (F.normalize over the tokens: the source's cols), which only Transpose and Q^T K read.
  struct View {
    int source = 0;
    std::vector<int64_t> dims, strides;
    int64_t offset = 0;
    double scale = 1;
    int64_t unit_stride = 0;
    // rot 1 / 2: the elements of rot(x) instead of x, its pairs (2i, 2i + 1) / (i, i + d / 2) of
    // the d = dims.back() channels on the last axis (for rot 1 the last two (d / 2, 2) until a
    // Reshape merges them); rotary (not -1): rotated by rotaries_[rotary], an attention's Q or K.
    int rot = 0;
    int rotary = -1;
  };
  // v with its last two axes swapped (a Transpose of them: the matrix read transposed).
  static View last_two_swapped(View v) {
    const size_t r = v.dims.size();
    if (r >= 2) {
      std::swap(v.dims[r - 1], v.dims[r - 2]);
      std::swap(v.strides[r - 1], v.strides[r - 2]);
    }
    return v;
  }
  // Mul of a rotary view by a table (tokens, dim), or one per head, not yet added to its partner.
  struct RotaryTerm {
    View v;
    int tokens_axis = 0;
    int64_t tables = 1;        // 1, or one per head (the view's heads axis)
    std::vector<float> table;  // (tables, tokens, dim)
  };

 private:
  bool token_node(const onnx::NodeProto& n);
  bool pool1d_node(const onnx::NodeProto& n);
  bool image_heads(const onnx::NodeProto& n);
  void flat_operands(const onnx::NodeProto& n);
  std::optional<Value> view_image(const onnx::NodeProto& n, const View& v);
  bool has_view(const onnx::NodeProto& n, int i) const { return n.input_size() > i && views_.count(n.input(i)); }
  View view_of(const onnx::NodeProto& n, int i);
  int tokens_source(const Value& v);
  Value tokens_like(const Value& like, const std::string& name, int64_t channels) const;
  bool flat_image(const std::string& value) const;
  bool reads_as_tokens(const View& v) const;
  Value tokens_of(const onnx::NodeProto& n, const View& v);
  void view_reshape(const onnx::NodeProto& n, const View& v);
  void view_transpose(const onnx::NodeProto& n, const View& v);
  void view_squeeze(const onnx::NodeProto& n, const View& v);
  void view_gather(const onnx::NodeProto& n, const View& v);
  void view_slice(const onnx::NodeProto& n, const View& v);
  void view_split(const onnx::NodeProto& n, const View& v);
  void view_matmul(const onnx::NodeProto& n);
  void view_add(const onnx::NodeProto& n, int vi);
  void view_scale(const onnx::NodeProto& n, int vi);
  void view_softmax(const onnx::NodeProto& n, const View& v);
  bool view_norm(const onnx::NodeProto& n);
  // The rotary embedding's parts (onnx_import_rotary.cpp): rot(x) from Slices, Neg and a Concat
  // (or a MatMul by its signed permutation), the products with the tables, their sum, the prefix
  // tokens joined in front, and the check at Q K^T.
  bool rotation_pairs(const onnx::NodeProto& n);
  bool rotation_matmul(const onnx::NodeProto& n, const View& v, const std::vector<float>& w, int64_t in, int64_t out);
  bool rotary_term(const onnx::NodeProto& n, int vi);
  void rotary_sum(const onnx::NodeProto& n);
  bool rotary_concat(const onnx::NodeProto& n);
  int scores_rotary(const onnx::NodeProto& n, const View& q, const View& k, int64_t q_col, int64_t k_col,
                    int64_t key_dim, int64_t q_step, int64_t rows);
  void rotary_options(LayerSpec& spec, const Source& a);
  void scores_temperature(const onnx::NodeProto& n, int vi, const std::vector<float>& t);
  void scores_addend(const onnx::NodeProto& n, int vi, const View& v);
  bool heads_last(const View& v) const;
  void head_mix(const onnx::NodeProto& n, const View& v, const std::vector<float>& w, int64_t in, int64_t out,
                const std::vector<float>* bias = nullptr);
  void head_conv(const onnx::NodeProto& n, const View& v);
  bool head_mix_bias(const onnx::NodeProto& n, int vi, const View& v);
  int heads_axis(const View& v) const;
  void probs_scale(const onnx::NodeProto& n, int vi, const std::vector<float>& c);
  void probs_addend(const onnx::NodeProto& n, int vi, const View& v);
  bool view_row_sum(const onnx::NodeProto& n);
  void talking_heads(LayerSpec& spec, const Source& a);
  int operand_source(int source) const;
  void tokens_out(const onnx::NodeProto& n, const Value& t, bool seq_first);
  bool self_attention(int heads) const;
  Value operand_tokens(const onnx::NodeProto& n, int source, int64_t col, int64_t count, const char* role,
                       int64_t heads = 1, int64_t step = 0);
  int attention_layer(const onnx::NodeProto& n, int heads);
  void attention(const onnx::NodeProto& n, const View& heads, const std::vector<float>& w, int64_t out,
                 const std::vector<float>& bias);
  void image_to_tokens(const onnx::NodeProto& n);
  void class_token(const onnx::NodeProto& n);
  void position_table(const onnx::NodeProto& n, int vi);
  LayerSpec* channel_scale_layer(const std::string& layer);
  void image_position_table(const onnx::NodeProto& n, const Value& v, const std::vector<float>& chw);
  void add_position_table(const onnx::NodeProto& n, const Value& v, std::vector<float> table);
  void token_index(const onnx::NodeProto& n, const Value& v);
  // A view that reads tokens [first, first + count) of a token sequence in order (a Slice of
  // its tokens: PiT's class token and its feature map), other than the whole sequence.
  std::optional<std::pair<int64_t, int64_t>> token_range(const View& v) const;
  // That range of `tokens` as a tokenSlice layer (one per range), as tokens or, with image_h,
  // as the image (image_h, image_w) of its pixels.
  Value token_slice(const onnx::NodeProto& n, const Value& tokens, int64_t first, int64_t count, int64_t image_h = 0,
                    int64_t image_w = 0);
  void token_concat(const onnx::NodeProto& n);
  std::optional<std::pair<int64_t, int64_t>> projection_columns(const View& v) const;
  // prefix: over the tokens after the first `prefix` (globalAveragePooling1d PrefixTokens).
  void token_pool(const onnx::NodeProto& n, const Value& v, bool flat_image = false, int64_t prefix = 0);
  bool float_fold(const onnx::NodeProto& n);

  // ---- Swin's window attention and patch merging (onnx_import_window.cpp).
 public:
  // A channels-last image read through a zero Pad, Slices and the Concats of a roll: element
  // (y, x) of the ONNX value is P[(start[0] + y step[0] + roll[0]) % full[0], (likewise x)],
  // P the image src padded at the bottom and right to full (zeros when zero_pad; otherwise
  // values dltrain does not compute, which only a crop may drop).
  struct ImageView {
    Value src;
    std::array<int64_t, 2> full{}, roll{}, start{}, step{1, 1}, count{};
    bool zero_pad = true;
    std::array<int64_t, 2> src_hw() const { return {src.shape[0], src.shape[1]}; }
  };
  // One window attention being read, from its partition to the reverse of its output.
  struct WindowBlock {
    ImageView in;
    int64_t wh = 0, ww = 0, windows = 0, heads = 0, head_dim = 0, qkv_cols = 0, out = 0;
    // timm's head-first Q/K/V (each head's Q, K and V side by side, head_width channels: the
    // Reshape to (windows, S, heads, w) or CoAtNet's (1, heads, w, H W)): the columns are put in
    // Q, K, V order when the block closes, once the split gave head_dim and value_dim
    // (EfficientFormer's values are wider than its keys)
    bool head_first = false;
    int64_t head_width = 0;
    int64_t value_dim = 0;  // per head; 0: head_dim
    int64_t vd() const { return value_dim ? value_dim : head_dim; }
    int64_t unbind_axis = 0;  // the Q/K/V axis after the heads' Transpose: 0, or 2 (timm's MaxViT)
    bool merged4 = false;     // the heads merged into (windows, wh, ww, C) (timm's MaxViT)
    // timm's Attention2d (CoAtNet) and Visformer's attention: one window, the whole NCHW image;
    // Q/K/V and the output projection 1x1 Convs; ends at its projection, an NCHW image again
    bool image2d = false;
    bool flat_tokens = false;  // from the whole image flattened to (1, H*W, C) (TinyViT's last stages)
    std::vector<float> qkv_w, qkv_b, proj_w, proj_b;  // as MatMul reads them: (C, 3K), (K, out)
    bool grid = false;    // Partition grid: window (i, j) holds pixels (a H/wh + i, b W/ww + j)
    bool maxvit = false;  // MaxViT's form: from partitioned tokens, Split, Einsum; ends at its projection
    bool seq = false;     // MobileViT's: from (windows, S, C) tokens, timm's attention; ends at its projection
    // Twins' locally-grouped attention: the joint Q/K/V of the 6-D windows (1, H/wh, W/ww, wh, ww, C),
    // the batch axis kept through the heads, the heads merged back into the image ((1, H, W, C),
    // merged_image, then (1, H*W, C)) before the output projection; ends at its projection
    bool twins = false, merged_image = false;
    // NesT's attention on its blocks (partitioned tokens (1, windows, S, C)): Q/K/V reshaped to (1,
    // windows, S, 3, heads, d) and transposed (3, 0, 4, 1, 2, 5), the heads before the windows;
    // the heads' output transposed (0, 2, 3, 4, 1), each channel's heads side by side (d_major:
    // merged channel i heads + h is head h's channel i); ends at its projection
    bool nest = false;
    // GC ViT's global attention (timm's WindowAttentionGlobal): the joint projection gives K and V
    // only ((windows, S, 2, heads, d)); the queries are a global query's (GlobalQuery), set at
    // the product of the scores
    bool kv_only = false;
    std::optional<Value> global_query;  // the channels-last query image (wh, ww, K)
    // Every form but Swin's ends at its output projection (maxvit_close), in its input's layout.
    bool ends_at_projection() const { return maxvit || seq || image2d || flat_tokens || twins || nest; }
    double scale = 1;
    bool q_unit = false, k_unit = false;  // Q, K divided by their norms (cosine attention)
    std::vector<float> logit;             // cosine: the scores' per-head factor
    std::vector<float> bias, mask;  // (heads, S, S) and (windows, S, S) as the graph adds them
    std::string bias_node;          // the Add of the bias
  };
  // clang-format off
  enum class WinStage {
    kSplit, kWindows, kTokens, kQkv, kQkv5, kQkvT, kQ, kK, kKt, kV, kScores, kScores5, kProbs,
    kHeads, kHeadsT, kMerged, kProj, kRev6, kRev, kQNorm, kKNorm, kQFlat, kKFlat, kVFlat, kQ5, kK5, kV5,
    kQ1, kK1, kV1,  // timm's unbind: one of Q, K, V sliced, (1, windows, heads, S, d), before its Squeeze
    kMerge,         // timm's patch merging: the 2x2 split transposed to (1, H/2, W/2, 2, 2, C)
    kWin4, kProj4,  // TorchScript's timm windows (windows, wh, ww, C) on the way in and out
    kKf, kKft,      // K^T as the dynamo exporter writes it: K reshaped to (windows heads, S, d), transposed
    kQkvH, kQkvHT,  // timm's head-first Q/K/V (maxvit_*_rw): (windows, S, heads, 3 d), transposed (0, 2, 1, 3)
    kQs, kKs, kVs,  // or split first (TinyViT): Q, K or V (windows, S, heads, d), before its Transpose (0, 2, 1, 3)
    kHeadsRev6, kHeadsRev,              // Twins: the merged heads' reverse partition, before the output projection
    kConvQkv, kQkvC, kQc, kVc, kHeadsC, kQkvC5  // CoAtNet's and Visformer's attention over an NCHW image
  };
  // clang-format on
  // MaxViT's layouts of an image's pixels as (1, windows, tokens, C): window: windows of wh x ww
  // adjacent pixels (its partition); grid: the same after the swap of the two middle axes, each
  // window the pixels spaced (H / wh, W / ww) apart (windowAttention's Partition grid).
  // flat: the whole channels-last image as one sequence (1, H*W, C) (timm's Swin runs its MLP so);
  // seq: the windows as the leading axis, (windows, tokens, C) (MobileViT's unfolded patches).
  struct Partition {
    bool grid = false;
    int64_t wh = 0, ww = 0;
    bool flat = false, seq = false;
    bool operator==(const Partition& o) const {
      return grid == o.grid && wh == o.wh && ww == o.ww && flat == o.flat && seq == o.seq;
    }
  };
  // MobileViT's unfold of an NCHW image into P = ph pw sequences (one per pixel offset inside its
  // ph x pw patches) of N = (H/ph)(W/pw) tokens, and its fold back, step by step: stages 1-4
  // after the unfold's Reshape (C H/ph, ph, W/pw, pw), Transpose (0, 2, 1, 3), Reshape (1, C, N, P),
  // Transpose (0, 3, 2, 1); 5-8 after the fold's Reshape (1, P, N, C), Transpose (0, 3, 2, 1),
  // Reshape (C H/ph, W/pw, ph, pw), Transpose (0, 2, 1, 3).
  struct Unfold {
    Value image;  // channels_last false
    int64_t ph = 0, pw = 0;
    int stage = 1;
  };
  // MobileViT v2's unfold of an NCHW image into (1, C, P, N) (onnx_import_patches.cpp): P = ph pw
  // offsets inside the patches, N patches; the image itself in dltrain, its pixels' groups named
  // by the patch (PatchGrid). PatchStep: the 6-D value between the unfold's Transpose (0, 1, 3,
  // 5, 2, 4) and its Reshape, or between the fold's Reshape (1, C, ph, pw, H/ph, W/pw) and its
  // Transpose, both (1, C, ph, pw, H/ph, W/pw).
  struct PatchGrid {
    int64_t ph = 1, pw = 1;
  };
  struct PatchStep {
    Value image;
    int64_t ph = 1, pw = 1;
    bool fold = false;
  };
  // timm's LinearSelfAttention between the unfold and the fold, node by node: the Split of the
  // joint projection (qkv: its value, c the value channels) into the query, keys and values, the
  // query's Softmax over the patches, the keys times it, their ReduceSum (the context), its
  // Expand, the values' Relu; the product of the last two closes it as one separableAttention.
  struct SeparablePart {
    enum Role { kQuery, kKeys, kValues, kScores, kWeighted, kContext, kRelu } role = kQuery;
    Value qkv;
    PatchGrid grid;
  };
  // EfficientViT's ReLU linear attention (onnx_import_linear.cpp), node by node: the queries
  // and keys through their Relu, the values padded with ones, the keys transposed, the context
  // keys^T values, the product queries context, its first d columns (top) and its last, that
  // plus eps (the denominator); the Div of top by it closes it as one linearAttention layer.
  // source: the image's token source; heads and d: the heads, the channels per head.
  struct LinearPart {
    enum Role { kQueries, kKeys, kKeysT, kValues, kContext, kProduct, kTop, kLast, kDenominator } role = kQueries;
    int source = -1;
    int64_t heads = 1, d = 1;
    float eps = 0.f;
  };
  // An NCHW image on its way into or out of a partition: (1, C, a, b, c, d) (H = a b, W = c d),
  // transposed to (1, a, c, b, d, C) (part), or a partitioned value reshaped to (1, a, c, b, d, C)
  // on its way out (dep).
  struct ImageSplit {
    Value image;  // channels_last false
    int64_t a = 0, b = 0, c = 0, d = 0;
    // kDepCl: NesT's reverse, a channels-last image: (1, a, b, c, d, C) after the Transpose (0, 1,
    // 3, 2, 4, 5) of a kDep, before its Reshape to (1, H, W, C)
    enum Stage { kSplit, kPart, kDep, kDepCl } stage = kSplit;
  };
  struct WinValue {
    size_t block = 0;
    WinStage stage = WinStage::kSplit;
  };
  // GC ViT's global query on its way to a window attention's scores: the channels-last query
  // image (1, wh, ww, C) unsqueezed to (1, 1, wh, ww, C) (kUnsqueezed), copied to every window
  // by Expand or Tile to (1, windows, wh, ww, C) (kCopies), TorchScript's Reshape to (windows,
  // wh, ww, C) (kWindows), reshaped to (windows, S, heads, d) (kHeads), transposed (0, 2, 1, 3):
  // the queries (kQueries), scaled by a Mul; their MatMul by a kv_only block's K^T joins them.
  struct GlobalQuery {
    enum Stage { kUnsqueezed, kCopies, kWindows, kHeads, kQueries } stage = kUnsqueezed;
    Value image;
    int64_t windows = 0, heads = 0, d = 0;
    double scale = 1;
  };

 private:
  bool window_node(const onnx::NodeProto& n);
  struct SliceArgs {
    std::vector<int64_t> starts, ends, axes, steps;
    // Slice i (a step of 1 or more) of a dimension of size d, clamped as ONNX does: its first
    // index and its count.
    std::pair<int64_t, int64_t> range(size_t i, int64_t d) const {
      auto clamp = [d](int64_t x) { return std::clamp<int64_t>(x < 0 ? x + d : x, 0, d); };
      const int64_t s = clamp(starts[i]), e = clamp(ends[i]);
      return {s, e > s ? (e - s + steps[i] - 1) / steps[i] : 0};
    }
  };
  SliceArgs slice_args(const onnx::NodeProto& n);
  void set_image_view(const onnx::NodeProto& n, const ImageView& v);
  bool subsample(const onnx::NodeProto& n, const std::string& value);
  void image_pad(const onnx::NodeProto& n, ImageView v);
  void image_slice(const onnx::NodeProto& n, ImageView v);
  void image_concat(const onnx::NodeProto& n);
  void patch_merging(const onnx::NodeProto& n, const std::vector<ImageView>& parts);
  void merge_split(const onnx::NodeProto& n, const Value& src, bool w_first);
  void merged_patches(const onnx::NodeProto& n, const Value& src, const std::vector<int64_t>& perm);
  void window_split(const onnx::NodeProto& n, const ImageView& v);
  void window_step(const onnx::NodeProto& n, const WinValue& w);
  bool global_query_node(const onnx::NodeProto& n);
  Value window_emit(const onnx::NodeProto& n, const WindowBlock& b);
  const Partition* partition_of_inputs(const onnx::NodeProto& n);
  std::optional<Partition> flat_view_partition(const onnx::NodeProto& n) const;
  void tag_outputs(const onnx::NodeProto& n, const Partition& p);
  bool maxvit_node(const onnx::NodeProto& n);
  void maxvit_close(const onnx::NodeProto& n, const std::string& proj);
  bool feeds_split(const std::string& value);
  const std::vector<int>& consumers_of(const std::string& value);  // the nodes reading it, by index
  // through a bias Add into a Reshape to (.., S, 3, heads, d) or, head-first, (.., S, heads, 3 d or -1)
  bool feeds_heads(const std::string& value);
  template <typename Want>
  bool reshaped_to(const std::string& value, const Want& want);
  // through a bias Add into a Reshape to (1, windows, S, 3, heads, d) (NesT's Q/K/V)
  bool feeds_block_heads(const std::string& value);
  bool read_as_image(const std::string& value, int64_t h, int64_t w, int64_t c);
  bool channel_heads(const std::string& value);
  std::vector<int64_t> ints_ahead(const std::string& name);
  bool feeds_reshape(const std::string& value, size_t rank);
  bool splits_heads(const std::string& value);
  bool unfold_node(const onnx::NodeProto& n);
  // MobileViT v2 (onnx_import_patches.cpp): the unfold, the fold, the separable attention, and
  // what the unfolded patches may pass through (patch_grid_of_inputs refuses the rest).
  bool patch_node(const onnx::NodeProto& n);
  std::optional<PatchGrid> patch_grid_of_inputs(const onnx::NodeProto& n);
  bool separable_node(const onnx::NodeProto& n);
  bool linear_node(const onnx::NodeProto& n);
  int linear_operand(const View& v, LinearPart& part) const;
  bool attention2d_start(const onnx::NodeProto& n);
  WindowBlock& partition_block(const onnx::NodeProto& n, const Value& v, const Partition& part,
                               const std::string& whose, const std::string& into);
  void permuted_read(const onnx::NodeProto& n, const LayerType& t);
  ImageView image_view_of(const onnx::NodeProto& n, int i);

  std::vector<float> need_floats(const onnx::NodeProto& n, int i, const std::string& role) {
    return floats_of(need_const(n, i, role), path_ + ": node '" + node_name(n) + "'");
  }

  void pad(const onnx::NodeProto& n) {
    Value v = value(n, 0);
    need_image(n, v);
    if (attr_string(n, "mode", "constant") != "constant") fail(n, "only constant (zero) padding is supported");
    std::vector<int64_t> p = n.input_size() > 1
                                 ? ints_of(need_const(n, 1, "pads"), path_ + ": node '" + node_name(n) + "'")
                                 : attr_ints(n, "pads", {});
    if (n.input_size() > 2 && !n.input(2).empty()) {
      const std::vector<float> value = need_floats(n, 2, "constant_value");
      if (value.size() != 1 || value[0] != 0.f) fail(n, "only zero padding (one constant_value of 0) is supported");
    }
    if (p.size() != 8 || p[0] || p[1] || p[4] || p[5] || *std::min_element(p.begin(), p.end()) < 0)
      fail(n, "only non-negative padding of height and width is supported");
    v.pad = {p[2], p[3], p[6], p[7]};
    set_out(n, v);
  }

  void need_image(const onnx::NodeProto& n, const Value& v) {
    if (v.flat && v.shape[0] * v.shape[1] > 1)
      fail(n, "its input is flattened (N, C*H*W); it needs an image (N, C, H, W)");
  }

  // Add(MatMul output, constant): the constant is that fullyConnected layer's bias.
  bool matmul_bias(const onnx::NodeProto& n) {
    if (n.input_size() != 2) return false;
    for (int i = 0; i < 2; ++i) {
      if (!constant(n.input(1 - i)) || !matmul_bias_.count(n.input(i))) continue;
      NamedTensor& bias = m_.params[matmul_bias_[n.input(i)]];
      std::vector<float> cb = floats_of(*constant(n.input(1 - i)), path_ + ": node '" + node_name(n) + "'");
      if (cb.size() == 1) cb.assign(bias.data.size(), cb[0]);
      if (cb.size() != bias.data.size())
        fail(n,
             "bias has " + std::to_string(cb.size()) + " values for " + std::to_string(bias.data.size()) + " outputs");
      for (size_t o = 0; o < cb.size(); ++o) bias.data[o] += cb[o];
      set_out(n, value(n, i, false, false, true));
      return true;
    }
    return false;
  }

  void read_layer(const LayerType& type, const onnx::NodeProto& n);

  // Sub(x, mean), then Div(x, std) or Mul(x, 1/std), directly on the graph input.
  void input_normalization(const onnx::NodeProto& n) {
    if (n.input_size() != 2 || !constant(n.input(1)) || !values_.count(n.input(0)) ||
        values_[n.input(0)].name != input_name_ || m_.network.layers.size() != 1)
      fail(n, "operator '" + n.op_type() +
                  "' is supported only as input normalization (x - mean, then / std or * 1/std, "
                  "with constant mean and std, before any other node)");
    const std::string& op = n.op_type();
    const Value in = value(n, 0);
    int64_t h = in.shape[0], w = in.shape[1], c = in.shape[2];
    std::vector<float> t = need_floats(n, 1, "constant");
    auto dims = dims_of(*constant(n.input(1)));
    std::vector<float> per_channel;
    if (static_cast<int64_t>(t.size()) == c || t.size() == 1) {
      per_channel = t.size() == 1 ? std::vector<float>(c, t[0]) : t;
    } else if (op == "Sub" && static_cast<int64_t>(t.size()) == h * w * c) {
      if (!sd_.empty() || !mean_.empty()) fail(n, "a second mean subtraction is not supported");
      mean_image_ = chw_to_hwc(t, h, w, c);
      return set_out(n, in);
    } else {
      fail(n, "the constant has " + std::to_string(t.size()) + " values; expected 1, C or C*H*W");
    }
    if (op == "Sub") {
      if (!sd_.empty() || !mean_.empty() || !mean_image_.empty())
        fail(n, "subtract the mean before dividing by the standard deviation");
      mean_ = per_channel;
    } else {
      if (!sd_.empty() || !mean_image_.empty()) fail(n, "only one scaling of the input (by channel) is supported");
      sd_ = per_channel;
      if (op == "Mul")
        for (float& v : sd_) v = v != 0 ? 1.f / v : 1.f;
    }
    set_out(n, in);
  }

  void finish() {
    if (g_.output_size() < 1) throw ModelError(path_ + ": the graph has no output");
    auto it = values_.find(g_.output(0).name());
    if (it == values_.end() && swap_error_.count(g_.output(0).name()))
      throw ModelError(swap_error_.at(g_.output(0).name()));
    if (it == values_.end())
      throw ModelError(path_ + ": the graph output '" + g_.output(0).name() + "' was not produced");
    Value out = it->second;
    // Class scores per image (1x1xK), or per pixel (HxWxK: a segmentation network, such as
    // torchvision's FCN, DeepLabV3 and LR-ASPP, read as MATLAB's importNetworkFromONNX does).
    const bool pixels = out.shape[0] * out.shape[1] > 1;
    if (pixels && (out.tokens || out.channels_last || out.flat))
      throw ModelError(path_ + ": the graph ends with " + out.shape.str() + " per image " +
                       (out.tokens ? "as tokens" : "in another layout") +
                       ", not class scores per image (1x1xK) or per pixel (N, K, H, W)");
    if (pixels && out.shape[2] < 2)
      throw ModelError(path_ + ": the graph ends with " + out.shape.str() +
                       " per image: one score per pixel, not K >= 2 class scores per pixel (N, K, H, W)");
    if (m_.network.layers.back().name != out.name)
      throw ModelError(path_ + ": the graph output '" + g_.output(0).name() + "' is not the last node's output");
    if (last_layer_op_ != "Softmax") {
      taken_.insert("softmax");
      add_layer("softmax", taken_.count("prob") ? "softmax" : "prob", {out.name});
    }
    if (pixels)
      add_layer("pixelClassification", taken_.count("pixelLabels") ? "pixelLabelsOutput" : "pixelLabels",
                {m_.network.layers.back().name});
    else
      add_layer("classification", taken_.count("output") ? "classoutput" : "output", {m_.network.layers.back().name});
    int64_t k = out.shape[2];
    m_.classes = opt_.classes;
    if (m_.classes.empty())
      for (int64_t i = 1; i <= k; ++i) m_.classes.push_back("class_" + std::to_string(i));
    if (static_cast<int64_t>(m_.classes.size()) != k)
      throw ModelError(path_ + ": the network outputs " + std::to_string(k) + " classes but " + opt_.classes_from +
                       " has " + std::to_string(m_.classes.size()) + " names (--classes FILE gives one per line)");
    // Input normalization found at the front of the graph.
    LayerSpec& in = m_.network.layers.front();
    int64_t h = in.get_ints("InputSize", {}, 3)[0], w = in.get_ints("InputSize", {}, 3)[1],
            c = in.get_ints("InputSize", {}, 3)[2];
    if (!mean_image_.empty() || (!mean_.empty() && sd_.empty())) {
      if (mean_image_.empty())
        for (int64_t p = 0; p < h * w; ++p) mean_image_.insert(mean_image_.end(), mean_.begin(), mean_.end());
      in.set("Normalization", "zerocenter");
      add_state(in.name, "Mean", Shape{h, w, c}, mean_image_);
    } else if (!sd_.empty()) {
      if (mean_.empty()) mean_.assign(c, 0.f);
      in.set("Normalization", "zscore");
      add_state(in.name, "Mean", Shape{1, 1, c}, mean_);
      add_state(in.name, "StandardDeviation", Shape{1, 1, c}, sd_);
    }
  }

  std::string path_;
  const onnx::GraphProto& g_;
  OnnxImportOptions opt_;
  int64_t opset_ = 13;
  std::map<std::string, const onnx::TensorProto*> consts_;
  std::vector<std::unique_ptr<onnx::TensorProto>> owned_;  // external data read, Constant and folded values
  std::map<std::string, Value> values_;
  // A channel shuffle being read: the image it started from, its groups, and whether the
  // Transpose (0, 2, 1, 3, 4) was seen (keyed by the 5-D value's name).
  struct Shuffle {
    Value image;
    int64_t groups = 0;
    bool transposed = false;
  };
  std::map<std::string, Shuffle> shuffles_;
  // A value reshaped to [-1], batch included (the dynamo exporter's as_strided), by name.
  std::map<std::string, Value> whole_;
  // Token reading (onnx_import_tokens.cpp): an image reshaped to (N, C, H*W) on its way to
  // tokens; the views by value name and their sources; the bias index of an attention layer's
  // output projection (for the Add that follows it).
  std::map<std::string, Value> flat_images_;
  // Transpose (0, 1, 3, 2) of an image: patches column by column when a Reshape to (N, C, W*H)
  // follows; the error for any other reader.
  std::map<std::string, Value> swapped_images_;
  std::map<std::string, std::string> swap_error_;
  std::set<std::string> column_major_;  // flat images of swapped ones
  int64_t exported_batch_ = 0;          // the graph input's fixed batch (0: symbolic)
  std::map<std::string, View> views_;
  std::vector<Rotary> rotaries_;
  std::map<std::string, RotaryTerm> rotary_terms_;
  std::map<std::tuple<int, int64_t, int64_t>, Value> column_layers_;  // projection_columns' layers
  // F.normalize on a view: ReduceL2 over its last axis (Clip, Expand) -> the view it normalizes
  std::map<std::string, std::string> norms_;
  // ReduceSum of attention weights over the keys (then Unsqueeze of its last axis): the weights'
  // value and whether the sum kept that axis (ConViT's division of its mixed weights by their sums)
  std::map<std::string, std::pair<std::string, bool>> row_sums_;
  // flattened images read as the rows (H*W, C) of their pixels (LeViT's BatchNorm1d)
  std::set<std::string> rows_;
  std::vector<Source> sources_;
  std::map<std::string, size_t> attention_bias_;
  // The tokenSlice layers made, by (sequence, first token, count, image height).
  std::map<std::tuple<std::string, int64_t, int64_t, int64_t>, Value> token_slices_;
  ExternalData external_;
  std::map<std::string, ImageView> image_views_;
  std::vector<WindowBlock> blocks_;
  std::map<std::string, WinValue> win_;
  std::map<std::string, GlobalQuery> global_q_;
  std::map<std::string, Partition> partitions_;  // partitioned tokens (their Value in values_)
  std::map<std::string, ImageSplit> splits_;
  // Flat (N, K) values stacked along a new axis 0, by the stack's name (stack_node).
  std::map<std::string, std::vector<Value>> stacks_;
  std::map<std::string, Unfold> unfolds_;
  std::map<std::string, PatchGrid> patch_grids_;  // values in values_ that are unfolded patches
  std::map<std::string, PatchStep> patch_steps_;
  std::map<std::string, SeparablePart> separable_;
  std::map<std::string, LinearPart> linear_;
  std::map<std::string, Value> flat_nchw_;  // flattened tokens transposed to (1, C, H*W), on the way to the image
  // A token sequence (values_' form, (S, 1, C)) transposed to (1, C, S): a 1-D pooling's output,
  // read by a BatchNormalization or the Transpose back (pool1d_node)
  std::map<std::string, Value> transposed_tokens_;
  std::map<std::string, std::vector<int>> consumers_;  // feeds_split's index, built on first use
  // Patch merging's channels in torchvision's order: dltrain's channel of each ONNX channel,
  // carried through the LayerNormalization to the MatMul that reads them.
  std::map<std::string, std::vector<int64_t>> channel_perm_;
  bool perm_ok_ = false;
  std::string last_layer_op_;                  // the operator of the node that added the last layer
  std::map<std::string, size_t> matmul_bias_;  // MatMul output -> index of its Bias in m_.params
  std::set<std::string> taken_;
  std::map<std::string, int64_t> next_suffix_;  // unique_name: base name -> next suffix to try
  std::string input_name_;
  std::vector<float> mean_, sd_, mean_image_;
  ModelData m_;
};

// The product of d, INT64_MAX when it overflows (onnx_import_tokens.cpp).
int64_t product(const std::vector<int64_t>& d);
// A target's leading (batch) entry for one image: 1, -1 or the symbolic batch.
inline bool one_image(int64_t d) { return d == 1 || d == -1 || d == kBatchDim; }
// Whether a * b is want, without overflow (a file's sizes may be anything).
inline bool times_is(int64_t a, int64_t b, int64_t want) {
  int64_t p = 0;
  return !__builtin_mul_overflow(a, b, &p) && p == want;
}
// The row dimension of a view that reads a rows x cols matrix row by row, with any size-1
// dimensions around: -1 when there is none (one row), -2 when it is not such a view
// (onnx_import_tokens.cpp).
int64_t row_dim(const Importer::View& v, int64_t rows, int64_t cols);

}  // namespace dlt::onnx_detail
