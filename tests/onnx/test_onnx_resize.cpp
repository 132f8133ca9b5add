// resize2d (MATLAB's resize2dLayer, ONNX Resize): graphs with Resize in the forms PyTorch's
// interpolate exports (nearest: asymmetric, floor; bilinear: half_pixel or pytorch_half_pixel;
// nearest-exact: half_pixel, round) import as the layer and give the probabilities ONNX's
// definition gives (the double reference of tests/support on the same pixels); a YAML network
// with the layer exports as Resize and reads back as the same network; what the layer does not
// compute is refused in one line naming the node.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "config/config.h"
#include "onnx_test_graph.h"
#include "support/reference_ops.h"

namespace dlt::test {
namespace {

constexpr int64_t kC = 2, kH = 3, kW = 4, kK = 3;  // channels, height, width, classes

std::vector<float> images(int64_t n) {  // NHWC
  std::vector<float> x(static_cast<size_t>(n * kH * kW * kC));
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.5f * std::sin(0.9f * static_cast<float>(i)) + 0.02f * (i % 7);
  return x;
}

std::vector<float> gemm_weights(int64_t features) {  // (K, features), transB
  std::vector<float> w(static_cast<size_t>(kK * features));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.3f * std::cos(1.1f * static_cast<float>(i));
  return w;
}

// Resize (the node under test, its output "r" of oh x ow) -> Flatten -> Gemm -> Softmax.
struct Graph {
  OnnxBuilder g{{1, kC, kH, kW}, 13};
  int64_t oh, ow;
  Graph(int64_t out_h, int64_t out_w, int opset = 13) : g({1, kC, kH, kW}, opset), oh(out_h), ow(out_w) {}
  onnx::NodeProto& resize(const std::vector<float>& scales, const std::vector<int64_t>& sizes) {
    std::vector<std::string> in = {"x", ""};
    if (!scales.empty()) {
      g.floats("scales", {static_cast<int64_t>(scales.size())}, scales);
      in.push_back("scales");
    } else {
      in.push_back("");
      g.ints("sizes", {static_cast<int64_t>(sizes.size())}, sizes);
      in.push_back("sizes");
    }
    return g.node("Resize", in, {"r"});
  }
  void finish() {
    g.node("Flatten", {"r"}, {"f"});
    g.floats("W", {kK, kC * oh * ow}, gemm_weights(kC * oh * ow));
    g.floats("B", {kK}, {0.1f, -0.2f, 0.f});
    OnnxBuilder::attr(g.node("Gemm", {"f", "W", "B"}, {"gm"}), "transB", 1);
    g.node("Softmax", {"gm"}, {"prob"});
    g.output("prob");
  }
};

// The probabilities of resize d on the images, flattened in NCHW order through the Gemm.
std::vector<double> expected(ResizeDesc d, const std::vector<float>& x, int64_t n) {
  d.n = n;
  const ref::Vec y = ref::resize_forward(d, ref::Vec(x.begin(), x.end()));
  const int64_t f = kC * d.oh * d.ow;
  const std::vector<float> w = gemm_weights(f);
  const double b[kK] = {0.1, -0.2, 0.0};
  std::vector<double> out;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<double> logit(kK);
    double top = -1e300, sum = 0;
    for (int64_t k = 0; k < kK; ++k) {
      logit[k] = b[k];
      for (int64_t c = 0; c < kC; ++c)
        for (int64_t p = 0; p < d.oh * d.ow; ++p)
          logit[k] += double(w[static_cast<size_t>(k * f + c * d.oh * d.ow + p)]) *
                      y[static_cast<size_t>((i * d.oh * d.ow + p) * kC + c)];
      top = std::max(top, logit[k]);
    }
    for (double& l : logit) sum += l = std::exp(l - top);
    for (double l : logit) out.push_back(l / sum);
  }
  return out;
}

void check_probabilities(const ModelData& m, const ResizeDesc& d) {
  const std::vector<float> x = images(2);
  const std::vector<float> got = probabilities(m, x, 2);
  const std::vector<double> want = expected(d, x, 2);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-6));
  CHECK(std::fabs(want[0] - want[3]) > 1e-3);  // the two images are told apart
}

}  // namespace

