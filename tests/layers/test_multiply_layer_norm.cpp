// multiplication and layerNormalization: output sizes, the broadcast over height and width,
// option and shape errors, what each OperationDimension normalizes over (known statistics of
// the output), and freezing (no parameter gradients, the same input gradient).
#include <catch2/catch.hpp>

#include <cmath>

#include "layers/layer.h"
#include "support/grad_check.h"
#include "support/tensor_utils.h"

using namespace dlt;
using namespace dlt::test;

namespace {

std::unique_ptr<Layer> multiplication(std::vector<std::string> inputs, std::vector<std::string> opts = {}) {
  LayerSpec s = layer_spec("multiplication", opts, "se_mul");
  s.inputs = std::move(inputs);
  return make_layer(s);
}

// A layer with its parameters allocated (value 1 + small noise for Scale, noise for Offset).
std::unique_ptr<Layer> ready_layer(const LayerSpec& spec, const Shape& in, int64_t n) {
  auto l = make_layer(spec);
  l->infer({in});
  Rng rng(5);
  for (Param& p : l->params()) {
    p.value = random_tensor(p.shape, rng, -0.5f, 0.5f);
    if (p.name == "Scale")
      for (int64_t i = 0; i < p.value.numel(); ++i) p.value.data()[i] += 1.f;
    p.grad = Tensor(p.shape);
  }
  l->setup(n, backend_for(Device::cpu()));
  return l;
}

}  // namespace

TEST_CASE("multiplication: sizes, the 1x1xC and HxWx1 broadcasts in any position, errors", "[layers][multiplication]") {
  CHECK(multiplication({"a", "b"})->infer({Shape{4, 5, 3}, Shape{4, 5, 3}}) == Shape{4, 5, 3});
  CHECK(multiplication({"a", "b"})->infer({Shape{1, 1, 3}, Shape{4, 5, 3}}) == Shape{4, 5, 3});
  CHECK(multiplication({"a", "b", "c"})->infer({Shape{4, 5, 3}, Shape{1, 1, 3}, Shape{4, 5, 3}}) == Shape{4, 5, 3});
  CHECK(multiplication({"a", "b"})->infer({Shape{1, 1, 3}, Shape{1, 1, 3}}) == Shape{1, 1, 3});
  // a value per pixel repeated over the channels (FocalNet's gates), and the outer product of it
  // with one per channel
  CHECK(multiplication({"a", "b"})->infer({Shape{4, 5, 3}, Shape{4, 5, 1}}) == Shape{4, 5, 3});
  CHECK(multiplication({"a", "b"})->infer({Shape{1, 1, 3}, Shape{4, 5, 1}}) == Shape{4, 5, 3});
  CHECK_THROWS_WITH(multiplication({"a", "b", "c"})->infer({Shape{4, 5, 3}, Shape{4, 5, 1}, Shape{2, 5, 1}}),
                    Catch::Contains("inputs a (4x5x3), b (4x5x1) and c (2x5x1) cannot be multiplied"));
  CHECK(multiplication({"a", "b"})->num_inputs() == -1);
  CHECK_THROWS_AS(multiplication({"a", "b"})->infer({Shape{4, 5, 3}, Shape{1, 1, 4}}), ShapeError);
  CHECK_THROWS_WITH(multiplication({"a", "b"})->infer({Shape{4, 5, 3}, Shape{1, 1, 4}}),
                    Catch::Contains("se_mul: inputs a (4x5x3) and b (1x1x4) cannot be multiplied") &&
                        Catch::Contains("1x1x4 to repeat over height and width, or 4x5x1 to repeat over the "
                                        "channels"));
  CHECK_THROWS_WITH(multiplication({"a", "b"})->infer({Shape{4, 5, 3}, Shape{4, 1, 3}}),
                    Catch::Contains("(4x1x3) cannot be multiplied"));
  CHECK_THROWS_WITH(multiplication({"a", "b"})->infer({Shape{4, 5, 3}, Shape{2, 2, 3}}), Catch::Contains("2x2x3"));
  CHECK_THROWS_WITH(multiplication({"a"})->infer({Shape{4, 5, 3}}),
                    Catch::Contains("multiplication needs at least 2 Inputs, got 1"));
  CHECK_THROWS_WITH(multiplication({"a", "b"}, {"NumInputs=3"})->infer({Shape{2, 2, 3}, Shape{2, 2, 3}}),
                    Catch::Contains("NumInputs is 3 but 2 Inputs are named"));
  CHECK_THROWS_AS(multiplication({"a", "b"}, {"NumInputs=1"}), ConfigError);
}

