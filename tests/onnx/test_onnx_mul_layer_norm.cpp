// ONNX import of multiplication (Mul of two computed values, Pow 2) and layerNormalization
// (LayerNormalization, opset 17; PyTorch's GroupNorm of one group) in each layout the importer
// tracks: NCHW images, channels-last values between Transpose (0, 2, 3, 1) and (0, 3, 1, 2)
// (ConvNeXt's LayerNorm2d), and their refusals; Mul and Add of per-channel constants. Each graph's imported
// probabilities are compared with the same computation in double precision here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "layers/layer.h"
#include "onnx_test_graph.h"

namespace dlt {
namespace {

using test::OnnxBuilder;
constexpr int64_t kH = 2, kW = 3, kC = 4, kK = 3, kPixels = kH * kW;

std::vector<float> values(size_t n, uint32_t seed) { return test::lcg_values(n, seed); }

// x (N, C, H, W) -> [the test's nodes, ending in an NCHW value `feat`] -> GlobalAveragePool ->
// Flatten -> Gemm (K = 3) -> Softmax. expected(): the same from per-image NHWC features.
struct Head {
  std::vector<float> w = values(kK * kC, 11), b = values(kK, 12), x = values(2 * kPixels * kC, 13);
  OnnxBuilder make(int opset = 17) {
    OnnxBuilder g({1, kC, kH, kW}, opset);
    g.floats("W", {kK, kC}, w);
    g.floats("B", {kK}, b);
    return g;
  }
  void finish(OnnxBuilder& g, const std::string& feat) {
    g.node("GlobalAveragePool", {feat}, {"p"});
    g.node("Flatten", {"p"}, {"f"});
    OnnxBuilder::attr(g.node("Gemm", {"f", "W", "B"}, {"g"}), "transB", 1);
    g.node("Softmax", {"g"}, {"prob"});
    g.output("prob");
  }
  // feature(img) is that image's (H*W, C) NHWC features in double.
  template <class F>
  std::vector<double> expected(F feature) const {
    std::vector<double> out;
    for (int img = 0; img < 2; ++img) {
      const std::vector<double> f = feature(img);
      std::vector<double> z(kK);
      double m = -1e300, s = 0;
      for (int64_t o = 0; o < kK; ++o) {
        z[o] = b[o];
        for (int64_t c = 0; c < kC; ++c) {
          double mean = 0;
          for (int64_t p = 0; p < kPixels; ++p) mean += f[p * kC + c];
          z[o] += double(w[o * kC + c]) * mean / kPixels;
        }
        m = std::max(m, z[o]);
      }
      for (double& v : z) s += v = std::exp(v - m);
      for (double v : z) out.push_back(v / s);
    }
    return out;
  }
  double at(int img, int64_t p, int64_t c) const { return x[static_cast<size_t>((img * kPixels + p) * kC + c)]; }
};

void check_close(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(std::abs(got[i] - want[i]) <= 1e-5);
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// One image's values v(k) (k = p * C + c) normalized over all of them (H, W and C: epsilon
// 1e-5, the biased variance), times scale[c] plus bias[c].
template <class V>
std::vector<double> image_norm(V v, const std::vector<float>& scale, const std::vector<float>& bias) {
  double mean = 0, var = 0;
  for (int64_t k = 0; k < kPixels * kC; ++k) mean += v(k) / (kPixels * kC);
  for (int64_t k = 0; k < kPixels * kC; ++k) var += std::pow(v(k) - mean, 2) / (kPixels * kC);
  std::vector<double> f(kPixels * kC);
  for (int64_t k = 0; k < kPixels * kC; ++k)
    f[k] = (v(k) - mean) / std::sqrt(var + 1e-5) * scale[k % kC] + bias[k % kC];
  return f;
}

}  // namespace

TEST_CASE("onnx mul: squeeze-and-excitation's Mul of (N, C, 1, 1) and (N, C, H, W), either order", "[onnx]") {
  for (bool gate_first : {true, false}) {
    INFO("gate first: " << gate_first);
    Head t;
    OnnxBuilder g = t.make(13);
    g.node("Relu", {"x"}, {"r"});
    g.node("GlobalAveragePool", {"r"}, {"gate"});
    g.node("Mul", gate_first ? std::vector<std::string>{"gate", "r"} : std::vector<std::string>{"r", "gate"}, {"se"});
    t.finish(g, "se");
    const ModelData m = test::imported(g);
    const LayerSpec* mul = test::layer_of_type(m, "multiplication");
    REQUIRE(mul != nullptr);
    CHECK(mul->inputs.size() == 2);
    check_close(test::probabilities(m, t.x, 2), t.expected([&](int img) {
      std::vector<double> f(kPixels * kC), gate(kC, 0.0);
      for (int64_t p = 0; p < kPixels; ++p)
        for (int64_t c = 0; c < kC; ++c) gate[c] += std::max(0.0, t.at(img, p, c)) / kPixels;
      for (int64_t p = 0; p < kPixels; ++p)
        for (int64_t c = 0; c < kC; ++c) f[p * kC + c] = std::max(0.0, t.at(img, p, c)) * gate[c];
      return f;
    }));
  }
}

TEST_CASE("onnx layer norm: ConvNeXt's Transpose - LayerNormalization(axis -1) - Transpose", "[onnx]") {
  Head t;
  const std::vector<float> scale = values(kC, 21), bias = values(kC, 22);
  OnnxBuilder g = t.make();
  g.floats("S", {kC}, scale);
  g.floats("O", {kC}, bias);
  OnnxBuilder::attr(g.node("Transpose", {"x"}, {"t"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
  g.node("Mul", {"t", "t"}, {"sq"});  // a product of channels-last values stays channels-last
  auto& ln = g.node("LayerNormalization", {"sq", "S", "O"}, {"ln"});
  OnnxBuilder::attr(ln, "axis", int64_t{-1});
  OnnxBuilder::attr(g.node("Transpose", {"ln"}, {"back"}), "perm", std::vector<int64_t>{0, 3, 1, 2});
  t.finish(g, "back");
  const ModelData m = test::imported(g);
  const LayerSpec* spec = test::layer_of_type(m, "layerNormalization");
  REQUIRE(spec != nullptr);
  CHECK(spec->get_string("OperationDimension", "") == "channel-only");
  check_close(test::probabilities(m, t.x, 2), t.expected([&](int img) {
    std::vector<double> f(kPixels * kC);
    for (int64_t p = 0; p < kPixels; ++p) {
      double mean = 0, var = 0;
      for (int64_t c = 0; c < kC; ++c) mean += t.at(img, p, c) * t.at(img, p, c) / kC;
      for (int64_t c = 0; c < kC; ++c) var += std::pow(t.at(img, p, c) * t.at(img, p, c) - mean, 2) / kC;
      for (int64_t c = 0; c < kC; ++c)
        f[p * kC + c] = (t.at(img, p, c) * t.at(img, p, c) - mean) / std::sqrt(var + 1e-5) * scale[c] + bias[c];
    }
    return f;
  }));
}

TEST_CASE("onnx layer norm: axis 1 of an image and of channels-last data is over C, H and W", "[onnx]") {
  const std::vector<float> scale = values(kC, 31), bias = values(kC, 32);
  for (bool channels_last : {false, true}) {
    INFO("channels-last: " << channels_last);
    Head t;
    OnnxBuilder g = t.make();
    // Scale and bias per channel, written out over the normalized block as PyTorch does.
    std::vector<float> s_full, o_full;
    for (int64_t k = 0; k < kPixels * kC; ++k) {
      const int64_t c = channels_last ? k % kC : k / kPixels;
      s_full.push_back(scale[c]);
      o_full.push_back(bias[c]);
    }
    const std::vector<int64_t> block =
        channels_last ? std::vector<int64_t>{kH, kW, kC} : std::vector<int64_t>{kC, kH, kW};
    g.floats("S", block, s_full);
    g.floats("O", block, o_full);
    std::string in = "x";
    if (channels_last) {
      OnnxBuilder::attr(g.node("Transpose", {"x"}, {"t"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
      in = "t";
    }
    auto& ln = g.node("LayerNormalization", {in, "S", "O"}, {"ln"});
    OnnxBuilder::attr(ln, "axis", int64_t{1});
    std::string out = "ln";
    if (channels_last) {
      OnnxBuilder::attr(g.node("Transpose", {"ln"}, {"back"}), "perm", std::vector<int64_t>{0, 3, 1, 2});
      out = "back";
    }
    t.finish(g, out);
    const ModelData m = test::imported(g);
    const LayerSpec* spec = test::layer_of_type(m, "layerNormalization");
    REQUIRE(spec != nullptr);
    CHECK(spec->get_string("OperationDimension", "") == "spatial-channel");
    check_close(test::probabilities(m, t.x, 2), t.expected([&](int img) {
      return image_norm([&](int64_t k) { return t.at(img, k / kC, k % kC); }, scale, bias);
    }));
  }
}

TEST_CASE("onnx layer norm: PyTorch's GroupNorm of one group (InstanceNormalization of the image as one row)",
          "[onnx]") {
  // torch.onnx's decomposition (timm's PoolFormer): Reshape (0, 1, -1), InstanceNormalization
  // with scale 1 and bias 0, Reshape back to Shape(x), Mul and Add of (C, 1, 1) constants.
  const std::vector<float> scale = values(kC, 51), bias = values(kC, 52);
  for (bool shape_of_x : {true, false}) {
    INFO("back to Shape(x): " << shape_of_x);
    Head t;
    OnnxBuilder g = t.make();
    g.ints("rows", {3}, {0, 1, -1});
    g.floats("one", {1}, {1.f});
    g.floats("zero", {1}, {0.f});
    g.floats("S", {kC, 1, 1}, scale);
    g.floats("O", {kC, 1, 1}, bias);
    g.node("Relu", {"x"}, {"r"});
    g.node("Reshape", {"r", "rows"}, {"flat"});
    OnnxBuilder::attr(g.node("InstanceNormalization", {"flat", "one", "zero"}, {"norm"}), "epsilon", int64_t{0});
    g.model().mutable_graph()->mutable_node()->rbegin()->mutable_attribute(0)->set_type(onnx::AttributeProto::FLOAT);
    g.model().mutable_graph()->mutable_node()->rbegin()->mutable_attribute(0)->set_f(1e-5f);
    if (shape_of_x) {
      g.node("Shape", {"r"}, {"shape"});
    } else {
      g.ints("shape", {4}, {1, kC, kH, kW});  // the dynamo exporter's, of one image
    }
    g.node("Reshape", {"norm", "shape"}, {"back"});
    g.node("Mul", {"back", "S"}, {"scaled"});
    g.node("Add", {"scaled", "O"}, {"gn"});
    t.finish(g, "gn");
    const ModelData m = test::imported(g);
    const LayerSpec* spec = test::layer_of_type(m, "layerNormalization");
    REQUIRE(spec != nullptr);
    CHECK(spec->get_string("OperationDimension", "") == "spatial-channel");
    check_close(test::probabilities(m, t.x, 2), t.expected([&](int img) {
      return image_norm([&](int64_t k) { return std::max(0.0, t.at(img, k / kC, k % kC)); }, scale, bias);
    }));
  }
}

TEST_CASE("onnx pow and add: StarReLU's scale * relu(x) ** 2 + bias", "[onnx]") {
  // Pow 2 of a computed value is a multiplication layer of it by itself; Mul and Add of one
  // constant (or one per channel) are a 1x1 channel-wise groupedConvolution2d.
  Head t;
  const std::vector<float> bias = values(kC, 62);
  OnnxBuilder g = t.make();
  g.floats("two", {}, {2.f});
  g.floats("s", {1}, {0.8f});
  g.floats("o", {kC, 1, 1}, bias);
  g.node("Relu", {"x"}, {"r"});
  g.node("Pow", {"r", "two"}, {"sq"});
  g.node("Mul", {"s", "sq"}, {"scaled"});
  g.node("Add", {"o", "scaled"}, {"star"});
  t.finish(g, "star");
  const ModelData m = test::imported(g);
  const LayerSpec* mul = test::layer_of_type(m, "multiplication");
  REQUIRE(mul != nullptr);
  CHECK(mul->inputs.size() == 2);
  CHECK(mul->inputs[0] == mul->inputs[1]);
  check_close(test::probabilities(m, t.x, 2), t.expected([&](int img) {
    std::vector<double> f(kPixels * kC);
    for (int64_t p = 0; p < kPixels; ++p)
      for (int64_t c = 0; c < kC; ++c) f[p * kC + c] = 0.8 * std::pow(std::max(0.0, t.at(img, p, c)), 2) + bias[c];
    return f;
  }));
}

TEST_CASE("onnx mul and layer norm: the forms dltrain does not compute are one line", "[onnx]") {
  Head t;
  auto error_of = [&](auto&& build) {
    OnnxBuilder g = t.make();
    build(g);
    return test::import_error(g);
  };
  std::string e = error_of([](OnnxBuilder& g) {
    g.floats("K", {5, kC, 1, 1}, values(5 * kC, 41));
    g.node("Conv", {"x", "K"}, {"c5"});
    g.node("GlobalAveragePool", {"c5"}, {"gate"});
    g.node("Mul", {"x", "gate"}, {"y"});
    g.output("y");
  });
  CHECK(has(e, "node 'y' (Mul): its inputs are 2x3x4 and 1x1x5"));
  e = error_of([](OnnxBuilder& g) {  // a value per pixel of another image size
    g.floats("K1", {1, kC, 1, 1}, values(kC, 43));
    OnnxBuilder::attr(g.node("Conv", {"x", "K1"}, {"g1"}), "strides", std::vector<int64_t>{2, 2});
    g.node("Mul", {"x", "g1"}, {"y"});
    g.output("y");
  });
  CHECK(has(e, "node 'y' (Mul): its inputs are 2x3x4 and 1x2x1"));
  e = error_of([](OnnxBuilder& g) {
    OnnxBuilder::attr(g.node("Transpose", {"x"}, {"t"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
    g.node("Mul", {"t", "x"}, {"y"});
    g.output("y");
  });
  CHECK(has(e, "node 'y' (Mul): it multiplies a channels-last (N, H, W, C) value and an (N, C, H, W) one"));
  e = error_of([](OnnxBuilder& g) {
    g.floats("S", {kW}, values(kW, 42));
    OnnxBuilder::attr(g.node("LayerNormalization", {"x", "S"}, {"y"}), "axis", int64_t{-1});
    g.output("y");
  });
  CHECK(has(e, "node 'y' (LayerNormalization): axis -1 of an (N, C, H, W) image is not supported"));
  e = error_of([](OnnxBuilder& g) {
    g.floats("S", {kW}, values(kW, 43));
    OnnxBuilder::attr(g.node("Transpose", {"x"}, {"t"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
    OnnxBuilder::attr(g.node("LayerNormalization", {"t", "S"}, {"y"}), "axis", int64_t{2});
    g.output("y");
  });
  CHECK(has(e, "axis 2 of channels-last (N, H, W, C) data is not supported"));
  e = error_of([](OnnxBuilder& g) {
    g.floats("S", {kC}, values(kC, 44));  // C values ONNX would repeat along W, not over the pixels
    OnnxBuilder::attr(g.node("LayerNormalization", {"x", "S"}, {"y"}), "axis", int64_t{1});
    g.output("y");
  });
  CHECK(has(e, "scale has 4 values that ONNX repeats over the image's rows"));
  e = error_of([](OnnxBuilder& g) {
    g.floats("S", {kC, 1, 1}, values(kC, 45));
    auto& ln = g.node("LayerNormalization", {"x", "S"}, {"y", "mean"});
    OnnxBuilder::attr(ln, "axis", int64_t{1});
    g.output("y");
  });
  CHECK(has(e, "its Mean and InvStdDev outputs are not supported"));
  e = error_of([](OnnxBuilder& g) {
    g.floats("three", {}, {3.f});
    g.node("Relu", {"x"}, {"r"});
    g.node("Pow", {"r", "three"}, {"y"});
    g.output("y");
  });
  CHECK(has(e, "node 'y' (Pow): raises a computed value to the power 3; dltrain reads only its square"));
  e = error_of([](OnnxBuilder& g) {
    g.floats("P", {1, kC, kH, 1}, values(kC * kH, 46));  // per channel and row: neither kind
    g.node("Relu", {"x"}, {"r"});
    g.node("Add", {"r", "P"}, {"y"});
    g.output("y");
  });
  CHECK(has(e,
            "node 'y' (Add): adds a constant of shape 1x4x2x1; supported: one value, or one per channel (C, 1, 1 "
            "with C = 4), or a position table of the image's shape (1, 4, 2, 3)"));
}

}  // namespace dlt

namespace dlt {

TEST_CASE("onnx split and concat: the channels of channels-last values (MambaOut's gate)", "[onnx]") {
  // x to channels-last, Split along axis 3 (or -1) into 1 and 3 channels, the second part back
  // to NCHW through a Relu and to channels-last again, Concat along axis -1 (or 3) in swapped
  // order, a Slice of channels [1, 3) of that times a Slice of channels [0, 2) of x (both along
  // the same axis), back to NCHW and joined with x's channels [2, 4).
  for (int64_t axis : {int64_t{3}, int64_t{-1}}) {
    INFO("axis " << axis);
    Head t;
    OnnxBuilder g = t.make(13);
    g.ints("sizes", {2}, {1, 3});
    OnnxBuilder::attr(g.node("Transpose", {"x"}, {"t"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
    OnnxBuilder::attr(g.node("Split", {"t", "sizes"}, {"a", "b"}), "axis", axis);
    OnnxBuilder::attr(g.node("Transpose", {"b"}, {"b_nchw"}), "perm", std::vector<int64_t>{0, 3, 1, 2});
    g.node("Relu", {"b_nchw"}, {"b_relu"});
    OnnxBuilder::attr(g.node("Transpose", {"b_relu"}, {"b_last"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
    OnnxBuilder::attr(g.node("Concat", {"b_last", "a"}, {"cat"}), "axis", axis == 3 ? int64_t{-1} : int64_t{3});
    g.ints("s0", {1}, {1});
    g.ints("s1", {1}, {3});
    g.ints("ax", {1}, {axis});
    g.node("Slice", {"cat", "s0", "s1", "ax"}, {"mid"});
    g.ints("t0", {1}, {0});
    g.ints("t1", {1}, {2});
    g.node("Slice", {"t", "t0", "t1", "ax"}, {"first"});
    g.node("Mul", {"mid", "first"}, {"gated"});
    OnnxBuilder::attr(g.node("Transpose", {"gated"}, {"g_nchw"}), "perm", std::vector<int64_t>{0, 3, 1, 2});
    g.ints("u0", {1}, {2});
    g.ints("u1", {1}, {4});
    g.ints("ax1", {1}, {1});
    g.node("Slice", {"x", "u0", "u1", "ax1"}, {"x_tail"});
    OnnxBuilder::attr(g.node("Concat", {"g_nchw", "x_tail"}, {"feat"}), "axis", int64_t{1});
    t.finish(g, "feat");
    const ModelData m = test::imported(g);
    CHECK(test::layer_of_type(m, "channelSlice") != nullptr);
    CHECK(test::layer_of_type(m, "depthConcatenation") != nullptr);
    check_close(test::probabilities(m, t.x, 2), t.expected([&](int img) {
      std::vector<double> f(kPixels * kC);
      for (int64_t p = 0; p < kPixels; ++p) {
        // cat = (relu(x1), relu(x2), relu(x3), x0); mid = cat[1..2] = (relu(x2), relu(x3))
        const double mid[2] = {std::max(0.0, t.at(img, p, 2)), std::max(0.0, t.at(img, p, 3))};
        for (int64_t c = 0; c < 2; ++c) f[p * kC + c] = mid[c] * t.at(img, p, c);
        for (int64_t c = 2; c < kC; ++c) f[p * kC + c] = t.at(img, p, c);
      }
      return f;
    }));
  }
  // Along another axis of a channels-last value, or joining the two layouts: one line each.
  Head t;
  auto error_of = [&](auto&& build) {
    OnnxBuilder g = t.make(13);
    OnnxBuilder::attr(g.node("Transpose", {"x"}, {"t"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
    build(g);
    return test::import_error(g);
  };
  std::string e = error_of([](OnnxBuilder& g) {
    g.ints("sizes", {2}, {1, 1});
    OnnxBuilder::attr(g.node("Split", {"t", "sizes"}, {"a", "b"}), "axis", int64_t{1});
    g.output("a");
  });
  CHECK(has(e, "only splitting / slicing the channels (axis 3 of a channels-last value) is supported, not axis 1"));
  e = error_of([](OnnxBuilder& g) {
    OnnxBuilder::attr(g.node("Concat", {"t", "x"}, {"y"}), "axis", int64_t{-1});
    g.output("y");
  });
  CHECK(has(e, "concatenates a channels-last (N, H, W, C) and an (N, C, H, W) value"));
}

}  // namespace dlt