TEST_CASE("onnx Resize imports as resize2d in the forms PyTorch's interpolate exports", "[onnx]") {
  struct Case {
    const char* name;
    std::vector<float> scales;
    std::vector<int64_t> sizes;
    const char *mode, *ctm, *nearest;
    ResizeDesc want;
  };
  const Case cases[] = {
      {"nearest x2, asymmetric floor",
       {1, 1, 2, 2},
       {},
       "nearest",
       "asymmetric",
       "floor",
       ref::resize_desc(1, kH, kW, kC, 6, 8, false, false, true, 2, 2)},
      {"nearest [1.5, 0.75]",
       {1, 1, 1.5f, 0.75f},
       {},
       "nearest",
       "asymmetric",
       "floor",
       ref::resize_desc(1, kH, kW, kC, 4, 3, false, false, true, 1.5, 0.75)},
      {"bilinear x2, pytorch_half_pixel",
       {1, 1, 2, 2},
       {},
       "linear",
       "pytorch_half_pixel",
       "",
       ref::resize_desc(1, kH, kW, kC, 6, 8, true, true, false, 2, 2)},
      {"bilinear to 5x7, half_pixel",
       {},
       {1, kC, 5, 7},
       "linear",
       "half_pixel",
       "",
       ref::resize_desc(1, kH, kW, kC, 5, 7, true, true, false)},
      {"nearest-exact to 5x7",
       {},
       {1, kC, 5, 7},
       "nearest",
       "half_pixel",
       "round_prefer_ceil",
       ref::resize_desc(1, kH, kW, kC, 5, 7, false, true, false)},
      {"nearest x2 half_pixel, round_prefer_floor (no ties)",
       {1, 1, 2, 2},
       {},
       "nearest",
       "half_pixel",
       "",
       ref::resize_desc(1, kH, kW, kC, 6, 8, false, true, false, 2, 2)},
      {"cubic to 5x7, half_pixel (PyTorch's bicubic)",
       {},
       {1, kC, 5, 7},
       "cubic",
       "half_pixel",
       "",
       ref::cubic_resize(ref::resize_desc(1, kH, kW, kC, 5, 7, false, true, false))},
      {"linear to 5x7, align_corners (PyTorch's align_corners=True)",
       {},
       {1, kC, 5, 7},
       "linear",
       "align_corners",
       "",
       ref::aligned_resize(ref::resize_desc(1, kH, kW, kC, 5, 7, true, true, false))},
      {"cubic x2, align_corners",
       {1, 1, 2, 2},
       {},
       "cubic",
       "align_corners",
       "",
       ref::aligned_resize(ref::cubic_resize(ref::resize_desc(1, kH, kW, kC, 6, 8, false, true, false, 2, 2)))},
      {"cubic x2, asymmetric",
       {1, 1, 2, 2},
       {},
       "cubic",
       "asymmetric",
       "",
       ref::cubic_resize(ref::resize_desc(1, kH, kW, kC, 6, 8, false, false, false, 2, 2))},
  };
  for (const Case& cs : cases) {
    INFO(cs.name);
    Graph t(cs.want.oh, cs.want.ow);
    onnx::NodeProto& n = t.resize(cs.scales, cs.sizes);
    OnnxBuilder::attr(n, "mode", std::string(cs.mode));
    OnnxBuilder::attr(n, "coordinate_transformation_mode", std::string(cs.ctm));
    if (*cs.nearest) OnnxBuilder::attr(n, "nearest_mode", std::string(cs.nearest));
    t.finish();
    const ModelData m = imported(t.g);
    const LayerSpec* s = layer_of_type(m, "resize2d");
    REQUIRE(s);
    CHECK(s->get_string("Method", "") == (cs.want.bicubic ? "bicubic" : cs.want.bilinear ? "bilinear" : "nearest"));
    CHECK(s->get_string("GeometricTransformMode", "") == (cs.want.align_corners ? "align-corners"
                                                          : cs.want.half_pixel  ? "half-pixel"
                                                                                : "asymmetric"));
    check_probabilities(m, cs.want);
  }
}

