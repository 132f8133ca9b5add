// ONNX import of what today's exporters write (lib/onnx/onnx_import_layout.cpp): Identity
// aliases of initializers, shape arithmetic folded to a Reshape target, ReduceMean as global
// average pooling, Squeeze / Unsqueeze with axes as input or attribute, Transpose to
// channels-last with MatMul as a 1x1 convolution, Mul by a per-channel constant and ShuffleNet's
// channel shuffle. Each graph is built here; its imported network's probabilities are compared
// with the same computation done in double precision below, and each path has its refusals.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "onnx_test_graph.h"

namespace dlt {
namespace {

using test::OnnxBuilder;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Deterministic values in [-1, 1).
std::vector<float> values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = static_cast<float>(seed >> 8) / static_cast<float>(1u << 23) - 1.f;
  }
  return v;
}

std::vector<double> softmax(const std::vector<double>& z) {
  const double m = *std::max_element(z.begin(), z.end());
  double s = 0;
  std::vector<double> p(z.size());
  for (size_t i = 0; i < z.size(); ++i) s += p[i] = std::exp(z[i] - m);
  for (double& x : p) x /= s;
  return p;
}

// Gemm (transB): z = W f + b, W (K, F).
std::vector<double> gemm(const std::vector<float>& w, const std::vector<float>& b, const std::vector<double>& f) {
  const size_t k = b.size();
  std::vector<double> z(k);
  for (size_t o = 0; o < k; ++o) {
    z[o] = b[o];
    for (size_t i = 0; i < f.size(); ++i) z[o] += double(w[o * f.size() + i]) * f[i];
  }
  return z;
}

// One NHWC image (h, w, c) in ONNX's CHW order.
std::vector<double> chw(const std::vector<float>& x, int64_t h, int64_t w, int64_t c) {
  std::vector<double> out(static_cast<size_t>(h * w * c));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t xx = 0; xx < w; ++xx)
      for (int64_t ch = 0; ch < c; ++ch)
        out[static_cast<size_t>((ch * h + y) * w + xx)] = x[static_cast<size_t>((y * w + xx) * c + ch)];
  return out;
}

void check_close(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(std::abs(got[i] - want[i]) <= 1e-5);
}

// x (N, 3, 2, 2) -> [what the test adds, ending in value `flat` (N, 12)] -> Gemm -> Softmax.
struct Flat12 {
  std::vector<float> w = values(48, 1), b = values(4, 2), x = values(24, 3);  // x: two NHWC images
  OnnxBuilder make(int opset = 13) {
    OnnxBuilder g({1, 3, 2, 2}, opset);
    g.floats("W", {4, 12}, w);
    g.floats("B", {4}, b);
    return g;
  }
  void finish(OnnxBuilder& g, const std::string& flat, const std::string& weight = "W") {
    OnnxBuilder::attr(g.node("Gemm", {flat, weight, "B"}, {"g"}), "transB", 1);
    g.node("Softmax", {"g"}, {"prob"});
    g.output("prob");
  }
  std::vector<double> expected() const {
    std::vector<double> out;
    for (int i = 0; i < 2; ++i) {
      auto p = softmax(gemm(w, b, chw(std::vector<float>(x.begin() + i * 12, x.begin() + i * 12 + 12), 2, 2, 3)));
      out.insert(out.end(), p.begin(), p.end());
    }
    return out;
  }
  void check(const OnnxBuilder& g) const { check_close(test::probabilities(test::imported(g), x, 2), expected()); }
};

TEST_CASE("onnx forms: Identity of an initializer aliases it, of a value the value", "[onnx]") {
  Flat12 t;
  OnnxBuilder g = t.make();
  g.node("Identity", {"W"}, {"W_alias"});
  g.node("Identity", {"x"}, {"x_alias"});
  g.node("Flatten", {"x_alias"}, {"f"});
  t.finish(g, "f", "W_alias");
  t.check(g);
}

