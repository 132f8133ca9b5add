// dltrain model -> ONNX (opset 13) with NCHW semantics: input "input" (N, C, H, W), output
// "prob" (N, K). Conv weights go OHWI -> OIHW; the first fullyConnected after an image gets
// a Flatten and its columns permuted from HWC to CHW order; zerocenter / zscore input
// normalization becomes Sub / Div nodes; dropout and classification have no ONNX node; the
// class names go into metadata_props.
#include <map>

#include "build_config.h"
#include "layers/layer_util.h"
#include "net/network.h"
#include "onnx/onnx.h"
#include "onnx/onnx_proto_util.h"
#include "util/error.h"
#include "util/files.h"

namespace dlt {

using namespace onnxu;

namespace {

struct Out {
  std::string name;   // ONNX value name
  Shape shape;        // per image (H, W, C)
  bool flat = false;  // ONNX value is (N, C*H*W)
};

class Exporter {
 public:
  Exporter(const ModelData& m, const std::string& path) : m_(m), path_(path), net_(m.network, Device::cpu()) {
    g_ = model_.mutable_graph();
  }

  std::string run() {
    model_.set_ir_version(7);
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(13);
    model_.set_producer_name("dltrain");
    model_.set_producer_version(DLT_VERSION);
    g_->set_name("dltrain");
    const auto& layers = m_.network.layers;
    std::map<std::string, int> index;
    for (size_t i = 0; i < layers.size(); ++i) {
      const LayerSpec& s = layers[i];
      index[s.name] = static_cast<int>(i);
      std::vector<Out> ins;
      if (i > 0) {
        if (s.inputs.empty()) ins.push_back(outs_[i - 1]);
        for (const auto& in : s.inputs) ins.push_back(outs_[index.at(in)]);
      }
      outs_.push_back(layer(s, net_.layer(i).type(), ins, net_.output_shape(i)));
    }
    // The softmax output (the classification layer aliases it) is the graph output "prob".
    const Out& last = outs_.back();
    auto* out = g_->add_output();
    out->set_name(last.name);
    auto* tt = out->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_param("N");
    tt->mutable_shape()->add_dim()->set_dim_value(last.shape[2]);
    // The class names travel in the model's metadata, one per line (as for --classes FILE).
    std::string names;
    for (const auto& c : m_.classes) {
      if (c.find('\n') != std::string::npos)
        throw ModelError(path_ + ": class name '" + c + "' contains a line break; rename that class");
      names += (names.empty() ? "" : "\n") + c;
    }
    auto* meta = model_.add_metadata_props();
    meta->set_key(kOnnxClassNamesKey);
    meta->set_value(names);
    std::string bytes;
    if (!model_.SerializeToString(&bytes)) throw ModelError(path_ + ": protobuf could not serialize the model (over 2 GB?)");
    return bytes;
  }

 private:
  const std::vector<float>& find(const std::vector<NamedTensor>& list, const std::string& layer, const std::string& name) {
    for (const auto& t : list)
      if (t.layer == layer && t.name == name) return t.data;
    throw ModelError(path_ + ": the model has no " + name + " for layer '" + layer + "'");
  }
  const std::vector<float>& param(const std::string& layer, const std::string& name) { return find(m_.params, layer, name); }
  const std::vector<float>& state(const std::string& layer, const std::string& name) { return find(m_.states, layer, name); }
  std::string init(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    set_floats(*g_->add_initializer(), name, dims, v);
    return name;
  }
  onnx::NodeProto& node(const std::string& op, const std::string& name, const std::vector<std::string>& ins, const std::string& out) {
    auto* n = g_->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : ins) n->add_input(i);
    n->add_output(out);
    return *n;
  }
  Out flat(const Out& in) {
    if (in.flat) return in;
    node("Flatten", in.name + "_flatten", {in.name}, in.name + "_flat");
    add_attr(*g_->mutable_node(g_->node_size() - 1), "axis", int64_t{1});
    return Out{in.name + "_flat", in.shape, true};
  }
  Out image(const LayerSpec& s, const Out& in) {
    if (in.flat && in.shape[0] * in.shape[1] == 1) {
      std::vector<int64_t> sh = {0, in.shape[2], 1, 1};
      auto* t = g_->add_initializer();
      t->set_name(s.name + "_shape");
      t->set_data_type(onnx::TensorProto::INT64);
      t->add_dims(4);
      t->set_raw_data(std::string(reinterpret_cast<const char*>(sh.data()), sh.size() * sizeof(int64_t)));
      node("Reshape", s.name + "_unflatten", {in.name, s.name + "_shape"}, s.name + "_image");
      return Out{s.name + "_image", in.shape, false};
    }
    if (in.flat) throw ModelError(path_ + ": layer '" + s.name + "' (" + s.type + ") reads a flattened image, which has no ONNX form here");
    return in;
  }

