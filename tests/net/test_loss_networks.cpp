// Networks that end in the other losses (regression, multi-label, Dice, focal) or name their
// loss with training.Loss: the appended output layer, the checks of Loss against the layer,
// the task and responses a model keeps, and whole-network gradients against central
// differences through each loss.
#include <catch2/catch.hpp>

#include "config/config.h"
#include "net/model_file.h"
#include "net/network.h"
#include "support/grad_check.h"
#include "util/error.h"

using namespace dlt;
using namespace dlt::test;

namespace {

LayerSpec named(LayerSpec s, const std::string& name) {
  s.name = name;
  return s;
}

NetworkSpec head(const std::string& last_type, std::vector<std::string> last_options, int64_t outputs,
                 const std::string& activation = "") {
  NetworkSpec s;
  s.layers = {named(layer_spec("imageInput", {"InputSize=[4,4,2]", "Normalization=none"}), "in"),
              named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=3", "Padding=same"}), "conv"),
              named(layer_spec("tanh", {}), "act"),
              named(layer_spec("fullyConnected", {"OutputSize=" + std::to_string(outputs)}), "fc")};
  if (!activation.empty()) s.layers.push_back(named(layer_spec(activation, {}), activation));
  if (!last_type.empty()) s.layers.push_back(named(layer_spec(last_type, last_options), "out"));
  return s;
}

void expect_gradients(const NetworkSpec& s) {
  GradCheckOptions o;
  o.batch = 3;
  o.samples = 12;
  o.step = 1e-3;
  const GradCheckReport r = check_network(s, o);
  INFO("worst " << r.worst << " error " << r.max_error);
  CHECK(r.checked >= 15);  // every parameter tensor sampled (up to 12 elements each)
  CHECK(r.failed == 0);
}

}  // namespace

TEST_CASE("training.Loss appends the loss's output layer", "[net][loss]") {
  const std::string text = R"(layers:
  - {type: imageInput, Name: in, InputSize: [4, 4, 1], Normalization: none}
  - {type: fullyConnected, Name: fc, OutputSize: 2}
training:
  Loss: mse
)";
  const Config c = load_config_text(text, "loss.yaml");
  Network net(network_for_training(c), Device::cpu());
  REQUIRE(net.size() == 3);
  CHECK(net.layer(2).type() == "regression");
  CHECK(net.layer(2).name() == "output");
  CHECK(net.task() == "regression");
  CHECK(net.loss_kind() == LossKind::kMse);
  CHECK(net.float_targets());
  CHECK(net.output_width() == 2);
  // The model keeps the appended layer, the task and the responses.
  net.response_names() = {"x", "y"};
  net.set_response_statistics({1.5f, -2.f}, {2.f, 0.5f});
  const ModelData m = decode_model(encode_model(net.to_model_data()), "m.bin");
  CHECK(m.task == "regression");
  CHECK(m.responses.names == std::vector<std::string>{"x", "y"});
  CHECK(m.responses.mean == std::vector<float>{1.5f, -2.f});
  CHECK(m.responses.std == std::vector<float>{2.f, 0.5f});
  Network again(m, Device::cpu());
  CHECK(again.layer(2).type() == "regression");
  CHECK(again.response_std() == std::vector<float>{2.f, 0.5f});

  // Without Loss the network has no output layer: the error says how to name one.
  Config bare = load_config_text(text, "loss.yaml", {"training.Loss=none"});
  CHECK_THROWS_WITH(Network(network_for_training(bare), Device::cpu()),
                    Catch::Contains("must be an output layer") && Catch::Contains("training.Loss"));
  // huber and mae become the regression layer's LossFunction.
  Config huber = load_config_text(text, "loss.yaml", {"training.Loss=huber"});
  CHECK(Network(network_for_training(huber), Device::cpu()).loss_kind() == LossKind::kHuber);
  Config mae = load_config_text(text, "loss.yaml", {"training.Loss=mean-absolute-error"});
  CHECK(Network(network_for_training(mae), Device::cpu()).loss_kind() == LossKind::kMae);
}

TEST_CASE("training.Loss crossentropy after a per-pixel softmax is pixelClassification", "[net][loss]") {
  const std::string text = R"(layers:
  - {type: imageInput, Name: in, InputSize: [4, 4, 1], Normalization: none}
  - {type: convolution2d, Name: conv, FilterSize: 1, NumFilters: 3}
  - {type: softmax, Name: sm}
training:
  Loss: crossentropy
)";
  Network net(network_for_training(load_config_text(text, "seg.yaml")), Device::cpu());
  CHECK(net.layer(net.size() - 1).type() == "pixelClassification");
  CHECK(net.task() == "segmentation");
  CHECK(net.per_pixel());
}

