// ONNX import of groupNormalization and instanceNormalization: PyTorch's GroupNorm as both
// exporters write it (Reshape (N, G, -1), InstanceNormalization with G ones and zeros, Reshape
// back to Shape(x) or to a fixed (1, C, H, W), Mul and Add per channel), InstanceNorm2d's one
// InstanceNormalization, ONNX's GroupNormalization with a scale per group (opset 18) or per
// channel; each graph's imported probabilities against the same computation in double here;
// and the refusals, one line each.
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

// x (1, C, H, W) -> the test's nodes ending in `feat` -> GlobalAveragePool -> Flatten -> Gemm
// (K = 3) -> Softmax, and the same in double from the normalized features.
struct Net {
  std::vector<float> w = values(kK * kC, 11), b = values(kK, 12), x = values(2 * kPixels * kC, 13);
  std::vector<float> scale = values(kC, 21), offset = values(kC, 22);
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
  // The probabilities with each image's groups of kC / groups channels normalized (epsilon
  // 1e-5, biased variance), times scale plus offset per channel.
  std::vector<double> expected(int64_t groups) const {
    std::vector<double> out;
    const int64_t cg = kC / groups;
    for (int img = 0; img < 2; ++img) {
      std::vector<double> f(kPixels * kC);
      for (int64_t g = 0; g < groups; ++g) {
        double mean = 0, var = 0;
        const double count = static_cast<double>(kPixels * cg);
        for (int64_t p = 0; p < kPixels; ++p)
          for (int64_t c = g * cg; c < (g + 1) * cg; ++c) mean += at(img, p, c) / count;
        for (int64_t p = 0; p < kPixels; ++p)
          for (int64_t c = g * cg; c < (g + 1) * cg; ++c) var += std::pow(at(img, p, c) - mean, 2) / count;
        for (int64_t p = 0; p < kPixels; ++p)
          for (int64_t c = g * cg; c < (g + 1) * cg; ++c)
            f[p * kC + c] = (at(img, p, c) - mean) / std::sqrt(var + 1e-5) * scale[c] + offset[c];
      }
      std::vector<double> z(kK);
      double m = -1e300, s = 0;
      for (int64_t o = 0; o < kK; ++o) {
        z[o] = b[o];
        for (int64_t c = 0; c < kC; ++c) {
          double avg = 0;
          for (int64_t p = 0; p < kPixels; ++p) avg += f[p * kC + c] / kPixels;
          z[o] += double(w[o * kC + c]) * avg;
        }
        m = std::max(m, z[o]);
      }
      for (double& v : z) s += v = std::exp(v - m);
      for (double v : z) out.push_back(v / s);
    }
    return out;
  }
  double at(int img, int64_t p, int64_t c) const { return x[static_cast<size_t>((img * kPixels + p) * kC + c)]; }
  void check(const ModelData& m, int64_t groups) const {
    const std::vector<float> got = test::probabilities(m, x, 2);
    const std::vector<double> want = expected(groups);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(std::abs(got[i] - want[i]) <= 1e-5);
  }
};

// PyTorch's GroupNorm(groups, C): back to Shape(x) (TorchScript) or to (1, C, H, W) (dynamo).
void torch_group_norm(Net& t, OnnxBuilder& g, int64_t groups, bool shape_of_x) {
  g.ints("rows_shape", {3}, {0, groups, -1});
  g.node("Reshape", {"x", "rows_shape"}, {"rows"});
  g.floats("ones", {groups}, std::vector<float>(static_cast<size_t>(groups), 1.f));
  g.floats("zeros", {groups}, std::vector<float>(static_cast<size_t>(groups), 0.f));
  g.node("InstanceNormalization", {"rows", "ones", "zeros"}, {"normalized"});
  if (shape_of_x) {
    g.node("Shape", {"x"}, {"x_shape"});
  } else {
    g.ints("x_shape", {4}, {1, kC, kH, kW});
  }
  g.node("Reshape", {"normalized", "x_shape"}, {"image"});
  g.floats("S", {kC, 1, 1}, t.scale);
  g.floats("O", {kC, 1, 1}, t.offset);
  g.node("Mul", {"image", "S"}, {"scaled"});
  g.node("Add", {"scaled", "O"}, {"gn"});
}

}  // namespace

