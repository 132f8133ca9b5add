// Segmentation networks through ONNX: a graph that ends with class scores per pixel (N, K, H, W),
// as torchvision's FCN, DeepLabV3 and LR-ASPP export, imports with softmax and
// pixelClassification appended (or its own Softmax over the channels kept) and gives the
// per-pixel softmax of its scores; a YAML segmentation network exports with the Softmax over
// axis 1 of (N, K, H, W) and reads back as the same network; what is not a per-pixel softmax or
// per-pixel scores is one line, and so is the export of a softmax over tokens.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "config/config.h"
#include "onnx_test_graph.h"
#include "util/files.h"

namespace dlt::test {
namespace {

constexpr int64_t kC = 2, kH = 3, kW = 4, kK = 3;  // channels, height, width, classes

std::vector<float> images(int64_t n) {  // NHWC
  std::vector<float> x(static_cast<size_t>(n * kH * kW * kC));
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.7f * std::sin(1.3f * static_cast<float>(i)) + 0.05f * (i % 5);
  return x;
}

const std::vector<float> kWeights = {0.9f, -1.2f, 0.4f, 1.5f, -0.6f, 0.8f};  // (K, C, 1, 1)
const std::vector<float> kBias = {0.1f, -0.3f, 0.2f};

// The per-pixel softmax of the 1x1 convolution's scores, in double (NHWC, K per pixel).
std::vector<double> reference(const std::vector<float>& x, int64_t n) {
  std::vector<double> p;
  for (int64_t px = 0; px < n * kH * kW; ++px) {
    double s[kK], m = -1e300, z = 0;
    for (int64_t k = 0; k < kK; ++k) {
      s[k] = kBias[k];
      for (int64_t c = 0; c < kC; ++c) s[k] += double(kWeights[k * kC + c]) * x[px * kC + c];
      m = std::max(m, s[k]);
    }
    for (double& v : s) z += std::exp(v - m);
    for (double v : s) p.push_back(std::exp(v - m) / z);
  }
  return p;
}

// x -> Conv 1x1 (K filters) -> `tail` nodes; the output is the last node's.
OnnxBuilder conv_graph(int opset = 13) {
  OnnxBuilder g({1, kC, kH, kW}, opset);
  g.floats("W", {kK, kC, 1, 1}, kWeights);
  g.floats("B", {kK}, kBias);
  g.node("Conv", {"x", "W", "B"}, {"scores"}, "conv");
  return g;
}

void check_pixels(const ModelData& m) {
  const std::vector<float> x = images(2);
  const std::vector<float> p = probabilities(m, x, 2);
  const std::vector<double> want = reference(x, 2);
  REQUIRE(p.size() == want.size());
  for (size_t i = 0; i < p.size(); ++i) CHECK(p[i] == Approx(want[i]).margin(1e-6));
}

}  // namespace

TEST_CASE("onnx: scores per pixel import as a segmentation network", "[onnx]") {
  SECTION("logits: softmax and pixelClassification appended") {
    OnnxBuilder g = conv_graph();
    g.output("scores");
    const ModelData m = imported(g);
    REQUIRE(m.network.layers.size() == 4);
    CHECK(m.network.layers[2].type == "softmax");
    CHECK(m.network.layers[3].type == "pixelClassification");
    CHECK(m.network.layers[3].name == "pixelLabels");
    CHECK(m.classes == std::vector<std::string>{"class_1", "class_2", "class_3"});
    check_pixels(m);
  }
  for (int64_t axis : {int64_t{1}, int64_t{-3}}) {
    DYNAMIC_SECTION("its own Softmax over axis " << axis) {
      OnnxBuilder g = conv_graph();
      OnnxBuilder::attr(g.node("Softmax", {"scores"}, {"prob"}, "softmax"), "axis", axis);
      g.output("prob");
      const ModelData m = imported(g);
      REQUIRE(m.network.layers.size() == 4);
      CHECK(m.network.layers[2].name == "softmax");
      CHECK(m.network.layers[3].type == "pixelClassification");
      check_pixels(m);
    }
  }
  SECTION("a Softmax over the last axis of a channels-last value") {
    OnnxBuilder g = conv_graph();
    OnnxBuilder::attr(g.node("Transpose", {"scores"}, {"t"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
    g.node("Softmax", {"t"}, {"s"}, "softmax");
    OnnxBuilder::attr(g.node("Transpose", {"s"}, {"prob"}), "perm", std::vector<int64_t>{0, 3, 1, 2});
    g.output("prob");
    const ModelData m = imported(g);
    CHECK(m.network.layers.back().type == "pixelClassification");
    check_pixels(m);
  }
}

TEST_CASE("onnx: what is no per-pixel softmax or scores is one line", "[onnx]") {
  auto softmax_error = [](int64_t axis, int opset) {
    OnnxBuilder g = conv_graph(opset);
    OnnxBuilder::attr(g.node("Softmax", {"scores"}, {"prob"}, "softmax"), "axis", axis);
    g.output("prob");
    return import_error(g);
  };
  // Over the rows of each column, and below opset 13 (where axis 1 means all C*H*W values).
  CHECK_THAT(softmax_error(2, 13), Catch::Contains("node 'softmax' (Softmax): only a softmax over the channels of "
                                                   "each pixel (axis 1 of (N, C, H, W), opset 13 or later)"));
  CHECK_THAT(softmax_error(2, 13), Catch::Contains("not axis 2 of 3x4x3 per image at opset 13"));
  CHECK_THAT(softmax_error(1, 11), Catch::Contains("not axis 1 of 3x4x3 per image at opset 11"));
  // One score per pixel (a sigmoid's binary mask) is no class scores.
  OnnxBuilder one({1, kC, kH, kW});
  one.floats("W", {1, kC, 1, 1}, {1.f, -1.f});
  one.node("Conv", {"x", "W"}, {"mask"}, "conv");
  one.output("mask");
  CHECK_THAT(import_error(one), Catch::Contains("ends with 3x4x1 per image: one score per pixel, not K >= 2"));
  // Ending channels-last: the graph's output would be (N, H, W, K).
  OnnxBuilder last = conv_graph();
  OnnxBuilder::attr(last.node("Transpose", {"scores"}, {"t"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
  last.output("t");
  CHECK_THAT(import_error(last), Catch::Contains("ends with 3x4x3 per image in another layout"));
}

TEST_CASE("a segmentation network exports with its softmax per pixel and reads back as the same network", "[onnx]") {
  const std::string yaml = R"(
layers:
  - {type: imageInput, Name: input, InputSize: [4, 6, 2], Normalization: none}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 4, Padding: same}
  - {type: batchNormalization, Name: bn1}
  - {type: relu, Name: relu1}
  - {type: maxPooling2d, Name: pool, PoolSize: 2, Stride: 2}
  - {type: transposedConv2d, Name: up, FilterSize: 2, NumFilters: 4, Stride: 2}
  - {type: convolution2d, Name: scores, FilterSize: 1, NumFilters: 3}
  - {type: softmax, Name: softmax}
  - {type: pixelClassification, Name: labels}
)";
  Network net(network_spec_from_yaml(yaml, "seg.yaml"), Device::cpu());
  net.init_params(3);
  ModelData m = net.to_model_data();
  m.classes = {"sky", "road", "car"};
  TempDir dir;
  export_onnx(m, dir.file("seg.onnx"));
  onnx::ModelProto proto;
  REQUIRE(proto.ParseFromString(read_file(dir.file("seg.onnx"))));
  // The output (N, K, H, W); the Softmax reads the scores over axis 1, with no Flatten.
  const auto& out = proto.graph().output(0);
  CHECK(out.name() == "prob");
  const auto& dims = out.type().tensor_type().shape().dim();
  REQUIRE(dims.size() == 4);
  CHECK(dims[1].dim_value() == 3);
  CHECK(dims[2].dim_value() == 4);
  CHECK(dims[3].dim_value() == 6);
  int softmaxes = 0;
  for (const auto& n : proto.graph().node()) {
    CHECK(n.op_type() != "Flatten");
    if (n.op_type() != "Softmax") continue;
    ++softmaxes;
    REQUIRE(n.attribute_size() == 1);
    CHECK(n.attribute(0).i() == 1);
  }
  CHECK(softmaxes == 1);
  const ModelData back = import_onnx(dir.file("seg.onnx"), {});
  CHECK(back.network.layers.back().type == "pixelClassification");
  CHECK(back.classes == m.classes);
  std::vector<float> x(static_cast<size_t>(2 * 4 * 6 * 2));
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.37f * static_cast<float>(i));
  const std::vector<float> p = probabilities(m, x, 2), q = probabilities(back, x, 2);
  REQUIRE(p.size() == q.size());
  REQUIRE(p.size() == size_t{2 * 4 * 6 * 3});
  for (size_t i = 0; i < p.size(); ++i) CHECK(q[i] == Approx(p[i]).margin(1e-6));
}

TEST_CASE("a softmax over tokens has no ONNX export: one line naming the layer", "[onnx]") {
  const std::string yaml = R"(
layers:
  - {type: imageInput, Name: input, InputSize: [8, 8, 3], Normalization: none}
  - {type: patchEmbedding, Name: patches, PatchSize: 4, OutputSize: 8}
  - {type: softmax, Name: tokensoftmax}
  - {type: globalAveragePooling1d, Name: pool}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
  - {type: softmax, Name: prob}
  - {type: classification, Name: output}
)";
  Network net(network_spec_from_yaml(yaml, "tokens.yaml"), Device::cpu());
  net.init_params(1);
  ModelData m = net.to_model_data();
  m.classes = {"a", "b", "c"};
  TempDir dir;
  try {
    export_onnx(m, dir.file("tokens.onnx"));
    FAIL("a softmax over tokens was exported");
  } catch (const ModelError& e) {
    CHECK_THAT(e.what(), Catch::Contains("softmax 'tokensoftmax' reads tokens, which has no ONNX form here"));
  }
}

}  // namespace dlt::test
