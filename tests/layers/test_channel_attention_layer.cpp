// channelAttention (dltrain's own: XCiT's and DaViT's attention across channels): the forward
// against a double-precision reference written out with plain loops (tokens and images, one and
// several heads, a scale of its own, XCiT's normalized queries and keys with a temperature per
// head), gradient checks of its three inputs (and the temperature), a network's gradients
// (tests/data/vit/channel_attention.yaml), and its option and shape errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
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

LayerSpec channel_attention(const std::vector<std::string>& options) {
  LayerSpec s = layer_spec("channelAttention", options);
  s.inputs = {"q", "k", "v"};
  return s;
}

// Per image and head: A = softmax over rows of (scale Q_h^T K_h) (d x d), O_h = V_h A^T; q, k, v
// and the result (n, s, heads * d). temperature (not empty: one per head): XCiT's form, each
// channel of q and k divided by its norm over the tokens and head h's scores times temperature[h].
Vec reference(Vec q, Vec k, const Vec& v, int64_t n, int64_t s, int64_t heads, int64_t d, double scale,
              const Vec& temperature = {}) {
  const int64_t c = heads * d;
  Vec o(static_cast<size_t>(n * s * c), 0.0);
  auto at = [&](int64_t b, int64_t t, int64_t ch) { return static_cast<size_t>((b * s + t) * c + ch); };
  if (!temperature.empty())
    for (Vec* x : {&q, &k})
      for (int64_t b = 0; b < n; ++b)
        for (int64_t ch = 0; ch < c; ++ch) {
          double norm = 0;
          for (int64_t t = 0; t < s; ++t) norm += (*x)[at(b, t, ch)] * (*x)[at(b, t, ch)];
          norm = std::max(std::sqrt(norm), 1e-12);
          for (int64_t t = 0; t < s; ++t) (*x)[at(b, t, ch)] /= norm;
        }
  for (int64_t b = 0; b < n; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < d; ++i) {
        std::vector<double> row(static_cast<size_t>(d));
        double top = -1e300;
        const double f = scale * (temperature.empty() ? 1.0 : temperature[static_cast<size_t>(h)]);
        for (int64_t j = 0; j < d; ++j) {
          double dot = 0;
          for (int64_t t = 0; t < s; ++t) dot += q[at(b, t, h * d + i)] * k[at(b, t, h * d + j)];
          row[static_cast<size_t>(j)] = f * dot;
          top = std::max(top, f * dot);
        }
        double sum = 0;
        for (double& x : row) sum += (x = std::exp(x - top));
        for (int64_t t = 0; t < s; ++t)
          for (int64_t j = 0; j < d; ++j)
            o[at(b, t, h * d + i)] += row[static_cast<size_t>(j)] / sum * v[at(b, t, h * d + j)];
      }
  return o;
}

}  // namespace

TEST_CASE("channelAttention equals its definition written out (tokens, images, heads, scale)",
          "[layers][attention][channel]") {
  struct Case {
    std::vector<std::string> options;
    Shape in;  // per image
    int64_t heads;
    double scale;
    Vec temperature;  // NormalizeQueryKey's, set as the layer's Temperature
  };
  const std::vector<Case> cases = {
      {{"NumHeads=1"}, Shape{7, 1, 5}, 1, 1 / std::sqrt(5.0), {}},
      {{"NumHeads=3", "Scale=0.5"}, Shape{9, 1, 12}, 3, 0.5, {}},
      {{"NumHeads=2", "Scale=0.3"}, Shape{3, 4, 6}, 2, 0.3, {}},  // an image: its 12 pixels are the tokens
      {{"NumHeads=2", "NormalizeQueryKey=true"}, Shape{10, 1, 8}, 2, 1.0, {0.6, 1.7}},  // Scale auto: 1
      {{"NumHeads=3", "NormalizeQueryKey=true", "Scale=2"}, Shape{2, 3, 9}, 3, 2.0, {1.0, 0.4, 2.5}},
  };
  Backend& be = backend_for(Device::cpu());
  for (const Case& c : cases) {
    INFO("case " << c.in.str() << ", " << c.heads << " heads");
    std::unique_ptr<Layer> layer = make_layer(channel_attention(c.options));
    CHECK(layer->infer({c.in, c.in, c.in}) == c.in);
    REQUIRE(layer->params().size() == (c.temperature.empty() ? 0u : 1u));
    for (Param& p : layer->params()) {
      CHECK(p.name == "Temperature");
      CHECK(p.shape == Shape{c.heads});
      CHECK(p.l2_factor == 0.f);
      p.value = Tensor(p.shape);
      for (int64_t h = 0; h < c.heads; ++h)
        p.value.data()[h] = static_cast<float>(c.temperature[static_cast<size_t>(h)]);
    }
    const int64_t n = 2, s = c.in[0] * c.in[1], ch = c.in[2];
    layer->setup(n, be);
    Rng rng(11);
    const Shape xs{n, c.in[0], c.in[1], ch};
    const Tensor q = random_tensor(xs, rng, -2.f, 2.f), k = random_tensor(xs, rng, -2.f, 2.f),
                 v = random_tensor(xs, rng);
    Tensor y(xs);
    const RunContext ctx{false, 0, 0};
    layer->forward({&q, &k, &v}, y, ctx);
    const Comparison cmp =
        compare(y, reference(to_vec(q), to_vec(k), to_vec(v), n, s, c.heads, ch / c.heads, c.scale, c.temperature));
    INFO(cmp.str());
    CHECK(cmp.max_abs <= 1e-5 * std::max(cmp.scale, 1.0));
  }
}