TEST_CASE("onnx group norm: PyTorch's GroupNorm as both exporters write it", "[onnx][group_norm]") {
  for (const bool shape_of_x : {true, false}) {
    INFO((shape_of_x ? "Reshape back to Shape(x)" : "Reshape back to (1, C, H, W)"));
    Net t;
    OnnxBuilder g = t.make();
    torch_group_norm(t, g, 2, shape_of_x);
    t.finish(g, "gn");
    const ModelData m = test::imported(g);
    const LayerSpec* gn = test::layer_of_type(m, "groupNormalization");
    REQUIRE(gn != nullptr);
    CHECK(gn->get_int("NumGroups", 0) == 2);
    t.check(m, 2);
  }
}

TEST_CASE("onnx group norm: InstanceNormalization of an image, GroupNormalization per group or per channel",
          "[onnx][group_norm]") {
  SECTION("InstanceNormalization (InstanceNorm2d with affine)") {
    Net t;
    OnnxBuilder g = t.make();
    g.floats("S", {kC}, t.scale);
    g.floats("O", {kC}, t.offset);
    g.node("InstanceNormalization", {"x", "S", "O"}, {"in"});
    t.finish(g, "in");
    const ModelData m = test::imported(g);
    REQUIRE(test::layer_of_type(m, "instanceNormalization") != nullptr);
    t.check(m, kC);
  }
  SECTION("GroupNormalization, a scale and bias per channel (opset 21)") {
    Net t;
    OnnxBuilder g = t.make(21);
    g.floats("S", {kC}, t.scale);
    g.floats("O", {kC}, t.offset);
    OnnxBuilder::attr(g.node("GroupNormalization", {"x", "S", "O"}, {"gn"}), "num_groups", int64_t{2});
    t.finish(g, "gn");
    const ModelData m = test::imported(g);
    t.check(m, 2);
  }
  SECTION("GroupNormalization, a scale and bias per group (opset 18)") {
    Net t;
    t.scale = {0.7f, 0.7f, 1.3f, 1.3f};
    t.offset = {0.2f, 0.2f, -0.1f, -0.1f};
    OnnxBuilder g = t.make(18);
    g.floats("S", {2}, {0.7f, 1.3f});
    g.floats("O", {2}, {0.2f, -0.1f});
    OnnxBuilder::attr(g.node("GroupNormalization", {"x", "S", "O"}, {"gn"}), "num_groups", int64_t{2});
    t.finish(g, "gn");
    t.check(test::imported(g), 2);
  }
}

TEST_CASE("onnx group norm: the forms dltrain does not compute are one line", "[onnx][group_norm]") {
  Net t;
  SECTION("groups that do not divide the channels") {
    OnnxBuilder g = t.make(21);
    g.floats("S", {kC}, t.scale);
    g.floats("O", {kC}, t.offset);
    OnnxBuilder::attr(g.node("GroupNormalization", {"x", "S", "O"}, {"gn"}), "num_groups", int64_t{3});
    t.finish(g, "gn");
    CHECK_THAT(test::import_error(g), Catch::Contains("node 'gn' (GroupNormalization): num_groups 3 does not divide "
                                                      "the image's 4 channels"));
  }
  SECTION("a scale of neither one value per channel nor one per group") {
    OnnxBuilder g = t.make(21);
    g.floats("S", {3}, {1.f, 1.f, 1.f});
    g.floats("O", {kC}, t.offset);
    OnnxBuilder::attr(g.node("GroupNormalization", {"x", "S", "O"}, {"gn"}), "num_groups", int64_t{2});
    t.finish(g, "gn");
    CHECK_THAT(test::import_error(g), Catch::Contains("node 'gn' (GroupNormalization): scale has 3 values for 4 "
                                                      "channels (2 groups)"));
  }
  SECTION("InstanceNormalization of a flattened image") {
    OnnxBuilder g = t.make();
    g.node("Flatten", {"x"}, {"flat"});
    g.floats("S", {kC * kPixels}, std::vector<float>(kC * kPixels, 1.f));
    g.floats("O", {kC * kPixels}, std::vector<float>(kC * kPixels, 0.f));
    g.node("InstanceNormalization", {"flat", "S", "O"}, {"in"});
    g.output("in");
    CHECK_THAT(test::import_error(g), Catch::Contains("node 'in' (InstanceNormalization): its input is not an (N, C, "
                                                      "H, W) image"));
  }
}

}  // namespace dlt
