// Swin's window attention through ONNX: windowAttention layers written in YAML (padded, shifted
// with the mask, rectangular windows, another output width, Swin V2's cosine attention, keys
// narrower than values; MaxViT's grid windows) export in the form torchvision's
// shifted_window_attention takes in PyTorch's dynamo export and read back as the same layers
// computing the same probabilities; the import refuses, in one line, a score bias that is not a
// relative position bias, a mask other than torchvision's and a partition whose sizes do not
// match. torchvision's own exports (Swin and Swin V2, both exporters) are the fixtures of
// tests/cli/onnx_zoo_fixtures.sh.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "config/config.h"
#include "onnx_test_graph.h"
#include "util/rng.h"

namespace dlt::test {
namespace {

const char* kWindows = R"(
layers:
  - {type: imageInput, Name: input, InputSize: [7, 5, 4], Normalization: none}
  - {type: windowAttention, Name: w1, NumHeads: 2, WindowSize: 3, ShiftSize: 1}
  - {type: windowAttention, Name: w2, NumHeads: 2, WindowSize: [2, 3], OutputSize: 6, CosineAttention: true}
  - {type: globalAveragePooling2d, Name: gap}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
)";

const char* kGrid = R"(
layers:
  - {type: imageInput, Name: input, InputSize: [6, 4, 4], Normalization: none}
  - {type: windowAttention, Name: g, NumHeads: 2, WindowSize: [3, 2], Partition: grid}
  - {type: globalAveragePooling2d, Name: gap}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
)";

// Keys narrower than values (EfficientFormer's attention): exported in timm's head-first form.
const char* kWideValues = R"(
layers:
  - {type: imageInput, Name: input, InputSize: [5, 4, 4], Normalization: none}
  - {type: windowAttention, Name: w, NumHeads: 2, WindowSize: 3, ShiftSize: 1, NumKeyChannels: 4,
     NumValueChannels: 10, OutputSize: 6}
  - {type: globalAveragePooling2d, Name: gap}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
)";

ModelData model_of(const char* yaml) {
  Network net(network_spec_from_yaml(yaml, "swin.yaml"), Device::cpu());
  net.init_params(5);
  ModelData m = net.to_model_data();
  m.classes = {"a", "b", "c"};
  return m;
}

// The largest difference between the probabilities of m and of its ONNX export read back.
double round_trip(const ModelData& m, const ModelData& back, int64_t values) {
  const std::vector<float> x = random_images(2, values, 13);
  const std::vector<float> p = probabilities(m, x, 2), q = probabilities(back, x, 2);
  REQUIRE(p.size() == q.size());
  double diff = 0;
  for (size_t i = 0; i < p.size(); ++i) diff = std::max(diff, std::fabs(double(p[i]) - q[i]));
  CHECK(std::fabs(p[0] - p[3]) + std::fabs(p[1] - p[4]) > 1e-3);  // the images are told apart
  return diff;
}

// m exported to ONNX and imported back.
ModelData exported_back(const ModelData& m) {
  TempDir dir;
  const std::string path = dir.file("back.onnx");
  export_onnx(m, path);
  return import_onnx(path, {});
}

onnx::ModelProto exported(const ModelData& m, const TempDir& dir) {
  const std::string path = dir.file("swin.onnx");
  export_onnx(m, path);
  onnx::ModelProto proto;
  std::ifstream in(path, std::ios::binary);
  REQUIRE(proto.ParseFromIstream(&in));
  return proto;
}

onnx::TensorProto& initializer(onnx::ModelProto& p, const std::string& name) {
  for (auto& t : *p.mutable_graph()->mutable_initializer())
    if (t.name() == name) return t;
  FAIL("no initializer " << name);
  throw;
}

// The perm of Transpose node `node` in p.
void set_perm(onnx::ModelProto& p, const std::string& node, const std::vector<int64_t>& perm) {
  for (auto& n : *p.mutable_graph()->mutable_node())
    if (n.name() == node)
      for (auto& a : *n.mutable_attribute())
        if (a.name() == "perm") {
          a.clear_ints();
          for (int64_t v : perm) a.add_ints(v);
          return;
        }
  FAIL("no Transpose " << node << " with a perm");
}

// Element i of a float initializer (raw data) plus delta.
void nudge(onnx::TensorProto& t, size_t i, float delta) {
  std::string raw = t.raw_data();
  REQUIRE((i + 1) * sizeof(float) <= raw.size());
  float v;
  std::memcpy(&v, raw.data() + i * sizeof(float), sizeof(float));
  v += delta;
  std::memcpy(raw.data() + i * sizeof(float), &v, sizeof(float));
  t.set_raw_data(raw);
}

}  // namespace

