// Inference folding (Network::set_inference_folding): a convolution and the
// batchNormalization after it run in inference as one convolution with the normalization in
// its weights and bias and its ReLU as a post-op. The class probabilities match the unfolded
// network's on cifar10-bn (NHWC convolutions), resnet18-cifar (Winograd on AVX-512, blocked
// direct convolution on AVX2) and shapes-mobilenet (depthwise and grouped convolutions), also
// after the weights and statistics change; a clippedRelu (ReLU6), swish (SiLU) or hard swish
// after the normalization, or a swish, GELU or hard swish right after a convolution, folds in as
// the convolution's post-op.
#include <catch2/catch.hpp>

#include "backend/cpu/cpu_backend.h"
#include "config/config.h"
#include "layers/batch_norm_layer.h"
#include "net/network.h"
#include "support/grad_check.h"
#include "support/tensor_utils.h"

namespace dlt::test {

namespace {

// Normalizations that are not the identity: scale, offset, mean and variance away from 1, 0.
void randomize_normalizations(Network& net, Rng& rng) {
  for (size_t i = 0; i < net.size(); ++i) {
    Layer& l = net.layer(i);
    if (!dynamic_cast<BatchNormLayer*>(&l)) continue;  // the layers a convolution folds
    auto fill = [&](Tensor& t, float lo, float hi) {
      for (int64_t k = 0; k < t.numel(); ++k) t.data()[k] = lo + (hi - lo) * static_cast<float>(rng.uniform());
    };
    fill(l.params()[0].value, 0.5f, 1.5f);   // Scale
    fill(l.params()[1].value, -0.5f, 0.5f);  // Offset
    fill(l.states()[0].value, -0.2f, 0.2f);  // TrainedMean
    fill(l.states()[1].value, 0.5f, 2.0f);   // TrainedVariance
  }
}

Vec probabilities(Network& net, const Tensor& x, bool folding) {
  net.set_inference_folding(folding);
  RunContext ctx{false, 1, 0};
  return to_vec(net.forward(x, ctx));
}

// min_spread: how far apart the probabilities must be (else a wrong folding could go unseen).
void check_folding(const NetworkSpec& spec, int64_t n, int expect_folded, double min_spread = 0.1) {
  Network net(spec, Device::cpu());
  int folded = 0;
  for (size_t i = 0; i < net.size(); ++i) folded += net.folds(i);
  CHECK(folded == expect_folded);
  net.init_params(3);
  net.set_batch(n);
  Rng rng(17);
  randomize_normalizations(net, rng);
  const Shape& in = net.input_shape();
  Tensor x = random_tensor(Shape{n, in[0], in[1], in[2]}, rng, -1.f, 1.f);

  for (int round = 0; round < 2; ++round) {
    Vec apart = probabilities(net, x, false), together = probabilities(net, x, true);
    Comparison cmp = compare(together, apart);
    double spread = 0, top = 0;  // the probabilities differ (the check could fail)
    for (double p : apart) {
      spread = std::max(spread, std::abs(p - apart[0]));
      top = std::max(top, p);
    }
    INFO("round " << round << ": " << cmp.str() << "; spread " << spread << ", largest " << top);
    CHECK(cmp.max_abs < 2e-5);
    if (expect_folded > 0) CHECK(spread > min_spread);
    // New weights and statistics, as after a training step: nothing folded may be kept.
    for (Param* p : net.params())
      for (int64_t k = 0; k < p->value.numel(); ++k) p->value.data()[k] *= -1.f;
    randomize_normalizations(net, rng);
  }
}

void check_folding(const std::string& config, int64_t n, int expect_folded) {
  INFO(config);
  check_folding(load_config(std::string(DLT_SOURCE_DIR) + "/configs/" + config + ".yaml").network, n, expect_folded);
}

LayerSpec named(const std::string& type, const std::string& name, const std::vector<std::string>& options) {
  LayerSpec s = layer_spec(type, options);
  s.name = name;
  return s;
}

// layers, then a fullyConnected of 5 classes, its softmax and the classification output.
std::vector<LayerSpec> classifier(std::vector<LayerSpec> layers) {
  layers.push_back(named("fullyConnected", "fc", {"OutputSize=5"}));
  layers.push_back(named("softmax", "sm", {}));
  layers.push_back(named("classification", "out", {}));
  return layers;
}

LayerSpec named_in(const std::string& type, const std::string& name, const std::vector<std::string>& options,
                   std::vector<std::string> inputs) {
  LayerSpec s = named(type, name, options);
  s.inputs = std::move(inputs);
  return s;
}

size_t index_of(const Network& net, const std::string& name) {
  for (size_t i = 0; i < net.size(); ++i)
    if (net.layer(i).name() == name) return i;
  FAIL("no layer " << name);
  return 0;
}

}  // namespace

TEST_CASE("inference folding: conv + batchNormalization (+ ReLU) as one convolution", "[net][fold]") {
  check_folding("cifar10-bn", 5, 3);
  // Every convolution of resnet18-cifar feeds a normalization (stem, 16 in the blocks, 3
  // projections).
  check_folding("resnet18-cifar", 3, 20);
  // Depthwise (channel-wise, multiplier 1 and 2) and grouped convolutions fold as dense ones:
  // conv1, dw2, pw2, dw3, pw3 and g4 each feed a normalization.
  check_folding("shapes-mobilenet", 3, 6);
  // cifar10 has no normalization: nothing folds, and inference is the plain forward.
  check_folding("cifar10", 4, 0);
}

}  // namespace dlt::test

