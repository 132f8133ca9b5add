// (c) Whole networks forward and backward on the device against the CPU with the same weights:
// probabilities, loss and every parameter gradient within 1e-4 relative (normwise, per
// parameter). (f) The caching allocator: once warmed up, training and inference iterations
// take no new device memory (peak_memory_bytes stays put).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "config/config.h"
#include "gpu/gpu_test_util.h"
#include "optim/optimizer.h"

namespace dlt::test::gpu {

namespace {

void check_close(const std::string& what, const Tensor& got, const Tensor& want, double tol) {
  Comparison c = compare_tensors(got, want);
  INFO(what << ": " << c.str());
  CHECK(!c.size_mismatch);
  CHECK(c.rel <= tol);
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (float v : to_vec(t)) m = std::max(m, static_cast<double>(std::fabs(v)));
  return m;
}

// Forward (training mode: batch statistics, dropout masks from the seed) and backward of the
// same batch on both networks; compares what comes out.
void check_forward_backward(NetworkPair& p, int64_t batch, uint64_t seed) {
  Rng rng(seed);
  p.cpu->set_batch(batch);
  p.dev->set_batch(batch);
  Tensor x = random_images(batch, p.cpu->input_shape(), rng);
  Tensor y = random_labels(batch, p.cpu->num_classes(), rng);
  Tensor xd = x.to(p.dev->device()), yd = y.to(p.dev->device());
  for (bool training : {false, true}) {
    INFO((training ? "training" : "inference") << " pass");
    RunContext ctx{training, 11, 5};
    const Tensor& pc = p.cpu->forward(x, ctx);
    const Tensor& pd = p.dev->forward(xd, ctx);
    check_close("probabilities", pd, pc, 1e-4);
    int64_t cc = -1, cd = -2;
    const double lc = p.cpu->loss_and_backward(y, ctx, training, &cc);
    const double ld = p.dev->loss_and_backward(yd, ctx, training, &cd);
    CHECK(ld == Approx(lc).epsilon(1e-4));
    CHECK(cd == cc);
    if (!training) continue;
    std::vector<Param*> gc = p.cpu->params(), gd = p.dev->params();
    REQUIRE(gc.size() == gd.size());
    REQUIRE(!gc.empty());
    for (size_t i = 0; i < gc.size(); ++i) {
      const std::string what = "gradient of parameter " + std::to_string(i) + " (" + gc[i]->name + ")";
      if (feeds_batch_norm(*p.cpu, i) || zero_key_bias(*p.cpu, i)) {
        // Zero in exact arithmetic, so a relative comparison compares noise: a convolution's
        // bias whose output goes into batch norm (the normalisation subtracts it again), an
        // attention's KeyBias (a softmax row does not change when the same number is added to
        // all its scores; not with cosine attention or a rotary embedding). Both sides must be at the level of
        // rounding: 1e-5 of a gradient whose order a wrongly computed one would have: the layer's weights' before the
        // bias, the key weights' for KeyBias (the same sum over the tokens' dK, weighted by the inputs).
        size_t ref = i - 1;  // the KeyWeights before a KeyBias (three before it, or four with QueryBias)
        if (gc[i]->name == "KeyBias")
          while (ref > 0 && gc[ref]->name != "KeyWeights") --ref;
        const double noise = 1e-5 * max_abs(gc[ref]->grad);
        INFO(what << ": zero in exact arithmetic; max |got| " << max_abs(gd[i]->grad) << ", max |want| "
                  << max_abs(gc[i]->grad) << ", allowed " << noise);
        CHECK(max_abs(gc[i]->grad) <= noise);
        CHECK(max_abs(gd[i]->grad) <= noise);
        continue;
      }
      check_close(what, gd[i]->grad, gc[i]->grad, 1e-4);
    }
    check_close("flat gradient buffer", p.dev->flat_grads(), p.cpu->flat_grads(), 1e-4);
  }
}

}  // namespace

TEST_CASE("gpu network: cifar10-bn forward and backward agree with the CPU", "[gpu][net]") {
  NetworkPair p = network_pair(config_network("cifar10-bn"), 3);
  check_forward_backward(p, 16, 1);
  check_forward_backward(p, 5, 2);  // a smaller last batch reuses the buffers
}

TEST_CASE("gpu network: cifar10 (the seed network, no batch norm) agrees with the CPU", "[gpu][net]") {
  NetworkPair p = network_pair(config_network("cifar10"), 4);
  check_forward_backward(p, 8, 3);
}

TEST_CASE("gpu network: a DAG with dropout, concat, addition, LRN, elu and average pooling", "[gpu][net]") {
  NetworkSpec s = network_spec_from_yaml(R"(layers:
  - {type: imageInput, Name: in, InputSize: [12, 12, 3], Normalization: zscore}
  - {type: convolution2d, Name: stem, FilterSize: 3, NumFilters: 8, Padding: same}
  - {type: crossChannelNormalization, Name: lrn, WindowChannelSize: 5}
  - {type: convolution2d, Name: a, FilterSize: 3, NumFilters: 8, Padding: same, Inputs: [lrn]}
  - {type: batchNormalization, Name: bna}
  - {type: elu, Name: act}
  - {type: addition, Name: add, Inputs: [act, lrn]}
  - {type: convolution2d, Name: b, FilterSize: 1, NumFilters: 4, Stride: 2, Inputs: [lrn]}
  - {type: averagePooling2d, Name: avg, PoolSize: 2, Stride: 2, Inputs: [add]}
  - {type: depthConcatenation, Name: cat, Inputs: [avg, b]}
  - {type: leakyRelu, Name: lrelu, Scale: 0.1}
  - {type: dropout, Name: drop, Probability: 0.3}
  - {type: fullyConnected, Name: fc, OutputSize: 5}
  - {type: softmax, Name: sm}
  - {type: classification, Name: out}
)",
                                         "gpu DAG test");
  NetworkPair p = network_pair(s, 5);
  check_forward_backward(p, 6, 4);
}

