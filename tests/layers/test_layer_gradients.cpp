// Numerical gradient checks of every layer type: inputs and parameters, central differences
// in double precision against the analytical backward (tests/support/grad_check.h).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "config/config.h"
#include "layers/layer.h"
#include "support/grad_check.h"
#include "support/tensor_utils.h"
#include "util/error.h"

using namespace dlt;
using namespace dlt::test;

namespace {

void expect_ok(const GradCheckReport& r, int min_checked = 10) {
  INFO("checked " << r.checked << ", failed " << r.failed << ", kinks skipped " << r.skipped_kinks << ", worst "
                  << r.worst << " (error " << r.max_error << ")");
  CHECK(r.checked >= min_checked);
  CHECK(r.failed == 0);
}

// The network of tests/data/vit/<name>.yaml: 2 images, 12 sampled values per learnable, step 1e-3.
void expect_vit_network_ok(const std::string& name, int min_checked = 10) {
  const NetworkSpec spec = load_config(std::string(DLT_SOURCE_DIR) + "/tests/data/vit/" + name + ".yaml").network;
  GradCheckOptions o;
  o.batch = 2;
  o.samples = 12;
  o.step = 1e-3;
  expect_ok(check_network(spec, o), min_checked);
}

}  // namespace

TEST_CASE("gradients: convolution2d", "[layers][grad]") {
  GradCheckOptions o;
  SECTION("3x3, padding 1") {
    expect_ok(
        check_layer(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=4", "Padding=1"}), {Shape{5, 5, 3}}, o));
  }
  SECTION("stride 2, asymmetric padding, non-square filter") {
    expect_ok(
        check_layer(layer_spec("convolution2d", {"FilterSize=[3,2]", "NumFilters=3", "Stride=2", "Padding=[1,0,0,1]"}),
                    {Shape{7, 6, 2}}, o));
  }
  SECTION("dilation 2, padding same") {
    expect_ok(
        check_layer(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=2", "DilationFactor=2", "Padding=same"}),
                    {Shape{6, 6, 3}}, o));
  }
}

TEST_CASE("gradients: groupedConvolution2d", "[layers][grad]") {
  GradCheckOptions o;
  SECTION("2 groups of 3 filters, padding 1") {
    expect_ok(check_layer(
        layer_spec("groupedConvolution2d", {"FilterSize=3", "NumFiltersPerGroup=3", "NumGroups=2", "Padding=1"}),
        {Shape{5, 5, 4}}, o));
  }
  SECTION("depthwise (channel-wise), stride 2, padding same") {
    expect_ok(check_layer(layer_spec("groupedConvolution2d", {"FilterSize=3", "NumFiltersPerGroup=1",
                                                              "NumGroups=channel-wise", "Stride=2", "Padding=same"}),
                          {Shape{7, 6, 5}}, o));
  }
  SECTION("depth multiplier 2, non-square filter, dilation 2") {
    expect_ok(check_layer(
        layer_spec("groupedConvolution2d", {"FilterSize=[3,2]", "NumFiltersPerGroup=2", "NumGroups=channel-wise",
                                            "DilationFactor=2", "Padding=[2,2,1,1]"}),
        {Shape{6, 5, 3}}, o));
  }
  SECTION("1x1, 3 groups") {
    expect_ok(check_layer(layer_spec("groupedConvolution2d", {"FilterSize=1", "NumFiltersPerGroup=2", "NumGroups=3"}),
                          {Shape{4, 3, 6}}, o));
  }
}

TEST_CASE("gradients: transposedConv2d", "[layers][grad]") {
  GradCheckOptions o;
  SECTION("2x2 stride 2 (U-Net's up-convolution)") {
    expect_ok(
        check_layer(layer_spec("transposedConv2d", {"FilterSize=2", "NumFilters=3", "Stride=2"}), {Shape{3, 4, 5}}, o));
  }
  SECTION("stride 2, asymmetric cropping, non-square filter") {
    expect_ok(check_layer(
        layer_spec("transposedConv2d", {"FilterSize=[4,3]", "NumFilters=3", "Stride=2", "Cropping=[1,2,0,1]"}),
        {Shape{4, 3, 2}}, o));
  }
  SECTION("3x3 stride 2, Cropping same") {
    expect_ok(check_layer(layer_spec("transposedConv2d", {"FilterSize=3", "NumFilters=2", "Stride=2", "Cropping=same"}),
                          {Shape{3, 3, 4}}, o));
  }
}

TEST_CASE("gradients: fullyConnected", "[layers][grad]") {
  GradCheckOptions o;
  expect_ok(check_layer(layer_spec("fullyConnected", {"OutputSize=5"}), {Shape{3, 2, 4}}, o));
}

TEST_CASE("gradients: fullyConnected per position (OperationDimension channel)", "[layers][grad]") {
  GradCheckOptions o;
  expect_ok(
      check_layer(layer_spec("fullyConnected", {"OutputSize=5", "OperationDimension=channel"}), {Shape{7, 1, 4}}, o));
  expect_ok(
      check_layer(layer_spec("fullyConnected", {"OutputSize=3", "OperationDimension=channel"}), {Shape{3, 2, 4}}, o));
}

// The token layers on (S, 1, C) sequences (check_layer builds a layer alone: no format check).
TEST_CASE("gradients: selfAttention", "[layers][grad]") {
  GradCheckOptions o;
  o.input_scale = 1.5;
  SECTION("3 heads of 2 channels, 5 tokens") {
    expect_ok(check_layer(layer_spec("selfAttention", {"NumHeads=3", "NumKeyChannels=6"}), {Shape{5, 1, 4}}, o));
  }
  SECTION("causal, value and output sizes of their own") {
    expect_ok(check_layer(layer_spec("selfAttention", {"NumHeads=2", "NumKeyChannels=4", "NumValueChannels=6",
                                                       "OutputSize=3", "AttentionMask=causal"}),
                          {Shape{4, 1, 5}}, o));
  }
  SECTION("attention dropout 0.3 (the mask of the step's key, the same in every evaluation)") {
    expect_ok(check_layer(layer_spec("selfAttention", {"NumHeads=2", "NumKeyChannels=4", "DropoutProbability=0.3"}),
                          {Shape{5, 1, 3}}, o));
  }
  SECTION("one head, one token") {
    expect_ok(check_layer(layer_spec("selfAttention", {"NumHeads=1", "NumKeyChannels=3"}), {Shape{1, 1, 4}}, o));
  }
  SECTION("ScoreBias (BEiT's), with and without a causal mask") {
    expect_ok(check_layer(layer_spec("selfAttention", {"NumHeads=2", "NumKeyChannels=4", "ScoreBias=true"}),
                          {Shape{5, 1, 3}}, o));
    expect_ok(check_layer(
        layer_spec("selfAttention", {"NumHeads=2", "NumKeyChannels=4", "ScoreBias=true", "AttentionMask=causal"}),
        {Shape{4, 1, 3}}, o));
  }
}

TEST_CASE("network gradients: BEiT's score bias and pooling after the class token (tests/data/vit/beit.yaml)",
          "[net][grad][vit]") {
  expect_vit_network_ok("beit");
}

TEST_CASE("network gradients: EVA-02's rotary embedding and SwiGLU MLP (tests/data/vit/eva.yaml)", "[net][grad][vit]") {
  expect_vit_network_ok("eva");
}

TEST_CASE("network gradients: MobileViT v2's separable self-attention (tests/data/vit/mobilevitv2.yaml)",
          "[net][grad][vit]") {
  expect_vit_network_ok("mobilevitv2");
}

TEST_CASE("network gradients: EfficientViT's ReLU linear attention (tests/data/vit/efficientvit.yaml)",
          "[net][grad][vit]") {
  expect_vit_network_ok("efficientvit");
}

TEST_CASE("network gradients: GC ViT's global query attention (tests/data/vit/gcvit.yaml)", "[net][grad][vit]") {
  expect_vit_network_ok("gcvit");
}

// Swin's window attention on (H, W, C) images: the relative position table's gradient too.
TEST_CASE("gradients: windowAttention", "[layers][grad]") {
  GradCheckOptions o;
  o.input_scale = 1.5;
  SECTION("2x2 windows of a 4x4 image, 2 heads") {
    expect_ok(check_layer(
        layer_spec("windowAttention", {"NumHeads=2", "WindowSize=2", "RelativePositionBiasInitializer=glorot"}),
        {Shape{4, 4, 4}}, o));
  }
  SECTION("3x3 windows shifted by 1 over a padded 5x4 image (the mask, padded tokens)") {
    expect_ok(check_layer(layer_spec("windowAttention", {"NumHeads=1", "WindowSize=3", "ShiftSize=1",
                                                         "RelativePositionBiasInitializer=glorot"}),
                          {Shape{5, 4, 3}}, o));
  }
  SECTION("2x3 windows shifted by [1 1], key and output sizes of their own, no table") {
    expect_ok(
        check_layer(layer_spec("windowAttention", {"NumHeads=2", "WindowSize=[2,3]", "ShiftSize=[1,1]",
                                                   "NumKeyChannels=4", "OutputSize=3", "RelativePositionBias=false"}),
                    {Shape{4, 6, 2}}, o));
  }
  SECTION("Partition grid: 2x2 windows of pixels spaced 3 and 2 apart in a 6x4 image") {
    expect_ok(check_layer(layer_spec("windowAttention", {"NumHeads=2", "WindowSize=2", "Partition=grid",
                                                         "RelativePositionBiasInitializer=glorot"}),
                          {Shape{6, 4, 4}}, o));
  }
  SECTION("attention dropout 0.2, shifted") {
    expect_ok(check_layer(
        layer_spec("windowAttention", {"NumHeads=1", "WindowSize=2", "ShiftSize=1", "DropoutProbability=0.2"}),
        {Shape{4, 4, 2}}, o));
  }
  SECTION("GlobalQuery (GC ViT): the 4 windows of a 4x4 image share its 2x2 query, 2 heads") {
    expect_ok(check_layer(layer_spec("windowAttention", {"NumHeads=2", "WindowSize=2", "GlobalQuery=true",
                                                         "RelativePositionBiasInitializer=glorot"}),
                          {Shape{4, 4, 3}, Shape{2, 2, 4}}, o));
  }
  SECTION("GlobalQuery over a padded 5x4 image, 3x3 windows shifted by 1, output size of its own") {
    expect_ok(
        check_layer(layer_spec("windowAttention", {"NumHeads=1", "WindowSize=3", "ShiftSize=1", "GlobalQuery=true",
                                                   "OutputSize=3", "RelativePositionBiasInitializer=glorot"}),
                    {Shape{5, 4, 2}, Shape{3, 3, 2}}, o));
  }
}

TEST_CASE(
    "gradients: patchEmbedding, embeddingConcatenation, positionEmbedding, indexing1d, "
    "globalAveragePooling1d",
    "[layers][grad]") {
  GradCheckOptions o;
  SECTION("patchEmbedding column-major (transposed grid)") {
    expect_ok(check_layer(layer_spec("patchEmbedding", {"PatchSize=2", "OutputSize=3"}), {Shape{4, 6, 2}}, o));
  }
  SECTION("patchEmbedding row-major, non-square patches") {
    expect_ok(
        check_layer(layer_spec("patchEmbedding", {"PatchSize=[2,3]", "OutputSize=4", "SpatialFlattenMode=row-major"}),
                    {Shape{4, 6, 2}}, o));
  }
  SECTION("embeddingConcatenation") {
    expect_ok(check_layer(layer_spec("embeddingConcatenation", {}), {Shape{5, 1, 4}}, o));
  }
  SECTION("positionEmbedding, a sequence shorter than MaxPosition, OutputSize other than the input's channels") {
    expect_ok(check_layer(layer_spec("positionEmbedding", {"OutputSize=4", "MaxPosition=9"}), {Shape{6, 1, 3}}, o));
  }
  SECTION("globalAveragePooling1d over the tokens after the first two (PrefixTokens 2)") {
    expect_ok(check_layer(layer_spec("globalAveragePooling1d", {"PrefixTokens=2"}), {Shape{5, 1, 4}}, o));
  }
  SECTION("indexing1d first, last and a position") {
    expect_ok(check_layer(layer_spec("indexing1d", {}), {Shape{5, 1, 4}}, o));
    expect_ok(check_layer(layer_spec("indexing1d", {"Index=last"}), {Shape{5, 1, 4}}, o));
    expect_ok(check_layer(layer_spec("indexing1d", {"Index=2"}), {Shape{5, 1, 4}}, o));
  }
  SECTION("globalAveragePooling1d") {
    expect_ok(check_layer(layer_spec("globalAveragePooling1d", {}), {Shape{5, 1, 4}}, o));
  }
}

TEST_CASE("gradients: averagePooling1d, maxPooling1d", "[layers][grad]") {
  GradCheckOptions o;
  const DataFormat im = DataFormat::kSSCB, tok = DataFormat::kSCB;
  SECTION("averagePooling1d, zeros and the mean padded, on tokens and on an image's pixels") {
    expect_ok(check_layer(layer_spec("averagePooling1d", {"PoolSize=3", "Stride=2", "Padding=[2,1]"}), {Shape{6, 1, 3}},
                          o, {tok}));
    expect_ok(
        check_layer(layer_spec("averagePooling1d", {"PoolSize=3", "Stride=2", "Padding=[2,1]", "PaddingValue=mean"}),
                    {Shape{6, 1, 3}}, o, {tok}));
    expect_ok(check_layer(layer_spec("averagePooling1d", {"PoolSize=4", "Stride=4"}), {Shape{3, 4, 2}}, o, {im}));
  }
  SECTION("in a network with batchNormalization of tokens and an attention (tests/data/layers/pool1d.yaml)") {
    expect_ok(check_network(load_config(std::string(DLT_SOURCE_DIR) + "/tests/data/layers/pool1d.yaml").network, o),
              30);
  }
  SECTION("maxPooling1d, overlapping windows, same padding, on an image's pixels") {
    o.step = 1e-3;  // small enough that no window's maximum changes hands
    expect_ok(check_layer(layer_spec("maxPooling1d", {"PoolSize=3", "Stride=2", "Padding=same"}), {Shape{7, 1, 3}}, o,
                          {tok}));
    expect_ok(check_layer(layer_spec("maxPooling1d", {"PoolSize=5", "Stride=5"}), {Shape{2, 5, 2}}, o, {im}));
  }
}

TEST_CASE("gradients: globalMaxPooling1d, flatten, spatialDropout", "[layers][grad]") {
  GradCheckOptions o;
  SECTION("globalMaxPooling1d, over all tokens and after PrefixTokens 2") {
    expect_ok(check_layer(layer_spec("globalMaxPooling1d", {}), {Shape{5, 1, 4}}, o));
    expect_ok(check_layer(layer_spec("globalMaxPooling1d", {"PrefixTokens=2"}), {Shape{5, 1, 4}}, o));
  }
  SECTION("flatten of an image and of tokens") {
    expect_ok(check_layer(layer_spec("flatten", {}), {Shape{3, 2, 4}}, o));
    expect_ok(check_layer(layer_spec("flatten", {}), {Shape{5, 1, 3}}, o));
  }
  SECTION("spatialDropout") {
    expect_ok(check_layer(layer_spec("spatialDropout", {"Probability=0.4"}), {Shape{3, 3, 6}}, o));
  }
  SECTION("with adaptiveAveragePooling2d in a network (tests/data/layers/flatten_pool.yaml)") {
    o.step = 1e-3;  // small enough that no token's maximum changes hands
    expect_ok(
        check_network(load_config(std::string(DLT_SOURCE_DIR) + "/tests/data/layers/flatten_pool.yaml").network, o),
        30);
  }
}

TEST_CASE("gradients: tokenSlice, concatenation, and the token layers on images (PiT)", "[layers][grad]") {
  GradCheckOptions o;
  const DataFormat im = DataFormat::kSSCB, tok = DataFormat::kSCB, vec = DataFormat::kCB;
  SECTION("tokenSlice as tokens and as an image") {
    expect_ok(check_layer(layer_spec("tokenSlice", {"StartToken=2", "NumTokens=4"}), {Shape{6, 1, 3}}, o, {tok}));
    expect_ok(check_layer(layer_spec("tokenSlice", {"StartToken=3", "NumTokens=4", "ImageSize=[2,2]"}),
                          {Shape{6, 1, 3}}, o, {tok}));
  }
  SECTION("concatenation of tokens along the tokens and the channels, of a token and an image's pixels") {
    expect_ok(check_layer(layer_spec("concatenation", {"Dim=1"}), {Shape{2, 1, 3}, Shape{4, 1, 3}}, o, {tok, tok}));
    expect_ok(check_layer(layer_spec("concatenation", {"Dim=2"}), {Shape{3, 1, 2}, Shape{3, 1, 4}}, o, {tok, tok}));
    expect_ok(check_layer(layer_spec("concatenation", {"Dim=1"}), {Shape{1, 1, 3}, Shape{2, 3, 3}}, o, {tok, im}));
  }
  SECTION("concatenation of images along the height, the width and the channels, of vectors") {
    expect_ok(check_layer(layer_spec("concatenation", {"Dim=1", "NumInputs=3"}),
                          {Shape{2, 3, 2}, Shape{1, 3, 2}, Shape{2, 3, 2}}, o, {im, im, im}));
    expect_ok(check_layer(layer_spec("concatenation", {"Dim=2"}), {Shape{2, 3, 2}, Shape{2, 1, 2}}, o, {im, im}));
    expect_ok(check_layer(layer_spec("concatenation", {"Dim=3"}), {Shape{2, 2, 1}, Shape{2, 2, 3}}, o, {im, im}));
    expect_ok(check_layer(layer_spec("concatenation", {"Dim=1"}), {Shape{1, 1, 2}, Shape{1, 1, 3}}, o, {vec, vec}));
  }
  SECTION("positionEmbedding and embeddingConcatenation on an image (its pixels as the positions, the tokens)") {
    expect_ok(
        check_layer(layer_spec("positionEmbedding", {"OutputSize=2", "MaxPosition=8"}), {Shape{3, 2, 2}}, o, {im}));
    expect_ok(check_layer(layer_spec("embeddingConcatenation", {}), {Shape{2, 3, 4}}, o, {im}));
  }
}

TEST_CASE("network gradients: PiT's stages (tests/data/vit/pit.yaml)", "[net][grad]") {
  expect_vit_network_ok("pit", 80);
}

// Where each value goes: concatenation along every dimension and tokenSlice, against positions
// computed here; the refusals name the layer's options and the shapes.
TEST_CASE("concatenation and tokenSlice: values in place; bad dimensions and ranges are refused", "[layers]") {
  Backend& be = backend_for(Device::cpu());
  const DataFormat im = DataFormat::kSSCB, tok = DataFormat::kSCB, vec = DataFormat::kCB;
  // value of input k at (n, h, w, c): 1000 k + 100 n + 10 (h * W + w) + c
  auto input = [](int k, const Shape& s, int64_t batch) {
    Tensor x(Shape{batch, s[0], s[1], s[2]});
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t p = 0; p < s[0] * s[1]; ++p)
        for (int64_t c = 0; c < s[2]; ++c)
          x.data()[(n * s[0] * s[1] + p) * s[2] + c] = static_cast<float>(1000 * k + 100 * n + 10 * p + c);
    return x;
  };
  auto run = [&](const LayerSpec& spec, const std::vector<Shape>& shapes, const std::vector<DataFormat>& formats,
                 Shape* out) {
    std::unique_ptr<Layer> l = make_layer(spec);
    l->set_input_formats(formats);
    *out = l->infer(shapes);
    l->setup(2, be);
    std::vector<Tensor> xs;
    for (size_t k = 0; k < shapes.size(); ++k) xs.push_back(input(static_cast<int>(k), shapes[k], 2));
    std::vector<const Tensor*> xp;
    for (auto& x : xs) xp.push_back(&x);
    Tensor y(Shape{2, (*out)[0], (*out)[1], (*out)[2]});
    l->forward(xp, y, RunContext{});
    return y;
  };
  Shape out;
  SECTION("images along the height, the width and the channels") {
    const Tensor h = run(layer_spec("concatenation", {"Dim=1"}), {Shape{2, 3, 2}, Shape{1, 3, 2}}, {im, im}, &out);
    REQUIRE(out == Shape{3, 3, 2});
    // image 1, row 2 (the second input's only row), column 1, channel 1
    CHECK(h.data()[((1 * 3 + 2) * 3 + 1) * 2 + 1] == 1000.f + 100 + 10 * 1 + 1);
    CHECK(h.data()[((1 * 3 + 1) * 3 + 2) * 2 + 0] == 100.f + 10 * 5);
    const Tensor w = run(layer_spec("concatenation", {"Dim=2"}), {Shape{2, 3, 2}, Shape{2, 1, 2}}, {im, im}, &out);
    REQUIRE(out == Shape{2, 4, 2});
    CHECK(w.data()[((1 * 2 + 1) * 4 + 3) * 2 + 1] == 1000.f + 100 + 10 * 1 + 1);  // (1, 1, 3): input 1's (1, 0)
    CHECK(w.data()[((1 * 2 + 1) * 4 + 2) * 2 + 0] == 100.f + 10 * 5);             // (1, 1, 2): input 0's (1, 2)
    const Tensor c = run(layer_spec("concatenation", {"Dim=3"}), {Shape{2, 2, 1}, Shape{2, 2, 3}}, {im, im}, &out);
    REQUIRE(out == Shape{2, 2, 4});
    CHECK(c.data()[(1 * 4 + 3) * 4 + 0] == 100.f + 30);
    CHECK(c.data()[(1 * 4 + 3) * 4 + 3] == 1000.f + 100 + 30 + 2);
  }
  SECTION("a token in front of an image's pixels; tokens along their channels; vectors") {
    const Tensor t = run(layer_spec("concatenation", {"Dim=1"}), {Shape{1, 1, 3}, Shape{2, 2, 3}}, {tok, im}, &out);
    REQUIRE(out == Shape{5, 1, 3});
    CHECK(t.data()[(1 * 5 + 0) * 3 + 2] == 100.f + 2);
    CHECK(t.data()[(1 * 5 + 4) * 3 + 1] == 1000.f + 100 + 30 + 1);  // pixel (1, 1), the fourth
    const Tensor ch = run(layer_spec("concatenation", {"Dim=2"}), {Shape{3, 1, 2}, Shape{3, 1, 1}}, {tok, tok}, &out);
    REQUIRE(out == Shape{3, 1, 3});
    CHECK(ch.data()[(1 * 3 + 2) * 3 + 2] == 1000.f + 100 + 20);
    const Tensor v = run(layer_spec("concatenation", {"Dim=1"}), {Shape{1, 1, 2}, Shape{1, 1, 2}}, {vec, vec}, &out);
    REQUIRE(out == Shape{1, 1, 4});
    CHECK(v.data()[1 * 4 + 3] == 1000.f + 100 + 1);
  }
  SECTION("tokenSlice as tokens and as the image of its pixels") {
    const Tensor s = run(layer_spec("tokenSlice", {"StartToken=2", "NumTokens=4", "ImageSize=[2,2]"}), {Shape{5, 1, 3}},
                         {tok}, &out);
    REQUIRE(out == Shape{2, 2, 3});
    CHECK(s.data()[(1 * 4 + 3) * 3 + 1] == 100.f + 10 * 4 + 1);  // pixel (1, 1): token 5
    const Tensor r = run(layer_spec("tokenSlice", {"StartToken=1", "NumTokens=1"}), {Shape{5, 1, 3}}, {tok}, &out);
    REQUIRE(out == Shape{1, 1, 3});
    CHECK(r.data()[1 * 3 + 2] == 100.f + 2);
  }
  SECTION("refusals") {
    auto refusal = [&](const LayerSpec& spec, const std::vector<Shape>& shapes,
                       const std::vector<DataFormat>& formats) {
      try {
        std::unique_ptr<Layer> l = make_layer(spec);
        l->set_input_formats(formats);
        l->infer(shapes);
      } catch (const Error& e) {
        return std::string(e.what());
      }
      return std::string();
    };
    CHECK_THAT(refusal(layer_spec("concatenation", {"Dim=4"}), {Shape{2, 2, 1}, Shape{2, 2, 1}}, {im, im}),
               Catch::Contains("Dim 4 is not a dimension of SSCB data (1..3; the batch is not joined)"));
    CHECK_THAT(refusal(layer_spec("concatenation", {"Dim=2"}), {Shape{1, 1, 3}, Shape{2, 2, 3}}, {tok, im}),
               Catch::Contains("joins token sequences and images along Dim 2"));
    CHECK_THAT(refusal(layer_spec("concatenation", {"Dim=1"}), {Shape{1, 1, 3}, Shape{2, 1, 3}}, {vec, tok}),
               Catch::Contains("joins vectors (CB) with token sequences"));
    CHECK_THAT(refusal(layer_spec("concatenation", {"Dim=1"}), {Shape{2, 3, 2}, Shape{2, 2, 2}}, {im, im}),
               Catch::Contains("differ in a dimension other than Dim 1"));
    CHECK_THAT(refusal(layer_spec("concatenation", {}), {Shape{2, 3, 2}, Shape{2, 3, 2}}, {im, im}),
               Catch::Contains("option Dim is required"));
    CHECK_THAT(refusal(layer_spec("tokenSlice", {"StartToken=4", "NumTokens=3"}), {Shape{5, 1, 3}}, {tok}),
               Catch::Contains("take tokens 4..6 of a sequence of 5"));
    CHECK_THAT(
        refusal(layer_spec("tokenSlice", {"StartToken=1", "NumTokens=4", "ImageSize=[3,2]"}), {Shape{5, 1, 3}}, {tok}),
        Catch::Contains("option ImageSize [3 2] does not hold the 4 tokens of NumTokens"));
    CHECK_THAT(refusal(layer_spec("positionEmbedding", {"OutputSize=2", "MaxPosition=5"}), {Shape{3, 2, 2}}, {im}),
               Catch::Contains("the image has 6 pixels (3x2x2), more than MaxPosition 5"));
  }
}

// DeiT reads its distillation token, the second: Index 2 (dltrain's own; MATLAB has first and last).
TEST_CASE("indexing1d: Index picks the first, the last or the numbered token; past the sequence is refused",
          "[layers]") {
  Backend& be = backend_for(Device::cpu());
  Tensor x(Shape{2, 5, 1, 3});  // 2 sequences of 5 tokens of 3 channels: value 100 n + 10 token + channel
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t t = 0; t < 5; ++t)
      for (int64_t c = 0; c < 3; ++c) x.data()[(n * 5 + t) * 3 + c] = static_cast<float>(100 * n + 10 * t + c);
  for (const auto& [index, token] : std::vector<std::pair<std::string, int64_t>>{
           {"first", 0}, {"last", 4}, {"2", 1}, {"5", 4}, {"Last", 4}}) {
    INFO("Index " << index);
    std::unique_ptr<Layer> l = make_layer(layer_spec("indexing1d", {"Index=" + index}));
    REQUIRE(l->infer({Shape{5, 1, 3}}) == Shape{1, 1, 3});
    l->setup(2, be);
    Tensor y(Shape{2, 1, 1, 3});
    l->forward({&x}, y, RunContext{});
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t c = 0; c < 3; ++c) CHECK(y.data()[n * 3 + c] == static_cast<float>(100 * n + 10 * token + c));
  }
  auto refusal = [](const std::string& index) {
    try {
      make_layer(layer_spec("indexing1d", {"Index=" + index}))->infer({Shape{5, 1, 3}});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(refusal("6"), Catch::Contains("Index 6 is past the 5 tokens of the sequence"));
  CHECK_THAT(refusal("0"), Catch::Contains("option Index must be first, last or a token's position (1 or more), got '0'"));
  CHECK_THAT(refusal("middle"), Catch::Contains("got 'middle'"));
}

TEST_CASE("gradients: batchNormalization", "[layers][grad]") {
  GradCheckOptions o;
  o.batch = 3;
  o.step = 5e-3;
  expect_ok(check_layer(layer_spec("batchNormalization", {}), {Shape{3, 3, 4}}, o));
}

TEST_CASE("gradients: activations", "[layers][grad]") {
  GradCheckOptions o;
  o.kink_guard = 0.05;
  expect_ok(check_layer(layer_spec("relu", {}), {Shape{3, 4, 5}}, o));
  expect_ok(check_layer(layer_spec("leakyRelu", {"Scale=0.2"}), {Shape{3, 4, 5}}, o));
  expect_ok(check_layer(layer_spec("elu", {"Alpha=0.7"}), {Shape{3, 4, 5}}, o));
}

TEST_CASE("gradients: clippedRelu, sigmoid, tanh, swish, gelu, hardSigmoid, hardSwish", "[layers][grad]") {
  GradCheckOptions o;
  o.input_scale = 4.0;  // past hard sigmoid's and hard swish's kinks at -3 and 3
  o.kink_guard = 0.05;
  o.samples = 40;
  // The checker skips the elements whose step crosses a kink (0 and Ceiling, -3 and 3).
  expect_ok(check_layer(layer_spec("clippedRelu", {"Ceiling=1.5"}), {Shape{3, 4, 5}}, o));
  expect_ok(check_layer(layer_spec("sigmoid", {}), {Shape{3, 4, 5}}, o));
  expect_ok(check_layer(layer_spec("tanh", {}), {Shape{3, 4, 5}}, o));
  expect_ok(check_layer(layer_spec("swish", {}), {Shape{3, 4, 5}}, o));
  expect_ok(check_layer(layer_spec("gelu", {}), {Shape{3, 4, 5}}, o));
  expect_ok(check_layer(layer_spec("gelu", {"Approximation=tanh"}), {Shape{3, 4, 5}}, o));
  expect_ok(check_layer(layer_spec("hardSigmoid", {}), {Shape{3, 4, 5}}, o));
  expect_ok(check_layer(layer_spec("hardSigmoid", {"Alpha=0.2", "Beta=0.4"}), {Shape{3, 4, 5}}, o));
  expect_ok(check_layer(layer_spec("hardSwish", {}), {Shape{3, 4, 5}}, o));
}

TEST_CASE("gradients: pooling", "[layers][grad]") {
  GradCheckOptions o;
  expect_ok(check_layer(layer_spec("maxPooling2d", {"PoolSize=3", "Stride=2"}), {Shape{7, 7, 3}}, o));
  expect_ok(
      check_layer(layer_spec("maxPooling2d", {"PoolSize=2", "Stride=2", "Padding=[0,1,0,1]"}), {Shape{5, 5, 2}}, o));
  expect_ok(check_layer(layer_spec("averagePooling2d", {"PoolSize=3", "Stride=2", "Padding=1"}), {Shape{6, 6, 3}}, o));
  expect_ok(check_layer(
      layer_spec("averagePooling2d", {"PoolSize=3", "Stride=2", "Padding=[1,0,2,1]", "PaddingValue=mean"}),
      {Shape{6, 5, 3}}, o));
  expect_ok(check_layer(layer_spec("globalAveragePooling2d", {}), {Shape{4, 3, 5}}, o));
  expect_ok(check_layer(layer_spec("globalMaxPooling2d", {}), {Shape{4, 3, 5}}, o));
  expect_ok(check_layer(layer_spec("globalMaxPooling2d", {}), {Shape{7, 6, 3}}, o));
  expect_ok(check_layer(layer_spec("adaptiveAveragePooling2d", {"OutputSize=[3,4]"}), {Shape{5, 7, 2}}, o));
  expect_ok(check_layer(layer_spec("adaptiveAveragePooling2d", {"OutputSize=2"}), {Shape{6, 4, 3}}, o));
}

TEST_CASE("gradients: channelShuffle and channelSlice", "[layers][grad]") {
  GradCheckOptions o;
  expect_ok(check_layer(layer_spec("channelShuffle", {"NumGroups=2"}), {Shape{3, 2, 6}}, o));
  expect_ok(check_layer(layer_spec("channelShuffle", {"NumGroups=3"}), {Shape{2, 3, 12}}, o));
  expect_ok(check_layer(layer_spec("channelSlice", {"StartChannel=1", "NumChannels=3"}), {Shape{3, 3, 6}}, o));
  expect_ok(check_layer(layer_spec("channelSlice", {"StartChannel=4", "NumChannels=2"}), {Shape{2, 3, 7}}, o));
}

TEST_CASE("gradients: depthToSpace2d", "[layers][grad]") {
  GradCheckOptions o;
  expect_ok(check_layer(layer_spec("depthToSpace2d", {"BlockSize=2"}), {Shape{3, 2, 8}}, o));
  expect_ok(check_layer(layer_spec("depthToSpace2d", {"BlockSize=[3,2]", "Mode=crd"}), {Shape{2, 3, 12}}, o));
  expect_ok(check_layer(layer_spec("spaceToDepth", {"BlockSize=2"}), {Shape{4, 6, 3}}, o));
  expect_ok(check_layer(layer_spec("spaceToDepth", {"BlockSize=[2,3]"}), {Shape{4, 6, 2}}, o));
}

TEST_CASE("gradients: resize2d", "[layers][grad]") {
  GradCheckOptions o;
  expect_ok(check_layer(layer_spec("resize2d", {"Scale=2", "Method=bilinear"}), {Shape{3, 2, 4}}, o));
  expect_ok(
      check_layer(layer_spec("resize2d", {"OutputSize=[5,2]", "Method=bilinear", "GeometricTransformMode=asymmetric"}),
                  {Shape{3, 4, 3}}, o));
  expect_ok(check_layer(layer_spec("resize2d", {"Scale=[1.5,0.5]"}), {Shape{2, 6, 2}}, o));
  expect_ok(
      check_layer(layer_spec("resize2d", {"OutputSize=[7,3]", "NearestRoundingMode=floor"}), {Shape{3, 2, 2}}, o));
}

TEST_CASE("gradients: crossChannelNormalization", "[layers][grad]") {
  GradCheckOptions o;
  o.input_scale = 2.0;
  expect_ok(
      check_layer(layer_spec("crossChannelNormalization", {"WindowChannelSize=3", "Alpha=0.5", "Beta=0.75", "K=1"}),
                  {Shape{3, 3, 6}}, o));
}

TEST_CASE("gradients: dropout, softmax, addition, depthConcatenation", "[layers][grad]") {
  GradCheckOptions o;
  expect_ok(check_layer(layer_spec("dropout", {"Probability=0.3"}), {Shape{4, 4, 3}}, o));
  expect_ok(check_layer(layer_spec("softmax", {}), {Shape{1, 1, 6}}, o));
  LayerSpec add = layer_spec("addition", {});
  add.inputs = {"a", "b", "c"};
  expect_ok(check_layer(add, {Shape{3, 3, 2}, Shape{3, 3, 2}, Shape{3, 3, 2}}, o));
  LayerSpec cat = layer_spec("depthConcatenation", {});
  cat.inputs = {"a", "b"};
  expect_ok(check_layer(cat, {Shape{3, 3, 2}, Shape{3, 3, 5}}, o));
}

TEST_CASE("gradients: multiplication (equal sizes, 1x1xC and HxWx1 repeated, 3 inputs)", "[layers][grad]") {
  GradCheckOptions o;
  LayerSpec two = layer_spec("multiplication", {});
  two.inputs = {"a", "b"};
  expect_ok(check_layer(two, {Shape{3, 4, 5}, Shape{3, 4, 5}}, o));
  expect_ok(check_layer(two, {Shape{1, 1, 5}, Shape{3, 4, 5}}, o));  // squeeze-and-excitation
  LayerSpec three = layer_spec("multiplication", {"NumInputs=3"});
  three.inputs = {"a", "b", "c"};
  expect_ok(check_layer(three, {Shape{3, 3, 7}, Shape{1, 1, 7}, Shape{3, 3, 7}}, o));
  expect_ok(check_layer(two, {Shape{2, 3, 1}, Shape{1, 1, 1}}, o));  // C = 1
  expect_ok(check_layer(two, {Shape{3, 4, 5}, Shape{3, 4, 1}}, o));  // a value per pixel (FocalNet's gates)
  expect_ok(check_layer(two, {Shape{1, 1, 5}, Shape{3, 4, 1}}, o));  // their outer product
  expect_ok(check_layer(three, {Shape{3, 4, 1}, Shape{3, 4, 6}, Shape{1, 1, 6}}, o));
}

TEST_CASE("gradients: layerNormalization", "[layers][grad]") {
  GradCheckOptions o;
  o.step = 5e-3;
  SECTION("channel-only, odd C") {
    expect_ok(check_layer(layer_spec("layerNormalization", {"OperationDimension=channel-only"}), {Shape{3, 2, 5}}, o));
  }
  SECTION("spatial-channel (the default)") {
    expect_ok(check_layer(layer_spec("layerNormalization", {}), {Shape{3, 3, 4}}, o));
  }
  SECTION("channel-only, 96 channels (ConvNeXt), epsilon 1e-6") {
    o.samples = 40;
    expect_ok(check_layer(layer_spec("layerNormalization", {"OperationDimension=channel-only", "Epsilon=1e-6"}),
                          {Shape{2, 2, 96}}, o));
  }
}

TEST_CASE("gradients: groupNormalization and instanceNormalization", "[layers][grad]") {
  GradCheckOptions o;
  expect_ok(check_layer(layer_spec("groupNormalization", {"NumGroups=3"}), {Shape{3, 2, 6}}, o));
  expect_ok(check_layer(layer_spec("groupNormalization", {"NumGroups=all-channels"}), {Shape{2, 2, 4}}, o));
  expect_ok(check_layer(layer_spec("groupNormalization", {"NumGroups=channel-wise"}), {Shape{3, 3, 2}}, o));
  expect_ok(check_layer(layer_spec("instanceNormalization", {"Epsilon=0.01"}), {Shape{2, 3, 5}}, o));
}

TEST_CASE("gradients: prelu (shared and per-channel Alpha)", "[layers][grad]") {
  GradCheckOptions o;
  o.kink_guard = 0.05;
  expect_ok(check_layer(layer_spec("prelu", {}), {Shape{3, 2, 5}}, o));
  expect_ok(check_layer(layer_spec("prelu", {"Alpha=0.1", "AlphaPerChannel=true"}), {Shape{3, 2, 4}}, o));
  expect_ok(check_layer(layer_spec("prelu", {"Alpha=[0.1,-0.2,0.3]"}), {Shape{2, 2, 3}}, o));
}

TEST_CASE("gradients: crop2d (the reference input gets a zero gradient)", "[layers][grad]") {
  GradCheckOptions o;
  LayerSpec center = layer_spec("crop2d", {});
  center.inputs = {"in", "ref"};
  expect_ok(check_layer(center, {Shape{7, 6, 3}, Shape{4, 3, 2}}, o));
  LayerSpec custom = layer_spec("crop2d", {"Mode=custom", "Location=[3,2]"});
  custom.inputs = {"in", "ref"};
  expect_ok(check_layer(custom, {Shape{5, 6, 2}, Shape{3, 4, 1}}, o));
}

TEST_CASE("gradients: layers at training sizes (blocked oneDNN kernels)", "[layers][grad]") {
  GradCheckOptions o;
  o.batch = 8;
  o.samples = 16;
  o.step = 5e-3;
  o.rtol = 3e-2;
  o.atol = 1e-2;
  expect_ok(check_layer(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=32", "Padding=same"}),
                        {Shape{16, 16, 16}}, o));
  expect_ok(
      check_layer(layer_spec("convolution2d", {"FilterSize=5", "NumFilters=32", "Padding=2"}), {Shape{32, 32, 3}}, o));
  // 3x3 'same' with 32+ channels: the Winograd path.
  expect_ok(check_layer(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=32", "Padding=same"}),
                        {Shape{8, 8, 32}}, o));
  expect_ok(check_layer(layer_spec("batchNormalization", {}), {Shape{16, 16, 32}}, o));
  expect_ok(check_layer(layer_spec("fullyConnected", {"OutputSize=64"}), {Shape{3, 3, 64}}, o));
  // Depthwise and grouped at MobileNet / ResNeXt channel counts (oneDNN's jit depthwise and
  // grouped kernels).
  expect_ok(check_layer(layer_spec("groupedConvolution2d",
                                   {"FilterSize=3", "NumFiltersPerGroup=1", "NumGroups=channel-wise", "Padding=same"}),
                        {Shape{8, 8, 32}}, o));
  expect_ok(check_layer(
      layer_spec("groupedConvolution2d", {"FilterSize=3", "NumFiltersPerGroup=8", "NumGroups=4", "Padding=same"}),
      {Shape{8, 8, 32}}, o));
}

TEST_CASE("max pooling takes a fused ReLU's backward: the same gradient, bit for bit", "[layers][grad]") {
  // Network::plan_fusion hands a conv's fused ReLU backward to the max pooling layer it feeds
  // (Fusion::takes_relu_backward): the pooling layer masks its own dy with its output > 0
  // instead of the conv masking the (larger) pooling input gradient with the input > 0.
  Backend& be = backend_for(Device::cpu());
  const std::vector<std::vector<std::string>> pools = {
      {"PoolSize=3", "Stride=2"}, {"PoolSize=3", "Stride=2", "Padding=1"}, {"PoolSize=2", "Stride=2"}};
  for (const auto& opts : pools)
    for (int64_t c : {5, 32}) {
      const int64_t n = 3;
      const Shape in{15, 15, c};
      auto plain = make_layer(layer_spec("maxPooling2d", opts));
      auto taker = make_layer(layer_spec("maxPooling2d", opts));
      REQUIRE(taker->fusion_traits().takes_relu_backward);
      Fusion takes;
      takes.takes_relu_backward = true;
      taker->set_fusion(takes);
      const Shape out = plain->infer({in});
      taker->infer({in});
      plain->setup(n, be);
      taker->setup(n, be);

      // A ReLU's output: half zeros, and the top-left 5x5 pixels all zero (windows whose
      // maximum is 0 must pass no gradient).
      Rng rng(11 + static_cast<uint64_t>(c));
      Tensor x = random_tensor(Shape{n, in[0], in[1], c}, rng);
      float* xv = x.data();
      for (int64_t i = 0; i < x.numel(); ++i) {
        const int64_t pix = (i / c) % (in[0] * in[1]), h = pix / in[1], w = pix % in[1];
        if (xv[i] < 0 || (h < 5 && w < 5)) xv[i] = 0;
      }
      const Shape out_n{n, out[0], out[1], c};
      Tensor y(out_n), y2(out_n), dy = random_tensor(out_n, rng);
      Tensor dy2 = dy.clone();
      RunContext ctx{true, 1, 0};
      plain->forward({&x}, y, ctx);
      taker->forward({&x}, y2, ctx);
      Tensor dx(x.shape()), dx2(x.shape());
      for (int64_t i = 0; i < x.numel(); ++i) dx.data()[i] = dx2.data()[i] = std::nanf("");  // unwritten fails
      plain->backward({&x}, y, dy, {&dx}, ctx);
      taker->backward({&x}, y2, dy2, {&dx2}, ctx);

      int64_t mismatched = 0, passed = 0;
      for (int64_t i = 0; i < x.numel(); ++i) {
        const float expect = xv[i] > 0 ? dx.data()[i] : 0.f;  // the ReLU backward, after pooling
        if (std::memcmp(&expect, &dx2.data()[i], sizeof(float)) != 0) ++mismatched;
        if (dx2.data()[i] != 0) ++passed;
      }
      INFO(opts[0] << " " << opts[1] << " C=" << c);
      CHECK(mismatched == 0);
      CHECK(passed > x.numel() / 10);  // gradients did flow
    }
}
