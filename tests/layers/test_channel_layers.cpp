// channelShuffle, channelSlice, globalMaxPooling2d / globalMaxPooling1d, averagePooling1d /
// maxPooling1d, flatten, spatialDropout
// and adaptiveAveragePooling2d on the CPU: output shapes, option and shape errors, hand-computed values
// (torchvision's channel_shuffle order, flatten's memory order), where max pooling's gradient
// goes when several values tie for the maximum, and spatial dropout's whole-channel masks.
#include <catch2/catch.hpp>

#include <cmath>

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

TEST_CASE("globalMaxPooling1d: the maximum over the tokens, after PrefixTokens; errors", "[layers]") {
  CHECK(out_shape("globalMaxPooling1d", {}, Shape{6, 1, 4}) == Shape{1, 1, 4});
  // 4 tokens of 2 channels; token 0 (a class token) holds the largest values.
  const Vec x{9, 9, 1, -3, 2, -2, 2, -5};
  Run all = run_layer(layer_spec("globalMaxPooling1d", {}), Shape{4, 1, 2}, x, {10, 20});
  CHECK(all.y == Vec{9, 9});
  CHECK(all.dx == Vec{10, 20, 0, 0, 0, 0, 0, 0});
  // After the first token: channel 0 ties at tokens 2 and 3 (the first takes the gradient).
  Run rest = run_layer(layer_spec("globalMaxPooling1d", {"PrefixTokens=1"}), Shape{4, 1, 2}, x, {10, 20});
  CHECK(rest.y == Vec{2, -2});
  CHECK(rest.dx == Vec{0, 0, 0, 0, 10, 20, 0, 0});
  CHECK_THROWS_WITH(out_shape("globalMaxPooling1d", {"PrefixTokens=4"}, Shape{4, 1, 2}),
                    Catch::Contains("PrefixTokens 4 leaves none of the 4 tokens to pool"));
  CHECK_THROWS_WITH(make_layer(layer_spec("globalMaxPooling1d", {"PrefixTokens=-1"})), Catch::Contains("PrefixTokens"));
}

