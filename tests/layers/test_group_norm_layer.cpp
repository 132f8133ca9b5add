// groupNormalization and instanceNormalization (MATLAB's groupNormalizationLayer and
// instanceNormalizationLayer): a network of both against finite differences; NumGroups
// all-channels computes layerNormalization's spatial-channel and channel-wise
// instanceNormalization, on the same weights; one image trains as in a batch (no batch
// statistics); option and shape errors.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "config/config.h"
#include "net/network.h"
#include "support/grad_check.h"
#include "support/tensor_utils.h"
#include "util/error.h"

using namespace dlt;
using namespace dlt::test;

namespace {

NetworkSpec with_norm(const std::string& norm) {
  return network_spec_from_yaml(
      "layers:\n"
      "  - {type: imageInput, Name: in, InputSize: [5, 4, 3], Normalization: none}\n"
      "  - {type: convolution2d, Name: conv, FilterSize: 3, NumFilters: 6, Padding: same}\n"
      "  - {" +
          norm +
          ", Name: norm}\n"
          "  - {type: relu, Name: relu}\n"
          "  - {type: globalAveragePooling2d, Name: gap}\n"
          "  - {type: fullyConnected, Name: fc, OutputSize: 3}\n"
          "  - {type: softmax, Name: sm}\n"
          "  - {type: classification, Name: out}\n",
      "inline");
}

// The class probabilities of a batch of 3 random images in training mode, weights from seed 2.
Vec probabilities(const NetworkSpec& spec) {
  Network net(spec, Device::cpu());
  net.init_params(2);
  net.set_batch(3);
  Rng rng(4);
  return to_vec(net.forward(random_tensor(Shape{3, 5, 4, 3}, rng, -2.f, 2.f), RunContext{true, 1, 0}));
}

}  // namespace

TEST_CASE("network gradients: group and instance normalization (tests/data/norm/group_norm.yaml)",
          "[net][grad][group_norm]") {
  GradCheckOptions o;
  o.batch = 2;
  o.samples = 12;
  o.step = 1e-3;
  const GradCheckReport r =
      check_network(load_config(std::string(DLT_SOURCE_DIR) + "/tests/data/norm/group_norm.yaml").network, o);
  INFO("checked " << r.checked << ", worst " << r.worst << " (error " << r.max_error << ")");
  CHECK(r.checked >= 80);
  CHECK(r.failed == 0);
}

TEST_CASE("groupNormalization: all-channels is layerNormalization, channel-wise instanceNormalization",
          "[layers][group_norm]") {
  const Vec all = probabilities(with_norm("type: groupNormalization, NumGroups: all-channels"));
  const Vec layer = probabilities(with_norm("type: layerNormalization, OperationDimension: spatial-channel"));
  CHECK(compare(all, layer).max_abs <= 1e-6);
  const Vec each = probabilities(with_norm("type: groupNormalization, NumGroups: channel-wise"));
  const Vec instance = probabilities(with_norm("type: instanceNormalization"));
  CHECK(compare(each, instance).max_abs <= 1e-6);
  const Vec six = probabilities(with_norm("type: groupNormalization, NumGroups: 6"));
  CHECK(compare(six, instance).max_abs <= 1e-6);
  // Groups of 2 channels differ from both (the test can tell them apart).
  const Vec three = probabilities(with_norm("type: groupNormalization, NumGroups: 3"));
  CHECK(compare(three, instance).max_abs > 1e-3);
  CHECK(compare(three, layer).max_abs > 1e-3);
}

TEST_CASE("groupNormalization: an image's output does not depend on the rest of the batch", "[layers][group_norm]") {
  Network net(with_norm("type: groupNormalization, NumGroups: 2"), Device::cpu());
  net.init_params(3);
  Rng rng(6);
  const Tensor x = random_tensor(Shape{3, 5, 4, 3}, rng, -2.f, 2.f);
  net.set_batch(3);
  const Vec batch = to_vec(net.forward(x, RunContext{true, 1, 0}));
  net.set_batch(1);
  Tensor first(Shape{1, 5, 4, 3});
  std::copy(x.data(), x.data() + first.numel(), first.data());
  const Vec alone = to_vec(net.forward(first, RunContext{true, 1, 0}));
  REQUIRE(alone.size() == 3);
  for (size_t k = 0; k < 3; ++k) CHECK(alone[k] == Approx(batch[k]).margin(1e-7));
}

TEST_CASE("groupNormalization: option and shape errors name the layer", "[layers][group_norm]") {
  auto build = [](const std::string& norm) { return Network(with_norm(norm), Device::cpu()); };
  CHECK_THROWS_WITH(build("type: groupNormalization"),
                    Catch::Contains("layer 'norm'") && Catch::Contains("option NumGroups is required"));
  CHECK_THROWS_WITH(build("type: groupNormalization, NumGroups: 4"),
                    Catch::Contains("NumGroups 4 does not divide the input's 6 channels"));
  CHECK_THROWS_WITH(build("type: groupNormalization, NumGroups: channelwise"),
                    Catch::Contains("option NumGroups must be a number >= 1, all-channels or channel-wise, got "
                                    "'channelwise'"));
  CHECK_THROWS_WITH(build("type: groupNormalization, NumGroups: 0"),
                    Catch::Contains("option NumGroups must be an integer >= 1, got '0'"));
  CHECK_THROWS_WITH(build("type: groupNormalization, NumGroups: 2, Epsilon: 0"),
                    Catch::Contains("option Epsilon must be > 0"));
  CHECK_THROWS_WITH(build("type: instanceNormalization, NumChannels: 5"),
                    Catch::Contains("NumChannels is 5 but the input has 6 channels"));
  CHECK_THROWS_WITH(build("type: instanceNormalization, NumGroups: 2"), Catch::Contains("unknown option 'NumGroups'"));
  CHECK_NOTHROW(build("type: groupNormalization, NumGroups: 2, NumChannels: 6, ScaleLearnRateFactor: 0"));
}
