// Token sequences and attention through ONNX: a transformer written in YAML (column-major
// patches, class token, a position table longer than the sequence, a causal attention whose
// value width differs from its key width, per-token MLP, the mean over the tokens) exports
// and reads back as the same network computing the same probabilities; attention chains
// written as PyTorch's exporters write them read as one selfAttention layer; and the import
// refuses, in one line, what does not match (sizes, position tables, masks, batch-2 exports).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "onnx_test_graph.h"
#include "support/tensor_utils.h"
#include "util/rng.h"

namespace dlt::test {
namespace {

const char* kTransformer = R"(
layers:
  - {type: imageInput, Name: input, InputSize: [8, 6, 3], Normalization: none}
  - {type: patchEmbedding, Name: patch, PatchSize: 2, OutputSize: 8}
  - {type: embeddingConcatenation, Name: cls}
  - {type: positionEmbedding, Name: pos, OutputSize: 8, MaxPosition: 16}
  - {type: addition, Name: embed, Inputs: [cls, pos]}
  - {type: layerNormalization, Name: ln1}
  - {type: selfAttention, Name: attn, NumHeads: 2, NumKeyChannels: 8, NumValueChannels: 6, AttentionMask: causal}
  - {type: addition, Name: add1, Inputs: [attn, embed]}
  - {type: layerNormalization, Name: ln2}
  - {type: fullyConnected, Name: fc1, OutputSize: 12, OperationDimension: channel}
  - {type: gelu, Name: gelu}
  - {type: fullyConnected, Name: fc2, OutputSize: 8, OperationDimension: channel}
  - {type: addition, Name: add2, Inputs: [fc2, add1]}
  - {type: globalAveragePooling1d, Name: mean}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
)";

// The tokens of the first layers of a tiny ViT in ONNX: x (1, 3, 4, 4) -> Conv 2x2 stride 2 (4
// channels) -> Reshape (1, 4, 4) -> Transpose (0, 2, 1): 4 tokens of 4 channels, named "t".
// A 2x2 convolution of stride 2 of a 4x4 RGB image: a 2x2 image "grid" of 4 channels (without
// patch_tokens' Reshape and Transpose after it).
OnnxBuilder conv_grid(int64_t batch = 1) {
  OnnxBuilder b({batch, 3, 4, 4}, 17, false);
  b.floats("w", {4, 3, 2, 2}, lcg_values(48, 3));
  auto& conv = b.node("Conv", {"x", "w"}, {"grid"});
  OnnxBuilder::attr(conv, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(conv, "strides", std::vector<int64_t>{2, 2});
  return b;
}

OnnxBuilder patch_tokens(int64_t batch = 1) {
  OnnxBuilder b({batch, 3, 4, 4}, 17, false);
  std::vector<float> w(4 * 3 * 2 * 2);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * static_cast<float>(i % 7) - 0.1f;
  b.floats("w", {4, 3, 2, 2}, w);
  b.floats("bias", {4}, {0.1f, -0.2f, 0.3f, 0.f});
  auto& conv = b.node("Conv", {"x", "w", "bias"}, {"grid"});
  OnnxBuilder::attr(conv, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(conv, "strides", std::vector<int64_t>{2, 2});
  b.ints("flat_shape", {3}, {batch, 4, 4});
  b.node("Reshape", {"grid", "flat_shape"}, {"flat"});
  OnnxBuilder::attr(b.node("Transpose", {"flat"}, {"t"}), "perm", std::vector<int64_t>{0, 2, 1});
  return b;
}

// The end of a classifier after tokens `v`: Gather of the first token, Gemm to 2 classes, Softmax.
void classify_first_token(OnnxBuilder& b, const std::string& v) {
  b.ints("first", {}, {0});
  OnnxBuilder::attr(b.node("Gather", {v, "first"}, {"token"}), "axis", int64_t{1});
  b.floats("head", {4, 2}, {0.5f, -0.5f, 0.25f, 0.1f, -0.3f, 0.2f, 0.4f, -0.1f});
  b.node("MatMul", {"token", "head"}, {"logits"});
  OnnxBuilder::attr(b.node("Softmax", {"logits"}, {"prob"}), "axis", int64_t{1});
  b.output("prob");
}

// The end of a classifier after a flat (N, k) value `v`: MatMul by a (k, 2) head, Softmax.
void classify_vector(OnnxBuilder& b, const std::string& v, int64_t k) {
  b.floats("head", {k, 2}, lcg_values(static_cast<size_t>(2 * k), 5));
  b.node("MatMul", {v, "head"}, {"logits"});
  OnnxBuilder::attr(b.node("Softmax", {"logits"}, {"prob"}), "axis", int64_t{1});
  b.output("prob");
}

// PyTorch's attention over tokens "t" (4 tokens, 4 channels, 2 heads of 2) as the dynamo
// exporter writes nn.MultiheadAttention: a joint projection, the unflatten into Q, K, V, the
// heads, the scale on both operands, Softmax, the merge of the heads and the output
// projection; `mask` adds an (S, S) constant to the scores. `batch`: the images the graph was
// exported with (baked into the Reshape targets, as the exporters do). Returns the output's name.
std::string torch_attention(OnnxBuilder& b, const std::vector<float>& mask = {}, int64_t batch = 1,
                            const std::vector<int64_t>& mask_dims = {4, 4}) {
  std::vector<float> wqkv(4 * 12), bqkv(12), wo(4 * 4);
  for (size_t i = 0; i < wqkv.size(); ++i) wqkv[i] = std::sin(0.7f * static_cast<float>(i));
  for (size_t i = 0; i < bqkv.size(); ++i) bqkv[i] = 0.1f * std::cos(static_cast<float>(i));
  for (size_t i = 0; i < wo.size(); ++i) wo[i] = 0.3f * std::cos(1.3f * static_cast<float>(i));
  b.floats("wqkv", {4, 12}, wqkv);
  b.floats("bqkv", {12}, bqkv);
  b.floats("wo", {4, 4}, wo);
  OnnxBuilder::attr(b.node("Transpose", {"t"}, {"seq_first"}), "perm", std::vector<int64_t>{1, 0, 2});
  b.node("MatMul", {"seq_first", "wqkv"}, {"qkv_product"});
  b.node("Add", {"qkv_product", "bqkv"}, {"qkv"});
  b.ints("unflatten", {4}, {4, batch, 3, 4});
  b.node("Reshape", {"qkv", "unflatten"}, {"qkv3"});
  b.ints("zero_axis", {1}, {0});
  b.node("Unsqueeze", {"qkv3", "zero_axis"}, {"qkv5"});
  OnnxBuilder::attr(b.node("Transpose", {"qkv5"}, {"qkv5t"}), "perm", std::vector<int64_t>{3, 1, 2, 0, 4});
  b.ints("squeeze_axis", {1}, {-2});
  b.node("Squeeze", {"qkv5t", "squeeze_axis"}, {"parts"});
  b.ints("heads_shape", {3}, {4, batch * 2, 2});
  b.ints("batch_heads", {4}, {batch, 2, 4, 2});
  const char* names[3] = {"q", "k", "v"};
  for (int64_t i = 0; i < 3; ++i) {
    const std::string p = names[i];
    b.ints(p + "_index", {}, {i});
    OnnxBuilder::attr(b.node("Gather", {"parts", p + "_index"}, {p + "_seq"}), "axis", int64_t{0});
    b.node("Reshape", {p + "_seq", "heads_shape"}, {p + "_split"});
    OnnxBuilder::attr(b.node("Transpose", {p + "_split"}, {p + "_heads"}), "perm", std::vector<int64_t>{1, 0, 2});
    b.node("Reshape", {p + "_heads", "batch_heads"}, {p + "_4d"});
  }
  OnnxBuilder::attr(b.node("Transpose", {"k_4d"}, {"k_t"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
  b.floats("root_scale", {1}, {1.f / std::sqrt(std::sqrt(2.f))});
  b.node("Mul", {"q_4d", "root_scale"}, {"q_scaled"});
  b.node("Mul", {"k_t", "root_scale"}, {"k_scaled"});
  b.node("MatMul", {"q_scaled", "k_scaled"}, {"scores"});
  std::string scores = "scores";
  if (!mask.empty()) {
    b.floats("mask", mask_dims, mask);
    b.node("Add", {"scores", "mask"}, {"masked"});
    scores = "masked";
  }
  OnnxBuilder::attr(b.node("Softmax", {scores}, {"probs"}), "axis", int64_t{-1});
  b.node("MatMul", {"probs", "v_4d"}, {"weighted"});
  OnnxBuilder::attr(b.node("Transpose", {"weighted"}, {"merged_t"}), "perm", std::vector<int64_t>{2, 0, 1, 3});
  b.ints("merged_shape", {2}, {4 * batch, 4});
  b.node("Reshape", {"merged_t", "merged_shape"}, {"merged"});
  OnnxBuilder::attr(b.node("Gemm", {"merged", "wo"}, {"projected"}), "transB", int64_t{1});
  b.ints("back_shape", {3}, {4, batch, 4});
  b.node("Reshape", {"projected", "back_shape"}, {"back"});
  OnnxBuilder::attr(b.node("Transpose", {"back"}, {"attended"}), "perm", std::vector<int64_t>{1, 0, 2});
  return "attended";
}

// Cross-attention of the 4 tokens "t" over one token "m" (a 4x4 patch of the image: Conv 4x4
// stride 4, 4 channels): Q = t Wq, K = m Wk, V = (values == "t" ? t : m) Wv, 2 heads of 2,
// `mask` (4 x 1) added to the scores, the output projection. Returns the output's name.
std::string cross_attention(OnnxBuilder& b, const std::string& values = "m", const std::vector<float>& mask = {}) {
  std::vector<float> wm(4 * 3 * 4 * 4);
  for (size_t i = 0; i < wm.size(); ++i) wm[i] = 0.03f * static_cast<float>(i % 11) - 0.15f;
  b.floats("wm", {4, 3, 4, 4}, wm);
  auto& conv = b.node("Conv", {"x", "wm"}, {"mgrid"});
  OnnxBuilder::attr(conv, "kernel_shape", std::vector<int64_t>{4, 4});
  OnnxBuilder::attr(conv, "strides", std::vector<int64_t>{4, 4});
  b.ints("m_shape", {3}, {1, 4, 1});
  b.node("Reshape", {"mgrid", "m_shape"}, {"mflat"});
  OnnxBuilder::attr(b.node("Transpose", {"mflat"}, {"m"}), "perm", std::vector<int64_t>{0, 2, 1});
  const char* part[3] = {"q", "k", "v"};
  const std::string from[3] = {"t", "m", values};
  const std::vector<int64_t> perm[3] = {{0, 2, 1, 3}, {0, 2, 3, 1}, {0, 2, 1, 3}};
  for (int i = 0; i < 3; ++i) {
    const std::string p = part[i];
    std::vector<float> w(16);
    for (size_t j = 0; j < w.size(); ++j) w[j] = std::sin(0.9f * static_cast<float>(j) + static_cast<float>(i));
    b.floats("w" + p, {4, 4}, w);
    b.node("MatMul", {from[i], "w" + p}, {p});
    const int64_t seq = from[i] == "t" ? 4 : 1;
    b.ints(p + "_shape", {4}, {1, seq, 2, 2});
    b.node("Reshape", {p, p + "_shape"}, {p + "_split"});
    OnnxBuilder::attr(b.node("Transpose", {p + "_split"}, {p + "_heads"}), "perm", perm[i]);
  }
  b.node("MatMul", {"q_heads", "k_heads"}, {"scores"});
  std::string scores = "scores";
  if (!mask.empty()) {
    b.floats("mask", {4, 1}, mask);
    b.node("Add", {"scores", "mask"}, {"masked"});
    scores = "masked";
  }
  OnnxBuilder::attr(b.node("Softmax", {scores}, {"probs"}), "axis", int64_t{-1});
  b.node("MatMul", {"probs", "v_heads"}, {"weighted"});
  OnnxBuilder::attr(b.node("Transpose", {"weighted"}, {"merged_t"}), "perm", std::vector<int64_t>{0, 2, 1, 3});
  b.ints("merged_shape", {3}, {1, 4, 4});
  b.node("Reshape", {"merged_t", "merged_shape"}, {"merged"});
  b.floats("wo", {4, 4},
           std::vector<float>{0.5f, -0.2f, 0.1f, 0.3f, 0.2f, 0.4f, -0.3f, 0.1f, -0.1f, 0.2f, 0.6f, 0.2f, 0.3f, -0.4f,
                              0.2f, 0.5f});
  b.node("MatMul", {"merged", "wo"}, {"attended"});
  return "attended";
}

// The same attention computed directly (double): the class probabilities of the first token's
// head for image x (1, 3, 4, 4 NCHW as the graph reads it), causal when asked.
std::vector<double> reference(OnnxBuilder& b, const std::vector<float>& x_nchw, bool causal) {
  auto init = [&](const std::string& name) {
    for (const auto& t : b.model().graph().initializer())
      if (t.name() == name) {
        std::vector<float> v(static_cast<size_t>(t.raw_data().size() / sizeof(float)));
        std::memcpy(v.data(), t.raw_data().data(), t.raw_data().size());
        return std::vector<double>(v.begin(), v.end());
      }
    FAIL("no initializer " << name);
    return std::vector<double>{};
  };
  const auto w = init("w"), bias = init("bias"), wqkv = init("wqkv"), bqkv = init("bqkv"), wo = init("wo"),
             head = init("head");
  double t[4][4];  // token (row-major patch) x channel
  for (int gy = 0; gy < 2; ++gy)
    for (int gx = 0; gx < 2; ++gx)
      for (int k = 0; k < 4; ++k) {
        double s = bias[static_cast<size_t>(k)];
        for (int c = 0; c < 3; ++c)
          for (int dy = 0; dy < 2; ++dy)
            for (int dx = 0; dx < 2; ++dx)
              s += w[static_cast<size_t>(((k * 3 + c) * 2 + dy) * 2 + dx)] *
                   x_nchw[static_cast<size_t>((c * 4 + gy * 2 + dy) * 4 + gx * 2 + dx)];
        t[gy * 2 + gx][k] = s;
      }
  double qkv[4][12];
  for (int s = 0; s < 4; ++s)
    for (int o = 0; o < 12; ++o) {
      qkv[s][o] = bqkv[static_cast<size_t>(o)];
      for (int c = 0; c < 4; ++c) qkv[s][o] += t[s][c] * wqkv[static_cast<size_t>(c * 12 + o)];
    }
  double merged[4][4] = {};
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i) {
      double p[4], sum = 0, top = -1e300;
      for (int j = 0; j < 4; ++j) {
        p[j] = 0;
        for (int d = 0; d < 2; ++d) p[j] += qkv[i][h * 2 + d] * qkv[j][4 + h * 2 + d];
        p[j] /= std::sqrt(2.0);
        if (causal && j > i) p[j] = -1e300;
        top = std::max(top, p[j]);
      }
      for (int j = 0; j < 4; ++j) sum += p[j] = (causal && j > i) ? 0 : std::exp(p[j] - top);
      for (int d = 0; d < 2; ++d)
        for (int j = 0; j < 4; ++j) merged[i][h * 2 + d] += p[j] / sum * qkv[j][8 + h * 2 + d];
    }
  double first[4];  // the first token after the output projection (Gemm transB: wo is (out, in))
  for (int o = 0; o < 4; ++o) {
    first[o] = 0;
    for (int c = 0; c < 4; ++c) first[o] += merged[0][c] * wo[static_cast<size_t>(o * 4 + c)];
  }
  double logit[2];
  for (int k = 0; k < 2; ++k) {
    logit[k] = 0;
    for (int c = 0; c < 4; ++c) logit[k] += first[c] * head[static_cast<size_t>(c * 2 + k)];
  }
  const double top = std::max(logit[0], logit[1]);
  const double e0 = std::exp(logit[0] - top), e1 = std::exp(logit[1] - top);
  return {e0 / (e0 + e1), e1 / (e0 + e1)};
}

// NCHW image -> the NHWC layout `probabilities` reads.
std::vector<float> to_nhwc(const std::vector<float>& nchw, int64_t c, int64_t h, int64_t w) {
  std::vector<float> out(nchw.size());
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        out[static_cast<size_t>((y * w + x) * c + ch)] = nchw[static_cast<size_t>((ch * h + y) * w + x)];
  return out;
}

// The classifier head of the YAML networks below: mean over the tokens, 3 classes.
const std::string kTokenHead =
    "  - {type: globalAveragePooling1d, Name: gap}\n"
    "  - {type: fullyConnected, Name: fc, OutputSize: 3}\n"
    "  - {type: softmax, Name: sm}\n"
    "  - {type: classification, Name: out}\n";

// Whether the imported model has the spec's layer types (the imported ones in the graph's order).
void same_layer_types(const NetworkSpec& spec, const ModelData& back) {
  std::multiset<std::string> want, got;
  for (const auto& l : spec.layers) want.insert(l.type);
  for (const auto& l : back.network.layers) got.insert(l.type);
  CHECK(got == want);
}

}  // namespace

TEST_CASE("onnx tokens: a transformer from YAML exports and reads back as the same network", "[onnx][vit]") {
  Network net(network_spec_from_yaml(kTransformer, "transformer.yaml"), Device::cpu());
  net.init_params(7);
  const ModelData back = round_trip(net, 8 * 6 * 3);
  std::vector<std::string> types;
  for (const auto& l : back.network.layers) types.push_back(l.type);
  CHECK(types == std::vector<std::string>{"imageInput", "patchEmbedding", "embeddingConcatenation", "positionEmbedding",
                                          "addition", "layerNormalization", "selfAttention", "addition",
                                          "layerNormalization", "fullyConnected", "gelu", "fullyConnected", "addition",
                                          "globalAveragePooling1d", "fullyConnected", "softmax", "classification"});
  const LayerSpec* attn = layer_of_type(back, "selfAttention");
  REQUIRE(attn);
  CHECK(attn->get_string("AttentionMask", "none") == "causal");
  CHECK(attn->get_int("NumHeads", 0) == 2);
  CHECK(attn->get_int("NumKeyChannels", 0) == 8);
  CHECK(attn->get_int("NumValueChannels", 0) == 6);
  CHECK(layer_of_type(back, "patchEmbedding")->get_string("SpatialFlattenMode", "") == "column-major");
}

// The attention layer (MATLAB's attentionLayer) exports as selfAttention's chain without its
// projections and reads back as an attention layer between fullyConnected projections: queries
// and keys from different sequences (16 and 4 tokens), keys without a projection, a causal mask
// over fewer keys than queries with a scale of its own, heads read by an addition without an
// output projection.
TEST_CASE("onnx tokens: cross-attention from YAML (the attention layer) exports and reads back", "[onnx][vit]") {
  const std::string file = std::string(DLT_SOURCE_DIR) + "/tests/data/vit/cross_attention.yaml";
  const std::string causal = R"(
layers:
  - {type: imageInput, Name: input, InputSize: [8, 8, 3], Normalization: none}
  - {type: patchEmbedding, Name: fine, PatchSize: 2, OutputSize: 8}
  - {type: patchEmbedding, Name: coarse, PatchSize: 4, OutputSize: 6, Inputs: input}
  - {type: fullyConnected, Name: q, OutputSize: 4, OperationDimension: channel, Inputs: fine}
  - {type: fullyConnected, Name: k, OutputSize: 4, OperationDimension: channel, Inputs: coarse}
  - {type: fullyConnected, Name: v, OutputSize: 8, OperationDimension: channel, Inputs: coarse}
  - {type: attention, Name: att, NumHeads: 2, AttentionMask: causal, Scale: 0.3, Inputs: [q, k, v]}
  - {type: addition, Name: add, Inputs: [att, fine]}
)" + kTokenHead;
  // LeViT's form: a learnable bias on the scores, an activation before the output projection
  std::string biased = causal;
  biased.replace(biased.find("AttentionMask: causal"), std::string("AttentionMask: causal").size(), "ScoreBias: true");
  biased.replace(biased.find("  - {type: addition"), 0, "  - {type: hardSwish, Name: act}\n");
  biased.replace(biased.find("Inputs: [att, fine]"), std::string("Inputs: [att, fine]").size(), "Inputs: [act, fine]");
  for (const NetworkSpec& spec : {load_config(file).network, network_spec_from_yaml(causal, "causal.yaml"),
                                  network_spec_from_yaml(biased, "biased.yaml")}) {
    Network net(spec, Device::cpu());
    net.init_params(7);
    std::vector<float> drawn;  // the score bias, drawn in [-1, 1)
    Rng rng(5);
    for (size_t i = 0; i < net.size(); ++i)
      for (Param& p : net.layer(i).params())
        if (p.name == "ScoreBias") {
          for (int64_t j = 0; j < p.value.numel(); ++j)
            drawn.push_back(p.value.data()[j] = static_cast<float>(rng.uniform(-1.0, 1.0)));
        }
    const ModelData back = round_trip(net);
    const LayerSpec* att = layer_of_type(back, "attention");
    REQUIRE(att);
    CHECK(att->inputs.size() == 3);
    CHECK(!layer_of_type(back, "selfAttention"));
    same_layer_types(spec, back);
    const LayerSpec* orig = nullptr;
    for (const auto& l : spec.layers)
      if (l.type == "attention") orig = &l;
    REQUIRE(orig);
    CHECK(att->get_string("AttentionMask", "none") == orig->get_string("AttentionMask", "none"));
    CHECK(att->get_double("Scale", 0) == Approx(orig->get_double("Scale", 0)));
    CHECK(att->get_bool("ScoreBias", false) == !drawn.empty());
    for (const NamedTensor& p : back.params)
      if (p.layer == att->name && p.name == "ScoreBias") {
        REQUIRE(p.data.size() == drawn.size());  // (2 heads, 16 queries, 4 keys)
        for (size_t j = 0; j < drawn.size(); ++j) CHECK(p.data[j] == Approx(drawn[j]).margin(1e-6));
        drawn.clear();
      }
    CHECK(drawn.empty());
  }
}

// Talking heads (CaiT's) on selfAttention (with a ScoreBias, added before the scores' mix) and on
// the attention layer (causal: the mask after the mix; its weights' bias per pair of tokens,
// ConViT's form) export as PyTorch's Linear over the heads (Transpose, MatMul, Add, Transpose;
// the bias per pair an Add after it) and read back as the same layers with the same mixes.
TEST_CASE("onnx tokens: talking heads from YAML export and read back", "[onnx][vit]") {
  const std::string yaml = R"(
layers:
  - {type: imageInput, Name: input, InputSize: [8, 8, 3], Normalization: none}
  - {type: patchEmbedding, Name: fine, PatchSize: 2, OutputSize: 8}
  - {type: selfAttention, Name: sa, NumHeads: 4, NumKeyChannels: 8, ScoreBias: true, TalkingHeads: true}
  - {type: fullyConnected, Name: q, OutputSize: 6, OperationDimension: channel, Inputs: sa}
  - {type: fullyConnected, Name: k, OutputSize: 6, OperationDimension: channel, Inputs: sa}
  - {type: fullyConnected, Name: v, OutputSize: 8, OperationDimension: channel, Inputs: sa}
  - {type: attention, Name: att, NumHeads: 2, AttentionMask: causal, TalkingHeads: true,
     ProbabilityMixBiasPerPair: true, Inputs: [q, k, v]}
  - {type: addition, Name: add, Inputs: [att, fine]}
)" + kTokenHead;
  Network net(network_spec_from_yaml(yaml, "talking.yaml"), Device::cpu());
  net.init_params(7);
  std::map<std::string, std::vector<float>> drawn;  // layer/learnable: the mixes and the bias, in [-1, 1)
  Rng rng(5);
  for (size_t i = 0; i < net.size(); ++i)
    for (Param& p : net.layer(i).params())
      if (p.name.find("Mix") != std::string::npos || p.name == "ScoreBias") {
        std::vector<float>& d = drawn[net.layer(i).name() + "/" + p.name];
        for (int64_t j = 0; j < p.value.numel(); ++j)
          d.push_back(p.value.data()[j] = static_cast<float>(rng.uniform(-1.0, 1.0)));
      }
  REQUIRE(drawn.size() == 9);
  const ModelData back = round_trip(net);
  const LayerSpec* sa = layer_of_type(back, "selfAttention");
  const LayerSpec* att = layer_of_type(back, "attention");
  REQUIRE(sa);
  REQUIRE(att);
  CHECK(sa->get_bool("TalkingHeads", false));
  CHECK(sa->get_bool("ScoreBias", false));
  CHECK(att->get_bool("TalkingHeads", false));
  CHECK(att->get_bool("ProbabilityMixBiasPerPair", false));
  CHECK(!sa->get_bool("ProbabilityMixBiasPerPair", false));
  CHECK(att->get_string("AttentionMask", "none") == "causal");
  size_t compared = 0;
  for (const NamedTensor& p : back.params) {
    const std::string role = p.layer == sa->name ? "sa/" : p.layer == att->name ? "att/" : "";
    if (role.empty() || !drawn.count(role + p.name)) continue;
    const std::vector<float>& want = drawn.at(role + p.name);
    REQUIRE(p.data.size() == want.size());
    for (size_t j = 0; j < want.size(); ++j) CHECK(p.data[j] == Approx(want[j]).margin(1e-6));
    ++compared;
  }
  CHECK(compared == 9);
}

// CaiT's class attention from YAML: the class token's query alone (a vector, indexing1d and a
// fullyConnected) over every token, its one-token output layer-normalized and projected per
// token: the vector exports as one token (Unsqueeze of axis 1) and reads back as the same layers.
TEST_CASE("onnx tokens: a vector query (class attention) exports and reads back", "[onnx][vit]") {
  const std::string yaml = R"(
layers:
  - {type: imageInput, Name: input, InputSize: [8, 8, 3], Normalization: none}
  - {type: patchEmbedding, Name: fine, PatchSize: 2, OutputSize: 8}
  - {type: embeddingConcatenation, Name: cls}
  - {type: indexing1d, Name: first, Index: first}
  - {type: fullyConnected, Name: q, OutputSize: 8, Inputs: first}
  - {type: fullyConnected, Name: k, OutputSize: 8, OperationDimension: channel, Inputs: cls}
  - {type: fullyConnected, Name: v, OutputSize: 8, OperationDimension: channel, Inputs: cls}
  - {type: attention, Name: att, NumHeads: 2, Inputs: [q, k, v]}
  - {type: layerNormalization, Name: ln}
  - {type: fullyConnected, Name: mlp, OutputSize: 8, OperationDimension: channel}
)" + kTokenHead;
  const NetworkSpec spec = network_spec_from_yaml(yaml, "class_attention.yaml");
  Network net(spec, Device::cpu());
  net.init_params(7);
  const ModelData back = round_trip(net);
  const LayerSpec* att = layer_of_type(back, "attention");
  REQUIRE(att);
  CHECK(att->inputs.size() == 3);
  same_layer_types(spec, back);
}

// Channel attention (tests/data/vit/channel_attention.yaml: on tokens between projections, in
// XCiT's form with its temperatures and a per-channel scale of the tokens, on an image with a
// scale of its own) exports in XCiT's and DaViT's form (Q^T K, Softmax, times V^T) and reads back
// as the same layers with their options and learnables.
TEST_CASE("onnx tokens: channel attention from YAML exports and reads back", "[onnx][vit][channel]") {
  const NetworkSpec spec = load_config(std::string(DLT_SOURCE_DIR) + "/tests/data/vit/channel_attention.yaml").network;
  Network net(spec, Device::cpu());
  net.init_params(7);
  const std::vector<float> temperature{0.5f, 1.5f, 2.f, 0.8f}, scale{0.6f, 1.1f, 0.9f, 1.3f, 0.7f, 1.2f, 1.f, 0.5f};
  for (size_t i = 0; i < net.size(); ++i)
    for (Param& p : net.layer(i).params()) {
      const std::vector<float>* v = p.name == "Temperature"                              ? &temperature
                                    : net.layer(i).name() == "ls" && p.name == "Weights" ? &scale
                                                                                         : nullptr;
      if (v) std::copy(v->begin(), v->end(), p.value.data());
    }
  const ModelData back = round_trip(net);
  std::vector<const LayerSpec*> ca;
  for (const auto& l : back.network.layers)
    if (l.type == "channelAttention") ca.push_back(&l);
  REQUIRE(ca.size() == 3);
  CHECK(ca[0]->get_int("NumHeads", 0) == 2);
  CHECK(ca[0]->get_double("Scale", 0) == 0);  // auto
  CHECK(!ca[0]->get_bool("NormalizeQueryKey", false));
  CHECK(ca[1]->get_int("NumHeads", 0) == 3);  // the feature map's
  CHECK(ca[1]->get_double("Scale", 0) == Approx(0.8));
  CHECK(ca[2]->get_int("NumHeads", 0) == 4);  // XCiT's
  CHECK(ca[2]->get_bool("NormalizeQueryKey", false));
  CHECK(ca[2]->get_double("Scale", 0) == 0);  // auto: 1
  bool found = false;
  for (const NamedTensor& p : back.params)
    if (p.layer == ca[2]->name && p.name == "Temperature") {
      found = true;
      CHECK(p.data == temperature);
    }
  CHECK(found);
  Network again(back.network, Device::cpu());
  for (size_t i = 0; i < again.size(); ++i) {
    const LayerSpec& l = back.network.layers[i];
    if (l.type != "channelAttention") continue;
    INFO(l.name);  // the tokens' layers of 2 and 4 heads, the feature map's of 3
    CHECK(again.output_format(i) == (l.get_int("NumHeads", 0) == 3 ? DataFormat::kSSCB : DataFormat::kSCB));
  }
  CHECK(!layer_of_type(back, "attention"));
  CHECK(!layer_of_type(back, "selfAttention"));
}

// Attention on images (tests/data/vit/pvt_image.yaml: the attention layer's queries, keys and
// values all images of two sizes, selfAttention on an image, fullyConnected per pixel) exports in
// PVT's form (the pixels as tokens by Transpose (0, 2, 3, 1) and Reshape, the output back by
// Reshape and Transpose (0, 3, 1, 2); fullyConnected per pixel a 1x1 Conv) and reads back as the
// same function: the attention layer and selfAttention on images again.
TEST_CASE("onnx tokens: attention on images from YAML exports and reads back", "[onnx][vit]") {
  const std::string file = std::string(DLT_SOURCE_DIR) + "/tests/data/vit/pvt_image.yaml";
  Network net(load_config(file).network, Device::cpu());
  net.init_params(7);
  const ModelData back = round_trip(net);
  Network again(back.network, Device::cpu());
  for (const char* type : {"attention", "selfAttention"}) {
    INFO(type);
    bool found = false;
    for (size_t i = 0; i < again.size(); ++i)
      if (back.network.layers[i].type == type) {
        found = true;
        CHECK(again.output_format(i) == DataFormat::kSSCB);
        CHECK(again.output_shape(i)[0] * again.output_shape(i)[1] == 16);
      }
    CHECK(found);
  }
}

// PiT's stages (tests/data/vit/pit.yaml) export (positionEmbedding on an image as a (1, C, H, W)
// table, the class token in front of the map's pixels, tokenSlice as a Slice (and the map's
// Reshape and Transpose), concatenation of tokens as a Concat on axis 1) and read back as the
// same layers; concatenation of images along the height and the width as a Concat on axis 2 or
// 3, read back as concatenation Dim 1 or 2.
TEST_CASE("onnx tokens: PiT's stages and concatenation along every dimension export and read back", "[onnx][vit]") {
  {
    Network net(load_config(std::string(DLT_SOURCE_DIR) + "/tests/data/vit/pit.yaml").network, Device::cpu());
    net.init_params(7);
    const ModelData back = round_trip(net);
    std::vector<std::string> types;
    for (const auto& l : back.network.layers) types.push_back(l.type);
    CHECK(std::count(types.begin(), types.end(), "tokenSlice") == 3);
    CHECK(std::count(types.begin(), types.end(), "concatenation") == 1);
    CHECK(std::count(types.begin(), types.end(), "positionEmbedding") == 1);
    CHECK(std::count(types.begin(), types.end(), "embeddingConcatenation") == 1);
  }
  Network net(network_spec_from_yaml(R"(
layers:
  - {type: imageInput, Name: input, InputSize: [6, 6, 3], Normalization: none}
  - {type: convolution2d, Name: a, FilterSize: 3, NumFilters: 4, Padding: same}
  - {type: convolution2d, Name: b, FilterSize: [3, 1], NumFilters: 4, Inputs: input}
  - {type: concatenation, Name: rows, Dim: 1, Inputs: [a, b]}
  - {type: convolution2d, Name: c, FilterSize: [1, 3], NumFilters: 4, Inputs: rows}
  - {type: concatenation, Name: cols, Dim: 2, Inputs: [rows, c]}
  - {type: concatenation, Name: chans, Dim: 3, Inputs: [cols, cols]}
  - {type: globalAveragePooling2d, Name: gap}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
  - {type: softmax, Name: sm}
  - {type: classification, Name: out}
)",
                                     "concat.yaml"),
              Device::cpu());
  net.init_params(7);
  const ModelData back = round_trip(net, 6 * 6 * 3);
  std::vector<std::string> dims;
  for (const auto& l : back.network.layers)
    if (l.type == "concatenation") dims.push_back(l.get_string("Dim", ""));
  CHECK(dims == std::vector<std::string>{"1", "2"});  // along the channels: depthConcatenation
  CHECK(layer_of_type(back, "depthConcatenation"));
}

