// Whole-network gradient checks: fused conv+relu, fused softmax+cross-entropy, DAG branches
// whose gradients are summed, and shape inference errors.
#include <catch2/catch.hpp>

#include "net/network.h"
#include "support/grad_check.h"
#include "util/error.h"

using namespace dlt;
using namespace dlt::test;

namespace {

NetworkSpec spec_of(std::vector<LayerSpec> layers) {
  NetworkSpec s;
  s.layers = std::move(layers);
  return s;
}

LayerSpec named(LayerSpec s, const std::string& name, std::vector<std::string> inputs = {}) {
  s.name = name;
  s.inputs = std::move(inputs);
  return s;
}

}  // namespace

TEST_CASE("network gradients: conv-bn-relu-pool-fc with fusions", "[net][grad]") {
  NetworkSpec s = spec_of({
      named(layer_spec("imageInput", {"InputSize=[6,6,2]", "Normalization=none"}), "in"),
      named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=3", "Padding=same"}), "conv1"),
      named(layer_spec("relu", {}), "relu1"),
      named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=4"}), "conv2"),
      named(layer_spec("batchNormalization", {}), "bn2"),
      named(layer_spec("relu", {}), "relu2"),
      named(layer_spec("maxPooling2d", {"PoolSize=2", "Stride=2"}), "pool"),
      named(layer_spec("fullyConnected", {"OutputSize=5"}), "fc1"),
      named(layer_spec("relu", {}), "relu3"),
      named(layer_spec("fullyConnected", {"OutputSize=3"}), "fc2"),
      named(layer_spec("softmax", {}), "sm"),
      named(layer_spec("classification", {}), "out"),
  });
  Network net(s, Device::cpu());
  CHECK(net.fused(2));  // relu1 into conv1
  CHECK(net.fused(5));  // relu2 into bn2
  CHECK(net.fused(8));  // relu3 into fc1
  GradCheckOptions o;
  o.batch = 4;
  o.samples = 12;
  o.step = 1e-3;
  auto r = check_network(s, o);
  INFO("worst " << r.worst << " error " << r.max_error << " kinks " << r.skipped_kinks);
  CHECK(r.checked > 60);
  CHECK(r.failed == 0);
}

TEST_CASE("network gradients: depthwise-separable blocks (grouped convs with fused ReLUs)", "[net][grad]") {
  NetworkSpec s = spec_of({
      named(layer_spec("imageInput", {"InputSize=[6,6,4]", "Normalization=none"}), "in"),
      named(layer_spec("groupedConvolution2d",
                       {"FilterSize=3", "NumFiltersPerGroup=1", "NumGroups=channel-wise", "Padding=same"}),
            "dw1"),
      named(layer_spec("relu", {}), "relu1"),
      named(layer_spec("convolution2d", {"FilterSize=1", "NumFilters=6"}), "pw1"),
      named(layer_spec("batchNormalization", {}), "bn1"),
      named(layer_spec("relu", {}), "relu2"),
      named(layer_spec("groupedConvolution2d",
                       {"FilterSize=3", "NumFiltersPerGroup=2", "NumGroups=3", "Stride=2", "Padding=1"}),
            "g2"),
      named(layer_spec("batchNormalization", {}), "bn2"),
      named(layer_spec("relu", {}), "relu3"),
      named(layer_spec("fullyConnected", {"OutputSize=3"}), "fc"),
      named(layer_spec("softmax", {}), "sm"),
      named(layer_spec("classification", {}), "out"),
  });
  Network net(s, Device::cpu());
  CHECK(net.fused(2));  // relu1 into dw1
  GradCheckOptions o;
  o.batch = 4;
  o.samples = 12;
  o.step = 1e-3;
  auto r = check_network(s, o);
  INFO("worst " << r.worst << " error " << r.max_error << " kinks " << r.skipped_kinks);
  CHECK(r.checked > 60);
  CHECK(r.failed == 0);
}