TEST_CASE("gpu network: resnet18-cifar (residual additions, projections, global pooling)", "[gpu][net]") {
  NetworkPair p = network_pair(config_network("resnet18-cifar"), 6);
  check_forward_backward(p, 4, 5);
}

TEST_CASE("gpu network: a tiny vision transformer (patch and position embedding, class token, attention)",
          "[gpu][net]") {
  NetworkPair p = network_pair(config_network_file("tests/data/vit/tiny_vit.yaml"), 6);
  check_forward_backward(p, 7, 4);
  check_forward_backward(p, 3, 5);
}

TEST_CASE("gpu network: a tiny Swin (window attention, shifted windows, relative position bias)", "[gpu][net]") {
  NetworkPair p = network_pair(config_network_file("tests/data/swin/tiny_swin.yaml"), 6);
  check_forward_backward(p, 7, 4);
  check_forward_backward(p, 3, 5);
}

TEST_CASE("gpu network: cross-attention (the attention layer between projections of two sequences)", "[gpu][net]") {
  NetworkPair p = network_pair(config_network_file("tests/data/vit/cross_attention.yaml"), 6);
  check_forward_backward(p, 7, 4);
  check_forward_backward(p, 3, 5);
}

TEST_CASE("gpu network: attention on images (PVT's spatial-reduction attention, selfAttention on pixels)",
          "[gpu][net]") {
  NetworkPair p = network_pair(config_network_file("tests/data/vit/pvt_image.yaml"), 6);
  check_forward_backward(p, 4, 4);
  check_forward_backward(p, 1, 5);
}

TEST_CASE("gpu network: channel attention (DaViT's and XCiT's attention across channels, on tokens and a map)",
          "[gpu][net]") {
  NetworkPair p = network_pair(config_network_file("tests/data/vit/channel_attention.yaml"), 6);
  check_forward_backward(p, 4, 4);
  check_forward_backward(p, 1, 5);
}

TEST_CASE("gpu network: BEiT's score bias and pooling after the class token", "[gpu][net]") {
  NetworkPair p = network_pair(config_network_file("tests/data/vit/beit.yaml"), 6);
  check_forward_backward(p, 4, 4);
  check_forward_backward(p, 1, 5);
}

TEST_CASE("gpu network: EVA-02's rotary embedding and SwiGLU MLP", "[gpu][net]") {
  NetworkPair p = network_pair(config_network_file("tests/data/vit/eva.yaml"), 6);
  check_forward_backward(p, 4, 4);
  check_forward_backward(p, 1, 5);
}

TEST_CASE("gpu network: MobileViT v2's separable self-attention on its unfolded patches", "[gpu][net]") {
  NetworkPair p = network_pair(config_network_file("tests/data/vit/mobilevitv2.yaml"), 6);
  check_forward_backward(p, 4, 4);
  check_forward_backward(p, 1, 5);
}

TEST_CASE("gpu network: EfficientViT's ReLU linear attention after its multi-scale aggregation", "[gpu][net]") {
  NetworkPair p = network_pair(config_network_file("tests/data/vit/efficientvit.yaml"), 6);
  check_forward_backward(p, 4, 4);
  check_forward_backward(p, 1, 5);
}

TEST_CASE("gpu network: GC ViT's global query shared by the windows of its image", "[gpu][net]") {
  NetworkPair p = network_pair(config_network_file("tests/data/vit/gcvit.yaml"), 6);
  check_forward_backward(p, 4, 4);
  check_forward_backward(p, 1, 5);
}