namespace dlt::test {

TEST_CASE("inference folding: conv + batchNormalization + clippedRelu (ReLU6) as one convolution", "[net][fold]") {
  // MobileNet's blocks as exported with their normalizations kept: each clippedRelu folds into
  // the convolution as its clip post-op (a ceiling of 0.3 clips much of the output here).
  NetworkSpec s;
  s.layers = classifier({
      named("imageInput", "in", {"InputSize=[9,9,3]", "Normalization=none"}),
      named("convolution2d", "c1", {"FilterSize=3", "NumFilters=16", "Padding=same", "Stride=2"}),
      named("batchNormalization", "bn1", {}),
      named("clippedRelu", "clip1", {"Ceiling=0.3"}),
      named("groupedConvolution2d", "dw",
            {"FilterSize=3", "NumFiltersPerGroup=1", "NumGroups=channel-wise", "Padding=same"}),
      named("batchNormalization", "bn2", {}),
      named("clippedRelu", "clip2", {"Ceiling=0.3"}),
      named("convolution2d", "pw", {"FilterSize=1", "NumFilters=8"}),
      named("batchNormalization", "bn3", {}),
      named("globalAveragePooling2d", "gap", {}),
  });
  Network net(s, Device::cpu());
  CHECK(net.layer(1).fusion().folded_relu);
  CHECK(net.layer(1).fusion().relu_ceiling == 0.3f);
  CHECK(net.layer(4).fusion().folded_relu);
  CHECK_FALSE(net.layer(7).fusion().folded_relu);  // bn3 has no ReLU after it
  check_folding(s, 4, 3);
}

}  // namespace dlt::test

namespace dlt::test {

TEST_CASE("inference folding: swish after a convolution or its batchNormalization as a post-op", "[net][fold]") {
  // EfficientNet's blocks: a convolution (dense or depthwise) with its normalization and SiLU,
  // a squeeze-and-excitation branch whose reduction convolution feeds a swish directly (the
  // exporters fold the normalizations of the others into the convolutions the same way), and a
  // projection with a normalization and no activation. Each swish folds into the convolution
  // before it as its post-op.
  NetworkSpec s;
  s.layers = classifier({
      named("imageInput", "in", {"InputSize=[9,9,3]", "Normalization=none"}),
      named("convolution2d", "c1", {"FilterSize=3", "NumFilters=16", "Padding=same", "Stride=2"}),
      named("batchNormalization", "bn1", {}),
      named("swish", "act1", {}),
      named("groupedConvolution2d", "dw",
            {"FilterSize=5", "NumFiltersPerGroup=1", "NumGroups=channel-wise", "Padding=same"}),
      named("batchNormalization", "bn2", {}),
      named("swish", "feat", {}),
      named("globalAveragePooling2d", "gap", {}),
      named("convolution2d", "squeeze", {"FilterSize=1", "NumFilters=4"}),
      named("swish", "squeeze_act", {}),
      named("convolution2d", "excite", {"FilterSize=1", "NumFilters=16"}),
      named("sigmoid", "gate", {}),
      named_in("multiplication", "se", {}, {"gate", "feat"}),
      named("convolution2d", "pw", {"FilterSize=1", "NumFilters=8"}),
      named("batchNormalization", "bn3", {}),
      named("convolution2d", "head", {"FilterSize=3", "NumFilters=8", "Padding=same"}),
      named("swish", "head_act", {}),
  });
  Network net(s, Device::cpu());
  auto index = [&](const std::string& name) { return index_of(net, name); };
  for (const char* name : {"c1", "dw", "squeeze", "head"}) {  // with their normalization, or without
    INFO(name);
    CHECK(net.layer(index(name)).fusion().folded_act);
    CHECK(net.layer(index(name)).fusion().folded_kind == ActKind::kSwish);
  }
  CHECK_FALSE(net.layer(index("excite")).fusion().folded_act);  // a sigmoid after it
  CHECK_FALSE(net.layer(index("pw")).fusion().folded_act);      // bn3 has no activation after it
  CHECK(net.folds(index("squeeze")));
  // c1, dw, pw with their normalizations; squeeze and head with their swish alone. The sigmoid
  // gate halves the features, so the probabilities spread less than the others' (0.05-0.09 here,
  // against differences of 3e-8 between folded and not).
  check_folding(s, 4, 5, 0.03);
}

TEST_CASE("inference folding: GELU after a 1x1 convolution as a post-op", "[net][fold]") {
  // PoolFormer's and EfficientFormer's MLPs (1x1 convolution, GELU, 1x1 convolution), the erf
  // and the tanh form, one with a batchNormalization between; a convolution whose output
  // something besides its GELU reads keeps it apart.
  NetworkSpec s;
  s.layers = classifier({
      named("imageInput", "in", {"InputSize=[7,6,4]", "Normalization=none"}),
      named("convolution2d", "fc1", {"FilterSize=1", "NumFilters=16"}),
      named("gelu", "act1", {}),
      named("convolution2d", "fc2", {"FilterSize=1", "NumFilters=8"}),
      named("batchNormalization", "bn", {}),
      named("gelu", "act2", {"Approximation=tanh"}),
      named("convolution2d", "fc3", {"FilterSize=3", "NumFilters=8", "Padding=same"}),
      named("gelu", "act3", {}),
      named_in("addition", "res", {}, {"act3", "fc3"}),
      named("globalAveragePooling2d", "gap", {}),
  });
  Network net(s, Device::cpu());
  auto index = [&](const std::string& name) { return index_of(net, name); };
  CHECK(net.layer(index("fc1")).fusion().folded_kind == ActKind::kGelu);
  CHECK(net.layer(index("fc2")).fusion().folded_kind == ActKind::kGeluTanh);  // with bn
  for (const char* name : {"fc1", "fc2"}) CHECK(net.layer(index(name)).fusion().folded_act);
  CHECK_FALSE(net.layer(index("fc3")).fusion().folded_act);  // res reads it too
  check_folding(s, 3, 2, 0.03);
}

TEST_CASE("inference folding: hard swish after a convolution or its batchNormalization as a post-op", "[net][fold]") {
  // MobileNetV3's blocks (and LR-ASPP's and DeepLabV3's backbone): a convolution with its
  // normalization and hard swish, a depthwise one with its hard swish directly (as the
  // exporters leave it, the normalization folded), a squeeze-and-excitation whose gate is a
  // hardSigmoid (not folded), and a hard swish whose input an addition also reads (kept apart).
  NetworkSpec s;
  s.layers = classifier({
      named("imageInput", "in", {"InputSize=[9,9,3]", "Normalization=none"}),
      named("convolution2d", "c1", {"FilterSize=3", "NumFilters=16", "Padding=same", "Stride=2"}),
      named("batchNormalization", "bn1", {}),
      named("hardSwish", "act1", {}),
      named("groupedConvolution2d", "dw",
            {"FilterSize=3", "NumFiltersPerGroup=1", "NumGroups=channel-wise", "Padding=same"}),
      named("hardSwish", "act2", {}),
      named("globalAveragePooling2d", "gap", {}),
      named("convolution2d", "squeeze", {"FilterSize=1", "NumFilters=4"}),
      named("relu", "squeeze_act", {}),
      named("convolution2d", "excite", {"FilterSize=1", "NumFilters=16"}),
      named("hardSigmoid", "gate", {}),
      named_in("multiplication", "se", {}, {"gate", "act2"}),
      named("convolution2d", "pw", {"FilterSize=1", "NumFilters=16"}),
      named("hardSwish", "act3", {}),
      named_in("addition", "res", {}, {"act3", "pw"}),
  });
  Network net(s, Device::cpu());
  auto index = [&](const std::string& name) { return index_of(net, name); };
  for (const char* name : {"c1", "dw"}) {
    INFO(name);
    CHECK(net.layer(index(name)).fusion().folded_act);
    CHECK(net.layer(index(name)).fusion().folded_kind == ActKind::kHardSwish);
  }
  CHECK_FALSE(net.layer(index("excite")).fusion().folded_act);  // a hardSigmoid after it
  CHECK_FALSE(net.layer(index("pw")).fusion().folded_act);      // res reads it too
  check_folding(s, 4, 2, 0.03);
}

TEST_CASE("inference folding: a channel-wise 1x1 convolution (an imported LayerScale) after a convolution",
          "[net][fold]") {
  // EfficientFormer's and PoolFormer's MLP end: a 1x1 convolution scaled per channel by a
  // channel-wise 1x1 groupedConvolution2d (the import's LayerScale), then the residual addition;
  // the one scaling an addition's output has no convolution to fold into; one with a GELU after
  // it folds both.
  NetworkSpec s;
  const std::vector<std::string> scale = {"FilterSize=1", "NumFiltersPerGroup=1", "NumGroups=channel-wise"};
  s.layers = classifier({
      named("imageInput", "in", {"InputSize=[5,6,8]", "Normalization=none"}),
      named("convolution2d", "fc1", {"FilterSize=1", "NumFilters=8"}),
      named("groupedConvolution2d", "ls1", scale),
      named_in("addition", "res", {}, {"in", "ls1"}),
      named("groupedConvolution2d", "ls2", scale),
      named("convolution2d", "fc2", {"FilterSize=3", "NumFilters=8", "Padding=same"}),
      named("groupedConvolution2d", "ls3", scale),
      named("gelu", "act", {}),
      named("globalAveragePooling2d", "gap", {}),
  });
  Network net(s, Device::cpu());
  auto index = [&](const std::string& name) { return index_of(net, name); };
  CHECK(net.layer(index("fc1")).fusion().folds_affine);
  CHECK(net.layer(index("fc2")).fusion().folds_affine);
  CHECK(net.layer(index("fc2")).fusion().folded_act);
  CHECK_FALSE(net.layer(index("ls2")).fusion().folds_affine);  // its producer is an addition
  CHECK_FALSE(net.folds(index("ls2")));
  check_folding(s, 3, 2, 0.03);
}

}  // namespace dlt::test

