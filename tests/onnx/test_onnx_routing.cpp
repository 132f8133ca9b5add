// ONNX import's operator routing run end to end: Mul by a per-channel constant (a channel-wise
// 1x1 groupedConvolution2d), also on channels-last data; Mul of two computed values (multiplication,
// squeeze-and-excitation broadcasting); ConvNeXt's Transpose - LayerNormalization - Linear -
// Transpose (layerNormalization over channels of channels-last data, a 1x1 convolution). Each
// imported network's probabilities against the same computation in double precision.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "onnx_test_graph.h"

namespace dlt {
namespace {

using test::OnnxBuilder;

std::vector<float> values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = static_cast<float>(seed >> 8) / static_cast<float>(1u << 23) - 1.f;
  }
  return v;
}

// Gemm (transB) over features f (CHW order for images) then softmax.
std::vector<double> classify(const std::vector<float>& w, const std::vector<float>& b, const std::vector<double>& f) {
  std::vector<double> z(b.size());
  for (size_t o = 0; o < b.size(); ++o) {
    z[o] = b[o];
    for (size_t i = 0; i < f.size(); ++i) z[o] += double(w[o * f.size() + i]) * f[i];
  }
  const double m = *std::max_element(z.begin(), z.end());
  double s = 0;
  for (double& v : z) s += v = std::exp(v - m);
  for (double& v : z) v /= s;
  return z;
}

void check_close(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(std::abs(got[i] - want[i]) <= 1e-5);
}

// Ends a graph at feature value `f`: Gemm (W (4, k), B) -> Softmax.
void head(OnnxBuilder& g, const std::string& f, const std::vector<float>& w, const std::vector<float>& b) {
  g.floats("W", {4, static_cast<int64_t>(w.size() / 4)}, w);
  g.floats("B", {4}, b);
  OnnxBuilder::attr(g.node("Gemm", {f, "W", "B"}, {"g"}), "transB", 1);
  g.node("Softmax", {"g"}, {"prob"});
  g.output("prob");
}

constexpr int64_t kN = 2;

// x[n][p][c] of NHWC images with 4 pixels (2x2).
double at(const std::vector<float>& x, int64_t c_count, int64_t n, int64_t p, int64_t c) {
  return x[static_cast<size_t>((n * 4 + p) * c_count + c)];
}