  Out input_layer(const LayerSpec& s, const Shape& sh) {
    int64_t h = sh[0], w = sh[1], c = sh[2];
    auto* in = g_->add_input();
    in->set_name("input");
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_param("N");
    for (int64_t d : {c, h, w}) tt->mutable_shape()->add_dim()->set_dim_value(d);
    std::string norm = s.get_choice("Normalization", "zerocenter", {"none", "zerocenter", "zscore"});
    if (norm == "zerocenter") {
      init(s.name + "_mean", {1, c, h, w}, hwc_to_chw(state(s.name, "Mean"), h, w, c));
      node("Sub", s.name + "_zerocenter", {"input", s.name + "_mean"}, s.name + "_norm");
    } else if (norm == "zscore") {
      std::vector<float> sd = state(s.name, "StandardDeviation");
      for (float& v : sd) v = v > 0 ? v : 1.f;  // as the layer: 1 / sd, or 1 where sd is 0
      init(s.name + "_mean", {1, c, 1, 1}, state(s.name, "Mean"));
      init(s.name + "_std", {1, c, 1, 1}, sd);
      node("Sub", s.name + "_center", {"input", s.name + "_mean"}, s.name + "_centered");
      node("Div", s.name + "_scale", {s.name + "_centered", s.name + "_std"}, s.name + "_norm");
    } else {
      return Out{"input", sh, false};
    }
    return Out{s.name + "_norm", sh, false};
  }