TEST_CASE("network gradients: a conv's fused ReLU backward handed to the max pooling it feeds", "[net][grad]") {
  // conv1 -> relu1 -> pool1 (overlapping, padded): pool1 applies relu1's backward. conv2's
  // ReLU output also feeds the addition, so conv2 keeps its own. bn's ReLU backward is inside
  // its op, so bn keeps it too.
  NetworkSpec s = spec_of({
      named(layer_spec("imageInput", {"InputSize=[9,9,2]", "Normalization=none"}), "in"),
      named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=4", "Padding=same"}), "conv1"),
      named(layer_spec("relu", {}), "relu1"),
      named(layer_spec("maxPooling2d", {"PoolSize=3", "Stride=2", "Padding=1"}), "pool1"),
      named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=4", "Padding=same"}), "conv2"),
      named(layer_spec("relu", {}), "relu2"),
      named(layer_spec("maxPooling2d", {"PoolSize=3", "Stride=1", "Padding=1"}), "pool2"),
      named(layer_spec("addition", {"NumInputs=2"}), "add", {"pool2", "relu2"}),
      named(layer_spec("batchNormalization", {}), "bn"),
      named(layer_spec("relu", {}), "relu3"),
      named(layer_spec("maxPooling2d", {"PoolSize=2", "Stride=2"}), "pool3"),
      named(layer_spec("fullyConnected", {"OutputSize=3"}), "fc"),
      named(layer_spec("softmax", {}), "sm"),
      named(layer_spec("classification", {}), "out"),
  });
  Network net(s, Device::cpu());
  CHECK(net.fused(2));
  CHECK(net.layer(1).fusion().relu_backward_handed_over);
  CHECK(net.layer(3).fusion().takes_relu_backward);
  CHECK(net.fused(5));
  CHECK_FALSE(net.layer(4).fusion().relu_backward_handed_over);
  CHECK_FALSE(net.layer(6).fusion().takes_relu_backward);
  CHECK(net.fused(9));
  CHECK_FALSE(net.layer(8).fusion().relu_backward_handed_over);
  CHECK_FALSE(net.layer(10).fusion().takes_relu_backward);
  GradCheckOptions o;
  o.batch = 3;
  o.samples = 16;
  o.step = 1e-3;
  auto r = check_network(s, o);
  INFO("worst " << r.worst << " error " << r.max_error << " kinks " << r.skipped_kinks);
  CHECK(r.checked > 60);
  CHECK(r.failed == 0);
}

TEST_CASE("network gradients: residual DAG with a shared branch point", "[net][grad]") {
  NetworkSpec s = spec_of({
      named(layer_spec("imageInput", {"InputSize=[5,5,3]", "Normalization=none"}), "in"),
      named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=4", "Padding=same"}), "stem"),
      named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=4", "Padding=same"}), "a", {"stem"}),
      named(layer_spec("leakyRelu", {"Scale=0.1"}), "act", {"a"}),
      named(layer_spec("addition", {}), "add", {"act", "stem"}),
      named(layer_spec("convolution2d", {"FilterSize=1", "NumFilters=2"}), "b", {"stem"}),
      named(layer_spec("depthConcatenation", {}), "cat", {"add", "b"}),
      named(layer_spec("globalAveragePooling2d", {}), "gap"),
      named(layer_spec("fullyConnected", {"OutputSize=3"}), "fc"),
      named(layer_spec("softmax", {}), "sm"),
      named(layer_spec("classification", {}), "out"),
  });
  GradCheckOptions o;
  o.batch = 3;
  o.samples = 16;
  o.step = 1e-3;
  auto r = check_network(s, o);
  INFO("worst " << r.worst << " error " << r.max_error);
  CHECK(r.checked > 60);
  CHECK(r.failed == 0);
}

