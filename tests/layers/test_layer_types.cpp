// The registry's LayerType descriptors and what the program asks of a layer instead of its
// type name: names and ONNX operators are unique, every listed operator has a reader,
// freezing names the layer's own learnables, and the roles and traits the network, the
// data-parallel code and CUDA graph capture rely on.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "layers/conv_layer_base.h"
#include "layers/layer.h"
#include "support/grad_check.h"

using namespace dlt;
using namespace dlt::test;

TEST_CASE("layer registry: unique names and ONNX operators, each with a reader", "[layers][registry]") {
  std::set<std::string> names, ops;
  for (const LayerType* t : layer_registry()) {
    INFO(t->name);
    CHECK(names.insert(t->name).second);
    CHECK(t->make != nullptr);
    CHECK(t->onnx_ops.empty() == (t->from_onnx == nullptr));
    for (const auto& op : t->onnx_ops) {
      CHECK(ops.insert(op).second);
      CHECK(layer_type_for_onnx(op) == t);
    }
  }
  CHECK(names.size() == layer_types().size());
  CHECK(layer_type_for_onnx("Conv")->name == "convolution2d");
  CHECK(layer_type_for_onnx("ConvTranspose")->name == "transposedConv2d");
  CHECK(layer_type_for_onnx("Transpose") == nullptr);
}

// Every layer type a config can name has its row in docs/config.md's layer table (its name in
// backquotes), so that a new layer cannot land undocumented.
TEST_CASE("docs/config.md documents every registered layer type", "[layers][registry]") {
  std::ifstream in(std::string(DLT_SOURCE_DIR) + "/docs/config.md");
  REQUIRE(in);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const LayerType* t : layer_registry()) {
    INFO(t->name);
    CHECK(text.find("`" + t->name + "`") != std::string::npos);
  }
}

TEST_CASE("freeze_layer sets the learn-rate factors of the layer's own learnables", "[layers][registry]") {
  LayerSpec conv = layer_spec("convolution2d", {"FilterSize=3", "NumFilters=4"});
  freeze_layer(conv);
  CHECK(conv.get_double("WeightLearnRateFactor", 1) == 0);
  CHECK(conv.get_double("BiasLearnRateFactor", 1) == 0);
  LayerSpec bn = layer_spec("batchNormalization", {});
  freeze_layer(bn);
  CHECK(bn.get_double("ScaleLearnRateFactor", 1) == 0);
  CHECK(bn.get_double("OffsetLearnRateFactor", 1) == 0);
  LayerSpec relu = layer_spec("relu", {});
  freeze_layer(relu);
  CHECK(relu.options.empty());
}

TEST_CASE("layer traits: roles, ReLU fusion, stochastic and collective layers", "[layers][registry]") {
  auto make = [](const std::string& type, std::vector<std::string> opts) {
    return make_layer(layer_spec(type, std::move(opts)));
  };
  CHECK(make("imageInput", {"InputSize=[4,4,1]"})->role() == Layer::Role::kInput);
  CHECK(make("classification", {})->role() == Layer::Role::kOutput);
  CHECK(make("relu", {})->role() == Layer::Role::kHidden);
  CHECK(make("relu", {})->fusion_traits().relu);
  CHECK_FALSE(make("leakyRelu", {})->fusion_traits().relu);
  CHECK(make("convolution2d", {"FilterSize=3", "NumFilters=2"})->fusion_traits().relu_in_op);
  auto depthwise = make("groupedConvolution2d", {"FilterSize=3", "NumFiltersPerGroup=1", "NumGroups=channel-wise"});
  CHECK(depthwise->fusion_traits().relu_in_op);
  CHECK(dynamic_cast<ConvLayerBase*>(depthwise.get()));  // the fusion plan folds a following batch norm into it
  CHECK(depthwise->learnable_options() == std::vector<std::string>{"Weight", "Bias"});
  CHECK(make("dropout", {})->stochastic());
  CHECK_FALSE(make("relu", {})->stochastic());
  CHECK(make("batchNormalization", {})->joins_collectives());
  CHECK_FALSE(make("convolution2d", {"FilterSize=3", "NumFilters=2"})->joins_collectives());
}

