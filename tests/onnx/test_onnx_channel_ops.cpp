// ONNX import and export of the channel layers: Split (every opset's way of giving the sizes)
// and Slice over the channels as channelSlice, GlobalMaxPool and ReduceMax over H, W as
// globalMaxPooling2d, channelShuffle's Reshape - Transpose - Reshape export; what is refused.
// Graphs are built here as protobufs: x (1, 6, 2, 2) -> the nodes under test -> a 1x1xK value
// -> Flatten -> Gemm (identity) -> Softmax, and the imported network's probabilities are
// checked against the softmax of the values computed here by hand.
#include <onnx/onnx_pb.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "config/config_test_util.h"
#include "net/network.h"
#include "onnx/onnx.h"
#include "util/error.h"

namespace dlt {
namespace {

constexpr int64_t kC = 6, kH = 2, kW = 2;

// x[c, h, w] = a value unique per element whose maximum over H, W is at a different pixel
// per channel.
std::vector<float> input_chw() {
  std::vector<float> x(kC * kH * kW);
  for (int64_t c = 0; c < kC; ++c)
    for (int64_t p = 0; p < kH * kW; ++p) x[c * kH * kW + p] = 0.1f * c + 0.01f * ((p + c) % 4);
  return x;
}
float channel_max(int64_t c) {
  const std::vector<float> x = input_chw();
  float m = x[c * kH * kW];
  for (int64_t p = 1; p < kH * kW; ++p) m = std::max(m, x[c * kH * kW + p]);
  return m;
}

onnx::AttributeProto* attr(onnx::NodeProto* n, const std::string& name) {
  auto* a = n->add_attribute();
  a->set_name(name);
  return a;
}
void attr_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = attr(n, name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void attr_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = attr(n, name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t i : v) a->add_ints(i);
}

struct Graph {
  onnx::ModelProto m;
  onnx::GraphProto& g() { return *m.mutable_graph(); }
  explicit Graph(int opset) {
    m.set_ir_version(8);
    m.add_opset_import()->set_version(opset);
    g().set_name("channels");
    auto* x = g().add_input();
    x->set_name("x");
    auto* tt = x->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {int64_t{1}, kC, kH, kW}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& in,
                        const std::vector<std::string>& out) {
    auto* n = g().add_node();
    n->set_op_type(op);
    n->set_name(out.empty() ? op : out[0]);
    for (const auto& s : in) n->add_input(s);
    for (const auto& s : out) n->add_output(s);
    return n;
  }
  void ints(const std::string& name, const std::vector<int64_t>& v) {
    auto* t = g().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t i : v) t->add_int64_data(i);
  }
  // z (1, k, 1, 1), or (1, k) when flat, -> identity Gemm -> Softmax -> prob.
  void classify(const std::string& z, int64_t k, bool flat = false) {
    auto* w = g().add_initializer();
    w->set_name("W");
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(k);
    w->add_dims(k);
    for (int64_t i = 0; i < k * k; ++i) w->add_float_data(i % (k + 1) == 0 ? 1.f : 0.f);
    std::string in = z;
    if (!flat) {
      node("Flatten", {z}, {"flat"});
      in = "flat";
    }
    attr_int(node("Gemm", {in, "W"}, {"scores"}), "transB", 1);
    node("Softmax", {"scores"}, {"prob"});
    g().add_output()->set_name("prob");
  }
};

ModelData import_graph(const Graph& gr, const test::TempDir& dir, const std::string& name = "m.onnx") {
  return import_onnx(dir.write(name, gr.m.SerializeAsString()), {});
}

std::string import_error(const Graph& gr) {
  test::TempDir dir;
  try {
    import_graph(gr, dir);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "no ModelError";
}

// The imported network's class probabilities for input_chw().
std::vector<float> probabilities(const ModelData& m) {
  Network net(m, Device::cpu());
  net.set_batch(1);
  const std::vector<float> chw = input_chw();
  Tensor x(Shape{1, kH, kW, kC});
  for (int64_t c = 0; c < kC; ++c)
    for (int64_t p = 0; p < kH * kW; ++p) x.data()[p * kC + c] = chw[c * kH * kW + p];
  RunContext ctx;
  const Tensor& probs = net.forward(x, ctx);
  return std::vector<float>(probs.data(), probs.data() + probs.numel());
}

// softmax of the given values.
std::vector<float> softmax(const std::vector<float>& z) {
  double sum = 0;
  for (float v : z) sum += std::exp(double(v));
  std::vector<float> p;
  for (float v : z) p.push_back(float(std::exp(double(v)) / sum));
  return p;
}

void check_probs(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-5));
}