TEST_CASE("onnx window: Swin's window attention exports and reads back as the same layers", "[onnx][swin]") {
  SECTION("padded, shifted, rectangular windows, another output width, cosine attention") {
    const ModelData m = model_of(kWindows);
    const ModelData back = exported_back(m);
    std::vector<const LayerSpec*> attn;
    for (const auto& l : back.network.layers)
      if (l.type == "windowAttention") attn.push_back(&l);
    REQUIRE(attn.size() == 2);
    CHECK(attn[0]->get_ints("WindowSize", {}, 2) == std::vector<int64_t>{3, 3});
    CHECK(attn[0]->get_ints("ShiftSize", {0, 0}, 2) == std::vector<int64_t>{1, 1});
    CHECK(attn[0]->get_int("NumHeads", 0) == 2);
    CHECK(attn[1]->get_ints("WindowSize", {}, 2) == std::vector<int64_t>{2, 3});
    CHECK(attn[1]->get_ints("ShiftSize", {0, 0}, 2) == std::vector<int64_t>{0, 0});
    CHECK(attn[1]->get_int("OutputSize", 0) == 6);
    CHECK(attn[1]->get_bool("CosineAttention", false));
    CHECK(!attn[0]->get_bool("CosineAttention", false));
    CHECK(round_trip(m, back, 7 * 5 * 4) < 1e-5);
  }
  SECTION("keys narrower than values: each head's Q, K and V side by side, split") {
    const ModelData m = model_of(kWideValues);
    const ModelData back = exported_back(m);
    const LayerSpec* w = layer_of_type(back, "windowAttention");
    REQUIRE(w);
    CHECK(w->get_int("NumKeyChannels", 0) == 4);
    CHECK(w->get_int("NumValueChannels", 0) == 10);
    CHECK(w->get_ints("ShiftSize", {0, 0}, 2) == std::vector<int64_t>{1, 1});
    CHECK(round_trip(m, back, 5 * 4 * 4) < 1e-5);
  }
  SECTION("GC ViT's global query (tests/data/vit/gcvit.yaml): K/V only, the query the second input") {
    std::ifstream f(std::string(DLT_SOURCE_DIR) + "/tests/data/vit/gcvit.yaml");
    const std::string yaml(std::istreambuf_iterator<char>(f), {});
    const ModelData m = model_of(yaml.c_str());
    const ModelData back = exported_back(m);
    const LayerSpec* g = layer_of_type(back, "windowAttention");
    REQUIRE(g);
    CHECK(g->get_bool("GlobalQuery", false));
    REQUIRE(g->inputs.size() == 2);
    CHECK(layer_of_type(back, "maxPooling2d")->name == g->inputs[1]);
    CHECK(round_trip(m, back, 8 * 8 * 3) < 1e-5);
  }
  SECTION("grid windows (MaxViT)") {
    const ModelData m = model_of(kGrid);
    const ModelData back = exported_back(m);
    const LayerSpec* g = layer_of_type(back, "windowAttention");
    REQUIRE(g);
    CHECK(g->get_string("Partition", "window") == "grid");
    CHECK(g->get_ints("WindowSize", {}, 2) == std::vector<int64_t>{3, 2});
    CHECK(round_trip(m, back, 6 * 4 * 4) < 1e-5);
  }
}

TEST_CASE("onnx window: hostile window attention graphs are refused in one line", "[onnx][swin]") {
  const ModelData m = model_of(kWindows);
  TempDir dir;
  onnx::ModelProto p = exported(m, dir);
  std::string want;
  SECTION("a score bias that is not a relative position bias") {
    nudge(initializer(p, "w1_bias"), 1, 0.5f);  // head 0, tokens 0 and 1 only
    want =
        "node 'w1_rev' (Reshape): closes a window attention whose score bias (node 'w1_biased') is not a relative "
        "position bias";
  }
  SECTION("a shift mask other than torchvision's") {
    nudge(initializer(p, "w1_mask"), 0, -100.f);  // window 0 hides token 0 from itself
    want = "node 'w1_rev' (Reshape): adds a shift mask that differs from torchvision's (window 0, tokens 0 and 0)";
  }
  SECTION("a window partition whose sizes do not match") {
    onnx::TensorProto& t = initializer(p, "w1_split_shape");
    const std::vector<int64_t> bad = {-1, 3, 3, 2, 2, 4};  // 2 x 2 is not the padded width 6
    t.set_raw_data(std::string(reinterpret_cast<const char*>(bad.data()), bad.size() * sizeof(int64_t)));
    want = "node 'w1_split' (Reshape): reshapes a 9x6x4 channels-last image to [-1, 3, 3, 2, 2, 4]";
  }
  const std::string e = import_in(dir, p.SerializeAsString());
  CHECK_THAT(e, Catch::Contains(want));
  CHECK(e.find('\n') == std::string::npos);
}

TEST_CASE("onnx window: MaxViT graphs edited to break the partition or the attention are refused in one line",
          "[onnx][swin]") {
  // tests/data/onnx_zoo/maxvit-torchscript.onnx (torchvision's MaxViT, TorchScript exporter: its
  // shapes are Constant nodes, its weights inside).
  onnx::ModelProto p;
  {
    std::ifstream in(std::string(DLT_SOURCE_DIR) + "/tests/data/onnx_zoo/maxvit-torchscript.onnx", std::ios::binary);
    REQUIRE(p.ParseFromIstream(&in));
  }
  auto producer = [&](const std::string& value) -> onnx::NodeProto* {
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.output_size() == 1 && n.output(0) == value) return &n;
    return nullptr;
  };
  std::string want;
  SECTION("a partition whose sizes do not match the image") {
    for (auto& n : *p.mutable_graph()->mutable_node()) {
      if (n.op_type() != "Reshape") continue;
      onnx::NodeProto* c = producer(n.input(1));
      if (!c || c->op_type() != "Constant" || c->attribute(0).t().dims_size() != 1 || c->attribute(0).t().dims(0) != 6)
        continue;
      const std::vector<int64_t> bad = {1, 16, 2, 2, 2, 2};  // 2 x 2 rows of an 8x8 image
      c->mutable_attribute(0)->mutable_t()->set_raw_data(
          std::string(reinterpret_cast<const char*>(bad.data()), bad.size() * sizeof(int64_t)));
      break;
    }
    want = "reshapes a 16x8x8 image to [1, 16, 2, 2, 2, 2]; dltrain reads 6-D reshapes of an (N, C, H, W) image "
           "only as MaxViT's partition";
  }
  SECTION("an Einsum of another equation") {
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.op_type() == "Einsum") {
        n.mutable_attribute(0)->set_s("B G H I D, B G H J D -> B G H J I");
        break;
      }
    want = "dltrain reads MaxViT's 'B G H I D, B G H J D -> B G H I J' of Q and K";
  }
  TempDir dir;
  const std::string e = import_in(dir, p.SerializeAsString());
  CHECK_THAT(e, Catch::Contains(want));
  CHECK(e.find('\n') == std::string::npos);
}