namespace dlt::test {

TEST_CASE("inference folding: a convolution's swish or GELU post-op gives the separate activation's values",
          "[net][fold]") {
  // The ops under the folded swish, GELU (erf and tanh forms) or hard swish (whose separate op
  // is a loop; the post-op oneDNN's eltwise_hardswish): oneDNN's direct convolution
  // with an eltwise post-op, and the Winograd / blocked ops with the activation op after them
  // (ActAfterConvOp), against the plain convolution and the activation layer's op.
  struct Case {
    const char* name;
    int64_t hw, c, k, f, groups;
  };
  const Case cases[] = {
      {"3x3, 64 -> 64 (the Winograd shape)", 12, 64, 64, 3, 1},
      {"1x1, 32 -> 48", 9, 32, 48, 1, 1},
      {"depthwise 5x5", 11, 24, 24, 5, 24},
  };
  Backend& be = cpu_backend();
  for (const Case& cs : cases)
    for (ActKind kind : {ActKind::kSwish, ActKind::kGelu, ActKind::kGeluTanh, ActKind::kHardSwish}) {
      INFO(cs.name << ", " << act_name(kind));
      Rng rng(5);
      const ConvProblem p = random_conv_problem(2, cs.hw, cs.c, cs.k, cs.f, 1, cs.groups, rng);
      const ConvDesc& d = p.d;
      const Tensor &x = p.x, &w = p.w, &b = p.b;
      const Shape ys{d.n, d.out_h(), d.out_w(), d.k};
      auto plain = be.make(d);
      auto act = be.make(ActDesc{ys.numel(), kind, 0.f});
      Tensor pre(ys), apart(ys), together(ys), unfolded(ys);
      plain->forward(x, w, b, pre);
      act->forward(pre, apart);

      ConvDesc fd = d;
      fd.inference_relu = true;
      fd.inference_post_act = true;
      fd.inference_act = kind;
      auto folded = be.make(fd);
      folded->forward(x, w, b, together, true);
      folded->forward(x, w, b, unfolded);  // without the post-op: the plain convolution
      const Comparison cmp = compare(to_vec(together), to_vec(apart));
      INFO(cmp.str());
      CHECK(cmp.max_abs < 1e-6);
      CHECK(compare(to_vec(unfolded), to_vec(pre)).max_abs < 1e-6);
      int64_t negative = 0;  // the negative lobe is reached: a ReLU in its place would fail
      for (int64_t i = 0; i < apart.numel(); ++i) negative += apart.data()[i] < -0.01f;
      CHECK(negative > 0);
    }
}

}  // namespace dlt::test

