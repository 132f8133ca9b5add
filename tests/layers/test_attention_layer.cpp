// attention (MATLAB's attentionLayer): gradient checks of its three inputs (cross-attention with
// fewer keys than queries, causal, a scale of its own, dropout, keys and values from one layer),
// selfAttention computed again as fullyConnected projections around it (the same outputs and
// gradients, weights copied), images' pixels as tokens (PVT's attention on a feature map), and its
// option and shape errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "config/config.h"
#include "layers/layer.h"
#include "net/network.h"
#include "support/grad_check.h"
#include "support/tensor_utils.h"
#include "util/error.h"

using namespace dlt;
using namespace dlt::test;

namespace {

void expect_ok(const GradCheckReport& r, int min_checked) {
  INFO("checked " << r.checked << ", failed " << r.failed << ", worst " << r.worst << " (error " << r.max_error << ")");
  CHECK(r.checked >= min_checked);
  CHECK(r.failed == 0);
}

LayerSpec attention(const std::vector<std::string>& options) {
  LayerSpec s = layer_spec("attention", options);
  s.inputs = {"q", "k", "v"};
  return s;
}

NetworkSpec yaml_net(const std::string& layers) { return network_spec_from_yaml("layers:\n" + layers, "inline"); }

// Two token sequences of one image: 16 tokens of its 2x2 patches and 4 of its 4x4 patches.
const std::string kTwoSequences =
    "  - {type: imageInput, Name: in, InputSize: [8, 8, 3], Normalization: none}\n"
    "  - {type: patchEmbedding, Name: fine, PatchSize: 2, OutputSize: 6, SpatialFlattenMode: row-major}\n"
    "  - {type: patchEmbedding, Name: coarse, PatchSize: 4, OutputSize: 5, Inputs: in}\n";
const std::string kOneSequence =
    "  - {type: imageInput, Name: in, InputSize: [8, 8, 3], Normalization: none}\n"
    "  - {type: patchEmbedding, Name: fine, PatchSize: 2, OutputSize: 6, SpatialFlattenMode: row-major}\n";
const std::string kHead =
    "  - {type: globalAveragePooling1d, Name: gap}\n"
    "  - {type: fullyConnected, Name: fc, OutputSize: 3}\n"
    "  - {type: softmax, Name: sm}\n"
    "  - {type: classification, Name: out}\n";

// Both networks (the same learnables, 8x8x3 input, 3 classes) on three random images in
// training: their probabilities agree within 1e-6 and tell the images apart, and their losses
// match; then their gradients are there to compare.
void same_forward_and_loss(Network& a, Network& b) {
  const int64_t n = 3;
  a.set_batch(n);
  b.set_batch(n);
  Rng rng(9);
  const Tensor x = random_tensor(Shape{n, 8, 8, 3}, rng);
  Tensor labels(Shape{n}, Device::cpu(), DType::kI32);
  for (int64_t i = 0; i < n; ++i) labels.data_i32()[i] = static_cast<int32_t>(i % 3);
  const RunContext ctx{true, 1, 0};
  const Vec ya = to_vec(a.forward(x, ctx)), yb = to_vec(b.forward(x, ctx));
  const Comparison probs = compare(yb, ya);
  INFO("probabilities: " << probs.str());
  CHECK(probs.max_abs <= 1e-6);
  CHECK(std::fabs(ya[0] - ya[3]) + std::fabs(ya[1] - ya[4]) > 1e-3);  // the images told apart
  CHECK(a.loss_and_backward(labels, ctx, true, nullptr) == Approx(b.loss_and_backward(labels, ctx, true, nullptr)));
}

}  // namespace

TEST_CASE("gradients: attention (queries, keys and values as inputs)", "[layers][grad][attention]") {
  GradCheckOptions o;
  o.input_scale = 1.5;
  SECTION("2 heads, 5 queries over 3 keys, values wider than keys") {
    expect_ok(check_layer(attention({"NumHeads=2"}), {Shape{5, 1, 4}, Shape{3, 1, 4}, Shape{3, 1, 6}}, o), 60);
  }
  SECTION("causal over as many keys, Scale 0.7") {
    expect_ok(check_layer(attention({"NumHeads=1", "AttentionMask=causal", "Scale=0.7"}),
                          {Shape{4, 1, 3}, Shape{4, 1, 3}, Shape{4, 1, 2}}, o),
              60);
  }
  SECTION("dropout 0.3 (the step's mask, the same in every evaluation)") {
    expect_ok(check_layer(attention({"NumHeads=2", "DropoutProbability=0.3"}),
                          {Shape{3, 1, 4}, Shape{6, 1, 4}, Shape{6, 1, 2}}, o),
              60);
  }
}