TEST_CASE("multiplication: squeeze-and-excitation forward and backward by hand", "[layers][multiplication]") {
  // x (1, 2, 1, 2) = [[1, 2], [3, 4]] per pixel, s (1, 1, 1, 2) = [10, 100]
  auto l = multiplication({"x", "s"});
  l->infer({Shape{2, 1, 2}, Shape{1, 1, 2}});
  l->setup(1, backend_for(Device::cpu()));
  Tensor x = to_tensor({1, 2, 3, 4}, Shape{1, 2, 1, 2}), s = to_tensor({10, 100}, Shape{1, 1, 1, 2});
  Tensor y(Shape{1, 2, 1, 2}), dy = to_tensor({1, 1, 2, 1}, Shape{1, 2, 1, 2});
  RunContext ctx{true, 1, 0};
  l->forward({&x, &s}, y, ctx);
  CHECK(to_vec(y) == Vec{10, 200, 30, 400});
  Tensor dx(x.shape()), ds(s.shape());
  l->backward({&x, &s}, y, dy, {&dx, &ds}, ctx);
  CHECK(to_vec(dx) == Vec{10, 100, 20, 100});
  CHECK(to_vec(ds) == Vec{1 * 1 + 2 * 3, 1 * 2 + 1 * 4});  // summed over the two pixels
}

TEST_CASE("multiplication: a gate per pixel and an outer product, forward and backward by hand",
          "[layers][multiplication]") {
  // x (1, 2, 1, 2) = [[1, 2], [3, 4]] per pixel, g (1, 2, 1, 1) = [10, 100] (a value per pixel)
  auto l = multiplication({"x", "g"});
  l->infer({Shape{2, 1, 2}, Shape{2, 1, 1}});
  l->setup(1, backend_for(Device::cpu()));
  Tensor x = to_tensor({1, 2, 3, 4}, Shape{1, 2, 1, 2}), g = to_tensor({10, 100}, Shape{1, 2, 1, 1});
  Tensor y(Shape{1, 2, 1, 2}), dy = to_tensor({1, 1, 2, 1}, Shape{1, 2, 1, 2});
  RunContext ctx{true, 1, 0};
  l->forward({&x, &g}, y, ctx);
  CHECK(to_vec(y) == Vec{10, 20, 300, 400});
  Tensor dx(x.shape()), dg(g.shape());
  l->backward({&x, &g}, y, dy, {&dx, &dg}, ctx);
  CHECK(to_vec(dx) == Vec{10, 10, 200, 100});
  CHECK(to_vec(dg) == Vec{1 * 1 + 1 * 2, 2 * 3 + 1 * 4});  // summed over each pixel's channels
  // c (1, 1, 1, 2) = [2, 5] per channel times g: the outer product
  auto o = multiplication({"c", "g"});
  CHECK(o->infer({Shape{1, 1, 2}, Shape{2, 1, 1}}) == Shape{2, 1, 2});
  o->setup(1, backend_for(Device::cpu()));
  Tensor c = to_tensor({2, 5}, Shape{1, 1, 1, 2});
  o->forward({&c, &g}, y, ctx);
  CHECK(to_vec(y) == Vec{20, 50, 200, 500});
  Tensor dc(c.shape());
  o->backward({&c, &g}, y, dy, {&dc, &dg}, ctx);
  CHECK(to_vec(dc) == Vec{1 * 10 + 2 * 100, 1 * 10 + 1 * 100});  // summed over the pixels
  CHECK(to_vec(dg) == Vec{1 * 2 + 1 * 5, 2 * 2 + 1 * 5});        // summed over the channels
}

TEST_CASE("layerNormalization: options and errors", "[layers][layer_norm]") {
  CHECK_THROWS_WITH(make_layer(layer_spec("layerNormalization", {"Epsilon=0"})),
                    Catch::Contains("layer 'layer' (layerNormalization): option Epsilon must be > 0"));
  CHECK_THROWS_AS(make_layer(layer_spec("layerNormalization", {"OperationDimension=spatial"})), ConfigError);
  CHECK_THROWS_WITH(make_layer(layer_spec("layerNormalization", {"OperationDimension=spatial"})),
                    Catch::Contains("OperationDimension"));
  auto l = make_layer(layer_spec("layerNormalization", {"NumChannels=4"}));
  CHECK_THROWS_WITH(l->infer({Shape{3, 3, 5}}), Catch::Contains("NumChannels is 4 but the input has 5 channels"));
  CHECK_THROWS_AS(make_layer(layer_spec("layerNormalization", {"ScaleLearnRateFactor=-1"})), ConfigError);
  LayerSpec ln = layer_spec("layerNormalization", {});
  freeze_layer(ln);
  CHECK(ln.get_double("ScaleLearnRateFactor", 1) == 0);
  CHECK(ln.get_double("OffsetLearnRateFactor", 1) == 0);
  auto shaped = make_layer(layer_spec("layerNormalization", {}));
  CHECK(shaped->infer({Shape{3, 4, 5}}) == Shape{3, 4, 5});
  REQUIRE(shaped->params().size() == 2);
  CHECK(shaped->params()[0].name == "Scale");
  CHECK(shaped->params()[0].shape == Shape{5});
  CHECK(shaped->params()[1].name == "Offset");
}

