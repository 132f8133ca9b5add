// base: Replace (MATLAB's replaceLayer): the layers: entry of a replaced layer's Name takes its
// place among the kept layers, with that layer's inputs and fresh weights; every other kept
// layer keeps its trained tensors; the resolved config reloads to the same network; a name
// that is no kept layer, a replacement missing from layers:, the input layer and a name clash
// are one line each.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "config/config.h"
#include "config/config_test_util.h"
#include "net/model_file.h"
#include "net/network.h"
#include "onnx/transfer.h"

namespace dlt::test {
namespace {

// A branching base: two convolutions read the input, an addition joins them, then fc.
const char* kBase = R"(
layers:
  - {type: imageInput, Name: input, InputSize: [6, 6, 2], Normalization: none}
  - {type: convolution2d, Name: left, FilterSize: 3, NumFilters: 4, Padding: same}
  - {type: convolution2d, Name: right, FilterSize: 1, NumFilters: 4, Inputs: [input]}
  - {type: addition, Name: add, Inputs: [left, right]}
  - {type: relu, Name: relu}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
  - {type: softmax, Name: prob}
  - {type: classification, Name: output}
)";

std::string base_model(const TempDir& dir) {
  Network net(network_spec_from_yaml(kBase, "base.yaml"), Device::cpu());
  net.init_params(7);
  ModelData m = net.to_model_data();
  m.classes = {"a", "b", "c"};
  const std::string path = dir.file("base.bin");
  save_model(path, m);
  return path;
}

const NamedTensor* tensor(const ModelData& m, const std::string& layer, const std::string& name) {
  for (const NamedTensor& t : m.params)
    if (t.layer == layer && t.name == name) return &t;
  return nullptr;
}

std::string config_text(const std::string& model, const std::string& base_extra, const std::string& layers) {
  return "base: {Model: " + model + base_extra + "}\nlayers:\n" + layers +
         "training: {MaxEpochs: 1, ExecutionEnvironment: cpu}\n";
}

std::string transfer_error(const std::string& text) {
  try {
    Config c = load_config_text(text, "cfg.yaml");
    apply_transfer(c);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("base: Replace puts a new layer in a kept layer's place", "[transfer]") {
  TempDir dir;
  const std::string model = base_model(dir);
  const ModelData original = load_model(model);
  Config c = load_config_text(
      config_text(model, ", RemoveLast: 2, Replace: [right, fc]",
                  "  - {type: fullyConnected, Name: fc, OutputSize: 5}\n"
                  "  - {type: convolution2d, Name: right, FilterSize: 3, NumFilters: 4, Padding: same}\n"
                  "  - {type: softmax, Name: prob2}\n"
                  "  - {type: classification, Name: output2}\n"),
      "cfg.yaml");
  apply_transfer(c);
  const auto& layers = c.network.layers;
  REQUIRE(layers.size() == 8);  // 6 base layers, then the appended softmax and output
  CHECK(c.base.kept == 6);
  CHECK(layers[2].name == "right");
  CHECK(layers[2].get_ints("FilterSize", {}, 2) == std::vector<int64_t>{3, 3});
  CHECK(layers[2].inputs == std::vector<std::string>{"input"});  // the replaced layer's input
  CHECK(layers[5].name == "fc");
  CHECK(layers[5].get_int("OutputSize", 0) == 5);
  CHECK(layers[6].name == "prob2");
  CHECK(layers[7].name == "output2");
  // Only the layers kept as they were bring their tensors.
  const ModelData& w = *c.base.weights;
  CHECK(tensor(w, "left", "Weights") != nullptr);
  CHECK(tensor(w, "right", "Weights") == nullptr);
  CHECK(tensor(w, "fc", "Weights") == nullptr);

  Network net(c.network, Device::cpu());
  net.init_params(1);
  CHECK(apply_base_weights(net, w) == 2);  // left's Weights and Bias
  const ModelData tuned = net.to_model_data();
  CHECK(tensor(tuned, "left", "Weights")->data == tensor(original, "left", "Weights")->data);
  CHECK(tensor(tuned, "fc", "Weights")->shape == Shape{5, 6 * 6 * 4});
  CHECK(tensor(tuned, "right", "Weights")->shape == Shape{4, 3, 3, 2});

  // The resolved config loads back to the same network.
  Config again = load_config_text(dump_config(c), "resolved.yaml");
  CHECK(again.base.replace == std::vector<std::string>{"right", "fc"});
  apply_transfer(again);
  REQUIRE(again.network.layers.size() == layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    CHECK(again.network.layers[i].name == layers[i].name);
    CHECK(again.network.layers[i].type == layers[i].type);
    CHECK(again.network.layers[i].inputs == layers[i].inputs);
  }
  CHECK(again.network.layers[5].get_int("OutputSize", 0) == 5);
}

TEST_CASE("base: Replace with FreezeUntil leaves the replacement trainable", "[transfer]") {
  TempDir dir;
  const std::string model = base_model(dir);
  Config c = load_config_text(
      config_text(model, ", FreezeUntil: relu, Replace: right",
                  "  - {type: convolution2d, Name: right, FilterSize: 1, NumFilters: 4, Inputs: [input]}\n"),
      "cfg.yaml");
  apply_transfer(c);
  CHECK(c.network.layers[1].get_string("WeightLearnRateFactor", "") == "0");
  CHECK(c.network.layers[2].get("WeightLearnRateFactor") == nullptr);
}

TEST_CASE("base: Replace errors are one line naming the layer", "[transfer]") {
  TempDir dir;
  const std::string model = base_model(dir);
  const std::string conv = "  - {type: convolution2d, Name: right, FilterSize: 1, NumFilters: 4}\n";
  CHECK_THAT(transfer_error(config_text(model, ", Replace: rigth", conv)),
             Catch::Contains("Replace names 'rigth', which is not a layer of the base model (did you mean 'right'?)"));
  CHECK_THAT(transfer_error(config_text(model, ", Replace: [right, fc]", conv)),
             Catch::Contains("Replace names 'fc' but layers: has no layer with Name: fc"));
  CHECK_THAT(transfer_error(config_text(model, ", Replace: input", conv)),
             Catch::Contains("Replace names 'input', the input layer"));
  CHECK_THAT(transfer_error(config_text(model, ", RemoveLast: 5, Replace: fc", conv)),
             Catch::Contains("Replace names 'fc', which is not a layer of the base model"));
  CHECK_THAT(transfer_error(config_text(model, "", conv)),
             Catch::Contains("layer 'right' has the name of a kept base layer (give it another Name, or list it in "
                             "base: Replace"));
  CHECK_THAT(transfer_error(config_text(model, ", Replace: [right, right]", conv)),
             Catch::Contains("base: Replace names 'right' twice"));
  CHECK_THAT(transfer_error(config_text(model, ", Replace: [{a: 1}]", conv)),
             Catch::Contains("base: Replace must be a layer name or a list of layer names"));
  CHECK_THAT(transfer_error(config_text(model, ", Replace: []", conv)),
             Catch::Contains("base: Replace needs at least one layer name"));
}

TEST_CASE("base: layers: entries may read the base model's layers by Inputs", "[transfer]") {
  TempDir dir;
  const std::string model = base_model(dir);
  // A second head on the left branch, added to the first: Inputs name kept layers.
  Config c = load_config_text(config_text(model, ", RemoveLast: 3",
                                          "  - {type: fullyConnected, Name: fc_a, OutputSize: 3}\n"
                                          "  - {type: fullyConnected, Name: fc_b, OutputSize: 3, Inputs: [left]}\n"
                                          "  - {type: addition, Name: sum, Inputs: [fc_a, fc_b]}\n"
                                          "  - {type: softmax}\n  - {type: classification}\n"),
                              "cfg.yaml");
  apply_transfer(c);
  Network net(c.network, Device::cpu());
  CHECK(net.output_shape(net.size() - 1) == Shape{1, 1, 3});
  // A name that is neither: the built network says so, at the entry's line.
  Config bad = load_config_text(
      config_text(model, ", RemoveLast: 3", "  - {type: fullyConnected, Name: fc_b, OutputSize: 3, Inputs: [lfet]}\n"),
      "cfg.yaml");
  apply_transfer(bad);
  try {
    Network wrong(bad.network, Device::cpu());
    FAIL("a missing input was accepted");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("cfg.yaml:3:"));
    CHECK_THAT(e.what(), Catch::Contains("Inputs names 'lfet', which is not an earlier layer (did you mean 'left'?)"));
  }
}

}  // namespace dlt::test