TEST_CASE("gradients: attention with a score bias, and a vector query (one token)", "[layers][grad][attention]") {
  GradCheckOptions o;
  o.input_scale = 1.5;
  SECTION("ScoreBias of 2 heads, 5 queries over 3 keys (LeViT's attention biases)") {
    LayerSpec s = attention({"NumHeads=2", "ScoreBias=true"});
    std::unique_ptr<Layer> l = make_layer(s);
    l->infer({Shape{5, 1, 4}, Shape{3, 1, 4}, Shape{3, 1, 6}});
    REQUIRE(l->params().size() == 1);
    CHECK(l->params()[0].name == "ScoreBias");
    CHECK(l->params()[0].shape == Shape{2, 5, 3});
    expect_ok(check_layer(s, {Shape{5, 1, 4}, Shape{3, 1, 4}, Shape{3, 1, 6}}, o), 80);
  }
  SECTION("a vector query over 4 keys (the class token's query in CaiT's class attention)") {
    const std::vector<DataFormat> formats{DataFormat::kCB, DataFormat::kSCB, DataFormat::kSCB};
    expect_ok(check_layer(attention({"NumHeads=2"}), {Shape{1, 1, 4}, Shape{4, 1, 4}, Shape{4, 1, 6}}, o, formats), 40);
  }
}

TEST_CASE("gradients: talking heads (CaiT's): attention and selfAttention", "[layers][grad][attention]") {
  GradCheckOptions o;
  o.input_scale = 1.5;
  SECTION("attention: ScoreBias and TalkingHeads of 3 heads, 4 queries over 5 keys") {
    LayerSpec s = attention({"NumHeads=3", "ScoreBias=true", "TalkingHeads=true"});
    std::unique_ptr<Layer> l = make_layer(s);
    l->infer({Shape{4, 1, 6}, Shape{5, 1, 6}, Shape{5, 1, 3}});
    const char* names[5] = {"ScoreBias", "ScoreMixWeights", "ScoreMixBias", "ProbabilityMixWeights",
                            "ProbabilityMixBias"};
    REQUIRE(l->params().size() == 5);
    for (size_t i = 0; i < 5; ++i) CHECK(l->params()[i].name == names[i]);
    CHECK(l->params()[1].shape == Shape{3, 3});
    CHECK(l->params()[4].shape == Shape{3});
    expect_ok(check_layer(s, {Shape{4, 1, 6}, Shape{5, 1, 6}, Shape{5, 1, 3}}, o), 120);
  }
  SECTION("attention: TalkingHeads with the weights' bias per pair (ConViT's), 2 heads, 3 queries over 4 keys") {
    LayerSpec s = attention({"NumHeads=2", "TalkingHeads=true", "ProbabilityMixBiasPerPair=true"});
    std::unique_ptr<Layer> l = make_layer(s);
    l->infer({Shape{3, 1, 4}, Shape{4, 1, 4}, Shape{4, 1, 2}});
    REQUIRE(l->params().size() == 4);
    CHECK(l->params()[3].name == "ProbabilityMixBias");
    CHECK(l->params()[3].shape == Shape{2, 3, 4});
    expect_ok(check_layer(s, {Shape{3, 1, 4}, Shape{4, 1, 4}, Shape{4, 1, 2}}, o), 90);
  }
  SECTION("selfAttention: TalkingHeads of 2 heads, causal, dropout 0.2") {
    LayerSpec s = layer_spec("selfAttention", {"NumHeads=2", "NumKeyChannels=4", "TalkingHeads=true",
                                               "AttentionMask=causal", "DropoutProbability=0.2"});
    expect_ok(check_layer(s, {Shape{5, 1, 3}}, o), 90);
  }
}

