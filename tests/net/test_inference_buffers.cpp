// Inference buffers (Network::set_inference_reuse): an inference pass writes its layer outputs
// into the training buffers shared by liveness, and an input layer without normalization hands
// the batch on as its output. The outputs are bit-identical to one buffer per output on
// configs (zerocenter input, folded normalizations, Winograd), imported ONNX graphs (MobileNetV3's
// depthwise chains, squeeze-and-excitation and residual sums; DenseNet's concatenations;
// LR-ASPP's branches; a transformer's tokens), with folding on and off, at a smaller and a larger
// batch after the first; the pass writes to a fraction of the buffers; training between
// inference passes gives the same gradients.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "config/config.h"
#include "net/network.h"
#include "onnx/onnx.h"
#include "support/grad_check.h"
#include "support/tensor_utils.h"
#include "util/rng.h"

namespace dlt::test {

namespace {

Vec inference(Network& net, const Tensor& x, bool folding) {
  net.set_inference_folding(folding);
  return to_vec(net.forward(x, RunContext{false, 1, 0}));
}

// The largest difference between the two networks' outputs (0: bit-identical) over batches n,
// n - 1 (the buffers shrunk) and 2n (grown), folding on and off, two passes each.
double largest_difference(Network& shared, Network& own, int64_t n) {
  Rng rng(5);
  double worst = 0;
  for (int64_t batch : {n, n - 1, 2 * n}) {
    shared.set_batch(batch);
    own.set_batch(batch);
    const Shape& in = shared.input_shape();
    for (int pass = 0; pass < 2; ++pass) {
      const Tensor x = random_tensor(Shape{batch, in[0], in[1], in[2]}, rng, -1.f, 1.f);
      for (bool folding : {true, false}) {
        const Vec a = inference(shared, x, folding), b = inference(own, x, folding);
        REQUIRE(a.size() == b.size());
        for (size_t k = 0; k < a.size(); ++k) worst = std::max(worst, std::abs(a[k] - b[k]));
        // The output a forward returns is also what output() gives.
        CHECK(to_vec(shared.output()) == a);
      }
    }
  }
  return worst;
}

void check_spec(const NetworkSpec& spec, int64_t n) {
  Network shared(spec, Device::cpu()), own(spec, Device::cpu());
  shared.set_inference_reuse(true);  // (whatever DLT_INFERENCE_BUFFERS says)
  own.set_inference_reuse(false);
  shared.init_params(3);
  own.init_params(3);
  CHECK(largest_difference(shared, own, n) == 0);
}

void check_config(const std::string& name, int64_t n) {
  INFO(name);
  check_spec(load_config(std::string(DLT_SOURCE_DIR) + "/configs/" + name + ".yaml").network, n);
}

LayerSpec named(LayerSpec s, const std::string& name, std::vector<std::string> inputs = {}) {
  s.name = name;
  s.inputs = std::move(inputs);
  return s;
}

void check_onnx(const std::string& fixture, int64_t n) {
  INFO(fixture);
  const ModelData m = import_onnx(std::string(DLT_SOURCE_DIR) + "/tests/data/onnx_zoo/" + fixture + ".onnx", {});
  Network shared(m, Device::cpu()), own(m, Device::cpu());
  shared.set_inference_reuse(true);  // (whatever DLT_INFERENCE_BUFFERS says)
  own.set_inference_reuse(false);
  CHECK(largest_difference(shared, own, n) == 0);
}

}  // namespace

TEST_CASE("inference buffers: outputs bit-identical to one buffer per layer output", "[net][inference_buffers]") {
  check_config("cifar10-bn", 4);        // zerocenter input, folded normalizations
  check_config("resnet18-cifar", 3);    // residual sums folded into convolutions
  check_config("shapes-mobilenet", 3);  // depthwise and grouped convolutions
  // Imported graphs: no input normalization (the batch is the input layer's output).
  check_onnx("mobilenet_v3_small-dynamo", 2);  // depthwise chains, squeeze-and-excitation, hard swish
  check_onnx("densenet-torchscript", 2);       // concatenations read by many layers
  check_onnx("lraspp_seg-torchscript", 2);     // two heads, a sigmoid gate, resizes
  check_onnx("vit-dynamo", 2);                 // tokens, attention, the class token
  // Cross-attention: an attention layer of three inputs, keys and values of another length.
  check_spec(load_config(std::string(DLT_SOURCE_DIR) + "/tests/data/vit/cross_attention.yaml").network, 3);
}

TEST_CASE("inference buffers: layers naming the same input twice", "[net][inference_buffers]") {
  NetworkSpec s;
  s.layers = {
      named(layer_spec("imageInput", {"InputSize=[4,4,3]", "Normalization=none"}), "in"),
      named(layer_spec("convolution2d", {"FilterSize=3", "NumFilters=4", "Padding=same"}), "a"),
      named(layer_spec("multiplication", {}), "sq", {"a", "a"}),
      named(layer_spec("addition", {}), "twice", {"sq", "sq"}),
      named(layer_spec("addition", {}), "res", {"twice", "a"}),
      named(layer_spec("multiplication", {}), "in2", {"in", "in"}),
      named(layer_spec("convolution2d", {"FilterSize=1", "NumFilters=4"}), "b", {"in2"}),
      named(layer_spec("addition", {}), "join", {"res", "b"}),
      named(layer_spec("globalAveragePooling2d", {}), "gap"),
      named(layer_spec("fullyConnected", {"OutputSize=3"}), "fc"),
      named(layer_spec("softmax", {}), "sm"),
      named(layer_spec("classification", {}), "out"),
  };
  check_spec(s, 3);
}

TEST_CASE("inference buffers: a pass writes to a fraction of the buffers", "[net][inference_buffers]") {
  const NetworkSpec spec = load_config(std::string(DLT_SOURCE_DIR) + "/configs/resnet18-cifar.yaml").network;
  Network shared(spec, Device::cpu()), own(spec, Device::cpu());
  shared.set_inference_reuse(true);  // (whatever DLT_INFERENCE_BUFFERS says)
  own.set_inference_reuse(false);
  Rng rng(3);
  const Shape& in = shared.input_shape();
  const Tensor x = random_tensor(Shape{8, in[0], in[1], in[2]}, rng, -1.f, 1.f);
  for (Network* net : {&shared, &own}) {
    net->set_batch(8);
    net->forward(x, RunContext{false, 1, 0});  // the pass plans its buffers
  }
  int64_t outputs = 0;  // every layer output's bytes at batch 8
  for (size_t i = 0; i < own.size(); ++i)
    if (!own.fused(i)) outputs += 8 * own.output_shape(i).numel() * 4;
  INFO("outputs " << outputs << " bytes; shared " << shared.inference_bytes());
  CHECK(own.inference_bytes() == outputs);
  // resnet18-cifar's largest outputs are 32x32x64 (the stem and the first stage's convolutions):
  // a pass needs three of them at once (a block's input, its first convolution's output, the
  // second's with the sum), and their buffers hold every later, smaller output.
  const int64_t largest = 8 * 32 * 32 * 64 * 4;
  CHECK(shared.inference_bytes() <= 4 * largest);
  CHECK(shared.inference_bytes() * 5 < outputs);
  // No buffer beyond the training ones.
  CHECK(shared.activation_bytes() == own.activation_bytes());
}

TEST_CASE("inference buffers: DLT_INFERENCE_BUFFERS chooses the default, shared on the CPU",
          "[net][inference_buffers]") {
  const char* before = std::getenv("DLT_INFERENCE_BUFFERS");
  const std::string saved = before ? before : "";
  unsetenv("DLT_INFERENCE_BUFFERS");
  CHECK(shared_inference_buffers(Device::cpu()));
  CHECK_FALSE(shared_inference_buffers(Device::cuda(0)));  // not run on a GPU yet
  setenv("DLT_INFERENCE_BUFFERS", "shared", 1);
  CHECK(shared_inference_buffers(Device::cuda(0)));
  setenv("DLT_INFERENCE_BUFFERS", "own", 1);
  CHECK_FALSE(shared_inference_buffers(Device::cpu()));
  setenv("DLT_INFERENCE_BUFFERS", "yes", 1);
  CHECK_THROWS_WITH(shared_inference_buffers(Device::cpu()),
                    "DLT_INFERENCE_BUFFERS is 'yes'; set it to shared or own, or unset it");
  if (before)
    setenv("DLT_INFERENCE_BUFFERS", saved.c_str(), 1);
  else
    unsetenv("DLT_INFERENCE_BUFFERS");
}

TEST_CASE("inference buffers: training between inference passes gives the same gradients", "[net][inference_buffers]") {
  const NetworkSpec spec = load_config(std::string(DLT_SOURCE_DIR) + "/configs/cifar10-bn.yaml").network;
  Network shared(spec, Device::cpu()), own(spec, Device::cpu());
  shared.set_inference_reuse(true);  // (whatever DLT_INFERENCE_BUFFERS says)
  own.set_inference_reuse(false);
  const int64_t n = 4;
  for (Network* net : {&shared, &own}) {
    net->init_params(9);
    net->set_batch(n);
  }
  Rng rng(11);
  const Shape& in = shared.input_shape();
  const Tensor x = random_tensor(Shape{n, in[0], in[1], in[2]}, rng, -1.f, 1.f);
  const Tensor other = random_tensor(Shape{n, in[0], in[1], in[2]}, rng, -1.f, 1.f);
  Tensor labels(Shape{n}, Device::cpu(), DType::kI32);
  for (int64_t k = 0; k < n; ++k) labels.data_i32()[k] = static_cast<int32_t>(k % shared.num_classes());
  std::vector<double> losses[2];
  std::vector<Vec> grads[2];
  int side = 0;
  for (Network* net : {&shared, &own}) {
    const RunContext train{true, 1, 0};
    for (int step = 0; step < 2; ++step) {
      net->forward(other, RunContext{false, 1, 0});  // a validation pass before the step
      net->forward(x, train);
      losses[side].push_back(net->loss_and_backward(labels, train, true, nullptr));
      grads[side].push_back(to_vec(net->flat_grads()));
      net->forward(other, RunContext{false, 1, 0});  // and after it
      // A validation loss reads the inference pass's output.
      losses[side].push_back(net->loss_and_backward(labels, RunContext{false, 1, 0}, false, nullptr));
    }
    ++side;
  }
  CHECK(losses[0] == losses[1]);
  CHECK(grads[0] == grads[1]);
}

}  // namespace dlt::test
