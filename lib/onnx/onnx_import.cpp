// ONNX -> dltrain model: walks the graph's nodes in order, mapping each operator to a layer
// (or to nothing: Flatten, Identity, Constant), converting NCHW weights to NHWC and tracking
// per value the layer that produces it, its per-image shape (H, W, C) and whether ONNX sees
// it flattened in CHW order (the first fullyConnected after it gets its columns permuted).
#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <memory>
#include <map>
#include <set>

#include "onnx/onnx.h"
#include "onnx/onnx_proto_util.h"
#include "tensor/shape.h"
#include "util/error.h"

namespace dlt {

using namespace onnxu;

namespace {

struct Value {
  std::string layer;  // our layer producing it
  Shape shape;        // per image (H, W, C)
  bool flat = false;  // ONNX sees (N, C*H*W) flattened in CHW order
  std::array<int64_t, 4> pad{};  // a zero Pad node's [top, left, bottom, right], for the next Conv / AveragePool
  bool padded() const { return pad[0] || pad[1] || pad[2] || pad[3]; }
};

const char* kSupported =
    "Conv, BatchNormalization, Relu, LeakyRelu, Elu, MaxPool, AveragePool, GlobalAveragePool, LRN, Dropout, Gemm, "
    "MatMul, Add, Sum, Concat, Flatten, Reshape, Softmax, Identity, Constant, and Sub/Mul/Div at the input";

class Importer {
 public:
  Importer(const std::string& path, const onnx::ModelProto& model, const OnnxImportOptions& opt)
      : path_(path), g_(model.graph()), opt_(opt) {
    for (const auto& op : model.opset_import())
      if (op.domain().empty() || op.domain() == "ai.onnx") opset_ = op.version();
  }

  ModelData run() {
    for (const auto& t : g_.initializer()) consts_[t.name()] = &t;
    add_input();
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
    if (!t) fail(n, role + " '" + n.input(i) + "' is computed, not a constant initializer (dltrain imports fixed weights only)");
    return *t;
  }
  Value& value(const onnx::NodeProto& n, int i, bool pad_ok = false) {
    if (n.input_size() <= i) fail(n, "has too few inputs");
    auto it = values_.find(n.input(i));
    if (it == values_.end()) fail(n, "input '" + n.input(i) + "' is neither the graph input nor a supported node's output");
    if (it->second.padded() && !pad_ok)
      fail(n, "its input comes from a Pad node; dltrain folds zero padding only into Conv and AveragePool");
    return it->second;
  }
  void set_out(const onnx::NodeProto& n, const Value& v) {
    if (n.output_size() < 1) fail(n, "has no output");
    values_[n.output(0)] = v;
  }

  // ---- building the spec
  std::string unique_name(const onnx::NodeProto& n) {
    std::string s = node_name(n);
    for (char& ch : s)
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-' && ch != '.') ch = '_';
    while (!s.empty() && (s[0] == '_' || s[0] == '.')) s.erase(0, 1);
    if (s.empty()) s = n.op_type();
    std::string name = s;
    for (int k = 2; taken_.count(name); ++k) name = s + "_" + std::to_string(k);
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
  static std::string num(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
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
        if (in) throw ModelError(path_ + ": the graph has several inputs ('" + in->name() + "', '" + v.name() +
                                 "'); dltrain imports single-image-input classifiers");
        in = &v;
      }
    if (!in) throw ModelError(path_ + ": the graph has no input");
    std::vector<int64_t> d;
    for (const auto& dim : in->type().tensor_type().shape().dim()) d.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    int64_t h = -1, w = -1, c = -1;
    if (d.size() == 4) c = d[1], h = d[2], w = d[3];
    if (opt_.input_size.size() == 3) h = opt_.input_size[0], w = opt_.input_size[1], c = opt_.input_size[2];
    if (d.size() != 4 && opt_.input_size.empty())
      throw ModelError(path_ + ": the graph input '" + in->name() + "' has " + std::to_string(d.size()) +
                       " dimensions, expected (N, C, H, W) (give --input-size HxWxC)");
    if (h <= 0 || w <= 0 || c <= 0)
      throw ModelError(path_ + ": the graph input '" + in->name() + "' has symbolic sizes (give --input-size HxWxC)");
    input_name_ = "input";
    taken_.insert(input_name_);
    LayerSpec& s = add_layer("imageInput", input_name_, {});
    set_list(s, "InputSize", {h, w, c});
    s.set("Normalization", "none");
    values_[in->name()] = Value{input_name_, Shape{h, w, c}, false};
  }