TEST_CASE("transposedConv2d: output sizes, Cropping forms, parameters and errors", "[layers]") {
  auto out = [](std::vector<std::string> opts, Shape in) {
    auto l = make_layer(layer_spec("transposedConv2d", std::move(opts)));
    return l->infer({in});
  };
  // (H - 1) * Stride + FilterSize - cropping
  CHECK(out({"FilterSize=2", "NumFilters=4", "Stride=2"}, Shape{5, 7, 3}) == Shape{10, 14, 4});
  CHECK(out({"FilterSize=3", "NumFilters=2", "Stride=2"}, Shape{5, 7, 3}) == Shape{11, 15, 2});
  CHECK(out({"FilterSize=3", "NumFilters=2", "Stride=2", "Cropping=1"}, Shape{5, 7, 3}) == Shape{9, 13, 2});
  CHECK(out({"FilterSize=3", "NumFilters=2", "Stride=2", "Cropping=[1,0]"}, Shape{5, 7, 3}) == Shape{9, 15, 2});
  CHECK(out({"FilterSize=[4,3]", "NumFilters=2", "Stride=[2,1]", "Cropping=[1,2,0,1]"}, Shape{5, 7, 3}) ==
        Shape{9, 8, 2});
  // 'same': input * Stride, whatever the filter (an odd total crops 1 more at the bottom / right).
  CHECK(out({"FilterSize=3", "NumFilters=2", "Stride=2", "Cropping=same"}, Shape{5, 7, 3}) == Shape{10, 14, 2});
  CHECK(out({"FilterSize=4", "NumFilters=2", "Stride=1", "Cropping=same"}, Shape{5, 7, 3}) == Shape{5, 7, 2});

  auto l = make_layer(layer_spec("transposedConv2d", {"FilterSize=[3,2]", "NumFilters=4", "Stride=2",
                                                      "BiasL2Factor=0.5", "WeightLearnRateFactor=2"}));
  l->infer({Shape{3, 3, 5}});
  REQUIRE(l->params().size() == 2);
  CHECK(l->params()[0].name == "Weights");
  CHECK(l->params()[0].shape == Shape{5, 3, 2, 4});  // (C, kh, kw, K)
  CHECK(l->params()[0].learn_rate_factor == 2.f);
  CHECK(l->params()[0].fan_in == 3 * 2 * 4);
  CHECK(l->params()[1].shape == Shape{4});
  CHECK(l->params()[1].l2_factor == 0.5f);
  CHECK(l->flops_per_image() == 2 * 3 * 3 * 5 * 4 * 3 * 2);
  LayerSpec frozen = layer_spec("transposedConv2d", {"FilterSize=2", "NumFilters=4"});
  freeze_layer(frozen);
  CHECK(frozen.get_double("WeightLearnRateFactor", 1) == 0);
  CHECK(frozen.get_double("BiasLearnRateFactor", 1) == 0);

  CHECK_THROWS_WITH(make_layer(layer_spec("transposedConv2d", {"NumFilters=4"})),
                    Catch::Contains("layer 'layer' (transposedConv2d): option FilterSize is required"));
  CHECK_THROWS_WITH(make_layer(layer_spec("transposedConv2d", {"FilterSize=2"})),
                    Catch::Contains("option NumFilters is required"));
  CHECK_THROWS_WITH(make_layer(layer_spec("transposedConv2d", {"FilterSize=2", "NumFilters=4", "Cropping=-1"})),
                    Catch::Contains("option Cropping must be 'same', a number >= 0"));
  CHECK_THROWS_WITH(make_layer(layer_spec("transposedConv2d", {"FilterSize=2", "NumFilters=4", "Cropping=[1,1,1]"})),
                    Catch::Contains("option Cropping must have 1, 2 or 4 values"));
  CHECK_THROWS_WITH(out({"FilterSize=2", "NumFilters=4", "Cropping=3"}, Shape{2, 2, 1}),
                    Catch::Contains("Cropping removes [3 3 3 3] (crop less)"));
  CHECK_THROWS_WITH(out({"FilterSize=1", "NumFilters=4", "Stride=2", "Cropping=same"}, Shape{2, 2, 1}),
                    Catch::Contains("Cropping 'same' needs FilterSize >= Stride"));
  CHECK_THROWS_WITH(out({"FilterSize=2", "NumFilters=4", "NumChannels=3"}, Shape{2, 2, 1}),
                    Catch::Contains("NumChannels is 3 but the input has 1 channels"));
}

TEST_CASE("crop2d: window placement and errors", "[layers]") {
  auto out = [](std::vector<std::string> opts, Shape in, Shape ref) {
    auto l = make_layer(layer_spec("crop2d", std::move(opts)));
    return l->infer({in, ref});
  };
  CHECK(out({}, Shape{9, 8, 3}, Shape{5, 4, 7}) == Shape{5, 4, 3});  // ref's size, in's channels
  CHECK(out({"Mode=custom", "Location=[5,5]"}, Shape{9, 8, 3}, Shape{5, 4, 1}) == Shape{5, 4, 3});
  CHECK(make_layer(layer_spec("crop2d", {}))->num_inputs() == 2);
  CHECK_THROWS_WITH(out({"Mode=custom", "Location=[6,1]"}, Shape{9, 8, 3}, Shape{5, 4, 1}),
                    Catch::Contains("Location [6 1] puts the 5x4 window outside the 9x8 input"));
  CHECK_THROWS_WITH(out({}, Shape{4, 8, 3}, Shape{5, 4, 1}), Catch::Contains("the window must fit"));
  CHECK_THROWS_WITH(make_layer(layer_spec("crop2d", {"Mode=custom"})),
                    Catch::Contains("layer 'layer' (crop2d): option Location ([x y], 1-based"));
  CHECK_THROWS_WITH(make_layer(layer_spec("crop2d", {"Location=[1,1]"})),
                    Catch::Contains("option Location applies to Mode: custom only"));
  CHECK_THROWS_WITH(make_layer(layer_spec("crop2d", {"Mode=center"})), Catch::Contains("Mode"));
}
