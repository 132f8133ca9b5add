// ONNX Conv with group > 1 (groupedConvolution2d): a grouped and a depthwise Conv built here
// as a protobuf import with the right layer options and weight layout (the class
// probabilities equal the double reference's), export with the group attribute and import
// back to the same probabilities; a group that does not divide the channels is one
// ModelError naming the node and the numbers.
#include <onnx/onnx_pb.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "config/config_test_util.h"
#include "net/network.h"
#include "onnx/onnx.h"
#include "support/reference_ops.h"
#include "support/tensor_utils.h"
#include "util/error.h"

namespace dlt {
namespace {

constexpr int64_t kC = 4, kH = 6, kW = 5;  // input (N, C, H, W) = (2, 4, 6, 5)

void add_tensor(onnx::GraphProto& g, const std::string& name, const std::vector<int64_t>& dims,
                const std::vector<float>& v) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
}

void add_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void add_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

std::vector<float> values(int64_t n, Rng& rng) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.uniform(-1, 1));
  return v;
}

// The model: x -> Conv "grouped" (group 2, 6 filters 3x3, pads 1) -> Conv "depthwise"
// (group 6, multiplier 2, stride 2, ONNX pads [t l b r] = [1 0 1 1]) -> GlobalAveragePool ->
// Flatten -> Softmax. Weights (K, C/G, kh, kw) as ONNX has them.
struct Grouped {
  std::vector<float> w1, b1, w2, b2;
  int64_t group1 = 2, group2 = 6;
  onnx::ModelProto model() const {
    onnx::ModelProto m;
    m.set_ir_version(7);
    m.add_opset_import()->set_version(13);
    onnx::GraphProto& g = *m.mutable_graph();
    g.set_name("grouped");
    auto* x = g.add_input();
    x->set_name("x");
    auto* tt = x->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {int64_t{1}, kC, kH, kW}) tt->mutable_shape()->add_dim()->set_dim_value(d);
    add_tensor(g, "W1", {6, kC / 2, 3, 3}, w1);
    add_tensor(g, "B1", {6}, b1);
    add_tensor(g, "W2", {12, 1, 3, 3}, w2);
    add_tensor(g, "B2", {12}, b2);
    auto node = [&g](const std::string& op, const std::vector<std::string>& in, const std::string& out) {
      auto* n = g.add_node();
      n->set_op_type(op);
      n->set_name(out);
      for (const auto& s : in) n->add_input(s);
      n->add_output(out);
      return n;
    };
    auto* c1 = node("Conv", {"x", "W1", "B1"}, "grouped");
    add_ints(c1, "kernel_shape", {3, 3});
    add_ints(c1, "pads", {1, 1, 1, 1});
    add_int(c1, "group", group1);
    auto* c2 = node("Conv", {"grouped", "W2", "B2"}, "depthwise");
    add_ints(c2, "kernel_shape", {3, 3});
    add_ints(c2, "strides", {2, 2});
    add_ints(c2, "pads", {1, 0, 1, 1});
    add_int(c2, "group", group2);
    node("GlobalAveragePool", {"depthwise"}, "gap");
    node("Flatten", {"gap"}, "flat");
    node("Softmax", {"flat"}, "prob");
    g.add_output()->set_name("prob");
    return m;
  }
};

Grouped make_grouped() {
  Rng rng(5);
  Grouped g;
  g.w1 = values(6 * 2 * 9, rng);
  g.b1 = values(6, rng);
  g.w2 = values(12 * 9, rng);
  g.b2 = values(12, rng);
  return g;
}