  // ---- operators
  void node(const onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    if (!n.domain().empty() && n.domain() != "ai.onnx")
      fail(n, "operator domain '" + n.domain() + "' is not supported (supported: " + kSupported + ")");
    if (op == "Constant") return constant_node(n);
    if (op == "Identity") return set_out(n, value(n, 0));
    if (op == "Conv") return conv(n);
    if (op == "BatchNormalization") return batch_norm(n);
    if (op == "Relu" || op == "LeakyRelu" || op == "Elu") return activation(n);
    if (op == "MaxPool" || op == "AveragePool") return pool(n);
    if (op == "GlobalAveragePool") return global_pool(n);
    if (op == "LRN") return lrn(n);
    if (op == "Dropout") return dropout(n);
    if (op == "Gemm" || op == "MatMul") return fully_connected(n);
    if (op == "Add" || op == "Sum") return add(n);
    if (op == "Concat") return concat(n);
    if (op == "Flatten" || op == "Reshape" || op == "Squeeze") return flatten(n);
    if (op == "Softmax") return softmax(n);
    if (op == "Pad") return pad(n);
    if (op == "Sub" || op == "Mul" || op == "Div") return input_normalization(n);
    fail(n, "operator '" + op + "' is not supported by dltrain import (supported: " + kSupported + ")");
  }

  void constant_node(const onnx::NodeProto& n) {
    const auto* a = find_attr(n, "value");
    if (!a || !a->has_t()) fail(n, "only Constant nodes with a tensor 'value' are supported");
    owned_.push_back(std::make_unique<onnx::TensorProto>(a->t()));
    consts_[n.output(0)] = owned_.back().get();
  }

  void dropout(const onnx::NodeProto& n) {
    const Value in = value(n, 0);
    float ratio = attr_float(n, "ratio", 0.5f);
    if (n.input_size() > 1 && !n.input(1).empty()) ratio = need_floats(n, 1, "ratio").at(0);
    std::string name = unique_name(n);
    add_layer("dropout", name, {in.layer}).set("Probability", num(ratio));
    set_out(n, Value{name, in.shape, in.flat});
  }

  std::vector<float> need_floats(const onnx::NodeProto& n, int i, const std::string& role) {
    return floats_of(need_const(n, i, role), path_ + ": node '" + node_name(n) + "'");
  }

  // pads [top, left, bottom, right] from ONNX pads / auto_pad for effective kernel ek.
  std::array<int64_t, 4> pads_of(const onnx::NodeProto& n, const Shape& in, int64_t ekh, int64_t ekw, int64_t sh, int64_t sw) {
    std::string ap = attr_string(n, "auto_pad", "NOTSET");
    if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      auto total = [](int64_t x, int64_t k, int64_t s) { return std::max<int64_t>(((x + s - 1) / s - 1) * s + k - x, 0); };
      int64_t th = total(in[0], ekh, sh), tw = total(in[1], ekw, sw);
      bool upper = ap == "SAME_UPPER";
      return {upper ? th / 2 : th - th / 2, upper ? tw / 2 : tw - tw / 2, upper ? th - th / 2 : th / 2, upper ? tw - tw / 2 : tw / 2};
    }
    if (ap == "VALID") return {0, 0, 0, 0};
    auto p = attr_ints(n, "pads", {0, 0, 0, 0});
    if (p.size() != 4) fail(n, "pads has " + std::to_string(p.size()) + " values, expected 4 (2-D only)");
    return {p[0], p[1], p[2], p[3]};
  }