TEST_CASE("layerNormalization: what each OperationDimension normalizes over", "[layers][layer_norm]") {
  const Shape in{3, 4, 5};
  const int64_t n = 2, hw = 12, c = 5;
  Rng rng(3);
  Tensor x = random_tensor(batch_shape(n, in), rng, -2.f, 3.f), y(batch_shape(n, in));
  RunContext infer_ctx{false, 1, 0};
  // Scale 1 and Offset 0: the output itself has mean 0 and variance 1 over what was normalized.
  auto normalized = [&](const std::vector<std::string>& opts) {
    auto l = ready_layer(layer_spec("layerNormalization", opts), in, n);
    backend_for(Device::cpu()).fill(l->params()[0].value, 1.f);
    backend_for(Device::cpu()).fill(l->params()[1].value, 0.f);
    l->forward({&x}, y, infer_ctx);
    return to_vec(y);
  };
  auto moments = [](const Vec& v, int64_t first, int64_t count) {
    double m = 0, q = 0;
    for (int64_t k = first; k < first + count; ++k) m += v[static_cast<size_t>(k)];
    m /= static_cast<double>(count);
    for (int64_t k = first; k < first + count; ++k)
      q += (v[static_cast<size_t>(k)] - m) * (v[static_cast<size_t>(k)] - m);
    return std::pair<double, double>{m, q / static_cast<double>(count)};
  };
  for (const auto& opts : std::vector<std::vector<std::string>>{{},
                                                                {"OperationDimension=auto"},
                                                                {"OperationDimension=spatial-channel"},
                                                                {"OperationDimension=batch-excluded"}}) {
    INFO((opts.empty() ? "default" : opts[0]));
    const Vec v = normalized(opts);
    for (int64_t img = 0; img < n; ++img) {
      auto [m, var] = moments(v, img * hw * c, hw * c);
      CHECK(std::fabs(m) < 1e-5);
      CHECK(var == Approx(1).epsilon(1e-4));
    }
    auto [m0, var0] = moments(v, 0, c);  // a single pixel is not normalized on its own
    CHECK(std::fabs(var0 - 1) + std::fabs(m0) > 1e-2);
  }
  const Vec v = normalized({"OperationDimension=channel-only"});
  for (int64_t p = 0; p < n * hw; ++p) {
    auto [m, var] = moments(v, p * c, c);
    CHECK(std::fabs(m) < 1e-5);
    CHECK(var == Approx(1).epsilon(1e-4));
  }
}

TEST_CASE("layerNormalization: frozen Scale and Offset get no gradient, the input the same", "[layers][layer_norm]") {
  const Shape in{3, 3, 6};
  const int64_t n = 2;
  Rng rng(9);
  Tensor x = random_tensor(batch_shape(n, in), rng), y(batch_shape(n, in));
  RunContext ctx{true, 1, 0};
  auto gradient = [&](const std::vector<std::string>& opts, Vec* dscale) {
    auto l = ready_layer(layer_spec("layerNormalization", opts), in, n);
    Rng r2(4);
    Tensor dy = random_tensor(y.shape(), r2), dx(x.shape());
    backend_for(Device::cpu()).fill(l->params()[0].grad, 321.f);
    l->forward({&x}, y, ctx);
    l->backward({&x}, y, dy, {&dx}, ctx);
    *dscale = to_vec(l->params()[0].grad);
    return to_vec(dx);
  };
  Vec trained_dscale, frozen_dscale;
  const Vec trained = gradient({"OperationDimension=channel-only"}, &trained_dscale);
  const Vec frozen = gradient({"OperationDimension=channel-only", "ScaleLearnRateFactor=0", "OffsetLearnRateFactor=0"},
                              &frozen_dscale);
  CHECK(trained == frozen);
  CHECK(frozen_dscale == Vec(6, 321.0));  // untouched
  CHECK(trained_dscale != Vec(6, 321.0));
}