TEST_CASE("network gradients: a layer naming the same input twice (x * x, x + x)", "[net][grad]") {
  // Each mention is an edge of its own: the gradient reaching "a" is the sum over both
  // mentions of each consumer (2 x dy for x + x, 2 x x dy for x * x) plus the third consumer's.
  NetworkSpec s = spec_of({
      named(layer_spec("imageInput", {"InputSize=[4,4,3]", "Normalization=none"}), "in"),
      named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=4", "Padding=same"}), "a"),
      named(layer_spec("multiplication", {}), "sq", {"a", "a"}),
      named(layer_spec("addition", {}), "twice", {"sq", "sq"}),
      named(layer_spec("addition", {}), "res", {"twice", "a"}),
      named(layer_spec("globalAveragePooling2d", {}), "gap"),
      named(layer_spec("fullyConnected", {"OutputSize=3"}), "fc"),
      named(layer_spec("softmax", {}), "sm"),
      named(layer_spec("classification", {}), "out"),
  });
  GradCheckOptions o;
  o.batch = 3;
  o.samples = 16;
  o.step = 1e-3;
  auto r = check_network(s, o);
  INFO("worst " << r.worst << " error " << r.max_error);
  CHECK(r.checked > 30);
  CHECK(r.failed == 0);
}

TEST_CASE("shape errors name the layer and the numbers", "[net]") {
  NetworkSpec s = spec_of({
      named(layer_spec("imageInput", {"InputSize=[3,3,64]"}), "in"),
      named(layer_spec("convolution2d", {"FilterSize=5", "NumFilters=8"}), "conv3"),
      named(layer_spec("fullyConnected", {"OutputSize=2"}), "fc"),
      named(layer_spec("softmax", {}), "sm"),
      named(layer_spec("classification", {}), "out"),
  });
  CHECK_THROWS_WITH(Network(s, Device::cpu()),
                    Catch::Contains("conv3: input is 3x3x64 but FilterSize is 5x5 with no padding"));
  s.layers[1] = named(layer_spec("convolution2d", {"FilterSize=5", "NumFilter=8"}), "conv3");
  CHECK_THROWS_WITH(Network(s, Device::cpu()), Catch::Contains("NumFilters is required"));
  s.layers[1] = named(layer_spec("convolution2d", {"FilterSize=5", "NumFilters=8", "Padding=2", "Strid=2"}), "conv3");
  CHECK_THROWS_WITH(Network(s, Device::cpu()), Catch::Contains("unknown option 'Strid' (did you mean 'Stride'?)"));
  s.layers[1] = named(layer_spec("convolution2d", {"FilterSize=5", "NumFilters=8", "Padding=2"}), "conv3");
  s.layers[3] = named(layer_spec("relu", {}), "sm");
  CHECK_THROWS_WITH(Network(s, Device::cpu()), Catch::Contains("must follow a softmax layer"));
}