TEST_CASE("averagePooling1d / maxPooling1d: windows of tokens, padding, an image's pixels; errors", "[layers]") {
  // 5 tokens of 2 channels.
  const Vec x{1, 2, 3, -4, 5, 6, -7, 8, 9, 10};
  // PoolSize 2, Stride 2, one zero in front: windows (pad, t0), (t1, t2), (t3, t4).
  Run zeros = run_layer(layer_spec("averagePooling1d", {"PoolSize=2", "Stride=2", "Padding=[1,0]"}), Shape{5, 1, 2}, x,
                        {10, 20, 30, 40, 50, 60});
  CHECK(zeros.y == Vec{0.5, 1, 4, 1, 1, 9});
  CHECK(zeros.dx == Vec{5, 10, 15, 20, 15, 20, 25, 30, 25, 30});
  // PaddingValue mean: the padded window is the mean of its one token.
  Run mean = run_layer(layer_spec("averagePooling1d", {"PoolSize=2", "Stride=2", "Padding=[1,0]", "PaddingValue=mean"}),
                       Shape{5, 1, 2}, x, {10, 20, 30, 40, 50, 60});
  CHECK(mean.y == Vec{1, 2, 4, 1, 1, 9});
  CHECK(mean.dx == Vec{10, 20, 15, 20, 15, 20, 25, 30, 25, 30});
  // Overlapping windows (t0..t2), (t2..t4): the gradient to each window's maximum.
  Run max = run_layer(layer_spec("maxPooling1d", {"PoolSize=3", "Stride=2"}), Shape{5, 1, 2}, x, {1, 2, 3, 4});
  CHECK(max.y == Vec{5, 6, 9, 10});
  CHECK(max.dx == Vec{0, 0, 0, 0, 1, 2, 0, 0, 3, 4});
  // "same": ceil(5 / 2) = 3 outputs, the one padded token on the right.
  CHECK(out_shape("maxPooling1d", {"PoolSize=2", "Stride=2", "Padding=same"}, Shape{5, 1, 2}) == Shape{3, 1, 2});
  Run same = run_layer(layer_spec("maxPooling1d", {"PoolSize=2", "Stride=2", "Padding=same"}), Shape{5, 1, 2}, x,
                       {1, 1, 1, 1, 1, 1});
  CHECK(same.y == Vec{3, 2, 5, 8, 9, 10});
  // An image's pixels in row order: a 2x3 image pooled 3 at a time is the mean of each row.
  auto l = make_layer(layer_spec("averagePooling1d", {"PoolSize=3", "Stride=3"}));
  l->set_input_formats({DataFormat::kSSCB});
  CHECK(l->infer({Shape{2, 3, 1}}) == Shape{2, 1, 1});
  CHECK(l->output_format() == DataFormat::kSCB);
  Run rows = run_layer(layer_spec("averagePooling1d", {"PoolSize=3", "Stride=3"}), Shape{2, 3, 1}, {1, 2, 6, -3, 0, 9},
                       {3, 6});
  CHECK(rows.y == Vec{3, 2});
  CHECK(rows.dx == Vec{1, 1, 1, 2, 2, 2});
  CHECK_FALSE(make_layer(layer_spec("maxPooling1d", {"PoolSize=2"}))->takes(DataFormat::kCB));
  CHECK_THROWS_WITH(make_layer(layer_spec("averagePooling1d", {})), Catch::Contains("option PoolSize is required"));
  CHECK_THROWS_WITH(out_shape("averagePooling1d", {"PoolSize=6"}, Shape{5, 1, 2}),
                    Catch::Contains("input has 5 tokens but PoolSize is 6"));
  CHECK_THROWS_WITH(out_shape("maxPooling1d", {"PoolSize=2", "Padding=2"}, Shape{5, 1, 2}),
                    Catch::Contains("Padding must be smaller than PoolSize"));
  CHECK_THROWS_WITH(out_shape("maxPooling1d", {"PoolSize=2", "Padding=[1,0,1]"}, Shape{5, 1, 2}),
                    Catch::Contains("option Padding must be 'same', a number >= 0 or [left right]"));
  CHECK_THROWS_WITH(make_layer(layer_spec("averagePooling1d", {"PoolSize=2", "PaddingValue=max"})),
                    Catch::Contains("PaddingValue"));
  CHECK_THROWS_WITH(make_layer(layer_spec("maxPooling1d", {"PoolSize=4000000000"})),
                    Catch::Contains("options PoolSize and Stride must be at most 2147483648"));
  CHECK_THROWS_WITH(out_shape("maxPooling1d", {"PoolSize=3", "Padding=[9000000000000000000,1]"}, Shape{5, 1, 2}),
                    Catch::Contains("Padding must be smaller than PoolSize"));
}

TEST_CASE("flatten: an image or tokens as one vector in memory order; a vector as it is", "[layers]") {
  CHECK(out_shape("flatten", {}, Shape{3, 2, 5}) == Shape{1, 1, 30});
  CHECK(out_shape("flatten", {}, Shape{7, 1, 4}) == Shape{1, 1, 28});
  CHECK(out_shape("flatten", {}, Shape{1, 1, 9}) == Shape{1, 1, 9});
  auto l = make_layer(layer_spec("flatten", {}));
  l->set_input_formats({DataFormat::kSSCB});
  CHECK(l->output_format() == DataFormat::kCB);
  Vec x(12), dy(12);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = 0.5 * static_cast<double>(i) - 2;  // (h, w, c) with c fastest: PyTorch's permute(0, 2, 3, 1).flatten(1)
    dy[i] = static_cast<double>(i * i);
  }
  Run r = run_layer(layer_spec("flatten", {}), Shape{2, 3, 2}, x, dy);
  CHECK(r.y == x);
  CHECK(r.dx == dy);
}