// selfAttention's ScoreBias exports as an Add of a (1, heads, S, S) constant to the scaled scores
// and reads back as ScoreBias (the same values); globalAveragePooling1d PrefixTokens 1 as a Slice
// of the tokens from 1 and ReduceMean, read back as PrefixTokens 1 (tests/data/vit/beit.yaml).
TEST_CASE("onnx tokens: BEiT's score bias and pooling after the class token export and read back", "[onnx][vit]") {
  const std::string file = std::string(DLT_SOURCE_DIR) + "/tests/data/vit/beit.yaml";
  Network net(load_config(file).network, Device::cpu());
  net.init_params(7);
  // A bias that is not zero (its initializer's), different per head and pair of tokens.
  for (size_t i = 0; i < net.size(); ++i)
    if (net.layer(i).name() == "attn") {
      Param& b = net.layer(i).params().at(8);
      REQUIRE(b.name == "ScoreBias");
      Rng rng(3);
      b.value.copy_from(random_tensor(b.value.shape(), rng));
    }
  const ModelData back = round_trip(net);
  const LayerSpec* attn = layer_of_type(back, "selfAttention");
  const LayerSpec* gap = layer_of_type(back, "globalAveragePooling1d");
  REQUIRE(attn);
  REQUIRE(gap);
  CHECK(attn->get_bool("ScoreBias", false));
  CHECK(gap->get_int("PrefixTokens", 0) == 1);
}