const LayerSpec& layer(const ModelData& m, const std::string& name) {
  const LayerSpec* s = m.network.find(name);
  REQUIRE(s);
  return *s;
}

void check_slice(const ModelData& m, const std::string& name, int64_t start, int64_t count) {
  const LayerSpec& s = layer(m, name);
  CHECK(s.type == "channelSlice");
  CHECK(s.get_int("StartChannel", 0) == start);
  CHECK(s.get_int("NumChannels", 0) == count);
}

// x -> Split (sizes as `how` gives them) -> a, b -> Concat(b, a) -> GlobalMaxPool -> classify.
Graph split_graph(int opset, const std::string& how) {
  Graph gr(opset);
  auto* split = gr.node("Split", {"x"}, {"a", "b"});
  split->set_name("split");  // its layers: split and split_2
  if (how == "attribute") attr_ints(split, "split", {2, 4});
  if (how == "input") {
    gr.ints("sizes", {2, 4});
    split->add_input("sizes");
  }
  if (how == "num_outputs") attr_int(split, "num_outputs", 2);
  attr_int(split, "axis", 1);
  attr_int(gr.node("Concat", {"b", "a"}, {"cat"}), "axis", 1);
  gr.node("GlobalMaxPool", {"cat"}, {"z"});
  gr.classify("z", kC);
  return gr;
}

std::vector<float> reordered_maxes(int64_t first) {  // channels first..C-1, then 0..first-1
  std::vector<float> z;
  for (int64_t c = first; c < kC; ++c) z.push_back(channel_max(c));
  for (int64_t c = 0; c < first; ++c) z.push_back(channel_max(c));
  return z;
}

std::vector<std::string> op_types(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  onnx::ModelProto m;
  REQUIRE(m.ParseFromString(std::string(std::istreambuf_iterator<char>(f), {})));
  std::vector<std::string> ops;
  for (const auto& n : m.graph().node()) ops.push_back(n.op_type());
  return ops;
}
int count(const std::vector<std::string>& ops, const std::string& op) {
  return static_cast<int>(std::count(ops.begin(), ops.end(), op));
}

}  // namespace

TEST_CASE("onnx channels: Split sizes from the attribute, the input, num_outputs and equal parts", "[onnx]") {
  struct Case {
    int opset;
    std::string how;
    int64_t first;  // the size of the first part
  };
  for (const Case& c : {Case{11, "attribute", 2}, Case{13, "input", 2}, Case{13, "equal", 3},
                        Case{18, "num_outputs", 3}, Case{11, "equal", 3}}) {
    INFO("opset " << c.opset << ", sizes from " << c.how);
    test::TempDir dir;
    const ModelData m = import_graph(split_graph(c.opset, c.how), dir);
    check_slice(m, "split", 1, c.first);
    check_slice(m, "split_2", c.first + 1, kC - c.first);
    check_probs(probabilities(m), softmax(reordered_maxes(c.first)));
    // Export: one Slice per part, which reads back to the same network.
    const std::string out = dir.file("out.onnx");
    export_onnx(m, out);
    const std::vector<std::string> ops = op_types(out);
    CHECK(count(ops, "Slice") == 2);
    CHECK(count(ops, "Split") == 0);
    CHECK(count(ops, "GlobalMaxPool") == 1);
    const ModelData back = import_onnx(out, {});
    check_slice(back, "split", 1, c.first);
    check_slice(back, "split_2", c.first + 1, kC - c.first);
    check_probs(probabilities(back), softmax(reordered_maxes(c.first)));
  }
}

