// A tiny vision transformer (tests/data/vit/tiny_vit.yaml: patchEmbedding column-major, class
// token, position table longer than the sequence, layerNormalization on tokens, selfAttention
// of 2 heads, per-token fullyConnected, gelu, indexing1d) against PyTorch with
// nn.MultiheadAttention on the same learnables and images (torch_vit.txt, written by
// make_torch_vit.py beside them): the softmax output, the loss and every learnable's gradient.
// Also: the data formats the network gives each layer and the refusal of image layers on tokens.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "config/config.h"
#include "net/network.h"
#include "support/tensor_utils.h"
#include "util/error.h"
#include "util/rng.h"

namespace dlt::test {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string vit_dir() { return std::string(DLT_SOURCE_DIR) + "/tests/data/vit/"; }

// torch_vit.txt: "key v v v ..." lines; params and grads keyed "param LAYER NAME" in order.
struct TorchVit {
  std::map<std::string, Vec> values;
  std::vector<std::string> params;  // "LAYER NAME" in file order
};

TorchVit read_torch_vit() {
  TorchVit t;
  std::istringstream in(read_text(vit_dir() + "torch_vit.txt"));
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::string key;
    if (!(ls >> key) || key[0] == '#') continue;
    if (key == "param" || key == "grad") {
      std::string layer, name;
      ls >> layer >> name;
      if (key == "param") t.params.push_back(layer + " " + name);
      key += " " + layer + " " + name;
    }
    Vec v;
    for (double x; ls >> x;) v.push_back(x);
    t.values[key] = v;
  }
  return t;
}

NetworkSpec tiny_vit() {
  return network_spec_from_yaml(read_text(vit_dir() + "tiny_vit.yaml"), vit_dir() + "tiny_vit.yaml");
}

}  // namespace

TEST_CASE("a tiny vision transformer agrees with PyTorch's (torch_vit.txt)", "[net][vit]") {
  const TorchVit t = read_torch_vit();
  Network net(tiny_vit(), Device::cpu());
  net.init_params(1);
  const int64_t n = 2;
  net.set_batch(n);
  // The learnables in network order, named by their layer.
  std::vector<Param*> params = net.params();
  std::vector<std::string> names;
  for (size_t i = 0; i < net.size(); ++i)
    for (Param& p : net.layer(i).params()) names.push_back(net.layer(i).name() + " " + p.name);
  REQUIRE(names == t.params);
  REQUIRE(params.size() == names.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const Vec& v = t.values.at("param " + names[i]);
    REQUIRE(static_cast<int64_t>(v.size()) == params[i]->value.numel());
    params[i]->value.copy_from(to_tensor(v, params[i]->value.shape()));
  }
  const Shape& in = net.input_shape();
  const Tensor x = to_tensor(t.values.at("x"), Shape{n, in[0], in[1], in[2]});
  Tensor labels(Shape{n}, Device::cpu(), DType::kI32);
  const Vec& l = t.values.at("labels");
  for (int64_t i = 0; i < n; ++i) labels.data_i32()[i] = static_cast<int32_t>(l[static_cast<size_t>(i)]);

  RunContext ctx{true, 1, 0};
  const Comparison probs = compare(net.forward(x, ctx), t.values.at("probs"));
  INFO("softmax output: " << probs.str());
  CHECK(probs.rel <= 1e-5);
  const double loss = net.loss_and_backward(labels, ctx, true, nullptr);
  CHECK(loss == Approx(t.values.at("loss")[0]).epsilon(1e-5));
  for (size_t i = 0; i < params.size(); ++i) {
    const Comparison g = compare(params[i]->grad, t.values.at("grad " + names[i]));
    INFO("gradient of " << names[i] << ": " << g.str());
    // Relative, except where the gradient is 0 in exact arithmetic (KeyBias: a softmax does
    // not change when a constant is added to a row of scores).
    CHECK(g.max_abs <= 1e-4 * std::max(g.scale, 1e-3));
  }
}

