// ONNX AveragePool with padding both ways: count_include_pad 1 (and a Pad node before it) is
// averagePooling2d's default (padding counts as zeros); count_include_pad 0 is PaddingValue mean
// (each window divided by its taps inside the image: timm's EfficientFormer and PoolFormer, and
// TensorFlow's SAME average pooling). The imported probabilities are compared with ONNX's
// definition computed here in double precision; the YAML layer exports as AveragePool and reads
// back; a Pad node before count_include_pad 0 is refused naming the node.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "config/config.h"
#include "onnx_test_graph.h"

namespace dlt::test {
namespace {

constexpr int64_t kC = 2, kH = 5, kW = 4, kK = 3;  // channels, height, width, classes
constexpr int64_t kPool = 3, kStride = 2;
// ONNX pads [top, left, bottom, right]: asymmetric, so that both ends of each axis count.
const std::vector<int64_t> kPads = {1, 2, 0, 1};

int64_t out_size(int64_t x, int64_t a, int64_t b) { return (x + a + b - kPool) / kStride + 1; }
const int64_t kOH = out_size(kH, kPads[0], kPads[2]), kOW = out_size(kW, kPads[1], kPads[3]);

std::vector<float> images(int64_t n) {  // NHWC
  std::vector<float> x(static_cast<size_t>(n * kH * kW * kC));
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.8f * std::sin(0.9f * static_cast<float>(i)) + 0.05f * (i % 7);
  return x;
}

const std::vector<float> kBias = {0.1f, -0.2f, 0.f};

std::vector<float> gemm_weights() {  // (K, C * OH * OW), transB
  std::vector<float> w(static_cast<size_t>(kK * kC * kOH * kOW));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.6f * std::cos(1.7f * static_cast<float>(i));
  return w;
}

// AveragePool (NCHW, flattened in NCHW order) through the Gemm and the softmax, per image
// (onnxruntime 1.32 gives the same on these graphs).
std::vector<double> reference(const std::vector<float>& x, int64_t n, bool include_pad) {
  const std::vector<float> w = gemm_weights();
  const int64_t f = kC * kOH * kOW;
  std::vector<double> out;
  for (int64_t b = 0; b < n; ++b) {
    std::vector<double> flat(static_cast<size_t>(f));
    for (int64_t c = 0; c < kC; ++c)
      for (int64_t oy = 0; oy < kOH; ++oy)
        for (int64_t ox = 0; ox < kOW; ++ox) {
          double s = 0;
          int64_t taps = 0;
          for (int64_t i = 0; i < kPool; ++i)
            for (int64_t j = 0; j < kPool; ++j) {
              const int64_t y = oy * kStride - kPads[0] + i, v = ox * kStride - kPads[1] + j;
              if (y < 0 || y >= kH || v < 0 || v >= kW) continue;
              s += x[static_cast<size_t>(((b * kH + y) * kW + v) * kC + c)];
              ++taps;
            }
          flat[static_cast<size_t>((c * kOH + oy) * kOW + ox)] = s / (include_pad ? kPool * kPool : taps);
        }
    std::vector<double> logit(kK, 0.0);
    double top = -1e300, sum = 0;
    for (int64_t k = 0; k < kK; ++k) {
      logit[k] = kBias[static_cast<size_t>(k)];
      for (int64_t e = 0; e < f; ++e) logit[k] += flat[static_cast<size_t>(e)] * w[static_cast<size_t>(k * f + e)];
      top = std::max(top, logit[k]);
    }
    for (double& l : logit) sum += l = std::exp(l - top);
    for (double l : logit) out.push_back(l / sum);
  }
  return out;
}

// x -> [Pad ->] AveragePool -> Flatten -> Gemm -> Softmax.
OnnxBuilder pool_graph(int64_t count_include_pad, bool pad_node) {
  OnnxBuilder g({1, kC, kH, kW});
  std::string src = "x";
  if (pad_node) {
    g.ints("pads8", {8}, {0, 0, 1, 0, 0, 0, 0, 0});
    g.node("Pad", {"x", "pads8"}, {"padded"}, "pad");
    src = "padded";
  }
  auto& pool = g.node("AveragePool", {src}, {"p"}, "avg");
  OnnxBuilder::attr(pool, "kernel_shape", std::vector<int64_t>{kPool, kPool});
  OnnxBuilder::attr(pool, "strides", std::vector<int64_t>{kStride, kStride});
  // After the Pad node (one row on top), the pool's own top padding is one row less.
  OnnxBuilder::attr(pool, "pads", pad_node ? std::vector<int64_t>{kPads[0] - 1, kPads[1], kPads[2], kPads[3]} : kPads);
  OnnxBuilder::attr(pool, "count_include_pad", count_include_pad);
  g.node("Flatten", {"p"}, {"f"});
  g.floats("W", {kK, kC * kOH * kOW}, gemm_weights());
  g.floats("B", {kK}, kBias);
  OnnxBuilder::attr(g.node("Gemm", {"f", "W", "B"}, {"g"}), "transB", 1);
  g.node("Softmax", {"g"}, {"prob"});
  g.output("prob");
  return g;
}

void check_probabilities(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-6));
}

}  // namespace