TEST_CASE("onnx channels: Slice over the channels (to the end, from the end)", "[onnx]") {
  // x[:, 1:] (end INT64_MAX, as PyTorch writes it) and x[:, -4:-1] with steps 1.
  for (const bool from_end : {false, true}) {
    Graph gr(13);
    gr.ints("starts", {from_end ? -4 : 1});
    gr.ints("ends", {from_end ? -1 : INT64_MAX});
    gr.ints("axes", {1});
    gr.ints("steps", {1});
    gr.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"s"});
    gr.node("GlobalMaxPool", {"s"}, {"z"});
    const int64_t first = from_end ? 2 : 1, n = from_end ? 3 : 5;
    gr.classify("z", n);
    test::TempDir dir;
    const ModelData m = import_graph(gr, dir);
    check_slice(m, "s", first + 1, n);
    std::vector<float> z;
    for (int64_t c = first; c < first + n; ++c) z.push_back(channel_max(c));
    check_probs(probabilities(m), softmax(z));
  }
}

TEST_CASE("onnx channels: ReduceMax over H, W as global max pooling, keepdims 1 and 0", "[onnx]") {
  for (const int opset : {13, 18})
    for (const bool keep : {true, false}) {
      INFO("opset " << opset << ", keepdims " << keep);
      Graph gr(opset);
      auto* r = gr.node("ReduceMax", {"x"}, {"z"});
      if (opset >= 18) {
        gr.ints("axes", {-1, -2});
        r->add_input("axes");
      } else {
        attr_ints(r, "axes", {2, 3});
      }
      attr_int(r, "keepdims", keep ? 1 : 0);
      gr.classify("z", kC, !keep);
      test::TempDir dir;
      const ModelData m = import_graph(gr, dir);
      CHECK(layer(m, "z").type == "globalMaxPooling2d");
      check_probs(probabilities(m), softmax(reordered_maxes(0)));
    }
}

TEST_CASE("onnx channels: what is refused, in one line naming the node", "[onnx]") {
  auto split = [](const std::function<void(Graph&, onnx::NodeProto*)>& edit) {
    Graph gr(13);
    auto* s = gr.node("Split", {"x"}, {"a", "b"});
    s->set_name("split");
    edit(gr, s);
    attr_int(gr.node("Concat", {"b", "a"}, {"cat"}), "axis", 1);
    gr.node("GlobalMaxPool", {"cat"}, {"z"});
    gr.classify("z", kC);
    return import_error(gr);
  };
  CHECK_THAT(
      split([](Graph&, onnx::NodeProto*) {}),  // axis 0 by default
      Catch::Contains("node 'split' (Split): only splitting / slicing the channels (axis 1) is supported, not axis 0"));
  CHECK_THAT(split([](Graph& g, onnx::NodeProto* s) {
               attr_int(s, "axis", 1);
               g.ints("sizes", {2, 3});
               s->add_input("sizes");
             }),
             Catch::Contains("(Split): split sizes add up to 5 but the input has 6 channels"));
  CHECK_THAT(split([](Graph& g, onnx::NodeProto* s) {
               attr_int(s, "axis", 1);
               g.ints("sizes", {1, 2, 3});
               s->add_input("sizes");
             }),
             Catch::Contains("(Split): has 2 outputs but 3 split sizes"));

  auto slice = [](std::vector<int64_t> axes, std::vector<int64_t> steps, int64_t start, int64_t end) {
    Graph gr(13);
    gr.ints("starts", std::vector<int64_t>(axes.size(), start));
    gr.ints("ends", std::vector<int64_t>(axes.size(), end));
    gr.ints("axes", axes);
    gr.ints("steps", steps);
    gr.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"s"});
    gr.node("GlobalMaxPool", {"s"}, {"z"});
    gr.classify("z", 2);
    return import_error(gr);
  };
  CHECK_THAT(slice({1}, {2}, 0, 4), Catch::Contains("node 's' (Slice): only steps of 1 are supported"));
  CHECK_THAT(slice({2}, {1}, 0, 1), Catch::Contains("(Slice): only splitting / slicing the channels (axis 1)"));
  CHECK_THAT(slice({1, 2}, {1, 1}, 0, 1), Catch::Contains("(Slice): only a Slice of one axis, the channels"));
  CHECK_THAT(slice({1}, {1}, 4, 2), Catch::Contains("(Slice): takes channels [4, 2) of 6, which is empty"));

  Graph gr(13);
  attr_ints(gr.node("ReduceMax", {"x"}, {"z"}), "axes", {1});
  gr.classify("z", 1);
  const std::string e = import_error(gr);
  CHECK_THAT(e, Catch::Contains("node 'z' (ReduceMax): takes the maximum over axes other than height and width (2, 3); "
                                "only global max pooling is supported"));
  CHECK(e.find('\n') == std::string::npos);
}