  void pad(const onnx::NodeProto& n) {
    Value v = value(n, 0);
    need_image(n, v);
    if (attr_string(n, "mode", "constant") != "constant") fail(n, "only constant (zero) padding is supported");
    std::vector<int64_t> p = n.input_size() > 1 ? ints_of(need_const(n, 1, "pads"), path_ + ": node '" + node_name(n) + "'")
                                                 : attr_ints(n, "pads", {});
    if (n.input_size() > 2 && !n.input(2).empty() && need_floats(n, 2, "constant_value").at(0) != 0.f)
      fail(n, "only zero padding is supported");
    if (p.size() != 8 || p[0] || p[1] || p[4] || p[5] || *std::min_element(p.begin(), p.end()) < 0)
      fail(n, "only non-negative padding of height and width is supported");
    v.pad = {p[2], p[3], p[6], p[7]};
    set_out(n, v);
  }

  void need_image(const onnx::NodeProto& n, const Value& v) {
    if (v.flat && v.shape[0] * v.shape[1] > 1) fail(n, "its input is flattened (N, C*H*W); it needs an image (N, C, H, W)");
  }

  void conv(const onnx::NodeProto& n) {
    const Value in = value(n, 0, true);
    need_image(n, in);
    const auto& wt = need_const(n, 1, "weight");
    auto wd = dims_of(wt);
    if (wd.size() != 4) fail(n, "weight has " + std::to_string(wd.size()) + " dimensions (only 2-D convolutions)");
    int64_t group = attr_int(n, "group", 1);
    if (group != 1)
      fail(n, "group is " + std::to_string(group) + " (grouped and depthwise convolutions are not supported; only group 1)");
    int64_t k = wd[0], c = wd[1], kh = wd[2], kw = wd[3];
    if (c != in.shape[2]) fail(n, "weight expects " + std::to_string(c) + " input channels but the input has " + std::to_string(in.shape[2]));
    auto st = attr_ints(n, "strides", {1, 1});
    auto dl = attr_ints(n, "dilations", {1, 1});
    if (st.size() != 2 || dl.size() != 2) fail(n, "strides / dilations must have 2 values");
    int64_t ekh = (kh - 1) * dl[0] + 1, ekw = (kw - 1) * dl[1] + 1;
    auto p = pads_of(n, in.shape, ekh, ekw, st[0], st[1]);
    for (int i = 0; i < 4; ++i) p[i] += in.pad[i];
    int64_t oh = (in.shape[0] + p[0] + p[2] - ekh) / st[0] + 1, ow = (in.shape[1] + p[1] + p[3] - ekw) / st[1] + 1;
    if (oh < 1 || ow < 1) fail(n, "the kernel is larger than the padded input");
    std::string name = unique_name(n);
    LayerSpec& s = add_layer("convolution2d", name, {in.layer});
    set_list(s, "FilterSize", {kh, kw});
    s.set("NumFilters", std::to_string(k));
    s.set("NumChannels", std::to_string(c));
    set_list(s, "Stride", st);
    set_list(s, "DilationFactor", dl);
    set_list(s, "Padding", {p[0], p[2], p[1], p[3]});
    std::vector<float> w = need_floats(n, 1, "weight");
    add_param(name, "Weights", Shape{k, kh, kw, c}, oihw_to_ohwi(w, k, c, kh, kw));
    std::vector<float> b(k, 0.f);
    if (n.input_size() > 2 && !n.input(2).empty()) b = need_floats(n, 2, "bias");
    if (static_cast<int64_t>(b.size()) != k) fail(n, "bias has " + std::to_string(b.size()) + " values for " + std::to_string(k) + " filters");
    add_param(name, "Bias", Shape{k}, b);
    set_out(n, Value{name, Shape{oh, ow, k}, false});
  }

