// MobileViT v2 through ONNX: separableAttention layers written in YAML (square and rectangular
// patches, after a 1x1 convolution as MobileViT v2's joint projection) export in the form timm's
// LinearSelfAttention takes between its unfold and fold, and read back as the same layers
// computing the same probabilities (onnx_test_graph.h's round_trip); timm's own MobileViT v2 (both
// exporters) imports with its separable attention as those layers. Its graphs edited to break the
// form are refused in one line (test_onnx_window.cpp's edited fixtures); the probabilities against
// onnxruntime are tests/cli/onnx_zoo_fixtures.sh's.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "config/config.h"
#include "onnx_test_graph.h"

namespace dlt::test {
namespace {

const char* kPatches = R"(
layers:
  - {type: imageInput, Name: input, InputSize: [4, 6, 3], Normalization: none}
  - {type: convolution2d, Name: qkv1, FilterSize: 1, NumFilters: 9}
  - {type: separableAttention, Name: sa1, PatchSize: 2}
  - {type: convolution2d, Name: proj1, FilterSize: 1, NumFilters: 5}
  - {type: separableAttention, Name: sa2, PatchSize: [1, 3]}
  - {type: globalAveragePooling2d, Name: gap}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
)";

}  // namespace

TEST_CASE("onnx patches: separableAttention exports and reads back as the same layers", "[onnx][vit]") {
  Network net(network_spec_from_yaml(kPatches, "mobilevitv2.yaml"), Device::cpu());
  net.init_params(5);
  const ModelData back = round_trip(net, 4 * 6 * 3);
  std::vector<std::vector<int64_t>> patches;
  for (const auto& l : back.network.layers)
    if (l.type == "separableAttention") patches.push_back(l.get_ints("PatchSize", {}, 2));
  CHECK(patches == std::vector<std::vector<int64_t>>{{2, 2}, {1, 3}});
}

TEST_CASE("onnx patches: timm's MobileViT v2 reads its separable attention as separableAttention layers",
          "[onnx][vit]") {
  for (const char* e : {"dynamo", "torchscript"}) {
    INFO(e);
    const ModelData m =
        import_onnx(std::string(DLT_SOURCE_DIR) + "/tests/data/onnx_zoo/mobilevitv2_timm-" + e + ".onnx", {});
    int attention = 0;
    for (const auto& l : m.network.layers)
      if (l.type == "separableAttention") {
        ++attention;
        CHECK(l.get_ints("PatchSize", {}, 2) == std::vector<int64_t>{2, 2});
      }
    CHECK(attention == 2);  // the fixture's two transformer layers
  }
}

}  // namespace dlt::test
