// PReLU through ONNX: a YAML network with a shared and a per-channel prelu exports as PRelu
// (slope (1) and (C, 1, 1)) and reads back to the same probabilities; PRelu slopes dltrain does
// not hold are one line each. (Against PyTorch: the prelu fixtures of tests/data/onnx_zoo.)
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "config/config.h"
#include "onnx_test_graph.h"

namespace dlt::test {

TEST_CASE("onnx prelu: a YAML network exports as PRelu and reads back", "[onnx][prelu]") {
  const NetworkSpec spec = network_spec_from_yaml(R"(
layers:
  - {type: imageInput, Name: input, InputSize: [6, 5, 3], Normalization: none}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 4, Padding: same}
  - {type: prelu, Name: shared, Alpha: -0.3}
  - {type: convolution2d, Name: conv2, FilterSize: 3, NumFilters: 3, Padding: same}
  - {type: prelu, Name: each, Alpha: [0.2, -0.4, 0.6]}
  - {type: globalAveragePooling2d, Name: gap}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
  - {type: prelu, Name: flat, AlphaPerChannel: true, Alpha: 0.1}
  - {type: softmax, Name: sm}
  - {type: classification, Name: out}
)",
                                                  "prelu.yaml");
  Network net(spec, Device::cpu());
  net.init_params(3);
  ModelData m = net.to_model_data();
  m.classes = {"a", "b", "c"};
  TempDir dir;
  const std::string path = dir.file("prelu.onnx");
  export_onnx(m, path);
  const ModelData back = import_onnx(path, {});
  int prelus = 0;
  for (const auto& l : back.network.layers) prelus += l.type == "prelu" ? 1 : 0;
  CHECK(prelus == 3);
  std::vector<float> x(3 * 6 * 5 * 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.61f * static_cast<float>(i));
  const std::vector<float> p = probabilities(m, x, 3), q = probabilities(back, x, 3);
  REQUIRE(p.size() == q.size());
  for (size_t i = 0; i < p.size(); ++i) CHECK(std::fabs(p[i] - q[i]) < 1e-6);
  CHECK(std::fabs(p[0] - p[3]) + std::fabs(p[1] - p[4]) > 1e-4);  // the images are told apart
}

TEST_CASE("onnx prelu: slopes dltrain does not hold are one line", "[onnx][prelu]") {
  auto graph = [](const std::vector<int64_t>& dims, int64_t count) {
    OnnxBuilder b({1, 4, 2, 3}, 13);
    b.floats("slope", dims, std::vector<float>(static_cast<size_t>(count), 0.2f));
    b.node("PRelu", {"x", "slope"}, {"pr"});
    b.node("GlobalAveragePool", {"pr"}, {"p"});
    b.node("Flatten", {"p"}, {"f"});
    b.node("Softmax", {"f"}, {"prob"});
    b.output("prob");
    return b;
  };
  CHECK_THAT(import_error(graph({3, 1, 1}, 3)),
             Catch::Contains("node 'pr' (PRelu): its slope has 3 values for 4 channels; dltrain's prelu has one, or "
                             "one per channel"));
  CHECK_THAT(import_error(graph({4}, 4)), Catch::Contains("node 'pr' (PRelu): its slope of 4 values is repeated over "
                                                          "the image's rows, not its channels"));
  CHECK_THAT(import_error(graph({4, 2, 3}, 24)), Catch::Contains("its slope has 24 values for 4 channels"));
  CHECK(imported(graph({4, 1, 1}, 4)).network.layers.size() > 1);
  CHECK(imported(graph({1}, 1)).network.layers.size() > 1);
}

}  // namespace dlt::test