  void batch_norm(const onnx::NodeProto& n) {
    const Value in = value(n, 0);
    int64_t c = in.shape[2];
    if (in.flat && in.shape[0] * in.shape[1] > 1) fail(n, "its input is flattened; batch normalization needs (N, C, H, W) or (N, C)");
    std::vector<std::vector<float>> t;
    const char* roles[] = {"scale", "bias", "mean", "var"};
    for (int i = 0; i < 4; ++i) {
      t.push_back(need_floats(n, i + 1, roles[i]));
      if (static_cast<int64_t>(t.back().size()) != c) fail(n, std::string(roles[i]) + " has " + std::to_string(t.back().size()) + " values for " + std::to_string(c) + " channels");
    }
    std::string name = unique_name(n);
    add_layer("batchNormalization", name, {in.layer}).set("Epsilon", num(attr_float(n, "epsilon", 1e-5f)));
    add_param(name, "Scale", Shape{c}, t[0]);
    add_param(name, "Offset", Shape{c}, t[1]);
    add_state(name, "TrainedMean", Shape{c}, t[2]);
    add_state(name, "TrainedVariance", Shape{c}, t[3]);
    set_out(n, Value{name, in.shape, in.flat});
  }

  void activation(const onnx::NodeProto& n) {
    const Value in = value(n, 0);
    std::string name = unique_name(n);
    if (n.op_type() == "Relu") add_layer("relu", name, {in.layer});
    else if (n.op_type() == "LeakyRelu") add_layer("leakyRelu", name, {in.layer}).set("Scale", num(attr_float(n, "alpha", 0.01f)));
    else add_layer("elu", name, {in.layer}).set("Alpha", num(attr_float(n, "alpha", 1.f)));
    set_out(n, Value{name, in.shape, in.flat});
  }

  void pool(const onnx::NodeProto& n) {
    bool avg = n.op_type() == "AveragePool";
    const Value in = value(n, 0, avg);
    need_image(n, in);
    auto ks = attr_ints(n, "kernel_shape", {});
    auto st = attr_ints(n, "strides", {1, 1});
    if (ks.size() != 2 || st.size() != 2) fail(n, "kernel_shape and strides must have 2 values (2-D pooling only)");
    for (int64_t d : attr_ints(n, "dilations", {1, 1}))
      if (d != 1) fail(n, "dilated pooling is not supported");
    auto p = pads_of(n, in.shape, ks[0], ks[1], st[0], st[1]);
    bool has_pad = p[0] || p[1] || p[2] || p[3];
    if (avg && has_pad && attr_int(n, "count_include_pad", 0) == 0)
      fail(n, "count_include_pad is 0 with padding, but dltrain's average pooling counts padding as zeros "
              "(export with count_include_pad=True, or remove the padding)");
    for (int i = 0; i < 4; ++i) p[i] += in.pad[i];  // a Pad node's zeros count in the average
    int64_t h = in.shape[0], w = in.shape[1];
    auto out = [](int64_t x, int64_t a, int64_t b, int64_t k, int64_t s, bool ceil_mode) {
      int64_t span = x + a + b - k;
      int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
      if (ceil_mode && (o - 1) * s >= x + a) --o;  // the last window must start inside the input
      return o;
    };
    bool ceil_mode = attr_int(n, "ceil_mode", 0) != 0;
    int64_t oh = out(h, p[0], p[2], ks[0], st[0], ceil_mode), ow = out(w, p[1], p[3], ks[1], st[1], ceil_mode);
    int64_t eb = std::max<int64_t>((oh - 1) * st[0] + ks[0] - (h + p[0] + p[2]), 0);
    int64_t er = std::max<int64_t>((ow - 1) * st[1] + ks[1] - (w + p[1] + p[3]), 0);
    if (eb || er) {
      if (avg) fail(n, "ceil_mode 1 changes the output size, which dltrain's average pooling cannot reproduce (export with ceil_mode=False)");
      p[2] += eb;  // max pooling: extra bottom / right padding never wins the max
      p[3] += er;
    }
    std::string name = unique_name(n);
    LayerSpec& s = add_layer(avg ? "averagePooling2d" : "maxPooling2d", name, {in.layer});
    set_list(s, "PoolSize", ks);
    set_list(s, "Stride", st);
    set_list(s, "Padding", {p[0], p[2], p[1], p[3]});
    set_out(n, Value{name, Shape{oh, ow, in.shape[2]}, false});
  }