// selfAttention's rotary embedding exports as the heads of Q and K sliced after the class token,
// x * cos + (x R) * sin (R the pairs' signed permutation) and the class token joined in front
// again, and reads back as RotaryEmbedding with the same tables; interleaved and half pairs, and
// a table per head (tests/data/vit/eva.yaml, its tables' angles random).
TEST_CASE("onnx tokens: EVA-02's rotary embedding exports and reads back", "[onnx][vit]") {
  const std::string file = std::string(DLT_SOURCE_DIR) + "/tests/data/vit/eva.yaml";
  const struct {
    const char* mode;
    bool per_head;
  } cases[] = {{"interleaved", false}, {"half", false}, {"half", true}};
  for (const auto& [mode, per_head] : cases) {
    INFO(mode << (per_head ? ", a table per head" : ""));
    NetworkSpec spec = load_config(file).network;
    for (LayerSpec& l : spec.layers)
      if (l.name == "attn") {
        l.set("RotaryEmbedding", mode);
        if (per_head) l.set("RotaryPerHead", "true");
      }
    Network net(spec, Device::cpu());
    net.init_params(7);
    Vec want_cos, want_sin;
    for (size_t i = 0; i < net.size(); ++i)
      if (net.layer(i).name() == "attn") {
        std::vector<State>& st = net.layer(i).states();
        REQUIRE(st.size() == 2);
        Rng rng(5);
        const Tensor angle = random_tensor(st[0].shape, rng, -3.f, 3.f);
        Tensor c(st[0].shape), s(st[0].shape);
        for (int64_t k = 0; k < angle.numel(); ++k) {
          c.data()[k] = std::cos(angle.data()[k]);
          s.data()[k] = std::sin(angle.data()[k]);
        }
        st[0].value.copy_from(c);
        st[1].value.copy_from(s);
        want_cos = to_vec(c);
        want_sin = to_vec(s);
      }
    const ModelData back = round_trip(net);
    same_layer_types(spec, back);
    const LayerSpec* attn = layer_of_type(back, "selfAttention");
    REQUIRE(attn);
    CHECK(attn->get_string("RotaryEmbedding", "") == mode);
    CHECK(attn->get_int("RotaryPrefixTokens", 0) == 1);
    CHECK(attn->get_bool("RotaryPerHead", false) == per_head);
    Vec got_cos, got_sin;
    for (const auto& st : back.states)
      if (st.layer == attn->name && st.name == "RotaryCos")
        got_cos.assign(st.data.begin(), st.data.end());
      else if (st.layer == attn->name && st.name == "RotarySin")
        got_sin.assign(st.data.begin(), st.data.end());
    CHECK(got_cos == want_cos);
    CHECK(got_sin == want_sin);
  }
}