namespace dlt::test {

namespace {

enum class Act { kNone, kRelu, kClip, kSwish };

void set_act(Act a, float ceiling, bool& relu, float& relu_ceiling, bool& post_act, ActKind& kind) {
  relu = a != Act::kNone;
  relu_ceiling = a == Act::kClip ? ceiling : std::numeric_limits<float>::infinity();
  post_act = a == Act::kSwish;
  kind = ActKind::kSwish;
}

}  // namespace

TEST_CASE("inference folding: a 1x1 convolution's depthwise post-op gives the two convolutions' values",
          "[net][fold]") {
  // The op under the 1x1 + depthwise fusion: oneDNN's 1x1 forward with a depthwise post-op
  // (ConvDesc::depthwise) against the 1x1 op and the depthwise op run apart, each with its
  // activation. Odd and even sizes at stride 2 (the bottom / right padding the post-op infers),
  // the activation as a fused clippedRelu (fuse_relu) or as folded (inference_relu), and a
  // shape large enough for oneDNN's jit 1x1 kernel rather than its chained reference. With a
  // projection (DepthwisePostOp::project_k), against the third 1x1 op run apart on the
  // depthwise output, stride 1 and 2, to output channels that are and are not a multiple of 16.
  struct Case {
    const char* name;
    int64_t n, hw, c, k, kernel, stride;
    Act own, dw;
    bool fused_relu;  // the 1x1's activation as fuse_relu (an absorbed clippedRelu), else folded
    int64_t project = 0;
  };
  const Case cases[] = {
      {"ReLU6 both, stride 1", 2, 9, 16, 48, 3, 1, Act::kClip, Act::kClip, false},
      {"stride 2 on an odd size", 2, 7, 16, 32, 3, 2, Act::kClip, Act::kClip, true},
      {"stride 2 on an even size, ReLU", 3, 8, 8, 24, 3, 2, Act::kRelu, Act::kRelu, false},
      {"swish both (EfficientNet)", 2, 9, 16, 32, 3, 1, Act::kSwish, Act::kSwish, false},
      {"no activation on the 1x1", 2, 9, 16, 32, 3, 1, Act::kNone, Act::kClip, false},
      {"no activation on the depthwise", 2, 9, 16, 32, 3, 2, Act::kClip, Act::kNone, false},
      {"large: 32 -> 96 at 28x28, stride 2", 8, 28, 32, 96, 3, 2, Act::kClip, Act::kClip, false},
      {"large: 32 -> 96 at 28x28, ReLU then ReLU6", 8, 28, 32, 96, 3, 2, Act::kRelu, Act::kClip, true},
      {"large, 24 -> 144 at an odd 29x29, stride 2", 6, 29, 24, 144, 3, 2, Act::kClip, Act::kClip, false},
      {"large, swish: 40 -> 240 at 28x28", 4, 28, 40, 240, 3, 2, Act::kSwish, Act::kSwish, false},
      {"large, no activation on the 1x1", 4, 28, 32, 96, 3, 2, Act::kNone, Act::kClip, false},
      {"large, EfficientNet's 5x5 depthwise with swish", 4, 28, 40, 240, 5, 2, Act::kSwish, Act::kSwish, false},
      {"MobileNetV2's first expansion: 16 -> 96 at 112x112, stride 2", 2, 112, 16, 96, 3, 2, Act::kClip, Act::kClip,
       true},
      {"projection, small: 16 -> 48 -> 16 at 9x9", 2, 9, 16, 48, 3, 1, Act::kClip, Act::kClip, false, 16},
      {"projection, stride 1: 24 -> 144 -> 24 at 28x28", 8, 28, 24, 144, 3, 1, Act::kClip, Act::kClip, false, 24},
      {"projection, stride 2: 24 -> 144 -> 32 at an odd 29x29", 6, 29, 24, 144, 3, 2, Act::kClip, Act::kClip, true, 32},
      {"projection to 20 channels, ReLU", 8, 28, 32, 96, 3, 1, Act::kRelu, Act::kRelu, false, 20},
      {"projection, 5x5 with swish: 40 -> 240 -> 80 at 28x28", 4, 28, 40, 240, 5, 1, Act::kSwish, Act::kSwish, false,
       80},
      {"projection, MobileNetV2's 64 -> 384 -> 96 at 14x14", 16, 14, 64, 384, 3, 1, Act::kClip, Act::kClip, false, 96},
      {"projection, MobileNetV2's 24 -> 144 -> 24 at 56x56", 8, 56, 24, 144, 3, 1, Act::kClip, Act::kClip, false, 24},
      {"projection, stride 2: 24 -> 144 -> 32 at 56x56", 8, 56, 24, 144, 3, 2, Act::kClip, Act::kClip, true, 32},
  };
  constexpr float kCeiling = 0.5f;  // clips a good part of both outputs
  Backend& be = cpu_backend();
  int ran = 0, ran_projected = 0;
  for (const Case& cs : cases) {
    INFO(cs.name);
    Rng rng(11);
    ConvProblem p = random_conv_problem(cs.n, cs.hw, cs.c, cs.k, 1, 1, 1, rng);
    ConvProblem q = random_conv_problem(cs.n, cs.hw, cs.k, cs.k, cs.kernel, cs.stride, cs.k, rng);
    ConvDesc pd = p.d, qd = q.d;
    bool relu = false;
    float ceiling = 0.f;
    set_act(cs.own, kCeiling, relu, ceiling, pd.inference_post_act, pd.inference_act);
    pd.relu_ceiling = ceiling;
    pd.fuse_relu = relu && cs.fused_relu;
    pd.inference_relu = relu && !cs.fused_relu;
    set_act(cs.dw, kCeiling, relu, ceiling, qd.inference_post_act, qd.inference_act);
    qd.relu_ceiling = ceiling;
    qd.inference_relu = relu;
    const Shape mid_shape{pd.n, pd.h, pd.w, pd.k}, y_shape{qd.n, qd.out_h(), qd.out_w(), qd.k};
    Tensor mid(mid_shape), apart(y_shape);
    be.make(pd)->forward(p.x, p.w, p.b, mid, pd.inference_relu);
    be.make(qd)->forward(mid, q.w, q.b, apart, qd.inference_relu);
    ConvProblem r;  // the projection
    if (cs.project > 0) {
      r = random_conv_problem(cs.n, qd.out_h(), cs.k, cs.project, 1, 1, 1, rng);
      Tensor z = apart;
      apart = Tensor(Shape{qd.n, qd.out_h(), qd.out_w(), cs.project});
      be.make(r.d)->forward(z, r.w, r.b, apart);
    }
    Tensor together(apart.shape());

    ConvDesc fd = pd;
    fd.depthwise.kernel = cs.kernel;
    fd.depthwise.stride = cs.stride;
    fd.depthwise.pad = qd.pad_t;
    fd.depthwise.out_h = qd.out_h();
    fd.depthwise.out_w = qd.out_w();
    set_act(cs.dw, kCeiling, fd.depthwise.relu, fd.depthwise.relu_ceiling, fd.depthwise.post_act, fd.depthwise.act);
    fd.depthwise.project_k = cs.project;
    auto fused = be.make(fd);
    INFO(impl_info(*fused));
    // oneDNN takes its jit kernel for large problems only, by heuristics of its own that differ
    // between CPUs (oneDNN 2.6.3: on an AMD EPYC (Zen 4), AVX-512 and AVX2 alike, the cases at
    // 28x28 and 29x29 and MobileNetV2's first expansion; on an Intel Xeon with AMX, AVX-512 and
    // AVX2 alike, only those at 56x56 and 112x112); the others would run its chained reference,
    // and run apart, as do those of stride 1 without a projection (CpuConvOp::make_depthwise).
    if (!fused->depthwise_ready()) continue;
    ++ran;
    ran_projected += cs.project > 0;
    fused->forward_depthwise(p.x, p.w, p.b, q.w, q.b, r.w, r.b, together);
    const Comparison cmp = compare(to_vec(together), to_vec(apart));
    INFO(cmp.str());
    CHECK(cmp.max_abs < 2e-6 * std::max(1.0, cmp.scale));
    // The output is not trivial: not all clipped, not all zero.
    int64_t inside = 0;
    for (int64_t i = 0; i < apart.numel(); ++i)
      inside += std::abs(apart.data()[i]) > 1e-3f && apart.data()[i] < kCeiling;
    CHECK(inside > apart.numel() / 10);
    // The same op's plain forward is the 1x1 convolution's.
    Tensor plain(mid_shape);
    fused->forward(p.x, p.w, p.b, plain, pd.inference_relu);
    CHECK(compare(to_vec(plain), to_vec(mid)).max_abs == 0);
  }
  CHECK(ran >= 1);  // (on both machines named above, AVX-512 and AVX2)
  CHECK(ran_projected >= 1);
}

TEST_CASE("inference folding: a 1x1 convolution runs the depthwise convolution after it", "[net][fold]") {
  // MobileNetV2's inverted residual blocks, as MATLAB builds them (normalizations, ReLU6 after
  // them) and as the exporters write them (normalizations folded into the convolutions, Clip
  // right after them), and EfficientNet's (swish). Each expansion runs its depthwise
  // convolution as its op's post-op in inference, and MobileNetV2's their linear projection
  // after it (folded or not); a projection (its output also feeds an addition), a 1x1 followed
  // by a channel multiplier of 2 and a 3x3 convolution do not, nor is a 1x1 convolution with a
  // ReLU a projection.
  const std::string dw = "NumFiltersPerGroup=1";
  NetworkSpec s;
  s.layers = classifier({
      named("imageInput", "in", {"InputSize=[112,112,3]", "Normalization=none"}),
      named("convolution2d", "c1", {"FilterSize=3", "NumFilters=16", "Padding=same", "Stride=2"}),
      named("batchNormalization", "bn1", {}),
      named("clippedRelu", "stem", {"Ceiling=0.6"}),
      // MATLAB's form, with a residual connection
      named("convolution2d", "pw1", {"FilterSize=1", "NumFilters=96"}),
      named("batchNormalization", "pw1_bn", {}),
      named("clippedRelu", "pw1_clip", {"Ceiling=0.6"}),
      named("groupedConvolution2d", "dw1", {"FilterSize=3", dw, "NumGroups=channel-wise", "Padding=same"}),
      named("batchNormalization", "dw1_bn", {}),
      named("clippedRelu", "dw1_clip", {"Ceiling=0.6"}),
      named("convolution2d", "pj1", {"FilterSize=1", "NumFilters=16"}),
      named("batchNormalization", "pj1_bn", {}),
      named_in("addition", "add1", {"NumInputs=2"}, {"pj1_bn", "stem"}),
      // the exporters' form, stride 2
      named("convolution2d", "pw2", {"FilterSize=1", "NumFilters=96"}),
      named("clippedRelu", "pw2_clip", {"Ceiling=0.6"}),
      named("groupedConvolution2d", "dw2", {"FilterSize=3", dw, "NumGroups=channel-wise", "Padding=same", "Stride=2"}),
      named("clippedRelu", "dw2_clip", {"Ceiling=0.6"}),
      named("convolution2d", "pj2", {"FilterSize=1", "NumFilters=24"}),
      // EfficientNet's
      named("convolution2d", "pw3", {"FilterSize=1", "NumFilters=144"}),
      named("batchNormalization", "pw3_bn", {}),
      named("swish", "pw3_act", {}),
      named("groupedConvolution2d", "dw3", {"FilterSize=3", dw, "NumGroups=channel-wise", "Padding=same"}),
      named("batchNormalization", "dw3_bn", {}),
      named("swish", "dw3_act", {}),
      // not fused: a channel multiplier of 2
      named("convolution2d", "pw4", {"FilterSize=1", "NumFilters=16"}),
      named("relu", "pw4_relu", {}),
      named("groupedConvolution2d", "g4",
            {"FilterSize=3", "NumFiltersPerGroup=2", "NumGroups=channel-wise", "Padding=same"}),
      named("globalAveragePooling2d", "gap", {}),
  });
  Network net(s, Device::cpu());
  auto index = [&](const std::string& name) { return index_of(net, name); };
  for (const char* name : {"pw1", "pw2", "pw3"}) {
    INFO(name);
    CHECK(net.runs_depthwise(index(name)));
    CHECK(net.layer(index(name)).fusion().depthwise.kernel == 3);
  }
  CHECK(net.layer(index("pw2")).fusion().depthwise.stride == 2);
  CHECK(net.layer(index("pw2")).fusion().depthwise.relu_ceiling == 0.6f);
  CHECK(net.layer(index("pw3")).fusion().depthwise.post_act);
  CHECK(net.layer(index("pw3")).fusion().depthwise.act == ActKind::kSwish);
  CHECK(net.layer(index("pw1")).fusion().depthwise.project_k == 16);  // pj1, its normalization folded
  CHECK(net.layer(index("pw2")).fusion().depthwise.project_k == 24);  // pj2
  CHECK(net.layer(index("pw3")).fusion().depthwise.project_k == 0);   // pw4 has a ReLU
  for (const char* name : {"c1", "pj1", "pj2", "pw4", "dw1", "g4"}) {
    INFO(name);
    CHECK_FALSE(net.runs_depthwise(index(name)));
  }
  // At batch 8 oneDNN runs pw1's and pw2's pairs (56x56) with its fused kernel on the machines
  // this was tried on (AMD EPYC (Zen 4) and Intel Xeon (AMX), AVX-512 and AVX2; at 28x28 only
  // the AMD one), pw3's (stride 1, no projection after it) apart: both paths run.
  net.set_batch(8);
  int fused = 0;
  for (const char* name : {"pw1", "pw2", "pw3"}) {
    INFO(name << ": " << net.depthwise_ready(index(name)));
    fused += net.depthwise_ready(index(name));
  }
  CHECK(fused >= 1);
  // Folded normalizations or swish: c1, pw1, dw1, pj1, pw3, dw3.
  check_folding(s, 8, 6, 0.01);
}

TEST_CASE("inference folding: a 1x1 convolution's scaled input gives the multiplication's and its values",
          "[net][fold]") {
  // The op under the multiplication + projection fusion (ConvDesc::scaled_input): per-image
  // weights times one batched product against the multiplication by a per-image channel scale
  // and the 1x1 convolution apart; where the per-image weights would outgrow a quarter of the
  // image (CpuConvOp::make_scaled) the op has no kernel.
  struct Case {
    int64_t n, hw, c, k;
    bool ready;
  };
  const Case cases[] = {{2, 16, 32, 16, true}, {3, 9, 24, 20, true}, {4, 28, 144, 40, true}, {2, 4, 64, 32, false}};
  Backend& be = cpu_backend();
  for (const Case& cs : cases) {
    INFO(cs.n << " x " << cs.hw << "x" << cs.hw << " x " << cs.c << " -> " << cs.k);
    Rng rng(5);
    ConvProblem p = random_conv_problem(cs.n, cs.hw, cs.c, cs.k, 1, 1, 1, rng);
    const Tensor s = random_tensor(Shape{cs.n, 1, 1, cs.c}, rng, 0.f, 1.f);
    Tensor scaled(p.x.shape()), apart(Shape{cs.n, cs.hw, cs.hw, cs.k}), together(apart.shape());
    be.multiply({&p.x, &s}, scaled, ProductDesc{cs.n, cs.hw * cs.hw, cs.c, {}});
    be.make(p.d)->forward(scaled, p.w, p.b, apart);
    ConvDesc d = p.d;
    d.scaled_input = true;
    auto op = be.make(d);
    INFO(impl_info(*op));
    REQUIRE(op->scaled_ready() == cs.ready);
    if (!cs.ready) continue;
    op->forward_scaled(p.x, s, p.w, p.b, together);
    const Comparison cmp = compare(to_vec(together), to_vec(apart));
    INFO(cmp.str());
    CHECK(cmp.max_abs < 2e-6 * std::max(1.0, cmp.scale));
    // Not the unscaled convolution's: the scale mattered.
    Tensor plain(apart.shape());
    op->forward(p.x, p.w, p.b, plain);
    CHECK(compare(to_vec(plain), to_vec(apart)).max_abs > 1e-2 * cmp.scale);
  }
}

TEST_CASE("inference folding: a 1x1 convolution computes the squeeze-and-excitation product before it", "[net][fold]") {
  // EfficientNet's blocks with squeeze-and-excitation: the multiplication of the depthwise
  // output by its per-channel weights (either input order) runs inside the projection after it
  // (its normalization folded as MATLAB builds it, or none as the exporters write it); a
  // multiplication feeding a convolution with a ReLU, or one whose output has another consumer,
  // runs alone.
  const std::string dw = "NumFiltersPerGroup=1";
  auto se = [&](const std::string& p, int64_t c, const std::string& in) {
    return std::vector<LayerSpec>{
        named_in("globalAveragePooling2d", p + "_gap", {}, {in}),
        named("convolution2d", p + "_se1", {"FilterSize=1", "NumFilters=8"}),
        named("swish", p + "_se1_act", {}),
        named("convolution2d", p + "_se2", {"FilterSize=1", "NumFilters=" + std::to_string(c)}),
        named("sigmoid", p + "_sig", {}),
    };
  };
  NetworkSpec s;
  s.layers = {
      named("imageInput", "in", {"InputSize=[32,32,3]", "Normalization=none"}),
      named("convolution2d", "c1", {"FilterSize=3", "NumFilters=16", "Padding=same"}),
      named("batchNormalization", "bn1", {}),
      named("swish", "stem", {}),
      // MATLAB's form
      named("convolution2d", "pw1", {"FilterSize=1", "NumFilters=48"}),
      named("batchNormalization", "pw1_bn", {}),
      named("swish", "pw1_act", {}),
      named("groupedConvolution2d", "dw1", {"FilterSize=3", dw, "NumGroups=channel-wise", "Padding=same"}),
      named("batchNormalization", "dw1_bn", {}),
      named("swish", "dw1_act", {}),
  };
  for (const LayerSpec& l : se("b1", 48, "dw1_act")) s.layers.push_back(l);
  s.layers.push_back(named_in("multiplication", "mul1", {"NumInputs=2"}, {"dw1_act", "b1_sig"}));
  s.layers.push_back(named("convolution2d", "pj1", {"FilterSize=1", "NumFilters=16"}));
  s.layers.push_back(named("batchNormalization", "pj1_bn", {}));
  s.layers.push_back(named_in("addition", "add1", {"NumInputs=2"}, {"pj1_bn", "stem"}));
  // the exporters' form, the scale first
  s.layers.push_back(named("convolution2d", "pw2", {"FilterSize=1", "NumFilters=64"}));
  s.layers.push_back(named("swish", "pw2_act", {}));
  s.layers.push_back(
      named("groupedConvolution2d", "dw2", {"FilterSize=3", dw, "NumGroups=channel-wise", "Padding=same"}));
  s.layers.push_back(named("swish", "dw2_act", {}));
  for (const LayerSpec& l : se("b2", 64, "dw2_act")) s.layers.push_back(l);
  s.layers.push_back(named_in("multiplication", "mul2", {"NumInputs=2"}, {"b2_sig", "dw2_act"}));
  s.layers.push_back(named("convolution2d", "pj2", {"FilterSize=1", "NumFilters=24"}));
  // not fused: a ReLU after the convolution
  for (const LayerSpec& l : se("b3", 24, "pj2")) s.layers.push_back(l);
  s.layers.push_back(named_in("multiplication", "mul3", {"NumInputs=2"}, {"pj2", "b3_sig"}));
  s.layers.push_back(named("convolution2d", "pj3", {"FilterSize=1", "NumFilters=16"}));
  s.layers.push_back(named("relu", "pj3_relu", {}));
  s.layers.push_back(named("globalAveragePooling2d", "gap", {}));
  s.layers.push_back(named("fullyConnected", "fc", {"OutputSize=5"}));
  s.layers.push_back(named("softmax", "sm", {}));
  s.layers.push_back(named("classification", "out", {}));
  Network net(s, Device::cpu());
  auto index = [&](const std::string& name) { return index_of(net, name); };
  CHECK(net.runs_scaled(index("pj1")));
  CHECK(net.runs_scaled(index("pj2")));
  for (const char* name : {"pj3", "b1_se1", "b1_se2", "pw1", "c1"}) {
    INFO(name);
    CHECK_FALSE(net.runs_scaled(index(name)));
  }
  net.set_batch(4);
  for (const char* name : {"pj1", "pj2"}) {
    INFO(name);
    CHECK(net.scaled_ready(index(name)));  // 32x32 images: the per-image weights are small
  }
  // Folded normalizations or swish: c1, pw1, dw1, pj1, pw2, dw2, and the SE's first convolutions.
  // (The global average poolings leave the probabilities 0.005 apart; the folded and unfolded
  // ones agree to 2e-5.)
  check_folding(s, 4, 9, 0.003);
}

}  // namespace dlt::test