TEST_CASE("training.Loss must name the output layer's loss", "[net][loss]") {
  const std::string text = R"(layers:
  - {type: imageInput, Name: in, InputSize: [4, 4, 1], Normalization: none}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
  - {type: softmax, Name: sm}
  - {type: classification, Name: out}
training:
  Loss: mse
)";
  const Config c = load_config_text(text, "mismatch.yaml");
  CHECK_THROWS_AS(Network(network_for_training(c), Device::cpu()), ConfigError);
  CHECK_THROWS_WITH(Network(network_for_training(c), Device::cpu()),
                    Catch::Contains("training.Loss is mse") && Catch::Contains("classification layer 'out'"));
  // The same loss as the layer's is fine.
  Config same = load_config_text(text, "mismatch.yaml", {"training.Loss=crossentropy"});
  CHECK(Network(network_for_training(same), Device::cpu()).task() == "classification");
  // A loss whose output layer needs another activation: multilabelClassification after softmax.
  Config bce = load_config_text(text, "mismatch.yaml", {"training.Loss=binary-crossentropy"});
  CHECK_THROWS_WITH(Network(network_for_training(bce), Device::cpu()), Catch::Contains("training.Loss"));
}

TEST_CASE("output layers of the other losses check what they follow", "[net][loss]") {
  CHECK_THROWS_WITH(Network(head("multilabelClassification", {}, 3, "softmax"), Device::cpu()),
                    Catch::Contains("must follow a sigmoid layer, not softmax"));
  CHECK_THROWS_WITH(Network(head("regression", {"LossFunction=mse", "TransitionPoint=2"}, 1), Device::cpu()),
                    Catch::Contains("TransitionPoint applies to LossFunction huber only"));
  CHECK_THROWS_WITH(Network(head("focalLoss", {"Gamma=-1"}, 3, "softmax"), Device::cpu()),
                    Catch::Contains("Gamma must be a number >= 0"));
  CHECK_THROWS_WITH(Network(head("regression", {"LossFunction=squared"}, 1), Device::cpu()),
                    Catch::Contains("LossFunction"));
}

TEST_CASE("network gradients through the regression losses", "[net][loss][grad]") {
  SECTION("mse") { expect_gradients(head("regression", {}, 2)); }
  SECTION("mae") { expect_gradients(head("regression", {"LossFunction=mae"}, 2)); }
  SECTION("huber") { expect_gradients(head("regression", {"LossFunction=huber", "TransitionPoint=0.5"}, 2)); }
}

TEST_CASE("network gradients through binary cross-entropy after a sigmoid", "[net][loss][grad]") {
  expect_gradients(head("multilabelClassification", {}, 4, "sigmoid"));
}

TEST_CASE("network gradients through focal cross-entropy, generalized Dice and Tversky", "[net][loss][grad]") {
  SECTION("focal per image") { expect_gradients(head("focalLoss", {"Gamma=2", "Alpha=0.5"}, 3, "softmax")); }
  SECTION("Dice per pixel") {
    NetworkSpec s;
    s.layers = {named(layer_spec("imageInput", {"InputSize=[4,4,2]", "Normalization=none"}), "in"),
                named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=3", "Padding=same"}), "conv"),
                named(layer_spec("softmax", {}), "sm"), named(layer_spec("dicePixelClassification", {}), "out")};
    expect_gradients(s);
  }
  SECTION("Tversky per pixel") {
    NetworkSpec s;
    s.layers = {named(layer_spec("imageInput", {"InputSize=[4,4,2]", "Normalization=none"}), "in"),
                named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=3", "Padding=same"}), "conv"),
                named(layer_spec("softmax", {}), "sm"),
                named(layer_spec("tverskyPixelClassification", {"Alpha=0.6", "Beta=0.8"}), "out")};
    expect_gradients(s);
  }
  SECTION("focal per pixel") {
    NetworkSpec s;
    s.layers = {named(layer_spec("imageInput", {"InputSize=[4,4,2]", "Normalization=none"}), "in"),
                named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=3", "Padding=same"}), "conv"),
                named(layer_spec("softmax", {}), "sm"), named(layer_spec("focalLoss", {}), "out")};
    expect_gradients(s);
  }
}