TEST_CASE("gpu network: PiT's pooling between stages (tokenSlice, concatenation, position table of a map)",
          "[gpu][net]") {
  NetworkPair p = network_pair(config_network_file("tests/data/vit/pit.yaml"), 6);
  check_forward_backward(p, 4, 4);
  check_forward_backward(p, 1, 5);
}

TEST_CASE("gpu network: group and instance normalization, prelu", "[gpu][net]") {
  NetworkPair p = network_pair(config_network_file("tests/data/norm/group_norm.yaml"), 6);
  check_forward_backward(p, 5, 4);
  check_forward_backward(p, 1, 5);  // one image: the statistics are per image anyway
}

TEST_CASE("gpu network: flatten, spatial dropout, global max pooling over tokens, adaptive average pooling",
          "[gpu][net]") {
  NetworkPair p = network_pair(config_network_file("tests/data/layers/flatten_pool.yaml"), 6);
  check_forward_backward(p, 5, 4);
  check_forward_backward(p, 1, 5);
}

TEST_CASE("gpu network: averagePooling1d and maxPooling1d, batch norm of tokens (NextViT's spatial reduction)",
          "[gpu][net]") {
  NetworkPair p = network_pair(config_network_file("tests/data/layers/pool1d.yaml"), 6);
  check_forward_backward(p, 5, 4);
  check_forward_backward(p, 1, 5);
}

// BatchNormalizationStatistics population: the same training forwards on both devices merge the
// same batch-norm statistics (batches of 6, 6 and 2 images; the device's element-wise merge
// against the CPU's).
TEST_CASE("gpu network: batch norm population statistics agree with the CPU", "[gpu][net]") {
  NetworkPair p = network_pair(config_network("cifar10-bn"), 3);
  REQUIRE(p.cpu->has_population_statistics());
  p.cpu->start_population_statistics();
  p.dev->start_population_statistics();
  Rng rng(9);
  uint64_t it = 0;
  for (int64_t n : {6, 6, 2}) {
    p.cpu->set_batch(n);
    p.dev->set_batch(n);
    const Tensor x = random_images(n, p.cpu->input_shape(), rng);
    RunContext ctx{true, 11, ++it};
    ctx.population_statistics = true;
    p.cpu->forward(x, ctx);
    p.dev->forward(x.to(p.dev->device()), ctx);
  }
  p.cpu->finish_population_statistics();
  p.dev->finish_population_statistics();
  int compared = 0;
  for (size_t i = 0; i < p.cpu->size(); ++i)
    for (size_t k = 0; k < p.cpu->layer(i).states().size(); ++k) {
      const State& a = p.dev->layer(i).states()[k];
      const State& b = p.cpu->layer(i).states()[k];
      if (b.name != "TrainedMean" && b.name != "TrainedVariance") continue;
      check_close(p.cpu->layer(i).name() + " " + b.name, a.value.to(Device::cpu()), b.value, 1e-4);
      ++compared;
    }
  CHECK(compared >= 4);
}

namespace {

// Inference on shared buffers (Network::set_inference_reuse; off by default on a GPU until
// this ran on one) against a buffer per output on the same device network, bit for bit, and
// against the CPU.
void check_shared_inference_buffers(NetworkPair& p, int64_t batch, uint64_t seed) {
  Rng rng(seed);
  p.cpu->set_batch(batch);
  Tensor x = random_images(batch, p.cpu->input_shape(), rng);
  Tensor xd = x.to(p.dev->device());
  const RunContext ctx{false, 11, 5};
  const Tensor want = p.cpu->forward(x, ctx).clone();
  std::vector<float> own, shared;
  for (bool reuse : {false, true}) {
    p.dev->set_inference_reuse(reuse);
    p.dev->set_batch(batch);
    for (int pass = 0; pass < 2; ++pass) {  // the second pass on buffers the first one wrote
      const Tensor got = p.dev->forward(xd, ctx).to(Device::cpu());
      check_close(reuse ? "shared buffers against the CPU" : "own buffers against the CPU", got, want, 1e-4);
      (reuse ? shared : own) = std::vector<float>(got.data(), got.data() + got.numel());
    }
  }
  CHECK(shared == own);
  INFO("shared " << p.dev->inference_bytes() << " bytes of " << p.dev->activation_bytes());
  CHECK(p.dev->inference_bytes() < p.dev->activation_bytes());
}

}  // namespace