TEST_CASE("groupedConvolution2d option errors name the layer and the numbers", "[net]") {
  NetworkSpec s = spec_of({
      named(layer_spec("imageInput", {"InputSize=[8,8,6]"}), "in"),
      named(layer_spec("groupedConvolution2d", {"FilterSize=3", "NumFiltersPerGroup=2", "NumGroups=4"}), "g1"),
      named(layer_spec("fullyConnected", {"OutputSize=2"}), "fc"),
      named(layer_spec("softmax", {}), "sm"),
      named(layer_spec("classification", {}), "out"),
  });
  auto error = [&s](std::vector<std::string> options) {
    s.layers[1] = named(layer_spec("groupedConvolution2d", std::move(options)), "g1");
    try {
      Network(s, Device::cpu());
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error({"FilterSize=3", "NumFiltersPerGroup=2", "NumGroups=4"}) ==
        "g1: NumGroups is 4 but the input has 6 channels, which 4 groups cannot split evenly (use a divisor of 6, "
        "or channel-wise)");
  CHECK(error({"FilterSize=3", "NumGroups=channel-wise"}) ==
        "layer 'g1' (groupedConvolution2d): option NumFiltersPerGroup is required (e.g. NumFiltersPerGroup: 1; with "
        "NumGroups: channel-wise it is the depth multiplier)");
  CHECK(error({"FilterSize=3", "NumFiltersPerGroup=0", "NumGroups=channel-wise"}) ==
        "layer 'g1' (groupedConvolution2d): option NumFiltersPerGroup must be an integer >= 1, got '0'");
  CHECK(error({"FilterSize=3", "NumFiltersPerGroup=1"}) ==
        "layer 'g1' (groupedConvolution2d): option NumGroups is required (a number of groups, or channel-wise for a "
        "depthwise convolution)");
  for (const char* bad : {"NumGroups=channelwise", "NumGroups=0", "NumGroups=[2,3]", "NumGroups=1.5"})
    CHECK_THAT(error({"FilterSize=3", "NumFiltersPerGroup=1", bad}),
               Catch::StartsWith("layer 'g1' (groupedConvolution2d): option NumGroups must be a whole number >= 1 "
                                 "or channel-wise, got '"));
  CHECK(error({"FilterSize=3", "NumFiltersPerGroup=1", "NumGroups=3", "NumChannelsPerGroup=3"}) ==
        "g1: NumChannelsPerGroup is 3 but the input's 6 channels in 3 groups give 2 per group");
  CHECK(error({"FilterSize=3", "NumFiltersPerGroup=1", "NumGroups=channel-wise", "NumFilters=6"}) ==
        "layer 'g1' (groupedConvolution2d): option NumFilters is convolution2d's: a groupedConvolution2d has "
        "NumFiltersPerGroup filters in each of its NumGroups groups (write NumFiltersPerGroup)");
  // Channel-wise with a depth multiplier: 6 groups of 2 filters, 12 output channels.
  CHECK(error({"FilterSize=3", "NumFiltersPerGroup=2", "NumGroups=channel-wise", "NumChannelsPerGroup=1"}) ==
        "no error");
}

TEST_CASE("memory footprint follows seed 001's getMemoryFootprint", "[net]") {
  NetworkSpec s = spec_of({
      named(layer_spec("imageInput", {"InputSize=[32,32,3]", "Normalization=zerocenter"}), "in"),
      named(layer_spec("convolution2d", {"FilterSize=5", "NumFilters=32", "Padding=2"}), "conv1"),
      named(layer_spec("relu", {}), "relu1"),
      named(layer_spec("maxPooling2d", {"PoolSize=3", "Stride=2"}), "pool1"),
      named(layer_spec("fullyConnected", {"OutputSize=10"}), "fc"),
      named(layer_spec("softmax", {}), "sm"),
      named(layer_spec("classification", {}), "out"),
  });
  Network net(s, Device::cpu());
  // conv: (5*5*3 + 1) * 32; fc: (15*15*32 + 1) * 10; mean image 32*32*3.
  int64_t learnables = (5 * 5 * 3 + 1) * 32 + (15 * 15 * 32 + 1) * 10;
  CHECK(net.total_learnables() == learnables);
  CHECK(net.memory_bytes() == 4 * (learnables + 32 * 32 * 3));
  CHECK(net.flops_per_image() == 2 * 32 * 5 * 5 * 3 * 32 * 32 + 2 * 15 * 15 * 32 * 10);
}

TEST_CASE("network gradients: per-pixel weighted loss with undefined pixels", "[net][grad]") {
  // A fully convolutional network: every pixel's scores feed pixelClassification, whose class
  // weights scale each pixel's loss and whose undefined pixels (-1) count nowhere.
  NetworkSpec s = spec_of({
      named(layer_spec("imageInput", {"InputSize=[5,6,2]", "Normalization=none"}), "in"),
      named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=4", "Padding=same"}), "conv1"),
      named(layer_spec("relu", {}), "relu1"),
      named(layer_spec("convolution2d", {"FilterSize=1", "NumFilters=3"}), "score"),
      named(layer_spec("softmax", {}), "sm"),
      named(layer_spec("pixelClassification", {"ClassWeights=[0.5,2,1.25]"}), "labels"),
  });
  Network net(s, Device::cpu());
  CHECK(net.per_pixel());
  CHECK(net.class_weights() == std::vector<float>{0.5f, 2.f, 1.25f});
  GradCheckOptions o;
  o.batch = 3;
  o.samples = 16;
  o.step = 1e-3;
  o.undefined_fraction = 0.3;
  auto r = check_network(s, o);
  INFO("worst " << r.worst << " error " << r.max_error << " kinks " << r.skipped_kinks);
  CHECK(r.checked > 30);
  CHECK(r.failed == 0);
}

TEST_CASE("pixelClassification: class weights and placement errors", "[net]") {
  auto net_with = [](const std::string& weights, const std::string& before) {
    return spec_of({
        named(layer_spec("imageInput", {"InputSize=[4,4,1]", "Normalization=none"}), "in"),
        named(layer_spec("convolution2d", {"FilterSize=1", "NumFilters=3"}), "score"),
        named(layer_spec(before, {}), "sm"),
        named(layer_spec("pixelClassification",
                         weights.empty() ? std::vector<std::string>{} : std::vector<std::string>{weights}),
              "labels"),
    });
  };
  CHECK_NOTHROW(Network(net_with("", "softmax"), Device::cpu()));
  CHECK_THROWS_WITH(Network(net_with("ClassWeights=[1,2]", "softmax"), Device::cpu()),
                    Catch::Contains("ClassWeights has 2 weights for 3 classes"));
  CHECK_THROWS_WITH(Network(net_with("ClassWeights=[1,-2,1]", "softmax"), Device::cpu()),
                    Catch::Contains("ClassWeights must be none, median-frequency or a list"));
  CHECK_THROWS_WITH(Network(net_with("", "relu"), Device::cpu()),
                    Catch::Contains("must follow a softmax layer, not relu"));
  Network mf(net_with("ClassWeights=median-frequency", "softmax"), Device::cpu());
  CHECK(mf.layer(3).loss_spec().median_frequency);
}

TEST_CASE("network gradients: max pooling with indices and max unpooling (SegNet)", "[net][grad]") {
  // Overlapping 3x3 stride-2 windows with padding: one input position can be the maximum of
  // several windows, and unpooling adds their values there.
  for (const std::vector<std::string>& pool : {std::vector<std::string>{"PoolSize=2", "Stride=2"},
                                               std::vector<std::string>{"PoolSize=3", "Stride=2", "Padding=1"}}) {
    std::vector<std::string> opts = pool;
    opts.push_back("HasUnpoolingOutputs=true");
    NetworkSpec s = spec_of({
        named(layer_spec("imageInput", {"InputSize=[6,8,2]", "Normalization=none"}), "in"),
        named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=3", "Padding=same"}), "conv1"),
        named(layer_spec("maxPooling2d", opts), "pool"),
        named(layer_spec("convolution2d", {"FilterSize=1", "NumFilters=3"}), "mid"),
        named(layer_spec("maxUnpooling2d", {"PoolingLayer=pool"}), "unpool"),
        named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=4", "Padding=same"}), "score"),
        named(layer_spec("softmax", {}), "sm"),
        named(layer_spec("pixelClassification", {}), "labels"),
    });
    Network net(s, Device::cpu());
    CHECK(net.output_shape(4) == Shape{6, 8, 3});
    GradCheckOptions o;
    o.batch = 2;
    o.samples = 16;
    o.step = 1e-3;
    auto r = check_network(s, o);
    INFO("pool " << pool[0] << ": worst " << r.worst << " error " << r.max_error << " kinks " << r.skipped_kinks);
    CHECK(r.checked > 40);
    CHECK(r.failed == 0);
  }
}

TEST_CASE("maxUnpooling2d: errors name both layers", "[net]") {
  auto with = [](std::vector<std::string> pool_opts, const std::string& target, const std::string& pool_type) {
    return spec_of({
        named(layer_spec("imageInput", {"InputSize=[4,4,1]", "Normalization=none"}), "in"),
        named(layer_spec(pool_type, pool_opts), "pool"),
        named(layer_spec("maxUnpooling2d", {"PoolingLayer=" + target}), "unpool"),
        named(layer_spec("convolution2d", {"FilterSize=1", "NumFilters=2"}), "score"),
        named(layer_spec("softmax", {}), "sm"),
        named(layer_spec("pixelClassification", {}), "labels"),
    });
  };
  CHECK_NOTHROW(
      Network(with({"PoolSize=2", "Stride=2", "HasUnpoolingOutputs=true"}, "pool", "maxPooling2d"), Device::cpu()));
  CHECK_THROWS_WITH(Network(with({"PoolSize=2", "Stride=2"}, "pool", "maxPooling2d"), Device::cpu()),
                    Catch::Contains("layer 'unpool' (maxUnpooling2d): PoolingLayer 'pool' (maxPooling2d) must be a "
                                    "maxPooling2d with HasUnpoolingOutputs: true"));
  CHECK_THROWS_WITH(Network(with({"PoolSize=2", "Stride=2"}, "pool", "averagePooling2d"), Device::cpu()),
                    Catch::Contains("(averagePooling2d) must be a maxPooling2d with HasUnpoolingOutputs: true"));
  CHECK_THROWS_WITH(
      Network(with({"PoolSize=2", "Stride=2", "HasUnpoolingOutputs=true"}, "pool1", "maxPooling2d"), Device::cpu()),
      Catch::Contains("PoolingLayer 'pool1' is not a layer above this one"));
}

TEST_CASE("network gradients: U-Net skip with transposedConv2d (stride 2, cropping) and crop2d", "[net][grad]") {
  // Encoder: conv -> pool 2x2/2 (3x4) -> conv; decoder: a 4x4 stride-2 up-convolution (8x10)
  // cropping [1 0 0 0] (7x10), center-cropped to the 6x8 skip (rows 0-5, columns 1-8) and
  // concatenated with it.
  NetworkSpec s = spec_of({
      named(layer_spec("imageInput", {"InputSize=[6,8,2]", "Normalization=none"}), "in"),
      named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=3", "Padding=same"}), "enc"),
      named(layer_spec("maxPooling2d", {"PoolSize=2", "Stride=2"}), "pool"),
      named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=4", "Padding=same"}), "mid"),
      named(layer_spec("transposedConv2d", {"FilterSize=4", "NumFilters=2", "Stride=2", "Cropping=[1,0,0,0]"}), "up"),
      named(layer_spec("crop2d", {}), "crop", {"up", "enc"}),
      named(layer_spec("depthConcatenation", {"NumInputs=2"}), "cat", {"enc", "crop"}),
      named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=3", "Padding=same"}), "score"),
      named(layer_spec("softmax", {}), "sm"),
      named(layer_spec("pixelClassification", {}), "labels"),
  });
  Network net(s, Device::cpu());
  CHECK(net.output_shape(4) == Shape{7, 10, 2});
  CHECK(net.output_shape(5) == Shape{6, 8, 2});
  GradCheckOptions o;
  o.batch = 2;
  o.samples = 16;
  o.step = 1e-3;
  auto r = check_network(s, o);
  INFO("worst " << r.worst << " error " << r.max_error << " kinks " << r.skipped_kinks);
  CHECK(r.checked > 60);
  CHECK(r.failed == 0);
}

TEST_CASE("crop2d: both inputs must be named", "[net]") {
  NetworkSpec s = spec_of({
      named(layer_spec("imageInput", {"InputSize=[6,6,2]", "Normalization=none"}), "in"),
      named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=2"}), "conv"),
      named(layer_spec("crop2d", {}), "crop"),
      named(layer_spec("softmax", {}), "sm"),
      named(layer_spec("pixelClassification", {}), "labels"),
  });
  CHECK_THROWS_WITH(Network(s, Device::cpu()),
                    Catch::Contains("layer 'crop' (crop2d) takes 2 input(s) but has 1 (list them with Inputs: "
                                    "[a, b])"));
  s.layers[2].inputs = {"in", "conv"};  // the 6x6 input cropped to conv's 4x4
  Network net(s, Device::cpu());
  CHECK(net.output_shape(2) == Shape{4, 4, 2});
}

TEST_CASE("network gradients: a squeeze-and-excitation block and layer normalization", "[net][grad]") {
  // feat -> globalAveragePooling -> conv 1x1 -> relu -> conv 1x1 = gate (1x1xC); multiplication
  // of gate and feat repeats the gate over H, W; feat gets gradients from both consumers.
  NetworkSpec s = spec_of({
      named(layer_spec("imageInput", {"InputSize=[5,5,2]", "Normalization=none"}), "in"),
      named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=4", "Padding=same"}), "conv1"),
      named(layer_spec("layerNormalization", {"OperationDimension=channel-only"}), "ln1"),
      named(layer_spec("relu", {}), "feat"),
      named(layer_spec("globalAveragePooling2d", {}), "gap"),
      named(layer_spec("convolution2d", {"FilterSize=1", "NumFilters=2"}), "squeeze"),
      named(layer_spec("relu", {}), "squeeze_relu"),
      named(layer_spec("convolution2d", {"FilterSize=1", "NumFilters=4"}), "gate"),
      named(layer_spec("multiplication", {}), "se", {"gate", "feat"}),
      named(layer_spec("layerNormalization", {}), "ln2"),
      named(layer_spec("fullyConnected", {"OutputSize=3"}), "fc"),
      named(layer_spec("softmax", {}), "sm"),
      named(layer_spec("classification", {}), "out"),
  });
  GradCheckOptions o;
  o.batch = 3;
  o.samples = 12;
  o.step = 1e-3;
  auto r = check_network(s, o);
  INFO("worst " << r.worst << " error " << r.max_error << " kinks " << r.skipped_kinks);
  CHECK(r.checked > 60);
  CHECK(r.failed == 0);
}

TEST_CASE("network gradients: a ShuffleNet v2 unit (channelSlice twice, concatenation, channelShuffle)",
          "[net][grad]") {
  // stem -> x1 = channels 1-3, x2 = channels 4-6 of the stem (both read it: its gradient is the
  // sum of two zero-padded ones) -> branch conv on x2 -> cat(x1, branch) -> shuffle in 2
  // groups -> global max pooling -> fc.
  NetworkSpec s = spec_of({
      named(layer_spec("imageInput", {"InputSize=[5,5,2]", "Normalization=none"}), "in"),
      named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=6", "Padding=same"}), "stem"),
      named(layer_spec("channelSlice", {"StartChannel=1", "NumChannels=3"}), "x1", {"stem"}),
      named(layer_spec("channelSlice", {"StartChannel=4", "NumChannels=3"}), "x2", {"stem"}),
      named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=3", "Padding=same"}), "branch"),
      named(layer_spec("depthConcatenation", {"NumInputs=2"}), "cat", {"x1", "branch"}),
      named(layer_spec("channelShuffle", {"NumGroups=2"}), "shuffle"),
      named(layer_spec("globalMaxPooling2d", {}), "gmp"),
      named(layer_spec("fullyConnected", {"OutputSize=3"}), "fc"),
      named(layer_spec("softmax", {}), "sm"),
      named(layer_spec("classification", {}), "out"),
  });
  Network net(s, Device::cpu());
  CHECK(net.output_shape(2) == Shape{5, 5, 3});
  CHECK(net.output_shape(7) == Shape{1, 1, 6});
  GradCheckOptions o;
  o.batch = 3;
  o.samples = 16;
  o.step = 1e-3;
  auto r = check_network(s, o);
  INFO("worst " << r.worst << " error " << r.max_error << " kinks " << r.skipped_kinks);
  CHECK(r.checked >= 60);
  CHECK(r.failed == 0);
}