TEST_CASE("data formats: tokens between patchEmbedding and indexing1d, images refused there", "[net][vit]") {
  Network net(tiny_vit(), Device::cpu());
  std::map<std::string, DataFormat> format;
  for (size_t i = 0; i < net.size(); ++i) format[net.layer(i).name()] = net.output_format(i);
  CHECK(format["input"] == DataFormat::kSSCB);
  for (const char* name : {"patch", "cls", "pos", "embed", "ln1", "attn", "add1", "fc1", "gelu", "fc2", "add2"}) {
    INFO(name);
    CHECK(format[name] == DataFormat::kSCB);
  }
  CHECK(format["token"] == DataFormat::kCB);
  CHECK(format["fc"] == DataFormat::kCB);
  CHECK(format_dims(DataFormat::kSCB, net.output_shape(4)) == "7x8");

  // A convolution on tokens, a token of an image: one line naming both layers.
  NetworkSpec conv_on_tokens = tiny_vit();
  conv_on_tokens.layers[5] = network_spec_from_yaml(
                                 "layers:\n  - {type: imageInput, InputSize: [2, 2, 1]}\n"
                                 "  - {type: convolution2d, Name: conv, FilterSize: 1, NumFilters: 8}\n",
                                 "inline")
                                 .layers[1];
  CHECK_THROWS_WITH(Network(conv_on_tokens, Device::cpu()),
                    Catch::Contains("layer 'conv' (convolution2d) does not take SCB data, which 'embed' "
                                    "(addition) gives (7x8)"));
  // ... except a per-channel scale of the tokens (a 1x1 channel-wise groupedConvolution2d): tokens
  // out; a 3x3 one is refused as any convolution.
  for (const bool one : {true, false}) {
    INFO((one ? "1x1" : "3x3"));
    NetworkSpec scale_tokens = tiny_vit();
    scale_tokens.layers[5] =
        network_spec_from_yaml("layers:\n  - {type: imageInput, InputSize: [2, 2, 1]}\n"
                               "  - {type: groupedConvolution2d, Name: ls, FilterSize: " +
                                   std::string(one ? "1" : "3") + ", NumGroups: channel-wise, NumFiltersPerGroup: 1}\n",
                               "inline")
            .layers[1];
    if (one) {
      Network scaled(scale_tokens, Device::cpu());
      CHECK(scaled.output_format(5) == DataFormat::kSCB);
    } else {
      CHECK_THROWS_WITH(Network(scale_tokens, Device::cpu()),
                        Catch::Contains("layer 'ls' (groupedConvolution2d) does not take SCB data"));
    }
  }
  const NetworkSpec token_on_image = network_spec_from_yaml(
      "layers:\n  - {type: imageInput, Name: input, InputSize: [4, 4, 3]}\n  - {type: indexing1d, Name: token}\n"
      "  - {type: fullyConnected, Name: fc, OutputSize: 2}\n  - {type: softmax, Name: sm}\n"
      "  - {type: classification, Name: out}\n",
      "inline");
  CHECK_THROWS_WITH(Network(token_on_image, Device::cpu()),
                    Catch::Contains("layer 'token' (indexing1d) does not take SSCB data, which 'input'"));
}

}  // namespace dlt::test

namespace dlt::test {

// MATLAB's positionEmbeddingLayer outputs the position vectors alone (an additionLayer adds them
// to the tokens): a head on it alone gives every image the same probabilities, and with the
// addition they differ.
TEST_CASE("positionEmbedding outputs the table alone, as MATLAB's positionEmbeddingLayer", "[net][vit]") {
  auto net_for = [](bool add) {
    std::string y =
        "layers:\n"
        "  - {type: imageInput, Name: in, InputSize: [8, 8, 3], Normalization: none}\n"
        "  - {type: patchEmbedding, Name: patch, PatchSize: 2, OutputSize: 4}\n"
        "  - {type: positionEmbedding, Name: pos, OutputSize: 4, MaxPosition: 20}\n";
    if (add) y += "  - {type: addition, Name: sum, Inputs: [patch, pos]}\n";
    y += "  - {type: fullyConnected, Name: fc, OutputSize: 3}\n"
         "  - {type: softmax, Name: sm}\n"
         "  - {type: classification, Name: out}\n";
    return network_spec_from_yaml(y, "inline");
  };
  for (bool add : {false, true}) {
    INFO("with the addition: " << add);
    Network net(net_for(add), Device::cpu());
    net.init_params(3);
    net.set_batch(2);
    Rng rng(5);
    const Tensor x = random_tensor(Shape{2, 8, 8, 3}, rng);
    const Vec p = to_vec(net.forward(x, RunContext{false, 0, 0}));
    double diff = 0;
    for (size_t i = 0; i < 3; ++i) diff = std::max(diff, std::fabs(double(p[i]) - p[3 + i]));
    if (add)
      CHECK(diff > 1e-4);
    else
      CHECK(diff == 0);
  }
}

}  // namespace dlt::test