TEST_CASE("gpu network: inference on shared buffers gives a buffer per output's values", "[gpu][net]") {
  NetworkPair resnet = network_pair(config_network("resnet18-cifar"), 6);
  check_shared_inference_buffers(resnet, 4, 7);
  NetworkPair vit = network_pair(config_network_file("tests/data/vit/tiny_vit.yaml"), 6);
  check_shared_inference_buffers(vit, 5, 8);
  NetworkPair mobile = network_pair(config_network("shapes-mobilenet"), 6);
  check_shared_inference_buffers(mobile, 3, 9);
}

TEST_CASE("gpu caching allocator: warmed-up iterations take no new device memory", "[gpu][memory]") {
  Config c = load_config(config_path("cifar10-bn"));
  const Device dev = device_under_test();
  Network net(c.network, dev);
  net.init_params(1);
  const int64_t n = 64;
  net.set_batch(n);
  Optimizer opt(c.training, net.params());
  Backend& be = backend_for(dev);
  Rng rng(9);
  Tensor x_host = random_images(n, net.input_shape(), rng), y_host = random_labels(n, 10, rng);
  Tensor x(x_host.shape(), dev), y(y_host.shape(), dev, DType::kI32);
  auto iteration = [&](uint64_t it) {
    upload_begin(be, x_host, x);
    upload_begin(be, y_host, y);
    upload_wait(be);
    RunContext ctx{true, 0, it};
    net.forward(x, ctx);
    int64_t correct = 0;
    net.loss_and_backward(y, ctx, true, &correct);
    opt.step(1e-3);
    RunContext eval{false, 0, 0};
    net.forward(x, eval);  // validation passes interleave with training
    net.loss_and_backward(y, eval, false, &correct);
    Tensor copy = x.to(Device::cpu());  // a host read-back each iteration, as metrics do
    (void)copy;
  };
  for (uint64_t it = 1; it <= 3; ++it) iteration(it);
  be.synchronize();
  const size_t warm = be.peak_memory_bytes();
  INFO("peak after warm-up: " << warm << " bytes");
  if (testing_a_gpu()) {
    CHECK(warm > static_cast<size_t>(4 * net.total_learnables()));  // weights, grads, activations at least
  }
  for (uint64_t it = 4; it <= 10; ++it) iteration(it);
  be.synchronize();
  const size_t after = be.peak_memory_bytes();
  INFO("peak after 7 more iterations: " << after << " bytes");
  CHECK(after == warm);
  // Temporary device tensors freed each iteration are recycled, not added to the peak.
  for (int i = 0; i < 20; ++i) {
    Tensor tmp = x_host.to(dev);
    be.scale(tmp, 2.f);
  }
  be.synchronize();
  CHECK(be.peak_memory_bytes() <= after + x_host.bytes());
}

}  // namespace dlt::test::gpu

namespace dlt::test::gpu {

TEST_CASE("gpu network: MobileNet blocks (depthwise, ReLU6, residual) with and without CudaFusedClippedRelu",
          "[gpu][net]") {
  // The clippedRelu layers run on their own (default) or in the convolutions' bias epilogue
  // (CudaFusedClippedRelu, the fusion plan's GPU rule); either way the same numbers as the CPU,
  // where they are always fused as a oneDNN clip post-op. The ceilings are low enough that the
  // zscore-normalized images reach them.
  NetworkSpec s = network_spec_from_yaml(R"(layers:
  - {type: imageInput, Name: in, InputSize: [12, 12, 3], Normalization: zscore}
  - {type: convolution2d, Name: stem, FilterSize: 3, NumFilters: 16, Padding: same, Stride: 2}
  - {type: clippedRelu, Name: stem_relu6, Ceiling: 0.8}
  - {type: groupedConvolution2d, Name: dw, FilterSize: 3, NumFiltersPerGroup: 1, NumGroups: channel-wise, Padding: same}
  - {type: clippedRelu, Name: dw_relu6, Ceiling: 0.6}
  - {type: convolution2d, Name: pw, FilterSize: 1, NumFilters: 16}
  - {type: addition, Name: add, Inputs: [pw, stem_relu6]}
  - {type: convolution2d, Name: expand, FilterSize: 1, NumFilters: 32}
  - {type: clippedRelu, Name: expand_relu6, Ceiling: 0.5}
  - {type: globalAveragePooling2d, Name: gap}
  - {type: fullyConnected, Name: fc, OutputSize: 5}
  - {type: softmax, Name: sm}
  - {type: classification, Name: out}
)",
                                         "gpu MobileNet blocks test");
  for (bool fused : {false, true}) {
    INFO("CudaFusedClippedRelu " << fused);
    BackendOptions o;
    o.cuda_fused_clipped_relu = fused;
    NetworkPair p = network_pair(s, 7, o);
    if (testing_a_gpu()) CHECK(p.dev->fused(2) == fused);  // the stem absorbs its clippedRelu
    check_forward_backward(p, 6, 8);
  }
}

}  // namespace dlt::test::gpu