TEST_CASE("gradients: rotary embedding (EVA-02's) in selfAttention", "[layers][grad][attention]") {
  GradCheckOptions o;
  o.input_scale = 1.5;
  SECTION("interleaved pairs, a class token left as it is, 2 heads of 4") {
    expect_ok(check_layer(layer_spec("selfAttention", {"NumHeads=2", "NumKeyChannels=8", "RotaryEmbedding=interleaved",
                                                       "RotaryPrefixTokens=1"}),
                          {Shape{5, 1, 3}}, o),
              90);
  }
  SECTION("a table per head (RoPE-Mixed's), 3 heads of 2") {
    expect_ok(check_layer(layer_spec("selfAttention",
                                     {"NumHeads=3", "NumKeyChannels=6", "RotaryEmbedding=half", "RotaryPerHead=true"}),
                          {Shape{4, 1, 3}}, o),
              90);
  }
  SECTION("half pairs on a 2x3 grid, causal, 1 head of 8") {
    expect_ok(check_layer(layer_spec("selfAttention", {"NumHeads=1", "NumKeyChannels=8", "RotaryEmbedding=half",
                                                       "RotaryGrid=[2,3]", "AttentionMask=causal"}),
                          {Shape{6, 1, 4}}, o),
              90);
  }
}

TEST_CASE("attention: a rotary embedding's tables and options", "[layers][attention]") {
  auto tables = [](const std::vector<std::string>& options, Shape in) {
    std::unique_ptr<Layer> l = make_layer(layer_spec("selfAttention", options));
    l->infer({in});
    for (Param& p : l->params()) p.value = Tensor(p.shape);
    for (State& s : l->states()) s.value = Tensor(s.shape);
    Rng rng(1);
    l->init_params(rng);
    REQUIRE(l->states().size() == 2);
    CHECK(l->states()[0].name == "RotaryCos");
    CHECK(l->states()[1].name == "RotarySin");
    return std::make_pair(to_vec(l->states()[0].value), to_vec(l->states()[1].value));
  };
  SECTION("1-D: token t's pair i at t 10000^(-2i / d), after the prefix") {
    const auto [c, s] =
        tables({"NumHeads=2", "NumKeyChannels=12", "RotaryEmbedding=half", "RotaryPrefixTokens=2"}, Shape{7, 1, 4});
    REQUIRE(c.size() == 5 * 3);  // 5 tokens of 3 pairs
    for (int t = 0; t < 5; ++t)
      for (int i = 0; i < 3; ++i) {
        const double a = t * std::pow(10000.0, -2.0 * i / 6.0);
        CHECK(c[static_cast<size_t>(t * 3 + i)] == Approx(std::cos(a)).margin(1e-6));
        CHECK(s[static_cast<size_t>(t * 3 + i)] == Approx(std::sin(a)).margin(1e-6));
      }
  }
  SECTION("RotaryGrid: the first half of the pairs at the row, the second at the column") {
    const auto [c, s] =
        tables({"NumHeads=1", "NumKeyChannels=8", "RotaryEmbedding=interleaved", "RotaryGrid=[2,3]", "RotaryBase=100"},
               Shape{6, 1, 4});
    REQUIRE(c.size() == 6 * 4);
    for (int t = 0; t < 6; ++t)
      for (int i = 0; i < 4; ++i) {
        const double a = (i < 2 ? t / 3 : t % 3) * std::pow(100.0, -(i % 2) / 2.0);
        CHECK(c[static_cast<size_t>(t * 4 + i)] == Approx(std::cos(a)).margin(1e-6));
        CHECK(s[static_cast<size_t>(t * 4 + i)] == Approx(std::sin(a)).margin(1e-6));
      }
  }
  SECTION("RotaryPerHead: a table per head, each the shared one") {
    const auto [c, s] =
        tables({"NumHeads=2", "NumKeyChannels=8", "RotaryEmbedding=interleaved", "RotaryPerHead=true"}, Shape{3, 1, 4});
    REQUIRE(c.size() == 2 * 3 * 2);  // 2 heads of 3 tokens of 2 pairs
    for (int t = 0; t < 3; ++t)
      for (int i = 0; i < 2; ++i) {
        const double a = t * std::pow(10000.0, -2.0 * i / 4.0);
        for (int h = 0; h < 2; ++h) {
          CHECK(c[static_cast<size_t>((h * 3 + t) * 2 + i)] == Approx(std::cos(a)).margin(1e-6));
          CHECK(s[static_cast<size_t>((h * 3 + t) * 2 + i)] == Approx(std::sin(a)).margin(1e-6));
        }
      }
  }
  auto build = [](const std::string& options) {
    return Network(
        yaml_net(kOneSequence + "  - {type: selfAttention, Name: sa, NumHeads: 2, " + options + "}\n" + kHead),
        Device::cpu());
  };
  CHECK_THROWS_WITH(build("NumKeyChannels: 6, RotaryEmbedding: half"),
                    Catch::Contains("each head's 3 key channels must be even"));
  CHECK_THROWS_WITH(build("NumKeyChannels: 8, RotaryEmbedding: half, RotaryPrefixTokens: 16"),
                    Catch::Contains("RotaryPrefixTokens (16) leaves no token of 16 to rotate"));
  CHECK_THROWS_WITH(build("NumKeyChannels: 8, RotaryEmbedding: half, RotaryGrid: [3 5]"),
                    Catch::Contains("RotaryGrid [3 5] must cover the 16 rotated tokens"));
  CHECK_THROWS_WITH(build("NumKeyChannels: 4, RotaryEmbedding: half, RotaryGrid: [4 4]"),
                    Catch::Contains("multiple of 4 (they are 2)"));
  CHECK_THROWS_WITH(build("NumKeyChannels: 8, RotaryPerHead: true"),
                    Catch::Contains("option RotaryPerHead needs RotaryEmbedding"));
  CHECK_THROWS_WITH(build("NumKeyChannels: 8, RotaryBase: 100"),
                    Catch::Contains("option RotaryBase needs RotaryEmbedding interleaved or half (it is none)"));
  CHECK_THROWS_WITH(build("NumKeyChannels: 8, RotaryEmbedding: spiral"), Catch::Contains("RotaryEmbedding"));
  CHECK_NOTHROW(build("NumKeyChannels: 8, RotaryEmbedding: interleaved, RotaryGrid: [4 4], RotaryBase: 100"));
}