  void global_pool(const onnx::NodeProto& n) {
    const Value in = value(n, 0);
    need_image(n, in);
    std::string name = unique_name(n);
    add_layer("globalAveragePooling2d", name, {in.layer});
    set_out(n, Value{name, Shape{1, 1, in.shape[2]}, false});
  }

  void lrn(const onnx::NodeProto& n) {
    const Value in = value(n, 0);
    need_image(n, in);
    std::string name = unique_name(n);
    LayerSpec& s = add_layer("crossChannelNormalization", name, {in.layer});
    s.set("WindowChannelSize", std::to_string(attr_int(n, "size", 0)));
    s.set("Alpha", num(attr_float(n, "alpha", 1e-4f)));
    s.set("Beta", num(attr_float(n, "beta", 0.75f)));
    s.set("K", num(attr_float(n, "bias", 1.f)));
    set_out(n, Value{name, in.shape, false});
  }

  void flatten(const onnx::NodeProto& n) {
    Value v = value(n, 0);
    if (n.op_type() == "Flatten") {
      if (attr_int(n, "axis", 1) != 1) fail(n, "only Flatten with axis 1 (keep the batch dimension) is supported");
    } else if (n.op_type() == "Squeeze") {
      if (v.shape[0] != 1 || v.shape[1] != 1) fail(n, "only squeezing 1x1 spatial dimensions is supported");
    } else {
      auto shape = ints_of(need_const(n, 1, "shape"), path_ + ": node '" + node_name(n) + "'");
      int64_t numel = v.shape.numel();
      bool ok = shape.size() == 2 && (shape[0] == 0 || shape[0] == -1 || shape[0] >= 1) &&
                (shape[1] == -1 || shape[1] == numel) && !(shape[0] == -1 && shape[1] == -1);
      if (!ok) fail(n, "only reshapes that flatten to (N, " + std::to_string(numel) + ") are supported");
    }
    v.flat = true;
    set_out(n, v);
  }

  void fully_connected(const onnx::NodeProto& n) {
    const Value in = value(n, 0);
    bool gemm = n.op_type() == "Gemm";
    if (gemm && attr_int(n, "transA", 0) != 0) fail(n, "transA 1 is not supported");
    const auto& bt = need_const(n, 1, "weight");
    auto bd = dims_of(bt);
    if (bd.size() != 2) fail(n, "weight has " + std::to_string(bd.size()) + " dimensions, expected 2");
    bool trans_b = gemm && attr_int(n, "transB", 0) != 0;
    int64_t k = trans_b ? bd[0] : bd[1], inputs = trans_b ? bd[1] : bd[0];
    int64_t h = in.shape[0], w = in.shape[1], c = in.shape[2];
    if (inputs != in.shape.numel())
      fail(n, "weight expects " + std::to_string(inputs) + " inputs but its input has " + std::to_string(in.shape.numel()));
    if (!in.flat && h * w > 1) fail(n, "its input is an image (N, C, H, W); flatten it first");
    std::vector<float> b = floats_of(bt, path_ + ": node '" + node_name(n) + "'"), wk(k * inputs);
    float alpha = gemm ? attr_float(n, "alpha", 1.f) : 1.f, beta = gemm ? attr_float(n, "beta", 1.f) : 1.f;
    for (int64_t o = 0; o < k; ++o)
      for (int64_t i = 0; i < inputs; ++i) wk[o * inputs + i] = alpha * (trans_b ? b[o * inputs + i] : b[i * k + o]);
    if (h * w > 1) wk = chw_cols_to_hwc(wk, k, h, w, c);
    std::vector<float> bias(k, 0.f);
    if (gemm && n.input_size() > 2 && !n.input(2).empty()) {
      std::vector<float> cb = need_floats(n, 2, "bias");
      if (cb.size() == 1) cb.assign(k, cb[0]);
      if (static_cast<int64_t>(cb.size()) != k) fail(n, "bias has " + std::to_string(cb.size()) + " values for " + std::to_string(k) + " outputs");
      for (int64_t o = 0; o < k; ++o) bias[o] = beta * cb[o];
    }
    std::string name = unique_name(n);
    add_layer("fullyConnected", name, {in.layer}).set("OutputSize", std::to_string(k));
    add_param(name, "Weights", Shape{k, inputs}, wk);
    add_param(name, "Bias", Shape{k}, bias);
    if (!gemm) matmul_bias_[n.output(0)] = m_.params.size() - 1;
    set_out(n, Value{name, Shape{1, 1, k}, true});
  }

