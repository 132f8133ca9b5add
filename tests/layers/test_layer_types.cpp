// The registry's LayerType descriptors and what the program asks of a layer instead of its
// type name: names and ONNX operators are unique, every listed operator has a reader,
// freezing names the layer's own learnables, and the roles and traits the network, the
// data-parallel code and CUDA graph capture rely on.
#include <catch2/catch.hpp>

#include <set>

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
  CHECK(layer_type_for_onnx("Transpose") == nullptr);
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
  auto make = [](const std::string& type, std::vector<std::string> opts) { return make_layer(layer_spec(type, std::move(opts))); };
  CHECK(make("imageInput", {"InputSize=[4,4,1]"})->role() == Layer::Role::kInput);
  CHECK(make("classification", {})->role() == Layer::Role::kOutput);
  CHECK(make("relu", {})->role() == Layer::Role::kHidden);
  CHECK(make("relu", {})->is_relu());
  CHECK_FALSE(make("leakyRelu", {})->is_relu());
  CHECK(make("convolution2d", {"FilterSize=3", "NumFilters=2"})->can_fuse_relu());
  CHECK(make("dropout", {})->stochastic());
  CHECK_FALSE(make("relu", {})->stochastic());
  CHECK(make("batchNormalization", {})->joins_collectives());
  CHECK_FALSE(make("convolution2d", {"FilterSize=3", "NumFilters=2"})->joins_collectives());
}
