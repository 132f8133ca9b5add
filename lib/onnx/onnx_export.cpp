// dltrain model -> ONNX (opset 13) with NCHW semantics: input "input" (N, C, H, W), output
// "prob" (N, K) (segmentation: (N, K, H, W); regression: the responses (N, R), multi-label: the sigmoid probabilities).
// Each layer writes its own nodes (Layer::to_onnx, layers/onnx_graph.h); this file is the protobuf side: initializers,
// nodes, the graph's output and the class names in metadata_props.
#include <climits>
#include <filesystem>
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

  // Builds the graph: nodes, initializers (their bytes inline) and metadata.
  void build() {
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
    if (!last.flat && last.shape[0] * last.shape[1] > 1) {  // per pixel: (N, K, H, W)
      tt->mutable_shape()->add_dim()->set_dim_value(last.shape[0]);
      tt->mutable_shape()->add_dim()->set_dim_value(last.shape[1]);
    }
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
  }

  // Whether the model, serialized with its weights inline, would pass protobuf's 2 GB limit.
  bool over_protobuf_limit() const { return model_.ByteSizeLong() > static_cast<size_t>(INT_MAX); }

  // ONNX's external data: moves the bytes of every initializer of 1 KiB or more into `data`
  // (the file `location`, beside the model), each starting at a multiple of 64 bytes, those
  // of 1 MiB or more at a multiple of 64 KiB (onnx.save's alignment, which lets a reader
  // map them), and marks the initializer EXTERNAL with its location, offset and length.
  void move_to_external(const std::string& location, std::string* data) {
    size_t bytes = 0;  // an upper bound, so that appending never reallocates (a copy of gigabytes)
    for (const auto& t : g_->initializer())
      if (t.raw_data().size() >= 1024) bytes += t.raw_data().size() + 65536;
    data->reserve(bytes);
    for (auto& t : *g_->mutable_initializer()) {
      if (t.raw_data().size() < 1024) continue;
      const size_t align = t.raw_data().size() >= (size_t{1} << 20) ? 65536 : 64;
      data->resize((data->size() + align - 1) / align * align, '\0');
      const size_t offset = data->size();
      data->append(t.raw_data());
      const size_t length = t.raw_data().size();
      std::string().swap(*t.mutable_raw_data());
      t.clear_raw_data();
      t.set_data_location(onnx::TensorProto::EXTERNAL);
      const std::pair<const char*, std::string> entries[] = {
          {"location", location}, {"offset", std::to_string(offset)}, {"length", std::to_string(length)}};
      for (const auto& [key, value] : entries) {
        auto* e = t.add_external_data();
        e->set_key(key);
        e->set_value(value);
      }
    }
  }

  std::string serialize() const {
    std::string bytes;
    if (over_protobuf_limit() || !model_.SerializeToString(&bytes))
      throw ModelError(path_ + ": protobuf could not serialize the model (its graph alone is over 2 GB)");
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

void export_onnx(const ModelData& model, const std::string& path, const OnnxExportOptions& options) {
  Exporter e(model, path);
  e.build();
  if (!options.external_data && !e.over_protobuf_limit()) return write_file_atomic(path, e.serialize());
  // The weights go to PATH.data beside the model (named relative to its folder, as readers
  // require), written and renamed into place before the model that names it.
  const OutputTarget target = output_target(path);
  if (target.kind != OutputTarget::Kind::kReplace)
    throw ModelError(path +
                     ": ONNX external data is a file beside the model: give --output a file path, not a "
                     "device or pipe" +
                     std::string(options.external_data ? "" : " (the model is over protobuf's 2 GB limit)"));
  const std::filesystem::path real(target.path);
  const std::string location = real.filename().string() + ".data";
  std::string data;
  e.move_to_external(location, &data);
  write_file_atomic((real.parent_path() / location).string(), data);
  std::string().swap(data);
  write_file_atomic(target.path, e.serialize());
}

}  // namespace dlt