  void add(const onnx::NodeProto& n) {
    // MatMul + Add(constant): the constant is the fullyConnected bias.
    if (n.op_type() == "Add" && n.input_size() == 2) {
      for (int i = 0; i < 2; ++i) {
        if (!constant(n.input(1 - i)) || !matmul_bias_.count(n.input(i))) continue;
        NamedTensor& bias = m_.params[matmul_bias_[n.input(i)]];
        std::vector<float> cb = floats_of(*constant(n.input(1 - i)), path_ + ": node '" + node_name(n) + "'");
        if (cb.size() == 1) cb.assign(bias.data.size(), cb[0]);
        if (cb.size() != bias.data.size()) fail(n, "bias has " + std::to_string(cb.size()) + " values for " + std::to_string(bias.data.size()) + " outputs");
        for (size_t o = 0; o < cb.size(); ++o) bias.data[o] += cb[o];
        return set_out(n, value(n, i));
      }
    }
    std::vector<std::string> ins;
    Value first = value(n, 0);
    for (int i = 0; i < n.input_size(); ++i) {
      if (constant(n.input(i))) fail(n, "adding a constant is supported only as the bias after MatMul or at the input");
      const Value& v = value(n, i);
      if (v.shape != first.shape || v.flat != first.flat)
        fail(n, "its inputs have different shapes (" + first.shape.str() + " and " + v.shape.str() + ")");
      ins.push_back(v.layer);
    }
    if (ins.size() < 2) fail(n, "needs at least two inputs");
    std::string name = unique_name(n);
    add_layer("addition", name, ins).set("NumInputs", std::to_string(ins.size()));
    m_.network.layers.back().inputs = ins;
    set_out(n, Value{name, first.shape, first.flat});
  }

  void concat(const onnx::NodeProto& n) {
    Value first = value(n, 0);
    int64_t axis = attr_int(n, "axis", 1);
    int64_t rank = first.flat ? 2 : 4;
    if (axis != 1 && axis != 1 - rank) fail(n, "only concatenation along channels (axis 1) is supported");
    std::vector<std::string> ins;
    int64_t c = 0;
    for (int i = 0; i < n.input_size(); ++i) {
      const Value& v = value(n, i);
      if (v.shape[0] != first.shape[0] || v.shape[1] != first.shape[1] || v.flat != first.flat)
        fail(n, "its inputs differ in height or width (" + first.shape.str() + " and " + v.shape.str() + ")");
      if (v.flat && v.shape[0] * v.shape[1] > 1) fail(n, "concatenating flattened images is not supported");
      c += v.shape[2];
      ins.push_back(v.layer);
    }
    if (ins.size() < 2) return set_out(n, first);
    std::string name = unique_name(n);
    add_layer("depthConcatenation", name, ins).set("NumInputs", std::to_string(ins.size()));
    m_.network.layers.back().inputs = ins;
    set_out(n, Value{name, Shape{first.shape[0], first.shape[1], c}, first.flat});
  }

  void softmax(const onnx::NodeProto& n) {
    const Value in = value(n, 0);
    int64_t axis = attr_int(n, "axis", opset_ >= 13 ? -1 : 1);
    bool channel = in.shape[0] * in.shape[1] == 1 && (axis == 1 || (in.flat && axis == -1));
    if (!channel)
      fail(n, "only a softmax over the class scores (N, K) is supported");
    std::string name = unique_name(n);
    add_layer("softmax", name, {in.layer});
    set_out(n, Value{name, in.shape, true});
  }

