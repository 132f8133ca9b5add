// ONNX -> dltrain model: walks the graph's nodes in order, tracking per value the layer that
// produces it, its per-image shape (H, W, C) and whether ONNX sees it flattened in CHW order.
// The operators that become layers are read by the layer types themselves (LayerType::
// from_onnx, through NodeReader below); this file handles what is graph structure: the input
// and its normalization (Sub / Mul / Div), Constant, Identity, Flatten / Reshape / Squeeze,
// zero Pad (folded into the next layer), a MatMul's bias Add, and the closing softmax +
// classification.
#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include "layers/layer.h"
#include "onnx/onnx.h"
#include "onnx/onnx_proto_util.h"
#include "tensor/shape.h"
#include "util/error.h"
#include "util/one_line.h"

namespace dlt {

using namespace onnxu;

namespace {

using Value = OnnxValue;  // name: the layer producing it

constexpr int64_t kMaxInputValues = int64_t{1} << 31;  // per image (H * W * C)

bool padded(const Value& v) { return v.pad[0] || v.pad[1] || v.pad[2] || v.pad[3]; }

// The operators import reads: the layer types' (registry order), then the graph's own.
std::string supported_ops() {
  std::string out;
  for (const LayerType* t : layer_registry())
    for (const auto& op : t->onnx_ops) out += op + ", ";
  return out + "Flatten, Reshape, Squeeze, Pad, Identity, Constant, and Sub/Mul/Div at the input";
}

class Importer {
 public:
  friend class NodeReader;
  Importer(const std::string& path, const onnx::ModelProto& model, const OnnxImportOptions& opt)
      : path_(path), g_(model.graph()), opt_(opt) {
    for (const auto& op : model.opset_import())
      if (op.domain().empty() || op.domain() == "ai.onnx") opset_ = op.version();
  }

  ModelData run() {
    for (const auto& t : g_.initializer()) {
      check_tensor(t, path_ + ": initializer");
      consts_[t.name()] = &t;
    }
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
    if (!t)
      fail(n,
           role + " '" + n.input(i) + "' is computed, not a constant initializer (dltrain imports fixed weights only)");
    return *t;
  }
  Value& value(const onnx::NodeProto& n, int i, bool pad_ok = false, bool indices = false) {
    if (n.input_size() <= i) fail(n, "has too few inputs");
    auto it = values_.find(n.input(i));
    if (it == values_.end())
      fail(n, "input '" + n.input(i) +
                  "' is neither the graph input nor an earlier supported node's output (a graph must list its "
                  "nodes in topological order, without cycles)");
    if (padded(it->second) && !pad_ok)
      fail(n, "its input comes from a Pad node; dltrain folds zero padding only into Conv and AveragePool");
    if (it->second.indices && !indices)
      fail(n, "input '" + n.input(i) + "' is a MaxPool's Indices output, which dltrain reads only in MaxUnpool");
    if (!it->second.indices && indices) fail(n, "input '" + n.input(i) + "' is not a MaxPool's Indices output");
    return it->second;
  }
  void set_out(const onnx::NodeProto& n, const Value& v, int i = 0) {
    if (n.output_size() <= i || n.output(i).empty()) fail(n, "has no output " + std::to_string(i));
    values_[n.output(i)] = v;
  }

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
  void node(const onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    if (!n.domain().empty() && n.domain() != "ai.onnx")
      fail(n, "operator domain '" + n.domain() + "' is not supported (supported: " + supported_ops() + ")");
    if (op == "Constant") return constant_node(n);
    if (op == "Identity") return set_out(n, value(n, 0));
    if (op == "Flatten" || op == "Reshape" || op == "Squeeze") return flatten(n);
    if (op == "Pad") return pad(n);
    if (op == "Sub" || op == "Mul" || op == "Div") return input_normalization(n);
    if (op == "Add" && matmul_bias(n)) return;
    if (const LayerType* t = layer_type_for_onnx(op)) return read_layer(*t, n);
    fail(n, "operator '" + op + "' is not supported by dltrain import (supported: " + supported_ops() + ")");
  }