TEST_CASE("onnx AveragePool: count_include_pad 0 is PaddingValue mean, 1 counts padding as zeros", "[onnx]") {
  const std::vector<float> x = images(2);
  const std::vector<double> include = reference(x, 2, true), exclude = reference(x, 2, false);
  double apart = 0;  // the two definitions differ on these images, so each check tells them apart
  for (size_t i = 0; i < include.size(); ++i) apart = std::max(apart, std::fabs(include[i] - exclude[i]));
  CHECK(apart > 1e-2);

  const ModelData mean = imported(pool_graph(0, false));
  const LayerSpec* s = layer_of_type(mean, "averagePooling2d");
  REQUIRE(s);
  CHECK(s->get_string("PaddingValue", "") == "mean");
  check_probabilities(probabilities(mean, x, 2), exclude);

  const ModelData zeros = imported(pool_graph(1, false));
  REQUIRE(layer_of_type(zeros, "averagePooling2d"));
  CHECK(layer_of_type(zeros, "averagePooling2d")->get_string("PaddingValue", "0") == "0");
  check_probabilities(probabilities(zeros, x, 2), include);
  check_probabilities(probabilities(imported(pool_graph(1, true)), x, 2), include);  // the Pad folds in

  CHECK_THAT(import_error(pool_graph(0, true)),
             Catch::Contains("node 'avg' (AveragePool): count_include_pad is 0 after a Pad node"));
}

TEST_CASE("averagePooling2d with PaddingValue mean exports as AveragePool and reads back", "[onnx]") {
  const char* yaml = R"(
layers:
  - {type: imageInput, Name: input, InputSize: [5, 4, 2], Normalization: none}
  - {type: averagePooling2d, Name: pool, PoolSize: 3, Stride: 2, Padding: [1, 0, 2, 1], PaddingValue: mean}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
)";
  Network net(network_spec_from_yaml(yaml, "pool.yaml"), Device::cpu());
  net.init_params(7);
  ModelData m = net.to_model_data();
  m.classes = {"a", "b", "c"};
  TempDir dir;
  export_onnx(m, dir.file("pool.onnx"));
  const ModelData back = import_onnx(dir.file("pool.onnx"), {});
  const LayerSpec* s = layer_of_type(back, "averagePooling2d");
  REQUIRE(s);
  CHECK(s->get_string("PaddingValue", "") == "mean");
  const std::vector<float> x = images(3);
  const std::vector<float> p = probabilities(m, x, 3), q = probabilities(back, x, 3);
  REQUIRE(p.size() == q.size());
  for (size_t i = 0; i < p.size(); ++i) CHECK(q[i] == Approx(p[i]).margin(1e-6));
}

}  // namespace dlt::test