  // Sub(x, mean), then Div(x, std) or Mul(x, 1/std), directly on the graph input.
  void input_normalization(const onnx::NodeProto& n) {
    if (n.input_size() != 2 || !constant(n.input(1)) || !values_.count(n.input(0)) ||
        values_[n.input(0)].layer != input_name_ || m_.network.layers.size() != 1)
      fail(n, "operator '" + n.op_type() + "' is supported only as input normalization (x - mean, then / std or * 1/std, "
              "with constant mean and std, before any other node)");
    const Value in = value(n, 0);
    int64_t h = in.shape[0], w = in.shape[1], c = in.shape[2];
    std::vector<float> t = need_floats(n, 1, "constant");
    auto dims = dims_of(*constant(n.input(1)));
    std::vector<float> per_channel;
    if (static_cast<int64_t>(t.size()) == c || t.size() == 1) {
      per_channel = t.size() == 1 ? std::vector<float>(c, t[0]) : t;
    } else if (n.op_type() == "Sub" && static_cast<int64_t>(t.size()) == h * w * c) {
      if (!sd_.empty() || !mean_.empty()) fail(n, "a second mean subtraction is not supported");
      mean_image_ = chw_to_hwc(t, h, w, c);
      return set_out(n, in);
    } else {
      fail(n, "the constant has " + std::to_string(t.size()) + " values; expected 1, C or C*H*W");
    }
    if (n.op_type() == "Sub") {
      if (!sd_.empty() || !mean_.empty() || !mean_image_.empty()) fail(n, "subtract the mean before dividing by the standard deviation");
      mean_ = per_channel;
    } else {
      if (!sd_.empty() || !mean_image_.empty()) fail(n, "only one scaling of the input (by channel) is supported");
      sd_ = per_channel;
      if (n.op_type() == "Mul")
        for (float& v : sd_) v = v != 0 ? 1.f / v : 1.f;
    }
    set_out(n, in);
  }

  void finish() {
    if (g_.output_size() < 1) throw ModelError(path_ + ": the graph has no output");
    auto it = values_.find(g_.output(0).name());
    if (it == values_.end()) throw ModelError(path_ + ": the graph output '" + g_.output(0).name() + "' was not produced");
    Value out = it->second;
    if (out.shape[0] != 1 || out.shape[1] != 1)
      throw ModelError(path_ + ": the graph ends with " + out.shape.str() + " per image, not class scores (1x1xK)");
    if (m_.network.layers.back().name != out.layer)
      throw ModelError(path_ + ": the graph output '" + g_.output(0).name() + "' is not the last node's output");
    if (m_.network.layers.back().type != "softmax") {
      taken_.insert("softmax");
      add_layer("softmax", taken_.count("prob") ? "softmax" : "prob", {out.layer});
    }
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
    int64_t h = in.get_ints("InputSize", {}, 3)[0], w = in.get_ints("InputSize", {}, 3)[1], c = in.get_ints("InputSize", {}, 3)[2];
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
  std::vector<std::unique_ptr<onnx::TensorProto>> owned_;
  std::map<std::string, Value> values_;
  std::map<std::string, size_t> matmul_bias_;  // MatMul output -> index of its Bias in m_.params
  std::set<std::string> taken_;
  std::string input_name_;
  std::vector<float> mean_, sd_, mean_image_;
  ModelData m_;
};

}  // namespace

bool onnx_available() { return true; }

ModelData import_onnx(const std::string& path, const OnnxImportOptions& options) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ModelError(path + ": cannot open the ONNX file (check the path)");
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&f))
    throw ModelError(path + ": not a readable ONNX model (protobuf parse failed; is it an .onnx file?)");
  OnnxImportOptions o = options;
  if (o.classes.empty())
    for (const auto& meta : model.metadata_props())
      if (meta.key() == kOnnxClassNamesKey && !meta.value().empty()) {
        const std::string& v = meta.value();
        for (size_t start = 0, end; start <= v.size(); start = end + 1) {
          end = std::min(v.find('\n', start), v.size());
          o.classes.push_back(v.substr(start, end - start));
        }
        o.classes_from = "its class_names metadata";
      }
  ModelData m = Importer(path, model, o).run();
  m.metadata_json = "{\"imported_from\": \"onnx\"}";
  return m;
}

}  // namespace dlt
