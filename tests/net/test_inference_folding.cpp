// Inference folding (Network::set_inference_folding): a convolution and the
// batchNormalization after it run in inference as one convolution with the normalization in
// its weights and bias and its ReLU as a post-op. The class probabilities match the unfolded
// network's on cifar10-bn (NHWC convolutions), resnet18-cifar (Winograd on AVX-512, blocked
// direct convolution on AVX2) and shapes-mobilenet (depthwise and grouped convolutions), also
// after the weights and statistics change; a clippedRelu (ReLU6) or swish (SiLU) after the
// normalization, or a swish right after a convolution, folds in as the convolution's post-op.
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
  s.layers = {
      named("imageInput", "in", {"InputSize=[9,9,3]", "Normalization=none"}),
      named("convolution2d", "c1", {"FilterSize=3", "NumFilters=16", "Padding=same", "Stride=2"}),
      named("batchNormalization", "bn1", {}),
      named("clippedRelu", "clip1", {"Ceiling=0.3"}),
      named("groupedConvolution2d", "dw", {"FilterSize=3", "NumFiltersPerGroup=1", "NumGroups=channel-wise",
                                           "Padding=same"}),
      named("batchNormalization", "bn2", {}),
      named("clippedRelu", "clip2", {"Ceiling=0.3"}),
      named("convolution2d", "pw", {"FilterSize=1", "NumFilters=8"}),
      named("batchNormalization", "bn3", {}),
      named("globalAveragePooling2d", "gap", {}),
      named("fullyConnected", "fc", {"OutputSize=5"}),
      named("softmax", "sm", {}),
      named("classification", "out", {}),
  };
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
  auto named_in = [](const std::string& type, const std::string& name, const std::vector<std::string>& options,
                     std::vector<std::string> inputs) {
    LayerSpec s = named(type, name, options);
    s.inputs = std::move(inputs);
    return s;
  };
  NetworkSpec s;
  s.layers = {
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
      named("fullyConnected", "fc", {"OutputSize=5"}),
      named("softmax", "sm", {}),
      named("classification", "out", {}),
  };
  Network net(s, Device::cpu());
  auto index = [&](const std::string& name) {
    for (size_t i = 0; i < net.size(); ++i)
      if (net.layer(i).name() == name) return i;
    FAIL("no layer " << name);
    return size_t(0);
  };
  CHECK(net.layer(index("c1")).fusion().folded_swish);       // with its normalization
  CHECK(net.layer(index("dw")).fusion().folded_swish);       // depthwise, with its normalization
  CHECK(net.layer(index("squeeze")).fusion().folded_swish);  // no normalization between
  CHECK(net.layer(index("head")).fusion().folded_swish);
  CHECK_FALSE(net.layer(index("excite")).fusion().folded_swish);  // a sigmoid after it
  CHECK_FALSE(net.layer(index("pw")).fusion().folded_swish);      // bn3 has no activation after it
  CHECK(net.folds(index("squeeze")));
  // c1, dw, pw with their normalizations; squeeze and head with their swish alone. The sigmoid
  // gate halves the features, so the probabilities spread less than the others' (0.05-0.09 here,
  // against differences of 3e-8 between folded and not).
  check_folding(s, 4, 5, 0.03);
}

}  // namespace dlt::test

namespace dlt::test {

TEST_CASE("inference folding: a convolution's swish post-op gives the separate swish's values", "[net][fold]") {
  // The ops under the folded swish: oneDNN's direct convolution with an eltwise_swish post-op,
  // and the Winograd / blocked ops with the swish op after them (ActAfterConvOp), against the
  // plain convolution and the swish layer's op.
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
  for (const Case& cs : cases) {
    INFO(cs.name);
    Rng rng(5);
    const ConvProblem p = random_conv_problem(2, cs.hw, cs.c, cs.k, cs.f, 1, cs.groups, rng);
    const ConvDesc& d = p.d;
    const Tensor &x = p.x, &w = p.w, &b = p.b;
    const Shape ys{d.n, d.out_h(), d.out_w(), d.k};
    auto plain = be.make_conv(d);
    auto swish = be.make_act(ActDesc{ys.numel(), ActKind::kSwish, 0.f});
    Tensor pre(ys), apart(ys), together(ys), unfolded(ys);
    plain->forward(x, w, b, pre);
    swish->forward(pre, apart);

    ConvDesc fd = d;
    fd.inference_relu = true;
    fd.inference_swish = true;
    auto folded = be.make_conv(fd);
    folded->forward(x, w, b, together, true);
    folded->forward(x, w, b, unfolded);  // without the post-op: the plain convolution
    const Comparison cmp = compare(to_vec(together), to_vec(apart));
    INFO(cmp.str());
    CHECK(cmp.max_abs < 1e-6);
    CHECK(compare(to_vec(unfolded), to_vec(pre)).max_abs < 1e-6);
    int64_t negative = 0;  // swish's negative lobe is reached: a ReLU in its place would fail
    for (int64_t i = 0; i < apart.numel(); ++i) negative += apart.data()[i] < -0.01f;
    CHECK(negative > 0);
  }
}

}  // namespace dlt::test