TEST_CASE("attention: talking heads start as plain multi-head attention", "[layers][attention]") {
  // The mixes' initial values (identity weights, zero biases) leave the scores and probabilities
  // as they are: the same network with and without TalkingHeads, the same other learnables.
  const std::string sa = "  - {type: selfAttention, Name: sa, NumHeads: 3, NumKeyChannels: 6, Inputs: fine";
  Network a(yaml_net(kOneSequence + sa + "}\n" + kHead), Device::cpu()),
      b(yaml_net(kOneSequence + sa + ", TalkingHeads: true}\n" + kHead), Device::cpu());
  a.init_params(4);
  b.init_params(4);
  auto params = [](Network& net) {
    std::vector<Param*> all;
    for (size_t i = 0; i < net.size(); ++i)
      for (Param& p : net.layer(i).params()) all.push_back(&p);
    return all;
  };
  const std::vector<Param*> pa = params(a), pb = params(b);
  REQUIRE(pb.size() == pa.size() + 4);
  size_t j = 0;
  for (Param* p : pb) {
    if (p->name.find("Mix") != std::string::npos) {
      const Vec v = to_vec(p->value);
      const int64_t heads = 3;
      for (size_t e = 0; e < v.size(); ++e)
        CHECK(v[e] == (p->name.find("Weights") != std::string::npos && e / heads == e % heads ? 1.0 : 0.0));
      continue;
    }
    p->value.copy_from(pa[j++]->value);
  }
  same_forward_and_loss(a, b);
}

