// A clippedRelu (MobileNet's ReLU6) after a convolution runs in the convolution's oneDNN op on
// the CPU: forward as a clip post-op, backward as the clipped ReLU's gradient taken from the
// output (fusion_plan.cpp). The results are the separate layers' bits, and only convolutions
// absorb it.
#include <catch2/catch.hpp>

#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "net/fusion_plan.h"
#include "net/network.h"
#include "support/grad_check.h"
#include "support/tensor_utils.h"

namespace dlt::test {

namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.numel() == b.numel() && std::memcmp(a.data(), b.data(), static_cast<size_t>(a.numel()) * 4) == 0;
}

LayerSpec named(LayerSpec s, const std::string& name) {
  s.name = name;
  return s;
}

// A backend of a device with no kernels registered (the CUDA device in a build or process
// without the plugin): it accepts no op.
class NoKernels final : public Backend {
 public:
  NoKernels() : Backend(Device::cuda(0), BackendOptions{}) {}
  std::string name() const override { return "no kernels"; }
};

}  // namespace

TEST_CASE("clipped relu fusion: the convolution's clip post-op and backward give the separate ops' bits",
          "[net][fusion]") {
  struct Case {
    const char* name;
    int64_t hw, c, k, f, stride, groups;
  };
  const Case cases[] = {
      {"3x3, 64 -> 64 (the Winograd shape on AVX2)", 12, 64, 64, 3, 1, 1},
      {"1x1, 32 -> 48", 9, 32, 48, 1, 1, 1},
      {"depthwise 3x3 stride 2", 11, 24, 24, 3, 2, 24},
  };
  const float ceiling = 0.75f;
  Backend& be = cpu_backend();
  for (const Case& cs : cases) {
    INFO(cs.name);
    Rng rng(11);
    const ConvProblem p = random_conv_problem(2, cs.hw, cs.c, cs.k, cs.f, cs.stride, cs.groups, rng);
    const ConvDesc& d = p.d;
    const Tensor &x = p.x, &w = p.w, &b = p.b;
    const Shape ys{d.n, d.out_h(), d.out_w(), d.k};
    const Tensor dy = random_tensor(ys, rng);

    auto plain = be.make(d);
    auto clip = be.make(ActDesc{ys.numel(), ActKind::kClippedRelu, ceiling});
    Tensor pre(ys), apart(ys), dx_apart(ys);
    plain->forward(x, w, b, pre);
    clip->forward(pre, apart);
    clip->backward(pre, apart, dy, dx_apart);  // the separate layer: its input x

    ConvDesc fd = d;
    fd.fuse_relu = true;
    fd.relu_ceiling = ceiling;
    auto fused = be.make(fd);
    Tensor together(ys), dy_fused = dy.clone();
    fused->forward(x, w, b, together);
    clip->backward(together, together, dy_fused, dy_fused);  // the convolution's: from y, in place
    CHECK(same_bits(together, apart));
    CHECK(same_bits(dy_fused, dx_apart));

    // The outputs reach all three pieces (0, inside, the ceiling): the check could fail.
    int64_t zero = 0, inside = 0, top = 0;
    for (int64_t i = 0; i < apart.numel(); ++i) {
      const float v = apart.data()[i];
      zero += v == 0.f;
      top += v == ceiling;
      inside += v > 0.f && v < ceiling;
    }
    INFO(zero << " at 0, " << inside << " inside, " << top << " at the ceiling");
    CHECK(zero > 0);
    CHECK(inside > 0);
    CHECK(top > 0);
  }
}