TEST_CASE("onnx forms: Identity cycles, self-reference and redefinitions are refused", "[onnx]") {
  Flat12 t;
  OnnxBuilder self = t.make();
  self.node("Identity", {"a"}, {"a"}, "self");
  self.node("Flatten", {"x"}, {"f"});
  t.finish(self, "f");
  CHECK(has(test::import_error(self), "node 'self' (Identity): input 'a' is neither the graph input"));
  OnnxBuilder cycle = t.make();
  cycle.node("Identity", {"b"}, {"a"}, "first");
  cycle.node("Identity", {"a"}, {"b"}, "second");
  cycle.node("Flatten", {"x"}, {"f"});
  t.finish(cycle, "f");
  CHECK(has(test::import_error(cycle), "node 'first' (Identity): input 'b' is neither"));
  // An Identity writing an initializer's name would shadow the weight.
  OnnxBuilder shadow = t.make();
  shadow.node("Identity", {"B"}, {"W"}, "shadow");
  shadow.node("Flatten", {"x"}, {"f"});
  t.finish(shadow, "f");
  CHECK(has(test::import_error(shadow), "node 'shadow' (Identity): output 'W' is already defined"));
  OnnxBuilder twice = t.make();
  twice.node("Relu", {"x"}, {"r"}, "relu");
  twice.node("Identity", {"x"}, {"r"}, "again");
  twice.node("Flatten", {"r"}, {"f"});
  t.finish(twice, "f");
  CHECK(has(test::import_error(twice), "node 'again' (Identity): output 'r' is already defined"));
  // A projection's bias Add writing the projection's own output: the look-ahead that asks where
  // the projection goes (into heads, a Split) would follow it forever; refused before any node.
  OnnxBuilder loop({1, 4, 4, 4});
  loop.floats("W", {4, 12}, values(48, 3));
  loop.floats("B", {12}, values(12, 4));
  loop.ints("shape", {3}, {1, 16, 4});
  OnnxBuilder::attr(loop.node("Transpose", {"x"}, {"xt"}, "t"), "perm", std::vector<int64_t>{0, 2, 3, 1});
  loop.node("Reshape", {"xt", "shape"}, {"flat"}, "r");
  loop.node("MatMul", {"flat", "W"}, {"y"}, "qkv");
  loop.node("Add", {"B", "y"}, {"y"}, "bias");
  loop.node("Flatten", {"y"}, {"f"});
  CHECK(has(test::import_error(loop), "node 'bias' (Add): output 'y' is already defined"));
  // An Unsqueeze of a channels-last image without an output (the fresh-machine check's fuzz
  // test found GC ViT's look-ahead reading its missing output): one line naming it.
  OnnxBuilder none({1, 4, 4, 4});
  none.ints("axes", {1}, {1});
  OnnxBuilder::attr(none.node("Transpose", {"x"}, {"xt"}, "t"), "perm", std::vector<int64_t>{0, 2, 3, 1});
  none.node("Unsqueeze", {"xt", "axes"}, {}, "u");
  none.node("Flatten", {"xt"}, {"f"});
  CHECK(has(test::import_error(none), "node 'u' (Unsqueeze):"));
}

TEST_CASE("onnx forms: TorchScript's x.view(x.size(0), -1) folds to a flatten", "[onnx]") {
  Flat12 t;
  OnnxBuilder g = t.make();
  g.node("Identity", {"x"}, {"r"});
  g.node("Shape", {"r"}, {"s"});
  g.int_constant("zero", {}, {0});
  OnnxBuilder::attr(g.node("Gather", {"s", "zero"}, {"n"}), "axis", 0);
  g.int_constant("axes0", {1}, {0});
  g.node("Unsqueeze", {"n", "axes0"}, {"n1"});
  g.int_constant("minus1", {1}, {-1});
  OnnxBuilder::attr(g.node("Concat", {"n1", "minus1"}, {"target"}), "axis", 0);
  g.node("Reshape", {"r", "target"}, {"f"});
  t.finish(g, "f");
  t.check(g);
}