TEST_CASE("gradients: attention on images (their pixels as tokens)", "[layers][grad][attention]") {
  GradCheckOptions o;
  o.input_scale = 1.5;
  // Queries from a 2x3 image, keys from a 2x2 image, values from 4 tokens: the output a 2x3 image.
  LayerSpec s = attention({"NumHeads=2"});
  const std::vector<Shape> in = {Shape{2, 3, 4}, Shape{2, 2, 4}, Shape{4, 1, 6}};
  CHECK(make_layer(s)->infer(in) == Shape{2, 3, 6});
  expect_ok(check_layer(s, in, o), 60);
  LayerSpec sa = layer_spec("selfAttention", {"NumHeads=2", "NumKeyChannels=4", "NumValueChannels=2", "OutputSize=3"});
  CHECK(make_layer(sa)->infer({Shape{3, 2, 5}}) == Shape{3, 2, 3});
  expect_ok(check_layer(sa, {Shape{3, 2, 5}}, o), 60);
}

TEST_CASE("network gradients: PVT's attention on a feature map (tests/data/vit/pvt_image.yaml)",
          "[net][grad][attention]") {
  const std::string file = std::string(DLT_SOURCE_DIR) + "/tests/data/vit/pvt_image.yaml";
  const NetworkSpec spec = load_config(file).network;
  Network net(spec, Device::cpu());
  for (size_t i = 0; i < net.size(); ++i)
    if (net.layer(i).name() == "att" || net.layer(i).name() == "sa") {
      INFO(net.layer(i).name());
      CHECK(net.output_format(i) == DataFormat::kSSCB);
      CHECK(net.output_shape(i)[0] == 4);
      CHECK(net.output_shape(i)[1] == 4);
    }
  GradCheckOptions o;
  o.batch = 2;
  o.samples = 12;
  o.step = 1e-3;
  expect_ok(check_network(spec, o), 80);
}

// selfAttention over an image's pixels computes what it computes over the same pixels as tokens:
// a stride-2 convolution's 4x4 output, and patchEmbedding's tokens of the same weights.
TEST_CASE("attention: selfAttention on an image equals it on the image's pixels as tokens", "[layers][attention]") {
  const std::string in = "  - {type: imageInput, Name: in, InputSize: [8, 8, 3], Normalization: none}\n";
  const std::string sa = "  - {type: selfAttention, Name: sa, NumHeads: 2, NumKeyChannels: 4, AttentionMask: causal}\n";
  const NetworkSpec image =
      yaml_net(in + "  - {type: convolution2d, Name: grid, FilterSize: 2, Stride: 2, NumFilters: 6}\n" + sa +
               "  - {type: globalAveragePooling2d, Name: gap}\n" + kHead.substr(kHead.find("\n") + 1));
  const NetworkSpec tokens = yaml_net(
      in + "  - {type: patchEmbedding, Name: grid, PatchSize: 2, OutputSize: 6, SpatialFlattenMode: row-major}\n" + sa +
      kHead);
  Network a(image, Device::cpu()), b(tokens, Device::cpu());
  a.init_params(4);
  b.init_params(5);
  const std::vector<Param*> pa = a.params(), pb = b.params();
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    REQUIRE(pa[i]->value.numel() == pb[i]->value.numel());
    pb[i]->value.copy_from(pa[i]->value);
  }
  same_forward_and_loss(a, b);
  for (size_t i = 0; i < pa.size(); ++i) {
    const Comparison g = compare(pb[i]->grad, to_vec(pa[i]->grad));
    INFO("gradient of learnable " << i << ": " << g.str());
    CHECK(g.max_abs <= 1e-5 * std::max(g.scale, 1.0));
  }
}

TEST_CASE("network gradients: cross-attention, keys and values from one layer", "[net][grad][attention]") {
  // The queries from the fine tokens; keys and values both the coarse tokens (one producer named
  // twice: each mention's gradient is summed into it).
  const NetworkSpec s = yaml_net(kTwoSequences +
                                 "  - {type: fullyConnected, Name: q, OutputSize: 5, OperationDimension: channel, "
                                 "Inputs: fine}\n"
                                 "  - {type: attention, Name: att, NumHeads: 5, Inputs: [q, coarse, coarse]}\n" +
                                 kHead);
  Network net(s, Device::cpu());
  CHECK(net.output_shape(4) == Shape{16, 1, 5});
  CHECK(net.output_format(4) == DataFormat::kSCB);
  GradCheckOptions o;
  o.batch = 2;
  o.samples = 16;
  o.step = 1e-3;
  const GradCheckReport r = check_network(s, o);
  expect_ok(r, 60);
}

