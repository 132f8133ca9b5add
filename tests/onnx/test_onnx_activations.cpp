// ONNX import and export of the activation layers, with graphs built here as protobufs: each
// operator (Clip in both opset forms, Sigmoid, Tanh, HardSigmoid with ONNX's defaults, Gelu,
// HardSwish, Swish), the import rewrite of the decompositions exporters write (x * Sigmoid(x),
// x * HardSigmoid(x), TorchScript's Erf and Tanh GELU forms in several operand orders), the
// cases it must leave alone, one-line refusals, and export -> import round trips. The imported
// networks' probabilities are compared with softmax(reference activation(x)) in double.
#include <onnx/onnx_pb.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "config/config_test_util.h"
#include "net/network.h"
#include "onnx/onnx.h"
#include "onnx/onnx_rewrite.h"
#include "support/grad_check.h"
#include "support/reference_ops.h"
#include "support/tensor_utils.h"
#include "util/error.h"

namespace dlt::test {
namespace {

constexpr int64_t kC = 7;  // channels of the graph input (1, kC, 1, 1)

// A graph x (N, kC, 1, 1) -> ... -> y, built node by node.
struct Graph {
  explicit Graph(int opset) {
    m.set_ir_version(7);
    m.add_opset_import()->set_version(opset);
    g().set_name("act");
    auto* x = g().add_input();
    x->set_name("x");
    auto* tt = x->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_param("N");
    for (int64_t d : {kC, int64_t{1}, int64_t{1}}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  onnx::GraphProto& g() { return *m.mutable_graph(); }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& in, const std::string& out) {
    auto* n = g().add_node();
    n->set_op_type(op);
    n->set_name(out + "_node");
    for (const auto& s : in) n->add_input(s);
    n->add_output(out);
    return *n;
  }
  static void set_scalar(onnx::TensorProto& t, const std::string& name, float v) {
    t.set_name(name);
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_float_data(v);
  }
  void initializer(const std::string& name, float v) { set_scalar(*g().add_initializer(), name, v); }
  void constant(const std::string& name, float v) {
    auto* a = node("Constant", {}, name).add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    set_scalar(*a->mutable_t(), "", v);
  }
  void output(const std::string& name) { g().add_output()->set_name(name); }
  std::vector<std::string> ops() {
    std::vector<std::string> v;
    for (const auto& n : g().node())
      if (n.op_type() != "Constant") v.push_back(n.op_type());
    return v;
  }
  std::string bytes() const { return m.SerializeAsString(); }
  onnx::ModelProto m;
};

void attr(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
void attr(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

// The imported network's layers between the input and the closing softmax + classification.
std::vector<const LayerSpec*> hidden(const ModelData& m) {
  std::vector<const LayerSpec*> v;
  for (const auto& l : m.network.layers)
    if (l.type != "imageInput" && l.type != "softmax" && l.type != "classification") v.push_back(&l);
  return v;
}

// Probabilities of the imported network against softmax(reference activation d of x).
void expect_values(const ModelData& m, const ActDesc& d) {
  Network net(m, Device::cpu());
  const int64_t n = 3;
  net.set_batch(n);
  Rng rng(5);
  Vec x = random_vec(n * kC, rng, -5.0, 5.0);
  x[0] = -3, x[1] = 0, x[2] = 3;  // kinks and saturation limits
  RunContext ctx{false, 1, 0};
  const Vec got = to_vec(net.forward(to_tensor(x, Shape{n, 1, 1, kC}), ctx));
  const Vec want = ref::softmax_forward(n, kC, ref::act_forward(d, x));
  const Comparison c = compare(got, want);
  INFO(c.str());
  CHECK(c.max_abs < 1e-6);
}

// Option key of s is v: the same word, or the same float.
bool same_option(const LayerSpec& s, const std::string& key, const std::string& v) {
  if (v == "tanh" || v == "none") return s.get_string(key, "") == v;
  return static_cast<float>(s.get_double(key, -1)) == std::stof(v);
}

ModelData import(const Graph& g) { return import_onnx_bytes(g.bytes(), "act.onnx", {}); }

// The one imported hidden layer: its type and the given options.
void expect_layer(const ModelData& m, const std::string& type,
                  const std::vector<std::pair<std::string, std::string>>& opts = {}) {
  const auto h = hidden(m);
  REQUIRE(h.size() == 1);
  CHECK(h[0]->type == type);
  CHECK(h[0]->options.size() == opts.size());
  for (const auto& [k, v] : opts) CHECK(same_option(*h[0], k, v));
}

}  // namespace

TEST_CASE("onnx rewrite: x * Sigmoid(x) and x * HardSigmoid(x) become Swish and HardSwish", "[onnx][act]") {
  for (bool swap : {false, true}) {
    Graph g(13);
    g.node("Sigmoid", {"x"}, "s");
    g.node("Mul", swap ? std::vector<std::string>{"s", "x"} : std::vector<std::string>{"x", "s"}, "y");
    g.output("y");
    ModelData m = import(g);
    expect_layer(m, "swish");
    expect_values(m, ActDesc{1, ActKind::kSwish});
  }
  {
    Graph g(13);
    attr(g.node("HardSigmoid", {"x"}, "h"), "alpha", 1.f / 6);
    g.node("Mul", {"h", "x"}, "y");
    g.output("y");
    ModelData m = import(g);
    expect_layer(m, "hardSwish");
    expect_values(m, ActDesc{1, ActKind::kHardSwish});
  }
  SECTION("left alone: a second use, a graph output, another input, ONNX's default alpha") {
    Graph twice(13);
    twice.node("Sigmoid", {"x"}, "s");
    twice.node("Mul", {"x", "s"}, "m");
    twice.node("Add", {"m", "s"}, "y");
    twice.output("y");
    CHECK(rewrite_for_import(twice.g()) == 0);
    CHECK(twice.ops() == std::vector<std::string>{"Sigmoid", "Mul", "Add"});

    Graph out(13);
    out.node("Sigmoid", {"x"}, "s");
    out.node("Mul", {"x", "s"}, "y");
    out.output("y");
    out.output("s");
    CHECK(rewrite_for_import(out.g()) == 0);

    Graph other(13);
    other.node("Relu", {"x"}, "r");
    other.node("Sigmoid", {"x"}, "s");
    other.node("Mul", {"r", "s"}, "y");
    other.output("y");
    CHECK(rewrite_for_import(other.g()) == 0);

    Graph onnx_default(13);
    onnx_default.node("HardSigmoid", {"x"}, "h");  // alpha 0.2: not PyTorch's hard swish
    onnx_default.node("Mul", {"x", "h"}, "y");
    onnx_default.output("y");
    CHECK(rewrite_for_import(onnx_default.g()) == 0);
  }
}

TEST_CASE("onnx rewrite: TorchScript's decomposed GELU becomes one Gelu", "[onnx][act]") {
  SECTION("Erf form as torch 1.13 writes it: Constant nodes, Div by sqrt 2, Mul(x, .), Mul(., 0.5)") {
    Graph g(13);
    g.constant("sqrt2", 1.41421354f);
    g.node("Div", {"x", "sqrt2"}, "d");
    g.node("Erf", {"d"}, "e");
    g.constant("one", 1.f);
    g.node("Add", {"e", "one"}, "a");
    g.node("Mul", {"x", "a"}, "m");
    g.constant("half", 0.5f);
    g.node("Mul", {"m", "half"}, "y");
    g.output("y");
    ModelData m = import(g);
    expect_layer(m, "gelu");
    expect_values(m, ActDesc{1, ActKind::kGelu});
  }
  SECTION("Erf form with initializers, Mul by 1/sqrt 2, 0.5 * x first, 1 + erf") {
    Graph g(13);
    g.initializer("r2", 0.707106769f);
    g.initializer("one", 1.f);
    g.initializer("half", 0.5f);
    g.node("Mul", {"r2", "x"}, "d");
    g.node("Erf", {"d"}, "e");
    g.node("Add", {"one", "e"}, "a");
    g.node("Mul", {"half", "x"}, "hx");
    g.node("Mul", {"a", "hx"}, "y");
    g.output("y");
    CHECK(rewrite_for_import(g.g()) == 1);
    CHECK(g.ops() == std::vector<std::string>{"Gelu"});
    CHECK(g.g().node(g.g().node_size() - 1).output(0) == "y");
    ModelData m = import(g);
    expect_layer(m, "gelu");
    expect_values(m, ActDesc{1, ActKind::kGelu});
  }
  SECTION("Tanh form as torch 1.13 writes it, and with Pow(x, 3)") {
    for (bool pow : {false, true}) {
      Graph g(13);
      g.constant("kappa", 0.044715f);
      g.constant("beta", 0.797884583f);
      g.constant("one", 1.f);
      g.constant("half", 0.5f);
      if (pow) {
        g.initializer("three", 3.f);
        g.node("Pow", {"x", "three"}, "cube");
      } else {
        g.node("Mul", {"x", "x"}, "sq");
        g.node("Mul", {"x", "sq"}, "cube");
      }
      g.node("Mul", {"kappa", "cube"}, "kc");
      g.node("Add", {"x", "kc"}, "sum");
      g.node("Mul", {"beta", "sum"}, "inner");
      g.node("Tanh", {"inner"}, "t");
      g.node("Add", {"one", "t"}, "a");
      g.node("Mul", {"x", "a"}, "m");
      g.node("Mul", {"half", "m"}, "y");
      g.output("y");
      ModelData m = import(g);
      expect_layer(m, "gelu", {{"Approximation", "tanh"}});
      expect_values(m, ActDesc{1, ActKind::kGeluTanh});
    }
  }
  SECTION("left alone: wrong constants, a used intermediate") {
    Graph g(13);
    g.initializer("two", 2.f);
    g.initializer("one", 1.f);
    g.initializer("half", 0.5f);
    g.node("Div", {"x", "two"}, "d");  // not sqrt 2
    g.node("Erf", {"d"}, "e");
    g.node("Add", {"e", "one"}, "a");
    g.node("Mul", {"x", "a"}, "m");
    g.node("Mul", {"m", "half"}, "y");
    g.output("y");
    CHECK(rewrite_for_import(g.g()) == 0);
    Graph used(13);
    used.initializer("sqrt2", 1.41421354f);
    used.initializer("one", 1.f);
    used.initializer("half", 0.5f);
    used.node("Div", {"x", "sqrt2"}, "d");
    used.node("Erf", {"d"}, "e");
    used.node("Add", {"e", "one"}, "a");
    used.node("Mul", {"x", "a"}, "m");
    used.node("Mul", {"m", "half"}, "g");
    used.node("Add", {"g", "e"}, "y");  // e has a second use
    used.output("y");
    CHECK(rewrite_for_import(used.g()) == 0);
  }
}

TEST_CASE("onnx import: Clip, Sigmoid, Tanh, HardSigmoid, HardSwish, Gelu, Swish", "[onnx][act]") {
  SECTION("Clip(min 0, max 6): attributes before opset 11, constant inputs since") {
    Graph old(10);
    auto& c = old.node("Clip", {"x"}, "y");
    attr(c, "min", 0.f);
    attr(c, "max", 6.f);
    old.output("y");
    ModelData m = import(old);
    expect_layer(m, "clippedRelu", {{"Ceiling", "6"}});
    expect_values(m, ActDesc{1, ActKind::kClippedRelu, 6.f});

    Graph g(13);
    g.constant("lo", 0.f);
    g.constant("hi", 2.5f);
    g.node("Clip", {"x", "lo", "hi"}, "y");
    g.output("y");
    m = import(g);
    expect_layer(m, "clippedRelu", {{"Ceiling", "2.5"}});
    expect_values(m, ActDesc{1, ActKind::kClippedRelu, 2.5f});

    Graph relu(13);
    relu.initializer("lo", 0.f);
    relu.node("Clip", {"x", "lo"}, "y");
    relu.output("y");
    expect_layer(import(relu), "relu");
    Graph relu_old(6);
    attr(relu_old.node("Clip", {"x"}, "y"), "min", 0.f);  // max: ONNX's default, the largest float
    relu_old.output("y");
    expect_layer(import(relu_old), "relu");
  }
  SECTION("Clip with other bounds: one line each") {
    auto refused = [](const std::vector<std::string>& in, float lo, float hi) {
      Graph g(13);
      g.initializer("lo", lo);
      g.initializer("hi", hi);
      g.node("Relu", {"x"}, "r");
      g.node("Clip", in, "y");
      g.output("y");
      try {
        import(g);
      } catch (const ModelError& e) {
        return std::string(e.what());
      }
      return std::string("imported");
    };
    CHECK_THAT(refused({"x", "lo", "hi"}, -1.f, 1.f),
               Catch::Contains("act.onnx: node 'y_node' (Clip): dltrain reads Clip with min 0 and a max > 0 "
                               "(clippedRelu) or no max (relu), not min -1 max 1"));
    CHECK_THAT(refused({"x", "", "hi"}, 0.f, 6.f), Catch::Contains("not min -inf max 6"));
    CHECK_THAT(refused({"x", "lo", "hi"}, 0.f, 0.f), Catch::Contains("not min 0 max 0"));
    CHECK_THAT(refused({"x", "lo", "r"}, 0.f, 0.f),
               Catch::Contains("(Clip): max is computed; dltrain reads Clip with constant bounds only"));
  }
  SECTION("Sigmoid, Tanh, HardSwish, HardSigmoid with ONNX's defaults and with attributes") {
    for (const char* op : {"Sigmoid", "Tanh", "HardSwish"}) {
      Graph g(14);
      g.node(op, {"x"}, "y");
      g.output("y");
      ModelData m = import(g);
      const std::string op_s = op;
      const ActKind kind = op_s == "Sigmoid" ? ActKind::kSigmoid
                           : op_s == "Tanh"  ? ActKind::kTanh
                                             : ActKind::kHardSwish;
      expect_layer(m, op_s == "Sigmoid" ? "sigmoid" : op_s == "Tanh" ? "tanh" : "hardSwish");
      expect_values(m, ActDesc{1, kind});
    }
    Graph def(13);
    def.node("HardSigmoid", {"x"}, "y");
    def.output("y");
    ModelData m = import(def);
    expect_layer(m, "hardSigmoid", {{"Alpha", "0.2"}, {"Beta", "0.5"}});
    expect_values(m, ActDesc{1, ActKind::kHardSigmoid, 0.2f, 0.5f});
    Graph given(13);
    auto& h = given.node("HardSigmoid", {"x"}, "y");
    attr(h, "alpha", 0.3f);
    attr(h, "beta", 0.4f);
    given.output("y");
    m = import(given);
    expect_layer(m, "hardSigmoid", {{"Alpha", "0.3"}, {"Beta", "0.4"}});
    expect_values(m, ActDesc{1, ActKind::kHardSigmoid, 0.3f, 0.4f});
  }
  SECTION("Gelu (opset 20) and Swish nodes; approximate and alpha they cannot take") {
    Graph exact(20);
    exact.node("Gelu", {"x"}, "y");
    exact.output("y");
    expect_layer(import(exact), "gelu");
    Graph tanh(20);
    attr(tanh.node("Gelu", {"x"}, "y"), "approximate", std::string("tanh"));
    tanh.output("y");
    ModelData m = import(tanh);
    expect_layer(m, "gelu", {{"Approximation", "tanh"}});
    expect_values(m, ActDesc{1, ActKind::kGeluTanh});
    Graph bad(20);
    attr(bad.node("Gelu", {"x"}, "y"), "approximate", std::string("fast"));
    bad.output("y");
    CHECK_THROWS_WITH(import(bad), Catch::Contains("(Gelu): approximate is 'fast', expected 'none' or 'tanh'"));
    Graph swish(24);
    attr(swish.node("Swish", {"x"}, "y"), "alpha", 2.f);
    swish.output("y");
    CHECK_THROWS_WITH(import(swish),
                      Catch::Contains("(Swish): alpha is 2; dltrain's swish is x * sigmoid(x) (alpha 1)"));
  }
}

TEST_CASE("onnx export -> import of every activation layer: same layer, same probabilities", "[onnx][act]") {
  struct Case {
    std::string type;
    std::vector<std::string> options;
    std::vector<std::string> ops;  // the exported graph's activation nodes (opset 13)
  };
  const std::vector<Case> cases = {
      {"clippedRelu", {"Ceiling=6"}, {"Clip"}},
      {"clippedRelu", {"Ceiling=1.5"}, {"Clip"}},
      {"sigmoid", {}, {"Sigmoid"}},
      {"tanh", {}, {"Tanh"}},
      {"swish", {}, {"Sigmoid", "Mul"}},
      {"gelu", {}, {"Div", "Erf", "Add", "Mul", "Mul"}},
      {"gelu", {"Approximation=tanh"}, {"Mul", "Mul", "Mul", "Add", "Mul", "Tanh", "Add", "Mul", "Mul"}},
      {"hardSigmoid", {}, {"HardSigmoid"}},
      {"hardSigmoid", {"Alpha=0.2", "Beta=0.4"}, {"HardSigmoid"}},
      {"hardSwish", {}, {"HardSigmoid", "Mul"}},
  };
  TempDir dir;
  for (const Case& c : cases) {
    INFO(c.type << " " << (c.options.empty() ? "" : c.options[0]));
    NetworkSpec spec;
    spec.layers = {layer_spec("imageInput", {"InputSize=[3,2,5]", "Normalization=none"}, "input"),
                   layer_spec(c.type, c.options, "act"),
                   layer_spec("globalAveragePooling2d", {}, "gap"),
                   layer_spec("fullyConnected", {"OutputSize=4"}, "fc"),
                   layer_spec("softmax", {}, "prob"),
                   layer_spec("classification", {}, "output")};
    Network net(spec, Device::cpu());
    net.init_params(3);
    ModelData m = net.to_model_data();
    m.classes = {"a", "b", "c", "d"};
    const std::string path = dir.file(c.type + ".onnx");
    export_onnx(m, path);

    onnx::ModelProto written;
    {
      std::ifstream f(path, std::ios::binary);
      REQUIRE(written.ParseFromIstream(&f));
    }
    CHECK(written.opset_import(0).version() == 13);
    std::vector<std::string> ops;
    for (const auto& n : written.graph().node())
      if (n.name().rfind("act", 0) == 0) ops.push_back(n.op_type());
    CHECK(ops == c.ops);

    ModelData back = import_onnx(path, {});
    const LayerSpec* act = back.network.find("act");
    REQUIRE(act != nullptr);
    CHECK(act->type == c.type);
    for (const std::string& o : c.options) {
      CHECK(same_option(*act, o.substr(0, o.find('=')), o.substr(o.find('=') + 1)));
    }

    Network again(back, Device::cpu());
    const int64_t n = 2;
    net.set_batch(n);
    again.set_batch(n);
    Rng rng(9);
    Tensor x = random_tensor(Shape{n, 3, 2, 5}, rng, -5.f, 5.f);
    RunContext ctx{false, 1, 0};
    const Vec want = to_vec(net.forward(x, ctx));
    const Comparison cmp = compare(to_vec(again.forward(x, ctx)), want);
    INFO(cmp.str());
    CHECK(cmp.max_abs < 1e-6);
  }
}

}  // namespace dlt::test