// CoAtNet's Q/K/V by head (1, heads, 3 d, H W) is its window attention only where the split into
// Q, K and V reads it (TorchScript also takes its Shape); MobileNetV4's query heads of 6 channels
// (a multiple of 3 too) are transposed instead: an attention layer's operand.
TEST_CASE("onnx window: CoAtNet's attention is one windowAttention from both exporters, MobileNetV4's not",
          "[onnx][swin]") {
  for (const char* e : {"dynamo", "torchscript"}) {
    INFO(e);
    const std::string base = std::string(DLT_SOURCE_DIR) + "/tests/data/onnx_zoo/";
    const ModelData coatnet = import_onnx(base + "coatnet_timm-" + e + ".onnx", {});
    CHECK(layer_of_type(coatnet, "windowAttention"));
    CHECK_FALSE(layer_of_type(coatnet, "attention"));
    const ModelData mnv4 = import_onnx(base + "mobilenetv4_timm-" + e + ".onnx", {});
    CHECK_FALSE(layer_of_type(mnv4, "windowAttention"));
    CHECK(layer_of_type(mnv4, "attention"));
  }
}

TEST_CASE(
    "onnx window: timm's Swin, DeiT III, CaiT, ConViT, EVA-02, MobileViT (v1 and v2), CoAtNet, Visformer, NextViT, "
    "MobileNetV4, EfficientFormer V2, SHViT, EfficientViT, GC ViT, NesT, FastViT, "
    "EfficientFormer, Twins, "
    "DaViT and "
    "PVT v2 "
    "graphs "
    "and SegFormer's edited to break their forms are refused in one line",
    "[onnx][swin]") {
  // The dynamo fixtures of tests/data/onnx_zoo: their shapes small initializers inside the file,
  // the weights in the .onnx.data file beside it (copied beside the edited graph).
  TempDir dir;
  auto load = [&](const std::string& fixture) {
    const std::string base = std::string(DLT_SOURCE_DIR) + "/tests/data/onnx_zoo/" + fixture;
    onnx::ModelProto p;
    std::ifstream in(base + ".onnx", std::ios::binary);
    REQUIRE(p.ParseFromIstream(&in));
    std::ifstream data(base + ".onnx.data", std::ios::binary);
    dir.write(fixture + ".onnx.data", std::string(std::istreambuf_iterator<char>(data), {}));
    return p;
  };
  auto set_ints = [](onnx::TensorProto& t, const std::vector<int64_t>& v) {
    t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t)));
  };
  // An initializer's floats written into the file (the dynamo fixtures keep theirs outside),
  // with new dimensions where dims is not empty.
  auto set_floats = [](onnx::TensorProto& t, const std::vector<float>& v, const std::vector<int64_t>& dims = {}) {
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto::DEFAULT);
    if (!dims.empty()) {
      t.clear_dims();
      for (int64_t d : dims) t.add_dims(d);
    }
    t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
  };
  onnx::ModelProto p;
  std::string want;
  SECTION("the MLP's flattened image reshaped back to another size") {
    p = load("swin_timm-dynamo");
    set_ints(initializer(p, "val_106"), {1, 8, 32, 16});  // was (1, 16, 16, 16)
    want = "node 'node_view_11' (Reshape): reshapes a channels-last image flattened to (1, 256, 16) to "
           "[1, 8, 32, 16]; dltrain reads only the Reshape back to (1, 16, 16, 16)";
  }
  SECTION("patch merging's 2x2 patches reshaped to other than 4 C channels") {
    p = load("swin_timm-dynamo");
    set_ints(initializer(p, "val_267"), {1, 16, 8, 32});  // was (1, 8, 8, 64)
    want = "node 'node__unsafe_view' (Reshape): reads 2x2 patches of a channels-last image transposed (0, 1, 3, 4, 2, "
           "5); dltrain reads them as timm's patch merging";
  }
  SECTION("a LayerScale of half the channels") {
    p = load("deit3-dynamo");
    set_floats(initializer(p, "net.blocks.0.ls1.gamma"), std::vector<float>(8, 0.5f), {8});
    want = "node 'node_mul' (Mul): multiplies by a constant of shape 8; supported: one value, or one per channel (C "
           "with C = 16)";
  }
  SECTION("XCiT's keys left unnormalized") {
    p = load("xcit_timm-dynamo");
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.name() == "node_transpose_1") n.set_input(0, "getitem_10");  // was the normalized 'div_8'
    want = "node 'node_matmul' (MatMul): multiplies [1, 2, 8, 16] by [1, 2, 16, 8] with an L2-normalized operand";
  }
  SECTION("XCiT's queries normalized over their channels") {
    p = load("xcit_timm-dynamo");
    set_ints(initializer(p, "val_186"), {-2});  // was -1: the tokens
    want =
        "node 'node_linalg_vector_norm' (ReduceL2): takes the L2 norm of a [1, 2, 8, 16] attention operand over "
        "axes [-2]; dltrain reads F.normalize over its last axis";
  }
  SECTION("XCiT's norm clamped at 0.5") {
    p = load("xcit_timm-dynamo");
    set_floats(initializer(p, "val_188"), {0.5f});
    want = "node 'node_clamp_min' (Clip): clips the L2 norm of an attention operand";
  }
  SECTION("XCiT's temperature along the rows of the scores") {
    p = load("xcit_timm-dynamo");
    set_floats(initializer(p, "net.blocks.0.attn.temperature"), {0.5f, 2.f}, {2, 1, 1, 1});
    want = "node 'node_mul_3' (Mul): multiplies attention scores across channels [1, 2, 8, 8] by a 2x1x1x1 constant";
  }
  SECTION("LeViT's BatchNorm1d over the tokens of (1, S, C), not their rows") {
    p = load("levit_timm-dynamo");
    for (auto& n : *p.mutable_graph()->mutable_node())  // BatchNormalization would normalize axis 1
      if (n.name() == "node__native_batch_norm_legit_no_training_3__0") n.set_input(0, "linear");  // was the rows
    want =
        "node 'node__native_batch_norm_legit_no_training_3__0' (BatchNormalization): reads a channels-last image "
        "flattened to (1, H*W, C)";
  }
  SECTION("LeViT's queries subsampled from the second row and column") {
    p = load("levit_timm-dynamo");
    set_ints(initializer(p, "val_160"), {1});  // was 0: x[:, 1::2, 1::2]
    want = "is a padded, rolled or sliced channels-last image, which dltrain reads only as Swin's window attention";
  }
  SECTION("MobileViT's unfold into another number of tokens") {
    p = load("mobilevit-dynamo");
    set_ints(initializer(p, "val_113"), {1, 16, 2, 8});  // was (1, C, N, P) = (1, 16, 4, 4)
    want = "node 'node__unsafe_view' (Reshape): reads an image on its way into or out of MobileViT's unfold (step 2)";
  }
  SECTION("MobileViT's fold from another layout of its tokens") {
    p = load("mobilevit-dynamo");
    set_ints(initializer(p, "val_259"), {1, 2, 8, -1});  // was (1, P, N, -1) = (1, 4, 4, -1)
    want = "node 'node_view_6' (Reshape): reshapes MobileViT's unfolded tokens (4, 4, 16) to [1, 2, 8, -1]; dltrain "
           "reads the fold back, (1, 4, 4, 16) first";
  }
  SECTION("MobileViT v2's query softmaxed over the pixels of a patch, not over the patches") {
    p = load("mobilevitv2_timm-dynamo");
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.name() == "node_softmax") n.mutable_attribute(0)->set_i(2);  // was -1
    want = "node 'node_softmax' (Softmax): reads MobileViT v2's separable self-attention out of order";
  }
  SECTION("MobileViT v2's joint projection split into unequal keys and values") {
    p = load("mobilevitv2_timm-dynamo");
    set_ints(initializer(p, "val_140"), {1, 4, 12});  // was [1, 8, 8]
    want =
        "node 'node_Split_323' (Split): splits MobileViT v2's unfolded patches; dltrain reads only the separable "
        "attention's Split of its 17 channels into [1, C, C]";
  }
  SECTION("MobileViT v2's fold transposed into another pixel order") {
    p = load("mobilevitv2_timm-dynamo");
    set_perm(p, "node_permute_1", {0, 1, 4, 3, 5, 2});  // was (0, 1, 4, 2, 5, 3)
    want = "node 'node_permute_1' (Transpose): reads MobileViT v2's patches on their way out of the unfold";
  }
  SECTION("CoAtNet's heads merged back into an image of another size") {
    p = load("coatnet_timm-dynamo");
    set_ints(initializer(p, "val_114"), {1, 16, 2, 8});  // was (1, C, H, W) = (1, 16, 4, 4)
    want = "node 'node__unsafe_view' (Reshape): reshapes the heads' output (1, heads, d, H W) to [1, 16, 2, 8]; "
           "dltrain reads (1, 16, 4, 4)";
  }
  SECTION("Visformer's Q/K/V transposed with each head's channels before its pixels") {
    p = load("visformer_timm-dynamo");
    set_perm(p, "node_permute", {1, 0, 2, 3, 4});  // was (1, 0, 2, 4, 3)
    want =
        "node 'node_permute' (Transpose): reads a window attention's Q/K/V of an image (1, 3, heads, d, H W), before "
        "their Transpose (1, 0, 2, 4, 3)";
  }
  SECTION("Visformer's heads merged back into an image of another size") {
    p = load("visformer_timm-dynamo");
    set_ints(initializer(p, "val_84"), {1, 32, 2, 8});  // was (1, C, H, W) = (1, 32, 4, 4)
    want =
        "node 'node__unsafe_view' (Reshape): reshapes the heads' output (1, heads, d, H W) to [1, 32, 2, 8]; "
        "dltrain reads (1, 32, 4, 4)";
  }
  SECTION("NextViT's pooled keys padded by a whole window") {
    p = load("nextvit_timm-dynamo");
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.name() == "node_avg_pool1d")
        for (auto& a : *n.mutable_attribute())
          if (a.name() == "pads") {
            a.clear_ints();
            for (int64_t v : {9, 0}) a.add_ints(v);  // was (0, 0), kernel 9
          }
    want =
        "node 'node_avg_pool1d' (AveragePool): pools 64 tokens with kernel 9, strides [9] and pads [9, 0]; dltrain "
        "reads one stride and pads smaller than the kernel";
  }
  SECTION("NextViT's pooled keys with a kernel larger than any sequence") {
    p = load("nextvit_timm-dynamo");
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.name() == "node_avg_pool1d")
        for (auto& a : *n.mutable_attribute())
          if (a.name() == "kernel_shape" || a.name() == "pads") {
            const bool kernel = a.name() == "kernel_shape";
            a.clear_ints();
            a.add_ints(kernel ? int64_t{1} << 62 : (int64_t{1} << 62) - 1);
            if (!kernel) a.add_ints((int64_t{1} << 62) - 1);  // would overflow the sum with the tokens
          }
    want = "node 'node_avg_pool1d' (AveragePool): pools 64 tokens with kernel 4611686018427387904";
  }
  SECTION("NextViT's pooled keys read transposed other than back to tokens") {
    p = load("nextvit_timm-dynamo");
    set_perm(p, "node_transpose_2", {0, 1, 2});  // was (0, 2, 1)
    want =
        "node 'node_transpose_2' (Transpose): input 'getitem_15' is a token sequence transposed to (1, C, S) after a "
        "1-D pooling, which dltrain reads only in BatchNormalization and the Transpose (0, 2, 1) back to (1, S, C)";
  }
  SECTION("NextViT's attention output reshaped into an image of another size") {
    p = load("nextvit_timm-dynamo");
    set_ints(initializer(p, "val_130"), {1, 32, 4, 16});  // was (1, C, H, W) = (1, 32, 8, 8)
    want = "node 'node_add_2' (Add): reads a [1, 32, 4, 16] value inside an attention";
  }
  SECTION("MobileNetV4's query heads of another width than its one head of keys") {
    p = load("mobilenetv4_timm-dynamo");
    set_ints(initializer(p, "val_102"), {1, 6, 2, -1});  // was (1, heads, d, -1) = (1, 2, 6, -1); both blocks'
    want =
        "node 'node_MatMul_174' (MatMul): multiplies [1, 6, 16, 2] by [1, 1, 6, 4], which dltrain does not read "
        "as the scores Q K^T";
  }
  SECTION("MobileNetV4's queries reshaped into heads of sizes whose product overflows") {
    p = load("mobilenetv4_timm-dynamo");
    set_ints(initializer(p, "val_102"), {1, int64_t{1} << 62, 4, -1});  // was (1, 2, 6, -1)
    want = "node 'node_view_1' (Reshape): reshapes to [1, 4611686018427387904, 4, -1]; supported:";
  }
  SECTION("MobileNetV4's attention output reshaped into an image of another size") {
    p = load("mobilenetv4_timm-dynamo");
    set_ints(initializer(p, "val_181"), {1, 2, 8, 12});  // was (1, H, W, C) = (1, 4, 4, 12); both blocks'
    want = "node 'node_Conv_396' (Conv): reads a [1, 12, 2, 8] value inside an attention";
  }
  SECTION("EfficientFormer V2's talking heads as a grouped convolution") {
    p = load("efficientformerv2_timm-dynamo");
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.name() == "node_conv2d_15")
        for (auto& a : *n.mutable_attribute())
          if (a.name() == "group") a.set_i(2);  // was 1: each head alone
    want =
        "node 'node_conv2d_15' (Conv): convolves attention scores or weights with a [2, 2, 1, 1] kernel; dltrain "
        "reads there talking heads: a 1x1 Conv without groups, stride or padding";
  }
  SECTION("EfficientFormer V2's queries and keys cut into more heads than its values") {
    p = load("efficientformerv2_timm-dynamo");
    set_ints(initializer(p, "val_91"), {1, 4, -1, 4});  // was (1, heads, d, H*W) = (1, 2, -1, 4)
    want =
        "node 'node_add_2' (Add): adds a 2x4x4 constant to attention scores [1, 4, 4, 4]; dltrain reads there a "
        "causal mask";
  }
  SECTION("SHViT's values times the attention weights not transposed") {
    p = load("shvit_timm-dynamo");
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.name() == "node_matmul_1") n.set_input(1, "softmax");  // was transpose_1: v @ attn^T
    want =
        "node 'node_matmul_1' (MatMul): multiplies [1, 8, 16] by [1, 16, 16], which dltrain does not read as the "
        "heads of V transposed times the attention weights transposed";
  }
  SECTION("SHViT's queries not transposed") {
    p = load("shvit_timm-dynamo");
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.name() == "node_matmul") n.set_input(0, "view");  // was transpose: q^T @ k
    want =
        "node 'node_matmul' (MatMul): multiplies [1, 4, 16] by [1, 4, 16], which dltrain does not read as the "
        "scores Q K^T";
  }
  SECTION("EfficientViT's values padded with zeros") {
    p = load("efficientvit_timm-dynamo");
    set_floats(initializer(p, "val_139"), {0.f});  // was 1: the denominator's column of ones
    want = "node 'node_pad' (Pad): pads a linear attention's values with [0, 0, 0, 0, 0, 0, 0, 1] (value 0.000000)";
  }
  SECTION("EfficientViT's column of ones in front of the tokens") {
    p = load("efficientvit_timm-dynamo");
    set_ints(initializer(p, "val_138"), {0, 0, 1, 0, 0, 0, 0, 0});  // was after the channels
    want = "node 'node_pad' (Pad): pads a linear attention's values with [0, 0, 1, 0, 0, 0, 0, 0]";
  }
  SECTION("EfficientViT's keys times the context instead of its queries") {
    p = load("efficientvit_timm-dynamo");
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.name() == "node_matmul_1") n.set_input(0, "relu_1");  // was relu: relu(Q) (relu(K)^T V')
    want = "node 'node_matmul_1' (MatMul): reads a step of a linear attention out of order";
  }
  SECTION("EfficientViT's queries taken from the values' channels") {
    p = load("efficientvit_timm-dynamo");
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.name() == "node_relu") n.set_input(0, "split_split_2");  // was split_split_0
    want = "node 'node_relu' (Relu): reads a [1, 8, 16, 8] value inside an attention";
  }
  SECTION("EfficientViT's product sliced from its second column") {
    p = load("efficientvit_timm-dynamo");
    set_ints(initializer(p, "val_142"), {1});  // was 0: out[..., :-1]
    want =
        "node 'node_slice_1' (Slice): slices a linear attention's product (.., 9) other than into its first 8 "
        "columns and its last";
  }
  SECTION("EfficientViT's eps one per channel") {
    p = load("efficientvit_timm-dynamo");
    set_floats(initializer(p, "val_7"), std::vector<float>(8, 1e-5f), {8});
    want = "node 'node_add_1' (Add): adds 8 values to a linear attention's denominator; dltrain reads one number >= 0";
  }
  SECTION("GC ViT's global query copied to 2 of the 4 windows") {
    p = load("gcvit_timm-dynamo");
    set_ints(initializer(p, "val_180"), {1, 2, 1, 1, 1});  // was (1, 4, 1, 1, 1)
    want =
        "node 'node_Reshape_520' (Reshape): reads GC ViT's global query (a 4x4x16 image copied to the windows); "
        "dltrain reads the copies reshaped to (2, 16, heads, d), not [4, 16, 2, 8]";
  }
  SECTION("GC ViT's keys and values in 4 heads, its global query in 2") {
    p = load("gcvit_timm-dynamo");
    set_ints(initializer(p, "val_169"), {4, 16, 2, 4, 4});  // was (4, 16, 2, 2, 8)
    want =
        "node 'node_matmul_2' (MatMul): multiplies a global query (4 copies of a 4x4x16 image, 2 heads) by keys it "
        "does not fit";
  }
  SECTION("GC ViT's global query the stage's whole image instead of its window-sized one") {
    p = load("gcvit_timm-dynamo");
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.name() == "node_Unsqueeze_168") n.set_input(0, "permute_4");  // was permute_5 (4x4)
    want =
        "node 'node_Reshape_520' (Reshape): reads GC ViT's global query (a 8x8x16 image copied to the windows); "
        "dltrain reads the copies reshaped to (4, 64, heads, d), not [4, 16, 2, 8]";
  }
  SECTION("NesT's heads merged head by head (its channels are channel by channel)") {
    p = load("nest_timm-torchscript");
    set_perm(p, "/net/levels/levels.0/transformer_encoder/transformer_encoder.0/attn/Transpose_2", {0, 2, 3, 1, 4});
    want =
        "(Transpose): transposes NesT's heads' output (1, heads, windows, S, d) by [0, 2, 3, 1, 4]; dltrain reads "
        "(0, 2, 3, 4, 1)";
  }
  SECTION("NesT's position table for 4 blocks of 16 tokens") {
    p = load("nest_timm-torchscript");
    onnx::TensorProto& t = initializer(p, "net.levels.0.pos_embed");
    t.set_dims(1, 4);  // was (1, 16, 4, 16)
    t.set_dims(2, 16);
    want =
        "node '/net/levels/levels.0/Add' (Add): adds a constant of shape 1x4x16x16; supported: one value, or one "
        "per channel (C with C = 16), or a position table of its blocks [1, 16, 4, 16]";
  }
  SECTION("NesT's blocks put back through another Transpose") {
    p = load("nest_timm-torchscript");
    set_perm(p, "/net/levels/levels.0/Transpose_2", {0, 2, 1, 3, 4, 5});  // was (0, 1, 3, 2, 4, 5)
    want = "node '/net/levels/levels.0/Transpose_2' (Transpose): reads a 6-D split of an image; dltrain reads";
  }
  SECTION("FastViT's RepMixer subtracting an image of another size") {
    p = load("fastvit_timm-dynamo");
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.name() == "node_sub_1") n.set_input(1, "getitem");  // the stem's first, larger convolution
    want = "node 'node_sub_1' (Sub): subtracts values of different shapes or layouts";
  }
  SECTION("EfficientFormer's head-first Q/K/V split into keys and queries of different widths") {
    p = load("efficientformer_timm-dynamo");
    set_ints(initializer(p, "val_83"), {32, 16, 144});  // was (32, 32, 128): Q, K, V of each head
    want =
        "node 'node_Split_108' (Split): splits the head-first Q/K/V other than into Q, K and V along axis 3 (Q and "
        "K of the same width, V the rest of 192)";
  }
  SECTION("EfficientFormer's attention bias not a function of the offset between tokens") {
    p = load("efficientformer_timm-dynamo");
    std::vector<float> bias(8 * 49 * 49, 0.f);  // (heads, 49, 49), gathered from timm's table
    bias[1] = 1.f;  // head 0, tokens 0 and 1 only: token 1 and 2 are as far apart
    set_floats(initializer(p, "index"), bias);
    want =
        "node 'node_mul_5' (Mul): closes a window attention whose score bias (node 'node_add_4') is not a relative "
        "position bias (head 0, tokens 1 and 2";
  }
  SECTION("Twins' joint Q/K/V reshaped with its windows and tokens swapped") {
    p = load("twins_timm-dynamo");
    set_ints(initializer(p, "val_33"), {1, 4, 16, 3, 1, 16});  // was (1, windows, S, 3, heads, d) = (1, 16, 4, ...)
    want =
        "node 'node_view_3' (Reshape): reshapes Twins' joint Q/K/V projection to [1, 4, 16, 3, 1, 16]; dltrain "
        "reads (1, 16, 4, 3, heads, d)";
  }
  SECTION("Twins' merged heads reversed into another partition") {
    p = load("twins_timm-dynamo");
    set_ints(initializer(p, "val_55"), {1, 2, 8, 2, 2, 16});  // was (1, H/wh, W/ww, wh, ww, C) = (1, 4, 4, 2, 2, 16)
    want =
        "node 'node_view_4' (Reshape): reshapes Twins' merged heads to [1, 2, 8, 2, 2, 16]; dltrain reads the "
        "reverse partition (1, 4, 4, 2, 2, 16)";
  }
  SECTION("Twins' windows of a padded image") {
    p = load("twins_timm-dynamo");
    set_ints(initializer(p, "val_15"), {0, 0, 0, 0, 0, 2, 2, 0});  // was no padding: the 8x8 image now 10x10
    set_ints(initializer(p, "val_23"), {1, 5, 2, 5, 2, 16});       // its 2x2 windows
    want = "node 'node_MatMul_21' (MatMul): projects the windows of a padded, rolled or cropped image; dltrain reads "
           "Twins' locally-grouped attention on whole windows of the image";
  }
  SECTION("Twins' tokens viewed as an image of another shape") {
    p = load("twins_timm-dynamo");
    set_ints(initializer(p, "val_14"), {1, 4, 16, 16});  // was (1, H, W, C) = (1, 8, 8, 16)
    want = "node 'node_pad' (Pad): reads a [1, 4, 16, 16] value inside an attention";
  }
  SECTION("CaiT's talking heads mixing the queries instead of the heads") {
    p = load("cait_timm-dynamo");
    set_perm(p, "node_permute_1", {0, 1, 3, 2});  // was (0, 2, 3, 1): the heads last
    want =
        "node 'node_MatMul_19' (MatMul): multiplies attention scores [1, 4, 16, 16] by a 4x4 constant; dltrain "
        "reads there talking heads";
  }
  SECTION("CaiT's scores mixed across the heads a second time") {
    p = load("cait_timm-dynamo");
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.name() == "node_permute_3") n.set_input(0, "permute_2");  // was the softmax of it
    want = "node 'node_MatMul_21' (MatMul): mixes the heads of attention scores a second time";
  }
  SECTION("CaiT's heads mixed into fewer heads") {
    p = load("cait_timm-dynamo");
    set_floats(initializer(p, "val_20"), std::vector<float>(8, 0.25f), {4, 2});  // was 4x4
    want =
        "node 'node_MatMul_19' (MatMul): multiplies attention scores [1, 16, 16, 4] by a 4x2 constant; dltrain "
        "reads there talking heads";
  }
  SECTION("CaiT's mix bias of one value per pair of tokens and head") {
    p = load("cait_timm-dynamo");
    set_floats(initializer(p, "net.blocks.0.attn.proj_l.bias"), std::vector<float>(16 * 16 * 4, 0.1f), {16, 16, 4});
    want = "node 'node_linear_1' (Add): adds a 16x16x4 constant to attention scores [1, 16, 16, 4]";
  }
  SECTION("ConViT's gates leaving its rows summing to other than 1") {
    p = load("convit_timm-dynamo");
    set_floats(initializer(p, "sub_1"), std::vector<float>(4, 0.9f), {1, 4, 1, 1});  // was 1 - sigmoid(gate)
    want = "node 'node_div_1' (Div): divides attention weights by their rows' sums, which are not 1";
  }
  SECTION("ConViT's gate one factor per query") {
    p = load("convit_timm-dynamo");
    set_floats(initializer(p, "sub_1"), std::vector<float>(16, 0.5f), {1, 1, 16, 1});
    want = "node 'node_mul_1' (Mul): multiplies attention weights [1, 4, 16, 16] by a 1x1x16x1 constant";
  }
  SECTION("ConViT's positional weights one value per head and query") {
    p = load("convit_timm-dynamo");
    set_floats(initializer(p, "mul_2"), std::vector<float>(64, 0.01f), {1, 4, 16, 1});
    want = "node 'node_add_1' (Add): adds a 1x4x16x1 constant to attention weights [1, 4, 16, 16]";
  }
  SECTION("ConViT's weights summed over the heads") {
    p = load("convit_timm-dynamo");
    set_ints(initializer(p, "val_33"), {1});  // was -1: the keys
    want = "node 'node_sum_1' (ReduceSum): sums attention weights [1, 4, 16, 16] over axes [1]";
  }
  SECTION("EVA-02's rotary table rotating the two channels of a pair by different angles") {
    p = load("eva_timm-dynamo");
    std::vector<float> table(16 * 16);  // was (tokens, [sin | cos]) with each angle on both channels of its pair
    for (size_t i = 0; i < table.size(); ++i) table[i] = 0.01f * static_cast<float>(i);
    set_floats(initializer(p, "net.rope.pos_embed"), table);
    want = "node 'node_add_1' (Add): rotates channels 0 and 1 of token 0 by different angles";
  }
  SECTION("EVA-02's rotary table with the tokens and channels swapped") {
    p = load("eva_timm-dynamo");
    // was (tokens, [sin | cos]), split on axis 1: now (2, [sin | cos], 16), split into two 2x8x16
    set_floats(initializer(p, "net.rope.pos_embed"), std::vector<float>(2 * 16 * 16, 0.5f), {2, 16, 16});
    want =
        "node 'node_mul' (Mul): multiplies a [1, 2, 16, 8] attention operand by a 2x8x16 constant; dltrain reads "
        "there a rotary embedding's table of one value per token and channel of a head, (16, 8), the same for "
        "every head or one per head";
  }
  SECTION("EVA-02's queries times cos read without their rot(x) * sin") {
    p = load("eva_timm-dynamo");
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.name() == "node_cat_2") n.set_input(1, "mul");  // was add_1, the sum with rot(x) * sin
    want =
        "node 'node_cat_2' (Concat): input 'mul' is an attention operand times a table of one value per token and "
        "channel, which dltrain reads only as a term of a rotary embedding";
  }
  SECTION("EVA-02's keys not rotated") {
    p = load("eva_timm-dynamo");
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.name() == "node_Reshape_165") n.set_input(0, "getitem_1");  // was the rotated keys
    want = "with only one of Q and K rotated";
  }
  SECTION("EVA-02's class token joined behind the rotated tokens") {
    p = load("eva_timm-dynamo");
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.name() == "node_cat_2") {
        n.set_input(0, "add_1");
        n.set_input(1, "slice_1");
      }
    want = "node 'node_cat_2' (Concat): joins rotated attention operands to other values";
  }
  SECTION("EVA-02's half rotation with its halves not negated") {
    p = load("eva_half_timm-dynamo");
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.name() == "node_cat_2") n.set_input(0, "split_1_split_1");  // was its Neg
    want =
        "node 'node_cat_2' (Concat): joins the two parts of each pair of an attention operand's channels swapped "
        "but not negated";
  }
  SECTION("DaViT's weights across channels times V not transposed") {
    p = load("davit_timm-dynamo");
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.name() == "node_matmul_1") n.set_input(1, "getitem_3");  // was its transpose (1, heads, d, tokens)
    want = "node 'node_matmul_1' (MatMul): multiplies [1, 2, 8, 8] by [1, 2, 64, 8], which dltrain does not read as "
           "the weights across channels times the heads of V transposed";
  }
  SECTION("PVT v2's keys and values reshaped into four parts instead of two") {
    p = load("pvt_v2_timm-dynamo");
    set_ints(initializer(p, "val_38"), {1, -1, 4, 1, 8});  // was (1, -1, 2, 1, 16): K and V, one head
    want = "node 'node_Reshape_61' (Reshape): reshapes [1, 1, 16, 8] to [-1, 16, 16]: the sizes do not match";
  }
  SECTION("PVT v2's queries in two heads, its keys in one") {
    p = load("pvt_v2_timm-dynamo");
    set_ints(initializer(p, "val_16"), {1, 64, 2, -1});  // was (1, 64, 1, -1)
    want =
        "node 'node_MatMul_70' (MatMul): multiplies [1, 2, 64, 8] by [1, 1, 16, 16], which dltrain does not read "
        "as the scores Q K^T of heads of projected tokens";
  }
  SECTION("PVT v2's stage ending in an image of another size") {
    p = load("pvt_v2_timm-dynamo");
    set_ints(initializer(p, "val_203"), {1, 2, 8, -1});  // was (1, 4, 4, -1)
    want =
        "node 'node_view_15' (Reshape): reshapes a channels-last image flattened to (1, 16, 32) to [1, 2, 8, -1]; "
        "dltrain reads only the Reshape back to (1, 4, 4, 32)";
  }
  SECTION("PiT's feature map after its class token reshaped to another size") {
    p = load("pit_timm-dynamo");
    set_ints(initializer(p, "val_105"), {1, 8, 6, 8});  // was (1, C, H, W) = (1, 8, 7, 7)
    want = "node 'node_view_3' (Reshape): reshapes [1, 8, 49] to [1, 8, 6, 8]: the sizes do not match";
  }
  SECTION("PiT's position table for a map of another size") {
    p = load("pit_timm-dynamo");
    set_floats(initializer(p, "net.pos_embed"), std::vector<float>(8 * 7 * 6, 0.5f),
               {1, 8, 7, 6});  // broadcasts over nothing
    want =
        "node 'node_add' (Add): adds a constant of shape 1x8x7x6; supported: one value, or one per channel (C, 1, "
        "1 with C = 8), or a position table of the image's shape (1, 8, 7, 7)";
  }
  SECTION("PiT's class token joined with tokens of other channels") {
    p = load("pit_timm-dynamo");
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.name() == "node_cat_1") n.set_input(0, "add_2");  // the first stage's 8-channel tokens, not the 16
    want = "node 'node_cat_1' (Concat): concatenates token sequences of 8 and 16 channels";
  }
  SECTION("CrossViT's heads stacked, then reduced over their classes") {
    p = load("crossvit_timm-dynamo");
    onnx::TensorProto& axes = *p.mutable_graph()->add_initializer();
    axes.set_name("axis_one");
    axes.set_data_type(onnx::TensorProto::INT64);
    axes.add_dims(1);
    set_ints(axes, {1});
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.name() == "node_mean") n.set_input(1, "axis_one");  // was the stack's axis 0
    want =
        "node 'node_mean' (ReduceMean): reduces a stack of (N, K) values over axes [1]; dltrain reads the mean or "
        "sum over the stack (axes [0], keepdims 0)";
  }
  SECTION("CrossViT's stacked heads read by something other than their mean") {
    p = load("crossvit_timm-dynamo");
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.name() == "node_softmax_2") n.set_input(0, "stack");
    want = "node 'node_softmax_2' (Softmax): input 'stack' is a stack of (N, K) values along a new axis 0";
  }
  SECTION("CrossViT's bicubic resize with TensorFlow's coefficient") {
    p = load("crossvit_timm-dynamo");
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.name() == "node_upsample_bicubic2d")
        for (auto& a : *n.mutable_attribute())
          if (a.name() == "cubic_coeff_a") a.set_f(-0.5f);
    want = "node 'node_upsample_bicubic2d' (Resize): cubic_coeff_a -0.500000 is not supported";
  }
  SECTION("SegFormer's queries over half the pixels") {
    p = load("segformer_seg-dynamo");
    set_ints(initializer(p, "val_16"), {1, 32, -1, 16});  // was (1, 64, -1, 16)
    want =
        "node 'node_MatMul_61' (MatMul): multiplies [1, 2, 32, 16] by [1, 1, 16, 16], which dltrain does not read "
        "as the scores Q K^T";
  }
  const std::string e = import_in(dir, p.SerializeAsString());
  CHECK_THAT(e, Catch::Contains(want));
  CHECK(e.find('\n') == std::string::npos);
}

}  // namespace dlt::test
