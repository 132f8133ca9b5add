// spaceToDepth (MATLAB's spaceToDepthLayer, ONNX SpaceToDepth): an ONNX graph with SpaceToDepth
// imports as the layer and gives the probabilities ONNX's definition gives (computed here in
// double precision on the NCHW tensor); a YAML network with the layer exports as SpaceToDepth and
// reads back as the same network; spaceToDepth then depthToSpace2d (DCR) is the identity;
// a blocksize that does not divide the image is refused naming the node.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "support/grad_check.h"
#include "onnx_test_graph.h"

namespace dlt::test {
namespace {

constexpr int64_t kC = 2, kH = 4, kW = 6, kB = 2, kK = 3;  // channels, height, width, block, classes

std::vector<float> images(int64_t n) {  // NHWC
  std::vector<float> x(static_cast<size_t>(n * kH * kW * kC));
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.3f * std::sin(0.7f * static_cast<float>(i)) + 0.01f * (i % 5);
  return x;
}

std::vector<float> gemm_weights() {  // (K, C * B * B * (H / B) * (W / B)), transB
  std::vector<float> w(static_cast<size_t>(kK * kC * kH * kW));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.4f * std::cos(1.3f * static_cast<float>(i));
  return w;
}

// ONNX SpaceToDepth on the NCHW image of NHWC image b, flattened in NCHW order, through the Gemm
// and the softmax.
std::vector<double> reference(const std::vector<float>& x, int64_t n) {
  const int64_t oc = kC * kB * kB, oh = kH / kB, ow = kW / kB, f = oc * oh * ow;
  const std::vector<float> w = gemm_weights();
  std::vector<double> out;
  for (int64_t b = 0; b < n; ++b) {
    std::vector<double> flat(static_cast<size_t>(f));
    // y[n, (i * B + j) * C + c, h, w] = x[n, c, h * B + i, w * B + j]
    for (int64_t i = 0; i < kB; ++i)
      for (int64_t j = 0; j < kB; ++j)
        for (int64_t c = 0; c < kC; ++c)
          for (int64_t h = 0; h < oh; ++h)
            for (int64_t v = 0; v < ow; ++v)
              flat[static_cast<size_t>((((i * kB + j) * kC + c) * oh + h) * ow + v)] =
                  x[static_cast<size_t>(((b * kH + h * kB + i) * kW + v * kB + j) * kC + c)];
    std::vector<double> logit(kK, 0.0);
    double top = -1e300, sum = 0;
    for (int64_t k = 0; k < kK; ++k) {
      for (int64_t e = 0; e < f; ++e) logit[k] += flat[static_cast<size_t>(e)] * w[static_cast<size_t>(k * f + e)];
      top = std::max(top, logit[k]);
    }
    for (double& l : logit) sum += l = std::exp(l - top);
    for (double l : logit) out.push_back(l / sum);
  }
  return out;
}

OnnxBuilder space_to_depth_graph(int64_t block) {
  OnnxBuilder g({1, kC, kH, kW});
  OnnxBuilder::attr(g.node("SpaceToDepth", {"x"}, {"s"}), "blocksize", block);
  g.node("Flatten", {"s"}, {"f"});
  g.floats("W", {kK, kC * kH * kW}, gemm_weights());
  g.floats("B", {kK}, {0.f, 0.f, 0.f});
  OnnxBuilder::attr(g.node("Gemm", {"f", "W", "B"}, {"g"}), "transB", 1);
  g.node("Softmax", {"g"}, {"prob"});
  g.output("prob");
  return g;
}

}  // namespace

TEST_CASE("onnx SpaceToDepth imports as spaceToDepth with ONNX's channel order", "[onnx]") {
  const ModelData m = imported(space_to_depth_graph(kB));
  const LayerSpec* s = layer_of_type(m, "spaceToDepth");
  REQUIRE(s);
  CHECK(s->get_int("BlockSize", 0) == kB);
  const std::vector<float> x = images(2);
  const std::vector<float> got = probabilities(m, x, 2);
  const std::vector<double> want = reference(x, 2);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-6));
  CHECK(std::fabs(want[0] - want[3]) > 1e-3);  // the two images are told apart
  CHECK_THAT(import_error(space_to_depth_graph(4)),
             Catch::Contains("its input is 4x6 pixels, not a multiple of blocksize 4"));
}

TEST_CASE("spaceToDepth exports as SpaceToDepth and reads back; depthToSpace2d undoes it", "[onnx]") {
  const char* yaml = R"(
layers:
  - {type: imageInput, Name: input, InputSize: [4, 6, 2], Normalization: none}
  - {type: spaceToDepth, Name: s2d, BlockSize: 2}
  - {type: convolution2d, Name: conv, FilterSize: 1, NumFilters: 5}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
)";
  Network net(network_spec_from_yaml(yaml, "s2d.yaml"), Device::cpu());
  net.init_params(5);
  ModelData m = net.to_model_data();
  m.classes = {"a", "b", "c"};
  TempDir dir;
  export_onnx(m, dir.file("s2d.onnx"));
  const ModelData back = import_onnx(dir.file("s2d.onnx"), {});
  REQUIRE(layer_of_type(back, "spaceToDepth"));
  const std::vector<float> x = images(3);
  const std::vector<float> p = probabilities(m, x, 3), q = probabilities(back, x, 3);
  REQUIRE(p.size() == q.size());
  for (size_t i = 0; i < p.size(); ++i) CHECK(q[i] == Approx(p[i]).margin(1e-6));

  // The layers alone: spaceToDepth [2 3] then depthToSpace2d [2 3] (DCR) gives the image back.
  Backend& be = backend_for(Device::cpu());
  std::unique_ptr<Layer> s2d = make_layer(test::layer_spec("spaceToDepth", {"BlockSize=[2,3]"}, "s2d"));
  std::unique_ptr<Layer> d2s = make_layer(test::layer_spec("depthToSpace2d", {"BlockSize=[2,3]"}, "d2s"));
  const Shape mid = s2d->infer({Shape{4, 6, 2}});
  CHECK(mid == Shape{2, 2, 12});
  CHECK(d2s->infer({mid}) == Shape{4, 6, 2});
  s2d->setup(2, be);
  d2s->setup(2, be);
  Tensor in(Shape{2, 4, 6, 2}), packed(Shape{2, 2, 2, 12}), out(Shape{2, 4, 6, 2});
  const std::vector<float> x2 = images(2);
  std::copy(x2.begin(), x2.end(), in.data());
  RunContext ctx;
  s2d->forward({&in}, packed, ctx);
  // y[n, h, w, (i * 3 + j) * 2 + k] = x[n, 2 h + i, 3 w + j, k]
  CHECK(packed.data()[((1 * 2 + 1) * 2 + 1) * 12 + (1 * 3 + 2) * 2 + 1] == in.data()[((1 * 4 + 3) * 6 + 5) * 2 + 1]);
  CHECK(packed.data()[(0 * 2 + 1) * 12 + (0 * 3 + 1) * 2] == in.data()[(0 * 6 + 4) * 2]);
  d2s->forward({&packed}, out, ctx);
  for (int64_t e = 0; e < in.numel(); ++e) CHECK(out.data()[e] == in.data()[e]);
}

}  // namespace dlt::test
