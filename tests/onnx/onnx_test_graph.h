// Small ONNX graphs built as protobufs for the import tests, and running an imported model:
// a builder for the input, initializers and nodes, the import of a model's bytes from a
// temporary folder, and the class probabilities the imported network computes.
#pragma once
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "config/config_test_util.h"
#include "net/network.h"
#include "onnx/onnx.h"
#include "util/error.h"
#include "util/rng.h"

namespace dlt::test {

class OnnxBuilder {
 public:
  // A graph with input "x" (1, C, H, W) (dim 0 symbolic "N" when symbolic_batch).
  OnnxBuilder(std::vector<int64_t> x_dims, int opset = 13, bool symbolic_batch = true) {
    m_.set_ir_version(8);
    m_.add_opset_import()->set_version(opset);
    g().set_name("test");
    auto* x = g().add_input();
    x->set_name("x");
    auto* tt = x->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (size_t i = 0; i < x_dims.size(); ++i) {
      auto* d = tt->mutable_shape()->add_dim();
      if (i == 0 && symbolic_batch)
        d->set_dim_param("N");
      else
        d->set_dim_value(x_dims[i]);
    }
  }
  onnx::GraphProto& g() { return *m_.mutable_graph(); }
  onnx::ModelProto& model() { return m_; }

  onnx::TensorProto& floats(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    auto* t = g().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
    return *t;
  }
  onnx::TensorProto& ints(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& v) {
    auto* t = g().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t x : v) t->add_int64_data(x);
    return *t;
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out,
                        const std::string& name = "") {
    auto* n = g().add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? out.at(0) : name);
    for (const auto& s : in) n->add_input(s);
    for (const auto& s : out) n->add_output(s);
    return *n;
  }
  static void attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void float_attr(onnx::NodeProto& n, const std::string& name, float v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  // A Constant node with an INT64 tensor value.
  onnx::NodeProto& int_constant(const std::string& out, const std::vector<int64_t>& dims,
                                const std::vector<int64_t>& v) {
    auto& n = node("Constant", {}, {out});
    auto* a = n.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) a->mutable_t()->add_dims(d);
    for (int64_t x : v) a->mutable_t()->add_int64_data(x);
    return n;
  }
  void output(const std::string& name) { g().add_output()->set_name(name); }
  std::string bytes() const { return m_.SerializeAsString(); }

 private:
  onnx::ModelProto m_;
};

// Imports the bytes as `dir`/m.onnx; the error line, or "" with the model in `out`.
inline std::string import_in(const TempDir& dir, const std::string& bytes, ModelData* out = nullptr) {
  const std::string path = dir.write("m.onnx", bytes);
  try {
    ModelData m = import_onnx(path, {});
    if (out) *out = std::move(m);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

inline std::string import_error(const OnnxBuilder& b) {
  TempDir dir;
  return import_in(dir, b.bytes());
}

inline ModelData imported(const OnnxBuilder& b) {
  TempDir dir;
  ModelData m;
  const std::string err = import_in(dir, b.bytes(), &m);
  INFO(err);
  REQUIRE(err.empty());
  return m;
}

// n values in [-1, 1) from a linear congruential sequence started at seed (the same on every
// platform): weights and images of hand-built graphs.
inline std::vector<float> lcg_values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = static_cast<float>(seed >> 8) / static_cast<float>(1u << 23) - 1.f;
  }
  return v;
}

// The probabilities the model computes for NHWC images x (n images).
inline std::vector<float> probabilities(const ModelData& m, const std::vector<float>& x, int64_t n) {
  Network net(m, Device::cpu());
  net.set_batch(n);
  const Shape& s = net.input_shape();
  Tensor in(Shape{n, s[0], s[1], s[2]});
  REQUIRE(static_cast<int64_t>(x.size()) == in.numel());
  std::memcpy(in.data(), x.data(), x.size() * sizeof(float));
  RunContext ctx;
  Tensor p = net.forward(in, ctx).to(Device::cpu());
  return std::vector<float>(p.data(), p.data() + p.numel());
}

// n images of `values` values each, normal with the seed: inputs of round trips.
inline std::vector<float> random_images(int64_t n, int64_t values, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(static_cast<size_t>(n * values));
  for (float& v : x) v = static_cast<float>(rng.normal());
  return x;
}

// Exports `net` (initialized, 3 classes, 8x8x3 or the given input) and imports the file: the
// imported model, after checking that it gives the same probabilities on three random images
// (within 1e-5) and that those tell the images apart.
inline ModelData round_trip(Network& net, int64_t pixels = 8 * 8 * 3) {
  ModelData m = net.to_model_data();
  m.classes = {"a", "b", "c"};
  TempDir dir;
  const std::string path = dir.file("m.onnx");
  export_onnx(m, path);
  ModelData back = import_onnx(path, {});
  const std::vector<float> x = random_images(3, pixels, 11);
  const std::vector<float> p = probabilities(m, x, 3), q = probabilities(back, x, 3);
  REQUIRE(p.size() == q.size());
  double diff = 0;
  for (size_t i = 0; i < p.size(); ++i) diff = std::max(diff, std::fabs(double(p[i]) - q[i]));
  CHECK(diff < 1e-5);
  CHECK(std::fabs(p[0] - p[3]) + std::fabs(p[1] - p[4]) > 1e-3);
  return back;
}

inline const LayerSpec* layer_of_type(const ModelData& m, const std::string& type) {
  for (const auto& l : m.network.layers)
    if (l.type == type) return &l;
  return nullptr;
}

}  // namespace dlt::test