// flatten exports as Transpose to channels-last and Flatten (of tokens: Flatten), which read back
// as flatten; globalMaxPooling1d as ReduceMax (after a Slice of the prefix token); spatialDropout
// is the identity in inference and leaves no node; adaptiveAveragePooling2d to 4x4 of 8x8 as an
// AveragePool (read back as averagePooling2d), to 3x5 as two averaging MatMul (read back as two
// adaptiveAveragePooling2d, the width's and the height's).
TEST_CASE("onnx tokens: flatten, globalMaxPooling1d, spatialDropout, adaptiveAveragePooling2d export and read back",
          "[onnx][vit]") {
  const std::string file = std::string(DLT_SOURCE_DIR) + "/tests/data/layers/flatten_pool.yaml";
  Network net(load_config(file).network, Device::cpu());
  net.init_params(7);
  const ModelData back = round_trip(net);
  std::vector<std::string> types;
  for (const auto& l : back.network.layers) types.push_back(l.type);
  CHECK(std::count(types.begin(), types.end(), "flatten") == 2);
  CHECK(std::count(types.begin(), types.end(), "spatialDropout") == 0);
  CHECK(std::count(types.begin(), types.end(), "adaptiveAveragePooling2d") == 2);
  CHECK(std::count(types.begin(), types.end(), "averagePooling2d") == 1);
  const LayerSpec* gmax = layer_of_type(back, "globalMaxPooling1d");
  REQUIRE(gmax);
  CHECK(gmax->get_int("PrefixTokens", 0) == 1);
}

