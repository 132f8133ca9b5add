// channelShuffle, channelSlice and globalMaxPooling2d on the CPU: output shapes, option and
// shape errors, hand-computed values (torchvision's channel_shuffle order), and where max
// pooling's gradient goes when several values tie for the maximum.
#include <catch2/catch.hpp>

#include "backend/backend.h"
#include "layers/layer.h"
#include "support/grad_check.h"
#include "support/tensor_utils.h"
#include "util/error.h"

using namespace dlt;
using namespace dlt::test;

namespace {

// One forward and backward of a one-input layer on the CPU for a batch of one: y and dx.
struct Run {
  Vec y, dx;
};
Run run_layer(const LayerSpec& spec, const Shape& in, const Vec& x, const Vec& dy) {
  Backend& be = backend_for(Device::cpu());
  auto l = make_layer(spec);
  const Shape out = l->infer({in});
  l->setup(1, be);
  Tensor tx = to_tensor(x, Shape{1, in[0], in[1], in[2]});
  Tensor ty(Shape{1, out[0], out[1], out[2]}), tdx(tx.shape());
  be.fill(tdx, 7.f);  // every element must be written
  RunContext ctx{true, 1, 0};
  l->forward({&tx}, ty, ctx);
  Tensor tdy = to_tensor(dy, ty.shape());
  l->backward({&tx}, ty, tdy, {&tdx}, ctx);
  return {to_vec(ty), to_vec(tdx)};
}

Shape out_shape(const std::string& type, std::vector<std::string> opts, const Shape& in) {
  return make_layer(layer_spec(type, std::move(opts)))->infer({in});
}

}  // namespace

TEST_CASE("channelShuffle: torchvision's order by hand, the inverse backward, errors", "[layers]") {
  // 6 channels in 2 groups: (N, 2, 3) transposed to (N, 3, 2): output j * 2 + g = input g * 3 + j.
  const Vec x = {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15};  // 1x2 pixels of 6 channels
  const Vec dy = {100, 101, 102, 103, 104, 105, 110, 111, 112, 113, 114, 115};
  Run r = run_layer(layer_spec("channelShuffle", {"NumGroups=2"}), Shape{1, 2, 6}, x, dy);
  CHECK(r.y == Vec{0, 3, 1, 4, 2, 5, 10, 13, 11, 14, 12, 15});
  CHECK(r.dx == Vec{100, 102, 104, 101, 103, 105, 110, 112, 114, 111, 113, 115});
  // 3 groups of 2: output j * 3 + g = input g * 2 + j.
  r = run_layer(layer_spec("channelShuffle", {"NumGroups=3"}), Shape{1, 1, 6}, Vec(x.begin(), x.begin() + 6),
                Vec(dy.begin(), dy.begin() + 6));
  CHECK(r.y == Vec{0, 2, 4, 1, 3, 5});
  CHECK(r.dx == Vec{100, 103, 101, 104, 102, 105});

  CHECK(out_shape("channelShuffle", {"NumGroups=4"}, Shape{5, 3, 8}) == Shape{5, 3, 8});
  CHECK_THROWS_WITH(make_layer(layer_spec("channelShuffle", {})),
                    Catch::Contains("layer 'layer' (channelShuffle): option NumGroups is required"));
  CHECK_THROWS_WITH(make_layer(layer_spec("channelShuffle", {"NumGroups=0"})),
                    Catch::Contains("NumGroups") && Catch::Contains(">= 1"));
  CHECK_THROWS_AS(out_shape("channelShuffle", {"NumGroups=4"}, Shape{5, 3, 6}), ShapeError);
  CHECK_THROWS_WITH(out_shape("channelShuffle", {"NumGroups=4"}, Shape{5, 3, 6}),
                    Catch::Contains("input is 5x3x6 but NumGroups 4 does not divide its 6 channels"));
}

TEST_CASE("channelSlice: channels by hand, zeros in the gradient elsewhere, errors", "[layers]") {
  const Vec x = {0, 1, 2, 3, 4, 10, 11, 12, 13, 14};  // 2x1 pixels of 5 channels
  Run r = run_layer(layer_spec("channelSlice", {"StartChannel=2", "NumChannels=3"}), Shape{2, 1, 5}, x,
                    {100, 101, 102, 110, 111, 112});
  CHECK(r.y == Vec{1, 2, 3, 11, 12, 13});
  CHECK(r.dx == Vec{0, 100, 101, 102, 0, 0, 110, 111, 112, 0});

  CHECK(out_shape("channelSlice", {"StartChannel=5", "NumChannels=4"}, Shape{7, 6, 8}) == Shape{7, 6, 4});
  CHECK_THROWS_WITH(make_layer(layer_spec("channelSlice", {"NumChannels=3"})),
                    Catch::Contains("layer 'layer' (channelSlice): options StartChannel (1-based) and NumChannels"));
  CHECK_THROWS_WITH(make_layer(layer_spec("channelSlice", {"StartChannel=1"})), Catch::Contains("are required"));
  CHECK_THROWS_WITH(make_layer(layer_spec("channelSlice", {"StartChannel=0", "NumChannels=1"})),
                    Catch::Contains("StartChannel") && Catch::Contains(">= 1"));
  CHECK_THROWS_AS(out_shape("channelSlice", {"StartChannel=6", "NumChannels=4"}, Shape{7, 6, 8}), ShapeError);
  CHECK_THROWS_WITH(
      out_shape("channelSlice", {"StartChannel=6", "NumChannels=4"}, Shape{7, 6, 8}),
      Catch::Contains("input is 7x6x8 but StartChannel 6 and NumChannels 4 take channels 6..9 (the input has 8)"));
}

TEST_CASE("globalMaxPooling2d: 1x1xC, the gradient to the first maximum on ties", "[layers]") {
  CHECK(out_shape("globalMaxPooling2d", {}, Shape{7, 5, 3}) == Shape{1, 1, 3});
  // 3x3 pixels of 2 channels. Channel 0: 4 at pixels 2, 4 and 7 (rows first: 2 is first);
  // channel 1: -1 everywhere (every pixel ties: pixel 0 takes the gradient).
  Vec x(18, -1.0);
  for (int p : {0, 1, 3, 5, 6, 8}) x[2 * p] = 0.4 * p;  // below 4
  for (int p : {2, 4, 7}) x[2 * p] = 4;
  Run r = run_layer(layer_spec("globalMaxPooling2d", {}), Shape{3, 3, 2}, x, {10, 20});
  CHECK(r.y == Vec{4, -1});
  Vec want(18, 0.0);
  want[2 * 2] = 10;
  want[1] = 20;
  CHECK(r.dx == want);
}