TEST_CASE("onnx forms: C*H*W computed from Shape by Slice, Gather, Cast and Mul", "[onnx]") {
  Flat12 t;
  OnnxBuilder g = t.make();
  g.node("Shape", {"x"}, {"s"});
  g.ints("starts", {1}, {0});
  g.ints("ends", {1}, {1});
  g.node("Slice", {"s", "starts", "ends"}, {"n1"});  // [N]
  g.ints("one", {}, {1});
  g.ints("two", {}, {2});
  g.ints("three", {}, {3});
  g.node("Gather", {"s", "one"}, {"c"});
  g.node("Gather", {"s", "two"}, {"h"});
  g.node("Gather", {"s", "three"}, {"w"});
  g.node("Mul", {"c", "h"}, {"ch"});
  g.node("Mul", {"ch", "w"}, {"chw"});
  OnnxBuilder::attr(g.node("Cast", {"chw"}, {"chw64"}), "to", 7);
  // Constants cast to float (as exporters write Clip bounds): the same constant; here the Gemm's bias.
  OnnxBuilder::attr(g.node("Cast", {"B"}, {"B_float"}), "to", 1);
  g.ints("axes0", {1}, {0});
  g.node("Unsqueeze", {"chw64", "axes0"}, {"chw1"});
  OnnxBuilder::attr(g.node("Concat", {"n1", "chw1"}, {"target"}), "axis", 0);
  g.node("Reshape", {"x", "target"}, {"f"});
  OnnxBuilder::attr(g.node("Gemm", {"f", "W", "B_float"}, {"g"}), "transB", 1);
  g.node("Softmax", {"g"}, {"prob"});
  g.output("prob");
  t.check(g);
}

TEST_CASE("onnx forms: the dynamo exporter's constant reshape (allowzero 1), flat and back", "[onnx]") {
  Flat12 t;
  OnnxBuilder g = t.make(18);
  g.ints("shape", {2}, {1, 12});
  OnnxBuilder::attr(g.node("Reshape", {"x", "shape"}, {"f"}), "allowzero", 1);
  t.finish(g, "f");
  t.check(g);
  // (N, 12) -> (N, 3, 2, 2) -> Flatten -> (N, 12): the same image back, and flat again.
  OnnxBuilder r = t.make();
  r.ints("back", {4}, {-1, 3, 2, 2});
  r.ints("flat", {2}, {0, -1});
  r.node("Reshape", {"x", "flat"}, {"a"});
  r.node("Reshape", {"a", "back"}, {"d"});
  r.node("Flatten", {"d"}, {"c"});
  r.node("Reshape", {"c", "flat"}, {"e"});
  t.finish(r, "e");
  t.check(r);
}