// averagePooling1d and maxPooling1d export as a Transpose of the tokens to (N, C, S), a 1-D
// AveragePool / MaxPool and the Transpose back (an image's pixels made tokens first), the
// batchNormalization of tokens likewise between two Transposes; they read back as the same layers.
TEST_CASE("onnx tokens: averagePooling1d, maxPooling1d and batchNormalization of tokens export and read back",
          "[onnx][vit]") {
  const std::string file = std::string(DLT_SOURCE_DIR) + "/tests/data/layers/pool1d.yaml";
  Network net(load_config(file).network, Device::cpu());
  net.init_params(7);
  const ModelData back = round_trip(net);
  std::vector<const LayerSpec*> avg, max;
  for (const auto& l : back.network.layers) {
    if (l.type == "averagePooling1d") avg.push_back(&l);
    if (l.type == "maxPooling1d") max.push_back(&l);
  }
  REQUIRE(avg.size() == 2);
  REQUIRE(max.size() == 1);
  CHECK(avg[0]->get_int("PoolSize", 0) == 9);
  CHECK(avg[0]->get_int("Stride", 0) == 9);
  CHECK(avg[1]->get_ints("Padding", {}, 2) == std::vector<int64_t>{1, 1});
  CHECK(avg[1]->get_string("PaddingValue", "0") == "mean");
  CHECK(max[0]->get_ints("Padding", {}, 2) == std::vector<int64_t>{0, 1});  // same: the odd one on the right
  const LayerSpec* bn = layer_of_type(back, "batchNormalization");
  REQUIRE(bn);
  CHECK(bn == avg[0] + 1);  // on the pooled tokens (the layer before it: no Inputs)
  CHECK((bn->inputs.empty() || bn->inputs == std::vector<std::string>{avg[0]->name}));
}

