// separableAttention (dltrain's own: MobileViT v2's separable self-attention): the forward
// against closed forms (patches the size of the image: each pixel its own group, the context its
// keys; one pixel per patch: one group of every pixel) and against the reference op (MobileViT
// v2's unfold written out), gradient checks, and its option and shape errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "config/config.h"
#include "layers/layer.h"
#include "support/grad_check.h"
#include "support/reference_ops.h"
#include "support/tensor_utils.h"
#include "util/error.h"

using namespace dlt;
using namespace dlt::test;

namespace {

// The layer's output for x (n images of in, 1 + 2c channels).
Vec run(const std::vector<std::string>& options, const Shape& in, int64_t n, const Vec& x) {
  std::unique_ptr<Layer> layer = make_layer(layer_spec("separableAttention", options));
  const Shape out = layer->infer({in});
  REQUIRE(out == Shape{in[0], in[1], (in[2] - 1) / 2});
  CHECK(layer->params().empty());
  return forward_on_cpu(*layer, in, out, n, x);
}

}  // namespace

TEST_CASE("separableAttention equals its closed forms and MobileViT v2's definition", "[layers][attention]") {
  Rng rng(23);
  const int64_t n = 2, c = 3, xc = 1 + 2 * c;
  SECTION("patches the size of the image: each pixel alone, y = relu(v) k") {
    const Shape in{2, 3, xc};
    const Vec x = random_vec(n * 6 * xc, rng, -2.0, 2.0);
    const Vec y = run({"PatchSize=[2,3]"}, in, n, x);
    for (int64_t p = 0; p < n * 6; ++p)
      for (int64_t i = 0; i < c; ++i) {
        const double k = x[static_cast<size_t>(p * xc + 1 + i)], v = x[static_cast<size_t>(p * xc + 1 + c + i)];
        CHECK(y[static_cast<size_t>(p * c + i)] == Approx(std::max(v, 0.0) * k).margin(1e-6));
      }
  }
  SECTION("one pixel per patch: one group of all pixels, y = relu(v) (softmax(q) . k)") {
    const Shape in{3, 4, xc};
    const int64_t pixels = 12;
    const Vec x = random_vec(n * pixels * xc, rng, -2.0, 2.0);
    const Vec y = run({"PatchSize=1"}, in, n, x);
    for (int64_t b = 0; b < n; ++b) {
      double sum = 0;
      for (int64_t p = 0; p < pixels; ++p) sum += std::exp(x[static_cast<size_t>((b * pixels + p) * xc)]);
      for (int64_t i = 0; i < c; ++i) {
        double ctx = 0;
        for (int64_t p = 0; p < pixels; ++p) {
          const size_t at = static_cast<size_t>((b * pixels + p) * xc);
          ctx += std::exp(x[at]) / sum * x[at + 1 + static_cast<size_t>(i)];
        }
        for (int64_t p = 0; p < pixels; ++p) {
          const double v = x[static_cast<size_t>((b * pixels + p) * xc + 1 + c + i)];
          CHECK(y[static_cast<size_t>((b * pixels + p) * c + i)] == Approx(std::max(v, 0.0) * ctx).margin(1e-6));
        }
      }
    }
  }
  SECTION("2x2 patches of a 4x6 image, and 1x3 patches of a 2x6 one, against the unfold written out") {
    for (const auto& [option, in, ph, pw] :
         {std::tuple{"PatchSize=2", Shape{4, 6, xc}, 2, 2}, std::tuple{"PatchSize=[1,3]", Shape{2, 6, xc}, 1, 3}}) {
      INFO(option);
      const Vec x = random_vec(n * in[0] * in[1] * xc, rng, -2.0, 2.0);
      const Vec want = ref::separable_attention_forward({n, in[0], in[1], c, ph, pw}, x);
      const Comparison cmp = compare(run({option}, in, n, x), want);
      INFO(cmp.str());
      CHECK(cmp.max_abs <= 1e-6);
    }
  }
}

TEST_CASE("gradients: separableAttention", "[layers][grad][attention]") {
  GradCheckOptions o;
  o.input_scale = 1.5;
  for (const auto& [option, in] :
       {std::pair{"PatchSize=2", Shape{4, 4, 5}}, std::pair{"PatchSize=[1,2]", Shape{3, 4, 7}}}) {
    INFO(option);
    const GradCheckReport r = check_layer(layer_spec("separableAttention", {option}), {in}, o);
    INFO("checked " << r.checked << ", failed " << r.failed << ", worst " << r.worst);
    CHECK(r.checked >= 20);
    CHECK(r.failed == 0);
  }
}

TEST_CASE("separableAttention: option and shape errors name the layer", "[layers][attention]") {
  CHECK_THROWS_WITH(make_layer(layer_spec("separableAttention", {"PatchSize=0"})), Catch::Contains("PatchSize"));
  CHECK_THROWS_WITH(make_layer(layer_spec("separableAttention", {}))->infer({Shape{4, 4, 6}}),
                    Catch::Contains("its 6 channels are not a query and as many keys as values"));
  CHECK_THROWS_WITH(make_layer(layer_spec("separableAttention", {}))->infer({Shape{4, 4, 1}}),
                    Catch::Contains("its 1 channels are not a query"));
  CHECK_THROWS_WITH(make_layer(layer_spec("separableAttention", {"PatchSize=[2,3]"}))->infer({Shape{4, 4, 5}}),
                    Catch::Contains("PatchSize [2 3] does not divide its height and width"));
}