TEST_CASE("clipped relu fusion: convolutions absorb a clippedRelu, other producers do not", "[net][fusion]") {
  NetworkSpec s;
  s.layers = {
      named(layer_spec("imageInput", {"InputSize=[6,6,4]", "Normalization=none"}), "in"),
      named(layer_spec("groupedConvolution2d",
                       {"FilterSize=3", "NumFiltersPerGroup=1", "NumGroups=channel-wise", "Padding=same"}),
            "dw"),
      named(layer_spec("clippedRelu", {"Ceiling=0.4"}), "clip1"),
      named(layer_spec("convolution2d", {"FilterSize=1", "NumFilters=6"}), "pw"),
      named(layer_spec("clippedRelu", {"Ceiling=0.3"}), "clip2"),
      named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=4", "Padding=same"}), "conv"),
      named(layer_spec("batchNormalization", {}), "bn"),
      named(layer_spec("clippedRelu", {"Ceiling=0.5"}), "clip3"),
      named(layer_spec("fullyConnected", {"OutputSize=5"}), "fc1"),
      named(layer_spec("clippedRelu", {"Ceiling=0.5"}), "clip4"),
      named(layer_spec("fullyConnected", {"OutputSize=3"}), "fc2"),
      named(layer_spec("softmax", {}), "sm"),
      named(layer_spec("classification", {}), "out"),
  };
  Network net(s, Device::cpu());
  CHECK(net.fused(2));  // into the depthwise convolution
  CHECK(net.fused(4));  // into the 1x1 convolution
  CHECK(net.layer(1).fusion().relu_ceiling == 0.4f);
  CHECK(net.layer(3).fusion().relu_ceiling == 0.3f);
  CHECK_FALSE(net.layer(1).fusion().relu_backward_handed_over);
  CHECK_FALSE(net.fused(7));  // after a batchNormalization: its own layer
  CHECK_FALSE(net.fused(9));  // after a fullyConnected: its own layer

  // The plan asks the backend: on one whose kernels accept no fused op (a device with no
  // kernels in this process; the CUDA convolution declines a clip unless CudaFusedClippedRelu,
  // tests/gpu) the convolutions keep their clippedRelu apart and fold nothing; on the CPU's
  // they absorb it. (Where the CUDA plugin has registered its kernels, tests/gpu checks its.)
  std::vector<Layer*> layers;
  std::vector<std::vector<int>> inputs;
  for (size_t i = 0; i < net.size(); ++i) {
    layers.push_back(&net.layer(i));
    inputs.push_back(i == 0 ? std::vector<int>{} : std::vector<int>{static_cast<int>(i) - 1});
  }
  if (op_registry::find(ConvDesc::kOp, DeviceType::kCuda).empty()) {
    const NoKernels none;
    const FusionPlan apart(layers, inputs, none);
    CHECK(apart.absorbed_by(2) == -1);
    CHECK(apart.absorbed_by(4) == -1);
    CHECK_FALSE(apart.folds(5));  // conv keeps its batchNormalization apart
  }
  const FusionPlan cpu(layers, inputs, cpu_backend());
  CHECK(cpu.absorbed_by(2) == 1);
  CHECK(cpu.absorbed_by(4) == 3);
  CHECK(net.layer(1).fusion().relu_ceiling == 0.4f);
  CHECK(cpu.absorbed_by(9) == -1);  // a fullyConnected's op has no clip
  CHECK(cpu.folds(5));              // conv folds bn
}

TEST_CASE("clipped relu fusion: network gradients through fused clipped ReLUs", "[net][fusion][grad]") {
  // Biases start random: with zero biases, a pixel whose inputs the first clip all set to 0
  // puts the 1x1 convolution exactly on the second clip's kink at 0, where the central
  // difference averages the two slopes.
  NetworkSpec s;
  s.layers = {
      named(layer_spec("imageInput", {"InputSize=[6,6,4]", "Normalization=none"}), "in"),
      named(layer_spec("groupedConvolution2d", {"FilterSize=3", "NumFiltersPerGroup=1", "NumGroups=channel-wise",
                                                "Padding=same", "BiasInitializer=narrow-normal"}),
            "dw"),
      named(layer_spec("clippedRelu", {"Ceiling=0.4"}), "clip1"),
      named(layer_spec("convolution2d", {"FilterSize=1", "NumFilters=6", "BiasInitializer=narrow-normal"}), "pw"),
      named(layer_spec("clippedRelu", {"Ceiling=0.3"}), "clip2"),
      named(layer_spec("fullyConnected", {"OutputSize=3"}), "fc"),
      named(layer_spec("softmax", {}), "sm"),
      named(layer_spec("classification", {}), "out"),
  };
  REQUIRE(Network(s, Device::cpu()).fused(2));
  REQUIRE(Network(s, Device::cpu()).fused(4));
  GradCheckOptions o;
  o.batch = 3;
  o.samples = 16;
  o.step = 1e-3;
  auto r = check_network(s, o);
  INFO("worst " << r.worst << " error " << r.max_error << " kinks " << r.skipped_kinks);
  CHECK(r.checked > 50);
  CHECK(r.failed == 0);
}

}  // namespace dlt::test
