// segnetLayers and unetLayers: expansion into MATLAB's layer lists (names, order, options),
// --set on generated layers, the resolved config, the built networks' shapes, and errors.
#include <catch2/catch.hpp>

#include "backend/loss.h"
#include "config/config.h"
#include "net/network.h"
#include "util/error.h"

using namespace dlt;

namespace {

std::vector<std::string> names(const NetworkSpec& net) {
  std::vector<std::string> out;
  for (const auto& l : net.layers) out.push_back(l.name);
  return out;
}

const LayerSpec& layer(const NetworkSpec& net, const std::string& name) {
  const LayerSpec* s = net.find(name);
  REQUIRE(s != nullptr);
  return *s;
}

}  // namespace

TEST_CASE("segnetLayers expands to MATLAB's encoder-decoder", "[config][generators]") {
  const std::string text = R"(layers:
  segnetLayers: {ImageSize: [32, 48, 3], NumClasses: 5, EncoderDepth: 2, NumOutputChannels: [8, 16]}
)";
  Config c = load_config_text(text, "seg.yaml");
  const std::vector<std::string> want = {
      "inputImage",      "encoder1_conv1",   "encoder1_bn_1",    "encoder1_relu_1", "encoder1_conv2",  "encoder1_bn_2",
      "encoder1_relu_2", "encoder1_maxpool", "encoder2_conv1",   "encoder2_bn_1",   "encoder2_relu_1", "encoder2_conv2",
      "encoder2_bn_2",   "encoder2_relu_2",  "encoder2_maxpool", "decoder2_unpool", "decoder2_conv2",  "decoder2_bn_2",
      "decoder2_relu_2", "decoder2_conv1",   "decoder2_bn_1",    "decoder2_relu_1", "decoder1_unpool", "decoder1_conv2",
      "decoder1_bn_2",   "decoder1_relu_2",  "decoder1_conv1",   "decoder1_bn_1",   "decoder1_relu_1", "softmax",
      "pixelLabels"};
  CHECK(names(c.network) == want);
  CHECK(layer(c.network, "encoder2_conv1").get_int("NumFilters", 0) == 16);
  CHECK(layer(c.network, "decoder2_conv2").get_int("NumFilters", 0) == 16);
  CHECK(layer(c.network, "decoder2_conv1").get_int("NumFilters", 0) == 8);  // the stage above's
  CHECK(layer(c.network, "decoder1_conv1").get_int("NumFilters", 0) == 5);  // NumClasses
  CHECK(layer(c.network, "decoder1_unpool").get_string("PoolingLayer", "") == "encoder1_maxpool");
  CHECK(layer(c.network, "encoder1_maxpool").get_bool("HasUnpoolingOutputs", false));
  CHECK(layer(c.network, "pixelLabels").type == "pixelClassification");

  SECTION("the network builds and outputs per-pixel scores at the input size") {
    Network net(c.network, Device::cpu());
    CHECK(net.per_pixel());
    CHECK(net.output_shape(net.size() - 1) == Shape{32, 48, 5});
  }
  SECTION("an odd size: pooling floors it, unpooling restores it (seed 003's 360x480, 5 stages)") {
    Config odd = load_config_text(text, "seg.yaml", {"layers.inputImage.InputSize=[30,46,3]"});
    Network net(odd.network, Device::cpu());
    CHECK(net.output_shape(net.size() - 1) == Shape{30, 46, 5});
  }
  SECTION("--set reaches a generated layer, and the resolved config lists the layers") {
    Config o = load_config_text(text, "seg.yaml", {"layers.decoder1_conv2.NumFilters=12"});
    CHECK(layer(o.network, "decoder1_conv2").get_int("NumFilters", 0) == 12);
    const std::string dumped = dump_config(o);
    CHECK(dumped.find("decoder1_unpool") != std::string::npos);
    CHECK(dumped.find("segnetLayers") == std::string::npos);
    Config back = load_config_text(dumped, "resolved.yaml");
    CHECK(names(back.network) == names(o.network));
  }
}

