// Backend options belong to the run, not the process: networks made in one process on backends
// with different options (backend_for(device, options)) each compute as their own options say,
// whatever was made before or after them.
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>

#include "backend/cpu/cpu_backend.h"
#include "net/network.h"
#include "support/grad_check.h"
#include "support/skip.h"
#include "support/tensor_utils.h"

namespace dlt::test {

namespace {

NetworkSpec conv_net() {
  NetworkSpec s;
  s.layers = {layer_spec("imageInput", {"InputSize=[8,8,3]", "Normalization=none"}, "in"),
              layer_spec("convolution2d", {"FilterSize=3", "NumFilters=64", "Padding=same"}, "conv1"),
              layer_spec("relu", {}, "relu1"),
              // 3x3, stride 1, 64 -> 64: Winograd where the CPU has one, unless ConvolutionAlgorithm is direct
              layer_spec("convolution2d", {"FilterSize=3", "NumFilters=64", "Padding=same"}, "conv2"),
              layer_spec("fullyConnected", {"OutputSize=10"}, "fc"), layer_spec("softmax", {}, "softmax"),
              layer_spec("classification", {}, "output")};
  return s;
}

// The same weights (seed 5) on the CPU backend with `options`, its ops made now.
std::unique_ptr<Network> network_with(const NetworkSpec& spec, const BackendOptions& options, int64_t n) {
  auto net = std::make_unique<Network>(spec, backend_for(Device::cpu(), options));
  net->init_params(5);
  net->set_batch(n);
  return net;
}

}  // namespace

TEST_CASE("backend options are per run: networks in one process follow their own ConvolutionAlgorithm", "[net]") {
  const NetworkSpec spec = conv_net();
  const int64_t n = 2;
  BackendOptions chosen, direct;
  direct.direct_convolution = true;  // ConvolutionAlgorithm: direct
  CHECK(&backend_for(Device::cpu(), direct) != &backend_for(Device::cpu(), chosen));
  CHECK(&backend_for(Device::cpu(), direct) == &backend_for(Device::cpu(), direct));  // one per options
  CHECK(backend_for(Device::cpu(), direct).options().direct_convolution);
  // Made interleaved: with one process-wide setting the ops of all four would follow the last one set.
  std::unique_ptr<Network> a = network_with(spec, chosen, n), b = network_with(spec, direct, n),
                           c = network_with(spec, chosen, n), d = network_with(spec, direct, n);
  Rng rng(3);
  const Tensor x = to_tensor(random_vec(n * 8 * 8 * 3, rng, 0.0, 255.0), {n, 8, 8, 3});
  const RunContext ctx{false, 1, 0};
  const Vec ya = to_vec(a->forward(x, ctx)), yb = to_vec(b->forward(x, ctx)), yc = to_vec(c->forward(x, ctx)),
            yd = to_vec(d->forward(x, ctx));
  CHECK(ya == yc);  // the same options: the same bits, in whatever order the networks were made
  CHECK(yb == yd);
  REQUIRE(ya.size() == yb.size());
  double worst = 0;
  for (size_t i = 0; i < ya.size(); ++i) worst = std::max(worst, std::fabs(ya[i] - yb[i]));
  CHECK(worst <= 1e-5);  // both compute the same probabilities
}

// Where the CPU has a Winograd convolution (oneDNN's on AVX-512, dltrain's on AVX2 with FMA), a
// network without ConvolutionAlgorithm direct runs it, and its rounding differs from direct
// convolution's: the options really choose different kernels. Without one both run direct
// convolution and there is nothing to tell apart: a skip.
TEST_CASE("backend options are per run: ConvolutionAlgorithm direct runs another kernel than the default",
          "[net][skippable]") {
  const CpuIsa isa = cpu_isa();
  DLT_SKIP_IF(!isa.winograd && !isa.winograd_avx2,
              "no Winograd convolution on " << isa.name << ": both networks would run direct convolution");
  const NetworkSpec spec = conv_net();
  const int64_t n = 2;
  BackendOptions chosen, direct;
  direct.direct_convolution = true;
  std::unique_ptr<Network> a = network_with(spec, chosen, n), b = network_with(spec, direct, n);
  Rng rng(3);
  const Tensor x = to_tensor(random_vec(n * 8 * 8 * 3, rng, 0.0, 255.0), {n, 8, 8, 3});
  const RunContext ctx{false, 1, 0};
  const Vec ya = to_vec(a->forward(x, ctx)), yb = to_vec(b->forward(x, ctx));
  CHECK(ya != yb);
}

TEST_CASE("backend options are per run: FusedBatchNormPooling false keeps batch norm and pooling apart", "[net]") {
  // The fused op is null where the backend's options turn it off; the network then runs the layers
  // one by one, with the same results.
  BackendOptions fused, apart;
  apart.fused_bn_pool = false;
  BnReluMaxPoolDesc f;
  f.bn.n = 2, f.bn.h = f.bn.w = 8, f.bn.c = 16, f.bn.fuse_relu = true;
  f.kh = f.kw = 2, f.stride_h = f.stride_w = 2;
  CHECK(backend_for(Device::cpu(), fused).supports(f));
  CHECK_FALSE(backend_for(Device::cpu(), apart).supports(f));
  CHECK(backend_for(Device::cpu(), fused).supports(f));  // unchanged by the other
}

TEST_CASE("fusion plan asks the backend: FusedBatchNormPooling false plans batch norm and pooling apart",
          "[net][fusion]") {
  // The plan asks the backend for BnReluMaxPoolDesc; with the option off the backend declines
  // and the network runs the three layers one by one, to the same loss and gradients.
  NetworkSpec s;
  s.layers = {layer_spec("imageInput", {"InputSize=[8,8,3]", "Normalization=none"}, "in"),
              layer_spec("convolution2d", {"FilterSize=3", "NumFilters=8", "Padding=same"}, "conv"),
              layer_spec("batchNormalization", {}, "bn"),
              layer_spec("relu", {}, "relu"),
              layer_spec("maxPooling2d", {"PoolSize=2", "Stride=2"}, "pool"),
              layer_spec("fullyConnected", {"OutputSize=3"}, "fc"),
              layer_spec("softmax", {}, "sm"),
              layer_spec("classification", {}, "out")};
  BackendOptions fused_options, apart_options;
  apart_options.fused_bn_pool = false;
  const int64_t n = 4;
  std::unique_ptr<Network> fused = network_with(s, fused_options, n), apart = network_with(s, apart_options, n);
  CHECK(fused->fused_with_max_pool(2));
  CHECK_FALSE(apart->fused_with_max_pool(2));
  CHECK_FALSE(apart->layer(2).fusion().with_max_pool);
  Rng rng(9);
  const Tensor x = random_tensor(Shape{n, 8, 8, 3}, rng);
  Tensor labels(Shape{n}, Device::cpu(), DType::kI32);
  for (int64_t i = 0; i < n; ++i) labels.data_i32()[i] = static_cast<int32_t>(i % 3);
  const RunContext ctx{true, 1, 0};
  const Vec pf = to_vec(fused->forward(x, ctx)), pa = to_vec(apart->forward(x, ctx));
  const double lf = fused->loss_and_backward(labels, ctx, true, nullptr);
  const double la = apart->loss_and_backward(labels, ctx, true, nullptr);
  INFO("probabilities " << compare(pf, pa).str());
  CHECK(compare(pf, pa).max_abs <= 1e-5);
  CHECK(std::fabs(lf - la) <= 1e-5);
  const Comparison grads = compare(to_vec(fused->flat_grads()), to_vec(apart->flat_grads()));
  INFO("gradients " << grads.str());
  CHECK(grads.rel <= 1e-4);
  CHECK(grads.scale > 0);  // the gradients are not all zero: the check could fail
}

}  // namespace dlt::test
