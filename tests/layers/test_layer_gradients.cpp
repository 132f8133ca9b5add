// Numerical gradient checks of every layer type: inputs and parameters, central differences
// in double precision against the analytical backward (tests/support/grad_check.h).
#include <catch2/catch.hpp>

#include "support/grad_check.h"

using namespace dlt;
using namespace dlt::test;

namespace {

void expect_ok(const GradCheckReport& r, int min_checked = 10) {
  INFO("checked " << r.checked << ", failed " << r.failed << ", kinks skipped " << r.skipped_kinks << ", worst "
                  << r.worst << " (error " << r.max_error << ")");
  CHECK(r.checked >= min_checked);
  CHECK(r.failed == 0);
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

TEST_CASE("gradients: pooling", "[layers][grad]") {
  GradCheckOptions o;
  expect_ok(check_layer(layer_spec("maxPooling2d", {"PoolSize=3", "Stride=2"}), {Shape{7, 7, 3}}, o));
  expect_ok(
      check_layer(layer_spec("maxPooling2d", {"PoolSize=2", "Stride=2", "Padding=[0,1,0,1]"}), {Shape{5, 5, 2}}, o));
  expect_ok(check_layer(layer_spec("averagePooling2d", {"PoolSize=3", "Stride=2", "Padding=1"}), {Shape{6, 6, 3}}, o));
  expect_ok(check_layer(layer_spec("globalAveragePooling2d", {}), {Shape{4, 3, 5}}, o));
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
}