TEST_CASE("segnetLayers options: per-stage lists, ClassWeights, and errors", "[config][generators]") {
  Config c = load_config_text(R"(layers:
  segnetLayers:
    ImageSize: [16, 16]
    NumClasses: 3
    EncoderDepth: 3
    NumConvolutionLayers: [1, 2, 3]
    NumOutputChannels: 4
    ClassWeights: [1, 2, 0.5]
)",
                              "seg.yaml");
  CHECK(layer(c.network, "inputImage").get_ints("InputSize", {}, 3) == std::vector<int64_t>{16, 16, 1});
  CHECK(c.network.find("encoder1_conv2") == nullptr);
  CHECK(c.network.find("encoder3_conv3") != nullptr);
  CHECK(layer(c.network, "pixelLabels").get_doubles("ClassWeights", {}) == std::vector<double>{1, 2, 0.5});

  auto fails = [](const std::string& options) {
    return load_config_text("layers:\n  segnetLayers: {" + options + "}\n", "bad.yaml");
  };
  CHECK_THROWS_WITH(fails("ImageSize: [30, 3, 3], NumClasses: 3, EncoderDepth: 2"),
                    Catch::Contains("bad.yaml:2: segnetLayers: ImageSize must be at least 2^EncoderDepth = 4 high "
                                    "and wide"));
  CHECK_THROWS_WITH(fails("ImageSize: [32, 32, 3], NumClasses: 3"), Catch::Contains("segnetLayers needs EncoderDepth"));
  CHECK_THROWS_WITH(fails("ImageSize: [32, 32, 3], NumClasses: 3, EncoderDepth: 2, NumConvolutionLayer: 2"),
                    Catch::Contains("unknown option 'NumConvolutionLayer' (did you mean 'NumConvolutionLayers'?)"));
  CHECK_THROWS_WITH(fails("ImageSize: [32, 32, 3], NumClasses: 3, EncoderDepth: 2, NumOutputChannels: [8, 8, 8]"),
                    Catch::Contains("NumOutputChannels must be one integer or one per encoder stage (2)"));
  CHECK_THROWS_WITH(load_config_text("layers:\n  segnetLayer: {NumClasses: 3}\n", "bad.yaml"),
                    Catch::Contains("bad.yaml:2: layers: unknown network generator 'segnetLayer' (did you mean "
                                    "'segnetLayers'?)"));
}

TEST_CASE("segnetLayers and unetLayers end in training.Loss's output layer", "[config][generators]") {
  const std::string seg = R"(layers:
  segnetLayers: {ImageSize: [16, 16, 3], NumClasses: 3, EncoderDepth: 2, NumOutputChannels: 4}
)";
  auto output = [](const Config& c) { return c.network.layers.back(); };
  // No Loss: pixelClassification, as before.
  CHECK(output(load_config_text(seg, "seg.yaml")).type == "pixelClassification");
  CHECK(output(load_config_text(seg + "training: {Loss: crossentropy}\n", "seg.yaml")).type == "pixelClassification");

  // The file's Loss, or --set's (applied before the generator expands).
  for (const Config& c : {load_config_text(seg + "training: {Loss: generalized-dice}\n", "seg.yaml"),
                          load_config_text(seg, "seg.yaml", {"training.Loss=generalized-dice"})}) {
    CHECK(output(c).type == "dicePixelClassification");
    CHECK(output(c).name == "pixelLabels");
    Network net(network_for_training(c), Device::cpu());
    CHECK(net.loss_kind() == LossKind::kGeneralizedDice);
    CHECK(net.per_pixel());
    CHECK(net.task() == "segmentation");
  }
  // --set on the generated output layer still reaches it.
  Config focal = load_config_text(seg, "seg.yaml", {"layers.pixelLabels.Gamma=3", "training.Loss=focal-crossentropy"});
  CHECK(output(focal).type == "focalLoss");
  CHECK(output(focal).get_double("Gamma", 0) == 3);
  CHECK(Network(network_for_training(focal), Device::cpu()).loss_kind() == LossKind::kFocalCrossEntropy);
  Config tversky = load_config_text(seg, "seg.yaml", {"layers.pixelLabels.Beta=0.9", "training.Loss=tversky"});
  CHECK(output(tversky).type == "tverskyPixelClassification");
  CHECK(output(tversky).get_double("Beta", 0) == 0.9);
  const Network tnet(network_for_training(tversky), Device::cpu());
  CHECK(tnet.loss_kind() == LossKind::kTversky);
  CHECK(tnet.task() == "segmentation");
  const Config negative = load_config_text(seg, "seg.yaml", {"layers.pixelLabels.Alpha=-1", "training.Loss=tversky"});
  CHECK_THROWS_WITH(Network(network_for_training(negative), Device::cpu()),
                    Catch::Contains("Alpha must be a number >= 0, got -1"));
  // The resolved config loads back to the same network.
  Config dice = load_config_text(seg, "seg.yaml", {"training.Loss=generalized-dice"});
  Config back = load_config_text(dump_config(dice), "resolved.yaml");
  CHECK(output(back).type == "dicePixelClassification");

  const std::string weighted = R"(layers:
  segnetLayers:
    ImageSize: [16, 16, 3]
    NumClasses: 3
    EncoderDepth: 2
    ClassWeights: median-frequency
)";
  CHECK(output(load_config_text(weighted, "w.yaml", {"training.Loss=crossentropy"})).get_string("ClassWeights", "") ==
        "median-frequency");
  CHECK_THROWS_WITH(load_config_text(weighted + "training:\n  Loss: generalized-dice\n", "w.yaml"),
                    Catch::Contains("w.yaml:6: segnetLayers: ClassWeights 'median-frequency' applies to the "
                                    "pixelClassification output (training.Loss none or crossentropy); with Loss "
                                    "generalized-dice the network ends in dicePixelClassification, which takes no "
                                    "class weights") &&
                        Catch::Contains("remove ClassWeights"));
  CHECK_THROWS_WITH(load_config_text(weighted, "w.yaml", {"training.Loss=focal-crossentropy"}),
                    Catch::Contains("ClassWeights 'median-frequency'") && Catch::Contains("ends in focalLoss"));
  CHECK_THROWS_WITH(load_config_text(weighted, "w.yaml", {"training.Loss=tversky"}),
                    Catch::Contains("ends in tverskyPixelClassification") && Catch::Contains("Alpha and Beta"));
  std::string unweighted = weighted;
  unweighted.replace(unweighted.find("median-frequency"), 16, "none");
  CHECK(output(load_config_text(unweighted, "w.yaml", {"training.Loss=generalized-dice"})).type ==
        "dicePixelClassification");
  CHECK_THROWS_WITH(load_config_text(seg + "training:\n  Loss: mse\n", "seg.yaml"),
                    Catch::Contains("seg.yaml:4: training.Loss mse is not a per-pixel loss, and segnetLayers ends in "
                                    "a per-pixel output layer"));

  Config unet = load_config_text("layers:\n  unetLayers: {ImageSize: [16, 16], NumClasses: 2, EncoderDepth: 1}\n",
                                 "unet.yaml", {"training.Loss=generalized-dice"});
  CHECK(output(unet).type == "dicePixelClassification");
  CHECK(output(unet).name == "Segmentation-Layer");
  CHECK(Network(network_for_training(unet), Device::cpu()).loss_kind() == LossKind::kGeneralizedDice);
}