TEST_CASE("gradients: channelAttention (queries, keys and values as inputs)", "[layers][grad][attention][channel]") {
  GradCheckOptions o;
  o.input_scale = 1.5;
  SECTION("2 heads of 3 channels over 5 tokens") {
    const GradCheckReport r =
        check_layer(channel_attention({"NumHeads=2"}), {Shape{5, 1, 6}, Shape{5, 1, 6}, Shape{5, 1, 6}}, o);
    INFO("checked " << r.checked << ", failed " << r.failed << ", worst " << r.worst);
    CHECK(r.checked >= 60);
    CHECK(r.failed == 0);
  }
  SECTION("one head, Scale 0.7, a 2x3 image's pixels as tokens") {
    const GradCheckReport r = check_layer(channel_attention({"NumHeads=1", "Scale=0.7"}),
                                          {Shape{2, 3, 4}, Shape{2, 3, 4}, Shape{2, 3, 4}}, o);
    INFO("checked " << r.checked << ", failed " << r.failed << ", worst " << r.worst);
    CHECK(r.checked >= 60);
    CHECK(r.failed == 0);
  }
}

TEST_CASE("gradients: channelAttention with normalized queries and keys (inputs and Temperature)",
          "[layers][grad][attention][channel]") {
  GradCheckOptions o;
  o.input_scale = 1.5;
  const GradCheckReport r = check_layer(channel_attention({"NumHeads=2", "NormalizeQueryKey=true"}),
                                        {Shape{5, 1, 6}, Shape{5, 1, 6}, Shape{5, 1, 6}}, o);
  INFO("checked " << r.checked << ", failed " << r.failed << ", worst " << r.worst);
  CHECK(r.checked >= 60);
  CHECK(r.failed == 0);
}

TEST_CASE("network gradients: channel attention (tests/data/vit/channel_attention.yaml)",
          "[net][grad][attention][channel]") {
  const std::string file = std::string(DLT_SOURCE_DIR) + "/tests/data/vit/channel_attention.yaml";
  GradCheckOptions o;
  o.batch = 2;
  o.samples = 12;
  o.step = 1e-3;
  const GradCheckReport r = check_network(load_config(file).network, o);
  INFO("checked " << r.checked << ", failed " << r.failed << ", worst " << r.worst);
  CHECK(r.checked >= 80);
  CHECK(r.failed == 0);
}

TEST_CASE("channelAttention: option and shape errors name the layer", "[layers][attention][channel]") {
  CHECK_THROWS_WITH(make_layer(channel_attention({})), Catch::Contains("option NumHeads is required"));
  CHECK_THROWS_WITH(make_layer(channel_attention({"NumHeads=2", "Scale=0"})),
                    Catch::Contains("option Scale must be auto or a finite non-zero number, got 0"));
  CHECK_THROWS_WITH(
      make_layer(channel_attention({"NumHeads=4"}))->infer({Shape{5, 1, 6}, Shape{5, 1, 6}, Shape{5, 1, 6}}),
      Catch::Contains("the 6 channels are not a multiple of NumHeads (4)"));
  CHECK_THROWS_WITH(
      make_layer(channel_attention({"NumHeads=2"}))->infer({Shape{5, 1, 6}, Shape{4, 1, 6}, Shape{5, 1, 6}}),
      Catch::Contains("the key has 4 tokens of 6 channels and the query 5 of 6"));
  CHECK_THROWS_WITH(
      make_layer(channel_attention({"NumHeads=2"}))->infer({Shape{5, 1, 6}, Shape{5, 1, 6}, Shape{5, 1, 4}}),
      Catch::Contains("the value has 5 tokens of 4 channels"));
}