  Out layer(const LayerSpec& s, const std::string& type, const std::vector<Out>& ins, const Shape& out_shape) {
    const std::string& n = s.name;
    if (type == "imageInput") return input_layer(s, out_shape);
    const Out& x = ins.at(0);
    if (type == "convolution2d") {
      Out xi = image(s, x);
      int64_t h = xi.shape[0], w = xi.shape[1], c = xi.shape[2], k = out_shape[2];
      auto fs = s.get_ints("FilterSize", {}, 2);
      auto st = s.get_ints("Stride", {1, 1}, 2);
      auto dl = s.get_ints("DilationFactor", {1, 1}, 2);
      auto p = parse_padding(s, h, w, (fs[0] - 1) * dl[0] + 1, (fs[1] - 1) * dl[1] + 1, st[0], st[1]);
      init(n + "_W", {k, c, fs[0], fs[1]}, ohwi_to_oihw(param(n, "Weights"), k, c, fs[0], fs[1]));
      init(n + "_B", {k}, param(n, "Bias"));
      auto& nd = node("Conv", n, {xi.name, n + "_W", n + "_B"}, n);
      add_attr(nd, "kernel_shape", std::vector<int64_t>{fs[0], fs[1]});
      add_attr(nd, "strides", st);
      add_attr(nd, "dilations", dl);
      add_attr(nd, "pads", std::vector<int64_t>{p[0], p[2], p[1], p[3]});
      add_attr(nd, "group", int64_t{1});
      return Out{n, out_shape, false};
    }
    if (type == "fullyConnected") {
      Out xf = flat(x);
      int64_t h = xf.shape[0], w = xf.shape[1], c = xf.shape[2], k = out_shape[2];
      std::vector<float> wt = param(n, "Weights");
      if (h * w > 1) wt = hwc_cols_to_chw(wt, k, h, w, c);
      init(n + "_W", {k, h * w * c}, wt);
      init(n + "_B", {k}, param(n, "Bias"));
      add_attr(node("Gemm", n, {xf.name, n + "_W", n + "_B"}, n), "transB", int64_t{1});
      return Out{n, out_shape, true};
    }
    if (type == "batchNormalization") {
      int64_t c = out_shape[2];
      init(n + "_scale", {c}, param(n, "Scale"));
      init(n + "_offset", {c}, param(n, "Offset"));
      init(n + "_mean", {c}, state(n, "TrainedMean"));
      init(n + "_var", {c}, state(n, "TrainedVariance"));
      auto& nd = node("BatchNormalization", n, {x.name, n + "_scale", n + "_offset", n + "_mean", n + "_var"}, n);
      add_attr(nd, "epsilon", static_cast<float>(s.get_double("Epsilon", 1e-5)));
      return Out{n, out_shape, x.flat};
    }
    if (type == "relu") return (node("Relu", n, {x.name}, n), Out{n, out_shape, x.flat});
    if (type == "leakyRelu") {
      add_attr(node("LeakyRelu", n, {x.name}, n), "alpha", static_cast<float>(s.get_double("Scale", 0.01)));
      return Out{n, out_shape, x.flat};
    }
    if (type == "elu") {
      add_attr(node("Elu", n, {x.name}, n), "alpha", static_cast<float>(s.get_double("Alpha", 1.0)));
      return Out{n, out_shape, x.flat};
    }
    if (type == "maxPooling2d" || type == "averagePooling2d") {
      Out xi = image(s, x);
      auto ps = s.get_ints("PoolSize", {}, 2);
      auto st = s.get_ints("Stride", {1, 1}, 2);
      auto p = parse_padding(s, xi.shape[0], xi.shape[1], ps[0], ps[1], st[0], st[1]);
      bool avg = type == "averagePooling2d";
      std::string src = xi.name;
      std::vector<int64_t> pads = {p[0], p[2], p[1], p[3]};
      if (avg && (p[0] || p[1] || p[2] || p[3])) {
        // Zeros counted in the average: an explicit Pad, as PyTorch exports it (OpenCV 4.6
        // gets AveragePool with pads and count_include_pad wrong).
        std::vector<int64_t> pv = {0, 0, p[0], p[2], 0, 0, p[1], p[3]};
        auto* t = g_->add_initializer();
        t->set_name(n + "_pads");
        t->set_data_type(onnx::TensorProto::INT64);
        t->add_dims(8);
        t->set_raw_data(std::string(reinterpret_cast<const char*>(pv.data()), pv.size() * sizeof(int64_t)));
        node("Pad", n + "_pad", {src, n + "_pads"}, n + "_padded");
        src = n + "_padded";
        pads = {0, 0, 0, 0};
      }
      auto& nd = node(avg ? "AveragePool" : "MaxPool", n, {src}, n);
      add_attr(nd, "kernel_shape", ps);
      add_attr(nd, "strides", st);
      add_attr(nd, "pads", pads);
      return Out{n, out_shape, false};
    }
    if (type == "globalAveragePooling2d") return (node("GlobalAveragePool", n, {image(s, x).name}, n), Out{n, out_shape, false});
    if (type == "crossChannelNormalization") {
      auto& nd = node("LRN", n, {image(s, x).name}, n);
      add_attr(nd, "size", s.get_int("WindowChannelSize", 5));
      add_attr(nd, "alpha", static_cast<float>(s.get_double("Alpha", 1e-4)));
      add_attr(nd, "beta", static_cast<float>(s.get_double("Beta", 0.75)));
      add_attr(nd, "bias", static_cast<float>(s.get_double("K", 2.0)));
      return Out{n, out_shape, false};
    }
    if (type == "dropout" || type == "classification") return x;  // inference: identity
    if (type == "softmax") {
      Out xf = flat(x);
      add_attr(node("Softmax", n, {xf.name}, "prob"), "axis", int64_t{1});
      return Out{"prob", out_shape, true};
    }
    if (type == "addition") {
      std::string acc = ins[0].name;
      for (size_t i = 1; i < ins.size(); ++i) {
        if (ins[i].flat != ins[0].flat) throw ModelError(path_ + ": layer '" + n + "' adds a flattened and an image input");
        std::string out = i + 1 == ins.size() ? n : n + "_" + std::to_string(i);
        node("Add", out, {acc, ins[i].name}, out);
        acc = out;
      }
      return Out{n, out_shape, ins[0].flat};
    }
    if (type == "depthConcatenation") {
      std::vector<std::string> names;
      for (const auto& i : ins) names.push_back(image(s, i).name);
      add_attr(node("Concat", n, names, n), "axis", int64_t{1});
      return Out{n, out_shape, false};
    }
    throw ModelError(path_ + ": layer '" + n + "' (" + type + ") has no ONNX export");
  }

  const ModelData& m_;
  std::string path_;
  Network net_;
  onnx::ModelProto model_;
  onnx::GraphProto* g_ = nullptr;
  std::vector<Out> outs_;
};

}  // namespace

void export_onnx(const ModelData& model, const std::string& path) {
  write_file_atomic(path, Exporter(model, path).run());
}

}  // namespace dlt