TEST_CASE("onnx channels: channelShuffle exports as Reshape - Transpose - Reshape", "[onnx]") {
  // The Slice graph with a channelShuffle (3 groups) put in front of the slice.
  Graph gr(13);
  gr.ints("starts", {1});
  gr.ints("ends", {INT64_MAX});
  gr.ints("axes", {1});
  gr.node("Slice", {"x", "starts", "ends", "axes"}, {"s"});
  gr.node("GlobalMaxPool", {"s"}, {"z"});
  gr.classify("z", 5);
  test::TempDir dir;
  ModelData m = import_graph(gr, dir);
  LayerSpec shuffle;
  shuffle.name = "shuffle";
  shuffle.type = "channelShuffle";
  shuffle.set("NumGroups", "3");
  REQUIRE(m.network.layers[1].name == "s");
  REQUIRE(m.network.layers[1].inputs.empty());  // reads the layer before it
  m.network.layers.insert(m.network.layers.begin() + 1, shuffle);
  // Shuffled channels 0 2 4 1 3 5; the slice drops the first.
  std::vector<float> z;
  for (int64_t c : {2, 4, 1, 3, 5}) z.push_back(channel_max(c));
  check_probs(probabilities(m), softmax(z));

  const std::string out = dir.file("out.onnx");
  export_onnx(m, out);
  std::ifstream f(out, std::ios::binary);
  onnx::ModelProto written;
  REQUIRE(written.ParseFromString(std::string(std::istreambuf_iterator<char>(f), {})));
  const auto& g = written.graph();
  std::vector<std::string> ops;
  for (const auto& n : g.node()) ops.push_back(n.op_type());
  REQUIRE(ops.size() >= 3);
  CHECK(ops[0] == "Reshape");
  CHECK(ops[1] == "Transpose");
  CHECK(ops[2] == "Reshape");
  auto init = [&](const std::string& name) {
    for (const auto& t : g.initializer())
      if (t.name() == name) {
        std::vector<int64_t> v(t.raw_data().size() / sizeof(int64_t));
        std::memcpy(v.data(), t.raw_data().data(), v.size() * sizeof(int64_t));
        return v;
      }
    FAIL("no initializer " << name);
    return std::vector<int64_t>{};
  };
  CHECK(init(g.node(0).input(1)) == std::vector<int64_t>{0, 3, 2, kH, kW});
  CHECK(init(g.node(2).input(1)) == std::vector<int64_t>{0, kC, kH, kW});
  REQUIRE(g.node(1).attribute_size() == 1);
  const auto& perm = g.node(1).attribute(0).ints();
  CHECK(std::vector<int64_t>(perm.begin(), perm.end()) == std::vector<int64_t>{0, 2, 1, 3, 4});
}

}  // namespace dlt