TEST_CASE("onnx forms: absurd shape arithmetic is one error line", "[onnx]") {
  Flat12 t;
  auto error_of = [&](auto&& build) {
    OnnxBuilder g = t.make();
    build(g);
    t.finish(g, "f");
    const std::string e = test::import_error(g);
    CHECK(e.find('\n') == std::string::npos);
    return e;
  };
  CHECK(has(error_of([](OnnxBuilder& g) {
              g.ints("big", {1}, {int64_t{1} << 62});
              g.ints("four", {1}, {4});
              g.node("Mul", {"big", "four"}, {"m"}, "mul");
              g.node("Reshape", {"x", "m"}, {"f"});
            }),
            "node 'mul' (Mul): shape arithmetic overflows int64"));
  CHECK(has(error_of([](OnnxBuilder& g) {
              g.node("Shape", {"x"}, {"s"});
              g.ints("two", {1}, {2});
              g.node("Mul", {"s", "two"}, {"m"}, "mul");
              g.node("Reshape", {"x", "m"}, {"f"});
            }),
            "shape arithmetic computes with the batch size N"));
  {  // a million-long list folds (a tensor, as a flattened index); the Reshape to it is refused in a short line
    const std::string e = error_of([](OnnxBuilder& g) {
      g.ints("many", {1000000}, std::vector<int64_t>(1000000, 1));
      g.ints("minus1", {1}, {-1});
      OnnxBuilder::attr(g.node("Concat", {"many", "minus1"}, {"m"}, "cat"), "axis", 0);
      g.node("Reshape", {"x", "m"}, {"f"});
    });
    CHECK(has(e, "node 'f' (Reshape): reshapes to [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, ... (1000001 values)]"));
    CHECK(e.size() < 400);
  }
  CHECK(has(error_of([](OnnxBuilder& g) {
              g.node("Shape", {"x"}, {"s"});
              g.ints("seven", {}, {7});
              g.node("Gather", {"s", "seven"}, {"m"}, "gather");
              g.node("Reshape", {"x", "m"}, {"f"});
            }),
            "node 'gather' (Gather): shape arithmetic index 7 is out of range for 4 values"));
  CHECK(has(error_of([](OnnxBuilder& g) {
              g.ints("zero", {1}, {0});
              g.ints("six", {1}, {6});
              g.node("Div", {"six", "zero"}, {"m"}, "div");
              g.node("Reshape", {"x", "m"}, {"f"});
            }),
            "shape arithmetic divides by zero"));
  CHECK(has(error_of([](OnnxBuilder& g) {
              g.ints("huge", {2}, {1, int64_t{1} << 40});
              g.node("Reshape", {"x", "huge"}, {"f"}, "reshape");
            }),
            "node 'reshape' (Reshape): reshapes to [1, 1099511627776]; supported: (N, 12)"));
  CHECK(has(error_of([](OnnxBuilder& g) {
              g.ints("two_inferred", {3}, {1, -1, -1});
              g.node("Reshape", {"x", "two_inferred"}, {"f"}, "reshape");
            }),
            "reshapes to [1, -1, -1]"));
  // A slice with the most extreme starts, ends and steps: clamped, no overflow.
  CHECK(has(error_of([](OnnxBuilder& g) {
              g.node("Shape", {"x"}, {"s"});
              g.ints("st", {1}, {INT64_MAX});
              g.ints("en", {1}, {INT64_MIN});
              g.ints("ax", {1}, {0});
              g.ints("sp", {1}, {INT64_MIN});
              g.node("Slice", {"s", "st", "en", "ax", "sp"}, {"m"});
              g.node("Reshape", {"x", "m"}, {"f"}, "reshape");
            }),
            "node 'reshape' (Reshape): reshapes 12 values per image to [2]"));
}

// x (N, 3, 2, 2) -> Relu -> [mean over H, W as the test writes it] -> Gemm (4, 3) -> Softmax.
struct Mean3 {
  std::vector<float> w = values(12, 4), b = values(4, 5), x = values(24, 6);
  std::vector<double> expected(bool channels_last_matmul = false, const std::vector<float>& w1 = {},
                               const std::vector<float>& b1 = {}) const {
    std::vector<double> out;
    for (int i = 0; i < 2; ++i) {
      const size_t k = channels_last_matmul ? b1.size() : 3;
      std::vector<double> mean(k, 0.0);
      for (int p = 0; p < 4; ++p) {
        const float* px = &x[static_cast<size_t>(i * 12 + p * 3)];
        for (size_t o = 0; o < k; ++o) {
          double v = 0;
          if (channels_last_matmul) {
            v = b1[o];
            for (size_t ch = 0; ch < 3; ++ch) v += double(w1[ch * k + o]) * px[ch];
          } else {
            v = px[o];
          }
          mean[o] += std::max(v, 0.0) / 4;
        }
      }
      auto p = softmax(gemm(w, b, mean));
      out.insert(out.end(), p.begin(), p.end());
    }
    return out;
  }
};