TEST_CASE("onnx tokens: PyTorch's attention chain reads as one selfAttention layer", "[onnx][vit]") {
  for (const bool causal : {false, true}) {
    INFO((causal ? "causal" : "no mask"));
    OnnxBuilder b = patch_tokens();
    std::vector<float> mask;
    if (causal) {
      mask.assign(16, 0.f);
      for (int r = 0; r < 4; ++r)
        for (int c = r + 1; c < 4; ++c) mask[static_cast<size_t>(r * 4 + c)] = -INFINITY;
    }
    classify_first_token(b, torch_attention(b, mask));
    const ModelData m = imported(b);
    const LayerSpec* attn = layer_of_type(m, "selfAttention");
    REQUIRE(attn);
    CHECK(attn->get_int("NumHeads", 0) == 2);
    CHECK(attn->get_string("AttentionMask", "none") == (causal ? "causal" : "none"));
    CHECK(layer_of_type(m, "patchEmbedding"));
    CHECK(layer_of_type(m, "indexing1d"));
    std::vector<float> x(48);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i) + 1.f);
    const std::vector<double> want = reference(b, x, causal);
    const std::vector<float> got = probabilities(m, to_nhwc(x, 3, 4, 4), 1);
    REQUIRE(got.size() == 2);
    CHECK(std::fabs(got[0] - want[0]) < 1e-5);
    CHECK(std::fabs(got[1] - want[1]) < 1e-5);
  }
}