TEST_CASE("unetLayers expands to MATLAB's U-Net (names, channels, skips) and builds", "[config][generators]") {
  const std::string text = R"(layers:
  unetLayers: {ImageSize: [32, 48, 3], NumClasses: 5, EncoderDepth: 2, NumFirstEncoderFilters: 4}
)";
  Config c = load_config_text(text, "unet.yaml");
  const std::vector<std::string> want = {"ImageInputLayer",
                                         "Encoder-Stage-1-Conv-1",
                                         "Encoder-Stage-1-ReLU-1",
                                         "Encoder-Stage-1-Conv-2",
                                         "Encoder-Stage-1-ReLU-2",
                                         "Encoder-Stage-1-MaxPool",
                                         "Encoder-Stage-2-Conv-1",
                                         "Encoder-Stage-2-ReLU-1",
                                         "Encoder-Stage-2-Conv-2",
                                         "Encoder-Stage-2-ReLU-2",
                                         "Encoder-Stage-2-DropOut",
                                         "Encoder-Stage-2-MaxPool",
                                         "Bridge-Conv-1",
                                         "Bridge-ReLU-1",
                                         "Bridge-Conv-2",
                                         "Bridge-ReLU-2",
                                         "Bridge-DropOut",
                                         "Decoder-Stage-1-UpConv",
                                         "Decoder-Stage-1-UpReLU",
                                         "Decoder-Stage-1-DepthConcatenation",
                                         "Decoder-Stage-1-Conv-1",
                                         "Decoder-Stage-1-ReLU-1",
                                         "Decoder-Stage-1-Conv-2",
                                         "Decoder-Stage-1-ReLU-2",
                                         "Decoder-Stage-2-UpConv",
                                         "Decoder-Stage-2-UpReLU",
                                         "Decoder-Stage-2-DepthConcatenation",
                                         "Decoder-Stage-2-Conv-1",
                                         "Decoder-Stage-2-ReLU-1",
                                         "Decoder-Stage-2-Conv-2",
                                         "Decoder-Stage-2-ReLU-2",
                                         "Final-ConvolutionLayer",
                                         "Softmax-Layer",
                                         "Segmentation-Layer"};
  CHECK(names(c.network) == want);
  CHECK(layer(c.network, "Encoder-Stage-2-Conv-1").get_int("NumFilters", 0) == 8);
  CHECK(layer(c.network, "Bridge-Conv-2").get_int("NumFilters", 0) == 16);
  CHECK(layer(c.network, "Decoder-Stage-1-UpConv").type == "transposedConv2d");
  CHECK(layer(c.network, "Decoder-Stage-1-UpConv").get_int("NumFilters", 0) == 8);
  CHECK(layer(c.network, "Decoder-Stage-2-Conv-2").get_int("NumFilters", 0) == 4);
  CHECK(layer(c.network, "Final-ConvolutionLayer").get_int("NumFilters", 0) == 5);
  CHECK(layer(c.network, "Decoder-Stage-1-DepthConcatenation").inputs ==
        std::vector<std::string>{"Decoder-Stage-1-UpReLU", "Encoder-Stage-2-ReLU-2"});
  CHECK(layer(c.network, "Decoder-Stage-2-DepthConcatenation").inputs ==
        std::vector<std::string>{"Decoder-Stage-2-UpReLU", "Encoder-Stage-1-ReLU-2"});

  Network net(c.network, Device::cpu());
  CHECK(net.per_pixel());
  CHECK(net.output_shape(net.size() - 1) == Shape{32, 48, 5});
  auto shape_of = [&](const std::string& name) {
    for (size_t i = 0; i < net.size(); ++i)
      if (net.layer(i).name() == name) return net.output_shape(i);
    FAIL("no layer " << name);
    return Shape{};
  };
  CHECK(shape_of("Bridge-ReLU-2") == Shape{8, 12, 16});
  CHECK(shape_of("Decoder-Stage-1-UpConv") == Shape{16, 24, 8});
  CHECK(shape_of("Decoder-Stage-1-DepthConcatenation") == Shape{16, 24, 16});
  CHECK(shape_of("Decoder-Stage-2-DepthConcatenation") == Shape{32, 48, 8});

  SECTION("MATLAB's defaults: EncoderDepth 4, 32 first filters (46 + 12 layers for depth 4)") {
    Config d = load_config_text("layers:\n  unetLayers: {ImageSize: [64, 64], NumClasses: 2}\n", "unet.yaml");
    // MATLAB: 46 layers for EncoderDepth 3, 12 more per stage.
    CHECK(d.network.layers.size() == 58);
    CHECK(layer(d.network, "Encoder-Stage-1-Conv-1").get_int("NumFilters", 0) == 32);
    CHECK(layer(d.network, "Bridge-Conv-1").get_int("NumFilters", 0) == 512);
    CHECK(layer(d.network, "Encoder-Stage-4-DropOut").type == "dropout");
  }
  SECTION("errors") {
    auto fails = [](const std::string& options) {
      return load_config_text("layers:\n  unetLayers: {" + options + "}\n", "bad.yaml");
    };
    CHECK_THROWS_WITH(fails("ImageSize: [36, 48, 3], NumClasses: 3, EncoderDepth: 3"),
                      Catch::Contains("bad.yaml:2: unetLayers: ImageSize must be a multiple of 2^EncoderDepth = 8"));
    CHECK_THROWS_WITH(fails("ImageSize: [32, 32, 3], NumClasses: 3, ConvolutionPadding: valid"),
                      Catch::Contains("unetLayers: ConvolutionPadding must be one of same"));
    CHECK_THROWS_WITH(fails("ImageSize: [32, 32, 3], NumClasses: 3, NumFirstEncoderFilter: 8"),
                      Catch::Contains("unknown option 'NumFirstEncoderFilter' (did you mean "
                                      "'NumFirstEncoderFilters'?)"));
    CHECK_THROWS_WITH(fails("ImageSize: [32, 32, 3]"), Catch::Contains("unetLayers needs NumClasses"));
  }
}

namespace dlt {
TEST_CASE("segnetLayers: NumConvolutionLayers above 64 is one line, not a network of thousands of layers",
          "[config][generators]") {
  // (fuzz_config's input segnet-1921-convolutions-timeout took minutes to expand.)
  CHECK_THROWS_WITH(load_config_text(R"(layers:
  segnetLayers: {ImageSize: [16, 16, 3], NumClasses: 3, EncoderDepth: 1, NumConvolutionLayers: 1921}
)",
                                     "seg.yaml"),
                    Catch::Contains("seg.yaml:2: segnetLayers: NumConvolutionLayers must be at most 64"));
}
}  // namespace dlt
