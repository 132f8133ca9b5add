// EfficientViT through ONNX: linearAttention layers written in YAML (after EfficientViT's joint
// projection and multi-scale aggregation) export in timm's LiteMLA form and read back as the same
// layers computing the same probabilities (onnx_test_graph.h's round_trip); timm's own EfficientViT
// (both exporters) imports with its ReLU linear attention as those layers. Its graphs edited to
// break the form are refused in one line (test_onnx_window.cpp's edited fixtures); the
// probabilities against onnxruntime are tests/cli/onnx_zoo_fixtures.sh's.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "config/config.h"
#include "onnx_test_graph.h"

namespace dlt::test {

TEST_CASE("onnx linear attention: linearAttention exports and reads back as the same layer", "[onnx][vit]") {
  const std::string file = std::string(DLT_SOURCE_DIR) + "/tests/data/vit/efficientvit.yaml";
  NetworkSpec spec = load_config(file).network;
  for (LayerSpec& l : spec.layers)
    if (l.type == "linearAttention") l.set("Epsilon", "0.125");  // read back from the Add
  Network net(spec, Device::cpu());
  net.init_params(3);
  const ModelData back = round_trip(net, 8 * 8 * 3);
  const LayerSpec* attn = layer_of_type(back, "linearAttention");
  REQUIRE(attn);
  CHECK(attn->get_int("NumHeads", 0) == 4);
  CHECK(attn->get_double("Epsilon", 0) == Approx(0.125));
}

TEST_CASE("onnx linear attention: timm's EfficientViT reads its LiteMLA as linearAttention layers", "[onnx][vit]") {
  for (const char* e : {"dynamo", "torchscript"}) {
    INFO(e);
    const ModelData m =
        import_onnx(std::string(DLT_SOURCE_DIR) + "/tests/data/onnx_zoo/efficientvit_timm-" + e + ".onnx", {});
    int attention = 0;
    for (const auto& l : m.network.layers)
      if (l.type == "linearAttention") {
        ++attention;
        CHECK(l.get_int("NumHeads", 0) == 8);  // 4 heads of 8 channels, and as many of the aggregation's
        CHECK(l.get_double("Epsilon", 0) == Approx(1e-5));
      }
    CHECK(attention == 2);  // the fixture's two EfficientViT blocks
  }
}

}  // namespace dlt::test