TEST_CASE("spatialDropout: whole channels of each image dropped, the rest scaled; inference passes", "[layers]") {
  Backend& be = backend_for(Device::cpu());
  const double p = 0.25;
  const int64_t n = 8, h = 3, w = 2, c = 16;
  auto l = make_layer(layer_spec("spatialDropout", {"Probability=0.25"}, "sd"));
  REQUIRE(l->infer({Shape{h, w, c}}) == Shape{h, w, c});
  l->setup(n, be);
  Rng rng(3);
  const Vec xv = random_vec(n * h * w * c, rng, 0.5, 1.5);  // never 0: a 0 out is a dropped value
  const Tensor x = to_tensor(xv, Shape{n, h, w, c});
  Tensor y(x.shape()), y2(x.shape()), dx(x.shape());
  const RunContext train{true, 5, 3};
  l->forward({&x}, y, train);
  const Vec out = to_vec(y);
  int64_t dropped = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch) {
      const int64_t first = (i * h * w) * c + ch;
      const bool drop = out[static_cast<size_t>(first)] == 0;
      dropped += drop;
      for (int64_t px = 0; px < h * w; ++px) {
        const size_t k = static_cast<size_t>((i * h * w + px) * c + ch);
        INFO("image " << i << ", channel " << ch << ", pixel " << px);
        CHECK(out[k] == Approx(drop ? 0.0 : xv[k] / (1 - p)).margin(1e-6));
      }
    }
  // 128 channels at p 0.25: 32 expected; [14, 50] holds with a probability above 0.999.
  CHECK(dropped >= 14);
  CHECK(dropped <= 50);
  // The same mask for the same seed and iteration; the gradient goes through that mask.
  l->forward({&x}, y2, train);
  CHECK(to_vec(y2) == out);
  Tensor dy = to_tensor(Vec(xv.size(), 2.0), x.shape());
  l->backward({&x}, y, dy, {&dx}, train);
  const Vec g = to_vec(dx);
  for (size_t k = 0; k < g.size(); ++k) CHECK(g[k] == Approx(out[k] == 0 ? 0.0 : 2 / (1 - p)));
  // Another iteration draws another mask; inference is the identity.
  l->forward({&x}, y2, RunContext{true, 5, 4});
  CHECK(to_vec(y2) != out);
  l->forward({&x}, y2, RunContext{false, 5, 3});
  CHECK(to_vec(y2) == xv);
  CHECK_THROWS_WITH(make_layer(layer_spec("spatialDropout", {"Probability=1"})),
                    Catch::Contains("option Probability must be in [0, 1), got 1"));
}

// PyTorch 2.15's AdaptiveAvgPool2d((3, 4)) of x[c, h, w] = (7 h + w)^1.5 / 10 + 100 c (5x7, two
// channels), and its input gradient for dy = 0, 1, ..., 11 over the 3x4 outputs of channel 0.
TEST_CASE("adaptiveAveragePooling2d: PyTorch's AdaptiveAvgPool2d values and gradient; options", "[layers]") {
  CHECK(out_shape("adaptiveAveragePooling2d", {"OutputSize=7"}, Shape{13, 9, 5}) == Shape{7, 7, 5});
  CHECK(out_shape("adaptiveAveragePooling2d", {"OutputSize=[3,4]"}, Shape{5, 7, 2}) == Shape{3, 4, 2});
  Vec x(5 * 7 * 2), dy(3 * 4 * 2, 0.0);
  for (int h = 0; h < 5; ++h)
    for (int w = 0; w < 7; ++w)
      for (int c = 0; c < 2; ++c) x[static_cast<size_t>((h * 7 + w) * 2 + c)] = std::pow(7 * h + w, 1.5) / 10 + 100 * c;
  for (int k = 0; k < 12; ++k) dy[static_cast<size_t>(2 * k)] = k;
  const Run r = run_layer(layer_spec("adaptiveAveragePooling2d", {"OutputSize=[3,4]"}), Shape{5, 7, 2}, x, dy);
  const Vec torch_y{1.053691864, 1.504579544, 2.234189272,  2.857966661,  5.850814819,  6.716739178,
                    7.934492111, 8.892897606, 12.593876839, 13.735934258, 15.305676460, 16.517337799};
  const Vec torch_dx{0.000000000, 0.166666672, 0.166666672, 0.500000000, 0.333333343, 1.083333373, 0.750000000,
                     0.666666687, 1.388888836, 0.722222209, 1.722222328, 1.000000000, 2.916666508, 1.916666627,
                     0.666666687, 1.222222209, 0.555555522, 1.222222209, 0.666666687, 1.833333254, 1.166666627,
                     2.666666746, 4.722222328, 2.055555582, 4.388888836, 2.333333254, 6.250000000, 3.916666508,
                     2.000000000, 3.500000000, 1.500000000, 3.166666508, 1.666666627, 4.416666508, 2.750000000};
  for (size_t k = 0; k < 12; ++k) {
    CHECK(r.y[2 * k] == Approx(torch_y[k]).epsilon(1e-6));
    CHECK(r.y[2 * k + 1] == Approx(torch_y[k] + 100).epsilon(1e-6));
  }
  for (size_t k = 0; k < 35; ++k) {
    CHECK(r.dx[2 * k] == Approx(torch_dx[k]).epsilon(1e-6));
    CHECK(r.dx[2 * k + 1] == 0);
  }
  CHECK_THROWS_WITH(make_layer(layer_spec("adaptiveAveragePooling2d", {})),
                    Catch::Contains("option OutputSize is required"));
  CHECK_THROWS_WITH(make_layer(layer_spec("adaptiveAveragePooling2d", {"OutputSize=[3,0]"})),
                    Catch::Contains("OutputSize"));
}