TEST_CASE("onnx forms: ReduceMean over height and width is global average pooling", "[onnx]") {
  Mean3 t;
  struct Case {
    int opset;
    bool axes_input;
    std::vector<int64_t> axes;
    int64_t keepdims;
  };
  for (const Case& c : {Case{13, false, {2, 3}, 0}, Case{13, false, {3, 2}, 1}, Case{18, true, {-1, -2}, 0},
                        Case{18, true, {2, 3}, 1}}) {
    INFO("opset " << c.opset << " keepdims " << c.keepdims);
    OnnxBuilder g({1, 3, 2, 2}, c.opset);
    g.floats("W", {4, 3}, t.w);
    g.floats("B", {4}, t.b);
    g.node("Relu", {"x"}, {"r"});
    auto& mean = c.axes_input ? g.node("ReduceMean", {"r", "axes"}, {"m"}) : g.node("ReduceMean", {"r"}, {"m"});
    if (c.axes_input)
      g.ints("axes", {2}, c.axes);
    else
      OnnxBuilder::attr(mean, "axes", c.axes);
    OnnxBuilder::attr(mean, "keepdims", c.keepdims);
    std::string flat = "m";
    if (c.keepdims) {  // the dynamo exporter's reshape to (1, C)
      g.ints("shape", {2}, {1, 3});
      g.node("Reshape", {"m", "shape"}, {"f"});
      flat = "f";
    }
    OnnxBuilder::attr(g.node("Gemm", {flat, "W", "B"}, {"g"}), "transB", 1);
    g.node("Softmax", {"g"}, {"prob"});
    g.output("prob");
    const ModelData m = test::imported(g);
    CHECK(test::layer_of_type(m, "globalAveragePooling2d") != nullptr);
    check_close(test::probabilities(m, t.x, 2), t.expected());
  }
  OnnxBuilder bad({1, 3, 2, 2});
  OnnxBuilder::attr(bad.node("ReduceMean", {"x"}, {"m"}, "mean"), "axes", std::vector<int64_t>{1});
  bad.output("m");
  CHECK(has(test::import_error(bad), "node 'mean' (ReduceMean): averages over axes other than height and width"));
}

// The dynamo exporter's as_strided after a pooling: Reshape to [-1] (the whole batch), then a
// Gather of 0, 1, 2, ... in the pooled shape (B, C, 1, 1): the pooled value itself.
TEST_CASE("onnx forms: the dynamo exporter's identity as_strided (Reshape [-1], Gather)", "[onnx]") {
  Mean3 t;
  auto graph = [&](std::vector<int64_t> order, const std::string& consumer) {
    OnnxBuilder g({2, 3, 2, 2}, 18, false);
    g.floats("W", {4, 3}, t.w);
    g.floats("B", {4}, t.b);
    g.node("Relu", {"x"}, {"r"});
    g.node("GlobalAveragePool", {"r"}, {"p"});
    g.ints("all", {1}, {-1});
    g.node("Reshape", {"p", "all"}, {"whole"});
    g.ints("order", {2, 3, 1, 1}, order);
    if (consumer == "Relu")
      g.node("Relu", {"whole"}, {"s"}, "stray");
    else
      OnnxBuilder::attr(g.node("Gather", {"whole", "order"}, {"s"}, "as_strided"), "axis", 0);
    g.node("Flatten", {"s"}, {"f"});
    OnnxBuilder::attr(g.node("Gemm", {"f", "W", "B"}, {"g"}), "transB", 1);
    g.node("Softmax", {"g"}, {"prob"});
    g.output("prob");
    return g;
  };
  check_close(test::probabilities(test::imported(graph({0, 1, 2, 3, 4, 5}, "Gather")), t.x, 2), t.expected());
  CHECK(
      has(test::import_error(graph({1, 0, 2, 3, 4, 5}, "Gather")),
          "node 'as_strided' (Gather): gathers from the whole batch flattened to 1-D in an order other than its own"));
  CHECK(has(test::import_error(graph({0, 1, 2, 3, 4, 5}, "Relu")),
            "node 'stray' (Relu): input 'whole' is the whole batch flattened to 1-D"));
}