  void constant_node(const onnx::NodeProto& n) {
    const auto* a = find_attr(n, "value");
    if (!a || !a->has_t()) fail(n, "only Constant nodes with a tensor 'value' are supported");
    if (n.output_size() < 1 || n.output(0).empty()) fail(n, "has no output");
    check_tensor(a->t(), path_ + ": node '" + node_name(n) + "'");
    owned_.push_back(std::make_unique<onnx::TensorProto>(a->t()));
    consts_[n.output(0)] = owned_.back().get();
  }

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

  void flatten(const onnx::NodeProto& n) {
    Value v = value(n, 0);
    const std::string& op = n.op_type();
    if (op == "Flatten") {
      if (attr_int(n, "axis", 1) != 1) fail(n, "only Flatten with axis 1 (keep the batch dimension) is supported");
    } else if (op == "Squeeze") {
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
      set_out(n, value(n, i));
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
    if (it == values_.end())
      throw ModelError(path_ + ": the graph output '" + g_.output(0).name() + "' was not produced");
    Value out = it->second;
    if (out.shape[0] != 1 || out.shape[1] != 1)
      throw ModelError(path_ + ": the graph ends with " + out.shape.str() + " per image, not class scores (1x1xK)");
    if (m_.network.layers.back().name != out.name)
      throw ModelError(path_ + ": the graph output '" + g_.output(0).name() + "' is not the last node's output");
    if (last_layer_op_ != "Softmax") {
      taken_.insert("softmax");
      add_layer("softmax", taken_.count("prob") ? "softmax" : "prob", {out.name});
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
  std::vector<std::unique_ptr<onnx::TensorProto>> owned_;
  std::map<std::string, Value> values_;
  std::string last_layer_op_;                  // the operator of the node that added the last layer
  std::map<std::string, size_t> matmul_bias_;  // MatMul output -> index of its Bias in m_.params
  std::set<std::string> taken_;
  std::map<std::string, int64_t> next_suffix_;  // unique_name: base name -> next suffix to try
  std::string input_name_;
  std::vector<float> mean_, sd_, mean_image_;
  ModelData m_;
};

// One node as a layer type's from_onnx sees it (layers/onnx_graph.h).
class NodeReader final : public OnnxNodeReader {
 public:
  NodeReader(Importer& im, const onnx::NodeProto& n) : im_(im), n_(n) {}
  const std::string& op() const override { return n_.op_type(); }
  int opset() const override { return static_cast<int>(im_.opset_); }
  int num_inputs() const override { return n_.input_size(); }
  bool has_input(int i) const override { return n_.input_size() > i && !n_.input(i).empty(); }
  bool is_constant(int i) const override { return has_input(i) && im_.constant(n_.input(i)) != nullptr; }
  OnnxValue input(int i, bool absorb_pad) override { return im_.value(n_, i, absorb_pad); }
  OnnxValue indices_input(int i) override { return im_.value(n_, i, false, true); }
  int num_outputs() const override { return n_.output_size(); }
  bool has_output(int i) const override { return n_.output_size() > i && !n_.output(i).empty(); }
  std::vector<float> floats(int i, const std::string& role) override { return im_.need_floats(n_, i, role); }
  std::vector<int64_t> dims(int i, const std::string& role) override { return dims_of(im_.need_const(n_, i, role)); }
  int64_t attr_int(const std::string& name, int64_t def) const override { return onnxu::attr_int(n_, name, def); }
  float attr_float(const std::string& name, float def) const override { return onnxu::attr_float(n_, name, def); }
  std::string attr_string(const std::string& name, const std::string& def) const override {
    return onnxu::attr_string(n_, name, def);
  }
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> def) const override {
    return onnxu::attr_ints(n_, name, std::move(def));
  }
  [[noreturn]] void fail(const std::string& why) const override { im_.fail(n_, why); }
  LayerSpec& add_layer(const std::string& type, const std::vector<std::string>& inputs) override {
    im_.last_layer_op_ = n_.op_type();
    return im_.add_layer(type, im_.unique_name(n_), inputs);
  }
  void add_param(const std::string& layer, const std::string& name, const Shape& shape, std::vector<float> v) override {
    im_.add_param(layer, name, shape, std::move(v));
  }
  void add_state(const std::string& layer, const std::string& name, const Shape& shape, std::vector<float> v) override {
    im_.add_state(layer, name, shape, std::move(v));
  }
  void set_output(const OnnxValue& v) override { im_.set_out(n_, v); }
  void set_output_at(int i, const OnnxValue& v) override { im_.set_out(n_, v, i); }

 private:
  Importer& im_;
  const onnx::NodeProto& n_;
};

void Importer::read_layer(const LayerType& type, const onnx::NodeProto& n) {
  NodeReader r(*this, n);
  type.from_onnx(r);
  // MatMul has no bias input: a following Add of a constant is its bias (matmul_bias).
  if (const std::string& op = n.op_type(); op == "MatMul") matmul_bias_[n.output(0)] = m_.params.size() - 1;
}

// GraphProto.node entries (ModelProto field 7 is the graph, GraphProto field 1 a node) read
// from the wire without parsing them; -1 when the bytes are not protobuf (the parse reports it).
int64_t count_graph_nodes(const std::string& bytes) {
  using google::protobuf::internal::WireFormatLite;
  if (bytes.size() > static_cast<size_t>(INT_MAX)) return -1;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  auto length_delimited = [](uint32_t tag, int field) {
    return WireFormatLite::GetTagFieldNumber(tag) == field &&
           WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
  };
  int64_t nodes = 0;
  while (uint32_t tag = in.ReadTag()) {
    if (!length_delimited(tag, 7)) {
      if (!WireFormatLite::SkipField(&in, tag)) return -1;
      continue;
    }
    uint32_t len = 0;
    if (!in.ReadVarint32(&len)) return -1;
    const auto limit = in.PushLimit(static_cast<int>(len));
    while (uint32_t t = in.ReadTag()) {
      if (length_delimited(t, 1)) ++nodes;
      if (!WireFormatLite::SkipField(&in, t)) return -1;
    }
    in.PopLimit(limit);
  }
  return nodes;
}

ModelData import_parsed(const onnx::ModelProto& model, const std::string& path, const OnnxImportOptions& options) {
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
  ModelData m;
  try {
    m = Importer(path, model, o).run();
  } catch (const ModelError& e) {  // names from the file may hold line breaks or escapes
    throw ModelError(one_line(e.what()));
  }
  m.metadata_json = "{\"imported_from\": \"onnx\"}";
  return m;
}

// Parses an ONNX file's bytes into `model`, after counting its nodes on the wire: a graph of
// millions of tiny nodes would take far more memory parsed (hundreds of bytes per node) than
// in the file.
void parse_counted(const std::string& bytes, const std::string& name, onnx::ModelProto& model) {
  const int64_t nodes = count_graph_nodes(bytes);
  if (nodes > kMaxOnnxNodes)
    throw ModelError(name + ": the graph has " + std::to_string(nodes) + " nodes, more than the " +
                     std::to_string(kMaxOnnxNodes) + " dltrain imports (the file is corrupt or not a classifier)");
  if (bytes.size() > static_cast<size_t>(INT_MAX) || !model.ParseFromString(bytes))
    throw ModelError(name + ": not a readable ONNX model (protobuf parse failed; is it an .onnx file?)");
}

}  // namespace

bool onnx_available() { return true; }

ModelData import_onnx(const std::string& path, const OnnxImportOptions& options) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ModelError(path + ": cannot open the ONNX file (check the path)");
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  f.seekg(0, std::ios::beg);
  if (size < 0) throw ModelError(path + ": cannot read the ONNX file (not a regular file?)");
  std::string bytes(static_cast<size_t>(size), '\0');
  if (!f.read(bytes.data(), size)) throw ModelError(path + ": cannot read the ONNX file");
  onnx::ModelProto model;
  parse_counted(bytes, path, model);
  return import_parsed(model, path, options);
}

ModelData import_onnx_bytes(const std::string& bytes, const std::string& name, const OnnxImportOptions& options) {
  onnx::ModelProto model;
  parse_counted(bytes, name, model);
  return import_parsed(model, name, options);
}

}  // namespace dlt