TEST_CASE("resize2d: PyTorch's interpolate values; its options and sizes", "[layers]") {
  // x = 0..11 as one channel of 3x4; the values PyTorch 1.13 gives
  // (torch.nn.functional.interpolate on the same tensor, printed to float32).
  Vec x(12), dy;
  for (int i = 0; i < 12; ++i) x[static_cast<size_t>(i)] = i;
  auto values = [&](std::vector<std::string> opts, const Shape& out) {
    dy.assign(static_cast<size_t>(out.numel()), 1.0);
    CHECK(out_shape("resize2d", opts, Shape{3, 4, 1}) == out);
    return run_layer(layer_spec("resize2d", opts), Shape{3, 4, 1}, x, dy).y;
  };
  auto check = [](const Vec& got, const Vec& want) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(2e-6));
  };
  // size=(5, 3), mode="bilinear", align_corners=False
  check(values({"OutputSize=[5,3]", "Method=bilinear"}, Shape{5, 3, 1}),
        {0.1666666865348816, 1.5, 2.8333334922790527, 1.7666667699813843, 3.1000001430511475, 4.433333396911621,
         4.1666669845581055, 5.5, 6.833333492279053, 6.566667079925537, 7.90000057220459, 9.233333587646484,
         8.166666984558105, 9.5, 10.833333015441895});
  // size=(5, 3), mode="bilinear", align_corners=True
  check(values({"OutputSize=[5,3]", "Method=bilinear", "GeometricTransformMode=align-corners"}, Shape{5, 3, 1}),
        {0, 1.5, 3, 2, 3.5, 5, 4, 5.5, 7, 6, 7.5, 9, 8, 9.5, 11});
  // size=(1, 2), mode="bilinear", align_corners=True: one output row reads row 0
  check(values({"OutputSize=[1,2]", "Method=bilinear", "GeometricTransformMode=align-corners"}, Shape{1, 2, 1}),
        {0, 3});
  // scale_factor=(1.5, 0.5), mode="nearest"
  check(values({"Scale=[1.5,0.5]", "GeometricTransformMode=asymmetric", "NearestRoundingMode=floor"}, Shape{4, 2, 1}),
        {0, 2, 0, 2, 4, 6, 8, 10});
  // size=(5, 7), mode="nearest-exact"
  check(values({"OutputSize=[5,7]"}, Shape{5, 7, 1}), {0, 0, 1, 2, 2, 3, 3,  0,  0,  1,  2, 2, 3, 3,  4,  4,  5, 6,
                                                       6, 7, 7, 8, 8, 9, 10, 10, 11, 11, 8, 8, 9, 10, 10, 11, 11});
  // PyTorch 2.15: size=(5, 7), mode="bicubic", align_corners=False; its input gradient for the
  // output gradient 0..34; and size=(2, 3) of x squared (taps past the edges both ways)
  check(values({"OutputSize=[5,7]", "Method=bicubic"}, Shape{5, 7, 1}),
        {-0.48321646451950073, -0.10475475341081619, 0.5125924348831177,
         1.1160005331039429,   1.7194089889526367,   2.336754322052002,
         2.715216875076294,    1.1647859811782837,   1.543246865272522,
         2.1605937480926514,   2.7640018463134766,   3.36741042137146,
         3.984755754470825,    4.363217830657959,    3.900785446166992,
         4.279244899749756,    4.896591663360596,    5.5,
         6.1034088134765625,   6.7207536697387695,   7.099216461181641,
         6.636786937713623,    7.015244483947754,    7.632591724395752,
         8.236000061035156,    8.839410781860352,    9.456753730773926,
         9.835216522216797,    8.284789085388184,    8.663246154785156,
         9.28059196472168,     9.884000778198242,    10.487412452697754,
         11.104754447937012,   11.483219146728516});
  {
    Vec g(35);
    for (int i = 0; i < 35; ++i) g[static_cast<size_t>(i)] = i;
    check(run_layer(layer_spec("resize2d", {"OutputSize=[5,7]", "Method=bicubic"}), Shape{3, 4, 1}, x, g).dx,
          {5.578857421875, 10.931591987609863, 16.379457473754883, 20.870161056518555, 42.50807189941406,
           49.3552131652832, 55.10942077636719, 58.65928268432617, 74.9109878540039, 82.5234603881836,
           87.97129821777344, 90.20235443115234});
    // size=(5, 7), mode="bicubic", align_corners=True: the output and its input gradient for
    // the output gradient 0..34 (PyTorch 2.15)
    const auto aligned = run_layer(
        layer_spec("resize2d", {"OutputSize=[5,7]", "Method=bicubic", "GeometricTransformMode=align-corners"}),
        Shape{3, 4, 1}, x, g);
    check(aligned.y, {0.0,     0.40625, 1.0,     1.5,     2.0, 2.59375, 3.0, 1.625,   2.03125, 2.625,    3.125,   3.625,
                      4.21875, 4.625,   4.0,     4.40625, 5.0, 5.5,     6.0, 6.59375, 7.0,     6.375,    6.78125, 7.375,
                      7.875,   8.375,   8.96875, 9.375,   8.0, 8.40625, 9.0, 9.5,     10.0,    10.59375, 11.0});
    check(aligned.dx, {2.4609375, 8.69921875, 15.37890625, 13.7109375, 43.544921875, 72.666015625, 83.056640625,
                       61.044921875, 53.525390625, 84.728515625, 91.408203125, 64.775390625});
    Vec sq(12);
    for (int i = 0; i < 12; ++i) sq[static_cast<size_t>(i)] = i * i;
    const Vec y =
        run_layer(layer_spec("resize2d", {"OutputSize=[2,3]", "Method=bicubic"}), Shape{3, 4, 1}, sq, Vec(6, 1.0)).y;
    check(y, {2.222113847732544, 6.359375, 14.672564506530762, 55.60428237915039, 77.515625, 103.60292053222656});
  }
  // The backward of nearest sends each output gradient to its one source: the counts.
  const Vec counts = run_layer(layer_spec("resize2d", {"OutputSize=[5,7]"}), Shape{3, 4, 1}, x, Vec(35, 1.0)).dx;
  check(counts, {4, 2, 4, 4, 2, 1, 2, 2, 4, 2, 4, 4});

  CHECK_THROWS_WITH(make_layer(layer_spec("resize2d", {})), Catch::Contains("give exactly one of Scale"));
  CHECK_THROWS_WITH(make_layer(layer_spec("resize2d", {"Scale=2", "OutputSize=[4,4]"})),
                    Catch::Contains("give exactly one of Scale"));
  CHECK_THROWS_WITH(make_layer(layer_spec("resize2d", {"Scale=0"})), Catch::Contains("is not a positive factor"));
  CHECK_THROWS_WITH(make_layer(layer_spec("resize2d", {"Scale=[1,2,3]"})), Catch::Contains("Scale has 3 values"));
  CHECK_THROWS_AS(make_layer(layer_spec("resize2d", {"Scale=2", "NearestRoundingMode=onnx-10"})), ConfigError);
  CHECK_THROWS_AS(make_layer(layer_spec("resize2d", {"Scale=2", "Method=lanczos"})), ConfigError);
  CHECK_THROWS_WITH(out_shape("resize2d", {"Scale=0.2"}, Shape{4, 4, 1}), Catch::Contains("the output would be 0x0"));
}
