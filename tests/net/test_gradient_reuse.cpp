// Gradient buffers shared by liveness (Network::plan_gradients): a training step gives
// bit-identical parameter gradients and loss with and without sharing, on a chain with fused
// batch norm and on the residual DAG of resnet18-cifar, and the shared plan holds fewer bytes.
#include <catch2/catch.hpp>

#include "config/config.h"
#include "net/network.h"
#include "support/tensor_utils.h"

namespace dlt::test {

namespace {

struct StepResult {
  double loss = 0;
  std::vector<float> grads;
  int64_t activation_bytes = 0;
};

StepResult one_step(const NetworkSpec& spec, bool reuse, int64_t n) {
  Network net(spec, Device::cpu());
  net.set_gradient_reuse(reuse);
  net.init_params(7);
  net.set_batch(n);
  Rng rng(11);
  const Shape& in = net.input_shape();
  Tensor x = random_tensor(Shape{n, in[0], in[1], in[2]}, rng, 0.f, 255.f);
  Tensor y(Shape{n}, Device::cpu(), DType::kI32);
  for (int64_t i = 0; i < n; ++i)
    y.data_i32()[i] = static_cast<int32_t>(rng.below(static_cast<uint64_t>(net.num_classes())));
  RunContext ctx{true, 3, 1};
  StepResult r;
  // Two steps with the same buffers: stale values from the first must not leak into the second.
  for (int step = 0; step < 2; ++step) {
    net.forward(x, ctx);
    r.loss = net.loss_and_backward(y, ctx, true, nullptr);
  }
  for (Param* p : net.params()) {
    Vec g = to_vec(p->grad);
    r.grads.insert(r.grads.end(), g.begin(), g.end());
  }
  r.activation_bytes = net.activation_bytes();
  return r;
}

void check_reuse(const std::string& config, int64_t n) {
  INFO(config);
  Config c = load_config(std::string(DLT_SOURCE_DIR) + "/configs/" + config + ".yaml");
  StepResult shared = one_step(c.network, true, n), separate = one_step(c.network, false, n);
  CHECK(shared.loss == separate.loss);
  REQUIRE(shared.grads.size() == separate.grads.size());
  int64_t differ = 0;
  for (size_t i = 0; i < shared.grads.size(); ++i) differ += shared.grads[i] != separate.grads[i];
  CHECK(differ == 0);
  INFO("activation + gradient bytes: shared " << shared.activation_bytes << ", separate " << separate.activation_bytes);
  CHECK(shared.activation_bytes < separate.activation_bytes);
}

}  // namespace

TEST_CASE("gradient buffers shared by liveness: same gradients, fewer bytes", "[net]") {
  check_reuse("cifar10-bn", 4);
  check_reuse("resnet18-cifar", 2);
}

}  // namespace dlt::test