TEST_CASE("network gradients: PVT-like cross-attention with dropout (tests/data/vit/cross_attention.yaml)",
          "[net][grad][attention]") {
  const std::string file = std::string(DLT_SOURCE_DIR) + "/tests/data/vit/cross_attention.yaml";
  GradCheckOptions o;
  o.batch = 2;
  o.samples = 12;
  o.step = 1e-3;
  expect_ok(check_network(load_config(file).network, o), 80);
}

TEST_CASE("attention: selfAttention is attention between fullyConnected projections", "[layers][attention]") {
  const std::string sa_opts = "NumHeads: 2, NumKeyChannels: 4, NumValueChannels: 6, OutputSize: 5";
  for (const char* mask : {"none", "causal", "bias", "talking"}) {
    INFO("AttentionMask " << mask);
    // "bias": both with ScoreBias, "talking": both with TalkingHeads and a causal mask (their
    // learnables drawn, then copied)
    const bool bias = std::string(mask) == "bias", talking = std::string(mask) == "talking";
    const std::string m = bias      ? std::string(", ScoreBias: true")
                          : talking ? std::string(", TalkingHeads: true, AttentionMask: causal")
                                    : std::string(", AttentionMask: ") + mask;
    const NetworkSpec whole =
        yaml_net(kOneSequence + "  - {type: selfAttention, Name: sa, " + sa_opts + m + ", Inputs: fine}\n" + kHead);
    const NetworkSpec parts =
        yaml_net(kOneSequence +
                 "  - {type: fullyConnected, Name: pq, OutputSize: 4, OperationDimension: channel, Inputs: fine}\n"
                 "  - {type: fullyConnected, Name: pk, OutputSize: 4, OperationDimension: channel, Inputs: fine}\n"
                 "  - {type: fullyConnected, Name: pv, OutputSize: 6, OperationDimension: channel, Inputs: fine}\n"
                 "  - {type: attention, Name: att, NumHeads: 2" +
                 m +
                 ", Inputs: [pq, pk, pv]}\n"
                 "  - {type: fullyConnected, Name: po, OutputSize: 5, OperationDimension: channel}\n" +
                 kHead);
    Network a(whole, Device::cpu()), b(parts, Device::cpu());
    a.init_params(4);
    b.init_params(5);
    // selfAttention's learnables (QueryWeights .. OutputWeights, QueryBias .. OutputBias) are
    // the projections' Weights and Bias.
    auto find = [](Network& net, const std::string& name) -> Layer& {
      for (size_t i = 0; i < net.size(); ++i)
        if (net.layer(i).name() == name) return net.layer(i);
      FAIL("no layer " << name);
      return net.layer(0);
    };
    std::vector<Param>& sa = find(a, "sa").params();
    // selfAttention's ScoreBias or head mixes (after its eight) are the attention layer's learnables
    const size_t extra = bias ? 1 : talking ? 4 : 0;
    REQUIRE(sa.size() == 8 + extra);
    REQUIRE(find(b, "att").params().size() == extra);
    Rng rng(21);
    for (size_t e = 0; e < extra; ++e) {
      Param& sb = sa[8 + e];
      for (int64_t i = 0; i < sb.value.numel(); ++i) sb.value.data()[i] = static_cast<float>(rng.uniform(-1.0, 1.0));
      find(b, "att").params()[e].value.copy_from(sb.value);
    }
    const char* proj[4] = {"pq", "pk", "pv", "po"};
    for (int i = 0; i < 4; ++i) {
      std::vector<Param>& fc = find(b, proj[i]).params();
      REQUIRE(fc[0].value.numel() == sa[static_cast<size_t>(i)].value.numel());
      fc[0].value.copy_from(sa[static_cast<size_t>(i)].value);
      fc[1].value.copy_from(sa[static_cast<size_t>(4 + i)].value);
    }
    for (const char* shared : {"fine", "fc"})
      for (size_t j = 0; j < find(a, shared).params().size(); ++j)
        find(b, shared).params()[j].value.copy_from(find(a, shared).params()[j].value);

    same_forward_and_loss(a, b);
    for (int i = 0; i < 4; ++i) {
      const Comparison g = compare(find(b, proj[i]).params()[0].grad, to_vec(sa[static_cast<size_t>(i)].grad));
      INFO(proj[i] << " weights' gradient: " << g.str());
      CHECK(g.max_abs <= 1e-5 * std::max(g.scale, 1.0));
    }
    // The patch embedding's gradient: through dQ, dK and dV summed.
    const Comparison g = compare(find(b, "fine").params()[0].grad, to_vec(find(a, "fine").params()[0].grad));
    INFO("patch weights' gradient: " << g.str());
    CHECK(g.max_abs <= 1e-5 * std::max(g.scale, 1.0));
    for (size_t e = 0; e < extra; ++e) {
      const Comparison gb = compare(find(b, "att").params()[e].grad, to_vec(sa[8 + e].grad));
      INFO(sa[8 + e].name << "'s gradient: " << gb.str());
      CHECK(gb.max_abs <= 1e-5 * std::max(gb.scale, 1.0));
      if (sa[8 + e].name != "ScoreMixBias") CHECK(gb.scale > 1e-4);  // that one's is 0 (attention_op.h)
    }
  }
}

