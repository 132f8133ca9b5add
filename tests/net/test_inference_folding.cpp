// Inference folding (Network::set_inference_folding): a convolution and the
// batchNormalization after it run in inference as one convolution with the normalization in
// its weights and bias and its ReLU as a post-op. The class probabilities match the unfolded
// network's on cifar10-bn (NHWC convolutions), resnet18-cifar (Winograd on AVX-512, blocked
// direct convolution on AVX2) and shapes-mobilenet (depthwise and grouped convolutions), also
// after the weights and statistics change.
#include <catch2/catch.hpp>

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

void check_folding(const NetworkSpec& spec, int64_t n, int expect_folded) {
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
    if (expect_folded > 0) CHECK(spread > 0.1);
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