namespace dlt::test {

namespace {

// What forward_sum must give: relu(conv(x) + b + r) (or without the ReLU), from the plain
// convolution's output.
Vec summed(const Tensor& conv_out, const Tensor& r, bool relu) {
  Vec y = to_vec(conv_out);
  const Vec rv = to_vec(r);
  for (size_t i = 0; i < y.size(); ++i) {
    y[i] += rv[i];
    if (relu) y[i] = std::max(y[i], 0.0);
  }
  return y;
}

}  // namespace

TEST_CASE("inference folding: a convolution's residual sum gives the convolution, addition and ReLU's values",
          "[net][fold]") {
  // The op under the residual-sum fusion (ConvDesc::inference_sum): oneDNN's forward with a
  // binary add post-op (and the ReLU after it), or the Winograd / blocked ops, and kernels
  // without that post-op, with one add pass after them (SumAfterConvOp, ResidualAdd), against
  // the plain convolution, then the addition and the ReLU. forward() of the same op stays the
  // plain convolution.
  struct Case {
    const char* name;
    int64_t hw, c, k, f, stride, groups;
  };
  const Case cases[] = {
      {"1x1, 32 -> 48", 9, 32, 48, 1, 1, 1},
      {"3x3, 64 -> 64 (the Winograd shape)", 12, 64, 64, 3, 1, 1},
      {"3x3 stride 2, 16 -> 24", 11, 16, 24, 3, 2, 1},
      {"depthwise 5x5", 10, 24, 24, 5, 1, 24},
  };
  Backend& be = cpu_backend();
  for (const Case& cs : cases)
    for (bool relu : {false, true}) {
      INFO(cs.name << (relu ? ", then a ReLU" : ""));
      Rng rng(9);
      const ConvProblem p = random_conv_problem(3, cs.hw, cs.c, cs.k, cs.f, cs.stride, cs.groups, rng);
      const ConvDesc& d = p.d;
      const Shape ys{d.n, d.out_h(), d.out_w(), d.k};
      const Tensor r = random_tensor(ys, rng, -2.f, 2.f);
      Tensor pre(ys), together(ys), unfused(ys);
      be.make(d)->forward(p.x, p.w, p.b, pre);
      ConvDesc sd = d;
      sd.inference_sum = true;
      sd.sum_relu = relu;
      REQUIRE(be.supports(sd));
      auto op = be.make(sd);
      INFO(impl_info(*op));
      CHECK(impl_info(*op).find("sum") != std::string::npos);
      op->forward_sum(p.x, p.w, p.b, r, together);
      const Vec want = summed(pre, r, relu);
      const Comparison cmp = compare(to_vec(together), want);
      INFO(cmp.str());
      CHECK(cmp.max_abs < 1e-5 * std::max(1.0, cmp.scale));
      op->forward(p.x, p.w, p.b, unfused);
      CHECK(compare(to_vec(unfused), to_vec(pre)).max_abs < 1e-5 * std::max(1.0, cmp.scale));
      // The residual and the ReLU mattered: without them the output is far off.
      CHECK(compare(to_vec(pre), want).max_abs > 0.1);
      int64_t clipped = 0;
      for (double v : summed(pre, r, false)) clipped += v < -0.01;
      CHECK(clipped > 0);
    }
  // Refused with an activation of the convolution's own before the sum.
  ConvDesc bad{};
  bad.n = 1, bad.h = bad.w = 4, bad.c = bad.k = 8, bad.inference_sum = true, bad.inference_relu = true;
  CHECK_THROWS_WITH(be.make(bad), Catch::Contains("residual sum after the convolution's own activation"));
}

TEST_CASE("inference folding: a residual addition and its ReLU run in the convolution before them", "[net][fold]") {
  // ResNet's blocks: the last convolution of a block (its normalization folded, or none) adds
  // the shortcut in its op, with the ReLU after the addition. The shortcut's projection, listed
  // after the block's last convolution, takes the sum instead (the other input must be computed
  // first). Not fused: a convolution with a ReLU of its own, an addition of three inputs, an
  // addition whose output another layer also reads (its ReLU stays apart: the sum still folds),
  // the sum of a value with itself.
  NetworkSpec s;
  s.layers = classifier({
      named("imageInput", "in", {"InputSize=[12,12,8]", "Normalization=none"}),
      named("convolution2d", "stem", {"FilterSize=3", "NumFilters=16", "Padding=same"}),
      named("batchNormalization", "stem_bn", {}),
      named("relu", "stem_relu", {}),
      // an identity block: conv, bn, relu, conv, bn, + stem_relu, relu
      named("convolution2d", "a1", {"FilterSize=3", "NumFilters=16", "Padding=same"}),
      named("batchNormalization", "a1_bn", {}),
      named("relu", "a1_relu", {}),
      named("convolution2d", "a2", {"FilterSize=3", "NumFilters=16", "Padding=same"}),
      named("batchNormalization", "a2_bn", {}),
      named_in("addition", "a_add", {"NumInputs=2"}, {"stem_relu", "a2_bn"}),
      named("relu", "a_relu", {}),
      // a projection block, the shortcut listed last: it takes the sum
      named("convolution2d", "b1", {"FilterSize=1", "NumFilters=24", "Stride=2"}),
      named("batchNormalization", "b1_bn", {}),
      named_in("convolution2d", "b_sc", {"FilterSize=1", "NumFilters=24", "Stride=2"}, {"a_relu"}),
      named("batchNormalization", "b_sc_bn", {}),
      named_in("addition", "b_add", {"NumInputs=2"}, {"b1_bn", "b_sc_bn"}),
      named("relu", "b_relu", {}),
      // an exporter's form: no normalization; the addition read twice
      named("convolution2d", "c1", {"FilterSize=3", "NumFilters=24", "Padding=same"}),
      named_in("addition", "c_add", {"NumInputs=2"}, {"c1", "b_relu"}),
      named("relu", "c_relu", {}),
      named_in("convolution2d", "d1", {"FilterSize=1", "NumFilters=24"}, {"c_relu"}),
      named("relu", "d1_relu", {}),
      named_in("addition", "d_add", {"NumInputs=2"}, {"d1_relu", "c_add"}),
      named_in("convolution2d", "e1", {"FilterSize=1", "NumFilters=24"}, {"d_add"}),
      named_in("addition", "e_add", {"NumInputs=3"}, {"e1", "d_add", "c_relu"}),
      named("convolution2d", "f1", {"FilterSize=1", "NumFilters=24"}),
      named_in("addition", "f_add", {"NumInputs=2"}, {"f1", "f1"}),
      named("globalAveragePooling2d", "gap", {}),
  });
  Network net(s, Device::cpu());
  auto index = [&](const std::string& name) { return index_of(net, name); };
  for (const char* name : {"a2", "b_sc", "c1"}) {
    INFO(name);
    CHECK(net.runs_sum(index(name)));
  }
  CHECK(net.layer(index("a2")).fusion().sum_relu);
  CHECK(net.layer(index("b_sc")).fusion().sum_relu);
  CHECK_FALSE(net.layer(index("c1")).fusion().sum_relu);  // c_add is also d_add's input
  for (const char* name : {"stem", "a1", "b1", "d1", "e1", "f1"}) {
    INFO(name);
    CHECK_FALSE(net.runs_sum(index(name)));
  }
  // Folding: stem, a1, a2, b1, b_sc (normalizations), c1 (its sum).
  check_folding(s, 3, 6, 0.03);
}

}  // namespace dlt::test
