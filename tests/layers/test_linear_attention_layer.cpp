// linearAttention (dltrain's own: EfficientViT's ReLU linear attention): the forward against its
// closed form (one pixel: y = (q . k) v / (q . k + eps)) and against the reference op (timm's
// LiteMLA written out), gradient checks, and its option and shape errors.
#include <catch2/catch.hpp>

#include <algorithm>
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

// The layer's output for x (n images of in).
Vec run(const std::vector<std::string>& options, const Shape& in, int64_t n, int64_t heads, const Vec& x) {
  std::unique_ptr<Layer> layer = make_layer(layer_spec("linearAttention", options));
  const Shape out = layer->infer({in});
  REQUIRE(out == Shape{in[0], in[1], in[2] / 3});
  REQUIRE(in[2] % (3 * heads) == 0);
  CHECK(layer->params().empty());
  return forward_on_cpu(*layer, in, out, n, x);
}

}  // namespace

TEST_CASE("linearAttention equals its closed form and timm's LiteMLA", "[layers][attention]") {
  Rng rng(29);
  const int64_t n = 3;
  SECTION("a single pixel: y = (q . k) v / (q . k + eps), q and k through the ReLU") {
    const int64_t heads = 2, d = 3, c = heads * 3 * d;
    const Vec x = random_vec(n * c, rng, -2.0, 2.0);
    const Vec y = run({"NumHeads=2", "Epsilon=0.25"}, Shape{1, 1, c}, n, heads, x);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t h = 0; h < heads; ++h) {
        const size_t base = static_cast<size_t>(b * c + h * 3 * d);
        double qk = 0;
        for (int64_t i = 0; i < d; ++i)
          qk += std::max(x[base + static_cast<size_t>(i)], 0.0) * std::max(x[base + static_cast<size_t>(d + i)], 0.0);
        for (int64_t i = 0; i < d; ++i) {
          const double want = qk * x[base + static_cast<size_t>(2 * d + i)] / (qk + 0.25);
          CHECK(y[static_cast<size_t>((b * heads + h) * d + i)] == Approx(want).margin(1e-6));
        }
      }
  }
  SECTION("4 heads of 2 over a 3x5 image, 1 head of 4 over a 2x2 one, against the reference") {
    for (const auto& [heads, in] : {std::pair{int64_t{4}, Shape{3, 5, 24}}, std::pair{int64_t{1}, Shape{2, 2, 12}}}) {
      INFO("heads " << heads);
      const Vec x = random_vec(n * in[0] * in[1] * in[2], rng, -2.0, 2.0);
      const Vec want = ref::linear_attention_forward({n, in[0] * in[1], heads, in[2] / (3 * heads), 1e-5f}, x);
      const Comparison cmp = compare(run({"NumHeads=" + std::to_string(heads)}, in, n, heads, x), want);
      INFO(cmp.str());
      CHECK(cmp.max_abs <= 1e-5);
    }
  }
}

TEST_CASE("gradients: linearAttention", "[layers][grad][attention]") {
  GradCheckOptions o;
  o.input_scale = 1.5;
  for (const auto& [option, in] : {std::pair{"NumHeads=2", Shape{3, 3, 12}}, std::pair{"NumHeads=1", Shape{2, 4, 9}}}) {
    INFO(option);
    const GradCheckReport r = check_layer(layer_spec("linearAttention", {option, "Epsilon=0.1"}), {in}, o);
    INFO("checked " << r.checked << ", failed " << r.failed << ", worst " << r.worst);
    CHECK(r.checked >= 20);
    CHECK(r.failed == 0);
  }
}

TEST_CASE("linearAttention: option and shape errors name the layer", "[layers][attention]") {
  CHECK_THROWS_WITH(make_layer(layer_spec("linearAttention", {})), Catch::Contains("option NumHeads is required"));
  CHECK_THROWS_WITH(make_layer(layer_spec("linearAttention", {"NumHeads=0"})), Catch::Contains("NumHeads"));
  CHECK_THROWS_WITH(make_layer(layer_spec("linearAttention", {"NumHeads=2", "Epsilon=-1"})),
                    Catch::Contains("option Epsilon must be a number >= 0"));
  CHECK_THROWS_WITH(make_layer(layer_spec("linearAttention", {"NumHeads=2"}))->infer({Shape{4, 4, 9}}),
                    Catch::Contains("its 9 channels are not NumHeads (2) times 3d"));
  CHECK_THROWS_WITH(make_layer(layer_spec("linearAttention", {"NumHeads=2"}))->infer({Shape{4, 4, 0}}),
                    Catch::Contains("channels are not NumHeads"));
}
