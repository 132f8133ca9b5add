// ONNX -> dltrain model: walks the graph's nodes in order, tracking per value the layer that
// produces it, its per-image shape (H, W, C) and whether ONNX sees it flattened in CHW order
// or permuted to channels-last. The operators that become layers are read by the layer types
// themselves (LayerType::from_onnx, through NodeReader below); this file handles what is graph
// structure: initializers (external data: onnx_import_external.h), the input and its
// normalization (Sub / Mul / Div), Constant, Identity, shape arithmetic folded to constants
// (onnx_import_fold.h), the layout forms (onnx_import_layout.cpp: Flatten / Reshape / Squeeze /
// Unsqueeze / Transpose, ShuffleNet's channel shuffle), zero Pad (folded into the next
// layer), Mul routing, a MatMul's bias Add, and the closing softmax + classification.
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

#include "onnx/onnx_importer.h"
#include "onnx/onnx_rewrite.h"
#include "util/one_line.h"

namespace dlt {

namespace onnx_detail {

std::string supported_ops() {
  std::string out;
  for (const LayerType* t : layer_registry())
    for (const auto& op : t->onnx_ops) out += op + ", ";
  return out +
         "Flatten, Reshape, Squeeze, Unsqueeze, Transpose (to channels-last and back), Pad, Identity, Constant, "
         "shape arithmetic on constants (Shape, Gather, Concat, Slice, Cast, Add/Sub/Mul/Div), Mul or Add of a "
         "per-channel constant, Pow 2 of a computed value, and Sub/Mul/Div at the input";
}

void Importer::constant_node(const onnx::NodeProto& n) {
  const auto* a = find_attr(n, "value");
  auto t = std::make_unique<onnx::TensorProto>();
  if (a && a->has_t()) {
    *t = a->t();
  } else if ((a = find_attr(n, "value_float")) || (a = find_attr(n, "value_floats"))) {
    std::vector<float> v = a->name() == "value_float" ? std::vector<float>{a->f()}
                                                      : std::vector<float>(a->floats().begin(), a->floats().end());
    set_floats(*t, "value",
               a->name() == "value_float" ? std::vector<int64_t>{} : std::vector<int64_t>{int64_t(v.size())}, v);
  } else if ((a = find_attr(n, "value_int")) || (a = find_attr(n, "value_ints"))) {
    std::vector<int64_t> v = a->name() == "value_int" ? std::vector<int64_t>{a->i()}
                                                      : std::vector<int64_t>(a->ints().begin(), a->ints().end());
    onnxu::set_ints(*t, "value",
                    a->name() == "value_int" ? std::vector<int64_t>{} : std::vector<int64_t>{int64_t(v.size())}, v);
  } else {
    fail(n, "only Constant nodes with a tensor, float(s) or int(s) value are supported");
  }
  if (n.output_size() < 1 || n.output(0).empty()) fail(n, "has no output");
  check_tensor(*t, path_ + ": node '" + node_name(n) + "'");
  owned_.push_back(std::move(t));
  set_const(n, owned_.back().get());
}

// The layer operators that read token sequences (the rest reads images or (N, C) values).
bool reads_tokens(const std::string& op) {
  for (const char* o : {"LayerNormalization", "Add", "Sum", "Mul", "Relu", "Gelu", "Sigmoid", "Tanh", "Swish",
                        "HardSwish", "HardSigmoid", "LeakyRelu", "Elu", "Clip", "Dropout"})
    if (op == o) return true;
  return false;
}

// One node as a layer type's from_onnx sees it (layers/onnx_graph.h).
class NodeReader final : public OnnxNodeReader {
 public:
  NodeReader(Importer& im, const onnx::NodeProto& n) : im_(im), n_(n) {}
  const std::string& op() const override { return n_.op_type(); }
  int opset() const override { return static_cast<int>(im_.opset_); }
  int num_inputs() const override { return n_.input_size(); }
  bool has_input(int i) const override { return n_.input_size() > i && !n_.input(i).empty(); }
  bool is_constant(int i) const override { return has_input(i) && im_.constant(n_.input(i)) != nullptr; }
  OnnxValue input(int i, bool absorb_pad, bool allow_channels_last) override {
    OnnxValue v = im_.value(n_, i, absorb_pad, false, allow_channels_last);
    if (v.tokens && !reads_tokens(n_.op_type()))
      fail("its input '" + n_.input(i) +
           "' is a token sequence (N, S, C); dltrain reads tokens in LayerNormalization, Add, Mul, the activations, "
           "Dropout, MatMul by a constant and the attention's operators");
    return v;
  }
  OnnxValue indices_input(int i) override { return im_.value(n_, i, false, true); }
  int num_outputs() const override { return n_.output_size(); }
  bool has_output(int i) const override { return n_.output_size() > i && !n_.output(i).empty(); }
  std::vector<float> floats(int i, const std::string& role) override { return im_.need_floats(n_, i, role); }
  std::vector<int64_t> dims(int i, const std::string& role) override { return dims_of(im_.need_const(n_, i, role)); }
  std::vector<int64_t> ints(int i, const std::string& role) override {
    return ints_of(im_.need_const(n_, i, role), im_.path_ + ": node '" + im_.node_name(n_) + "'");
  }
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
  const size_t params = m_.params.size();
  type.from_onnx(r);
  // MatMul has no bias input: a following Add of a constant is its bias (matmul_bias), when it
  // made a layer with one (not an adaptive pooling's averaging MatMul).
  if (const std::string& op = n.op_type(); op == "MatMul" && m_.params.size() > params)
    matmul_bias_[n.output(0)] = m_.params.size() - 1;
}

}  // namespace onnx_detail

namespace {

using onnx_detail::Importer;

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

ModelData import_parsed(onnx::ModelProto& model, const std::string& path, const std::string& folder,
                        const OnnxImportOptions& options) {
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
  rewrite_for_import(*model.mutable_graph());  // activation decompositions -> single nodes
  try {
    m = Importer(path, folder, model, o).run();
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
  return import_parsed(model, path, onnxu::ExternalData::folder_of(path), options);
}

ModelData import_onnx_bytes(const std::string& bytes, const std::string& name, const OnnxImportOptions& options) {
  onnx::ModelProto model;
  parse_counted(bytes, name, model);
  return import_parsed(model, name, "", options);
}

}  // namespace dlt