TEST_CASE("onnx forms: Squeeze and Unsqueeze with axes as input (opset 13) or attribute (opset 11)", "[onnx]") {
  Mean3 t;
  for (int opset : {11, 13}) {
    INFO("opset " << opset);
    OnnxBuilder g({1, 3, 2, 2}, opset);
    g.floats("W", {4, 3}, t.w);
    g.floats("B", {4}, t.b);
    g.node("Relu", {"x"}, {"r"});
    g.node("GlobalAveragePool", {"r"}, {"p"});
    if (opset >= 13) {
      g.ints("hw", {2}, {2, 3});
      g.ints("hw_neg", {2}, {-1, -2});
      g.node("Squeeze", {"p", "hw"}, {"s"});
      g.node("Unsqueeze", {"s", "hw"}, {"u"});
      g.node("Squeeze", {"u", "hw_neg"}, {"s2"});
      // (N, C) -> (N, C, 1, 1) by Reshape, then Flatten of the 1x1 image.
      g.ints("image", {4}, {0, 3, 1, 1});
      g.node("Reshape", {"s2", "image"}, {"i"});
      g.node("Flatten", {"i"}, {"f"});
    } else {
      OnnxBuilder::attr(g.node("Squeeze", {"p"}, {"s"}), "axes", std::vector<int64_t>{2, 3});
      OnnxBuilder::attr(g.node("Unsqueeze", {"s"}, {"u"}), "axes", std::vector<int64_t>{2, 3});
      OnnxBuilder::attr(g.node("Squeeze", {"u"}, {"f"}), "axes", std::vector<int64_t>{-1, -2});
    }
    OnnxBuilder::attr(g.node("Gemm", {"f", "W", "B"}, {"g"}), "transB", 1);
    g.node("Softmax", {"g"}, {"prob"});
    g.output("prob");
    check_close(test::probabilities(test::imported(g), t.x, 2), t.expected());
  }
  OnnxBuilder bad({1, 3, 2, 2});
  bad.ints("ax", {1}, {1});
  bad.node("Squeeze", {"x", "ax"}, {"s"}, "squeeze");
  bad.output("s");
  CHECK(has(test::import_error(bad), "node 'squeeze' (Squeeze): only squeezing 1x1 spatial dimensions"));
}

