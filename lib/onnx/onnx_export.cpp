// dltrain model -> ONNX (opset 13) with NCHW semantics: input "input" (N, C, H, W), output
// "prob" (N, K) (regression: the responses (N, R), multi-label: the sigmoid probabilities). Each layer writes its own
// nodes (Layer::to_onnx, layers/onnx_graph.h); this file is the protobuf side: initializers, nodes, the graph's output
// and the class names in metadata_props.
#include <map>

#include "build_config.h"
#include "net/network.h"
#include "onnx/onnx.h"
#include "onnx/onnx_proto_util.h"
#include "util/error.h"
#include "util/files.h"

namespace dlt {

using namespace onnxu;

namespace {

class Exporter final : public OnnxGraph {
 public:
  Exporter(const ModelData& m, const std::string& path) : m_(m), path_(path), net_(m, Device::cpu()) {
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
    std::vector<OnnxValue> outs;
    for (size_t i = 0; i < layers.size(); ++i) {
      const LayerSpec& s = layers[i];
      index[s.name] = static_cast<int>(i);
      std::vector<OnnxValue> ins;
      if (i > 0) {
        if (s.inputs.empty()) ins.push_back(outs[i - 1]);
        for (const auto& in : s.inputs) ins.push_back(outs[static_cast<size_t>(index.at(in))]);
      }
      outs.push_back(net_.layer(i).to_onnx(*this, ins, net_.output_shape(i)));
      outs.back().tokens = net_.output_format(i) == DataFormat::kSCB;
    }
    // The softmax output (the classification layer passes it on) is the graph output "prob";
    // a regression network's responses, with ResponseNormalization undone (x std + mean) as
    // dltrain predict does, or a multi-label network's sigmoid probabilities.
    OnnxValue last = outs.back();
    const std::vector<float>& mean = m_.responses.mean;
    if (m_.task == "regression" && !mean.empty()) {
      const int64_t r = static_cast<int64_t>(mean.size());
      add_floats("response_std", {r}, m_.responses.std);
      add_floats("response_mean", {r}, mean);
      add_node("Mul", "responses_scaled", {last.name, "response_std"}, "responses_scaled", {});
      add_node("Add", "responses", {"responses_scaled", "response_mean"}, "responses", {});
      last.name = "responses";
    } else if (m_.task == "regression" || (m_.task == "multilabel" && last.name != "prob")) {
      const std::string name = m_.task == "regression" ? "responses" : "prob";
      add_node("Identity", name, {last.name}, name, {});
      last.name = name;
    }
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
    if (!m_.responses.names.empty()) {  // regression: the responses' names, one per line
      std::string responses;
      for (const auto& n : m_.responses.names) responses += (responses.empty() ? "" : "\n") + n;
      auto* rmeta = model_.add_metadata_props();
      rmeta->set_key("response_names");
      rmeta->set_value(responses);
    }
    std::string bytes;
    if (!model_.SerializeToString(&bytes))
      throw ModelError(path_ + ": protobuf could not serialize the model (over 2 GB?)");
    return bytes;
  }

  // ---- OnnxGraph
  void add_input(const std::string& name, const std::vector<int64_t>& dims) override {
    auto* in = g_->add_input();
    in->set_name(name);
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_param("N");
    for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  std::string add_floats(const std::string& name, const std::vector<int64_t>& dims,
                         const std::vector<float>& v) override {
    set_floats(*g_->add_initializer(), name, dims, v);
    return name;
  }
  std::string add_ints(const std::string& name, const std::vector<int64_t>& dims,
                       const std::vector<int64_t>& v) override {
    auto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t)));
    return name;
  }
  void add_node(const std::string& op, const std::string& name, const std::vector<std::string>& ins,
                const std::string& output, const std::vector<OnnxAttr>& attrs) override {
    add_node_outputs(op, name, ins, {output}, attrs);
  }
  void add_node_outputs(const std::string& op, const std::string& name, const std::vector<std::string>& ins,
                        const std::vector<std::string>& outputs, const std::vector<OnnxAttr>& attrs) override {
    auto* n = g_->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : ins) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    for (const OnnxAttr& a : attrs) {
      if (a.kind == OnnxAttr::kInt) add_attr(*n, a.name, a.i);
      if (a.kind == OnnxAttr::kFloat) add_attr(*n, a.name, a.f);
      if (a.kind == OnnxAttr::kInts) add_attr(*n, a.name, a.ints);
      if (a.kind == OnnxAttr::kString) add_attr(*n, a.name, a.s);
    }
  }
  const std::string& path() const override { return path_; }

 private:
  const ModelData& m_;
  std::string path_;
  Network net_;
  onnx::ModelProto model_;
  onnx::GraphProto* g_ = nullptr;
};

}  // namespace

void export_onnx(const ModelData& model, const std::string& path) {
  write_file_atomic(path, Exporter(model, path).run());
}

}  // namespace dlt