TEST_CASE("onnx tokens: hostile token graphs are refused in one line", "[onnx][vit]") {
  SECTION("a Reshape of tokens whose sizes do not match") {
    OnnxBuilder b = patch_tokens();
    b.ints("bad", {3}, {1, 4, 3});
    b.node("Reshape", {"t", "bad"}, {"r"});
    classify_first_token(b, "r");
    const std::string e = import_error(b);
    CHECK_THAT(e, Catch::Contains("node 'r' (Reshape): reshapes [1, 4, 4] to [1, 4, 3]: the sizes do not match"));
    CHECK(e.find('\n') == std::string::npos);
  }
  SECTION("a maximum over the channels of the tokens (globalMaxPooling1d reads axis 1)") {
    OnnxBuilder b = patch_tokens();
    auto& max = b.node("ReduceMax", {"t"}, {"m"});
    OnnxBuilder::attr(max, "axes", std::vector<int64_t>{2});
    OnnxBuilder::attr(max, "keepdims", int64_t{0});
    classify_vector(b, "m", 4);
    CHECK_THAT(import_error(b), Catch::Contains("node 'm' (ReduceMax): takes the maximum of tokens over axes [2] with "
                                                "keepdims 0; dltrain reads the maximum over the tokens (axis 1, "
                                                "keepdims 0): globalMaxPooling1d"));
  }
  SECTION("tokens flattened read as flatten; a channels-last image reshaped to (1, 2, 8) is refused") {
    OnnxBuilder b = patch_tokens();
    b.ints("all", {2}, {1, 16});
    b.node("Reshape", {"t", "all"}, {"f"});
    classify_vector(b, "f", 16);
    const ModelData m = imported(b);
    REQUIRE(layer_of_type(m, "flatten"));
    OnnxBuilder c = conv_grid();
    OnnxBuilder::attr(c.node("Transpose", {"grid"}, {"nhwc"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
    c.ints("pixels", {3}, {1, 2, 8});
    c.node("Reshape", {"nhwc", "pixels"}, {"p"});
    classify_vector(c, "p", 8);
    CHECK_THAT(import_error(c), Catch::Contains("node 'p' (Reshape): reshapes a channels-last (N, H, W, C) value to "
                                                "[1, 2, 8]; dltrain reads it flattened to (N, H*W*C), or transposed "
                                                "back to (N, C, H, W) first"));
  }
  SECTION("a MatMul of an image by a constant that is not an averaging matrix; one that is") {
    // (W, 1) weights over the 2 columns of "grid": 0.5 and 0.25 are a weighted sum, 0.5 and 0.5
    // the average (adaptive pooling to one column)
    for (const float second : {0.25f, 0.5f}) {
      OnnxBuilder b = conv_grid();
      b.floats("cols", {2, 1}, {0.5f, second});
      b.node("MatMul", {"grid", "cols"}, {"pooled"});
      b.node("Flatten", {"pooled"}, {"f"});
      classify_vector(b, "f", 8);
      if (second != 0.5f) {
        CHECK_THAT(import_error(b), Catch::Contains("node 'pooled' (MatMul): weight expects 2 inputs but its input "
                                                    "has 16"));
        continue;
      }
      const ModelData m = imported(b);
      const LayerSpec* pool = layer_of_type(m, "adaptiveAveragePooling2d");
      REQUIRE(pool);
      CHECK(pool->get_ints("OutputSize", {}, 2) == std::vector<int64_t>{2, 1});
    }
  }
  SECTION("a second leading token of the wrong width (DeiT's class and distillation tokens)") {
    OnnxBuilder b = patch_tokens();
    b.floats("cls", {1, 1, 4}, {0.1f, 0.2f, 0.3f, 0.4f});
    b.floats("dist", {1, 1, 3}, {0.1f, 0.2f, 0.3f});
    OnnxBuilder::attr(b.node("Concat", {"cls", "dist", "t"}, {"c"}), "axis", int64_t{1});
    classify_first_token(b, "c");
    CHECK_THAT(import_error(b), Catch::Contains("node 'c' (Concat): concatenates a 1x1x3 constant with tokens along "
                                                "axis 1; dltrain reads (1, k, 4) tokens"));
  }
  SECTION("a position table of the wrong length") {
    OnnxBuilder b = patch_tokens();
    b.floats("table", {1, 5, 4}, std::vector<float>(20, 0.1f));
    b.node("Add", {"t", "table"}, {"p"});
    classify_first_token(b, "p");
    CHECK_THAT(import_error(b), Catch::Contains("node 'p' (Add): adds a 1x5x4 constant to 4 tokens of 4 channels; "
                                                "dltrain reads a position table (1, 4, 4)"));
  }
  SECTION("a mask on the scores that is not causal") {
    OnnxBuilder b = patch_tokens();
    std::vector<float> mask(16, 0.f);
    mask[4] = -INFINITY;  // hides key 0 from query 1: not the causal pattern
    classify_first_token(b, torch_attention(b, mask));
    CHECK_THAT(import_error(b), Catch::Contains("node 'masked' (Add): adds a 4x4 constant to attention scores "
                                                "[1, 2, 4, 4]; dltrain reads there a causal mask"));
  }
  SECTION("a graph exported with two images") {
    OnnxBuilder b = patch_tokens(2);
    classify_first_token(b, torch_attention(b, {}, 2));
    const std::string e = import_error(b);
    CHECK_THAT(e, Catch::Contains("the sizes do not match (the graph was exported with a batch of 2 images; dltrain "
                                  "reads token graphs exported with one"));
  }
  SECTION("cross-attention (the graph the sections below break): fullyConnected and attention layers") {
    OnnxBuilder b = patch_tokens();
    classify_first_token(b, cross_attention(b, "m", std::vector<float>(4, 0.f)));  // a causal mask of zeros
    const ModelData m = imported(b);
    const LayerSpec* att = layer_of_type(m, "attention");
    REQUIRE(att);
    CHECK(att->get_string("AttentionMask", "none") == "causal");
    CHECK(att->get_double("Scale", 0) == Approx(1.0));  // no scale in the graph: 1, not 1 / sqrt(2)
  }
  SECTION("cross-attention whose values are another sequence than its keys") {
    OnnxBuilder b = patch_tokens();
    classify_first_token(b, cross_attention(b, "t"));
    CHECK_THAT(import_error(b), Catch::Contains("node 'weighted' (MatMul): multiplies [1, 2, 4, 1] by [1, 2, 4, 2], "
                                                "which dltrain does not read as the attention weights times the heads "
                                                "of V"));
  }
  SECTION("a mask on cross-attention scores that is not causal") {
    OnnxBuilder b = patch_tokens();
    classify_first_token(b, cross_attention(b, "m", {-INFINITY, 0.f, 0.f, 0.f}));
    CHECK_THAT(import_error(b), Catch::Contains("node 'masked' (Add): adds a 4x1 constant to attention scores "
                                                "[1, 2, 4, 1]; dltrain reads there a causal mask ((queries, keys)"));
  }
  SECTION("a finite bias on cross-attention scores: the attention layer's ScoreBias, every head's") {
    OnnxBuilder b = patch_tokens();
    classify_first_token(b, cross_attention(b, "m", {0.5f, 0.f, 0.f, 0.f}));
    const ModelData m = imported(b);
    const LayerSpec* att = layer_of_type(m, "attention");
    REQUIRE(att);
    CHECK(att->get_bool("ScoreBias", false));
    bool found = false;
    for (const auto& p : m.params)
      if (p.layer == att->name && p.name == "ScoreBias") {
        found = true;
        CHECK(p.shape == Shape{2, 4, 1});  // heads, queries, keys
        CHECK(p.data == std::vector<float>{0.5f, 0.f, 0.f, 0.f, 0.5f, 0.f, 0.f, 0.f});
      }
    CHECK(found);
  }
  SECTION("a bias of three heads on the scores of two") {
    OnnxBuilder b = patch_tokens();
    classify_first_token(b, torch_attention(b, std::vector<float>(48, 0.25f), 1, {1, 3, 4, 4}));
    CHECK_THAT(import_error(b), Catch::Contains("node 'masked' (Add): adds a 1x3x4x4 constant to attention scores "
                                                "[1, 2, 4, 4]; dltrain reads there a causal mask"));
  }
  SECTION("a bias of two heads reads as selfAttention's ScoreBias, per head") {
    OnnxBuilder b = patch_tokens();
    std::vector<float> bias(32);
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.05f * static_cast<float>(i);
    classify_first_token(b, torch_attention(b, bias, 1, {1, 2, 4, 4}));
    const ModelData m = imported(b);
    const LayerSpec* attn = layer_of_type(m, "selfAttention");
    REQUIRE(attn);
    CHECK(attn->get_bool("ScoreBias", false));
    for (const auto& p : m.params)
      if (p.layer == attn->name && p.name == "ScoreBias") {
        REQUIRE(p.data.size() == 32);
        CHECK(p.data[31] == Approx(0.05f * 31));  // added after the scale: as it is
      }
  }
  SECTION("tokens sequence-first in a graph exported with two images") {
    OnnxBuilder b = patch_tokens(2);
    OnnxBuilder::attr(b.node("Transpose", {"flat"}, {"seq"}), "perm", std::vector<int64_t>{2, 0, 1});
    classify_first_token(b, "seq");
    CHECK_THAT(import_error(b), Catch::Contains("transposes an image reshaped to (N, C, H*W) with perm [2, 0, 1]; "
                                                "dltrain reads (0, 2, 1): its pixels as tokens (and (2, 0, 1) of a "
                                                "graph exported with one image)"));
  }
  SECTION("a Split of a constant whose sizes do not add up") {
    OnnxBuilder b = patch_tokens();
    b.floats("joint", {4, 8}, std::vector<float>(32, 0.1f));
    b.ints("sizes", {2}, {4, 3});
    OnnxBuilder::attr(b.node("Split", {"joint", "sizes"}, {"wa", "wb"}), "axis", int64_t{1});
    b.node("MatMul", {"t", "wa"}, {"pa"});
    classify_first_token(b, "pa");
    CHECK_THAT(import_error(b), Catch::Contains("folding its constant inputs: splits 8 values of axis 1 into sizes "
                                                "[4, 3] for 2 outputs"));
  }
  SECTION("an arithmetic node on constants with one input of two (fuzz_onnx_import: binary-op-one-input)") {
    OnnxBuilder b = patch_tokens();
    b.floats("two", {1}, {2.f});
    b.node("Add", {"two"}, {"lonely"});
    b.node("Mul", {"t", "lonely"}, {"scaled"});
    classify_first_token(b, "scaled");
    CHECK_THAT(import_error(b), Catch::Contains("node 'lonely' (Add): has 1 inputs; Add takes 2"));
  }
  SECTION("an image layer on tokens") {
    OnnxBuilder b = patch_tokens();
    b.node("Relu", {"t"}, {"relu"});  // element-wise: fine on tokens
    OnnxBuilder::attr(b.node("MaxPool", {"relu"}, {"pooled"}), "kernel_shape", std::vector<int64_t>{2, 2});
    classify_first_token(b, "pooled");
    CHECK_THAT(import_error(b),
               Catch::Contains("node 'pooled' (MaxPool): its input 'relu' is a token sequence (N, S, C)"));
  }
}

}  // namespace dlt::test