// ConvNeXt's form: Transpose to channels-last, Linear (MatMul + Add), activation, back.
TEST_CASE("onnx forms: MatMul on a channels-last value is a 1x1 convolution", "[onnx]") {
  Mean3 t;
  const std::vector<float> w1 = values(15, 7), b1 = values(5, 8);
  t.w = values(20, 9);
  for (bool reduce_channels_last : {false, true}) {
    INFO("ReduceMean on the channels-last value: " << reduce_channels_last);
    OnnxBuilder g({1, 3, 2, 2});
    g.floats("W1", {3, 5}, w1);
    g.floats("B1", {5}, b1);
    g.floats("W", {4, 5}, t.w);
    g.floats("B", {4}, t.b);
    OnnxBuilder::attr(g.node("Transpose", {"x"}, {"t"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
    g.node("MatMul", {"t", "W1"}, {"mm"});
    g.node("Add", {"mm", "B1"}, {"a"});
    g.node("Relu", {"a"}, {"r"});
    if (reduce_channels_last) {
      auto& mean = g.node("ReduceMean", {"r"}, {"f"});
      OnnxBuilder::attr(mean, "axes", std::vector<int64_t>{1, 2});
      OnnxBuilder::attr(mean, "keepdims", 0);
    } else {
      OnnxBuilder::attr(g.node("Transpose", {"r"}, {"back"}), "perm", std::vector<int64_t>{0, 3, 1, 2});
      g.node("GlobalAveragePool", {"back"}, {"p"});
      g.node("Flatten", {"p"}, {"f"});
    }
    OnnxBuilder::attr(g.node("Gemm", {"f", "W", "B"}, {"g"}), "transB", 1);
    g.node("Softmax", {"g"}, {"prob"});
    g.output("prob");
    const ModelData m = test::imported(g);
    const LayerSpec* conv = test::layer_of_type(m, "convolution2d");
    REQUIRE(conv != nullptr);
    CHECK(conv->get_ints("FilterSize", {}, 2) == std::vector<int64_t>{1, 1});
    check_close(test::probabilities(m, t.x, 2), t.expected(true, w1, b1));
  }
}

TEST_CASE("onnx forms: channels-last values are refused where a layer reads (N, C, H, W)", "[onnx]") {
  auto error_of = [](auto&& build) {
    OnnxBuilder g({1, 3, 2, 2});
    OnnxBuilder::attr(g.node("Transpose", {"x"}, {"t"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
    build(g);
    return test::import_error(g);
  };
  CHECK(has(error_of([](OnnxBuilder& g) {
              g.floats("K", {4, 3, 1, 1}, values(12, 1));
              g.node("Conv", {"t", "K"}, {"c"}, "conv");
              g.output("c");
            }),
            "node 'conv' (Conv): input 't' is channels-last (a Transpose (0, 2, 3, 1) of an image)"));
  CHECK(has(error_of([](OnnxBuilder& g) {
              g.node("Add", {"t", "x"}, {"a"}, "add");
              g.output("a");
            }),
            "node 'add' (Add): adds a channels-last (N, H, W, C) and an (N, C, H, W) value"));
  CHECK(has(error_of([](OnnxBuilder& g) {
              OnnxBuilder::attr(g.node("Transpose", {"t"}, {"u"}, "again"), "perm", std::vector<int64_t>{0, 2, 3, 1});
              g.output("u");
            }),
            "node 'again' (Transpose): transposes a channels-last value with perm [0, 2, 3, 1]"));
  CHECK(has(error_of([](OnnxBuilder& g) {
              OnnxBuilder::attr(g.node("Transpose", {"x"}, {"u"}, "odd"), "perm", std::vector<int64_t>{0, 1, 3, 2});
              g.output("u");
            }),
            "node 'odd' (Transpose): transposes an image with perm [0, 1, 3, 2]"));
}

// A channels-last value flattened holds dltrain's own order (Keras' Flatten, PyTorch's
// x.permute(0, 2, 3, 1).flatten(1)): a flatten layer, whose 12 values feed the classifier in that
// order.
TEST_CASE("onnx forms: Flatten of a channels-last value is a flatten layer in (H, W, C) order", "[onnx]") {
  OnnxBuilder g({1, 3, 2, 2});
  OnnxBuilder::attr(g.node("Transpose", {"x"}, {"t"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
  g.node("Flatten", {"t"}, {"f"}, "flatten");
  const std::vector<float> head = values(24, 4);
  g.floats("head", {12, 2}, head);
  g.node("MatMul", {"f", "head"}, {"logits"});
  OnnxBuilder::attr(g.node("Softmax", {"logits"}, {"prob"}), "axis", int64_t{1});
  g.output("prob");
  const ModelData m = test::imported(g);
  REQUIRE(test::layer_of_type(m, "flatten"));
  const std::vector<float> x = values(12, 9);  // NHWC: the order the flattened values keep
  double logit[2] = {0, 0};
  for (size_t i = 0; i < 12; ++i)
    for (size_t k = 0; k < 2; ++k) logit[k] += static_cast<double>(x[i]) * head[i * 2 + k];
  const double p0 = 1 / (1 + std::exp(logit[1] - logit[0]));
  const std::vector<float> got = test::probabilities(m, x, 1);
  REQUIRE(got.size() == 2);
  CHECK(got[0] == Approx(p0).margin(1e-6));
  CHECK(got[1] == Approx(1 - p0).margin(1e-6));
}

TEST_CASE("onnx forms: Mul by a per-channel constant is a channel-wise 1x1 groupedConvolution2d", "[onnx]") {
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{3, 1, 1}, std::vector<int64_t>{1, 3, 1, 1}}) {
    OnnxBuilder g({1, 3, 2, 2});
    g.floats("scale", dims, {0.5f, -2.f, 3.f});
    g.node("Relu", {"x"}, {"r"});
    g.node("Mul", {"r", "scale"}, {"s"}, "layer_scale");
    g.node("GlobalAveragePool", {"s"}, {"p"});
    g.node("Flatten", {"p"}, {"prob"});
    g.output("prob");
    const ModelData m = test::imported(g);
    const LayerSpec* l = test::layer_of_type(m, "groupedConvolution2d");
    REQUIRE(l != nullptr);
    CHECK(l->name == "layer_scale");
    CHECK(l->get_ints("FilterSize", {}, 2) == std::vector<int64_t>{1, 1});
    CHECK(l->get_string("NumGroups", "") == "channel-wise");
    CHECK(l->get_int("NumFiltersPerGroup", 0, 1) == 1);
    int found = 0;
    for (const NamedTensor& p : m.params) {
      if (p.layer != "layer_scale") continue;
      if (p.name == "Weights") {
        CHECK(p.shape == Shape{3, 1, 1, 1});
        CHECK(p.data == std::vector<float>{0.5f, -2.f, 3.f});
      }
      if (p.name == "Bias") CHECK(p.data == std::vector<float>(3, 0.f));
      ++found;
    }
    CHECK(found == 2);
  }
  OnnxBuilder bad({1, 3, 2, 2});
  bad.floats("scale", {2, 2}, {1, 2, 3, 4});
  bad.node("Relu", {"x"}, {"r"});
  bad.node("Mul", {"r", "scale"}, {"s"}, "mul");
  bad.output("s");
  CHECK(has(test::import_error(bad), "node 'mul' (Mul): multiplies by a constant of shape 2x2; supported: one value"));
  // Two computed values: the multiplication layer (test_onnx_routing.cpp runs it); the graph
  // ends with scores per pixel, so it reads as a segmentation network.
  OnnxBuilder two({1, 3, 2, 2});
  two.node("Relu", {"x"}, {"r"});
  two.node("Mul", {"r", "x"}, {"s"}, "mul");
  two.output("s");
  const ModelData seg = test::imported(two);
  CHECK(test::layer_of_type(seg, "multiplication") != nullptr);
  CHECK(seg.network.layers.back().type == "pixelClassification");
}

TEST_CASE("onnx forms: ShuffleNet's Reshape - Transpose - Reshape is one channelShuffle", "[onnx]") {
  auto shuffle = [](const std::vector<int64_t>& perm, const std::vector<int64_t>& back) {
    OnnxBuilder g({1, 4, 2, 2});
    g.node("Relu", {"x"}, {"r"});
    g.node("Shape", {"r"}, {"s"});
    g.ints("zero", {1}, {0});
    g.node("Gather", {"s", "zero"}, {"n"});
    g.ints("rest", {4}, {2, 2, 2, 2});
    OnnxBuilder::attr(g.node("Concat", {"n", "rest"}, {"five"}), "axis", 0);
    g.node("Reshape", {"r", "five"}, {"v5"}, "view");
    OnnxBuilder::attr(g.node("Transpose", {"v5"}, {"t5"}, "transpose"), "perm", perm);
    g.ints("back", {4}, back);
    g.node("Reshape", {"t5", "back"}, {"y"}, "shuffle");
    g.node("GlobalAveragePool", {"y"}, {"p"});
    g.node("Flatten", {"p"}, {"prob"});
    g.output("prob");
    return g;
  };
  const ModelData m = test::imported(shuffle({0, 2, 1, 3, 4}, {1, -1, 2, 2}));
  const LayerSpec* l = test::layer_of_type(m, "channelShuffle");
  REQUIRE(l != nullptr);
  CHECK(l->name == "shuffle");
  CHECK(l->get_int("NumGroups", 0, 1) == 2);
  CHECK(has(test::import_error(shuffle({0, 1, 2, 4, 3}, {1, -1, 2, 2})),
            "node 'transpose' (Transpose): transposes a 5-D value with perm [0, 1, 2, 4, 3]"));
  CHECK(has(test::import_error(shuffle({0, 2, 1, 3, 4}, {1, 2, 8, 1})),
            "node 'shuffle' (Reshape): reshapes a 5-D value to [1, 2, 8, 1]"));
  OnnxBuilder stray({1, 4, 2, 2});
  stray.ints("five", {5}, {1, 2, 2, 2, 2});
  stray.node("Reshape", {"x", "five"}, {"v5"});
  stray.node("Relu", {"v5"}, {"r"}, "relu");
  stray.output("r");
  CHECK(has(test::import_error(stray), "node 'relu' (Relu): input 'v5' is a 5-D reshape of an image"));
}

}  // namespace
}  // namespace dlt