TEST_CASE("onnx routing: Mul by a per-channel constant runs as a channel-wise convolution", "[onnx]") {
  const std::vector<float> x = values(24, 1), w = values(12, 2), b = values(4, 3), scale{0.5f, -2.f, 3.f};
  for (bool channels_last : {false, true}) {
    INFO("channels-last: " << channels_last);
    OnnxBuilder g({1, 3, 2, 2});
    g.node("Relu", {"x"}, {"r"});
    if (channels_last) {
      g.floats("scale", {3}, scale);
      OnnxBuilder::attr(g.node("Transpose", {"r"}, {"t"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
      g.node("Mul", {"scale", "t"}, {"st"});
      OnnxBuilder::attr(g.node("Transpose", {"st"}, {"s"}), "perm", std::vector<int64_t>{0, 3, 1, 2});
    } else {
      g.floats("scale", {3, 1, 1}, scale);
      g.node("Mul", {"r", "scale"}, {"s"});
    }
    g.node("GlobalAveragePool", {"s"}, {"p"});
    g.node("Flatten", {"p"}, {"f"});
    head(g, "f", w, b);
    std::vector<double> want;
    for (int64_t n = 0; n < kN; ++n) {
      std::vector<double> f(3, 0.0);
      for (int64_t p = 0; p < 4; ++p)
        for (int64_t c = 0; c < 3; ++c) f[c] += std::max(at(x, 3, n, p, c), 0.0) * scale[c] / 4;
      auto pr = classify(w, b, f);
      want.insert(want.end(), pr.begin(), pr.end());
    }
    check_close(test::probabilities(test::imported(g), x, kN), want);
  }
}

TEST_CASE("onnx routing: Mul of two computed values is multiplication (squeeze-and-excitation)", "[onnx]") {
  const std::vector<float> x = values(24, 4), w = values(12, 5), b = values(4, 6);
  OnnxBuilder g({1, 3, 2, 2});
  g.node("Relu", {"x"}, {"r"});
  g.node("GlobalAveragePool", {"r"}, {"squeeze"});
  g.node("Mul", {"r", "squeeze"}, {"excite"});
  g.node("GlobalAveragePool", {"excite"}, {"p"});
  g.node("Flatten", {"p"}, {"f"});
  head(g, "f", w, b);
  const ModelData m = test::imported(g);
  REQUIRE(test::layer_of_type(m, "multiplication") != nullptr);
  std::vector<double> want;
  for (int64_t n = 0; n < kN; ++n) {
    std::vector<double> mean(3, 0.0), f(3, 0.0);
    for (int64_t p = 0; p < 4; ++p)
      for (int64_t c = 0; c < 3; ++c) mean[c] += std::max(at(x, 3, n, p, c), 0.0) / 4;
    for (int64_t p = 0; p < 4; ++p)
      for (int64_t c = 0; c < 3; ++c) f[c] += std::max(at(x, 3, n, p, c), 0.0) * mean[c] / 4;
    auto pr = classify(w, b, f);
    want.insert(want.end(), pr.begin(), pr.end());
  }
  check_close(test::probabilities(m, x, kN), want);
}

TEST_CASE("onnx routing: ShuffleNet's channel shuffle runs as channelShuffle", "[onnx]") {
  const std::vector<float> x = values(32, 7), w = values(64, 8), b = values(4, 9);
  OnnxBuilder g({1, 4, 2, 2});
  g.node("Relu", {"x"}, {"r"});
  g.ints("five", {5}, {1, 2, 2, 2, 2});
  g.node("Reshape", {"r", "five"}, {"v5"});
  OnnxBuilder::attr(g.node("Transpose", {"v5"}, {"t5"}), "perm", std::vector<int64_t>{0, 2, 1, 3, 4});
  g.ints("four", {4}, {1, 4, 2, 2});
  g.node("Reshape", {"t5", "four"}, {"y"}, "shuffle");
  g.node("Flatten", {"y"}, {"f"});  // CHW order: the channel order matters
  head(g, "f", w, b);
  const ModelData m = test::imported(g);
  REQUIRE(test::layer_of_type(m, "channelShuffle") != nullptr);
  std::vector<double> want;
  for (int64_t n = 0; n < kN; ++n) {
    std::vector<double> f(16);
    for (int64_t k = 0; k < 4; ++k) {  // output channel k = j * G + g reads input g * (C / G) + j
      const int64_t j = k / 2, grp = k % 2, src = grp * 2 + j;
      for (int64_t p = 0; p < 4; ++p) f[static_cast<size_t>(k * 4 + p)] = std::max(at(x, 4, n, p, src), 0.0);
    }
    auto pr = classify(w, b, f);
    want.insert(want.end(), pr.begin(), pr.end());
  }
  check_close(test::probabilities(m, x, kN), want);
}

TEST_CASE("onnx routing: ConvNeXt's Transpose - LayerNormalization - Linear - Transpose", "[onnx]") {
  const std::vector<float> x = values(24, 10), w = values(20, 11), b = values(4, 12), w1 = values(15, 13),
                           b1 = values(5, 14), gamma{1.5f, 0.5f, -1.f}, beta{0.1f, 0.f, -0.2f};
  OnnxBuilder g({1, 3, 2, 2}, 17);
  g.floats("gamma", {3}, gamma);
  g.floats("beta", {3}, beta);
  g.floats("W1", {3, 5}, w1);
  g.floats("B1", {5}, b1);
  OnnxBuilder::attr(g.node("Transpose", {"x"}, {"t"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
  auto& ln = g.node("LayerNormalization", {"t", "gamma", "beta"}, {"ln"});
  OnnxBuilder::attr(ln, "axis", -1);
  auto* eps = ln.add_attribute();
  eps->set_name("epsilon");
  eps->set_type(onnx::AttributeProto::FLOAT);
  eps->set_f(1e-6f);
  g.node("MatMul", {"ln", "W1"}, {"mm"});
  g.node("Add", {"B1", "mm"}, {"a"});
  OnnxBuilder::attr(g.node("Transpose", {"a"}, {"back"}), "perm", std::vector<int64_t>{0, 3, 1, 2});
  g.node("GlobalAveragePool", {"back"}, {"p"});
  g.node("Flatten", {"p"}, {"f"});
  head(g, "f", w, b);
  const ModelData m = test::imported(g);
  REQUIRE(test::layer_of_type(m, "layerNormalization") != nullptr);
  std::vector<double> want;
  for (int64_t n = 0; n < kN; ++n) {
    std::vector<double> f(5, 0.0);
    for (int64_t p = 0; p < 4; ++p) {
      double mean = 0, var = 0;
      for (int64_t c = 0; c < 3; ++c) mean += at(x, 3, n, p, c) / 3;
      for (int64_t c = 0; c < 3; ++c) var += (at(x, 3, n, p, c) - mean) * (at(x, 3, n, p, c) - mean) / 3;
      std::vector<double> y(3);
      for (int64_t c = 0; c < 3; ++c) y[c] = (at(x, 3, n, p, c) - mean) / std::sqrt(var + 1e-6) * gamma[c] + beta[c];
      for (int64_t o = 0; o < 5; ++o) {
        double v = b1[o];
        for (int64_t c = 0; c < 3; ++c) v += double(w1[c * 5 + o]) * y[c];
        f[o] += v / 4;
      }
    }
    auto pr = classify(w, b, f);
    want.insert(want.end(), pr.begin(), pr.end());
  }
  check_close(test::probabilities(m, x, kN), want);
}

}  // namespace
}  // namespace dlt