TEST_CASE("attention: option and shape errors name the layer", "[layers][attention]") {
  auto build = [](const std::string& att) {
    return Network(yaml_net(kTwoSequences + "  - {type: attention, Name: att, " + att + "}\n" + kHead), Device::cpu());
  };
  CHECK_THROWS_WITH(build("Inputs: [fine, coarse, coarse]"), Catch::Contains("option NumHeads is required"));
  CHECK_THROWS_WITH(build("NumHeads: 1, Inputs: [fine, coarse]"),
                    Catch::Contains("layer 'att' (attention) takes 3 input(s) but has 2"));
  CHECK_THROWS_WITH(build("NumHeads: 1, Inputs: [fine, coarse, coarse]"),
                    Catch::Contains("the key has 5 channels and the query 6"));
  CHECK_THROWS_WITH(build("NumHeads: 1, Inputs: [fine, fine, coarse]"),
                    Catch::Contains("the value has 4 tokens and the key 16"));
  CHECK_THROWS_WITH(build("NumHeads: 4, Inputs: [fine, fine, fine]"),
                    Catch::Contains("the query and key channels (6) are not a multiple of NumHeads (4)"));
  CHECK_THROWS_WITH(build("NumHeads: 2, Scale: 0, Inputs: [fine, fine, fine]"),
                    Catch::Contains("option Scale must be auto or a finite non-zero number, got 0"));
  CHECK_THROWS_WITH(build("NumHeads: 2, HasScoresOutput: true, Inputs: [fine, fine, fine]"),
                    Catch::Contains("HasScoresOutput true is not supported"));
  CHECK_THROWS_WITH(build("NumHeads: 2, HasPaddingMaskInput: true, Inputs: [fine, fine, fine]"),
                    Catch::Contains("HasPaddingMaskInput true is not supported"));
  // An image's pixels are tokens too: the output is an image (8x8x3), which the token head refuses.
  CHECK_THROWS_WITH(build("NumHeads: 1, Inputs: [in, in, in]"),
                    Catch::Contains("layer 'gap' (globalAveragePooling1d) does not take SSCB data, which 'att' "
                                    "(attention) gives (8x8x3)"));
  CHECK_THROWS_WITH(build("NumHeads: 1, Inputs: [in, fine, fine]"),
                    Catch::Contains("the key has 6 channels and the query 3"));
  CHECK_THROWS_WITH(build("NumHeads: 2, ScoreMixWeightsL2Factor: 0, Inputs: [fine, fine, fine]"),
                    Catch::Contains("unknown option 'ScoreMixWeightsL2Factor'"));
  CHECK_THROWS_WITH(build("NumHeads: 2, ProbabilityMixBiasPerPair: true, Inputs: [fine, fine, fine]"),
                    Catch::Contains("unknown option 'ProbabilityMixBiasPerPair'"));
  CHECK_NOTHROW(Network(yaml_net(kOneSequence +
                                 "  - {type: attention, Name: att, NumHeads: 2, Scale: auto, AttentionMask: causal, "
                                 "Inputs: [fine, fine, fine]}\n" +
                                 kHead),
                        Device::cpu()));
}