std::string import_error(const onnx::ModelProto& m) {
  try {
    import_onnx_bytes(m.SerializeAsString(), "g.onnx", {});
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

// The probabilities of model on x (N, H, W, C) on the CPU.
test::Vec probabilities(const ModelData& model, const Tensor& x) {
  Network net(model, Device::cpu());
  net.set_batch(x.shape()[0]);
  RunContext ctx;
  return test::to_vec(net.forward(x, ctx));
}

const LayerSpec* find(const ModelData& m, const std::string& name) { return m.network.find(name); }

std::string option(const LayerSpec& s, const std::string& key) {
  auto it = s.options.find(key);
  return it == s.options.end() ? "" : it->second.str();
}

}  // namespace

TEST_CASE("onnx: Conv with group > 1 imports as groupedConvolution2d and exports back", "[onnx]") {
  const Grouped g = make_grouped();
  const ModelData m = import_onnx_bytes(g.model().SerializeAsString(), "g.onnx", {});
  const LayerSpec* grouped = find(m, "grouped");
  const LayerSpec* depthwise = find(m, "depthwise");
  REQUIRE(grouped);
  REQUIRE(depthwise);
  CHECK(grouped->type == "groupedConvolution2d");
  CHECK(option(*grouped, "NumGroups") == "2");
  CHECK(option(*grouped, "NumFiltersPerGroup") == "3");
  CHECK(depthwise->type == "groupedConvolution2d");
  CHECK(option(*depthwise, "NumGroups") == "channel-wise");
  CHECK(option(*depthwise, "NumFiltersPerGroup") == "2");
  for (const NamedTensor& p : m.params)
    if (p.layer == "grouped" && p.name == "Weights") CHECK(p.shape == Shape{6, 3, 3, 2});

  // The reference: both convolutions in double precision on the ONNX weights permuted to
  // (K, kh, kw, C/G), the average over the pixels, softmax.
  const int64_t n = 2;
  Rng rng(9);
  Tensor x = test::random_tensor(Shape{n, kH, kW, kC}, rng, -1.f, 1.f);
  auto ohwi = [](const std::vector<float>& w, int64_t k, int64_t cg) {  // (K, C/G, 3, 3) -> (K, 3, 3, C/G)
    test::Vec out(w.size());
    for (int64_t o = 0; o < k; ++o)
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t i = 0; i < 9; ++i) out[static_cast<size_t>((o * 9 + i) * cg + c)] = w[(o * cg + c) * 9 + i];
    return out;
  };
  ConvDesc d1;
  d1.n = n, d1.h = kH, d1.w = kW, d1.c = kC, d1.k = 6, d1.kh = d1.kw = 3, d1.groups = 2;
  d1.pad_t = d1.pad_b = d1.pad_l = d1.pad_r = 1;
  const test::Vec y1 = ref::conv_forward(d1, test::to_vec(x), ohwi(g.w1, 6, 2), test::Vec(g.b1.begin(), g.b1.end()));
  ConvDesc d2;
  d2.n = n, d2.h = d1.out_h(), d2.w = d1.out_w(), d2.c = 6, d2.k = 12, d2.kh = d2.kw = 3, d2.groups = 6;
  d2.stride_h = d2.stride_w = 2, d2.pad_t = 1, d2.pad_l = 0, d2.pad_b = 1, d2.pad_r = 1;
  const test::Vec y2 = ref::conv_forward(d2, y1, ohwi(g.w2, 12, 1), test::Vec(g.b2.begin(), g.b2.end()));
  const int64_t pixels = d2.out_h() * d2.out_w();
  test::Vec want(static_cast<size_t>(n * 12));
  for (int64_t i = 0; i < n; ++i) {
    double total = 0;
    std::vector<double> z(12, 0.0);
    for (int64_t p = 0; p < pixels; ++p)
      for (int64_t k = 0; k < 12; ++k) z[static_cast<size_t>(k)] += y2[static_cast<size_t>((i * pixels + p) * 12 + k)];
    for (double& v : z) total += (v = std::exp(v / static_cast<double>(pixels)));
    for (int64_t k = 0; k < 12; ++k) want[static_cast<size_t>(i * 12 + k)] = z[static_cast<size_t>(k)] / total;
  }
  const test::Vec got = probabilities(m, x);
  INFO(test::compare(got, want).str());
  CHECK(test::compare(got, want).max_abs < 1e-6);

  // Export writes Conv with the group attribute; importing that file gives the same numbers.
  test::TempDir dir;
  const std::string path = dir.file("out.onnx");
  export_onnx(m, path);
  onnx::ModelProto written;
  {
    std::ifstream f(path, std::ios::binary);
    REQUIRE(written.ParseFromIstream(&f));
  }
  std::vector<int64_t> groups;
  for (const auto& node : written.graph().node())
    if (node.op_type() == "Conv")
      for (const auto& a : node.attribute())
        if (a.name() == "group") groups.push_back(a.i());
  CHECK(groups == std::vector<int64_t>{2, 6});
  const ModelData back = import_onnx(path, {});
  CHECK(test::compare(probabilities(back, x), got).max_abs == 0);
}

TEST_CASE("onnx hostile: a Conv group that does not divide the channels is one line", "[onnx]") {
  Grouped g = make_grouped();
  g.group1 = 3;  // 4 input channels, 6 filters
  CHECK_THAT(import_error(g.model()), Catch::Contains("g.onnx: node 'grouped' (Conv): group is 3 but the input has 4 "
                                                      "channels and the weight 6 filters (group must divide both)"));
  g.group1 = 4;  // divides the 4 channels but not the 6 filters
  CHECK_THAT(import_error(g.model()), Catch::Contains("group is 4 but the input has 4 channels and the weight 6"));
  g.group1 = 0;
  CHECK_THAT(import_error(g.model()), Catch::Contains("group is 0"));
  g.group1 = -2;
  CHECK_THAT(import_error(g.model()), Catch::Contains("group is -2"));
  g = make_grouped();
  g.group2 = 3;  // divides 6 and 12, but the weight has 1 input channel per group, not 2
  CHECK_THAT(import_error(g.model()),
             Catch::Contains("node 'depthwise' (Conv): weight expects 1 input channels per group but the input has "
                             "6 channels in 3 groups"));
}

}  // namespace dlt