TEST_CASE("resize2d exports as Resize and reads back as the same network", "[onnx]") {
  for (const char* opts :
       {"{Method: bilinear, OutputSize: [5, 7]}", "{Scale: [1.5, 0.5], NearestRoundingMode: floor}",
        "{Scale: 2, GeometricTransformMode: asymmetric, Method: bilinear}", "{OutputSize: [7, 3]}",
        "{Method: bicubic, OutputSize: [2, 7]}", "{Scale: 2, GeometricTransformMode: asymmetric, Method: bicubic}",
        "{Method: bilinear, OutputSize: [5, 7], GeometricTransformMode: align-corners}",
        "{Method: bicubic, Scale: 2, GeometricTransformMode: align-corners}"}) {
    INFO(opts);
    const std::string yaml = std::string(R"(
layers:
  - {type: imageInput, Name: input, InputSize: [3, 4, 2], Normalization: none}
  - {type: resize2d, Name: up, )") +
                             (opts + 1) + R"(
  - {type: convolution2d, Name: conv, FilterSize: 1, NumFilters: 3}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
)";
    Network net(network_spec_from_yaml(yaml, "resize.yaml"), Device::cpu());
    net.init_params(5);
    ModelData m = net.to_model_data();
    m.classes = {"a", "b", "c"};
    TempDir dir;
    export_onnx(m, dir.file("resize.onnx"));
    const ModelData back = import_onnx(dir.file("resize.onnx"), {});
    const LayerSpec* s = layer_of_type(back, "resize2d");
    REQUIRE(s);
    const std::vector<float> x = images(3);
    const std::vector<float> p = probabilities(m, x, 3), q = probabilities(back, x, 3);
    REQUIRE(p.size() == q.size());
    for (size_t i = 0; i < p.size(); ++i) CHECK(q[i] == Approx(p[i]).margin(1e-6));
  }
}

TEST_CASE("onnx Resize: what resize2d does not compute is one line naming the node", "[onnx]") {
  auto error_of = [](std::vector<float> scales, const char* mode, const char* ctm, const char* nearest,
                     int opset = 13) {
    Graph t(6, 8, opset);
    onnx::NodeProto& n = t.resize(scales, {});
    OnnxBuilder::attr(n, "mode", std::string(mode));
    OnnxBuilder::attr(n, "coordinate_transformation_mode", std::string(ctm));
    if (*nearest) OnnxBuilder::attr(n, "nearest_mode", std::string(nearest));
    t.finish();
    return import_error(t.g);
  };
  CHECK_THAT(error_of({1, 1, 2, 2}, "lanczos", "half_pixel", ""), Catch::Contains("node 'r' (Resize): mode 'lanczos'"));
  CHECK_THAT(error_of({1, 1, 2, 2}, "linear", "tf_crop_and_resize", ""),
             Catch::Contains("coordinate_transformation_mode 'tf_crop_and_resize' is not supported"));
  CHECK_THAT(error_of({1, 1, 2, 2}, "nearest", "asymmetric", "ceil"), Catch::Contains("nearest_mode 'ceil'"));
  // Downscaling by 2 with half_pixel puts every source coordinate on a half.
  CHECK_THAT(error_of({1, 1, 0.5f, 0.5f}, "nearest", "half_pixel", "round_prefer_floor"),
             Catch::Contains("rounds source coordinates that fall on a half down"));
  CHECK_THAT(error_of({1, 2, 2, 2}, "nearest", "asymmetric", "floor"),
             Catch::Contains("scales must be [1, 1, height, width]"));
  CHECK_THAT(error_of({1, 1, 0.1f, 2}, "nearest", "asymmetric", "floor"), Catch::Contains("to 0x8 pixels"));
  CHECK_THAT(error_of({1, 1, 1e30f, 2}, "nearest", "asymmetric", "floor"), Catch::Contains("factors in (0, 1e6]"));
  {
    Graph c(6, 8);
    onnx::NodeProto& n = c.resize({1, 1, 2, 2}, {});
    OnnxBuilder::attr(n, "mode", std::string("cubic"));
    OnnxBuilder::float_attr(n, "cubic_coeff_a", -0.5f);  // TensorFlow's
    c.finish();
    CHECK_THAT(import_error(c.g), Catch::Contains("cubic_coeff_a -0.500000 is not supported"));
  }
  Graph t(6, 8, 10);
  t.g.floats("scales", {4}, {1, 1, 2, 2});
  t.g.node("Resize", {"x", "scales"}, {"r"});
  t.finish();
  CHECK_THAT(import_error(t.g), Catch::Contains("Resize before opset 11 is not supported"));
}

}  // namespace dlt::test
